"""The ``phase-diagram --rank R --teacher-rank R*`` and ``scan --rank R --teacher-rank R*`` jobs (r or
r* >= 2): one task per omega (and scanned value) (:func:`~attnphase.numerics.jobs.tasks.rank_boundaries_task`,
stored under ``DIR/tasks``; ``--fresh``, ``--workers``, ``--scheduler`` as for the rank-1 jobs), then
phase_diagram.csv/.json/.nc/.png (scan.csv/.json/.nc and a figure per value) and the printed table.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from attnphase.execution import ExecutorSpec, ResultStore, run_tasks
from attnphase.execution.dataset import Variable, annotate, job_attrs, write_netcdf
from attnphase.execution.progress import TaskBar, failure_summary, job_summary
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.jobs.tasks import numerics_version, rank_boundaries_task
from attnphase.numerics.phase.rank_boundaries import RankBoundaries, rank_branches, rank_columns
from attnphase.numerics.se.starts import teacher_rank
from attnphase.theory.params import ModelParams


def failed_row(params: ModelParams, reason: str) -> RankBoundaries:
    """NaN boundaries whose note is the task's error."""
    nan = math.nan
    return RankBoundaries(params.omega, params.r, teacher_rank(params), nan, nan, "", "", "", nan, nan, "", nan, (),
                          (f"task failed: {reason}",), {})


def rank_variable(name: str) -> Variable | None:
    """The rank-r phase diagram's columns (:mod:`attnphase.numerics.jobs.variables` for the shared ones); its
    ``<boundary>_err`` are the final bracket widths of the root searches, not standard errors."""
    from attnphase.numerics.jobs.variables import VARIABLES, lookup

    branch = next((b for b in ("semantic", "positional", "mixed") if name.startswith(b + "_")), None)
    if name.endswith("_err"):
        of = rank_variable(name[:-4])
        return Variable(name, f"bracket width of {of.long_name}", of.units,
                        "the final bracket of the root search; the boundary lies within it") if of else None
    if branch is not None:
        what = {"end": (f"alpha where the {branch} branch ends", "1"),
                "exists": (f"side of its end on which the {branch} branch exists (above, below)", None),
                "end_kind": (f"what the solve beyond the {branch} branch's end gave", None)}.get(name[len(branch) + 1:])
        return Variable(name, *what) if what else None
    table = {
        "r": Variable("r", "student rank r"), "r_star": Variable("r_star", "teacher rank r*"),
        "alpha_c_from": Variable("alpha_c_from", "branch of the global minimum below alpha_c", None),
        "alpha_c_to": Variable("alpha_c_to", "branch of the global minimum above alpha_c", None),
        "alpha_c_method": Variable("alpha_c_method", "how alpha_c was located", None),
        "alpha_l_branch": Variable("alpha_l_branch", "branch whose test error crosses eps_lin at alpha_l", None),
        "end_method": Variable("end_method", "how the branch ends were located", None),
        "on_branch": Variable("on_branch", "1 where the solve converged on the branch, 0 where not, NaN: not solved"),
        "branch": Variable("branch", "branch of the rank-r state evolution", None),
    }
    return table.get(name) or VARIABLES.get(name) or lookup(name)


def rank_dataset(rows: Sequence[RankBoundaries], alphas: Sequence[float], attrs: dict) -> Any:
    """Dimensions omega, branch, alpha: every column of the rows over omega (text where a column is text),
    and the branch curves e_t, eps_g, on_branch over (branch, omega, alpha); names, long names and units
    as in the CSV (:func:`rank_variable`, CF conventions: :mod:`attnphase.execution.dataset`)."""
    import xarray as xr

    r = rows[0].r
    branches = list(rank_branches(r))
    grid = sorted(float(a) for a in alphas)
    table = [b.row() for b in rows]
    dv: dict[str, Any] = {}
    for k in rank_columns(r):
        vals = [t[k] for t in table]
        if k not in ("omega",) and all(isinstance(v, (int, float)) for v in vals):
            dv[k] = (("omega",), np.array(vals, dtype=float))
        elif k != "omega":
            dv[k] = (("omega",), np.array([str(v) for v in vals], dtype=object))
    shape = (len(branches), len(rows), len(grid))
    curves = {k: np.full(shape, np.nan) for k in ("e_t", "eps_g", "on_branch")}
    for j, b in enumerate(rows):
        for i, br in enumerate(branches):
            for alpha, on, e_t, eps_g in b.curves.get(br, ()):
                if alpha in grid:
                    n = grid.index(alpha)
                    curves["e_t"][i, j, n], curves["eps_g"][i, j, n], curves["on_branch"][i, j, n] = e_t, eps_g, float(on)
    for k, v in curves.items():
        dv[k] = (("branch", "omega", "alpha"), v, {"comment": "on each branch over the alpha grid"})
    ds = xr.Dataset(dv, coords={"omega": [b.omega for b in rows], "branch": branches, "alpha": grid}, attrs=attrs)
    return annotate(ds, rank_variable)


