"""Derivation checks for one model: every identity that ties the derivation together, with numbers.

``attnphase check`` (:mod:`attnphase.validation.commands.check`) runs them for the model given on the
command line; the tests (``tests/validation/test_derivation_checks.py``) run the same functions at smaller
sizes. Each check returns a :class:`CheckResult`: what it compares, the measured error, the
tolerance, where the tolerance comes from, pass / fail / skip, and its own numbers.

The checks, what each compares and where its tolerance comes from (a round-off bound n_ops u, a Richardson
estimate of a finite difference, ``Z`` standard errors or the Student-t quantile of the same level, a change
of quadrature order): docs/howto/check-a-derivation.md.  The checks' calls into the state evolution go through
:mod:`.adapter`; one module per family of checks, ``common`` and ``roundoff`` what they share, ``tables`` the
reports; here the ordered registry and :func:`run_checks`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

from attnphase.theory.params import ModelParams

from .codegen_check import check_codegen
from .common import (FAIL, FALSE_ALARM, FULL, PASS, QUICK, SKIP, U, Z, CheckResult, CheckSizes, Context, _t_quantile,
                     run_timed)
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
    """The checks named in ``only`` (comma list of numbers or keys; None: all). ValueError for unknown names and for
    a list that names none (``--only ""``: asking for no check is not asking for all)."""
    if only is None:
        return list(CHECKS)
    if not only.strip(" ,"):
        raise ValueError(f"no check named in {only!r}: use numbers 1-7 or {', '.join(c[1] for c in CHECKS)}")
    out = set()
    for wtd in (s.strip().lower() for s in only.split(",") if s.strip()):
        match = [c for c in CHECKS if wtd in (str(c[0]), c[1])]
        if not match:
            raise ValueError(f"unknown check {wtd!r}: use numbers 1-7 or {', '.join(c[1] for c in CHECKS)}")
        out.add(match[0])
    return sorted(out)


def run_checks(params: ModelParams, alpha: float = 2.0, sizes: CheckSizes = FULL, only: str | None = None,
               seed: int = 0, progress: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
    """Run the selected checks for ``params`` (fixed-point checks at ``alpha``); one result per check."""
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha}")
    if params.r != 1:
        raise ValueError(f"the derivation checks need rank r = 1 (the generated kernels are r = 1), got r = {params.r}")
    ctx = Context(params, float(alpha), sizes, seed)
    return run_timed([partial(fn, ctx) for _, _, fn in select_checks(only)], progress)


__all__ = [
    "CHECKS", "CHECK_CSV_COLUMNS", "FULL", "QUICK", "CheckResult", "CheckSizes", "Context", "check_codegen", "check_eps_lin",
    "check_csv", "check_fixed_point", "check_hat_overlaps", "check_limit_loss", "check_prior", "check_prox_derivatives",
    "markdown_table", "run_checks", "select_checks", "text_table", "to_json",
    "FAIL", "FALSE_ALARM", "PASS", "SKIP", "U", "Z", "_t_quantile", "generated_op_count", "limit_loss_differences",
]
