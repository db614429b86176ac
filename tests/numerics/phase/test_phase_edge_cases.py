"""Edge cases of the phase search: solves that an approximate map misleads, brackets that grow beyond the alpha grid,
the positional branch followed only where phase boundaries need it, and the omega = 0 and 0.05
rows of the phase diagram (recorded in tests/golden/replicated/phase_diagram_omega{0,0.05}.csv)."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from dataclasses import replace

import numpy as np
import pytest

from attnphase.numerics import SolverConfig, phase_boundaries, solve
from attnphase.numerics.errors.quadrature_error import fixed_point_error
from types import SimpleNamespace

from attnphase.numerics.phase.scalar_boundaries import whole_positional_branch
from attnphase.numerics.phase.brackets import (
    ALPHA_LIMIT, BranchLost, grid_extension, grow_alpha_c_down, grow_alpha_c_up, positional_grid,
)
from attnphase.numerics.phase.branch_end import BranchEnd
from attnphase.numerics.phase.continuation import BranchSweep, order_growing
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.fixed_point import DISTRUST_RESIDUAL, FixedPointSolver
from attnphase.theory.params import ModelParams
from toy_maps import AffineMap

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
#: as tests/numerics/test_golden.py: roots to xtol = 1e-4, ends (bifurcations) to the secant's 1e-3
ATOL_ROOT, ATOL_END = 1e-4, 1e-3


def _BiasedApproximation(A: np.ndarray, b: np.ndarray, bias: np.ndarray) -> AffineMap:
    """x -> A x + b exactly; approximate evaluations (all but those asked exact) use b + bias."""
    return AffineMap(A, b, exact_every=10**9, bias=bias)


@pytest.mark.parametrize("warm", [False, True])
def test_a_grossly_wrong_approximate_map_is_distrusted(warm: bool) -> None:
    """The approximate map's own fixed point is off by 0.1 (> DISTRUST_RESIDUAL): after the first
    rejection the solver evaluates exactly and converges to the exact map's fixed point."""
    A = np.array([[0.3, 0.1], [0.0, -0.4]])
    b = np.array([1.0, 0.5])
    fmap = _BiasedApproximation(A, b, np.array([0.1, 0.0]))
    res = FixedPointSolver(fmap, SolverConfig(tol=1e-12)).solve(np.zeros(2), warm=warm)
    assert res.converged and res.evaluation.exact
    assert np.allclose(res.evaluation.x, np.linalg.solve(np.eye(2) - A, b), atol=1e-10)
    assert fmap.full_only


def test_a_slightly_wrong_approximate_map_is_kept() -> None:
    """Rejections below DISTRUST_RESIDUAL (the rule's own noise) keep the approximate map on."""
    A = np.array([[0.3, 0.1], [0.0, -0.4]])
    fmap = _BiasedApproximation(A, np.array([1.0, 0.5]), np.array([0.1 * DISTRUST_RESIDUAL, 0.0]))
    FixedPointSolver(fmap, SolverConfig(tol=1e-12, max_iter=40)).solve(np.zeros(2))
    assert not fmap.full_only


def test_positional_solve_at_omega_0_converges() -> None:
    """At omega = 0, alpha = 0.3 a polished iteration can converge to m = 0.1465, which the full
    search rejects (residual 1.7e-2): the solve must still converge on the branch."""
    fp = solve(ModelParams(omega=0.0), 0.3, "positional", config=SolverConfig())
    assert fp.status.converged and fp.branch == "positional"
    assert fp.status.residual <= 1e-10
    assert 0.11 < abs(fp.overlaps.m[0]) < 0.14  # m = 0.1261 (seed 0); the polished point had 0.1465


def test_grid_extension_ends_at_the_limit() -> None:
    assert grid_extension(3.0) == [6.0, ALPHA_LIMIT]
    assert grid_extension(ALPHA_LIMIT) == []
    ext = grid_extension(1.0)
    assert ext[-1] == ALPHA_LIMIT and all(b > a for a, b in zip([1.0] + ext, ext))


def _m_point(alpha: float, m: float, q0: float = 0.2, V0: float = 50.0) -> SimpleNamespace:
    return SimpleNamespace(alpha=alpha, overlaps=Overlaps(q0=q0, V0=V0, m=np.array([m, -m]), th0=0.0))


def test_order_growing_compares_the_last_two_distinct_points() -> None:
    """|m| growing towards a failed step (omega = 0.45: 0.2765 -> 0.2793) skips the eigenvalue's search ahead;
    falling (omega = 0.1: 0.1781 -> 0.1663, the branch ending at 1.285) keeps it; one point says nothing."""
    assert order_growing([_m_point(1.15, 0.2765), _m_point(1.29, 0.2793)])
    assert not order_growing([_m_point(0.89, 0.1781), _m_point(1.02, 0.1663)])
    assert not order_growing([_m_point(0.63, 0.19)])
    # the last grid point repeated as the point reached (no progress): the two before it decide
    assert not order_growing([_m_point(0.89, 0.1781), _m_point(1.02, 0.1663), _m_point(1.02, 0.1663)])
    assert order_growing([None, _m_point(1.15, 0.2765), _m_point(1.29, 0.2793), _m_point(1.29, 0.2793)])


def test_alpha_c_bracket_grows_down_to_the_semantic_end() -> None:
    """Delta e_t <= 0 at the lowest common grid point a_low, > 0 near the semantic end: the bracket
    closes between them, skipping a point where a branch is lost."""
    root = 0.55

    def d_et(alpha: float) -> tuple[float, float]:
        if abs(alpha - 0.57) < 1e-12:  # a == end + 0.5 (a_low - end) for end 0.51, a_low 0.63
            raise BranchLost("lost")
        return root - alpha, -1.0

    (a0, d0), (a1, d1) = grow_alpha_c_down(d_et, 0.51, 0.63, -0.08)
    assert a0 < root < a1 and d0 > 0 >= d1
    assert grow_alpha_c_down(lambda a: (-1.0, -1.0), 0.51, 0.63, -0.08) is None


def _golden_rows(name: str) -> list[dict[str, str]]:
    with open(GOLDEN / name, newline="") as fh:
        return list(csv.DictReader(fh))


