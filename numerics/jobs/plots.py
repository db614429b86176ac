"""Figures of the numerics layer (matplotlib, Agg backend; files only, never shown)."""

from __future__ import annotations

import math
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.display import with_error  # noqa: E402
from attnphase.numerics.phase.continuation import BranchSweep  # noqa: E402
from attnphase.numerics.phase.boundary_results import Boundaries, model_branches  # noqa: E402
from attnphase.numerics.capabilities import is_scalar_form  # noqa: E402
from attnphase.numerics.jobs.boundary_table import bracket_widths  # noqa: E402

#: From this many omegas on, the phase diagram's curves have no markers and its error bars are bands.
DENSE_ROWS = 15


#: The Bayes-optimal thresholds on the phase diagram: (key, label, line style); they do not depend on omega (< 1).
BAYES_SERIES = (
    ("alpha_weak_recovery", r"BO $\alpha_{WR}$ (weak recovery)", ":"),
    ("alpha_it", r"BO $\alpha_{IT}$ (perfect recovery)", "-."),
    ("alpha_amp", r"BO $\alpha_{AMP}$ (AMP reaches BO)", (0, (1, 3))),
)
BAYES_COLOR = "tab:purple"


def saved(fig, path: str | Path, dpi: int = 130):
    """``fig`` laid out, written to ``path`` cut to what it draws (a legend below the axes included) and closed;
    returns it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Tight layout not applied", category=UserWarning)
        fig.tight_layout()
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return fig


def bayes_thresholds_of(rows: Sequence[Boundaries]) -> dict | None:
    """The Bayes-optimal thresholds (with ``err_<key>``) of the rows' model; None where its Bayes-optimal state
    evolution is not solved (rank above 1, correlated tokens) or no row carries a fixed point."""
    from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
    from attnphase.numerics.se.bayes import BayesModel

    p = next((sw.points[0].params for b in rows for sw in (b.semantic, b.positional) if sw is not None and sw.points),
             None)
    if p is None or p.r != 1 or p.r_star != 1 or p.C is not None:
        return None
    return bayes_thresholds(BayesModel.of(p)).as_dict()


def _bayes_lines(ax, bayes: dict, alpha_max: float) -> None:
    """The Bayes-optimal thresholds as vertical lines, the region below alpha_WR shaded; alpha_AMP only where it differs
    from alpha_IT."""
    wr = bayes.get("alpha_weak_recovery")
    if wr is not None and wr < alpha_max:
        ax.axvspan(0, wr, color=BAYES_COLOR, alpha=0.08, lw=0, label=r"BO: no estimator beats $\epsilon_{lin}$")
    it = bayes.get("alpha_it")
    for key, label, ls in BAYES_SERIES:
        a = bayes.get(key)
        if a is None or not a < alpha_max:
            continue
        if key == "alpha_amp" and it is not None and abs(a - it) <= max(bayes.get("err_alpha_amp") or 0.0, 1e-12):
            continue
        if key == "alpha_it" and bayes.get("alpha_amp") is not None and abs(bayes["alpha_amp"] - a) <= 1e-12:
            label += r" = $\alpha_{AMP}$"
        ax.axvline(a, color=BAYES_COLOR, ls=ls, lw=1.4, label=f"{label} {a:.4g}", gid=f"bayes_{key}")


def why_empty(rows: Sequence, keys: Sequence[str]) -> str | None:
    """Why a figure of ``rows`` has nothing to draw (no finite value of any of ``keys``), in at most three of the rows'
    notes; None when it has."""
    if any(math.isfinite(float(getattr(b, k, math.nan))) for b in rows for k in keys):
        return None
    said: dict[str, str] = {}  # each note once, at the first omega that has it
    for b in rows:
        for note in getattr(b, "notes", ()) or ():
            said.setdefault(note, f"omega = {b.omega:g}: {note}")
    more = len(said) - 3
    lines = [textwrap.shorten(n, 110, placeholder=" ...") for n in list(said.values())[:3]]
    lines += [f"({more} more)"] if more > 0 else []
    head = f"nothing to draw: no boundary at any of the {len(rows)} omega{'s' if len(rows) != 1 else ''} of the run"
    return "\n".join([head, *("\n".join(textwrap.wrap(n, 70)) for n in lines)])


def empty_figure(path: str | Path, title: str, reason: str, xlabel: str, ylabel: str):
    """A figure that says why it is empty (``reason``) instead of an empty plane; returns the Figure."""
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.text(0.5, 0.5, reason, transform=ax.transAxes, ha="center", va="center", fontsize=10, wrap=True,
            gid="why_empty")
    ax.set(xticks=[], yticks=[], xlabel=xlabel, ylabel=ylabel)
    ax.set_title(title, fontsize=11)
    return saved(fig, path)


#: The colour, marker and curve of each branch's end on the phase diagram.
BRANCH_STYLE = {"semantic": ("tab:blue", "v"), "positional": ("tab:red", "^"), "mixed": ("tab:orange", "d")}


def phase_series(r: int = 1) -> tuple[tuple[str, str, str, str, str], ...]:
    """The phase diagram's boundaries at student rank r: (key, label, colour, marker, line style) of alpha_c,
    alpha_l and each branch's end (:func:`model_branches`)."""
    return (("alpha_c", r"$\alpha_c$ (global minimum switches)", "k", "o", "-"),
            ("alpha_l", r"$\alpha_l$ (semantic beats linear)", "tab:green", "s", "--")) + tuple(
        (f"{br}_end", f"{br} branch end", *BRANCH_STYLE[br], ":") for br in model_branches(r))


