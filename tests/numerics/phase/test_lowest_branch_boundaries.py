"""The boundary search over every branch of the model (numerics/phase/lowest_branch.py) and ``phase-diagram --rank``.

The boundary logic is checked on a model of the solver whose branches are known in closed form
(a real rank-2 phase diagram takes minutes; its measured table is in docs/general.md): where each
branch exists, its e_t and eps_g.  Everything the module computes from solves -- sweeps, ends,
alpha_c, alpha_l -- goes through ``solve``, which the tests replace.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

import pytest

from attnphase.cli import main
from attnphase.numerics.phase import census_continuation as cc
from attnphase.numerics.phase import census_separation as cs
from attnphase.numerics.phase import global_minimum_changes as gmc
from attnphase.numerics.phase import lowest_branch as rb
from attnphase.numerics.phase.census import SearchResult
from attnphase.numerics.jobs.report import csv_columns
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.observables import Observables
from attnphase.numerics.se.starts import with_ranks
from attnphase.numerics.se.results import SolverStatus
from attnphase.theory.params import ModelParams

EPS_LIN = 1.5e-3


@dataclass(frozen=True)
class FakeOverlaps:
    """A toy point's overlaps: the branch it lies on (a warm start from it stays there while that branch exists)."""

    tag: str
    is_matrix: bool = True


@dataclass(frozen=True)
class FakePoint:
    alpha: float
    branch: str
    converged: bool
    e_t: float
    eps_g: float
    overlaps: object = None
    inv: tuple = (0.0, 0.0)
    memory: object = None

    @property
    def status(self) -> SolverStatus:
        return SolverStatus(self.converged, 1, 0.0 if self.converged else math.nan, "toy solve")

    @property
    def observables(self) -> Observables:
        return Observables(self.eps_g, self.e_t, EPS_LIN)

    @property
    def record(self) -> dict:
        return {"eps_g": self.eps_g, "e_t": self.e_t} | self.invariants

    @property
    def invariants(self) -> dict:
        """th0 singular value and |m| (one token) of the toy branch; q0 and V0 fixed."""
        return {"q0_eigenvalues": [0.3, 0.1], "V0_eigenvalues": [1.0, 1.0], "th0_singular_values": [self.inv[0]],
                "m_norms": [self.inv[1]]}


@dataclass(frozen=True)
class ToyBranch:
    label: str
    exists: object
    e_t: object
    eps_g: object
    inv: object
    falls_to: str = ""  # where a warm start from it goes where it does not exist ("": no convergence)


class ToyModel:
    """Branches in closed form: where each exists, its e_t, eps_g and gauge invariants; ``default`` is the branch an
    embedded/cold start of each label reaches.  ``solve`` and ``search`` stand in for the state evolution's."""

    def __init__(self, branches: dict[str, ToyBranch], default: dict[str, str], fails=(0.0, 0.0),
                 block_noise: dict[str, tuple[float, ...]] | None = None):
        self.branches, self.default, self.fails = branches, default, fails
        self.block_noise = block_noise or {}

    def point(self, tag: str, alpha: float) -> FakePoint:
        br = self.branches[tag]
        return FakePoint(alpha, br.label, True, br.e_t(alpha), br.eps_g(alpha), FakeOverlaps(tag), br.inv(alpha))

    def reach(self, tag: str, alpha: float) -> FakePoint:
        seen = set()
        while tag and tag not in seen:
            seen.add(tag)
            br = self.branches[tag]
            if br.exists(alpha) and not (br.label == "positional" and self.fails[0] < alpha < self.fails[1]):
                return self.point(tag, alpha)
            tag = br.falls_to
        return FakePoint(alpha, "", False, math.nan, math.nan, FakeOverlaps(""))

    def solve(self, params, alpha, branch="semantic", *, config=None, init=None, memory=None, start=None, rule=None,
              rank_one=None):
        return self.reach(init.tag if init is not None else self.default[branch], alpha)

    def replicate_points(self, fp, config, n_rules):
        """The point on each of 4 blocks: its e_t (and th0, where the offset is a pair) shifted by the block's offset
        of its branch (none by default; a triple also shifts eps_g)."""
        noise = [(tuple(d) + (0.0, 0.0))[:3] if isinstance(d, tuple) else (d, 0.0, 0.0)
                 for d in self.block_noise.get(fp.overlaps.tag, (0.0,) * 4)]
        return [FakePoint(fp.alpha, fp.branch, True, fp.e_t + de, fp.eps_g + dg, fp.overlaps,
                          (fp.inv[0] + dth, fp.inv[1])) for de, dth, dg in noise], True

    def search(self, params, alpha, config, **kw):
        pts = [self.reach(t, alpha) for t in self.branches]
        pts = [p for p in pts if p.converged]
        uniq = {p.overlaps.tag: p for p in pts}
        return SearchResult(tuple((p, ("toy start",)) for p in uniq.values()), (), (), 0, "toy")


def _pos_e_t(a):
    return 1e-3 * a + 1e-4 * a * a


