"""Probes of a demanding user: bad numbers, shapes, paths and sizes are refused before any
work with one line naming the option (exit code 2), no traceback and nothing left behind; outputs
are complete or absent; results say which branch was asked for and which was reached.

Every probe runs in-process through ``attnphase.cli.main`` (fast: none reaches a solve except the
few marked, which use a small rule).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from attnphase.cli import main

# (argv, words the one-line error must contain). Each must fail before any work.
REFUSED = [
    (["solve", "--alpha", "1", "--L", "10", "--json"], ["--L 10", "L <= 4"]),
    (["sweep", "--alpha", "1", "--L", "5"], ["--L 5", "ATTNPHASE_MAX_L"]),
    (["check", "--L", "7"], ["--L 7"]),
    # the Bayes-optimal estimator has its own limit and says its own reason (not ERM's memory at L = 5)
    (["solve", "--estimator", "bayes-optimal", "--alpha", "1", "--L", "6"], ["--L 6", "Bayes-optimal", "L <= 5"]),
    (["sweep", "--estimator", "bayes-optimal", "--alpha", "1", "--L", "6"], ["--L 6", "Bayes-optimal", "L <= 5"]),
    (["simulate", "--algorithm", "amp", "--alpha", "0.1", "--d", "50", "--L", "6"], ["--L 6", "--algorithm amp",
                                                                                     "L <= 5"]),
    (["solve", "--alpha", "1", "--quadrature", "sobol40"], ["--quadrature", "sobol40"]),
    (["solve", "--alpha", "1", "--e-t-quadrature", "sobol40"], ["--e-t-quadrature"]),
    (["phase-diagram", "--alpha-c-quadrature", "sobol40"], ["--alpha-c-quadrature"]),
    (["phase-diagram", "--alpha", "0.1"], ["--alpha", "one value 0.1", "two or more"]),
    (["scan", "--lam", "0.01,0.1", "--alpha", "2"], ["--alpha", "one value 2", "two or more"]),
    (["solve", "--alpha", "1", "--quadrature", "gh200"], ["--quadrature", "nodes"]),
    (["solve", "--alpha", "1", "--quadrature", "gh1"], ["--quadrature", "gh1"]),
    (["solve", "--alpha", "1", "--quadrature", "sobol12:0"], ["--quadrature"]),
    (["solve", "--alpha", "1", "--quadrature", "sobol8:4:0:junk"], ["--quadrature", "sobol8:4:0:junk"]),
    (["solve", "--alpha", "1", "--quadrature", "ghr8:1:2"], ["--quadrature", "ghr8:1:2"]),
    (["solve", "--alpha", "1", "--quadrature", "ghr8:-1"], ["--quadrature", "SEED >= 0"]),
    (["solve", "--alpha", "2", "--token-cov", "0.09,0;0,0.49", "--sigma", "0.5"], ["--token-cov", "got sigma 0.5"]),
    (["simulate", "--algorithm", "amp", "--alpha", "0.4", "--token-cov", "0.09,0;0,0.49", "--sigma", "0.5"],
     ["--token-cov", "got sigma 0.5"]),
    (["solve", "--alpha", "1", "--error-estimate=-3"], ["--error-estimate", "-3"]),
    (["solve", "--alpha", "1", "--error-estimate=1"], ["--error-estimate", "K >= 2"]),
    (["solve", "--alpha", "1", "--tol", "10"], ["--tol"]),
    (["solve", "--alpha", "1", "--tol", "nan"], ["--tol"]),
    (["solve", "--alpha", "nan"], ["--alpha", "finite"]),
    (["solve", "--alpha", "-1"], ["--alpha", "> 0"]),
    (["solve", "--alpha", "0"], ["--alpha", "> 0"]),
    (["solve", "--alpha", "1:2:3"], ["--alpha", "one number"]),
    (["solve", "--alpha", "1", "--lam", "nan"], ["--lam", "finite"]),
    (["solve", "--alpha", "1", "--lam", "-1"], ["--lam"]),
    (["solve", "--alpha", "1", "--rho0", "0"], ["--rho0"]),
    (["solve", "--alpha", "1", "--sigma", "nan"], ["--sigma", "finite"]),
    (["solve", "--alpha", "1", "--sigma", "0.5,0.5,0.5"], ["--sigma", "L = 2"]),
    (["solve", "--alpha", "1", "--omega", "1.5"], ["--omega", "[0, 1]"]),
    (["solve", "--alpha", "1", "--omega", "0.1:0.3:3"], ["--omega", "one number"]),
    (["solve", "--alpha", "1", "--A", "0.5,0.5;0.5"], ["--A", "rows"]),
    (["solve", "--alpha", "1", "--A", "0.5,0.5,0.5,0.5"], ["--A", 'separated by ";"']),
    (["census", "--alpha", "1", "--P", "1,0,0,1"], ["--P", 'separated by ";"']),
    (["solve", "--alpha", "1", "--A", "0.9,0.3;0.5,0.5"], ["--A", "row-stochastic"]),
    (["solve", "--alpha", "1", "--A", "0.6,0.4;0.4,0.60001"], ["--A", "row-stochastic"]),  # numpy's rtol let 1e-5 in
    (["solve", "--alpha", "2", "--lam", "abc"], ["attnphase: error: --lam: invalid float value"]),  # not "argument --lam"
    (["derive", "-oa.txt", "-ob.txt"], ["-o is given twice"]),  # the value attached to the short option: the last won
    # options that would be ignored: refused
    (["solve", "--alpha", "2", "--branch-end", "trace"], ["--branch-end", "used by sweep, phase-diagram and scan"]),
    (["census", "--alpha", "2", "--alpha-c-quadrature", "sobol9"], ["--alpha-c-quadrature", "used by"]),
    (["sweep", "--alpha", "1,2", "--alpha-l-quadrature", "none"], ["--alpha-l-quadrature", "used by"]),
    (["validate", "--quick", "--workers", "2", "--threads", "2"], ["--threads 2", "--workers 1"]),
    (["histogram", "--quick", "--threads", "2", "--workers", "2"], ["--threads 2", "--workers 1"]),
    (["histogram", "--quick", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], ["--workers 2", "--scheduler"]),
    # nothing listens there: said before the announcement and the progress bar, not after a 10 s wait
    (["sweep", "--alpha", "1,2", "--scheduler", "tcp://127.0.0.1:1"], ["--scheduler tcp://127.0.0.1:1: cannot connect"]),
    (["validate", "--quick", "--scheduler", "127.0.0.1:1"], ["--scheduler 127.0.0.1:1: cannot connect"]),
    (["solve", "--alpha", "1", "--A", "0.5,0.5;0.5,0.5", "--L", "3"], ["--A", "L = 3"]),
    (["solve", "--alpha", "1", "--P", "1,2;3,4"], ["--P", "symmetric"]),
    (["sweep", "--omega", "0.3", "--alpha", "1", "--rank", "2", "--prox", "local"], ["--prox local", "global"]),
    (["solve", "--alpha", "1", "--L", "1"], ["--L", ">= 2"]),
    (["sweep", "--alpha", "1:2:100000"], ["--alpha", "100000", "--large"]),
    (["sweep", "--alpha", "0.01:1:1001", "--estimator", "bayes-optimal"], ["--large", "12 s", "Bayes-optimal"]),
    (["sweep", "--alpha", "1:2:1000000000000"], ["--alpha", "at most"]),
    (["sweep", "--alpha", "1:2:0"], ["--alpha", "NUM"]),
    (["sweep", "--alpha", "1:2"], ["--alpha", "START:STOP:NUM"]),
    (["sweep", "--alpha", "-1:2:3"], ["--alpha", "> 0"]),
    (["phase-diagram", "--omega", "0:1:100", "--alpha", "0.1:3:100"], ["--omega/--alpha", "--large"]),
    (["census", "--alpha", "0"], ["--alpha", "> 0"]),
    (["census", "--alpha", "-1.25"], ["--alpha", "> 0"]),
    (["census", "--alpha", "1:2:3"], ["--alpha", "one number"]),
    (["census", "--alpha", "1", "--omega", "1.5"], ["--omega", "[0, 1]"]),
    (["census", "--alpha", "1", "--omega", "-0.1"], ["--omega", "[0, 1]"]),
    (["census", "--alpha", "1", "--rank", "2", "--quadrature", "gh20"], ["--quadrature gh20", "Sobol"]),
    (["census", "--alpha", "1", "--rank", "0"], ["--rank", ">= 1"]),
    (["census", "--alpha", "1", "--rank", "2", "--prox", "local"], ["--prox local", "global"]),
    (["census", "--alpha", "1", "--teacher-rank", "2", "--token-cov", "0.5,0.1;0.1,0.5"], ["--token-cov"]),
    (["census", "--alpha", "1", "--rank", "2", "--out", "x.csv"], ["--out", "folder"]),
    (["census", "--alpha", "1", "--rank", "2", "--e-t-quadrature", "sobol12"], ["--e-t-quadrature", "rank 1"]),
    (["census", "--alpha", "1", "--token-cov", "0.25,0.25;0.25,0.25"], ["--token-cov", "singular"]),
    (["census", "--alpha", "1", "--error-estimate", "1"], ["--error-estimate", "K >= 2"]),
    (["census", "--alpha", "1", "--L", "5"], ["--L 5"]),
    (["census", "--alpha", "1", "--quadrature", "sobol40"], ["--quadrature", "sobol40"]),
    (["phase-diagram", "--omega", "0.3,1.2"], ["--omega", "[0, 1]"]),
    (["simulate", "--d=10000000"], ["--d 10000000", "PB", "memory"]),
    (["simulate", "--d", "1"], ["--d", ">= 2"]),
    (["simulate", "--d", "2", "--L", "3"], ["--d", "L = 3"]),
    (["simulate", "--seed", "-1"], ["--seed", ">= 0"]),
    (["simulate", "--rank", "0"], ["--rank"]),
    (["simulate", "--threads", "0"], ["--threads"]),
    (["simulate", "--n-test", "1"], ["--n-test"]),
    (["simulate", "--grad-tol", "-1"], ["--grad-tol"]),
    (["simulate", "--dtype", "float16"], ["--dtype"]),
    (["simulate", "--init", "sideways"], ["--init"]),
    (["simulate", "--device", "tpu"], ["--device"]),
    (["simulate", "--L", "11"], ["--L 11"]),
    (["derive", "--L", "10"], ["--L 10", "L <= 7"]),
    (["validate", "--seeds", "0"], ["--seeds"]),
    (["validate", "--d", "1"], ["--d"]),
    (["validate", "--cases", "d"], ["--cases", "--suite general"]),
    (["validate", "--suite", "general", "--cases", "d,z"], ["--cases", "a, b, c, d, e"]),
    (["check", "--alpha", "nan"], ["--alpha"]),
    (["check", "--seed", "-2"], ["--seed"]),
    (["check", "--only", "foo"], ["--only", "foo"]),
    (["histogram", "--seed", "-1"], ["--seed"]),
    (["histogram", "--threads", "0"], ["--threads"]),
    (["derive", "--lam", "nan"], ["--lam"]),
    (["solve", "--alpha", "1", "--branch", "diagonal"], ["--branch"]),
    (["solve"], ["--alpha"]),
]


def _one_line_error(capsys, argv, needles, tmp_path):
    before = sorted(os.listdir(tmp_path))
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors (the same one-line format) exit from parse_args
        code = exc.code
    assert code == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.count("\n") == 1 and cap.err.startswith("attnphase: error:"), cap.err
    assert "Traceback" not in cap.err
    for needle in needles:
        assert needle in cap.err, (needle, cap.err)
    assert sorted(os.listdir(tmp_path)) == before  # nothing left behind
    return cap.err


@pytest.mark.parametrize(("argv", "needles"), REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_refused_before_any_work(argv, needles, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTNPHASE_MAX_L", raising=False)
    out = ["--out", str(tmp_path / "out")] if argv[0] in ("sweep", "phase-diagram", "validate", "histogram") else []
    _one_line_error(capsys, argv + out, needles, tmp_path)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("env", "argv", "needles"), [
    ("abc", ["solve", "--alpha", "2", "--L", "5"], ["$ATTNPHASE_MAX_L must be an integer", "'abc'"]),
    ("0", ["solve", "--alpha", "2"], ["$ATTNPHASE_MAX_L must be an integer >= 1"]),
    ("3", ["derive", "--L", "8"], ["--L 8", "L <= 7"]),  # it raises a limit, never lifts every one
    ("3", ["sweep", "--alpha", "1", "--L", "5"], ["--L 5", "L <= 4"]),
])
def test_the_largest_L_variable_raises_limits_and_is_checked(env, argv, needles, capsys, tmp_path, monkeypatch):
    """ATTNPHASE_MAX_L=3 lowered the state evolution's limit (L = 4 refused) and lifted derive's (L = 8 ran); a value
    that is no integer was ignored, the message still asking to set it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNPHASE_MAX_L", env)
    out = ["--out", str(tmp_path / "out")] if argv[0] == "sweep" else []
    _one_line_error(capsys, argv + out, needles, tmp_path)


