"""Record tests/golden/replicated/: the default rules' golden outputs, with their error bars.

    python tests/golden/record_golden.py            # solves and sweeps (seconds), the 7-omega phase diagram
                                                  # and the omega = 0, 0.05 rows (a few minutes on 2 cores)
    python tests/golden/record_golden.py --quick    # solves and sweeps only
    python tests/golden/record_golden.py --rank2    # tests/golden/rank2/ only: rank-2 solves and the rank-2
                                                  # sweep (under a minute)

The default rules are 4 independent scramblings per role (docs/method.md section 7, error bars and precision tiers); each number is
recorded with its standard error (``err_<key>``, ``err_<boundary>``).  tests/golden/*.csv|json are the
records of the single-scrambling rules before that change (sobol12 solves, sobol16 alpha_c, sobol15
bifurcations); tests/numerics/test_golden.py checks that those rules still reproduce them exactly, that today's
defaults reproduce these files, and that the two agree within their combined error bars.  Rerun only
for a deliberate change of numerics, with the change stated in docs/method.md.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from attnphase.numerics import SolverConfig, phase_boundaries, solve, sweep
from attnphase.numerics.grids import even_grid
from attnphase.numerics.phase.boundary_results import BOUNDARY_KEYS, boundary_columns
from attnphase.numerics.phase.scalar_boundaries import DEFAULT_ALPHAS
from attnphase.numerics.errors.quadrature_error import fixed_point_error, point_errors
from attnphase.numerics.se.starts import with_ranks
from attnphase.numerics.errors.replicates import ERROR_KEYS
from attnphase.theory.params import ModelParams

GOLDEN = Path(__file__).resolve().parent / "replicated"
RANK2 = GOLDEN.parent / "rank2"

#: The rule of the rank-2 records: 4 independent scramblings of 2^10 Sobol points.
RANK2_RULE = "sobol10:4"

#: The recorded rank-2 solves of tests/golden/rank2/ (the matrix-overlap state evolution, docs/model.md
#: section 7) at omega = 0.3 on :data:`RANK2_RULE`: file name -> (alpha, r, r*, branch).  Each record is the
#: solve's record: gauge invariants, eps_g, e_t, status, the overlaps in the canonical gauge.
RANK2_SOLVES = {
    "solve_r2_t1_semantic_a2.json": (2.0, 2, 1, "semantic"),
    "solve_r2_t1_positional_a2.json": (2.0, 2, 1, "positional"),
    "solve_r2_t1_mixed_a2.json": (2.0, 2, 1, "mixed"),
    "solve_r2_t2_semantic_a2.json": (2.0, 2, 2, "semantic"),
    "solve_r2_t2_positional_a2.json": (2.0, 2, 2, "positional"),
}

#: The recorded rank-2 sweep of tests/golden/rank2/: file name -> the command's arguments (``attnphase sweep``, its
#: CSV as written; a one-block rule, so no error bars and a few CPU seconds).
RANK2_SWEEPS = {
    "sweep_r2_t1_mixed_a1.5-1.6.csv": ["sweep", "--rank", "2", "--branch", "mixed", "--alpha", "1.5,1.6",
                                       "--omega", "0.3", "--quadrature", "sobol9", "--quiet"],
}

#: The recorded solves: file name -> (alpha, omega, branch).
SOLVES = {
    "solve_sem_a2.json": (2.0, 0.3, "semantic"),
    "solve_pos_a2.json": (2.0, 0.3, "positional"),
    "solve_agn_a05.json": (0.5, 0.3, "agnostic"),
    "solve_pos_w02_a15.json": (1.5, 0.2, "positional"),
}

#: The recorded sweeps at omega = 0.3: file name -> (branch, alphas).
SWEEPS = {
    "sweep_sem.csv": ("semantic", np.linspace(1.0, 2.4, 8)),
    "sweep_pos.csv": ("positional", np.linspace(0.5, 2.5, 8)),
}

#: The recorded phase diagram's omegas, and the single-omega rows (the small omegas 0 and 0.05).
DIAGRAM_OMEGAS = even_grid("0.1", "0.4", 7)  # the grid of --omega 0.1:0.4:7
SMALL_OMEGAS = (0.0, 0.05)
ALPHAS = DEFAULT_ALPHAS  # the grid phase_diagram and the command take by default

ERROR_COLUMNS = tuple(f"err_{k}" for k in ERROR_KEYS)
BOUNDARY_ERROR_COLUMNS = tuple(c for k in BOUNDARY_KEYS for c in (f"err_{k}", f"{k}_found"))


def solve_record(alpha: float, omega: float, branch: str, config: SolverConfig | None = None) -> dict:
    """The solve's record with its error bars (``err_<key>``)."""
    cfg = config or SolverConfig()
    fp = solve(ModelParams(omega=omega), alpha, branch, config=cfg)
    err = fixed_point_error(fp, cfg)
    return dict(fp.record) | {f"err_{k}": err.std[k] for k in ERROR_KEYS}


