"""The boundaries' table at every rank, as the phase-diagram and scan jobs write and print it: one row per model
(:meth:`~attnphase.numerics.phase.boundary_results.Boundaries.row`), the notes, and where the job has errors each
boundary's ``err_<boundary>`` and ``<boundary>_found``.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from attnphase.display import with_error
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.errors.replicates import replicate_count
from attnphase.numerics.phase.boundary_refinement import INTERVAL_NOTE
from attnphase.numerics.phase.boundary_results import (Boundaries, boundary_columns, boundary_keys, error_columns,
                                                      model_branches)


def csv_columns(r: int = 1, errors: bool = False) -> tuple[str, ...]:
    """The table's columns at student rank r; ``errors``: with the error columns."""
    return boundary_columns(r) + ("notes",) + (error_columns(r) if errors else ())


def boundary_table(rows: Sequence[Boundaries], errors: Sequence[dict] | None) -> list[dict]:
    """Each row's columns (:meth:`Boundaries.row`) with ``errors[i]`` (None: without error columns)."""
    if errors:
        return [b.row() | errors[i] for i, b in enumerate(rows)]
    return [{k: v for k, v in b.row().items() if k not in error_columns(b.r)} for b in rows]


def bracket_widths(rows: Sequence[Boundaries]) -> bool:
    """Whether the rows' errors are bracket widths (the search of r >= 2 or r* >= 2)."""
    return any((b.r, b.r_star) != (1, 1) for b in rows)


def interval_omegas(rows: Sequence[Boundaries]) -> list[float]:
    """The omegas of the rank-1 rows whose alpha_l is an interval's centre, its error the half-width."""
    return [b.omega for b in rows if (b.r, b.r_star) == (1, 1) and any(INTERVAL_NOTE in n for n in b.notes)]


def error_label(config: SolverConfig, n_rules: int, rows: Sequence[Boundaries] = ()) -> str:
    """What the error bars of the table of ``rows`` are ('' for none): bracket widths and the like at r >= 2
    (:func:`bracket_widths`), else the rules' standard errors, naming the omegas where alpha_l's is a half-width
    (:func:`interval_omegas`)."""
    intervals = interval_omegas(rows)
    if bracket_widths(rows):
        return ("as each boundary's method says: a root's the rule's standard error with the bracket width, an interval's "
                "half-width where Delta e_t's sign is not established, a bracket width")
    if n_rules:
        label = f"spread over {n_rules} independent rules"
    else:
        R = replicate_count(config)
        label = f"standard error over {R} scrambling blocks of each rule" if R else ""
    if label and intervals:
        label += ("; alpha_l's at omega = " + ", ".join(f"{w:g}" for w in intervals)
                  + ": the half-width of an interval (its notes)")
    return label


#: The printed table's heading of each branch's end.
_END_HEAD = {"semantic": "sem_end", "positional": "pos_end", "mixed": "mix_end"}


def _fmt(x: float) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.4f}"


def boundary_cell(row: dict, key: str, barred: bool) -> str:
    """The printed tables' cell of boundary ``key`` (phase-diagram's and scan's): ``value +- err`` where the table
    has bars (``value +- nan`` where this one has none), else the value to 4 decimals; ``nan`` where there is none
    (NaN or null)."""
    value, err = row.get(key), row.get("err_" + key)
    value = math.nan if value is None else float(value)
    err = math.nan if err is None else float(err)
    if not barred:
        return _fmt(value)
    if math.isfinite(value) and math.isfinite(err):
        return with_error(value, err)
    return _fmt(value) + (" +- nan" if math.isfinite(value) else "")


def print_boundary_table(table: list[dict], label: str, r: int = 1) -> None:
    """The boundaries at each omega, each with its error bar where ``label`` names them; at r >= 2 the branches alpha_c
    lies between."""
    keys = boundary_keys(r)
    width = 18 if label else 9
    heads = [_END_HEAD.get(k[:-4], k) if k.endswith("_end") else k for k in keys]
    pair = r >= 2
    print(f"{'omega':>7} " + " ".join(f"{h:>{width}}" for h in heads) + ("  alpha_c between" if pair else "")
          + "  notes" + (f"   (+- {label})" if label else ""))
    for row in table:
        cells = [boundary_cell(row, k, bool(label)) for k in keys]
        pair_text = f"{row['alpha_c_from']}->{row['alpha_c_to']}" if row.get("alpha_c_from") else "-"
        between = f"  {pair_text:>15}" if pair else ""
        print(f"{row['omega']:7.3f} " + " ".join(f"{c:>{width}}" for c in cells) + between + f"  {row['notes']}")


