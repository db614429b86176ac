"""The phase diagram, the scan, the sweeps and the census as xarray Datasets (:mod:`attnphase.execution.dataset`):
their variables, dimensions and errors are listed in docs/reference/outputs.md (the datasets); names, long names
and units come from :mod:`attnphase.numerics.jobs.variables`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from attnphase.execution.dataset import Variable, annotate
from attnphase.numerics.jobs.boundary_table import bracket_widths
from attnphase.numerics.phase.boundary_results import Boundaries, boundary_columns, boundary_keys, model_branches
from attnphase.numerics.phase.continuation import BranchSweep
from attnphase.numerics.jobs.variables import SWEEP_COLUMNS, lookup
from attnphase.numerics.phase.branch_end import on_branch

CURVE_KEYS = ("eps_g", "e_t", "m", "theta", "q")
_ERR_COMMENT = ("from the rules' independent scrambling blocks, or the sample standard deviation over "
                "--error-estimate K independent rules; NaN: not estimated")
#: ``converged`` on the alpha grid where no solve of the branch was made there (the branch not followed to it).
NOT_SOLVED = -1
_ON_BRANCH = ("on each branch over the alpha grid; NaN where its fixed point did not converge (converged = 0), no "
              "solve of the branch was made there (converged = -1) or the "
              "solve reached another point, the branch absent there (on_branch = 0)")


def _lookup(name: str) -> Variable | None:
    """The table's variable (:mod:`attnphase.numerics.jobs.variables`), the errors' comment saying how they are made."""
    var = lookup(name)
    if var is not None and name in _ERROR_NAMES:
        return replace(var, comment=_ERR_COMMENT)
    return var


_ERROR_NAMES = {f"err_{k}" for k in boundary_keys(2)} | {f"err_{k}" for k in CURVE_KEYS + ("V",)}
_TEXT = ("alpha_c_from", "alpha_c_to", "alpha_c_method", "alpha_l_branch")


def _coord_key(v: Any) -> float | str:
    """A coordinate value as a lookup key: a number as a float, anything else (a per-token --sigma "0.4,0.6") as its text."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v).strip()


