"""The matrix state evolution: global proximal map, rule, gauge, labels, the matrix form at r = 1, one solve."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.overlaps import Overlaps, branch_label
from attnphase.numerics.se.gauge import canonical, direction_labels, invariants, rotate
from attnphase.numerics.prox.global_prox import global_prox, newton_minimize
from attnphase.numerics.prox.objective import prox_value
from attnphase.numerics.quadrature.rules import matrix_rule, split_nodes
from attnphase.numerics.se.channel import channel_moments
from attnphase.numerics.se.gauge import align_gauge
from attnphase.numerics.se.starts import with_ranks
from attnphase.numerics.se.state_evolution import solve
from attnphase.numerics.se.updates import update, update_hat
from attnphase.theory.params import ModelParams
from attnphase.theory.kernels import get_kernels
from attnphase.theory.softmax import target


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_global_prox_never_loses_to_newton_from_random_probes_L3_r2(backend: str) -> None:
    L, r, rs, N, probes = 3, 2, 1, 300, 24
    rng = np.random.default_rng(7)
    k = get_kernels(L, r)
    s2 = np.array([0.25, 0.3, 0.2])
    V0 = np.array([[6.0, 1.5], [1.5, 3.0]])  # large V: a wide, non-convex proximal problem
    w = rng.normal(size=(N, L, r)) * 0.8
    hs = rng.normal(size=(N, L, rs)) * 0.8
    T = target(hs, 0.3, np.full((L, L), 1.0 / L))
    best, _ = global_prox(k, w, V0, T, s2, hs, backend=backend)
    assert best.converged.all()
    Vinv = np.linalg.inv(V0)[None] / s2[:, None, None]
    h0 = w[None] + rng.normal(size=(probes, N, L, r)) * 2.0 * np.sqrt(np.linalg.eigvalsh(V0).max() * s2.max())
    res = newton_minimize(k, h0.reshape(-1, L, r), np.tile(w, (probes, 1, 1)), Vinv, np.tile(T, (probes, 1, 1)), s2,
                          backend=backend)
    probe_min = np.where(res.converged, res.value, np.inf).reshape(probes, N).min(axis=0)
    assert np.all(best.value <= probe_min + 1e-10 * (1.0 + np.abs(probe_min)))
    # the values are the objective at the minimisers, and the raw probes never beat them either
    np.testing.assert_allclose(best.value, prox_value(k, best.h, w, Vinv, T, s2), rtol=1e-12)
    raw = prox_value(k, h0.reshape(-1, L, r), np.tile(w, (probes, 1, 1)), Vinv, np.tile(T, (probes, 1, 1)), s2)
    assert np.all(best.value <= raw.reshape(probes, N).min(axis=0))


def test_matrix_rule_layout_and_moments() -> None:
    rule = matrix_rule(3, 2, 1, "sobol12:2:4")
    xi, eta = split_nodes(rule, 3, 2, 1)
    assert xi.shape == (8192, 3, 2) and eta.shape == (8192, 3, 1)
    assert rule.weights.sum() == pytest.approx(1.0)
    z = np.concatenate([xi.reshape(8192, -1), eta.reshape(8192, -1)], axis=1)
    assert np.abs(z.mean(axis=0)).max() < 0.01 and np.abs(np.cov(z.T) - np.eye(9)).max() < 0.05
    with pytest.raises(ValueError, match="Sobol"):
        matrix_rule(2, 2, 1, "gh8")


def _state(rng, L=2, r=2, rs=1):
    a = rng.normal(size=(r, r))
    return Overlaps(a @ a.T + 0.2 * np.eye(r), np.diag(rng.uniform(1, 3, r)), rng.normal(size=(L, r)) * 0.2,
                        rng.normal(size=(r, rs)) * 0.1)


def test_canonical_gauge_and_invariants_do_not_depend_on_the_orbit_point() -> None:
    rng = np.random.default_rng(2)
    ov = _state(rng, r=2, rs=2)
    O, _ = np.linalg.qr(rng.normal(size=(2, 2)))
    Os, _ = np.linalg.qr(rng.normal(size=(2, 2)))
    moved = rotate(ov, O, Os)
    a, b = canonical(ov), canonical(moved)
    for x, y in zip(a.to_vector(), b.to_vector()):
        assert x == pytest.approx(y, abs=1e-12)
    assert abs(a.q0[0, 1]) < 1e-12 and a.q0[0, 0] >= a.q0[1, 1]
    for key, vals in invariants(ov).items():
        np.testing.assert_allclose(vals, invariants(moved)[key], atol=1e-12)
    # align_gauge undoes a small rotation exactly
    c, s = np.cos(0.05), np.sin(0.05)
    back, angle = align_gauge(rotate(ov, np.array([[c, -s], [s, c]])), ov)
    assert angle == pytest.approx(0.05, rel=1e-6)
    np.testing.assert_allclose(back.to_vector(), ov.to_vector(), atol=1e-10)


def test_branch_labels_include_mixed() -> None:
    z = np.zeros((2, 2))
    q, V = np.diag([2.0, 1.0]), np.eye(2)
    m = np.array([[0.001, 0.3], [-0.001, -0.3]])  # crosstalk below DIRECTION_SHARE does not count
    th = np.array([[0.5], [0.0]])
    assert branch_label(Overlaps(q, V, m, th)) == "mixed"
    assert direction_labels(Overlaps(q, V, m, th)) == ["semantic", "positional"]
    assert branch_label(Overlaps(q, V, m, 0 * th)) == "positional"
    assert branch_label(Overlaps(q, V, z, th)) == "semantic"
    assert branch_label(Overlaps(q, V, z, 0 * th)) == "agnostic"


def test_matrix_form_at_r1_is_the_scalar_form_on_the_same_nodes() -> None:
    # the matrix form's moments and projection against the scalar form's, through the one update
    from attnphase.numerics.quadrature.rules import make_rule
    from attnphase.numerics.se.se_map import hat_step
    from attnphase.numerics.quadrature.symmetry import SymmetryElement

    params = ModelParams(omega=0.3)
    rule = make_rule(2, "sobol10")
    ov1 = Overlaps(q0=0.45, V0=40.0, m=np.array([0.1, -0.1]), th0=0.5)
    hat1, mom1 = hat_step(params, 2.0, ov1, rule, SolverConfig(backend="numpy"), group=[SymmetryElement((0, 1), 1, 1)])
    new1 = update(params, hat1)
    ovr = Overlaps([[0.45]], [[40.0]], [[0.1], [-0.1]], [[0.5]])
    mom = channel_moments(get_kernels(2, 1), params, ovr, rule)
    newr = update(params, update_hat(params, 2.0, ovr, mom, "mixed"))
    assert mom.E_M == pytest.approx(mom1.E_M, rel=1e-10)
    assert float(newr.q0[0, 0]) == pytest.approx(new1.q0, rel=1e-8)
    assert float(newr.V0[0, 0]) == pytest.approx(new1.V0, rel=1e-8)
    assert float(newr.th0[0, 0]) == pytest.approx(new1.th0, rel=1e-8)
    np.testing.assert_allclose(newr.m[:, 0], new1.m, rtol=1e-8)


def test_a_rank2_semantic_fixed_point_converges_with_its_invariants() -> None:
    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    fp = solve(params, 2.0, "semantic", config=SolverConfig(quadrature="sobol10"), start="cold")
    assert fp.status.converged and fp.status.residual <= 1e-10, fp.status.message
    rec = fp.record
    assert rec["branch"] == "semantic" and len(rec["q0_eigenvalues"]) == 2 and len(rec["th0_singular_values"]) == 1
    assert rec["m_norms"] == [0.0, 0.0]
    # e_t = -Phi against lambda Tr(q0) / 2 + alpha E[loss(h_hat)]: equal up to the rule's gauge breaking
    assert abs(fp.observables.e_t - fp.extra["e_t_direct"]) <= 5 * fp.extra["gauge_angle"] * abs(fp.observables.e_t)
    assert rec["eps_g"] > 0 and rec["prox_failures"] == 0


def test_rank2_error_bars_are_the_standard_error_of_the_blocks() -> None:
    """The rank-r solve's default error bars: std_j / sqrt(R) of the invariants over the solve rule's blocks
    (warm re-solves), a block that does not converge left out and counted."""
    from attnphase.numerics.errors.replicates import block_config
    from attnphase.numerics.errors.replicates import replicate_errors, replicate_points

    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    cfg = SolverConfig(quadrature="sobol8:3")
    fp = solve(params, 2.0, "semantic", config=cfg, start="cold")
    assert fp.status.converged, fp.status.message
    out = replicate_errors(fp, *replicate_points(fp, cfg, 0))
    blocks = [solve(params, 2.0, "semantic", config=block_config(cfg, j), init=fp.overlaps) for j in range(3)]
    used = [b.record for b in blocks if b.status.converged and b.branch == fp.branch]
    assert out["replicates"] == len(used) and out["replicates_tried"] == 3
    if len(used) >= 2:
        assert out["err_eps_g"] == pytest.approx(np.std([r["eps_g"] for r in used], ddof=1) / np.sqrt(len(used)))
        assert out["err_eps_g"] > 0 and len(out["err_q0_eigenvalues"]) == 2


def test_cli_solve_rank2_prints_the_invariants_and_refuses_bad_input(capsys) -> None:
    import json

    from attnphase.cli import main

    code = main(["solve", "--alpha", "2", "--rank", "2", "--quadrature", "sobol9", "--json"])
    rec = json.loads(capsys.readouterr().out)
    assert code == 0 and rec["converged"] and rec["rank"] == 2 and rec["teacher_rank"] == 1
    for key in ("alpha", "omega", "lam", "branch", "requested_branch", "eps_g", "e_t", "iterations", "residual"):
        assert key in rec
    assert len(rec["q0_eigenvalues"]) == 2 and len(rec["th0_singular_values"]) == 1 and len(rec["m_norms"]) == 2
    for argv, words in ((["--rank", "0"], "--rank must be an integer >= 1"),
                        (["--branch", "mixed"], "--branch mixed needs --rank >= 2"),
                        (["--rank", "2", "--quadrature", "gh6"], "scrambled Sobol"),
                        (["--rank", "2", "--prox", "local"], "not the local one")):
        assert main(["solve", "--alpha", "2", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("attnphase: error:") and words in err and err.count("\n") == 1


def test_cli_sweep_rank2_writes_one_row_per_alpha_with_the_invariants(tmp_path, capsys) -> None:
    """``sweep --rank 2`` runs the rank-1 sweep's path: one task per omega, each omega's table in the sweep's one
    schema (the invariants in place of q, m, V, theta, eps_lin the teacher's) and all of them in one dataset."""
    import csv
    import json

    from attnphase.cli import main
    from attnphase.execution.dataset import cf_problems, open_dataset
    from attnphase.numerics.jobs.variables import sweep_columns
    from attnphase.numerics.phase.lowest_branch import teacher_eps_lin

    out = tmp_path / "res"
    code = main(["sweep", "--alpha", "2", "--omega", "0.3,0.35", "--rank", "2", "--quadrature", "sobol9", "--out",
                 str(out), "--json", "--quiet", "--workers", "1"])
    rec = json.loads(capsys.readouterr().out)
    assert code == 0 and rec["omegas"] == [0.3, 0.35] and rec["tasks"]["computed"] == 2
    assert [(s["rank"], s["teacher_rank"], s["on_branch"]) for s in rec["sweeps"]] == [(2, 1, 1)] * 2
    for w in (0.3, 0.35):
        with (out / f"sweep_semantic_omega{w:g}_rank2x1.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        assert tuple(rows[0]) == sweep_columns(2, 1, 2)
        assert len(rows) == 1 and rows[0]["branch"] == "semantic" and rows[0]["converged"] == "1"
        for col in ("e_t", "eps_g", "q0_eig_1", "q0_eig_2", "V0_eig_2", "th0_sv_1", "m_norm_2", "gauge_angle"):
            assert rows[0][col] not in ("", "nan")
        lin = teacher_eps_lin(with_ranks(ModelParams(omega=w), 2, 1), SolverConfig(quadrature="sobol9"))
        assert float(rows[0]["eps_lin"]) == pytest.approx(lin, rel=1e-12)
    ds = open_dataset(out / "sweep_semantic_rank2x1.nc")  # every column a CF variable over (omega, alpha)
    assert cf_problems(ds) == [] and set(sweep_columns(2, 1, 2)) - {"alpha", "omega"} <= set(ds.data_vars)
    assert ds["q0_eig_2"].dims == ("omega", "alpha") and ds.sizes["omega"] == 2
    assert list(ds["status"].values) == ["done", "done"]
    assert main(["sweep", "--alpha", "2", "--branch", "mixed", "--out", str(out)]) == 2
    assert "--branch mixed needs --rank >= 2" in capsys.readouterr().err


def test_the_sweep_has_one_schema_at_every_rank() -> None:
    """The sweep's columns at r >= 2: the rank-1 table's with the overlaps q, m, V, theta (and their bars) replaced by
    the gauge invariants (and theirs), plus the gauge angle; every column a variable of the table."""
    from attnphase.numerics.commands.point_record import RECORD_KEYS, RESULT_KEYS
    from attnphase.numerics.jobs.variables import SWEEP_COLUMNS, invariant_columns, lookup, sweep_columns

    assert SWEEP_COLUMNS == sweep_columns(1, 1, 3) == RECORD_KEYS + tuple(f"err_{k}" for k in RESULT_KEYS) + ("reason",)
    overlaps = {"q", "m", "V", "theta"} | {f"err_{k}" for k in ("q", "m", "V", "theta")}
    for r, r_star, L in ((2, 1, 2), (2, 2, 3), (1, 2, 2)):
        cols = sweep_columns(r, r_star, L)
        inv = invariant_columns(r, r_star, L)
        assert len(inv) == 2 * r + min(r, r_star) + L and len(set(cols)) == len(cols)
        assert [c for c in cols if c in SWEEP_COLUMNS] == [c for c in SWEEP_COLUMNS if c not in overlaps]
        assert set(cols) - set(SWEEP_COLUMNS) == set(inv) | {f"err_{c}" for c in inv} | {"gauge_angle"}
        assert all(lookup(c) is not None for c in cols), [c for c in cols if lookup(c) is None]


def test_a_start_that_misses_the_semantic_branch_is_retried_from_above(monkeypatch) -> None:
    # r = 1, r* = 2, alpha = 2 on the default rule: the embedded start stalled (residual 6.7e-4) where the sweep
    # follows the semantic branch; as at r = r* = 1, the start is retried at 1.25 alpha and followed down.  Here the
    # miss is made on a small rule (its own solve converges) by failing the first solve at alpha = 2
    from dataclasses import replace

    from attnphase.numerics.se import state_evolution as se

    cfg = SolverConfig(quadrature="sobol8:4")
    real, calls = se.solve_matrix, []

    def missing_at_2(params, alpha, *args, **kw):
        fp = real(params, alpha, *args, **kw)
        calls.append(alpha)
        return replace(fp, status=replace(fp.status, converged=False)) if len(calls) == 1 else fp
    monkeypatch.setattr(se, "solve_matrix", missing_at_2)
    fp = solve(ModelParams(r_star=2), 2.0, "semantic", config=cfg)
    assert fp.status.converged and fp.branch == "semantic" and fp.alpha == 2.0
    assert fp.status.message.startswith("converged by continuation from alpha = 2.5")
    assert calls[:2] == [2.0, 2.5] and calls[-1] == 2.0 and all(2.0 <= a <= 2.5 for a in calls)


@pytest.mark.heavy
def test_the_rank_2_teachers_semantic_point_at_alpha_2_is_found_cold() -> None:
    fp = solve(ModelParams(r_star=2), 2.0, "semantic", config=SolverConfig())
    assert fp.status.converged and fp.branch == "semantic"
    assert abs(fp.record["th0_singular_values"][0] - 0.5055) < 0.02  # the sweep's point, continued from alpha = 3


@pytest.mark.heavy
def test_a_mixed_solve_whose_embedded_start_stalls_is_retried_from_the_census_mixtures() -> None:
    # r = r* = 2, alpha = 1.5, omega = 0.3 on sobol8:4: whether the embedded mixed start stalls there moves with the
    # compiled loops' round-off (residual 3e-3 on one CPU, converged on another), so its result is handed to the
    # retry as a stall; the census's fixed mixtures reach a mixed point.  Which one moves with the CPU too: the rank-2
    # mixed branches are near-degenerate on this coarse rule (|th0| 0.5 on one CPU; 0.036, |m_l| 0.28 on another)
    from attnphase.numerics.se.state_evolution import mixed_from_mixtures

    params, cfg = ModelParams(omega=0.3, r=2, r_star=2), SolverConfig(quadrature="sobol8:4")
    missed = solve(params, 1.5, "mixed", config=cfg).with_status(converged=False, message="stalled")
    fp = mixed_from_mixtures(missed, cfg)
    assert fp.status.converged and fp.branch == "mixed"
    assert fp.status.message.startswith("converged from the mixture start ")
    assert fp.status.iterations > missed.status.iterations  # every try counted
    sv = fp.record["th0_singular_values"]
    assert sv[0] > 1e-2 and max(fp.record["m_norms"]) > 0.1  # both overlaps, 1e4 x the label's floor: a mixed point


@pytest.mark.heavy
def test_the_rank_2_teachers_mixed_point_at_alpha_1_5_is_found_on_the_default_rule() -> None:
    # solve --rank 2 --teacher-rank 2 --alpha 1.5 --branch mixed: the embedded start, the plain solve and the five
    # mixtures stall beside the rule's jumps (residuals 2.6e-4 to 3.0e-4) once the Jacobian's columns keep each node
    # in its basin; the census lists a stable mixed point there (e_t 0.004376 +- 0.000013)
    from attnphase.numerics.se.state_evolution import mixed_from_mixtures

    params, cfg = ModelParams(r=2, r_star=2), SolverConfig()
    fp = solve(params, 1.5, "mixed", config=cfg)
    fp = fp if fp.status.converged and fp.branch == "mixed" else mixed_from_mixtures(fp, cfg)
    assert fp.status.converged and fp.branch == "mixed"
    assert abs(fp.observables.e_t - 0.004376) < 3e-5


def test_the_mixture_retry_takes_the_first_mixture_that_reaches_the_mixed_branch(monkeypatch) -> None:
    # the retry's logic on stand-in solves: the first two mixtures fail, the third converges; its message names it,
    # and a miss everywhere returns the embedded start's result with every evaluation counted
    from dataclasses import replace

    from attnphase.numerics.se import state_evolution as se

    params, cfg = ModelParams(omega=0.3, r=2), SolverConfig(quadrature="sobol6:2", max_iter=2)
    base = solve(params, 1.5, "mixed", config=cfg)
    start = Overlaps(np.diag([0.3, 0.2]), np.diag([50.0, 60.0]), np.full((2, 2), 0.1), np.array([[0.4], [0.0]]))
    monkeypatch.setattr(se, "embedded_start", lambda *a: start)
    failed = replace(base, status=replace(base.status, converged=False, iterations=7, message="stalled"))
    tries: list = []

    def fake(params, alpha, branch, **kw):
        tries.append(kw["init"])
        ok = len(tries) == 3
        return replace(base, status=replace(base.status, converged=ok, iterations=10, message="x"))
    monkeypatch.setattr(se, "solve", fake)
    fp = se.mixed_from_mixtures(failed, cfg)
    assert len(tries) == 3 and fp.status.converged and fp.status.iterations == 37
    w_th, w_m, tilt = se.FIXED_MIXTURES[2]
    assert fp.status.message.startswith(f"converged from the mixture start th0 x{w_th:g}, m x{w_m:g}, tilt 0 deg")
    assert fp.status.message.endswith("from the embedded start: stalled")
    assert np.allclose(tries[1].th0, 0.5 * np.asarray(tries[0].th0) / 0.25)  # the mixtures in their order
    tries.clear()
    def miss(params, alpha, branch, **kw):
        tries.append(kw["init"])
        return replace(failed, status=replace(failed.status, iterations=10))
    monkeypatch.setattr(se, "solve", miss)
    last: list = []

    def basins(params, alpha, branch, cfg, ov0, ok=False):
        last.append(ov0)
        return replace(base, status=replace(base.status, converged=ok, iterations=4, message="x"))
    monkeypatch.setattr(se, "solve_with_basin_changes", basins)
    none = se.mixed_from_mixtures(failed, cfg)
    assert not none.status.converged and none.status.iterations == 7 + 10 * len(tries) + 4 and len(tries) == 5
    assert none.status.message.startswith("stalled; none of the census's mixture starts")
    assert none.status.message.endswith("nor the embedded start with the Jacobian's columns polished from w too")
    # where every mixture misses, the embedded start once more with nodes free to change basin between the
    # Jacobian's base and columns (r = r* = 2, alpha = 1.5 converged so before the columns were frozen, and after
    # only so): its point, every evaluation counted
    assert last == [start]
    monkeypatch.setattr(se, "solve_with_basin_changes", lambda *a: basins(*a, ok=True))
    found = se.mixed_from_mixtures(failed, cfg)
    assert found.status.converged and found.status.iterations == 7 + 10 * 5 + 4
    assert found.status.message.startswith("converged from the embedded start with the Jacobian's columns polished")


def test_a_semap_without_frozen_columns_polishes_its_columns_from_w_too(monkeypatch) -> None:
    """Within polishing() a matrix SEMap hands frozen=True to the channel (each node polished from its minimum alone),
    unless made with frozen_columns=False, the retry of solve_with_basin_changes."""
    from attnphase.numerics.se import se_map
    from attnphase.numerics.se.se_map import FixedAlpha, SEMap, model_rule

    params, cfg = ModelParams(omega=0.3, r=2), SolverConfig(quadrature="sobol6:2")
    x = Overlaps(np.diag([0.3, 0.2]), np.diag([50.0, 60.0]), np.full((2, 2), 0.1), np.array([[0.4], [0.0]]))
    seen: list = []
    real = se_map.channel_moments

    def spy(*a, **k):
        seen.append(k["frozen"])
        return real(*a, **k)
    monkeypatch.setattr(se_map, "channel_moments", spy)
    for frozen_columns in (True, False):
        smap = SEMap(params, FixedAlpha(1.5), model_rule(params, cfg), cfg, branch="mixed",
                     frozen_columns=frozen_columns)
        smap.evaluate(x.to_vector(), exact=True)
        with smap.polishing():
            smap.evaluate(x.to_vector())
    assert seen == [False, True, False, False]


def test_a_mixed_sweep_tries_the_mixture_starts_at_its_first_point_only(monkeypatch) -> None:
    # the sweep's cold start of the mixed branch that misses it goes on to the census's mixtures (as solve does), at
    # its first grid point: a later point that fails is a failure of the continuation, not retried from them
    from dataclasses import replace

    from attnphase.numerics.phase import continuation

    params, cfg = ModelParams(omega=0.3, r=2), SolverConfig(quadrature="sobol6:2")
    mixed = solve(params, 2.0, "mixed", config=cfg)  # a mixed point on this small rule
    assert mixed.status.converged and mixed.branch == "mixed"
    missed = replace(mixed, status=replace(mixed.status, converged=False))
    retried: list[float] = []

    def fake_solve(params, alpha, branch, **kw):  # every solve misses
        return replace(missed, alpha=alpha)

    def fake_mixtures(fp, config):
        retried.append(fp.alpha)
        return replace(mixed, alpha=fp.alpha) if fp.alpha == 1.5 else fp
    monkeypatch.setattr(continuation, "solve", fake_solve)
    monkeypatch.setattr(continuation, "mixed_from_mixtures", fake_mixtures)
    sw = continuation.sweep(params, [1.5, 1.75], "mixed", config=cfg)
    assert retried == [1.5] and sw.points[0].status.converged and sw.points[0].alpha == 1.5
    retried.clear()
    monkeypatch.setattr(continuation, "mixed_from_mixtures", lambda fp, config: (retried.append(fp.alpha), fp)[1])
    continuation.sweep(params, [1.5, 1.75], "mixed", config=cfg)
    assert retried == [1.5]  # the first point failed: the second is not retried from the mixtures
