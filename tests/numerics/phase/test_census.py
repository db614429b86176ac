"""The census at every rank: every fixed point at one (alpha, omega), deduplicated on the gauge orbit, labelled,
tested for stability and ranked by e_t with error bars (numerics/phase/census.py, numerics/se/stability.py,
``attnphase census``), its JSON object and its files.

At r = r* = 1 the census runs once, through the command, on a small rule (sobol10, error bars from 2 rules; ~7 s):
at omega = 0.3, alpha = 1.25 -- next to alpha_c, where the positional and semantic fixed points tie
in e_t and the agnostic one exists and is unstable in theta.

At r = 2, r* = 1 one census runs once (module fixture) at L = 2, omega = 0.3, alpha = 2 on sobol10:4 from four of its
starts (the three embedded ones and the semantic cold one, which reaches the embedded semantic point again);
about 40 s of CPU (marked slow).  The command's output is tested on that result (the census monkeypatched to return
it).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from attnphase.cli import main
from attnphase.numerics.phase import census as census_mod
from attnphase.numerics.phase.census_starts import CensusStart, perturbed_starts, PERTURBATIONS
from attnphase.numerics.phase.gauge_orbits import canonical, paired_difference, same_point
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.se_map import admissible
from attnphase.numerics.se.starts import with_ranks
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams

#: The small rule of these tests (the census's default is the solve rule, sobol12, and K = 4).
RULE = ["--quadrature", "sobol10", "--error-estimate", "2"]

#: The keys ``attnphase solve --json`` prints (tests/cli/test_numerics_commands.py), every census entry has them too.
SOLVE_KEYS = {
    "alpha", "omega", "sigma", "lam", "branch", "q", "m", "V", "theta", "eps_g", "e_t", "eps_lin", "converged",
    "iterations", "residual", "L", "A", "P", "rho0", "rank", "loss", "requested_branch", "reason",
}
ERR_KEYS = {f"err_{k}" for k in ("q", "m", "V", "theta", "eps_g", "e_t")}


@pytest.fixture(scope="module")
def out_folder(tmp_path_factory):
    """The ``--out`` folder of :func:`near_alpha_c`."""
    return tmp_path_factory.mktemp("census") / "out"


@pytest.fixture(scope="module")
def near_alpha_c(out_folder) -> dict:
    """``attnphase census --alpha 1.25 --omega 0.3 --json --out DIR`` on the small rule, parsed (one JSON object)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["census", "--alpha", "1.25", "--omega", "0.3", *RULE, "--json", "--out", str(out_folder)])
    assert code == 0, err.getvalue()
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_census_out_writes_the_json_object_and_a_row_per_fixed_point(near_alpha_c: dict, out_folder) -> None:
    import csv

    assert json.loads((out_folder / "census.json").read_text()) == near_alpha_c
    rows = list(csv.DictReader(open(out_folder / "census.csv")))
    assert [r["branch"] for r in rows] == [p["branch"] for p in near_alpha_c["fixed_points"]]
    assert [float(r["e_t"]) for r in rows] == [p["e_t"] for p in near_alpha_c["fixed_points"]]


def test_census_out_writes_a_cf_dataset_under_the_csvs_names(near_alpha_c: dict, out_folder) -> None:
    """census.nc holds census.csv's columns over rank_in_e_t and census_starts.csv's over start, the same names,
    values and order, CF-conformant, each error linked to its value."""
    import csv

    from attnphase.execution.dataset import cf_problems, open_dataset

    ds = open_dataset(out_folder / "census.nc")
    assert cf_problems(ds) == []
    rows = list(csv.DictReader(open(out_folder / "census.csv")))
    starts = list(csv.DictReader(open(out_folder / "census_starts.csv")))
    assert set(rows[0]) | set(starts[0]) == set(ds.data_vars) | {"start"}
    assert list(ds["rank_in_e_t"].values) == list(range(1, len(rows) + 1)) and list(ds["start"].values) == [
        s["start"] for s in starts]
    assert [float(r["e_t"]) for r in rows] == list(ds["e_t"].values) and list(ds["branch"].values) == [
        r["branch"] for r in rows]
    assert ds["e_t"].attrs["ancillary_variables"] == "err_e_t" and ds["err_e_t"].attrs["units"] == "1"
    assert list(ds["converged"].values) == [int(s["converged"]) for s in starts]
    assert ds.attrs["job"] == "census" and ds.attrs["alpha"] == near_alpha_c["alpha"]
    # what the err_ variables are, as the JSON says (the rule of one scrambling: two independent rules)
    assert ds.attrs["error_bars"] == near_alpha_c["error_bars"] == "spread over 2 independent rules"
    # why a bar is exactly 0, as the JSON says it (the dataset had no error_note)
    assert near_alpha_c.get("error_note") and ds.attrs["error_note"] == near_alpha_c["error_note"]


