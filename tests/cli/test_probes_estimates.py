"""Probes of the estimates the long jobs announce: are they of the right size?  (That they are announced at all is
``test_probes_execution.py``'s ``test_long_commands_announce_an_estimate_before_they_start``.)

The Bayes-optimal jobs (``sweep`` / ``phase-diagram --estimator bayes-optimal``) ran as task jobs with no estimate;
they now announce one from ``attnphase/workload.py``'s ``bayes_task_seconds`` and ``BAYES_COMMAND_SECONDS``
(``benchmarks/workload_calibration.py --only bayes``).  CPU time, not wall time, is compared: the wall time of a
busy machine says nothing about the estimate.  The stated factor: within 2x either way.
"""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import time

from attnphase import workload

FACTOR = 2.0


def test_a_bayes_task_costs_what_the_estimate_says():
    """One task of ``sweep --estimator bayes-optimal`` at L = 3 (its fixed part and 6 points), in this process."""
    from attnphase.numerics.jobs.tasks import bayes_sweep_job
    from attnphase.theory import ModelParams

    p = ModelParams(omega=0.3, L=3)
    bayes_sweep_job((p, [1.0], "informative"))  # the first calls (imports, the rules' nodes): the command's own part
    alphas = [0.05, 0.2, 0.35, 0.5, 1.0, 1.5]
    c0 = time.process_time()
    bayes_sweep_job((p, alphas, "uninformative"))
    cpu = time.process_time() - c0
    est = workload.bayes_task_seconds(len(alphas), 3)
    assert est / FACTOR <= cpu <= est * FACTOR, (cpu, est)


def test_bayes_sweep_announces_its_cpu_time_within_the_stated_factor(tmp_path):
    """The whole command in a child process, one worker: the announced CPU seconds against its measured CPU (user +
    system).  Before: no announcement at all."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run([sys.executable, "-m", "attnphase", "sweep", "--estimator", "bayes-optimal", "--alpha",
                          "0.2:1:5", "--workers", "1", "--out", str(tmp_path / "o")], capture_output=True, text=True,
                         timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert run.returncode == 0, run.stderr
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    m = re.search(r"Bayes-optimal sweep of 5 alpha values, 2 branches: 2 tasks, about .*?\(([0-9.]+) CPU s in all",
                  run.stderr)
    assert m, run.stderr
    announced = float(m.group(1))
    assert announced / FACTOR <= cpu <= announced * FACTOR, (cpu, announced)
    # the announcement comes before the work: before the first line the job writes
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
