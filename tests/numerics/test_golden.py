"""Golden outputs: today's `solve`, `sweep` and phase-diagram numbers against recorded ones.

Two records:

* tests/golden/*.json|csv -- written by the command line before the numerics core was redesigned,
  on single-scrambling rules (sobol12 solves, sobol16 alpha_c correction, sobol15 bifurcations).
  Those rules (:data:`RECORDED`) must still reproduce them: a refactor changes nothing;
* tests/golden/rank2/ -- rank-2 solves of the matrix-overlap state evolution (docs/model.md section 7) on a
  cheap rule of 4 scramblings (tests/golden/record_golden.py --rank2): r = 2 against r* = 1 and 2, compared by
  their gauge invariants, eps_g, e_t and status;
* tests/golden/replicated/ -- the default rules since error bars became the default (4 independent
  scramblings per role, tests/golden/record_golden.py), each number with its standard error.  Today's
  defaults must reproduce them, and they must agree with the first record within the combined error
  bars (:data:`N_SIGMA`): the rule change moved every number by less than its quadrature error.

Reproduction means:

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
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from attnphase.numerics import SolverConfig, phase_diagram, solve, sweep
from attnphase.numerics.errors.quadrature_error import fixed_point_error, point_errors
from attnphase.numerics.se.starts import with_ranks
from attnphase.theory.params import ModelParams

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
REPLICATED = GOLDEN / "replicated"
RANK2 = GOLDEN / "rank2"


def _recorder():
    """tests/golden/record_golden.py, the script that writes the records: what it records (the solves, sweeps and
    rank-2 cases, their rules) is read from it here, not spelled a second time."""
    spec = importlib.util.spec_from_file_location("record_golden", GOLDEN / "record_golden.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECORDER = _recorder()

#: The single-scrambling rules of the first record.
RECORDED = SolverConfig(quadrature="sobol12", alpha_c_quadrature="sobol16", alpha_l_quadrature=None,
                      bifurcation_quadrature="sobol15", end_quadrature=None, error_bars=False)

#: Two records of one number on different rules agree within this many combined error bars.
N_SIGMA = 4.0

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


#: The recorded solves (the recorder's, and the local-prox one of the first record only).
SOLVES = {name: dict(alpha=alpha, omega=omega, branch=branch)
          for name, (alpha, omega, branch) in RECORDER.SOLVES.items()} | {
    "solve_local_gh6.json": dict(alpha=1.0, omega=0.3, branch="semantic", prox="local", quadrature="gh6"),
}


def _recorded_config(name: str) -> SolverConfig:
    """The rules the first record of ``SOLVES[name]`` was written on: :data:`RECORDED`, with its prox and solve rule."""
    spec = SOLVES[name]
    return RECORDED.replace(prox=spec.get("prox", "global"), quadrature=spec.get("quadrature", "sobol12"))


@pytest.fixture(scope="module")
def recorded_solve():
    """``recorded_solve(name)``: the solve of ``SOLVES[name]`` on :func:`_recorded_config`, computed once a module (the
    record's test and the replicated one's error comparison both need it)."""
    solved: dict = {}

    def get(name: str):
        if name not in solved:
            spec = SOLVES[name]
            solved[name] = solve(ModelParams(omega=spec["omega"]), spec["alpha"], spec["branch"],
                                 config=_recorded_config(name))
        return solved[name]

    return get


@pytest.mark.parametrize("name", sorted(SOLVES))
def test_solve_matches_golden(name: str, recorded_solve) -> None:
    gold = json.loads((GOLDEN / name).read_text())
    _assert_record(recorded_solve(name).record, gold, name)


def _within_errors(now: float, err_now: float, then: float, err_then: float, where) -> None:
    if math.isnan(now) or math.isnan(then):
        assert math.isnan(now) and math.isnan(then), where
        return
    bar = math.hypot(err_now, err_then)
    assert math.isfinite(bar), where
    assert abs(now - then) <= N_SIGMA * bar + 1e-12, (where, now, then, bar)


@pytest.mark.parametrize("name", sorted(n for n in SOLVES if "gh6" not in n))
def test_replicated_solve_matches_its_golden_and_the_first_one_within_errors(name: str, recorded_solve) -> None:
    """Today's default solve reproduces tests/golden/replicated/, error bars included; it agrees with the
    first record within the combined error bars (the recorded rules': the spread over 4 independent
    sobol12 rules, computed here)."""
    spec = SOLVES[name]
    gold = json.loads((REPLICATED / name).read_text())
    params = ModelParams(omega=spec["omega"])
    fp = solve(params, spec["alpha"], spec["branch"], config=SolverConfig())
    err = fixed_point_error(fp, SolverConfig())
    _assert_record(fp.record, gold, name)
    for k in err.std:
        assert _close(err.std[k], gold[f"err_{k}"], 1e-5, atol=1e-12), (name, k)
    first = json.loads((GOLDEN / name).read_text())
    assert _recorded_config(name) == RECORDED  # the rules the first record's error below is computed on
    first_fp = recorded_solve(name)
    first_err = fixed_point_error(first_fp, RECORDED.replace(error_bars=True), 4)
    for k in err.std:
        _within_errors(fp.record[k], err.std[k], float(first[k]), first_err.std[k], (name, k))


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("name, branch, alphas",
                         [(name, branch, alphas) for name, (branch, alphas) in RECORDER.SWEEPS.items()])
def test_sweep_matches_golden(name: str, branch: str, alphas: np.ndarray) -> None:
    for folder, config in ((GOLDEN, RECORDED), (REPLICATED, SolverConfig())):
        gold = _read_csv(folder / name)
        res = sweep(ModelParams(omega=0.3), alphas, branch, config=config)
        assert [p.alpha for p in res.points] == pytest.approx([float(r["alpha"]) for r in gold], abs=1e-15)
        for fp, row in zip(res.points, gold):
            _assert_record(fp.record, {**row, "converged": row["converged"] == "True"}, f"{folder.name}/{name} alpha={fp.alpha}")
        if config.error_bars:  # the error bars too, and the two records within them
            first = _read_csv(GOLDEN / name)
            for fp, err, row, old in zip(res.points, point_errors(res.points, config), gold, first):
                for k in ("q", "m", "theta", "e_t"):
                    assert _close(err[f"err_{k}"], float(row[f"err_{k}"]), 1e-5, atol=1e-12), (name, fp.alpha, k)
                    # the recorded rules' own error is about the same as the pooled rule's (docs/method.md
                    # section 7, error bars and precision tiers): the combined bar is sqrt(2) times today's
                    _within_errors(fp.record[k], err[f"err_{k}"], float(old[k]), err[f"err_{k}"], (name, fp.alpha, k))


def test_recorded_rules_phase_diagram_row_matches_golden() -> None:
    """The recorded rules reproduce the first record's omega = 0.3 row (the rows are independent)."""
    gold = next(g for g in _read_csv(GOLDEN / "phase_diagram_0.1-0.4-7.csv") if abs(float(g["omega"]) - 0.3) < 1e-9)
    (b,) = phase_diagram(ModelParams(), [float(gold["omega"])], config=RECORDED)
    _assert_boundaries(b.row(), gold)