def test_census_finds_the_positional_and_semantic_points_and_ranks_by_e_t(near_alpha_c: dict) -> None:
    pts = near_alpha_c["fixed_points"]
    labels = [p["branch"] for p in pts]
    assert {"positional", "semantic"} <= set(labels)
    e_t = [p["e_t"] for p in pts]
    assert e_t == sorted(e_t) and near_alpha_c["global_minimum"] == labels[0]
    # near alpha_c the two compared points are the two lowest and tie (within 1 %, on this small rule),
    # next to the agnostic point's gap above them (~10 %)
    assert set(labels[:2]) == {"positional", "semantic"}
    pos, sem, ag = (next(p for p in pts if p["branch"] == b) for b in ("positional", "semantic", "agnostic"))
    assert abs(pos["e_t"] - sem["e_t"]) < 0.01 * sem["e_t"]
    assert ag["e_t"] - max(pos["e_t"], sem["e_t"]) > 5 * abs(pos["e_t"] - sem["e_t"])
    assert pos["theta"] == 0 and abs(pos["m"]) > 0.05 and sem["m"] == 0 and sem["theta"] > 0.1


def test_census_entries_are_distinct_labelled_and_tested(near_alpha_c: dict) -> None:
    p = ModelParams(omega=0.3)
    pts = near_alpha_c["fixed_points"]
    keys = [canonical(p, Overlaps(q0=r["q"], V0=r["V"], m=[r["m"], -r["m"]], th0=r["theta"])) for r in pts]
    for i in range(len(keys)):
        for j in range(i):
            assert not same_point(keys[i], keys[j]), (pts[i], pts[j])
    for r in pts:
        want = ("mixed" if r["m"] and r["theta"] else "positional" if r["m"] else "semantic" if r["theta"]
                else "agnostic")
        assert r["branch"] == want and r["requested_branch"] == want and r["reason"] == ""
        assert r["converged"] is True and r["residual"] <= 1e-10
        assert r["stable"] is (r["leading_eigenvalue"] < 1) and r["starts"] >= 1
    reached = sum(r["starts"] for r in pts)
    assert reached <= near_alpha_c["starts"] - near_alpha_c["not_converged"]
    assert reached == near_alpha_c["starts"] - near_alpha_c["not_converged"] or near_alpha_c["polish_failures"] > 0
    # the two compared points are stable there; the agnostic point (above the semantic end, 0.71) is not
    by = {r["branch"]: r for r in pts}
    assert by["positional"]["stable"] and by["semantic"]["stable"]
    assert "agnostic" in by and not by["agnostic"]["stable"]


def test_census_json_shape(near_alpha_c: dict) -> None:
    out = near_alpha_c
    assert {"alpha", "omega", "params", "solver", "independent_rules", "error_bars", "search_quadrature", "starts",
            "not_converged",
            "polish_failures", "global_minimum", "separation", "seconds", "fixed_points", "error_note",
            "global_minimum_distinguishable"} == set(out)
    assert (out["alpha"], out["omega"], out["independent_rules"], out["starts"]) == (1.25, 0.3, 2, 21)
    # a 2^10 rule is searched on as it is (sobol12 would be searched on sobol10:1:0)
    assert out["solver"]["quadrature"] == out["search_quadrature"] == "sobol10"
    for r in out["fixed_points"]:
        assert set(r) == SOLVE_KEYS | ERR_KEYS | {"stable", "leading_eigenvalue", "starts", "merged"}
        # a spread of two rules, or null where a re-solve left the point (the unstable agnostic one may)
        assert all(r[k] is None or r[k] >= 0 for k in ERR_KEYS)
        if r["branch"] != "agnostic":
            assert all(r[k] is not None for k in ERR_KEYS)
        if r["branch"] == "positional":
            assert r["err_theta"] == 0 and r["err_m"] > 0  # theta = 0 exactly on every rule
    a, b = out["fixed_points"][:2]
    assert out["separation"] == pytest.approx((b["e_t"] - a["e_t"]) / math.hypot(a["err_e_t"], b["err_e_t"]))
    assert out["global_minimum_distinguishable"] is (out["separation"] >= 2)  # alpha_c 1.2512: the rule may not tell


def test_agnostic_point_above_the_semantic_end_is_unstable_and_the_semantic_point_stable() -> None:
    """At alpha = 2, omega = 0.3 the agnostic fixed point is unstable in theta (the semantic branch was born
    from it at ~0.71): its Jacobian's theta row and column decouple (th0 -> -th0 is a symmetry at th0 = 0),
    the theta entry exceeds 1, and the leading eigenvalue is at least the likelihood-ratio lambda."""
    from attnphase.numerics.se.se_map import model_rule
    from attnphase.numerics.se.stability import se_jacobian, stability_eigenvalue, theta_stability_at

    p, cfg = ModelParams(omega=0.3), SolverConfig(quadrature="sobol10")
    ag = solve(p, 2.0, "agnostic", config=cfg, init=Overlaps(q0=0.4, V0=90.0, m=np.zeros(2), th0=0.0))
    assert ag.status.converged and ag.branch == "agnostic"
    J = se_jacobian(p, 2.0, ag.overlaps, cfg)
    assert np.all(J[-1, :-1] == 0) and np.all(J[:-1, -1] == 0) and J[-1, -1] > 1
    lam, _ = theta_stability_at(p, 2.0, ag.overlaps, model_rule(p, cfg), cfg)
    lead = stability_eigenvalue(p, 2.0, ag.overlaps, cfg)
    assert lam > 1 and lead >= lam and lead >= J[-1, -1]
    sem = solve(p, 2.0, "semantic", config=cfg)
    assert sem.status.converged and sem.branch == "semantic"
    assert stability_eigenvalue(p, 2.0, sem.overlaps, cfg) < 1


