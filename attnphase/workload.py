"""How much work a command's grid is: the grid limits past which ``--large`` is needed (:func:`check_grid`,
:func:`check_simulations`), and the time estimates announced before a long job (:func:`announce_tasks`,
:func:`announce_rules`) from the measured per-task CPU costs below. Imports the standard library and
:mod:`attnphase.solver_options` only.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Sequence

from attnphase.solver_options import SOLVER_DEFAULTS, SOLVER_OPTIONS

#: Grids past these sizes need ``--large`` (a rough second per solve at L = 2 on 2^12 nodes, 2 cores).
MAX_SWEEP_POINTS = 500
MAX_DIAGRAM_POINTS = 1000
#: ``validate`` past this many simulations needs ``--large`` (the quick plan has 194, the full one 528).
MAX_SIMULATIONS = 1000
#: Rough wall time of one state-evolution solve at L = 2 on 2^12 nodes (the default sobol10:4), 2 cores (measured).
SECONDS_PER_SOLVE = 0.4


def _nodes(L: int, spec: str) -> int:
    from attnphase.numerics.quadrature.rules import rule_nodes  # numpy: imported once a command estimates

    return rule_nodes(L, spec)


def check_grid(n: int, limit: int, what: str, option: str, large: bool, seconds: float | None = None,
               basis: str = "at L = 2 on the default rule's 2^12 nodes, 2 cores") -> None:
    """A grid of ``n`` solves: past ``limit`` a ValueError unless ``--large`` was given, quoting ``seconds`` (default
    n x :data:`SECONDS_PER_SOLVE`, the ERM solve's) measured as ``basis`` says."""
    if n > limit and not large:
        t = n * SECONDS_PER_SOLVE if seconds is None else seconds
        span = f"{t / 3600:.0f} h" if t >= 7200 else f"{t / 60:.0f} min" if t >= 120 else f"{t:.0f} s"
        raise ValueError(f"{option}: {n} {what} is more than {limit} (roughly {span} or more {basis}); pass --large "
                         "to run it anyway")


def estimate_seconds(n_solves: int, L: int, config: Any) -> float:
    """A rough CPU time of ``n_solves`` solves: scales with the solve rule's node count."""
    return n_solves * SECONDS_PER_SOLVE * _nodes(L, config.quadrature) / 2 ** 12 * (4 ** (L - 2))


#: ``sweep``: CPU s per point at L = 2 on the default rules, by branch (a warm solve with its error bar):
#: ``/usr/bin/time attnphase sweep --omega W --alpha 0.8:2.4:40 --branch B --workers 1 --fresh`` on 2 idle cores at
#: W = 0.1, 0.2, 0.3, less :data:`JOB_COMMAND_SECONDS`, over its 40 points: semantic 0.22, 0.22, 0.24, positional
#: 0.45, 0.37, 0.49 (their means); another branch takes :data:`SECONDS_PER_SOLVE`.
SWEEP_POINT_SECONDS = {"semantic": 0.23, "positional": 0.43}
#: The share of each core a one-omega sweep keeps busy (it runs in the command's process, its compiled loops on every
#: core): the same runs, 1.82-1.87 CPU s per wall second on 2 cores.
SWEEP_CORE_USE = 0.92


def sweep_point_seconds(branch: str, L: int, config: Any) -> float:
    """CPU seconds of one sweep point on ``branch``: :data:`SWEEP_POINT_SECONDS`, scaled as :func:`estimate_seconds`
    scales a solve."""
    return estimate_seconds(1, L, config) * SWEEP_POINT_SECONDS.get(branch, SECONDS_PER_SOLVE) / SECONDS_PER_SOLVE


# --- per-task costs (CPU seconds of one task on one core of the 2-core reference machine; each measured by the
# command named, ``benchmarks/workload_calibration.py --only X`` unless said; a busy machine runs over them) -----

#: ``phase-diagram`` / ``scan``: the boundaries at one omega, 12 alphas, the default rules, L = 2 (``--only
#: boundaries`` at omega 0, 0.15, 0.3, 0.45 on 2 idle cores: 22.5, 20.2, 15.4, 24.3 CPU s, their mean).
BOUNDARIES_TASK_SECONDS = 20.6
#: ``phase-diagram``: the task at the curves' omega also follows the whole positional branch for the curves'
#: figure (``--only boundaries`` at omega 0.3: 25.1 CPU s with it against 15.4 without).
CURVES_BRANCH_SECONDS = 9.7
#: A job command's own part besides its tasks (imports, kernels, outputs): ``/usr/bin/time attnphase phase-diagram
#: --omega 0.3 --workers 1 --fresh``: 41.5 CPU s, its one task alone 36.1.
JOB_COMMAND_SECONDS = 5.5
#: ``phase-diagram --rank 2``: one omega is a census-driven search (numerics/phase/census_continuation.py) costing
#: min(alphas, MAX_CENSUS) censuses + (``RANK2_SOLVES_PER_ALPHA`` x alphas + ``RANK2_SOLVES_OFF_GRID``) solves
#: (:func:`matrix_boundaries_task_seconds`), each term printed by ``--only rank2`` (r = 2, r* = 1, omega 0.3, the
#: default grid on :data:`RANK2_RULE`); re-measure after a change of the search.
RANK2_RULE = "sobol10:4"
#: CPU grows as (the rule's nodes)^RANK2_RULE_EXPONENT: ``phase-diagram --rank 2 --omega 0.1,0.3 --quadrature
#: sobol8:4 --workers 2 --fresh``: 159 and 141 CPU s (the notes' ``work:`` lines), against 479 and 603 on sobol10:4
#: (4x the nodes; below): 4^0.79 and 4^1.05, 4^0.92 over both.
RANK2_RULE_EXPONENT = 0.9
#: One census of the search: ``--only rank2`` (omega 0.3, the default grid: 4 censuses 188.9 CPU s, 93 solves at the
#: grid's points and 57 off it 321.3, the rest 92.5 spread over the solves: 47.2 and 2.76 CPU s), scaled by 0.551
#: (with RANK2_SOLVE_SECONDS) to 332 CPU s, the mean of ``/usr/bin/time attnphase phase-diagram --rank 2 --omega W
#: --fresh`` on 2 idle cores at W = 0.1 and 0.3: 310 and 354 CPU s (157 and 180 s wall; the notes' ``work:`` lines:
#: 4 censuses 145 and 144 CPU s, 111 and 119 solves 155 and 199, block re-solves 8 and 9): each omega within 7 %.
RANK2_CENSUS_SECONDS = 26.0
#: The ``census --rank 2`` command (its census, every point's error bars and stability, the outputs):
#: ``census --rank 2 --teacher-rank 1 --omega 0.1 --alpha A`` under ``/usr/bin/time`` at A = 0.6, 0.7, 0.8, 0.9
#: on 2 idle cores: 64, 73, 57 and 66 CPU s, their mean.
RANK2_CENSUS_COMMAND_SECONDS = 65.0
#: One solve along a branch: the same fit, 2.76 CPU s, scaled by 0.551.
RANK2_SOLVE_SECONDS = 1.52
#: The share of each core a rank-r task's compiled loops keep busy when the task has the machine to itself: the
#: same command took 157 s wall for its 310 CPU s on 2 cores, less :data:`JOB_COMMAND_SECONDS`.
RANK2_CORE_USE = 0.97
#: Solves at the grid's points per grid point (the branches the search finds): the same fit, 93 at its 12 points.
RANK2_SOLVES_PER_ALPHA = 7.75
#: Solves between the grid's points per omega (the ends' bisections and the boundaries' root searches, their points
#: out of a warm start's reach solved after one half-way): the same fit.
RANK2_SOLVES_OFF_GRID = 57.0
#: ``census`` at the defaults, L = 2: ``census --alpha 1.25 --omega 0.3`` under ``/usr/bin/time`` on 2 idle cores:
#: 31.3, 31.1 and 31.2 CPU s (user and system), 16.7, 16.3 and 16.4 s wall.
CENSUS_SECONDS = 31.2
#: The share of each core the census keeps busy: the same runs, 31.2 CPU s in 16.5 s on 2 cores.
CENSUS_CORE_USE = 0.95
#: ``validate``'s theory tasks at omega = 0.3, CPU s by plan: the main one (the alpha sweep's omega: its boundaries, the
#: other maps' curves, the error bars) and each other omega's (the heat map's and the alpha_c curve's), from the
#: summary.json of docs/data/validate_quick_d2000 (main 51.3, the 6 others 150 together) and validate_d2000 (104.6,
#: the 11 others 297).
VALIDATE_MAIN_THEORY_SECONDS = {"quick": 51.3, "full": 104.6}
VALIDATE_THEORY_TASK_SECONDS = {"quick": 25.0, "full": 27.0}
#: The main theory task's cost grows as exp(rate (0.3 - omega)) below omega = 0.3 (the positional ends and the aligned
#: curves): its quick plan's task on 2 cores, one at a time, 176, 119, 81 and 50 CPU s at omega = 0, 0.1, 0.2, 0.3
#: (the fit: 3.5x at omega = 0).
VALIDATE_SMALL_OMEGA_RATE = 4.2
#: ``validate``: one simulation at d = 1000, alpha = 2, one torch thread: the least-squares fit of
#: ``SIMULATION_FIXED_SECONDS + this * (alpha / 2) (d / 1000)^2`` to 18 runs of ``--only sim`` (a simulation's cost
#: grows as n d = alpha d^2).
SIMULATION_SECONDS_D1000_ALPHA2 = 2.5
#: What a small simulation costs whatever its size: the same fit.
SIMULATION_FIXED_SECONDS = 0.1
#: The start drives the step count: per start, the measured CPU over the law above in ``validate --quick --d 2000
#: --workers 1`` (semantic 276 CPU s against 321, positional 468 against 294, random 275 against 127); others 1.
SIMULATION_START_FACTORS = {"semantic": 0.86, "positional": 1.6, "random": 2.2}
#: ``histogram``: CPU s per sample and epoch of a training (``n_samples`` counts the validation fifth too):
#: ``--only histogram`` (2000 samples at 2, 4 and 6 epochs, after a warm-up run).
HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH = 8.7e-5
#: ``histogram``: what a training costs whatever its length: the same fit's intercept.
HISTOGRAM_FIXED_SECONDS = 0.06
#: ``histogram``: the command's own part: ``histogram --quick --workers 1`` rerun into its ``--out`` (every task
#: stored): 6.9 CPU s.
HISTOGRAM_COMMAND_SECONDS = 7.0
#: ``validate --suite general --quick --workers 2``: 458 s wall on 2 cores (docs/validation.md); the full suite's
#: cases (d) and (e) at d = 1000 (``--cases d,e --workers 2``): 487 s wall (899 CPU s; its simulations 345 s wall, its
#: theory, the global- and the aligned-prox rank-r points, the rest: 142 s).
GENERAL_QUICK_SUITE_SECONDS = 458.0
GENERAL_FULL_DE_SECONDS = 487.0
#: ``validate --suite general --cases d,e --d 2000 --workers 2``: 2028 s wall on 2 cores (3460 CPU s; its two runs
#: near a plateau on their 20000-step budget, 12 min each), above the d^2 scaling of the d = 1000 time: its
#: simulations 1782 s wall; its theory (the global- and the aligned-prox rank-r points, the same tasks at every d)
#: 142 s, measured in the d = 1000 run above (wall_seconds - simulation_seconds of its summary.json).
GENERAL_D2000_DE_THEORY_SECONDS = 142.0
GENERAL_D2000_DE_SIMULATION_SECONDS = 1782.0
#: ``validate --suite general --cases a,b,c --d 2000 --workers 2``: 773 s wall on 2 cores (1466 CPU s): its theory,
#: the L = 3 aligned-prox solves foremost, 623 s wall, which does not grow with d; its simulations 150 s.
GENERAL_D2000_ABC_THEORY_SECONDS = 623.0
GENERAL_D2000_ABC_SIMULATION_SECONDS = 150.0
#: Starting a local Dask cluster and importing the numerics in its workers (wall seconds).
CLUSTER_START_SECONDS = 5.0
#: A local Dask cluster's own CPU (``--only workers``): each worker's spawn and imports ...
WORKER_START_SECONDS = 3.0
#: ... and, per worker and wall second, the event loops and heartbeats (2 workers sleeping 30 s against 1 s: 2.8
#: CPU s more in 24 s more wall); on a busy machine most of the gap between CPU and wall time.
CLUSTER_SECONDS_PER_WALL_SECOND = 0.06


def format_duration(t: float) -> str:
    """Seconds as a message says them: "45 s", "12 min", "2.5 h"."""
    if t >= 7200:
        return f"{t / 3600:.1f} h"
    return f"{t / 60:.0f} min" if t >= 120 else f"{t:.0f} s"


def cpu_phrase(t: float) -> str:
    """CPU seconds as a message says them: "45 CPU s", "12 CPU min", "2.5 CPU h"."""
    return format_duration(t).replace(" ", " CPU ")


def rule_factor(L: int, config: Any) -> float:
    """How a task's time scales with the solve rule and L against the default rule at L = 2: the square root
    of the node ratio (``--precision fast``, 1/4 of the nodes, took half the time), 4x per extra token."""
    return (_nodes(L, config.quadrature) / 2 ** 12) ** 0.5 * 4 ** (L - 2)


def boundaries_task_seconds(n_alphas: int, L: int, config: Any) -> float:
    """CPU seconds of one omega's boundaries (:data:`BOUNDARIES_TASK_SECONDS` at 12 alphas; half of it grows with
    the alpha grid, half is the boundaries' own searches)."""
    return BOUNDARIES_TASK_SECONDS * (0.5 + 0.5 * n_alphas / 12) * rule_factor(L, config)


def diagram_task_seconds(n_omegas: int, n_alphas: int, L: int, config: Any, n_rules: int = 0,
                         curves: bool = True) -> list[float]:
    """CPU seconds of each task of a scalar-form diagram: one per omega and rule (:func:`boundaries_task_seconds`),
    the first one plus :data:`CURVES_BRANCH_SECONDS` with ``curves``."""
    tasks = [boundaries_task_seconds(n_alphas, L, config)] * (n_omegas * max(1, n_rules))
    if curves and tasks:
        tasks[0] += CURVES_BRANCH_SECONDS * rule_factor(L, config)
    return tasks


def validate_theory_seconds(quick: bool, n_tasks: int, omega: float) -> list[float]:
    """CPU seconds of each of ``validate``'s ``n_tasks`` theory tasks, the main one (at the alpha sweep's ``omega``)
    first: :data:`VALIDATE_MAIN_THEORY_SECONDS` scaled by :data:`VALIDATE_SMALL_OMEGA_RATE` below omega = 0.3, then
    :data:`VALIDATE_THEORY_TASK_SECONDS` each."""
    plan = "quick" if quick else "full"
    main = VALIDATE_MAIN_THEORY_SECONDS[plan] * math.exp(VALIDATE_SMALL_OMEGA_RATE * max(0.0, 0.3 - omega))
    return ([main] + [VALIDATE_THEORY_TASK_SECONDS[plan]] * (n_tasks - 1)) if n_tasks else []


def census_seconds(L: int, config: Any) -> float:
    """CPU seconds of one census (:data:`CENSUS_SECONDS` at the defaults, scaled by :func:`rule_factor`)."""
    return CENSUS_SECONDS * rule_factor(L, config)


def matrix_boundaries_task_seconds(n_alphas: int, L: int, config: Any) -> float:
    """CPU seconds of one omega's rank-r boundaries (see :data:`RANK2_RULE`), scaled by :func:`matrix_rule_factor`."""
    from attnphase.numerics.phase.census_continuation import MAX_CENSUS

    censuses = min(n_alphas, MAX_CENSUS)
    solves = RANK2_SOLVES_PER_ALPHA * n_alphas + RANK2_SOLVES_OFF_GRID
    return (censuses * RANK2_CENSUS_SECONDS + solves * RANK2_SOLVE_SECONDS) * matrix_rule_factor(L, config)


def matrix_rule_factor(L: int, config: Any) -> float:
    """How a rank-r task's time scales with the solve rule and L against :data:`RANK2_RULE` at L = 2: the node ratio
    to :data:`RANK2_RULE_EXPONENT`, 4x per extra token."""
    return (_nodes(L, config.quadrature) / _nodes(2, RANK2_RULE)) ** RANK2_RULE_EXPONENT * 4 ** (L - 2)


def simulation_seconds(d: int, alpha: float, init: str = "") -> float:
    """CPU seconds of one finite-d simulation from the start ``init`` (:data:`SIMULATION_SECONDS_D1000_ALPHA2`,
    scaled as alpha d^2 and by :data:`SIMULATION_START_FACTORS`, and :data:`SIMULATION_FIXED_SECONDS`)."""
    factor = SIMULATION_START_FACTORS.get(init, 1.0)
    return SIMULATION_FIXED_SECONDS + factor * SIMULATION_SECONDS_D1000_ALPHA2 * (alpha / 2) * (d / 1000) ** 2


def histogram_training_seconds(n_samples: int, epochs: int) -> float:
    """CPU seconds of one histogram training (or re-parameterisation) of ``epochs`` passes over ``n_samples``:
    :data:`HISTOGRAM_FIXED_SECONDS` + :data:`HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH` x samples x epochs."""
    return HISTOGRAM_FIXED_SECONDS + HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH * n_samples * epochs


def histogram_seconds(n_samples: int, epochs: int, reparam_epochs: int, n_variants: int,
                      n_restricted: int) -> tuple[list[float], list[float]]:
    """CPU seconds of the histogram experiment's two stages: ``n_variants`` trainings of ``epochs`` and
    ``n_restricted`` re-parameterisations of ``reparam_epochs`` (:func:`histogram_training_seconds` each)."""
    return ([histogram_training_seconds(n_samples, epochs)] * n_variants,
            [histogram_training_seconds(n_samples, reparam_epochs)] * n_restricted)


def wall_seconds(task_seconds: Sequence[float], workers: int) -> float:
    """The wall time of tasks shared by ``workers``: the larger of their sum over the workers and the longest one,
    plus a local cluster's start when there are several workers."""
    if not task_seconds:
        return 0.0
    w = max(1, min(workers, len(task_seconds)))
    return max(sum(task_seconds) / w, max(task_seconds)) + (CLUSTER_START_SECONDS if w > 1 else 0.0)


def cluster_seconds(workers: int, wall: float) -> float:
    """CPU seconds of a local Dask cluster of ``workers`` (none for one worker: the tasks run in this process) that
    runs ``wall`` seconds: :data:`WORKER_START_SECONDS` and :data:`CLUSTER_SECONDS_PER_WALL_SECOND` per worker."""
    return 0.0 if workers <= 1 else workers * (WORKER_START_SECONDS + CLUSTER_SECONDS_PER_WALL_SECOND * wall)


def on_cores(cpu_seconds: float, cores: int, core_use: float = 1.0) -> float:
    """Wall seconds of ``cpu_seconds`` of compiled loops that keep ``core_use`` of each of ``cores`` cores busy (one
    core: all of it)."""
    return cpu_seconds / (cores * core_use if cores > 1 else 1)


def announce_tasks(what: str, task_seconds: Sequence[float], workers: int, basis: str, *, quiet: bool = False,
                   min_seconds: float = 10, cores: int = 0, own: float = 0.0, core_use: float = 1.0) -> float:
    """Say on stderr, before a job starts, how many tasks it has and about how long it takes on ``workers`` (no more
    than the tasks, as the job starts them; or,
    ``cores`` > 0, on loops that keep ``core_use`` of every core busy), ``own`` the command's CPU seconds besides
    them; returns that estimate."""
    n = len(task_seconds)
    if cores:
        t, on = on_cores(sum(task_seconds), cores, core_use), f"{cores} core{'s' if cores != 1 else ''}"
    else:
        used = max(1, min(workers, n))  # a job starts no more workers than it has tasks
        t, on = wall_seconds(task_seconds, used), f"{used} worker{'s' if used != 1 else ''}"
        on += " (one per task)" if used < workers else ""
    cpu = sum(task_seconds) + own + (0.0 if cores else cluster_seconds(min(workers, n), t))
    t += own
    if not quiet and t >= min_seconds:
        print(f"attnphase: {what}: {n} task{'s' if n != 1 else ''}, about {format_duration(t)} on {on} "
              f"({cpu_phrase(cpu)} in all; {basis}; from measured CPU times, attnphase/workload.py: "
              f"a busy or slower machine takes longer)", file=sys.stderr, flush=True)
    return t


#: A rule above this many nodes is announced (memory ~2 kB per node in one proximal search).
LARGE_RULE_NODES = 2 ** 17


#: The quadrature roles a command at one point (``solve``, ``census``) uses; a sweep uses these and the branch ends'.
POINT_ROLES = ("quadrature", "e_t_quadrature")
SWEEP_ROLES = POINT_ROLES + ("bifurcation_quadrature", "end_quadrature")


def announce_rules(L: int, config: Any, roles: Sequence[str] | None = None) -> None:
    """Name every large rule of the configuration, larger than its role's default, with its nodes and memory: of
    the quadrature ``roles`` the command uses (None: every role)."""
    for option, field in SOLVER_OPTIONS:
        spec = getattr(config, field, None)
        if field.endswith("quadrature") and spec is not None and (roles is None or field in roles):
            n = _nodes(L, spec)
            usual = SOLVER_DEFAULTS.get(field)
            if n >= LARGE_RULE_NODES and (usual is None or n > _nodes(L, usual)):
                print(f"attnphase: note: {option} {spec}: {n:.3g} nodes at L = {L} (about {n * 2e3 / 1e9:.1f} GB "
                      f"during a proximal search; each step ~{n / 2 ** 12:.0f}x the default rule's time)",
                      file=sys.stderr, flush=True)


def check_simulations(n: int, seconds: float, workers: int, option: str, large: bool) -> None:
    """``validate``'s ``n`` simulations (about ``seconds`` of wall time on ``workers``): past :data:`MAX_SIMULATIONS`
    a ValueError unless ``--large`` was given; checked before any work."""
    if n > MAX_SIMULATIONS and not large:
        raise ValueError(f"{option}: {n} simulations is more than {MAX_SIMULATIONS} (about {format_duration(seconds)} on "
                         f"{workers} worker{'s' if workers != 1 else ''}); pass --large to run it anyway")


# --- the Bayes-optimal jobs (``sweep`` / ``phase-diagram --estimator bayes-optimal``) ---------------------------------

#: CPU s of one Bayes-optimal task whatever its grid, by L (the two Gauss rules' curves alpha*(q0) and eps_lin):
#: ``--only bayes`` (one task at 1 and 21 alphas, after a warm-up; two runs on 2 idle cores).
BAYES_TASK_SECONDS = {2: 0.058, 3: 0.23, 4: 2.2}
#: CPU s per alpha of a task: the same runs.
BAYES_POINT_SECONDS = {2: 0.012, 3: 0.020, 4: 0.11}
#: The command's own CPU s besides its tasks: the same script runs ``sweep --estimator bayes-optimal --alpha 0.5
#: --branch informative --workers 1`` (1.90 and 2.04 CPU s less its task) ...
BAYES_COMMAND_SECONDS = 2.0
#: ... and ``phase-diagram --estimator bayes-optimal --omega 0.3 --alpha 0.4,0.6 --workers 1`` (2.44 and 2.61).
BAYES_DIAGRAM_COMMAND_SECONDS = 2.5


def bayes_task_seconds(n_alphas: int, L: int) -> float:
    """CPU seconds of one Bayes-optimal task over ``n_alphas`` alphas at L tokens: :data:`BAYES_TASK_SECONDS` +
    ``n_alphas`` x :data:`BAYES_POINT_SECONDS` (L past the measured ones: L = 4's, x 8 per further token)."""
    top = max(BAYES_TASK_SECONDS)
    key = min(max(L, min(BAYES_TASK_SECONDS)), top)
    return (BAYES_TASK_SECONDS[key] + n_alphas * BAYES_POINT_SECONDS[key]) * 8.0 ** max(0, L - top)
