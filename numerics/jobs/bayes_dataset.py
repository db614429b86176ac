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
    ds["branch"].attrs["long_name"] = "branch of the Bayes-optimal fixed point (informative, uninformative)"
    return ds  # (the ERM sweep's label names semantic, positional, agnostic)


def bayes_diagram_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The CSV text of the diagram's rows (:data:`BAYES_DIAGRAM_COLUMNS`; a threshold that does not exist empty)."""
    return csv_text(({k: ("" if r.get(k) is None else r[k]) for k in BAYES_DIAGRAM_COLUMNS} for r in rows),
                    BAYES_DIAGRAM_COLUMNS)


def bayes_diagram_dataset(rows: Sequence[Mapping[str, Any]], alphas: Sequence[float],
                          curves: Mapping[float, Sequence[Mapping[str, Any]]], attrs: dict[str, Any]):
    """The phase diagram's rows over omega (NaN where a threshold does not exist) and ``curves[omega]`` (one mapping of
    :data:`BAYES_DIAGRAM_CURVES` per alpha of ``alphas``) over (omega, alpha)."""
    import xarray as xr

    om = [float(r["omega"]) for r in rows]
    dv: dict[str, Any] = {}
    for c in BAYES_DIAGRAM_COLUMNS[1:]:
        if c == "estimator" or c.endswith("_note"):
            dv[c] = (("omega",), np.array([str(r[c]) for r in rows], dtype=object))
        else:
            dv[c] = (("omega",), np.array([np.nan if r[c] is None else float(r[c]) for r in rows]))
    for c in BAYES_DIAGRAM_CURVES:
        dv[c] = (("omega", "alpha"), np.array([[float(p[c]) for p in curves[w]] for w in om]))
    coords = {"omega": om, "alpha": [float(a) for a in alphas]}
    return annotate(xr.Dataset(dv, coords=coords, attrs=attrs), lookup)
