"""Data of the histogram task: labels are counts, sequences are distinct and seeded."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnphase.validation.histogram.data import (
    histogram_labels,
    majority_baseline,
    make_dataset,
    sample_sequences,
    token_equality,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), min_size=12, max_size=12), min_size=1, max_size=5))
def test_labels_are_counts(rows: list[list[int]]) -> None:
    x = torch.tensor(rows)
    y = histogram_labels(x)
    for seq, labels in zip(rows, y.tolist()):
        counts = Counter(seq)
        assert labels == [counts[t] for t in seq]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=9))
def test_token_equality_is_symmetric_with_unit_diagonal(seq: list[int]) -> None:
    eq = token_equality(torch.tensor(seq))
    assert torch.equal(eq, eq.T)
    assert torch.all(eq.diagonal() == 1)
    assert torch.equal(eq.sum(-1).long(), histogram_labels(torch.tensor(seq)))


def test_sample_sequences_properties() -> None:
    a = sample_sequences(70, 4, 3, torch.Generator().manual_seed(1))  # 70 of the 81 sequences
    assert a.shape == (70, 4) and a.dtype == torch.long
    assert a.min() >= 0 and a.max() < 3
    assert torch.unique(a, dim=0).shape[0] == 70
    b = sample_sequences(70, 4, 3, torch.Generator().manual_seed(1))
    c = sample_sequences(70, 4, 3, torch.Generator().manual_seed(2))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_sample_sequences_rejects_impossible_requests() -> None:
    with pytest.raises(ValueError, match="distinct"):
        sample_sequences(82, 4, 3, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError):
        sample_sequences(0, 4, 3, torch.Generator().manual_seed(0))


def test_split_is_disjoint_and_labelled() -> None:
    data = make_dataset(400, 6, 5, 0.25, torch.Generator().manual_seed(3))
    assert data.train_x.shape == (300, 6) and data.val_x.shape == (100, 6)
    train = {tuple(r) for r in data.train_x.tolist()}
    val = {tuple(r) for r in data.val_x.tolist()}
    assert not train & val
    assert torch.equal(data.train_y, histogram_labels(data.train_x))
    assert torch.equal(data.val_y, histogram_labels(data.val_x))
    with pytest.raises(ValueError, match="val_fraction"):
        make_dataset(400, 6, 5, 1.0, torch.Generator())


def test_majority_baseline() -> None:
    train_y = torch.tensor([[1, 1, 2]])
    val_y = torch.tensor([[1, 2, 2, 1]])
    assert majority_baseline(train_y, val_y) == pytest.approx(0.5)
