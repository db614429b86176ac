"""The cost model of ``attnphase/workload.py``: its scaling laws and how the announcement adds up.

Its constants are measured (``benchmarks/workload_calibration.py``); a test against a measured run's CPU time
would be slow and noisy on a shared machine, so these tests check the properties every estimate relies on:
costs grow with the work (d, alpha, samples, epochs, alphas, rule nodes, L), scale by the stated laws, and the
wall time on W workers is the tasks' CPU time shared by the workers, never less than the longest task.
"""

from __future__ import annotations

import pytest

from attnphase import workload
from attnphase.numerics.config import SolverConfig


def test_simulation_cost_grows_as_alpha_d_squared_above_its_fixed_part():
    f = workload.SIMULATION_FIXED_SECONDS
    base = workload.simulation_seconds(200, 1.0)
    assert workload.simulation_seconds(400, 1.0) - f == pytest.approx(4 * (base - f))
    assert workload.simulation_seconds(200, 2.0) - f == pytest.approx(2 * (base - f))
    assert workload.simulation_seconds(1000, 2.0) == pytest.approx(f + workload.SIMULATION_SECONDS_D1000_ALPHA2)
    assert workload.simulation_seconds(20, 0.1) >= f > 0


def test_simulation_cost_depends_on_the_start_as_its_step_count_does():
    """Semantic starts take the fewest gradient steps, random ones the most (benchmarks/bench_gd.py): the cost
    model orders them alike, and an unknown start costs the law without a factor."""
    f = workload.SIMULATION_FIXED_SECONDS
    sem, pos, rnd = (workload.simulation_seconds(2000, 1.0, init) for init in ("semantic", "positional", "random"))
    assert f < sem < pos < rnd
    assert workload.simulation_seconds(2000, 1.0, "other") == workload.simulation_seconds(2000, 1.0)
    assert (rnd - f) / (sem - f) == pytest.approx(workload.SIMULATION_START_FACTORS["random"]
                                                  / workload.SIMULATION_START_FACTORS["semantic"])


def test_histogram_cost_grows_with_samples_and_epochs():
    one = workload.histogram_training_seconds(10_000, 20)
    assert workload.histogram_training_seconds(20_000, 20) > one
    assert workload.histogram_training_seconds(10_000, 40) > one
    per = workload.HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH
    assert (workload.histogram_training_seconds(10_000, 40) - one) == pytest.approx(per * 10_000 * 20)


def test_histogram_announcement_adds_the_trainings_and_the_commands_own_part(capsys):
    """The command's estimate is its 3 trainings and 2 re-parameterisations (each per sample-epoch) plus its own
    part (imports, report, figures): the part that a warm-up-free calibration and a per-training model left out."""
    from attnphase.validation.commands.histogram import _announce
    from attnphase.validation.histogram.experiment import HistogramConfig

    cfg = HistogramConfig.quick()
    train, reparam = workload.histogram_seconds(cfg.n_samples, cfg.epochs, cfg.reparam_epochs, 3, 2)
    assert len(train) == 3 and len(reparam) == 2
    per = workload.HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH
    assert sum(train) + sum(reparam) == pytest.approx(5 * workload.HISTOGRAM_FIXED_SECONDS
                                                      + per * cfg.n_samples * (3 * cfg.epochs + 2 * cfg.reparam_epochs))
    total = sum(train) + sum(reparam) + workload.HISTOGRAM_COMMAND_SECONDS
    _announce(cfg, 1, False)
    err = capsys.readouterr().err
    assert f"about {workload.format_duration(total)} on 1 worker ({workload.cpu_phrase(total)} in all" in err


@pytest.mark.parametrize("fn", [workload.boundaries_task_seconds, workload.matrix_boundaries_task_seconds])
def test_boundaries_cost_grows_with_the_alpha_grid_the_rule_and_L(fn):
    cfg = SolverConfig()
    base = fn(12, 2, cfg)
    assert fn(24, 2, cfg) > base > fn(6, 2, cfg) > 0
    assert fn(12, 3, cfg) == pytest.approx(4 * base)
    assert fn(12, 2, SolverConfig(quadrature="sobol14")) > base > fn(12, 2, SolverConfig(quadrature="sobol10"))


def test_diagram_tasks_one_per_omega_and_rule_and_the_curves_branch_once():
    cfg = SolverConfig()
    per = workload.boundaries_task_seconds(12, 2, cfg)
    tasks = workload.diagram_task_seconds(10, 12, 2, cfg)
    assert len(tasks) == 10 and tasks[1:] == [per] * 9
    assert tasks[0] - per == pytest.approx(workload.CURVES_BRANCH_SECONDS)
    assert len(workload.diagram_task_seconds(10, 12, 2, cfg, n_rules=3)) == 30
    assert workload.diagram_task_seconds(3, 12, 2, cfg, curves=False) == [per] * 3
    assert workload.diagram_task_seconds(1, 12, 3, cfg)[0] == pytest.approx(4 * tasks[0])


