"""Benchmark of the execution layer (docs/distributed.md): speed-up, overhead per task, resume time.

    python benchmarks/bench_execution.py [--quick] [--out PATH]

1. ``attnphase phase-diagram --omega 0.1:0.4:7`` with ``--workers 1`` (in the command's process,
   whose compiled loops use both cores; and again on one numba thread, one core), on a local Dask
   cluster of one one-thread worker (``--scheduler``; its start not timed) and with ``--workers 2``
   (a local Dask cluster of 2 workers, its start included), each in a fresh process and a fresh
   ``--out``: wall times and the speed-ups (2 workers over the one-core process, and over one worker);
2. overhead of the layer per task: writing and reading back one real task record (pickle,
   checksum, fsync, rename) plus the round trip of an empty task on a local cluster of 2 workers
   (mean over 200), against the median task time; and the job's fixed cost (its wall time minus
   the sum of its tasks' own times: imports, tables, dataset, figures);
3. resume: the same command again on the finished folder (every task read back from the store):
   the process's wall time (start-up and imports included) and the job's own time
   (``seconds`` of phase_diagram.json: store, tables, dataset, figures).

``--quick``: cheap rules (sobol10 solves and bifurcations, no alpha_c correction, 5 alphas;
gh6, the tests' rule, fails at omega = 0.1 in bifurcation.branch_bifurcation), a few seconds per omega; without it, the paper's default settings (tens of seconds per
omega).  The machine's load average is recorded before and after (the numbers are only as good as
the idleness of the cores).  ``--out`` writes the numbers as JSON.

The results: docs/distributed.md, "Cost".
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUICK = ["--alpha", "0.6:2.2:5", "--quadrature", "sobol10", "--alpha-c-quadrature", "none",
         "--bifurcation-quadrature", "sobol10"]


def _run(argv: list[str], env: dict | None = None) -> tuple[float, dict]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "attnphase", *argv, "--json", "--quiet"], capture_output=True,
                          text=True, env=os.environ | {"ATTNPHASE_QUIET": "1"} | (env or {}))
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):  # 1: a task failed (recorded; the timing still holds)
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, json.loads(proc.stdout)


def _task_seconds(folder: Path) -> list[float]:
    from attnphase.execution.store import MAGIC

    out = []
    for p in folder.glob("*.task"):
        blob = p.read_bytes()[len(MAGIC):]
        out.append(pickle.loads(blob.partition(b"\n")[2])["seconds"])
    return out


def _store_cost(folder: Path, repeat: int = 5) -> tuple[float, int]:
    """Seconds to write (pickle, checksum, fsync, rename) and read back one real task record; its bytes."""
    from attnphase.execution.store import Outcome, ResultStore

    src = ResultStore(folder)
    key = src.keys()[0]
    rec = src.load(key)
    with tempfile.TemporaryDirectory() as tmp:
        dst = ResultStore(tmp)
        t0 = time.perf_counter()
        for i in range(repeat):
            dst.save(Outcome(f"{key}{i}", rec.label, rec.status, rec.value, rec.error, rec.seconds))
            dst.load(f"{key}{i}")
        return (time.perf_counter() - t0) / repeat, src.path(key).stat().st_size


def _empty_task_round_trip(n: int = 200) -> float:
    from attnphase.execution import ExecutorSpec, Task
    from attnphase.execution.executor import dask_client

    tasks = [Task(key=str(i), label=str(i), fn=abs, arg=-i) for i in range(n)]
    with dask_client(ExecutorSpec(workers=2), n) as client:
        from attnphase.execution.executor import call_task

        client.submit(call_task, abs, -1).result()  # workers warm
        t0 = time.perf_counter()
        futs = [client.submit(call_task, t.fn, t.arg, pure=False) for t in tasks]
        client.gather(futs)
        return (time.perf_counter() - t0) / n


def _on_one_dask_worker(argv: list[str]) -> tuple[float, dict]:
    """``argv`` sent with ``--scheduler`` to a local Dask cluster of one worker set up as the commands
    set up theirs, on one core (one compiled thread); the cluster's start is not in the wall time."""
    from distributed import LocalCluster

    from attnphase.execution.executor import worker_env

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, env=worker_env(1, 1)) as cluster:
        return _run([*argv, "--scheduler", cluster.scheduler_address])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    settings = QUICK if args.quick else []
    load0 = os.getloadavg()
    res: dict = {"quick": args.quick, "cores": len(os.sched_getaffinity(0)), "load_before": load0}
    with tempfile.TemporaryDirectory() as tmp:
        base = ["phase-diagram", "--omega", "0.1:0.4:7", *settings]
        w1, meta1 = _run([*base, "--workers", "1", "--out", f"{tmp}/w1"])
        tasks1 = _task_seconds(Path(tmp) / "w1" / "tasks")
        # --workers 1 runs in the command's process, whose compiled loops use every core: the same
        # on one core (one numba thread) is the baseline of the workers' scaling
        w1_one, _ = _run([*base, "--workers", "1", "--out", f"{tmp}/w1one"], {"NUMBA_NUM_THREADS": "1"})
        # the same layer on one worker: a local cluster of one one-thread worker (its start not timed)
        w1_dask, _ = _on_one_dask_worker([*base, "--out", f"{tmp}/w1dask"])
        w2, meta2 = _run([*base, "--workers", "2", "--out", f"{tmp}/w2"])
        same = meta1["rows"] == meta2["rows"]
        r_wall, r_meta = _run([*base, "--workers", "2", "--out", f"{tmp}/w2"])
        res |= {
            "wall_workers_1_s": w1, "wall_workers_2_s": w2, "speed_up": w1 / w2,
            "wall_workers_1_one_core_s": w1_one, "speed_up_over_one_core": w1_one / w2,
            "wall_one_dask_worker_s": w1_dask, "speed_up_over_one_dask_worker": w1_dask / w2,
            "job_seconds_workers_1": meta1["seconds"], "job_seconds_workers_2": meta2["seconds"],
            "same_rows_1_vs_2": same,
            "tasks": len(tasks1), "task_seconds_median": sorted(tasks1)[len(tasks1) // 2],
            "task_seconds_sum": sum(tasks1),
            "job_fixed_seconds_workers_1": meta1["seconds"] - sum(tasks1),
            "resume_wall_s": r_wall, "resume_job_seconds": r_meta["seconds"],
            "resume_tasks": r_meta["tasks"],
        }
        res["store_write_read_s"], res["task_file_bytes"] = _store_cost(Path(tmp) / "w1" / "tasks")
    res["dask_round_trip_per_empty_task_s"] = _empty_task_round_trip()
    res["overhead_per_task_s"] = res["store_write_read_s"] + res["dask_round_trip_per_empty_task_s"]
    res["overhead_per_task_fraction"] = res["overhead_per_task_s"] / res["task_seconds_median"]
    res["load_after"] = os.getloadavg()
    print(json.dumps(res, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
