"""The histogram experiment as tasks of the execution layer (:mod:`attnphase.execution`), in two stages:
:func:`train_job` trains one variant from scratch (Adam); :func:`reparam_job` embeds one restricted variant's
trained parameters in the unrestricted architecture and retrains it (SGD): variant ``<name>_reparam``.

Every task rebuilds the data from the master seed and draws its own streams, and runs the same functions as
:func:`~attnphase.validation.histogram.experiment.run_experiment`: its numbers are those of the in-process run.
A key hashes the configuration but its list of variants, the seed, the variant, the device type and
:func:`histogram_version`, the code of the histogram package but for its presentation modules.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attnphase.execution import ExecutorSpec, Outcome, ResultStore, Task, code_version, run_tasks, task_key
from attnphase.validation.histogram.experiment import (REPARAM_SUFFIX, ExperimentResult, HistogramConfig, VariantResult,
                                                       assemble, prepare, reparameterise, train_variant)
from attnphase.validation.histogram.model import HistogramTransformer

#: The package a histogram task runs (its source is hashed into every key) ...
HISTOGRAM_CODE = "attnphase.validation.histogram"
#: ... but for the modules that only present results: an edit there keeps the stored tasks valid.
PRESENTATION = ("report.py", "plots.py", "dataset.py")


def histogram_version() -> str:
    return code_version(HISTOGRAM_CODE, exclude=PRESENTATION)


@dataclass(frozen=True)
class VariantJob:
    """One task's argument: ``name`` the variant trained from scratch (stage 1) or the restricted source (stage 2,
    ``state`` its trained parameters as numpy arrays); ``progress``: per-epoch bars, not part of the key."""

    config: HistogramConfig
    seed: int
    name: str
    device: str
    progress: bool = False
    state: dict[str, np.ndarray] | None = None


@dataclass(frozen=True)
class TrainedVariant:
    """A task's result: the variant's metrics, its attention maps on the plotted inputs
    ``(n_plot, L, L)``, and (stage 1) its trained parameters."""

    result: VariantResult
    attention: np.ndarray
    state: dict[str, np.ndarray] | None = None


def train_job(job: VariantJob) -> TrainedVariant:
    """Variant ``job.name`` trained from scratch, as :func:`~.experiment.run_experiment` trains it."""
    device = torch.device(job.device)
    setup = prepare(job.config, job.seed, device)
    result, model, attention = train_variant(job.config, job.seed, job.name, setup, device, progress=job.progress)
    state = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
    return TrainedVariant(result, attention.numpy(), state)


def reparam_job(job: VariantJob) -> TrainedVariant:
    """The restricted variant ``job.name`` (parameters ``job.state``) embedded and retrained."""
    if job.state is None:
        raise ValueError("reparam_job needs the source variant's trained parameters")
    device = torch.device(job.device)
    setup = prepare(job.config, job.seed, device)
    model = HistogramTransformer(job.config.model_config(job.name))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in job.state.items()})
    model = model.to(device).eval()
    result, attention = reparameterise(job.config, job.seed, model, setup, progress=job.progress)
    return TrainedVariant(result, attention.numpy())


def _identity(config: HistogramConfig, seed: int, variant: str, device: str) -> dict[str, Any]:
    """What a variant's numbers depend on, its key (module docstring): a variant's streams ignore the others."""
    sizes = {k: v for k, v in dataclasses.asdict(config).items() if k != "variants"}
    return {"config": sizes, "seed": seed, "variant": variant, "device": torch.device(device).type}


def train_task(config: HistogramConfig, seed: int, name: str, device: str, version: str,
               progress: bool = False) -> Task:
    key = task_key(train_job, _identity(config, seed, name, device), version)
    return Task(key, name, train_job, VariantJob(config, seed, name, device, progress))


def reparam_task(config: HistogramConfig, seed: int, name: str, device: str, state: dict[str, np.ndarray],
                 version: str, progress: bool = False) -> Task:
    """Stage 2 of source ``name``; its key needs no hash of ``state``: stage 1's key fixes it."""
    variant = name + REPARAM_SUFFIX
    key = task_key(reparam_job, _identity(config, seed, variant, device), version)
    return Task(key, variant, reparam_job, VariantJob(config, seed, name, device, progress, state))


@dataclass(frozen=True)
class HistogramRun:
    """The tasks of one experiment: its ``result`` (None when a task failed), one outcome per task (stage 1 then
    stage 2), their ``counts`` (total, computed, stored, failed), ``failures`` (one line, "" when none) and the
    code ``version`` of the keys."""

    result: ExperimentResult | None
    outcomes: tuple[Outcome, ...]
    counts: dict[str, int]
    failures: str
    version: str


def run_histogram(config: HistogramConfig, seed: int, device: torch.device, *,
                  executor: ExecutorSpec = ExecutorSpec(), store: ResultStore | None = None,
                  fresh: bool = False, quiet: bool = True) -> HistogramRun:
    """Stage 1 then stage 2 as tasks on ``executor``, read back from ``store`` where done (unless
    ``fresh``); the :class:`~.experiment.ExperimentResult` equals :func:`~.experiment.run_experiment`'s
    (but for the wall times).  A failed variant leaves its re-parameterisation unrun."""
    from attnphase.execution.progress import TaskBar, failure_summary, task_counts

    start = time.perf_counter()
    version = histogram_version()
    dev, bars = str(device), executor.in_process and not quiet
    first = [train_task(config, seed, n, dev, version, bars) for n in config.variants]
    with TaskBar("histogram: train", quiet=quiet) as bar:
        outs1 = run_tasks(first, executor=executor, store=store, fresh=fresh, version=version, progress=bar)
    by_name = dict(zip(config.variants, outs1))
    second = [reparam_task(config, seed, n, dev, o.value.state, version, bars)
              for n, o in by_name.items() if n != "both" and o.ok]
    outs2: list[Outcome] = []
    if second:
        with TaskBar("histogram: re-parameterise", quiet=quiet) as bar:
            outs2 = run_tasks(second, executor=executor, store=store, fresh=fresh, version=version, progress=bar)
    outs = outs1 + outs2
    failures = failure_summary(outs)
    unrun = [n + REPARAM_SUFFIX for n, o in by_name.items() if n != "both" and not o.ok]
    if unrun:
        failures += f"; not run (their source failed): {', '.join(unrun)}"
    result = None
    if not failures:
        variants = {o.label: (o.value.result, torch.from_numpy(o.value.attention)) for o in outs}
        setup = prepare(config, seed, torch.device("cpu"))  # data sizes, baseline, plotted inputs
        result = assemble(config, seed, device, setup, variants, time.perf_counter() - start)
    return HistogramRun(result, tuple(outs), task_counts(outs), failures, version)
