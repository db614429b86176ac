"""State evolution (MODEL.md section 3): hat overlaps from the loss, overlaps from the prior, and
an accelerated fixed-point solver that always returns a status.

One SE step is ``update(params, update_hat(params, alpha, overlaps))``:

* ``update_hat`` -- channel side: quadrature of g-moments (batched global or local
  proximal map), hat-overlap formulas, symmetrisation over the state's symmetry group;
* ``update`` -- prior side: the closed-form ridge update of :mod:`attnphase.theory.prior`.

The fixed point of x -> F(x), x = (q0, V0, m_1..m_L, th0), is found by Anderson
acceleration (type II, memory ``anderson``) with a damped-iteration fallback.  One
damping convention: ``x_new = (1 - damping) * F(x) + damping * x``.  Convergence is
judged on every overlap, V0 included:

    residual = max_i |F(x)_i - x_i| / max(1, |x_i|)  <=  tol   (default 1e-10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.optimize import brentq

from attnphase.numerics.channel import PROX_MODES, ChannelMoments, channel_moments, hats_from_moments, teacher_target
from attnphase.numerics.observables import Observables, branch_label, eps_lin, observables
from attnphase.numerics.overlaps import HatOverlaps, Overlaps
from attnphase.numerics.prox import Candidates
from attnphase.numerics.quadrature import QuadratureRule, make_rule, parse_rule_spec, reduce_rule, symmetrize_rule
from attnphase.numerics.symmetry import SymmetryElement, model_symmetry_group, symmetry_group
from attnphase.numerics.training_objective import refined_training_objective
from attnphase.theory.kernels import get_kernels
from attnphase.theory.params import ModelParams
from attnphase.theory.prior import ridge_update

BRANCHES = ("semantic", "positional", "agnostic")

#: Order parameters a solve can hold fixed while alpha is solved for (natural-parameter
#: continuation): the semantic overlap th0 and the size |m| of the positional overlaps.
ORDER_PARAMETERS = {
    "th0": lambda ov: float(ov.th0),
    "m": lambda ov: float(np.linalg.norm(ov.m)),
}

#: Backtracking of a quasi-Newton step stops below this fraction of the step: on the noisy
#: (quadrature) SE map a direction that fails at 1/16 of its length is a stale Jacobian,
#: refreshed next; smaller trial steps only spend SE evaluations.
MIN_NEWTON_STEP = 0.05

#: Relative step of the forward-difference Jacobian.  The quadrature SE map is piecewise smooth
#: (a node's proximal minimiser switches basin at a tie), so a tiny step sees either no switch or
#: a whole one; a larger step averages over them and gives the Jacobian of the smoothed map.
FD_STEP = 1e-4


@dataclass(frozen=True)
class SolverConfig:
    """Settings of the fixed-point solver.

    Attributes:
        tol: target residual (scaled max-norm over all overlaps, V0 included).
        max_iter: iteration budget; running out is reported, never hidden.
        damping: weight of the old iterate in damped steps (0 = plain iteration).
        anderson: Anderson memory (0 disables acceleration).
        prox: ``"global"`` (global proximal minimiser), ``"local"`` (from h = 0, as the paper) or
            ``"aligned"`` (from the loss zero aligned with the teacher field, L = 2).
        quadrature: rule spec for :func:`attnphase.numerics.quadrature.make_rule`.
        anderson_budget: SE evaluations given to Anderson before switching to Newton
            on the symmetric subspace (also when Anderson stalls earlier).
        warm_fallback: when Newton fails from a warm start, go on with Anderson and a second
            Newton (True), or report the failure at once (False: continuation retries with a
            smaller step, which is cheaper than the fallback, rarely successful after a failed
            warm Newton -- 5 of 45 such solves over the phase boundaries at omega = 0.1-0.3).
        full_search_every: with the global prox, a full multi-start search every this many
            steps (in between, the distinct minima of the last search are polished); a
            converged point is always verified by a full search.
        e_t_quadrature: rule spec (e.g. ``"sobol16"``) on which E[M] of a converged point's e_t
            is re-evaluated (:mod:`attnphase.numerics.training_objective`: e_t is stationary in the
            overlaps, so this gives e_t with the finer rule's accuracy at the cost of one proximal
            search); None uses the solve's rule.
    """

    tol: float = 1e-10
    max_iter: int = 300
    damping: float = 0.0
    anderson: int = 5
    prox: str = "global"
    quadrature: str = "sobol12"
    full_search_every: int = 16
    anderson_budget: int = 60
    warm_fallback: bool = True
    e_t_quadrature: str | None = None

    def __post_init__(self) -> None:
        if not (self.tol > 0):
            raise ValueError(f"tol must be > 0, got {self.tol}")
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter}")
        if not 0.0 <= self.damping < 1.0:
            raise ValueError(f"damping must lie in [0, 1), got {self.damping}")
        if self.prox not in PROX_MODES:
            raise ValueError(f"prox must be one of {PROX_MODES}, got {self.prox!r}")
        for spec in (self.quadrature, self.e_t_quadrature):
            if spec is not None:
                parse_rule_spec(spec)


@dataclass(frozen=True)
class SolverStatus:
    """How the fixed-point iteration ended."""

    converged: bool
    iterations: int
    residual: float
    message: str
    prox_failures: int = 0


@dataclass(frozen=True, eq=False)
class SolverMemory:
    """What a solve learned that helps a nearby solve (continuation warm starts).

    Attributes:
        key: the state's symmetry group (as (perm, s, t) tuples) the memory belongs to.
        rule: the (symmetrised) quadrature rule the candidates and reduced rules refer to.
        jacobian: the quasi-Newton Jacobian of the scaled residual on the symmetric subspace
            (None if the solve ended without one).
        candidates: the distinct proximal minima per node of the last evaluation (global prox).
        reduced_rules: the rule reduced to orbit representatives, by symmetry group (reducing
            costs more than a polished SE step, so continuation passes them on).
        fixed: the order parameter held fixed by the solve (``"th0"`` for ``solve_at_theta``,
            ``"m"`` for ``solve_at_m``; None at fixed alpha): the maps, and their Jacobians, differ.
    """

    key: tuple
    rule: QuadratureRule
    jacobian: np.ndarray | None
    candidates: Candidates | None
    reduced_rules: dict = field(default_factory=dict, repr=False)
    fixed: str | None = None


@dataclass(frozen=True, eq=False)
class FixedPoint:
    """A state-evolution fixed point with its conjugates, observables and status.

    ``branch`` is the label of the point actually reached (never the requested one
    relabelled); ``requested`` is what the caller asked for.
    """

    params: ModelParams
    alpha: float
    overlaps: Overlaps
    hat: HatOverlaps
    observables: Observables
    status: SolverStatus
    branch: str
    requested: str
    prox: str
    quadrature: str
    memory: SolverMemory | None = field(default=None, repr=False)

    @property
    def record(self) -> dict[str, Any]:
        """The CLI's JSON/CSV record: q = |Q|^2/d, theta = Q.Q*/d, m = p_1.Q/sqrt(d), V = V0."""
        p = self.params
        sigma = p.sigma[0] if len(set(p.sigma)) == 1 else list(p.sigma)
        return {
            "alpha": self.alpha,
            "omega": p.omega,
            "sigma": sigma,
            "lam": p.lam,
            "branch": self.branch,
            "q": self.overlaps.q0,
            "m": float(self.overlaps.m[0]),
            "V": self.overlaps.V0,
            "theta": self.overlaps.th0,
            "eps_g": self.observables.eps_g,
            "e_t": self.observables.e_t,
            "eps_lin": self.observables.eps_lin,
            "converged": bool(self.status.converged),
            "iterations": int(self.status.iterations),
            "residual": float(self.status.residual),
        }


