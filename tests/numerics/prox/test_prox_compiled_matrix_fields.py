"""The compiled (numba) proximal descent on matrix fields h in R^{L x r} against the numpy one (numerics/prox/global_prox.py).

Same algorithm on the same generated expressions: minimisers, values and converged flags agree to
rounding (the exponentials of numba and numpy, and the line search's generated loss against its numpy
twin, may differ in the last bit), and a whole fixed point is the same on both backends. JIT: about
5-8 s per (L, r) on first use, then loaded from the kernel cache.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.prox import compiled as prox_compiled
from attnphase.numerics.config import BACKEND_ENV, SolverConfig
from attnphase.numerics.prox.backends import resolve_backend
from attnphase.numerics.prox.global_prox import global_prox, newton_minimize
from attnphase.numerics.prox.objective import prox_value
from attnphase.numerics.prox.selection import Candidates
from attnphase.numerics.quadrature.rules import matrix_rule
from attnphase.numerics.se.channel import channel_moments
from attnphase.numerics.se.starts import initial_overlaps, with_ranks
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams
from attnphase.theory.kernels import get_kernels
from attnphase.theory.softmax import target

pytestmark = pytest.mark.skipif(not prox_compiled.available(), reason="numba cannot be imported")

#: (L, r, r*, V0 scale): V0 small (convex, one minimum) to large (wide, non-convex problems).
CASES = [(2, 2, 1, 0.5), (2, 2, 1, 8.0), (2, 2, 2, 0.5), (2, 2, 2, 8.0), (3, 2, 1, 1.0), (3, 2, 1, 6.0)]


def _batch(seed: int, L: int, r: int, rs: int, scale: float, N: int = 150):
    """Nodes as the channel makes them (w, T = T(h*)), a non-diagonal V0, and random far starts."""
    rng = np.random.default_rng(seed)
    s2 = rng.uniform(0.2, 0.6, L)
    B = rng.normal(size=(r, r))
    V0 = scale * (B @ B.T / r + 0.5 * np.eye(r))
    w = rng.normal(size=(N, L, r)) * rng.uniform(0.5, 1.5)
    hs = rng.normal(size=(N, L, rs))
    T = target(hs, rng.uniform(0.0, 0.7), np.full((L, L), 1.0 / L))
    far = w + rng.normal(size=(N, L, r)) * 2.0 * np.sqrt(np.linalg.eigvalsh(V0).max() * s2.max())
    return get_kernels(L, r), w, V0, T, s2, hs, far


@pytest.mark.parametrize(("L", "r", "rs", "scale"), CASES)
def test_compiled_descent_equals_numpy(L: int, r: int, rs: int, scale: float) -> None:
    k, w, V0, T, s2, hs, far = _batch(100 * L + 10 * rs + int(scale), L, r, rs, scale)
    Vinv = np.linalg.inv(V0)[None] / s2[:, None, None]
    h0 = np.concatenate([w, np.zeros_like(w), far])
    W, TT = np.tile(w, (3, 1, 1)), np.tile(T, (3, 1, 1))
    a = newton_minimize(k, h0, W, Vinv, TT, s2, backend="numpy")
    b = newton_minimize(k, h0, W, Vinv, TT, s2, backend="numba")
    assert a.converged.mean() > 0.95  # the comparison is about converged descents, not failures
    np.testing.assert_array_equal(b.converged, a.converged)
    np.testing.assert_allclose(b.h, a.h, rtol=0, atol=1e-9)
    np.testing.assert_allclose(b.value, a.value, rtol=0, atol=1e-9)
    # the values are the objective at the minimisers (the numpy transcription of P)
    np.testing.assert_allclose(b.value, prox_value(k, b.h, W, Vinv, TT, s2), rtol=1e-12, atol=1e-14)
    # the global search: same winners on both backends, and so in both modes of the SE map
    (ga, _), (gb, _) = (global_prox(k, w, V0, T, s2, hs, backend=b) for b in ("numpy", "numba"))
    np.testing.assert_array_equal(gb.converged, ga.converged)
    np.testing.assert_allclose(gb.h, ga.h, rtol=0, atol=1e-9)
    np.testing.assert_allclose(gb.value, ga.value, rtol=0, atol=1e-9)
    polish = Candidates(np.arange(w.shape[0]), far)
    (pa, _), (pb, _) = (global_prox(k, w, V0, T, s2, hs, candidates=polish, full_search=False, backend=b)
                        for b in ("numpy", "numba"))
    np.testing.assert_allclose(pb.h, pa.h, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(pb.converged, pa.converged)


def test_compiled_serial_and_parallel_loops_agree() -> None:
    from attnphase.numerics.prox.compiled import search_rows
    from attnphase.numerics.prox.objective import step_constants

    k, w, V0, T, s2, hs, far = _batch(5, 2, 2, 2, 4.0, N=300)  # > one block of rows
    Vinv = np.linalg.inv(V0)[None] / s2[:, None, None]
    delta, max_step = step_constants(Vinv)
    out = [search_rows(k, np.stack([far, w]), w, Vinv, T, s2, delta, max_step, np.array([1, 0]), 1e-2, xtol=1e-10,
                       max_iter=80, max_halvings=30, parallel=p) for p in (False, True)]
    for x, y in zip(*out):
        np.testing.assert_array_equal(x, y)


def test_matrix_field_backends_resolve_as_on_vector_fields(monkeypatch) -> None:
    k = get_kernels(2, 2)
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    assert resolve_backend("auto", k) == "numba" and resolve_backend("numpy", k) == "numpy"
    with pytest.raises(TypeError):
        resolve_backend("torch", k)  # no torch rank-r descent
    monkeypatch.setenv(BACKEND_ENV, "numpy")
    assert resolve_backend("auto", k) == "numpy"
    monkeypatch.setenv(BACKEND_ENV, "torch")
    assert resolve_backend("auto", k) == "numba"  # as for correlated tokens: the override cannot run here
    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    rule, ov = matrix_rule(2, 2, 1, "sobol6"), initial_overlaps(params, "semantic")
    on_torch, on_auto = (channel_moments(k, params, ov, rule, SolverConfig(backend=b)) for b in ("torch", "auto"))
    assert on_torch.E_M == on_auto.E_M and np.array_equal(on_torch.candidates, on_auto.candidates)


def test_cli_refuses_backend_torch_for_a_rank_solve(capsys) -> None:
    from attnphase.cli import main

    code = main(["solve", "--rank", "2", "--alpha", "2", "--backend", "torch", "--quadrature", "sobol6"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("attnphase: error: --backend torch")


def test_a_rank2_fixed_point_is_the_same_on_both_backends() -> None:
    """The same fixed point to 1e-8 on numpy and numba, in as many evaluations give or take one: the backends'
    round-off (their operations run in different orders) enters the consistent finite differences divided by their
    step, FD_STEP_CONSISTENT = 1e-5, and may move the last quasi-Newton step by one evaluation, no more."""
    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    fps = [solve(params, 2.0, "semantic", config=SolverConfig(quadrature="sobol9:2", backend=b)) for b in
           ("numpy", "numba")]
    assert all(fp.status.converged for fp in fps), [fp.status.message for fp in fps]
    a, b = (fp.overlaps.to_vector() for fp in fps)
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-8 * (1.0 + np.abs(a).max()))
    assert fps[1].observables.e_t == pytest.approx(fps[0].observables.e_t, rel=1e-8)
    assert abs(fps[1].status.iterations - fps[0].status.iterations) <= 1


def test_aligned_map_on_matrix_fields_is_the_lowest_minimum_on_the_reference_side() -> None:
    """--prox aligned at rank r: each node's pick is a local minimum (zero gradient by a finite difference of P,
    never below the global value), on the side <h, r> > 0 of the reference wherever Newton from 40 random probes finds
    a minimum there, and no probe's minimum on that side is lower; a zero reference gives the global map; the
    mirror image (-w, -r) gives -h."""
    from attnphase.numerics.prox.local_prox import aligned_prox

    k, w, V0, T, s2, hs, _ = _batch(7, 2, 2, 1, 8.0, N=60)
    rng = np.random.default_rng(3)
    ref = rng.normal(size=w.shape)
    got = aligned_prox(k, w, V0, T, s2, ref, hstar=hs)
    glob, _ = global_prox(k, w, V0, T, s2, hs)
    assert got.converged.all() and np.all(got.value >= glob.value - 1e-12)
    Vinv = np.linalg.inv(V0)[None] / s2[:, None, None]
    N, L, r = w.shape
    eps = 1e-6
    for j in range(L * r):  # a central difference of P along each coordinate vanishes at the pick
        step = np.zeros(L * r)
        step[j] = eps
        step = step.reshape(1, L, r)
        diff = prox_value(k, got.h + step, w, Vinv, T, s2) - prox_value(k, got.h - step, w, Vinv, T, s2)
        assert np.abs(diff / (2 * eps)).max() < 1e-5
    probes = np.concatenate([w + rng.normal(size=w.shape) * 3.0 for _ in range(40)])
    W, TT = np.tile(w, (40, 1, 1)), np.tile(T, (40, 1, 1))
    pr = newton_minimize(k, probes, W, Vinv, TT, s2)
    node = np.tile(np.arange(N), 40)
    side = np.einsum("nla,nla->n", pr.h, ref[node]) > 0
    got_side = np.einsum("nla,nla->n", got.h, ref) > 0
    found = np.zeros(N, dtype=bool)
    np.logical_or.at(found, node[pr.converged & side], True)
    assert found.sum() > N // 2 and np.all(got_side[found])  # the pick is on r's side wherever a probe finds one
    lowest = np.full(N, np.inf)
    np.minimum.at(lowest, node[pr.converged & side], pr.value[pr.converged & side])
    assert np.all(got.value[found] <= lowest[found] + 1e-9)
    assert np.abs(got.h - glob.h).max() > 1e-3  # not the global map on this batch
    np.testing.assert_allclose(aligned_prox(k, w, V0, T, s2, np.zeros_like(ref), hstar=hs).h, glob.h, atol=1e-12)
    mirror = aligned_prox(k, -w, V0, T, s2, -ref, hstar=-hs)
    np.testing.assert_allclose(mirror.h, -got.h, atol=1e-9)


def test_the_aligned_maps_polish_keeps_the_full_searchs_picks() -> None:
    """Between full searches the aligned map polishes the last full search's picks and their mirror images: at the
    same fields it returns those picks (not the global map's minima where they differ); on fields moved a little it
    is the full search's pick at most nodes, and every node's pick is a minimum on the reference's side that is no
    higher than the polished start's basin."""
    from attnphase.numerics.prox.local_prox import aligned_prox

    k, w, V0, T, s2, hs, _ = _batch(7, 2, 2, 1, 8.0, N=60)
    ref = np.random.default_rng(3).normal(size=w.shape)
    full = aligned_prox(k, w, V0, T, s2, ref, hstar=hs)
    glob, _ = global_prox(k, w, V0, T, s2, hs)
    same = aligned_prox(k, w, V0, T, s2, ref, hstar=hs, previous=full.h, full_search=False)
    np.testing.assert_allclose(same.h, full.h, atol=1e-9)
    assert np.abs(same.h - glob.h).max() > 1e-3
    moved = w * (1 + 1e-3)
    polished = aligned_prox(k, moved, V0, T, s2, ref, hstar=hs, previous=full.h, full_search=False)
    searched = aligned_prox(k, moved, V0, T, s2, ref, hstar=hs, previous=full.h)
    assert polished.converged.all()
    assert np.mean(np.abs(polished.h - searched.h).reshape(len(w), -1).max(axis=1) < 1e-6) > 0.9
    on_side = np.einsum("nla,nla->n", searched.h, ref) > 0
    assert np.all(np.einsum("nla,nla->n", polished.h, ref)[on_side] > 0)


def test_an_aligned_rank2_solve_reaches_one_point_however_often_it_polishes() -> None:
    """The aligned map's polish changes the path, not the fixed point (a candidate is verified by a full search): a
    rank-2 solve polishing up to 7 evaluations between full searches reaches the point of one polishing one."""
    p = ModelParams(omega=0.3, r=2)
    cfg = SolverConfig(quadrature="sobol8:4", error_bars=False, prox="aligned")
    fast = solve(p, 2.0, "semantic", config=cfg)
    every = solve(p, 2.0, "semantic", config=cfg.replace(full_search_every=1))
    assert fast.status.converged and every.status.converged and fast.branch == every.branch == "semantic"
    a, b = (np.concatenate([fp.invariants[key] for key in sorted(fp.invariants)]) for fp in (every, fast))
    np.testing.assert_allclose(b, a, rtol=1e-7, atol=1e-9)


@pytest.mark.heavy
def test_aligned_map_drives_a_rank2_solve_and_local_is_refused() -> None:
    """--prox aligned runs the rank-r state evolution (a converged mixed point at alpha = 2: where no node's lowest
    minimum lies on the wrong side of the mean field, the global map's point); --prox local is refused."""
    p = ModelParams(omega=0.3, r=2)
    cfg = SolverConfig(quadrature="sobol8:4", error_bars=False)
    fa = solve(p, 2.0, "mixed", config=cfg.replace(prox="aligned"))
    fg = solve(p, 2.0, "mixed", config=cfg)
    assert fa.status.converged and fa.branch == "mixed" and fa.prox == "aligned"
    ta, tg = fa.record["th0_singular_values"][0], fg.record["th0_singular_values"][0]
    assert abs(ta - tg) < 0.05 * tg and abs(fa.observables.eps_g - fg.observables.eps_g) < 0.03 * fg.observables.eps_g
    with pytest.raises(ValueError, match="not the local one"):
        solve(p, 2.0, "mixed", config=cfg.replace(prox="local"))


def test_the_teachers_start_is_the_polar_factor_of_h0_transpose_w_for_a_rank_one_teacher():
    """procrustes_teacher at r* = 1: h0 = (h*, 0) rotated onto w by the polar factor O = U V^T of h0^T w (by SVD),
    which for one non-zero row b = sum_l h*_l w_l is h* (b / |b|) in closed form; where b = 0 the SVD path is taken
    (its polar factor is not unique there)."""
    from attnphase.numerics.prox.starts import procrustes_teacher

    rng = np.random.default_rng(3)
    for r in (2, 3):
        w, hs = rng.standard_normal((500, 2, r)), rng.standard_normal((500, 2, 1))
        h0 = np.concatenate([hs, np.zeros((500, 2, r - 1))], axis=2)
        U, _, Vt = np.linalg.svd(np.einsum("nla,nlb->nab", h0, w))
        by_svd = np.einsum("nla,nab->nlb", h0, U @ Vt)
        assert np.allclose(procrustes_teacher(w, hs), by_svd, rtol=0, atol=1e-13)
    w[0] = 0.0  # b = 0 at one node: every node by the SVD
    h0 = np.concatenate([hs, np.zeros((500, 2, 2))], axis=2)
    U, _, Vt = np.linalg.svd(np.einsum("nla,nlb->nab", h0, w))
    assert np.array_equal(procrustes_teacher(w, hs), np.einsum("nla,nab->nlb", h0, U @ Vt))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_frozen_polish_keeps_every_node_in_its_candidates_basin(backend: str) -> None:
    """A frozen polish descends from the candidates alone (the columns of a consistent finite-difference Jacobian):
    where the start from w reaches a lower minimum, the plain polish takes it and the frozen one keeps the
    candidate's basin, equal to the descent from the candidates."""
    k, w, V0, T, s2, hs, _ = _batch(8, 2, 2, 1, 8.0, N=300)
    Vinv = np.linalg.inv(V0)[None] / s2[:, None, None]
    local = newton_minimize(k, -w, w, Vinv, T, s2, backend=backend)  # minima of the basins of -w
    cand = Candidates(np.arange(w.shape[0]), local.h)
    plain, _ = global_prox(k, w, V0, T, s2, hs, candidates=cand, full_search=False, backend=backend)
    frozen, same = global_prox(k, w, V0, T, s2, hs, candidates=cand, full_search=False, frozen=True, backend=backend)
    assert same is cand
    moved = plain.value < frozen.value - 1e-9
    assert moved.sum() >= 5  # the start from w found lower minima at some nodes: the test can tell the two apart
    np.testing.assert_allclose(frozen.h, local.h, rtol=0, atol=1e-8)
    np.testing.assert_allclose(frozen.value, local.value, rtol=0, atol=1e-10)