def test_the_commands_own_part_adds_to_the_wall_and_the_cpu_time(capsys):
    bare = workload.announce_tasks("job", [20.0] * 4, 1, "basis")
    own = workload.announce_tasks("job", [20.0] * 4, 1, "basis", own=30.0)
    assert own == pytest.approx(bare + 30.0)
    err = capsys.readouterr().err.splitlines()
    assert "about 80 s on 1 worker (80 CPU s in all" in err[0]
    assert "about 110 s on 1 worker (110 CPU s in all" in err[1]


def test_loops_on_every_core_divide_the_cpu_by_the_cores_they_keep_busy(capsys):
    """A task whose compiled loops use every core: its CPU over cores x core_use (one core: the CPU itself)."""
    assert workload.announce_tasks("job", [180.0], 1, "basis", cores=2, core_use=0.9) == pytest.approx(100.0)
    assert workload.announce_tasks("job", [180.0], 1, "basis", cores=2) == pytest.approx(90.0)
    assert workload.announce_tasks("job", [180.0], 1, "basis", cores=1, core_use=0.9) == pytest.approx(180.0)
    assert "about 100 s on 2 cores (3 CPU min in all" in capsys.readouterr().err.splitlines()[0]


def test_rank2_cost_is_its_censuses_and_its_solves():
    """One omega of the rank-2 search: censuses at the grid's ends and where the branches change (at most MAX_CENSUS),
    then solves along every branch at every grid point and between them: past MAX_CENSUS alphas each further alpha
    adds the branches' solves only, and the terms add up on the rule they were measured on."""
    from attnphase.numerics.phase.census_continuation import MAX_CENSUS

    cfg = SolverConfig(quadrature=workload.RANK2_RULE)
    fn = workload.matrix_boundaries_task_seconds
    per_alpha = workload.RANK2_SOLVES_PER_ALPHA * workload.RANK2_SOLVE_SECONDS
    assert fn(13, 2, cfg) - fn(12, 2, cfg) == pytest.approx(per_alpha)
    assert fn(2, 2, cfg) - fn(1, 2, cfg) == pytest.approx(per_alpha + workload.RANK2_CENSUS_SECONDS)
    assert fn(12, 2, cfg) == pytest.approx(MAX_CENSUS * workload.RANK2_CENSUS_SECONDS + workload.RANK2_SOLVE_SECONDS
                                           * (12 * workload.RANK2_SOLVES_PER_ALPHA + workload.RANK2_SOLVES_OFF_GRID))


def test_census_and_solve_costs_scale_with_the_rule():
    assert workload.census_seconds(2, SolverConfig()) == pytest.approx(workload.CENSUS_SECONDS)
    assert workload.census_seconds(2, SolverConfig(quadrature="sobol14")) > workload.CENSUS_SECONDS
    cfg = SolverConfig()
    assert workload.estimate_seconds(20, 2, cfg) == pytest.approx(2 * workload.estimate_seconds(10, 2, cfg))


def test_wall_time_shares_the_cpu_time_among_the_workers():
    tasks = [10.0] * 8
    assert workload.wall_seconds(tasks, 1) == pytest.approx(80.0)
    two, four = workload.wall_seconds(tasks, 2), workload.wall_seconds(tasks, 4)
    assert two == pytest.approx(40.0 + workload.CLUSTER_START_SECONDS)
    assert four < two < workload.wall_seconds(tasks, 1)
    # never less than the longest task, and more workers than tasks do not help
    assert workload.wall_seconds([100.0, 1.0], 8) >= 100.0
    assert workload.wall_seconds(tasks, 8) == workload.wall_seconds(tasks, 80)
    assert workload.wall_seconds([], 4) == 0.0


def test_announcement_states_the_wall_time_on_the_workers_and_the_cpu_time(capsys):
    t = workload.announce_tasks("job", [60.0] * 10, 2, "basis")
    err = capsys.readouterr().err
    assert t == pytest.approx(workload.wall_seconds([60.0] * 10, 2))
    cpu = 600.0 + workload.cluster_seconds(2, t)
    assert "10 tasks, about 5 min on 2 workers" in err and f"{workload.cpu_phrase(cpu)} in all" in err
    workload.announce_tasks("job", [60.0] * 10, 1, "basis")  # in this process: no cluster
    assert "10 CPU min in all" in capsys.readouterr().err
    workload.announce_tasks("job", [60.0] * 10, 2, "basis", quiet=True)
    assert capsys.readouterr().err == ""