def initial_overlaps(params: ModelParams, branch: str) -> Overlaps:
    """Deterministic starting state of each branch (m only along the range of P)."""
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {BRANCHES}, got {branch!r}")
    L, rho0 = params.L, params.rho0
    m = np.zeros(L)
    if branch == "semantic":
        return Overlaps(q0=rho0, V0=1.0, m=m, th0=0.8 * rho0)
    if branch == "positional":
        col = params.P_array[:, 0]
        if not np.any(col):
            raise ValueError("P has a zero first column: no positional direction to start from")
        return Overlaps(q0=0.1, V0=50.0, m=0.2 * col / np.abs(col).max(), th0=0.0)
    return Overlaps(q0=0.1, V0=1.0, m=m, th0=0.0)


#: Cold starts of the positional branch above this alpha go through a short continuation.
POSITIONAL_COLD_ALPHA = 0.3


def _continuation_path(a0: float, a1: float, factor: float = 1.3) -> list[float]:
    """Geometric steps from a0 up to a1 (both included)."""
    path = [a0]
    while path[-1] * factor < a1:
        path.append(path[-1] * factor)
    return path + [a1]


def _check_alpha(alpha: float) -> float:
    a = float(alpha)
    if not (math.isfinite(a) and a > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha}")
    return a