def _fake_census(points: list[tuple[str, float, float]]):
    """A census() stand-in returning entries (label, e_t, err_e_t), lowest e_t first."""
    from attnphase.numerics.phase.census import Census, CensusEntry

    entries = [CensusEntry(SimpleNamespace(branch=b, observables=SimpleNamespace(e_t=e)), (), False, {"err_e_t": err},
                           ("start",), 0.5) for b, e, err in sorted(points, key=lambda x: x[1])]
    return lambda params, alpha, **kw: Census(params, alpha, tuple(entries), None, 4)


def test_a_point_its_blocks_do_not_reproduce_is_the_point_they_land_on() -> None:
    # census --alpha 0.7 --omega 0.1 listed a fourth point, "semantic" with theta = -0.007 and no error bar, e_t the
    # agnostic point's to 5 digits: re-solved on the rule's 4 blocks it landed on agnostic, semantic, agnostic and
    # did not converge -- the agnostic point displaced by the pooled rule's jumps
    entries = [SimpleNamespace(point=SimpleNamespace(branch=b)) for b in ("positional", "semantic", "agnostic")]
    assert census_mod.displaced_from(entries, "semantic", ["agnostic", "semantic", "agnostic"]) == 2
    assert census_mod.displaced_from(entries, "semantic", ["semantic"]) is None  # its own label is no target
    assert census_mod.displaced_from(entries, "semantic", ["agnostic", "semantic", "positional"]) is None  # no majority
    assert census_mod.displaced_from(entries, "mixed", []) is None
    twice = entries + [SimpleNamespace(point=SimpleNamespace(branch="agnostic"))]
    assert census_mod.displaced_from(twice, "semantic", ["agnostic", "agnostic"]) is None  # which one: not told


@pytest.mark.heavy
def test_census_near_the_semantic_birth_lists_no_displaced_agnostic_point() -> None:
    res = census_mod.census(ModelParams(omega=0.1), 0.7)
    labels = [e.point.branch for e in res.entries]
    assert sorted(labels) == ["agnostic", "positional", "semantic"]
    assert all(e.errors.get("replicates", 0) >= 2 for e in res.entries)
    agnostic = res.entries[labels.index("agnostic")]
    assert any(m.branch == "semantic" and abs(m.e_t - agnostic.e_t) < 1e-7 and m.reason == census_mod.DISPLACED
               for m in agnostic.merged)


def test_census_check_says_whether_another_fixed_point_beats_the_pair(monkeypatch) -> None:
    p = ModelParams(omega=0.3)
    monkeypatch.setattr(census_mod, "census", _fake_census(
        [("positional", 2.7181e-3, 3e-6), ("semantic", 2.7201e-3, 2e-6), ("agnostic", 2.9639e-3, 2e-6)]))
    row = census_mod.census_check(p, 1.25)
    assert set(row) == set(census_mod.CENSUS_COLUMNS)
    assert (row["census_global_min"], row["census_fixed_points"], row["census_beaten_by"]) == ("positional", 3, "")
    assert row["census_separation"] == pytest.approx(2.0e-6 / math.hypot(3e-6, 2e-6))
    # a mixed point 3 error bars below the better of the pair beats it; one 1 error bar below does not
    bar = math.hypot(3e-6, 1e-6)
    for below, beaten in ((3 * bar, True), (1 * bar, False)):
        monkeypatch.setattr(census_mod, "census", _fake_census(
            [("positional", 2.7181e-3, 3e-6), ("semantic", 2.7201e-3, 2e-6), ("mixed", 2.7181e-3 - below, 1e-6)]))
        row = census_mod.census_check(p, 1.25)
        assert row["census_global_min"] == "mixed" and row["census_beaten_by"].startswith("mixed") is beaten
    assert census_mod.census_check(p, math.nan)["census_fixed_points"] == 0  # no alpha_c: no census


