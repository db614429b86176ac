"""Figures of a validation campaign from its summary dict (:func:`attnphase.validation.campaign.run_campaign`, with
its ``headline`` where present); Agg backend, files only.  ``fig2_alpha_sweep.png`` (:func:`plot_alpha_sweep`),
``fig3_heatmap.png`` (:func:`plot_heatmap`) and ``finite_size.png`` (:func:`plot_finite_size`): docs/validation.md,
"``validate``"; each theory branch drawn only where it exists, its end marked by a tick up from the x axis
(:mod:`attnphase.validation.branch_segments`).
"""

from __future__ import annotations

import itertools
import math
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from attnphase.display import with_error

from .agreement import _COMPARED, global_vs_local
from .branch_segments import drawn_end, exists_at, existing_segments
from .reference import _nan

_INIT_STYLE = {"semantic": ("o", "C0"), "positional": ("s", "C1"), "random": ("^", "C2")}
#: The line style and marker of a proximal map's theory curve (global: the global minimiser; local: from the start).
_PROX_STYLE = {"global": ("-", "o"), "local": ("--", "P")}
#: The line style of the theory a finite-size deviation is measured from, and its marker at d -> inf.
_GAP_STYLE = {"global": ("-", "*"), "local": ("--", "P"), "aligned": ("-.", "D")}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: A bar shorter than this fraction of the panel's height is hidden by its marker.
TINY_BAR = 0.01


def tiny_bars(ax: Any, stds: Any) -> str:
    """The note a panel needs when its largest error bar is hidden by its marker (under TINY_BAR of its y range),
    with the bar's size, or "": a reader must not take an invisible bar for a missing one."""
    vals = [float(v) for v in stds if v is not None and math.isfinite(float(v))]
    if not vals:
        return ""
    lo, hi = ax.get_ylim()
    hidden = max(vals) < TINY_BAR * abs(hi - lo)
    return f"GD +- std: bars within the markers (largest {max(vals):.1g})" if hidden else ""


def say_empty(ax: Any, why: str) -> None:
    """Say in an empty panel why it is empty (never a blank frame a reader takes for a plotting error)."""
    ax.text(0.5, 0.5, "\n".join(textwrap.wrap(why, 44)), transform=ax.transAxes, ha="center", va="center", fontsize=9,
            color="0.3", gid="why_empty")


def plot_theory_branch(ax: Any, theory: dict[str, Any], key: str, obs: str, color: str, ls: str, label: str,
                       absolute: bool = False, marker: str | None = None, lw: float = 1.5, ms: float | None = 4,
                       end_label: str | None = None) -> None:
    """One theory branch (``key`` = ``"branch/prox"``) drawn only where it exists, its end marked (a tick up
    from the x axis in the branch's colour, labelled ``end_label``); ``marker`` at every grid point where given."""
    c = theory["curves"].get(key)
    if c is None:
        return
    branch = key.split("/")[0]
    end = _nan(c.get("end"))
    for i, (a, v) in enumerate(existing_segments(c["records"], branch, end, obs, absolute)):
        ax.plot(a, v, color=color, ls=ls, lw=lw, marker=marker or ("." if len(a) == 1 else None), ms=ms,
                label=f"theory {label}" if i == 0 else None, gid=f"theory_{key}")
    at = drawn_end(c["records"], branch, end)
    if at is not None:
        ax.axvline(at, ymin=0.0, ymax=0.08, color=color, lw=3, solid_capstyle="butt", label=end_label)