def toy_model(mixed_from: float | None, positional_fails: tuple[float, float] = (0.0, 0.0)) -> ToyModel:
    """Positional exists for alpha < 2.2, semantic for alpha > 0.6 (below: no convergence); their e_t cross
    near alpha = 1.2.  Mixed (r >= 2) exists above ``mixed_from`` with e_t below positional's, born from it (a warm
    start from it lands on the positional point below ``mixed_from``), else the mixed solve lands on the positional
    label.  eps_g(semantic) = 3e-3 - 1e-3 alpha crosses EPS_LIN at 1.5.  The positional solves do not converge inside
    the interval ``positional_fails``."""
    branches = {
        "positional": ToyBranch("positional", lambda a: a < 2.2, _pos_e_t, lambda a: 3e-3, lambda a: (0.0, 0.2)),
        "semantic": ToyBranch("semantic", lambda a: a > 0.6,
                              lambda a: 0.5e-3 * a + 0.6e-3 + 1e-4 * a * a + 5e-5 * (a - 1) ** 3,
                              lambda a: 3e-3 - 1e-3 * a, lambda a: (0.3, 0.0)),
    }
    if mixed_from is not None:
        branches["mixed"] = ToyBranch("mixed", lambda a: a > mixed_from, lambda a: _pos_e_t(a) - 2e-4 * (a - mixed_from),
                                      lambda a: 2.5e-3, lambda a: (0.5 * (a - mixed_from), 0.2), "positional")
    return ToyModel(branches, {"positional": "positional", "semantic": "semantic",
                               "mixed": "mixed" if mixed_from is not None else "positional"}, positional_fails)


@pytest.fixture
def params():
    return with_ranks(ModelParams(omega=0.3), 2, 1)


def _use(monkeypatch, model: ToyModel) -> ToyModel:
    monkeypatch.setattr(cc, "solve", model.solve)
    monkeypatch.setattr(cc, "search", model.search)
    monkeypatch.setattr(cc, "rank_one_overlaps", lambda *a, **k: {})  # the toy's embedded starts need no rank-1 points
    monkeypatch.setattr(cc, "census_rank_one", lambda *a, **k: {})
    monkeypatch.setattr(cs, "replicate_points", model.replicate_points)
    monkeypatch.setattr(rb, "teacher_eps_lin", lambda params, cfg: EPS_LIN)
    return model


def _patch(monkeypatch, mixed_from, **kw):
    model = _use(monkeypatch, toy_model(mixed_from, **kw))
    return model.solve, None


def test_alpha_c_brackets_the_sign_change_of_delta_e_t(monkeypatch, params) -> None:
    solve, _ = _patch(monkeypatch, None)
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0, 2.5], SolverConfig())
    assert (b.alpha_c_from, b.alpha_c_to) == ("positional", "semantic")
    assert 1.0 < b.alpha_c < 1.5 and 0 < b.alpha_c_err <= rb.ROOT_TOL
    lo, hi = b.alpha_c - b.alpha_c_err, b.alpha_c + b.alpha_c_err

    def delta(a):
        return solve(params, a, "positional").e_t - solve(params, a, "semantic").e_t
    assert delta(lo) < 0 < delta(hi)  # positional lowest below, semantic above
    assert b.alpha_c_method.startswith("root of Delta e_t") and "not distinguishable" not in b.alpha_c_method
    # alpha_l: the semantic eps_g (lowest above alpha_c) meets EPS_LIN at 1.5, which the root search
    # brackets although it is a grid point
    assert b.alpha_l_branch == "semantic" and abs(b.alpha_l - 1.5) <= b.alpha_l_err <= rb.ROOT_TOL


def _slope_at_root() -> float:
    """d Delta e_t / d alpha of the toy (positional - semantic) at its root, near 1.2."""
    return 0.5e-3 - 1.5e-4 * (1.2 - 1) ** 2


@pytest.mark.parametrize("d", [1e-5, 2e-4])
def test_alpha_c_carries_the_rules_block_error_and_says_when_the_rule_cannot_tell_the_branches_apart(
        monkeypatch, params, d) -> None:
    """The positional point's e_t differs on the rule's 4 blocks by +-d.  Where the rule tells the branches apart
    beside the crossing (|Delta| >= 2 paired errors, d sqrt(4/3) / 2, at both grid points), alpha_c's error is the
    blocks' linearised root error, std_j(Delta_j) / sqrt(4) / |slope| (within the bracket width).  Where it does not,
    alpha_c is the interval where the sign of Delta e_t is not established: its bar covers every alpha where
    |Delta| < 2 paired errors (and exceeds it by at most the edges' bisection tolerance)."""
    model = toy_model(None)
    model.block_noise = {"positional": (d, -d, d, -d)}
    _use(monkeypatch, model)
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0, 2.5], SolverConfig())
    flanks = [n for n in b.notes if "Delta e_t beside it" in n]
    assert len(flanks) == 1 and "at alpha = 1: positional below semantic by 0.0001" in flanks[0]
    paired = d * math.sqrt(4 / 3) / 2
    if 1e-4 / paired >= 2:  # |Delta| at 1.0 is 1e-4, at 1.5 1.44e-4
        se = paired / _slope_at_root()
        assert abs(b.alpha_c_err - se) <= rb.ROOT_TOL + 0.05 * se
        assert "not distinguishable" not in b.alpha_c_method + flanks[0]
        assert b.alpha_c_method.startswith("root of Delta e_t")
    else:
        assert flanks[0].count("not distinguishable at the rule") == 2
        assert b.alpha_c_method.startswith("interval where Delta e_t is indistinguishable from 0")
        grid = [0.5 + k * 1e-3 for k in range(1501)]
        delta = [model.point("positional", a).e_t - model.point("semantic", a).e_t for a in grid]
        hug = [a for a, v in zip(grid, delta) if abs(v) < 2 * paired]
        lo, hi = b.alpha_c - b.alpha_c_err, b.alpha_c + b.alpha_c_err
        assert lo <= min(hug) and max(hug) <= hi
        assert min(hug) - lo <= cc.END_TOL + 1e-3 and hi - max(hug) <= cc.END_TOL + 1e-3


