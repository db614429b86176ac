"""A job's self-describing result: one xarray Dataset written as netCDF, and its printed summary.

Named dimensions, each observable with its standard error ``err_<name>``, the task status of every cell, and
the model, settings, code version, command and date as attributes; CF conventions (:data:`CONVENTIONS`),
checked by :func:`cf_problems`. A text-labelled dimension is the auxiliary coordinate ``<dim>_label`` in the
file (:func:`for_file`, :func:`open_dataset`).
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from attnphase import __version__

ENGINE = "netcdf4"
#: The CF version the datasets follow.
CONVENTIONS = "CF-1.10"
#: How the long_name of an error variable begins: a standard error, a root search's bracket width, or (the Bayes-optimal
#: bars) the change from a coarser Gauss rule.
ERROR_KINDS = ("standard error of", "bracket width of", "rule change of")
#: Suffix of the auxiliary coordinate that carries a text-labelled dimension's labels in the file.
LABEL = "_label"


@dataclass(frozen=True)
class Variable:
    """One variable of a job's outputs (CSV, JSON, netCDF); ``units``: UDUNITS, ``"1"`` dimensionless, None: text."""

    name: str
    long_name: str
    units: str | None = "1"
    comment: str = ""
    #: A coded variable's (value, meaning) pairs: CF's flag_values and flag_meanings (:func:`annotate`).
    flags: tuple[tuple[int, str], ...] = ()

    def attrs(self) -> dict[str, str]:
        pairs = (("long_name", self.long_name), ("units", self.units), ("comment", self.comment or None))
        return {k: v for k, v in pairs if v is not None}


def error_name(name: str) -> str | None:
    """The variable ``name`` is the standard error of (``err_X`` -> ``X``: the one form of every output), or None."""
    return name[4:] if name.startswith("err_") else None


def standard_error(of: Variable, name: str) -> Variable:
    """The variable ``name`` holding the standard error of ``of``: same units, NaN where not estimated."""
    return Variable(name, f"standard error of {of.long_name}", of.units, "NaN: not estimated")


def annotate(ds: Any, lookup: Callable[[str], Variable | None]) -> Any:
    """``ds`` with every variable's attributes from ``lookup(name)`` where it knows the name, and every ``err_X``
    (and ``X_found``) listed in ``X``'s ``ancillary_variables``."""
    for name in list(ds.variables):
        if (var := lookup(str(name))) is not None:
            attrs = {k: v for k, v in ds[name].attrs.items() if k not in ("description", "error")}
            ds[name].attrs = attrs | var.attrs()
            if var.flags and ds[name].dtype.kind in "iuf":  # in the variable's own type, as CF asks
                import numpy as np

                ds[name].attrs |= {"flag_values": np.array([v for v, _ in var.flags], dtype=ds[name].dtype),
                                   "flag_meanings": " ".join(m for _, m in var.flags)}
    links: dict[str, list[str]] = {}
    for name in map(str, ds.data_vars):
        of = error_name(name) or (name[:-6] if name.endswith("_found") else None)
        if of is not None and of in ds.variables:
            links.setdefault(of, []).append(name)
    for of, names in links.items():
        ds[of].attrs["ancillary_variables"] = " ".join(sorted(names))
    return ds


def cf_attrs(title: str, command: str = "", created: str = "") -> dict[str, str]:
    """The CF global attributes: Conventions, title, history (date and command), source, references."""
    created = created or time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return {"Conventions": CONVENTIONS, "title": title,
            "history": f"{created}: {command or 'attnphase (library call)'}",
            "source": f"attnphase {__version__}",
            "references": "H. Cui, F. Behrens, F. Krzakala, L. Zdeborova, A phase transition between positional "
                          "and semantic learning in a solvable model of dot-product attention, NeurIPS 2024"}


def job_attrs(job: str, *, version: str, model: Any = None, solver: Any = None, rule: str = "",
              command: str = "", title: str = "", **extra: Any) -> dict[str, str | int | float]:
    """Dataset attributes: the CF ones (:func:`cf_attrs`; ``title`` default "attnphase <job>"), then
    strings and numbers only (netCDF; an integer beyond 64 bits as its text), structured values as JSON text."""
    created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    out: dict[str, Any] = cf_attrs(title or f"attnphase {job}", command, created)
    out |= {"job": job, "attnphase_version": __version__, "code_version": version,
            "created": created, "rule": rule or "", "command": command}
    out |= {k: json.dumps(v, sort_keys=True) for k, v in (("model", model), ("solver", solver)) if v is not None}
    return out | {k: v if isinstance(v, (str, float)) or (isinstance(v, int) and not isinstance(v, bool)
                                                          and INT64[0] <= v <= INT64[1])
                  else str(v) if isinstance(v, int) and not isinstance(v, bool)  # netCDF holds 64-bit integers
                  else json.dumps(v, sort_keys=True) for k, v in extra.items()}


#: The integers a netCDF attribute holds (a larger one, e.g. a seed, is written as its text).
INT64 = (-2 ** 63, 2 ** 63 - 1)


