"""The channel objects (theory/channels/): the registry, ModelParams.loss, and the kernels a channel provides."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.theory.channels import channel_names, get_channel
from attnphase.theory.params import ModelParams
from attnphase.theory.kernels import get_kernels
from attnphase.theory.softmax import attention, target


def test_registry_and_model_params_loss() -> None:
    assert "square" in channel_names() and get_channel("square").name == "square"
    assert ModelParams().loss == "square" and ModelParams().channel == get_channel("square")
    with pytest.raises(ValueError, match="unknown loss"):
        get_channel("absolute")
    with pytest.raises(ValueError, match="loss must be one of"):
        ModelParams(loss="absolute")
    # the default loss leaves the model's dictionary (and so every task key) as it was; another one is in it,
    # survives the round trip and is echoed beside a solve's result
    assert "loss" not in ModelParams().to_dict()
    other = ModelParams(loss="scaled_square")
    assert other.to_dict()["loss"] == "scaled_square" and ModelParams(**other.to_dict()) == other
    assert other != ModelParams() and other.channel.name == "scaled_square"
    from attnphase.numerics.commands.point_record import model_echo

    assert model_echo(other)["loss"] == "scaled_square" and model_echo(ModelParams())["loss"] == "square"


@pytest.mark.parametrize("L,r,rs", [(2, 1, 1), (2, 2, 1), (3, 2, 2)])
def test_square_channel_sympy_loss_numpy_form_and_generated_kernels_agree(L, r, rs) -> None:
    """The channel's sympy loss(h, h*) at numeric fields, its numpy form (loss_values) and the generated kernels
    (loss in S, and the value of loss_grad_hess) are one function."""
    import sympy as sp

    ch = get_channel("square")
    rng = np.random.default_rng(L * 10 + r)
    n = 6
    h, hs = rng.normal(size=(n, L, r)), rng.normal(size=(n, L, rs))
    A = rng.dirichlet(np.ones(L), size=L)
    s2 = rng.uniform(0.2, 0.6, L)
    omega = 0.3
    T = target(hs, omega, A)
    k = get_kernels(L, r, channel=ch)
    fast = ch.loss_values(attention(h), T, s2)
    generated = np.array([k.functions["loss"](attention(h[i:i + 1]), T[i:i + 1], s2)[0] for i in range(n)]).ravel()
    value = k.loss_grad_hess(h, T, s2)[0]
    np.testing.assert_allclose(fast, generated, rtol=1e-13)
    np.testing.assert_allclose(value, generated, rtol=1e-13)
    from attnphase.theory.symbols import token_symbols

    expr = ch.loss(L, r, rs)
    syms = {s.name: s for s in expr.free_symbols}
    hsym, hssym = token_symbols("h", L, r, real=True), token_symbols("hstar", L, rs, real=True)
    for i in range(2):
        vals = {syms["omega"]: omega}
        for l in range(L):
            vals[syms[f"sigma_{l + 1}^2"]] = s2[l]
            vals.update({syms[f"A_{l + 1}{kk + 1}"]: A[l, kk] for kk in range(L)})
            vals.update({hsym[l, a]: h[i, l, a] for a in range(r)})
            vals.update({hssym[l, b]: hs[i, l, b] for b in range(rs)})
        assert float(sp.N(expr.xreplace(vals), 30)) == pytest.approx(fast[i], rel=1e-12)


def test_a_channel_s_kernels_are_cached_under_its_name() -> None:
    ch = get_channel("square")
    assert ch.cache_tag.startswith("square_")
    k = get_kernels(2, channel=ch)
    assert k.channel is ch or k.channel == ch
    assert "kernels_square_" in k.scalar.module


def test_the_finite_d_simulation_refuses_a_loss_it_does_not_train() -> None:
    torch = pytest.importorskip("torch")
    from attnphase.validation.data import make_teacher

    make_teacher(ModelParams(), 50, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="square loss only"):
        make_teacher(ModelParams(loss="scaled_square"), 50, torch.Generator().manual_seed(0))


def test_a_channel_is_given_as_itself_or_by_its_name() -> None:
    """get_kernels(2, channel="foo") raised AttributeError: 'str' object has no attribute 'cache_tag'."""
    from attnphase.theory.channels import default_channel, get_channel

    assert type(default_channel("scaled_square")) is type(get_channel("scaled_square"))
    with pytest.raises(ValueError, match="unknown loss 'foo'"):
        default_channel("foo")
    with pytest.raises(ValueError, match="channel must be a Channel, its registered name"):
        default_channel(3)
