"""Probes of names: one name per quantity and per error bar (``err_<name>``) in CSV, JSON and netCDF on every
command; the Bayes-optimal records without what the estimator does not use; the Bayes-optimal sweep on the job
machinery (``--workers``, ``DIR/tasks``)."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import tomllib
from pathlib import Path

from attnphase.cli import main

ROOT = Path(__file__).resolve().parents[2]
#: An error bar named after its value with a suffix (``alpha_c_err``): the form every output gave up for ``err_X``.
SUFFIX_ERROR = re.compile(r"[A-Za-z0-9]_err$")


def _writer_columns() -> dict[str, tuple[str, ...]]:
    """Every output writer's list of columns / keys / variables, by writer."""
    from attnphase.numerics.commands import census
    from attnphase.numerics.jobs.bayes_dataset import BAYES_DIAGRAM_COLUMNS, BAYES_DIAGRAM_CURVES
    from attnphase.numerics.jobs.boundary_table import csv_columns
    from attnphase.numerics.jobs.variables import SWEEP_COLUMNS, VARIABLES
    from attnphase.numerics.phase.boundary_results import Boundaries, error_columns
    from attnphase.numerics.phase.census import CENSUS_COLUMNS
    from attnphase.numerics.commands.point_record import RECORD_KEYS
    from attnphase.numerics.errors.quadrature_error import replicate_spread
    from attnphase.numerics.se.bayes_curve import BAYES_SWEEP_COLUMNS
    from attnphase.validation.derivation_checks import CHECK_CSV_COLUMNS

    nan = float("nan")
    rows = {f"Boundaries.row r={r}": tuple(Boundaries(omega=0.3, alpha_c=nan, alpha_l=nan, semantic_end=nan,
                                                      positional_end=nan, r=r).row()) for r in (1, 2)}
    return rows | {
        "phase-diagram/scan table r=1": csv_columns(1, True), "phase-diagram/scan table r=2": csv_columns(2, True),
        "error columns r=2": error_columns(2), "--error-estimate K spread": tuple(replicate_spread([])),
        "sweep": SWEEP_COLUMNS, "solve record": RECORD_KEYS, "variables table": tuple(VARIABLES),
        "census": census.CSV_COLUMNS + census.MATRIX_HEAD + census.MATRIX_TAIL + census.START_COLUMNS,
        "phase-diagram --census": CENSUS_COLUMNS, "bayes-optimal sweep": BAYES_SWEEP_COLUMNS,
        "bayes-optimal phase-diagram": BAYES_DIAGRAM_COLUMNS + BAYES_DIAGRAM_CURVES,
        "check.csv": CHECK_CSV_COLUMNS,
    }


def _string_names(path: Path, allowed: set[str]) -> list[str]:
    """Every string literal (or f-string's last literal part) of ``path`` ending like ``X_err``, but a dataclass
    field's name given to getattr/setattr or a field of ``allowed`` (a key that only reaches a constructor)."""
    tree = ast.parse(path.read_text())
    attr_names = {id(n) for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                  and c.func.id in ("getattr", "setattr", "hasattr") for a in c.args[1:2] for n in ast.walk(a)}
    out = []
    for node in ast.walk(tree):
        if id(node) in attr_names:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[-1], ast.Constant):
            text = str(node.values[-1].value)
        else:
            continue
        if SUFFIX_ERROR.search(text) and not any(f.endswith(text) for f in allowed):
            out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text!r}")
    return out


def test_no_output_names_an_error_bar_X_err():
    """Every writer's columns, and every string the packages write, name an error bar ``err_<name>`` (the form of
    solve, sweep, census and the thresholds), never ``<name>_err`` (the phase diagram's and scan's until now)."""
    from attnphase.numerics.phase.boundary_results import Boundaries

    bad = [f"{writer}: {c}" for writer, cols in _writer_columns().items() for c in cols if SUFFIX_ERROR.search(c)]
    assert not bad, bad
    # and err_X is always the bar of an X beside it (a count of replicates was err_replicates)
    orphans = [f"{writer}: {c}" for writer, cols in _writer_columns().items() if writer not in ("variables table", "error columns r=2", "--error-estimate K spread")
               for c in cols if c.startswith("err_") and c[4:] not in cols]
    assert not orphans, orphans
    # the dataclass keeps its field names (the Python API); they reach no file under that name
    fields = {f.name for f in dataclasses.fields(Boundaries)}
    dirs = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values())
    found = [hit for d in sorted(dirs) for p in sorted((ROOT / d).glob("*.py")) for hit in _string_names(p, fields)]
    assert not found, found