def test_alpha_c_bracket_grows_up_to_the_positional_end() -> None:
    """Delta e_t > 0 at the highest common grid point (the positional warm continuation stalled
    above it), <= 0 further up below the positional end: the bracket closes there, skipping a point
    where a branch is lost, and includes the semantic grid points in between."""
    root, lost = 0.68, 0.627 + 0.25 * (1.0947 - 0.627)

    def d_et(alpha: float) -> tuple[float, float]:
        if abs(alpha - lost) < 1e-12:
            raise BranchLost("lost")
        return alpha - root, 1.0

    (a0, d0), (a1, d1) = grow_alpha_c_up(lambda a: (-d_et(a)[0], -1.0), 0.627, 0.05, 1.0947, [0.891])
    assert a0 < root < a1 and d0 > 0 >= d1 and a1 != lost
    seen: list[float] = []
    assert grow_alpha_c_up(lambda a: (seen.append(a), (1.0, 1.0))[1], 0.627, 0.05, 1.0947, [0.891]) is None
    assert 0.891 in seen and seen == sorted(seen) and max(seen) < 1.0947


def _point(alpha: float, branch: str, *, th0: float = 0.0, m: float = 0.0, e_t: float = 0.0):
    """A converged fixed point as the sweeps see it (label, overlaps, e_t)."""
    return SimpleNamespace(alpha=alpha, branch=branch, status=SimpleNamespace(converged=True),
                           overlaps=SimpleNamespace(th0=th0, m=np.array([m, -m])),
                           observables=SimpleNamespace(e_t=e_t))


def test_positional_grid_starts_above_the_semantic_end() -> None:
    grid = [0.1, 0.364, 0.627, 0.891, 1.155]
    sem = BranchSweep("semantic", [_point(a, "semantic", th0=0.3) for a in grid[2:]],
                      BranchEnd(0.5295, "bifurcation", "eigenvalue"), "below")
    assert positional_grid(grid, sem) == grid[2:]
    # no semantic end in the range, or no semantic point: the whole grid
    assert positional_grid(grid, BranchSweep("semantic", sem.points)) == grid
    assert positional_grid(grid, BranchSweep("semantic", [], sem.end)) == grid


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.parametrize("omega", [0.0, 0.05])
def test_small_omega_rows_match_golden(omega: float) -> None:
    """The omega = 0 and 0.05 rows (recorded with the default rules: tests/golden/record_golden.py); no NaN in
    either, and an error bar on each."""
    (gold,) = _golden_rows(f"replicated/phase_diagram_omega{omega:g}.csv")
    b = phase_boundaries(ModelParams(omega=omega), np.linspace(0.1, 3.0, 12), config=SolverConfig())
    row = b.row()
    for key, atol in (("alpha_c", ATOL_ROOT), ("alpha_l", ATOL_ROOT), ("alpha_c_coarse", ATOL_ROOT),
                      ("semantic_end", ATOL_END), ("positional_end", ATOL_END)):
        now, then = float(row[key]), float(gold[key])
        assert math.isfinite(now), (key, row["notes"])
        assert abs(now - then) <= atol, (key, now, then)
    for key in ("alpha_c", "alpha_l", "semantic_end", "positional_end"):
        assert 0 < b.errors()[f"err_{key}"] < 0.02, key


def test_whole_positional_branch_adds_the_grid_below_the_boundaries_range() -> None:
    """The main job's curves: the positional points below the first one phase boundaries followed
    (omega = 0.3: the branch exists at alpha = 0.1), before them, the end kept.  They are followed
    down from the lowest point and are the fixed points a cold solve finds there."""
    params = ModelParams(omega=0.3)
    end = BranchEnd(2.0, "bifurcation", "eigenvalue")
    upper = solve(params, 0.627, "positional", config=SolverConfig())
    pos = BranchSweep("positional", [upper], end, "above")
    whole = whole_positional_branch(params, [0.1, 0.627], pos, SolverConfig())
    assert [p.alpha for p in whole.points] == [0.1, 0.627] and whole.points[1] is upper
    low = whole.points[0]
    assert low.branch == "positional" and low.status.converged
    cold = solve(params, 0.1, "positional", config=SolverConfig())
    assert cold.status.converged
    # the same fixed point up to the rule's cluster of nearby fixed points (docs/method.md section 9): on
    # sobol12 they agreed to 2e-9; on sobol10:4 the two paths end 6e-5 apart in m, far inside its error bar
    err = fixed_point_error(cold, SolverConfig()).std
    assert abs(low.record["q"] - cold.record["q"]) < 0.1 * err["q"]
    assert abs(low.record["m"] - cold.record["m"]) < 0.1 * err["m"]
    assert abs(low.record["V"] - cold.record["V"]) < 0.1 * err["V"]
    assert whole.end is end
    assert whole_positional_branch(params, [0.627, 1.0], pos, SolverConfig()) is pos


@pytest.mark.heavy
@pytest.mark.slow
def test_alpha_c_found_where_the_positional_sweep_dropped_its_grid_points() -> None:
    """Regression (46-omega diagram on sobol10:4): at omega = 0.19 the positional sweep's warm step from 0.627
    failed, its end was found ahead at 1.72, and the grid points in between were dropped: no point in common
    with the semantic branch, alpha_c NaN.  The positional branch is now solved at the semantic grid points
    below its end; alpha_c lies between those of omega = 0.15 and 0.2 (tests/golden/replicated)."""
    b = phase_boundaries(ModelParams(omega=0.19), np.linspace(0.1, 3.0, 12), config=SolverConfig())
    assert 0.8395 < b.alpha_c < 0.9478 and 0 < b.alpha_c_err < 1e-3, (b.alpha_c, b.notes)
    assert b.positional.on_branch()[-1].alpha < b.positional_end


def test_both_branches_are_solved_inside_their_overlap_where_the_grid_has_no_point_of_both() -> None:
    """The semantic sweep lost a grid step above its end (0.605 < 0.627) and the positional end (0.85) lies below the
    next grid point (0.891): both are solved at three alphas inside (0.627, 0.85), the semantic branch downwards,
    the positional one upwards; a solve that loses its branch is skipped, an overlap that is empty adds nothing."""
    from attnphase.numerics.phase.scalar_boundaries import fill_overlap

    s_on, p_on = [SimpleNamespace(alpha=a) for a in (0.8909, 1.1545)], [SimpleNamespace(alpha=0.6273)]
    calls: list[tuple[str, float]] = []

    def on_branch_solve(branch: str, alpha: float):
        calls.append((branch, round(alpha, 4)))
        if (branch, round(alpha, 4)) == ("semantic", 0.683):
            raise BranchLost("semantic branch lost")
        (s_on if branch == "semantic" else p_on).append(SimpleNamespace(alpha=alpha))

    fill_overlap(s_on, p_on, 0.6048, 0.8501, on_branch_solve)
    inside = [0.683, 0.7387, 0.7944]
    assert calls == [("semantic", a) for a in inside[::-1]] + [("positional", a) for a in inside]
    common = {round(p.alpha, 4) for p in s_on} & {round(p.alpha, 4) for p in p_on}
    assert common == {0.7387, 0.7944}
    calls.clear()
    fill_overlap([SimpleNamespace(alpha=0.8)], [SimpleNamespace(alpha=0.6)], 0.55, 0.58, on_branch_solve)
    assert calls == []  # the positional branch ends (0.58) below its own lowest point: no overlap