def test_phase_diagram_census_writes_census_csv(monkeypatch, tmp_path, capsys) -> None:
    """``phase-diagram --census``: the census at each omega's alpha_c (here a stand-in) in census.csv and
    under the --json object's key ``census``; refused with a rank above 1."""
    import csv

    seen = []

    def fake(params, alpha, **kw):
        seen.append((params.omega, alpha))
        return _fake_census([("positional", 1.0, 0.1), ("semantic", 1.1, 0.1)])(params, alpha)

    monkeypatch.setattr(census_mod, "census", fake)
    # small rules throughout (what is checked is where the census runs and what is written, not the boundaries'
    # accuracy); alpha_c is found on them (a NaN alpha_c would run no census: `seen` below would stay empty)
    argv = ["phase-diagram", "--omega", "0.3", "--alpha", "0.6:2.2:5", "--quadrature", "sobol10",
            "--alpha-c-quadrature", "none", "--alpha-l-quadrature", "none", "--bifurcation-quadrature", "sobol10",
            "--end-quadrature", "none", "--census", "--out", str(tmp_path), "--quiet", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    rows = list(csv.DictReader(open(tmp_path / "phase_diagram_census.csv")))
    assert not (tmp_path / "census.csv").exists()  # the census command's table (other columns, beside census.nc)
    assert len(rows) == 1 and rows[0]["census_global_min"] == "positional" and rows[0]["census_beaten_by"] == ""
    alpha_c = out["rows"][0]["alpha_c"]
    assert seen == [(0.3, alpha_c)] and float(rows[0]["census_alpha"]) == pytest.approx(alpha_c, rel=1e-12)
    assert out["census"][0]["census_fixed_points"] == 2
    # the census is a stored task: the same command again reads it back, computes nothing, keeps the files
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert seen == [(0.3, alpha_c)] and again["census"] == out["census"]
    assert list(csv.DictReader(open(tmp_path / "phase_diagram_census.csv"))) == rows
    assert (tmp_path / "phase_diagram.csv").exists()
    assert main(["phase-diagram", "--rank", "2", "--census", "--out", str(tmp_path / "r2")]) == 2
    assert "--census" in capsys.readouterr().err


@pytest.mark.heavy
def test_census_of_correlated_tokens_ranks_the_whitened_fixed_points(capsys) -> None:
    """``census --token-cov``: the fixed points of the whitened model (docs/model.md section 7), reported in the
    tokens' own variables; its semantic and positional points are those ``solve --token-cov`` finds on the same
    rule, and at alpha = 2 (below this C's alpha_c) the positional one is the global minimum."""
    cov = "0.25,0.075;0.075,0.25"
    rule = ["--quadrature", "sobol10", "--error-estimate", "0"]
    assert main(["census", "--alpha", "2", "--omega", "0.3", "--token-cov", cov, *rule, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"]["C"] == [[0.25, 0.075], [0.075, 0.25]] and out["starts"] == 21
    by = {p["branch"]: p for p in out["fixed_points"]}
    for branch in ("semantic", "positional"):
        assert main(["solve", "--alpha", "2", "--omega", "0.3", "--token-cov", cov, "--branch", branch, *rule,
                     "--json"]) == 0
        ref = json.loads(capsys.readouterr().out)
        assert ref["branch"] == branch and ref["C"] == out["params"]["C"]
        for key in ("q", "V", "theta", "e_t", "eps_g"):
            assert abs(by[branch][key]) == pytest.approx(abs(ref[key]), rel=1e-6, abs=1e-9), (branch, key)
        assert np.abs(by[branch]["m"]) == pytest.approx(np.abs(ref["m"]), rel=1e-6, abs=1e-9)
        assert by[branch]["stable"]
    assert by["positional"]["e_t"] < by["semantic"]["e_t"] and out["global_minimum"] == "positional"


CFG = SolverConfig(quadrature="sobol10:4")  # the solver default (on sobol9:4 the compiled search's mixed solve stalls at 3e-3)
ALPHA = 2.0


@pytest.fixture(scope="module")
def params() -> ModelParams:  # r = 2, r* = 1
    return with_ranks(ModelParams(omega=0.3), 2, 1)


@pytest.fixture(scope="module")
def found(params) -> tuple[census_mod.Census, list]:
    """(the census from four starts, every (start, solve) it made)."""
    starts = [CensusStart(f"{b} embedded", b, "embedded") for b in ("semantic", "positional", "mixed")]
    starts.append(CensusStart("semantic cold", "semantic", "cold"))
    seen: list = []
    res = census_mod.census(params, ALPHA, config=CFG, n_rules=0, starts=starts, perturb=False,
                           progress=lambda s, fp: seen.append((s, fp)))
    return res, seen


@pytest.mark.slow
def test_rank2_census_finds_the_three_branches_and_ranks_them_by_e_t(found) -> None:
    res, seen = found
    labels = [e.point.branch for e in res.entries]
    assert {"semantic", "positional", "mixed"} <= set(labels)
    e_t = [e.e_t for e in res.entries]
    assert e_t == sorted(e_t) and all(e.point.status.converged for e in res.entries)
    # the reported minimum is the lowest e_t of every converged solve (a merged duplicate lies within the rule's noise)
    lowest = min(fp.observables.e_t for _, fp in seen if fp.status.converged)
    assert res.entries[0].e_t == pytest.approx(lowest, rel=1e-6, abs=0)
    assert labels[0] == "mixed"  # docs/general.md: the mixed point is the lowest at alpha = 2 (r = 2, r* = 1)
    assert len(res.failures) == sum(not fp.status.converged for _, fp in seen)


@pytest.mark.slow
def test_rank2_census_tests_stability_transverse_to_the_gauge(found) -> None:
    """At alpha = 2 the mixed point, the global minimum, is stable (its Jacobian's eigenvalue 1 along the gauge
    orbit left out); the semantic and positional points are not: a small other overlap grows towards the mixed one
    (measured on this rule: 0.40, 3.4 and 1.8)."""
    res, _ = found
    by = {e.point.branch: e for e in res.entries}
    assert by["mixed"].stable and by["mixed"].leading_eigenvalue < 0.9
    assert not by["semantic"].stable and not by["positional"].stable


@pytest.mark.slow
def test_rank2_census_merges_starts_that_reach_one_point(found) -> None:
    res, seen = found
    sem = [e for e in res.entries if e.point.branch == "semantic"]
    assert len(sem) == 1
    reached = [s.name for s, fp in seen if fp.status.converged and fp.branch == "semantic"]
    assert sorted(sem[0].starts) == sorted(reached) and len(reached) == 2
    assert len({e.point.branch for e in res.entries}) == len(res.entries)


@pytest.mark.slow
def test_paired_difference_is_the_spread_of_the_per_block_differences(found) -> None:
    res, _ = found
    a, b = res.entries[0], res.entries[1]
    delta, err, n = paired_difference(a, b)
    pairs = [(pa.observables.e_t, pb.observables.e_t) for pa, pb in zip(a.replicates, b.replicates) if pa is not None and pb is not None]
    assert n == len(pairs) and delta == b.e_t - a.e_t > 0
    if n >= 2:
        d = np.array([y - x for x, y in pairs])
        assert err == pytest.approx(d.std(ddof=1) / math.sqrt(n), rel=1e-12)
        sep = res.above_minimum(b)
        assert sep["separation_paired"] == pytest.approx(delta / err, rel=1e-12)
        assert sep["separation_combined"] == pytest.approx(delta / math.hypot(a.err("e_t"), b.err("e_t")), rel=1e-12)
        # the minimum's own row: 0 both ways (census.csv had separation_paired nan beside separation_combined 0)
        own = res.above_minimum(a)
        assert own["separation_paired"] == own["separation_combined"] == own["delta_e_t"] == 0.0
    # synthetic replicates: a shared offset per block cancels in the difference
    offs = [0.0, 1e-5, -2e-5, 3e-5]
    reps = lambda fp, shift: tuple(dataclasses.replace(fp, observables=dataclasses.replace(
        fp.observables, e_t=fp.observables.e_t + o + shift * (j % 2))) for j, o in enumerate(offs))
    A = dataclasses.replace(a, replicates=reps(a.point, 0.0), blocks=True)
    B = dataclasses.replace(b, replicates=reps(b.point, 1e-7), blocks=True)
    _, err2, n2 = paired_difference(A, B)
    assert n2 == 4 and err2 == pytest.approx(np.std([0, 1e-7, 0, 1e-7], ddof=1) / 2, rel=1e-9)
    C = dataclasses.replace(B, replicates=(None,) + B.replicates[1:])
    assert paired_difference(A, C)[2] == 3


@pytest.mark.slow
def test_perturbed_starts_put_a_small_other_overlap_on_a_branch_point(found, params) -> None:
    from attnphase.numerics.se.overlaps import branch_label
    from attnphase.numerics.se.gauge import canonical

    res, _ = found
    points = [e.point for e in res.entries if e.point.branch in ("semantic", "positional")]
    starts = perturbed_starts(params, points + [e.point for e in res.entries if e.point.branch == "mixed"])
    assert len(starts) == 2 * len(PERTURBATIONS) and all(s.branch == "mixed" and s.kind == "init" for s in starts)
    assert len({s.name for s in starts}) == len(starts)
    for s in starts:
        assert branch_label(s.overlaps) == "mixed" and admissible(s.overlaps, params.rho0)
        base = canonical(next(p for p in points if s.name.startswith(p.branch)).overlaps)
        assert np.array_equal(s.overlaps.q0, base.q0) and np.array_equal(s.overlaps.V0, base.V0)
        changed = "th0" if s.name.startswith("positional") else "m"
        kept = "m" if changed == "th0" else "th0"
        assert np.array_equal(getattr(s.overlaps, kept), getattr(base, kept))
        assert np.abs(getattr(s.overlaps, changed)).max() <= max(PERTURBATIONS) * 1.0 + 1e-12


@pytest.mark.slow
def test_census_rank_command_json_and_out(found, monkeypatch, tmp_path, capsys) -> None:
    res, _ = found
    failed = dataclasses.replace(res, search=dataclasses.replace(
        res.search, failures=(("mixed cold", 0.2, "did not converge"),),
        starts=res.starts + (CensusStart("mixed cold", "mixed", "cold"),)))
    monkeypatch.setattr(census_mod, "census", lambda *a, **k: failed)
    argv = ["census", "--alpha", "2", "--omega", "0.3", "--rank", "2", "--teacher-rank", "1", "--quadrature", "sobol9:4",
            "--json", "--out", str(tmp_path / "c")]
    assert main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    obj = json.loads(out[0])
    assert obj["global_minimum"] == res.entries[0].point.branch and obj["rank"] == 2 and obj["teacher_rank"] == 1
    assert [p["branch"] for p in obj["fixed_points"]] == [e.point.branch for e in res.entries]
    assert obj["not_converged"] == 1 and obj["not_converged_starts"][0]["start"] == "mixed cold"
    assert set(obj["not_converged_starts"][0]) == {"start", "requested_branch", "residual", "message"}
    first = obj["fixed_points"][0]
    assert first["delta_e_t"] == 0 and {"q0_eigenvalues", "err_e_t", "starts", "start_names", "overlaps"} <= set(first)
    assert json.loads((tmp_path / "c" / "census.json").read_text()) == obj
    rows = (tmp_path / "c" / "census.csv").read_text().splitlines()
    assert len(rows) == 1 + len(res.entries) and rows[0].startswith("rank_in_e_t,branch,e_t,err_e_t")
    # each invariant with its bar, as the JSON and the table have them (the files had the invariants bare)
    table = list(csv.DictReader(io.StringIO("\n".join(rows))))
    for row, point in zip(table, obj["fixed_points"]):
        for key, short in (("q0_eigenvalues", "q0_eig"), ("V0_eigenvalues", "V0_eig"), ("m_norms", "m_norm")):
            assert [float(row[f"err_{short}_{i + 1}"]) for i in range(2)] == point[f"err_{key}"], key
    starts = (tmp_path / "c" / "census_starts.csv").read_text().splitlines()
    assert len(starts) == 1 + len(failed.starts) and starts[-1].startswith("mixed cold,mixed,cold,0,,0.2")
    from attnphase.execution.dataset import cf_problems, open_dataset

    ds = open_dataset(tmp_path / "c" / "census.nc")  # the rank-r table too, under census.csv's names
    assert cf_problems(ds) == [] and set(rows[0].split(",")) - {"rank_in_e_t"} <= set(ds.data_vars)
    # both tables have a residual: the points' kept over rank_in_e_t (the starts' one overwrote it), the starts' beside
    assert ds["residual"].dims == ("rank_in_e_t",) and ds["start_residual"].dims == ("start",)
    assert ds.attrs["error_bars"] == obj["error_bars"] == "standard error over 4 scrambling blocks of the rule"
    assert list(ds["residual"].values) == [float(r.split(",")[rows[0].split(",").index("residual")]) for r in rows[1:]]
    # the table: a row per fixed point, lowest e_t first, with its stability verdict
    assert main(argv[:-3]) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[0] for line in table[1:]] == [e.point.branch for e in res.entries]
    assert all(f" {e.stable} " in line for e, line in zip(res.entries, table[1:]))
    # without error bars (--error-estimate 0) the same table, each value without its bar
    bare = dataclasses.replace(failed, entries=tuple(dataclasses.replace(e, replicates=(), errors={})
                                                     for e in failed.entries))
    monkeypatch.setattr(census_mod, "census", lambda *a, **k: bare)
    assert main(argv[:-3] + ["--error-estimate", "0"]) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[0] for line in table[1:]] == [e.point.branch for e in res.entries]
    assert "+-" not in "".join(table[1:]) and f"{res.entries[0].e_t:.6g}"[:6] in table[1]


@pytest.mark.parametrize("separation, said", [(0.4, "global minimum: not resolved at this rule: positional or semantic "
                                                     "(the next e_t 0.4 error bars higher, below 2;"),
                                              (3.0, "global minimum: positional (2 distinct fixed points; the next e_t "
                                                    "3.0 error bars higher;")])
def test_census_says_when_the_rule_does_not_tell_the_lowest_two_apart(separation, said, capsys) -> None:
    from attnphase.numerics.commands.census import _summary
    from attnphase.numerics.config import SolverConfig

    obj = {"not_converged": 0, "starts": 21, "search_quadrature": "sobol10:4", "polish_failures": 0, "seconds": 1.0,
           "fixed_points": [{"branch": "positional"}, {"branch": "semantic"}], "separation": separation,
           "global_minimum_distinguishable": separation >= 2}
    assert _summary(obj, SolverConfig()) == 0
    assert said in capsys.readouterr().err


def test_of_two_points_one_within_the_error_bars_the_census_keeps_the_more_symmetric(monkeypatch) -> None:
    # census --rank 2 --alpha 1 --omega 1 listed a "mixed" minimum, th0 0.0021 +- 0.0013, reached by 15 starts, with
    # the positional point (th0 = 0, e_t the same within 2e-8) merged into it: at omega = 1 no point has th0 != 0
    from types import SimpleNamespace

    from attnphase.numerics.phase import census

    def entry(branch: str, starts: int) -> census.CensusEntry:
        point = SimpleNamespace(branch=branch, observables=SimpleNamespace(e_t=1.5e-3))
        return census.CensusEntry(point, (), True, {}, tuple(f"{branch}{k}" for k in range(starts)))

    monkeypatch.setattr(census, "within_errors", lambda a, b: True)
    for first, second in ((entry("mixed", 15), entry("positional", 2)), (entry("positional", 2), entry("mixed", 15))):
        entries = [first]
        census._merge_within_errors(entries, second)
        (kept,) = entries
        assert kept.point.branch == "positional" and len(kept.starts) == 17 and kept.merged[0].branch == "mixed"
        assert kept.merged[0].reason == census.WITHIN_ERRORS
    entries = [entry("mixed", 3)]
    census._merge_within_errors(entries, entry("mixed", 5))  # alike: the one more starts reached
    assert len(entries[0].merged[0].starts) == 3


def test_each_merged_point_says_why_it_was_merged(monkeypatch) -> None:
    """census --L 3 --rank 2 --teacher-rank 2 --alpha 2 merged a mixed point 45 bars above the semantic one into it
    (its blocks landed on the semantic point) and the note said "within the error bars, the one of fewer broken
    symmetries kept": each merged point carries the rule that merged it."""
    from types import SimpleNamespace

    from attnphase.numerics.phase import census

    def entry(branch: str, errors: dict) -> census.CensusEntry:
        point = SimpleNamespace(branch=branch, observables=SimpleNamespace(e_t=1.5e-3))
        return census.CensusEntry(point, (), True, errors, (branch,))

    monkeypatch.setattr(census, "floor_label", lambda fp: "agnostic" if fp.branch == "positional" else fp.branch)
    (kept,) = census._below_floor_merged([entry("agnostic", {}), entry("positional", {})])
    assert kept.point.branch == "agnostic" and kept.merged == (
        census.MergedPoint("positional", 1.5e-3, ("positional",), census.BELOW_FLOOR),)
    assert len(census._below_floor_merged([entry("agnostic", {}), entry("positional", {"err_m": 1e-3})])) == 2


def test_the_census_names_the_points_it_lists_without_error_bars() -> None:
    # census --rank 2 --alpha 0.6 --omega 0.1 listed a semantic point (|th0| 0.017, none of 4 blocks reproduce it)
    # and the agnostic point (1 of 4) with no bars and no word why
    from types import SimpleNamespace

    from attnphase.numerics.commands.census import unreproduced_note
    from attnphase.numerics.phase import census

    def entry(branch: str, e_t: float, kept: int) -> census.CensusEntry:
        point = SimpleNamespace(branch=branch, observables=SimpleNamespace(e_t=e_t))
        return census.CensusEntry(point, tuple([point] * kept + [None] * (4 - kept)), True, {})

    res = SimpleNamespace(entries=[entry("mixed", 1.4454e-3, 4), entry("semantic", 1.5318789e-3, 0),
                                   entry("agnostic", 1.5330391e-3, 1), entry("positional", 1.4509e-3, 2)])
    note = unreproduced_note(res)
    assert note.startswith("no err_ on semantic (e_t 0.001531879: 0 of 4), agnostic (e_t 0.001533039: 1 of 4): ")
    assert "rule's blocks" in note and "mixed" not in note and "positional" not in note
    assert unreproduced_note(SimpleNamespace(entries=res.entries[:1] + res.entries[3:])) == ""


def test_a_point_whose_polish_fails_from_its_first_start_is_polished_from_another_start_that_reached_it(monkeypatch):
    """``census --alpha 1 --omega 0.3 --lam 0.5``: the semantic cold start reaches the zero student first, converged
    only to the rule's jump scale, and the polish on the solve rule does not converge from it; the other starts reached
    it to 4e-12.  The point is polished from them, not dropped ("no fixed point found")."""
    params = ModelParams(omega=0.3, lam=0.5)
    small = SolverConfig(quadrature="sobol8:4", error_bars=False)
    good = solve(params, 1.0, "agnostic", config=small)
    assert good.status.converged and good.branch == "agnostic"
    jumpy = dataclasses.replace(good, requested="semantic", status=dataclasses.replace(good.status, residual=2.9e-6))
    starts = [CensusStart("semantic cold", "semantic", "cold"), CensusStart("agnostic cold", "agnostic", "cold"),
              CensusStart("positional cold", "positional", "cold")]
    reached = {"semantic cold": jumpy, "agnostic cold": good,
               "positional cold": dataclasses.replace(good, requested="positional",
                                                      status=dataclasses.replace(good.status, residual=1e-9))}
    monkeypatch.setattr(census_mod, "solve_start", lambda p, a, start, cfg, rank_one=None: reached[start.name])
    polished = []

    def polish(p, a, branch, init=None, config=None):
        polished.append(branch)
        return dataclasses.replace(good, status=dataclasses.replace(good.status, converged=branch != "semantic"))
    monkeypatch.setattr(census_mod, "solve", polish)
    res = census_mod.search(params, 1.0, SolverConfig(quadrature="sobol12:4"), starts=starts, perturb=False)
    assert polished == ["semantic", "agnostic"]  # the first start's point, then the best converged of the others
    assert res.polish_failures == 0 and len(res.points) == 1
    assert res.points[0][1] == ("semantic cold", "agnostic cold", "positional cold")


@pytest.mark.heavy
def test_without_bars_a_point_below_its_floor_is_the_point_beside_it(capsys):
    """``census --error-estimate 0``: with no bars to merge within, a positional point of |m| = 0.002 (the agnostic
    point at the rule's resolution, its start's progress line said) was listed as a fourth fixed point; with bars
    the census lists three.  Below the branch's floor it is merged into the agnostic point."""
    assert main(["census", "--alpha", "1.25", "--omega", "0.3", "--precision", "fast", "--error-estimate", "0",
                 "--json"]) == 0
    points = json.loads(capsys.readouterr().out)["fixed_points"]
    assert sorted(p["branch"] for p in points) == ["agnostic", "positional", "semantic"]
    assert all(abs(p["m"]) >= 0.02 for p in points if p["branch"] == "positional")


def test_a_height_without_its_paired_error_is_said():
    """``census --rank 2 --alpha 2``: the agnostic point's err_delta_e_t and separation_paired were null (one block
    pair with the global minimum) and the error note did not say so."""
    from attnphase.numerics.commands.census import unpaired_note

    rows = [{"branch": "mixed", "e_t": 0.0034, "err_delta_e_t": 0.0, "delta_pairs": 3},
            {"branch": "semantic", "e_t": 0.0035, "err_delta_e_t": 9.8e-6, "delta_pairs": 3},
            {"branch": "agnostic", "e_t": 0.00375404, "err_delta_e_t": math.nan, "delta_pairs": 1}]
    said = unpaired_note(rows)
    assert said.startswith("err_delta_e_t and separation_paired null on agnostic (e_t 0.00375404: 1 pair)")
    assert unpaired_note(rows[:2]) == "" and unpaired_note([{"branch": "semantic", "e_t": 0.1}] * 2) == ""


def test_a_point_whose_re_solves_fall_below_the_floor_is_the_point_it_is_noise_beside() -> None:
    """census --alpha 1 --omega 0.3 --rho0 2 listed a fourth, 'stable' positional point (|m| = 0.023, e_t the agnostic
    point's): its one converged re-solve kept the positional label at |m| = 0.004, below the floor, so no merge rule
    saw it land on the agnostic point.  A re-solve below its label's floor lands on the label without that order
    parameter."""
    fp = solve(ModelParams(omega=0.3), 2.0, "positional", config=SolverConfig(quadrature="sobol6:2", error_bars=False))
    ov = fp.overlaps
    beside = dataclasses.replace(fp, overlaps=Overlaps(q0=ov.q0, V0=ov.V0, m=np.array([0.003, -0.003]), th0=0.0))
    assert census_mod.floor_label(fp) == "positional" and census_mod.floor_label(beside) == "agnostic"
    entries = [SimpleNamespace(point=SimpleNamespace(branch=b)) for b in ("semantic", "positional", "agnostic")]
    assert census_mod.displaced_from(entries, "positional", [census_mod.floor_label(beside)]) == 2
    assert census_mod.displaced_from(entries, "positional", [beside.branch]) is None  # by its label: no merge


def test_a_point_of_another_label_merged_into_a_listed_one_is_said() -> None:
    """census --alpha 0.72 --omega 0.3 folded a semantic point (theta 0.024, two starts) into the agnostic one within
    the error bars and said so nowhere at rank 1 (the JSON's merged was rank r >= 2's only)."""
    from attnphase.numerics.commands.census import merged_note

    points = [{"branch": "positional", "merged": []},
              {"branch": "agnostic", "merged": [{"branch": "semantic", "e_t": 0.0017852963, "starts": ["a", "b"],
                                                 "reason": "within the error bars"},
                                                {"branch": "agnostic", "e_t": 0.00178, "starts": ["c"],
                                                 "reason": "within the error bars"}]}]
    note = merged_note(points)
    assert ("a semantic point (e_t 0.0017852963, 2 starts) into the agnostic one (within the error bars)" in note
            and note.count("point (") == 1)
    assert merged_note(points[:1]) == ""


@pytest.mark.parametrize("alpha, n_rules, needle", [(0.0, 2, "alpha must be"), ("1", 2, "got '1'"),
                                                    (1.0, -1, "n_rules must be"), (1.0, 1.5, "n_rules must be")])
def test_census_refuses_bad_input_before_any_search(monkeypatch, alpha, n_rules, needle) -> None:
    """census(params, 0.0) ran its 21 search tasks and then raised TaskFailed with a worker's traceback; n_rules=-1
    was taken."""
    import attnphase.numerics.phase.census as census_mod

    monkeypatch.setattr(census_mod, "search", lambda *a, **k: pytest.fail("the search ran"))
    with pytest.raises(ValueError, match=needle):
        census_mod.census(ModelParams(), alpha, config=SolverConfig(quadrature="sobol8:4"), n_rules=n_rules)


def test_a_point_a_finer_rule_undoes_is_merged_into_the_agnostic_point(monkeypatch) -> None:
    """``census --alpha 2 --omega 0 --precision fast`` listed a positional point (m = 0.043) that ``solve`` at the same
    settings refuses (exit 3: the agnostic point beside it is stable in m, and on sobol10:4 the solve from it reaches
    the agnostic point).  The census asks the same question: such a point is merged into the agnostic one."""
    from types import SimpleNamespace

    from attnphase.numerics.phase import absence, census

    def entry(branch: str, r: int = 1) -> census.CensusEntry:
        point = SimpleNamespace(branch=branch, params=SimpleNamespace(r=r, r_star=1), observables=SimpleNamespace(
            e_t=1.5e-3))
        return census.CensusEntry(point, (), True, {"err_e_t": 1e-5}, (branch,))

    asked = []
    monkeypatch.setattr(census, "model_rule", lambda params, cfg: None)
    monkeypatch.setattr(absence, "finer_rule_note", lambda fp, branch, rule, cfg: (
        asked.append(branch) or branch == "positional", "absent: ..."))
    got = census._finer_rule_merged([entry("semantic"), entry("agnostic"), entry("positional")], SolverConfig())
    assert [e.point.branch for e in got] == ["semantic", "agnostic"] and asked == ["semantic", "positional"]
    assert got[1].merged == (census.MergedPoint("positional", 1.5e-3, ("positional",), census.FINER_RULE),)
    # no agnostic point listed to merge into, or rank 2 (the labels' own rules): kept
    assert len(census._finer_rule_merged([entry("positional")], SolverConfig())) == 1
    assert len(census._finer_rule_merged([entry("agnostic", 2), entry("positional", 2)], SolverConfig())) == 2


@pytest.mark.heavy  # about 12 s: a fast-tier census whose positional point does not converge again when polished
def test_a_start_whose_point_the_polish_dropped_says_so(tmp_path) -> None:
    """census --alpha 1.2 --omega 0.3 --precision fast: the positional cold start's point did not converge again on
    the solve rule (dropped, counted in polish_failures); its row in census_starts.csv said converged with an empty
    fixed_point and message."""
    from attnphase.cli import main

    assert main(["census", "--alpha", "1.2", "--omega", "0.3", "--precision", "fast", "--out", str(tmp_path),
                 "--quiet"]) == 0
    starts = list(csv.DictReader((tmp_path / "census_starts.csv").open()))
    dropped = [s for s in starts if s["converged"] == "1" and not s["fixed_point"]]
    assert dropped and all(s["message"].endswith(": dropped") and "did not converge again on the solve rule"
                           in s["message"] for s in dropped)