def test_alpha_l_carries_the_rules_block_error(monkeypatch, params) -> None:
    """The semantic eps_g (slope -1e-3, crossing EPS_LIN at 1.5) differs on the 4 blocks by +-e: alpha_l's error is
    e sqrt(4/3) / 2 / 1e-3 within the bracket width."""
    e = 1e-5
    model = toy_model(None)
    model.block_noise = {"semantic": ((0, 0, e), (0, 0, -e), (0, 0, e), (0, 0, -e))}
    _use(monkeypatch, model)
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0, 2.5], SolverConfig())
    se = e * math.sqrt(4 / 3) / 2 / 1e-3
    assert b.alpha_l_branch == "semantic" and abs(b.alpha_l - 1.5) <= rb.ROOT_TOL
    assert abs(b.alpha_l_err - se) <= rb.ROOT_TOL + 0.05 * se and se > rb.ROOT_TOL


def test_branch_ends_by_bisection_with_their_bracket(monkeypatch, params) -> None:
    _patch(monkeypatch, None)
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0, 2.5], SolverConfig())
    sem, pos = b.end("semantic"), b.end("positional")
    assert abs(sem.alpha - 0.6) <= sem.err / 2 + 1e-12 and sem.err <= cc.END_TOL and sem.exists == "above"
    assert sem.kind.startswith("no converged solve")
    assert abs(pos.alpha - 2.2) <= pos.err / 2 + 1e-12 and pos.exists == "below"
    row = b.row()
    assert row["semantic_end"] == sem.alpha and row["err_positional_end"] == pos.err


def test_the_search_says_what_it_does_as_it_goes(monkeypatch, params, caplog) -> None:
    """INFO records of census_continuation.LOG (what a command's task bar shows): each census with its alpha, then each
    phase once as it starts, each with omega and the solves run so far (never fewer than the record before)."""
    import logging

    _patch(monkeypatch, 1.0)
    with caplog.at_level(logging.INFO, logger=cc.LOG.name):
        rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0, 2.5], SolverConfig())
    said = [r.getMessage() for r in caplog.records if r.name == cc.LOG.name]
    assert said[0] == "omega 0.3: census at alpha = 0.5, 1 of at most 4 (0 solves so far)"
    assert said[1].startswith("omega 0.3: census at alpha = 2.5, 2 of at most 4 (")
    stages = [m.split(": ", 1)[1].split(" (")[0] for m in said]
    for stage in ("locating births and ends", "locating the global minimum's changes", "locating alpha_l"):
        assert stage in stages
    assert all(a != b for a, b in zip(stages, stages[1:]))  # a phase is said when it changes
    counts = [int(m.rsplit("(", 1)[1].split()[0]) for m in said]
    assert counts == sorted(counts) and counts[-1] > 0


def test_an_absent_branch_is_a_note_not_a_silent_nan(monkeypatch, params) -> None:
    _patch(monkeypatch, None)  # the mixed solves all land on the positional label
    row = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5], SolverConfig()).row()
    assert math.isnan(row["mixed_end"])
    assert "mixed branch: no mixed fixed point found by the censuses at alpha = 0.5, 1, 1.5 nor along" in row["notes"]


def test_a_branch_born_below_the_lowest_gives_alpha_c_at_its_end(monkeypatch, params) -> None:
    _patch(monkeypatch, 0.8)  # mixed appears at 0.8 with e_t below positional's (a continuous transition)
    b = rb.lowest_branch_boundaries(params, [0.7, 1.0, 1.5], SolverConfig())
    assert (b.alpha_c_from, b.alpha_c_to) == ("positional", "mixed")
    assert abs(b.alpha_c - 0.8) <= b.alpha_c_err / 2 + 1e-12 and b.alpha_c_method.startswith("birth of mixed (meets positional")


def test_a_grid_point_where_a_solve_fails_is_passed_over(monkeypatch, params) -> None:
    _patch(monkeypatch, None, positional_fails=(0.9, 1.1))  # the positional solve fails at alpha = 1
    b = rb.lowest_branch_boundaries(params, [0.75, 1.0, 1.5], SolverConfig())
    notes = "; ".join(b.notes)
    assert "global minimum unknown (solver failure, not absence) at alpha = 1 (positional not converged, on at both " \
        "sides)" in notes
    # the lowest branch (positional at 0.75, semantic at 1.5) is compared across the gap, not at the failed
    # point; the root search's solves inside the gap fail too, and the row says so
    assert math.isnan(b.alpha_c) and "global minimum: positional -> semantic in [0.75, 1.5], not located: the " \
        "positional branch was lost at alpha = 0.9" in notes
    assert "alpha_c: the first change away from a positional or agnostic point, positional -> semantic in " \
        "[0.75, 1.5], was not located" in notes
    assert b.end("positional").kind.startswith("no converged solve")


def test_phase_diagram_cli_takes_rank_two(monkeypatch, tmp_path, capsys) -> None:
    _patch(monkeypatch, None)
    code = main(["phase-diagram", "--rank", "2", "--teacher-rank", "1", "--omega", "0.3", "--alpha", "0.5,1,1.5,2",
                 "--quadrature", "sobol8:4", "--workers", "1", "--quiet", "--json", "--out", str(tmp_path / "pd")])
    assert code == 0
    meta = json.loads(capsys.readouterr().out)
    (row,) = meta["rows"]
    assert meta["rank"] == 2 and meta["teacher_rank"] == 1 and 1.0 < row["alpha_c"] < 1.5
    assert {p.name for p in (tmp_path / "pd").iterdir()} >= {"phase_diagram.csv", "phase_diagram.json",
                                                             "phase_diagram.nc", "phase_diagram.png"}
    header = (tmp_path / "pd" / "phase_diagram.csv").read_text().splitlines()[0].split(",")
    assert header == list(csv_columns(2, errors=True))


