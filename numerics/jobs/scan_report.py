"""The ``scan`` job at every rank: the boundaries at every (scanned value, omega) as tasks
(:func:`~attnphase.numerics.jobs.report.compute_boundaries`), into scan.csv, scan.json, scan.nc and a figure per
value (docs/reference/outputs.md).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

from attnphase.execution import ExecutorSpec, ResultStore
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.jobs.boundary_table import (
    alpha_max_of, boundary_table, csv_columns, plain_json,
    write_boundary_csv,
)
from attnphase.numerics.jobs.report import compute_boundaries
from attnphase.numerics.se.starts import teacher_rank
from attnphase.theory.params import ModelParams


def scan_coordinate(field: str, values: Sequence[Any]) -> list[Any]:
    """The dataset coordinate of the scanned values: numbers, or the --sigma texts where one is a vector."""
    if field != "sigma":
        return [v if isinstance(v, (int, float)) else str(v) for v in values]
    try:
        return [float(v) for v in values]
    except ValueError:
        return [str(v).strip() for v in values]


def run_scan(field: str, values: Sequence[Any], models: Sequence[ModelParams], omegas: Sequence[float],
             alphas: Sequence[float], *, out_dir: Path, config: SolverConfig, error_estimate: int = 0,
             executor: ExecutorSpec = ExecutorSpec(), store: ResultStore | None = None, fresh: bool = False,
             quiet: bool = False, command: str = "") -> dict[str, Any]:
    """Compute and write the scan (scan.csv/.json/.nc and a figure per value); returns the summary (scan.json)."""
    from attnphase.execution.dataset import job_attrs, write_netcdf
    from attnphase.numerics.jobs.dataset import boundaries_dataset
    from attnphase.numerics.jobs.plots import plot_phase_diagram
    from attnphase.numerics.jobs.tasks import numerics_version
    from attnphase.numerics.jobs.variables import described

    t0 = time.perf_counter()
    r, r_star = models[0].r, teacher_rank(models[0])
    grid = [m.replace(omega=float(w)) for m in models for w in omegas]
    runs = compute_boundaries(grid, alphas, config, error_estimate, executor=executor, store=store, fresh=fresh,
                              quiet=quiet, desc=f"scan over {field} x omega",
                              tags=[f"{field}={v} " for v in values for _ in omegas])
    coord = scan_coordinate(field, values)
    n = len(omegas)
    table, cells = [], []
    for i, v in enumerate(coord):
        rows = runs.rows[i * n:(i + 1) * n]
        errs = runs.errors[i * n:(i + 1) * n] if runs.errors else None
        plot_phase_diagram(rows, out_dir / f"phase_diagram_{field}{v}.png", alpha_max=alpha_max_of(rows, alphas),
                           errors=errs)
        table += [{field: v} | row for row in boundary_table(rows, errs)]
        for j, b in enumerate(rows):
            o = runs.outcomes[i * n + j]
            cells.append({"at": {field: v, "omega": b.omega}, "b": b, "err": errs[j] if errs else None,
                          "status": o.status if o.ok else "failed", "error": o.error})
    write_boundary_csv(out_dir / "scan.csv", table, bool(runs.errors), first=(field,), r=r)
    version = numerics_version()
    ranks = f" (rank r = {r}, r* = {r_star})" if (r, r_star) != (1, 1) else ""
    attrs = job_attrs("scan", version=version, model=models[0].to_dict() | {"omega": "scanned", field: "scanned"},
                      solver=config.as_dict(), rule=config.quadrature, command=command, scanned=field,
                      error_estimate=error_estimate,
                      title=f"Phase diagram of dot-product attention over {field} and omega{ranks}")
    coords = {field: coord, "omega": [float(w) for w in omegas]}
    write_netcdf(boundaries_dataset(cells, (field, "omega"), coords, alphas, attrs, r), out_dir / "scan.nc")
    summary = {"scanned": field, "values": coord, "rank": r, "teacher_rank": r_star, "omegas": list(omegas),
               "alphas": list(alphas), "solver": config.as_dict(), "error_estimate": error_estimate,
               "rows": plain_json(table), "tasks": runs.counts | {"failures": runs.failures}, "dataset": "scan.nc",
               "variables": described((field,) + csv_columns(r, bool(runs.errors))),
               "code_version": version, "seconds": time.perf_counter() - t0}
    (out_dir / "scan.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary
