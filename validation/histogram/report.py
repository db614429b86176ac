"""Writing an :class:`ExperimentResult` to disk (:func:`write_report`): ``summary.json``, ``params.json``,
``curves_<variant>.csv``, ``learning_curves.png``, ``attention_maps.png``, ``attention_unrestricted.png`` and
``report.md`` (docs/histogram.md, "Outputs in DIR").
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import torch

from attnphase.validation.histogram.experiment import ExperimentResult, VariantResult
from attnphase.validation.histogram.plots import plot_attention_grid, plot_learning_curves
from attnphase.validation.histogram.scores import AttentionScore
from attnphase.validation.reference import _num

SUMMARY_KEYS = ("restriction", "val_acc", "val_loss", "score", "r_sem", "r_pos", "train_seconds")
"""Keys present in every variant's entry of ``summary.json``."""

REPARAM_KEYS = ("source", "max_output_diff", "masked_qk_fraction", "before")
"""Extra keys of re-parameterised variants; ``before`` holds ``val_acc, val_loss, score, r_sem, r_pos``."""

#: Why the variants' numbers carry no error bar (``histogram --json``'s ``error_note``).
ERROR_NOTE = ("val_acc, val_loss, score, r_sem, r_pos and the curves carry no error bar: each is one training run's "
              "value (one seed: --seed draws another run; no spread over seeds is computed)")

CURVE_COLUMNS = ("epoch", "train_loss", "train_acc", "val_loss", "val_acc")
"""Columns of ``curves_<variant>.csv``."""


def _score_fields(score: AttentionScore) -> dict[str, float | None]:
    return {"score": _num(score.score), "r_sem": _num(score.r_sem), "r_pos": _num(score.r_pos)}


def variant_summary(result: VariantResult) -> dict[str, Any]:
    """The ``summary.json`` entry of one variant."""
    entry: dict[str, Any] = {"restriction": result.restriction, "val_acc": _num(result.val_acc),
                             "val_loss": _num(result.val_loss), **_score_fields(result.score),
                             "train_seconds": _num(result.train_seconds)}
    info = result.reparam
    if info is not None:
        entry.update(source=info.source, max_output_diff=_num(info.max_output_diff),
                     masked_qk_fraction=_num(info.masked_qk_fraction),
                     before={"val_acc": _num(info.before_val_acc), "val_loss": _num(info.before_val_loss),
                             **_score_fields(info.before_score)})
    return entry


def summary(result: ExperimentResult) -> dict[str, dict[str, Any]]:
    """Variant name -> metrics (keys ``SUMMARY_KEYS``, plus ``REPARAM_KEYS`` for ``*_reparam``)."""
    return {name: variant_summary(v) for name, v in result.variants.items()}


def params(result: ExperimentResult) -> dict[str, Any]:
    """How the run was made: seed, device, configuration, data sizes, baseline, timing."""
    return {"seed": result.seed, "device": result.device, "config": dataclasses.asdict(result.config),
            "n_train": result.n_train, "n_val": result.n_val, "majority_acc": _num(result.majority_acc),
            "n_score_inputs": next(iter(result.variants.values())).score.n_inputs,
            "wall_seconds": _num(result.wall_seconds), "torch_version": torch.__version__}


def write_curves(result: VariantResult, path: Path) -> Path:
    """Write one variant's training curve as CSV."""
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(CURVE_COLUMNS)
        writer.writerows([rec.epoch] + [repr(float(getattr(rec, c))) for c in CURVE_COLUMNS[1:]]
                         for rec in result.curve)
    return path


