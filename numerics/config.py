"""The one configuration of the numerics: :class:`SolverConfig`, frozen, passed everywhere (built by the CLI in
:func:`attnphase.solver_options.config_from_args`): the proximal mode and backend, one quadrature rule per role
(each a spec of :func:`attnphase.numerics.quadrature.rules.make_rule`), the tolerances and the solver's budgets.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

#: Proximal maps: the global minimiser, the local minimiser from h = 0 (the paper's), the lowest
#: minimiser on the side of the student's mean field (the basin gradient descent keeps from its start).
PROX_MODES = ("global", "local", "aligned")

#: Backends of the proximal solver: compiled with numba when it imports ("auto"), or forced; "torch"
#: batches the Newton descent on a torch device (a GPU when present, see TORCH_DEVICE_ENV).
BACKENDS = ("auto", "numpy", "numba", "torch")

#: Fixed-point families of the model (docs/model.md section 3).
BRANCHES = ("semantic", "positional", "agnostic")

#: How a branch's end is located: as the bifurcation of the agnostic branch (an eigenvalue of the
#: SE Jacobian equal to 1), or by tracing the branch at a fixed order parameter / bisecting in alpha.
BRANCH_END_STRATEGIES = ("bifurcation", "trace")

#: The largest ``tol`` a configuration with error bars takes (a looser one stops an error bar's warm re-solve at
#: its start: a bar of 0); a hundred times below the precise tier's bars.
MAX_TOL = 1e-6
#: The tightest tol a configuration takes: above the round-off floor of the map's relative step (a few 1e-16).
MIN_TOL = 1e-14

#: Environment variable that, when set, overrides ``backend="auto"`` (``numpy``, ``numba`` or ``torch``).
BACKEND_ENV = "ATTNPHASE_PROX_BACKEND"

#: Environment variable naming the torch device of ``backend="torch"`` (``cpu``, ``cuda``, ``cuda:1``);
#: unset: cuda when torch sees a GPU, else cpu.
TORCH_DEVICE_ENV = "ATTNPHASE_TORCH_DEVICE"

#: The quadrature fields of :class:`SolverConfig`, one per role.
QUADRATURE_ROLES = ("quadrature", "e_t_quadrature", "alpha_c_quadrature", "alpha_l_quadrature", "bifurcation_quadrature",
                    "end_quadrature")

#: Precision tiers (``--precision``): the rule of every quadrature role, each of 4 independent scramblings
#: (docs/method.md sections 7 and 8).
PRECISION_TIERS: dict[str, dict[str, str]] = {
    "fast": {"quadrature": "sobol8:4", "alpha_c_quadrature": "sobol14:4", "alpha_l_quadrature": "sobol10:4",
             "bifurcation_quadrature": "sobol13:4", "end_quadrature": "sobol10:4"},
    "default": {"quadrature": "sobol10:4", "alpha_c_quadrature": "sobol16:4", "alpha_l_quadrature": "sobol12:4",
                "bifurcation_quadrature": "sobol15:4", "end_quadrature": "sobol12:4"},
    "precise": {"quadrature": "sobol14:4", "alpha_c_quadrature": "sobol18:4", "alpha_l_quadrature": "sobol16:4",
                "bifurcation_quadrature": "sobol17:4", "end_quadrature": "sobol16:4"},
}

#: Each tier's target: the largest relative error bar err / |value| of a fixed point's overlaps (q, m, V, theta).
PRECISION_TARGETS: dict[str, float] = {"fast": 1e-2, "default": 1e-3, "precise": 1e-4}


@dataclass(frozen=True)
class SolverConfig:
    """Settings of every numerical computation (fixed points, sweeps, branch ends, boundaries).

    Attributes:
        tol: target residual of a fixed point, max_i |F(x)_i - x_i| / max(1, |x_i|) over every overlap.
        max_iter: SE-map evaluations a solve may spend (running out is reported).
        damping: weight of the old iterate, ``x_new = (1 - damping) F(x) + damping x``.
        anderson: Anderson memory (0 disables acceleration).
        anderson_budget: SE evaluations given to Anderson before quasi-Newton (sooner when it stalls).
        warm_fallback: when quasi-Newton fails from a warm start, go on with Anderson (True) or report the
            failure at once (False: continuation retries with a smaller step instead).
        full_search_every: the most SE steps polished between two full multi-start searches (the minima of
            the last one polished; a converged point is verified by a full search): with the global prox, and
            with the aligned one on matrix fields (r >= 2: at most 7 there).
        prox: proximal map, one of :data:`PROX_MODES`.
        backend: proximal solver backend, one of :data:`BACKENDS` (``$ATTNPHASE_PROX_BACKEND`` overrides
            ``"auto"``; ``"torch"`` runs on ``$ATTNPHASE_TORCH_DEVICE``).
        quadrature: rule of every SE solve.
        e_t_quadrature: finer rule for E[M] in e_t at a converged point (None: the solve's rule).
        alpha_c_quadrature: rule for E[M] in the Newton correction of alpha_c (None: none).
        alpha_l_quadrature: rule of the warm re-solve that moves alpha_l by one secant step (None: none).
        bifurcation_quadrature: rule of the SE-Jacobian eigenvalues at the agnostic branch.
        end_quadrature: rule of the warm re-solve that moves a bifurcation end by one linearised step (None: none).
        branch_end: how branch ends are located, one of :data:`BRANCH_END_STRATEGIES`.
        error_bars: make standard errors (docs/method.md section 7): the boundaries' (``phase_boundaries``), the
            census's and the commands'; ``solve`` and ``sweep`` return the fixed points alone, their bars from
            :func:`~attnphase.numerics.errors.quadrature_error.fixed_point_error` (``point_errors`` for several).
    """

    tol: float = 1e-10
    max_iter: int = 300
    damping: float = 0.0
    anderson: int = 5
    anderson_budget: int = 60
    warm_fallback: bool = True
    full_search_every: int = 16
    prox: str = "global"
    backend: str = "auto"
    quadrature: str = PRECISION_TIERS["default"]["quadrature"]
    e_t_quadrature: str | None = None
    alpha_c_quadrature: str | None = PRECISION_TIERS["default"]["alpha_c_quadrature"]
    alpha_l_quadrature: str | None = PRECISION_TIERS["default"]["alpha_l_quadrature"]
    bifurcation_quadrature: str = PRECISION_TIERS["default"]["bifurcation_quadrature"]
    end_quadrature: str | None = PRECISION_TIERS["default"]["end_quadrature"]
    branch_end: str = "bifurcation"
    error_bars: bool = True

    def __post_init__(self) -> None:
        from attnphase.numerics.quadrature.rules import parse_rule_spec

        for name in ("tol", "damping"):  # numbers, as Python floats (as_dict goes into JSON)
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise ValueError(f"{name} must be a number, got {value!r}")
            object.__setattr__(self, name, float(value))
        for name in ("error_bars", "warm_fallback"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
            object.__setattr__(self, name, bool(getattr(self, name)))
        if not (MIN_TOL <= self.tol < 1):
            raise ValueError(f"tol must lie in [{MIN_TOL:g}, 1) (a residual below {MIN_TOL:g} is round-off), "
                             f"got {self.tol}")
        for name in ("max_iter", "anderson", "anderson_budget", "full_search_every"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name} must be an integer, got {value!r}")
            object.__setattr__(self, name, int(value))
        if self.error_bars and self.tol > MAX_TOL:
            raise ValueError(f"tol {self.tol:g} is too loose for error bars (a re-solve on another rule would stop at "
                             f"its start: a bar of 0); tol must lie in (0, {MAX_TOL:g}] (or error_bars=False)")
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be >= 1, got {self.max_iter}")
        if not 0.0 <= self.damping < 1.0:
            raise ValueError(f"damping must lie in [0, 1), got {self.damping}")
        if self.anderson < 0 or self.anderson_budget < 1 or self.full_search_every < 1:
            raise ValueError("anderson must be >= 0, anderson_budget and full_search_every >= 1")
        for name, allowed in (("prox", PROX_MODES), ("backend", BACKENDS), ("branch_end", BRANCH_END_STRATEGIES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for spec in self.rules().values():
            parse_rule_spec(spec)
        if self.quadrature is None or self.bifurcation_quadrature is None:
            raise ValueError("quadrature and bifurcation_quadrature need a rule spec")

    @classmethod
    def for_precision(cls, tier: str, **changes: Any) -> "SolverConfig":
        """The config of a precision tier (:data:`PRECISION_TIERS`), with ``changes`` on top; the precise tier on
        backend ``"torch"`` when torch sees a GPU (unless ``changes`` or ``$ATTNPHASE_PROX_BACKEND`` name one)."""
        if tier not in PRECISION_TIERS:
            raise ValueError(f"precision must be one of {tuple(PRECISION_TIERS)}, got {tier!r}")
        if tier == "precise" and "backend" not in changes and backend_override() is None and gpu_visible():
            changes = changes | {"backend": "torch"}
        return cls(**(PRECISION_TIERS[tier] | changes))

    def rules(self) -> dict[str, str]:
        """The rule spec of every quadrature role that has one, by role."""
        return {role: getattr(self, role) for role in QUADRATURE_ROLES if getattr(self, role) is not None}

    def replace(self, **changes: Any) -> "SolverConfig":
        """A copy with ``changes`` applied (validated like a new config)."""
        return replace(self, **changes)

    def variant(self, k: int) -> "SolverConfig":
        """The k-th independent replicate of every quadrature role (k = 0: this config; :func:`rule_variant`)."""
        if k == 0:
            return self
        from attnphase.numerics.quadrature.rules import rule_variant

        return replace(self, **{role: rule_variant(spec, k) for role, spec in self.rules().items()})

    def with_error_estimate(self, k: int | None) -> "SolverConfig":
        """The config of ``--error-estimate k``: None (auto) unchanged; 0 without error bars; k >= 2 with
        k scrambling blocks in every role whose rule has several (a rule of one block is left as it is)."""
        if k is None:
            return self
        if k == 0:
            return replace(self, error_bars=False)
        from attnphase.numerics.quadrature.rules import replicates, with_replicates

        return replace(self, **{role: with_replicates(spec, k) for role, spec in self.rules().items()
                                if replicates(spec) >= 2})

    def check_rules(self, L: int) -> None:
        """ValueError (naming the role and the sizes) when a rule of any role is too large at L:
        the check a command runs before any work (:func:`attnphase.numerics.quadrature.rules.check_rule_size`);
        also when the e_t rule has fewer nodes than the solve rule (e_t re-read on it would be less accurate than the
        solve's own, and its bar would not say so)."""
        from attnphase.numerics.quadrature.rules import check_rule_size

        for role, spec in self.rules().items():
            try:
                check_rule_size(L, spec)
            except ValueError as exc:
                raise ValueError(f"{role.replace('_', '-')}: {exc}") from None
        self.check_e_t_rule(L)

    def check_e_t_rule(self, L: int) -> None:
        """ValueError where the e_t rule has fewer nodes at L than the solve rule: e_t re-read on it would be less
        accurate than the solve's own, and err_e_t would not say so."""
        from attnphase.numerics.quadrature.rules import rule_nodes

        n, solve_nodes = rule_nodes(L, self.e_t_quadrature or self.quadrature), rule_nodes(L, self.quadrature)
        if n < solve_nodes:
            raise ValueError(f"e-t-quadrature: {self.e_t_quadrature} has {n} nodes at L = {L}, fewer than the solve "
                             f"rule {self.quadrature}'s {solve_nodes}: e_t re-read on it would be less accurate than "
                             "the solve's own, and err_e_t would not say so; give a finer rule or none")

    def as_dict(self) -> dict[str, Any]:
        """Every field by name (for the JSON metadata of results)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def check_positive(name: str, value: Any) -> float:
    """``value`` as a float where it is a finite number > 0 (a step, a tolerance); else a ValueError naming ``name``
    (a step or tolerance of 0 or below never ends the loop it bounds)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def gpu_visible() -> bool:
    """Whether torch can be imported and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def backend_override() -> str | None:
    """The backend named by ``$ATTNPHASE_PROX_BACKEND`` (None when unset or ``auto``)."""
    env = os.environ.get(BACKEND_ENV, "").strip().lower()
    if env in ("", "auto"):
        return None
    if env not in BACKENDS:
        raise ValueError(f"${BACKEND_ENV} must be one of {BACKENDS}, got {env!r}")
    return env
