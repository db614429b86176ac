"""The ``phase-diagram`` job: boundaries over omega, CSV + figures + printed table."""

from __future__ import annotations

import csv
import json
import math
import sys
import time
from pathlib import Path
from typing import Sequence

from tqdm import tqdm

from attnphase.numerics.phase_diagram import ALPHA_C_QUADRATURE, phase_boundaries, phase_diagram
from attnphase.numerics.plots import plot_branch_curves, plot_phase_diagram
from attnphase.numerics.state_evolution import SolverConfig
from attnphase.theory.params import ModelParams

CSV_COLUMNS = (
    "omega", "alpha_c", "alpha_l", "spinodal_semantic", "spinodal_positional", "alpha_c_coarse",
    "positional_end_reason", "notes",
)
CURVES_OMEGA = 0.3


def _fmt(x: float) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.4f}"


def run_phase_diagram(
    params: ModelParams,
    omegas: Sequence[float],
    alphas: Sequence[float],
    *,
    out_dir: str | Path = "results",
    config: SolverConfig | None = None,
    quiet: bool = False,
    alpha_c_quadrature: str | None = ALPHA_C_QUADRATURE,
) -> int:
    """Compute the boundaries at every omega, write phase_diagram.csv/.json/.png and curves_omega0.3.png.

    ``alpha_c_quadrature``: the rule of alpha_c's fine-E[M] correction (None: no correction).
    """
    cfg = config or SolverConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with tqdm(total=len(omegas), desc="phase diagram", unit="omega", file=sys.stderr, disable=quiet) as bar:
        rows = phase_diagram(
            params, omegas, alphas, prox=cfg.prox, config=cfg, progress=lambda b: bar.update(),
            alpha_c_quadrature=alpha_c_quadrature,
        )
    with open(out / "phase_diagram.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        wr.writeheader()
        for b in rows:
            wr.writerow(b.row())
    plot_phase_diagram(rows, out / "phase_diagram.png", alpha_max=max(alphas))

    # curves at omega = 0.3: reuse the row if it was computed, else sweep now
    pc = params.replace(omega=CURVES_OMEGA)
    row = next((b for b in rows if abs(b.omega - CURVES_OMEGA) < 1e-12), None)
    if row is None:
        row = phase_boundaries(pc, alphas, prox=cfg.prox, config=cfg, alpha_c_quadrature=alpha_c_quadrature)
    plot_branch_curves(
        row.semantic, row.positional, row.semantic.points[0].observables.eps_lin,
        row.alpha_c, row.alpha_l, out / f"curves_omega{CURVES_OMEGA}.png",
        title=f"omega = {CURVES_OMEGA}, sigma = {pc.sigma[0]}, lambda = {pc.lam}",
    )
    meta = {
        "params": params.to_dict(),
        "omegas": list(omegas),
        "alphas": list(alphas),
        "solver": {k: getattr(cfg, k) for k in cfg.__dataclass_fields__},
        "alpha_c_quadrature": alpha_c_quadrature,
        "rows": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in b.row().items()} for b in rows],
        "seconds": time.perf_counter() - t0,
    }
    (out / "phase_diagram.json").write_text(json.dumps(meta, indent=2))

    print(f"{'omega':>7} {'alpha_c':>9} {'alpha_l':>9} {'spin_sem':>9} {'spin_pos':>9}  notes")
    for b in rows:
        print(
            f"{b.omega:7.3f} {_fmt(b.alpha_c):>9} {_fmt(b.alpha_l):>9} "
            f"{_fmt(b.spinodal_semantic):>9} {_fmt(b.spinodal_positional):>9}  {'; '.join(b.notes)}"
        )
    print(f"wrote {out}/phase_diagram.csv, phase_diagram.png, curves_omega{CURVES_OMEGA}.png "
          f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0
