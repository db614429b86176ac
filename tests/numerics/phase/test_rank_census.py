"""The rank-r census (numerics/phase/rank_census.py, ``attnphase census --rank R --teacher-rank R*``): every fixed point
found from several starts, deduplicated by its invariants, ranked by e_t, each one's height above the minimum
with the per-block error of the difference.

One census runs once (module fixture) at L = 2, r = 2, r* = 1, omega = 0.3, alpha = 2 on sobol10:4 from four of its
starts (the three embedded ones and the semantic cold one, which reaches the embedded semantic point again);
about 40 s of CPU (marked slow).  The command's output is tested on that result (the search monkeypatched to return it).
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from attnphase.cli import main
from attnphase.numerics.phase import rank_census as rc
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.se_map import admissible
from attnphase.numerics.se.starts import with_ranks
from attnphase.theory.params import ModelParams

CFG = SolverConfig(quadrature="sobol10:4")  # the solver default (on sobol9:4 the compiled search's mixed solve stalls at 3e-3)
ALPHA = 2.0


@pytest.fixture(scope="module")
def params() -> ModelParams:
    return with_ranks(ModelParams(omega=0.3), 2, 1)


@pytest.fixture(scope="module")
def found(params) -> tuple[rc.RankCensus, list]:
    """(the census from four starts, every (start, solve) it made)."""
    starts = [rc.RankStart(f"{b} embedded", b, "embedded") for b in ("semantic", "positional", "mixed")]
    starts.append(rc.RankStart("semantic cold", "semantic", "cold"))
    seen: list = []
    res = rc.rank_census(params, ALPHA, config=CFG, starts=starts, perturb=False, progress=lambda s, fp: seen.append((s, fp)))
    return res, seen


@pytest.mark.slow
def test_rank_census_finds_the_three_branches_and_ranks_them_by_e_t(found) -> None:
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
def test_rank_census_merges_starts_that_reach_one_point(found) -> None:
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
    delta, err, n = rc.paired_difference(a, b)
    pairs = [(pa.observables.e_t, pb.observables.e_t) for pa, pb in zip(a.replicates, b.replicates) if pa is not None and pb is not None]
    assert n == len(pairs) and delta == b.e_t - a.e_t > 0
    if n >= 2:
        d = np.array([y - x for x, y in pairs])
        assert err == pytest.approx(d.std(ddof=1) / math.sqrt(n), rel=1e-12)
        sep = res.above_minimum(b)
        assert sep["separation_paired"] == pytest.approx(delta / err, rel=1e-12)
        assert sep["separation_combined"] == pytest.approx(delta / math.hypot(a.err("e_t"), b.err("e_t")), rel=1e-12)
    # synthetic replicates: a shared offset per block cancels in the difference
    offs = [0.0, 1e-5, -2e-5, 3e-5]
    reps = lambda fp, shift: tuple(dataclasses.replace(fp, observables=dataclasses.replace(
        fp.observables, e_t=fp.observables.e_t + o + shift * (j % 2))) for j, o in enumerate(offs))
    A = dataclasses.replace(a, replicates=reps(a.point, 0.0), blocks=True)
    B = dataclasses.replace(b, replicates=reps(b.point, 1e-7), blocks=True)
    _, err2, n2 = rc.paired_difference(A, B)
    assert n2 == 4 and err2 == pytest.approx(np.std([0, 1e-7, 0, 1e-7], ddof=1) / 2, rel=1e-9)
    C = dataclasses.replace(B, replicates=(None,) + B.replicates[1:])
    assert rc.paired_difference(A, C)[2] == 3


def test_starts_are_admissible_and_reproducible(params) -> None:
    cfg = CFG
    one = rc.rank_census_starts(params, ALPHA, cfg, seed=3)
    again = rc.rank_census_starts(params, ALPHA, cfg, seed=3)
    kinds = [s.kind for s in one]
    assert kinds.count("embedded") == 3 and kinds.count("cold") == 4
    assert kinds.count("init") == len(rc.FIXED_MIXTURES) + rc.RANDOM_MIXTURES
    inits = [s.overlaps for s in one if s.kind == "init"]
    assert all(admissible(ov, params.rho0) for ov in inits)
    assert all(np.array_equal(x.overlaps.to_vector(), y.overlaps.to_vector())
               for x, y in zip(one, again) if x.kind == "init")
    # a tilted mixture puts positional overlap on the semantic axis (a direction carrying both)
    tilted = rc.mixture(inits[0], 1.0, 1.0, math.pi / 3)
    assert np.abs(tilted.m[:, 0]).max() > 0 and np.abs(tilted.th0[0]).max() > 0


@pytest.mark.slow
def test_perturbed_starts_put_a_small_other_overlap_on_a_branch_point(found, params) -> None:
    from attnphase.numerics.se.overlaps import branch_label
    from attnphase.numerics.se.gauge import canonical

    res, _ = found
    points = [e.point for e in res.entries if e.point.branch in ("semantic", "positional")]
    starts = rc.perturbed_starts(params, points + [e.point for e in res.entries if e.point.branch == "mixed"])
    assert len(starts) == 2 * len(rc.PERTURBATIONS) and all(s.branch == "mixed" and s.kind == "init" for s in starts)
    assert len({s.name for s in starts}) == len(starts)
    for s in starts:
        assert branch_label(s.overlaps) == "mixed" and admissible(s.overlaps, params.rho0)
        base = canonical(next(p for p in points if s.name.startswith(p.branch)).overlaps)
        assert np.array_equal(s.overlaps.q0, base.q0) and np.array_equal(s.overlaps.V0, base.V0)
        changed = "th0" if s.name.startswith("positional") else "m"
        kept = "m" if changed == "th0" else "th0"
        assert np.array_equal(getattr(s.overlaps, kept), getattr(base, kept))
        assert np.abs(getattr(s.overlaps, changed)).max() <= max(rc.PERTURBATIONS) * 1.0 + 1e-12


@pytest.mark.slow
def test_census_rank_command_json_and_out(found, monkeypatch, tmp_path, capsys) -> None:
    res, _ = found
    failed = dataclasses.replace(res, failures=(("mixed cold", 0.2, "did not converge"),),
                                 starts=res.starts + (rc.RankStart("mixed cold", "mixed", "cold"),))
    monkeypatch.setattr(rc, "rank_census", lambda *a, **k: failed)
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
    starts = (tmp_path / "c" / "census_starts.csv").read_text().splitlines()
    assert len(starts) == 1 + len(failed.starts) and starts[-1].startswith("mixed cold,mixed,cold,False,,0.2")
