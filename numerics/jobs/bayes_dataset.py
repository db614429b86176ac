"""The files of ``sweep`` and ``phase-diagram --estimator bayes-optimal``: their CSV tables and datasets
(docs/reference/outputs.md; units: :mod:`attnphase.numerics.jobs.variables`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attnphase.execution.dataset import annotate, csv_text
from attnphase.numerics.jobs.variables import lookup
from attnphase.numerics.phase.bayes_thresholds import THRESHOLD_KEYS
from attnphase.numerics.se.bayes_curve import BAYES_SWEEP_COLUMNS

#: The columns of ``phase-diagram --estimator bayes-optimal``'s table (one row per omega), in its CSV's order.
BAYES_DIAGRAM_COLUMNS = (("omega", "estimator") + tuple(c for k in THRESHOLD_KEYS for c in (k, f"err_{k}"))
                         + ("eps_lin",) + tuple(f"{k}_note" for k in THRESHOLD_KEYS))

#: The Bayes-optimal estimator's values over (omega, alpha) in the phase diagram's dataset.
BAYES_DIAGRAM_CURVES = ("q", "err_q", "eps_g", "err_eps_g", "perfect_recovery")


def bayes_sweep_dataset(rows_by_omega: Mapping[float, Sequence[Mapping[str, Any]]], alphas: Sequence[float],
                        branches: Sequence[str], attrs: dict[str, Any]):
    """The sweep's rows over (branch, omega, alpha): numbers as floats (NaN where absent), the rest as text."""
    import xarray as xr

    om = sorted(rows_by_omega)
    al = sorted(float(a) for a in alphas)
    idx = {(br, w, a): (i, j, k) for i, br in enumerate(branches) for j, w in enumerate(om) for k, a in enumerate(al)}
    shape = (len(branches), len(om), len(al))
    columns = [c for c in BAYES_SWEEP_COLUMNS if c not in ("alpha", "omega", "branch")]
    text = {"estimator", "reason"}
    data = {c: (np.full(shape, "", dtype=object) if c in text else np.full(shape, np.nan)) for c in columns}
    for w, rows in rows_by_omega.items():
        for row in rows:
            at = idx[(row["branch"], w, float(row["alpha"]))]
            for c in columns:
                data[c][at] = row[c] if c in text else float(row[c])
    dv = {c: (("branch", "omega", "alpha"), v) for c, v in data.items()}
    ds = annotate(xr.Dataset(dv, coords={"branch": list(branches), "omega": om, "alpha": al}, attrs=attrs), lookup)
    ds["branch"].attrs["long_name"] = BRANCH_LONG_NAME
    return rule_change_bars(ds)  # (the ERM sweep's label names semantic, positional, agnostic)


def bayes_diagram_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The CSV text of the diagram's rows (:data:`BAYES_DIAGRAM_COLUMNS`; a threshold that does not exist empty)."""
    return csv_text(({k: ("" if r.get(k) is None else r[k]) for k in BAYES_DIAGRAM_COLUMNS} for r in rows),
                    BAYES_DIAGRAM_COLUMNS)


def bayes_diagram_dataset(rows: Sequence[Mapping[str, Any]], alphas: Sequence[float],
                          curves: Mapping[float, Sequence[Mapping[str, Any]]], attrs: dict[str, Any],
                          tasks: Mapping[str, Sequence[str]] | None = None):
    """The phase diagram's rows over omega (NaN where a threshold does not exist) and ``curves[omega]`` (one mapping of
    :data:`BAYES_DIAGRAM_CURVES` per alpha of ``alphas``, None: NaN) over (omega, alpha); with ``tasks``, each omega's
    task ``status`` and ``error`` (the ERM diagram's variables)."""
    import xarray as xr

    om = [float(r["omega"]) for r in rows]
    dv: dict[str, Any] = {}
    for c in BAYES_DIAGRAM_COLUMNS[1:]:
        if c == "estimator" or c.endswith("_note"):
            dv[c] = (("omega",), np.array([str(r[c]) for r in rows], dtype=object))
        else:
            dv[c] = (("omega",), np.array([np.nan if r[c] is None else float(r[c]) for r in rows]))
    for c in BAYES_DIAGRAM_CURVES:
        dv[c] = (("omega", "alpha"), np.array([[np.nan if p[c] is None else float(p[c]) for p in curves[w]]
                                               for w in om]))
    for name, values in (tasks or {}).items():
        dv[name] = (("omega",), np.array([str(v) for v in values], dtype=object))
    coords = {"omega": om, "alpha": [float(a) for a in alphas]}
    return rule_change_bars(annotate(xr.Dataset(dv, coords=coords, attrs=attrs), lookup))


#: What the Bayes-optimal ``branch`` is (the ERM sweep's names semantic, positional, agnostic).
BRANCH_LONG_NAME = "branch of the Bayes-optimal fixed point (informative, uninformative)"


def bayes_described(names) -> dict[str, dict[str, str]]:
    """A Bayes-optimal JSON file's ``variables`` (:func:`~attnphase.numerics.jobs.variables.described`), its branch
    and error bars named as :func:`rule_change_bars` names them in the datasets."""
    from attnphase.numerics.jobs.variables import described

    out = described(names)
    for name, var in out.items():
        if name == "branch":
            var["long_name"] = BRANCH_LONG_NAME
        elif name.startswith("err_"):
            var["long_name"] = f"rule change of {name[4:]}: its change from the coarser Gauss rule"
    return out


def rule_change_bars(ds):
    """``ds`` with each ``err_<X>`` described as what the Bayes-optimal error bars are (docs/bayes-optimal.md): the
    change of X from a coarser Gauss rule, not a standard error; 0 where every rule gives X exactly."""
    for name in ds.data_vars:
        if str(name).startswith("err_"):
            x = str(name)[4:]
            ds[name].attrs["long_name"] = f"rule change of {x}: its change from the coarser Gauss rule"
            ds[name].attrs["comment"] = (
                "the Bayes-optimal state evolution's error bar (docs/bayes-optimal.md): |X on the fine Gauss rule - X "
                "on the rule of fewer nodes|; 0 where every rule gives X exactly (m = 0; q0 = 0 below weak "
                "recovery; q0 = rho0 at perfect recovery, where eps_g = 0); NaN: not estimated")
    return ds
