"""What every derivation check shares: the tolerance constants, :class:`CheckResult`, the sizes
(:data:`FULL`, :data:`QUICK`), the :class:`Context`, the worst-component verdict, the Student-t
quantile, and the factor F F^T = P of the positions (checks 2 and 4)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from attnphase.execution.outputs import json_value
from attnphase.theory.params import ModelParams

from ..reference import _num
from .adapter import _se_solve

#: Unit round-off of IEEE double precision.
U = 2.0**-53

#: Number of standard errors of a Monte-Carlo tolerance (two-sided false-alarm rate 6e-5).
Z = 4.0

#: Two-sided false-alarm rate of Z standard errors; used for Student-t quantiles with few replicates.
FALSE_ALARM = math.erfc(Z / math.sqrt(2.0))

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclass
class CheckResult:
    """One check's outcome: its number (1..7), ``key`` (``--only``) and title, what it ``compares``, ``status``
    (pass, fail or skip), the worst component (``quantity``, the largest error / tolerance) with its ``error`` and
    ``tolerance`` in ``units`` (NaN when skipped), how the tolerance is derived, why it failed or was skipped
    (``reason``, one line or ""), every component's numbers (``details``) and its wall time."""

    number: int
    key: str
    title: str
    compares: str
    status: str = SKIP
    error: float = math.nan
    tolerance: float = math.nan
    quantity: str = ""
    units: str = ""
    tolerance_from: str = ""
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def line(self) -> str:
        """One line for logs and failure messages."""
        if self.status == SKIP:
            return f"[{self.number}] {self.key}: skipped ({self.reason})"
        head = (f"[{self.number}] {self.key}: {self.status.upper()}: {self.quantity}: "
                f"error {self.error:.3g} vs tolerance {self.tolerance:.3g} ({self.units})")
        return head + (f" -- {self.reason}" if self.reason else "")

    def as_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "details"}
        return out | {"error": _num(self.error), "tolerance": _num(self.tolerance), "seconds": round(self.seconds, 3),
                      "details": json_value(self.details)}


@dataclass(frozen=True)
class CheckSizes:
    """Sizes of every check (the command's defaults; :data:`QUICK` for tests).

    Attributes:
        prox_points: random points of checks 1 and 7 (plus a quarter as many at extreme fields).
        mc_dims, mc_samples: dimensions d and samples per d of the limit-loss fit (check 2).
        hat_rule, hat_replicates: scrambled Sobol size (2^k nodes) and independent scramblings of check 3.
        ridge_d: dimension of the finite-d ridge solve (check 4).
        se_rule: rule of the fixed point (check 5), a ``make_rule`` spec (Sobol: replicates change its seed);
            slope_replicates, slope_step: the independent rules of d e_t / d alpha and its relative step.
        mp_dps, loop_points: digits of the mpmath reference (check 6), points evaluated one by one (check 7).
        bayes_samples: Monte Carlo samples of the Nishimori checks (``--estimator bayes-optimal``).
    """

    prox_points: int = 400
    mc_dims: tuple[int, ...] = (500, 1000, 2000, 4000)
    mc_samples: int = 2000
    hat_rule: int = 13
    hat_replicates: int = 8
    ridge_d: int = 200_000
    se_rule: str = "sobol12"
    slope_replicates: int = 6
    slope_step: float = 0.02
    mp_dps: int = 30
    loop_points: int = 40
    bayes_samples: int = 2**20


FULL = CheckSizes()
QUICK = CheckSizes(prox_points=60, mc_dims=(250, 500, 1000), mc_samples=1000, hat_rule=10, hat_replicates=5,
                   ridge_d=20_000, se_rule="sobol10", slope_replicates=3, slope_step=0.03, mp_dps=20, loop_points=8,
                   bayes_samples=2**16)


@dataclass
class Context:
    """What the checks share: the model, alpha, sizes, seed, and the fixed point (solved once)."""

    params: ModelParams
    alpha: float = 2.0
    sizes: CheckSizes = FULL
    seed: int = 0
    _fp: Any = None
    _fp_note: str = ""

    def rng(self, salt: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, salt])

    def fixed_point(self) -> tuple[Any, str]:
        """(a converged fixed point or None, note): the semantic branch, else positional, else agnostic."""
        if self._fp is None and not self._fp_note:
            notes = []
            for branch in ("semantic", "positional", "agnostic"):
                fp = _se_solve(self.params, self.alpha, branch, self.sizes.se_rule)
                if fp.status.converged:
                    self._fp = fp
                    break
                notes.append(f"{branch}: {fp.status.message}")
            self._fp_note = "; ".join(notes) if self._fp is None else f"{self._fp.branch} fixed point"
        return self._fp, self._fp_note


def _worst(result: CheckResult, components: dict[str, tuple[float, float]], units: str = "") -> CheckResult:
    """Set status, error and tolerance from components name -> (error, tolerance): the largest ratio."""
    ratios = {k: (e / t if t > 0 else (math.inf if e > 0 else 0.0)) for k, (e, t) in components.items()}
    name = max(ratios, key=lambda k: ratios[k] if math.isfinite(ratios[k]) or ratios[k] == math.inf else math.inf)
    err, tol = components[name]
    result.error, result.tolerance = float(err), float(tol)
    result.quantity, result.units = name, units
    bad = [k for k, r in ratios.items() if not (r <= 1.0)]
    result.status = FAIL if bad else PASS
    if bad:
        result.reason = "exceeds tolerance: " + ", ".join(
            f"{k} {components[k][0]:.3g} > {components[k][1]:.3g}" for k in bad[:4]
        ) + (f" (+{len(bad) - 4} more)" if len(bad) > 4 else "")
    for k, (e, t) in components.items():
        slot = result.details.get(k)
        if isinstance(slot, dict):
            slot.update(error=float(e), tolerance=float(t))
        else:
            result.details[k if slot is None else f"{k}: check"] = {"error": float(e), "tolerance": float(t)}
    return result


def _t_quantile(dof: int) -> float:
    """Two-sided Student-t quantile at the false-alarm rate of Z standard errors."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(1.0 - FALSE_ALARM / 2.0, dof))


def _positions_factor(P: np.ndarray) -> np.ndarray:
    """F with F F^T = P (symmetric eigen-factor, negative round-off eigenvalues clipped)."""
    lam, vec = np.linalg.eigh(P)
    return vec * np.sqrt(np.clip(lam, 0.0, None))


def run_timed(calls: Sequence[Callable[[], CheckResult]], progress: Callable[[CheckResult], None] | None = None,
              ) -> list[CheckResult]:
    """Run each check in order, its wall time in ``seconds``, each result passed to ``progress`` as it comes."""
    results = []
    for call in calls:
        t0 = time.perf_counter()
        res = call()
        res.seconds = time.perf_counter() - t0
        results.append(res)
        if progress is not None:
            progress(res)
    return results
