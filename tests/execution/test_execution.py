"""The execution layer (attnphase.execution, docs/distributed.md): a real Dask LocalCluster gives
the in-process numbers; resume computes only what is missing; failures are recorded; a killed
worker is survived; a corrupted task file is recomputed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import exec_tasks  # noqa: E402

from attnphase.execution import ExecutorSpec, Outcome, ResultStore, Task, run_tasks, task_key  # noqa: E402
from attnphase.execution.executor import Progress, dask_client  # noqa: E402
from attnphase.execution.store import MAGIC  # noqa: E402

cloudpickle.register_pickle_by_value(exec_tasks)  # the workers cannot import tests/


def _tasks(fn, xs, prefix="t") -> list[Task]:
    return [Task(key=task_key(fn, {"x": x, "p": prefix}, "test"), label=f"x={x}", fn=fn, arg=x) for x in xs]


class _Counting(Progress):
    def __init__(self, stop_after: int | None = None) -> None:
        self.finished_outcomes: list[Outcome] = []
        self.stop_after = stop_after

    def finished(self, outcome: Outcome) -> None:
        self.finished_outcomes.append(outcome)
        if self.stop_after is not None and len(self.finished_outcomes) >= self.stop_after:
            raise KeyboardInterrupt  # as Ctrl-C would, after this task's file is written


@pytest.fixture(scope="module")
def cluster_address():
    """A real distributed.LocalCluster with 2 worker processes on 127.0.0.1 set up as the commands set up
    theirs on 2 cores (:func:`worker_env`: compiled loops on 2 threads each), closed after."""
    from distributed import LocalCluster

    from attnphase.execution.executor import worker_env

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, env=worker_env(2, 2)) as cluster:
        yield cluster.scheduler_address


def test_key_changes_with_inputs_and_code() -> None:
    k = task_key(exec_tasks.square, {"omega": 0.3}, "v1")
    assert k == task_key(exec_tasks.square, {"omega": 0.3}, "v1")
    assert k != task_key(exec_tasks.square, {"omega": 0.30000000001}, "v1")
    assert k != task_key(exec_tasks.square, {"omega": 0.3}, "v2")
    assert k != task_key(exec_tasks.square_or_raise, {"omega": 0.3}, "v1")


def test_code_version_hashes_the_computing_modules_only(tmp_path, monkeypatch) -> None:
    from attnphase.execution import code_version

    pkg = tmp_path / "vpkg"
    pkg.mkdir()
    for name, text in (("__init__.py", ""), ("solver.py", "x = 1"), ("report.py", "y = 1")):
        (pkg / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    v0 = code_version("vpkg", exclude=("report.py",))
    (pkg / "report.py").write_text("y = 2")
    assert code_version("vpkg", exclude=("report.py",)) == v0 != code_version("vpkg")
    (pkg / "solver.py").write_text("x = 2")
    assert code_version("vpkg", exclude=("report.py",)) != v0
    assert "vpkg" not in sys.modules  # found, never imported


def test_a_closure_hashes_the_modules_its_entry_runs(tmp_path, monkeypatch) -> None:
    """``code_version(closure=(entry, package))``: the files the entry imports (relative, inside a function, through
    another module) count, a module it never imports does not; a module that may import dynamically makes the whole
    package count."""
    from attnphase.execution import code_version
    from attnphase.execution.tasks import import_closure

    pkg = tmp_path / "cpkg"
    pkg.mkdir()
    for name, text in (("__init__.py", ""),
                       ("entry.py", "from . import helper\ndef f():\n    from cpkg.deep import g\n"),
                       ("helper.py", "from .leaf import y\n"), ("leaf.py", "y = 1"), ("deep.py", "g = 1"),
                       ("unused.py", "z = 1"), ("dyn.py", "import importlib\n")):
        (pkg / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [p.name for p in import_closure("cpkg.entry", "cpkg")] == ["__init__.py", "deep.py", "entry.py",
                                                                       "helper.py", "leaf.py"]
    v0 = code_version(closure=("cpkg.entry", "cpkg"))
    (pkg / "unused.py").write_text("z = 2")
    assert code_version(closure=("cpkg.entry", "cpkg")) == v0
    for name in ("leaf.py", "deep.py"):
        (pkg / name).write_text("y = g = 2")
        assert code_version(closure=("cpkg.entry", "cpkg")) != v0
        v0 = code_version(closure=("cpkg.entry", "cpkg"))
    (pkg / "helper.py").write_text("from .leaf import y\nfrom . import dyn\n")
    assert import_closure("cpkg.entry", "cpkg") is None
    v1 = code_version(closure=("cpkg.entry", "cpkg"))
    (pkg / "unused.py").write_text("z = 3")
    assert code_version(closure=("cpkg.entry", "cpkg")) != v1
    assert "cpkg" not in sys.modules  # found, never imported


def test_a_task_bar_shows_what_a_task_running_here_says_it_does() -> None:
    """While a TaskBar is open, an INFO record of an attnphase logger is the postfix's last part until a task
    finishes; on exit the bar's handler is gone and the logger's level is as before; a quiet bar listens to nothing."""
    import logging

    from attnphase.execution.progress import STAGE_LOGGER, TaskBar
    from attnphase.execution.store import Outcome

    logger, child = logging.getLogger(STAGE_LOGGER), logging.getLogger(f"{STAGE_LOGGER}.numerics.some_search")
    level, handlers = logger.level, list(logger.handlers)
    with TaskBar("toy") as bar:
        bar.start(total=2, stored=0, corrupted=0)
        child.info("omega %g: census at alpha = %g", 0.1, 0.5)
        assert bar.bar.postfix.endswith("; omega 0.1: census at alpha = 0.5")
        child.debug("not shown")
        assert bar.now == "omega 0.1: census at alpha = 0.5"
        bar.finished(Outcome(key="a", label="a", status="done", value=1))
        assert bar.now == "" and "census" not in bar.bar.postfix
    assert logger.handlers == handlers and logger.level == level
    with TaskBar("toy", quiet=True) as quiet:
        quiet.start(total=1, stored=0, corrupted=0)
        assert logger.handlers == handlers
        child.info("unheard")
        assert quiet.now == ""


def test_a_corrupted_stored_task_is_a_warning_under_quiet_too(capsys) -> None:
    """``--quiet`` hides progress, never a warning: a corrupted task file removed and recomputed was said only
    without it (a note)."""
    from attnphase.execution.progress import TaskBar

    with TaskBar("toy", quiet=True) as quiet:
        quiet.start(total=2, stored=1, corrupted=1)
    err = capsys.readouterr().err
    assert err == ("attnphase: warning: 1 corrupted or partial task file(s) removed from the store; computing them "
                   "again\n")


def test_a_one_omega_sweep_says_what_its_store_held(capsys, monkeypatch, tmp_path) -> None:
    """A one-omega sweep (its own bar over its points) recomputed a corrupted task file without a word, and read its
    task back from the store without saying so: it reports its store as every job does (StoreNotes)."""
    from attnphase import execution
    from attnphase.cli import main
    from attnphase.execution.progress import StoreNotes

    class Seen(Exception):
        pass

    def fake_run_tasks(tasks, *, progress=None, **kw):
        progress.start(total=1, stored=0, corrupted=1)
        raise Seen(type(progress).__name__)

    monkeypatch.setattr(execution, "run_tasks", fake_run_tasks)
    with pytest.raises(Seen, match="StoreNotes"):
        main(["sweep", "--omega", "0.3", "--alpha", "1,2", "--quiet", "--out", str(tmp_path / "s")])
    assert "1 corrupted or partial task file(s) removed from the store" in capsys.readouterr().err
    StoreNotes().start(total=1, stored=1, corrupted=0)
    assert "1 of 1 tasks read back from the store" in capsys.readouterr().err
    StoreNotes(quiet=True).start(total=1, stored=1, corrupted=0)
    assert capsys.readouterr().err == ""


def test_stored_tasks_are_said_against_the_time_announced_before_them(capsys) -> None:
    """The announcement's time counts every task; where the store holds them the note says so (a rerun of the main
    job said 'about 1.5 min' and took 0.4 s)."""
    from attnphase.execution.progress import TaskBar

    with TaskBar("toy") as bar:
        bar.start(total=2, stored=2, corrupted=0)
    assert "2 of 2 tasks read back from the store (the job takes seconds; any time estimate above counted them" in \
        capsys.readouterr().err
    with TaskBar("toy") as bar:
        bar.start(total=3, stored=1, corrupted=0)
    assert "1 of 3 tasks read back from the store (any time estimate above counted them" in capsys.readouterr().err


def test_a_failing_task_is_recorded_and_the_rest_completes(tmp_path, cluster_address) -> None:
    store = ResultStore(tmp_path)
    tasks = _tasks(exec_tasks.square_or_raise, [1, 2, 3, 4])
    outs = run_tasks(tasks, executor=ExecutorSpec(scheduler=cluster_address), store=store)
    assert [o.value for o in outs] == [1, 4, None, 16]
    assert [o.status for o in outs] == ["done", "done", "failed", "done"]
    assert outs[2].reason == "ArithmeticError: no square of 3 today" and "Traceback" in outs[2].error
    rec = store.load(tasks[2].key)
    assert rec.status == "failed" and rec.error.startswith("ArithmeticError")
    again = run_tasks(tasks, executor=ExecutorSpec(), store=store)  # a rerun retries the failed one only
    assert [o.status for o in again] == ["stored", "stored", "failed", "stored"]


def test_a_killed_worker_is_survived(tmp_path, cluster_address) -> None:
    tasks = [Task(key=f"k{i}", label=f"x={i}", fn=exec_tasks.die_once, arg=(str(tmp_path / f"m{i}"), i))
             for i in (2, 5)]
    outs = run_tasks(tasks, executor=ExecutorSpec(scheduler=cluster_address), store=ResultStore(tmp_path / "s"))
    assert [o.value for o in outs] == [4, 25] and all(o.status == "done" for o in outs)
    assert all((tmp_path / f"m{i}").exists() for i in (2, 5))  # each died once first


def test_interrupted_run_resumes_with_only_the_missing_tasks(tmp_path) -> None:
    store = ResultStore(tmp_path)
    tasks = _tasks(exec_tasks.square, [1, 2, 3, 4])
    with pytest.raises(KeyboardInterrupt):
        run_tasks(tasks, store=store, progress=_Counting(stop_after=2))
    assert len(store.keys()) == 2 and not list(tmp_path.glob(".*"))  # complete files only
    assert all(store.load(k).status == "done" for k in store.keys())
    progress = _Counting()
    outs = run_tasks(tasks, store=store, progress=progress)
    assert [o.status for o in outs] == ["stored", "stored", "done", "done"]
    assert [o.label for o in progress.finished_outcomes] == ["x=3", "x=4"]
    assert [o.value for o in outs] == [1, 4, 9, 16]
    fresh = run_tasks(tasks, store=store, fresh=True)
    assert [o.status for o in fresh] == ["done"] * 4


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_a_corrupted_or_partial_task_file_is_recomputed(tmp_path, damage) -> None:
    store = ResultStore(tmp_path)
    tasks = _tasks(exec_tasks.square, [3, 5])
    run_tasks(tasks, store=store)
    path = store.path(tasks[1].key)
    blob = path.read_bytes()
    path.write_bytes({"truncate": blob[: len(blob) // 2], "flip": blob[:-3] + bytes([blob[-3] ^ 1]) + blob[-2:],
                      "garbage": b"not a task file", "empty": b""}[damage])
    (tmp_path / f".{tasks[0].key}x.task.tmp").write_bytes(MAGIC)  # a killed writer's leftover
    store = ResultStore(tmp_path)
    assert not list(tmp_path.glob(".*"))
    outs = run_tasks(tasks, store=store)
    assert [o.status for o in outs] == ["stored", "done"] and outs[1].value == 25
    assert store.corrupted == [tasks[1].key]
    assert store.load(tasks[1].key).value == 25


@pytest.mark.heavy  # 6-12 s: kept out of the default run's 10-minute budget
def test_phase_diagram_on_a_local_cluster_equals_the_in_process_run(tmp_path, cluster_address) -> None:
    """boundaries tasks of a small phase diagram: Dask (2 workers) and in-process, bit for bit."""
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.jobs.report import compute_boundaries
    from attnphase.theory.params import ModelParams

    cfg = SolverConfig(quadrature="gh6", alpha_c_quadrature=None, bifurcation_quadrature="sobol10")
    alphas = list(np.linspace(0.6, 2.2, 5))
    models = [ModelParams(omega=w) for w in (0.25, 0.3)]
    here = compute_boundaries(models, alphas, cfg, quiet=True)
    there = compute_boundaries(models, alphas, cfg, executor=ExecutorSpec(scheduler=cluster_address), quiet=True,
                               store=ResultStore(tmp_path))
    assert here.counts["failed"] == there.counts["failed"] == 0
    for a, b in zip(here.rows, there.rows):
        ra, rb = a.row(), b.row()
        assert ra.keys() == rb.keys()
        for k in ra:
            assert ra[k] == rb[k] or (isinstance(ra[k], float) and np.isnan(ra[k]) and np.isnan(rb[k])), k
        for sa, sb in ((a.semantic, b.semantic), (a.positional, b.positional)):
            assert [p.record for p in sa.points] == [p.record for p in sb.points]
    resumed = compute_boundaries(models, alphas, cfg, quiet=True, store=ResultStore(tmp_path))
    assert resumed.counts == {"total": 2, "computed": 0, "stored": 2, "failed": 0}
    assert [r.row()["alpha_c"] for r in resumed.rows] == [r.row()["alpha_c"] for r in here.rows]

    # the dataset of a scan over lambda (the same cells twice, as two "values"), through netCDF and back
    from attnphase.execution.dataset import describe, job_attrs, open_dataset, write_netcdf
    from attnphase.numerics.jobs.dataset import boundaries_dataset

    cells = [{"at": {"lam": lam, "omega": b.omega}, "b": b, "err": None, "status": "done", "error": ""}
             for lam in (0.01, 0.02) for b in here.rows]
    attrs = job_attrs("scan", version="v", model=models[0].to_dict(), solver=cfg.as_dict(), rule=cfg.quadrature)
    write_netcdf(boundaries_dataset(cells, ("lam", "omega"), {"lam": [0.01, 0.02], "omega": [0.25, 0.3]}, alphas,
                                    attrs), tmp_path / "scan.nc")
    ds = open_dataset(tmp_path / "scan.nc")
    assert dict(ds.sizes) == {"lam": 2, "omega": 2, "branch": 2, "alpha": 5}
    for b in here.rows:
        assert float(ds.alpha_c.sel(lam=0.02, omega=b.omega)) == b.alpha_c
        sem = [p.record["eps_g"] for p in b.semantic.points if p.alpha in alphas and p.status.converged]
        got = ds.eps_g.sel(lam=0.01, omega=b.omega, branch="semantic").values
        assert list(got[np.isfinite(got)]) == sem
    assert "err_alpha_c" not in ds and ds.attrs["rule"] == "gh6"  # no error bars: no error variables, as in the CSV
    assert "status per lam x omega (its task's): 4 done" in describe(ds) and '"quadrature": "gh6"' in describe(ds)


def test_scheduler_that_cannot_be_reached_is_a_one_line_error() -> None:
    with pytest.raises(ValueError, match="--scheduler tcp://127.0.0.1:9: cannot connect"):
        with dask_client(ExecutorSpec(scheduler="tcp://127.0.0.1:9", connect_timeout=1.0), 1):
            pass


def test_map_in_order_on_its_own_local_cluster_keeps_the_order() -> None:
    """numerics.parallel.map_in_order with workers = 2 starts (and closes) its own LocalCluster;
    a failing item raises TaskFailed after the others."""
    from attnphase.execution import TaskFailed
    from attnphase.numerics.parallel import map_in_order

    seen: list[float] = []
    assert map_in_order(exec_tasks.square, [3.0, 1.0, 2.0], workers=2, progress=seen.append) == [9.0, 1.0, 4.0]
    assert sorted(seen) == [1.0, 4.0, 9.0]
    with pytest.raises(TaskFailed, match="1 of 4 tasks failed; first: ArithmeticError: no square of 3 today"):
        map_in_order(exec_tasks.square_or_raise, [1, 2, 3, 4])


def test_worker_env_gives_each_worker_up_to_twice_its_share_of_the_cores() -> None:
    """Compiled threads per local worker: min(cores, 2 * max(1, cores // workers)), waiting passively;
    BLAS and the rest stay on one thread."""
    from attnphase.execution.executor import WORKER_ENV, worker_env

    for workers, cores, threads in ((2, 2, 2), (1, 1, 1), (16, 16, 2), (4, 16, 8), (8, 2, 2), (3, 8, 4)):
        env = worker_env(workers, cores)
        assert env["NUMBA_NUM_THREADS"] == str(threads), (workers, cores)
        assert env["OMP_WAIT_POLICY"] == "PASSIVE"
        assert {k: env[k] for k in WORKER_ENV if k != "NUMBA_NUM_THREADS"} == {
            k: v for k, v in WORKER_ENV.items() if k != "NUMBA_NUM_THREADS"}


def test_prepare_runs_once_before_a_local_clusters_tasks_and_not_when_nothing_is_computed(tmp_path) -> None:
    marker = tmp_path / "prepared"
    calls: list[int] = []

    def prepare() -> None:
        calls.append(1)
        marker.write_text("ready")

    tasks = [Task(key=task_key(exec_tasks.square_if_prepared, {"x": x}, "test"), label=f"x={x}",
                  fn=exec_tasks.square_if_prepared, arg=(str(marker), x)) for x in (1.0, 2.0, 3.0)]
    store = ResultStore(tmp_path / "tasks")
    outs = run_tasks(tasks, executor=ExecutorSpec(workers=2), store=store, prepare=prepare)
    assert [o.value for o in outs] == [1.0, 4.0, 9.0] and len(calls) == 1
    assert [o.status for o in run_tasks(tasks, executor=ExecutorSpec(workers=2), store=store, prepare=prepare)] == \
        ["stored"] * 3 and len(calls) == 1  # every task stored: nothing to prepare
    marker.unlink()
    in_process = run_tasks(tasks[:1], executor=ExecutorSpec(workers=1), prepare=prepare)
    assert in_process[0].status == "failed" and len(calls) == 1  # in this process: no prepare (the task loads it)


def _worker_settings(dask_worker) -> tuple[bool, str | None, str | None]:
    import os

    return "profile" in dask_worker.periodic_callbacks, os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get(
        "NUMBA_NUM_THREADS")


def test_a_local_clusters_workers_run_without_the_profiler_and_the_malloc_trim_threshold(monkeypatch) -> None:
    """dask_client's workers: no statistical profiler and glibc's own malloc thresholds (Dask's defaults, a
    profile every 10 ms and MALLOC_TRIM_THRESHOLD_=65536, cost CPU and page faults: CLUSTER_CONFIG), with the
    threads of worker_env."""
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)  # a cluster started earlier in this process sets it
    with dask_client(ExecutorSpec(workers=2), 2) as client:
        settings = client.run(_worker_settings)
    assert len(settings) == 2
    from attnphase.execution.executor import usable_cores, worker_env

    assert set(settings.values()) == {(False, None, worker_env(2, usable_cores())["NUMBA_NUM_THREADS"])}


@pytest.mark.parametrize("workers", [0, -1, 1.5, True])
def test_an_executor_of_no_workers_is_refused(workers) -> None:
    """map_tasks(workers=0) started a one-worker local cluster where the commands refuse --workers 0."""
    from attnphase.execution import map_tasks

    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        map_tasks(abs, [-1, -2], workers=workers)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the tracker's signal mask from /proc")
def test_the_resource_tracker_a_local_cluster_uses_ignores_a_hang_up() -> None:
    """A SIGHUP to the whole process group (a closed terminal) killed multiprocessing's resource tracker, and its
    relaunch printed a warning and up to 48 lines of tracebacks around 'attnphase: terminated (SIGHUP)'.  Started by
    start_resource_tracker, the tracker ignores SIGHUP, and the calling process keeps its own handler."""
    import subprocess

    script = (
        "import signal\n"
        "from multiprocessing import resource_tracker\n"
        "from attnphase.execution.executor import start_resource_tracker\n"
        "signal.signal(signal.SIGHUP, signal.default_int_handler)\n"
        "start_resource_tracker()\n"
        "pid = resource_tracker._resource_tracker._pid\n"
        "mask = int(next(l for l in open(f'/proc/{pid}/status') if l.startswith('SigIgn')).split()[1], 16)\n"
        "print(bool(mask >> (signal.SIGHUP - 1) & 1), signal.getsignal(signal.SIGHUP) is signal.default_int_handler)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]


def test_a_remote_schedulers_client_logs_only_critical_records_while_the_job_runs(cluster_address) -> None:
    """A scheduler killed mid-run made distributed's client log 30 lines of chained tracebacks before the job's
    one-line SchedulerLost summary: while connected, those loggers print CRITICAL records only, and after it as
    before."""
    import logging

    from attnphase.execution.executor import CLIENT_LOGGERS, dask_client

    before = [logging.getLogger(name).level for name in CLIENT_LOGGERS]
    with dask_client(ExecutorSpec(scheduler=cluster_address), 1):
        assert all(logging.getLogger(name).level == logging.CRITICAL for name in CLIENT_LOGGERS)
        assert not logging.getLogger("distributed.client").isEnabledFor(logging.ERROR)
    assert [logging.getLogger(name).level for name in CLIENT_LOGGERS] == before


def test_task_files_are_ordinary_files_of_the_umask(tmp_path) -> None:
    """Every task file was private (0600, mkstemp's), where the job's other outputs follow the umask: a store copied
    or shared to resume elsewhere could not be read by the group."""
    from attnphase.execution.outputs import UMASK

    store = ResultStore(tmp_path)
    store.save(Outcome(key="k1", label="x", status="done", value=1))
    assert (store.path("k1").stat().st_mode & 0o777) == 0o666 & ~UMASK
    assert store.load("k1").value == 1
