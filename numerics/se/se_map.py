"""The state-evolution map x -> F(x) (docs/model.md section 3): hat overlaps from the channel,
overlaps from the prior.

One SE step at overlaps x = (q0, V0, m_1..m_L, th0):

    moments = channel_moments(x)                       E[g], E[g^2], E[g xi], E[g eta], E[M] (quadrature)
    hat     = update_hat(params, alpha, x, moments)    the hat-overlap formulas, symmetrised
    F(x)    = update(params, hat)                      the closed-form ridge prior

(``update_hat`` and ``update`` are the ones of every rank, :mod:`attnphase.numerics.se.updates`; this map is
their scalar-form fast path: symmetrised rules, orbit reduction, candidate tracking.)

:class:`SEMap` is that map as the fixed-point solver (:mod:`attnphase.numerics.se.fixed_point`)
iterates it, with the caches of one solve (orbit-reduced rules, the proximal minima of the last
full search, T(h*) where it does not depend on the state).  Which alpha the map uses is a small
object: :class:`FixedAlpha` (the plain map) or :class:`FixedOrder` (th0 or |m| held fixed, alpha
solved from the prior equation at every step -- natural-parameter continuation near branch ends).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attnphase.numerics.se.channel import ChannelMoments, channel_moments, teacher_target
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.fixed_point import Evaluation, scaled_residual
from attnphase.numerics.se.overlaps import HatOverlaps, Overlaps
from attnphase.numerics.se.updates import update, update_hat
from attnphase.numerics.prox.global_prox import Candidates
from attnphase.numerics.quadrature.rules import QuadratureRule, make_rule, reduce_rule, symmetrize_rule
from attnphase.numerics.roots import bracketed_log_root
from attnphase.numerics.quadrature.symmetry import SymmetryElement, model_symmetry_group, symmetry_group
from attnphase.theory.correlated_kernels import model_kernels
from attnphase.theory.params import ModelParams


def hat_step(params: ModelParams, alpha: float, ov: Overlaps, rule: QuadratureRule,
             config: SolverConfig | None = None, group: list[SymmetryElement] | None = None,
             ) -> tuple[HatOverlaps, ChannelMoments]:
    """The channel side of one exact SE step on ``rule`` as given: the channel moments (one full
    proximal search), then :func:`update_hat` over ``group`` (default: the state's symmetry group).

    The map the solver iterates is ``update(params, hat_step(...)[0])`` (on the orbit-reduced rule
    where the rule allows it; :class:`SEMap`)."""
    cfg = config or SolverConfig()
    if group is None:
        group = symmetry_group(params, ov)
    mom = channel_moments(model_kernels(params), params, ov, rule, config=cfg)
    return update_hat(params, alpha, ov, mom, group), mom


def admissible(x: np.ndarray, rho0: float) -> bool:
    """Whether x = (q0, V0, m, th0) is a possible state: finite, q0 > 0, V0 > 0, th0^2 < q0 rho0."""
    ov = Overlaps.from_vector(x)
    return bool(np.all(np.isfinite(x)) and ov.q0 > 0 and ov.V0 > 0 and ov.th0 ** 2 < ov.q0 * rho0)


def model_rule(params: ModelParams, config: SolverConfig, rule: QuadratureRule | None = None) -> QuadratureRule:
    """The rule of a solve (``rule``, else ``config.quadrature``), symmetrised over the model's group."""
    return symmetrize_rule(rule or make_rule(params.L, config.quadrature), params.L, model_symmetry_group(params))


def invariant_basis(group: list[SymmetryElement], L: int) -> np.ndarray:
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


class FixedAlpha:
    """The plain SE map at a given alpha."""

    name: str | None = None

    def __init__(self, alpha: float):
        self.alpha = alpha

    def alpha_for(self, params: ModelParams, ov: Overlaps, mom: ChannelMoments, group: list[SymmetryElement]) -> float:
        return self.alpha


#: Order parameters a solve can hold fixed while alpha is solved for: the semantic overlap th0
#: and the size |m| of the positional overlaps.
ORDER_PARAMETERS = {
    "th0": lambda ov: float(ov.th0),
    "m": lambda ov: float(np.linalg.norm(ov.m)),
}


class FixedOrder:
    """The SE map with an order parameter (th0 or |m|) held at ``value``; alpha is solved for.

    At each step the channel moments do not depend on alpha and every hat overlap is proportional
    to it, so th0(alpha) = rho0 alpha a / (lambda + alpha b) and |m|(alpha) = alpha |P a'| /
    (lambda + alpha b) are monotone in alpha while Lam > 0: alpha is the unique root of
    order(update(hats(alpha))) = value.  1 / th0 (1 / |m|) is affine in 1 / alpha, so one secant
    step in 1 / alpha through two prior updates lands on the root; it is accepted when a third
    confirms it, else the root is bracketed in log alpha and refined by Brent's method.
    """

    def __init__(self, name: str, value: float):
        if name not in ORDER_PARAMETERS:
            raise ValueError(f"order parameter must be one of {tuple(ORDER_PARAMETERS)}, got {name!r}")
        self.name, self.value = name, value
        self.alpha = math.nan
        self.last_alpha: float | None = None

    def alpha_for(self, params: ModelParams, ov: Overlaps, mom: ChannelMoments, group: list[SymmetryElement]) -> float | None:
        """The alpha at which the prior update returns the fixed order parameter (None if none does)."""
        order, target = ORDER_PARAMETERS[self.name], self.value

        def gap(log_a: float) -> float:
            hat = update_hat(params, math.exp(log_a), ov, mom, group)
            try:
                return order(update(params, hat)) - target
            except ValueError:
                return math.nan

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
        start = math.log(self.last_alpha) if self.last_alpha else 0.0
        log_root = bracketed_log_root(gap, start, math.log(1e-4), math.log(1e3))
        if log_root is None:
            return None
        self.last_alpha = math.exp(log_root)
        return self.last_alpha


def _same_rule(a: QuadratureRule, b: QuadratureRule) -> bool:
    return a is b or (
        a.name == b.name and a.size == b.size and np.array_equal(a.nodes, b.nodes) and np.array_equal(a.weights, b.weights)
    )


class SEMap:
    """The SE map of one solve, as :class:`~attnphase.numerics.se.fixed_point.FixedPointSolver` iterates it.

    ``memory`` (a :class:`~attnphase.numerics.se.state_evolution.SolverMemory` of a nearby solve on
    the same rule) seeds the proximal candidates and the quasi-Newton Jacobian; it changes the
    path to the fixed point, never a verified result.  Holds no state beyond one solve.
    """

    def __init__(self, params: ModelParams, variant: FixedAlpha | FixedOrder, rule: QuadratureRule,
                 config: SolverConfig, memory: Any = None):
        self.params, self.variant, self.rule, self.cfg = params, variant, rule, config
        self.kernels = model_kernels(params)
        # a warm start's memory is used only with the same rule (candidates are per node)
        self.seed = memory if memory is not None and _same_rule(memory.rule, rule) else None
        self.reduced: dict[tuple, QuadratureRule] = dict(self.seed.reduced_rules) if self.seed is not None else {}
        self.jacobian: tuple[tuple, np.ndarray] | None = None  # (group key, J) of the last quasi-Newton step
        self.key: tuple | None = None
        self.candidates: Candidates | None = None
        self.targets: dict[tuple, np.ndarray] = {}  # T(h*) per reduced rule, at th0 = 0
        self.since_full = 0
        self.full_only = False  # set once a polished fixed point was rejected by a full search

    def _group(self, ov: Overlaps) -> list[SymmetryElement]:
        return symmetry_group(self.params, ov)

    def evaluate(self, x: np.ndarray, exact: bool = False) -> Evaluation | None:
        """One SE step from x; None where x is not a state (:func:`admissible`) or the step leaves the
        admissible region (Lam <= 0, no alpha).

        ``exact`` forces a full proximal search (global prox); otherwise one is made every
        ``config.full_search_every`` steps and the steps in between polish the last one's minima.
        """
        p, cfg = self.params, self.cfg
        if not admissible(x, p.rho0):
            # th0^2 >= q0 rho0 (no Gaussian teacher field), q0 <= 0 or V0 <= 0: not a state of the model
            return None
        ov = Overlaps.from_vector(x)
        group = self._group(ov)
        key = tuple(group)
        if key not in self.reduced:
            # axis-aligned grids carry nodes whose proximal problem has exact mirror ties
            # without the node being fixed by the symmetry: merging their orbits would assume
            # an equivariant tie-break, so those rules are used whole (projection only)
            self.reduced[key] = self.rule if self.rule.axis_aligned else reduce_rule(self.rule, p.L, key)[0]
        if key != self.key:
            self.key, self.candidates = key, None
            if self.seed is not None and self.seed.key == key and cfg.prox == "global":
                self.candidates = self.seed.candidates
        full = exact or self.full_only or self.candidates is None or self.since_full >= cfg.full_search_every
        if ov.th0 == 0.0 and key not in self.targets:
            # positional and agnostic states: the teacher fields, hence T(h*), do not depend on
            # the state, so T is computed once per solve and rule
            self.targets[key] = teacher_target(self.kernels, p, ov, self.reduced[key])
        mom = channel_moments(
            self.kernels, p, ov, self.reduced[key], config=cfg, candidates=self.candidates, full_search=full,
            target=self.targets[key] if ov.th0 == 0.0 else None,
        )
        alpha = self.variant.alpha_for(p, ov, mom, group)
        if alpha is None:
            return None
        hat = update_hat(p, alpha, ov, mom, group)
        if full or self.candidates is None:
            # polishing starts from the minima of the last FULL search: a polish can merge two
            # basins into one, and feeding its own output back would lose the other basin for
            # good (the map would then depend on the path, not on the state)
            self.candidates = mom.candidates
        self.since_full = 0 if full else self.since_full + 1
        try:
            fx = update(p, hat).to_vector()
        except ValueError:
            return None
        if not np.all(np.isfinite(fx)):
            return None
        return Evaluation(x.copy(), fx, scaled_residual(x, fx), full or cfg.prox != "global", SEStep(alpha, hat, mom))

    def admissible(self, x: np.ndarray) -> bool:
        return admissible(x, self.params.rho0)

    def subspace(self, x: np.ndarray) -> np.ndarray:
        """The overlaps left free by the symmetry group of the state x (quasi-Newton stays on the branch)."""
        return invariant_basis(self._group(Overlaps.from_vector(x)), self.params.L)

    def jacobian_seed(self, n: int) -> np.ndarray | None:
        """The memory's Jacobian, for the same map (same fixed order parameter) and symmetry group."""
        seed = self.seed
        if seed is None or seed.fixed != self.variant.name or seed.jacobian is None or seed.key != self.key:
            return None
        return seed.jacobian.copy() if seed.jacobian.shape == (n, n) else None

    def keep_jacobian(self, J: np.ndarray) -> None:
        self.jacobian = (self.key, J)

    def distrust_approximation(self) -> None:
        """A polished iteration converged to a point of its own (its candidates, from a full search
        far from here, miss basins): full proximal searches from now on in this solve (at omega = 0
        the positional branch converges only so: 15 SE steps, against a stall at residual 1.7e-2)."""
        self.full_only = True

    def jacobian_now(self) -> np.ndarray | None:
        """The last quasi-Newton Jacobian if it belongs to the current symmetry group."""
        return self.jacobian[1] if self.jacobian is not None and self.jacobian[0] == self.key else None


class SEStep:
    """What one SE evaluation attaches: the alpha it used, the hat overlaps and the channel moments."""

    __slots__ = ("alpha", "hat", "moments")

    def __init__(self, alpha: float, hat: HatOverlaps, moments: ChannelMoments):
        self.alpha, self.hat, self.moments = alpha, hat, moments


def se_step(params: ModelParams, alpha: float, ov: Overlaps, config: SolverConfig | None = None,
            rule: QuadratureRule | None = None) -> tuple[Overlaps, SEStep]:
    """One exact SE step F(ov) at alpha -- the map the solver iterates -- and what it computed.

    ``rule`` is used as given (no symmetrisation); default: ``config.quadrature`` symmetrised.
    Raises ValueError where the step leaves the admissible region.
    """
    cfg = config or SolverConfig()
    smap = SEMap(params, FixedAlpha(alpha), rule if rule is not None else model_rule(params, cfg), cfg)
    ev = smap.evaluate(ov.to_vector(), exact=True)
    if ev is None:
        raise ValueError(f"the SE step from {ov} leaves the admissible region")
    return Overlaps.from_vector(ev.fx), ev.data