def boundaries_dataset(cells: Sequence[dict[str, Any]], dims: Sequence[str], coords: dict[str, Sequence[Any]],
                       alphas: Sequence[float], attrs: dict[str, Any], r: int = 1):
    """One Dataset from ``cells`` (``{"at": {dim: value}, "b": Boundaries, "err": dict | None, "status", "error"}``),
    ``coords`` the values of every dim of ``dims`` (omega last), ``r`` the student rank; the error variables where
    a cell has errors, as the CSV's columns."""
    import xarray as xr

    keys = boundary_keys(r)  # the boundaries (with errors), the other numbers, the text columns
    text_keys = tuple(c for c in boundary_columns(r) if c.endswith(("_kind", "_method", "_exists")) or c in _TEXT)
    other = tuple(c for c in boundary_columns(r) if c not in keys + text_keys + ("omega", "eps_lin"))
    branches = model_branches(r)
    shape = tuple(len(coords[d]) for d in dims)
    idx = {d: {_coord_key(v): i for i, v in enumerate(coords[d])} for d in dims}
    alist = [float(a) for a in alphas]
    a_idx = {a: i for i, a in enumerate(alist)}
    floats = {k: np.full(shape, np.nan) for k in keys + other + ("eps_lin",)}
    errs = {k: np.full(shape, np.nan) for k in keys}
    found = {k: np.zeros(shape, dtype=np.int32) for k in keys}
    text = {k: np.full(shape, "", dtype=object) for k in text_keys + ("notes", "status", "error")}
    curves = {k: np.full(shape + (len(branches), len(alist)), np.nan) for k in CURVE_KEYS}
    converged = np.full(shape + (len(branches), len(alist)), NOT_SOLVED, dtype=np.int8)
    on = np.zeros(shape + (len(branches), len(alist)), dtype=np.int8)
    for cell in cells:
        at = tuple(idx[d][_coord_key(cell["at"][d])] for d in dims)
        b: Boundaries = cell["b"]
        for k, values in floats.items():
            values[at] = getattr(b, k)
        for k in text_keys:
            text[k][at] = getattr(b, k)
        text["notes"][at] = "; ".join(b.notes)
        text["status"][at] = cell["status"]
        text["error"][at] = cell.get("error", "")
        for k in keys:
            if cell.get("err"):
                errs[k][at] = cell["err"][f"err_{k}"]
                found[k][at] = cell["err"][f"{k}_found"]
            else:
                found[k][at] = int(math.isfinite(getattr(b, k)))
        for j, sw in enumerate((b.semantic, b.positional)):
            for fp in (sw.points if sw is not None else []):
                i = a_idx.get(float(fp.alpha))
                if i is None:
                    continue
                converged[at + (j, i)] = int(bool(fp.status.converged))
                if not fp.status.converged:
                    continue
                floats["eps_lin"][at] = fp.record["eps_lin"]
                if on_branch(fp, sw.branch):  # not the agnostic point a start of the branch fell to
                    on[at + (j, i)] = 1
                    for k in CURVE_KEYS:
                        curves[k][at + (j, i)] = fp.record[k]
        for j, br in enumerate(branches):
            for alpha, is_on, e_t, eps_g in b.curves.get(br, ()):
                i = a_idx.get(float(alpha))
                if i is not None and is_on:
                    curves["e_t"][at + (j, i)], curves["eps_g"][at + (j, i)] = e_t, eps_g
                    converged[at + (j, i)] = on[at + (j, i)] = 1
    dv: dict[str, Any] = {}
    with_errors = any(cell.get("err") for cell in cells)  # as the CSV: the error columns where the job has errors
    for k in keys + other:
        dv[k] = (dims, floats[k])
        if k in keys and with_errors:
            dv[f"err_{k}"] = (dims, errs[k])
            dv[f"{k}_found"] = (dims, found[k])
    for k, v in text.items():
        dv[k] = (dims, v.astype(str).astype(object))
    dv["eps_lin"] = (dims, floats["eps_lin"])
    cdims = tuple(dims) + ("branch", "alpha")
    for k in CURVE_KEYS:
        dv[k] = (cdims, curves[k], {"comment": _ON_BRANCH})
    dv["converged"] = (cdims, converged, {"comment": "on each branch over the alpha grid: 1 the solve started on the "
                                                      "branch converged, 0 it did not (solver failure), -1 no solve of "
                                                      "the branch there (not followed to this alpha)"})
    dv["on_branch"] = (cdims, on, {"comment": "on each branch over the alpha grid: 1 where the branch's point is "
                                              "there; converged = 1 and on_branch = 0: the branch is absent there"})
    all_coords = {d: list(coords[d]) for d in dims} | {"branch": list(branches), "alpha": alist}
    widths = bracket_widths([c["b"] for c in cells])
    return annotate(xr.Dataset(dv, coords=all_coords, attrs=attrs), _bracket_lookup if widths else _curve_lookup)


def _bracket_lookup(name: str) -> Variable | None:
    """As :func:`_curve_lookup`, a boundary's ``err_<name>`` its search's final bracket width (r >= 2 or r* >= 2)."""
    of = _curve_lookup(name[4:]) if name.startswith("err_") and name[4:] in boundary_keys(2) else None
    if of is not None:
        return Variable(name, f"bracket width of {of.long_name}", of.units,
                        "the final bracket of the search that located it; the boundary lies within it")
    return _curve_lookup(name)


def _curve_lookup(name: str) -> Variable | None:
    """As :func:`_lookup`; the dimension ``branch`` is the branch each curve follows."""
    if name == "converged":  # three values on the alpha grid (NOT_SOLVED)
        return Variable("converged", "1 where the solve converged, 0 where it did not, -1 where no solve was made", "1",
                        flags=((NOT_SOLVED, "not_solved"), (0, "not_converged"), (1, "converged")))
    return Variable("branch", "branch followed by continuation in alpha", None) if name == "branch" else _lookup(name)


