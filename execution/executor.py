"""Run a job's tasks: the stored ones are read back, the rest computed, each result stored as it lands.

In this process, on a local Dask cluster started for the job, or on an existing one (:class:`ExecutorSpec`,
docs/distributed.md). A task that raises is recorded as failed and the job goes on; every task runs BLAS on
one thread, so its numbers do not depend on where it runs. Ctrl-C and SIGTERM close the cluster and re-raise.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from attnphase import interrupts, work
from attnphase.execution.store import Outcome, ResultStore
from attnphase.execution.tasks import Task

#: OpenMP settings of every process that runs tasks, where not set already (a command's own process:
#: :func:`attnphase.cli.main`; a local worker: :func:`worker_env`): the compiled loops' threads sleep between parallel
#: regions instead of spinning (read when the runtime loads) -- the same results and wall time, 20 % less CPU for
#: `phase-diagram --rank 2 --omega 0.1` in one process, 14 % for a solve (docs/method.md section 10;
#: ``OMP_WAIT_POLICY=`` gives the runtime's default).
THREAD_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}

#: The environment of every local worker process (set before it imports numba or numpy).
WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

#: The Dask settings of a local cluster (set here: the nanny hands the worker its own configuration): no
#: statistical profiler; no ``MALLOC_TRIM_THRESHOLD_`` (setting it at all turns off glibc's dynamic mmap
#: threshold, so every large array is a fresh mmap the kernel zeroes); slower health checks and monitors.
#: None of them changes what a task computes.
CLUSTER_CONFIG: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    "distributed.admin.tick.interval": "500ms",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "1s",
}


#: Run in each local worker process as it starts: SIGINT ignored there (the command stops the cluster on a Ctrl-C).
WORKER_PRELOAD = "attnphase.execution.worker_signals"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the system has one; macOS has none)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def worker_env(workers: int, cores: int) -> dict[str, str]:
    """WORKER_ENV with min(cores, 2 * max(1, cores // workers)) compiled threads that wait passively: the last
    tasks' loops use the cores the finished workers left (a node's result does not depend on it)."""
    threads = min(max(1, cores), 2 * max(1, cores // max(1, workers)))
    return WORKER_ENV | THREAD_ENV | {"NUMBA_NUM_THREADS": str(threads)}


@dataclass(frozen=True)
class ExecutorSpec:
    """Where tasks run: ``workers`` local processes (1: this process) or the Dask ``scheduler`` at an address;
    ``allowed_failures``: worker deaths in one task before it fails; ``connect_timeout``, ``worker_timeout``:
    seconds to reach ``scheduler`` and to wait while it has no worker (checked where the options are read:
    :func:`attnphase.execution_options.executor_from_args`)."""

    workers: int = 1
    scheduler: str | None = None
    allowed_failures: int = 3
    connect_timeout: float = 10.0
    worker_timeout: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {self.workers!r}")

    @property
    def in_process(self) -> bool:
        return self.scheduler is None and self.workers == 1


class SchedulerUnavailable(ValueError):
    """``--scheduler`` names no usable Dask scheduler (unreachable, not a scheduler, no worker joined): bad input,
    a one-line error with exit code 2 even when found after the command's checks (``input_error``)."""

    input_error = True


class TaskFailed(RuntimeError):
    """A task of a job that must not fail (:func:`map_tasks`) failed; the message is its error."""


class Progress:
    """What :func:`run_tasks` reports (the default reports nothing); see :mod:`attnphase.execution.progress`."""

    def start(self, total: int, stored: int, corrupted: int) -> None: ...
    def running(self, n: int) -> None: ...
    def finished(self, outcome: Outcome) -> None: ...
    def note(self, text: str) -> None: ...


def call_task(fn: Callable[[Any], Any], arg: Any) -> tuple[str, Any, str, float, work.Notes]:
    """``fn(arg)`` as (status, value, error, seconds, notes); an Exception becomes status "failed" with its
    traceback; its warnings are collected as one-line notes (:func:`attnphase.work.warnings_as_notes`) for the
    command's process to say, each distinct one once over all tasks (:func:`attnphase.work.add_notes`)."""
    t0 = time.perf_counter()
    notes = work.Notes()
    try:
        with work.warnings_as_notes(into=notes):
            value = fn(arg)
    except Exception as exc:  # noqa: BLE001 - recorded, the job goes on
        error = f"{type(exc).__name__}: {' '.join(str(exc).split())}\n{traceback.format_exc()}"
        return "failed", None, error, time.perf_counter() - t0, notes
    return "done", value, "", time.perf_counter() - t0, notes


def run_tasks(tasks: Sequence[Task], *, executor: ExecutorSpec = ExecutorSpec(), store: ResultStore | None = None,
              fresh: bool = False, version: str = "", progress: Progress | None = None,
              prepare: Callable[[], None] | None = None) -> list[Outcome]:
    """One :class:`Outcome` per task, in order: read from ``store`` where it holds the task as done
    (unless ``fresh``), computed on ``executor`` otherwise and written to ``store`` as each finishes
    (failed tasks too, with their error; a rerun computes them again).  ``version``: written beside
    each record (the code version of the keys).  ``prepare``: called once here before the tasks start on a local
    cluster (code generation and JIT compilation the workers then read from a disk cache), not where every task
    is stored, they run in this process, or on a remote scheduler (its workers have their own disks)."""
    if len({t.key for t in tasks}) != len(tasks):
        raise ValueError("run_tasks: two tasks share a key")
    progress = progress or Progress()
    stored = [None if (fresh or store is None) else store.load(t.key) for t in tasks]
    out = [Outcome(t.key, t.label, "stored", rec.value, "", rec.seconds) if rec is not None and rec.status == "done"
           else None for t, rec in zip(tasks, stored)]
    todo = [i for i, o in enumerate(out) if o is None]
    progress.start(len(tasks), len(tasks) - len(todo), len(store.corrupted) if store else 0)

    def record(i: int, status: str, value: Any, error: str, seconds: float, notes: work.Notes | None = None) -> None:
        if notes is not None:
            work.add_notes(notes)
        out[i] = Outcome(tasks[i].key, tasks[i].label, status, value, error, seconds)
        if store is not None:
            store.save(out[i], version)
        progress.finished(out[i])

    if todo and (executor.in_process or (executor.scheduler is None and len(todo) == 1)):  # no cluster for one task
        from threadpoolctl import threadpool_limits

        # one BLAS thread, as on a worker: a multi-threaded BLAS sums in another order
        with threadpool_limits(limits=1, user_api="blas"):
            for i in todo:
                progress.running(1)
                record(i, *call_task(tasks[i].fn, tasks[i].arg))
        progress.running(0)
    elif todo:
        if prepare is not None and executor.scheduler is None:
            prepare()
        _run_on_dask(tasks, todo, executor, record, progress)
    return [o for o in out if o is not None]


#: Seconds between two looks at a remote cluster's workers while the job waits for its tasks.
POLL_SECONDS = 2.0


def _run_on_dask(tasks: Sequence[Task], todo: list[int], executor: ExecutorSpec,
                 record: Callable[..., None], progress: Progress) -> None:
    from distributed import wait

    with dask_client(executor, len(todo), progress.note) as client:
        futures = {client.submit(call_task, tasks[i].fn, tasks[i].arg, key=f"attnphase-{tasks[i].key}",
                                 pure=False): i for i in todo}
        slots = max(1, sum(client.nthreads().values()))
        pending = set(futures)
        progress.running(min(len(pending), slots))

        def fail_pending(reason: str, cancel: bool) -> None:
            for fut in list(pending):
                if cancel:
                    fut.cancel()
                record(futures.pop(fut), "failed", None, reason, 0.0)
            pending.clear()
            progress.running(0)

        alone_since: float | None = None  # since when a remote scheduler has had no worker
        while pending:
            try:
                done = wait(pending, timeout=POLL_SECONDS, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                done = set()
            except Exception as exc:  # noqa: BLE001 - the scheduler went away: every unfinished task fails
                text = " ".join(str(exc).split())
                fail_pending(f"SchedulerLost: the connection to the scheduler {executor.scheduler or '(local)'} was "
                             f"lost; the task did not finish" if "connection" in text.lower() else
                             f"{type(exc).__name__}: {' '.join(text.split()[:12])}", cancel=False)
                break
            for fut in done:
                pending.discard(fut)
                i = futures.pop(fut)
                try:
                    result = fut.result()
                except Exception as exc:  # noqa: BLE001 - KilledWorker (died allowed_failures times), lost worker
                    result = ("failed", None, f"{type(exc).__name__}: {' '.join(str(exc).split())}", 0.0)
                fut.release()
                progress.running(min(len(pending), slots))
                record(i, *result)
            if not pending or executor.scheduler is None:
                continue  # a local cluster's nanny replaces a dead worker
            alone_since = None if client.nthreads() else (alone_since or time.monotonic())
            if alone_since is not None and time.monotonic() - alone_since >= executor.worker_timeout:
                fail_pending(f"NoWorkers: the scheduler {executor.scheduler} has had no worker for "
                             f"{executor.worker_timeout:g} s; the task was not run", cancel=True)


#: distributed's loggers whose records a lost scheduler fills with chained tracebacks; the job's own summary says it
#: (SchedulerLost, one line per task).
CLIENT_LOGGERS = ("distributed.client", "distributed.core", "distributed.comm")


@contextlib.contextmanager
def quiet_client_logs() -> Iterator[None]:
    """While the block runs, :data:`CLIENT_LOGGERS` print CRITICAL records only (a scheduler killed mid-run printed
    30 lines of ConnectionRefusedError / CommClosedError / CancelledError tracebacks before the summary)."""
    loggers = [logging.getLogger(name) for name in CLIENT_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (the local cluster's semaphores register with it) with SIGHUP ignored,
    as it ignores SIGINT and SIGTERM itself.  A hang-up sent to the whole process group (a closed terminal, ``timeout
    -s HUP``) would kill it, and its relaunch prints a warning and a traceback per semaphore around the command's one
    line ``attnphase: terminated (SIGHUP)``.  An ignored signal stays ignored in the process it starts; a tracker
    already running is left as it is; elsewhere than in the main thread (where no signal can be set) nothing."""
    import signal
    from multiprocessing import resource_tracker

    hup = getattr(signal, "SIGHUP", None)
    if hup is None or threading.current_thread() is not threading.main_thread():
        return
    previous = signal.signal(hup, signal.SIG_IGN)
    try:
        resource_tracker.ensure_running()
    finally:
        signal.signal(hup, previous)


@contextlib.contextmanager
def dask_client(executor: ExecutorSpec, n_tasks: int, say: Callable[[str], None] = lambda s: None) -> Iterator[Any]:
    """A ``distributed.Client``: on the scheduler at ``executor.scheduler``, or on a local cluster of
    min(workers, n_tasks) one-thread processes that is closed on exit (Ctrl-C included)."""
    import dask
    from distributed import Client, LocalCluster

    if executor.scheduler is not None:
        with quiet_client_logs(), contextlib.closing(_connect(executor.scheduler, executor.connect_timeout)) as client:
            if not client.nthreads():
                say(f"Dask scheduler {executor.scheduler}: no worker yet; waiting up to {executor.worker_timeout:g} s "
                    f"for one (start some: dask worker {executor.scheduler})")
                try:
                    client.wait_for_workers(1, timeout=executor.worker_timeout)
                except TimeoutError:
                    raise SchedulerUnavailable(f"--scheduler {executor.scheduler}: no worker joined within "
                                     f"{executor.worker_timeout:g} s (start some: dask worker {executor.scheduler} "
                                     f"--nthreads 1; ATTNPHASE_WORKER_TIMEOUT sets the wait)") from None
            say(f"Dask scheduler {executor.scheduler}: {len(client.nthreads())} workers; dashboard "
                f"{client.dashboard_link}")
            yield client
        return
    n = max(1, min(executor.workers, n_tasks))
    start_resource_tracker()
    dashboard = ":0" if importlib.util.find_spec("bokeh") is not None else None  # a free port; bokeh serves it
    cluster = client = None
    try:
        # a signal while the cluster starts is raised once it has started, so that it is closed cleanly; the
        # workers' logs are silenced (a task's error comes back with its future)
        with interrupts.deferred():
            with dask.config.set(CLUSTER_CONFIG | {"distributed.scheduler.allowed-failures": executor.allowed_failures,
                                                   "distributed.worker.preload": [WORKER_PRELOAD]}):
                cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=dashboard, silence_logs=logging.CRITICAL,
                                       env=worker_env(n, usable_cores()))
            client = Client(cluster)
        link = client.dashboard_link if dashboard else "none (pip install bokeh)"
        say(f"local Dask cluster: {n} worker processes; dashboard {link}")
        yield client
    finally:
        with interrupts.deferred():
            for closable in (client, cluster):
                if closable is not None:
                    closable.close()


def _connect(address: str, timeout: float) -> Any:
    """A ``distributed.Client`` on the scheduler at ``address``, or a ValueError naming ``--scheduler`` when none
    answers within ``timeout`` seconds (Dask itself would wait for a silent server forever)."""
    from distributed import Client

    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = Client(address, timeout=f"{timeout}s")
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=connect, name="attnphase-connect", daemon=True)
    thread.start()
    thread.join(timeout + 5.0)
    if thread.is_alive():
        raise SchedulerUnavailable(f"--scheduler {address}: no Dask scheduler answered within {timeout:g} s (is it the address "
                         f"a Dask scheduler printed?)")
    error = box.get("error")
    if isinstance(error, (OSError, TimeoutError)):
        raise SchedulerUnavailable(f"--scheduler {address}: cannot connect ({' '.join(str(error).split())})") from None
    if isinstance(error, Exception):  # bytes that are not Dask's protocol: a huge frame size, a bad header
        first = (str(error).splitlines() or [""])[0][:160]
        raise SchedulerUnavailable(f"--scheduler {address}: what answers there is not a Dask scheduler (reading its "
                                   f"reply failed: {type(error).__name__}: {first}); give the address a Dask scheduler "
                                   "printed") from None
    if error is not None:
        raise error
    return box["client"]


def map_tasks(fn: Callable[[Any], Any], items: Sequence[Any], workers: int = 1,
              progress: Callable[[Any], None] | None = None) -> list[Any]:
    """``[fn(x) for x in items]`` through :func:`run_tasks` (no store): on ``workers`` local
    processes when > 1.  ``progress`` gets each value as it completes; a failed item raises
    :class:`TaskFailed` with its error once the others are done."""
    tasks = [Task(key=str(i), label=str(i), fn=fn, arg=x) for i, x in enumerate(items)]

    class _Each(Progress):
        def finished(self, outcome: Outcome) -> None:
            if progress is not None and outcome.ok:
                progress(outcome.value)

    outs = run_tasks(tasks, executor=ExecutorSpec(workers=workers), progress=_Each())
    failed = [o for o in outs if not o.ok]
    if failed:
        raise TaskFailed(f"{len(failed)} of {len(outs)} tasks failed; first: {failed[0].error}")
    return [o.value for o in outs]