def update_hat(
    kernels: Any,
    params: ModelParams,
    alpha: float,
    ov: Overlaps,
    rule: QuadratureRule,
    prox: str = "global",
    *,
    group: list[SymmetryElement] | None = None,
    candidates: Candidates | None = None,
    full_search: bool = True,
) -> tuple[HatOverlaps, ChannelMoments]:
    """Channel side of one SE step: hat overlaps symmetrised over ``group`` and the raw moments.

    ``group`` defaults to the symmetry group of ``ov``; ``rule`` may be the orbit
    reduction of a group-invariant rule under that group (see
    :func:`attnphase.numerics.quadrature.reduce_rule`).
    """
    if group is None:
        group = symmetry_group(params, ov, tied=prox == "aligned")
    mom = channel_moments(kernels, params, ov, rule, prox=prox, candidates=candidates, full_search=full_search)
    return hats_from_moments(params, ov, alpha, mom, group), mom


def update(params: ModelParams, hat: HatOverlaps) -> Overlaps:
    """Prior side of one SE step: the closed-form ridge update (MODEL.md section 3)."""
    q0, V0, m, th0 = ridge_update(
        hat.qhat, hat.mhat, hat.thhat, hat.Vhat, params.sigma2, params.P_array, params.lam, params.rho0
    )
    return Overlaps(q0=q0, V0=V0, m=m, th0=th0)


def _scaled_residual(x: np.ndarray, fx: np.ndarray) -> float:
    return float(np.max(np.abs(fx - x) / np.maximum(1.0, np.abs(x))))


def _admissible(x: np.ndarray, rho0: float) -> bool:
    ov = Overlaps.from_vector(x)
    return bool(np.all(np.isfinite(x)) and ov.q0 > 0 and ov.V0 > 0 and ov.th0 ** 2 < ov.q0 * rho0)


def solve(
    params: ModelParams,
    alpha: float,
    branch: str = "semantic",
    prox: str | None = None,
    *,
    init: Overlaps | None = None,
    config: SolverConfig | None = None,
    rule: QuadratureRule | None = None,
    memory: SolverMemory | None = None,
    **config_overrides: Any,
) -> FixedPoint:
    """Solve the state evolution at (params, alpha) starting on ``branch`` (or from ``init``).

    ``memory`` (the ``FixedPoint.memory`` of a solve at nearby parameters with the same
    rule) seeds the quasi-Newton Jacobian and the proximal candidates of a warm start; it
    changes the path to the fixed point, never the verified result (every accepted point is
    checked with a full proximal search).

    Cold starts (``init=None``) of the positional branch at alpha > 0.3 follow a short
    continuation in alpha from 0.3: that family has several fixed points at larger
    alpha and the branch is the one connected to small alpha.

    Returns a :class:`FixedPoint` whose ``status`` says whether the residual reached
    ``config.tol``; non-convergence is reported there and in ``record['converged']``.
    ``status.iterations`` counts SE-map evaluations (Newton's finite differences included).
    """
    alpha = _check_alpha(alpha)
    cfg = config or SolverConfig()
    if prox is not None:
        config_overrides["prox"] = prox
    if config_overrides:
        cfg = replace(cfg, **config_overrides)
    if params.r != 1:
        raise ValueError(f"the numerics implement rank r = 1 only, got r = {params.r}")
    kernels, rule = get_kernels(params.L), _model_rule(params, cfg, rule)
    requested = branch
    if init is None and branch == "positional" and alpha > POSITIONAL_COLD_ALPHA:
        # the positional family has several fixed points at larger alpha; the branch is the
        # one continued from small alpha, where the cold start is unambiguous
        fp = None
        path = _continuation_path(POSITIONAL_COLD_ALPHA, alpha)
        for a in path:
            # the finer e_t rule only for the point asked for, not for the path's steps
            step_cfg = cfg if a == alpha else replace(cfg, e_t_quadrature=None)
            fp = solve(params, a, branch, init=None if fp is None else fp.overlaps, config=step_cfg, rule=rule)
            if not (fp.status.converged and fp.branch == branch):
                break
        if fp.alpha == alpha:
            return fp
        init = fp.overlaps
    ov0 = init if init is not None else initial_overlaps(params, branch)
    x = ov0.to_vector()
    if not _admissible(x, params.rho0):
        raise ValueError(f"initial overlaps are not admissible (need q0 > 0, V0 > 0, th0^2 < q0 rho0): {ov0}")

    se_map = _SEMap(kernels, params, alpha, rule, cfg, memory=memory if init is not None else None)
    return _finish(se_map, se_map.solve(x, warm=init is not None), ov0, requested)


