"""The derivation checks' reports: the console table, ``check.md`` (markdown), the JSON object (``--json`` and
``check.json``) and ``check.csv`` (one row per check, :data:`CHECK_CSV_COLUMNS`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from attnphase.theory.params import ModelParams

from .common import FAIL, PASS, SKIP, CheckResult


def _fmt(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.2e}"


def text_table(results: Sequence[CheckResult]) -> str:
    """The console table: one row per check, then each check's key numbers."""
    rows = [("#", "check", "what it compares", "worst component", "error", "tolerance", "result", "time")]
    rows += [(str(r.number), r.key, r.compares, r.quantity or "-", _fmt(r.error), _fmt(r.tolerance),
              r.status.upper() if r.status != PASS else "pass", f"{r.seconds:.1f}s") for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(wd) for c, wd in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * wd for wd in widths))
    lines.append("")
    for r in results:
        lines.append(f"[{r.number}] {r.title}: {r.compares}")
        if r.status == SKIP:
            lines.append(f"    skipped: {r.reason}")
            continue
        lines += [f"    {name}: {_short(vals)}" for name, vals in r.details.items()]
        lines.append(f"    error and tolerance: {r.units}; tolerance from {r.tolerance_from}")
        if r.status == FAIL:
            lines.append(f"    FAILED: {r.reason}")
        elif r.reason:
            lines.append(f"    note: {r.reason}")
    return "\n".join(lines)


def _short(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k} {_short(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_short(x) for x in np.asarray(v, dtype=object).ravel().tolist()) + "]"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return str(v)


def _cell(value: Any) -> str:
    """A markdown table cell: its text with every "|" escaped (an unescaped one, as in ``|D(d) - D(2d)|``, splits the
    row into more cells than the heading's)."""
    return str(value).replace("|", "\\|")


def markdown_table(params: ModelParams, alpha: float, results: Sequence[CheckResult], ridge: bool = True) -> str:
    """``check.md``: the model (lambda with ``ridge``: the Bayes-optimal estimator has none), then a markdown table of
    the checks (for a paper's appendix)."""
    p = params
    lam = f"lambda = {p.lam}, " if ridge else ""
    lines = [
        "# Derivation checks", "",
        f"Model: L = {p.L}, sigma = {list(p.sigma)}, A = {[list(r) for r in p.A]}, P = {[list(r) for r in p.P]}, "
        f"omega = {p.omega}, {lam}rho0 = {p.rho0}, r = {p.r}; fixed-point checks at alpha = {alpha}.",
        "Equations: docs/model.md sections 2 (limit loss), 3 (state evolution), 4 (Phi), 5 (linear baseline).", "",
        "| # | Check | What it compares | Worst component | Measured error | Tolerance | Tolerance from | Result |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in (r.number, r.title, r.compares, r.quantity or "-", _fmt(r.error),
                                                  _fmt(r.tolerance), r.reason if r.status == SKIP else r.tolerance_from,
                                                  r.status)) + " |" for r in results]
    fails = [r for r in results if r.status == FAIL]
    lines += ["", f"{sum(r.status == PASS for r in results)} passed, {len(fails)} failed, "
              f"{sum(r.status == SKIP for r in results)} skipped."]
    lines += [f"* {r.line()}" for r in fails]
    return "\n".join(lines) + "\n"


def to_json(params: ModelParams, alpha: float, results: Sequence[CheckResult]) -> dict[str, Any]:
    """One JSON object: the model, alpha, a list of checks, and the overall result (passed: none failed and at least
    one ran; ``check`` exits 1 otherwise)."""
    ran = any(r.status != SKIP for r in results)
    return {"model": params.to_dict(), "alpha": alpha, "passed": ran and all(r.status != FAIL for r in results),
            "checks": [r.as_dict() for r in results]}


#: The columns of ``check.csv``, one row per check (docs/reference/outputs.md).
CHECK_CSV_COLUMNS = ("number", "key", "title", "status", "passed", "skipped", "quantity", "error", "tolerance", "units",
                     "tolerance_from", "reason", "alpha", "seconds")


def check_csv(alpha: float, results: Sequence[CheckResult]) -> str:
    """``check.csv``: one row of :data:`CHECK_CSV_COLUMNS` per check (yes/no columns as 1 / 0, a number that is not
    there -- a skipped check's error and tolerance -- NaN, as in every CSV the tool writes)."""
    from attnphase.execution.dataset import csv_text

    rows = [r.as_dict() | {"passed": r.status == PASS, "skipped": r.status == SKIP, "alpha": alpha,
                           "error": float(r.error), "tolerance": float(r.tolerance), "seconds": round(r.seconds, 3)}
            for r in results]
    return csv_text(rows, CHECK_CSV_COLUMNS)