def births_note(table: list[dict], r: int = 1, at: str = "omega") -> str:
    """The ends in a table that are a branch's birth (the branch exists above them, ``<branch>_end_exists``), said for
    every branch but the semantic one, whose end always is ("" when there are none), each row named by its columns
    ``at`` (comma-separated, e.g. "lam,omega"): a positional end is otherwise where the branch stops, going up; an
    end whose kind is a solver failure is said as such, not as a birth."""
    said = []
    for br in model_branches(r)[1:]:
        above = [row for row in table if row.get(f"{br}_end_exists") == "above"]
        failed = [row for row in above if "solver failure" in str(row.get(f"{br}_end_kind", ""))]
        rows = [row for row in above if row not in failed]
        head = _END_HEAD.get(br, br + "_end")
        if rows:
            said.append(f"{head} is a {br} branch's birth, the branch existing above it ({br}_end_exists), at "
                        f"{rows_named(rows, at)}")
        if failed:  # not a birth: the solves below it did not converge (its kind says so; {br}_end_found 0)
            said.append(f"{head} is where the {br} branch was last reached, going down, and the solves below it "
                        f"failed (solver failure, not a birth: {br}_end_found 0), at {rows_named(failed, at)}")
    return "; ".join(said)


def rows_named(rows: list[dict], at: str = "omega") -> str:
    """The ``rows`` of a table named by their columns ``at`` (comma-separated): "omega = 0.1, 0.3", or
    "lam = 0.02, omega = 0.1; lam = 0.03, omega = 0.3"."""
    keys = at.split(",")

    def value(row: dict, k: str) -> str:
        return f"{row[k]:g}" if isinstance(row[k], float) else str(row[k])
    if len(keys) == 1:
        return f"{keys[0]} = " + ", ".join(value(row, keys[0]) for row in rows)
    return "; ".join(", ".join(f"{k} = {value(row, k)}" for k in keys) for row in rows)


#: Why a boundary located by a method has no error bar (the ends' ``<branch>_end_method``).
NO_BAR_METHODS = {"trace": "a traced end is the extreme alpha its trace reached along the branch (--branch-end trace, or "
                            "where the eigenvalue search fails; re-solved there on the finer end rule), not a root the "
                            "rule's blocks move, so it carries none (docs/method.md section 5)"}


def no_bar_reason(methods: set[str], otherwise: str) -> str:
    """Why boundaries located by ``methods`` carry no error bar: :data:`NO_BAR_METHODS`'s reason where they share one
    method it knows, else ``otherwise``."""
    return NO_BAR_METHODS[next(iter(methods))] if len(methods) == 1 and next(iter(methods)) in NO_BAR_METHODS \
        else otherwise


def unbarred_note(table: list[dict], r: int = 1, at: str = "omega") -> str:
    """The boundaries located without an error bar in a table that has them, said ("" when there are none): at which
    rows (named by their columns ``at``, as :func:`rows_named`), and why where the way it was located says
    (:data:`NO_BAR_METHODS`), else that the row's notes say how."""
    said = []
    for k in boundary_keys(r):
        bare = [row for row in table if math.isfinite(_number(row.get(k)))
                and not math.isfinite(_number(row.get(f"err_{k}")))]
        if not bare:
            continue
        why = no_bar_reason({row.get(f"{k}_method") for row in bare}, "the row's notes say how it was located")
        said.append(f"{k} has no error bar at {rows_named(bare, at)}: {why}")
    return "; ".join(said)


def with_unbarred_note(obj: dict, r: int = 1, at: str = "omega") -> dict:
    """A boundary table's JSON ``obj`` (its ``rows``, ``error_bars``) with ``error_note`` naming the boundaries
    located without an error bar (:func:`unbarred_note`, said on stderr with the table), where it has bars and no
    note yet (a traced end: README, a missing bar is said in the JSON)."""
    if "error_note" in obj or obj.get("error_bars") == "none":
        return obj
    note = unbarred_note(obj["rows"], r, at=at)
    return obj | {"error_note": note} if note else obj


def unlocated_note(table: list[dict], r: int = 1, at: str = "omega") -> str:
    """Where a table's boundaries are NaN (not located), said with where to read why ("" where every one is
    located): each boundary and its rows (:func:`rows_named`)."""
    said = [f"{k} at {rows_named(rows, at)}" for k in boundary_keys(r)
            if (rows := [row for row in table if not math.isfinite(_number(row.get(k)))])]
    return ("no boundary located (nan) for " + "; ".join(said) + ": the notes column of the CSV says why") if said \
        else ""


def _number(x: Any) -> float:
    """A table's cell as a float: NaN for None (JSON's null) or text."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def alpha_max_of(rows: Sequence[Boundaries], alphas: Sequence[float]) -> float:
    """The figure's alpha range: the grid, and boundaries found beyond it (brackets grow up to ALPHA_LIMIT)."""
    found = [getattr(b, k) for b in rows for k in boundary_keys(b.r) if math.isfinite(getattr(b, k))]
    return max([max(alphas)] + [1.05 * a for a in found])