def test_the_largest_L_variable_never_lowers_a_limit(monkeypatch):
    from attnphase.options import check_L

    monkeypatch.setenv("ATTNPHASE_MAX_L", "1")
    check_L(4, "solve")  # the state evolution's own limit stands
    check_L(5, "solve", "bayes-optimal")
    monkeypatch.setenv("ATTNPHASE_MAX_L", "6")
    check_L(6, "solve")
    with pytest.raises(ValueError, match="L <= 6"):
        check_L(7, "solve")


def test_cuda_missing_is_one_line(capsys, tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.chdir(tmp_path)
    for argv in (["simulate", "--d", "50", "--device", "cuda"],
                 ["validate", "--quick", "--device", "cuda", "--out", str(tmp_path / "v")],
                 ["histogram", "--quick", "--device", "cuda:1", "--out", str(tmp_path / "h")]):
        _one_line_error(capsys, argv, ["--device", "CUDA is not available"], tmp_path)
    assert os.listdir(tmp_path) == []


# --- output paths: refused before the computation, nothing created ------------------------------

@pytest.mark.parametrize("command", [
    ["phase-diagram", "--omega", "0.3", "--alpha", "1,2"],
    ["sweep", "--alpha", "1"],
    ["validate", "--quick"],
    ["histogram", "--quick"],
    ["check", "--quick"],
])
def test_out_problems_found_first(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "existing.txt").write_text("keep me\n")
    (tmp_path / "dir").mkdir()
    for out, needle in (("existing.txt", "is a file"), ("existing.txt/sub", "is a file, not a folder"),
                        ("dir/s.csv", "folder")):
        _one_line_error(capsys, [*command, "--out", out], ["--out", needle], tmp_path)
    assert (tmp_path / "existing.txt").read_text() == "keep me\n" and os.listdir(tmp_path / "dir") == []


def test_out_not_writable(capsys, tmp_path, monkeypatch):
    # running as root makes chmod useless: the permission test itself is replaced
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).startswith(str(tmp_path / "ro")) else real(p, mode))
    (tmp_path / "ro").mkdir()
    monkeypatch.chdir(tmp_path)
    for argv in (["phase-diagram", "--out", "ro"], ["sweep", "--alpha", "1", "--out", "ro/sub"],
                 ["derive", "-o", "ro/d.md"]):
        _one_line_error(capsys, argv, ["permission denied"], tmp_path)
    assert os.listdir(tmp_path / "ro") == []


def test_derive_output_paths(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "f.txt").write_text("")
    _one_line_error(capsys, ["derive", "-o", "folder"], ["-o/--output", "is a folder"], tmp_path)
    _one_line_error(capsys, ["derive", "-o", "missing/d.md"], ["does not exist"], tmp_path)
    _one_line_error(capsys, ["derive", "-o", "f.txt/d.md"], ["is a file"], tmp_path)
    assert main(["derive", "-o", "d.md"]) == 0
    text = (tmp_path / "d.md").read_text()
    assert "omega" in text or "\\omega" in text or "ω" in text
    assert sorted(os.listdir(tmp_path)) == ["d.md", "f.txt", "folder"]  # no temporary file left
    assert (tmp_path / "d.md").stat().st_mode & 0o044  # an ordinary readable file, not a private temp file


def test_staged_output_complete_or_absent(tmp_path):
    from attnphase import outputs

    out = tmp_path / "a" / "b"
    with pytest.raises(RuntimeError):
        with outputs.staged_output(out) as stage:
            (stage / "one.csv").write_text("1")
            raise RuntimeError("the computation failed half-way")
    assert os.listdir(tmp_path) == []  # neither the folders nor the staging folder
    with outputs.staged_output(out) as stage:
        (stage / "one.csv").write_text("1")
        (stage / "two.json").write_text("{}")
    assert sorted(os.listdir(out)) == ["one.csv", "two.json"] and os.listdir(tmp_path) == ["a"]


def test_staged_output_moves_nothing_where_a_folder_stands_for_one_of_its_files(tmp_path):
    """A folder named as one of the job's files: the files before it in order had moved in (phase_diagram.csv of the
    new model beside phase_diagram.nc of the old one) when the move failed on it."""
    from attnphase import outputs

    out = tmp_path / "out"
    out.mkdir()
    (out / "a.csv").write_text("old")
    (out / "b.json").mkdir()
    with pytest.raises(ValueError, match="b.json is a folder where the job writes a file; nothing was moved"):
        with outputs.staged_output(out) as stage:
            (stage / "a.csv").write_text("new")
            (stage / "b.json").write_text("{}")
    assert (out / "a.csv").read_text() == "old" and (out / "b.json").is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left


