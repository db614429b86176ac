"""A job's self-describing result: one xarray Dataset written as netCDF, and its printed summary.

Every job writes ``<job>.nc`` beside its CSV: named dimensions (omega, alpha, branch, replicate,
the scanned parameter, ...), each observable with its error (``<name>_err``; NaN where none was
estimated, the variable's ``error`` attribute says how it is defined), the task status of every
cell, and attributes holding the model, the solver settings, the quadrature rule, the code version,
the command and the date (JSON text where structured).  ``attnphase show DIR`` prints
:func:`describe` of each dataset in DIR.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

ENGINE = "netcdf4"


def job_attrs(job: str, *, version: str, model: Any = None, solver: Any = None, rule: str = "",
              command: str = "", **extra: Any) -> dict[str, str | int | float]:
    """Dataset attributes: strings and numbers only (netCDF), structured values as JSON text."""
    from attnphase import __version__

    out: dict[str, Any] = {"job": job, "attnphase_version": __version__, "code_version": version,
                           "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "rule": rule or "", "command": command}
    if model is not None:
        out["model"] = json.dumps(model, sort_keys=True)
    if solver is not None:
        out["solver"] = json.dumps(solver, sort_keys=True)
    for k, v in extra.items():
        out[k] = v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else json.dumps(v, sort_keys=True)
    return out


def write_netcdf(ds: Any, path: str | Path) -> None:
    """``ds`` to ``path`` (netCDF4); strings as variable-length strings.  The caller writes into a
    staging folder (:func:`attnphase.outputs.staged_output`): the file is complete or absent."""
    ds.to_netcdf(path, engine=ENGINE)


def open_dataset(path: str | Path) -> Any:
    import xarray as xr

    with xr.open_dataset(path, engine=ENGINE) as ds:
        return ds.load()


def describe(ds: Any, name: str = "") -> str:
    """A dataset's summary: job, dimensions, variables (with how many finite values), task status,
    failures, and the attributes (model, solver, rule, code version, date)."""
    lines = [f"{name or ds.attrs.get('job', 'dataset')}: {ds.attrs.get('job', '')} job, created "
             f"{ds.attrs.get('created', '?')}, code {ds.attrs.get('code_version', '?')}"]
    lines.append("dimensions: " + ", ".join(f"{d} = {n}" for d, n in ds.sizes.items()))
    for d in ds.dims:
        if d in ds.coords:
            v = ds.coords[d].values
            shown = ", ".join(_fmt(x) for x in v[:8]) + (", ..." if len(v) > 8 else "")
            lines.append(f"  {d}: {shown}")
    if "status" in ds:
        st = ds["status"].values.ravel()
        counts = {s: int((st == s).sum()) for s in sorted(set(map(str, st))) if s}
        lines.append("tasks: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
        if "error" in ds:
            errs = sorted({str(e).splitlines()[0] for e in ds["error"].values.ravel() if str(e)})
            lines += [f"  failed: {e}" for e in errs[:5]]
    lines.append("variables:")
    for k, var in ds.data_vars.items():
        if k in ("status", "error"):
            continue
        desc = var.attrs.get("description", "")
        if var.dtype.kind == "f":
            vals = var.values
            finite = int(sum(math.isfinite(float(x)) for x in vals.ravel()))
            rng = f"[{_fmt(float(vals[~_isnan(vals)].min()))}, {_fmt(float(vals[~_isnan(vals)].max()))}]" if finite else ""
            lines.append(f"  {k}({', '.join(var.dims)}): {finite}/{vals.size} finite {rng}  {desc}".rstrip())
        else:
            lines.append(f"  {k}({', '.join(var.dims)})  {desc}".rstrip())
    lines.append("attributes:")
    for k, v in ds.attrs.items():
        text = str(v)
        if k in ("plan",) and len(text) > 160:  # the long ones that are not the settings themselves
            text = text[:157] + "..."
        lines.append(f"  {k}: {text}")
    return "\n".join(lines)


def _isnan(a: Any) -> Any:
    import numpy as np

    return np.isnan(a)


def _fmt(x: Any) -> str:
    if isinstance(x, float) or hasattr(x, "dtype") and getattr(x, "dtype").kind == "f":
        return f"{float(x):.6g}"
    return str(x)
