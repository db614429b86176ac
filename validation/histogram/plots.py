"""The histogram task's figures: attention maps and learning curves (matplotlib's object API with the Agg
canvas; no pyplot state)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attnphase.validation.histogram.data import token_equality

if TYPE_CHECKING:
    from attnphase.validation.histogram.experiment import VariantResult

EQUALITY = "token equality"
"""Column name of the reference panel showing ``1[x_i = x_j]``."""


def plot_attention_grid(examples: torch.Tensor, attention: Mapping[str, torch.Tensor], columns: Sequence[str],
                        path: Path) -> Path:
    """Save a grid of attention maps to ``path`` and return it: one row per input of ``examples`` ``(n, L)``, one
    column per variant of ``columns`` (in order; names missing from ``attention`` skipped) with its maps ``(n, L, L)``
    (``[i, j]``: how much query position ``i`` attends to key position ``j``), then the token-equality matrix."""
    panels = [(name, attention[name].cpu().numpy()) for name in columns if name in attention]
    panels.append((EQUALITY, token_equality(examples.cpu()).numpy()))
    (n_rows, seq_len), n_cols = examples.shape, len(panels)
    fig = Figure(figsize=(2.7 * n_cols + 0.6, 2.6 * n_rows + 0.6), constrained_layout=True)
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    for col, (name, maps) in enumerate(panels):
        # Each column has its own colour scale: a positional attention is
        # nearly flat and would vanish on the scale of a sharp semantic one.
        top = 1.0 if name == EQUALITY else max(float(np.max(maps)), 1e-12)
        for row in range(n_rows):
            tokens = [str(int(t)) for t in examples[row]]
            ax = axes[row, col]
            image = ax.imshow(maps[row], cmap="viridis", vmin=0.0, vmax=top)
            ax.set_xticks(range(seq_len), tokens, fontsize=7)
            ax.set_yticks(range(seq_len), tokens, fontsize=7)
            if col == 0:
                ax.set_ylabel(f"input {row}: query token", fontsize=8)
        axes[0, col].set_title(name, fontsize=10)
        axes[-1, col].set_xlabel("key token", fontsize=8)
        label = "1[x_i = x_j]" if name == EQUALITY else "attention weight"
        fig.colorbar(image, ax=axes[:, col].tolist(), location="bottom", shrink=0.8, aspect=25, label=label)
    fig.savefig(path, dpi=110)
    return path


def plot_learning_curves(variants: Mapping[str, "VariantResult"], path: Path, *, majority_acc: float | None = None
                         ) -> Figure:
    """Save the training curves of every variant and return the Figure: a row for the variants trained from
    scratch, one for the re-parameterised ones (their SGD retraining); cross-entropy and per-position accuracy,
    training solid, validation dashed, the majority-class baseline on the accuracy panels."""
    groups = [("trained from scratch", [n for n, v in variants.items() if v.reparam is None]),
              ("re-parameterised, then retrained", [n for n, v in variants.items() if v.reparam is not None])]
    groups = [(title, names) for title, names in groups if names]
    if not groups:
        raise ValueError("nothing to plot: no variant")
    fig = Figure(figsize=(11, 3.6 * len(groups) + 0.4), constrained_layout=True)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(groups), 2, squeeze=False)
    colours = {n: f"C{i}" for i, n in enumerate(variants)}
    for row, (title, names) in enumerate(groups):
        loss, acc = axes[row]
        for name in names:
            curve = variants[name].curve
            epochs = [rec.epoch for rec in curve]
            for ax, field in ((loss, "loss"), (acc, "acc")):
                ax.plot(epochs, [getattr(rec, f"train_{field}") for rec in curve], "-", color=colours[name],
                        marker="." if len(epochs) < 30 else None, label=f"{name}, training")
                ax.plot(epochs, [getattr(rec, f"val_{field}") for rec in curve], "--", color=colours[name],
                        label=f"{name}, validation")
        if majority_acc is not None:
            acc.axhline(majority_acc, color="grey", ls=":", lw=1.2, label="majority-class baseline")
        loss.set(yscale="log", ylabel="cross-entropy")
        acc.set_ylabel("per-position accuracy")
        for ax in (loss, acc):
            ax.set_xlabel("SGD retraining epoch" if "re-param" in title else "Adam epoch")
            ax.set_title(f"{'loss' if ax is loss else 'accuracy'}: {title}", fontsize=10)
            ax.grid(alpha=0.3, which="both")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        acc.legend(fontsize=8, loc="lower right", ncol=1 if len(names) < 4 else 2)
    fig.savefig(path, dpi=110)
    return fig