@pytest.mark.heavy
def test_alpha_c_found_where_neither_sweep_reached_the_overlap_of_the_branches() -> None:
    """lam = 0.005, omega = 0.2: the semantic sweep stops at 0.891 (its step to 0.627 fails, its end 0.605), the
    positional one at 0.627 (its end 0.850): the branches coexist on (0.605, 0.850) with no grid point of both.
    alpha_c is then the root of Delta e_t with its fine-rule correction and bar (0.6783 +- 2e-4), not the
    lowest-point search's coarser root on the solve rule (0.673 +- 0.009)."""
    b = phase_boundaries(ModelParams(omega=0.2, lam=0.005), None, config=SolverConfig())
    assert 0.6048 < b.alpha_c < 0.8501 and 0 < b.alpha_c_err < 1e-3, (b.alpha_c, b.alpha_c_err, b.notes)
    assert b.alpha_c_method.startswith("safeguarded Newton"), b.alpha_c_method


def test_the_scalar_boundaries_fill_the_columns_every_rank_shares() -> None:
    """At r = r* = 1 the row says what the search over every branch says at r >= 2: alpha_c from positional to
    semantic and how it was located, alpha_l on the semantic branch, each end with the side the branch exists on."""
    from attnphase.numerics.phase.boundary_results import Boundaries, boundary_columns
    from attnphase.numerics.phase.branch_end import BranchEnd
    from attnphase.numerics.phase.continuation import BranchSweep
    from attnphase.numerics.phase.scalar_boundaries import with_scalar_labels

    sem = BranchSweep("semantic", [], BranchEnd(0.6, "bifurcation", "eigenvalue", err=1e-3), "below")
    pos = BranchSweep("positional", [], BranchEnd(1.7, "bifurcation", "eigenvalue", err=2e-3), "above")
    b = Boundaries(omega=0.2, alpha_c=1.1, alpha_l=1.4, semantic_end=0.6, positional_end=1.7, semantic=sem,
                   positional=pos)
    row = with_scalar_labels(b, SolverConfig()).row()
    assert set(row) >= set(boundary_columns(1)) and "mixed_end" not in row
    assert (row["alpha_c_from"], row["alpha_c_to"], row["alpha_l_branch"]) == ("positional", "semantic", "semantic")
    assert "corrected by Newton steps with E[M] on sobol16:4" in row["alpha_c_method"]
    ends = with_scalar_labels(b, SolverConfig()).ends
    assert [(e.branch, e.alpha, e.exists, e.err) for e in ends] == [("semantic", 0.6, "above", 1e-3),
                                                                     ("positional", 1.7, "below", 2e-3)]
    # the row says the side too: a positional_end that is the branch's birth reads as one (--lam 0.02 --omega 0.1:
    # 0.10439, the branch above it, where --omega 0's 0.9319 is an end with the branch below it)
    assert (row["semantic_end_exists"], row["positional_end_exists"]) == ("above", "below")
    from attnphase.numerics.phase.positional_birth import with_birth

    born = with_birth(replace(with_scalar_labels(b, SolverConfig()), positional_end=math.nan),
                      BranchEnd(0.104, "bifurcation", "eigenvalue", err=2e-4))
    assert (born.positional_end, born.positional_end_exists, born.row()["positional_end_exists"]) == (0.104, "above",
                                                                                                    "above")
    assert "no error bar" in row["alpha_c_method"]  # b has no alpha_c_err: the method claims no standard error
    assert "err = standard error" not in row["alpha_c_method"]
    barred = with_scalar_labels(replace(b, alpha_c_err=2e-4), SolverConfig()).alpha_c_method
    assert "err = standard error over the rules' scrambling blocks" in barred and "no error bar" not in barred
    # the kind of bar as the run made it: none asked for, or the spread over --error-estimate K rules
    from attnphase.numerics.phase.boundary_refinement import alpha_c_method

    off = with_scalar_labels(b, SolverConfig(error_bars=False)).alpha_c_method
    assert off.endswith("no error bar (--error-estimate 0)")
    assert alpha_c_method(SolverConfig(quadrature="sobol12"), math.nan, 4).endswith("err = spread over 4 independent "
                                                                                    "rules")
    none = with_scalar_labels(Boundaries(omega=0.2, alpha_c=math.nan, alpha_l=math.nan, semantic_end=math.nan,
                                         positional_end=math.nan), SolverConfig())
    assert (none.alpha_c_from, none.alpha_c_method, none.alpha_l_branch, none.ends) == ("", "", "", ())
    assert (none.semantic_end_exists, none.positional_end_exists) == ("", "")


def test_alpha_l_equal_to_alpha_c_says_why():
    # --lam 0.1 --omega 0.2: the lowest point jumps from the positional point (eps_g above eps_lin) to the semantic
    # one (below) at alpha_c = 7.967, so alpha_l is that jump too; printed bare, the two equal numbers read as a bug
    from attnphase.numerics.phase.boundary_refinement import refined_alpha_l

    alpha_l, err, note = refined_alpha_l([], 7.967, 7.967, 3e-4, None)
    assert (alpha_l, err) == (7.967, 3e-4) and note.startswith("alpha_l = alpha_c: the semantic eps_g is already below")
    assert refined_alpha_l([], float("nan"), 7.967, 3e-4, None)[2] == ""


def test_alpha_l_keeps_an_error_bar_where_its_fine_rule_solve_fails(monkeypatch):
    # sigma = 0.8, omega = 0.3: the fine rule's re-solve at alpha_l did not converge and alpha_l came without a bar;
    # it is then the solve rule's root with the solve rule's blocks' error, and the note says which
    from attnphase.numerics.phase import boundary_refinement as br

    cfg = SolverConfig(quadrature="sobol8:4", alpha_l_quadrature="sobol10:4")
    params = ModelParams(omega=0.3)
    pts = [solve(params, a, "semantic", config=cfg) for a in (1.45, 1.5)]
    real = br.solve

    def failing_on_the_fine_rule(p, a, b, **kw):
        fp = real(p, a, b, **kw)
        if kw["config"].quadrature == cfg.alpha_l_quadrature:
            return replace(fp, status=replace(fp.status, converged=False))
        return fp
    monkeypatch.setattr(br, "solve", failing_on_the_fine_rule)
    alpha_l, err, note = br.refine_alpha_l(pts, 1.49, cfg)
    assert alpha_l == 1.49 and 0 < err < 0.05
    assert note.startswith("alpha_l: sobol10:4 refinement not applied") and note.endswith("and its blocks' error")


