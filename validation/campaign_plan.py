"""The plan of ``attnphase validate``: which simulations (alpha sweep, heat map, finite-size scaling)
and which theory omegas the campaign (:mod:`attnphase.validation.campaign`) runs; the full and quick
defaults."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from attnphase.theory.params import ModelParams

from .experiments import SimSpec, resolve_dtype
from .reference import TheorySettings
from .training import INITS, TrainConfig


@dataclass(frozen=True)
class ValidationPlan:
    """Everything ``attnphase validate`` runs.

    Attributes:
        quick: the reduced plan (d = 200); params: the model at the alpha sweep's omega.
        d, alphas, seeds: the alpha sweep's (and the heat map's) dimension, its alpha grid (simulations and
            theory) and seeds; heat_alphas, heat_omegas, heat_seeds: the heat map's grid and seeds.
        fss_ds, fss_seeds, fss_cases: the finite-size scaling's dimensions, seeds and ``(alpha, init)`` pairs;
            alphas_small: its small alphas (semantic init: global vs local).
        n_test, device, dtype, train: as in :class:`attnphase.validation.experiments.SimSpec`, for every run.
        theory: accuracy settings of the numerics calls.
        heat_theory_alphas: alpha grid of the per-omega alpha_c computations.
        main_boundaries: proximal modes whose alpha_c, alpha_l (and both branches) the sweep's theory has.
        main_extra_curves: further ``(branch, prox)`` curves of the sweep's theory.
        heat_prox: proximal mode of the heat map's alpha_c(omega) at omegas other than the sweep's
            (the sweep's omega uses its global-prox alpha_c).
        curve_omegas: further omegas of the alpha_c(omega) curve drawn over the heat map (with the heat
            omegas, they span the map).
    """

    quick: bool
    params: ModelParams
    d: int
    alphas: tuple[float, ...]
    seeds: tuple[int, ...]
    heat_alphas: tuple[float, ...]
    heat_omegas: tuple[float, ...]
    heat_seeds: tuple[int, ...]
    fss_ds: tuple[int, ...]
    fss_seeds: tuple[int, ...]
    alphas_small: tuple[float, ...]
    fss_cases: tuple[tuple[float, str], ...]
    n_test: int = 10000
    device: str = "auto"
    dtype: str = "float64"
    theory: TheorySettings = field(default_factory=TheorySettings)
    heat_theory_alphas: tuple[float, ...] = ()
    main_boundaries: tuple[str, ...] = ("global", "local")
    main_extra_curves: tuple[tuple[str, str], ...] = ()
    heat_prox: str = "global"
    curve_omegas: tuple[float, ...] = ()
    train: TrainConfig = field(default_factory=TrainConfig)

    def sweep_specs(self) -> list[SimSpec]:
        return [self._spec(self.d, a, init, s, self.params) for a in self.alphas for init in INITS for s in self.seeds]

    def heat_specs(self) -> list[SimSpec]:
        return [self._spec(self.d, a, init, s, self.params.replace(omega=w)) for w in self.heat_omegas
                for a in self.heat_alphas for init in ("semantic", "positional") for s in self.heat_seeds]

    def fss_specs(self) -> list[SimSpec]:
        return [self._spec(d, a, init, s, self.params) for d in self.fss_ds for a, init in self.fss_cases for s in self.fss_seeds]

    def _spec(self, d: int, alpha: float, init: str, seed: int, params: ModelParams) -> SimSpec:
        return SimSpec(d=d, alpha=alpha, init=init, seed=seed, params=params, train=self.train, n_test=self.n_test,
                       device=self.device, dtype=self.dtype)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON, its training's ``grad_tol`` the tolerance the runs use (the dtype's default where
        unset)."""
        return asdict(self) | {"params": self.params.to_dict(),
                               "train": asdict(self.train.for_dtype(resolve_dtype(self.dtype)))}


def validation_plan(quick: bool = False, d: int | None = None, seeds: int | None = None,
                    params: ModelParams | None = None, device: str = "auto", dtype: str = "float64",
                    train: TrainConfig | None = None) -> ValidationPlan:
    """The default plan: full (d = 1000) or quick (d = 200, smaller grids, coarser theory).

    The quick plan's theory is coarser (residual 1e-8, alpha_c/alpha_l and the
    semantic branch's end to 1e-2 in alpha) and its heat-map alpha_c(omega) uses
    the local proximal mode away from omega = 0.3 (about three times cheaper; at
    omega = 0.2 and 0.3 the two modes' alpha_c agree to 1e-3).
    """
    params = params or ModelParams(omega=0.3)
    aligned = aligned_curves(params)
    d, n_seeds = d or (200 if quick else 1000), seeds or (2 if quick else 4)
    common = dict(quick=quick, d=d, params=params, seeds=tuple(range(n_seeds)), alphas_small=(0.5, 0.8),
                  device=device, dtype=dtype, train=train or TrainConfig(),
                  fss_cases=((2.0, "semantic"), (2.0, "positional"), (0.8, "semantic"), (0.5, "semantic")))
    if quick:
        return ValidationPlan(
            **common,
            alphas=(0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0, 1.25, 1.5, 1.75, 2.0),
            heat_alphas=(0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0),
            heat_omegas=(0.2, 0.3, 0.4),
            heat_seeds=(0,),
            fss_ds=_with(d, (50, 100, 200, 400, 1000)),
            fss_seeds=tuple(range(max(4, n_seeds))),
            theory=TheorySettings(tol=1e-8, xtol=1e-2, end_tol=1e-2),
            heat_theory_alphas=(0.3, 0.6, 0.9, 1.2, 1.6, 2.0, 2.4, 3.0),
            curve_omegas=(0.15, 0.25, 0.35, 0.45),
            main_boundaries=("global",),
            main_extra_curves=(("semantic", "local"), *aligned),
            heat_prox="local",
        )
    return ValidationPlan(
        **common,
        alphas=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.4, 1.5, 1.75, 2.0),
        heat_alphas=(0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5),
        heat_omegas=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5),
        heat_seeds=(0, 1),
        fss_ds=_with(d, (50, 100, 200, 500, 1000)),
        fss_seeds=tuple(range(max(6, n_seeds))),
        theory=TheorySettings(xtol=1e-3),
        heat_theory_alphas=(0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0),
        curve_omegas=(0.05, 0.15, 0.25, 0.35, 0.45, 0.55),
        main_extra_curves=aligned,
    )


