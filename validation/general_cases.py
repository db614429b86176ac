"""The models and the plan of ``attnphase validate --suite general`` (run by :mod:`attnphase.validation.general_suite`).

Extending the suite: add a :class:`SuiteCase` to :data:`GENERAL_CASES` (a key, a title, the model, and ``alphas``
for a case without alpha_c: a rank-r case, or a fallback).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from attnphase.theory.params import ModelParams

from .experiments import SimSpec, resolve_dtype
from .reference import TheorySettings
from .training import TrainConfig

#: Simplex Gram of L = 3 positional encodings (unit norms, equal angles; the L = 3 analogue of the paper's P).
SIMPLEX_P3 = ((1.0, -0.5, -0.5), (-0.5, 1.0, -0.5), (-0.5, -0.5, 1.0))
#: A non-symmetric row-stochastic A at L = 3 (circulant: each token attends forward more than back).
FORWARD_A3 = ((0.6, 0.3, 0.1), (0.1, 0.6, 0.3), (0.3, 0.1, 0.6))

#: The initialisations compared, and the observables compared for each (the branch each start targets).
INITS = ("semantic", "positional")
COMPARED = {"semantic": ("abs_theta", "eps_g"), "positional": ("m_norm", "eps_g")}
#: Aggregated observables per (case, alpha, init).
OBSERVABLES = ("m_norm", "abs_theta", "q", "eps_g", "e_t")


@dataclass(frozen=True)
class SuiteCase:
    """One model of the suite: its ``key`` (``"a"``) and ``title`` in the tables, the model, the ``alphas`` of a
    rank-r case (the fallback of a rank-1 case without alpha_c or semantic end) and why (``alphas_note``)."""

    key: str
    title: str
    params: ModelParams
    alphas: tuple[float, ...] = ()
    alphas_note: str = ""


GENERAL_CASES: tuple[SuiteCase, ...] = (
    SuiteCase("a", "L = 3, non-symmetric A, simplex P", ModelParams(L=3, A=FORWARD_A3, P=SIMPLEX_P3, omega=0.3),
              alphas=(0.5, 2.0)),
    SuiteCase("b", "unequal sigma = (0.4, 0.6)", ModelParams(sigma=(0.4, 0.6), omega=0.3), alphas=(0.5, 2.0)),
    SuiteCase("c", "A = [[0.3, 0.7], [0.8, 0.2]], omega = 0.14", ModelParams(A=((0.3, 0.7), (0.8, 0.2)), omega=0.14),
              alphas=(0.5, 2.0)),
    SuiteCase("d", "rank r = 2 student, rank-1 teacher", ModelParams(r=2, omega=0.3), alphas=(0.5, 2.0),
              alphas_note="the suite's own: the rank-2 phase diagram has no alpha_c in [0.25, 3] at omega = 0.3 "
              "(the mixed point is lowest wherever all branches converged, docs/general.md)"),
    SuiteCase("e", "r = r* = 2", ModelParams(r=2, r_star=2, omega=0.3), alphas=(0.5, 2.0),
              alphas_note="the suite's own: no rank-2 x 2 phase diagram is computed (docs/general.md)"),
)


def is_rank_case(params: ModelParams) -> bool:
    """A student or teacher rank above 1: the theory is the rank-r state evolution (invariant_points.py)."""
    return params.r > 1 or params.r_star > 1


@dataclass(frozen=True)
class GeneralPlan:
    """Everything ``validate --suite general`` runs.

    Attributes:
        quick, d, seeds, cases: the reduced plan, the dimension of every run, the seeds per (case, alpha, init), the
            models; grid: the alpha grid of the theory (phase boundaries and both branches).
        n_test, device, dtype, train: as in :class:`attnphase.validation.experiments.SimSpec`.
        theory: accuracy of the numerics calls.
        trend_ds: smaller dimensions at which a (case, alpha, start) that disagrees with the theory is run
            again (same seeds): the finite-size trend of the gap.
        rank_quadrature: the Sobol rule of the rank-r solves; their other settings are the solver's defaults,
            those of ``attnphase solve --rank`` (tol 1e-10).
        aligned_max_L: the largest L whose rank-1 cases get the aligned-prox points
            (:mod:`attnphase.validation.basin_theory`); the quick plan stops at L = 2 (at L = 3 a positional aligned
            solve takes minutes).
    """

    quick: bool
    d: int
    seeds: tuple[int, ...]
    cases: tuple[SuiteCase, ...] = GENERAL_CASES
    grid: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
    n_test: int = 10000
    device: str = "auto"
    dtype: str = "float64"
    theory: TheorySettings = field(default_factory=TheorySettings)
    trend_ds: tuple[int, ...] = ()
    rank_quadrature: str = "sobol12"
    aligned_max_L: int = 8
    train: TrainConfig = field(default_factory=TrainConfig)

    def spec(self, case: SuiteCase, alpha: float, init: str, seed: int, d: int | None = None) -> SimSpec:
        return SimSpec(d=d or self.d, alpha=alpha, init=init, seed=seed, params=case.params, train=self.train,
                       n_test=self.n_test, device=self.device, dtype=self.dtype)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON, its training's ``grad_tol`` the tolerance the runs use (the dtype's default where
        unset)."""
        cases = [{"key": c.key, "title": c.title, "params": c.params.to_dict(), "alphas": list(c.alphas),
                  "theory": "rank-r" if is_rank_case(c.params) else "rank-1"} for c in self.cases]
        return asdict(self) | {"cases": cases, "train": asdict(self.train.for_dtype(resolve_dtype(self.dtype)))}


def select_cases(keys: str | None) -> tuple[SuiteCase, ...]:
    """The cases named in ``keys`` (comma-separated, e.g. ``"d,e"``; all where None), in the suite's order;
    ValueError naming ``--cases`` for an unknown key."""
    if keys is None:
        return GENERAL_CASES
    wanted = [k.strip().strip("()") for k in keys.split(",") if k.strip()]
    known = [c.key for c in GENERAL_CASES]
    if not wanted or any(k not in known for k in wanted):
        raise ValueError(f"--cases must be a comma-separated list of {', '.join(known)}, got {keys!r}")
    return tuple(c for c in GENERAL_CASES if c.key in wanted)


def general_plan(quick: bool = False, d: int | None = None, seeds: int | None = None, device: str = "auto",
                 dtype: str = "float64", cases: tuple[SuiteCase, ...] = GENERAL_CASES,
                 train: TrainConfig | None = None) -> GeneralPlan:
    """The suite's plan: quick (d = 200, 3 seeds, coarse theory; minutes on 2 cores) or full (d = 1000, 4 seeds)."""
    d = d or (200 if quick else 1000)
    common = dict(quick=quick, d=d, cases=cases, device=device, dtype=dtype, train=train or TrainConfig(),
                  trend_ds=tuple(x for x in (d // 4, d // 2) if x >= 10))
    if quick:
        return GeneralPlan(**common, seeds=tuple(range(seeds or 3)), n_test=4000, aligned_max_L=2,
                           theory=TheorySettings(tol=1e-8, xtol=1e-2, end_tol=1e-2))
    return GeneralPlan(**common, seeds=tuple(range(seeds or 4)), theory=TheorySettings(xtol=1e-3),
                       grid=(0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0))