def test_alpha_l_keeps_an_error_bar_where_its_fine_rule_blocks_fail(monkeypatch):
    # sigma = 0.7, omega = 0: the fine rule's re-solve at alpha_l converged but three of its four blocks left the point
    # (a jump of the rule at alpha 0.543), and alpha_l was printed "+- nan" with no note; it is then the solve rule's
    # root with the solve rule's blocks' error, and where those fail too the note says there is no bar and why
    from attnphase.numerics.phase import boundary_refinement as br

    cfg = SolverConfig(quadrature="sobol8:4", alpha_l_quadrature="sobol10:4")
    pts = [solve(ModelParams(omega=0.3), a, "semantic", config=cfg) for a in (1.45, 1.5)]
    real = br.block_root_error
    monkeypatch.setattr(br, "block_root_error", lambda points, g, slope, c: (
        math.nan if c.quadrature == cfg.alpha_l_quadrature else real(points, g, slope, c)))
    alpha_l, err, note = br.refine_alpha_l(pts, 1.49, cfg)
    assert alpha_l == 1.49 and 0 < err < 0.05
    assert note == ("alpha_l: sobol10:4 refinement not applied (fewer than two of its blocks reproduce the re-solved "
                    "point); the solve rule's root and its blocks' error")
    monkeypatch.setattr(br, "block_root_error", lambda *a: math.nan)
    alpha_l, err, note = br.refine_alpha_l(pts, 1.49, cfg)
    assert alpha_l == 1.49 and math.isnan(err)
    assert note.endswith("; no error bar (fewer than two blocks of sobol8:4 reproduce the point)")
    alpha_l, err, note = br.refine_alpha_l(pts[:1], 1.49, cfg)  # one point: no slope
    assert math.isnan(err) and note.startswith("alpha_l: no error bar (no two semantic points")
    assert br.refine_alpha_l(pts[:1], 1.49, cfg.replace(error_bars=False))[2] == ""


def _relabelled(branch: str):
    """A point of ``branch`` (converged, on a coarse rule) as ``point(alpha, label)``: the same overlaps at another
    alpha and label, what stand-in sweeps are made of."""
    on = solve(ModelParams(), 2.0, branch, config=SolverConfig(quadrature="sobol6:2"))
    assert on.status.converged and on.branch == branch
    return lambda alpha, label: replace(on, alpha=alpha, branch=label)


def test_a_semantic_branch_held_above_the_grid_is_followed_down_to_its_end(monkeypatch):
    """A semantic sweep with no point on its branch on the grid (``--lam 0.1 --omega 0.4``: absent up to 2.7, below
    the branch's floor at 3) is followed down from the cold start at the grid extension's top to the grid's top, and
    its end there is the sweep's; nothing above the grid on the branch leaves the sweep as it was."""
    from attnphase.numerics.phase import scalar_boundaries as sb
    from attnphase.numerics.phase.continuation import NO_END

    params = ModelParams(omega=0.4, lam=0.1)
    point = _relabelled("semantic")
    grid_sweep = BranchSweep("semantic", [point(a, "agnostic") for a in (1.0, 2.0, 3.0)], NO_END, "")
    end = BranchEnd(4.2, "bifurcation", "eigenvalue", err=0.01)
    calls = []

    def fake_sweep(params, alphas, branch, **kw):
        calls.append(list(alphas))
        return BranchSweep("semantic", [point(a, "semantic") for a in alphas if a > 4.2], end, "below")
    monkeypatch.setattr(sb, "sweep", fake_sweep)
    grown = sb.semantic_above(params, grid_sweep, 3.0, [6.0, 10.0], {})
    assert calls == [[3.0, 6.0, 10.0]]
    assert [p.alpha for p in grown.points] == [1.0, 2.0, 3.0, 6.0, 10.0]
    assert grown.end is end and grown.end_side == "below"
    monkeypatch.setattr(sb, "sweep", lambda *a, **k: BranchSweep("semantic", [point(6.0, "agnostic")], NO_END, ""))
    assert sb.semantic_above(params, grid_sweep, 3.0, [6.0, 10.0], {}) is grid_sweep


def test_a_positional_branch_absent_above_the_semantic_end_is_followed_below_it(monkeypatch):
    """``--lam 0.001 --omega 0.45``: the positional branch, followed from the first grid point above the semantic end
    (1.28), is absent there; it lives below (on up to 0.60), where it is followed up over the grid below and up to
    that first point, and its end is the sweep's.  A positional sweep with a point on its branch, or nothing on the
    branch below, is left as it was."""
    from attnphase.numerics.phase import scalar_boundaries as sb
    from attnphase.numerics.phase.continuation import NO_END

    point = _relabelled("positional")
    above = BranchSweep("positional", [point(a, "agnostic") for a in (1.5, 2.0, 3.0)], NO_END, "")
    end = BranchEnd(0.6047, "bifurcation", "eigenvalue", err=0.002)
    calls = []

    def fake_sweep(params, alphas, branch, **kw):
        calls.append(list(alphas))
        return BranchSweep(branch, [point(a, "positional" if a < 0.6 else "agnostic") for a in alphas if a < 0.7],
                           end, "above")
    monkeypatch.setattr(sb, "sweep", fake_sweep)
    grid = (0.1, 0.4, 0.8, 1.5, 2.0, 3.0)
    grown = sb.positional_below(ModelParams(omega=0.45, lam=0.001), grid, above, {})
    assert calls == [[0.1, 0.4, 0.8, 1.5]]
    assert [p.alpha for p in grown.points] == [0.1, 0.4, 1.5, 2.0, 3.0] and grown.end is end
    assert grown.end_side == "above"
    held = BranchSweep("positional", [point(1.5, "positional")], NO_END, "")
    assert sb.positional_below(ModelParams(), grid, held, {}) is held and len(calls) == 1
    monkeypatch.setattr(sb, "sweep", lambda *a, **k: BranchSweep("positional", [point(0.1, "agnostic")], NO_END, ""))
    assert sb.positional_below(ModelParams(), grid, above, {}) is above


