"""Data of the histogram task: token sequences and their per-position counts (docs/histogram.md, "Task")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class HistogramData:
    """A train/validation split of the histogram task: sequences int64 ``(n, seq_len)`` with entries in
    ``[0, n_tokens)``, their targets (counts in ``[1, seq_len]``); the validation sequences are disjoint from the
    training ones."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    val_x: torch.Tensor
    val_y: torch.Tensor
    n_tokens: int

    def to(self, device: torch.device | str) -> HistogramData:
        """The same split with every tensor moved to ``device``."""
        return HistogramData(self.train_x.to(device), self.train_y.to(device), self.val_x.to(device),
                             self.val_y.to(device), self.n_tokens)


def histogram_labels(x: torch.Tensor) -> torch.Tensor:
    """Per-position counts: ``y[..., i] = #{j : x[..., j] == x[..., i]}`` for ``x`` of shape ``(..., L)``."""
    return token_equality(x, torch.long).sum(dim=-1)


def token_equality(x: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The token-equality matrix ``E[..., i, j] = 1[x_i == x_j]``, shape ``(..., L, L)``."""
    return (x.unsqueeze(-1) == x.unsqueeze(-2)).to(dtype)


def sample_sequences(n: int, seq_len: int, n_tokens: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` distinct uniform random sequences, int64 ``(n, seq_len)``, on the CPU, in order of first draw (so the
    result depends only on the generator's state); ValueError for non-positive sizes or ``n_tokens ** seq_len < n``.
    """
    if n < 1 or seq_len < 1 or n_tokens < 1:
        raise ValueError(f"need n >= 1, seq_len >= 1 and n_tokens >= 1, got n={n}, seq_len={seq_len}, "
                         f"n_tokens={n_tokens}")
    if n_tokens**seq_len < n:
        raise ValueError(f"only {n_tokens}**{seq_len} = {n_tokens**seq_len} distinct sequences exist, "
                         f"cannot draw {n} distinct ones")
    kept = torch.empty((0, seq_len), dtype=torch.long)
    while kept.shape[0] < n:
        draw = torch.randint(0, n_tokens, (2 * (n - kept.shape[0]) + 16, seq_len), generator=generator)
        kept = torch.cat([kept, draw])
        _, first = np.unique(kept.numpy(), axis=0, return_index=True)  # each distinct row's first occurrence
        kept = kept[torch.from_numpy(np.sort(first))]  # in order of first draw
    return kept[:n]


def make_dataset(n_samples: int, seq_len: int, n_tokens: int, val_fraction: float,
                 generator: torch.Generator) -> HistogramData:
    """Draw ``n_samples`` distinct sequences; the last ``round(val_fraction * n_samples)`` (at least one) are the
    validation set (a random split); ValueError if ``val_fraction`` is not in (0, 1) or a split would be empty."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    n_val = max(1, round(val_fraction * n_samples))
    if n_val >= n_samples:
        raise ValueError(f"n_samples={n_samples} with val_fraction={val_fraction} leaves no training data")
    x = sample_sequences(n_samples, seq_len, n_tokens, generator)
    y = histogram_labels(x)
    n_train = n_samples - n_val
    return HistogramData(x[:n_train], y[:n_train], x[n_train:], y[n_train:], n_tokens)


def majority_baseline(train_y: torch.Tensor, val_y: torch.Tensor) -> float:
    """Validation accuracy of always predicting the training set's most frequent count."""
    majority = torch.bincount(train_y.flatten().cpu()).argmax()
    return float((val_y.cpu() == majority).double().mean())
