"""The report writer on a tiny experiment, and the ``attnphase histogram`` command."""

from __future__ import annotations

import csv
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnphase.cli import main
from attnphase.validation.histogram.experiment import (
    ExperimentResult,
    HistogramConfig,
    run_experiment,
)
from attnphase.validation.histogram.report import (
    CURVE_COLUMNS,
    REPARAM_KEYS,
    SUMMARY_KEYS,
    write_report,
)

TINY = HistogramConfig(
    seq_len=5, n_tokens=4, n_samples=300, d_model=16, d_hidden=16,
    epochs=2, reparam_epochs=1, n_score=50, n_plot=2,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")
VARIANTS = {"positional", "semantic", "both", "positional_reparam", "semantic_reparam"}



@pytest.fixture(scope="module")
def tiny_result() -> ExperimentResult:
    return run_experiment(TINY, seed=5, device=torch.device("cpu"))


@pytest.fixture(scope="module")
def written(tiny_result: ExperimentResult, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("histogram")
    write_report(tiny_result, out)
    return out


def test_variant_seeds_do_not_depend_on_the_other_variants(tiny_result: ExperimentResult) -> None:
    alone = run_experiment(
        dataclasses.replace(TINY, variants=("semantic",)), seed=5, device=torch.device("cpu")
    )
    assert set(alone.variants) == {"semantic", "semantic_reparam"}
    for name in alone.variants:
        assert alone.variants[name].curve == tiny_result.variants[name].curve
        assert alone.variants[name].score == tiny_result.variants[name].score


def test_summary_shape(written: Path) -> None:
    summary = json.loads((written / "summary.json").read_text())
    assert set(summary) == VARIANTS
    for name, entry in summary.items():
        assert set(SUMMARY_KEYS) <= set(entry), name
        assert 0.0 <= entry["val_acc"] <= 1.0
        assert -2.0 <= entry["score"] <= 2.0
        assert entry["score"] == pytest.approx(entry["r_sem"] - entry["r_pos"])
        assert entry["restriction"] == ("both" if name.endswith("_reparam") else name)
    for src in ("positional", "semantic"):
        entry = summary[f"{src}_reparam"]
        assert set(REPARAM_KEYS) <= set(entry)
        assert entry["source"] == src
        assert entry["max_output_diff"] < 1e-5
        assert entry["before"]["val_acc"] == pytest.approx(summary[src]["val_acc"])
        assert entry["before"]["score"] == pytest.approx(summary[src]["score"], abs=1e-6)
    # A positional-only attention is the same for every input.
    assert summary["positional"]["r_pos"] == pytest.approx(1.0, abs=1e-6)


def test_params_curves_and_figures(written: Path) -> None:
    params = json.loads((written / "params.json").read_text())
    assert params["seed"] == 5 and params["device"] == "cpu"
    assert params["config"]["n_samples"] == 300
    assert params["n_train"] + params["n_val"] == 300
    for name in VARIANTS:
        with (written / f"curves_{name}.csv").open() as fh:
            rows = list(csv.reader(fh))
        assert tuple(rows[0]) == CURVE_COLUMNS
        epochs = TINY.reparam_epochs if name.endswith("_reparam") else TINY.epochs
        assert [int(r[0]) for r in rows[1:]] == list(range(epochs + 1))
        # every digit (README: CSV keeps them; the curves were rounded to 6 significant digits)
        digits = [len(v.lstrip("-0.").replace(".", "").split("e")[0]) for r in rows[1:] for v in r[1:]]
        assert max(digits) > 6
    for png in ("attention_maps.png", "attention_unrestricted.png"):
        assert (written / png).read_bytes()[:4] == b"\x89PNG"
    report = (written / "report.md").read_text()
    assert "positional_reparam" in report and "Majority-class baseline" in report
    # a rerun from the store said "wall time 0.0 s": the variants' own training time is given beside this run's
    assert "the variants trained in" in report
    # and the time given is its tasks' (3.5 s of command against 0.0 s "wall time ... (this run's)" on a rerun)
    assert "this run's tasks took" in report and "start-up and outputs apart" in report


@pytest.mark.parametrize(
    "argv", [["--seed", "-1"], ["--device", "tpu"], ["--threads", "0"]]
)
def test_bad_arguments_are_one_line_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["histogram", *argv, "--out", "/nonexistent/never-written"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnphase: error:") and "\n" not in err


def test_cli_module_does_not_import_torch() -> None:
    code = "import sys, attnphase.validation.commands.histogram; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "bad",
    [dict(seq_len=2), dict(val_fraction=0.0), dict(variants=("tokens",)), dict(variants=()),
     dict(d_model=7), dict(reparam_lr=-1.0), dict(epochs=-1)],
)
def test_bad_experiment_config_raises(bad: dict) -> None:
    with pytest.raises(ValueError):
        HistogramConfig(**bad)