def test_scan_cli_takes_rank_two(monkeypatch, tmp_path, capsys) -> None:
    from attnphase.numerics.jobs import plots

    _patch(monkeypatch, None)
    titles, plot = [], plots.plot_phase_diagram
    monkeypatch.setattr(plots, "plot_phase_diagram", lambda *a, **k: titles.append(plot(*a, **k).axes[0].get_title()))
    code = main(["scan", "--lam", "0.01,0.02", "--rank", "2", "--omega", "0.3", "--alpha", "0.5,1,1.5,2",
                 "--quadrature", "sobol8:4", "--workers", "1", "--quiet", "--json", "--out", str(tmp_path / "s")])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scanned"] == "lam" and summary["rank"] == 2 and [r["lam"] for r in summary["rows"]] == [0.01, 0.02]
    assert all(1.0 < r["alpha_c"] < 1.5 for r in summary["rows"])  # the toy solver does not depend on lambda
    files = {p.name for p in (tmp_path / "s").iterdir()}
    assert {"scan.csv", "scan.json", "scan.nc", "phase_diagram_lam0.01.png", "phase_diagram_lam0.02.png"} <= files
    # each figure says its value, with the model's sigma
    assert [t.split("rank r = 2, r* = 1, ", 1)[1] for t in titles] == ["sigma = 0.5, lambda = 0.01",
                                                                        "sigma = 0.5, lambda = 0.02"]


def test_phase_boundaries_is_one_entry_for_every_rank(monkeypatch, params) -> None:
    """At r >= 2 phase_boundaries runs the search over every branch (the mixed one included); at r = r* = 1 the
    scalar form's fast path -- one result type with one set of columns either way."""
    from attnphase.numerics.phase import boundaries
    from attnphase.numerics.phase.boundary_results import Boundaries, boundary_columns

    _patch(monkeypatch, 0.8)
    grid = [0.7, 1.0, 1.5]
    b = boundaries.phase_boundaries(params, grid, config=SolverConfig())
    direct = rb.lowest_branch_boundaries(params, grid, SolverConfig())
    assert isinstance(b, Boundaries) and (b.r, b.r_star) == (2, 1) and b.branches[-1] == "mixed"
    assert (b.alpha_c, b.alpha_c_from, b.alpha_c_to) == (direct.alpha_c, direct.alpha_c_from, direct.alpha_c_to)
    assert set(boundary_columns(2)) - set(boundary_columns(1)) == {"mixed_end", "mixed_end_kind", "mixed_end_method",
                                                               "mixed_end_exists"}
    assert set(b.row()) >= set(boundary_columns(2))
    scalar_calls = []

    def fake_scalar(p, alphas, **kw):
        scalar_calls.append(p)
        return Boundaries(omega=p.omega, alpha_c=1.0, alpha_l=1.5, semantic_end=0.6, positional_end=2.2)

    monkeypatch.setattr(boundaries, "scalar_boundaries", fake_scalar)
    one = boundaries.phase_boundaries(ModelParams(omega=0.3), grid, config=SolverConfig())
    assert scalar_calls and one.alpha_c == 1.0 and set(one.row()) >= set(boundary_columns(1))
    with pytest.raises(ValueError, match="alpha grid"):
        boundaries.phase_boundaries(params, None)


def two_mixed_model() -> ToyModel:
    """Two mixed branches beside the positional one (what the census finds at r = 2, omega = 0.1): mixed#1 is born
    from the positional point at alpha = 0.5 below it (the global minimum above 0.5); mixed#2, the one an embedded
    start reaches, is born from it at 0.3 above it and crosses it at alpha = 0.9 -- the crossing a search that
    follows one mixed branch reports.  Semantic lies above all of them."""
    return ToyModel({
        "positional": ToyBranch("positional", lambda a: True, _pos_e_t, lambda a: 3e-3, lambda a: (0.0, 0.2)),
        "semantic": ToyBranch("semantic", lambda a: a > 0.6, lambda a: _pos_e_t(a) + 3e-4, lambda a: 2e-3,
                              lambda a: (0.3, 0.0)),
        "mixed1": ToyBranch("mixed", lambda a: a > 0.5, lambda a: _pos_e_t(a) - 2e-4 * (a - 0.5) ** 2,
                            lambda a: 3e-3 - 1e-3 * a, lambda a: (0.5 * (a - 0.5), 0.2 + 0.05 * (a - 0.5)), "positional"),
        "mixed2": ToyBranch("mixed", lambda a: a > 0.3, lambda a: _pos_e_t(a) + 1e-4 * (a - 0.3) * (0.9 - a),
                            lambda a: 2.8e-3, lambda a: (0.4 * (a - 0.3), 0.2 - 0.1 * (a - 0.3)), "positional"),
    }, {"positional": "positional", "semantic": "semantic", "mixed": "mixed2"})


