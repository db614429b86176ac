"""The ``scan`` job at every rank: the boundaries at every (scanned value, omega) as tasks
(:func:`~attnphase.numerics.jobs.report.compute_boundaries`), into scan.csv, scan.json, scan.nc and a figure per
value (docs/reference/outputs.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

from attnphase.execution import ExecutorSpec, ResultStore
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.jobs.boundary_table import alpha_max_of, boundary_table
from attnphase.numerics.jobs.report import compute_boundaries, model_title, write_boundary_files
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
             quiet: bool = False, command: str = "", amend: Callable[[dict], dict] | None = None) -> dict[str, Any]:
    """Compute and write the scan (scan.csv/.json/.nc and a figure per value); returns the summary (scan.json);
    ``amend(summary)``: the summary with what the caller adds, written into scan.json."""
    from attnphase.numerics.jobs.plots import plot_phase_diagram

    t0 = time.perf_counter()
    grid = [m.replace(omega=float(w)) for m in models for w in omegas]
    runs = compute_boundaries(grid, alphas, config, error_estimate, executor=executor, store=store, fresh=fresh,
                              quiet=quiet, desc=f"scan over {field} x omega",
                              tags=[f"{field}={v} " for v in values for _ in omegas])
    coord = scan_coordinate(field, values)
    n = len(omegas)
    table = []
    for i, v in enumerate(coord):
        rows = runs.rows[i * n:(i + 1) * n]
        errs = runs.errors[i * n:(i + 1) * n] if runs.errors else None
        plot_phase_diagram(rows, out_dir / f"phase_diagram_{field}{v}.png", alpha_max=alpha_max_of(rows, alphas),
                           errors=errs, model=(f"{field} = {v}, " if field not in ("sigma", "lam") else "")
                           + model_title(models[i]))
        table += [{field: v} | row for row in boundary_table(rows, errs)]
    at = [{field: coord[k // n], "omega": b.omega} for k, b in enumerate(runs.rows)]
    fixed, per_value = scan_model(field, coord, models)
    return write_boundary_files(out_dir, "scan", table, runs, at, models[0], omegas, alphas, config, error_estimate,
                                command, t0, f"Phase diagram of dot-product attention over {field} and omega",
                                {"scanned": field, "values": coord, "params": fixed}
                                | ({"models": per_value} if per_value else {}),
                                scanned={field: coord}, model=fixed, amend=amend)


def scan_model(field: str, values: Sequence[Any], models: Sequence[ModelParams]) -> tuple[dict, dict]:
    """(the model the scan holds fixed: ``field`` and omega "scanned", every other parameter that differs between
    the values' models "per value"; each value's model by its text where any does, else {}).  A scan over L takes
    each L's A, P and sigma: they are the values' own, not the first one's."""
    dicts = [m.to_dict() for m in models]
    varying = {k for d in dicts[1:] for k in d if d[k] != dicts[0][k]} - {field, "omega"}
    fixed = dicts[0] | dict.fromkeys(varying, "per value") | {field: "scanned", "omega": "scanned"}
    per_value = {str(v): d | {"omega": "scanned"} for v, d in zip(values, dicts)} if varying else {}
    return fixed, per_value
