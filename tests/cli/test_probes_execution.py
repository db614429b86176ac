"""Probes of the execution side: output paths the system refuses, signals at any phase of a job, a
scheduler without workers, a used ``--out``, the finite-d sample counts, scans over a per-token sigma,
omega = 1, and the estimate every long job announces before it starts.

Each probe is quick: a refusal runs in-process through ``attnphase.cli.main``; the few that compute use
the small rules of ``SMALL`` and one omega; signals are sent to a subprocess with ``os.kill``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnphase import interrupts, outputs
from attnphase.cli import main

#: Small rules throughout (tasks, signals and outputs are checked here, not the boundaries' accuracy): alpha_c gh6's
#: own root, no refinement of alpha_l or the branch ends.
SMALL = ["--alpha", "0.6:2.2:5", "--quadrature", "gh6", "--alpha-c-quadrature", "none", "--alpha-l-quadrature", "none",
         "--bifurcation-quadrature", "sobol10", "--end-quadrature", "none", "--quiet"]


def _one_line_error(capsys, argv, needles, where: Path) -> str:
    before = sorted(os.listdir(where))
    code = main(argv)
    cap = capsys.readouterr()
    assert code == 2, cap.err
    assert cap.err.count("\n") == 1 and cap.err.startswith("attnphase: error:"), cap.err
    assert "Traceback" not in cap.err
    for needle in needles:
        assert needle in cap.err, (needle, cap.err)
    assert sorted(os.listdir(where)) == before  # nothing made, no probe or staging folder left
    return cap.err


# --- an --out path the system refuses: one line, exit code 2, before any work ---------------------

def _refused_paths(tmp: Path) -> list[tuple[str, list[str]]]:
    os.symlink(tmp / "nowhere" / "x", tmp / "dangling")
    os.symlink(tmp / "loop_b", tmp / "loop_a")
    os.symlink(tmp / "loop_a", tmp / "loop_b")
    paths = [("x" * 300, ["--out", "File name too long", "300 characters"]),
             (str(Path("new") / ("y" * 256) / "z"), ["--out", "File name too long"]),
             ("dangling", ["--out", "symbolic link", "leads nowhere"]),
             ("dangling/sub", ["--out", "symbolic link", "leads nowhere"]),
             ("loop_a/sub", ["--out", "symbolic link", "leads nowhere"])]
    if Path("/proc/self").is_dir():
        paths.append(("/proc/attnphase-out", ["--out", "/proc"]))
    return paths


@pytest.mark.parametrize("command", [
    ["phase-diagram", "--omega", "0.3", "--alpha", "1,2"],
    ["sweep", "--alpha", "1"],
    ["scan", "--lam", "0.01,0.02", "--omega", "0.3", "--alpha", "1,2"],
    ["census", "--alpha", "1.25"],
    ["validate", "--quick"],
    ["histogram", "--quick"],
])
def test_out_path_the_system_refuses_is_one_line(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for out, needles in _refused_paths(tmp_path):
        _one_line_error(capsys, [*command, "--out", out], needles, tmp_path)


def test_task_store_that_is_a_file_is_refused_before_any_task(capsys, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "tasks").write_text("not a folder")
    _one_line_error(capsys, ["sweep", "--alpha", "2", "--quadrature", "gh6", "--workers", "1", "--quiet", "--out",
                             str(tmp_path / "out")], ["--out: ", "tasks", "must be a folder"], tmp_path)
    assert os.listdir(tmp_path / "out") == ["tasks"]


def test_derive_output_and_show_path_too_long_are_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _one_line_error(capsys, ["derive", "-o", "z" * 300], ["-o/--output", "File name too long"], tmp_path)
    _one_line_error(capsys, ["show", "z" * 300], ["PATH", "File name too long"], tmp_path)


def test_out_through_a_working_symlink_is_taken(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert outputs.check_out_dir(tmp_path / "link" / "new") == tmp_path / "link" / "new"
    assert os.listdir(tmp_path / "real") == []  # the check made nothing


# --- signals at any phase ------------------------------------------------------------------------

def _start(argv: list[str], cwd: Path) -> subprocess.Popen:
    # the child gets the default SIGINT action (a process started with SIGINT ignored keeps it ignored)
    return subprocess.Popen([sys.executable, "-m", "attnphase", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ | {"ATTNPHASE_QUIET": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for(predicate, proc: subprocess.Popen, seconds: float = 240) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None and not predicate():
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()


def _clean_exit(proc: subprocess.Popen, code: int, last: str) -> str:
    _, err = proc.communicate(timeout=120)
    # a Ctrl-C that reached a C extension's own Python code while a module loaded makes the interpreter end by
    # SIGINT after the command's clean stop: the shell shows 130 either way
    assert proc.returncode == code or (code == 130 and proc.returncode == -signal.SIGINT), (proc.returncode, err)
    assert "Traceback" not in err and "leaked semaphore" not in err and "Exception ignored" not in err, err
    assert err.strip().splitlines()[-1] == last, err
    return err


@pytest.mark.parametrize(("sig", "code", "last"), [
    (signal.SIGINT, 130, "attnphase: interrupted"),
    pytest.param(signal.SIGTERM, 143, "attnphase: terminated (SIGTERM)", marks=pytest.mark.heavy)])
def test_signal_during_cluster_start_exits_cleanly(sig, code, last, tmp_path):
    proc = _start(["phase-diagram", "--omega", "0.25,0.3", *SMALL, "--workers", "2", "--out", "pd"], tmp_path)
    # the staging folder appears just before the job's local cluster starts (a start takes seconds)
    _wait_for(lambda: any(p.name.startswith(".attnphase-stage-") for p in tmp_path.iterdir()), proc)
    time.sleep(0.3)
    os.kill(proc.pid, sig)
    _clean_exit(proc, code, last)
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["pd"])  # no staging folder; pd holds tasks only
    if (tmp_path / "pd").exists():
        assert [p.name for p in (tmp_path / "pd").iterdir()] == ["tasks"]


def test_sigterm_during_tasks_exits_143_and_keeps_the_finished_ones(tmp_path):
    out = tmp_path / "pd"
    proc = _start(["phase-diagram", "--omega", "0.25,0.3,0.35", *SMALL, "--workers", "1", "--out", "pd"], tmp_path)
    _wait_for(lambda: len(list((out / "tasks").glob("*.task"))) >= 1, proc)
    os.kill(proc.pid, signal.SIGTERM)  # as `kill` or `timeout` does, while the other omegas are computed
    _clean_exit(proc, 143, "attnphase: terminated (SIGTERM)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pd"]  # no hidden staging folder beside --out
    assert [p.name for p in out.iterdir()] == ["tasks"]
    assert all(p.name.endswith(".task") for p in (out / "tasks").iterdir())


@pytest.mark.parametrize(("sig", "code", "last"), [
    (signal.SIGINT, 130, "attnphase: interrupted"),
    pytest.param(signal.SIGTERM, 143, "attnphase: terminated (SIGTERM)", marks=pytest.mark.heavy)])
def test_signal_while_the_command_loads_is_one_line(sig, code, last, tmp_path):
    reached = 0
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.8, 1.2):  # importing the modules, parsing the options, checking them
        proc = _start(["phase-diagram", "--omega", "0.3", *SMALL, "--workers", "1", "--out", "pd"], tmp_path)
        time.sleep(delay)
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=120)
        if last not in err:  # still in the interpreter's own start-up: no code of the command ran yet
            assert "attnphase/cli.py" not in err and "attnphase/interrupts.py" not in err, (proc.returncode, err)
            continue
        assert proc.returncode in (code, -signal.SIGINT), (proc.returncode, err)
        assert "Traceback" not in err and err.strip().splitlines()[-1] == last, err
        reached += 1
        assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["pd"])
    assert reached >= 3


def _start_console_script(argv: list[str], cwd: Path) -> subprocess.Popen:
    """The installed ``attnphase`` script (not ``python -m``: multiprocessing's spawned workers import the script's
    main module again, which ``-m`` spares them), in a process group of its own, as a shell or ``timeout`` runs it."""
    script = Path(sys.executable).parent / "attnphase"
    return subprocess.Popen([str(script), *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ | {"ATTNPHASE_QUIET": "1"}, start_new_session=True)


def test_sigterm_to_the_process_group_of_a_starting_local_cluster_is_one_line(tmp_path):
    """``timeout 12 attnphase scan ...`` signals the whole group: the workers printed the stop raised inside their
    event loop as a traceback ("Exception in callback ... Terminated: 15"), and a worker killed while the cluster
    started made the command end with a RuntimeError traceback and exit code 1."""
    proc = _start_console_script(["phase-diagram", "--omega", "0.25,0.3,0.35", *SMALL, "--workers", "2", "--out", "pd"],
                                 tmp_path)
    _wait_for(lambda: any(p.name.startswith(".attnphase-stage-") for p in tmp_path.iterdir()), proc)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGTERM)
    _clean_exit(proc, 143, "attnphase: terminated (SIGTERM)")
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["pd"])  # no staging folder left beside --out


@pytest.mark.heavy
def test_ctrl_c_to_the_process_group_of_running_local_workers_is_one_line(tmp_path):
    """A Ctrl-C reaches every process of the group (``timeout -s INT 12 attnphase phase-diagram --omega 0:0.45:6
    --workers 2``): each worker running a task raised KeyboardInterrupt in its event loop and printed it, ~30 lines a
    worker, before ``attnphase: interrupted``.  The workers ignore SIGINT; the command closes them."""
    omegas = "0.2,0.25,0.3,0.35,0.4,0.45"
    proc = _start_console_script(["phase-diagram", "--omega", omegas, *SMALL, "--workers", "2", "--out", "pd"], tmp_path)
    _wait_for(lambda: any((tmp_path / "pd" / "tasks").glob("*")) if (tmp_path / "pd" / "tasks").is_dir() else False,
              proc)  # a task done: both workers have started and run tasks
    os.killpg(proc.pid, signal.SIGINT)
    _clean_exit(proc, 130, "attnphase: interrupted")


def test_workers_spawned_from_the_console_script_keep_the_default_signal_actions():
    """The handlers belong to the command's process alone (:mod:`attnphase.__main__`)."""
    show = "import signal, attnphase.__main__; print(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)"
    worker = subprocess.run([sys.executable, "-c", show, "--multiprocessing-fork"], capture_output=True, text=True)
    command = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True)
    assert (worker.stdout.strip(), command.stdout.strip()) == ("True", "False"), (worker.stderr, command.stderr)


