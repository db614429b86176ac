"""Continuation of the phase boundaries in omega (numerics.phase.omega_continuation, docs/method.md section 13):
the continued boundaries equal the independent ones within the root finders' tolerances, a wrong
prediction falls back to the independent computation and says so, chains are stored tasks a rerun
reads back."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from attnphase.cli import main
from attnphase.numerics import SolverConfig, phase_boundaries
from attnphase.numerics.phase.boundary_results import Boundaries
from attnphase.numerics.jobs.tasks import omega_chains
from attnphase.numerics.phase import omega_continuation
from attnphase.numerics.phase.omega_continuation import (
    ContinuationFailed, boundaries_chain, continued_boundaries, next_boundaries, predict,
)
from attnphase.continuation_options import chains_from_args
from attnphase.theory.params import ModelParams

#: cheap rules on which both branch ends are bifurcations at omega = 0.3-0.32 (gh6 has no semantic end
#: there: its semantic branch reaches the grid's bottom)
CFG = SolverConfig(quadrature="sobol10", alpha_c_quadrature="sobol11", alpha_l_quadrature=None, bifurcation_quadrature="sobol10")
ALPHAS = list(np.linspace(0.6, 2.2, 5))
OMEGAS = (0.3, 0.31, 0.32)
#: alpha_c and alpha_l are roots to xtol = 1e-4 (each within it of the root), the ends the secant's 1e-3
ATOL = {"alpha_c": 2e-4, "alpha_c_coarse": 2e-4, "alpha_l": 2e-4, "semantic_end": 2e-3, "positional_end": 2e-3}


@pytest.fixture(scope="module")
def runs() -> dict:
    """The chain 0.3 -> 0.31 -> 0.32 (kept with solver memory: continued_boundaries itself, as the
    chain runs it) and phase_boundaries at each omega."""
    chain = boundaries_chain(ModelParams(), ALPHAS, OMEGAS[0], OMEGAS[1:], [], CFG)
    independent = {w: phase_boundaries(ModelParams(omega=w), ALPHAS, config=CFG) for w in OMEGAS[1:]}
    return {"chain": {b.omega: b for b in chain}, "independent": independent}


@pytest.mark.heavy
def test_continued_boundaries_equal_the_independent_ones(runs) -> None:
    for w in OMEGAS[1:]:
        cont, ind = runs["chain"][w], runs["independent"][w]
        assert cont.notes[0] == f"continued from omega = {w - 0.01:g}", cont.notes  # not a fallback
        for key, atol in ATOL.items():
            a, b = getattr(cont, key), getattr(ind, key)
            assert math.isfinite(a) == math.isfinite(b), (w, key, a, b)
            assert not math.isfinite(a) or abs(a - b) <= atol, (w, key, a, b)
        assert (cont.semantic_end_kind, cont.semantic_end_method) == (ind.semantic_end_kind, ind.semantic_end_method)
        # the grid points it solved (the lowest semantic one; positional: the grid's top and beyond) are
        # phase_boundaries' fixed points there
        for sc, si in ((cont.semantic, ind.semantic), (cont.positional, ind.positional)):
            theirs = {p.alpha: p for p in si.points}
            assert sc.points and all(p.alpha in theirs for p in sc.points)
            for p in sc.points:
                q = theirs[p.alpha]
                assert abs(abs(p.overlaps.th0) - abs(q.overlaps.th0)) < 1e-5 and abs(p.overlaps.q0 - q.overlaps.q0) < 1e-5


@pytest.mark.heavy
def test_a_wrong_prediction_falls_back_to_the_independent_computation(runs, monkeypatch) -> None:
    """alpha_c predicted 0.5 too high (its tolerance ~0.15): no bracket near it, so continued_boundaries raises
    ContinuationFailed naming alpha_c, and the omega is computed by phase_boundaries (the same numbers), the reason
    in its notes.  The exception is the one next_boundaries itself meets (seen through a wrapper: the failing
    continuation runs once)."""
    prev = [runs["chain"][0.3]]  # the anchor: phase_boundaries at 0.3
    params = ModelParams(omega=0.31)
    good = predict(prev, 0.31)
    bad = replace(good, values=good.values | {"alpha_c": good.values["alpha_c"] + 0.5})
    raised: list[BaseException] = []

    def seen(*args, **kw):
        try:
            return continued_boundaries(*args, **kw)
        except BaseException as exc:
            raised.append(exc)
            raise

    monkeypatch.setattr(omega_continuation, "continued_boundaries", seen)
    b, seeds = next_boundaries(params, ALPHAS, prev, config=CFG, prediction=bad)
    assert len(raised) == 1 and isinstance(raised[0], ContinuationFailed) and "alpha_c" in str(raised[0])
    assert seeds == ()
    assert b.notes[-1].startswith("omega continuation failed (") and b.notes[-1].endswith("computed independently")
    assert "alpha_c" in b.notes[-1]
    ind = runs["independent"][0.31]
    assert (b.alpha_c, b.alpha_l, b.semantic_end, b.positional_end) == (
        ind.alpha_c, ind.alpha_l, ind.semantic_end, ind.positional_end)


def _b(omega: float, alpha_c: float, positional_end: float = math.nan) -> Boundaries:
    return Boundaries(omega=omega, alpha_c=alpha_c, alpha_l=alpha_c + 0.2, semantic_end=0.6,
                      positional_end=positional_end)


def test_prediction_is_the_secant_in_omega() -> None:
    p = predict([_b(0.3, 1.25, 2.0), _b(0.31, 1.29, math.nan)], 0.32)
    assert p.values["alpha_c"] == pytest.approx(1.33) and p.values["semantic_end"] == pytest.approx(0.6)
    assert math.isnan(p.values["positional_end"])  # no end at the neighbour: none predicted
    assert p.tolerances["alpha_c"] == pytest.approx(max(0.05, 3 * 0.04))
    one = predict([_b(0.31, 1.29)], 0.32)  # one neighbour: its value, a tolerance growing with the step
    assert one.values["alpha_c"] == 1.29 and one.tolerances["alpha_c"] == pytest.approx(0.15)
    with pytest.raises(ContinuationFailed, match="jumped"):
        p.check("alpha_c", 1.33 + 0.13)
    p.check("alpha_c", 1.33 + 0.11)


def test_chains_are_contiguous_blocks_anchored_at_the_curves_omega() -> None:
    omegas = [float(w) for w in np.linspace(0, 0.45, 46)]
    chains = omega_chains(omegas, 4, anchor_at=0.3)
    seen = sorted(w for a, up, down in chains for w in [a, *up, *down])
    assert seen == sorted(omegas) and [len([a, *u, *d]) for a, u, d in chains] == [12, 12, 11, 11]
    for anchor, up, down in chains:
        assert up == sorted(up) and down == sorted(down, reverse=True)
        assert all(w > anchor for w in up) and all(w < anchor for w in down)
    assert [a for a, _, _ in chains] == [0.0, omegas[12], omegas[30], omegas[35]]  # 0.3 = omegas[30]
    assert omega_chains([0.1, 0.2], 5) == [(0.1, [], []), (0.2, [], [])]


@pytest.mark.parametrize("mode, omegas, chains", [
    ("auto", np.linspace(0, 0.45, 46), 6),  # <= 8 omegas a chain
    ("auto", np.linspace(0.2, 0.35, 16), 2), ("auto", np.linspace(0.2, 0.39, 20), 3),
    ("auto", np.linspace(0.27, 0.32, 6), 2),  # two chains from 6 omegas on
    ("auto", np.linspace(0, 0.45, 10), 0),  # 0.05 apart: not dense
    ("auto", np.linspace(0.3, 0.32, 3), 1), ("auto", np.linspace(0.3, 0.31, 2), 0),  # fewer than 3 omegas
    ("on", np.linspace(0.1, 0.4, 7), 2), ("on", [0.3], 0), ("off", np.linspace(0, 0.45, 46), 0),
])
def test_how_many_chains_depends_on_the_omegas_alone(mode, omegas, chains) -> None:
    """The split does not follow --workers: phase-diagram --omega 0.27:0.32:6 made 1 chain on one worker and 2 on two,
    and its alpha_l moved by 2.9e-4 (the stored tasks of one did not serve the other)."""
    from types import SimpleNamespace

    assert chains_from_args(SimpleNamespace(continuation=mode), [float(x) for x in omegas]) == chains


@pytest.mark.heavy
def test_phase_diagram_continuation_is_a_stored_chain_a_rerun_reads_back(tmp_path, capsys, runs) -> None:
    # the rules of CFG (the library chain it is compared with): alpha_l not refined
    argv = ["phase-diagram", "--omega", "0.3,0.31", "--alpha", "0.6:2.2:5", "--quadrature", "sobol10",
            "--alpha-c-quadrature", "sobol11", "--alpha-l-quadrature", "none", "--bifurcation-quadrature", "sobol10",
            "--continuation", "on", "--workers", "1", "--out", str(tmp_path), "--quiet", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["continuation_chains"] == 1 and first["tasks"]["total"] == 1 and first["tasks"]["computed"] == 1
    assert (tmp_path / "curves_omega0.3.png").exists()  # the chain is anchored at omega = 0.3, whole branch
    from attnphase.execution.dataset import open_dataset

    assert open_dataset(tmp_path / "phase_diagram.nc").attrs["continuation_chains"] == 1  # the file says it too
    for row in first["rows"]:
        assert abs(row["alpha_c"] - runs["chain"][row["omega"]].alpha_c) < 1e-12
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["tasks"]["stored"] == 1 and again["tasks"]["computed"] == 0 and again["rows"] == first["rows"]


def test_bad_continuation_value_exits_2(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["phase-diagram", "--continuation", "maybe"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnphase: error: --continuation")


@pytest.mark.heavy
def test_continued_rows_carry_error_bars_from_the_blocks() -> None:
    """On rules of several scramblings a continued omega's boundaries carry their standard errors, as
    phase_boundaries' do (alpha_c from the fine rule's blocks, the semantic end from the bifurcation's)."""
    cfg = SolverConfig(quadrature="sobol9:4", alpha_c_quadrature="sobol11:4", alpha_l_quadrature=None,
                       bifurcation_quadrature="sobol10:4")
    rows = boundaries_chain(ModelParams(), ALPHAS, 0.3, [0.31], [], cfg)
    cont = next(b for b in rows if abs(b.omega - 0.31) < 1e-12)
    assert cont.notes[0] == "continued from omega = 0.3", cont.notes  # the continued path, not a fallback
    for key in ("alpha_c", "alpha_l", "semantic_end"):
        assert 0 < cont.errors()[f"err_{key}"] < 0.05, (key, cont.notes)