def _finish(se_map: "_SEMap", result: tuple | None, ov0: Overlaps, requested: str) -> FixedPoint:
    """Wrap the solver's result (or its failure) as a FixedPoint with observables and status."""
    params, cfg = se_map.params, se_map.cfg
    if result is None:
        nan = math.nan
        return FixedPoint(
            params=params, alpha=se_map.alpha if se_map.fixed is None else nan, overlaps=ov0,
            hat=HatOverlaps(*(np.full(params.L, nan) for _ in range(4))),
            observables=Observables(nan, nan, eps_lin(params)),
            status=SolverStatus(False, se_map.evaluations, nan, "the first SE step left the admissible region"),
            branch=branch_label(ov0), requested=requested, prox=cfg.prox, quadrature=se_map.rule.name,
        )
    x_eval, hat, mom, residual, converged, message = result
    alpha = se_map.alpha_at.get(x_eval.tobytes(), se_map.alpha)
    ov = Overlaps.from_vector(x_eval)
    obs = observables(params, alpha, ov, hat, mom)
    failures = mom.prox_failures
    if cfg.e_t_quadrature is not None and converged:
        fine = refined_training_objective(params, alpha, ov, hat, make_rule(params.L, cfg.e_t_quadrature), cfg.prox)
        obs, failures = replace(obs, e_t=fine.e_t, E_M=fine.E_M), failures + fine.prox_failures
    status = SolverStatus(converged, se_map.evaluations, residual, message, failures)
    return FixedPoint(
        params=params,
        alpha=alpha,
        overlaps=ov,
        hat=hat,
        observables=obs,
        status=status,
        branch=branch_label(ov),
        requested=requested,
        prox=cfg.prox,
        quadrature=se_map.rule.name,
        memory=se_map.memory(),
    )


def solve_at_theta(
    params: ModelParams,
    th0: float,
    init: Overlaps,
    *,
    config: SolverConfig | None = None,
    rule: QuadratureRule | None = None,
    memory: SolverMemory | None = None,
) -> FixedPoint:
    """Semantic fixed point with prescribed overlap th0; alpha is solved for (natural parameter theta).

    At each SE step the channel moments do not depend on alpha, so alpha is the root
    of th0(update(alpha * hats)) = th0 (Brent's method on the prior update of
    :mod:`attnphase.theory.prior`), and the remaining overlaps are iterated as usual.
    Parametrising the branch by theta stays well conditioned where alpha(theta) turns
    or flattens -- at the end of the semantic branch, where theta -> 0 continuously
    (alpha - alpha_s ~ theta^2) or at a fold -- and locates that end reliably.
    ``init`` must be a semantic state (m = 0); ``FixedPoint.alpha`` is the solved alpha.
    """
    cfg = config or SolverConfig()
    if not (th0 > 0):
        raise ValueError(f"th0 must be > 0 in solve_at_theta, got {th0}")
    if np.any(init.m != 0):
        raise ValueError("solve_at_theta follows the semantic branch: init must have m = 0")
    x = Overlaps(q0=init.q0, V0=init.V0, m=init.m, th0=th0).to_vector()
    if not _admissible(x, params.rho0):
        raise ValueError(f"th0 = {th0} is not admissible with q0 = {init.q0} (need th0^2 < q0 rho0)")
    return _solve_fixed(params, x, ("th0", th0), "semantic", cfg, rule, memory)


def solve_at_m(
    params: ModelParams,
    m_norm: float,
    init: Overlaps,
    *,
    config: SolverConfig | None = None,
    rule: QuadratureRule | None = None,
    memory: SolverMemory | None = None,
) -> FixedPoint:
    """Positional fixed point with prescribed size |m| of the positional overlaps; alpha is solved for.

    The positional analogue of :func:`solve_at_theta`: the prior gives
    m_k = sum_l P[k,l] mhat_l / Lam with every hat overlap proportional to alpha, so
    |m|(alpha) = alpha |a| / (lambda + alpha b) and alpha is fixed by |m| in closed form at
    each SE step; the direction of m and the other overlaps are iterated.  Where the
    positional branch ends continuously (m -> 0, |m|^2 ~ alpha_end - alpha) or at a fold,
    alpha(|m|) stays well conditioned while a solve at fixed alpha does not.
    ``init`` must be a positional state (th0 = 0, m != 0); ``FixedPoint.alpha`` is the solved alpha.
    """
    cfg = config or SolverConfig()
    if not (m_norm > 0):
        raise ValueError(f"m_norm must be > 0 in solve_at_m, got {m_norm}")
    norm = float(np.linalg.norm(init.m))
    if init.th0 != 0 or norm == 0:
        raise ValueError("solve_at_m follows the positional branch: init must have th0 = 0 and m != 0")
    x = Overlaps(q0=init.q0, V0=init.V0, m=init.m * (m_norm / norm), th0=0.0).to_vector()
    return _solve_fixed(params, x, ("m", m_norm), "positional", cfg, rule, memory)