def rank2_record(alpha: float, r: int, r_star: int, branch: str) -> dict:
    """The record of the rank-r solve at omega = 0.3 on :data:`RANK2_RULE`."""
    params = with_ranks(ModelParams(omega=0.3), r, r_star)
    return solve(params, alpha, branch, config=SolverConfig(quadrature=RANK2_RULE)).record


def rank2_sweep_csv(argv: list[str]) -> str:
    """The CSV ``attnphase <argv>`` writes (its only file ending in .csv)."""
    import tempfile

    from attnphase.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        if main([*argv, "--out", tmp]) != 0:
            raise RuntimeError(f"attnphase {' '.join(argv)} failed")
        (path,) = Path(tmp).glob("*.csv")
        return path.read_text()


def sweep_rows(branch: str, alphas, config: SolverConfig | None = None) -> list[dict]:
    """The sweep's records at omega = 0.3, each with its error bars."""
    cfg = config or SolverConfig()
    res = sweep(ModelParams(omega=0.3), alphas, branch, config=cfg)
    return [dict(fp.record) | err for fp, err in zip(res.points, point_errors(res.points, cfg))]


def boundary_row(omega: float, config: SolverConfig | None = None) -> dict:
    """The phase diagram's row at ``omega`` with its error columns."""
    b = phase_boundaries(ModelParams(omega=float(omega)), ALPHAS, config=config or SolverConfig())
    return b.row() | b.errors()


def _write_csv(path: Path, rows: list[dict], columns) -> None:
    with open(path, "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=tuple(columns), extrasaction="ignore")
        wr.writeheader()
        wr.writerows(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="solves and sweeps only")
    ap.add_argument("--rank2", action="store_true", help="the rank-2 solves of tests/golden/rank2/ only")
    args = ap.parse_args()
    quick = args.quick
    if args.rank2:
        RANK2.mkdir(parents=True, exist_ok=True)
        for name, spec in RANK2_SOLVES.items():
            (RANK2 / name).write_text(json.dumps(rank2_record(*spec)) + "\n")
            print("wrote", name)
        for name, argv in RANK2_SWEEPS.items():
            (RANK2 / name).write_text(rank2_sweep_csv(argv))
            print("wrote", name)
        return
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, (alpha, omega, branch) in SOLVES.items():
        (GOLDEN / name).write_text(json.dumps(solve_record(alpha, omega, branch)) + "\n")
        print("wrote", name)
    for name, (branch, alphas) in SWEEPS.items():
        rows = sweep_rows(branch, alphas)
        _write_csv(GOLDEN / name, rows, tuple(rows[0]))
        print("wrote", name)
    if quick:
        return
    columns = boundary_columns(1) + BOUNDARY_ERROR_COLUMNS + ("notes",)
    _write_csv(GOLDEN / "phase_diagram_0.1-0.4-7.csv", [boundary_row(w) for w in DIAGRAM_OMEGAS], columns)
    print("wrote phase_diagram_0.1-0.4-7.csv")
    for w in SMALL_OMEGAS:
        _write_csv(GOLDEN / f"phase_diagram_omega{w:g}.csv", [boundary_row(w)], columns)
        print(f"wrote phase_diagram_omega{w:g}.csv")


if __name__ == "__main__":
    main()