def plot_rank_diagram(rows: Sequence[RankBoundaries], path: Path):
    """Left: alpha_c, alpha_l and the branch ends in the (alpha, omega) plane, error bars = bracket widths;
    middle: those bracket widths on a log scale (at the plane's scale a bar may be thinner than its marker);
    right: e_t of each branch minus the lowest one, over alpha, at the first omega.  Returns the Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from attnphase.numerics.jobs.plots import empty_figure, why_empty

    keys = ["alpha_c", "alpha_l"] + [f"{br}_end" for br in rank_branches(rows[0].r)]
    if not any(math.isfinite(float(b.row()[k])) for b in rows for k in keys):  # every task failed, or nothing found
        return empty_figure(path, f"rank r = {rows[0].r}, r* = {rows[0].r_star}", why_empty(rows, ["alpha_c"]),
                            r"$\alpha$", r"$\omega$")
    fig, (ax, wx, bx) = plt.subplots(1, 3, figsize=(14, 5.4), gridspec_kw={"width_ratios": [2.2, 1, 2.2]})
    wx.sharey(ax)
    om = np.array([b.omega for b in rows])
    series = [("alpha_c", "o-", "k"), ("alpha_l", "s--", "tab:green")] + [
        (f"{br}_end", m, c) for br, m, c in zip(rank_branches(rows[0].r), ("v:", "^:", "d:"),
                                                ("tab:blue", "tab:red", "tab:purple"))]
    table = [b.row() for b in rows]
    for key, fmt, color in series:
        x = np.array([t[key] for t in table], dtype=float)
        err = np.array([t[f"{key}_err"] for t in table], dtype=float)
        failed = np.array([str(t.get(key + "_kind", "")).startswith("no converged") for t in table])
        for part, label, face in ((~failed, key, color), (failed, f"{key} (solver failure beyond)", "none")):
            xs = np.where(part, x, np.nan)
            if np.isfinite(xs).any():
                ax.errorbar(xs, om, xerr=np.where(np.isfinite(err), err, 0.0), fmt=fmt, color=color, mfc=face,
                            capsize=3, label=label)
        shown = np.isfinite(x) & np.isfinite(err) & (err > 0)
        if shown.any():
            wx.plot(err[shown], om[shown], fmt[0] + "-", color=color, gid=f"width_{key}")
    ax.set_xlabel(r"$\alpha$")
    ax.set_ylabel(r"$\omega$")
    ax.set_xlim(left=0)
    ax.set_title(f"rank r = {rows[0].r}, r* = {rows[0].r_star}")
    missing = [k for k in ("alpha_c", "alpha_l") if not np.isfinite([t[k] for t in table]).any()]
    if missing:
        ax.text(0.01, 0.01, " and ".join(missing) + ": not found in the alpha range (see the notes)",
                transform=ax.transAxes, fontsize=8)
    widths = np.concatenate([np.asarray(li.get_xdata(), dtype=float) for li in wx.get_lines()] + [np.array([])])
    if widths.size:
        wx.set_xscale("log")
        wx.set_xlim(10 ** math.floor(math.log10(widths.min()) - 0.15), 10 ** math.ceil(math.log10(widths.max()) + 0.15))
        wx.xaxis.set_minor_formatter(NullFormatter())
    else:
        wx.text(0.5, 0.5, "no bracket", transform=wx.transAxes, ha="center")
    wx.set_xlabel(r"bracket width (in $\alpha$)")
    wx.set_title("error bars (log scale)")
    wx.grid(alpha=0.3, which="both")
    wx.tick_params(labelleft=False)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    first = rows[0]
    curves = {br: [(a, e) for a, on, e, _ in c if on] for br, c in first.curves.items()}
    alphas = sorted({a for c in curves.values() for a, _ in c})
    low = {a: min(e for c in curves.values() for b, e in c if b == a) for a in alphas}
    for br, c in curves.items():
        if c:
            bx.plot([a for a, _ in c], [e - low[a] for a, e in c], "o-", label=br)
    bx.set_xlabel(r"$\alpha$")
    bx.set_ylabel(r"$e_t - \min_{\rm branches} e_t$")
    bx.set_title(f"omega = {first.omega:g}")
    bx.legend(fontsize=8)
    bx.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return fig


def _cell(x: Any, err: Any = None) -> str:
    """A boundary with its error (the bracket width), ``1.2345 +- 0.0012``, rounded to it
    (:func:`attnphase.display.with_error`)."""
    from attnphase.display import with_error

    if isinstance(x, float):
        if not math.isfinite(x):
            return "nan"
        return with_error(x, err) if isinstance(err, float) and math.isfinite(err) else f"{x:.4f}"
    return str(x)


def print_rank_table(rows: Sequence[RankBoundaries]) -> None:
    branches = rank_branches(rows[0].r)
    head = ["omega", "alpha_c", "pair", "alpha_l", "eps_lin"] + [f"{b}_end" for b in branches]
    lines = [head]
    for b in rows:
        t = b.row()
        lines.append([f"{b.omega:g}", _cell(b.alpha_c, b.alpha_c_err), f"{b.alpha_c_from}->{b.alpha_c_to}"
                      if b.alpha_c_from else "", _cell(b.alpha_l, b.alpha_l_err), f"{b.eps_lin:.6g}"]
                     + [_cell(t[f"{br}_end"], t[f"{br}_end_err"]) + (f" ({t[f'{br}_exists'][0]})" if t[f"{br}_exists"]
                                                                      else "") for br in branches])
    width = [max(len(row[i]) for row in lines) for i in range(len(head))]
    for row in lines:
        print("  ".join(c.rjust(w) for c, w in zip(row, width)))
    for b in rows:
        for n in b.notes:
            print(f"  omega = {b.omega:g}: {n}")


def compute_rank_boundaries(models: Sequence[ModelParams], alphas: Sequence[float], config: SolverConfig, *,
                            executor: ExecutorSpec, store: ResultStore | None, fresh: bool, quiet: bool,
                            tags: Sequence[str] | None = None) -> tuple[list[RankBoundaries], dict[str, Any], str]:
    """The rank-r boundaries at every model (one task each): (rows, task counts, failure summary)."""
    version = numerics_version()
    tags = tags or [""] * len(models)
    tasks = [rank_boundaries_task(m, alphas, config, version, tag) for m, tag in zip(models, tags)]
    with TaskBar(f"rank-{models[0].r} boundaries", unit="task", quiet=quiet) as bar:
        outs = run_tasks(tasks, executor=executor, store=store, fresh=fresh, version=version, progress=bar)
    rows = [o.value if o.ok else failed_row(m, o.reason) for m, o in zip(models, outs)]
    counts = {"total": len(outs), "computed": sum(o.status == "done" for o in outs),
              "stored": sum(o.status == "stored" for o in outs), "failed": sum(not o.ok for o in outs)}
    return rows, counts, failure_summary(outs)


def csv_text(table: list[dict], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    w.writeheader()
    w.writerows(table)
    return buf.getvalue()


def plain_json(x: Any) -> Any:
    """NaN -> None, recursively (strict JSON)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: plain_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain_json(v) for v in x]
    return x