def _model_rule(params: ModelParams, cfg: SolverConfig, rule: QuadratureRule | None) -> QuadratureRule:
    """The rule of a solve (``rule``, or the config's), symmetrised over the model's symmetry group."""
    group = [(e.perm, e.s, e.t) for e in model_symmetry_group(params)]
    return symmetrize_rule(rule or make_rule(params.L, cfg.quadrature), params.L, group)


def _solve_fixed(
    params: ModelParams, x: np.ndarray, fixed: tuple[str, float], requested: str,
    cfg: SolverConfig, rule: QuadratureRule | None, memory: SolverMemory | None,
) -> FixedPoint:
    """A warm-started solve from x with the order parameter ``fixed`` held and alpha solved for."""
    se_map = _SEMap(get_kernels(params.L), params, math.nan, _model_rule(params, cfg, rule), cfg, fixed=fixed, memory=memory)
    return _finish(se_map, se_map.solve(x, warm=True), Overlaps.from_vector(x), requested)


def _same_rule(a: QuadratureRule, b: QuadratureRule) -> bool:
    return a is b or (
        a.name == b.name and a.size == b.size and np.array_equal(a.nodes, b.nodes) and np.array_equal(a.weights, b.weights)
    )


def _invariant_basis(group: list[SymmetryElement], L: int) -> np.ndarray:
    """Orthonormal basis (columns) of the overlap vectors (q0, V0, m, th0) fixed by ``group``.

    The element (pi, s, t) acts as m -> s m[pi], th0 -> s t th0 (q0, V0 invariant); the
    basis spans the range of the group average of these actions.
    """
    n = L + 3
    avg = np.zeros((n, n))
    for e in group:
        M = np.zeros((n, n))
        M[0, 0] = M[1, 1] = 1.0
        for l in range(L):
            M[2 + l, 2 + e.perm[l]] = e.s
        M[-1, -1] = e.s * e.t
        avg += M
    avg /= max(len(group), 1)
    U, sv, _ = np.linalg.svd(avg)
    return U[:, sv > 0.5]


