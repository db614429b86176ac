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

from attnphase.numerics.boundaries import BOUNDARY_COLUMNS, BOUNDARY_KEYS, boundaries_job, phase_diagram
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.plots import plot_branch_curves, plot_phase_diagram
from attnphase.numerics.quadrature_error import boundary_errors
from attnphase.theory.params import ModelParams

CSV_COLUMNS = BOUNDARY_COLUMNS + ("notes",)
ERROR_COLUMNS = tuple(f"{k}_{suffix}" for k in BOUNDARY_KEYS for suffix in ("err", "found"))
CURVES_OMEGA = 0.3


def _fmt(x: float) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.4f}"


def _fmt_err(x: float) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.1e}"


def run_phase_diagram(
    params: ModelParams,
    omegas: Sequence[float],
    alphas: Sequence[float],
    *,
    out_dir: str | Path = "results",
    config: SolverConfig | None = None,
    quiet: bool = False,
    error_estimate: int = 0,
    workers: int = 1,
) -> int:
    """Compute the boundaries at every omega, write phase_diagram.csv/.json/.png and curves_omega0.3.png.

    Every setting is in ``config`` (solve rule, alpha_c correction rule, branch-end strategy and rule).
    ``error_estimate``: K >= 2 repeats the computation on K - 1 more independent rules and adds
    each boundary's spread over the K rules (``<boundary>_err``, ``<boundary>_found`` columns,
    error bars in the figure); about K times the time.  ``workers``: processes the omegas (and
    the error estimate's replicates) are computed on (:mod:`attnphase.numerics.parallel`).
    """
    cfg = config or SolverConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    total = len(omegas) * max(1, error_estimate)
    with tqdm(total=total, desc="phase diagram", unit="omega", file=sys.stderr, disable=quiet) as bar:
        rows = phase_diagram(params, omegas, alphas, config=cfg, progress=lambda b: bar.update(), workers=workers,
                             whole_branches_at=CURVES_OMEGA)
        errors = boundary_errors(
            params, rows, alphas, error_estimate, config=cfg, progress=lambda b: bar.update(), workers=workers,
        ) if error_estimate else None
    table = [b.row() | (errors[i] if errors else {}) for i, b in enumerate(rows)]
    with open(out / "phase_diagram.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=CSV_COLUMNS + (ERROR_COLUMNS if errors else ()))
        wr.writeheader()
        wr.writerows(table)
    # boundaries found beyond the grid (brackets grow up to boundaries.ALPHA_LIMIT) stay in the figure
    found = [getattr(b, k) for b in rows for k in BOUNDARY_KEYS if math.isfinite(getattr(b, k))]
    plot_phase_diagram(rows, out / "phase_diagram.png", alpha_max=max([max(alphas)] + [1.05 * a for a in found]),
                       errors=errors)

    # curves at omega = 0.3: reuse the row if it was computed, else sweep now
    pc = params.replace(omega=CURVES_OMEGA)
    row = next((b for b in rows if abs(b.omega - CURVES_OMEGA) < 1e-12), None)
    if row is None:
        row = boundaries_job((pc, alphas, cfg, True))
    plot_branch_curves(
        row.semantic, row.positional, row.semantic.points[0].observables.eps_lin,
        row.alpha_c, row.alpha_l, out / f"curves_omega{CURVES_OMEGA}.png",
        title=f"omega = {CURVES_OMEGA}, sigma = {pc.sigma[0]}, lambda = {pc.lam}",
    )
    meta = {
        "params": params.to_dict(),
        "omegas": list(omegas),
        "alphas": list(alphas),
        "solver": cfg.as_dict(),
        "error_estimate": error_estimate,
        "rows": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()} for r in table],
        "seconds": time.perf_counter() - t0,
    }
    (out / "phase_diagram.json").write_text(json.dumps(meta, indent=2))

    keys = BOUNDARY_KEYS
    width = 18 if errors else 9
    print(f"{'omega':>7} " + " ".join(f"{h:>{width}}" for h in ("alpha_c", "alpha_l", "sem_end", "pos_end"))
          + "  notes" + (f"   (+- spread over {error_estimate} rules)" if errors else ""))
    for r in table:
        cells = [_fmt(r[k]) + (f" +- {_fmt_err(r[k + '_err'])}" if errors else "") for k in keys]
        print(f"{r['omega']:7.3f} " + " ".join(f"{c:>{width}}" for c in cells) + f"  {r['notes']}")
    print(f"wrote {out}/phase_diagram.csv, phase_diagram.png, curves_omega{CURVES_OMEGA}.png "
          f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0