def plot_phase_diagram(
    rows: Sequence[Boundaries], path: str | Path, alpha_max: float, errors: Sequence[dict] | None = None,
    bayes: dict | None | bool = None, model: str = "",
):
    """The (alpha, omega) plane at every rank: the boundaries of :func:`phase_series`, the regions either side of
    alpha_c named, the Bayes-optimal thresholds (``bayes``: their dict; None: :func:`bayes_thresholds_of` the rows;
    False: none), the ``errors`` as bands and a log-scale panel, the branch curves' e_t gaps where the rows carry
    them; ``model`` (e.g. "lam = 0.02": a scan's value) ends the title.  Returns the Figure (one that says why it is
    empty where no row has a boundary)."""
    r, r_star = rows[0].r, rows[0].r_star
    title = "Phase diagram (global minimiser of the training loss)" + (
        "" if is_scalar_form(r, r_star) else f", rank r = {r}, r* = {r_star}") + (f", {model}" if model else "")
    series = phase_series(r)
    reason = why_empty(rows, [key for key, *_ in series])
    if reason is not None:
        return empty_figure(path, title, reason,
                            r"sample complexity $\alpha = n/d$", r"$\omega$ (weight of the positional teacher $A$)")
    widths = bracket_widths(rows)
    om = np.array([b.omega for b in rows])
    dense = len(rows) >= DENSE_ROWS
    mark = (lambda m: "") if dense else (lambda m: m)
    ratios = [2.4] + [1.0] * (errors is not None) + [2.2] * bool(rows[0].curves)
    fig, axes = plt.subplots(1, len(ratios), figsize=((6.4, 9.6, 14.0)[len(ratios) - 1], 5.8), squeeze=False,
                             gridspec_kw={"width_ratios": ratios})
    ax, *axes = axes[0]
    ex = axes.pop(0) if errors is not None else None
    if ex is not None:
        ex.sharey(ax)
    bx = axes.pop(0) if rows[0].curves else None
    order = np.argsort(om)
    for key, label, color, marker, ls in series:
        x = np.array([getattr(b, key) for b in rows], dtype=float)
        if not np.isfinite(x).any() and key not in ("alpha_c", "alpha_l"):
            continue
        failed = np.array(["solver failure" in getattr(b, f"{key}_kind", "") for b in rows])
        # a positional or mixed end that is the branch's birth (the branch above it), not where it stops going up
        born = np.array([key != "semantic_end" and getattr(b, f"{key}_exists", "") == "above" for b in rows])
        shown = np.where(~failed & ~born, x, np.nan)
        if np.isfinite(shown).any() or key in ("alpha_c", "alpha_l"):
            ax.plot(shown[order], om[order], mark(marker) + ls, color=color, lw=2 if key == "alpha_c" else 1.5,
                    label=label)
        if born.any():
            ax.plot(np.where(born, x, np.nan)[order], om[order], marker + ls, mfc="white", color=color,
                    label=f"{key.removesuffix('_end')} branch birth (it exists above)", gid=f"birth_{key}")
        if failed.any():
            ax.plot(np.where(failed, x, np.nan), om, marker, mfc="none", color=color,
                    label=f"{key.removesuffix('_end')}: solver failed beyond")
        if errors is None:
            continue
        err = np.array([e.get(f"err_{key}", math.nan) for e in errors], dtype=float)
        ok = np.isfinite(x) & np.isfinite(err)
        if ok.any():
            lo, hi = np.where(ok, x - err, np.nan), np.where(ok, x + err, np.nan)
            band = (r"bands: $\pm$ the error bar (right: its size)" if widths else
                    r"bands: $\pm$ 1 standard error (right: their size)")
            ax.fill_betweenx(om[order], lo[order], hi[order], where=ok[order], color=color, alpha=0.3, lw=0,
                             label=band if key == "alpha_c" else None, gid=f"band_{key}")
            if not dense:
                ax.errorbar(x[ok], om[ok], xerr=err[ok], fmt="none", ecolor=color, capsize=4, lw=1.2)
            ex.plot(err[ok][np.argsort(om[ok])], np.sort(om[ok]), mark(marker) + "-", color=color, ms=5,
                    gid=f"err_{key}")
    bayes = bayes_thresholds_of(rows) if bayes is None else bayes
    if bayes:
        _bayes_lines(ax, bayes, alpha_max)
    _region_names(ax, rows, alpha_max)
    missing = [k for k in ("alpha_c", "alpha_l") if not any(math.isfinite(getattr(b, k)) for b in rows)]
    if missing:
        ax.text(0.01, 0.01, " and ".join(missing) + ": not found in the alpha range (see the notes)",
                transform=ax.transAxes, fontsize=8)
    ax.set(xlim=(0, alpha_max), xlabel=r"sample complexity $\alpha = n/d$",
           ylabel=r"$\omega$ (weight of the positional teacher $A$)")
    ax.set_title(title, fontsize=11)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    if len(rows) == 1:
        ax.set_ylim(om[0] - 0.05, om[0] + 0.05)
    if ex is not None:
        _error_panel(ex, widths)
    if bx is not None:
        _branch_gaps(bx, rows[0])
    return saved(fig, path)