def write_netcdf(ds: Any, path: str | Path) -> None:
    """``ds`` to ``path`` (netCDF4) as CF wants it (:func:`for_file`)."""
    for_file(ds).to_netcdf(path, engine=ENGINE)


def for_file(ds: Any) -> Any:
    """``ds`` as it is written: numeric coordinates in increasing order and without a _FillValue; a text-labelled
    dimension's labels in the auxiliary coordinate ``<dim>_label``."""
    ds = ds.copy()
    for dim in [d for d in ds.dims if d in ds.coords]:
        vals = ds[dim].values
        if ds[dim].dtype.kind in "OUS":
            labels = vals.astype(str).astype(object)
            ds = ds.drop_vars(dim).assign_coords({f"{dim}{LABEL}": ((dim,), labels, dict(ds[dim].attrs))})
        elif (vals[1:] < vals[:-1]).any():
            ds = ds.sortby(dim)
    for name in ds.coords:  # CF: no missing values in a coordinate, so no _FillValue
        if ds[name].dtype.kind not in "OUS":
            ds[name].encoding["_FillValue"] = None
    return ds


def open_dataset(path: str | Path) -> Any:
    """A dataset written by :func:`write_netcdf`, each ``<dim>_label`` its dimension's index again."""
    import xarray as xr

    with xr.open_dataset(path, engine=ENGINE) as ds:
        ds = ds.load()
    for name in list(ds.coords):
        dim = str(name)[: -len(LABEL)] if str(name).endswith(LABEL) else None
        if dim and ds[name].dims == (dim,) and dim not in ds.coords:
            ds = ds.assign_coords({dim: ((dim,), ds[name].values.astype(str), dict(ds[name].attrs))}).drop_vars(name)
    return ds


_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def cf_problems(ds: Any) -> list[str]:
    """Where ``ds``, as written (:func:`for_file`), departs from the CF rules these files follow (empty: none)."""
    out = [f"{name}: coordinate with a _FillValue (CF: coordinates have no missing values)" for name in ds.coords
           if ds[name].dtype.kind not in "OUS" and ds[name].encoding.get("_FillValue") is not None]
    ds = for_file(ds)
    out += [f"global attribute {key} missing" for key in ("Conventions", "title", "history", "source")
            if not str(ds.attrs.get(key, "")).strip()]
    if ds.attrs.get("Conventions") not in (None, CONVENTIONS):
        out.append(f"Conventions is {ds.attrs.get('Conventions')!r}, not {CONVENTIONS!r}")
    for name in ds.variables:
        var, name = ds[name], str(name)
        text = var.dtype.kind in "OUS"
        if not _NAME.match(name):
            out.append(f"{name}: not a CF variable name")
        if not str(var.attrs.get("long_name", "")).strip():
            out.append(f"{name}: no long_name")
        if not text and not str(var.attrs.get("units", "")).strip():
            out.append(f"{name}: numeric without units")
        if text and "units" in var.attrs:
            out.append(f"{name}: text with units")
        if "description" in var.attrs:
            out.append(f"{name}: non-standard attribute description (long_name, comment)")
        if var.dims == (name,):
            if text:
                out.append(f"{name}: coordinate variable of text (CF: numeric; use an auxiliary coordinate)")
            elif var.size > 1 and not ((var.values[1:] > var.values[:-1]).all()
                                       or (var.values[1:] < var.values[:-1]).all()):
                out.append(f"{name}: coordinate variable not strictly monotonic")
        out += [f"{name}: ancillary variable {anc} is not in the file"
                for anc in str(var.attrs.get("ancillary_variables", "")).split() if anc not in ds.variables]
        if (of := error_name(name)) is not None and of in ds.variables:
            if not str(var.attrs.get("long_name", "")).startswith(ERROR_KINDS):
                out.append(f"{name}: long_name does not say what error it is ({' / '.join(ERROR_KINDS)} ...)")
            if var.attrs.get("units") != ds[of].attrs.get("units"):
                out.append(f"{name}: units {var.attrs.get('units')!r} differ from {of}'s")
            if name not in str(ds[of].attrs.get("ancillary_variables", "")).split():
                out.append(f"{of}: ancillary_variables does not list {name}")
        if "flag_values" in var.attrs and len(str(var.attrs.get("flag_meanings", "")).split()) != len(
                var.attrs["flag_values"]):
            out.append(f"{name}: flag_meanings does not name each of flag_values")
        if name in CODED and not text and "flag_values" not in var.attrs:
            out.append(f"{name}: a coded variable without flag_values / flag_meanings")
    return out


#: The variables that hold codes (yes/no as 0/1, or -1 for no solve): CF asks flag_values and flag_meanings.
CODED = ("converged", "on_branch", "stable", "perfect_recovery")