def test_a_grid_point_beside_the_end_not_converged_is_a_gap_not_a_fall_back() -> None:
    # --omega 0:0.45:46: at omega = 0.38 the semantic point at alpha = 0.8909 (0.053 above the end 0.8377) converged
    # neither continued nor in phase_boundaries' own sweep there, yet the continuation fell back to phase_boundaries
    # ("semantic branch lost at alpha = 0.8909"); phase_boundaries leaves such a point out of its curve
    from types import SimpleNamespace

    from attnphase.numerics.phase import omega_continuation

    class Branches:
        grid: dict = {"semantic": []}
        reached: list = []

        def continue_point(self, branch, alpha, start):
            return None if alpha == 0.8909 else SimpleNamespace(alpha=alpha)

        def reach(self, branch, start, alpha):
            self.reached.append((start.alpha, alpha))
            return None

    br = Branches()
    theirs = [SimpleNamespace(alpha=a) for a in (0.8909, 1.1545, 1.4182, 1.6818)]
    got = omega_continuation._end_point(br, "semantic", theirs, {0.8909, 1.1545, 1.4182, 1.6818})
    assert got.alpha == 1.1545 and br.reached == [(1.1545, 0.8909)]  # tried from the next point in, then left out
    with pytest.raises(ContinuationFailed, match="no semantic point continued"):
        omega_continuation._end_point(br, "semantic", theirs[:1], {0.8909})