def _region_names(ax, rows: Sequence[Boundaries], alpha_max: float) -> None:
    """The names of the branches either side of alpha_c (positional and semantic where the rows do not name them), each
    kept inside the axes; none where no row has an alpha_c."""
    xs = [b.alpha_c for b in rows if math.isfinite(b.alpha_c)]
    if not xs:
        return
    mid = float(np.median(xs))
    named = [b for b in rows if b.alpha_c_from and math.isfinite(b.alpha_c)]

    def family(side: str) -> str:
        # a rank-r branch's name (mixed#4) is one omega's: the families, each once, name the region at every omega
        names = dict.fromkeys(str(getattr(b, side)).split("#")[0] for b in named)
        return " / ".join(names)
    left, right_name = (family("alpha_c_from"), family("alpha_c_to")) if named else ("positional", "semantic")
    ymid = float(np.mean([b.omega for b in rows])) + (0.025 if len(rows) == 1 else 0.0)
    colour = {br: style[0] for br, style in BRANCH_STYLE.items()}
    narrow = mid < 0.3 * alpha_max  # centred on 0.5 alpha_c, the name would spill over the axis's tick labels
    ax.text(0.02 * alpha_max if narrow else 0.5 * mid, ymid, left, ha="left" if narrow else "center", va="center",
            color=colour.get(left, "k"), fontsize=12, alpha=0.8)
    right = alpha_max - mid < 0.3 * alpha_max
    ax.text(0.98 * alpha_max if right else 0.5 * (mid + alpha_max), ymid, right_name, ha="right" if right else "center",
            va="center", color=colour.get(right_name, "k"), fontsize=12, alpha=0.8)


