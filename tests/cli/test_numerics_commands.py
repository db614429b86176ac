"""The numerics subcommands' contract: `attnphase solve --json`, `attnphase sweep`, one-line errors, no torch."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from attnphase.cli import main
from attnphase.numerics.commands import point_record
from attnphase.numerics.se.results import RUNAWAY_Q

KEYS = {
    "alpha", "omega", "sigma", "lam", "branch", "q", "m", "V", "theta",
    "eps_g", "e_t", "eps_lin", "converged", "iterations", "residual",
    # the model and the requested branch beside the result; reason: "" on success
    "L", "A", "P", "rho0", "rank", "loss", "requested_branch", "reason",
}


def test_solve_json_is_exactly_one_object_with_the_record_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "--alpha", "2", "--omega", "0.3", "--json", "--quadrature", "gh6"]) == 0
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    # gh6 is one rule: its error bars come from 4 independent rules (gh6, gh8, gh10, gh12)
    errs = {f"err_{k}" for k in ("q", "m", "V", "theta", "eps_g", "e_t")} | {"max_relative_error"}
    assert isinstance(rec, dict) and set(rec) == KEYS | errs | {"error_note", "solver", "code_version", "found"}
    # what made it, so that a saved record says how to rerun it (the rule with its seed; the code)
    assert rec["solver"]["quadrature"] == "gh6" and rec["code_version"].startswith("0.")
    assert rec["err_q"] > 0 and rec["err_theta"] > 0
    # m = 0 +- 0 on the semantic branch: exact, and the record says so (a bar of 0 is never silent)
    assert rec["m"] == rec["err_m"] == 0.0 and rec["error_note"].startswith("err_m = 0: m = 0 exactly on the semantic")
    assert (rec["alpha"], rec["omega"], rec["sigma"], rec["lam"]) == (2.0, 0.3, 0.5, 0.01)
    assert rec["branch"] == "semantic" and rec["converged"] is True
    assert isinstance(rec["iterations"], int) and 0 < rec["residual"] <= 1e-10
    # units: theta = th0 = Q.Q*/d (model units, not per token), q = |Q|^2/d, V = V0, m = p_1.Q/sqrt(d)
    assert rec["theta"] == pytest.approx(0.6326, rel=0.005)
    assert rec["q"] == pytest.approx(0.4592, rel=0.005) and rec["m"] == 0.0
    assert rec["V"] == pytest.approx(50.7, rel=0.01)
    assert rec["eps_g"] == pytest.approx(1.4042e-3, rel=0.005)
    assert rec["eps_lin"] == pytest.approx(1.971384e-3, rel=1e-6)
    assert rec["theta"] ** 2 < rec["q"]  # |th0| <= sqrt(q0 rho0)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--alpha", "0"], "alpha"),
        (["--alpha", "-1"], "alpha"),
        (["--alpha", "nan"], "alpha"),
        (["--alpha", "1", "--A", "0.5,0.6;0.4,0.6"], "A must be row-stochastic"),
        (["--alpha", "1", "--sigma", "0"], "sigma"),
        (["--alpha", "1", "--e-t-quadrature", "sobol"], "--e-t-quadrature: unknown quadrature"),
    ],
)
def test_solve_bad_input_exits_2_with_one_line(argv, needle, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "--json", "--quadrature", "gh6", *argv]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.count("\n") == 1 and cap.err.startswith("attnphase: error:") and needle in cap.err


def test_omega_out_of_range_subprocess_exit_2_no_traceback() -> None:
    """The console entry point: exit status 2, a single stderr line, nothing on stdout."""
    proc = subprocess.run(
        [sys.executable, "-m", "attnphase", "solve", "--alpha", "2", "--omega", "1.5", "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("attnphase: error:") and "omega" in proc.stderr


def test_solve_does_not_import_torch() -> None:
    code = (
        "import sys, json, io, contextlib\n"
        "from attnphase.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    rc = main(['solve', '--alpha', '2', '--omega', '0.3', '--json', '--quadrature', 'gh6'])\n"
        "assert rc == 0, rc\n"
        "json.loads(buf.getvalue())\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_sweep_writes_one_row_per_alpha(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["sweep", "--omega", "0.3", "--alpha", "1.8:2.2:3", "--branch", "semantic",
            "--out", str(tmp_path), "--quadrature", "gh6", "--quiet"]
    assert main(argv) == 0
    out = tmp_path / "sweep_semantic_omega0.3.csv"
    assert f"wrote 3 rows to {out}" in capsys.readouterr().err
    with open(out, newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        csv_keys = (KEYS - {"L", "A", "P", "rho0", "rank", "loss", "requested_branch"})  # the model is in the file name / --json
        csv_keys |= {f"err_{k}" for k in point_record.RESULT_KEYS}
        assert set(reader.fieldnames or ()) == csv_keys and len(reader.fieldnames or ()) == len(csv_keys)
    # gh6 is one deterministic rule: no error bar unless --error-estimate K asks for K rules
    assert all(r["err_q"] == "nan" for r in rows)
    assert [float(r["alpha"]) for r in rows] == pytest.approx([1.8, 2.0, 2.2])
    assert all(r["branch"] == "semantic" and r["converged"] == "1" for r in rows)
    theta = [float(r["theta"]) for r in rows]
    eps_g = [float(r["eps_g"]) for r in rows]
    assert theta[0] < theta[1] < theta[2]  # more data: closer to the teacher
    assert eps_g[0] > eps_g[1] > eps_g[2]
    assert len({r["eps_lin"] for r in rows}) == 1


def test_sweep_points_carry_the_standard_error_of_their_blocks(tmp_path) -> None:
    """A rule of 4 scramblings: each converged row's err_<key> is std_j / sqrt(4) over the 4 blocks'
    fixed points (warm-started from the row's), recomputed here for one row."""
    from attnphase.numerics import solve
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.errors.replicates import block_config
    from attnphase.theory.params import ModelParams

    argv = ["sweep", "--omega", "0.3", "--alpha", "1.6,2", "--branch", "semantic", "--quadrature", "sobol8:4",
            "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    rows = list(csv.DictReader(open(tmp_path / "sweep_semantic_omega0.3.csv")))
    assert all(0 < float(r["err_q"]) < 0.05 and 0 < float(r["err_theta"]) < 0.05 for r in rows)
    assert all(float(r["err_m"]) == 0.0 for r in rows)  # m = 0 exactly on the semantic branch
    import xarray as xr

    with xr.open_dataset(tmp_path / "sweep_semantic.nc") as ds:  # the dataset carries the same error bars
        assert list(ds.err_q.values[0]) == pytest.approx([float(r["err_q"]) for r in rows], rel=1e-12)
    cfg = SolverConfig(quadrature="sobol8:4")
    fp = solve(ModelParams(omega=0.3), 2.0, "semantic", config=cfg)
    assert float(rows[1]["q"]) == pytest.approx(fp.record["q"], rel=1e-6)
    qs = [solve(fp.params, 2.0, "semantic", init=fp.overlaps, config=block_config(cfg, j)).record["q"] for j in range(4)]
    assert len(set(qs)) == 4
    assert float(rows[1]["err_q"]) == pytest.approx(np.std(qs, ddof=1) / 2, rel=1e-3)


def test_sweep_says_the_branch_end_with_its_standard_error(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """The semantic branch followed down ends at a bifurcation located by its eigenvalue: the end line, the JSON's
    ``end`` and the dataset's ``err_end`` carry its standard error over the rules' blocks."""
    import xarray as xr

    from attnphase.display import with_error

    argv = ["sweep", "--omega", "0.3", "--alpha", "0.6,1,2", "--branch", "semantic", "--quadrature", "sobol8:4",
            "--out", str(tmp_path), "--json", "--quiet"]
    assert main(argv) == 0
    cap = capsys.readouterr()
    end = json.loads(cap.out)["end"]
    assert end["kind"] == "bifurcation" and end["method"] == "eigenvalue" and 0 < end["err"] < 0.05
    assert f"semantic branch ends at alpha = {with_error(end['alpha'], end['err'])} (it exists above" in cap.err
    assert end["exists"] == "above"  # the side where the branch exists, as phase-diagram's semantic_end_exists
    with xr.open_dataset(tmp_path / "sweep_semantic.nc") as ds:
        assert float(ds.err_end.values[0]) == pytest.approx(end["err"], rel=1e-12)


def test_sweep_says_where_the_positional_branch_is_born(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """lam = 0.05, omega = 0.1: the positional start falls to the agnostic point at alpha = 0.1 (mu < 1 there) and is
    on the branch at 0.6; the sweep locates the birth in between as the diagram does, in its line, the JSON's
    ``birth``, the dataset's ``birth`` / ``err_birth`` and the reason of the row below it."""
    import xarray as xr

    argv = ["sweep", "--omega", "0.1", "--lam", "0.05", "--alpha", "0.1,0.6", "--branch", "positional",
            "--quadrature", "sobol8:4", "--bifurcation-quadrature", "sobol12:4", "--out", str(tmp_path), "--json",
            "--quiet"]
    assert main(argv) == 0
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    birth = rec["birth"]
    assert 0.1 < birth["alpha"] < 0.6 and 0 < birth["err"] < 0.02 and birth["kind"] == "bifurcation"
    assert "the positional branch's birth from the agnostic point at alpha = " in cap.err
    assert rec["rows"][0]["reason"].endswith(f"the branch is born at alpha = {birth['alpha']:.4g} (bifurcation from "
                                             "the agnostic point) and exists above it")
    assert rec["rows"][1]["reason"] == ""
    with xr.open_dataset(tmp_path / "sweep_positional.nc") as ds:
        assert float(ds.birth.values[0]) == birth["alpha"] and float(ds.err_birth.values[0]) == birth["err"]


def test_solve_without_a_ridge_reaches_perfect_recovery(capsys: pytest.CaptureFixture[str]) -> None:
    """lam = 0 at omega = 0: the teacher is realisable and the semantic point is perfect recovery (q = theta = rho0,
    eps_g = 0).  An iterate aligned with the teacher to round-off is not a state (the channel's thhat is 0 / 0
    there): the solve and its blocks' re-solves step back from it instead of failing."""
    assert main(["solve", "--alpha", "2", "--omega", "0", "--lam", "0", "--branch", "semantic", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["converged"] and rec["q"] == pytest.approx(1.0, abs=1e-8) and rec["theta"] == pytest.approx(1.0, abs=1e-8)
    assert abs(rec["eps_g"]) < 1e-10 and rec["err_theta"] < 1e-8


@pytest.mark.heavy
def test_solve_without_a_ridge_says_where_the_students_norm_runs_away(capsys: pytest.CaptureFixture[str]) -> None:
    """lam = 0 at alpha = 0.5, omega = 0: nothing bounds |Q| and the iterates run away (q ~ 1e3); the reason says so,
    with q where the iterates went farthest; with a ridge, where the solve converged, or where the iterates stayed
    near the teacher's size, no such clause."""
    from types import SimpleNamespace

    from attnphase.numerics.se.overlaps import Overlaps
    from attnphase.theory.params import ModelParams

    assert main(["solve", "--alpha", "0.5", "--omega", "0", "--lam", "0", "--branch", "semantic", "--json"]) == 1
    rec = json.loads(capsys.readouterr().out)
    assert not rec["converged"] and "with lam = 0 nothing bounds the student's norm: q = " in rec["reason"]
    # a converged record's keys, null, and why: a script reads one schema whatever the outcome
    assert rec["err_q"] is None and rec["max_relative_error"] is None and "did not converge" in rec["error_note"]
    assert rec["found"] is False
    q = float(rec["reason"].split("student's norm: q = ")[1].split()[0])
    assert q > RUNAWAY_Q

    def stand_in(lam: float, q0: float, converged: bool = False, farthest_q: float = math.nan) -> SimpleNamespace:
        return SimpleNamespace(params=ModelParams(lam=lam), overlaps=Overlaps(q0=q0, V0=1.0, m=[0.0, 0.0], th0=0.0),
                               status=SimpleNamespace(converged=converged, farthest_q=farthest_q))
    assert point_record.runaway_student(stand_in(0.0, 500.0)).startswith(" (with lam = 0")
    assert point_record.runaway_student(stand_in(1e-3, 500.0)) == ""
    assert point_record.runaway_student(stand_in(0.0, 5.0)) == ""
    assert point_record.runaway_student(stand_in(0.0, 500.0, converged=True)) == ""
    # the best point at the start (q = 0.1), the iterates far away: q at the farthest of them decides
    assert "q = 5e+16 along the iterates" in point_record.runaway_student(stand_in(0.0, 0.1, farthest_q=5e16))
    assert point_record.runaway_student(stand_in(0.0, 0.1, farthest_q=5.0)) == ""


def test_sweep_bad_range_exits_2(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--alpha", "1:2", "--out", str(tmp_path / "x"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "START:STOP:NUM" in err and "--alpha" in err
    assert not (tmp_path / "x").exists()


def test_sweep_json_is_one_object_and_the_table(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["sweep", "--omega", "0.3", "--alpha", "1.8,2.2", "--out", str(tmp_path), "--quadrature", "gh6",
            "--quiet", "--json"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert rec["branch"] == "semantic" and rec["file"] == "sweep_semantic_omega0.3.csv"  # beside the record
    assert rec["out"] == str(tmp_path) and rec["dataset"] == "sweep_semantic.nc"
    assert rec["end"] is None  # the semantic branch spans [1.8, 2.2]
    assert [r["alpha"] for r in rec["rows"]] == pytest.approx([1.8, 2.2])
    assert rec["solver"]["quadrature"] == "gh6" and rec["params"]["omega"] == 0.3
    # the same object beside the CSV, with the model a CSV row lacks (L, A, P, rho0)
    assert json.loads((tmp_path / "sweep_semantic.json").read_text()) | {"out": str(tmp_path)} == rec  # no `out`
    assert rec["model"]["A"] == [[0.6, 0.4], [0.4, 0.6]] and rec["model"]["rho0"] == 1.0


def test_bayes_optimal_sweep_writes_its_json_object(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["sweep", "--estimator", "bayes-optimal", "--alpha", "0.5,1", "--L", "3", "--out", str(tmp_path),
            "--quiet", "--json", "--workers", "1"]
    assert main(argv) == 0
    rec = json.loads(capsys.readouterr().out)
    assert json.loads((tmp_path / "sweep_bayes-optimal.json").read_text()) | {"out": str(tmp_path)} == rec
    assert rec["file"] == "sweep_bayes-optimal_omega0.3.csv" and rec["dataset"] == "sweep_bayes-optimal.nc"
    assert rec["params"]["L"] == 3 and len(rec["rows"]) == 4 and "alpha_it" in rec
    # yes/no fields are true/false in JSON, 1/0 in the CSV (docs/reference/outputs.md)
    assert all(isinstance(r[k], bool) for r in rec["rows"] for k in ("stable", "perfect_recovery", "coincides"))
    assert (tmp_path / "sweep_bayes-optimal_omega0.3.csv").read_text().splitlines()[1].count(",1,") >= 1
    # its bars are Gauss-rule changes, not standard errors, in the JSON and the dataset alike
    assert rec["variables"]["err_q"]["long_name"].startswith("rule change of q")
    assert "informative" in rec["variables"]["branch"]["long_name"]
    import xarray as xr

    with xr.open_dataset(tmp_path / "sweep_bayes-optimal.nc") as ds:
        assert ds["err_q"].attrs["long_name"].startswith("rule change of q") and "exactly" in ds["err_q"].attrs["comment"]
    # a bar of 0 is never silent: eps_g = 0 exactly at perfect recovery (alpha = 1 > 1/L), its bar 0 said
    perfect = [r for r in rec["rows"] if r["perfect_recovery"]]
    assert perfect and all(r["err_eps_g"] == 0.0 for r in perfect)
    assert "err_eps_g = 0 where perfect_recovery = 1" in rec["error_note"]


def test_a_bayes_optimal_point_at_perfect_recovery_says_why_its_eps_g_bar_is_0(capsys) -> None:
    """solve --estimator bayes-optimal --alpha 0.8: err_eps_g 0.0, and the error note named err_q, err_V and err_theta
    only."""
    assert main(["solve", "--estimator", "bayes-optimal", "--alpha", "0.8", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["perfect_recovery"] and rec["eps_g"] == 0.0 and rec["err_eps_g"] == 0.0
    assert "err_q = err_V = err_theta = err_eps_g = 0" in rec["error_note"]


def test_phase_diagram_writes_the_documented_files(tmp_path, capsys) -> None:
    """`attnphase phase-diagram` writes the CSV (documented columns), the JSON with its parameters,
    and both figures; alpha_c at omega = 0.3 lands near the published value even on a coarse rule."""
    import csv
    import json

    from attnphase.cli import main

    code = main([
        "phase-diagram", "--omega", "0.3:0.3:1", "--alpha", "0.6:2.2:5",
        "--quadrature", "gh6", "--out", str(tmp_path), "--quiet",
    ])
    assert code == 0
    for name in ("phase_diagram.csv", "phase_diagram.json", "phase_diagram.png", "curves_omega0.3.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    rows = list(csv.DictReader(open(tmp_path / "phase_diagram.csv")))
    assert len(rows) == 1
    assert {"omega", "alpha_c", "alpha_l", "semantic_end", "positional_end", "alpha_c_coarse"} <= set(rows[0])
    # gh6's own root is 1.2587; the sobol16 correction of alpha_c brings it to docs/model.md's 1.2515 +- 0.0005
    assert abs(float(rows[0]["alpha_c"]) - 1.2515) < 2e-3
    assert abs(float(rows[0]["alpha_c_coarse"]) - 1.25) < 0.03
    assert float(rows[0]["alpha_l"]) > float(rows[0]["alpha_c"])
    meta = json.loads((tmp_path / "phase_diagram.json").read_text())
    assert meta["params"]["omega"] == 0.3 and meta["solver"]["quadrature"] == "gh6"
    assert meta["solver"]["alpha_c_quadrature"] == "sobol16:4"
    out = capsys.readouterr().out
    assert "alpha_c" in out
    # what the err_ columns are, in the JSON and the dataset alike: none on gh6 (one deterministic rule)...
    from attnphase.execution.dataset import open_dataset

    assert (meta["independent_rules"], meta["error_bars"]) == (0, "none") and "+-" not in out
    assert open_dataset(tmp_path / "phase_diagram.nc").attrs["error_bars"] == "none"
    # ... and, on scrambled rules, the standard error over their blocks, as the printed table's heading says
    assert main(["phase-diagram", "--omega", "0.3", "--alpha", "1,1.5", "--quadrature", "sobol6:4",
                 "--alpha-c-quadrature", "sobol8:4", "--alpha-l-quadrature", "none", "--bifurcation-quadrature",
                 "sobol8:4", "--end-quadrature", "none", "--out", str(tmp_path / "bars"), "--quiet"]) == 0
    meta = json.loads((tmp_path / "bars" / "phase_diagram.json").read_text())
    assert meta["error_bars"] == "standard error over 4 scrambling blocks of each rule"
    assert f"(+- {meta['error_bars']})" in capsys.readouterr().out
    assert open_dataset(tmp_path / "bars" / "phase_diagram.nc").attrs["error_bars"] == meta["error_bars"]


@pytest.mark.heavy
def test_phase_diagram_error_estimate_is_the_spread_over_rules(tmp_path) -> None:
    """`--error-estimate 2` with gh6 repeats the boundaries on gh8 (and the alpha_c correction on
    sobol16 seed 1): each err_<boundary> is the sample std of the two values, which are recomputed here."""
    import csv

    import numpy as np

    from attnphase.cli import main
    from attnphase.numerics import phase_boundaries
    from attnphase.numerics.config import SolverConfig
    from attnphase.theory.params import ModelParams

    argv = ["phase-diagram", "--omega", "0.3:0.3:1", "--alpha", "0.6:2.2:5", "--quadrature", "gh6", "--quiet",
            "--alpha-c-quadrature", "sobol16", "--alpha-l-quadrature", "none", "--bifurcation-quadrature", "sobol15",
            "--end-quadrature", "none"]
    assert main([*argv, "--error-estimate", "1", "--out", str(tmp_path)]) == 2
    assert main([*argv, "--error-estimate", "2", "--out", str(tmp_path)]) == 0
    row = next(csv.DictReader(open(tmp_path / "phase_diagram.csv")))
    assert row["alpha_c_method"].endswith("err = spread over 2 independent rules")  # the bar it is, as error_bars
    other = phase_boundaries(  # the second rule: every quadrature role's replicate 1 (gh8, sobol16:1:1, ...)
        ModelParams(omega=0.3), np.linspace(0.6, 2.2, 5),
        config=SolverConfig(quadrature="gh6", alpha_c_quadrature="sobol16", alpha_l_quadrature=None,
                            bifurcation_quadrature="sobol15", end_quadrature=None).variant(1),
    )
    for key in ("alpha_c", "alpha_l"):
        pair = [float(row[key]), getattr(other, key)]
        assert int(row[f"{key}_found"]) == 2
        assert float(row[f"err_{key}"]) == pytest.approx(np.std(pair, ddof=1), rel=1e-9, abs=1e-12)
    assert float(row["err_alpha_c"]) < 2e-3  # both corrected on sobol16 (seeds 0 and 1)
    assert row["positional_end_found"] == "0" and row["err_positional_end"] == "nan"
    # one name per column: the CSV header == the JSON rows' keys == its variables, each in the dataset
    from attnphase.execution.dataset import open_dataset

    header = next(csv.reader(open(tmp_path / "phase_diagram.csv")))
    meta = json.loads((tmp_path / "phase_diagram.json").read_text())
    assert [list(r) for r in meta["rows"]] == [header] and list(meta["variables"]) == header
    ds = open_dataset(tmp_path / "phase_diagram.nc")
    assert set(header) <= set(ds.data_vars) | set(ds.coords) and not [c for c in header if c.endswith("_err")]
    assert set(ds.data_vars) - set(header) <= {"eps_g", "e_t", "m", "theta", "q", "converged", "on_branch",
                                                "status", "error"}
    assert ds["alpha_c"].attrs["ancillary_variables"] == "alpha_c_found err_alpha_c"


@pytest.mark.heavy
def test_phase_diagram_json_is_one_object(tmp_path, capsys) -> None:
    """`--json`: stdout is phase_diagram.json as one object (the table goes to stderr).  Small rules throughout
    (alpha_c is gh6's own root; no refinement of alpha_l or the ends): the default ones are run by
    test_phase_diagram_writes_the_documented_files."""
    argv = ["phase-diagram", "--omega", "0.3", "--alpha", "0.6:2.2:5", "--quadrature", "gh6",
            "--alpha-c-quadrature", "none", "--alpha-l-quadrature", "none", "--bifurcation-quadrature", "sobol10",
            "--end-quadrature", "none", "--out", str(tmp_path), "--quiet", "--json"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    meta = json.loads(lines[0])
    assert meta["out"] == str(tmp_path) and meta["params"]["omega"] == 0.3
    # the file is that object without `out` (it lacked error_note and the Bayes-optimal thresholds --json printed)
    saved = json.loads((tmp_path / "phase_diagram.json").read_text())
    assert "error_note" in saved and "alpha_it" in saved
    printed = {k: v for k, v in meta.items() if k != "out"}
    assert json.dumps(saved, sort_keys=True) == json.dumps(printed, sort_keys=True)
    assert meta["solver"]["quadrature"] == "gh6" and len(meta["rows"]) == 1
    assert meta["rows"][0]["omega"] == 0.3 and 1.2 < meta["rows"][0]["alpha_c"] < 1.3
    # over several omegas the model's omega is "scanned", as in the dataset (it was the first omega)
    argv[argv.index("0.3")] = "0.25,0.3"
    assert main([*argv[:-4], "--out", str(tmp_path / "two"), "--quiet", "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert meta["params"]["omega"] == "scanned" and meta["omegas"] == [0.25, 0.3]


def test_sweep_over_several_omegas_is_one_task_per_omega(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sweep --omega a,b`: a CSV per omega, one dataset sweep_<branch>.nc, the --json object lists the sweeps;
    a rerun reads both tasks back from DIR/tasks."""
    from attnphase.execution.dataset import open_dataset

    argv = ["sweep", "--omega", "0.2,0.3", "--alpha", "1.8,2.2", "--out", str(tmp_path), "--quadrature", "gh6",
            "--workers", "1", "--quiet", "--json"]
    assert main(argv) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["omegas"] == [0.2, 0.3] and [s["params"]["omega"] for s in rec["sweeps"]] == [0.2, 0.3]
    assert rec["tasks"]["computed"] == 2
    for w, s in zip((0.2, 0.3), rec["sweeps"]):
        assert s["file"] == f"sweep_semantic_omega{w}.csv" and len(s["rows"]) == 2
    ds = open_dataset(tmp_path / "sweep_semantic.nc")
    assert dict(ds.sizes) == {"omega": 2, "alpha": 2}
    assert float(ds.theta.sel(omega=0.3, alpha=2.2)) == rec["sweeps"][1]["rows"][1]["theta"]
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["tasks"]["stored"] == 2 and again["sweeps"] == rec["sweeps"]


def test_solve_reports_its_largest_relative_error_bar_and_says_when_the_tier_misses_it(capsys) -> None:
    """`solve` adds max_relative_error = max err_k / |k| over the non-zero overlaps, and a note on stderr when it
    is above the tier's target (numerics.config.PRECISION_TARGETS)."""
    rec = {"q": 0.2, "m": 0.0, "V": 40.0, "theta": 0.5, "err_q": 2e-4, "err_m": 0.0, "err_V": 0.4, "err_theta": 1e-4}
    assert point_record.max_relative_error(rec) == pytest.approx(1e-2)
    assert np.isnan(point_record.max_relative_error(rec | {"err_V": float("nan")}))
    # an order parameter the reached branch holds at 0 is the solver's residue there, not an accuracy: left out
    residue = {"theta": 6.2e-12, "err_theta": 6.2e-12}
    assert point_record.max_relative_error(rec | residue | {"branch": "agnostic"}) == pytest.approx(1e-2)
    assert point_record.max_relative_error(rec | {"m": 1e-13, "err_m": 1e-13, "branch": "semantic"}) == pytest.approx(1e-2)
    assert point_record.max_relative_error(rec | residue | {"branch": "semantic"}) == pytest.approx(1.0)
    # at rank r over every entry of the overlaps' invariants (r = 1, r* = 3: a th0 singular value of 0.066 +- 0.052)
    matrix = {"branch": "semantic", "q0_eigenvalues": [1.028], "err_q0_eigenvalues": [0.0022],
              "V0_eigenvalues": [74.9], "err_V0_eigenvalues": [0.51], "th0_singular_values": [0.066],
              "err_th0_singular_values": [0.052], "m_norms": [1e-13, 0.0], "err_m_norms": [1e-13, 0.0]}
    assert point_record.max_relative_error(matrix) == pytest.approx(0.052 / 0.066)
    point_record.precision_note(1e-2, "fast")
    assert capsys.readouterr().err == ""
    point_record.precision_note(1e-2, "default")
    assert "above the default tier's target 0.001" in capsys.readouterr().err
    assert main(["solve", "--alpha", "2", "--omega", "0.3", "--quadrature", "sobol6:4", "--json"]) == 0
    out = capsys.readouterr()
    rec = json.loads(out.out)
    assert rec["max_relative_error"] == pytest.approx(point_record.max_relative_error(rec)) and rec["max_relative_error"] > 1e-3
    assert "above the default tier's target" in out.err


def test_a_solve_that_fell_to_the_agnostic_point_where_the_branch_leaves_it_exits_as_solver_failure(
        capsys, monkeypatch) -> None:
    """``solve --alpha 2 --rho0 1e4`` fell to the agnostic point, whose eigenvalue in theta is 1.03 >= 1: the reason
    said "solver failure, not absence" and the exit code was 3 (the branch does not exist).  It is 1, as for a solve
    that did not converge; where the eigenvalue is below 1 (absent) it stays 3."""
    from dataclasses import replace

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se import state_evolution as se
    from attnphase.theory import ModelParams

    cfg = SolverConfig(quadrature="sobol8:4")
    # L = 2, omega = 0.3, alpha = 1: the positional branch leaves the agnostic point there (mu > 1)
    fell = replace(se.solve(ModelParams(omega=0.3), 1.0, "agnostic", config=cfg), requested="positional")
    assert fell.status.converged and fell.branch == "agnostic"
    argv = ["solve", "--alpha", "1", "--branch", "positional", "--quadrature", "sobol8:4", "--error-estimate", "0"]
    # run once as it is: every module the command imports binds the real solve before it is patched
    assert main(argv) == 0
    capsys.readouterr()
    monkeypatch.setattr(se, "solve", lambda *a, **k: fell)
    assert main(argv + ["--json"]) == 1
    out = capsys.readouterr()
    reason = json.loads(out.out)["reason"]
    assert "(solver failure, not absence: the agnostic point's eigenvalue in m is mu = " in reason
    assert "attnphase: warning: " in out.err


@pytest.mark.parametrize("alpha, code, verdict", [(0.5, 3, "absent: the solve converged next to the agnostic point"),
                                                  (2.0, 1, "solver failure, not absence: the solve converged next")])
def test_a_solved_point_below_the_branchs_floor_is_absence_or_solver_failure_by_the_eigenvalue(
        capsys, monkeypatch, alpha, code, verdict) -> None:
    """``solve --alpha 0.7 --branch semantic`` (omega = 0.3, below the end 0.7164) printed a semantic point of theta
    0.0039 that none of the rule's blocks reproduced, exit code 0, where a sweep says there is none.  Such a point
    (below the branch's floor, not reproduced) is the branch's absence where the agnostic point next to it is stable
    in theta (exit 3), else a solver failure (exit 1)."""
    from dataclasses import replace

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se import state_evolution as se
    from attnphase.theory import ModelParams

    agn = se.solve(ModelParams(omega=0.3), alpha, "agnostic", config=SolverConfig(quadrature="sobol8:4"))
    near = replace(agn, overlaps=replace(agn.overlaps, th0=0.004), branch="semantic", requested="semantic")
    argv = ["solve", "--alpha", f"{alpha:g}", "--quadrature", "sobol8:4", "--error-estimate", "0"]
    assert main(argv + ["--branch", "agnostic"]) == 0  # every module the command imports binds the real solve
    capsys.readouterr()
    monkeypatch.setattr(se, "solve", lambda *a, **k: near)
    assert main(argv + ["--json"]) == code
    reason = json.loads(capsys.readouterr().out)["reason"]
    assert reason.startswith(f"no semantic fixed point found at alpha = {alpha:g}, omega = 0.3: {verdict}"), reason
    assert "(|theta| = 0.004, below the branch's floor 0.02)" in reason


@pytest.mark.heavy
def test_a_student_held_at_zero_is_named_and_its_q_has_no_relative_error(capsys, tmp_path) -> None:
    """At lambda = 1 the ridge penalty holds the student at Q = 0 (q ~ 1e-47 +- 1e-47): the reason says so, and q
    (zero at round-off) is not an accuracy of 100 % with a note that the tier missed its target."""
    rec = {"branch": "agnostic", "q": 1.4e-47, "err_q": 1.4e-47, "m": 0.0, "err_m": 0.0, "V": 1.018, "err_V": 1.4e-4,
           "theta": 1.9e-24, "err_theta": 1.9e-24}
    assert point_record.max_relative_error(rec) == pytest.approx(1.4e-4 / 1.018)
    assert point_record.max_relative_error(rec | {"q": 1e-11, "err_q": 1e-12}) == pytest.approx(0.1)
    assert main(["solve", "--alpha", "2", "--lam", "1", "--json"]) == 3
    out = capsys.readouterr()
    rec = json.loads(out.out)
    assert rec["branch"] == "agnostic" and rec["q"] < 1e-20 and rec["max_relative_error"] < 1e-3
    assert "converged to the agnostic one, the student Q = 0 (q = " in rec["reason"]
    assert "(absent: the agnostic point's eigenvalue in theta is below 1 here (lambda = " in rec["reason"]
    assert "above the default tier's target" not in out.err
    assert main(["sweep", "--lam", "1", "--alpha", "1,2", "--out", str(tmp_path)]) == 3
    with open(tmp_path / "sweep_semantic_omega0.3.csv") as f:
        reasons = [row["reason"] for row in csv.DictReader(f)]
    assert len(reasons) == 2 and all("the student Q = 0 (q = " in r for r in reasons)
    # at rank 2 too: the matrix map evaluated at Q = 0's isotropic state converges there
    assert main(["solve", "--rank", "2", "--lam", "1", "--alpha", "2", "--branch", "mixed", "--json"]) == 3
    rec = json.loads(capsys.readouterr().out)
    assert rec["converged"] and rec["branch"] == "agnostic"
    assert "converged to the agnostic one, the student Q = 0 (q = " in rec["reason"]
    # a solve that stops unconverged at Q = 0 says where it stopped
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.theory.params import ModelParams

    fp = solve(ModelParams(omega=0.3, lam=1.0), 2.0, "semantic", config=SolverConfig(quadrature="sobol8:4"))
    stopped = fp.with_status(converged=False, message="not converged after 9 evaluations")
    assert " at the student Q = 0 (q = " in point_record._reason(stopped, "semantic")


def test_rank2_solve_prints_each_invariant_with_its_bar_and_its_largest_relative_bar(capsys) -> None:
    """The rank-r solve printed q0's eigenvalues etc. without their bars (the JSON had them) and no
    max_relative_error or tier note: now as the scalar form."""
    from attnphase.display import record_lines

    assert main(["solve", "--alpha", "2", "--rank", "2", "--branch", "mixed", "--json"]) == 0
    out = capsys.readouterr()
    rec = json.loads(out.out)
    assert rec["replicates"] >= 2 and rec["max_relative_error"] == pytest.approx(point_record.max_relative_error(rec))
    assert rec["max_relative_error"] > 1e-3 and "above the default tier's target" in out.err
    [line] = [ln for ln in record_lines(rec) if ln.strip().startswith("q0_eigenvalues")]  # the text form's line
    assert line.count(" +- ") == 2, line
    # eps_lin of the rank-r* teacher, as outputs.md lists it (the record had none at rank 2; the sweep's CSV had it)
    from attnphase.numerics.se.observables import eps_lin
    from attnphase.theory.params import ModelParams

    assert rec["eps_lin"] == pytest.approx(eps_lin(ModelParams(omega=0.3)), rel=1e-9)


def test_a_failed_solve_names_the_census_that_lists_the_points_at_its_alpha(capsys) -> None:
    """`solve` that does not converge says where to look next: the census at its alpha (the Bayes-optimal solve,
    which has no census, does not)."""
    rec = {"alpha": 2.0, "omega": 0.3, "reason": "not converged after 61 evaluations"}
    assert point_record.print_record(rec, rec["reason"], False, True, census=True) == 1
    assert "`attnphase census --alpha 2` with the same model options" in capsys.readouterr().err
    assert point_record.print_record(rec, rec["reason"], False, True) == 1
    assert "census" not in capsys.readouterr().err


def test_a_semantic_point_the_rules_do_not_reproduce_is_replaced_by_the_branch_followed_down(capsys) -> None:
    # solve --omega 0 --alpha 0.56 reported theta = 0.0215 from the cold start, reproduced by 1 of 4 rules (no bar,
    # "may be an artefact"), where sweep, following the branch down from 0.7, finds theta = 0.19 +- 0.014
    assert main(["solve", "--omega", "0", "--alpha", "0.56", "--branch", "semantic", "--json"]) == 0
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert "the cold start's semantic point (theta = 0.0215) is reproduced by 1 of the 4 rules" in cap.err
    assert rec["branch"] == "semantic" and math.isfinite(rec["err_theta"]) and rec["theta"] > 5 * rec["err_theta"]


def test_the_branch_followed_down_is_taken_only_where_the_rules_reproduce_it(monkeypatch) -> None:
    from types import SimpleNamespace

    from attnphase.numerics.commands import solve as solve_cmd
    from attnphase.numerics.se import state_evolution

    def point(theta):
        status = SimpleNamespace(converged=True, message="converged")
        return SimpleNamespace(branch="semantic", status=status, record={"theta": theta, "e_t": 2.6e-3},
                               overlaps=SimpleNamespace(th0=theta), with_status=lambda **k: point(theta))

    def err(converged, spread=1e-4):
        return SimpleNamespace(converged=converged, rules=("a", "b", "c", "d"), std={"theta": spread})

    cold, down = point(0.02), point(0.19)
    monkeypatch.setattr(state_evolution, "semantic_followed_down", lambda fp, cfg: down)
    for down_reproduced, taken in ((4, down), (1, cold)):
        monkeypatch.setattr(solve_cmd, "_point_error", lambda fp, cfg, n, k=down_reproduced: err(k))
        assert solve_cmd._semantic_reproduced(cold, err(1), None, 0)[0] is taken
    monkeypatch.setattr(state_evolution, "semantic_followed_down", lambda fp, cfg: pytest.fail("tried"))
    assert solve_cmd._semantic_reproduced(cold, err(2), None, 0)[0] is cold  # reproduced: kept, nothing tried


@pytest.mark.parametrize("down_theta, taken", [(0.46, "down"), (0.052, "cold")])
def test_a_semantic_point_the_rules_spread_is_replaced_by_another_point_followed_down(monkeypatch, down_theta,
                                                                                       taken) -> None:
    # sigma = 0.8, omega = 0.2, alpha = 0.6273: the cold start reaches theta = 0.050 +- 0.012 next to the agnostic
    # point, reproduced by every rule; followed down from above, the branch is at 0.46 (another point: taken), while
    # a point followed down to the same theta (one point, spread by the rules near a birth) leaves the cold one
    from types import SimpleNamespace

    from attnphase.numerics.commands import solve as solve_cmd
    from attnphase.numerics.se import state_evolution

    def point(theta):
        status = SimpleNamespace(converged=True, message="converged")
        return SimpleNamespace(branch="semantic", status=status, record={"theta": theta, "e_t": 2.6e-3},
                               overlaps=SimpleNamespace(th0=theta), with_status=lambda **k: point(theta))

    reproduced = SimpleNamespace(converged=4, rules=("a", "b", "c", "d"), std={"theta": 0.012})
    cold, down = point(0.05), point(down_theta)
    monkeypatch.setattr(state_evolution, "semantic_followed_down", lambda fp, cfg: down)
    monkeypatch.setattr(solve_cmd, "_point_error", lambda fp, cfg, n: reproduced)
    assert solve_cmd._semantic_reproduced(cold, reproduced, None, 0)[0] is {"down": down, "cold": cold}[taken]


@pytest.mark.heavy
def test_a_cold_semantic_point_next_to_the_agnostic_one_gives_way_to_the_branch_followed_down(capsys) -> None:
    assert main(["solve", "--sigma", "0.8", "--omega", "0.2", "--alpha", "0.6273", "--branch", "semantic",
                 "--json"]) == 0
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert "another point than the branch's; the branch followed down from above" in cap.err
    assert rec["branch"] == "semantic" and 0.4 < rec["theta"] < 0.5 and rec["err_theta"] < 0.02


def test_a_semantic_branch_followed_down_that_stalls_at_alpha_is_a_failure_the_cold_starts_verdict_quoted(capsys):
    """lam 0.1, omega 0.15 on the fast tier: the branch followed down from 3 converges down to 2.466 and stalls at
    2.40, where the cold start alone finds the agnostic point stable in theta; the solve is a failure (exit 1), and
    its reason says so before it quotes the cold start's "absent"."""
    assert main(["solve", "--lam", "0.1", "--omega", "0.15", "--alpha", "2.40", "--branch", "semantic",
                 "--precision", "fast", "--json"]) == 1
    reason = json.loads(capsys.readouterr().out)["reason"]
    failure = reason.index("a solver failure, not the branch's absence")
    assert reason.startswith("not converged: the semantic branch, followed down") and "stalled at alpha = 2.4" in reason
    assert failure < reason.index("what the cold start here alone gave: absent")


def test_a_census_start_that_reached_its_label_below_the_floor_says_it_is_the_agnostic_point(capsys, monkeypatch):
    """``census --alpha 0.5 --omega 0.3``: a start's line said "semantic, e_t = 0.0012906069" -- the agnostic point's
    e_t, theta = 4e-4 at the rule's noise, where no semantic branch exists -- and the census listed it as the agnostic
    point.  The line says the point lies below the branch's floor."""
    from dataclasses import replace
    from types import SimpleNamespace

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.phase import census as census_mod
    from attnphase.numerics.se import state_evolution as se
    from attnphase.theory import ModelParams

    agn = se.solve(ModelParams(omega=0.3), 0.5, "agnostic", config=SolverConfig(quadrature="sobol8:4"))
    near = replace(agn, overlaps=replace(agn.overlaps, th0=4.3e-4), branch="semantic", requested="semantic")

    def census(params, alpha, progress=None, **kw):
        progress(SimpleNamespace(name="grid q0 0.3, V0 50, m 0, th0 0.8 sqrt(q0 rho0)"), near)
        raise RuntimeError("stopped after one start")
    monkeypatch.setattr(census_mod, "census", census)
    with pytest.raises(RuntimeError, match="stopped after one start"):
        main(["census", "--alpha", "0.5", "--quadrature", "sobol8:4"])
    line = next(x for x in capsys.readouterr().err.splitlines() if "start grid q0 0.3, V0 50" in x)
    assert "semantic, e_t = " in line and "(|theta| = 0.00043, below the branch's floor: the agnostic point" in line


@pytest.mark.heavy
def test_error_estimate_0_drops_the_bars_not_the_alpha_l_refinement(tmp_path, capsys):
    """``--error-estimate 0`` is "none (faster)": without blocks the sobol refinement of alpha_l rejected itself
    ("fewer than two of its blocks reproduce the re-solved point") and alpha_l moved by 3 of its bars (1.48949 +-
    0.0046 -> 1.49584 at this grid); the numbers are now the same with and without bars."""
    common = ["phase-diagram", "--omega", "0.3", "--alpha", "0.8,1.4,2", "--precision", "fast", "--quiet", "--json"]
    assert main(common + ["--out", str(tmp_path / "bars")]) == 0
    bars = json.loads(capsys.readouterr().out)["rows"][0]
    assert main(common + ["--out", str(tmp_path / "none"), "--error-estimate", "0"]) == 0
    none = json.loads(capsys.readouterr().out)["rows"][0]
    assert none["alpha_l"] == pytest.approx(bars["alpha_l"], rel=1e-12)
    assert none["alpha_c"] == pytest.approx(bars["alpha_c"], rel=1e-12)
    assert math.isfinite(bars["err_alpha_l"]) and "err_alpha_l" not in none


@pytest.mark.heavy
def test_a_boundary_without_a_bar_is_said_in_the_json_too(tmp_path, capsys):
    """``--branch-end trace``: the traced semantic end carries no bar; stderr said so, phase_diagram.json's
    error_note did not (README: a missing bar is said in the JSON's error_note)."""
    assert main(["phase-diagram", "--omega", "0.3", "--alpha", "0.4,1.4,2", "--precision", "fast", "--branch-end",
                 "trace", "--out", str(tmp_path), "--quiet", "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert meta["rows"][0]["err_semantic_end"] is None and math.isfinite(meta["rows"][0]["semantic_end"])
    assert meta["error_note"].startswith("semantic_end has no error bar at omega = 0.3: a traced end")


def test_a_sweep_end_without_a_bar_is_said_in_the_json_and_on_stderr(tmp_path, capsys):
    """``sweep --branch-end trace``: the traced end's err was null, its error_note spoke of err_m only and stderr said
    nothing (phase-diagram says why; README: a missing bar is said in the JSON's error_note and on stderr)."""
    assert main(["sweep", "--omega", "0.3", "--alpha", "0.5,1", "--precision", "fast", "--branch-end", "trace",
                 "--out", str(tmp_path), "--quiet", "--json"]) == 0
    out, err = capsys.readouterr()
    obj = json.loads(out)
    assert obj["end"]["err"] is None and obj["end"]["method"] == "trace" and math.isfinite(obj["end"]["alpha"])
    said = "the semantic end has no error bar at omega = 0.3: a traced end is the extreme alpha"
    assert obj["error_note"].startswith(said) and said in err
    # the rows' largest relative bar against the tier's target, as solve says of its point (sweep said nothing)
    from attnphase.numerics.commands.point_record import max_relative_error

    rel = max(max_relative_error(row) for row in obj["rows"] if not row["reason"])
    assert rel > 0.01 and f"the largest relative error bar of the overlaps is {rel:.1e}, above the fast tier's " \
                          "target 0.01" in err


def test_the_bare_end_note_names_each_omega_and_a_reason():
    from attnphase.numerics.commands.sweep import _bare_end_note

    assert _bare_end_note("semantic", []) == ""
    assert _bare_end_note("positional", [(0.1, "trace"), (0.2, "trace")]).startswith(
        "the positional end has no error bar at omega = 0.1, 0.2: a traced end")
    assert _bare_end_note("semantic", [(0.1, "trace"), (0.2, "bisection")]).endswith(
        "the JSON's end.method says how it was located")


def test_a_non_stochastic_A_is_refused_with_its_row_sums(capsys) -> None:
    """--A with rows of 0.33333333 (sums 1 - 1e-8) was refused as "A must be row-stochastic (non-negative rows summing
    to 1)" without the sums or the tolerance: a user could not tell what was wrong."""
    third = ",".join(["0.33333333"] * 3)
    assert main(["solve", "--L", "3", "--alpha", "2", "--A", ";".join([third] * 3)]) == 2
    err = capsys.readouterr().err
    assert "within 1e-9" in err and "row sums 0.99999999, 0.99999999, 0.99999999" in err and "16 digits" in err
    assert main(["solve", "--alpha", "1", "--A", "0.5,0.6;0.4,0.6"]) == 2
    err = capsys.readouterr().err
    assert "row sums 1.1, 1" in err and "16 digits" not in err


def test_an_e_t_rule_of_one_scrambling_is_said_to_be_left_out_of_err_e_t(capsys) -> None:
    """solve --e-t-quadrature sobol16: err_e_t 1.6e-8 while the rule's seeds 0, 1, 2 gave e_t 30 such bars apart --
    every block re-solve read e_t on the same one-scrambling rule.  The note says so; with as many blocks as the
    solve rule's (sobol14:4) they enter the bar (2.2e-7) and no note is needed."""
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.errors.quadrature_error import e_t_rule_note

    assert "sobol16:4" in e_t_rule_note(SolverConfig(e_t_quadrature="sobol16"))
    assert e_t_rule_note(SolverConfig(e_t_quadrature="sobol16:4")) == e_t_rule_note(SolverConfig()) == ""
    assert e_t_rule_note(SolverConfig(quadrature="sobol12", e_t_quadrature="sobol16")) == ""  # rules, not blocks
    assert main(["solve", "--alpha", "2", "--branch", "semantic", "--e-t-quadrature", "sobol12", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert "err_e_t leaves out the e_t rule's own error" in rec["error_note"]


def test_a_phase_diagram_grid_out_of_order_is_sorted_and_said(capsys) -> None:
    """phase-diagram --alpha 2,1.2,1 sorted silently (its JSON kept 2, 1.2, 1 beside a dataset in 1, 1.2, 2); sweep
    said it."""
    import argparse

    from attnphase import options

    assert options.alpha_grid(argparse.Namespace(alpha="2,1.2,1")) == [1.0, 1.2, 2.0]
    assert "--alpha values sorted ascending" in capsys.readouterr().err
    assert options.alpha_grid(argparse.Namespace(alpha="1,2")) == [1.0, 2.0]
    assert capsys.readouterr().err == ""


def test_a_negative_e_t_is_said_to_be_round_off_of_a_vanishing_training_loss(capsys) -> None:
    """solve --lam 0 --omega 0 --alpha 2 --branch semantic printed e_t = -1.73e-18 +- 5.0e-19 with no word: a training
    loss (squares plus the ridge) is never negative."""
    assert point_record.negative_e_t_note({"e_t": 1e-3}) == point_record.negative_e_t_note({"e_t": None}) == ""
    assert "0 to round-off" in point_record.negative_e_t_note({"e_t": -1.7e-18})
    assert "numerical error" in point_record.negative_e_t_note({"e_t": -1e-6})
    assert main(["solve", "--lam", "0", "--omega", "0", "--alpha", "2", "--branch", "semantic", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["e_t"] < 0 and "< 0 is 0 to round-off" in rec["error_note"]


def test_a_rank_two_point_without_bars_has_max_relative_error_null_as_at_rank_one(capsys):
    """``solve --rank 2 --branch agnostic --alpha 2 --precision fast --json`` (1 of 4 replicates on the branch): its
    err_* were null and max_relative_error was missing, where rank 1 gives it as null."""
    from attnphase.numerics.commands.solve import _matrix_error_bars
    from attnphase.numerics.config import SolverConfig

    rec = _matrix_error_bars({}, {"replicates": 1, "replicates_tried": 4}, SolverConfig(), 0, "fast")
    assert "max_relative_error" in rec and rec["max_relative_error"] is None
    assert rec["error_note"].startswith("no error bars: only 1 of 4 replicates")
    assert "1 of 4 replicates" in capsys.readouterr().err


@pytest.mark.heavy
def test_a_reproduced_point_below_the_positional_floor_is_not_the_branch(capsys) -> None:
    """``solve --branch positional`` on an asymmetric model (sigma 0.4,0.6, A and P asymmetric, alpha 2) printed m =
    -0.0028 +- 0.0013 (|m| 0.0057, below the floor 0.02), reason empty, exit 0, where ``sweep`` says no positional
    point is there: the rule's blocks reproduced it, and the floor was tested only on points they did not.  About 10 s."""
    argv = ["solve", "--alpha", "2", "--omega", "0.3", "--branch", "positional", "--sigma", "0.4,0.6", "--A",
            "0.7,0.3;0.2,0.8", "--P", "1,0.3;0.3,2", "--json"]
    assert main(argv) == 3
    rec = json.loads(capsys.readouterr().out)
    assert abs(rec["m"]) < 0.02 and "below the branch's floor (|m| = " in rec["reason"]
    assert "(norm of m_1..m_2), floor 0.02)" in rec["reason"]


@pytest.mark.heavy  # about 7 s: a fast-tier sweep of five points, its end and the end's four block re-solves
def test_a_block_on_its_way_to_the_zero_student_leaves_the_end_bar(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """lam = 0.05, omega = 0.3, fast tier: block 2's agnostic point at the semantic end (alpha 0.56) stopped at
    q = 2.3e-12 on its way to Q = 0 (pooled q 2.5e-4), its eigenvalue 1916: the end printed 0.56 +- 450, the
    dataset's err_end 447.  Such a block is another fixed point and leaves the bar, as one at Q = 0 does."""
    # exit 1: the fast tier fails one solve where the branch exists (its reason column says so)
    assert main(["sweep", "--lam", "0.05", "--alpha", "0.4:1.2:5", "--omega", "0.3", "--precision", "fast",
                 "--out", str(tmp_path), "--quiet", "--json"]) == 1
    end = json.loads(capsys.readouterr().out)["end"]
    assert 0.5 < end["alpha"] < 0.62 and 0 < end["err"] < 0.2
