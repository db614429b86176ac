"""The boundary search over every branch of the model (numerics/phase/lowest_branch.py) and ``phase-diagram --rank``.

The boundary logic is checked on a model of the solver whose branches are known in closed form
(a real rank-2 phase diagram takes minutes; its measured table is in docs/general.md): where each
branch exists, its e_t and eps_g.  Everything the module computes from solves -- sweeps, ends,
alpha_c, alpha_l -- goes through ``solve``, which the tests replace.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest

from attnphase.cli import main
from attnphase.numerics.phase import lowest_branch as rb
from attnphase.numerics.jobs.report import csv_columns
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.observables import Observables
from attnphase.numerics.se.starts import with_ranks
from attnphase.numerics.se.results import SolverStatus
from attnphase.theory.params import ModelParams

EPS_LIN = 1.5e-3


@dataclass(frozen=True)
class FakePoint:
    alpha: float
    branch: str
    converged: bool
    e_t: float
    eps_g: float
    overlaps: object = None

    @property
    def status(self) -> SolverStatus:
        return SolverStatus(self.converged, 1, 0.0 if self.converged else math.nan, "toy solve")

    @property
    def observables(self) -> Observables:
        return Observables(self.eps_g, self.e_t, EPS_LIN)


def toy_solver(mixed_from: float | None, positional_fails: tuple[float, float] = (0.0, 0.0)):
    """Positional exists for alpha < 2.2, semantic for alpha > 0.6 (below: no convergence); their e_t cross
    near alpha = 1.2.  Mixed (r >= 2) exists above ``mixed_from`` with e_t below positional's, else the
    solve lands on the positional label.  eps_g(semantic) = 3e-3 - 1e-3 alpha crosses EPS_LIN at 1.5.
    The positional solves do not converge inside the interval ``positional_fails``."""
    e_t = {"positional": lambda a: 1e-3 * a + 1e-4 * a * a,
           "semantic": lambda a: 0.5e-3 * a + 0.6e-3 + 1e-4 * a * a + 5e-5 * (a - 1) ** 3,
           "mixed": lambda a: 1e-3 * a + 1e-4 * a * a - 2e-4 * (a - mixed_from)}
    eps_g = {"positional": lambda a: 3e-3, "semantic": lambda a: 3e-3 - 1e-3 * a, "mixed": lambda a: 2.5e-3}
    exists = {"positional": lambda a: a < 2.2, "semantic": lambda a: a > 0.6,
              "mixed": lambda a: mixed_from is not None and a > mixed_from}

    def solve(params, alpha, branch, *, config=None, init=None, start=None):
        if branch == "positional" and positional_fails[0] < alpha < positional_fails[1]:
            return FakePoint(alpha, "", False, math.nan, math.nan)
        if exists[branch](alpha):
            return FakePoint(alpha, branch, True, e_t[branch](alpha), eps_g[branch](alpha))
        if branch == "mixed" and exists["positional"](alpha):
            return FakePoint(alpha, "positional", True, e_t["positional"](alpha), 3e-3)
        return FakePoint(alpha, "", False, math.nan, math.nan)

    return solve, e_t


@pytest.fixture
def params():
    return with_ranks(ModelParams(omega=0.3), 2, 1)


def _patch(monkeypatch, mixed_from, **kw):
    solve, e_t = toy_solver(mixed_from, **kw)
    monkeypatch.setattr(rb, "solve", solve)
    monkeypatch.setattr(rb, "teacher_eps_lin", lambda params, cfg: EPS_LIN)
    return solve, e_t


def test_alpha_c_brackets_the_sign_change_of_delta_e_t(monkeypatch, params) -> None:
    solve, _ = _patch(monkeypatch, None)
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0, 2.5], SolverConfig())
    assert (b.alpha_c_from, b.alpha_c_to) == ("positional", "semantic")
    assert 1.0 < b.alpha_c < 1.5 and 0 < b.alpha_c_err <= rb.ROOT_TOL
    lo, hi = b.alpha_c - b.alpha_c_err, b.alpha_c + b.alpha_c_err

    def delta(a):
        return solve(params, a, "positional").e_t - solve(params, a, "semantic").e_t
    assert delta(lo) < 0 < delta(hi)  # positional lowest below, semantic above
    assert b.alpha_c_method == rb.ROOT_METHOD
    # alpha_l: the semantic eps_g (lowest above alpha_c) meets EPS_LIN at 1.5, which the root search
    # brackets although it is a grid point
    assert b.alpha_l_branch == "semantic" and abs(b.alpha_l - 1.5) <= b.alpha_l_err <= rb.ROOT_TOL


def test_branch_ends_by_bisection_with_their_bracket(monkeypatch, params) -> None:
    _patch(monkeypatch, None)
    b = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5, 2.0, 2.5], SolverConfig())
    sem, pos = b.end("semantic"), b.end("positional")
    assert abs(sem.alpha - 0.6) <= sem.err / 2 + 1e-12 and sem.err <= rb.END_TOL and sem.exists == "above"
    assert sem.kind.startswith("no converged solve")
    assert abs(pos.alpha - 2.2) <= pos.err / 2 + 1e-12 and pos.exists == "below"
    row = b.row()
    assert row["semantic_end"] == sem.alpha and row["positional_end_err"] == pos.err


def test_an_absent_branch_is_a_note_not_a_silent_nan(monkeypatch, params) -> None:
    _patch(monkeypatch, None)  # the mixed solves all land on the positional label
    row = rb.lowest_branch_boundaries(params, [0.5, 1.0, 1.5], SolverConfig()).row()
    assert math.isnan(row["mixed_end"])
    assert "mixed branch: no mixed fixed point on the grid (the solves converged to positional labels)" in row["notes"]


def test_a_branch_born_below_the_lowest_gives_alpha_c_at_its_end(monkeypatch, params) -> None:
    _patch(monkeypatch, 0.8)  # mixed appears at 0.8 with e_t below positional's (a continuous transition)
    b = rb.lowest_branch_boundaries(params, [0.7, 1.0, 1.5], SolverConfig())
    assert (b.alpha_c_from, b.alpha_c_to) == ("positional", "mixed")
    assert abs(b.alpha_c - 0.8) <= b.alpha_c_err / 2 + 1e-12 and b.alpha_c_method.startswith("end of the mixed")


def test_a_grid_point_where_a_solve_fails_is_passed_over(monkeypatch, params) -> None:
    _patch(monkeypatch, None, positional_fails=(0.9, 1.1))  # the positional solve fails at alpha = 1
    b = rb.lowest_branch_boundaries(params, [0.75, 1.0, 1.5], SolverConfig())
    notes = "; ".join(b.notes)
    assert "lowest-e_t branch unknown where a branch's solve did not converge: alpha = 1 (positional)" in notes
    # the lowest branch (positional at 0.75, semantic at 1.5) is compared across the gap, not at the failed
    # point; the root search's solves inside the gap fail too, and the row says so
    assert math.isnan(b.alpha_c) and "alpha_c: positional -> semantic in [0.75, 1.5], root not found: the " \
        "positional branch was lost at alpha = 0.9" in notes
    assert b.end("positional").kind.startswith("no converged solve")


def test_phase_diagram_cli_takes_rank_two(monkeypatch, tmp_path, capsys) -> None:
    _patch(monkeypatch, None)
    code = main(["phase-diagram", "--rank", "2", "--teacher-rank", "1", "--omega", "0.3", "--alpha", "0.5,1,1.5,2",
                 "--quadrature", "sobol10", "--workers", "1", "--quiet", "--json", "--out", str(tmp_path / "pd")])
    assert code == 0
    meta = json.loads(capsys.readouterr().out)
    (row,) = meta["rows"]
    assert meta["rank"] == 2 and meta["teacher_rank"] == 1 and 1.0 < row["alpha_c"] < 1.5
    assert {p.name for p in (tmp_path / "pd").iterdir()} >= {"phase_diagram.csv", "phase_diagram.json",
                                                             "phase_diagram.nc", "phase_diagram.png"}
    header = (tmp_path / "pd" / "phase_diagram.csv").read_text().splitlines()[0].split(",")
    assert header == list(csv_columns(2, errors=True))


def test_scan_cli_takes_rank_two(monkeypatch, tmp_path, capsys) -> None:
    _patch(monkeypatch, None)
    code = main(["scan", "--lam", "0.01,0.02", "--rank", "2", "--omega", "0.3", "--alpha", "0.5,1,1.5,2",
                 "--quadrature", "sobol10", "--workers", "1", "--quiet", "--json", "--out", str(tmp_path / "s")])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scanned"] == "lam" and summary["rank"] == 2 and [r["lam"] for r in summary["rows"]] == [0.01, 0.02]
    assert all(1.0 < r["alpha_c"] < 1.5 for r in summary["rows"])  # the toy solver does not depend on lambda
    files = {p.name for p in (tmp_path / "s").iterdir()}
    assert {"scan.csv", "scan.json", "scan.nc", "phase_diagram_lam0.01.png", "phase_diagram_lam0.02.png"} <= files


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
    assert set(boundary_columns(2)) - set(boundary_columns(1)) == {"mixed_end", "mixed_end_kind", "mixed_end_method"}
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