class _SEMap:
    """The SE map x -> F(x) of one solve, with the solve's caches (orbit-reduced rules, prox candidates).

    Local to one call of :func:`solve`; holds no state beyond it.
    """

    def __init__(
        self, kernels: Any, params: ModelParams, alpha: float, rule: QuadratureRule, cfg: SolverConfig,
        fixed: tuple[str, float] | None = None, memory: SolverMemory | None = None,
    ):
        self.kernels, self.params, self.alpha, self.rule, self.cfg = kernels, params, alpha, rule, cfg
        # a warm start's memory is used only with the same rule (candidates are per node)
        self.seed = memory if memory is not None and _same_rule(memory.rule, rule) else None
        self.jacobian: tuple[tuple, np.ndarray] | None = None  # (group key, J) of the last Newton step
        # fixed-order mode: th0 (or |m|) is fixed and alpha solves its prior equation at each step
        self.fixed = fixed
        self.last_alpha: float | None = None  # fixed-order mode: the alpha found at the last step
        self.alpha_at: dict[bytes, float] = {}
        self.reduced: dict[tuple, QuadratureRule] = dict(self.seed.reduced_rules) if self.seed is not None else {}
        self.key: tuple | None = None
        self.candidates: Candidates | None = None
        self.targets: dict[tuple, np.ndarray] = {}  # T(h*) per reduced rule, at th0 = 0
        self.since_full = 0
        self.last_full = True
        self.evaluations = 0
        self.best: tuple | None = None  # (residual, x, fx, hat, mom)

    def __call__(self, x: np.ndarray, force_full: bool = False) -> tuple[np.ndarray, HatOverlaps, ChannelMoments] | None:
        """One SE step from x; None where it leaves the admissible region (Lam <= 0)."""
        p, cfg = self.params, self.cfg
        ov = Overlaps.from_vector(x)
        group = symmetry_group(p, ov, tied=cfg.prox == "aligned")
        key = tuple((e.perm, e.s, e.t) for e in group)
        if key not in self.reduced:
            # axis-aligned grids carry nodes whose proximal problem has exact mirror ties
            # without the node being fixed by the symmetry: merging their orbits would assume
            # an equivariant tie-break, so those rules are used whole (projection only)
            self.reduced[key] = self.rule if self.rule.axis_aligned else reduce_rule(self.rule, p.L, key)[0]
        if key != self.key:
            self.key, self.candidates = key, None
            if self.seed is not None and self.seed.key == key and self.cfg.prox == "global":
                self.candidates = self.seed.candidates
        full = force_full or self.candidates is None or self.since_full >= cfg.full_search_every
        if ov.th0 == 0.0 and key not in self.targets:
            # positional and agnostic states: the teacher fields, hence T(h*), do not depend on
            # the state, so T is computed once per solve and rule
            self.targets[key] = teacher_target(self.kernels, p, ov, self.reduced[key])
        mom = channel_moments(
            self.kernels, p, ov, self.reduced[key], prox=cfg.prox, candidates=self.candidates, full_search=full,
            target=self.targets[key] if ov.th0 == 0.0 else None,
        )
        alpha = self.alpha if self.fixed is None else self._alpha_for_order(ov, mom, group)
        self.evaluations += 1
        if alpha is None:
            return None
        self.alpha_at[x.tobytes()] = alpha
        hat = hats_from_moments(p, ov, alpha, mom, group)
        if full or self.candidates is None:
            # polishing starts from the minima of the last FULL search: a polish can merge two
            # basins into one, and feeding its own output back would lose the other basin for
            # good (the map would then depend on the path, not on the state)
            self.candidates = mom.candidates
        self.since_full = 0 if full else self.since_full + 1
        self.last_full = full or cfg.prox != "global"
        try:
            fx = update(p, hat).to_vector()
        except ValueError:
            return None
        if not np.all(np.isfinite(fx)):
            return None
        res = _scaled_residual(x, fx)
        # only full-search evaluations are a function of the state alone: report only those
        if self.last_full and (self.best is None or res < self.best[0]):
            self.best = (res, x.copy(), fx, hat, mom)
        return fx, hat, mom

    def memory(self) -> SolverMemory | None:
        """What this solve hands to the next one (see :class:`SolverMemory`)."""
        if self.key is None:
            return None
        J = self.jacobian[1] if self.jacobian is not None and self.jacobian[0] == self.key else None
        return SolverMemory(self.key, self.rule, J, self.candidates, self.reduced, self.fixed and self.fixed[0])

    def _alpha_for_order(self, ov: Overlaps, mom: ChannelMoments, group: list[SymmetryElement]) -> float | None:
        """The alpha at which the prior update returns the fixed order parameter from these moments.

        The order parameter is th0 or |m| (``self.fixed``); None if no alpha gives it.
        """
        p = self.params
        name, target = self.fixed
        order = ORDER_PARAMETERS[name]

        def gap(log_a: float) -> float:
            hat = hats_from_moments(p, ov, math.exp(log_a), mom, group)
            try:
                return order(update(p, hat)) - target
            except ValueError:
                return math.nan

        # Every hat overlap is proportional to alpha, so th0(alpha) = rho0 alpha a / (lambda + alpha b)
        # and m(alpha) = alpha P a' / (lambda + alpha b) (|m| likewise) are monotone in alpha while
        # Lam = lambda + alpha b > 0 (gap = nan beyond): the root is unique there.  And 1 / th0
        # (1 / |m|) is affine in 1 / alpha: one secant step in 1 / alpha through
        # two evaluations of the prior update lands on the root; it is accepted only if a third
        # evaluation confirms it (else: bracket by doubling steps from the last root, then Brent).
        a1 = self.last_alpha or 1.0
        a2 = 1.25 * a1
        g1, g2 = gap(math.log(a1)), gap(math.log(a2))
        t1, t2 = g1 + target, g2 + target
        if np.isfinite(t1) and np.isfinite(t2) and t1 != 0 and t2 != 0 and t1 != t2:
            y1, y2 = 1 / t1 - 1 / target, 1 / t2 - 1 / target
            u = 1 / a1 - y1 * (1 / a2 - 1 / a1) / (y2 - y1)
            if 1e-3 < u < 1e4:
                root = 1 / u
                if abs(gap(math.log(root))) <= 1e-12 * abs(target):
                    self.last_alpha = root
                    return root
        lo_lim, hi_lim = math.log(1e-4), math.log(1e3)
        a = min(max(math.log(self.last_alpha) if self.last_alpha else 0.0, lo_lim), hi_lim)
        ga = gap(a)
        step = math.log(2.0)
        if not np.isfinite(ga):  # past Lam = 0: come down until the update exists
            while not np.isfinite(ga) and a > lo_lim:
                a = max(a - step, lo_lim)
                ga = gap(a)
            if not np.isfinite(ga):
                return None
        direction = 1.0 if ga < 0 else -1.0
        while True:
            b = min(max(a + direction * step, lo_lim), hi_lim)
            gb = gap(b)
            if not np.isfinite(gb) or b == a:
                return None  # no root before Lam turns negative, or outside [1e-4, 1e3]
            if (ga < 0) != (gb < 0):
                lo, hi = (a, b) if a < b else (b, a)
                root = math.exp(brentq(gap, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps))
                self.last_alpha = root
                return root
            a, ga = b, gb

    def _accept(self, x: np.ndarray, fx: np.ndarray, hat: HatOverlaps, mom: ChannelMoments) -> tuple[tuple | None, tuple | None]:
        """Verify a candidate fixed point with a full search (global prox).

        Returns (the verified result or None, the evaluation at x to go on from): a polished
        map can converge to its own fixed point while the full search there finds basins
        the polished candidates lack; the iteration must then go on from the full search's
        residual, not from the polished one (whose residual no later step could beat).
        """
        if not self.last_full:
            out = self(x, force_full=True)
            if out is None:
                return None, None
            fx, hat, mom = out
        res = _scaled_residual(x, fx)
        if res <= self.cfg.tol:
            return (x, hat, mom, res, True, "converged"), (fx, hat, mom)
        return None, (fx, hat, mom)

    def solve(self, x: np.ndarray, warm: bool = False) -> tuple | None:
        """Find the fixed point from x.

        Cold starts: Anderson-accelerated iteration, then Newton on the symmetric
        subspace from the best point if it stalls.  Warm starts (x is a converged
        point at a nearby alpha): Newton first -- it also converges to fixed points
        that are unstable under iteration, which the positional branch has --
        then Anderson if Newton fails.
        """
        cfg = self.cfg
        if warm:
            done = self._newton(x, min(cfg.max_iter, cfg.anderson_budget))
            if done is not None:
                return done
            if not cfg.warm_fallback:
                return self._failure()
            x = self.best[1] if self.best is not None else x
        done = self._anderson(x, budget=min(cfg.max_iter - self.evaluations, cfg.anderson_budget))
        if done is not None:
            return done
        if self.best is None:
            return None
        remaining = cfg.max_iter - self.evaluations
        if remaining > 0:
            done = self._newton(self.best[1], remaining)
            if done is not None:
                return done
        return self._failure()

    def _failure(self) -> tuple | None:
        """The best full-search evaluation, reported as not converged (None if there is none)."""
        if self.best is None:
            return None
        res, xb, fx, hat, mom = self.best
        return (xb, hat, mom, res, False, f"not converged after {self.evaluations} SE evaluations (best residual {res:.2e})")

    def _anderson(self, x: np.ndarray, budget: int) -> tuple | None:
        cfg, rho0 = self.cfg, self.params.rho0
        X: list[np.ndarray] = []
        R: list[np.ndarray] = []
        last_good: np.ndarray | None = None
        history: list[float] = []
        start = self.evaluations
        while self.evaluations - start < budget:
            out = self(x)
            if out is None:
                if last_good is None:
                    return None
                X.clear()
                R.clear()
                x = 0.5 * (x + last_good)
                continue
            fx, hat, mom = out
            last_good = x
            residual = _scaled_residual(x, fx)
            history.append(residual)
            if residual <= cfg.tol:
                done, full = self._accept(x, fx, hat, mom)
                if done is not None:
                    return done
                if full is None:
                    return None
                # go on from the full search's evaluation; the history belongs to the polished map
                fx, hat, mom = full
                history[-1] = _scaled_residual(x, fx)
                X.clear()
                R.clear()
            # stalled: no halving of the best residual over the last 12 steps
            if len(history) > 12 and min(history[-12:]) > 0.5 * min(history[:-12]):
                return None
            f = fx - x
            x_new = (1.0 - cfg.damping) * fx + cfg.damping * x
            if cfg.anderson > 0:
                X.append(x.copy())
                R.append(f.copy())
                if len(X) > cfg.anderson + 1:
                    X.pop(0)
                    R.pop(0)
                if len(X) >= 2:
                    dX = np.diff(np.array(X), axis=0).T
                    dR = np.diff(np.array(R), axis=0).T
                    gamma, *_ = np.linalg.lstsq(dR, f, rcond=1e-12)
                    beta = 1.0 - cfg.damping
                    x_aa = x + beta * f - (dX + beta * dR) @ gamma
                    if _admissible(x_aa, rho0):
                        x_new = x_aa
                    else:
                        X.clear()
                        R.clear()
            if not _admissible(x_new, rho0):
                x_new = 0.5 * (x + fx)
            x = x_new
        return None

    def _newton(self, x: np.ndarray, budget: int) -> tuple | None:
        """Quasi-Newton on G(y) = B^T D (F(x + B y) - x - B y), with backtracking.

        B spans the overlaps left free by the state's symmetry group, so Newton
        stays on the branch; it converges to fixed points that plain iteration
        cannot reach (SE-unstable directions).  D = diag(1 / max(1, |x0|)) puts the
        overlaps on the scale of the residual.  The Jacobian is taken by forward
        differences once and then updated by Broyden's rule; it is re-taken when a
        step fails, and the solve gives up when a fresh Jacobian's step fails too.
        """
        cfg, rho0 = self.cfg, self.params.rho0
        start = self.evaluations
        out = self(x)
        if out is None:
            return None
        fx, hat, mom = out
        group = symmetry_group(self.params, Overlaps.from_vector(x), tied=cfg.prox == "aligned")
        B = _invariant_basis(group, self.params.L)
        D = 1.0 / np.maximum(1.0, np.abs(x))
        resid = lambda xv, fv: B.T @ (D * (fv - xv))  # noqa: E731
        G = resid(x, fx)
        J: np.ndarray | None = None
        # a Jacobian is reused only for the same map: at fixed alpha, or at the same fixed order parameter
        same_map = self.seed is not None and self.seed.fixed == (self.fixed and self.fixed[0])
        if same_map and self.seed.jacobian is not None and self.seed.key == self.key:
            J = self.seed.jacobian.copy() if self.seed.jacobian.shape == (B.shape[1],) * 2 else None
        fresh = False
        while self.evaluations - start < budget:
            if _scaled_residual(x, fx) <= cfg.tol:
                done, full = self._accept(x, fx, hat, mom)
                if done is not None:
                    return done
                if full is None:
                    return None
                fx, hat, mom = full  # go on from the full search's residual
                G = resid(x, fx)
            if J is None:
                J = self._fd_jacobian(x, G, B, resid)
                fresh = True
                if J is None:
                    return None
                self.jacobian = (self.key, J)
            try:
                dy = np.linalg.solve(J, -G)
            except np.linalg.LinAlgError:
                dy = np.linalg.lstsq(J, -G, rcond=None)[0]
            t = 1.0
            g0 = float(np.linalg.norm(G))
            accepted = False
            while t > MIN_NEWTON_STEP and self.evaluations - start < budget:
                xt = x + t * (B @ dy)
                if _admissible(xt, rho0):
                    ot = self(xt)
                    if ot is not None:
                        Gt = resid(xt, ot[0])
                        if np.linalg.norm(Gt) < (1 - 1e-4 * t) * g0:
                            step = t * dy
                            J = J + np.outer(Gt - G - J @ step, step) / float(step @ step)
                            x, (fx, hat, mom), G = xt, ot, Gt
                            accepted, fresh = True, False
                            self.jacobian = (self.key, J)
                            break
                t *= 0.5
            if not accepted:
                if fresh:
                    return None
                J = None  # retry with a fresh finite-difference Jacobian
        return None

    def _fd_jacobian(self, x: np.ndarray, G: np.ndarray, B: np.ndarray, resid) -> np.ndarray | None:
        """Forward-difference Jacobian of the scaled residual along the columns of B."""
        n = B.shape[1]
        J = np.empty((n, n))
        for j in range(n):
            hj = FD_STEP * max(1.0, abs(float(B[:, j] @ x)))
            xj = x + hj * B[:, j]
            oj = self(xj) if _admissible(xj, self.params.rho0) else None
            if oj is None:
                xj = x - hj * B[:, j]
                oj = self(xj)
                if oj is None:
                    return None
                hj = -hj
            J[:, j] = (resid(xj, oj[0]) - G) / hj
        return J
