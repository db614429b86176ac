"""The phase diagram, the scan and the sweeps as xarray Datasets (:mod:`attnphase.execution.dataset`).

Phase diagram / scan, dimensions ``(<scanned parameter>,) omega``, plus ``branch, alpha`` for the curves:

* the boundaries alpha_c, alpha_l, semantic_end, positional_end, alpha_c_coarse (docs/model.md
  section 6), each with ``<name>_err`` -- its standard error from the rules' scrambling blocks, or
  the spread over ``--error-estimate K`` independent rules (NaN where none) -- and the branch ends' kind
  and method, the notes;
* ``status`` ("done" / "failed") and ``error`` of each task;
* the branches on the alpha grid: eps_g, e_t, m, theta, q, converged (section 4); eps_lin per omega.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from attnphase.numerics.phase.boundaries import BOUNDARY_KEYS, Boundaries
from attnphase.numerics.phase.continuation import BranchSweep

CURVE_KEYS = ("eps_g", "e_t", "m", "theta", "q")
BRANCH_NAMES = ("semantic", "positional")
_BOUNDARY_FLOATS = BOUNDARY_KEYS + ("alpha_c_coarse",)
_BOUNDARY_TEXT = ("semantic_end_kind", "positional_end_kind", "semantic_end_method", "positional_end_method")
_DESCRIPTION = {
    "alpha_c": "where the global minimum switches from the positional to the semantic branch",
    "alpha_l": "where the semantic test error drops below eps_lin",
    "semantic_end": "where the semantic branch ends (followed downward)",
    "positional_end": "where the positional branch ends (followed upward)",
    "alpha_c_coarse": "alpha_c on the solve rule, before the fine-rule Newton correction",
    "eps_g": "test error", "e_t": "training loss per dimension (-Phi)", "m": "positional overlap m_1",
    "theta": "semantic overlap theta", "q": "self-overlap |Q|^2/d", "eps_lin": "linear baseline's test error",
}
_ERR = ("standard error from the rules' independent scrambling blocks, or the sample standard deviation over "
        "--error-estimate K independent rules (NaN: not estimated)")


def _index(values: Sequence[float]) -> dict[float, int]:
    return {float(v): i for i, v in enumerate(values)}


def boundaries_dataset(cells: Sequence[dict[str, Any]], dims: Sequence[str], coords: dict[str, Sequence[Any]],
                       alphas: Sequence[float], attrs: dict[str, Any]):
    """One Dataset from ``cells``: each ``{"at": {dim: value}, "b": Boundaries, "err": dict | None,
    "status": str, "error": str}``; ``coords`` the values of every dim in ``dims`` (omega last)."""
    import xarray as xr

    shape = tuple(len(coords[d]) for d in dims)
    idx = {d: _index(coords[d]) for d in dims}
    alist = [float(a) for a in alphas]
    a_idx = _index(alist)
    floats = {k: np.full(shape, np.nan) for k in _BOUNDARY_FLOATS}
    errs = {k: np.full(shape, np.nan) for k in BOUNDARY_KEYS}
    found = {k: np.zeros(shape, dtype=np.int32) for k in BOUNDARY_KEYS}
    text = {k: np.full(shape, "", dtype=object) for k in _BOUNDARY_TEXT + ("notes", "status", "error")}
    eps_lin = np.full(shape, np.nan)
    curves = {k: np.full(shape + (2, len(alist)), np.nan) for k in CURVE_KEYS}
    converged = np.zeros(shape + (2, len(alist)), dtype=np.int8)
    for cell in cells:
        at = tuple(idx[d][float(cell["at"][d])] for d in dims)
        b: Boundaries = cell["b"]
        for k in _BOUNDARY_FLOATS:
            floats[k][at] = getattr(b, k)
        for k in _BOUNDARY_TEXT:
            text[k][at] = getattr(b, k)
        text["notes"][at] = "; ".join(b.notes)
        text["status"][at] = cell["status"]
        text["error"][at] = cell.get("error", "")
        for k in BOUNDARY_KEYS:
            if cell.get("err"):
                errs[k][at] = cell["err"][f"{k}_err"]
                found[k][at] = cell["err"][f"{k}_found"]
            else:
                found[k][at] = int(math.isfinite(getattr(b, k)))
        for j, sw in enumerate((b.semantic, b.positional)):
            for fp in (sw.points if sw is not None else []):
                i = a_idx.get(float(fp.alpha))
                if i is None or not fp.status.converged:
                    continue
                rec = fp.record
                for k in CURVE_KEYS:
                    curves[k][at + (j, i)] = rec[k]
                converged[at + (j, i)] = 1
                eps_lin[at] = rec["eps_lin"]
    dv: dict[str, Any] = {}
    for k in _BOUNDARY_FLOATS:
        dv[k] = (dims, floats[k], {"description": _DESCRIPTION[k]})
        if k in BOUNDARY_KEYS:
            dv[f"{k}_err"] = (dims, errs[k], {"description": f"error of {k}", "error": _ERR})
            dv[f"{k}_found"] = (dims, found[k], {"description": f"on how many rules {k} was found"})
    for k, v in text.items():
        dv[k] = (dims, v.astype(str))
    dv["eps_lin"] = (dims, eps_lin, {"description": _DESCRIPTION["eps_lin"]})
    cdims = tuple(dims) + ("branch", "alpha")
    for k in CURVE_KEYS:
        dv[k] = (cdims, curves[k], {"description": f"{_DESCRIPTION[k]} on the branch (NaN: not converged there)"})
    dv["converged"] = (cdims, converged, {"description": "1 where the branch's fixed point converged"})
    all_coords = {d: list(coords[d]) for d in dims} | {"branch": list(BRANCH_NAMES), "alpha": alist}
    return xr.Dataset(dv, coords=all_coords, attrs=attrs)


def sweeps_dataset(sweeps: Sequence[tuple[float, BranchSweep | None, str, str]], alphas: Sequence[float],
                   attrs: dict[str, Any]):
    """Sweeps of one branch at several omegas: ``(omega, sweep or None, status, error)`` each;
    dimensions ``omega, alpha``; the branch's end per omega."""
    import xarray as xr

    om = [float(w) for w, *_ in sweeps]
    alist = sorted(float(a) for a in alphas)
    a_idx = _index(alist)
    keys = CURVE_KEYS + ("eps_lin",)
    vals = {k: np.full((len(om), len(alist)), np.nan) for k in keys + tuple(f"err_{k}" for k in CURVE_KEYS)}
    conv = np.zeros((len(om), len(alist)), dtype=np.int8)
    end = np.full(len(om), np.nan)
    end_kind = np.full(len(om), "", dtype=object)
    status = np.array([s for _, _, s, _ in sweeps], dtype=object)
    error = np.array([e for *_, e in sweeps], dtype=object)
    for i, (_, sw, _, _) in enumerate(sweeps):
        if sw is None:
            continue
        end[i], end_kind[i] = sw.end.alpha, sw.end.kind
        for n, fp in enumerate(sw.points):
            j = a_idx.get(float(fp.alpha))
            if j is None or not fp.status.converged:
                continue
            for k in keys:
                vals[k][i, j] = fp.record[k]
            for k in CURVE_KEYS:
                vals[f"err_{k}"][i, j] = sw.errors[n][f"err_{k}"] if sw.errors else math.nan
            conv[i, j] = 1
    dv = {k: (("omega", "alpha"), vals[k], {"description": _DESCRIPTION[k]}) for k in keys}
    dv |= {f"err_{k}": (("omega", "alpha"), vals[f"err_{k}"], {"description": f"{_DESCRIPTION[k]}: {_ERR}"})
           for k in CURVE_KEYS}
    dv["converged"] = (("omega", "alpha"), conv, {"description": "1 where the fixed point converged"})
    dv["end"] = (("omega",), end, {"description": "where the branch ends (NaN: spans the grid)"})
    dv["end_kind"] = (("omega",), end_kind.astype(str))
    dv["status"] = (("omega",), status.astype(str))
    dv["error"] = (("omega",), error.astype(str))
    return xr.Dataset(dv, coords={"omega": om, "alpha": alist}, attrs=attrs)