def sweeps_dataset(sweeps: Sequence[tuple[float, BranchSweep | None, str, str, Sequence[dict[str, Any]]]],
                   alphas: Sequence[float], attrs: dict[str, Any], columns: Sequence[str] = SWEEP_COLUMNS):
    """Sweeps of one branch at several omegas, ``(omega, sweep or None, status, error, rows)`` each (``rows`` of
    ``columns``), over ``omega, alpha``: every CSV column but the coordinates (NaN / "" where a task failed), the
    branch's end with its standard error (NaN: none), the positional branch's birth below its first point with its
    standard error (NaN: none located), each task's status and error."""
    import xarray as xr

    om = [float(w) for w, *_ in sweeps]
    alist = sorted(float(a) for a in alphas)
    a_idx = {a: j for j, a in enumerate(alist)}
    shape = (len(om), len(alist))
    columns = [c for c in columns if c not in ("alpha", "omega")]
    values: dict[str, list[list[Any]]] = {c: [[None] * len(alist) for _ in om] for c in columns}
    end, end_err = np.full(len(om), np.nan), np.full(len(om), np.nan)
    end_kind = np.full(len(om), "", dtype=object)
    birth, birth_err = np.full(len(om), np.nan), np.full(len(om), np.nan)
    for i, (_, sw, _, _, rows) in enumerate(sweeps):
        if sw is not None:
            end[i], end_err[i], end_kind[i] = sw.end.alpha, sw.end.err, sw.end.kind
            birth[i], birth_err[i] = sw.birth.alpha, sw.birth.err
        for row in rows:
            j = a_idx.get(float(row["alpha"]))
            if j is not None:
                for c in columns:
                    values[c][i][j] = row.get(c)
    dv: dict[str, Any] = {}
    for c in columns:
        flat = [v for r in values[c] for v in r if v is not None]
        if all(isinstance(v, (bool, int, float, np.integer, np.floating)) for v in flat):
            arr = np.array([[(np.nan if v is None else float(v)) for v in r] for r in values[c]], dtype=float)
            if c == "converged" and flat and all(isinstance(v, (bool, int, np.integer)) for v in flat):
                arr = np.nan_to_num(arr, nan=0.0).astype(np.int8)  # no row: not converged
        else:
            arr = np.array([["" if v is None else str(v) for v in r] for r in values[c]], dtype=object)
        dv[c] = (("omega", "alpha"), arr.reshape(shape))
    dv["end"] = (("omega",), end)
    dv["err_end"] = (("omega",), end_err)
    dv["end_kind"] = (("omega",), end_kind.astype(str).astype(object))
    matrix = any(sw is not None and sw.points and sw.points[0].is_matrix for _, sw, *_ in sweeps)
    if attrs.get("branch") == "positional" and not matrix:  # the birth is looked for at r = r* = 1
        dv["birth"], dv["err_birth"] = (("omega",), birth), (("omega",), birth_err)
    dv["status"] = (("omega",), np.array([s for _, _, s, _, _ in sweeps], dtype=object))
    dv["error"] = (("omega",), np.array([e or "" for _, _, _, e, _ in sweeps], dtype=object))
    return annotate(xr.Dataset(dv, coords={"omega": om, "alpha": alist}, attrs=attrs), _lookup)


def _column(values: Sequence[Any]) -> np.ndarray:
    """A table column as a netCDF variable's values: numbers as float (NaN where a row has none: ``None`` or
    ``""``), whole numbers and booleans as int8/int64 where every row has one, anything else as text."""
    given = [v for v in values if v is not None and v != ""]
    if not all(isinstance(v, (bool, int, float, np.integer, np.floating)) for v in given):
        return np.array(["" if v is None else str(v) for v in values], dtype=object)
    if given and len(given) == len(values) and all(isinstance(v, (bool, np.bool_)) for v in given):
        return np.array([int(v) for v in values], dtype=np.int8)
    if given and len(given) == len(values) and all(isinstance(v, (int, np.integer)) for v in given):
        return np.array(values, dtype=np.int64)
    return np.array([math.nan if v is None or v == "" else float(v) for v in values], dtype=float)


def census_dataset(points: Sequence[dict[str, Any]], columns: Sequence[str], starts: Sequence[dict[str, Any]],
                   start_columns: Sequence[str], attrs: dict[str, Any]):
    """The census as a Dataset: census.csv's columns over ``rank_in_e_t`` (1: the lowest e_t), census_starts.csv's over
    ``start``; each ``err_X`` linked to its X."""
    import xarray as xr

    dv: dict[str, Any] = {c: (("rank_in_e_t",), _column([p.get(c) for p in points]))
                          for c in columns if c != "rank_in_e_t"}
    # a starts' column named as a point's (residual at rank r >= 2) is start_<name>: one must not overwrite the other
    dv |= {(f"start_{c}" if c in dv else c): (("start",), _column([s.get(c) for s in starts]))
           for c in start_columns if c != "start"}
    coords = {"rank_in_e_t": np.arange(1, len(points) + 1, dtype=np.int64),
              "start": np.array([str(s["start"]) for s in starts], dtype=object)}
    return annotate(xr.Dataset(dv, coords=coords, attrs=attrs), lookup)