def test_alpha_c_is_where_the_global_minimum_changes_not_where_the_followed_mixed_branch_crosses(monkeypatch,
                                                                                                 params) -> None:
    model = _use(monkeypatch, two_mixed_model())
    grid = [0.25, 0.75, 1.25, 1.75, 2.25]
    # what a search following only the embedded start's mixed branch (mixed2) sees: that branch lies above the
    # positional point at 0.75 and below it at 1.25, its crossing at 0.9
    assert model.reach(model.default["mixed"], 0.75).overlaps.tag == "mixed2"
    assert model.point("mixed2", 0.75).e_t > model.point("positional", 0.75).e_t
    assert model.point("mixed2", 1.25).e_t < model.point("positional", 1.25).e_t
    b = rb.lowest_branch_boundaries(params, grid, SolverConfig())
    # the global minimum leaves the positional point where mixed#1 is born from it, at 0.5
    assert (b.alpha_c_from, b.alpha_c_to) == ("positional", "mixed#1")
    assert abs(b.alpha_c - 0.5) <= b.alpha_c_err / 2 + 1e-12 and b.alpha_c_err <= cc.END_TOL
    assert b.alpha_c_method.startswith("birth of mixed#1 (meets positional")
    assert not 0.75 < b.alpha_c < 1.25
    notes = "; ".join(b.notes)
    # both mixed branches are found, told apart by their invariants, and their births located
    assert "mixed#1: |th0| " in notes and "mixed#2: |th0| " in notes
    births = {e.branch: e for e in b.ends if e.exists == "above"}
    assert abs(births["mixed#1"].alpha - 0.5) <= births["mixed#1"].err / 2 + 1e-12
    assert abs(births["mixed#2"].alpha - 0.3) <= births["mixed#2"].err / 2 + 1e-12
    assert births["mixed#2"].kind == "meets positional"
    # the mixed#2 crossing of the positional point is no change of the global minimum
    assert "positional -> mixed#2" not in notes


def test_no_change_and_solver_failure_are_told_apart(monkeypatch, params) -> None:
    only = ToyModel({"positional": ToyBranch("positional", lambda a: True, _pos_e_t, lambda a: 3e-3,
                                             lambda a: (0.0, 0.2))},
                    {"positional": "positional", "semantic": "positional", "mixed": "positional"})
    _use(monkeypatch, only)
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5], SolverConfig())
    notes = "; ".join(b.notes)
    assert math.isnan(b.alpha_c) and "the global minimum is positional at every grid point of [0.5, 1.5]" in notes
    assert "solver failure" not in notes
    none = ToyModel({"positional": ToyBranch("positional", lambda a: False, _pos_e_t, lambda a: 3e-3,
                                             lambda a: (0.0, 0.2))},
                    {"positional": "positional", "semantic": "positional", "mixed": "positional"})
    _use(monkeypatch, none)
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5], SolverConfig())
    notes = "; ".join(b.notes)
    assert math.isnan(b.alpha_c) and "census at alpha = 0.5: none of its 0 starts converged (solver failure" in notes
    assert "global minimum unknown (solver failure, not absence) at alpha = 0.5 (no census start converged)" in notes


def test_a_branch_inside_the_grid_is_found_by_a_census_where_the_set_of_branches_changes(monkeypatch, params) -> None:
    """A mixed branch on (0.9, 1.6) only, below the positional point, is at neither end of the grid: the censuses
    there miss it, the one where the semantic branch appears between neighbouring grid points finds it."""
    model = ToyModel({
        "positional": ToyBranch("positional", lambda a: True, _pos_e_t, lambda a: 3e-3, lambda a: (0.0, 0.2)),
        "semantic": ToyBranch("semantic", lambda a: a > 0.6, lambda a: _pos_e_t(a) + 3e-4, lambda a: 2e-3,
                              lambda a: (0.3, 0.0)),
        "mixed": ToyBranch("mixed", lambda a: 0.9 < a < 1.6, lambda a: _pos_e_t(a) - 1e-4, lambda a: 2.5e-3,
                           lambda a: (0.2, 0.1)),
    }, {"positional": "positional", "semantic": "semantic", "mixed": "positional"})
    _use(monkeypatch, model)
    censused = []
    search = model.search
    monkeypatch.setattr(cc, "search", lambda p, a, c, **kw: censused.append(a) or search(p, a, c, **kw))
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0], SolverConfig())
    assert censused[:2] == [0.5, 2.0] and 1.0 in censused
    assert (b.alpha_c_from, b.alpha_c_to) == ("positional", "mixed")
    assert abs(b.alpha_c - 0.9) <= b.alpha_c_err / 2 + 1e-12
    assert b.alpha_c_method.startswith("birth of mixed (no converged solve")
    # a birth located by failed solves bounds the change: said (phase-diagram --rank 2 --precision fast gave
    # alpha_c at such a birth while solve --branch mixed converged below it)
    assert "mixed was not reached below it (solver failure, not absence): the change may lie lower" in b.alpha_c_method
    notes = "; ".join(b.notes)
    assert "global minimum: mixed -> positional at alpha = 1.6" in notes


@pytest.mark.parametrize("scatter", [True, False])
def test_a_point_found_at_one_grid_point_within_the_rules_error_bars_of_another_is_dropped(monkeypatch, params,
                                                                                           scatter) -> None:
    """A mixed point at alpha = 2.5 only, |th0| 0.02 and e_t 1e-7 below the positional point's: where its th0 and
    the paired difference of e_t scatter over the rule's blocks by more than that (the rule's split of the positional
    point) it is dropped and the global minimum stays positional; where the blocks agree it is a fixed point of its
    own, and the lowest there."""
    d = 1e-6
    model = ToyModel({
        "positional": ToyBranch("positional", lambda a: True, _pos_e_t, lambda a: 3e-3, lambda a: (0.0, 0.2)),
        "mixed": ToyBranch("mixed", lambda a: a > 2.4, lambda a: _pos_e_t(a) - 1e-7, lambda a: 3e-3,
                           lambda a: (0.02, 0.2), "positional"),
    }, {"positional": "positional", "semantic": "positional", "mixed": "positional"},
        block_noise={"positional": (d, -d, d, -d), "mixed": ((-d, 0.02), (d, -0.02), (-d, 0.02), (d, -0.02))}
        if scatter else {})
    _use(monkeypatch, model)
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0, 2.5], SolverConfig())
    notes = "; ".join(b.notes)
    if scatter:
        assert "mixed point at alpha = 2.5" in notes and "the rule's split, dropped" in notes
        assert "global minimum: positional -> mixed" not in notes and math.isnan(b.alpha_c)
    else:
        assert "the rule's split" not in notes
        assert (b.alpha_c_from, b.alpha_c_to) == ("positional", "mixed")


