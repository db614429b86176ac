"""The histogram experiment as tasks: same numbers as the in-process run, the store, the command's options."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from attnphase.cli import main
from attnphase.execution import ExecutorSpec, ResultStore
from attnphase.validation.histogram import jobs
from attnphase.validation.histogram.experiment import ExperimentResult, HistogramConfig, run_experiment
from attnphase.validation.histogram.jobs import reparam_task, run_histogram, train_task

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TINY = HistogramConfig.tiny()
CPU = torch.device("cpu")


def numbers(result: ExperimentResult) -> dict[str, Any]:
    """Everything a run computes, but for the wall times."""
    return {
        "variants": {n: dataclasses.replace(v, train_seconds=0.0) for n, v in result.variants.items()},
        "order": list(result.variants),
        "attention": {n: a.numpy().tolist() for n, a in result.attention.items()},
        "examples": result.examples.tolist(),
        "data": (result.n_train, result.n_val, result.majority_acc, result.seed, result.device, result.config),
    }


@pytest.fixture(scope="module")
def in_process() -> ExperimentResult:
    return run_experiment(TINY, seed=5, device=CPU)


def test_tasks_give_the_in_process_numbers_and_a_rerun_reads_them_back(in_process, tmp_path) -> None:
    store = ResultStore(tmp_path / "tasks")
    run = run_histogram(TINY, 5, CPU, store=store)
    assert run.counts == {"total": 5, "computed": 5, "stored": 0, "failed": 0} and run.failures == ""
    assert numbers(run.result) == numbers(in_process)
    assert len(store.keys()) == 5
    again = run_histogram(TINY, 5, CPU, store=store)
    assert again.counts == {"total": 5, "computed": 0, "stored": 5, "failed": 0}
    assert numbers(again.result) == numbers(in_process)
    fresh = run_histogram(TINY, 5, CPU, store=store, fresh=True)
    assert fresh.counts["computed"] == 5 and numbers(fresh.result) == numbers(in_process)


@pytest.mark.heavy
def test_tasks_on_a_dask_cluster_give_the_in_process_numbers(in_process) -> None:
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    from attnphase.execution.executor import worker_env

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, env=worker_env(2, 2)) as cluster:
        run = run_histogram(TINY, 5, CPU, executor=ExecutorSpec(scheduler=cluster.scheduler_address))
    assert run.counts["computed"] == 5
    assert numbers(run.result) == numbers(in_process)


def test_keys_follow_config_seed_variant_and_device_only() -> None:
    state = {"w": np.zeros(2)}
    key = train_task(TINY, 5, "semantic", "cpu", "v1").key
    assert train_task(TINY, 5, "semantic", "cpu", "v1", progress=True).key == key
    assert train_task(dataclasses.replace(TINY, variants=("semantic",)), 5, "semantic", "cpu", "v1").key == key
    assert len({key, train_task(TINY, 6, "semantic", "cpu", "v1").key,
                train_task(TINY, 5, "positional", "cpu", "v1").key,
                train_task(dataclasses.replace(TINY, epochs=3), 5, "semantic", "cpu", "v1").key,
                train_task(TINY, 5, "semantic", "cpu", "v2").key,
                train_task(TINY, 5, "semantic", "cuda:0", "v1").key,
                reparam_task(TINY, 5, "semantic", "cpu", state, "v1").key}) == 7
    assert reparam_task(TINY, 5, "semantic", "cpu", state, "v1").label == "semantic_reparam"


@pytest.fixture
def tiny_quick(monkeypatch):
    """``--quick`` runs the tiny configuration."""
    monkeypatch.setattr(HistogramConfig, "quick", classmethod(lambda cls: cls.tiny()))


def _run(argv: list[str], capsys) -> tuple[int, dict[str, Any], str]:
    code = main(["histogram", "--quick", "--seed", "5", "--workers", "1", "--quiet", "--json", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_command_resumes_from_the_store_and_fresh_recomputes(tiny_quick, tmp_path, capsys, in_process) -> None:
    out = tmp_path / "h"
    code, first, err = _run(["--out", str(out)], capsys)
    assert code == 0 and first.pop("tasks") == {"total": 5, "computed": 5, "stored": 0, "failed": 0}
    assert "tasks: 5 computed, 0 from the store, 0 failed" in err
    assert first["semantic"]["val_acc"] == in_process.variants["semantic"].val_acc
    # the run's parameters and why its numbers carry no bar beside them (README: every number has one, or a note)
    assert first["params"]["seed"] == 5 and first["params"]["config"]["seq_len"] == 5
    assert first["error_note"].startswith("val_acc, val_loss, score, r_sem, r_pos and the curves carry no error bar")
    assert f"attnphase: note: {first['error_note']}" in err  # said on stderr, as without --json
    first["params"].pop("wall_seconds")  # this run's, a rerun from the store has its own
    code, again, err = _run(["--out", str(out)], capsys)
    assert code == 0 and again.pop("tasks") == {"total": 5, "computed": 0, "stored": 5, "failed": 0}
    again["params"].pop("wall_seconds")
    assert again == first  # train_seconds included: they are the stored tasks'
    assert main(["histogram", "--quick", "--seed", "5", "--workers", "1", "--quiet", "--out", str(out)]) == 0
    assert f"attnphase: note: {first['error_note']}" in capsys.readouterr().err  # the table's numbers: no bar either
    code, fresh, _ = _run(["--out", str(out), "--fresh"], capsys)
    assert code == 0 and fresh.pop("tasks")["computed"] == 5
    fresh["params"].pop("wall_seconds")
    for entry in (fresh, first):
        for v in entry.values():
            if isinstance(v, dict):
                v.pop("train_seconds", None)
    assert fresh == first

    from attnphase.execution.dataset import open_dataset

    ds = open_dataset(out / "histogram.nc")
    import xarray as xr

    from attnphase.execution.dataset import cf_problems

    with xr.open_dataset(out / "histogram.nc") as raw:  # the file follows the CF conventions
        assert cf_problems(raw.load()) == [] and raw["curve_val_acc"].attrs["long_name"]
    assert list(ds["variant"].values) == list(in_process.variants)
    assert ds["val_acc"].sel(variant="semantic_reparam").item() == in_process.variants["semantic_reparam"].val_acc
    assert ds.attrs["seed"] == 5 and json.loads(ds.attrs["config"])["n_samples"] == TINY.n_samples
    assert set(ds["status"].values) == {"done"}
    # the numbers before retraining are the summary's, all five of them (r_sem and r_pos were missing)
    before = first["semantic_reparam"]["before"]
    assert {f"before_{k}" for k in before} <= set(ds.data_vars)
    assert all(ds[f"before_{k}"].sel(variant="semantic_reparam").item() == v for k, v in before.items())
    assert main(["show", str(out)]) == 0
    assert "histogram.nc: histogram job" in capsys.readouterr().out


def test_a_failed_task_exits_1_writes_no_report_and_the_rerun_resumes(tiny_quick, tmp_path, capsys, monkeypatch) -> None:
    real = jobs.train_variant

    def broken(config, seed, name, *args, **kwargs):
        if name == "semantic":
            raise RuntimeError("no semantic today")
        return real(config, seed, name, *args, **kwargs)

    monkeypatch.setattr(jobs, "train_variant", broken)
    out = tmp_path / "h"
    code, doc, err = _run(["--out", str(out)], capsys)
    assert code == 1
    assert doc["tasks"]["failed"] == 1 and doc["tasks"]["computed"] == 3  # positional, both, positional_reparam
    assert "RuntimeError: no semantic today (semantic)" in err and "semantic_reparam" in doc["tasks"]["failures"]
    assert sorted(p.name for p in out.iterdir()) == ["tasks"]  # no report, no dataset
    monkeypatch.setattr(jobs, "train_variant", real)
    code, doc, _ = _run(["--out", str(out)], capsys)
    assert code == 0 and doc["tasks"] == {"total": 5, "computed": 2, "stored": 3, "failed": 0}
    assert (out / "report.md").exists() and (out / "histogram.nc").exists()


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--workers", "two"], ["--scheduler", "not an address"]])
def test_bad_execution_options_are_one_line_errors(argv: list[str], tmp_path: Path, capsys) -> None:
    assert main(["histogram", *argv, "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnphase: error: --") and "\n" not in err
    assert not (tmp_path / "never").exists()


def test_the_code_version_leaves_out_the_presentation_modules_only() -> None:
    root = Path(jobs.__file__).parent
    assert all((root / name).is_file() for name in jobs.PRESENTATION)
    computing = {"jobs.py", "experiment.py", "train.py", "model.py", "data.py", "scores.py", "reparam.py"}
    assert not computing & set(jobs.PRESENTATION)
    for name in computing:  # what a task runs imports no presentation module
        text = (root / name).read_text()
        assert not any(f"histogram.{p[:-3]} import" in text for p in jobs.PRESENTATION), name