def run_rank_scan(field: str, values: Sequence[Any], models: Sequence[ModelParams], omegas: Sequence[float],
                  alphas: Sequence[float], *, out_dir: Path, config: SolverConfig, quiet: bool = False,
                  executor: ExecutorSpec = ExecutorSpec(), store: ResultStore | None = None, fresh: bool = False,
                  command: str = "") -> int:
    """The rank-r boundaries at every (value, omega) into scan.csv/.json/.nc and phase_diagram_<field><v>.png;
    exit code 1 when a task failed."""
    import xarray as xr

    t0 = time.perf_counter()
    grid = [m.replace(omega=float(w)) for m in models for w in omegas]
    rows, counts, failures = compute_rank_boundaries(grid, alphas, config, executor=executor, store=store,
                                                     fresh=fresh, quiet=quiet,
                                                     tags=[f"{field}={v} " for v in values for _ in omegas])
    n, version = len(omegas), numerics_version()
    attrs = job_attrs("scan", version=version, model=models[0].to_dict() | {"omega": "scanned", field: "scanned"},
                      solver=config.as_dict(), rule=config.quadrature, command=command, scanned=field,
                      title=f"Rank-{models[0].r} phase diagram of dot-product attention over {field} and omega")
    coord = [v if isinstance(v, (int, float)) else str(v) for v in values]
    table, parts = [], []
    for i, v in enumerate(coord):
        part = rows[i * n:(i + 1) * n]
        plot_rank_diagram(part, out_dir / f"phase_diagram_{field}{v}.png")
        table += [{field: v} | b.row() for b in part]
        parts.append(rank_dataset(part, alphas, attrs))
        if not quiet:
            print(f"{field} = {v}:")
        print_rank_table(part)
    (out_dir / "scan.csv").write_text(csv_text(table, (field,) + rank_columns(models[0].r)))
    from attnphase.numerics.jobs.variables import lookup

    scan = xr.concat(parts, dim=xr.DataArray(coord, dims=field, name=field))
    write_netcdf(annotate(scan, lambda n: lookup(n) if n == field else rank_variable(n)), out_dir / "scan.nc")
    summary = {"scanned": field, "values": coord, "rank": models[0].r, "teacher_rank": teacher_rank(models[0]),
               "omegas": list(omegas), "alphas": sorted(alphas), "solver": config.as_dict(), "rows": plain_json(table),
               "tasks": counts | {"failures": failures}, "dataset": "scan.nc", "code_version": version,
               "seconds": time.perf_counter() - t0}
    (out_dir / "scan.json").write_text(json.dumps(summary, indent=2, allow_nan=False, default=str))
    return job_summary(f"wrote {out_dir}/scan.csv, .json, .nc and {len(coord)} figures", summary["seconds"], counts,
                       failures)


