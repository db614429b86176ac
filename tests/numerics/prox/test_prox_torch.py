"""The torch backend of the proximal solvers against the numpy one, on the same nodes (on CPU here).

Same algorithm, same step rules (imported from ``prox``), same starts and selection (run by
``prox.global_prox`` on the torch results): the two agree to rounding -- measured on these
channel nodes of the default model (omega = 0.3, alpha = 2, semantic and positional states, L = 2
and 3, 512 nodes): equal converged flags, iteration counts and candidate sets, |h| differences
1e-17 (L = 2) and up to 1.0e-12 (L = 3, positional), values within 7e-18; the tests allow 1e-10. A whole state-evolution solve reaches the same fixed point (measured:
equal overlaps to the last bit, the same number of SE steps; the test allows 1e-9). On a CUDA
machine the same checks run on the GPU with ``ATTNPHASE_TORCH_DEVICE=cuda``.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnphase import solver_options
from attnphase.numerics import solve
from attnphase.numerics.prox import backends
from attnphase.numerics.prox import global_prox as prox
from attnphase.numerics.prox import torch_backend as prox_torch
from attnphase.numerics.config import BACKENDS, TORCH_DEVICE_ENV, SolverConfig
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.prox.local_prox import aligned_prox, local_prox
from attnphase.numerics.prox.global_prox import global_prox
from attnphase.numerics.quadrature.rules import make_rule
from attnphase.theory.channel import channel_fields, token_variances
from attnphase.theory.kernels import get_kernels
from attnphase.theory.params import ModelParams

torch = pytest.importorskip("torch")

#: States near the alpha = 2 fixed points of the default model (omega = 0.3; gh5 solves).
STATES = {
    "semantic": Overlaps(q0=0.456, V0=52.6, m=[0.0, 0.0], th0=0.626),
    "positional": Overlaps(q0=0.212, V0=47.0, m=[0.255, -0.255], th0=0.0),
}
POS_INIT = Overlaps(q0=0.2, V0=44.0, m=[0.26, -0.26], th0=0.0)
ATOL = 1e-10


def _nodes(L: int, state: str, rule: str = "sobol9"):
    """(kernels, w, V, T, sigma^2, h*) at the nodes of ``rule`` (512 points) for the default model at ``state``."""
    params = ModelParams(L=L, omega=0.3)
    ov = STATES[state]
    if L != 2:
        ov = Overlaps(q0=ov.q0, V0=ov.V0, m=np.r_[ov.m, np.zeros(L - 2)], th0=ov.th0)
    k = get_kernels(L)
    nodes = make_rule(L, rule).nodes
    w, hstar = channel_fields(nodes[:, :L], nodes[:, L:], ov.q0, ov.m, ov.th0, params.sigma2, params.rho0)
    T = k.target(hstar, params.omega, params.A_array)
    return k, w, token_variances(ov.V0, params.sigma2), T, params.sigma2, hstar


def _same(a: prox.ProxResult, b: prox.ProxResult) -> None:
    np.testing.assert_array_equal(a.converged, b.converged)
    np.testing.assert_allclose(a.h, b.h, rtol=0, atol=ATOL)
    np.testing.assert_allclose(a.value, b.value, rtol=0, atol=ATOL)
    assert a.iterations == b.iterations


@pytest.mark.parametrize(("L", "state"), [(2, "semantic"), (2, "positional"), (3, "semantic"), (3, "positional")])
def test_global_prox_torch_matches_numpy(L: int, state: str) -> None:
    k, w, V, T, s2, _ = _nodes(L, state)
    rn, cn = global_prox(k, w, V, T, s2, backend="numpy")
    rt, ct = global_prox(k, w, V, T, s2, backend="torch")
    assert rn.converged.all()
    _same(rt, rn)
    np.testing.assert_array_equal(ct.node, cn.node)
    np.testing.assert_allclose(ct.h, cn.h, rtol=0, atol=ATOL)
    # the polish of the same candidates
    pn, qn = global_prox(k, w, V, T, s2, candidates=cn, full_search=False, backend="numpy")
    pt, qt = global_prox(k, w, V, T, s2, candidates=cn, full_search=False, backend="torch")
    _same(pt, pn)
    assert qt is cn and qn is cn


def test_local_and_aligned_prox_torch_match_numpy() -> None:
    k, w, V, T, s2, hstar = _nodes(2, "semantic", "sobol8")
    _same(local_prox(k, w, V, T, s2, backend="torch"), local_prox(k, w, V, T, s2, backend="numpy"))
    _same(aligned_prox(k, w, V, T, s2, hstar, backend="torch"), aligned_prox(k, w, V, T, s2, hstar, backend="numpy"))


def test_outer_softmax_is_the_twin_of_the_kernels_softmax() -> None:
    h = np.random.default_rng(3).normal(scale=4.0, size=(200, 3))
    S = prox_torch.outer_softmax(torch.as_tensor(h)).numpy()
    np.testing.assert_allclose(S, get_kernels(3).attention(h), rtol=1e-15, atol=1e-16)


@pytest.mark.parametrize(("branch", "init"), [("semantic", None), ("positional", POS_INIT)])
def test_solve_with_torch_backend_reaches_the_numpy_fixed_point(branch: str, init: Overlaps | None) -> None:
    params = ModelParams(omega=0.3)
    fps = [solve(params, 2.0, branch, init=init, config=SolverConfig(quadrature="gh4", backend=b)) for b in ("numpy", "torch")]
    assert all(fp.status.converged and fp.branch == branch for fp in fps)
    np.testing.assert_allclose(fps[1].overlaps.to_vector(), fps[0].overlaps.to_vector(), rtol=0, atol=1e-9)


def test_torch_backend_resolution_and_device(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "torch" in BACKENDS and solver_options.BACKENDS == BACKENDS
    assert backends.resolve_backend("torch") == backends.resolve_backend(SolverConfig(backend="torch").backend) == "torch"
    with pytest.raises(TypeError, match="needs a theory.kernels.Kernels"):
        backends.resolve_backend("torch", kernels=object())
    monkeypatch.setenv(TORCH_DEVICE_ENV, "cpu")
    assert prox_torch.torch_device().type == "cpu"
    assert prox_torch.torch_device("meta").type == "meta"  # the argument wins over the variable
    monkeypatch.delenv(TORCH_DEVICE_ENV)
    assert prox_torch.torch_device().type == ("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setenv(TORCH_DEVICE_ENV, "nodevice")
    with pytest.raises(ValueError, match=r"ATTNPHASE_TORCH_DEVICE must name a torch device .* 'nodevice'"):
        prox_torch.torch_device()
    with pytest.raises(ValueError, match=r"^--backend torch: \$ATTNPHASE_TORCH_DEVICE must name") as exc:
        solver_options.check_supported(ModelParams(), SolverConfig(backend="torch"))
    assert "\n" not in str(exc.value)
    solver_options.check_supported(ModelParams(), SolverConfig(backend="numpy"))  # the device is torch's alone
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="torch sees no GPU"):
            prox_torch.torch_device("cuda")


def test_torch_backend_without_torch_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prox_torch, "torch", None)
    with pytest.raises(ImportError, match="backend='torch' needs torch"):
        backends.resolve_backend("torch")
    with pytest.raises(ValueError, match=r"^--backend: backend='torch' needs torch") as exc:
        solver_options.check_supported(ModelParams(), SolverConfig(backend="torch"))
    assert "\n" not in str(exc.value)
    assert backends.resolve_backend("numpy") == "numpy"