def test_the_announcement_names_the_workers_the_job_starts_not_those_asked_for(capsys):
    """phase-diagram --omega 0.2,0.3 --workers 1000 said "about 26 s on 1000 workers", then started 2."""
    workload.announce_tasks("job", [30.0, 30.0], 1000, "basis")
    err = capsys.readouterr().err
    assert "2 tasks, about" in err and "on 2 workers (one per task)" in err
    workload.announce_tasks("job", [30.0, 30.0], 2, "basis")
    assert "on 2 workers (" in capsys.readouterr().err


def test_a_local_clusters_own_cpu_grows_with_its_workers_and_its_wall_time():
    """On several workers the job pays each worker's start and, per wall second, the cluster's event loops: on a
    busy machine (wall several times CPU) that is what made ``histogram --quick`` on 2 workers 2.5x its one-process
    CPU.  One worker runs in this process: nothing."""
    assert workload.cluster_seconds(1, 1000.0) == 0.0
    two = workload.cluster_seconds(2, 100.0)
    assert two == pytest.approx(2 * (workload.WORKER_START_SECONDS + 100 * workload.CLUSTER_SECONDS_PER_WALL_SECOND))
    assert workload.cluster_seconds(4, 100.0) == pytest.approx(2 * two)
    assert workload.cluster_seconds(2, 200.0) - two == pytest.approx(two - workload.cluster_seconds(2, 0.0))


@pytest.mark.parametrize("t,said", [(45, "45 s"), (600, "10 min"), (9000, "2.5 h")])
def test_format_duration(t, said):
    assert workload.format_duration(t) == said


def test_census_announces_the_measured_census_cost_on_this_machines_cores(monkeypatch):
    """``census`` at r = 1 says one census's measured CPU time, scaled to its rule, and its wall time on the cores."""
    from attnphase.execution import executor
    from attnphase.numerics.commands.census import _announcement
    from attnphase.theory.params import ModelParams

    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    said = _announcement(ModelParams(omega=0.3), 1.25, SolverConfig(), 0)
    wall = workload.CENSUS_SECONDS / (2 * workload.CENSUS_CORE_USE)
    assert f"about {workload.format_duration(wall)} on 2 cores" in said
    assert workload.cpu_phrase(workload.CENSUS_SECONDS) in said and "CPU s measured at the defaults" in said
    monkeypatch.setattr(executor, "usable_cores", lambda: 1)
    assert f"about {workload.format_duration(workload.CENSUS_SECONDS)} on 1 core " in _announcement(
        ModelParams(omega=0.3), 1.25, SolverConfig(), 0)


def test_rank2_census_announces_the_measured_census_cost_on_this_machines_cores(monkeypatch):
    """``census --rank 2`` says one census's measured CPU time, scaled to its rule, shared by the cores."""
    from attnphase.execution import executor
    from attnphase.numerics.commands.census import _announcement
    from attnphase.theory.params import ModelParams

    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    params = ModelParams(omega=0.1, r=2)
    said = _announcement(params, 0.5, SolverConfig(quadrature=workload.RANK2_RULE), 0)
    wall = workload.RANK2_CENSUS_COMMAND_SECONDS / (2 * workload.RANK2_CORE_USE)
    assert f"about {workload.format_duration(wall)} on 2 cores" in said
    assert workload.cpu_phrase(workload.RANK2_CENSUS_COMMAND_SECONDS) in said
    smaller = _announcement(params, 0.5, SolverConfig(quadrature="sobol8:4"), 0)
    cpu = workload.RANK2_CENSUS_COMMAND_SECONDS * workload.matrix_rule_factor(2, SolverConfig(quadrature="sobol8:4"))
    assert cpu < workload.RANK2_CENSUS_COMMAND_SECONDS / 2 and workload.cpu_phrase(cpu) in smaller


def test_validates_main_theory_task_is_estimated_at_its_omega():
    """``validate --quick --omega 0`` announced 16 CPU s per theory task; its main task took 176 CPU s (50 at omega =
    0.3, the others about 25 each)."""
    from attnphase import workload

    at = {w: workload.validate_theory_seconds(True, 7, w) for w in (0.0, 0.1, 0.3, 0.45)}
    assert all(len(t) == 7 and t[1:] == [workload.VALIDATE_THEORY_TASK_SECONDS["quick"]] * 6 for t in at.values())
    assert at[0.3][0] == at[0.45][0] == workload.VALIDATE_MAIN_THEORY_SECONDS["quick"]
    assert 3.2 < at[0.0][0] / at[0.3][0] < 3.8 and 2.0 < at[0.1][0] / at[0.3][0] < 2.6  # measured: 3.5, 2.4
    assert workload.validate_theory_seconds(False, 12, 0.3)[0] > at[0.3][0] and workload.validate_theory_seconds(
        True, 0, 0.3) == []
