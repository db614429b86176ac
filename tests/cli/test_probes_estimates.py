"""Probes of the estimates the long jobs announce: are they of the right size?  (That they are announced at all is
``test_probes_execution.py``'s ``test_long_commands_announce_an_estimate_before_they_start``.)

The Bayes-optimal jobs (``sweep`` / ``phase-diagram --estimator bayes-optimal``) announce an estimate from
``attnphase/workload.py``'s ``bayes_task_seconds`` and ``BAYES_COMMAND_SECONDS``: CPU seconds of the 2-core reference
machine.  How far they are from a given machine's is a benchmark's question (``benchmarks/workload_calibration.py --only
bayes`` re-measures them and prints its machine's ratio to them); a slower machine takes longer, so these tests compare
the code with itself: the law's shape on this machine, and the announcement's terms.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

import numpy as np
import pytest

from attnphase import workload

FACTOR = 2.0


def _task_cpu(p, alphas) -> float:
    from attnphase.numerics.jobs.tasks import bayes_sweep_job

    runs = []
    for _ in range(2):
        c0 = time.process_time()
        bayes_sweep_job((p, alphas, "uninformative"))
        runs.append(time.process_time() - c0)
    return min(runs)


@pytest.mark.heavy
def test_a_bayes_task_grows_with_its_alphas_as_the_estimate_says():
    """One task of ``sweep --estimator bayes-optimal`` at L = 3 on 1 and on 21 alphas of 0.05-1.5 (the grids that
    calibrate it: a point's cost falls with alpha, 0.05 costs about 3x 1.0), in this process: the ratio of their CPU
    times is the estimate's (fixed part + per alpha) within 2x, whatever this machine's speed.  A per-alpha term 10x
    off moves the estimated ratio from 2.6 to 10."""
    from attnphase.numerics.jobs.tasks import bayes_sweep_job
    from attnphase.theory import ModelParams

    p = ModelParams(omega=0.3, L=3)
    bayes_sweep_job((p, [1.0], "informative"))  # the first calls (imports, the rules' nodes): the command's own part
    one, many = ([float(a) for a in np.linspace(0.05, 1.5, n)] for n in (1, 21))
    measured = _task_cpu(p, many) / _task_cpu(p, one)
    stated = workload.bayes_task_seconds(len(many), 3) / workload.bayes_task_seconds(len(one), 3)
    assert stated / FACTOR <= measured <= stated * FACTOR, (measured, stated)


def test_bayes_sweep_announces_its_tasks_and_own_part_before_the_work(monkeypatch, tmp_path):
    """The announced estimate is the command's own part plus one task per branch, each of the alpha grid's size (caught
    in this process); and, the whole command in a child process, the announcement comes before the first line the job
    writes."""
    import pytest

    from attnphase.cli import main

    seen = {}
    real = workload.announce_tasks

    def record(what, tasks, workers, basis, **kwargs):
        seen.update(tasks=list(tasks), own=kwargs.get("own"))
        return real(what, tasks, workers, basis, **kwargs)

    monkeypatch.setattr(workload, "announce_tasks", record)
    assert main(["sweep", "--estimator", "bayes-optimal", "--L", "3", "--alpha", "0.2:1:5", "--workers", "1",
                 "--quiet", "--out", str(tmp_path / "in")]) == 0
    assert seen == {"tasks": [pytest.approx(workload.bayes_task_seconds(5, 3))] * 2,
                    "own": workload.BAYES_COMMAND_SECONDS}
    run = subprocess.run([sys.executable, "-m", "attnphase", "sweep", "--estimator", "bayes-optimal", "--alpha",
                          "0.2:1:5", "--workers", "1", "--out", str(tmp_path / "o")], capture_output=True, text=True,
                         timeout=240)
    assert run.returncode == 0, run.stderr
    assert re.search(r"Bayes-optimal sweep of 5 alpha values, 2 branches: 2 tasks, about .*? CPU s in all", run.stderr)
    assert run.stderr.index("Bayes-optimal sweep of") < run.stderr.index("wrote 10 rows")


def test_a_sweep_announces_a_per_point_cost_that_adds_up_to_its_total(monkeypatch, tmp_path):
    """At L = 3 the per-point figure and the task's total come from one law (``workload.sweep_point_seconds``, the
    branch's measured cost scaled like a solve): the announced total is the per-point cost times the points, and a
    positional point is announced dearer than a semantic one.  The announcement is caught before any solve runs."""
    import pytest

    from attnphase.cli import main
    from attnphase.numerics.config import SolverConfig

    class Announced(Exception):
        pass

    seen = {}

    def catch(what, tasks, workers, basis, **kwargs):
        seen.update(tasks=tasks, basis=basis, cores=kwargs.get("cores", 0))
        raise Announced

    monkeypatch.setattr(workload, "announce_tasks", catch)
    alphas = "0.5:1.5:5"
    per = {}
    for branch in ("semantic", "positional"):
        with pytest.raises(Announced):
            main(["sweep", "--L", "3", "--omega", "0.3", "--alpha", alphas, "--branch", branch, "--error-estimate",
                  "0", "--out", str(tmp_path), "--quiet"])
        per[branch] = float(re.search(r"~([0-9.e+-]+) CPU s per point", seen["basis"]).group(1))
        each = workload.sweep_point_seconds(branch, 3, SolverConfig())
        assert per[branch] == pytest.approx(each, rel=0.05) and seen["tasks"] == [pytest.approx(5 * each)]
    assert per["positional"] > 1.5 * per["semantic"]
    # one omega runs in this process on every core (announced on cores), several on the workers
    from attnphase.execution.executor import usable_cores

    assert seen["cores"] == usable_cores()
    with pytest.raises(Announced):
        main(["sweep", "--L", "3", "--omega", "0.2,0.3", "--alpha", alphas, "--error-estimate", "0", "--out",
              str(tmp_path), "--quiet"])
    assert seen["cores"] == 0 and len(seen["tasks"]) == 2