def render_markdown(result: ExperimentResult) -> str:
    """The text of ``report.md``."""
    cfg = result.config
    lines = [
        "# Histogram task: positional vs semantic attention", "",
        f"Sequences of L = {cfg.seq_len} tokens over T = {cfg.n_tokens}; target = count of each "
        f"position's token. {result.n_train} training / {result.n_val} validation sequences "
        f"(distinct), d = {cfg.d_model}, MLP width {cfg.d_hidden}, Adam lr {cfg.lr:g}, "
        f"batch {cfg.batch_size}, {cfg.epochs} epochs. Seed {result.seed}, device "
        f"`{result.device}`; this run's tasks took {result.wall_seconds:.1f} s wall, the command's start-up and "
        f"outputs apart (a rerun reads the finished tasks back; the variants trained in "
        f"{sum(v.train_seconds for v in result.variants.values()):.1f} s when computed).", "",
        f"Majority-class baseline (always predict the most frequent count): "
        f"validation accuracy {result.majority_acc:.4f}.", "",
        "## Variants", "",
        "| variant | query/key input | val acc | val loss | r_sem | r_pos | score | train s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, v in result.variants.items():
        lines.append(f"| {name} | {v.restriction} | {v.val_acc:.4f} | {v.val_loss:.4f} | {v.score.r_sem:.3f} | "
                     f"{v.score.r_pos:.3f} | {v.score.score:.3f} | {v.train_seconds:.1f} |")
    reparams = [v for v in result.variants.values() if v.reparam is not None]
    if reparams:
        lines += [
            "", "## Re-parameterisation", "",
            "Each restricted model is embedded in the unrestricted architecture (W_Q, W_K "
            "zero on the rows of the hidden half, everything else copied), checked to give "
            f"the same logits, then retrained with plain SGD (lr {cfg.reparam_lr:g}, batch "
            f"{cfg.batch_size}, {cfg.reparam_epochs} epochs).", "",
            "| variant | max abs logit diff | val acc before -> after | score before -> after "
            "| masked QK share after |",
            "|---|---|---|---|---|",
        ]
        lines += [f"| {v.name} | {v.reparam.max_output_diff:.2e} | {v.reparam.before_val_acc:.4f} -> {v.val_acc:.4f} | "
                  f"{v.reparam.before_score.score:.3f} -> {v.score.score:.3f} | {v.reparam.masked_qk_fraction:.2e} |"
                  for v in reparams]
    lines += [
        "", "## Score", "",
        f"Over {next(iter(result.variants.values())).score.n_inputs} validation inputs: "
        "r_sem = mean Pearson correlation, over off-diagonal entries, of the attention "
        "matrix A(x) with the token-equality matrix 1[x_i = x_j] (inputs with all tokens "
        "distinct skipped); r_pos = the same with the leave-one-out mean attention pattern "
        "(the input-independent part). score = r_sem - r_pos: about -1 for a positional "
        "attention, positive for a semantic one.", "",
        "## Files", "",
        "* `summary.json`: variant name -> {" + ", ".join(SUMMARY_KEYS) + "}; re-parameterised "
        "variants add " + ", ".join(REPARAM_KEYS) + " (`before` = metrics before retraining).",
        "* `params.json`: seed, device, configuration, data sizes, majority baseline, timing.",
        "* `curves_<variant>.csv`: " + ", ".join(CURVE_COLUMNS) + " (epoch 0 = before training).",
        "* `learning_curves.png`: the curves drawn (loss and accuracy, training and validation, per variant).",
        "* `attention_maps.png`: positional-only vs semantic-only attention on "
        f"{result.examples.shape[0]} validation inputs (ticks = tokens).",
        "* `attention_unrestricted.png`: unrestricted and re-parameterised variants on the same inputs.",
        "",
    ]
    return "\n".join(lines)


def write_report(result: ExperimentResult, out_dir: Path) -> dict[str, Path]:
    """Write every output file into ``out_dir`` (created if needed); returns them by name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for name, payload in (("summary.json", summary(result)), ("params.json", params(result))):
        written[name] = out_dir / name
        written[name].write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n")
    for name, variant in result.variants.items():
        written[f"curves_{name}.csv"] = write_curves(variant, out_dir / f"curves_{name}.csv")
    plot_learning_curves(result.variants, out_dir / "learning_curves.png", majority_acc=result.majority_acc)
    written["learning_curves.png"] = out_dir / "learning_curves.png"
    restricted = [n for n in ("positional", "semantic") if n in result.attention]
    others = sorted((n for n in result.attention if n not in restricted), key=lambda n: (n != "both", n))
    for name, columns in (("attention_maps.png", restricted), ("attention_unrestricted.png", others)):
        if columns:
            written[name] = plot_attention_grid(result.examples, result.attention, columns, out_dir / name)
    written["report.md"] = out_dir / "report.md"
    written["report.md"].write_text(render_markdown(result))
    return written
