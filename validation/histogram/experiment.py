"""The histogram experiment: train each variant, score it, re-parameterise the restricted ones.

One master seed is split with ``numpy.random.SeedSequence`` into independent
streams (data, plotted examples, and per variant initialisation and
shuffling), each fed to its own ``torch.Generator``; no global seed is set.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from attnphase.validation.histogram.data import HistogramData, majority_baseline, make_dataset
from attnphase.validation.histogram.model import RESTRICTIONS, HistogramTransformer, ModelConfig, build_model
from attnphase.validation.histogram.reparam import embed_unrestricted, masked_qk_fraction, max_output_difference
from attnphase.validation.histogram.scores import AttentionScore, collect_attention, score_model
from attnphase.validation.histogram.train import EpochRecord, TrainConfig, evaluate, train

REPARAM_SUFFIX = "_reparam"
"""Variant ``"positional_reparam"`` is ``"positional"`` embedded in the unrestricted model and retrained."""


@dataclass(frozen=True)
class HistogramConfig:
    """Sizes and schedule of one histogram experiment (docs/histogram.md): sequence length L (``seq_len``),
    alphabet size T (``n_tokens``), distinct sequences drawn (``n_samples``, a share ``val_fraction`` held out),
    the model's widths, Adam's ``epochs`` and ``lr``, the SGD retraining's ``reparam_epochs`` and ``reparam_lr``
    after re-parameterisation, the validation inputs of the attention score (``n_score``, capped at the validation
    size) and of the plotted maps (``n_plot``), and the ``variants`` trained from scratch (every restricted one is
    also re-parameterised: variant ``<name>_reparam``)."""

    seq_len: int = 10
    n_tokens: int = 15
    n_samples: int = 50_000
    val_fraction: float = 0.2
    d_model: int = 64
    d_hidden: int = 128
    epochs: int = 200
    batch_size: int = 32
    lr: float = 1e-3
    reparam_epochs: int = 10
    reparam_lr: float = 1e-2
    n_score: int = 2000
    n_plot: int = 3
    variants: tuple[str, ...] = RESTRICTIONS

    def __post_init__(self) -> None:
        for name in ("seq_len", "n_tokens", "n_samples", "n_score", "n_plot"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 < self.val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in (0, 1), got {self.val_fraction}")
        if self.seq_len < 3:
            raise ValueError(f"seq_len must be >= 3 for the attention score, got {self.seq_len}")
        unknown = [v for v in self.variants if v not in RESTRICTIONS]
        if unknown or not self.variants or len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants must be distinct names from {', '.join(RESTRICTIONS)}, got {self.variants}")
        self.model_config("both")  # the derived configs validate the rest
        self.train_config()
        self.reparam_train_config()

    @classmethod
    def paper(cls) -> HistogramConfig:
        """The paper's sizes: L = 10, T = 15, 50 000 samples, d = 64, 200 epochs."""
        return cls()

    @classmethod
    def quick(cls) -> HistogramConfig:
        """Paper's L, T and widths, 10 000 samples, 20 epochs: about a minute on 2 CPU cores."""
        return cls(n_samples=10_000, epochs=20, reparam_epochs=3)

    @classmethod
    def tiny(cls) -> HistogramConfig:
        """L = 5, T = 4, 300 samples, d = 16, 2 + 1 epochs: a second or two (tests, smoke runs)."""
        return cls(seq_len=5, n_tokens=4, n_samples=300, d_model=16, d_hidden=16, epochs=2, reparam_epochs=1,
                   n_score=50, n_plot=2)

    def model_config(self, restriction: str) -> ModelConfig:
        """The model sizes with the given attention restriction."""
        return ModelConfig(seq_len=self.seq_len, n_tokens=self.n_tokens, d_model=self.d_model, d_hidden=self.d_hidden,
                           restriction=restriction)  # type: ignore[arg-type]

    def train_config(self) -> TrainConfig:
        """Adam training from scratch."""
        return TrainConfig(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr)

    def reparam_train_config(self) -> TrainConfig:
        """Plain SGD for the local retraining after re-parameterisation."""
        return TrainConfig(epochs=self.reparam_epochs, batch_size=self.batch_size, lr=self.reparam_lr, optimizer="sgd")


@dataclass(frozen=True)
class ReparamInfo:
    """What happened to a re-parameterised variant: the restricted ``source`` it was embedded from, the largest
    logit difference restricted vs embedded on the validation set (``max_output_diff``), the embedded model's
    validation accuracy, cross-entropy and attention score before retraining, and after retraining the share of
    ``|W_Q|^2 + |W_K|^2`` in the rows of the half the source could not see (``masked_qk_fraction``)."""

    source: str
    max_output_diff: float
    before_val_acc: float
    before_val_loss: float
    before_score: AttentionScore
    masked_qk_fraction: float


@dataclass(frozen=True)
class VariantResult:
    """One trained variant (``"positional"``, ..., ``"positional_reparam"``): the final model's restriction, its
    training curve (of the SGD retraining for a re-parameterised one), final validation accuracy and cross-entropy,
    attention score, training wall time, and ``reparam`` for a re-parameterised variant (else None)."""

    name: str
    restriction: str
    curve: tuple[EpochRecord, ...]
    val_acc: float
    val_loss: float
    score: AttentionScore
    train_seconds: float
    reparam: ReparamInfo | None = None


@dataclass(frozen=True)
class ExperimentResult:
    """Everything the report needs: the configuration, master seed, device, the training and validation sizes, the
    majority-class baseline's validation accuracy, the results by variant name (training order), the plotted
    validation inputs ``examples`` ``(n_plot, L)`` with each variant's attention maps on them ``(n_plot, L, L)``,
    and the wall time."""

    config: HistogramConfig
    seed: int
    device: str
    n_train: int
    n_val: int
    majority_acc: float
    variants: dict[str, VariantResult]
    examples: torch.Tensor
    attention: dict[str, torch.Tensor] = field(default_factory=dict)
    wall_seconds: float = 0.0