def plot_alpha_sweep(summary: dict[str, Any], path: Path) -> None:
    """Fig. 2: theory curves and simulation means +- std against alpha."""
    plt = _plt()
    th = summary["theory"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    panels = (("abs_m", "|m|"), ("abs_theta", "|theta|"), ("eps_g", "eps_g"))
    for ax, (obs, label) in zip(axes.flat, panels):
        key = obs.replace("abs_", "")
        for ckey, color, ls in (("semantic/global", "C0", "-"), ("semantic/local", "C0", "--"),
                                ("positional/global", "C1", "-"), ("positional/local", "C1", ":")):
            plot_theory_branch(ax, th, ckey, key, color, ls, ckey.replace("/", ", ") + " prox",
                               absolute=obs.startswith("abs_"))
        for branch, color in (("semantic", "C0"), ("positional", "C1")):
            if aligned_differs(th, branch):  # the basin GD keeps from its start, where it is not the global point
                plot_theory_branch(ax, th, f"{branch}/aligned", key, color, "-", f"{branch}, aligned prox",
                                   absolute=obs.startswith("abs_"), marker="d", lw=0.8)
        if not ax.lines and not summary["sweep"]:
            say_empty(ax, "nothing to draw: no theory branch exists on the grid and no GD run is summarised")
        if obs == "eps_g":
            line = ax.axhline(th["eps_lin"], color="C4", lw=1.2, ls="-", label="theory eps_lin")
            ax.legend(handles=[line], fontsize=8, loc="upper right")
        for init, (marker, color) in _INIT_STYLE.items():
            rows = sorted((r for r in summary["sweep"] if r["init"] == init), key=lambda r: r["alpha"])
            if rows:
                ax.errorbar([r["alpha"] for r in rows], [r[f"{obs}_mean"] for r in rows],
                            yerr=[r[f"{obs}_std"] for r in rows], fmt=marker, color=color, mfc="none", ms=5,
                            capsize=2, label=f"GD, {init} init (mean +- seeds' sd)")
        ax.set(xlabel="alpha", ylabel=label)
        ax.set_title(tiny_bars(ax, [r[f"{obs}_std"] for r in summary["sweep"]]), fontsize=8, loc="left")
    ax = axes.flat[3]
    for prox, ls in (("global", "-"), ("local", "--")):
        rows = [r for r in summary["delta_e_t"] if r["theory"][prox] is not None]
        if rows:
            ax.plot([r["alpha"] for r in rows], [r["theory"][prox] for r in rows], color="k", ls=ls,
                    label=f"theory, {prox} prox")
    rows = summary["delta_e_t"]
    if not rows:
        say_empty(ax, "no paired GD runs (semantic and positional init at one seed) to compare")
    else:
        ax.errorbar([r["alpha"] for r in rows], [r["delta_e_t_mean"] for r in rows],
                    yerr=[r["delta_e_t_std"] for r in rows], fmt="D", color="C3", mfc="none", capsize=2,
                    label="GD (paired seeds, mean +- sd)")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="alpha", ylabel="Delta e_t = e_t(sem) - e_t(pos)")
    ax.set_title(tiny_bars(ax, [r["delta_e_t_std"] for r in rows]), fontsize=8, loc="left")
    ac, al = _nan(th["alpha_c"].get("global")), _nan(th["alpha_l"].get("global"))
    for a in axes.flat:
        for value, ls in ((ac, ":"), (al, "-.")):
            if not math.isnan(value):
                a.axvline(value, color="grey", ls=ls, lw=1)
    for a in (axes.flat[0], axes.flat[3]):
        if a.get_legend_handles_labels()[1]:
            a.legend(fontsize=8, loc="best")
    d = summary["plan"]["d"]
    bars = {k: _nan((th.get(f"err_alpha_{k}") or {}).get("global")) for k in ("c", "l")}
    at = {k: "not found" if math.isnan(v) else with_error(v, bars[k]) if math.isfinite(bars[k]) else f"{v:.3f}"
          for k, v in (("c", ac), ("l", al))}
    fig.suptitle(f"GD at d = {d} vs theory, omega = {th['omega']}, {model_words(summary)}: alpha_c = {at['c']} "
                 f"(dotted), alpha_l = {at['l']} "
                 f"(dash-dot)\neach theory branch is drawn where it exists; a tick on the alpha axis marks where it ends", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def aligned_differs(theory: dict[str, Any], branch: str, tol: float = 1e-3) -> bool:
    """Whether the aligned-prox curve of ``branch`` exists somewhere the global-prox one does not, or differs
    from it by more than ``tol`` (relative) in theta, m or eps_g: only then is it a curve of its own."""
    al, gl = theory["curves"].get(f"{branch}/aligned"), theory["curves"].get(f"{branch}/global")
    if al is None:
        return False
    if gl is None:
        return True
    g_at = {r["alpha"]: r for r in gl["records"] if exists_at(r, branch, _nan(gl.get("end")))}
    for r in al["records"]:
        if not exists_at(r, branch, _nan(al.get("end"))):
            continue
        g = g_at.get(r["alpha"])
        if g is None or any(abs(abs(r[k]) - abs(g[k])) > tol * max(abs(g[k]), 1e-3) for k in ("theta", "m", "eps_g")):
            return True
    return False


def model_words(summary: dict[str, Any]) -> str:
    """The campaign's sigma and lambda as a figure's title says them ("sigma = 0.5, lambda = 0.01"; one sigma where
    every token has it)."""
    p = summary["plan"].get("params", {})
    sigma = p.get("sigma")
    if isinstance(sigma, list) and len(set(sigma)) == 1:
        sigma = sigma[0]
    return f"sigma = {sigma}, lambda = {p.get('lam')}"


def alpha_c_curve(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The theory's alpha_c(omega) over the map (the heat-map and curve omegas), by omega."""
    return sorted(summary["alpha_c_curve"], key=lambda c: c["omega"])


def plot_heatmap(summary: dict[str, Any], path: Path):
    """Fig. 3: simulated Delta e_t over (alpha, omega) and the theory's alpha_c(omega), one curve per
    proximal map (solid, filled dots: global; dashed, open plus signs: local), in the legend; returns the Figure."""
    plt = _plt()
    rows = summary["heat"]
    alphas = sorted({r["alpha"] for r in rows})
    omegas = sorted({r["omega"] for r in rows})
    Z = np.full((len(omegas), len(alphas)), np.nan)
    for r in rows:
        Z[omegas.index(r["omega"]), alphas.index(r["alpha"])] = r["delta_e_t_mean"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lim = np.nanmax(np.abs(Z)) if np.isfinite(Z).any() else 1.0
    im = ax.pcolormesh(_edges(alphas), _edges(omegas), Z, cmap="RdBu_r", vmin=-lim, vmax=lim, shading="flat")
    fig.colorbar(im, ax=ax, label="simulated Delta e_t = e_t(semantic) - e_t(positional)")
    pts = [(c["omega"], _nan(c["alpha_c"]), c["prox"]) for c in alpha_c_curve(summary)]
    every = sorted({w for w, _, _ in pts})
    for prox in sorted({p for _, _, p in pts}, key=lambda p: (p != "global", p)):
        # one curve per proximal map (they are different theories): broken where alpha_c was not found and at the
        # omegas computed with another map only (a local curve is not drawn across the global map's omega)
        style, marker = _PROX_STYLE.get(prox, ("-.", "D"))
        mine = {w: a for w, a, p in pts if p == prox}
        on_map = [(w, mine.get(w, math.nan)) for w in every]
        runs = [list(run) for gap, run in itertools.groupby(on_map, key=lambda wa: math.isnan(wa[1])) if not gap]
        where = "" if len(mine) > 1 else f" at omega = {next(iter(mine)):g} only"
        for k, run in enumerate(runs):
            ax.plot([a for _, a in run], [w for w, _ in run], color="k", ls=style, marker=marker, ms=6, lw=2,
                    mfc="white" if prox == "local" else "k",
                    label=f"theory alpha_c(omega), {prox} prox{where}" if k == 0 else None, gid=f"alpha_c_{prox}")
    if any(not math.isnan(a) for _, a, _ in pts):
        ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    missing = [w for w, a, _ in pts if math.isnan(a)]
    if missing:
        ax.text(0.99, 0.01, "no alpha_c found at omega = " + ", ".join(f"{w:g}" for w in missing),
                transform=ax.transAxes, fontsize=8, ha="right", va="bottom",
                bbox={"facecolor": "white", "alpha": 0.85, "lw": 0})
    ax.set(xlim=_edges(alphas)[[0, -1]], ylim=_edges(omegas)[[0, -1]], xlabel="alpha", ylabel="omega",
           title=f"GD at d = {summary['plan']['d']}, {model_words(summary)}:\nred = positional lower, blue = semantic "
                 "lower")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return fig


def _edges(v: list[float]) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    if v.size == 1:
        return np.array([v[0] - 0.5, v[0] + 0.5])
    mid = (v[1:] + v[:-1]) / 2
    return np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]])


