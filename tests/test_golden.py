"""Golden outputs: today's `solve`, `sweep` and phase-diagram numbers against recorded ones.

The files in tests/golden/ were written by the command line before the numerics core was
redesigned (`attnphase solve ... --json`, `attnphase sweep ... --out`, `attnphase phase-diagram
--omega 0.1:0.4:7`).  A refactor must reproduce them:

* fixed points to the solver's tolerance (residual <= 1e-10 on every overlap: the overlaps of two
  solves of the same fixed point differ by ~1e-10 relative; RTOL_FIXED_POINT leaves room for the
  conditioning of the fixed point, nothing more);
* phase boundaries to the tolerance of the root finder that produced them (alpha_c and alpha_l:
  xtol = 1e-4 in alpha; branch ends as bifurcations: secant tol = 1e-3).

A quadrature rule change is not a refactor: it must re-record these files with a note of the
change within the rule's error bar.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from attnphase.numerics import SolverConfig, phase_diagram, solve, sweep
from attnphase.theory.params import ModelParams

GOLDEN = Path(__file__).parent / "golden"

#: Relative agreement of two converged solves of one fixed point (tol = 1e-10 on the residual).
RTOL_FIXED_POINT = 1e-8
#: alpha_c and alpha_l are Newton / Brent roots to xtol = 1e-4 in alpha.
ATOL_ROOT = 1e-4
#: branch ends located as bifurcations: secant steps to tol = 1e-3 in alpha.
ATOL_END = 1e-3

#: columns renamed by the redesign: golden name -> today's name
RENAMED = {
    "spinodal_semantic": "semantic_end",
    "spinodal_positional": "positional_end",
}

FIXED_POINT_KEYS = ("q", "m", "V", "theta", "eps_g", "e_t", "eps_lin")


def _close(a: float, b: float, rtol: float, atol: float = 0.0) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b))


def _assert_record(rec: dict, gold: dict, where: str) -> None:
    assert rec["branch"] == gold["branch"], where
    assert bool(rec["converged"]) == bool(gold["converged"]), where
    for k in FIXED_POINT_KEYS:
        # m and theta are exactly 0 on the branches that lack them: compare absolutely there
        assert _close(float(rec[k]), float(gold[k]), RTOL_FIXED_POINT, atol=1e-12), (where, k, rec[k], gold[k])


SOLVES = {
    "solve_sem_a2.json": dict(alpha=2.0, omega=0.3, branch="semantic"),
    "solve_pos_a2.json": dict(alpha=2.0, omega=0.3, branch="positional"),
    "solve_agn_a05.json": dict(alpha=0.5, omega=0.3, branch="agnostic"),
    "solve_pos_w02_a15.json": dict(alpha=1.5, omega=0.2, branch="positional"),
    "solve_local_gh6.json": dict(alpha=1.0, omega=0.3, branch="semantic", prox="local", quadrature="gh6"),
}


@pytest.mark.parametrize("name", sorted(SOLVES))
def test_solve_matches_golden(name: str) -> None:
    spec = dict(SOLVES[name])
    gold = json.loads((GOLDEN / name).read_text())
    config = SolverConfig(prox=spec.pop("prox", "global"), quadrature=spec.pop("quadrature", "sobol12"))
    fp = solve(ModelParams(omega=spec.pop("omega")), spec.pop("alpha"), spec.pop("branch"), config=config)
    _assert_record(fp.record, gold, name)


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize(
    "name, branch, alphas",
    [
        ("sweep_sem.csv", "semantic", np.linspace(1.0, 2.4, 8)),
        ("sweep_pos.csv", "positional", np.linspace(0.5, 2.5, 8)),
    ],
)
def test_sweep_matches_golden(name: str, branch: str, alphas: np.ndarray) -> None:
    gold = _read_csv(GOLDEN / name)
    res = sweep(ModelParams(omega=0.3), alphas, branch, config=SolverConfig())
    assert [p.alpha for p in res.points] == pytest.approx([float(r["alpha"]) for r in gold], abs=1e-15)
    for fp, row in zip(res.points, gold):
        _assert_record(fp.record, {**row, "converged": row["converged"] == "True"}, f"{name} alpha={fp.alpha}")


@pytest.mark.slow
def test_phase_diagram_matches_golden() -> None:
    gold = _read_csv(GOLDEN / "phase_diagram_0.1-0.4-7.csv")
    rows = phase_diagram(ModelParams(), np.linspace(0.1, 0.4, 7), config=SolverConfig())
    assert len(rows) == len(gold)
    for b, g in zip(rows, gold):
        row = b.row()
        assert _close(row["omega"], float(g["omega"]), 1e-15)
        for key, atol in (("alpha_c", ATOL_ROOT), ("alpha_l", ATOL_ROOT), ("alpha_c_coarse", ATOL_ROOT),
                          ("spinodal_semantic", ATOL_END), ("spinodal_positional", ATOL_END)):
            now = float(row[RENAMED.get(key, key)])
            assert _close(now, float(g[key]), 0.0, atol), (g["omega"], key, now, g[key])