# --- messages of the Python API name the parameter ----------------------------------------------

@pytest.mark.parametrize(("kw", "needle"), [
    (dict(omega=None), "omega"), (dict(omega="0.3"), "omega"), (dict(A="0.5"), "A"),
    (dict(A=[[1, 0], [1]]), "A"), (dict(sigma=float("nan")), "finite"), (dict(L=2.5), "L"),
    (dict(lam=True), "lam"), (dict(P=[[1, 0], [0, "x"]]), "P"),
])
def test_model_params_refuse(kw, needle):
    from attnphase.theory import ModelParams

    with pytest.raises(ValueError, match=needle):
        ModelParams(**kw)


def test_api_alpha_and_L():
    from attnphase.numerics import solve
    from attnphase.numerics.quadrature.rules import make_rule
    from attnphase.theory import ModelParams

    for alpha in ("2", None, True, float("nan"), -1.0):
        with pytest.raises(ValueError, match="alpha"):
            solve(ModelParams(), alpha)
    with pytest.raises(ValueError, match="L = 10"):
        make_rule(10, "sobol4")


# --- honest results (a few small solves) --------------------------------------------------------

def test_solve_echoes_model_and_branches(capsys):
    assert main(["solve", "--alpha", "2", "--L", "3", "--quadrature", "sobol8", "--json"]) in (0, 1, 3)
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert rec["L"] == 3 and rec["rank"] == 1 and len(rec["A"]) == 3 and rec["P"][0] == [1.0, 0.0, 0.0]
    assert rec["requested_branch"] == "semantic"
    assert "--L 3: defaults" in cap.err  # the L-dependent defaults are said


