"""Where the census looks for fixed points: its starts, and the rule and budget its searching solves run on
(docs/method.md section 12, "Search").

A start (:class:`CensusStart`) is a requested branch (its hat projection) with either a start kind of
:func:`~attnphase.numerics.se.state_evolution.solve` (``cold``; ``embedded`` at r >= 2 or r* >= 2) or the overlaps
to start from: :func:`grid_starts` at r = r* = 1, :func:`mixture_starts` at r >= 2 or r* >= 2, then
:func:`perturbed_starts` from the points found; the search's rule and budget: :func:`search_config`.  Overlaps are the
state evolution's (the whitened model's for correlated tokens, its P the Ptilde).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.boundary_results import model_branches
from attnphase.numerics.quadrature.rules import parse_rule_spec
from attnphase.numerics.se.gauge import canonical
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.se.se_map import admissible
from attnphase.numerics.se.starts import mixture, positional_direction
from attnphase.numerics.se.state_evolution import (embedded_branches, embedded_start, fixed_mixtures,
                                                   larger_starts, rank_one_overlaps, solve)
from attnphase.theory.params import ModelParams

#: SE evaluations a search solve may spend at r = r* = 1 (a start that needs more is dropped, and counted).
SCALAR_SEARCH_MAX_ITER = 100

#: SE evaluations each quasi-Newton run of a start's solve may spend at r >= 2 or r* >= 2 (the staged solve has up
#: to three and a retry).
MATRIX_SEARCH_MAX_ITER = 150

#: The search's Sobol rules at r = r* = 1 have at least 2^SEARCH_MIN_LOG2 points (:func:`search_rule`).
SEARCH_MIN_LOG2 = 10

#: Random mixtures drawn by default (weights uniform in [0.2, 1], tilt uniform in [0, pi/2], diagonals x e^{0.2 N}).
RANDOM_MIXTURES = 2

#: Sizes of the perturbations of :func:`perturbed_starts`: th0 = eps sqrt(q0_aa rho0) onto a positional point,
#: m = eps P[:, 0] / max |P[:, 0]| onto a semantic one.
PERTURBATIONS = (0.05, 0.2)


@dataclass(frozen=True, eq=False)
class CensusStart:
    """One start: its name, the branch requested of the solve (its hat projection), and either a start kind of
    :func:`~attnphase.numerics.se.state_evolution.solve` (``cold`` / ``embedded``, ``overlaps`` None) or the
    overlaps to start from (kind ``init``)."""

    name: str
    branch: str
    kind: str
    overlaps: Overlaps | None = None


def census_starts(params: ModelParams, alpha: float, config: SolverConfig, *, seed: int = 0,
                  rank_one: Mapping[str, Overlaps | None] | None = None) -> list[CensusStart]:
    """The model's starts (module doc): :func:`grid_starts` at r = r* = 1, else :func:`mixture_starts`."""
    return (grid_starts(params) if is_scalar_form(params.r, params.r_star)
            else mixture_starts(params, alpha, config, seed=seed, rank_one=rank_one))


def census_rank_one(params: ModelParams, alpha: float, config: SolverConfig,
                    known: Mapping[str, Overlaps | None] | None = None) -> dict[str, Overlaps | None] | None:
    """At r >= 2 or r* >= 2 the rank-1 fixed points every embedded start of the census and its mixtures' base use
    (:func:`~attnphase.numerics.se.state_evolution.rank_one_overlaps`, those of ``known`` taken from it), solved
    once for all of them; None at r = r* = 1."""
    if is_scalar_form(params.r, params.r_star):
        return None
    needed = dict.fromkeys(b for branch in (*model_branches(params.r), "semantic", "positional", "agnostic")
                           for b in embedded_branches(params, branch))
    return rank_one_overlaps(params, alpha, list(needed), config, known)