def _assert_boundaries(row: dict, gold: dict) -> None:
    assert _close(row["omega"], float(gold["omega"]), 1e-15)
    for key, atol in (("alpha_c", ATOL_ROOT), ("alpha_l", ATOL_ROOT), ("alpha_c_coarse", ATOL_ROOT),
                      ("spinodal_semantic", ATOL_END), ("spinodal_positional", ATOL_END)):
        now = float(row[RENAMED.get(key, key)])
        assert _close(now, float(gold.get(key, gold.get(RENAMED.get(key, key)))), 0.0, atol), (gold["omega"], key, now)


#: The first record's error bars (tests/golden/phase_diagram_0.1-0.4-7_errors.csv): the spread over 4
#: independent rules of the same run, `phase-diagram --omega 0.1:0.4:7 --error-estimate 4` (220 s).
RECORDED_ERRORS = GOLDEN / "phase_diagram_0.1-0.4-7_errors.csv"


#: The omegas of the recorded phase diagram the test recomputes: both branch ends in range (0.1), the
#: positional end gone (0.25), the largest alpha_l (0.4).
GOLDEN_OMEGAS = (0.1, 0.25, 0.4)


@pytest.mark.slow
@pytest.mark.parametrize("omegas", [GOLDEN_OMEGAS[::2], pytest.param(GOLDEN_OMEGAS[1:2], marks=pytest.mark.heavy)],
                         ids=lambda w: ",".join(map(str, w)))
