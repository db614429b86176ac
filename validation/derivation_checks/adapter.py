"""The derivation checks' calls into the ERM state evolution (adapt here when the numerics API changes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.theory.params import ModelParams


def _numerics_config(quadrature: str = "sobol12") -> Any:
    """The numerics configuration used here: the defaults (global prox), with the given rule spec
    (only solves read it; the channel evaluations below get their rule explicitly)."""
    from attnphase.numerics.config import SolverConfig

    return SolverConfig(quadrature=quadrature)


def _se_solve(params: ModelParams, alpha: float, branch: str, quadrature: str, start: Any = None, same_rule: bool = False) -> Any:
    """A state-evolution fixed point (FixedPoint: .overlaps .hat .observables .status .alpha .branch).

    ``start``: a fixed point to warm-start from (its overlaps); with ``same_rule`` (it was solved on
    the same rule) its solver memory too, which only shortens the path.
    """
    from attnphase.numerics.se.state_evolution import solve

    return solve(params, alpha, branch, init=None if start is None else start.overlaps,
                 memory=start.memory if start is not None and same_rule else None, config=_numerics_config(quadrature))


def _solver_rule(params: ModelParams, spec: str) -> Any:
    """The (full, unreduced) rule a solve on ``spec`` iterates on: ``make_rule``, symmetrised over the model."""
    from attnphase.numerics.se.se_map import model_rule

    return model_rule(params, _numerics_config(spec))


def _raw_rule(L: int, spec: str) -> Any:
    """A quadrature rule as built, without symmetrisation (nodes (N, 2L), weights (N,))."""
    from attnphase.numerics.quadrature.rules import make_rule

    return make_rule(L, spec)


def _state(x: np.ndarray) -> Any:
    """The numerics' overlaps object of the state x = (q0, V0, m_1..m_L, th0)."""
    from attnphase.numerics.se.overlaps import Overlaps

    return Overlaps.from_vector(x)


def _admissible(x: np.ndarray, rho0: float) -> bool:
    """Whether x = (q0, V0, m, th0) is a state of the model (:func:`attnphase.numerics.se.se_map.admissible`)."""
    from attnphase.numerics.se.se_map import admissible

    return admissible(_state(x), rho0)


def _state_vector(ov: Any) -> np.ndarray:
    """(q0, V0, m_1..m_L, th0) of a state."""
    return np.concatenate([[ov.q0, ov.V0], np.asarray(ov.m, dtype=float), [ov.th0]])


def _channel_side(params: ModelParams, alpha: float, ov: Any, rule: Any) -> tuple[dict[str, np.ndarray], float, int]:
    """Channel side of one SE step on ``rule`` as given (global prox, one full search; hats projected on
    the state's symmetry group, which is trivial at a state without symmetry).

    Returns (hat overlaps by name, E[M] on the rule, proximal failures).
    """
    from attnphase.numerics.se.se_map import hat_step

    hat, mom = hat_step(params, alpha, ov, rule, _numerics_config())
    hats = {k: np.asarray(getattr(hat, k), dtype=float) for k in ("qhat", "mhat", "thhat", "Vhat")}
    return hats, float(mom.E_M), int(mom.prox_failures)


def _prior_side(params: ModelParams, hats: dict[str, np.ndarray]) -> np.ndarray:
    """Prior side of one SE step: the new state vector (q0, V0, m, th0) from the hat overlaps."""
    from attnphase.numerics.se.overlaps import HatOverlaps
    from attnphase.numerics.se.updates import update

    return _state_vector(update(params, HatOverlaps(**hats)))


def _loss_at_prox(params: ModelParams, ov: Any, rule: Any) -> tuple[float, int]:
    """E[loss(h_hat, h*)] on ``rule`` at the global proximal minimisers, and the proximal failures."""
    from attnphase.numerics.se.channel import prox_with_minima, teacher_target
    from attnphase.theory.kernels import get_kernels

    k = get_kernels(params.L)
    res = prox_with_minima(k, params, ov, rule, _numerics_config())[2]
    T = teacher_target(k, params, ov, rule)
    return float(rule.weights @ k.loss(res.h, T, params.sigma2)), int((~res.converged).sum())


def _eps_lin_double(params: ModelParams, order: int | None = None) -> float:
    """eps_lin by tensor Gauss--Hermite in double precision (``order`` per dimension; None: the default)."""
    from attnphase.numerics.se.observables import eps_lin

    return float(eps_lin(params, order))


def _eps_lin_default_order(L: int) -> int:
    """The Gauss--Hermite order per dimension eps_lin uses by default (80 for L = 2)."""
    from attnphase.numerics.se import observables

    return int(getattr(observables, "_EPS_LIN_ORDER", {}).get(L, 80))


def _eps_lin_mp(params: ModelParams, dps: int, order_dps: int | None = None) -> Any:
    """eps_lin at ``dps`` digits (mpmath, L = 2), by the Gauss--Hermite order that resolves ``order_dps`` digits
    (default ``dps``): the digits the reference's own E[s^2] - E[s]^2 cancels need working precision, not nodes."""
    from attnphase.numerics.errors.precision import default_order, eps_lin_mp

    return eps_lin_mp(params, dps=dps, order=default_order(order_dps or dps))