def test_an_error_a_held_signal_caused_gives_way_to_the_stop():
    """A worker dying of the group's SIGTERM fails the cluster's start inside :func:`interrupts.deferred`."""
    with pytest.raises(interrupts.Terminated):
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            raise RuntimeError("Nanny failed to start worker process")
    with pytest.raises(RuntimeError):  # no signal: the error is the error
        with interrupts.deferred():
            raise RuntimeError("a real failure")


def test_deferred_holds_a_signal_until_the_stretch_ends():
    reached = []
    with interrupts.handling_termination():
        with pytest.raises(interrupts.Terminated) as caught:
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                reached.append("end of the stretch")
    assert reached == ["end of the stretch"] and caught.value.exit_code == 143
    with pytest.raises(KeyboardInterrupt):
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            reached.append("again")
    assert reached[-1] == "again"
    with pytest.raises(interrupts.Terminated):  # a second signal during a clean-up does not replace the first
        try:
            raise interrupts.Terminated(signal.SIGTERM)
        finally:
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_staging_folders_of_dead_processes_are_removed_at_the_next_run(tmp_path):
    host = outputs._owner_tag().rsplit("-", 1)[0]
    dead = tmp_path / f".attnphase-stage-{host}-{_dead_pid()}-abc123"
    live = tmp_path / f".attnphase-stage-{host}-{os.getpid()}-def456"
    other = tmp_path / f".attnphase-stage-elsewhere.example-{_dead_pid()}-ghi789"
    for folder in (dead, live, other):
        folder.mkdir()
        (folder / "half.csv").write_text("1")
    with outputs.staged_output(tmp_path / "out") as stage:
        (stage / "one.csv").write_text("1")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert dead.name not in names  # its process is gone
    assert live.name in names and other.name in names  # a live process's, another machine's: left alone
    assert os.listdir(tmp_path / "out") == ["one.csv"]


