"""Kernels of attnphase.theory.kernels: derivatives vs finite differences and torch autograd,
cse vs no cse, vectorised vs scalar loop, stability at extreme fields, shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnphase.theory.kernels import get_kernels, get_scalar_kernels
from attnphase.theory.softmax import row_softmax

torch = pytest.importorskip("torch")
torch.set_num_threads(1)  # tiny tensors: threading only costs time

FLOAT = dict(allow_nan=False, allow_infinity=False)


@st.composite
def channel_points(draw: st.DrawFn) -> dict[str, np.ndarray | float | int]:
    """A random point (h, w, V, h*) and model (omega, A, sigma^2) for L in {2, 3}."""
    L = draw(st.sampled_from([2, 3]))
    vec = lambda lo, hi: np.array(draw(st.lists(st.floats(lo, hi, **FLOAT), min_size=L, max_size=L)))  # noqa: E731
    A = np.array(draw(st.lists(st.lists(st.floats(0.0, 1.0, **FLOAT), min_size=L, max_size=L), min_size=L, max_size=L)))
    A = (A + 1e-3) / (A + 1e-3).sum(axis=1, keepdims=True)
    return dict(
        L=L, h=vec(-3.0, 3.0), w=vec(-3.0, 3.0), V=vec(0.05, 5.0), hstar=vec(-3.0, 3.0),
        sigma2=vec(0.2, 2.0) ** 2, omega=draw(st.floats(0.0, 1.0, **FLOAT)), A=A,
    )


def _torch_target(hstar: np.ndarray, omega: float, A: np.ndarray) -> "torch.Tensor":
    hs = torch.tensor(hstar, dtype=torch.float64)
    return (1 - omega) * torch.softmax(hs[:, None] * hs[None, :], dim=-1) + omega * torch.tensor(A)


def _torch_prox(h: "torch.Tensor", w: np.ndarray, V: np.ndarray, T: "torch.Tensor", sigma2: np.ndarray) -> "torch.Tensor":
    """sum_l (h_l - w_l)^2 / (2 V_l) + 1/2 sum_{l,k} sigma_k^2 (softmax(h h^T) - T)[l,k]^2, written independently."""
    S = torch.softmax(h[:, None] * h[None, :], dim=-1)
    quad = ((h - torch.tensor(w)) ** 2 / (2 * torch.tensor(V))).sum()
    return quad + 0.5 * (torch.tensor(sigma2)[None, :] * (S - T) ** 2).sum()


@settings(max_examples=25, deadline=None)
@given(channel_points())
def test_prox_matches_torch_autograd(pt: dict) -> None:
    k = get_kernels(pt["L"])
    T = k.target(pt["hstar"], pt["omega"], pt["A"])
    Tt = _torch_target(pt["hstar"], pt["omega"], pt["A"])
    np.testing.assert_allclose(T, Tt.numpy(), rtol=1e-12, atol=1e-14)
    v, g, H = k.prox_value_grad_hess(pt["h"], pt["w"], pt["V"], T, pt["sigma2"])
    f = lambda x: _torch_prox(x, pt["w"], pt["V"], Tt, pt["sigma2"])  # noqa: E731
    ht = torch.tensor(pt["h"], dtype=torch.float64)
    gt = torch.autograd.functional.jacobian(f, ht).numpy()
    Ht = torch.autograd.functional.hessian(f, ht).numpy()
    scale = 1.0 + np.abs(Ht).max()
    assert v == pytest.approx(f(ht).item(), rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(g, gt, rtol=1e-10, atol=1e-12 * scale)
    np.testing.assert_allclose(H, Ht, rtol=1e-10, atol=1e-12 * scale)
    # the loss-only kernel is the prox kernel minus the quadratic term
    lv, lg, lH = k.loss_grad_hess(pt["h"], T, pt["sigma2"])
    np.testing.assert_allclose(lg + (pt["h"] - pt["w"]) / pt["V"], g, rtol=1e-12, atol=1e-12 * scale)
    np.testing.assert_allclose(lH + np.diag(1 / pt["V"]), H, rtol=1e-12, atol=1e-12 * scale)
    assert lv == pytest.approx(k.loss(pt["h"], T, pt["sigma2"]), rel=1e-14, abs=1e-16)


@settings(max_examples=40, deadline=None)
@given(channel_points())
def test_prox_matches_central_differences(pt: dict) -> None:
    k = get_kernels(pt["L"])
    L = pt["L"]
    T = k.target(pt["hstar"], pt["omega"], pt["A"])
    args = (pt["w"], pt["V"], T, pt["sigma2"])
    _, g, H = k.prox_value_grad_hess(pt["h"], *args)
    eps = 1e-5
    pts = pt["h"] + eps * np.concatenate([np.eye(L), -np.eye(L)])  # all shifted points in one call
    vals, grads, _ = k.prox_value_grad_hess(pts, *args)
    g_fd = (vals[:L] - vals[L:]) / (2 * eps)
    H_fd = (grads[:L] - grads[L:]) / (2 * eps)  # row i: d grad / d h_i
    scale = 1.0 + np.abs(H).max()
    np.testing.assert_allclose(g, g_fd, rtol=1e-6, atol=1e-7 * scale)
    np.testing.assert_allclose(H, H_fd, rtol=1e-6, atol=1e-7 * scale)


@pytest.mark.parametrize("L", [2, 3])
def test_cse_and_plain_give_same_numbers(L: int) -> None:
    rng = np.random.default_rng(L)
    kc, kp = get_kernels(L, cse=True), get_kernels(L, cse=False)
    assert kc.cse and not kp.cse
    h, w, hs = rng.normal(size=(3, 50, L)) * 2
    V, s2 = rng.uniform(0.1, 2, size=L), rng.uniform(0.1, 2, size=L)
    A = rng.dirichlet(np.ones(L), size=L)
    T = kc.target(hs, 0.4, A)
    np.testing.assert_array_equal(T, kp.target(hs, 0.4, A))
    for a, b in zip(kc.prox_value_grad_hess(h, w, V, T, s2), kp.prox_value_grad_hess(h, w, V, T, s2)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    for a, b in zip(kc.loss_grad_hess(h, T, s2), kp.loss_grad_hess(h, T, s2)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("L", [2, 3])
def test_vectorised_equals_scalar_loop(L: int) -> None:
    k = get_kernels(L)
    rng = np.random.default_rng(10 + L)
    n = 7
    h, w, hs = rng.normal(size=(3, n, 4, L))
    V = rng.uniform(0.1, 2, size=(n, 4, L))  # per-point V
    s2 = rng.uniform(0.1, 2, size=L)
    A = rng.dirichlet(np.ones(L), size=L)
    T = k.target(hs, 0.3, A)
    v, g, H = k.prox_value_grad_hess(h, w, V, T, s2)
    assert v.shape == (n, 4) and g.shape == (n, 4, L) and H.shape == (n, 4, L, L)
    for idx in np.ndindex(n, 4):
        Ti = k.target(hs[idx], 0.3, A)
        np.testing.assert_array_equal(Ti, T[idx])
        vi, gi, Hi = k.prox_value_grad_hess(h[idx], w[idx], V[idx], Ti, s2)
        assert vi.shape == () and gi.shape == (L,) and Hi.shape == (L, L)
        assert vi == v[idx]
        np.testing.assert_array_equal(gi, g[idx])
        np.testing.assert_array_equal(Hi, H[idx])
        np.testing.assert_array_equal(k.attention(h[idx]), k.attention(h)[idx])


def test_broadcasting_and_full_shape_outputs() -> None:
    k = get_kernels(2)
    h = np.zeros((5, 1, 2))
    T = np.full((3, 2, 2), 0.5)  # broadcasts against h's (5, 1)
    v, g, H = k.prox_value_grad_hess(h, np.zeros(2), np.ones(2), T, np.full(2, 0.25))
    # at h = w = 0 and S = T every term vanishes but every output still has the full shape
    assert v.shape == (5, 3) and g.shape == (5, 3, 2) and H.shape == (5, 3, 2, 2)
    assert v.dtype == np.float64 and np.all(v == 0) and np.all(g == 0)
    np.testing.assert_allclose(H, np.broadcast_to(np.eye(2), (5, 3, 2, 2)))
    assert k.loss(h, T, np.full(2, 0.25)).shape == (5, 3)
    with pytest.raises(ValueError, match="h must have trailing dimension"):
        k.attention(np.zeros(3))
    with pytest.raises(ValueError, match="T must have trailing shape"):
        k.loss(np.zeros(2), np.zeros((3, 3)), np.ones(2))


@pytest.mark.parametrize("L", [2, 3])
def test_stable_at_extreme_fields(L: int) -> None:
    k = get_kernels(L)
    rng = np.random.default_rng(3)
    h = rng.choice([-1e3, -1.0, 0.0, 1e-3, 1.0, 1e3], size=(400, L)) * rng.uniform(0.5, 1, size=(400, L))
    h[:L] = 1e3
    T = k.target(h[::-1], 0.3, np.full((L, L), 1 / L))
    for out in (k.attention(h), T, *k.prox_value_grad_hess(h, -h, np.full(L, 0.3), T, np.full(L, 0.25))):
        assert np.all(np.isfinite(out))
    S = k.attention(h)
    np.testing.assert_allclose(S.sum(axis=-1), 1.0, rtol=1e-14)
    assert np.all(S >= 0)


def test_row_softmax_max_shift() -> None:
    a = np.array([[1e6, 1e6 - 1.0], [-1e6, 0.0]])
    S = row_softmax(a)
    np.testing.assert_allclose(S[0], [1 / (1 + np.exp(-1)), np.exp(-1) / (1 + np.exp(-1))])
    np.testing.assert_allclose(S[1], [0.0, 1.0])


def test_L4_kernel_against_torch() -> None:
    k = get_kernels(4)
    rng = np.random.default_rng(4)
    h, w, hs = rng.normal(size=(3, 4))
    V, s2 = rng.uniform(0.2, 2, size=(2, 4))
    A = rng.dirichlet(np.ones(4), size=4)
    T = k.target(hs, 0.3, A)
    Tt = _torch_target(hs, 0.3, A)
    ht = torch.tensor(h)
    Ht = torch.autograd.functional.hessian(lambda x: _torch_prox(x, w, V, Tt, s2), ht).numpy()
    np.testing.assert_allclose(k.prox_value_grad_hess(h, w, V, T, s2)[2], Ht, rtol=1e-10, atol=1e-12)


def test_get_kernels_validates_and_loads_once() -> None:
    """No in-memory cache of Kernels objects: each call builds one on the generated module, which
    the import system loads once per process (the same functions; the call is cheap)."""
    import sys
    import time

    k2, k2b = get_kernels(2), get_kernels(2, 1, True)
    assert k2 is not k2b and k2.functions["prox_value_grad_hess"] is k2b.functions["prox_value_grad_hess"]
    assert sys.modules[k2.functions["loss"].__module__].loss is k2.functions["loss"]
    assert k2.scalar is k2.scalar and k2.scalar.module in sys.modules  # the one-point twin, owned by k2
    t = time.perf_counter()
    for _ in range(20):
        get_kernels(2)
    assert (time.perf_counter() - t) / 20 < 5e-3  # measured 0.2 ms (hash of the theory sources)
    k = get_kernels(3)
    assert (k.L, k.r) == (3, 1)
    for bad in (1, 0, 2.5, True):
        with pytest.raises(ValueError, match="L must be"):
            get_kernels(bad)
    for bad in (0, 1.5, False):
        with pytest.raises(ValueError, match="student rank"):
            get_kernels(2, r=bad)
    k22 = get_kernels(2, r=2)  # every rank: the matrix form, without the diagonal-V proximal objective of r = 1
    assert (k22.L, k22.r) == (2, 2) and set(k22.functions) >= {"loss", "loss_grad_hess"}
    assert "prox_value_grad_hess" not in k22.functions and k22.scalar is k22.matrix_scalar
    with pytest.raises(ValueError, match="diagonal V"):
        k22.prox_value(np.zeros((2, 2)), np.zeros(2), np.ones(2), np.eye(2), np.ones(2))
    doc = k.functions["prox_value_grad_hess"].__doc__
    assert "h[..., 0] -> h_1" in doc and "S[..., 0, 1] -> S_12" in doc and "sigma2[..., 2] -> sigma_3^2" in doc


@pytest.mark.parametrize("L", [2, 3])
def test_attention_uses_the_generated_scores(L: int) -> None:
    """The kernels form a_lk = h_l h_k as one numpy product: it must equal the sympy-generated scores."""
    k = get_kernels(L)
    h = np.random.default_rng(L).normal(size=(6, L))
    a = np.stack(k.functions["scores"](h), axis=-1).reshape(6, L, L)
    np.testing.assert_array_equal(k.attention(h), row_softmax(a))


def test_chunked_evaluation_matches_unchunked() -> None:
    """More points than one block (CHUNK), with per-point and shared arguments mixed."""
    from attnphase.theory.kernels import CHUNK

    k = get_kernels(2)
    rng = np.random.default_rng(5)
    n = 2 * CHUNK + 17
    h, w, hs = rng.normal(size=(3, n, 2))
    T = k.target(hs, 0.3, [[0.6, 0.4], [0.4, 0.6]])
    V = rng.uniform(0.1, 2, size=(n, 2))
    s2 = np.array([0.25, 0.64])
    v, g, H = k.prox_value_grad_hess(h.reshape(n, 1, 2), w.reshape(n, 1, 2), V.reshape(n, 1, 2), T.reshape(n, 1, 2, 2), s2)
    assert v.shape == (n, 1)
    raw = k.functions["prox_value_grad_hess"](h, w, V, k.attention(h), T, s2)
    np.testing.assert_array_equal(v[:, 0], raw[0])
    np.testing.assert_array_equal(g[:, 0, 1], raw[2])
    np.testing.assert_array_equal(H[:, 0, 1, 0], raw[4])
    np.testing.assert_array_equal(k.loss(h, T, s2), k.loss_grad_hess(h, T, s2)[0])


@pytest.mark.parametrize("L", [2, 3])
def test_prox_value_is_the_generated_objective(L: int) -> None:
    """prox_value (generated, batched and one-point) equals the value output of prox_value_grad_hess
    and loss + sum_l (h_l - w_l)^2 / (2 V_l), to rounding."""
    k, sk = get_kernels(L), get_scalar_kernels(L)
    rng = np.random.default_rng(20 + L)
    h, w, hs = rng.normal(size=(3, 40, L))
    V, s2 = rng.uniform(0.5, 50.0, L), rng.uniform(0.1, 1.0, L)
    T = k.target(hs, 0.3, np.full((L, L), 1 / L))
    v = k.prox_value(h, w, V, T, s2)
    np.testing.assert_allclose(v, k.prox_value_grad_hess(h, w, V, T, s2)[0], rtol=1e-14)
    np.testing.assert_allclose(v, k.loss(h, T, s2) + 0.5 * np.sum((h - w) ** 2 / V, axis=-1), rtol=1e-14)
    S = k.attention(h)
    for n in range(h.shape[0]):
        (vn,) = sk.functions["prox_value"](h[n], w[n], V, S[n], T[n], s2)
        np.testing.assert_allclose(vn, v[n], rtol=1e-14)


def test_generated_module_imported_once_and_regenerated_when_damaged(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """codegen.load_module: one import per process (sys.modules), a damaged cache file is regenerated."""
    import sys

    import sympy as sp

    from attnphase.theory.codegen import Argument, FunctionSpec, load_module

    monkeypatch.setenv("ATTNPHASE_CACHE_DIR", str(tmp_path))
    x = sp.Symbol("x")
    builds = []

    def build() -> list[FunctionSpec]:
        builds.append(1)
        return [FunctionSpec("square", (Argument("x", [x], "a field"),), (("x^2", x**2),), "x^2.")]

    mod = load_module("test_square", 1, 1, True, build)
    assert load_module("test_square", 1, 1, True, build) is mod and len(builds) == 1
    assert mod.square(np.array([3.0]))[0] == 9.0
    (path,) = tmp_path.glob("test_square_L1_*.py")
    monkeypatch.delitem(sys.modules, mod.__name__)
    path.write_text(path.read_text().split("\n", 1)[0] + "\ndef broken(:\n")  # key line intact, body damaged
    again = load_module("test_square", 1, 1, True, build)
    assert again is not mod and again.square(np.array([2.0]))[0] == 4.0 and len(builds) == 2


@pytest.mark.parametrize("L", [2, 3])
def test_the_numpy_attention_maps_are_the_generated_scores_and_target(L: int) -> None:
    """theory/softmax.py evaluates the maps the kernels use; the code generated from the sympy statement of the
    scores and of T(h*) gives the same numbers to the last bit (rank 1), and the scores of r = 2 are h h^T."""
    from attnphase.theory import softmax

    rng = np.random.default_rng(L)
    k = get_kernels(L)
    h, hs = rng.normal(size=(2, 50, L)) * 2.0
    A = rng.dirichlet(np.ones(L), size=L)
    omega = rng.uniform(0.0, 1.0, 50)
    a = np.stack(k.functions["scores"](h), axis=-1).reshape(50, L, L)
    np.testing.assert_array_equal(softmax.scores(h[..., None]), a)
    generated = np.stack(k.functions["target"](k.attention(hs), omega, A), axis=-1).reshape(50, L, L)
    np.testing.assert_array_equal(softmax.target(hs[..., None], omega, A), generated)
    np.testing.assert_array_equal(k.target(hs, omega, A), generated)
    h2 = rng.normal(size=(50, L, 2))
    np.testing.assert_allclose(softmax.scores(h2), h2 @ np.swapaxes(h2, -1, -2), rtol=1e-15, atol=1e-15)
    S = softmax.attention(h2)
    np.testing.assert_allclose(S.sum(axis=-1), 1.0, rtol=1e-15)
    with pytest.raises(ValueError, match="trailing shape"):
        softmax.attention(np.zeros(L))


def test_the_matrix_form_broadcasts_and_checks_shapes() -> None:
    rng = np.random.default_rng(4)
    L, r = 2, 2
    k = get_kernels(L, r)
    h = rng.normal(size=(7, L, r))
    T = rng.dirichlet(np.ones(L), size=L)
    s2 = np.array([0.25, 0.4])
    whole = k.loss_grad_hess(h, np.broadcast_to(T, (7, L, L)), s2)
    for a, b in zip(k.loss_grad_hess(h, T, s2), whole):  # an unbatched T is that T at every point
        np.testing.assert_array_equal(a, b)
    assert whole[1].shape == (7, L * r) and whole[2].shape == (7, L * r, L * r)
    np.testing.assert_allclose(k.loss(h, T, s2), whole[0], rtol=1e-13)  # numpy form of the square loss
    with pytest.raises(ValueError, match=r"trailing shape \(L, r\) = \(2, 2\)"):
        k.loss(rng.normal(size=(7, L)), T, s2)
