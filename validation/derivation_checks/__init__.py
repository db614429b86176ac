"""Derivation checks for one model: every identity that ties the derivation together, with numbers.

``attnphase check`` (:mod:`attnphase.validation.commands.check`) runs them for the model given on the
command line; the tests (``tests/validation/test_derivation_checks.py``) run the same functions at smaller
sizes. Each check returns a :class:`CheckResult`: what it compares, the measured error, the
tolerance, where the tolerance comes from, pass / fail / skip, and its own numbers. Sections of
``docs/model.md``: 2 limit loss, 3 SE equations, 4 observables and Phi, 5 linear baseline.

1. ``prox`` -- the generated proximal objective, gradient and Hessian in h (section 3) against
   PyTorch autograd of an independently written objective and against central differences of the
   generated value / gradient, at random points and at extreme fields (|h| up to 1e3).
2. ``limit-loss`` -- the generated limit loss (section 2) against the finite-d loss on the same
   samples; the paired difference Delta(d) is fitted by a + b/d over a few d; a must vanish.
3. ``hats`` -- the hat overlaps (section 3) against central differences of alpha E[M] in the
   overlaps (q0, V0, m_l, th0) on fixed rules (common random numbers): the channel side is the
   stationarity of Phi (section 4) in the overlaps.
4. ``prior`` -- the closed-form prior update (section 3) against a direct finite-d ridge solve.
5. ``fixed-point`` -- at a converged fixed point: one more SE map moves nothing; e_t = -Phi equals
   lambda Tr(q0)/2 + alpha E[loss(h_hat)]; d e_t / d alpha = E[M] along the branch.
6. ``eps-lin`` -- eps_lin (section 5) in double against 30-digit mpmath (L = 2 only).
7. ``codegen`` -- the generated kernels with and without common-subexpression elimination agree,
   the batched kernels agree with per-point calls and with the one-point (scalar) variant.

Tolerances are derived from each method's error and stated with the result:

* round-off: an a-priori bound n_ops * u * (size of the terms), n_ops the arithmetic operations in
  the generated function, u = 2^-53;
* finite differences: the Richardson estimate |D(h) - D(2h)| (three times the estimated truncation
  error of D(h)) plus the round-off of the difference quotient;
* Monte Carlo / randomised quasi-Monte Carlo: ``Z`` (= 4) standard errors, or the Student-t quantile
  of the same two-sided level (6e-5) when the standard error comes from a few replicates;
* Gauss--Hermite truncation: the change when the order is raised by half.

Every call into :mod:`attnphase.numerics` goes through :mod:`.adapter` (a few small functions), so
that a change of the numerics API is absorbed there. torch is imported only by check 1.

The modules: ``common`` (constants, results, sizes, context), ``adapter`` (the numerics calls),
``roundoff`` (round-off bounds of the generated code), one module per family of checks
(``prox_check`` 1, ``limit_loss_check`` 2, ``se_checks`` 3-5, ``eps_lin_check`` 6, ``codegen_check`` 7),
``tables`` (text, markdown, JSON); here the ordered registry and :func:`run_checks`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from attnphase.theory.params import ModelParams

from .codegen_check import check_codegen
from .common import FAIL, FALSE_ALARM, FULL, PASS, QUICK, SKIP, U, Z, CheckResult, CheckSizes, Context, _t_quantile
from .eps_lin_check import check_eps_lin
from .limit_loss_check import check_limit_loss, limit_loss_differences
from .prox_check import check_prox_derivatives
from .roundoff import generated_op_count
from .se_checks import check_fixed_point, check_hat_overlaps, check_prior
from .tables import CHECK_CSV_COLUMNS, check_csv, markdown_table, text_table, to_json


#: The checks in order: (number, key, function).
CHECKS: tuple[tuple[int, str, Callable[[Context], CheckResult]], ...] = (
    (1, "prox", check_prox_derivatives),
    (2, "limit-loss", check_limit_loss),
    (3, "hats", check_hat_overlaps),
    (4, "prior", check_prior),
    (5, "fixed-point", check_fixed_point),
    (6, "eps-lin", check_eps_lin),
    (7, "codegen", check_codegen),
)


def select_checks(only: str | None) -> list[tuple[int, str, Callable[[Context], CheckResult]]]:
    """The checks named in ``only`` (comma list of numbers or keys; None: all). ValueError for unknown names."""
    if only is None or not only.strip():
        return list(CHECKS)
    wanted = [s.strip().lower() for s in only.split(",") if s.strip()]
    out = []
    for wtd in wanted:
        match = [c for c in CHECKS if wtd in (str(c[0]), c[1])]
        if not match:
            raise ValueError(f"unknown check {wtd!r}: use numbers 1-7 or {', '.join(c[1] for c in CHECKS)}")
        if match[0] not in out:
            out.append(match[0])
    return sorted(out)


def run_checks(
    params: ModelParams,
    alpha: float = 2.0,
    sizes: CheckSizes = FULL,
    only: str | None = None,
    seed: int = 0,
    progress: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Run the selected checks for ``params`` (fixed-point checks at ``alpha``); one result per check."""
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha}")
    if params.r != 1:
        raise ValueError(f"the derivation checks need rank r = 1 (the generated kernels are r = 1), got r = {params.r}")
    ctx = Context(params, float(alpha), sizes, seed)
    results = []
    for _, _, fn in select_checks(only):
        t0 = time.perf_counter()
        res = fn(ctx)
        res.seconds = time.perf_counter() - t0
        results.append(res)
        if progress is not None:
            progress(res)
    return results


__all__ = [
    "CHECKS", "CHECK_CSV_COLUMNS", "FULL", "QUICK", "CheckResult", "CheckSizes", "Context", "check_codegen", "check_eps_lin",
    "check_csv", "check_fixed_point", "check_hat_overlaps", "check_limit_loss", "check_prior", "check_prox_derivatives",
    "markdown_table", "run_checks", "select_checks", "text_table", "to_json",
    # re-exported from the submodules for the callers of the former single module
    "FAIL", "FALSE_ALARM", "PASS", "SKIP", "U", "Z", "_t_quantile", "generated_op_count", "limit_loss_differences",
]
