"""The commands on the execution layer: Ctrl-C mid-job exits 130 with only complete task files, the
rerun computes only the missing task and ends with the uninterrupted run's outputs; `show`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from attnphase.cli import main
from attnphase.execution import ResultStore

#: Small rules throughout (these tests are about tasks, interrupts and outputs, not the boundaries' accuracy):
#: alpha_c gh6's own root, no refinement of alpha_l or the branch ends.
SMALL = ["--alpha", "0.6:2.2:5", "--quadrature", "gh6", "--alpha-c-quadrature", "none", "--alpha-l-quadrature", "none",
         "--bifurcation-quadrature", "sobol10", "--end-quadrature", "none", "--quiet"]


@pytest.mark.heavy  # 6-12 s: kept out of the default run's 10-minute budget
def test_interrupted_phase_diagram_resumes_with_the_missing_task_only(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "pd"
    argv = ["phase-diagram", "--omega", "0.25,0.3,0.35", *SMALL, "--workers", "1", "--out", str(out)]
    # the child gets the default SIGINT action: a process started with SIGINT ignored keeps it
    # ignored (Python installs its handler only over the default), and an earlier test of the same
    # pytest process may have left it ignored -- the job then ran to its end through the Ctrl-C
    proc = subprocess.Popen([sys.executable, "-m", "attnphase", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ | {"ATTNPHASE_QUIET": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None and len(list((out / "tasks").glob("*.task"))) < 1:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)  # Ctrl-C while the other omegas are computed (two left: the job cannot end first)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "attnphase: interrupted"
    files = sorted(p.name for p in out.iterdir())
    assert files == ["tasks"]  # no half-written outputs: the CSV, JSON, figures come at the end or not at all
    store = ResultStore(out / "tasks")
    assert len(store.keys()) == 1 and store.load(store.keys()[0]).status == "done" and not store.corrupted
    assert not [p for p in (out / "tasks").iterdir() if not p.name.endswith(".task")]

    assert main([*argv, "--json"]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["tasks"] | {"failures": ""} == {"total": 3, "computed": 2, "stored": 1, "failed": 0, "failures": ""}
    csv_resumed = (out / "phase_diagram.csv").read_text()
    assert main([*argv, "--fresh", "--json"]) == 0
    fresh = json.loads(capsys.readouterr().out)
    assert fresh["tasks"]["computed"] == 3 and fresh["tasks"]["stored"] == 0
    assert (out / "phase_diagram.csv").read_text() == csv_resumed
    assert fresh["rows"] == resumed["rows"]

    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "phase-diagram job" in shown and "dimensions: omega = 3, branch = 2, alpha = 5" in shown
    assert "status per omega (its task's): 3 done" in shown and '"quadrature": "gh6"' in shown
    assert "alpha_c(omega): 3/3 finite" in shown
    # --json holds what the text says (it had the variables' names and the attributes only, not the task status)
    assert main(["show", str(out), "--json"]) == 0
    (data,) = json.loads(capsys.readouterr().out).values()
    assert data["status"] == {"per": ["omega"], "counts": {"done": 3}, "failed": []} and data["job"] == "phase-diagram"
    assert data["variables"]["alpha_c"]["finite"] == data["variables"]["alpha_c"]["size"] == 3
    assert data["dims"] == {"omega": 3, "branch": 2, "alpha": 5} and '"quadrature": "gh6"' in data["attrs"]["solver"]

    # a rerun with every task stored and the outputs as written rewrites nothing; a file changed by
    # hand (or deleted) is written again
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.is_file()}
    assert main([*argv, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["rows"] == fresh["rows"] and again["tasks"]["stored"] == 3
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.is_file()} == stamps
    (out / "phase_diagram.csv").write_text("edited")
    assert main(argv) == 0
    assert "wrote" in capsys.readouterr().err
    assert (out / "phase_diagram.csv").read_text() == csv_resumed

    # scan in the same folder: its (lam = 0.01, omega = 0.3) task is the phase diagram's, read back
    from pathlib import Path

    written, write_text = [], Path.write_text

    def counted(self, *a, **k):
        written.append(self.name)
        return write_text(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", counted)
    assert main(["scan", "--lam", "0.01,0.02", "--omega", "0.3", *SMALL, "--workers", "1", "--out", str(out),
                 "--json"]) == 0
    scan = json.loads(capsys.readouterr().out)
    # scan.json written once, as --json prints it (the command rewrote the job's file with the error note and the
    # Bayes-optimal thresholds)
    assert written.count("scan.json") == 1
    assert json.loads((out / "scan.json").read_text()) == {k: v for k, v in scan.items() if k != "out"}
    assert "error_note" in scan and scan["bayes_optimal"]["0.01"]["alpha_it"] is not None
    assert scan["tasks"]["stored"] == 1 and scan["tasks"]["computed"] == 1 and scan["scanned"] == "lam"
    # the fixed model beside the scanned values (scan.json had only lam and omega)
    assert scan["params"]["L"] == 2 and scan["params"]["rho0"] == 1.0 and scan["params"]["lam"] == "scanned"
    assert [r["lam"] for r in scan["rows"]] == [0.01, 0.02]
    assert scan["rows"][0]["alpha_c"] == next(r["alpha_c"] for r in fresh["rows"] if r["omega"] == 0.3)
    assert (out / "phase_diagram_lam0.01.png").stat().st_size > 0 and (out / "phase_diagram_lam0.02.png").exists()
    assert main(["show", str(out / "scan.nc")]) == 0
    assert "dimensions: lam = 2, omega = 1, branch = 2, alpha = 5" in capsys.readouterr().out


def test_show_without_a_dataset_is_a_one_line_error(tmp_path, capsys) -> None:
    assert main(["show", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no dataset (*.nc)" in err[0] and "resumes" not in err[0]
    (tmp_path / "tasks").mkdir()  # an interrupted run's stored tasks: said, with how to finish it
    (tmp_path / "tasks" / "ab12.json").write_text("{}")
    assert main(["show", str(tmp_path)]) == 2
    assert "tasks/ folder holds the tasks an unfinished run stored; the same command again resumes it" in \
        capsys.readouterr().err
    table = tmp_path / "sweep_semantic_omega0.3.csv"  # a job's CSV given for its dataset: said so, with the folder
    table.write_text("alpha,q\n1,0.2\n")
    assert main(["show", str(table)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is one of a job's tables or figures" in err[0] and repr(str(tmp_path)) in err[0], err
    assert "holds none" in err[0]  # it named the folder as holding the dataset though it held none
    import xarray as xr

    xr.Dataset({"x": ("t", [1.0, 2.0])}).to_netcdf(tmp_path / "job.nc")
    assert main(["show", str(table)]) == 2
    assert f"give the folder {str(tmp_path)!r} or its .nc file" in capsys.readouterr().err


def test_show_names_what_it_cannot_read_and_reads_the_rest(tmp_path, capsys) -> None:
    """``show ''`` read the current folder; ``show /dev/null`` said there was no dataset "in" it; a folder with one
    unreadable .nc failed whole; a netCDF file no attnphase job wrote was summarised as "job, created ?"."""
    import xarray as xr

    assert main(["show", ""]) == 2 and "PATH: empty" in capsys.readouterr().err
    assert main(["show", "/dev/null"]) == 2 and "is neither a folder nor a file" in capsys.readouterr().err
    xr.Dataset({"x": ("t", [1.0, 2.0])}).to_netcdf(tmp_path / "other.nc")
    (tmp_path / "broken.nc").write_text("not netCDF")
    assert main(["show", str(tmp_path)]) == 0
    got = capsys.readouterr()
    assert "other.nc" in got.out and "broken.nc" not in got.out
    assert "warning: PATH: cannot read" in got.err and "broken.nc" in got.err
    assert "other.nc has no job attribute: not a dataset an attnphase job wrote" in got.err
    assert main(["show", str(tmp_path / "broken.nc")]) == 2  # nothing else to show
    assert "other.nc: a dataset without a job attribute\n" in got.out


def test_show_json_holds_what_its_text_says(tmp_path, capsys) -> None:
    """``show --json`` gave the variables' names and the attributes only: not the task status, the failures or the
    values' ranges its text prints (its help promises the task status)."""
    import xarray as xr

    from attnphase.execution.dataset import job_attrs

    ds = xr.Dataset({"alpha_c": ("omega", [1.25, float("nan")]), "status": ("omega", ["done", "failed"]),
                     "error": ("omega", ["", "ValueError: no root\nmore"])}, coords={"omega": [0.1, 0.2]},
                    attrs=job_attrs("phase-diagram", version="v"))
    ds.to_netcdf(tmp_path / "phase_diagram.nc")
    assert main(["show", str(tmp_path), "--json"]) == 0
    (data,) = json.loads(capsys.readouterr().out).values()
    assert data["job"] == "phase-diagram" and data["dims"] == {"omega": 2} and data["coords"] == {"omega": [0.1, 0.2]}
    assert data["status"] == {"per": ["omega"], "counts": {"done": 1, "failed": 1}, "failed": ["ValueError: no root"]}
    assert data["variables"]["alpha_c"] | {"long_name": ""} == {"dims": ["omega"], "long_name": "", "units": None,
                                                                "finite": 1, "size": 2, "range": [1.25, 1.25]}
    assert main(["show", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "status per omega (its task's): 1 done, 1 failed" in text and "failed: ValueError: no root" in text
    assert "alpha_c(omega): 1/2 finite [1.25, 1.25]" in text


@pytest.mark.heavy
def test_scan_accepts_correlated_tokens(tmp_path, capsys) -> None:
    """``scan --token-cov``: each cell is the phase diagram of that model (its whitened form), the same as
    ``phase-diagram --token-cov`` gives at that lambda."""
    cov = ["--token-cov", "0.25,0.075;0.075,0.25", "--omega", "0.3"]
    small = ["--alpha", "1.6:3.6:5", *SMALL[2:], "--workers", "1"]
    assert main(["scan", "--lam", "0.01,0.02", *cov, *small, "--out", str(tmp_path / "scan"), "--json"]) == 0
    scan = json.loads(capsys.readouterr().out)
    assert scan["tasks"]["computed"] == 2 and scan["tasks"]["failed"] == 0
    assert main(["phase-diagram", *cov, "--lam", "0.01", *small, "--out", str(tmp_path / "pd"), "--json"]) == 0
    pd = json.loads(capsys.readouterr().out)
    row = next(r for r in scan["rows"] if r["lam"] == 0.01)
    assert 1.6 < row["alpha_c"] < 3.6 and row["alpha_c"] == pytest.approx(pd["rows"][0]["alpha_c"], rel=1e-9)