def test_missing_branch_is_exit_3(capsys, tmp_path):
    # omega = 1: the teacher is purely positional, no semantic fixed point exists
    assert main(["solve", "--alpha", "1", "--omega", "1", "--branch", "semantic", "--quadrature", "sobol8",
                 "--json"]) == 3
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert rec["requested_branch"] == "semantic" and rec["branch"] == "agnostic"
    assert "no semantic fixed point" in rec["reason"] and "exit code 3" in cap.err
    assert main(["sweep", "--alpha", "2:1:2", "--omega", "1", "--branch", "semantic", "--quadrature", "sobol8",
                 "--out", str(tmp_path), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "sorted ascending" in err and "no semantic fixed point at any alpha" in err and "exit code 3" in err
    rows = (tmp_path / "sweep_semantic_omega1.csv").read_text().splitlines()
    assert rows[0].endswith(",reason") and len(rows) == 3
    assert all("no semantic fixed point here" in r and ",agnostic," in r for r in rows[1:])


def test_a_fast_tier_point_a_finer_rule_loses_is_the_branch_absent_exit_3(capsys):
    # L = 3, simplex P, alpha = 2: sobol8:4 has a positional point (|m| ~ 0.1, its blocks reproduce it) beside an
    # agnostic point stable in m; the fast tier's end rule, sobol10:4, falls to that point from it
    assert main(["solve", "--alpha", "2", "--L", "3", "--P", "1,-1,0;-1,1,0;0,0,0", "--branch", "positional",
                 "--precision", "fast", "--json"]) == 3
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert rec["converged"] and rec["branch"] == "positional" and "exit code 3" in cap.err
    assert rec["reason"].startswith("no positional fixed point found at alpha = 2, omega = 0.3: absent: ")
    assert "on sobol10:4, a finer rule, the solve from that point reaches the agnostic point" in rec["reason"]
    assert rec["found"] is False  # the label is the point's, the verdict the record's: one key for a script


@pytest.mark.heavy  # about 5 s: a solve, the agnostic point's, two on the finer rule
def test_a_fast_tier_point_whose_projection_hides_the_stable_agnostic_point_is_the_rules(capsys):
    """A uniform A, alpha = 2: sobol8:4 converges to a positional point (m = 0.117 +- 0.014) whose projection on m = 0
    (q 0.233, V 78) has mu = 1.20, while the agnostic fixed point beside it (q 0.275, V 92) has mu = 0.54: the check
    asked the projection only and passed the point (exit 0); the default tier finds the branch absent (mu = 0.47)."""
    assert main(["solve", "--alpha", "2", "--A", "0.5,0.5;0.5,0.5", "--branch", "positional", "--precision", "fast",
                 "--json"]) == 3
    rec = json.loads(capsys.readouterr().out)
    assert rec["found"] is False and rec["reason"].startswith("no positional fixed point found at alpha = 2")
    assert "(mu = 0.542 < 1" in rec["reason"] and "reaches the agnostic point" in rec["reason"]


@pytest.mark.heavy  # about 15 s: the sweep's two rows, their bars and the finer rule's solve
def test_a_fast_tier_sweep_row_a_finer_rule_loses_is_off_the_branch_as_solve_says(tmp_path, capsys):
    # the same point as a sweep's row: its reason says absent, it is not counted on the branch, a note says why
    out = tmp_path / "sweep"
    assert main(["sweep", "--alpha", "2", "--L", "3", "--P", "1,-1,0;-1,1,0;0,0,0", "--branch", "positional",
                 "--precision", "fast", "--out", str(out), "--quiet", "--json"]) == 3
    cap = capsys.readouterr()
    row = json.loads(cap.out)["rows"][0]
    assert row["branch"] == "positional" and row["reason"].startswith("no positional fixed point here: absent: ")
    assert "on sobol10:4, a finer rule, the solve from that point reaches the agnostic point" in row["reason"]
    assert "the positional point at alpha = 2 is the solve rule's (sobol8:4)" in cap.err


def test_failed_solve_reports_no_overlaps(capsys):
    # a budget of one iteration cannot converge: the starting guess must not be printed as a result
    from attnphase.numerics.commands import point_record
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.numerics.config import SolverConfig
    from attnphase.theory import ModelParams

    fp = solve(ModelParams(), 2.0, "semantic", config=SolverConfig(quadrature="sobol8", max_iter=1))
    assert not fp.status.converged
    rec, reason = point_record.solve_record(fp, "semantic")
    assert reason.startswith("not converged")
    assert all(rec[k] is None for k in point_record.RESULT_KEYS) and rec["branch"] is None


def test_no_traceback_in_subprocess(tmp_path):
    # the console path end to end: one line, exit 2, nothing written
    proc = subprocess.run([sys.executable, "-m", "attnphase", "simulate", "--d=10000000"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and "--d 10000000" in proc.stderr
    assert os.listdir(tmp_path) == []


def test_large_rules_and_long_runs_are_announced(capsys):
    from attnphase import workload
    from attnphase.numerics.config import SolverConfig

    workload.announce_rules(2, SolverConfig(quadrature="sobol18"))
    assert "--quadrature sobol18" in capsys.readouterr().err
    workload.announce_rules(2, SolverConfig())  # the defaults are not large
    assert capsys.readouterr().err == ""
    # solve --precision precise named the phase diagram's rules (alpha_c's sobol18:4, ...), which a solve never uses
    precise = SolverConfig(quadrature="sobol16:4", alpha_c_quadrature="sobol18:4", bifurcation_quadrature="sobol19:4")
    workload.announce_rules(2, precise, workload.POINT_ROLES)
    err = capsys.readouterr().err
    assert "--quadrature sobol16:4" in err and "sobol18" not in err and "sobol19" not in err
    workload.announce_rules(2, precise, workload.SWEEP_ROLES)
    err = capsys.readouterr().err
    assert "--bifurcation-quadrature sobol19:4" in err and "sobol18" not in err


@pytest.mark.heavy
def test_interrupt_leaves_nothing(tmp_path):
    # Ctrl-C in the middle of a phase diagram, before its one task finished: exit code 130, one line, neither
    # --out nor a staging folder (finished tasks would be kept in --out/tasks: tests/cli/test_execution_commands.py)
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "attnphase", "phase-diagram", "--omega", "0.3", "--quiet",
                             "--out", "res/pd"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(4)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "attnphase: interrupted" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


# --- ordinary inputs whose solve reaches the edge of the state space ------------------------------

def test_agnostic_point_at_q0_edge_is_a_branch_outcome_with_bars(capsys):
    # lambda = 0.1: the semantic start collapses onto the agnostic point Q = 0 (q0 -> 0, the edge of the
    # domain th0^2 < q0 rho0); the answer is "no semantic fixed point here" (exit 3) with honest error bars
    code = main(["solve", "--omega", "0.2", "--alpha", "1", "--lam", "0.1", "--quadrature", "sobol8:4", "--json"])
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert code == 3 and "error:" not in cap.err, cap.err
    assert rec["branch"] == "agnostic" and "no semantic fixed point" in rec["reason"]
    assert rec["err_V"] > 0 and rec["err_eps_g"] > 0  # the blocks converged on the agnostic point too


def test_tiny_rho0_is_a_solver_outcome_not_bad_input(capsys):
    code = main(["solve", "--omega", "0.2", "--alpha", "1", "--rho0", "1e-12", "--quadrature", "sobol8:4", "--json"])
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert code in (0, 1, 3) and "error:" not in cap.err, cap.err
    assert rec["converged"] or rec["reason"].startswith("not converged")


def test_se_map_answers_none_outside_the_domain():
    import numpy as np

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se.se_map import FixedAlpha, SEMap, model_rule
    from attnphase.theory import ModelParams

    params, cfg = ModelParams(), SolverConfig(quadrature="sobol6")
    smap = SEMap(params, FixedAlpha(1.0), model_rule(params, cfg), cfg)
    assert smap.evaluate(np.array([0.1, 1.0, 0.0, 0.0, 0.1])) is not None
    for x in ([1e-27, 1.0, 0.0, 0.0, -1e-4], [0.1, 1.0, 0.0, 0.0, 0.5], [-0.1, 1.0, 0.0, 0.0, 0.0]):
        assert smap.evaluate(np.array(x)) is None  # th0^2 >= q0 rho0 or q0 <= 0: no state, no exception


def test_fd_jacobian_step_stays_in_the_domain():
    # x at distance 1e-9 from the edge of a domain |x_1| < 1e-8 on both sides: a step of 1e-4 leaves it
    # either way; the step is halved until it fits, and the Jacobian of F(x) = 2 x is found
    import numpy as np

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se.fixed_point import Evaluation, FixedPointSolver, scaled_residual

    class Narrow:
        def admissible(self, x):
            return bool(abs(x[0]) < 1e-8)

        def evaluate(self, x, exact=False):
            if not self.admissible(x):
                raise AssertionError("evaluated outside the domain")
            return Evaluation(x.copy(), 2 * x, scaled_residual(x, 2 * x), True)

    solver = FixedPointSolver(Narrow(), SolverConfig())
    x = np.array([9e-9])
    G = np.array([x[0]])
    J = solver._fd_jacobian(x, G, np.eye(1), lambda xv, fv: fv - xv)
    assert J is not None and abs(J[0, 0] - 1.0) < 1e-6


def test_failure_after_the_checks_is_not_reported_as_bad_input(capsys, monkeypatch):
    # a ValueError from inside the computation (here: a solve made to raise) is a failure, exit code 1,
    # never "attnphase: error:" (exit 2), which says the input was wrong
    from attnphase.numerics.se import state_evolution

    def broken(*args, **kwargs):
        raise ValueError("inner failure")

    monkeypatch.setattr(state_evolution, "solve", broken)
    assert main(["solve", "--alpha", "1", "--quadrature", "sobol6"]) == 1
    err = capsys.readouterr().err
    assert "attnphase: failed: while solving the state evolution: inner failure" in err and "error:" not in err
    assert main(["solve", "--alpha", "0"]) == 2  # bad input stays bad input
    assert "attnphase: error: --alpha" in capsys.readouterr().err


# --- error bars: never exactly 0 or null without a word --------------------------------------------

@pytest.mark.parametrize("command", [["solve", "--alpha", "2"], ["sweep", "--alpha", "2"], ["census", "--alpha", "2"],
                                     ["phase-diagram"], ["scan", "--lam", "0.01,0.1"]])
@pytest.mark.parametrize("tol", ["0.01", "0.9", "1e-5"])
def test_tol_too_loose_for_the_error_bars_is_refused(command, tol, capsys, tmp_path, monkeypatch):
    # a residual of 0.01 left every block re-solve at its start (bars 0.0) and, at 0.9, q 0.729 for 0.459
    monkeypatch.chdir(tmp_path)
    out = ["--out", str(tmp_path / "out")] if command[0] in ("sweep", "phase-diagram", "scan") else []
    _one_line_error(capsys, [*command, "--tol", tol, *out], ["--tol", "[1e-14, 1e-06]"], tmp_path)


def test_library_refuses_a_tol_too_loose_for_error_bars():
    from attnphase.numerics.config import MAX_TOL, SolverConfig

    with pytest.raises(ValueError, match="too loose for error bars"):
        SolverConfig(tol=0.01)
    assert SolverConfig(tol=0.01, error_bars=False).tol == 0.01  # without bars a caller may trade accuracy
    assert SolverConfig(tol=MAX_TOL).tol == MAX_TOL


@pytest.mark.parametrize("kwargs, needle", [(dict(tol=1e-20), "tol"), (dict(tol=1e-20, error_bars=False), "tol"),
                                            (dict(max_iter=2.5), "max_iter"), (dict(max_iter=True), "max_iter"),
                                            (dict(error_bars="no"), "error_bars"),
                                            (dict(warm_fallback="no"), "warm_fallback"), (dict(tol="1e-10"), "tol")])
def test_library_refuses_what_the_command_line_cannot_say(kwargs, needle):
    """tol = 1e-20 ran and reported converged with a residual of 2.8e-16 above it; max_iter = 2.5 ran 3 evaluations;
    error_bars = "no" switched the bars on (warm_fallback = "no" did so still); tol = "1e-10" was a TypeError."""
    from attnphase.numerics.config import SolverConfig

    with pytest.raises(ValueError, match=needle):
        SolverConfig(**kwargs)


def test_a_config_of_numpy_numbers_keeps_python_ones_for_its_json():
    """SolverConfig(max_iter=np.int64(300), damping=np.float32(0.1)) kept the numpy scalars: as_dict(), "for the JSON
    metadata", could not be dumped."""
    import numpy as np

    from attnphase.numerics.config import SolverConfig

    cfg = SolverConfig(max_iter=np.int64(300), damping=np.float32(0.25), tol=np.float64(1e-9), error_bars=np.True_)
    assert json.loads(json.dumps(cfg.as_dict()))["max_iter"] == 300 and type(cfg.damping) is float
    assert cfg.error_bars is True and cfg.damping == 0.25


@pytest.mark.parametrize("call, name", [("sweep_min_step", "min_step"), ("sweep_bisection_tol", "bisection_tol"),
                                        ("bifurcation_step", "step"), ("bifurcation_tol", "tol"),
                                        ("boundaries_xtol", "xtol")])
def test_a_step_or_tolerance_of_zero_or_below_is_refused_before_any_solve(call, name):
    """sweep(..., min_step=0) and sweep(..., bisection_tol=-1) never returned (a loop that such a bound never ends,
    each pass a solve); branch_bifurcation(step=0) raised ZeroDivisionError; phase_boundaries(xtol=nan) blamed alpha."""
    from attnphase.numerics.phase.bifurcation import branch_bifurcation
    from attnphase.numerics.phase.boundaries import phase_boundaries
    from attnphase.numerics.phase.continuation import sweep
    from attnphase.theory import ModelParams

    p = ModelParams()
    calls = {"sweep_min_step": lambda: sweep(p, [1, 2], "positional", min_step=0.0),
             "sweep_bisection_tol": lambda: sweep(p, [1, 2], "positional", bisection_tol=-1.0),
             "bifurcation_step": lambda: branch_bifurcation(p, 0.7, "theta", step=0.0),
             "bifurcation_tol": lambda: branch_bifurcation(p, 0.7, "theta", tol=-1.0),
             "boundaries_xtol": lambda: phase_boundaries(p, [1, 2], xtol=float("nan"))}
    with pytest.raises(ValueError, match=f"^{name} must be a finite number > 0"):
        calls[call]()


def test_solve_at_the_loosest_tol_has_honest_bars(capsys):
    assert main(["solve", "--alpha", "2", "--tol", "1e-6", "--quadrature", "sobol8:4", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["err_q"] > 1e-4 and rec["err_theta"] > 1e-4 and rec["err_V"] > 0


@pytest.mark.parametrize("rule", ["sobol8", "gh6"])
def test_solve_on_one_rule_carries_error_bars(rule, capsys):
    # a rule of one scrambling (or a deterministic one) has no blocks: the bar comes from independent rules
    assert main(["solve", "--alpha", "2", "--quadrature", rule, "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    for k in ("q", "V", "theta", "eps_g", "e_t"):
        assert rec[f"err_{k}"] is not None and rec[f"err_{k}"] > 0, (k, rec)
    assert rec["error_note"].startswith("err_m = 0: m = 0 exactly")  # the one note: no bar is missing


def test_missing_error_bars_are_explained(capsys, tmp_path):
    assert main(["solve", "--alpha", "2", "--quadrature", "sobol8:4", "--error-estimate", "0", "--json"]) == 0
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert rec["err_q"] is None and "--error-estimate 0" in rec["error_note"] and "no error bars" in cap.err
    assert main(["sweep", "--alpha", "2", "--quadrature", "sobol8", "--json", "--quiet", "--workers", "1",
                 "--out", str(tmp_path)]) == 0
    cap = capsys.readouterr()
    obj = json.loads(cap.out)
    assert "sobol8 is one rule" in obj["error_note"] and "attnphase: note: no error bars" in cap.err
    assert all(r["err_q"] is None for r in obj["rows"])


# --- extreme positional embeddings -----------------------------------------------------------------

@pytest.mark.parametrize("command", [["solve", "--alpha", "2", "--branch", "positional"],
                                     ["sweep", "--alpha", "2", "--branch", "positional"],
                                     ["solve", "--alpha", "2", "--rank", "2", "--branch", "mixed"],
                                     ["phase-diagram"], ["scan", "--lam", "0.01,0.1"]])
def test_zero_P_without_a_positional_branch_names_P_before_any_work(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = ["--out", str(tmp_path / "out")] if command[0] in ("sweep", "phase-diagram", "scan") else []
    _one_line_error(capsys, [*command, "--P", "0,0;0,0", *out], ["--P", "P = 0", "positional"], tmp_path)


def test_positional_start_takes_the_first_nonzero_column_of_P():
    import numpy as np

    from attnphase.numerics.se.state_evolution import initial_overlaps
    from attnphase.theory import ModelParams

    ov = initial_overlaps(ModelParams(P=[[0, 0], [0, 1]]), "positional")  # p_1 = 0, p_2 != 0
    assert ov.m[0] == 0 and ov.m[1] != 0
    with pytest.raises(ValueError, match="P = 0"):
        initial_overlaps(ModelParams(P=[[0, 0], [0, 0]]), "positional")
    assert np.all(initial_overlaps(ModelParams(P=[[0, 0], [0, 0]]), "semantic").m == 0)


def test_huge_P_gives_no_raw_numpy_warnings(capsys):
    code = main(["solve", "--alpha", "2", "--P", "1e300,0;0,1e300", "--branch", "positional", "--quadrature",
                 "sobol8:4", "--json"])
    err = capsys.readouterr().err
    assert code in (1, 3) and "RuntimeWarning" not in err and ".py:" not in err, err
    assert err.count("floating-point") == 1 and "overflow" in err


def test_warnings_become_one_line_notes(capsys):
    import warnings

    import numpy as np

    from attnphase import work

    with work.warnings_as_notes():
        warnings.warn("Tight layout not applied", UserWarning)
        warnings.warn("Tight layout not applied", UserWarning)
        with np.errstate(over="warn"):
            np.exp(np.array([1000.0]))
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "attnphase: note: UserWarning: Tight layout not applied" and len(err) == 2
    assert err[1].startswith("attnphase: note: floating-point overflow")


# --- --quiet on every command -----------------------------------------------------------------------

def test_every_command_takes_quiet():
    from attnphase.cli import build_parser, command_names

    required = {"solve": ["--alpha", "2"], "census": ["--alpha", "2"], "sweep": ["--alpha", "2"], "show": ["results"]}
    parser = build_parser()
    for name in command_names():
        args = parser.parse_args([name, *required.get(name, []), "--quiet"])
        assert args.quiet is True, name


def test_solve_quiet_prints_the_same_result(capsys):
    assert main(["solve", "--alpha", "2", "--quadrature", "sobol8:4", "--quiet", "--json"]) == 0
    quiet = json.loads(capsys.readouterr().out)
    assert quiet["converged"] and quiet["err_q"] > 0


# --- the kernel cache holds what was generated, or it is regenerated --------------------------------

def test_edited_cache_file_is_detected_and_regenerated(tmp_path, monkeypatch, capsys):
    # a generated module edited into still-valid Python (rho0 -> 1.01 rho0 gave theta 0.6300 for 0.6217)
    from attnphase.theory import codegen

    monkeypatch.setenv("ATTNPHASE_CACHE_DIR", str(tmp_path))
    builds = []

    def build():
        builds.append(1)
        return []

    source, path = codegen.cached_source("probe", 2, 1, True, build)
    assert path.read_text() == source and len(builds) == 1
    assert codegen.cached_source("probe", 2, 1, True, build)[0] == source and len(builds) == 1  # read back
    assert capsys.readouterr().err == ""
    path.write_text(source.replace("import numpy", "import numpy\nrho_scale = 1.01"))
    again, _ = codegen.cached_source("probe", 2, 1, True, build)
    assert again == source and path.read_text() == source and len(builds) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was changed after it was generated" in err and str(path) in err


# --- a point accepted at the rule's jump scale must be backed by its error estimate -------------------

def test_jump_scale_acceptance_needs_the_error_estimate():
    # sigma = 1e4 (softmax saturated): theta = 1.8e-6 was accepted at residual 4e-7 (tol 1e-10) with 0 of
    # 4 blocks on the branch and exit 0; such a point is reported not converged
    import math
    from dataclasses import replace

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.numerics.se.stalls import confirm_jump_acceptance
    from attnphase.theory import ModelParams

    fp = solve(ModelParams(), 2.0, "semantic", config=SolverConfig(quadrature="sobol6", error_bars=False))
    assert fp.status.converged and math.isnan(fp.status.jump)
    assert confirm_jump_acceptance(fp, 0, 4) is fp  # reached tol: nothing to confirm
    jumped = replace(fp, status=replace(fp.status, residual=4e-7, jump=1.5e-6))
    assert confirm_jump_acceptance(jumped, 3, 4) is jumped
    refused = confirm_jump_acceptance(jumped, 1, 4)
    assert not refused.status.converged and "1 of the 4 rules" in refused.status.message
    assert refused.record["converged"] is False


# --- text output: a value with its bar, rounded to it ------------------------------------------------

@pytest.mark.parametrize(("value", "err", "text"), [
    (0.4594786, 0.000444835, "0.45948 +- 0.00044"),
    (50.4939, 0.178098, "50.49 +- 0.18"),
    (0.0014019, 3.7e-6, "0.0014019 +- 0.0000037"),
    (0.63, 0.0996, "0.63 +- 0.10"),
    (12345.6, 673.0, "12350 +- 670"),
    (-0.5, 0.012, "-0.500 +- 0.012"),
    (2.602950272986534e-27, 3.94e-35, "2.602950273e-27 +- 3.9e-35"),
    (0.0, 0.0, "0 +- 0"),
    (0.0, 2.1e-21, "0 +- 2.1e-21"),  # a bar at round-off: not 22 decimals of zeros
    (0.28424, 1.0e-14, "2.84240000000000e-01 +- 1.0e-14"),
    (0.0, 3.3e-11, "0.000000000000 +- 0.000000000033"),  # 12 decimals: still fixed
    (0.5, float("nan"), "0.5"),
    (0.56, 440.0, "0.56 +- 440"),  # a bar larger than the value: not "0 +- 440"
    (-3.14159, 4400.0, "-3.1 +- 4400"),
    (0.04, 0.12, "0.04 +- 0.12"),
    (None, 0.1, ""),
])
def test_value_with_error_is_rounded_to_its_bar(value, err, text):
    from attnphase.display import with_error

    assert with_error(value, err) == text


def test_solve_text_prints_each_value_with_its_bar(capsys):
    import re

    argv = ["solve", "--alpha", "2", "--quadrature", "sobol8:4"]
    assert main(argv + ["--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert main(argv) == 0
    lines = {ln.split()[0]: ln.split(None, 1)[1] for ln in capsys.readouterr().out.splitlines() if len(ln.split()) > 1}
    assert not any(k.startswith("err_") for k in lines)  # the bars sit beside their values
    for k in ("q", "V", "theta", "eps_g", "e_t"):
        m = re.fullmatch(r"(-?\d+\.(\d+)) \+- (\d+\.\d+)", lines[k])
        assert m, (k, lines[k])
        decimals = len(m.group(2))
        assert float(m.group(1)) == pytest.approx(round(rec[k], decimals), abs=10.0 ** -decimals)
        assert float(m.group(3)) == pytest.approx(rec[f"err_{k}"], rel=0.06)  # two significant digits
        assert len(m.group(3).replace(".", "").lstrip("0")) == 2
    assert len(lines["eps_lin"]) <= 12  # a number without a bar: 6 significant digits, not 16


def test_boundary_table_prints_bars_beside_values(capsys):
    from attnphase.numerics.jobs.report import print_boundary_table

    nan = float("nan")
    print_boundary_table([dict(omega=0.3, alpha_c=1.2345678, err_alpha_c=0.00123, alpha_l=1.9, err_alpha_l=nan,
                               semantic_end=nan, err_semantic_end=nan, positional_end=2.5, err_positional_end=0.02,
                               notes="")], "standard error")
    row = capsys.readouterr().out.splitlines()[1]
    assert "1.2346 +- 0.0012" in row and "2.500 +- 0.020" in row and "1.9000 +- nan" in row


def test_a_boundary_without_a_bar_is_said_with_the_reason_its_method_gives():
    # phase-diagram --omega 0.3 --branch-end trace printed "0.7157 +- nan" for the semantic end and no word why
    from attnphase.numerics.jobs.boundary_table import unbarred_note

    nan = float("nan")

    def row(omega, end, err, method):
        return dict(omega=omega, alpha_c=1.25, err_alpha_c=2e-4, alpha_l=1.49, err_alpha_l=1e-3, semantic_end=end,
                    err_semantic_end=err, semantic_end_method=method, positional_end=nan, err_positional_end=nan)

    note = unbarred_note([row(0.3, 0.7157, nan, "trace"), row(0.4, 0.83, 2e-3, "eigenvalue"),
                          row(0.45, 0.99, nan, "trace")])
    assert note.startswith("semantic_end has no error bar at omega = 0.3, 0.45: a traced end is the extreme alpha")
    assert "alpha_c" not in note and "positional_end" not in note  # a bar, or no boundary: nothing to say
    other = unbarred_note([row(0.3, 0.7157, nan, "bisection")])
    assert other.endswith("the row's notes say how it was located")
    assert unbarred_note([row(0.4, 0.83, 2e-3, "eigenvalue")]) == ""
    # scan's rows (scan --lam 0 printed the traced end 1.02273 and nan boundaries without a word), named by the
    # scanned parameter too; JSON's nulls are no boundary
    from attnphase.numerics.jobs.boundary_table import unlocated_note

    scanned = [{**row(0.2, 1.0227, nan, "trace"), "lam": 0.0, "alpha_c": None}, {**row(0.3, 0.72, 2e-3, "eigenvalue"),
                                                                                  "lam": 0.01}]
    assert unbarred_note(scanned, at="lam,omega").startswith("semantic_end has no error bar at lam = 0, omega = 0.2: "
                                                             "a traced end")
    assert unlocated_note(scanned, at="lam,omega") == (
        "no boundary located (nan) for alpha_c at lam = 0, omega = 0.2; positional_end at lam = 0, omega = 0.2; "
        "lam = 0.01, omega = 0.3: the notes column of the CSV says why")
    assert unlocated_note([row(0.3, 0.72, 2e-3, "eigenvalue") | {"positional_end": 1.7}]) == ""


def test_an_end_that_is_a_branchs_birth_is_said():
    # scan --lam 0.02 --omega 0.1 printed pos_end 0.10439, the positional branch's birth (it exists above), in the
    # column where --omega 0 prints 0.9319, its end (it exists below): the same column, two readings
    from attnphase.numerics.jobs.boundary_table import births_note

    def row(omega, pos_side, mix_side=""):
        return dict(omega=omega, semantic_end_exists="above", positional_end_exists=pos_side, mixed_end_exists=mix_side)

    table = [row(0.1, "above", "above"), row(0.2, "below", "below"), row(0.3, "above")]
    assert births_note(table) == ("pos_end is a positional branch's birth, the branch existing above it "
                                  "(positional_end_exists), at omega = 0.1, 0.3")
    assert births_note(table, r=2).endswith("; mix_end is a mixed branch's birth, the branch existing above it "
                                            "(mixed_end_exists), at omega = 0.1")
    assert births_note([row(0.2, "below"), row(0.3, "")]) == ""  # ends proper, or none: nothing to say
    # scan's rows, named by the scanned parameter too
    scanned = [{**row(0.1, "above"), "lam": 0.02}, {**row(0.1, "below"), "lam": 0.01}, {**row(0.1, "above"), "lam": 0.03}]
    assert births_note(scanned, at="lam,omega").endswith("at lam = 0.02, omega = 0.1; lam = 0.03, omega = 0.1")
    # phase-diagram --L 3 --rank 2 --omega 0.3: an end whose kind is a solver failure was said to be the mixed
    # branch's birth (and mixed_end_found was 1), where its notes said the branch was not reached below it
    failed = [row(0.3, "", "above") | {"mixed_end_kind": "mixed#2: no converged solve (solver failure)"}]
    note = births_note(failed, r=2)
    assert "birth, the branch existing" not in note
    assert note == ("mix_end is where the mixed branch was last reached, going down, and the solves below it failed "
                    "(solver failure, not a birth: mixed_end_found 0), at omega = 0.3")


def test_an_end_that_is_a_solver_failure_is_not_found() -> None:
    from attnphase.numerics.phase.boundary_results import Boundaries

    nan = math.nan
    b = Boundaries(omega=0.3, alpha_c=nan, alpha_l=nan, semantic_end=0.5, positional_end=nan, r=2, r_star=1,
                   mixed_end=1.18, mixed_end_err=0.047, mixed_end_kind="mixed#2: no converged solve (solver failure)")
    assert b.errors()["mixed_end_found"] == 0 and b.errors()["semantic_end_found"] == 1


def test_sweep_rows_without_a_bar_are_said(capsys, tmp_path, monkeypatch):
    # a point whose blocks do not reproduce its branch has NaN err_*: the job says how many, never silently
    import math

    from attnphase.numerics.jobs import tasks as jobs

    monkeypatch.setattr(jobs, "point_errors", lambda points, cfg, n=0: tuple(
        {f"err_{k}": math.nan for k in ("q", "m", "V", "theta", "eps_g", "e_t")} for _ in points))
    assert main(["sweep", "--alpha", "2", "--quadrature", "sobol8:4", "--json", "--quiet", "--workers", "1",
                 "--fresh", "--out", str(tmp_path)]) == 0
    cap = capsys.readouterr()
    assert "1 point(s) on the branch have no error bar" in json.loads(cap.out)["error_note"]
    assert "attnphase: note: 1 point(s) on the branch have no error bar" in cap.err


def test_a_sweeps_json_counts_its_rows_on_off_and_not_converged(tmp_path, capsys):
    # below the semantic end (0.716 at omega = 0.3) the semantic solve converges to the agnostic point: off the branch
    assert main(["sweep", "--alpha", "0.5,1,2", "--quadrature", "sobol8:4", "--json", "--quiet", "--workers", "1",
                 "--fresh", "--out", str(tmp_path)]) == 0
    obj = json.loads(capsys.readouterr().out)  # one omega: its sweep is the object
    reasons = [r["reason"] for r in obj["rows"]]
    assert (obj["on_branch"], obj["not_converged"], obj["off_branch"]) == (2, 0, 1)
    assert reasons[0] and not reasons[1] and not reasons[2]


@pytest.mark.parametrize("argv", [["--alpha", "2", "--branch", "agnostic"],
                                  ["--alpha", "2", "--omega", "0.2", "--lam", "0.1", "--branch", "positional"],
                                  ["--alpha", "2", "--lam", "0", "--branch", "agnostic"]])
def test_cold_start_left_the_domain_is_retried_with_a_larger_V0_or_q0(argv, capsys):
    # the fixed cold start (V0 = 1, q0 = 0.1) took a first SE step out of the domain: "not converged ... no fixed
    # point" on ordinary input (at lam = 0 the agnostic point's q0 is 1.18: no V0 alone gets there)
    assert main(["solve", *argv, "--quadrature", "sobol8:4", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["converged"] and rec["branch"] == argv[argv.index("--branch") + 1] and rec["err_V"] > 0


def test_replicates_agreeing_to_the_last_bit_have_a_roundoff_bar():
    from attnphase.numerics.errors.replicates import ROUNDOFF, spread, standard_error

    assert spread([100.0, 100.0, 100.0, 100.0]) == pytest.approx(100.0 * ROUNDOFF)
    assert standard_error([0.0, 0.0, 0.0, 0.0]) == 0.0  # fixed by a symmetry: exact
    assert spread([1.0, 2.0]) == pytest.approx(0.7071067811865476)


def test_se_jacobian_is_finite_next_to_the_domain_edge():
    # census at lambda = 0.1, alpha = 1: the agnostic point has q0 ~ 1e-27, so a th0 step of 1e-5 leaves the
    # domain on both sides; it is halved to fit, and the stability eigenvalue is a number (it raised before)
    import math

    import numpy as np

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se.overlaps import Overlaps
    from attnphase.numerics.se.stability import se_jacobian, stability_eigenvalue
    from attnphase.theory import ModelParams

    params, cfg = ModelParams(omega=0.2, lam=0.1), SolverConfig(quadrature="sobol6")
    ov = Overlaps(q0=1e-27, V0=11.1, m=np.zeros(2), th0=0.0)
    assert np.all(np.isfinite(se_jacobian(params, 1.0, ov, cfg)))
    assert math.isfinite(stability_eigenvalue(params, 1.0, ov, cfg))


def test_error_bar_covers_the_offset_from_replicates_that_agree_exactly():
    from attnphase.numerics.errors.replicates import at_least_the_offset

    assert at_least_the_offset(0.0, 2.6e-12, [0.0, 0.0, 0.0, 0.0]) == 2.6e-12
    assert at_least_the_offset(0.0, 0.0, [0.0, 0.0, 0.0]) == 0.0
    assert at_least_the_offset(1e-3, 0.5, [0.499, 0.501]) == 1e-3  # a real spread stands


def test_check_hats_steps_stay_in_the_domain_at_tiny_rho0(capsys):
    # rho0 = 1e-12: the state has q0 = 5e-13, and a q0 step of 1e-4 made q0 < 0 ("bad input" after work)
    assert main(["check", "--quick", "--only", "hats", "--rho0", "1e-12", "--quiet"]) == 0
    cap = capsys.readouterr()
    assert "pass" in cap.out and "error:" not in cap.err and "failed:" not in cap.err


@pytest.mark.heavy
@pytest.mark.slow
def test_census_at_large_lambda_finds_one_agnostic_point_with_honest_bars(capsys):
    # lambda = 0.1, alpha = 1 (README's scan range): the census raised inside its stability step; the
    # agnostic point Q = 0 reached from several starts is one point, each overlap with a bar covering it
    assert main(["census", "--alpha", "1", "--omega", "0.2", "--lam", "0.1", "--quadrature", "sobol8:4", "--quiet",
                 "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    points = obj["fixed_points"]
    assert [p["branch"] for p in points] == ["agnostic"]
    p = points[0]
    for k in ("q", "m", "theta"):
        assert abs(p[k]) <= 1.001 * p[f"err_{k}"] + 1e-300, (k, p[k], p[f"err_{k}"])  # 0 within its bar
    assert p["err_V"] > 0 and p["leading_eigenvalue"] == p["leading_eigenvalue"]  # a number, not NaN


def test_task_warnings_are_notes_in_any_process(capsys):
    # a task's warnings ran raw in Dask worker processes (16 lines with source paths at P = 1e300); then each task
    # said its own notes, the same one once per task (census --sigma 5: eps_lin's warning 21 times).  A task collects
    # them; the command's process says each distinct one once over all tasks, the floating-point counts summed.
    import warnings

    import numpy as np

    from attnphase import work
    from attnphase.execution.executor import call_task

    def task(x: float) -> float:
        warnings.warn("eps_lin: its quadrature did not converge", RuntimeWarning)
        return float(np.exp(np.array([x]))[0])

    results = [call_task(task, 1000.0) for _ in range(3)]
    assert capsys.readouterr().err == ""  # collected, not said by the task
    assert all(r[0] == "done" and r[1] == float("inf") for r in results)
    with work.warnings_as_notes():
        for r in results:
            work.add_notes(r[4])
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "attnphase: note: RuntimeWarning: eps_lin: its quadrature did not converge" and len(err) == 2
    assert err[1].startswith("attnphase: note: floating-point overflow (at 3 places)")
    work.add_notes(results[0][4])  # no command's notes open: said at once
    assert capsys.readouterr().err.count("attnphase: note:") == 2


@pytest.mark.parametrize(("command", "needles"), [
    (["simulate", "--init", "positional", "--d", "50"], ["--P", "P[0,0]", "--init"]),
    (["validate", "--quick"], ["--P", "P = 0", "validate's positional runs"]),
])
def test_zero_P_in_the_finite_d_commands_names_P_before_any_work(command, needles, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = ["--out", str(tmp_path / "out")] if command[0] == "validate" else []
    _one_line_error(capsys, [*command, "--P", "0,0;0,0", *out], needles, tmp_path)


@pytest.mark.parametrize("matrix", [False, True])
def test_a_sweep_row_past_the_followed_branchs_end_claims_no_more_than_it_knows(monkeypatch, matrix):
    """Past a branch's end a rank-1 row says there is no fixed point of the label (one branch per label there); at rank
    r >= 2, where a label can have several branches (omega = 0.3: the mixed branch a sweep follows from alpha = 0.5
    ends at 1.75 while `solve --rank 2 --branch mixed` finds another mixed point at 2), it says no point of the followed
    branch, and that another may lie there."""
    from types import SimpleNamespace

    from attnphase.numerics.commands import row_reasons as reasons
    from attnphase.numerics.phase import branch_end
    from attnphase.numerics.phase.continuation import NO_END

    monkeypatch.setattr(branch_end, "on_branch", lambda fp, branch: fp.alpha < 1.7)
    status = SimpleNamespace(converged=True, message="converged", residual=1e-12)
    points = [SimpleNamespace(alpha=a, branch="mixed", is_matrix=matrix, status=status) for a in (1.0, 2.0)]
    res = SimpleNamespace(points=points, end=branch_end.BranchEnd(1.7476, "fold", "bisection"), end_side="above",
                          others=(), birth=NO_END, rule_point=lambda i: "", past_end=lambda a: a > 1.7476)
    on, past = reasons.row_reasons(res, "mixed")
    assert on == "" and "the branch ends at alpha = 1.748 (fold) and exists below it" in past
    if matrix:
        assert past.startswith("no point of the followed mixed branch here") and "no mixed fixed point" not in past
        assert past.endswith("another mixed fixed point may lie here (a cold `attnphase solve` there, or "
                             "`attnphase census`, looks for every one)")
    else:
        assert past.startswith("no mixed fixed point here") and "another" not in past


def test_a_sweep_row_off_the_branch_where_its_end_says_it_exists_is_a_solver_failure(monkeypatch):
    """``sweep --alpha 0.7,0.72,0.8 --branch semantic`` (omega = 0.3, end 0.7164, the branch above it): at 0.72 the
    solve reached a point below the branch's floor, and the row said "no semantic fixed point here ... the branch
    exists above it" -- above 0.7164.  That row is a solver failure; the one at 0.7, past the end, an absence."""
    from types import SimpleNamespace

    from attnphase.numerics.commands import row_reasons as reasons
    from attnphase.numerics.phase import branch_end
    from attnphase.numerics.phase.continuation import NO_END

    monkeypatch.setattr(branch_end, "on_branch", lambda fp, branch: fp.alpha > 0.75)
    status = SimpleNamespace(converged=True, message="converged", residual=1e-12)
    points = [SimpleNamespace(alpha=a, branch="semantic", is_matrix=False, status=status) for a in (0.7, 0.72, 0.8)]
    res = SimpleNamespace(points=points, end=branch_end.BranchEnd(0.7164, "bifurcation", "eigenvalue"),
                          end_side="below", others=(), birth=NO_END, rule_point=lambda i: "",
                          past_end=lambda a: a < 0.7164)
    past, inside, on = reasons.row_reasons(res, "semantic")
    assert on == "" and past.startswith("no semantic fixed point here: the solve reached a point whose semantic")
    assert inside.startswith(f"{reasons.SOLVER_FAILURE}: the solve reached a point whose semantic order parameter is "
                             "below the branch's floor; the branch ends at alpha = 0.7164")


def test_a_sweep_row_past_an_end_located_by_solver_failure_is_a_failure_not_an_absence(monkeypatch):
    """``sweep --omega 0.2 --alpha 1.6:2.4:5 --branch positional``: the solves from 2.0 on did not converge, the end
    was bisected on those failures (1.8348, kind "solver failure"), and the rows past it said "no positional fixed
    point here", counted off the branch, exit 0 -- while ``solve --alpha 1.9 --omega 0.2 --branch positional``
    converges on the branch (m = 0.145).  Past such an end a solve that does not converge is a failure; past an end
    located otherwise (a fold) it stays an absence."""
    from types import SimpleNamespace

    from attnphase.numerics.commands import row_reasons as reasons
    from attnphase.numerics.phase import branch_end
    from attnphase.numerics.phase.continuation import NO_END

    monkeypatch.setattr(branch_end, "on_branch", lambda fp, branch: fp.alpha < 1.9)
    ok = SimpleNamespace(converged=True, message="converged", residual=1e-12)
    bad = SimpleNamespace(converged=False, message="not converged", residual=4e-3)
    points = [SimpleNamespace(alpha=1.8, branch="positional", is_matrix=False, status=ok),
              SimpleNamespace(alpha=2.0, branch=None, is_matrix=False, status=bad)]
    for kind, absent in (("solver failure", False), ("fold", True)):
        res = SimpleNamespace(points=points, end=branch_end.BranchEnd(1.8348, kind, "bisection"), end_side="above",
                              others=(), birth=NO_END, rule_point=lambda i: "", past_end=lambda a: a > 1.8348)
        on, past = reasons.row_reasons(res, "positional")
        assert on == ""
        assert past.startswith("no positional fixed point here") if absent else \
            past.startswith("not converged: past alpha = 1.835, where this branch's solves begin to fail"), past


def test_a_sweep_row_past_an_end_the_branch_outlasts_is_a_failure_not_an_absence(monkeypatch):
    """``sweep --omega 0.2 --alpha 0.1:3:8 --branch positional --precision fast``: the eigenvalue put the end at 1.765,
    the row at 2.171 was on the branch (m 0.163, and a note said the branch goes on past the end), and the rows at
    2.586 and 3 that did not converge said "no positional fixed point here", counted off the branch -- while ``solve
    --alpha 2.585714285714286 --omega 0.2 --branch positional --precision fast`` converges there (m 0.144)."""
    from types import SimpleNamespace

    from attnphase.numerics.commands import row_reasons as reasons
    from attnphase.numerics.phase import branch_end
    from attnphase.numerics.phase.continuation import NO_END

    monkeypatch.setattr(branch_end, "on_branch", lambda fp, branch: fp.status.converged)
    ok = SimpleNamespace(converged=True, message="converged", residual=1e-12)
    bad = SimpleNamespace(converged=False, message="not converged", residual=7e-4)
    points = [SimpleNamespace(alpha=a, branch=b, is_matrix=False, status=st, record={"m": m},
                              overlaps=SimpleNamespace(m=[m, -m]))
              for a, b, st, m in ((1.757, "positional", ok, 0.191), (2.171, "positional", ok, 0.163),
                                  (2.586, None, bad, float("nan")))]
    for m_past, absent in ((0.163, False), (0.01, True)):  # a point of the branch past the end; the rule's noise
        points[1].record["m"] = m_past
        res = SimpleNamespace(points=points, end=branch_end.BranchEnd(1.765, "bifurcation", "eigenvalue"),
                              end_side="below", others=(), birth=NO_END, rule_point=lambda i: "",
                              past_end=lambda a: a > 1.765)
        *_, past = reasons.row_reasons(res, "positional")
        assert past.startswith("no positional fixed point here") if absent else past.startswith(
            "not converged: the branch goes on past the end located at alpha = 1.765 (on the branch at 2.171)"), past


def test_a_rank_r_sweep_row_off_its_branch_says_what_a_cold_solve_found_there(monkeypatch):
    """At r >= 2 a sweep looks, at each point off its followed branch, for a point of the label by a cold solve
    (``BranchSweep.others``): a row says the e_t of the point found, or that none was."""
    from types import SimpleNamespace

    from attnphase.numerics.commands import row_reasons as reasons
    from attnphase.numerics.phase import branch_end
    from attnphase.numerics.phase.continuation import NO_END

    monkeypatch.setattr(branch_end, "on_branch", lambda fp, branch: fp.alpha < 1.7)
    status = SimpleNamespace(converged=True, message="converged", residual=1e-12)
    points = [SimpleNamespace(alpha=a, branch="mixed", is_matrix=True, status=status) for a in (1.0, 2.0, 3.0)]
    cold = SimpleNamespace(alpha=2.0, observables=SimpleNamespace(e_t=0.0027729))
    res = SimpleNamespace(points=points, end=branch_end.BranchEnd(1.7476, "fold", "bisection"), end_side="above",
                          others=(None, cold, None), birth=NO_END, rule_point=lambda i: "",
                          past_end=lambda a: a > 1.7476)
    on, found, none = reasons.row_reasons(res, "mixed")
    assert on == "" and found.endswith("; a cold solve reaches a mixed point here, e_t = 0.0027729 (`attnphase "
                                       "solve` at this alpha gives it)")
    assert none.endswith("; a cold solve of the mixed label reaches no point of it here either")
    assert reasons.past_end_note(res, "mixed") == ("a cold solve reaches a mixed point off it at alpha = 2 (the reason "
                                                  "column)")


def test_cold_points_off_branch_keeps_a_cold_solve_that_reaches_the_label(monkeypatch):
    """``cold_points_off_branch``: at r >= 2 one cold solve per point off the branch, judged as ``solve`` judges it
    where it did not converge, kept where it is on the label's branch; nothing at r = r* = 1."""
    from types import SimpleNamespace

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.phase import continuation
    from attnphase.theory.params import ModelParams

    monkeypatch.setattr(continuation, "on_branch", lambda fp, branch: fp.tag == "on")
    solved, judged = [], []

    def point(alpha, tag, converged=True):
        return SimpleNamespace(alpha=alpha, tag=tag, status=SimpleNamespace(converged=converged))

    def solve(params, alpha, branch, config=None):
        solved.append(alpha)
        return point(alpha, "on" if alpha == 2.0 else "off", converged=alpha != 4.0)

    def judge(fp, config, n_rules):  # the stalled solve at 4 accepted at the rule's jump scale
        judged.append((fp.alpha, n_rules))
        return point(fp.alpha, "on"), {}

    monkeypatch.setattr(continuation, "solve", solve)
    monkeypatch.setattr(continuation, "judged_matrix_point", judge)
    points = [point(a, t) for a, t in ((1.0, "on"), (2.0, "off"), (3.0, "off"), (4.0, "off"))]
    sw = continuation.BranchSweep("mixed", points)
    out = continuation.cold_points_off_branch(ModelParams(r=2), sw, SolverConfig(), 3)
    assert solved == [2.0, 3.0, 4.0] and judged == [(4.0, 3)]
    assert out.others[0] is None and out.others[1].alpha == 2.0 and out.others[2] is None and out.others[3].alpha == 4
    assert continuation.cold_points_off_branch(ModelParams(), sw, SolverConfig()) is sw


def test_the_bayes_optimal_branches_note_does_not_round_to_perfect_recovery(capsys):
    """At alpha = 0.4999999 the note said 'coincide at alpha = 0.5 (q = 1)' beside perfect_recovery: false."""
    assert main(["solve", "--estimator", "bayes-optimal", "--alpha", "0.4999999", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["perfect_recovery"] is False and "alpha = 0.4999999" in rec["note"]
    assert "short of perfect recovery" in rec["note"] and f"q = {rec['q']!r}" in rec["note"]


def test_a_bayes_optimal_sweep_into_a_folder_of_other_branches_says_it_replaces_them(capsys, tmp_path):
    """--branch uninformative into a folder holding both branches replaced the informative rows without a word
    (the job record held no branches; it held lam, which the estimator does not use)."""
    argv = ["sweep", "--estimator", "bayes-optimal", "--alpha", "0.1:0.6:3", "--out", str(tmp_path), "--workers", "1"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main([*argv, "--branch", "uninformative"]) == 0
    err = capsys.readouterr().err
    assert 'branches=["informative", "uninformative"] -> ["uninformative"]' in err
    record = json.loads(next(tmp_path.glob(".attnphase-job-sweep_bayes-optimal*.json")).read_text())
    assert "lam" not in json.dumps(record)
    import xarray as xr

    obj = json.loads((tmp_path / "sweep_bayes-optimal.json").read_text())
    with xr.open_dataset(tmp_path / "sweep_bayes-optimal.nc") as ds:  # the JSON's error_note, in the dataset too
        assert obj["error_note"] and ds.attrs["error_note"] == obj["error_note"]


def test_solve_names_a_bad_init_or_rule():
    """solve(..., init=fp) raised AttributeError ('FixedPoint' object has no attribute 'to_vector'), an init of the
    wrong sizes a numpy broadcasting error, rule='sobol8:4' AttributeError: none named the argument."""
    import numpy as np

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se.overlaps import Overlaps
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.theory import ModelParams

    p, cfg = ModelParams(), SolverConfig(quadrature="sobol6:2", error_bars=False, max_iter=3)
    fp = solve(p, 2.0, config=cfg)
    with pytest.raises(ValueError, match=r"^init must be Overlaps \(a FixedPoint's .overlaps\) or None, got FixedPoint"):
        solve(p, 1.5, config=cfg, init=fp)
    with pytest.raises(ValueError, match=r"^init does not fit the model \(L = 2, r = 1, r\* = 1\)"):
        solve(p, 1.5, config=cfg, init=Overlaps(q0=0.5, V0=50.0, m=np.zeros(3), th0=0.6))
    with pytest.raises(ValueError, match=r"^init does not fit the model \(L = 2, r = 2, r\* = 1\)"):
        solve(ModelParams(r=2), 1.5, config=cfg, init=fp.overlaps)
    with pytest.raises(ValueError, match="^rule must be a QuadratureRule"):
        solve(p, 1.5, config=cfg, rule="sobol8:4")
    assert solve(p, 1.9, config=cfg, init=fp.overlaps).alpha == 1.9  # a fitting init runs



def test_an_unwritable_cache_folder_is_refused_not_ignored(capsys, tmp_path, monkeypatch):
    """ATTNPHASE_CACHE_DIR under a file: the run went on (exit 0) saying "later runs read them from" that folder, and
    every run generated and compiled its kernels again."""
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("ATTNPHASE_CACHE_DIR", str(tmp_path / "afile" / "cache"))
    _one_line_error(capsys, ["solve", "--alpha", "2"], ["$ATTNPHASE_CACHE_DIR=", "cannot be written"], tmp_path)
