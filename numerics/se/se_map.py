"""The state-evolution map x -> F(x) (docs/model.md sections 3 and 7), at every rank:

    moments = channel_moments(x)                       E[g g^T], E[g], E[g xi^T], E[g eta^T], E[M] (quadrature)
    hat     = update_hat(params, alpha, x, moments)    the hat-overlap formulas, on the state's invariant subspace
    F(x)    = update(params, hat)                      the closed-form ridge prior

:class:`SEMap` is that map as the fixed-point solver iterates it, with the caches of one solve (the proximal
minima of the last full search, polished in between; the scalar form's symmetrised, orbit-reduced rules; the
matrix form's branch subspace and gauge alignment: docs/architecture.md, docs/method.md section 11).  Which
alpha it uses: :class:`FixedAlpha`, or :class:`FixedOrder` (th0 or |m| held fixed, alpha solved for; r = r* = 1).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Iterator, NamedTuple

import numpy as np

from attnphase.numerics.se.channel import ChannelMoments, channel_moments, teacher_target
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.fixed_point import Evaluation, scaled_residual
from attnphase.numerics.se.gauge import align_gauge, invariant_basis, transversal_basis
from attnphase.numerics.se.overlaps import HatOverlaps, Overlaps
from attnphase.numerics.se.results import SolverMemory
from attnphase.numerics.se.starts import check_branch, teacher_rank
from attnphase.numerics.se.updates import update, update_hat
from attnphase.numerics.quadrature.rules import (
    QuadratureRule, make_rule, matrix_rule, reduce_rule, symmetrize_rule,
)
from attnphase.numerics.roots import bracketed_log_root
from attnphase.numerics.quadrature.symmetry import SymmetryElement, model_symmetry_group, symmetry_group
from attnphase.theory import matrix_channel as rk
from attnphase.theory.kernels import get_kernels
from attnphase.theory.correlated_kernels import model_kernels
from attnphase.theory.params import ModelParams

#: The most evaluations the matrix form polishes between two full proximal searches (caps ``full_search_every``).
MATRIX_FULL_SEARCH_EVERY = 7


def hat_step(params: ModelParams, alpha: float, ov: Overlaps, rule: QuadratureRule,
             config: SolverConfig | None = None, group: list[SymmetryElement] | None = None,
             ) -> tuple[HatOverlaps, ChannelMoments]:
    """The channel side of one exact SE step on ``rule`` as given: the channel moments (one full
    proximal search), then :func:`update_hat` over ``group`` (default: the state's symmetry group)."""
    mom = channel_moments(model_kernels(params), params, ov, rule, config=config or SolverConfig())
    return update_hat(params, alpha, ov, mom, symmetry_group(params, ov) if group is None else group), mom


def admissible(ov: Overlaps, rho0: float) -> bool:
    """Whether ``ov`` is a possible state: finite, q0 and V0 positive definite, rho0 I - th0^T q0^-1 th0 positive
    definite (in the scalar form q0 > 0, V0 > 0, rho0 - th0 (th0 / q0) > 0, as the channel computes it: a student
    aligned with the teacher to round-off is not a state)."""
    if not np.all(np.isfinite(ov.to_vector())):
        return False
    if not ov.is_matrix:
        return bool(ov.q0 > 0 and ov.V0 > 0 and rho0 - ov.th0 * (ov.th0 / ov.q0) > 0)
    try:
        if np.linalg.eigvalsh(ov.V0).min() <= 0:
            return False
        rk.check_state(ov.q0, ov.th0, rho0)
    except (ValueError, np.linalg.LinAlgError):
        return False
    return True


def model_rule(params: ModelParams, config: SolverConfig, rule: QuadratureRule | None = None) -> QuadratureRule:
    """The rule of a solve: at r = r* = 1 ``rule`` (else ``config.quadrature``) symmetrised over the model's group;
    otherwise ``config.quadrature``'s Sobol rule over the L (r + r*) Gaussians
    (:func:`~attnphase.numerics.quadrature.rules.matrix_rule`; ``rule`` must be None there)."""
    rs = teacher_rank(params)
    if (params.r, rs) != (1, 1):
        if rule is not None:
            raise ValueError("a rank-r solve takes its rule from config.quadrature (rule= is for r = r* = 1)")
        return matrix_rule(params.L, params.r, rs, config.quadrature)
    return symmetrize_rule(rule or make_rule(params.L, config.quadrature), params.L, model_symmetry_group(params))


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
    """The SE map with an order parameter (th0 or |m|) held at ``value``, alpha solved for: 1 / th0 (1 / |m|) is
    affine in 1 / alpha, so one secant step in 1 / alpha lands on the root (accepted when a third update confirms
    it; else the root is bracketed in log alpha and refined by Brent's method)."""

    def __init__(self, name: str, value: float):
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
        t1, t2 = (gap(math.log(a)) + target for a in (a1, a2))
        y1, y2 = (1 / t - 1 / target if np.isfinite(t) and t != 0 else math.nan for t in (t1, t2))
        if np.isfinite(y1) and np.isfinite(y2) and y1 != y2:  # equal: 1 / th0 does not move with alpha here
            u = 1 / a1 - y1 * (1 / a2 - 1 / a1) / (y2 - y1)
            if 1e-3 < u < 1e4:
                root = 1 / u
                if abs(gap(math.log(root))) <= 1e-12 * abs(target):
                    self.last_alpha = root
                    return root
        start = math.log(self.last_alpha) if self.last_alpha else 0.0
        if (log_root := bracketed_log_root(gap, start, math.log(1e-4), math.log(1e3))) is None:
            return None
        self.last_alpha = math.exp(log_root)
        return self.last_alpha


def _same_rule(a: QuadratureRule, b: QuadratureRule) -> bool:
    return a is b or (
        a.name == b.name and a.size == b.size and np.array_equal(a.nodes, b.nodes) and np.array_equal(a.weights, b.weights)
    )


class SEMap:
    """The SE map of one solve, as :class:`~attnphase.numerics.se.fixed_point.FixedPointSolver` iterates it, at
    every rank.

    ``rule``: :func:`model_rule`'s (or one block of it).  ``memory``: a nearby solve's
    :class:`~attnphase.numerics.se.results.SolverMemory` on the same rule (proximal candidates and Jacobian; in
    the matrix form its Jacobian moved to this solve's basis, used once).  Matrix form: ``branch`` (of
    :data:`~attnphase.numerics.se.starts.MATRIX_BRANCHES`) the subspace the hats are kept on, ``pattern`` the
    coordinates F is projected on (:func:`~attnphase.numerics.se.gauge.reflection_pattern`); ``frozen_columns``
    off: within :meth:`polishing` each node is polished from w too, so it may change basin between the
    finite-difference Jacobian's base and column.
    """

    def __init__(self, params: ModelParams, variant: FixedAlpha | FixedOrder, rule: QuadratureRule,
                 config: SolverConfig, memory: Any = None, *, branch: str | None = None,
                 pattern: np.ndarray | None = None, frozen_columns: bool = True):
        self.params, self.variant, self.rule, self.cfg = params, variant, rule, config
        self.L, self.r, self.rs = params.L, params.r, teacher_rank(params)
        self.is_matrix = (self.r, self.rs) != (1, 1)
        self.branch, self.pattern = branch, pattern
        self.candidates: Any = None  # the proximal minima of the last full search
        self.since_full = 0
        self.full_only = False  # set once a polished fixed point was rejected by a full search
        self.frozen = False  # within :meth:`polishing`
        self.frozen_columns = frozen_columns  # matrix form: polishes within :meth:`polishing` from the minima alone
        self.key: tuple | None = None  # the state's symmetry group (scalar form)
        if self.is_matrix:
            if not isinstance(variant, FixedAlpha):
                raise ValueError("an order parameter is held fixed at r = r* = 1 only")
            check_branch(branch)
            self.kernels = get_kernels(self.L, self.r, channel=params.channel)
            self.seed: SolverMemory | None = memory  # another solve's Jacobian with its basis, used once
            self.kept: SolverMemory | None = None  # the last quasi-Newton Jacobian, with its basis
            self._basis: tuple[np.ndarray, np.ndarray] | None = None  # (x, B) of the last :meth:`subspace`
            return
        self.kernels = model_kernels(params)
        # a warm start's memory is used only with the same rule (candidates are per node)
        self.seed = memory if memory is not None and _same_rule(memory.rule, rule) else None
        self.reduced: dict[tuple, QuadratureRule] = dict(self.seed.reduced_rules) if self.seed is not None else {}
        self.jacobian: tuple[tuple, np.ndarray] | None = None  # (group key, J) of the last quasi-Newton step
        self.targets: dict[tuple, np.ndarray] = {}  # T(h*) per reduced rule, at th0 = 0

    def unpack(self, x: np.ndarray) -> Overlaps:
        """The overlaps packed in x (:meth:`Overlaps.to_vector`)."""
        return Overlaps.from_vector(x, self.L, self.r, self.rs) if self.is_matrix else Overlaps.from_vector(x)

    def admissible(self, x: np.ndarray) -> bool:
        return admissible(self.unpack(x), self.params.rho0)

    def _full(self, exact: bool) -> bool:
        """Whether this evaluation makes a full proximal search (else it polishes the last one's minima)."""
        if self.frozen and self.candidates is not None:
            return exact
        every = min(self.cfg.full_search_every, MATRIX_FULL_SEARCH_EVERY if self.is_matrix else math.inf)
        return exact or self.full_only or self.candidates is None or self.since_full >= every

    def _searched(self, full: bool, mom: ChannelMoments) -> None:
        """After the moments: the minima of a full search are what later evaluations polish (never a polish's own,
        which may have merged two basins); evaluations within :meth:`polishing` do not count."""
        if full or self.candidates is None:
            self.candidates = mom.candidates
        if full:
            self.since_full = 0
        elif not self.frozen:
            self.since_full += 1

    def evaluate(self, x: np.ndarray, exact: bool = False) -> Evaluation | None:
        """One SE step from x (``exact``: with a full proximal search); None where x is not a state
        (:func:`admissible`) or the step leaves the admissible region."""
        ov = self.unpack(x)
        if not admissible(ov, self.params.rho0):
            return None
        if self.is_matrix:
            return self._matrix_step(x, ov, exact)
        p, cfg = self.params, self.cfg
        group = symmetry_group(p, ov)
        key = tuple(group)
        if key not in self.reduced:
            # axis-aligned grids have exact mirror ties at nodes the symmetry does not fix: used whole
            self.reduced[key] = self.rule if self.rule.axis_aligned else reduce_rule(self.rule, p.L, key)[0]
        if key != self.key:
            self.key, self.candidates = key, None
            if self.seed is not None and self.seed.key == key and cfg.prox == "global":
                self.candidates = self.seed.candidates
        full = self._full(exact)
        if ov.th0 == 0.0 and key not in self.targets:
            # at th0 = 0 T(h*) does not depend on the state: once per solve and rule
            self.targets[key] = teacher_target(self.kernels, p, ov, self.reduced[key])
        mom = channel_moments(
            self.kernels, p, ov, self.reduced[key], config=cfg, candidates=self.candidates, full_search=full,
            target=self.targets[key] if ov.th0 == 0.0 else None,
        )
        if (alpha := self.variant.alpha_for(p, ov, mom, group)) is None:
            return None
        hat = update_hat(p, alpha, ov, mom, group)
        self._searched(full, mom)
        try:
            fx = update(p, hat).to_vector()
        except ValueError:
            return None
        if not np.all(np.isfinite(fx)):
            return None
        return Evaluation(x.copy(), fx, scaled_residual(x, fx), full or cfg.prox != "global", SEStep(alpha, hat, mom))

    def _matrix_step(self, x: np.ndarray, ov: Overlaps, exact: bool) -> Evaluation | None:
        """:meth:`evaluate` in the matrix form: the hats on the branch's subspace, the image projected on the
        pattern (no continuous gauge there) or aligned to x's gauge."""
        full = self._full(exact)
        alpha = self.variant.alpha
        at = ov.isotropic_zero() if ov.zero_student else ov  # Q = 0: q0's directions are round-off
        try:
            mom = channel_moments(self.kernels, self.params, at, self.rule, config=self.cfg,
                                  candidates=self.candidates, full_search=full,
                                  frozen=self.frozen and self.frozen_columns)
            self._searched(full, mom)
            hat = update_hat(self.params, alpha, at, mom, self.branch)
            new = update(self.params, hat)
            new = new.isotropic_zero() if ov.zero_student else new
        except (ValueError, np.linalg.LinAlgError):
            return None
        if not np.all(np.isfinite(new.to_vector())):
            return None
        if self.pattern is not None:
            fx, angle = np.where(self.pattern, new.to_vector(), 0.0), 0.0
        else:
            aligned, angle = align_gauge(new, ov)
            fx = aligned.to_vector()
        return Evaluation(x.copy(), fx, scaled_residual(x, fx), full, SEStep(alpha, hat, mom, angle))

    def image(self, ov: Overlaps) -> tuple[Overlaps, float] | None:
        """(F(ov) aligned to ov's gauge, the scaled residual) from a full search, or None where F is not defined."""
        ev = self.evaluate(ov.to_vector(), exact=True)
        return None if ev is None else (self.unpack(ev.fx), ev.residual)

    def subspace(self, x: np.ndarray) -> np.ndarray:
        """The directions quasi-Newton moves x in (:func:`invariant_basis`, :func:`transversal_basis`)."""
        ov = self.unpack(x)
        if not self.is_matrix:
            return invariant_basis(symmetry_group(self.params, ov), self.params.L)
        C = transversal_basis(ov, self.branch, self.pattern)
        self._basis = (np.array(x, copy=True), C)
        return C

    def jacobian_seed(self, n: int) -> np.ndarray | None:
        """The memory's Jacobian: at r = r* = 1 for the same map (same fixed order parameter) and symmetry
        group; in the matrix form the carried one (once), moved to the basis of the last :meth:`subspace`."""
        seed = self.seed
        if self.is_matrix:
            self.seed = None
            if seed is None or self._basis is None:
                return None
            J = seed.moved_to(self._basis[1], self._basis[0])
            return J if J is not None and J.shape == (n, n) and np.all(np.isfinite(J)) else None
        if seed is None or seed.fixed != self.variant.name or seed.jacobian is None or seed.key != self.key:
            return None
        return seed.jacobian.copy() if seed.jacobian.shape == (n, n) else None

    def keep_jacobian(self, J: np.ndarray) -> None:
        if not self.is_matrix:
            self.jacobian = (self.key, J)
        elif self._basis is not None and J.shape[0] == self._basis[1].shape[1]:
            self.kept = SolverMemory(self.rule, np.array(J, copy=True), basis=self._basis[1], at=self._basis[0])

    def jacobian_now(self) -> Any:
        """The last quasi-Newton Jacobian, for a nearby solve: at r = r* = 1 the matrix if it belongs to the
        current symmetry group, in the matrix form a SolverMemory with its basis."""
        if self.is_matrix:
            return self.kept
        return self.jacobian[1] if self.jacobian is not None and self.jacobian[0] == self.key else None

    def distrust_approximation(self) -> None:
        """A polished iteration converged to a point of its own: full proximal searches from now on in this solve."""
        self.full_only = True

    @contextmanager
    def polishing(self) -> Iterator[None]:
        """Within it every inexact evaluation polishes the last full search's minima, none counting towards the next
        (on matrix fields from those minima alone, no start from w, unless ``frozen_columns`` is off: every node stays
        in its basin)."""
        before, self.frozen = self.frozen, True
        try:
            yield
        finally:
            self.frozen = before


class SEStep(NamedTuple):
    """What one SE evaluation attaches: the alpha it used, the hat overlaps, the channel moments and the
    gauge angle its image was rotated by (matrix form; 0 otherwise)."""

    alpha: float
    hat: HatOverlaps
    moments: ChannelMoments
    angle: float = 0.0


def se_step(params: ModelParams, alpha: float, ov: Overlaps, config: SolverConfig | None = None,
            rule: QuadratureRule | None = None) -> tuple[Overlaps, SEStep]:
    """One exact SE step F(ov) at alpha -- the map the solver iterates -- and what it computed.

    ``rule`` is used as given (default: ``config.quadrature`` symmetrised); ValueError where the step leaves the
    admissible region."""
    if isinstance(alpha, bool) or not (isinstance(alpha, (int, float, np.number)) and math.isfinite(alpha)
                                        and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
    cfg = config or SolverConfig()
    smap = SEMap(params, FixedAlpha(alpha), rule if rule is not None else model_rule(params, cfg), cfg)
    ev = smap.evaluate(ov.to_vector(), exact=True)
    if ev is None:
        raise ValueError(f"the SE step from {ov} leaves the admissible region")
    return Overlaps.from_vector(ev.fx), ev.data