def test_a_warm_agnostic_solve_stays_on_the_agnostic_point_where_it_is_unstable_in_m():
    """``--rho0 2 --omega 0.05``: a point labelled agnostic with |m| ~ 1e-13 (a positional start that fell to it)
    starts the agnostic solve at alpha = 0.1, where the positional branch leaves the agnostic point: the solve is
    the agnostic point's (m = th0 = 0 exactly), not the positional point the residual m grows to."""
    from attnphase.numerics.phase.continuation import solve_from

    params, cfg = ModelParams(rho0=2, omega=0.05), SolverConfig(quadrature="sobol8:4", error_bars=False)
    fell = solve(params, 0.627, "agnostic", config=cfg)
    assert fell.branch == "agnostic" and not np.any(fell.overlaps.m)
    fell = replace(fell, overlaps=replace(fell.overlaps, m=np.array([-7.4e-13, 7.4e-13])))
    fp = solve_from(params, 0.1, "agnostic", fell, cfg)
    assert fp.status.converged and fp.branch == "agnostic" and not np.any(fp.overlaps.m) and fp.overlaps.th0 == 0
    assert solve(params, 0.1, "positional", config=cfg).branch == "positional"  # the point the m would grow to


def test_the_lower_of_two_positional_branches_is_followed(monkeypatch):
    """``--A "0.9,0.1;0.5,0.5" --omega 0.45``: the positional sweep's cold start at its first grid point (3) lies above
    the agnostic point in e_t; the branch followed up from the grid's start reaches a different point there, lower,
    and the sweep is made again from it, with a note.  Left as it was: a cold start below the agnostic point (no sweep
    below), and a follow from below that reaches the same point or a higher one."""
    from attnphase.numerics.phase import scalar_boundaries as sb
    from attnphase.numerics.phase.continuation import NO_END

    base = _relabelled("positional")(3.0, "positional")

    def point(alpha, m, e_t, label="positional"):
        ov = replace(base.overlaps, m=np.asarray([m, 0.5 * m]))
        return replace(base, alpha=alpha, branch=label, overlaps=ov, observables=replace(base.observables, e_t=e_t))
    cold = point(3.0, 0.33, 0.0213)
    high = BranchSweep("positional", [cold, point(6.0, 0.3, 0.02)], NO_END, "")
    calls = []

    def fake_sweep(params, alphas, branch, start=None, **kw):
        calls.append((list(alphas), start))
        if start is None:  # the follow up from the grid's start
            return BranchSweep(branch, [point(a, lower_m, lower_e_t) for a in alphas], NO_END, "")
        return BranchSweep(branch, [start, point(6.0, 0.5, 0.019)], NO_END, "")
    monkeypatch.setattr(sb, "sweep", fake_sweep)
    agnostic_e_t = 0.0208
    monkeypatch.setattr(sb, "solve", lambda params, alpha, branch, **kw: point(alpha, 0.0, agnostic_e_t, "agnostic"))
    grid, kw, params = (1.0, 2.0, 3.0, 6.0), {"config": SolverConfig()}, ModelParams(omega=0.45)
    lower_m, lower_e_t = 0.378, 0.020658
    pos, note = sb.lower_positional(params, grid, high, None, kw)
    assert [c[0] for c in calls] == [[1.0, 2.0, 3.0], [3.0, 6.0]] and calls[1][1].overlaps.m[0] == lower_m
    assert [p.observables.e_t for p in pos.points] == [0.020658, 0.019]
    assert note.startswith("positional: two branches at alpha = 3") and "the lower one followed" in note
    for lower_m, lower_e_t in ((0.33, 0.0213), (0.378, 0.0214)):  # the same point; a higher one
        assert sb.lower_positional(params, grid, high, None, kw) == (high, "")
    agnostic_e_t, calls[:] = 0.0214, []  # the cold start below the agnostic point: nothing followed
    assert sb.lower_positional(params, grid, high, None, kw) == (high, "") and calls == []


@pytest.mark.heavy
def test_alpha_c_is_the_crossing_with_the_lower_positional_branch():
    # --A "0.9,0.1;0.5,0.5" --omega 0.45: the positional sweep's cold start at 3 lands on a branch above the agnostic
    # point (|m| 0.365); the branch followed up from 0.1 (|m| 0.534) lies below the semantic point up to alpha_c ~ 3.9
    # (census at 3.8: positional lower, at 4: semantic lower), not the agnostic -> semantic change at 3.02
    b = phase_boundaries(ModelParams(A=((0.9, 0.1), (0.5, 0.5)), omega=0.45), config=SolverConfig())
    assert 3.8 < b.alpha_c < 4.0 and 0 < b.alpha_c_err < 3e-3 and b.alpha_c_from == "positional", (b.alpha_c, b.notes)
    assert any(n.startswith("positional: two branches at alpha = 3") for n in b.notes), b.notes


@pytest.mark.heavy
def test_alpha_c_is_located_where_every_solve_fails_at_one_iterate():
    # --sigma 0.4,0.6 --omega 0.4: the root search's iterate 1.64021 lies on a patch (1.640-1.641) where every semantic
    # solve fails on the default rule; Delta e_t evaluated 5e-3 beside it closes the root at 1.6455 (Delta e_t 4.6e-7
    # at 1.645, -3.9e-6 at 1.65 on the sweep), corrected on the finer rule to 1.6505
    b = phase_boundaries(ModelParams(sigma=(0.4, 0.6), omega=0.4), config=SolverConfig())
    assert 1.644 < b.alpha_c_coarse < 1.647 and 1.64 < b.alpha_c < 1.66 and 0 < b.alpha_c_err < 1e-3, b.notes
    assert not any("lost" in n for n in b.notes), b.notes


@pytest.mark.heavy
def test_a_strong_ridges_semantic_end_above_the_grid_is_located():
    # --lam 0.1 --omega 0.4 on sobol8:4: the semantic branch is on at alpha = 6 and 10 and absent on the grid
    # 0.1:3:12; its end, a birth from the agnostic point, lies at 3.12 (the eigenvalue's secant from the failed
    # solve's side of the bracket; from 6 the secant's steps do not reach it, and the trace at fixed theta stopped
    # at 4.19 on a jump in alpha, which was reported as the end)
    b = phase_boundaries(ModelParams(omega=0.4, lam=0.1), config=SolverConfig(quadrature="sobol8:4"))
    assert 3.05 < b.semantic_end < 3.2 and b.semantic_end_kind == "bifurcation"
    assert b.semantic_end_method == "eigenvalue" and 0 < b.semantic_end_err < 0.05


