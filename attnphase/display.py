"""Numbers as a reader sees them: a value with its error bar, rounded to what the bar leaves of it
(``0.45948 +- 0.00044``); JSON, CSV and netCDF keep the full numbers and their ``err_*`` beside them.
"""

from __future__ import annotations

import math
from typing import Any

#: Significant digits of an error bar.
BAR_DIGITS = 2

#: Significant digits of a number printed without a bar.
PLAIN_DIGITS = 6

#: Values of magnitude in [FIXED_MIN, FIXED_MAX) print in fixed notation, others in scientific ...
FIXED_MIN, FIXED_MAX = 1e-4, 1e6
#: ... and so does a value whose bar would need more decimals than this (a bar at round-off, 2e-21).
MAX_DECIMALS = 12


def finite(x: Any) -> bool:
    """Whether ``x`` is a finite number (a bool, None or text is not)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def plain(value: Any, digits: int = PLAIN_DIGITS) -> str:
    """A number without a bar to ``digits`` significant digits (``nan`` / ``None`` / text as they are)."""
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return "" if value is None else str(value)


def with_error(value: Any, err: Any) -> str:
    """``value +- err``: err to BAR_DIGITS significant digits, value rounded to err's last digit (``0.45948 +-
    0.00044``), in fixed notation for |value| in [1e-4, 1e6) or 0 with a bar of at most MAX_DECIMALS decimals, else
    scientific (``0 +- 2.1e-21``); a bar of 0 prints ``+- 0``, a missing or non-finite one the value alone
    (:func:`plain`).  A value that is not 0 but rounds to 0 at a bar larger than it keeps BAR_DIGITS significant
    digits (``0.56 +- 440``, not ``0 +- 440``)."""
    text = _rounded_to_bar(value, err)
    val, sep, bar = text.partition(" +- ")
    if sep and float(val) == 0.0 and float(value) != 0.0:
        return f"{plain(float(value), BAR_DIGITS)} +- {bar}"
    return text


def _rounded_to_bar(value: Any, err: Any) -> str:
    if not (finite(value) and finite(err)):
        return plain(value)
    value, err = float(value), abs(float(err))
    if err == 0.0:
        return f"{plain(value)} +- 0"
    e = math.floor(math.log10(err))
    # the bar rounded to BAR_DIGITS may gain a digit (0.0996 -> 0.10)
    if round(err, BAR_DIGITS - 1 - e) >= 10.0 ** (e + 1):
        e += 1
    decimals = BAR_DIGITS - 1 - e
    if decimals > MAX_DECIMALS:  # a bar at round-off: scientific (a 0 stays 0)
        if value == 0.0:
            return f"0 +- {err:.{BAR_DIGITS - 1}e}"
    elif value == 0.0 or FIXED_MIN <= abs(value) < FIXED_MAX:
        if decimals >= 0:
            return f"{value:.{decimals}f} +- {err:.{decimals}f}"
        step = 10.0 ** (-decimals)
        return f"{round(value / step) * step:.0f} +- {round(err / step) * step:.0f}"
    mantissa = max(0, math.floor(math.log10(abs(value))) - e + BAR_DIGITS - 1)
    return f"{value:.{mantissa}e} +- {err:.{BAR_DIGITS - 1}e}"


def values_with_errors(values: Any, errors: Any) -> list[str]:
    """Each entry of a list of values with its bar by :func:`with_error` (the value alone where ``errors`` is not a
    list of the same length)."""
    errs = list(errors) if isinstance(errors, (list, tuple)) and len(errors) == len(values) else [None] * len(values)
    return [with_error(x, e) for x, e in zip(values, errs)]


def record_lines(rec: dict, show: Any = None) -> list[str]:
    """``key  value`` lines of a record: a value with its bar ``err_<key>`` by :func:`with_error` on one line (a list
    with a list of bars entry by entry), other numbers by :func:`plain`, anything else by ``show`` (default ``str``)."""
    keys = [k for k in rec if not (k.startswith("err_") and k[4:] in rec)]
    width = max((len(k) for k in keys), default=0)
    lines = []
    for k in keys:
        v = rec[k]
        err = rec.get(f"err_{k}")
        if err is not None and finite(v):
            text = with_error(v, err)
        elif (isinstance(v, (list, tuple)) and v and all(finite(x) for x in v) and isinstance(err, (list, tuple))
              and len(err) == len(v)):
            text = "[" + ", ".join(values_with_errors(v, err)) + "]"  # a matrix invariant, entry by entry
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            text = plain(v, 2 if k in ("residual", "max_relative_error") else PLAIN_DIGITS)
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, float) for x in v):
            text = "[" + ", ".join(plain(x) for x in v) + "]"
        else:
            text = (show or str)(v) if v is not None else "null"  # as in the JSON
        lines.append(f"{k:>{width}}  {text}")
    return lines
