"""Minibatch training of the histogram transformer with cross-entropy.

Accuracy everywhere is per position: the fraction of (sequence, position)
pairs whose predicted count is right. Shuffling uses an explicit CPU
``torch.Generator``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn
from tqdm.auto import tqdm

from attnphase.validation.histogram.data import HistogramData

Optimizer = Literal["adam", "sgd"]


@dataclass(frozen=True)
class TrainConfig:
    """How to train: ``epochs`` passes over the training set (0: only evaluate) in minibatches of ``batch_size``
    sequences, ``optimizer`` ``"adam"`` (default betas) or ``"sgd"`` (plain) at rate ``lr``; ``eval_batch_size``
    sequences per forward pass when evaluating."""

    epochs: int = 200
    batch_size: int = 32
    lr: float = 1e-3
    optimizer: Optimizer = "adam"
    eval_batch_size: int = 4096

    def __post_init__(self) -> None:
        if self.epochs < 0:
            raise ValueError(f"epochs must be >= 0, got {self.epochs}")
        if self.batch_size < 1 or self.eval_batch_size < 1:
            raise ValueError(f"batch sizes must be >= 1, got {self.batch_size}, {self.eval_batch_size}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be positive and finite, got {self.lr}")
        if self.optimizer not in ("adam", "sgd"):
            raise ValueError(f"optimizer must be 'adam' or 'sgd', got {self.optimizer!r}")


@dataclass(frozen=True)
class EpochRecord:
    """Metrics after ``epoch`` completed epochs: the mean cross-entropy and per-position accuracy over the epoch's
    minibatches (epoch 0: the initial model on the whole training set), then on the validation set."""

    epoch: int
    train_loss: float
    train_acc: float
    val_loss: float
    val_acc: float


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 4096) -> tuple[float, float]:
    """Mean cross-entropy and per-position accuracy of ``model`` on ``(x, y)``."""
    was_training = model.training
    model.eval()
    loss_sum, correct, count = 0.0, 0, 0
    for start in range(0, x.shape[0], batch_size):
        logits = model(x[start : start + batch_size])
        target = y[start : start + batch_size]
        loss_sum += float(nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten(), reduction="sum"))
        correct += int((logits.argmax(-1) == target).sum())
        count += target.numel()
    model.train(was_training)
    return loss_sum / count, correct / count


def train(model: nn.Module, data: HistogramData, config: TrainConfig, generator: torch.Generator, *,
          progress: bool = False, desc: str = "train") -> tuple[EpochRecord, ...]:
    """Train ``model`` in place on ``data`` (already on the model's device), each epoch in an order drawn from
    ``generator`` (a CPU generator; the last, smaller batch kept); returns the curve, an epoch-0 row for the initial
    model first, the final metrics last."""
    device = next(model.parameters()).device
    optimizer = (torch.optim.Adam if config.optimizer == "adam" else torch.optim.SGD)(model.parameters(), lr=config.lr)
    n_train, n_pos = data.train_x.shape[0], data.train_y.numel()
    curve = [EpochRecord(0, *evaluate(model, data.train_x, data.train_y, config.eval_batch_size),
                         *evaluate(model, data.val_x, data.val_y, config.eval_batch_size))]
    model.train()
    with tqdm(range(1, config.epochs + 1), desc=desc, disable=not progress, leave=False) as bar:
        for epoch in bar:
            order = torch.randperm(n_train, generator=generator).to(device)
            loss_sum = torch.zeros((), device=device)
            correct = torch.zeros((), device=device, dtype=torch.long)
            for start in range(0, n_train, config.batch_size):
                idx = order[start : start + config.batch_size]
                x, y = data.train_x[idx], data.train_y[idx]
                logits = model(x)
                loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                with torch.no_grad():
                    loss_sum += loss.detach() * y.numel()
                    correct += (logits.argmax(-1) == y).sum()
            curve.append(EpochRecord(epoch, float(loss_sum) / n_pos, int(correct) / n_pos,
                                     *evaluate(model, data.val_x, data.val_y, config.eval_batch_size)))
            bar.set_postfix(loss=f"{curve[-1].train_loss:.3f}", val_acc=f"{curve[-1].val_acc:.3f}")
    model.eval()
    return tuple(curve)