def _hugging_model(noise: float) -> ToyModel:
    """Two branches on at every alpha, positional and mixed (distinct points: th0 0 and 0.3), whose e_t differ by
    Delta = e_t(positional) - e_t(mixed) = -1e-8 below alpha = 1.2 (the mixed point a hair above: the rule cannot tell
    them apart) and -1e-8 + 5e-4 (alpha - 1.2) above, the positional e_t shifted by +-``noise`` on the rule's 4 blocks:
    the kink at 1.2 is a clean root of the pooled Delta, but its sign is not established below ~1.2 at all."""
    def gap(a):
        return -1e-8 + 5e-4 * max(a - 1.2, 0.0)
    branches = {
        "positional": ToyBranch("positional", lambda a: True, _pos_e_t, lambda a: 3e-3, lambda a: (0.0, 0.2)),
        "mixed": ToyBranch("mixed", lambda a: True, lambda a: _pos_e_t(a) - gap(a), lambda a: 2.5e-3,
                           lambda a: (0.3, 0.2)),
    }
    return ToyModel(branches, {"positional": "positional", "mixed": "mixed", "semantic": "positional"},
                    block_noise={"positional": (noise, -noise, noise, -noise)})


def test_a_delta_e_t_that_hugs_zero_gives_a_bar_covering_where_its_sign_is_not_established(monkeypatch,
                                                                                           params) -> None:
    """Delta e_t stays within its paired error of 0 on [0.5, 1.2]: the rule establishes no sign there, so alpha_c's
    bar covers that whole interval (open at the grid's first point, where it is not settled either), labelled so.  The
    root of the pooled Delta at its kink, 1.2, with the error linearised on the bracket's secant (+- ~5e-3) -- the rule
    before -- would not cover it."""
    noise = 1e-6
    model = _use(monkeypatch, _hugging_model(noise))
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0, 2.5], SolverConfig())
    assert (b.alpha_c_from, b.alpha_c_to) == ("positional", "mixed")
    paired = noise * math.sqrt(4 / 3) / 2
    top = 1.2 + (2 * paired - 1e-8) / 5e-4  # |Delta| < 2 paired errors below this
    lo, hi = b.alpha_c - b.alpha_c_err, b.alpha_c + b.alpha_c_err
    assert lo <= 0.5 and top <= hi <= top + cc.END_TOL
    assert b.alpha_c_err > 0.3  # the secant rule's +- 5e-3 at 1.2 does not cover [0.5, 1.2]
    assert b.alpha_c_method.startswith("interval where Delta e_t is indistinguishable from 0")
    assert "not settled at its lower end" in b.alpha_c_method
    del model


def test_a_clean_crossing_keeps_the_roots_tight_bar(monkeypatch, params) -> None:
    """The same kink with block noise 1e-9: Delta = -1e-8 is established (about 17 paired errors) below 1.2, so the
    change is a clean crossing -- the root of Delta e_t, within ROOT_TOL of the kink, with its tight bar."""
    _use(monkeypatch, _hugging_model(1e-10))
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0, 2.5], SolverConfig())
    assert b.alpha_c_method.startswith("root of Delta e_t")
    assert abs(b.alpha_c - 1.2) <= b.alpha_c_err <= rb.ROOT_TOL * 1.5


def test_the_unsettled_interval_from_samples() -> None:
    """The interval runs from the last sample on A's side below the first that is not to the first on B's side above
    the last that is not; a clean crossing (every sample settled) gives none; a point one at the rule or a branch absent
    is on A's side (the lowest point does not change there), A absent on B's."""
    S = cs.SignSample
    clean = [S(0.1, -1e-5, 1e-6), S(0.5, 1e-5, 1e-6)]
    assert cs.unsettled_interval(clean) is None
    iv = cs.unsettled_interval([S(0.1, -1e-5, 1e-6), S(0.2, 1e-7, 1e-6), S(0.3, -1e-7, 1e-6), S(0.5, 1e-5, 1e-6),
                                S(0.7, 1e-5, 1e-6)])
    assert (iv.lo, iv.hi, iv.open_below, iv.open_above) == (0.1, 0.5, False, False)
    assert iv.centre == pytest.approx(0.3) and iv.half_width == pytest.approx(0.2)
    # B established below an unsettled sample: the whole stretch is covered
    iv = cs.unsettled_interval([S(0.1, -1e-5, 1e-6), S(0.2, 1e-5, 1e-6), S(0.3, 0.0, 1e-6), S(0.5, 1e-5, 1e-6)])
    assert (iv.lo, iv.hi) == (0.1, 0.5)
    iv = cs.unsettled_interval([S(0.1, 1e-7, 1e-6, absent="B"), S(0.2, 1e-7, 1e-6), S(0.3, math.nan, math.nan)])
    assert (iv.lo, iv.hi, iv.open_above) == (0.1, 0.3, True)
    assert S(0.2, 1e-7, 1e-6, same=True).side == cs.A_SIDE and S(0.2, 0, 0, absent="A").side == cs.B_SIDE


