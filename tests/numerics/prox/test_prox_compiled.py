"""The compiled (numba) proximal solvers against the numpy ones, and the scalar kernels they run on.

Same algorithm, same starts and tie-breaking: results agree to rounding (measured: bit for bit
in h and value on these batches, L = 2 and 3; the exponential of numba and numpy may differ
in the last bit, so the tests allow 1e-10). The compiled global minimum never loses to the
numpy one or to random probes by more than 1e-12. The numpy fallback (``backend="numpy"``,
or ``"auto"`` without numba) is exercised too. JIT: about 3 s per L on first use.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.prox import backends
from attnphase.numerics.prox import global_prox as prox

from attnphase.numerics.prox import compiled as prox_compiled
from attnphase.numerics.config import BACKEND_ENV, BACKENDS, SolverConfig
from attnphase.numerics.prox.local_prox import aligned_prox, local_prox
from attnphase.numerics.prox.global_prox import global_prox, newton_minimize
from attnphase.numerics.prox.starts import starting_points
from attnphase.theory.kernels import get_kernels, get_scalar_kernels

A_SYM = np.array([[0.6, 0.4], [0.4, 0.6]])
A_ASYM = np.array([[0.3, 0.7], [0.8, 0.2]])
OMEGAS = (0.0, 0.3, 0.7)
V0S = (0.5, 5.0, 100.0)

needs_numba = pytest.mark.skipif(not prox_compiled.available(), reason="numba cannot be imported")


def _A(L: int, asym: bool) -> np.ndarray:
    if L == 2:
        return A_ASYM if asym else A_SYM
    A = np.full((L, L), 0.4 / (L - 1)) + (0.6 - 0.4 / (L - 1)) * np.eye(L)
    return np.roll(A, 1, axis=1) if asym else A


def _batch(seed: int, L: int, omega: float, V0: float, asym: bool, n: int = 40):
    """Nodes as the channel makes them: w = m + sqrt(q sigma^2) xi, T = T(h*), V = V0 sigma^2."""
    rng = np.random.default_rng(seed)
    k = get_kernels(L)
    s2 = np.full(L, rng.uniform(0.3, 1.0) ** 2)
    w = rng.uniform(-0.5, 0.5, L) + np.sqrt(rng.uniform(0.05, 1.0) * s2) * rng.normal(size=(n, L))
    T = k.target(np.sqrt(s2) * rng.normal(size=(n, L)), omega, _A(L, asym))
    return k, w, V0 * s2, T, s2


def _P(h, w, V, T, s2):
    """The proximal objective, transcribed in numpy (not the generated kernel)."""
    a = h[..., :, None] * h[..., None, :]
    S = np.exp(a - a.max(axis=-1, keepdims=True))
    S /= S.sum(axis=-1, keepdims=True)
    return ((h - w) ** 2 / (2 * V)).sum(-1) + 0.5 * (s2 * (S - T) ** 2).sum((-1, -2))


CASES = [(L, omega, V0, asym) for L in (2, 3) for omega in OMEGAS for V0 in V0S for asym in (False, True)]


@needs_numba
@pytest.mark.parametrize(("L", "omega", "V0", "asym"), CASES)
def test_global_prox_compiled_matches_numpy(L: int, omega: float, V0: float, asym: bool) -> None:
    k, w, V, T, s2 = _batch(1000 * L + int(10 * omega) + int(V0), L, omega, V0, asym)
    rn, cn = global_prox(k, w, V, T, s2, backend="numpy")
    rb, cb = global_prox(k, w, V, T, s2, backend="numba")
    assert rb.converged.all() and rn.converged.all()
    np.testing.assert_array_equal(rb.converged, rn.converged)
    np.testing.assert_allclose(rb.h, rn.h, rtol=0, atol=1e-10)
    np.testing.assert_allclose(rb.value, rn.value, rtol=0, atol=1e-10)
    assert np.max(rb.value - rn.value) <= 1e-12
    # the compiled search stops a start once it is near an earlier start's minimum (MERGE_RADIUS)
    assert rb.iterations <= rn.iterations
    np.testing.assert_array_equal(cb.node, cn.node)
    np.testing.assert_allclose(cb.h, cn.h, rtol=0, atol=1e-10)
    # the polish mode from these candidates
    pn, qn = global_prox(k, w, V, T, s2, candidates=cn, full_search=False, backend="numpy")
    pb, qb = global_prox(k, w, V, T, s2, candidates=cn, full_search=False, backend="numba")
    np.testing.assert_allclose(pb.h, pn.h, rtol=0, atol=1e-10)
    np.testing.assert_allclose(pb.value, pn.value, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(pb.converged, pn.converged)
    np.testing.assert_array_equal(qb.node, qn.node)
    # the paper's local prox from h = 0
    ln, lb = local_prox(k, w, V, T, s2, backend="numpy"), local_prox(k, w, V, T, s2, backend="numba")
    np.testing.assert_allclose(lb.h, ln.h, rtol=0, atol=1e-10)
    np.testing.assert_allclose(lb.value, ln.value, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(lb.converged, ln.converged)


@needs_numba
@pytest.mark.parametrize(("L", "asym"), [(2, False), (2, True), (3, False), (3, True)])
def test_compiled_global_prox_never_loses_to_probes(L: int, asym: bool) -> None:
    k, w, V, T, s2 = _batch(77 + L, L, 0.3, 20.0, asym)
    res, _ = global_prox(k, w, V, T, s2, backend="numba")
    np.testing.assert_allclose(res.value, _P(res.h, w, V, T, s2), rtol=1e-12, atol=1e-15)
    N, n_probe = w.shape[0], 64
    rng = np.random.default_rng(5)
    R = np.sqrt(2 * V.max() * k.loss(w, T, s2))
    d = rng.normal(size=(N, n_probe, L))
    d *= (rng.uniform(size=(N, n_probe, 1)) ** (1 / L) * R[:, None, None]) / np.linalg.norm(d, axis=2, keepdims=True)
    probes = w[:, None, :] + d
    raw = _P(probes, w[:, None, :], V, T[:, None], s2).min(axis=1)
    assert np.max(res.value - raw) <= 1e-12
    idx = np.repeat(np.arange(N), n_probe)
    pol = newton_minimize(k, probes.reshape(-1, L), w[idx], V, T[idx], s2, backend="numba")
    pol_np = newton_minimize(k, probes.reshape(-1, L), w[idx], V, T[idx], s2, backend="numpy")
    np.testing.assert_allclose(pol.h, pol_np.h, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(pol.converged, pol_np.converged)
    polished = np.where(pol.converged, pol.value, np.inf).reshape(N, n_probe).min(axis=1)
    assert np.max(res.value - polished) <= 1e-12


@needs_numba
@pytest.mark.parametrize("V0", V0S)
def test_aligned_prox_compiled_matches_numpy(V0: float) -> None:
    """The aligned prox (L = 2, Newton from the loss zero on the teacher's side) on both backends."""
    k, w, V, T, s2 = _batch(31 + int(V0), 2, 0.3, V0, False)
    hstar = np.random.default_rng(8).normal(size=w.shape)
    an = aligned_prox(k, w, V, T, s2, hstar, backend="numpy")
    ab = aligned_prox(k, w, V, T, s2, hstar, backend="numba")
    np.testing.assert_allclose(ab.h, an.h, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ab.value, an.value, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(ab.converged, an.converged)


@needs_numba
@pytest.mark.parametrize("L", [2, 3, 4])
def test_compiled_softmax_equals_the_batched_one(L: int) -> None:
    """The one-point softmax of the template (compiled) and the batched one of the kernels evaluate
    the same S(h) = softmax_k(h_l h_k), max-shifted, in the same order (also at extreme fields)."""
    k = get_kernels(L)
    inst = prox_compiled.instance(k)
    rng = np.random.default_rng(10 + L)
    h = np.concatenate([rng.normal(size=(50, L)), 30.0 * rng.normal(size=(10, L))])
    Sb = k.attention(h)
    S = np.empty((L, L))
    for n in range(h.shape[0]):
        inst.softmax(h[n], S)
        np.testing.assert_allclose(S, Sb[n], rtol=1e-14, atol=1e-300)


@needs_numba
@pytest.mark.parametrize("L", [2, 3])
def test_compiled_softmax_and_objective_equal_the_batched_ones(L: int) -> None:
    """The instance's softmax and P(h) (value, gradient, Hessian), compiled, against the batched kernels."""
    k, w, V, T, s2 = _batch(41, L, 0.3, 5.0, True, n=20)
    inst = prox_compiled.instance(k)
    h = w + 0.5 * np.random.default_rng(3).normal(size=w.shape)
    f, g, H = k.prox_value_grad_hess(h, w, V, T, s2)
    S, gn, Hn = np.empty((L, L)), np.empty(L), np.empty((L, L))
    for n in range(h.shape[0]):
        fn = inst.value_grad_hess(h[n], w[n], V, T[n], s2, S, gn, Hn)
        np.testing.assert_allclose(S, k.attention(h[n]), rtol=1e-14)
        np.testing.assert_allclose([fn, inst.value_only(h[n], w[n], V, T[n], s2, S)], f[n], rtol=1e-14)
        np.testing.assert_allclose(gn, g[n], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(Hn, H[n], rtol=1e-12, atol=1e-14)


@needs_numba
def test_newton_minimize_compiled_per_node_V() -> None:
    """V may vary per row (broadcast like the numpy path)."""
    k, w, _, T, s2 = _batch(3, 2, 0.3, 1.0, False)
    V = np.random.default_rng(4).uniform(0.5, 100.0, size=w.shape)
    rn = newton_minimize(k, w, w, V, T, s2, backend="numpy")
    rb = newton_minimize(k, w, w, V, T, s2, backend="numba")
    np.testing.assert_allclose(rb.h, rn.h, rtol=0, atol=1e-10)
    assert rb.iterations == rn.iterations


def test_numpy_fallback_without_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    k, w, V, T, s2 = _batch(11, 2, 0.3, 5.0, False, n=16)
    forced, _ = global_prox(k, w, V, T, s2, backend="numpy")
    monkeypatch.setattr(prox_compiled, "available", lambda: False)
    assert backends.resolve_backend("auto") == "numpy"
    auto, _ = global_prox(k, w, V, T, s2)
    np.testing.assert_array_equal(auto.h, forced.h)
    with pytest.raises(ImportError):
        global_prox(k, w, V, T, s2, backend="numba")
    with pytest.raises(ValueError):
        local_prox(k, w, V, T, s2, backend="jax")


def test_numpy_backend_never_runs_compiled_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: global_prox(backend="numpy") ran its Newton descents on the "auto" backend
    (compiled), so the numpy fallback was never compared with the compiled path."""
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled code called on the numpy backend")

    monkeypatch.setattr(prox_compiled, "instance", fail)
    k, w, V, T, s2 = _batch(12, 3, 0.3, 5.0, True, n=8)
    res, cand = global_prox(k, w, V, T, s2, backend="numpy")
    global_prox(k, w, V, T, s2, candidates=cand, full_search=False, backend="numpy")
    local_prox(k, w, V, T, s2, backend="numpy")
    assert res.converged.all()


def test_environment_overrides_auto_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend comes from the configuration; $ATTNPHASE_PROX_BACKEND replaces "auto" only."""
    assert backends.BACKENDS is BACKENDS
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    auto = "numba" if prox_compiled.available() else "numpy"
    assert backends.resolve_backend("auto") == backends.resolve_backend(SolverConfig().backend) == auto
    assert backends.resolve_backend(SolverConfig(backend="numpy").backend) == "numpy"
    assert backends.resolve_backend("auto", kernels=object()) == "numpy"  # not a Kernels: no compiled twin
    if prox_compiled.available():
        with pytest.raises(TypeError):
            backends.resolve_backend("numba", kernels=object())
    monkeypatch.setenv(BACKEND_ENV, "numpy")
    assert backends.resolve_backend("auto") == backends.resolve_backend(SolverConfig().backend) == "numpy"
    if prox_compiled.available():
        assert backends.resolve_backend("numba") == backends.resolve_backend(SolverConfig(backend="numba").backend) == "numba"
    monkeypatch.setenv(BACKEND_ENV, "auto")
    assert backends.resolve_backend("auto") == auto
    monkeypatch.setenv(BACKEND_ENV, "gpu")
    with pytest.raises(ValueError):
        backends.resolve_backend("auto")
    assert backends.resolve_backend("numpy") == "numpy"


def test_template_is_not_imported_by_name() -> None:
    """prox_rows is a template: only its instances (with a Binding) run."""
    with pytest.raises(ImportError, match="template"):
        import attnphase.numerics.prox.rows  # noqa: F401


@needs_numba
@pytest.mark.parametrize("L", [2, 3])
def test_instance_per_L_and_loaded_once(L: int) -> None:
    """One instance per (L, r, cse, parallel), imported once per process; its L and kernels are its own."""
    k = get_kernels(L)
    inst = prox_compiled.instance(k)
    assert prox_compiled.instance(get_kernels(L)) is inst and inst.L == L
    assert inst.__spec__.loader_state.scalar.module == k.scalar.module
    assert prox_compiled.instance(k, parallel=False) is not prox_compiled.instance(k, parallel=True)


@pytest.mark.parametrize("L", [2, 3])
def test_scalar_kernels_equal_the_batched_ones(L: int) -> None:
    """The one-point generated functions (plain Python, no numba) at each node equal the batched kernel."""
    k, w, V, T, s2 = _batch(21, L, 0.3, 5.0, True, n=6)
    sk = get_scalar_kernels(L)
    h = w + 0.3 * np.random.default_rng(2).normal(size=w.shape)
    f, g, H = k.prox_value_grad_hess(h, w, V, T, s2)
    S = k.attention(h)
    iu = [(i, j) for i in range(L) for j in range(i, L)]
    for n in range(h.shape[0]):
        out = sk.functions["prox_value_grad_hess"](h[n], w[n], V, S[n], T[n], s2)
        assert all(isinstance(x, float) for x in out)
        np.testing.assert_allclose(out[0], f[n], rtol=1e-14)
        np.testing.assert_allclose(out[1 : 1 + L], g[n], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(out[1 + L :], [H[n, i, j] for i, j in iu], rtol=1e-12, atol=1e-14)
        (loss,) = sk.functions["loss"](S[n], T[n], s2)
        np.testing.assert_allclose(loss, k.loss(h[n], T[n], s2), rtol=1e-14)


@pytest.mark.heavy
def test_compiled_solver_is_cached_across_processes(tmp_path) -> None:
    """The template instance lives in the kernel cache and numba stores its machine code beside
    it: a second fresh process loads every compiled function (no cache miss)."""
    import os
    import subprocess
    import sys

    script = (
        "import numpy as np\n"
        "from attnphase.numerics.prox import compiled as pc\n"
        "from attnphase.numerics.prox.global_prox import global_prox\n"
        "from attnphase.theory.kernels import get_kernels\n"
        "k = get_kernels(2)\n"
        "w = np.array([[0.1, -0.2], [0.3, 0.05]]); V = np.full(2, 20.0); s2 = np.full(2, 0.25)\n"
        "T = k.target(np.array([[0.2, -0.4], [0.5, 0.1]]), 0.3, np.array([[0.6, 0.4], [0.4, 0.6]]))\n"
        "global_prox(k, w, V, T, s2, backend='numba')\n"
        "st = pc.instance(k).rows.stats\n"
        "print(sum(st.cache_hits.values()), sum(st.cache_misses.values()))\n"
    )
    env = dict(os.environ, ATTNPHASE_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
            for _ in range(2)]
    (hits1, misses1), (hits2, misses2) = (tuple(map(int, r.stdout.split())) for r in runs)
    assert misses1 >= 1 and hits1 == 0  # first process: compiled and stored
    assert hits2 >= 1 and misses2 == 0  # second process: loaded
    (copy,) = tmp_path.glob("prox_rows_L2_*.py")
    assert copy.read_text() == prox_compiled.TEMPLATE.read_text()  # the template itself, byte for byte
    assert list(tmp_path.glob("__pycache__/prox_rows_L2_*.nbi"))


@needs_numba
@pytest.mark.parametrize("L", [2, 3])
def test_merged_starts_copy_an_earlier_minimum(L: int) -> None:
    """Merging (prox_compiled.MERGE_RADIUS): most starts stop early (0 iterations recorded) on a
    copy of an earlier start's minimum, and every node's winner is what running all starts to
    the end finds (the numpy path), to 1e-10."""
    k, w, V, T, s2 = _batch(77 + L, L, 0.3, 2.0, True)
    starts = np.stack(starting_points(w, T), axis=1)
    h, value, conv, iters, best = prox_compiled.global_rows(k, starts, w, V, T, s2)
    merged = conv & (iters == 0)
    assert merged.mean() > 0.3
    for i, j in zip(*np.nonzero(merged)):
        earlier = [s for s in range(j) if conv[i, s] and np.array_equal(h[i, s], h[i, j])]
        assert earlier and value[i, j] == value[i, earlier[0]]
    rn, _ = global_prox(k, w, V, T, s2, backend="numpy")
    nodes = np.arange(len(best))
    np.testing.assert_allclose(value[nodes, best], rn.value, rtol=0, atol=1e-10)


@needs_numba
def test_a_node_runs_only_its_count_of_starts() -> None:
    """``count``: a node runs its first count[i] starts; the others are recorded unconverged (value inf, 0
    iterations) and the node's search is the one from those starts alone."""
    k, w, V, T, s2 = _batch(91, 2, 0.3, 2.0, True)
    starts = np.stack(starting_points(w, T), axis=1)
    count = np.where(np.arange(len(w)) % 2 == 0, 1, starts.shape[1])
    _, value, conv, iters, best = prox_compiled.global_rows(k, starts, w, V, T, s2, count=count)
    even = np.arange(0, len(w), 2)
    assert not conv[even, 1:starts.shape[1]].any() and np.isinf(value[even, 1:starts.shape[1]]).all()
    assert not iters[even, 1:starts.shape[1]].any()
    _, value1, _, _, best1 = prox_compiled.global_rows(k, starts[even, :1], w[even], V, T[even], s2)
    np.testing.assert_array_equal(value[even, best[even]], value1[np.arange(len(even)), best1])
    odd = np.arange(1, len(w), 2)
    _, valuef, _, _, bestf = prox_compiled.global_rows(k, starts[odd], w[odd], V, T[odd], s2)
    np.testing.assert_array_equal(value[odd, best[odd]], valuef[np.arange(len(odd)), bestf])


def test_machine_code_cached_says_whether_a_process_would_compile(tmp_path, monkeypatch) -> None:
    from attnphase.numerics.prox.compiled import machine_code_cached
    from attnphase.numerics.prox.global_prox import compile_global_prox
    from attnphase.theory.kernels import get_kernels

    kernels = get_kernels(2)
    compile_global_prox(kernels, np.array([1.0, 0.25]))  # the tests' cache: compiled into it, or there already
    assert machine_code_cached(kernels)
    from attnphase.theory.codegen import cache_dir

    indexes = list(cache_dir().glob("*.nbi")) + list(cache_dir().glob("__pycache__/*.nbi"))
    monkeypatch.setenv("ATTNPHASE_CACHE_DIR", str(tmp_path / "empty"))  # an empty cache holds no machine code
    assert not machine_code_cached(kernels)
    # with $NUMBA_CACHE_DIR numba keeps the machine code in a subfolder there, named after the source's folder
    moved = tmp_path / "numba" / "cache_0123abcd"
    moved.mkdir(parents=True)
    for index in indexes:
        (moved / index.name).write_bytes(index.read_bytes())
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    assert machine_code_cached(kernels)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert not machine_code_cached(kernels)