def test_a_dead_runs_staging_folder_beside_an_existing_out_is_removed(tmp_path):
    """A run killed before DIR existed staged in DIR's parent; a later run into the existing DIR staged inside DIR and
    left the dead one beside it for good."""
    host = outputs._owner_tag().rsplit("-", 1)[0]
    (tmp_path / "out").mkdir()
    dead = tmp_path / f".attnphase-stage-{host}-{_dead_pid()}-abc123"
    dead.mkdir()
    with outputs.staged_output(tmp_path / "out") as stage:
        (stage / "one.csv").write_text("1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert os.listdir(tmp_path / "out") == ["one.csv"]


# --- a scheduler without workers ---------------------------------------------------------------------

@pytest.fixture
def empty_scheduler():
    """A Dask scheduler on 127.0.0.1 with no worker (stopped afterwards)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                                      dashboard_address=":0")
    try:
        yield cluster
    finally:
        cluster.close()


def test_scheduler_without_workers_is_a_timeout_not_a_wait_forever(capsys, tmp_path, monkeypatch, empty_scheduler):
    monkeypatch.setenv("ATTNPHASE_WORKER_TIMEOUT", "2")
    t0 = time.time()
    err = _one_line_error(capsys, ["phase-diagram", "--omega", "0.3", *SMALL, "--scheduler",
                                   empty_scheduler.scheduler_address, "--out", str(tmp_path / "pd")],
                          ["--scheduler", "no worker joined within 2 s", "dask worker"], tmp_path)
    assert time.time() - t0 < 60, err


@pytest.mark.heavy
def test_workers_gone_mid_job_fail_the_unfinished_tasks(empty_scheduler):
    import threading

    from attnphase.execution import ExecutorSpec, Task, run_tasks

    sys.path.insert(0, str(Path(__file__).parent.parent / "execution"))
    from exec_tasks import sleepy

    empty_scheduler.scale(1)
    empty_scheduler.wait_for_workers(1, timeout=60)
    tasks = [Task(key=f"k{i}", label=f"t{i}", fn=sleepy, arg=5.0) for i in range(2)]
    threading.Timer(1.0, lambda: empty_scheduler.scale(0)).start()
    t0 = time.time()
    outs = run_tasks(tasks, executor=ExecutorSpec(scheduler=empty_scheduler.scheduler_address, worker_timeout=2))
    assert time.time() - t0 < 60
    assert outs and all(o.status == "failed" and "no worker" in o.reason for o in outs), outs


@pytest.mark.heavy  # 6-12 s: kept out of the default run's 10-minute budget
def test_scheduler_lost_mid_job_fails_the_unfinished_tasks(empty_scheduler):
    import threading

    from attnphase.execution import ExecutorSpec, Task, run_tasks

    sys.path.insert(0, str(Path(__file__).parent.parent / "execution"))
    from exec_tasks import sleepy

    empty_scheduler.scale(1)
    empty_scheduler.wait_for_workers(1, timeout=60)
    tasks = [Task(key=f"s{i}", label=f"t{i}", fn=sleepy, arg=5.0) for i in range(2)]
    threading.Timer(1.0, lambda: empty_scheduler.close()).start()
    t0 = time.time()
    outs = run_tasks(tasks, executor=ExecutorSpec(scheduler=empty_scheduler.scheduler_address, worker_timeout=30))
    assert time.time() - t0 < 60
    assert outs and all(o.status == "failed" for o in outs), outs


@pytest.mark.heavy
def test_scheduler_address_of_a_server_that_never_answers_is_refused():
    import socket
    import threading

    from attnphase.execution import ExecutorSpec, Task, run_tasks

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()  # accepts, never answers
    address = "tcp://127.0.0.1:%d" % server.getsockname()[1]
    t0 = time.time()
    try:
        with pytest.raises(ValueError, match="no Dask scheduler answered within 1 s"):
            run_tasks([Task(key="k", label="t", fn=abs, arg=-1)], executor=ExecutorSpec(scheduler=address, connect_timeout=1))
    finally:
        server.close()
    assert time.time() - t0 < 30


def test_scheduler_address_of_a_server_that_is_not_dask_is_a_one_line_error(capsys, tmp_path):
    """A port that greets with bytes of its own (an SSH banner) made Dask read a frame size of exabytes: a traceback
    ending in numpy's ArrayMemoryError, exit 1."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def greet() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n" * 64)

    threading.Thread(target=greet, daemon=True).start()
    address = "tcp://127.0.0.1:%d" % server.getsockname()[1]
    try:
        _one_line_error(capsys, ["phase-diagram", "--omega", "0.3", "--scheduler", address, "--quiet",
                                 "--out", str(tmp_path / "pd")], [f"--scheduler {address}: ", "not a Dask scheduler"],
                        tmp_path)
    finally:
        server.close()


def test_bad_worker_timeout_is_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNPHASE_WORKER_TIMEOUT", "-1")
    _one_line_error(capsys, ["sweep", "--alpha", "1", "--out", str(tmp_path / "s")], ["ATTNPHASE_WORKER_TIMEOUT"],
                    tmp_path)


# --- a used --out: never another job's tables beside the new ones ------------------------------------

def test_staged_output_replaces_what_the_earlier_job_wrote(tmp_path, capsys):
    out = tmp_path / "out"
    with outputs.staged_output(out, job="sweep_semantic", model={"lam": 0.01, "omega": [0.1, 0.2]}) as stage:
        for name in ("sweep_semantic_omega0.1.csv", "sweep_semantic_omega0.2.csv", "sweep_semantic.nc"):
            (stage / name).write_text("old")
    (out / "notes_of_mine.txt").write_text("keep")
    with outputs.staged_output(out, job="other_job") as stage:
        (stage / "other.csv").write_text("other")
    with outputs.staged_output(out, job="sweep_semantic", model={"lam": 0.1, "omega": [0.3]}) as stage:
        for name in ("sweep_semantic_omega0.3.csv", "sweep_semantic.nc"):
            (stage / name).write_text("new")
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert names == ["notes_of_mine.txt", "other.csv", "sweep_semantic.nc", "sweep_semantic_omega0.3.csv"]
    assert (out / "sweep_semantic.nc").read_text() == "new"
    err = capsys.readouterr().err
    assert "lam=0.01 -> 0.1" in err and "sweep_semantic_omega0.1.csv" in err and "removed" in err
    record = json.loads((out / ".attnphase-job-sweep_semantic.json").read_text())
    assert record["files"] == ["sweep_semantic.nc", "sweep_semantic_omega0.3.csv"]
    # the same model again, writing part of its files (the others up to date): nothing is removed
    with outputs.staged_output(out, job="sweep_semantic", model={"lam": 0.1, "omega": [0.3]}) as stage:
        (stage / "census.csv").write_text("new part")
    assert {"sweep_semantic.nc", "sweep_semantic_omega0.3.csv", "census.csv"} <= set(os.listdir(out))


def test_a_folder_named_as_a_file_of_the_job_is_bad_input_before_any_work(tmp_path, capsys, monkeypatch):
    """A folder DIR/phase_diagram.csv: the diagram was computed, "wrote ..." printed, then "failed: while computing
    the phase diagram ... (a failure of the computation, not of the input)", exit 1."""
    from attnphase.numerics.jobs import report

    monkeypatch.setattr(report, "run_phase_diagram", lambda *a, **k: pytest.fail("work started"))
    (tmp_path / "d" / "phase_diagram.csv").mkdir(parents=True)
    assert main(["phase-diagram", "--omega", "0.3", "--quiet", "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "is a folder where the job writes a file" in err and "failed" not in err


def test_sweep_rerun_with_another_model_leaves_no_stale_csv(tmp_path, capsys):
    out = str(tmp_path / "s")
    common = ["--alpha", "1.5,2", "--quadrature", "gh6", "--workers", "1", "--quiet", "--out", out]
    assert main(["sweep", "--omega", "0.25,0.3", *common]) == 0
    assert main(["sweep", "--lam", "0.02", "--omega", "0.35", *common]) == 0
    files = sorted(p.name for p in Path(out).iterdir() if not p.name.startswith("."))
    assert files == ["sweep_semantic.json", "sweep_semantic.nc", "sweep_semantic_omega0.35.csv", "tasks"]
    err = capsys.readouterr().err
    assert "lam=0.01 -> 0.02" in err
    # the solver's rules shape the files as the model does: another rule's rerun says so (it replaced them silently)
    assert main(["sweep", "--lam", "0.02", "--omega", "0.35", *common[:2], "--quadrature", "gh5", *common[4:]]) == 0
    assert 'solver.quadrature="gh6" -> "gh5"' in capsys.readouterr().err


def test_a_sweep_read_back_from_its_store_says_so_in_its_dataset(tmp_path):
    """A rerun of the same sweep read its task from DIR/tasks (the JSON said "stored": 1) but wrote status "done" into
    sweep_semantic.nc (``show`` then said "1 done"), where phase-diagram's dataset says "stored"."""
    import xarray as xr

    out = str(tmp_path / "s")
    args = ["sweep", "--omega", "0.3", "--alpha", "1.5,2", "--quadrature", "gh6", "--quiet", "--out", out]
    assert main(args) == 0
    with xr.open_dataset(Path(out) / "sweep_semantic.nc") as ds:
        assert list(ds["status"].values) == ["done"]
    assert main(args) == 0
    with xr.open_dataset(Path(out) / "sweep_semantic.nc") as ds:
        assert list(ds["status"].values) == ["stored"]
    assert json.loads((Path(out) / "sweep_semantic.json").read_text())["tasks"]["stored"] == 1


@pytest.mark.heavy  # 6-12 s: kept out of the default run's 10-minute budget
def test_a_diagram_rerun_with_another_solver_removes_the_census_it_does_not_write(tmp_path, capsys):
    """phase-diagram --census (global map), then the same grid with --prox aligned and no --census: the first run's
    phase_diagram_census.csv stayed beside the new diagram (its alpha_c 1.2527 for the new 1.241), no note; the
    job's record holds the solver now, so the rerun removes it and says why."""
    out = str(tmp_path / "d")
    common = ["phase-diagram", "--omega", "0.3", "--alpha", "0.8,1.4,2", "--precision", "fast", "--quiet", "--out", out]
    assert main([*common, "--census"]) == 0
    assert (Path(out) / "phase_diagram_census.csv").exists()
    capsys.readouterr()
    assert main([*common, "--prox", "aligned"]) == 0
    assert not (Path(out) / "phase_diagram_census.csv").exists()
    assert 'solver.prox="global" -> "aligned"' in capsys.readouterr().err


@pytest.mark.heavy  # about 15 s: three runs of one omega on the fast tier
def test_a_diagram_rerun_with_or_without_census_rewrites_its_outputs(tmp_path, capsys):
    """phase-diagram --census, then the same command without it: the rerun said "outputs up to date" and kept the
    census CSV and the census in phase_diagram.json; with --census again after a run without it, the census CSV was
    written but phase_diagram.json kept no census.  --census shapes the outputs as the model and grid do."""
    out = Path(tmp_path / "d")
    common = ["phase-diagram", "--omega", "0.3", "--alpha", "0.8,1.4,2", "--precision", "fast", "--quiet", "--out",
              str(out)]
    assert main([*common, "--census"]) == 0
    assert "census" in json.loads((out / "phase_diagram.json").read_text())
    assert main(common) == 0
    assert not (out / "phase_diagram_census.csv").exists()
    assert "census" not in json.loads((out / "phase_diagram.json").read_text())
    capsys.readouterr()
    assert main([*common, "--census"]) == 0
    assert (out / "phase_diagram_census.csv").exists()
    assert "census" in json.loads((out / "phase_diagram.json").read_text())
    assert "outputs up to date" not in capsys.readouterr().err


# --- an error after the work began: exit code 1, one line, nothing written, the finished tasks kept ------

def test_failure_after_the_work_began_is_exit_1_not_bad_input(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="bad input"):  # nothing done yet: still bad input
        with outputs.staged_output(out):
            raise ValueError("bad input")
    with pytest.raises(ValueError, match="cannot connect"):  # a cache copied in (its old times kept) is no work
        with outputs.staged_output(out) as stage:
            (stage / "cache.json").write_text("{}")
            os.utime(stage / "cache.json", (1e9, 1e9))
            raise ValueError("--scheduler tcp://127.0.0.1:9: cannot connect")
    with pytest.raises(outputs.JobFailed, match="after its work began") as failed:
        with outputs.staged_output(out) as stage:
            (stage / "figure.png").write_text("half")
            raise ValueError("could not convert string to float: '0.4,0.6'")
    assert os.listdir(tmp_path) == []
    assert "no task had finished" in str(failed.value)  # it said the (none) finished tasks were kept
    (out / "tasks").mkdir(parents=True)
    (out / "tasks" / "ab.task").write_text("x")
    with pytest.raises(outputs.JobFailed, match="the 1 task it finished kept in its tasks/ folder"):
        with outputs.staged_output(out) as stage:
            (stage / "figure.png").write_text("half")
            raise ValueError("could not convert string to float: '0.4,0.6'")


def test_sweep_that_fails_writing_its_outputs_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    import attnphase.numerics.jobs.dataset as dataset

    def broken(*args, **kwargs):
        raise TypeError("a defect in writing the dataset")

    monkeypatch.setattr(dataset, "sweeps_dataset", broken)
    out = tmp_path / "s"
    assert main(["sweep", "--omega", "0.3", "--alpha", "2", "--quadrature", "gh6", "--workers", "1", "--quiet",
                 "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "TypeError: a defect in writing the dataset" in err and "Traceback" not in err
    assert os.listdir(out) == ["tasks"] and len(os.listdir(out / "tasks")) == 1  # the finished task is kept
    assert "the 1 task it finished kept" in err
    # with --json, stdout holds one object still (it was empty): a pipeline reads the failure
    assert main(["sweep", "--omega", "0.3", "--alpha", "2", "--quadrature", "gh6", "--workers", "1", "--quiet",
                 "--out", str(out), "--json"]) == 1
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert rec["exit_code"] == 1 and rec["error"].startswith("failed: while ") and "a defect in writing" in rec["error"]


# --- finite d: the sample counts are the ones asked for, or said ---------------------------------------

def test_simulate_refuses_no_training_sample(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _one_line_error(capsys, ["simulate", "--d", "2", "--alpha", "0.01"], ["--alpha 0.01", "--d 2", "n = round(alpha d)"],
                    tmp_path)
    _one_line_error(capsys, ["simulate", "--n-test", "2"], ["--n-test", ">= 100"], tmp_path)
    # alpha 0.1 at d = 5 is alpha d = 1/2: one sample (halves up, as the training set is drawn), so 5 is enough
    _one_line_error(capsys, ["validate", "--quick", "--d", "3", "--out", "v"], ["--d 3", "need --d >= 5"], tmp_path)


def test_the_samples_said_are_the_samples_drawn(capsys):
    """``simulate --d 10 --alpha 0.65`` drew n = 7 (floor(alpha d + 1/2)) but warned of round(6.5) = 6 and an
    effective alpha 0.6 (Python's round() takes halves to even); alpha d = 1/2 was refused with one sample to draw."""
    from attnphase.validation.commands.finite_d_options import check_plan_samples, check_samples, warn_rounded_alphas
    from attnphase.validation.data import n_samples

    for alpha, d in ((0.65, 10), (0.25, 10), (0.05, 50), (0.325, 20)):
        check_samples(alpha, d)
        assert f"n = round(alpha d) = {n_samples(alpha, d)} training samples: the effective alpha = n/d = " \
               f"{n_samples(alpha, d) / d:.6g}," in capsys.readouterr().err
    check_samples(0.01, 50)  # alpha d = 1/2: the one sample n_samples draws
    check_plan_samples(0.1, 5)
    warn_rounded_alphas([(0.65, 10)])
    assert "alpha 0.65 at d = 10: n/d = 0.7" in capsys.readouterr().err


def test_simulate_reports_n_and_the_effective_alpha(capsys):
    from attnphase.validation.data import n_samples

    with pytest.raises(ValueError, match="n = round"):
        n_samples(0.01, 2)  # never a silent n = 1
    assert main(["simulate", "--d", "10", "--alpha", "0.75", "--n-test", "200", "--json", "--device", "cpu",
                 "--threads", "1"]) in (0, 1)
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert rec["n"] == 8 and rec["n_test"] == 200 and rec["alpha"] == 0.75 and rec["err_eps_g"] > 0
    assert "effective alpha = n/d = 0.8" in cap.err


def test_validate_says_where_its_training_sets_round_alpha(capsys):
    """``validate --quick --d 150`` trained alpha = 0.35 on n = 53 samples (n/d = 0.3533) and compared it with the
    theory at 0.35, where ``simulate`` warns of the effective alpha: the plan's rounded alphas are said once; the
    default plans round none."""
    from attnphase.validation.campaign_plan import validation_plan
    from attnphase.validation.commands.finite_d_options import warn_rounded_alphas

    def pairs(plan):
        return [(s.alpha, s.d) for s in (*plan.sweep_specs(), *plan.heat_specs(), *plan.fss_specs())]

    warn_rounded_alphas(pairs(validation_plan(quick=True, d=150)))
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "alpha 0.35 at d = 150: n/d = 0.3533" in err
    for quick in (True, False):
        warn_rounded_alphas(pairs(validation_plan(quick=quick)))
    assert capsys.readouterr().err == ""


# --- validate: its size is guarded and announced ---------------------------------------------------------

def test_validate_many_seeds_needs_large(capsys, tmp_path):
    _one_line_error(capsys, ["validate", "--quick", "--seeds", "50", "--out", str(tmp_path / "v")],
                    ["--seeds", "simulations is more than 1000", "--large"], tmp_path)


# --- scans over a per-token sigma; omega = 1; the curves figure at an omega of the run -----------------

@pytest.mark.heavy
def test_scan_over_per_token_sigma_is_written_end_to_end(tmp_path, capsys):
    pytest.importorskip("xarray")
    from attnphase.execution.dataset import open_dataset

    out = tmp_path / "scan"
    assert main(["scan", "--sigma", "0.5;0.4,0.6", "--omega", "0.3", *SMALL[2:], "--alpha", "1.2,1.6", "--workers", "1",
                 "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [r["sigma"] for r in summary["rows"]] == ["0.5", "0.4,0.6"]
    ds = open_dataset(out / "scan.nc")  # the per-token values label the sigma dimension (sigma_label in the file)
    assert list(ds["sigma"].values) == ["0.5", "0.4,0.6"] and ds["alpha_c"].shape == (2, 1)
    assert (out / "phase_diagram_sigma0.4,0.6.png").stat().st_size > 0


def test_scan_values_that_give_one_model_are_refused(capsys, tmp_path):
    for extra in ([], ["--rank", "2"]):
        _one_line_error(capsys, ["scan", "--sigma", "0.5;0.5,0.5", "--omega", "0.3", *extra, "--out", str(tmp_path / "s")],
                        ["--sigma", "'0.5' and '0.5,0.5'", "same model"], tmp_path)


@pytest.mark.parametrize("extra", [["--branch", "semantic"], ["--estimator", "bayes-optimal"]])
def test_a_sweep_refuses_omegas_that_name_one_file(extra, capsys, tmp_path):
    """``sweep --omega 0.3,0.3000001``: both omegas wrote sweep_semantic_omega0.3.csv (6 significant digits), the
    second over the first, silently."""
    _one_line_error(capsys, ["sweep", "--omega", "0.3,0.3000001", "--alpha", "1,2", *extra, "--out", str(tmp_path / "s")],
                    ["--omega 0.3 and 0.3000001", "same file"], tmp_path)


@pytest.mark.parametrize("argv", [["phase-diagram", "--omega", "1"], ["scan", "--lam", "0.01,0.1", "--omega", "1"],
                                  ["phase-diagram", "--omega", "1", "--rank", "2"], ["validate", "--quick", "--omega", "1"]])
def test_omega_one_alone_is_refused_with_the_reason(argv, capsys, tmp_path):
    _one_line_error(capsys, [*argv, "--out", str(tmp_path / "o")], ["--omega 1", "no semantic signal"], tmp_path)


@pytest.mark.parametrize("argv", [["phase-diagram", "--omega", "7"], ["phase-diagram", "--omega", "1.2,1.5"],
                                  ["phase-diagram", "--omega", "1.5", "--rank", "2"]])
def test_an_omega_above_one_is_refused_as_out_of_range(argv, capsys, tmp_path):
    """``phase-diagram --omega 7`` was refused as "--omega 1: ... no semantic signal" (every omega >= 1 taken for 1)."""
    err = _one_line_error(capsys, [*argv, "--out", str(tmp_path / "o")], ["--omega", "must lie in [0, 1]"], tmp_path)
    assert "semantic signal" not in err


def test_curves_figure_is_drawn_at_an_omega_of_the_run(tmp_path, capsys):
    from attnphase.numerics.jobs.report import curves_omega

    assert curves_omega([0.1, 0.2]) == 0.2 and curves_omega([0.3, 0.5]) == 0.3 and curves_omega([0.25, 0.35]) == 0.25
    assert curves_omega([1.0]) is None and curves_omega([0.9, 1.0]) == 0.9
    out = tmp_path / "pd"
    assert main(["phase-diagram", "--omega", "0.25", *SMALL, "--workers", "1", "--out", str(out), "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert meta["tasks"]["total"] == 1  # no extra omega = 0.3 task for the figure
    assert (out / "curves_omega0.25.png").stat().st_size > 0 and not (out / "curves_omega0.3.png").exists()


# --- every long command announces its estimate before it starts -------------------------------------

class _Stop(Exception):
    """Raised where the work would begin."""


def _stop(*args, **kwargs):
    raise _Stop


@pytest.mark.parametrize(("argv", "target", "words"), [
    (["phase-diagram"], "attnphase.numerics.jobs.report.run_phase_diagram", ["10 tasks", "CPU s per omega"]),
    (["phase-diagram", "--rank", "2", "--omega", "0.3", "--alpha", "0.25:3:6", "--quadrature", "sobol9:4"],
     "attnphase.numerics.jobs.report.run_phase_diagram", ["1 task", "CPU s per omega"]),
    (["scan", "--lam", "0.001,0.01,0.1"], "attnphase.numerics.jobs.scan_report.run_scan", ["30 tasks"]),
    (["scan", "--lam", "0.001,0.01", "--rank", "2", "--omega", "0.3", "--alpha", "0.25:3:6", "--quadrature", "sobol9:4"],
     "attnphase.numerics.jobs.scan_report.run_scan", ["2 tasks", "every core"]),
    (["sweep", "--omega", "0.1,0.2,0.3", "--alpha", "0.8:2.4:40"], "attnphase.execution.run_tasks", ["3 tasks"]),
    (["census", "--alpha", "1.25"], "attnphase.numerics.phase.census.census", ["CPU s measured at the defaults"]),
    (["validate", "--quick"], "attnphase.validation.campaign.run_validation", ["theory tasks", "simulations"]),
    (["validate", "--suite", "general", "--quick"], "attnphase.validation.general_suite.run_general_validation",
     ["general suite: 5 cases", "quick suite"]),
    (["validate", "--suite", "general", "--cases", "d,e", "--d", "500"],
     "attnphase.validation.general_suite.run_general_validation",
     ["general suite: 2 cases at d = 500", "about", "scaled by cases, seeds and d^2"]),
    (["validate", "--suite", "general", "--cases", "d", "--d", "2000"],
     "attnphase.validation.general_suite.run_general_validation",
     ["general suite: 1 case at d = 2000", "about 16 min", "(d), (e) 142 s of theory and 1782 s of simulations"]),
    (["validate", "--suite", "general", "--cases", "a,b,c,d,e", "--d", "2000"],
     "attnphase.validation.general_suite.run_general_validation",
     ["general suite: 5 cases at d = 2000", "about 45 min", "simulations by cases, seeds and d^2"]),
    # at d = 4000 only the simulations grow (4x): the (a)-(c) theory stays 623 s
    (["validate", "--suite", "general", "--cases", "a,b,c", "--d", "4000"],
     "attnphase.validation.general_suite.run_general_validation",
     ["general suite: 3 cases at d = 4000", "about 20 min", "the theory scaled by cases"]),
    (["histogram", "--quick"], "attnphase.validation.histogram.jobs.run_histogram", ["trainings", "CPU s per training"]),
    (["sweep", "--estimator", "bayes-optimal", "--alpha", "0.05:1:10"], "attnphase.execution.run_tasks",
     ["Bayes-optimal sweep", "2 tasks", "CPU s per branch and omega"]),
    (["phase-diagram", "--estimator", "bayes-optimal", "--omega", "0.1,0.3", "--alpha", "0.2:2:5"],
     "attnphase.execution.run_tasks", ["Bayes-optimal phase diagram", "2 tasks", "CPU s per omega"]),
])
def test_long_commands_announce_an_estimate_before_they_start(argv, target, words, capsys, tmp_path, monkeypatch):
    module, _, name = target.rpartition(".")
    monkeypatch.setattr(__import__(module, fromlist=[name]), name, _stop)
    out = [] if argv[0] == "census" else ["--out", str(tmp_path / "o")]
    with pytest.raises(_Stop):
        main([*argv, *out, "--workers", "2"] if argv[0] != "census" else argv)
    err = capsys.readouterr().err
    assert "about" in err, err
    for w in words:
        assert w in err, (w, err)


@pytest.mark.parametrize(("argv", "target"), [
    (["census", "--alpha", "1.25"], "attnphase.numerics.phase.census.census"),
    (["phase-diagram", "--omega", "0.3", "--census"], "attnphase.numerics.jobs.report.run_phase_diagram"),
    (["phase-diagram"], "attnphase.numerics.jobs.report.run_phase_diagram"),
    (["histogram", "--quick"], "attnphase.validation.histogram.jobs.run_histogram"),
])
def test_quiet_hides_every_estimate(argv, target, capsys, tmp_path, monkeypatch):
    """``census --quiet`` and ``phase-diagram --census --quiet`` still printed their time estimates, which --quiet
    hides on every other command."""
    module, _, name = target.rpartition(".")
    monkeypatch.setattr(__import__(module, fromlist=[name]), name, _stop)
    out = [] if argv[0] == "census" else ["--out", str(tmp_path / "o")]
    with pytest.raises(_Stop):
        main([*argv, *out, "--quiet"])
    assert "about" not in capsys.readouterr().err


def test_histogram_announces_the_workers_it_starts(capsys, tmp_path, monkeypatch):
    """``histogram --quick --workers 100000`` announced "about 37 s on 100000 workers" and started 3."""
    monkeypatch.setattr(__import__("attnphase.validation.histogram.jobs", fromlist=["x"]), "run_histogram", _stop)
    with pytest.raises(_Stop):
        main(["histogram", "--quick", "--workers", "100000", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert "100000 worker" not in err and "workers (one per task)" in err, err


def test_a_signal_while_out_is_checked_leaves_no_probe_folder(tmp_path, monkeypatch):
    """``--out DIR`` is checked by making and removing a hidden folder beside it; a Ctrl-C right after the folder was
    made left it behind (seen by the load-time signal test above).  The stretch now holds the signal back, removes
    the folder, then stops."""
    import tempfile

    real = tempfile.mkdtemp

    def made_then_interrupted(*args, **kwargs):
        path = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return path

    monkeypatch.setattr(outputs.tempfile, "mkdtemp", made_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        outputs.check_out_dir(tmp_path / "pd")
    assert list(tmp_path.iterdir()) == []


def test_a_command_s_compiled_threads_wait_passively_unless_the_user_says_otherwise():
    """``main`` sets OMP_WAIT_POLICY=PASSIVE before any command imports numba, where it is not set: a command's own
    process then spends no CPU spinning between its compiled loops (docs/method.md section 10); a value the user
    gave, an empty one included (the runtime's default), is kept.  In a subprocess: the OpenMP runtime reads it
    once."""
    code = ("import os, sys; from attnphase.cli import main; main(['solve', '--alpha', '-1']); "
            "print(repr(os.environ.get('OMP_WAIT_POLICY')), 'numba' in sys.modules)")
    for given, kept in ((None, "'PASSIVE'"), ("", "''"), ("ACTIVE", "'ACTIVE'")):
        env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
        if given is not None:
            env["OMP_WAIT_POLICY"] = given
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert proc.stdout.split() == [kept, "False"], proc.stderr