def run_rank_phase_diagram(params: ModelParams, omegas: Sequence[float], alphas: Sequence[float], *,
                           out_dir: Path, config: SolverConfig, quiet: bool = False,
                           executor: ExecutorSpec = ExecutorSpec(), store: ResultStore | None = None,
                           fresh: bool = False, command: str = "") -> int:
    """The rank-r boundaries at every omega into ``out_dir``; exit code 1 when a task failed."""
    t0 = time.perf_counter()
    version = numerics_version()
    models = [params.replace(omega=float(w)) for w in omegas]
    rows, counts, failures = compute_rank_boundaries(models, alphas, config, executor=executor, store=store,
                                                     fresh=fresh, quiet=quiet)
    (out_dir / "phase_diagram.csv").write_text(csv_text([b.row() for b in rows], rank_columns(params.r)))
    attrs = job_attrs("phase-diagram", version=version, model=params.to_dict() | {"omega": "scanned"},
                      solver=config.as_dict(), rule=config.quadrature, command=command,
                      title=f"Rank-{params.r} phase diagram of dot-product attention over omega")
    write_netcdf(rank_dataset(rows, alphas, attrs), out_dir / "phase_diagram.nc")
    plot_rank_diagram(rows, out_dir / "phase_diagram.png")
    meta = {"params": params.to_dict(), "rank": params.r, "teacher_rank": teacher_rank(params),
            "omegas": list(omegas), "alphas": sorted(alphas), "solver": config.as_dict(),
            "rows": plain_json([b.row() for b in rows]),
            "curves": plain_json({f"{b.omega:g}": b.curves for b in rows}),
            "tasks": counts | {"failures": failures}, "dataset": "phase_diagram.nc", "code_version": version,
            "seconds": time.perf_counter() - t0}
    (out_dir / "phase_diagram.json").write_text(json.dumps(meta, indent=2, allow_nan=False, default=str))
    print_rank_table(rows)
    return job_summary(f"wrote {out_dir}/phase_diagram.csv, .json, .nc, .png", time.perf_counter() - t0, counts, failures)
