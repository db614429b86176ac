"""The positional/semantic attention score on attention matrices of known character."""

from __future__ import annotations

import pytest
import torch

from attnphase.validation.histogram.data import sample_sequences, token_equality
from attnphase.validation.histogram.scores import attention_score, rowwise_correlation


def _tokens(n: int = 400, L: int = 8, T: int = 6) -> torch.Tensor:
    return sample_sequences(n, L, T, torch.Generator().manual_seed(0))


def test_equal_token_attention_is_semantic() -> None:
    x = _tokens()
    eq = token_equality(x)
    attn = eq / eq.sum(-1, keepdim=True)  # attend uniformly to equal tokens
    s = attention_score(attn, x)
    assert s.r_sem > 0.9
    assert abs(s.r_pos) < 0.05
    assert s.score > 0.85
    assert s.n_inputs == 400 and 0 < s.n_sem <= 400


def test_fixed_pattern_is_positional() -> None:
    x = _tokens()
    L = x.shape[1]
    logits = torch.randn(L, L, generator=torch.Generator().manual_seed(1))
    attn = torch.softmax(logits, -1).expand(x.shape[0], L, L)
    s = attention_score(attn, x)
    assert s.r_pos == pytest.approx(1.0, abs=1e-9)
    assert abs(s.r_sem) < 0.1
    assert s.score < -0.9


def test_uniform_attention_scores_zero() -> None:
    x = _tokens()
    L = x.shape[1]
    s = attention_score(torch.full((x.shape[0], L, L), 1.0 / L), x)
    assert s.r_sem == 0.0 and s.r_pos == 0.0 and s.score == 0.0


def test_rowwise_correlation_flags_constant_reference() -> None:
    a = torch.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]], dtype=torch.float64)
    b = torch.tensor([[2.0, 4.0, 6.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    corr, defined = rowwise_correlation(a, b)
    assert corr.tolist() == pytest.approx([1.0, 0.0])
    assert defined.tolist() == [True, False]


def test_bad_shapes_raise() -> None:
    x = _tokens(n=4)
    with pytest.raises(ValueError):
        attention_score(torch.ones(4, 8, 7), x)
    with pytest.raises(ValueError):
        attention_score(torch.ones(1, 8, 8), x[:1])


def test_a_correlation_never_exceeds_one() -> None:
    """A row correlated with itself: 493 of 2000 random rows gave 1.0000000000000002 (histogram --json printed r_pos
    that way); the correlation is clipped to [-1, 1]."""
    a = torch.randn(2000, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    corr, defined = rowwise_correlation(a, a)
    assert bool(defined.all()) and float(corr.max()) == 1.0 and float(rowwise_correlation(a, -a)[0].min()) == -1.0