def test_bayes_optimal_records_leave_out_lam_and_loss(capsys):
    """The posterior mean has no ridge penalty, minimises no loss and does not use the positions: none of lam, loss
    and P is echoed, and --lam and --P are refused."""
    assert main(["solve", "--estimator", "bayes-optimal", "--alpha", "0.3", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert not {"lam", "loss", "P"} & set(rec) and rec["rho0"] == 1.0 and rec["L"] == 2
    assert "P" not in rec.get("model", {})
    for argv in (["solve", "--alpha", "0.3"], ["sweep", "--alpha", "0.3,0.4"], ["phase-diagram", "--alpha", "0.3,0.4"]):
        for lam in ("0.1", "0.01"):  # 0.01 is ERM's default: given, it is refused all the same
            assert main([*argv, "--estimator", "bayes-optimal", "--lam", lam]) == 2, argv
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and err[0].startswith(f"attnphase: error: --lam {lam}") and "no ridge penalty" in err[0]
        # the posterior is over Q*, which never meets the positions: --P is refused too, and P is not echoed
        assert main([*argv, "--estimator", "bayes-optimal", "--P", "1,0;0,1"]) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("attnphase: error: --P 1,0;0,1") and "positional" in err[0]


def test_bayes_optimal_sweep_runs_on_workers_and_resumes(tmp_path, capsys):
    """``sweep --estimator bayes-optimal --workers 2``: one task per (omega, branch) on a local cluster of two
    workers, stored in DIR/tasks (a rerun reads them back: the same table); the JSON's params and model leave out
    lam and loss."""
    out = tmp_path / "bo"
    argv = ["sweep", "--estimator", "bayes-optimal", "--alpha", "0.3,0.6", "--omega", "0.3", "--workers", "2",
            "--json", "--out", str(out)]
    assert main(argv) == 0
    got = capsys.readouterr()
    obj = json.loads(got.out)
    assert obj["tasks"]["total"] == obj["tasks"]["computed"] == 2 and "local Dask cluster: 2 worker" in got.err
    assert not {"lam", "loss"} & (set(obj["params"]) | set(obj["model"]))
    table = (out / "sweep_bayes-optimal_omega0.3.csv").read_text()
    assert len(list((out / "tasks").glob("*.task"))) == 2
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["tasks"]["stored"] == 2 and (out / "sweep_bayes-optimal_omega0.3.csv").read_text() == table
    assert [r["q"] for r in again["rows"]] == [r["q"] for r in obj["rows"]]


def test_a_null_prints_as_null_and_a_bar_is_only_err_name():
    """Text output: a null value (the Bayes-optimal e_t, a non-converged solve's overlaps) reads ``null`` as in the
    JSON, not a blank; a value's bar is its ``err_<name>`` alone (``eps_g_se`` is no bar: simulate's JSON says
    ``err_eps_g`` now)."""
    from attnphase.display import record_lines

    lines = record_lines({"e_t": None, "eps_g": 0.0314159, "err_eps_g": 2.1e-05, "q": 0.5, "q_se": 0.1, "reason": ""})
    assert lines == ["   e_t  null", " eps_g  0.031416 +- 0.000021", "     q  0.5", "  q_se  0.1", "reason  "], lines


def test_a_rerun_note_names_the_key_that_changed_inside_a_long_object(tmp_path, capsys):
    """``validate --quick --max-steps 50`` into an earlier validate's folder said ``train={"adam_betas": [0.9, 0.99],
    "adam_lr": 0.02, "adam_min_lr... -> {...``: the object cut before the key that changed.  It names that key."""
    from attnphase import outputs

    train = {"adam_betas": [0.9, 0.99], "adam_lr": 0.02, "adam_min_lr": 1e-5, "grad_tol": 3e-7, "max_steps": 20000}
    for steps, name in ((20000, "a.md"), (50, "b.md")):
        with outputs.staged_output(tmp_path, job="validate", model={"L": 2, "train": train | {"max_steps": steps}}) \
                as stage:
            (stage / name).write_text(name)
    err = capsys.readouterr().err
    assert "held an earlier validate job (train.max_steps=20000 -> 50)" in err, err


def test_a_rerun_with_another_model_names_tasks_only_where_the_job_has_them(tmp_path, capsys):
    """`check --out K` then `check --L 3 --out K` said "its finished tasks stay in tasks/": a check has no tasks."""
    from attnphase import outputs

    for model, name in (({"L": 2}, "a.md"), ({"L": 3}, "b.md")):
        with outputs.staged_output(tmp_path, job="check", model=model) as stage:
            (stage / name).write_text(name)
    err = capsys.readouterr().err
    assert "held an earlier check job (L=2 -> 3)" in err and "removed: a.md" in err and "tasks" not in err, err
    assert f"note: {outputs.shown_path(tmp_path)} held" in err, err  # the folder named, not the differences twice
    (tmp_path / "tasks").mkdir()
    with outputs.staged_output(tmp_path, job="check", model={"L": 4}) as stage:
        (stage / "c.md").write_text("c")
    assert "its finished tasks stay in tasks/" in capsys.readouterr().err


def test_a_diagram_without_error_bars_has_the_csvs_names_in_its_dataset():
    """A phase diagram or scan on one rule (gh6: no error bars) wrote no err_/_found columns to its CSV but NaN
    err_<boundary> and <boundary>_found variables to its dataset: one job, two sets of names."""
    from attnphase.numerics.jobs.boundary_table import csv_columns
    from attnphase.numerics.jobs.dataset import boundaries_dataset
    from attnphase.numerics.phase.boundary_results import Boundaries

    b = Boundaries(omega=0.3, alpha_c=1.25, alpha_l=1.5, semantic_end=0.8, positional_end=float("nan"))
    for err in (None, b.errors()):
        ds = boundaries_dataset([{"at": {"omega": 0.3}, "b": b, "err": err, "status": "done", "error": ""}],
                                ("omega",), {"omega": [0.3]}, [1.0, 2.0], {"title": "t"})
        columns = set(csv_columns(1, errors=err is not None))
        assert columns <= set(ds.data_vars) | set(ds.coords)
        assert set(ds.data_vars) - columns <= {"eps_g", "e_t", "m", "theta", "q", "converged", "on_branch",
                                                "status", "error"}


def test_sigma_reads_the_same_at_every_rank():
    """``solve --rank 2`` echoed sigma as the list [0.5, 0.5], rank 1 as 0.5: one quantity, one form."""
    from types import SimpleNamespace

    from attnphase.numerics.commands.point_record import MATRIX_KEYS, matrix_record
    from attnphase.theory.params import ModelParams

    for sigma, want in ((0.5, 0.5), ((0.4, 0.6), [0.4, 0.6])):
        params = ModelParams(sigma=sigma, r=2)
        rec = {k: None for k in MATRIX_KEYS} | {"r_star": 1, "branch": "mixed", "converged": False, "iterations": 1,
                                                "residual": 1.0, "prox_failures": 0, "quadrature": "q"}
        fp = SimpleNamespace(params=params, record=rec, alpha=2.0, status=SimpleNamespace(converged=False))
        assert matrix_record(fp, "mixed")["sigma"] == want == params.sigma_value


def test_a_yes_no_column_is_1_or_0_in_every_csv():
    """census.csv said stable = True where sweep_bayes-optimal_omega*.csv said stable = 1 and the datasets 1: one
    field, one form (the variables' long names: "1 where ..., else 0")."""
    from attnphase.execution.dataset import csv_text

    assert csv_text([{"stable": True, "converged": False, "starts": 3, "q": 0.5}], ("stable", "converged", "starts", "q")) \
        == "stable,converged,starts,q\n1,0,3,0.5\n"


def test_bayes_optimal_phase_diagram_runs_as_tasks_and_resumes(tmp_path, capsys):
    """``phase-diagram --estimator bayes-optimal`` ignored --workers, --scheduler and --fresh (a dead scheduler:
    exit 0): one task per omega now, stored in DIR/tasks and read back on a rerun (the same files)."""
    out = tmp_path / "bo"
    argv = ["phase-diagram", "--estimator", "bayes-optimal", "--omega", "0.2,0.3", "--alpha", "0.3,0.6", "--workers",
            "1", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    table = (out / "phase_diagram_bayes-optimal.csv").read_text()
    assert len(list((out / "tasks").glob("*.task"))) == 2
    stored = {p.name: p.stat().st_mtime_ns for p in (out / "tasks").glob("*.task")}
    assert main(argv) == 0 and (out / "phase_diagram_bayes-optimal.csv").read_text() == table
    assert {p.name: p.stat().st_mtime_ns for p in (out / "tasks").glob("*.task")} == stored  # read, not recomputed
    assert main([*argv, "--fresh"]) == 0  # --fresh computes them again
    assert {p.name: p.stat().st_mtime_ns for p in (out / "tasks").glob("*.task")} != stored


def test_every_command_takes_json_derive_too(capsys):
    """``--json`` on every command: derive had none. Its object: the model and every equation, both sides as
    sympy text and LaTeX."""
    import argparse

    from attnphase.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert [n for n, p in sub.choices.items() if "--json" not in p._option_string_actions] == []
    assert main(["derive", "--L", "2", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["model"]["L"] == obj["L"] == 2 and len(obj["equations"]) > 10
    assert {"section", "lhs", "rhs", "lhs_latex", "rhs_latex", "note"} == set(obj["equations"][0])
    # the equations are L's alone: another omega, sigma or A labels the model and says so (the output listed the
    # values above the equations as if they entered them)
    assert main(["derive", "--omega", "0.7", "--sigma", "0.3", "--A", "0.5,0.5;0.5,0.5", "--json"]) == 0
    other = json.loads(capsys.readouterr().out)
    assert other["equations"] == obj["equations"] and other["model"]["omega"] == 0.7
    assert other["note"] == obj["note"] and obj["note"].startswith("The equations depend on L alone")


def test_check_out_writes_the_checks_as_data(tmp_path, capsys):
    """``check --out DIR`` wrote check.md alone: the checks as data too, check.json (the ``--json`` object: the model,
    alpha, each check's error, tolerance and status) and check.csv (one row per check, passed / skipped 1 / 0, a
    skipped check's numbers NaN), read back equal to what the run printed."""
    import csv
    import math

    from attnphase.validation.derivation_checks import CHECK_CSV_COLUMNS

    out = tmp_path / "k"
    assert main(["check", "--quick", "--only", "6,7", "--json", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["check.csv", "check.json", "check.md"]
    written = json.loads((out / "check.json").read_text())
    assert written == printed and written["model"]["L"] == 2 and written["alpha"] == 2.0 and written["passed"] is True
    rows = list(csv.DictReader((out / "check.csv").open()))
    assert [r["key"] for r in rows] == ["eps-lin", "codegen"] and list(rows[0]) == list(CHECK_CSV_COLUMNS)
    for row, c in zip(rows, written["checks"]):
        assert float(row["error"]) == c["error"] and float(row["tolerance"]) == c["tolerance"]
        assert row["status"] == c["status"] == "pass" and row["passed"] == "1" and row["skipped"] == "0"
        assert float(row["error"]) <= float(row["tolerance"]) and float(row["alpha"]) == 2.0
    # a skipped check (eps_lin's mpmath reference is at L = 2 only): 0 / 1, its numbers NaN, its reason said; the
    # rerun with another model replaces the files
    assert main(["check", "--quick", "--only", "6", "--L", "3", "--out", str(out)]) == 1  # none ran
    assert "held an earlier check job" in capsys.readouterr().err
    (row,) = list(csv.DictReader((out / "check.csv").open()))
    assert (row["status"], row["passed"], row["skipped"]) == ("skip", "0", "1") and row["reason"]
    assert math.isnan(float(row["error"])) and math.isnan(float(row["tolerance"]))
    assert json.loads((out / "check.json").read_text())["model"]["L"] == 3


#: A name of validate's outputs that is an error bar or a spread under another form than err_<name> / sd_<name>.
VALIDATION_BAD = re.compile(r"(_se|_std|_err)$|^(se|std)$")


def test_validation_outputs_name_error_bars_err_name_and_seed_spreads_sd_name():
    """summary.json and ``validate --json`` wrote ``a_se``, ``extrapolated_se``, ``fit_a_se``, ``<obs>_std``, a run's
    ``eps_g_se``, the AMP rows' bare ``se`` / ``std``: the one rule now (validation/output_names.py), the spread over
    the seeds named ``sd_<obs>`` and stated in the file's ``variables``; a distance in error bars is ``z``.  The
    scanner: every key-like string literal of the validation writers ending that way is renamed by the rule."""
    from attnphase.validation.output_names import output_name, summary_for_output

    hits = []
    for path in sorted((ROOT / "validation").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):  # an f-string's parts too
                text = "x" + node.value if node.value.startswith("_") else node.value  # f"{obs}_std": "x_std"
            else:
                continue
            if re.fullmatch(r"[A-Za-z0-9_]+", text) and VALIDATION_BAD.search(text):
                hits.append(text)
    assert {"a_se", "extrapolated_se", "x_std", "eps_g_se"} <= set(hits), hits  # the scanner sees the writers' names
    assert not [h for h in hits if VALIDATION_BAD.search(output_name(h, ("mean_abs_theta",)))]
    summary = {"finite_size_fits": [{"a": 0.6, "a_se": 0.01, "b": 0.2}],
               "sweep": [{"abs_theta_mean": 0.6, "abs_theta_std": 0.02, "n_runs": 3}],
               "headline": {"extrapolated": [{"extrapolated": 0.6, "extrapolated_se": 0.01, "distance_se": 1.5}]},
               "runs": [{"eps_g": 3e-3, "eps_g_se": 1e-5, "eps_lin_se": 1e-5}],
               "bayes_optimal": {"amp": {"rows": [{"mean_abs_theta": 0.5, "std": 0.1, "se": 0.05, "z": 0.3}],
                                         "trends": [{"fit_a": 0.5, "fit_a_se": 0.01}]}}}
    out = summary_for_output(summary)
    assert out["finite_size_fits"] == [{"a": 0.6, "err_a": 0.01, "b": 0.2}]
    assert out["sweep"] == [{"abs_theta_mean": 0.6, "sd_abs_theta": 0.02, "n_runs": 3}]
    assert out["headline"]["extrapolated"] == [{"extrapolated": 0.6, "err_extrapolated": 0.01, "z": 1.5}]
    assert out["runs"] == [{"eps_g": 3e-3, "err_eps_g": 1e-5, "err_eps_lin": 1e-5}]
    assert out["bayes_optimal"]["amp"]["rows"] == [{"mean_abs_theta": 0.5, "sd_abs_theta": 0.1,
                                                    "err_mean_abs_theta": 0.05, "z": 0.3}]
    assert out["bayes_optimal"]["amp"]["trends"] == [{"fit_a": 0.5, "err_fit_a": 0.01}]
    assert "not an error bar" in out["variables"]["sd_<obs>"] and "err_<name>" in out["variables"]
    # the writers of both suites and validate --json go through it
    # (tests/validation/test_validation_report.py reads a written summary.json back)
    for path in ("validation/report.py", "validation/general_report.py"):
        assert '"summary.json").write_text(json.dumps(json_value(summary_for_output(' in (ROOT / path).read_text(), path
    assert (ROOT / "validation/commands/validate.py").read_text().count("summary_for_output(summary)") == 2


def test_the_error_label_names_an_alpha_l_that_is_an_interval():
    """``phase-diagram --sigma 0.8 --omega 0.2``: alpha_l 0.598 +- 0.028 was the half-width of an interval (the root
    search lost the branch, the notes said) while the table's heading and the JSON's error_bars called every bar a
    standard error over the scrambling blocks.  The label names the omegas where alpha_l's bar is a half-width."""
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.jobs.boundary_table import error_label, interval_omegas
    from attnphase.numerics.phase.boundary_refinement import INTERVAL_NOTE
    from attnphase.numerics.phase.boundary_results import Boundaries

    rows = [Boundaries(0.1, 0.7, 0.9, 0.6, 2.0, notes=("alpha_l: the rule's standard error",)),
            Boundaries(0.2, 0.6, 0.598, 0.5, 2.1, notes=(f"alpha_l: the interval [0.57, 0.6261] ... {INTERVAL_NOTE}",))]
    assert interval_omegas(rows) == [0.2]
    label = error_label(SolverConfig(), 0, rows)
    assert label.startswith("standard error over 4 scrambling blocks") and "alpha_l's at omega = 0.2: the half-width" \
        in label
    assert error_label(SolverConfig(), 0, rows[:1]) == \
        "standard error over 4 scrambling blocks of each rule"