def grid_starts(params: ModelParams) -> list[CensusStart]:
    """The r = r* = 1 starts: each branch's cold start (no positional one where P = 0), then the grid q0 = 0.3,
    V0 in (1, 50), |m| in (0, 0.2, 0.5) along P's first non-zero column scaled to max 1
    (:func:`~attnphase.numerics.se.starts.positional_direction`), th0 in (0, 0.3, 0.8) sqrt(q0 rho0), mixed states
    included; each named after its grid point, requested on the branch its overlaps lie on."""
    direction = positional_direction(params)
    own = ("semantic", "positional", "agnostic") if direction is not None else ("semantic", "agnostic")
    starts = [CensusStart(f"{b} cold", b, "cold") for b in own]
    direction = direction if direction is not None else np.zeros(params.L)
    for q0, V0, m, th in itertools.product((0.3,), (1.0, 50.0), (0.0, 0.2, 0.5), (0.0, 0.3, 0.8)):
        ov = Overlaps(q0=q0, V0=V0, m=m * direction, th0=th * math.sqrt(q0 * params.rho0))
        label = "semantic" if m == 0 and th > 0 else "positional" if th == 0 and m > 0 else "agnostic"
        starts.append(CensusStart(f"grid q0 {q0:g}, V0 {V0:g}, m {m:g}, th0 {th:g} sqrt(q0 rho0)", label, "init", ov))
    return starts


def mixture_starts(params: ModelParams, alpha: float, config: SolverConfig, *, seed: int = 0,
                   rank_one: Mapping[str, Overlaps | None] | None = None) -> list[CensusStart]:
    """The r >= 2 or r* >= 2 starts: embedded per branch and the agnostic one (from the rank-1 agnostic point, where the
    cold agnostic start's first step leaves the admissible region from alpha ~ 2.5 on), cold per branch, then
    :func:`fixed_mixtures` and :data:`RANDOM_MIXTURES` mixtures drawn from ``seed`` (numpy's default generator; an
    inadmissible draw is drawn again, up to 20 times), each of :func:`mixture` applied to the embedded mixed state
    (at r = 1: the semantic state with the positional m on its axis), requested branch ``mixed`` (no hat projected);
    ``rank_one``: the rank-1 points of :func:`census_rank_one` (those missing solved here)."""
    starts = [CensusStart(f"{b} embedded", b, "embedded") for b in (*model_branches(params.r), "agnostic")]
    starts += [CensusStart(f"{b} cold", b, "cold") for b in model_branches(params.r)]
    base = _mixed_base(params, alpha, config, rank_one)
    starts += [CensusStart(f"mixture {name}", "mixed", "init", ov) for name, ov in fixed_mixtures(base, params.rho0)]
    rng = np.random.default_rng(seed)
    for k in range(RANDOM_MIXTURES):
        for _ in range(20):
            w_th, w_m, tilt = rng.uniform(0.2, 1.0), rng.uniform(0.2, 1.0), rng.uniform(0.0, math.pi / 2)
            noise = np.exp(0.2 * rng.standard_normal((2, base.r)))
            ov = mixture(base, w_th, w_m, tilt)
            ov = Overlaps(ov.q0 * np.sqrt(np.outer(noise[0], noise[0])), ov.V0 * np.sqrt(np.outer(noise[1], noise[1])),
                          ov.m, ov.th0)
            if admissible(ov, params.rho0):
                starts.append(CensusStart(f"random mixture {k + 1} (seed {seed}): th0 x{w_th:.2f}, m x{w_m:.2f}, "
                                          f"tilt {math.degrees(tilt):.0f} deg", "mixed", "init", ov))
                break
    return starts


def _mixed_base(params: ModelParams, alpha: float, config: SolverConfig,
                rank_one: Mapping[str, Overlaps | None] | None = None) -> Overlaps:
    """The embedded mixed state (r >= 2), or at r = 1 the semantic one with the positional one's m added."""
    if params.r >= 2:
        return embedded_start(params, alpha, "mixed", config, rank_one)
    sem = embedded_start(params, alpha, "semantic", config, rank_one)
    pos = embedded_start(params, alpha, "positional", config, rank_one)
    return Overlaps(sem.q0, sem.V0, pos.m, sem.th0)