def csv_text(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """The CSV table a job writes beside its dataset: header ``columns``, a line per row (its other keys left
    out), lines ended by "\\n"; a yes/no value as 1 / 0, as in the dataset."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows({k: int(v) if isinstance(v, bool) else v for k, v in row.items()} for row in rows)
    return buf.getvalue()


def variables_map(names: Any, lookup: Callable[[str], Variable | None]) -> dict[str, dict[str, str]]:
    """``{name: {"long_name", "units"}}`` of the columns ``names`` (a JSON file's ``variables``; text: units "")."""
    return {str(n): {"long_name": var.long_name, "units": var.units or ""}
            for n in names if (var := lookup(str(n))) is not None}


def table_lookup(*tables: Mapping[str, Variable]) -> Callable[[str], Variable | None]:
    """A lookup over ``tables`` (the first that knows a name wins) that also answers the standard error
    of every name it knows (``err_X``: :func:`standard_error`)."""
    def lookup(name: str) -> Variable | None:
        for t in tables:
            if name in t:
                return t[name]
        base = lookup(of) if (of := error_name(name)) is not None else None
        return standard_error(base, name) if base is not None else None

    return lookup


def summary(ds: Any) -> dict[str, Any]:
    """A dataset's summary as data (``show --json``; :func:`describe` prints it): job, created, code version,
    dimensions, the coordinates (the first 8 values of each), the task status counted per cell (an omega continued
    in a chain has its chain's) with the dims it is per and the distinct failures (first lines, 5 at most), each
    variable's dims, long_name and units, and for numbers how many are finite, of how many, and their range; the
    attributes."""
    import numpy as np

    out: dict[str, Any] = {"job": ds.attrs.get("job", ""), "created": ds.attrs.get("created"),
                           "code_version": ds.attrs.get("code_version"), "dims": dict(ds.sizes),
                           "coords": {d: [_plain(x) for x in ds.coords[d].values[:8]]
                                      for d in ds.dims if d in ds.coords}}
    if "status" in ds:
        st = [str(x) for x in ds["status"].values.ravel()]
        out["status"] = {"per": list(ds["status"].dims), "counts": {s: st.count(s) for s in sorted(set(st)) if s}}
        if "error" in ds:
            out["status"]["failed"] = sorted({str(e).splitlines()[0] for e in ds["error"].values.ravel() if str(e)})[:5]
    out["variables"] = {}
    for k, var in ds.data_vars.items():
        if k in ("status", "error"):
            continue
        entry: dict[str, Any] = {"dims": list(var.dims), "long_name": var.attrs.get("long_name", ""),
                                 "units": var.attrs.get("units")}
        if var.dtype.kind == "f":
            vals = var.values
            finite = int(np.isfinite(vals).sum())
            entry |= {"finite": finite, "size": int(vals.size),
                      "range": [float(np.nanmin(vals)), float(np.nanmax(vals))] if finite else None}
        out["variables"][k] = entry
    out["attrs"] = {k: _plain(v) for k, v in ds.attrs.items()}
    return out


def describe(ds: Any, name: str = "") -> str:
    """A dataset's summary (:func:`summary`) as text: job, dimensions, variables (with how many finite values), task
    status, failures, and the attributes (model, solver, rule, code version, date)."""
    s = summary(ds)
    head = (f"{s['job']} job, created {s['created'] or '?'}, code {s['code_version'] or '?'}" if s["job"]
            else "a dataset without a job attribute")
    lines = [f"{name or s['job'] or 'dataset'}: {head}",
             "dimensions: " + ", ".join(f"{d} = {n}" for d, n in s["dims"].items())]
    lines += [f"  {d}: " + ", ".join(_fmt(x) for x in values) + (", ..." if s["dims"][d] > 8 else "")
              for d, values in s["coords"].items()]
    if (st := s.get("status")) is not None:
        lines.append(f"status per {' x '.join(st['per'])} (its task's): "
                     + ", ".join(f"{n} {what}" for what, n in st["counts"].items()))
        lines += [f"  failed: {e}" for e in st.get("failed", [])]
    lines.append("variables:")
    for k, v in s["variables"].items():
        units = v["units"] if v["units"] not in (None, "1") else None
        desc = v["long_name"] + (f" [{units}]" if units else "")
        if "finite" in v:
            rng = f"[{_fmt(v['range'][0])}, {_fmt(v['range'][1])}]" if v["finite"] else ""
            lines.append(f"  {k}({', '.join(v['dims'])}): {v['finite']}/{v['size']} finite {rng}  {desc}".rstrip())
        else:
            lines.append(f"  {k}({', '.join(v['dims'])})  {desc}".rstrip())
    lines.append("attributes:")
    for k, v in s["attrs"].items():  # the plan cut short: it is not the settings themselves
        text = str(v)
        lines.append(f"  {k}: {text[:157] + '...' if k == 'plan' and len(text) > 160 else text}")
    return "\n".join(lines)


def _plain(x: Any) -> Any:
    """A numpy scalar as the Python number or text it holds (JSON); anything else as it is."""
    return x.item() if hasattr(x, "item") else x


def _fmt(x: Any) -> str:
    return f"{float(x):.6g}" if isinstance(x, float) or hasattr(x, "dtype") and x.dtype.kind == "f" else str(x)
