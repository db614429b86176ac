"""The files of ``sweep --estimator bayes-optimal``: its CSV table and its dataset (dimensions branch, omega,
alpha; every column of :data:`~attnphase.numerics.se.bayes_curve.BAYES_SWEEP_COLUMNS` with the units of
:mod:`attnphase.numerics.jobs.variables`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from attnphase.execution.dataset import annotate, csv_text
from attnphase.numerics.jobs.variables import lookup
from attnphase.numerics.se.bayes_curve import BAYES_SWEEP_COLUMNS


def bayes_sweep_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The CSV text of one omega's rows (header :data:`BAYES_SWEEP_COLUMNS`)."""
    return csv_text(rows, BAYES_SWEEP_COLUMNS)


def bayes_sweep_dataset(rows_by_omega: Mapping[float, Sequence[Mapping[str, Any]]], alphas: Sequence[float],
                        branches: Sequence[str], attrs: dict[str, Any]):
    """The sweep's rows as an xarray Dataset over (branch, omega, alpha): numeric columns as floats (NaN where
    absent), ``estimator`` and ``reason`` as text."""
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
    return annotate(xr.Dataset(dv, coords={"branch": list(branches), "omega": om, "alpha": al}, attrs=attrs), lookup)