def test_the_eigenvalues_secant_starts_again_on_the_far_side_of_a_wide_bracket(monkeypatch):
    """bifurcation_end: a secant from the branch's last point that does not converge (an end far below it) is started
    again at the grid point, then at the alpha where the branch was not found; the first that converges is the end."""
    from attnphase.numerics.phase import branch_end as be
    from attnphase.numerics.phase.bifurcation import Bifurcation

    guesses = []

    def fake(params, good, direction, cfg, alpha_guess=None, step=0.05):
        guesses.append(alpha_guess)
        ok = alpha_guess == 3.0
        return Bifurcation(3.12 if ok else math.nan, ok, "converged" if ok else "not converged to 0.001 in 12 "
                           "secant steps", 0.8, (), 0, 0.01, 0, 3.12 if ok else math.nan)
    monkeypatch.setattr(be, "bifurcation_from", fake)
    good = SimpleNamespace(alpha=6.0, is_matrix=False)
    end, why = be.bifurcation_end(ModelParams(omega=0.4, lam=0.1), "semantic", "down", good, 6.0, SolverConfig(),
                                  far=3.0)
    assert guesses == [None, 3.0] and end.alpha == 3.12 and end.method == "eigenvalue" and why == ""
    guesses.clear()
    end, why = be.bifurcation_end(ModelParams(omega=0.4, lam=0.1), "semantic", "down", good, 4.5, SolverConfig(),
                                  far=3.0)
    assert guesses == [None, 4.5, 3.0] and end.alpha == 3.12
    guesses.clear()
    end, why = be.bifurcation_end(ModelParams(omega=0.4, lam=0.1), "semantic", "down", good, 6.0, SolverConfig())
    assert guesses == [None] and end is None and "12 secant steps" in why


def test_a_crossing_that_is_not_the_end_starts_the_secant_again(monkeypatch):
    """sigma = 0.3, omega = 0.4: the agnostic point stops converging above alpha ~ 5.1, and the secant from the
    branch's last point (6) reached a spurious crossing there (5.2045, the wrong way, slope -2385): the end was then
    bisected on failed solves (4.565, no bar).  A crossing rejected (the wrong way, or not beyond the branch's last
    grid point) starts the secant again at the grid point and the far side, as a failed secant does; where none
    gives the end, the first crossing's reason is kept."""
    from attnphase.numerics.phase import branch_end as be
    from attnphase.numerics.phase.bifurcation import Bifurcation

    guesses = []

    def fake(params, good, direction, cfg, alpha_guess=None, step=0.05):
        guesses.append(alpha_guess)
        alpha, slope = {None: (5.2045, -2384.66), 3.0: (4.551, 3.1)}.get(alpha_guess, (math.nan, 0.0))
        ok = math.isfinite(alpha)
        return Bifurcation(alpha, ok, "converged" if ok else "not converged", slope, (), 0, 0.019, 0, alpha)
    monkeypatch.setattr(be, "bifurcation_from", fake)
    good = SimpleNamespace(alpha=6.0, is_matrix=False)
    params = ModelParams(omega=0.4, sigma=0.3)
    end, why = be.bifurcation_end(params, "semantic", "down", good, 6.0, SolverConfig(), far=3.0)
    assert guesses == [None, 3.0] and end.alpha == 4.551 and end.kind == "bifurcation" and why == ""
    guesses.clear()
    end, why = be.bifurcation_end(params, "semantic", "down", good, 6.0, SolverConfig(), far=2.0)
    assert guesses == [None, 2.0] and end is None
    # the first crossing's reason, not the last failure's
    assert why.startswith("the eigenvalue crosses 1 the wrong way at 5.2045")


def test_a_trace_stopped_short_of_the_end_is_not_the_end(monkeypatch):
    """trace_branch_end: a trace whose next step still jumps in alpha at its lowest alpha has not located the end
    (alpha NaN, kind STOPPED, the jump in its note); locate_branch_end then bisects in alpha, with both reasons in
    the end's note.  A trace that passed an interior extremum of alpha before a jump located a fold there."""
    from attnphase.numerics.phase import branch_end as be

    on = solve(ModelParams(), 2.0, "semantic", config=SolverConfig(quadrature="sobol6:2"))

    def at(alpha, theta):
        ov = on.overlaps
        return replace(on, alpha=alpha, overlaps=Overlaps(q0=ov.q0, V0=ov.V0, m=ov.m, th0=theta))

    def fake_order(path):
        def solve_at_order(params, order, target, init, config=None, memory=None):
            return at(path(target), target)
        return solve_at_order

    start = at(6.0, 0.5)  # on the line alpha = 3.5 + 5 theta
    # alpha falls with theta, then jumps by 1 at theta < 0.3: stopped at its lowest alpha
    monkeypatch.setattr(be, "solve_at_order", fake_order(lambda th: 3.5 + 5 * th if th >= 0.3 else 2.0))
    traced = be.trace_branch_end(ModelParams(), start, "semantic", n_steps=6, min_ratio=0.1)
    assert math.isnan(traced.alpha) and traced.kind == be.STOPPED and "stopped at alpha = 5" in traced.note
    # alpha has a minimum at theta = 0.35 before the jump: a fold there
    def bowl(th):
        return 4.0 + 2 * (th - 0.35) ** 2 if th >= 0.2 else 2.0
    monkeypatch.setattr(be, "solve_at_order", fake_order(bowl))
    fold = be.trace_branch_end(ModelParams(), at(bowl(0.5), 0.5), "semantic", n_steps=8, min_ratio=0.1)
    assert fold.kind == "fold" and 4.0 <= fold.alpha < 4.1
    # locate_branch_end: no bifurcation end, the trace stopped: bisection between the last point and the failure
    monkeypatch.setattr(be, "solve_at_order", fake_order(lambda th: 3.5 + 5 * th if th >= 0.3 else 2.0))
    monkeypatch.setattr(be, "bifurcation_end", lambda *a, **k: (None, "no eigenvalue end"))
    branch_from = 3.3

    def run(alpha, near):
        return at(alpha, 0.4) if alpha >= branch_from else replace(at(alpha, 0.0), branch="agnostic")
    end = be.locate_branch_end(ModelParams(), "semantic", "down", start, 6.0, run(3.0, None), run, SolverConfig(),
                               bisection_tol=1e-3)
    assert end.method == "bisection" and abs(end.alpha - branch_from) < 1e-3
    assert "no eigenvalue end" in end.note and "stopped at alpha" in end.note
    # a trace none of whose steps converged (phase-diagram --lam 0 --omega 0.2: the semantic end was its start,
    # 1.0227, a grid midpoint the sweep's halved step had reached, as a fold) located nothing either
    failed = replace(on, status=replace(on.status, converged=False))
    monkeypatch.setattr(be, "solve_at_order", lambda *a, **k: failed)
    none = be.trace_branch_end(ModelParams(), start, "semantic", n_steps=6, min_ratio=0.1)
    assert math.isnan(none.alpha) and none.kind == be.STOPPED and "made no step from alpha = 6" in none.note
    end = be.locate_branch_end(ModelParams(), "semantic", "down", start, 6.0, run(3.0, None), run, SolverConfig(),
                               bisection_tol=1e-3)
    assert end.method == "bisection" and abs(end.alpha - branch_from) < 1e-3 and "made no step" in end.note