def test_a_sample_without_a_paired_error_says_so_rather_than_printing_nan() -> None:
    """A sample whose paired error is not known (fewer than two block pairs converged) or whose Delta e_t is not known
    says so in words: the notes never read "+- nan"."""
    S = cs.SignSample
    assert S(0.3636, -3e-7, 3.6e-7).describe() == "0.3636: Delta -3e-07 +- 3.6e-07 (?)"
    assert (S(0.3636, 3.5e-6, math.nan, same=True).describe()
            == "0.3636: Delta 3.5e-06, no paired error, one point at the rule (A)")
    assert S(1.814, math.nan, math.nan).describe() == "1.814: Delta not known (?)"
    assert S(1.418, math.nan, math.nan, absent="B").describe() == "1.418: B absent (A)"
    assert "nan" not in " ".join(S(a, d, e).describe() for a, d, e in [(1, 1e-6, math.nan), (1, math.nan, 1e-6)])


def test_settle_interval_bisects_both_edges_to_the_tolerance() -> None:
    """Delta = 0 on [0.3, 0.6] (unsettled), -1e-5 below, +1e-5 above: the edges are bisected from the samples
    (0, 0.45, 1) until each is bracketed within tol, and the interval reported covers [0.3, 0.6]."""
    calls = []

    def measure(x):
        calls.append(x)
        return cs.SignSample(x, -1e-5 if x < 0.3 else 1e-5 if x > 0.6 else 0.0, 1e-6)

    iv = cs.settle_interval(measure, [measure(0.0), measure(0.45), measure(1.0)], 0.05)
    assert iv.lo <= 0.3 and iv.hi >= 0.6 and 0.3 - iv.lo <= 0.05 and iv.hi - 0.6 <= 0.05
    assert len(calls) <= 3 + 2 * math.ceil(math.log2(0.55 / 0.05))


def test_hugs_zero_flags_evaluations_far_from_the_root_within_the_flanks_paired_errors() -> None:
    """A clean crossing's evaluations near the root may lie within 2 paired errors of 0; only those farther than
    HUG_BARS root errors from the root call for samples."""
    ev = [(0.0, -1e-5), (1.0, 1e-5), (0.5, 1e-9), (0.501, 2e-9), (0.2, -1e-7)]
    assert cs.hugs_zero(ev, 0.5, 0.001, 1e-6) == [0.2]
    assert cs.hugs_zero(ev, 0.5, 0.001, math.nan) == []


def test_no_alpha_c_says_the_global_minimum_is_already_past_the_change_at_the_first_grid_point():
    """r = r* = 2, omega = 0.1 on sobol8:4: the global minimum is mixed#1 from alpha = 0.1 on and changes only between
    mixed and semantic branches: no alpha_c in range, and the note says why (it said 'never leaves a positional or
    agnostic point', which it never was)."""
    from types import SimpleNamespace

    from attnphase.numerics.phase.global_minimum_changes import Change
    from attnphase.numerics.phase.lowest_branch import _no_alpha_c

    labels = {"mixed#1": "mixed", "mixed#2": "mixed", "positional": "positional", "agnostic": "agnostic"}
    bc = SimpleNamespace(grid=(0.1, 0.5, 1.0), branch=lambda n: SimpleNamespace(label=labels[n]))
    change = Change(0.8, 0.03, "mixed#1", "mixed#2", "birth", (0.5, 1.0))
    note = _no_alpha_c(bc, ["", "mixed#1", "mixed#2"], [change])
    assert note.startswith("the global minimum is already mixed#1 at alpha = 0.5, the first grid point where it is known")
    assert "below the grid" in note
    stays = _no_alpha_c(bc, ["positional", "agnostic", "agnostic"], [replace(change, frm="positional", to="agnostic")])
    assert stays == "the global minimum never leaves a positional or agnostic point on [0.1, 1]"
    assert _no_alpha_c(bc, ["mixed#1", "", "mixed#1"], []).startswith("the global minimum is mixed#1 at every grid point")


class ShortStepModel(ToyModel):
    """The toy whose warm solves converge only from a point at most ``reach`` away in alpha (the tag's alpha), and
    whose embedded starts converge nowhere."""

    def __init__(self, reach: float, **kw):
        super().__init__(**kw)
        self.reach_alpha = reach

    def point(self, tag: str, alpha: float) -> FakePoint:
        return replace(super().point(tag, alpha), overlaps=FakeOverlaps(f"{tag}@{alpha!r}"))

    def solve(self, params, alpha, branch="semantic", *, init=None, **kw):
        tag, _, at = init.tag.partition("@") if init is not None else ("", "", "nan")
        if not abs(alpha - float(at)) <= self.reach_alpha:
            return FakePoint(alpha, "", False, math.nan, math.nan, FakeOverlaps(""))
        return self.reach(tag, alpha)


def test_a_root_searchs_point_out_of_a_warm_starts_reach_is_reached_by_halving_the_step(monkeypatch, params) -> None:
    """Warm solves reach 0.25 in alpha: the point at 0.9, 0.4 from the branch's point at 0.5, is reached through
    0.7 (added to the branch); without halvings it is lost; 1.9 (1.0 from 0.9, 0.5 after one halving) is lost."""
    toy = toy_model(None)
    model = _use(monkeypatch, ShortStepModel(0.25, branches=toy.branches, default=toy.default))
    cont = cc.Continuation(params, [0.5, 1.0], SolverConfig())
    first = model.point("positional", 0.5)
    br = cc.Branch("positional", "positional", first, cc.orbit_key(cont.model, first))
    cont.branches.append(br)
    with pytest.raises(cc.BranchLost):
        cont.point(br, 0.9, halvings=0)
    fp = cont.point(br, 0.9)
    assert fp.alpha == 0.9 and fp.branch == "positional" and sorted(br.points) == [0.5, 0.7, 0.9]
    with pytest.raises(cc.BranchLost):
        cont.point(br, 1.9)