def test_phase_diagram_matches_golden(omegas: tuple[float, ...]) -> None:
    """Today's default phase diagram reproduces tests/golden/replicated/ (numbers and error bars), and every
    boundary agrees with the first record within the combined error bars.  Two omegas in the default run, one task
    each on the two workers; the third with the heavy tests."""
    # three of the seven recorded omegas (the rows are independent; all seven: tests/golden/record_golden.py)
    gold = [g for g in _read_csv(REPLICATED / "phase_diagram_0.1-0.4-7.csv") if round(float(g["omega"]), 6) in omegas]
    first = {round(float(g["omega"]), 6): g for g in _read_csv(GOLDEN / "phase_diagram_0.1-0.4-7.csv")}
    first_err = {round(float(g["omega"]), 6): g for g in _read_csv(RECORDED_ERRORS)}
    rows = phase_diagram(ModelParams(), [float(g["omega"]) for g in gold], config=SolverConfig(), workers=2)
    assert len(rows) == len(gold) == len(omegas)
    for b, g in zip(rows, gold):
        row = b.row() | b.errors()
        _assert_boundaries(row, g)
        w = round(b.omega, 6)
        for key in ("alpha_c", "alpha_l", "semantic_end", "positional_end"):
            assert _close(row[f"err_{key}"], float(g[f"err_{key}"]), 1e-3, atol=1e-9), (w, key)
            then = float(first[w][{"semantic_end": "spinodal_semantic", "positional_end": "spinodal_positional"}
                                  .get(key, key)])
            _within_errors(row[key], row[f"err_{key}"], then, float(first_err[w][f"err_{key}"]), (w, key))


#: The rank-2 records: file name -> (alpha, r, r*, branch), at omega = 0.3 on :data:`RANK2_RULE`.
RANK2_SOLVES, RANK2_RULE = RECORDER.RANK2_SOLVES, RECORDER.RANK2_RULE
#: The gauge invariants of a rank-r fixed point (lists) and its scalar observables.
RANK2_INVARIANTS = ("q0_eigenvalues", "V0_eigenvalues", "th0_singular_values", "m_norms")
RANK2_SCALARS = ("eps_g", "e_t", "e_t_direct")


@pytest.mark.parametrize("name", sorted(RANK2_SOLVES))
def test_rank2_solve_matches_golden(name: str) -> None:
    """The rank-2 solve reproduces tests/golden/rank2/: the branch reached, convergence, every gauge invariant
    and observable to the solver's tolerance (the overlaps themselves are defined up to the rotation gauge).

    The mixed point is the sensitive one: a change of the order of the floating-point operations of the hats
    moves it by ~1e-5 relative on this rule (a node's proximal minimum switches basin), so a refactor of the
    rank-r arithmetic must keep that order to reproduce it."""
    alpha, r, r_star, branch = RANK2_SOLVES[name]
    gold = json.loads((RANK2 / name).read_text())
    fp = solve(with_ranks(ModelParams(omega=0.3), r, r_star), alpha, branch,
                    config=SolverConfig(quadrature=RANK2_RULE))
    rec = fp.record
    assert (rec["branch"], rec["requested_branch"], rec["converged"]) == (gold["branch"], gold["requested_branch"],
                                                                          True), name
    assert (rec["omega"], rec["sigma"], rec["lam"]) == (0.3, 0.5, 0.01), name  # the model, as at rank 1
    assert rec["directions"] == gold["directions"], name
    for k in RANK2_INVARIANTS:
        assert len(rec[k]) == len(gold[k]), (name, k)
        for now, then in zip(rec[k], gold[k]):
            # an overlap that is 0 on its branch is exactly 0: compared absolutely there
            assert _close(now, then, RTOL_FIXED_POINT, atol=1e-12), (name, k, rec[k], gold[k])
    for k in RANK2_SCALARS:
        assert _close(rec[k], gold[k], RTOL_FIXED_POINT, atol=1e-12), (name, k, rec[k], gold[k])


#: The rank-2 sweep's record (tests/golden/record_golden.py --rank2): file name -> the command's arguments.
RANK2_SWEEPS = RECORDER.RANK2_SWEEPS
#: The rank-2 sweep's columns that are a fixed point's (its gauge invariants and observables): the solver's
#: path to it (iterations, residual, the gauge angle of the last step) may differ, the point may not.
RANK2_SWEEP_VALUES = ("e_t", "eps_g", "q0_eig_1", "q0_eig_2", "V0_eig_1", "V0_eig_2", "th0_sv_1", "m_norm_1",
                      "m_norm_2")


@pytest.mark.parametrize("name", sorted(RANK2_SWEEPS))
def test_rank2_sweep_matches_golden(name: str, tmp_path: Path) -> None:
    """``attnphase sweep --rank 2`` reproduces tests/golden/rank2/'s table: one row per alpha, the same branch and
    convergence, every gauge invariant and observable to the solver's tolerance."""
    from attnphase.cli import main

    assert main([*RANK2_SWEEPS[name], "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("*.csv")
    rows, gold = _read_csv(path), _read_csv(RANK2 / name)
    assert [float(r["alpha"]) for r in rows] == [float(g["alpha"]) for g in gold]
    for row, g in zip(rows, gold):
        assert (row["branch"], row["converged"], row["reason"]) == (g["branch"], g["converged"], g["reason"]), name
        for k in RANK2_SWEEP_VALUES:
            assert _close(float(row[k]), float(g[k]), RTOL_FIXED_POINT, atol=1e-12), (name, row["alpha"], k)
