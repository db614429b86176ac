"""``attnphase simulate`` / ``validate`` command line (attnphase.validation.commands)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnphase.cli import main
from attnphase.validation.experiments import JSON_KEYS

#: The model simulate's JSON echoes after its own keys (as solve does).
MODEL = ("sigma", "lam", "L", "A", "P", "rho0", "rank", "loss")


def test_validation_cli_does_not_import_torch():
    code = (
        "import sys\n"
        "import attnphase.validation.commands.simulate, attnphase.cli\n"
        "attnphase.cli.build_parser().parse_args(['simulate', '--d', '10'])\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_simulate_json(capsys):
    import torch

    n = torch.get_num_threads()
    try:
        code = main(["simulate", "--d", "30", "--alpha", "1.5", "--init", "positional", "--seed", "2",
                     "--n-test", "200", "--json", "--device", "cpu", "--threads", "1"])
    finally:
        torch.set_num_threads(n)
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and len(out) == 1
    rec = json.loads(out[0])
    assert tuple(rec) == JSON_KEYS + MODEL + ("error_note",) and "this run's exact values" in rec["error_note"]
    assert (rec["sigma"], rec["lam"], rec["L"], rec["rho0"], rec["rank"]) == (0.5, 0.01, 2, 1.0, 1)
    assert rec["d"] == 30 and rec["alpha"] == 1.5 and rec["init"] == "positional" and rec["optimizer"] == "gd"
    assert rec["converged"] is True and rec["seed"] == 2 and rec["m"] > 0.1


@pytest.mark.parametrize(
    "argv, word",
    [
        (["--d", "1"], "d (embedding dimension)"),
        (["--alpha", "-1"], "alpha"),
        (["--alpha", "1:2:3"], "--alpha takes one number"),
        (["--sigma", "x"], "--sigma"),
        (["--alpha", "0"], "alpha"),
        (["--omega", "1.5"], "omega"),
        (["--init", "sideways"], "init"),
        (["--optimizer", "sgd"], "optimizer"),
        (["--dtype", "float16"], "dtype"),
    ],
)
def test_simulate_bad_arguments(argv, word, capsys):
    code = main(["simulate", "--json", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("attnphase: error:") and word in err[0]


def test_validate_bad_arguments(capsys):
    assert main(["validate", "--d", "1"]) == 2
    assert "d (embedding dimension)" in capsys.readouterr().err
    assert main(["validate", "--omega", "-0.1"]) == 2
    assert "omega" in capsys.readouterr().err
    assert main(["validate", "--omega", "0.1:0.3:3"]) == 2
    assert "--omega takes one number here" in capsys.readouterr().err


def test_validate_out_must_be_a_folder(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["validate", "--out", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--out must be a folder" in err[0]


def test_simulate_honours_every_model_option(capsys):
    """L = 3 with per-token sigma, and a general P, A and rho0 at L = 2: the validation layer takes them all."""
    import torch

    n = torch.get_num_threads()
    try:
        for extra in (["--L", "3", "--sigma", "0.5,0.4,0.6"],
                      ["--P", "1,0.5;0.5,1", "--A", "0.7,0.3;0.2,0.8", "--rho0", "2", "--lam", "0.02"]):
            code = main(["simulate", "--d", "30", "--alpha", "1.5", "--n-test", "200", "--json", "--device", "cpu",
                         "--threads", "1", "--max-steps", "300", *extra])
            out = capsys.readouterr().out.strip().splitlines()
            rec = json.loads(out[0])
            assert code in (0, 1) and len(out) == 1 and tuple(rec) == JSON_KEYS + MODEL + ("error_note",)
            if "--L" in extra:  # the model it ran, as solve echoes it
                assert rec["L"] == 3 and rec["sigma"] == [0.5, 0.4, 0.6]
            else:
                assert (rec["P"], rec["A"], rec["rho0"], rec["lam"]) == ([[1, 0.5], [0.5, 1]], [[0.7, 0.3], [0.2, 0.8]],
                                                                         2.0, 0.02)
    finally:
        torch.set_num_threads(n)


def test_validate_json_is_one_object(tmp_path, capsys, monkeypatch):
    """The wiring of `validate --json` (the campaign itself replaced by a stub that records its plan)."""
    import attnphase.validation.campaign as campaign

    seen = {}

    tasks = {"total": 0, "computed": 0, "stored": 0, "failed": 0, "failures": ""}

    def fake_run_validation(plan, out_dir, progress=True, **kw):
        seen.update(plan=plan, out_dir=out_dir, progress=progress, kw=kw)
        return {"wall_seconds": 1.0, "all_converged": True, "rows": [{"x": float("nan")}], "tasks": tasks}

    monkeypatch.setattr(campaign, "run_validation", fake_run_validation)
    import torch

    n = torch.get_num_threads()
    try:
        code = main(["validate", "--quick", "--out", str(tmp_path), "--omega", "0.2", "--L", "2", "--lam", "0.02",
                     "--threads", "1", "--quiet", "--json"])
    finally:
        torch.set_num_threads(n)
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and len(out) == 1
    from attnphase.validation.output_names import VARIABLES

    assert json.loads(out[0]) == {"wall_seconds": 1.0, "all_converged": True, "rows": [{"x": None}], "tasks": tasks,
                                  "variables": VARIABLES}  # the written names' meanings ride with the summary
    assert seen["kw"]["store"].folder == tmp_path / "tasks" and seen["kw"]["executor"].workers >= 1
    assert seen["plan"].params.omega == 0.2 and seen["plan"].params.lam == 0.02 and seen["plan"].quick
    # the files go to a staging folder in --out's nearest existing folder, moved into --out at the end
    assert Path(seen["out_dir"]).parent == tmp_path and Path(seen["out_dir"]).name.startswith(".attnphase-")
    assert not Path(seen["out_dir"]).exists() and seen["progress"] is False


def test_histogram_json_is_one_object(tmp_path, capsys, monkeypatch):
    """The wiring of `histogram --json --quiet` (the experiment's tasks replaced by a stub)."""
    import types

    import attnphase.execution.dataset as execution_dataset
    import attnphase.validation.histogram.dataset as dataset
    import attnphase.validation.histogram.jobs as jobs
    import attnphase.validation.histogram.report as report

    seen = {}
    tasks = {"total": 5, "computed": 2, "stored": 3, "failed": 0}

    def fake_run(config, seed, device, *, executor, store, fresh, quiet):
        seen.update(seed=seed, quiet=quiet, store=store.folder, fresh=fresh, workers=executor.workers)
        return types.SimpleNamespace(result=types.SimpleNamespace(variants={}, majority_acc=0.5), outcomes=(),
                                     counts=tasks, failures="", version="v")

    monkeypatch.setattr(jobs, "run_histogram", fake_run)
    monkeypatch.setattr(report, "write_report", lambda result, out: {"report.md": out / "report.md"})
    monkeypatch.setattr(dataset, "histogram_attrs", lambda *a: {})
    monkeypatch.setattr(dataset, "histogram_dataset", lambda *a: None)
    monkeypatch.setattr(execution_dataset, "write_netcdf", lambda ds, path: Path(path).write_text("nc"))
    monkeypatch.setattr(report, "summary", lambda result: {"positional": {"val_acc": 0.9}})
    monkeypatch.setattr(report, "params", lambda result: {"seed": 3})
    import torch

    n = torch.get_num_threads()
    try:
        code = main(["histogram", "--quick", "--out", str(tmp_path), "--seed", "3", "--device", "cpu",
                     "--quiet", "--json", "--workers", "2"])
    finally:
        torch.set_num_threads(n)
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and len(out) == 1
    assert json.loads(out[0]) == {"positional": {"val_acc": 0.9}, "params": {"seed": 3}, "error_note": report.ERROR_NOTE,
                                  "out": str(tmp_path), "tasks": tasks}
    assert seen == {"seed": 3, "quiet": True, "store": tmp_path / "tasks", "fresh": False, "workers": 2}
    assert (tmp_path / "histogram.nc").read_text() == "nc"


def test_validate_general_suite_wiring(tmp_path, capsys, monkeypatch):
    """`validate --suite general --quick --json`: the suite's plan (its own models, d = 200), one JSON object."""
    import attnphase.validation.general_suite as suite

    seen = {}

    def fake(plan, out_dir, progress=True, store=None, executor=None, fresh=False, command=""):
        seen.update(plan=plan, out_dir=out_dir, store=store, workers=executor.workers, fresh=fresh, command=command)
        return {"wall_seconds": 2.0, "all_converged": False}

    monkeypatch.setattr(suite, "run_general_validation", fake)
    import torch

    n = torch.get_num_threads()
    try:
        code = main(["validate", "--suite", "general", "--quick", "--out", str(tmp_path / "g"), "--threads", "1",
                     "--quiet", "--json", "--workers", "3", "--fresh"])
        first, first_store = seen["plan"], seen["store"]
        assert seen["workers"] == 3 and seen["fresh"]  # as on every command: its tasks' processes, computed again
        assert main(["validate", "--suite", "general", "--quick", "--cases", "e,d", "--out", str(tmp_path / "h"),
                     "--threads", "1", "--quiet"]) == 1
    finally:
        torch.set_num_threads(n)
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 1 and len(out) == 1 and json.loads(out[0])["all_converged"] is False
    plan = first
    assert plan.quick and plan.d == 200 and [c.key for c in plan.cases] == ["a", "b", "c", "d", "e"]
    assert first_store.folder == tmp_path / "g" / "tasks"  # the theory's tasks kept outside the staging folder
    assert [c.key for c in seen["plan"].cases] == ["d", "e"]  # --cases: the named ones, in the suite's order
    assert seen["command"].startswith("attnphase")  # the command line (sys.argv's), for the report and summary.json


def test_validate_takes_correlated_tokens(tmp_path, capsys, monkeypatch):
    """``validate --token-cov``: the plan's model (its theory solved in whitened form, its simulations drawing
    correlated tokens) carries C; a singular C is one line, before any work (the campaign replaced by a stub)."""
    import attnphase.validation.campaign as campaign

    seen = {}
    tasks = {"total": 0, "computed": 0, "stored": 0, "failed": 0, "failures": ""}

    def fake_run_validation(plan, out_dir, progress=True, **kw):
        seen.update(plan=plan)
        return {"wall_seconds": 1.0, "all_converged": True, "tasks": tasks}

    monkeypatch.setattr(campaign, "run_validation", fake_run_validation)
    import torch

    n = torch.get_num_threads()
    try:
        assert main(["validate", "--quick", "--out", str(tmp_path / "ok"), "--token-cov", "0.25,0.075;0.075,0.25",
                     "--threads", "1", "--quiet"]) == 0
        capsys.readouterr()
        assert main(["validate", "--quick", "--out", str(tmp_path / "bad"), "--token-cov", "0.25,0.25;0.25,0.25"]) == 2
    finally:
        torch.set_num_threads(n)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnphase: error: --token-cov") and "singular" in err[0]
    p = seen["plan"].params
    assert p.correlated_tokens and p.C == ((0.25, 0.075), (0.075, 0.25)) and p.sigma == (0.5, 0.5)
    assert all(s.params.C == p.C for s in seen["plan"].sweep_specs())
    assert not (tmp_path / "bad").exists()


def test_simulate_on_a_tiny_step_budget_warns_and_says_not_converged(capsys):
    import torch

    n = torch.get_num_threads()
    try:
        code = main(["simulate", "--d", "30", "--alpha", "1.5", "--init", "positional", "--n-test", "200",
                     "--max-steps", "2", "--json", "--device", "cpu", "--threads", "1"])
    finally:
        torch.set_num_threads(n)
    captured = capsys.readouterr()
    rec = json.loads(captured.out.strip())
    assert code == 1 and rec["converged"] is False and rec["status"] == "budget" and rec["steps"] == 2
    assert rec["grad_norm"] > rec["grad_tol"] == 3e-7
    warning = [line for line in captured.err.splitlines() if line.startswith("attnphase: warning:")]
    assert len(warning) == 1 and "--max-steps" in warning[0] and "budget" in warning[0]


def test_simulate_whose_start_meets_the_tolerance_says_it_took_no_step(capsys):
    """``simulate --grad-tol 10`` returned the semantic start (theta = q = 1) as a converged run, without a word."""
    import torch

    n = torch.get_num_threads()
    try:
        code = main(["simulate", "--d", "30", "--alpha", "1.5", "--n-test", "200", "--grad-tol", "10", "--json",
                     "--device", "cpu", "--threads", "1"])
    finally:
        torch.set_num_threads(n)
    captured = capsys.readouterr()
    rec = json.loads(captured.out.strip())
    assert code == 0 and rec["converged"] is True and rec["steps"] == 0
    warning = [line for line in captured.err.splitlines() if line.startswith("attnphase: warning:")]
    assert len(warning) == 1 and "no step was taken" in warning[0] and "semantic start itself" in warning[0]


def test_validate_warns_of_runs_that_took_no_step(capsys):
    from attnphase.validation.commands.validate import warn_unconverged

    run = {"converged": True, "steps": 0, "grad_tol": 10.0, "grad_norm": 0.02, "status": "converged", "d": 200,
           "alpha": 1.0, "init": "semantic"}
    assert warn_unconverged([run, run | {"steps": 40}]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 of 2 runs met the gradient tolerance at their start and took no step" in err[0]
    assert warn_unconverged([run | {"steps": 40}]) == 0 and capsys.readouterr().err == ""


@pytest.mark.parametrize("argv, word", [(["--grad-tol", "0"], "--grad-tol"), (["--grad-tol", "inf"], "--grad-tol"),
                                        (["--max-steps", "0"], "--max-steps")])
def test_validate_checks_its_stopping_rule(argv, word, capsys):
    assert main(["validate", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnphase: error:") and word in err[0]


def test_validate_passes_its_stopping_rule_to_every_run(tmp_path, capsys, monkeypatch):
    import attnphase.validation.campaign as campaign

    seen = {}

    def fake_run_validation(plan, out_dir, progress=True, **kw):
        seen["plan"] = plan
        return {"wall_seconds": 1.0, "all_converged": False, "runs": [],
                "tasks": {"total": 0, "computed": 0, "stored": 0, "failed": 0, "failures": ""}}

    monkeypatch.setattr(campaign, "run_validation", fake_run_validation)
    import torch

    n = torch.get_num_threads()
    try:
        code = main(["validate", "--quick", "--out", str(tmp_path), "--grad-tol", "1e-8", "--max-steps", "50",
                     "--threads", "1", "--quiet"])
    finally:
        torch.set_num_threads(n)
    capsys.readouterr()
    specs = seen["plan"].sweep_specs() + seen["plan"].fss_specs()
    assert code == 1 and specs
    assert all(s.train.grad_tol == 1e-8 and s.train.max_steps == 50 for s in specs)