def test_an_end_inside_a_change_that_the_ends_did_not_locate_is_located_there(monkeypatch, params) -> None:
    """Positional, the lowest, ends at 2.2; semantic lies above it everywhere.  With the census's ends taken away (a
    branch given a point after step 4, as a root search does), the change positional -> semantic on [2, 2.5] is still
    positional's end, located by bisection, not a lost branch."""
    model = ToyModel({
        "positional": ToyBranch("positional", lambda a: a < 2.2, _pos_e_t, lambda a: 3e-3, lambda a: (0.0, 0.2)),
        "semantic": ToyBranch("semantic", lambda a: True, lambda a: _pos_e_t(a) + 1e-4, lambda a: 2e-3,
                              lambda a: (0.3, 0.0)),
    }, {"positional": "positional", "semantic": "semantic", "mixed": "positional"})
    _use(monkeypatch, model)
    cont = cc.Continuation(params, [2.0, 2.5], SolverConfig())
    bc = replace(cont.run(), ends=())
    change = gmc.locate_change(cont, bc, bc.branch("positional"), bc.branch("semantic"), 2.0, 2.5, rb.ROOT_TOL)
    assert abs(change.alpha - 2.2) <= change.err <= cc.END_TOL
    assert change.method.startswith("end of positional")


def test_ends_a_later_solve_reached_past_are_located_again(monkeypatch, params) -> None:
    """Positional exists below 2.2 and its solves fail on (1.9, 2.1): the ends step puts its end near 1.9.  A point
    at 2.15 found later (as a root search finds one) makes that end stale: located again, the branch ends near 1.9,
    is born again near 2.1 and ends near 2.2; the ends of a branch no later solve passed are kept as they were."""
    model = _use(monkeypatch, toy_model(None, positional_fails=(1.9, 2.1)))
    cont = cc.Continuation(params, [1.5, 2.0, 2.5], SolverConfig())
    bc = cont.run()
    pos = bc.branch("positional")
    (first,) = [e for e in bc.ends if e.branch == "positional"]
    assert abs(first.alpha - 1.9) <= first.err / 2 and first.exists == "below"
    assert cont.refreshed_ends(bc) == (bc.ends, [])
    cont.point(pos, 2.15)
    assert model.reach("positional", 2.15).converged and pos.on(2.15)
    ends, notes = cont.refreshed_ends(bc)
    again = [e for e in ends if e.branch == "positional"]
    assert [e.exists for e in again] == ["below", "above", "below"]
    for e, true in zip(again, (1.9, 2.1, 2.2)):
        assert abs(e.alpha - true) <= e.err / 2 + 1e-12 and e.err <= cc.END_TOL
    assert [e for e in ends if e.branch != "positional"] == [e for e in bc.ends if e.branch != "positional"]
    assert len(notes) == 1 and notes[0].startswith("positional: its ends were located again")


def test_an_end_and_the_birth_after_it_are_said_as_where_the_branch_was_not_reached(monkeypatch, params) -> None:
    """Positional's solves fail on (1.9, 2.1), the branch on at both sides, and it ends at 2.2: the note says it was
    not reached between the first two, and its end column is 2.2, not the edge of the interval its solves failed on."""
    _use(monkeypatch, toy_model(None, positional_fails=(1.9, 2.1)))
    b = rb.lowest_branch_boundaries(params, [1.5, 1.75, 2.0, 2.15, 2.5], SolverConfig())
    assert [e.exists for e in b.ends if e.branch == "positional"] == ["below", "above", "below"]
    row = b.row()
    assert abs(row["positional_end"] - 2.2) <= row["err_positional_end"] / 2 + 1e-12
    said = next(n for n in b.notes if n.startswith("births and ends: "))
    end, birth, last = (e for e in b.ends if e.branch == "positional")
    assert (f"positional not reached between {end.alpha:.4g} +- {end.err:.2g} and {birth.alpha:.4g} +- {birth.err:.2g}, "
            "on at both sides (beyond them: no converged solve") in said
    assert f"positional ends at {last.alpha:.4g}" in said and f"positional ends at {end.alpha:.4g}" not in said
    assert abs(end.alpha - 1.9) <= end.err / 2 and abs(birth.alpha - 2.1) <= birth.err / 2


def test_ends_are_located_again_until_no_solve_reached_a_branch_past_one(monkeypatch, params) -> None:
    """Positional exists everywhere, warm solves reach 0.3 in alpha: from its point at 1.5 the bisection towards 2.5
    puts an end near 2.  A point at 2.2 found later makes it stale; located again, the bisection's own
    last solve reaches the branch at 2.5, which makes that end stale too: a second pass finds no end at all."""
    branches = {"positional": ToyBranch("positional", lambda a: True, _pos_e_t, lambda a: 3e-3, lambda a: (0.0, 0.2))}
    model = _use(monkeypatch, ShortStepModel(0.3, branches=branches, default={"positional": "positional"}))
    cont = cc.Continuation(params, [1.5, 2.5], SolverConfig())
    first = model.point("positional", 1.5)
    br = cc.Branch("positional", "positional", first, cc.orbit_key(cont.model, first))
    cont.branches.append(br)
    end = cc.locate_end(cont, br, 1.5, 2.5)
    bc = cc.BranchCensus(cont.grid, (br,), (), (), (end,), ())
    assert abs(end.alpha - 2.0) <= 0.05 and cont.stale(bc) == []
    cont.point(br, 2.2)
    assert cont.stale(bc) == ["positional"]
    ends, notes = cont.refreshed_ends(bc)
    assert ends == () and br.on(2.5)
    assert notes == [f"positional: its ends were located again after later solves reached it past them "
                     f"({end.alpha:.4g} +- {end.err:.2g} -> none)"]