def _error_panel(ex, widths: bool) -> None:
    """The panel of the boundaries' errors on a log scale: standard errors, or with ``widths`` (r >= 2 or r* >= 2)
    each boundary's own kind of bar -- a bracket width, the half-width of an interval where Delta e_t is not
    established, or a standard error linearised at a root (its ``<boundary>_method`` says which)."""
    drawn = np.concatenate([np.asarray(line.get_xdata(), dtype=float) for line in ex.get_lines()] + [np.array([])])
    drawn = drawn[np.isfinite(drawn) & (drawn > 0)]
    if drawn.size:
        ex.set_xscale("log")
        ex.set_xlim(10 ** math.floor(math.log10(drawn.min()) - 0.15), 10 ** math.ceil(math.log10(drawn.max()) + 0.15))
        ex.xaxis.set_minor_formatter(NullFormatter())
    else:
        ex.text(0.5, 0.5, "no error bars estimated", transform=ex.transAxes, ha="center", fontsize=9)
    ex.set_xlabel(r"error bar (in $\alpha$): bracket width, interval half-width or standard error (its method says)"
                  if widths else r"standard error of the boundary (in $\alpha$)", fontsize=8 if widths else None)
    ex.set_title(("error bars" if widths else "standard errors") + " (log scale)", fontsize=11)
    ex.grid(alpha=0.3, which="both")
    ex.tick_params(labelleft=False)


def _branch_gaps(bx, first: Boundaries) -> None:
    """e_t of each branch minus the lowest one over alpha (``first.curves``), at ``first.omega``."""
    curves = {br: [(a, e) for a, on, e, _ in c if on] for br, c in first.curves.items()}
    alphas = sorted({a for c in curves.values() for a, _ in c})
    low = {a: min(e for c in curves.values() for b, e in c if b == a) for a in alphas}
    for k, (br, c) in enumerate(curves.items()):  # each label in its colour of the left panel, "mixed#2" as mixed
        color, marker = BRANCH_STYLE.get(br.split("#")[0], ("0.45", "o"))
        if c:
            bx.plot([a for a, _ in c], [e - low[a] for a, e in c], marker + ("-", "--", "-.", ":")[k % 4], color=color,
                    ms=6 - k % 3, label=br)
    bx.set(xlabel=r"$\alpha$", ylabel=r"$e_t - \min_{\rm branches} e_t$", title=f"omega = {first.omega:g}")
    if bx.get_legend_handles_labels()[1]:
        bx.legend(fontsize=8)
    bx.grid(alpha=0.3)


