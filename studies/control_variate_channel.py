"""Channel expectations with the local proximal map as a control variate.

The global proximal map h_hat jumps between minima across a surface in the Gaussian variables
(docs/method.md section 1); the local map h_loc (Newton from h = 0, ``--prox local``) is one
Newton descent instead of a multi-start search, and follows the global one on most of the space.
For every channel integrand f (g, g^2, g xi, g eta, M of docs/model.md sections 3-4)

    E[f_global] = E_R[f_global - f_local] + E_F[f_local],

with R the solve's rule and F an independent rule ``fine_rule`` (more nodes, cheap: one descent
per node).  The difference f_global - f_local vanishes wherever the two maps agree, so its sampling
error is that of a small integrand; the local map's mean carries the rest at the finer rule's
accuracy.  eps_g = E[loss(w, T(h*))] has no proximal map in its integrand and is taken on F alone.
Measured against plain Sobol in ``studies/quadrature_jumps.py`` (docs/method.md section 1); not used by the solver.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import QuadratureRule
from attnphase.numerics.se.channel import ChannelMoments, channel_moments
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.theory.params import ModelParams


def control_variate_moments(kernels: Any, params: ModelParams, ov: Overlaps, rule: QuadratureRule,
                            fine_rule: QuadratureRule, config: SolverConfig | None = None) -> ChannelMoments:
    """E[g], E[g^2], E[g xi], E[g eta], E[M] of the global proximal map at ``ov`` as
    E_rule[f_global - f_local] + E_fine_rule[f_local] (module doc), eps_g on ``fine_rule``.

    ``config``: its backend is used; its prox must be ``global`` (the map whose moments are estimated).
    ``prox_failures`` sums the three solves' unconverged nodes; ``candidates`` are the global search's.
    """
    cfg = config or SolverConfig()
    if cfg.prox != "global":
        raise ValueError(f"control_variate_moments estimates the global proximal map, got prox = {cfg.prox!r}")
    local_cfg = replace(cfg, prox="local")
    glob = channel_moments(kernels, params, ov, rule, cfg)
    loc = channel_moments(kernels, params, ov, rule, local_cfg)
    fine = channel_moments(kernels, params, ov, fine_rule, local_cfg)
    cv = lambda key: getattr(glob, key) - getattr(loc, key) + getattr(fine, key)  # noqa: E731
    return ChannelMoments(
        E_g=cv("E_g"), E_ggT=cv("E_ggT"), E_gxi=cv("E_gxi"), E_geta=cv("E_geta"), E_M=float(cv("E_M")),
        eps_g=fine.eps_g, prox_failures=glob.prox_failures + loc.prox_failures + fine.prox_failures,
        candidates=glob.candidates,
    )