def test_semantic_points_below_the_crossing_are_dropped_only_where_the_end_rule_finds_them_the_solve_rules(
        monkeypatch) -> None:
    """A continued omega's semantic end: grid points below the eigenvalue's crossing (on the solve rule) are checked
    as an omega computed on its own checks them (``points_below_crossing`` at the lowest of them): the solve rule's
    ones are dropped and the end carries the check's note; the branch's own ones make the continuation fail (that
    omega is then computed on its own, its end traced).  No point below: no check."""
    from types import SimpleNamespace

    from attnphase.numerics.phase.bifurcation import Bifurcation

    monkeypatch.setattr(omega_continuation, "bifurcation_from", lambda *a, **k: Bifurcation(
        0.637, True, "converged", 0.83, (), 0, 0.0015, 0, 0.6375))
    checked = []

    def check(verdict):
        def points(params, good, crossing, cfg):
            checked.append((good.alpha, crossing))
            return verdict
        return points

    def grid():
        return [SimpleNamespace(alpha=a) for a in (0.61, 0.6273, 0.7, 0.8)]

    params = ModelParams(omega=0.15, sigma=(0.4, 0.6))
    monkeypatch.setattr(omega_continuation, "points_below_crossing", check(("", "the solve rule's")))
    points = grid()
    end = omega_continuation._bifurcation_end(params, points[0], "theta", 0.63, CFG, 0.05, points)
    assert (end.alpha, end.note, checked) == (0.637, "the solve rule's", [(0.61, 0.6375)])
    assert [p.alpha for p in points] == [0.7, 0.8]
    monkeypatch.setattr(omega_continuation, "points_below_crossing", check(("on the finer rule too", "")))
    points = grid()
    with pytest.raises(ContinuationFailed, match="on the finer rule too"):
        omega_continuation._bifurcation_end(params, points[0], "theta", 0.63, CFG, 0.05, points)
    assert len(points) == 4  # nothing dropped
    checked.clear()
    points = grid()[2:]
    end = omega_continuation._bifurcation_end(params, points[0], "theta", 0.63, CFG, 0.05, points)
    assert (end.alpha, end.note, checked, len(points)) == (0.637, "", [], 2)