def test_an_end_bisected_on_failed_solves_is_dropped_where_the_branch_goes_on(monkeypatch):
    """``sweep --rank 2 --omega 0.2 --alpha 1:2:3 --branch positional``: the solves at 1.5 fail (the rank-2 warm and
    cold solves stall there), the end bisected on them (a solver failure at 1.35) was reported, yet the branch is on
    at 2: that end was where the solves failed, so the sweep drops it and the row at 1.5 is a solver failure."""
    from attnphase.numerics.phase import continuation as cont
    from attnphase.numerics.se.results import SolverStatus

    params = ModelParams(omega=0.2, r=2)
    real = solve(params, 2.0, "positional", config=SolverConfig(quadrature="sobol6:2"))  # its overlaps, relabelled
    assert real.branch == "positional"

    def fake_solve(params, alpha, branch, **kw):
        ok = alpha != 1.5
        return replace(real, alpha=alpha, status=SolverStatus(ok, 5, 1e-12 if ok else 1e-4,
                                                              "converged" if ok else "not converged"))
    monkeypatch.setattr(cont, "solve", fake_solve)
    monkeypatch.setattr(cont, "locate_branch_end", lambda *a, **k: BranchEnd(1.35, "solver failure", "bisection"))
    sw = cont.sweep(params, [1.0, 1.5, 2.0], "positional")
    assert math.isnan(sw.end.alpha) and sw.end_side == ""
    assert [p.status.converged for p in sw.points] == [True, False, True]
    # an end bisected on a fold (converged solves off the branch) stays
    monkeypatch.setattr(cont, "locate_branch_end", lambda *a, **k: BranchEnd(1.35, "fold", "bisection"))
    assert cont.sweep(params, [1.0, 1.5, 2.0], "positional").end.alpha == 1.35


def test_a_grid_point_between_a_failed_step_and_the_end_located_beyond_it_keeps_its_row(monkeypatch):
    """``phase-diagram --lam 0.001 --omega 0.3``: the semantic sweep's warm step down to 0.8909 failed and the end
    was then located below it by the eigenvalue (0.769); the diagram's sweep (past_end=False) dropped the row at
    0.8909 as past the end, where ``attnphase solve`` converges on the branch.  A grid point on the side of the end
    where the branch exists is solved once more with the full budget and keeps its row; the first one past the end
    stops the sweep."""
    from attnphase.numerics.phase import continuation as cont
    from attnphase.numerics.phase.branch_end import on_branch
    from attnphase.numerics.se.results import SolverStatus

    params = ModelParams(omega=0.3)
    real = solve(params, 2.0, "semantic", config=SolverConfig(quadrature="sobol6:2"))
    assert on_branch(real, "semantic")

    def at(alpha, ok):
        return replace(real, alpha=alpha, status=SolverStatus(ok, 5, 1e-12 if ok else 1e-4,
                                                              "converged" if ok else "not converged"))
    solved = []
    monkeypatch.setattr(cont, "solve_from", lambda params, alpha, branch, init, cfg, rule: at(alpha, alpha > 1.0))
    monkeypatch.setattr(cont, "solve", lambda params, alpha, branch, **kw: (solved.append(alpha), at(alpha, True))[1])
    monkeypatch.setattr(cont, "locate_branch_end", lambda *a, **k: BranchEnd(0.77, "bifurcation", "eigenvalue"))
    sw = cont.sweep(params, [0.6, 0.8, 0.9, 1.2, 1.5], "semantic", past_end=False)
    assert [p.alpha for p in sw.points] == [0.8, 0.9, 1.2, 1.5]
    assert all(on_branch(p, "semantic") for p in sw.points)
    assert (sw.end.alpha, sw.end_side) == (0.77, "below") and 0.6 not in solved


def test_semantic_points_below_the_crossing_that_a_finer_rule_puts_above_it_are_the_solve_rules():
    """sigma = (0.4, 0.6), omega = 0.15: on the solve rule the semantic branch has points down to 0.59, below the
    eigenvalue's crossing 0.6375, and a trace from them gave the end 0.5504; at their theta (0.103 at alpha = 0.61)
    alpha solved for on the end rule lies above the crossing (0.6525), so they are the solve rule's and the crossing
    is the end.  A crossing above that alpha leaves the points to the branch (the trace decides)."""
    from attnphase.numerics.phase.branch_end import on_branch
    from attnphase.numerics.phase.end_rule import points_below_crossing

    params = ModelParams(omega=0.15, sigma=(0.4, 0.6))
    good = solve(params, 0.61, "semantic")
    assert on_branch(good, "semantic") and 0.09 < abs(good.overlaps.th0) < 0.12
    why, note = points_below_crossing(params, good, 0.6375, SolverConfig())
    assert why == "" and "sobol12:4" in note, note
    above = float(note.split("alpha = ")[1].split(",")[0])
    assert 0.6375 < above < 0.67, note
    why, note = points_below_crossing(params, good, above + 0.01, SolverConfig())
    assert note == "" and "on sobol12:4 too" in why, why


def test_a_traced_end_is_resolved_on_the_finer_end_rule():
    """``phase-diagram --precision fast --branch-end trace --omega 0.3``: the fixed-theta trace on the fast tier's
    solve rule (sobol8:4) reached alpha = 0.5577 at theta = 0.02, where sobol10:4 (its end rule) puts the branch at
    0.7157 and the eigenvalue crossing lies at 0.7009 +- 0.0067: the end is alpha at the trace's extreme theta on the
    end rule, the solve rule's kept beside it; without a finer end rule the trace's own."""
    from attnphase.numerics.phase.branch_end import locate_branch_end

    params = ModelParams(omega=0.3)
    cfg = SolverConfig.for_precision("fast", branch_end="trace")
    good = solve(params, 0.9, "semantic", config=cfg)
    failed = solve(params, 0.5, "semantic", config=cfg)
    end = locate_branch_end(params, "semantic", "down", good, 0.9, failed, None, cfg)
    assert end.method == "trace" and end.solve_rule_alpha < 0.6, end
    assert 0.69 < end.alpha < 0.74 and "sobol10:4, a finer rule" in end.note, end
    same = locate_branch_end(params, "semantic", "down", good, 0.9, failed, None, replace(cfg, end_quadrature=None))
    assert same.alpha == end.solve_rule_alpha and math.isnan(same.solve_rule_alpha)