def _generator(seq: np.random.SeedSequence) -> torch.Generator:
    return torch.Generator().manual_seed(int(seq.generate_state(1, dtype=np.uint64)[0]))


def variant_streams(seed: int, name: str) -> tuple[np.random.SeedSequence, ...]:
    """The (initialisation, shuffling, retraining) streams of variant ``name``: the children of
    stream ``2 + RESTRICTIONS.index(name)`` of the master seed, whatever other variants run."""
    return tuple(np.random.SeedSequence(seed, spawn_key=(2 + RESTRICTIONS.index(name),)).spawn(3))


@dataclass(frozen=True)
class Setup:
    """What every variant of one (config, seed) shares, rebuilt identically wherever it is needed: the split (stream
    0 of the master seed, on the device), the inputs of the attention score, the plotted inputs (stream 1)."""

    data: HistogramData
    score_x: torch.Tensor
    examples: torch.Tensor


def prepare(config: HistogramConfig, seed: int, device: torch.device) -> Setup:
    """The data, score inputs and plotted inputs of ``seed`` (streams 0 and 1 of the master seed)."""
    data_seq, plot_seq = (np.random.SeedSequence(seed, spawn_key=(k,)) for k in (0, 1))
    data = make_dataset(config.n_samples, config.seq_len, config.n_tokens, config.val_fraction,
                        _generator(data_seq)).to(device)
    n_val = data.val_x.shape[0]
    pick = torch.randperm(n_val, generator=_generator(plot_seq))[: config.n_plot]
    return Setup(data=data, score_x=data.val_x[: min(config.n_score, n_val)], examples=data.val_x[pick.to(device)])


def _finish(name: str, model: torch.nn.Module, curve: tuple[EpochRecord, ...], score_x: torch.Tensor, seconds: float,
            reparam: ReparamInfo | None = None) -> VariantResult:
    return VariantResult(name, model.config.restriction, curve, curve[-1].val_acc, curve[-1].val_loss,
                         score_model(model, score_x), seconds, reparam)


def train_variant(config: HistogramConfig, seed: int, name: str, setup: Setup, device: torch.device, *,
                  progress: bool = False) -> tuple[VariantResult, HistogramTransformer, torch.Tensor]:
    """Variant ``name`` trained from scratch (Adam): its result, the model, its attention on the examples."""
    init_seq, shuffle_seq, _ = variant_streams(seed, name)
    t0 = time.perf_counter()
    model = build_model(config.model_config(name), _generator(init_seq), device)
    curve = train(model, setup.data, config.train_config(), _generator(shuffle_seq), progress=progress, desc=name)
    result = _finish(name, model, curve, setup.score_x, time.perf_counter() - t0)
    return result, model, collect_attention(model, setup.examples)


def reparameterise(config: HistogramConfig, seed: int, model: HistogramTransformer, setup: Setup, *,
                   progress: bool = False) -> tuple[VariantResult, torch.Tensor]:
    """The restricted ``model`` embedded in the unrestricted architecture and retrained (SGD):
    variant ``<restriction>_reparam``'s result and its attention on the examples."""
    name = model.config.restriction
    reparam_seq = variant_streams(seed, name)[2]
    data = setup.data
    t0 = time.perf_counter()
    full = embed_unrestricted(model)
    diff = max_output_difference(model, full, data.val_x)
    before_loss, before_acc = evaluate(full, data.val_x, data.val_y)
    before_score = score_model(full, setup.score_x)
    curve = train(full, data, config.reparam_train_config(), _generator(reparam_seq), progress=progress,
                  desc=name + REPARAM_SUFFIX)
    info = ReparamInfo(name, diff, before_acc, before_loss, before_score, masked_qk_fraction(full, name))
    result = _finish(name + REPARAM_SUFFIX, full, curve, setup.score_x, time.perf_counter() - t0, info)
    return result, collect_attention(full, setup.examples)


def assemble(config: HistogramConfig, seed: int, device: torch.device, setup: Setup,
             variants: dict[str, tuple[VariantResult, torch.Tensor]], wall_seconds: float) -> ExperimentResult:
    """The experiment's result from its variants' (result, attention), in ``config.variants``'
    order, each restricted variant followed by its re-parameterisation."""
    order = [n for v in config.variants for n in ((v,) if v == "both" else (v, v + REPARAM_SUFFIX))]
    data = setup.data
    return ExperimentResult(config, seed, str(device), int(data.train_x.shape[0]), int(data.val_x.shape[0]),
                            majority_baseline(data.train_y, data.val_y), {n: variants[n][0] for n in order},
                            setup.examples.cpu(), {n: variants[n][1] for n in order}, wall_seconds)


def run_experiment(config: HistogramConfig, seed: int, device: torch.device, *,
                   progress: bool = False) -> ExperimentResult:
    """Train every variant of ``config`` on ``device`` and re-parameterise the restricted ones, in
    this process (``attnphase histogram`` runs the same steps as tasks: :mod:`.jobs`)."""
    start = time.perf_counter()
    setup = prepare(config, seed, device)
    variants: dict[str, tuple[VariantResult, torch.Tensor]] = {}
    for name in config.variants:
        result, model, attention = train_variant(config, seed, name, setup, device, progress=progress)
        variants[name] = (result, attention)
        if name != "both":
            variants[name + REPARAM_SUFFIX] = reparameterise(config, seed, model, setup, progress=progress)
    return assemble(config, seed, device, setup, variants, time.perf_counter() - start)