def plot_finite_size(summary: dict[str, Any], path: Path):
    """|simulation - theory| against d (overlaps absolute, eps_g relative; colour: the case, line style: the theory
    compared with), and the small-alpha |theta| against 1/sqrt(d); returns the Figure.  On the log axes a bar (one
    standard error of the seed mean) reaching 0 is drawn down to the panel's bottom edge: consistent with 0."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullFormatter

    plt = _plt()
    rows = summary["finite_size"]
    fig = plt.figure(figsize=(16, 6.2))
    grid = fig.add_gridspec(2, 3, height_ratios=[4.6, 0.8])
    ax, cx, bx = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[0, 2])
    cases = sorted({(r["alpha"], r["init"]) for r in rows})
    ds_all = np.array(sorted({r["d"] for r in rows}), dtype=float)
    series: dict[Any, list[tuple[np.ndarray, np.ndarray, np.ndarray, str, str]]] = {ax: [], cx: []}
    for i, (alpha, init) in enumerate(cases):
        sel = sorted((r for r in rows if r["alpha"] == alpha and r["init"] == init), key=lambda r: r["d"])
        for obs in _COMPARED[init]:
            target = cx if obs == "eps_g" else ax
            for prox, (ls, _) in _GAP_STYLE.items():
                if prox != "global" and not any(_differs(r, obs, prox) for r in sel):
                    continue  # the modes coincide here: one line is enough
                pts = [(r["d"], abs(r[f"{obs}_mean"] - r["theory"][prox][obs]), r[f"{obs}_std"] / math.sqrt(r["n_runs"]),
                        abs(r["theory"][prox][obs])) for r in sel
                       if (r["theory"].get(prox) or {}).get("converged")]  # no gap to a solve that did not converge
                if not pts:
                    continue
                d, dev, se, th = np.array(pts).T
                scale = th if obs == "eps_g" else np.ones_like(th)
                series[target].append((d, dev / scale, se / scale, f"C{i}", ls))
    for target, ylabel in ((ax, "|simulated mean - theory| of |theta| or |m|"),
                           (cx, "|simulated mean - theory| / theory, eps_g")):
        data = series[target]
        positive = np.concatenate([np.concatenate([y[y > 0], (y - e)[y - e > 0]]) for _, y, e, _, _ in data]
                                  + [np.array([])])
        bottom = 0.5 * positive.min() if positive.size else 1e-3
        for d, y, e, color, ls in data:
            lower = np.where(y - e > bottom, e, np.maximum(y - bottom, 0.0))  # down to the bottom edge
            target.errorbar(d, np.maximum(y, bottom), yerr=[lower, e], ls=ls, marker="o", ms=5, capsize=3, lw=1.5,
                            elinewidth=1.5, color=color)
        if ds_all.size:
            target.plot(ds_all, 0.3 * (ds_all / ds_all[0]) ** -0.5, "k:", lw=1.5)
        target.set(xscale="log", yscale="log", ylim=(bottom, None))
        if ds_all.size:  # the simulated dimensions as the ticks
            target.set_xticks(ds_all, [f"{d:g}" for d in ds_all])
            target.xaxis.set_minor_formatter(NullFormatter())
        target.set_xlabel("d", fontsize=10)
        target.set_ylabel(ylabel, fontsize=9)
        target.grid(alpha=0.3, which="both")
    ax.set_title("finite-size gap: |theta| (semantic init), |m| (positional init)\n"
                 "a bar down to the bottom edge: consistent with 0", fontsize=10)
    cx.set_title("finite-size gap: test error", fontsize=10)
    handles = [Line2D([], [], color=f"C{i}", marker="o", lw=2, label=f"{init} init, alpha = {alpha}")
               for i, (alpha, init) in enumerate(cases)]
    drawn = {ls for data in series.values() for *_, ls in data}
    handles += [Line2D([], [], color="grey", ls=ls, lw=2, label=f"vs theory, {prox} prox")
                for prox, (ls, _) in _GAP_STYLE.items() if ls in drawn]
    handles += [Line2D([], [], color="k", ls=":", lw=1.5, label="~ d^-1/2")]
    lx = fig.add_subplot(grid[1, 0:2])
    lx.axis("off")
    lx.legend(handles=handles, loc="center", ncol=min(4, len(handles)), fontsize=10, frameon=False)

    gls = summary["headline"]["global_vs_local"] if "headline" in summary else global_vs_local(summary)
    for k, gl in enumerate(g for g in gls if "trend" in g):
        color = f"C{k}"
        d, mean, std = np.array(gl["trend"]).T
        n = next(r["n_runs"] for r in rows if r["alpha"] == gl["alpha"])
        x = 1 / np.sqrt(d)
        bx.errorbar(x, mean, yerr=std / math.sqrt(n), fmt="o", color=color, capsize=3,
                    label=f"GD, semantic init, alpha = {gl['alpha']}")
        xx = np.linspace(0, x.max() * 1.05, 50)
        bx.plot(xx, gl["extrapolated"] + gl["slope_b"] * xx ** (2 * gl["power"]), "-", color=color, lw=1)
        bx.errorbar([0], [gl["extrapolated"]], yerr=[2 * gl["extrapolated_se"]], fmt="none", color=color, capsize=4)
        for (prox, (_, marker)), x0 in zip(_GAP_STYLE.items(), (-0.005, 0.005, 0.010)):  # beside the fit's bar at 0
            v = _nan(gl["theory"].get(prox))
            if not math.isnan(v):
                bx.plot([x0], [v], marker, ms=12 if marker != "D" else 8, color=color, mfc="none",
                        label=f"theory, {prox} prox, alpha = {gl['alpha']}")
    bx.set_xlabel("1 / sqrt(d)", fontsize=10)
    bx.set_ylabel("|theta|", fontsize=10)
    bx.set_title("semantic start, small alpha: fit a + b/d^p (a +- 2 err_a at 0)", fontsize=10)
    bx.grid(alpha=0.3)
    if bx.get_legend_handles_labels()[0]:
        bx.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.16), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return fig


def _differs(row: dict[str, Any], obs: str, prox: str = "local") -> bool:
    """Whether ``prox``'s point differs from the global-prox one at this row (value or branch reached)."""
    g, other = row["theory"].get("global"), row["theory"].get(prox)
    if not g or not other:
        return False
    if not (g["converged"] and other["converged"]):  # no value where a solve did not converge
        return g["converged"] != other["converged"]
    return abs(g[obs] - other[obs]) > 1e-3 * max(abs(g[obs]), 1e-3) or g["branch_reached"] != other["branch_reached"]