def perturbed_starts(params: ModelParams, points: list[FixedPoint]) -> list[CensusStart]:
    """At r >= 2 or r* >= 2: each positional point with th0_{a1} = eps sqrt(q0_aa rho0) on its axis a of largest q0
    (canonical gauge), each semantic point with m_{:, a} = eps P[:, 0] / max |P[:, 0]| on its axis a of smallest q0,
    eps in :data:`PERTURBATIONS`; requested branch ``mixed``; inadmissible ones left out.  Named after the point (the
    k-th of its label found), so that every start's name is its own.  None at r = r* = 1 (the grid holds them)."""
    if is_scalar_form(params.r, params.r_star):
        return []
    col = params.P_array[:, 0]
    out = []
    seen: dict[str, int] = {}
    for fp in points:
        seen[fp.branch] = k = seen.get(fp.branch, 0) + 1
        ov = canonical(fp.overlaps)
        for eps in PERTURBATIONS:
            th, m = np.array(ov.th0), np.array(ov.m)
            if fp.branch == "positional":
                th[0, 0] = eps * math.sqrt(ov.q0[0, 0] * params.rho0)
            elif fp.branch == "semantic" and np.any(col):
                m[:, -1] = eps * col / np.abs(col).max()
            else:
                continue
            new = Overlaps(ov.q0, ov.V0, m, th)
            if admissible(new, params.rho0):
                out.append(CensusStart(f"{fp.branch} point {k} + {eps:g} {'th0' if fp.branch == 'positional' else 'm'}",
                                       "mixed", "init", new))
    return out


def search_rule(spec: str) -> str:
    """The r = r* = 1 search's rule: a scrambled Sobol rule of 2^K points, K > :data:`SEARCH_MIN_LOG2`, with a
    quarter of its points (2^max(K - 2, SEARCH_MIN_LOG2), the same scramblings and seed); any other rule as it is."""
    kind, args = parse_rule_spec(spec)
    if kind != "sobol" or args[0] <= SEARCH_MIN_LOG2:
        return spec
    return f"sobol{max(args[0] - 2, SEARCH_MIN_LOG2)}:{args[1]}:{args[2]}"


def search_config(params: ModelParams, config: SolverConfig) -> tuple[SolverConfig, bool]:
    """(the config of the searching solves, whether each point found is solved again on ``config``): at r = r* = 1
    :func:`search_rule` and at most :data:`SCALAR_SEARCH_MAX_ITER` evaluations, every point found solved again; at
    r >= 2 or r* >= 2 the solve rule (a staged solve's stages need it) and :data:`MATRIX_SEARCH_MAX_ITER`."""
    if is_scalar_form(params.r, params.r_star):
        return config.replace(quadrature=search_rule(config.quadrature),
                              max_iter=min(config.max_iter, SCALAR_SEARCH_MAX_ITER), e_t_quadrature=None), True
    return config.replace(max_iter=min(config.max_iter, MATRIX_SEARCH_MAX_ITER)), False


def solve_start(params: ModelParams, alpha: float, start: CensusStart, config: SolverConfig,
                rank_one: Mapping[str, Overlaps | None] | None = None) -> FixedPoint:
    """The solve of one start (an embedded one built from ``rank_one``, :func:`census_rank_one`)."""
    if start.kind == "init":
        return solve_init(params, alpha, start.branch, start.overlaps, config)
    return solve(params, alpha, start.branch, config=config, start=start.kind,
                 rank_one=rank_one if start.kind == "embedded" else None)


def solve_init(params: ModelParams, alpha: float, branch: str, ov: Overlaps, config: SolverConfig) -> FixedPoint:
    """The solve from the overlaps ``ov``; where its first SE step leaves the admissible region (no state reached,
    residual NaN), tried again from larger V0s, then q0s, as a cold start is
    (:func:`~attnphase.numerics.se.state_evolution.larger_starts`), the first that reaches a state kept (its
    message says so)."""
    fp = solve(params, alpha, branch, config=config, init=ov)
    spent = fp.status.iterations
    for what, start in larger_starts(ov):
        if fp.status.converged or not math.isnan(fp.status.residual):
            return fp
        fp = solve(params, alpha, branch, config=config, init=start)
        spent += fp.status.iterations
        fp = fp.with_status(iterations=spent, message=f"{fp.status.message}, from {what} (the first step from the "
                                                              "start left the admissible region)")
    return fp