def test_a_crossing_above_the_branchs_last_grid_point_is_the_end_where_those_points_are_the_solve_rules(monkeypatch):
    """bifurcation_end: a converged crossing the right way but above the semantic branch's last grid point is the
    end where :func:`points_below_crossing` says those points are the solve rule's (its note on the end); else it is
    rejected with that reason.  A crossing the wrong way is not checked."""
    from attnphase.numerics.phase import branch_end as be
    from attnphase.numerics.phase.bifurcation import Bifurcation

    slope = [0.83]
    monkeypatch.setattr(be, "bifurcation_from", lambda params, good, direction, cfg, alpha_guess=None, step=0.05:
                        Bifurcation(0.637, True, "converged", slope[0], (), 0, 0.0015, 0, 0.6375))
    checked = []

    def check(verdict):
        def points(params, good, crossing, cfg):
            checked.append(crossing)
            return verdict
        return points

    good = SimpleNamespace(alpha=0.61, is_matrix=False)
    params = ModelParams(omega=0.15, sigma=(0.4, 0.6))
    monkeypatch.setattr(be, "points_below_crossing", check(("", "the solve rule's")))
    end, why = be.bifurcation_end(params, "semantic", "down", good, 0.61, SolverConfig())
    assert (end.alpha, end.method, end.note, why, checked) == (0.637, "eigenvalue", "the solve rule's", "", [0.6375])
    monkeypatch.setattr(be, "points_below_crossing", check(("on the finer rule too", "")))
    end, why = be.bifurcation_end(params, "semantic", "down", good, 0.61, SolverConfig())
    assert end is None and why == "on the finer rule too"
    checked.clear()
    slope[0] = -0.83
    end, why = be.bifurcation_end(params, "semantic", "down", good, 0.61, SolverConfig())
    assert end is None and checked == [] and "not beyond" in why


def test_alpha_l_whose_brent_search_loses_the_branch_is_the_interval_of_its_converged_solves(monkeypatch):
    """The scalar form's root of eps_g - eps_lin: where a solve of Brent's search loses the semantic branch, alpha_l is
    the interval between the semantic points solved last on either side of eps_lin (centre +- half-width), with the
    loss in the note, not NaN; not refined on the finer rule."""
    from attnphase.numerics.phase import scalar_boundaries as sb

    seen = []

    def losing_brent(f, a, b, xtol):
        seen.append((a, b, f(a + 0.25 * (b - a)), f(a + 0.75 * (b - a))))  # two solves of the search, then a loss
        raise sb.BranchLost("semantic branch lost at alpha = 1.5 (a stand-in)")
    monkeypatch.setattr(sb, "brent_root", losing_brent)
    cfg = SolverConfig(quadrature="sobol8:4", error_bars=False, alpha_c_quadrature=None)
    b = phase_boundaries(ModelParams(omega=0.3), np.linspace(0.1, 3.0, 12), config=cfg)
    ((a, c, g1, g3),) = seen
    lo, hi = (a + 0.25 * (c - a) if g1 > 0 else a), (a + 0.75 * (c - a) if g3 <= 0 else c)
    if g1 <= 0:
        hi = a + 0.25 * (c - a)
    assert (b.alpha_l, b.alpha_l_err) == pytest.approx((0.5 * (lo + hi), 0.5 * (hi - lo)))
    note = next(n for n in b.notes if n.startswith("alpha_l"))
    assert note.startswith(f"alpha_l: the interval [{lo:.4g}, {hi:.4g}] between the semantic points solved last")
    assert "semantic branch lost at alpha = 1.5 (a stand-in)" in note


def test_a_trace_from_off_the_branch_or_through_the_rules_noise_says_so(monkeypatch):
    """trace_branch_end from a semantic point asked for the positional end returned the start's alpha as a
    'bifurcation'; a trace whose alpha moved away from the end on its way there (the fast rule at omega = 0.3:
    0.720, 0.745, ... 0.558, where the eigenvalue puts the end at 0.70) said nothing of it."""
    from attnphase.numerics.phase import branch_end as be

    on = solve(ModelParams(), 2.0, "semantic", config=SolverConfig(quadrature="sobol6:2"))
    off = be.trace_branch_end(ModelParams(), on, "positional")
    assert math.isnan(off.alpha) and off.kind == be.STOPPED and "no point of the positional branch" in off.note

    def at(alpha, theta):
        ov = on.overlaps
        return replace(on, alpha=alpha, overlaps=Overlaps(q0=ov.q0, V0=ov.V0, m=ov.m, th0=theta))

    def solve_at_order(path):
        return lambda params, order, target, init, config=None, memory=None: at(path(target), target)

    monkeypatch.setattr(be, "solve_at_order", solve_at_order(lambda th: 3.5 + 5 * th))  # monotone: no note
    clean = be.trace_branch_end(ModelParams(), at(6.0, 0.5), "semantic", n_steps=6, min_ratio=0.1, max_alpha_jump=9)
    assert clean.kind == "bifurcation" and clean.note == ""
    monkeypatch.setattr(be, "solve_at_order", solve_at_order(lambda th: 3.5 + 5 * th + (0.5 if 0.1 < th < 0.15 else 0)))
    noisy = be.trace_branch_end(ModelParams(), at(6.0, 0.5), "semantic", n_steps=6, min_ratio=0.1, max_alpha_jump=9)
    assert noisy.kind == "bifurcation" and noisy.alpha == clean.alpha and "not monotone" in noisy.note


@pytest.mark.parametrize(("option", "value"), [("n_steps", 0), ("n_steps", -1), ("min_ratio", 1.0),
                                               ("min_ratio", 0.0), ("max_alpha_jump", -1.0)])
def test_a_branch_trace_refuses_settings_that_trace_nothing(option: str, value: float) -> None:
    """trace_branch_end(min_ratio=1.0) returned an end at the start's alpha ('bifurcation'); n_steps=0 and
    max_alpha_jump=-1 a 'trace stopped' blaming solves that never ran; n_steps=-1 numpy's own error."""
    from attnphase.numerics.phase.branch_end import trace_branch_end

    with pytest.raises(ValueError, match=option):
        trace_branch_end(ModelParams(omega=0.3), None, "semantic", **{option: value})  # type: ignore[arg-type]