def aligned_curves(params: ModelParams) -> tuple[tuple[str, str], ...]:
    """The aligned-prox curves of the sweep's theory (both branches): the basin gradient descent keeps from its
    start, the state evolution the report names where GD leaves the global minimum's (``map GD follows``).
    None for correlated tokens (the aligned map is defined for independent tokens)."""
    return (("semantic", "aligned"), ("positional", "aligned")) if params.C is None else ()


def _with(d: int, ds: tuple[int, ...]) -> tuple[int, ...]:
    """The finite-size dimensions ``ds`` and the main dimension ``d`` (``--d 2000``: the series reaches it)."""
    return tuple(sorted(set(ds) | {d}))


def _theory_jobs(plan: ValidationPlan) -> tuple[list[tuple[Any, ...]], list[float]]:
    """Arguments of :func:`theory_at_omega` (plain, so the workers import no torch) for the sweep's omega (first)
    and each other heat-map or curve omega; and the omegas the jobs after the first cover."""
    main_alphas = tuple(sorted(set(plan.alphas) | {a for a, _ in plan.fss_cases}))
    # the d -> inf verdicts compare with the theory within its error bar: computed at the finite-size alphas
    barred = replace(plan.theory, error_alphas=tuple(sorted({a for a, _ in plan.fss_cases})))
    jobs = [(plan.params, main_alphas, plan.main_boundaries, plan.main_extra_curves, barred)]
    omegas = [w for w in sorted(set(plan.heat_omegas) | set(plan.curve_omegas)) if abs(w - plan.params.omega) > 1e-12]
    for w in omegas:
        jobs.append((plan.params.replace(omega=w), plan.heat_theory_alphas, (plan.heat_prox,), (), plan.theory))
    return jobs, omegas
