"""The restricted attention sees only its half of the embedding."""

from __future__ import annotations

import pytest
import torch

from attnphase.validation.histogram.model import ModelConfig, build_model

CFG = dict(seq_len=7, n_tokens=5, d_model=16, d_hidden=12)


def _model(restriction: str, seed: int = 0):
    return build_model(ModelConfig(**CFG, restriction=restriction), torch.Generator().manual_seed(seed))


def _perturbed(h: torch.Tensor, half: str, seed: int) -> torch.Tensor:
    """``h`` with one half (``"semantic"`` = first, ``"positional"`` = second) replaced by noise."""
    d = h.shape[-1] // 2
    cols = slice(0, d) if half == "semantic" else slice(d, 2 * d)
    out = h.clone()
    out[..., cols] = torch.randn(out[..., cols].shape, generator=torch.Generator().manual_seed(seed))
    return out


@pytest.mark.parametrize(("restriction", "hidden"), [("positional", "semantic"), ("semantic", "positional")])
def test_attention_ignores_the_masked_half_and_follows_the_other(restriction: str, hidden: str) -> None:
    model = _model(restriction)
    x = torch.randint(0, 5, (6, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        h = model.embed(x)
        base = model.attention(h)
        masked_change = model.attention(_perturbed(h, hidden, seed=2))
        seen = "positional" if hidden == "semantic" else "semantic"
        seen_change = model.attention(_perturbed(h, seen, seed=3))
    assert torch.equal(base, masked_change)
    assert (base - seen_change).abs().max() > 1e-2


def test_unrestricted_attention_sees_both_halves() -> None:
    model = _model("both")
    x = torch.randint(0, 5, (6, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        h = model.embed(x)
        base = model.attention(h)
        for half, seed in (("semantic", 2), ("positional", 3)):
            assert (base - model.attention(_perturbed(h, half, seed))).abs().max() > 1e-2


def test_token_level_restrictions() -> None:
    x = torch.randint(0, 5, (8, 7), generator=torch.Generator().manual_seed(4))
    perm = torch.randperm(7, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        # Positional: one pattern for every input.
        _, a_pos = _model("positional").forward_with_attention(x)
        assert torch.allclose(a_pos, a_pos[:1].expand_as(a_pos))
        # Semantic: the pattern moves with the tokens (permutation equivariance).
        sem = _model("semantic")
        _, a_sem = sem.forward_with_attention(x)
        _, a_perm = sem.forward_with_attention(x[:, perm])
        assert torch.allclose(a_perm, a_sem[:, perm][:, :, perm], atol=1e-6)
        assert (a_sem - a_sem[:1]).abs().max() > 1e-2


def test_shapes_rows_and_seeded_init() -> None:
    state = torch.random.get_rng_state()
    a, b, c = _model("both", 7), _model("both", 7), _model("both", 8)
    assert torch.equal(torch.random.get_rng_state(), state)  # no global randomness used
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(pa, pb), name
    assert not torch.equal(a.w_q, c.w_q)
    x = torch.randint(0, 5, (3, 7), generator=torch.Generator().manual_seed(0))
    logits, attn = a.forward_with_attention(x)
    assert logits.shape == (3, 7, 8) and attn.shape == (3, 7, 7)
    assert torch.allclose(attn.sum(-1), torch.ones(3, 7))


@pytest.mark.parametrize(
    "bad",
    [dict(d_model=15), dict(d_model=0), dict(seq_len=0), dict(d_hidden=0), dict(restriction="tokens")],
)
def test_bad_config_raises(bad: dict) -> None:
    with pytest.raises(ValueError):
        ModelConfig(**{**CFG, **bad})