def plot_branch_curves(
    sem: BranchSweep, pos: BranchSweep, eps_lin: float, alpha_c: float, alpha_l: float, path: str | Path, title: str,
    alpha_max: float | None = None, errors: dict | None = None,
):
    """eps_g, m, theta and Delta e_t against alpha for both branches, with eps_lin, the axis ending at ``alpha_max``;
    the boundaries as vertical lines, each with a band of +- its standard error where ``errors`` (the row's
    ``err_<boundary>``) has one; each sweep's points with their bars where it carries them (``BranchSweep.errors``),
    else a note that they have none.  Returns the Figure."""
    errors = errors or {}
    def arr(sw: BranchSweep, key: str) -> tuple[np.ndarray, np.ndarray]:
        # the grid points, then the points traced towards the branch's end (ordered along the branch)
        pts = sorted(sw.on_branch(), key=lambda p: -p.alpha) + list(sw.end.points)
        pts = [p for p in pts if alpha_max is None or p.alpha <= alpha_max]
        if sw.branch != "semantic":
            pts = sorted(pts, key=lambda p: p.alpha)
        return np.array([p.alpha for p in pts]), np.array([p.record[key] for p in pts])

    def empty(ax, why: str) -> None:
        ax.text(0.5, 0.5, why, transform=ax.transAxes, ha="center", va="center", fontsize=9, color="0.3",
                gid="why_empty")

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    ax = axes[0, 0]
    for sw, c in ((sem, "tab:blue"), (pos, "tab:red")):
        a, y = arr(sw, "eps_g")
        ax.plot(a, y, "o-", color=c, ms=3, label=sw.branch if a.size else None)
        bars = {float(p.alpha): e.get("err_eps_g", math.nan) for p, e in zip(sw.points, sw.errors)}
        err = np.array([bars.get(float(x), math.nan) for x in a])
        if np.isfinite(err).any():
            ax.errorbar(a, y, yerr=np.where(np.isfinite(err), err, 0.0), fmt="none", ecolor=c, capsize=2,
                        gid=f"bars_{sw.branch}")
    if not any(np.isfinite(e.get("err_eps_g", math.nan)) for sw in (sem, pos) for e in sw.errors):
        # above the panel: inside it the eps_lin line struck it through and it covered points
        ax.text(0.0, 1.02, "points without error bars (the diagram's sweeps make none; `attnphase sweep` gives them)",
                transform=ax.transAxes, fontsize=6.5, color="0.35", va="bottom", gid="no_point_bars").set_in_layout(False)
    ax.axhline(eps_lin, color="tab:green", ls="--", label=r"$\epsilon_{lin}$")
    ax.set_ylabel(r"test error $\epsilon_g$")
    for ax, sw, key, color, label, fold, ylabel in (
            (axes[0, 1], pos, "m", "tab:red", "positional m", np.asarray, r"positional overlap $m$"),
            (axes[1, 0], sem, "theta", "tab:blue", r"semantic $\theta$", np.abs,
             r"semantic overlap $\theta = Q\cdot Q^*/d$")):
        a, y = arr(sw, key)
        ax.plot(a, y, "o-", color=color, ms=3, label=label if a.size else None)
        end = sw.end.alpha
        if sw.end.method == "eigenvalue" and math.isfinite(end) and a.size:  # the order parameter reaches 0 there
            i = int(np.argmin(np.abs(a - end)))
            ax.plot([a[i], end], [fold(y)[i], 0.0], ":", color=color, lw=1)
            ax.plot([end], [0.0], "o", mfc="none", color=color, label="bifurcation (order parameter 0)")
        if not a.size:
            empty(ax, f"no {label.split()[0]} point in the alpha range")
        ax.set_ylabel(ylabel)
    ax = axes[1, 1]
    # each branch's e_t by alpha (the first point at an alpha)
    e_sem, e_pos = ({float(p.alpha): p.record["e_t"] for p in sw.on_branch()[::-1]} for sw in (sem, pos))
    common = sorted(a for a in e_sem.keys() & e_pos.keys() if alpha_max is None or a <= alpha_max)  # the axis' range
    if common:
        ax.plot(common, [e_sem[x] - e_pos[x] for x in common], "o-", color="k", ms=3)
    else:
        empty(ax, "no alpha of the grid where both branches exist")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_ylabel(r"$\Delta e_t = e_t^{sem} - e_t^{pos}$")
    for ax in axes.flat:
        said = ax is axes[1, 1]  # the boundaries named once, in the panel of fewest curves (legends hid the curves)
        for sw, color in ((sem, "tab:blue"), (pos, "tab:red")):
            if math.isfinite(sw.end.alpha):
                err = errors.get(f"err_{sw.branch}_end", math.nan)
                ax.axvline(sw.end.alpha, color=color, ls="--", lw=0.8,
                           label=f"{sw.branch} end {_at(sw.end.alpha, err)} ({sw.end.kind}, by {sw.end.method})"
                           if said else None)
                _band(ax, sw.end.alpha, err, color, f"band_{sw.branch}_end")
        for a, color, name in ((alpha_c, "k", "c"), (alpha_l, "tab:green", "l")):
            if math.isfinite(a):
                err = errors.get(f"err_alpha_{name}", math.nan)
                ax.axvline(a, color=color, ls=":", lw=1, label=rf"$\alpha_{name}$={_at(a, err)}" if said else None)
                _band(ax, a, err, color, f"band_alpha_{name}")
        ax.set_xlabel(r"$\alpha$")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[1]:  # the boundaries' legend below its panel: over it, it hid the curve
            ax.legend(fontsize=8, **({"loc": "upper center", "bbox_to_anchor": (0.5, -0.16), "ncol": 2,
                                      "frameon": False} if said else {}))
        if alpha_max is not None:
            ax.set_xlim(0, alpha_max)
    # the bands are the boundaries' (the points' bars, where the sweeps carry them, are error bars)
    fig.suptitle(title + ("  (each boundary's band: +- 1 standard error)" if errors else ""))
    return saved(fig, path, dpi=120)


def _at(x: float, err: float) -> str:
    """A boundary as its legend gives it: ``x +- err`` rounded to the bar, or three decimals without one."""
    return with_error(x, err) if math.isfinite(err) and err > 0 else f"{x:.3f}"


def _band(ax: Any, x: float, err: float, color: str, gid: str) -> None:
    """A vertical band of +- ``err`` around the boundary at ``x`` (nothing where the error is not finite)."""
    if math.isfinite(err) and err > 0:
        ax.axvspan(x - err, x + err, color=color, alpha=0.15, lw=0, gid=gid)
