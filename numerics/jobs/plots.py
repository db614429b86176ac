"""Figures of the numerics layer (matplotlib, Agg backend; files only, never shown)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.numerics.phase.continuation import BranchSweep  # noqa: E402
from attnphase.numerics.phase.boundary_results import Boundaries, model_branches  # noqa: E402

#: From this many omegas on, the phase diagram's curves have no markers and its error bars are bands.
DENSE_ROWS = 15


#: The phase diagram's boundaries: (key, label, colour, marker, line style).
SERIES = (
    ("alpha_c", r"$\alpha_c$ (global minimum switches)", "k", "o", "-"),
    ("alpha_l", r"$\alpha_l$ (semantic beats linear)", "tab:green", "s", "--"),
    ("semantic_end", "semantic branch end", "tab:blue", "v", ":"),
    ("positional_end", "positional branch end", "tab:red", "^", ":"),
)


#: The Bayes-optimal thresholds on the phase diagram: (key, label, line style); they do not depend on omega (< 1).
BAYES_SERIES = (
    ("alpha_weak_recovery", r"BO $\alpha_{WR}$ (weak recovery)", ":"),
    ("alpha_it", r"BO $\alpha_{IT}$ (perfect recovery)", "-."),
    ("alpha_amp", r"BO $\alpha_{AMP}$ (AMP reaches BO)", (0, (1, 3))),
)
BAYES_COLOR = "tab:purple"


def bayes_thresholds_of(rows: Sequence[Boundaries]) -> dict | None:
    """The Bayes-optimal thresholds (``alpha_weak_recovery``, ``alpha_it``, ``alpha_amp`` with ``err_<key>``) of the
    model the rows were solved for (numerics/phase/bayes_thresholds.py); None where the Bayes-optimal state
    evolution is not solved (rank above 1, correlated tokens) or no row carries a fixed point."""
    from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
    from attnphase.numerics.se.bayes import BayesModel

    for b in rows:
        for sw in (b.semantic, b.positional):
            if sw is not None and sw.points:
                p = sw.points[0].params
                if p.r != 1 or p.r_star != 1 or p.C is not None:
                    return None
                return bayes_thresholds(BayesModel.of(p)).as_dict()
    return None


def _bayes_lines(ax, bayes: dict, alpha_max: float) -> None:
    """The Bayes-optimal thresholds as vertical lines (the region below alpha_WR shaded: nothing is learnable
    there by any estimator); alpha_AMP drawn only where it differs from alpha_IT."""
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
    """Why a figure of ``rows`` has nothing to draw -- no row has a finite value of any of ``keys`` -- in the
    rows' own words (a failed task's error, a search's note), at most three of them; None when it has."""
    if any(math.isfinite(float(getattr(b, k, math.nan))) for b in rows for k in keys):
        return None
    said: list[str] = []
    for b in rows:
        for note in getattr(b, "notes", ()) or ():
            line = f"omega = {b.omega:g}: {note}"
            if note not in {n.split(": ", 1)[-1] for n in said}:
                said.append(line)
    more = len(said) - 3
    lines = [textwrap.shorten(n, 110, placeholder=" ...") for n in said[:3]] + ([f"({more} more)"] if more > 0 else [])
    head = f"nothing to draw: no boundary at any of the {len(rows)} omega{'s' if len(rows) != 1 else ''} of the run"
    return "\n".join([head, *("\n".join(textwrap.wrap(n, 70)) for n in lines)])


def empty_figure(path: str | Path, title: str, reason: str, xlabel: str, ylabel: str):
    """A figure that says why it is empty (``reason``) instead of an empty plane; returns the Figure."""
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.text(0.5, 0.5, reason, transform=ax.transAxes, ha="center", va="center", fontsize=10, wrap=True,
            gid="why_empty")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return fig


def plot_phase_diagram(
    rows: Sequence[Boundaries], path: str | Path, alpha_max: float, errors: Sequence[dict] | None = None,
    bayes: dict | None | bool = None,
):
    """The (alpha, omega) plane: alpha_c, alpha_l and the branch ends, regions labelled, with the Bayes-optimal
    thresholds (``bayes``: their dict; None: :func:`bayes_thresholds_of` the rows; False: none); returns the Figure.
    Where no row has a boundary (every task failed, or none was found) the figure says why (:func:`why_empty`).

    ``errors``: per row, ``<boundary>_err`` standard errors
    (:func:`attnphase.numerics.errors.quadrature_error.boundary_errors`).  At the plane's scale they are thinner
    than a line, so they are shown twice: as bands of +- one standard error around each boundary
    (horizontal error bars with caps while there are fewer than DENSE_ROWS omegas), and in a second
    panel on the same omega axis, each boundary's standard error on a log scale.
    """
    reason = why_empty(rows, [key for key, *_ in SERIES])
    if reason is not None:
        return empty_figure(path, "Phase diagram (global minimiser of the training loss)", reason,
                            r"sample complexity $\alpha = n/d$", r"$\omega$ (weight of the positional teacher $A$)")
    om = np.array([b.omega for b in rows])
    dense = len(rows) >= DENSE_ROWS
    mark = (lambda m: "") if dense else (lambda m: m)
    if errors is not None:
        fig, (ax, ex) = plt.subplots(1, 2, figsize=(9.6, 5.8), sharey=True, gridspec_kw={"width_ratios": [2.4, 1]})
    else:
        fig, ax = plt.subplots(figsize=(6.4, 5.8))
        ex = None
    order = np.argsort(om)
    for key, label, color, marker, ls in SERIES:
        x = np.array([getattr(b, key) for b in rows], dtype=float)
        if not np.isfinite(x).any() and key not in ("alpha_c", "alpha_l"):
            continue
        failed = np.zeros(len(rows), dtype=bool)
        if key == "positional_end":
            failed = np.array([b.positional_end_kind == "solver failure" for b in rows])
        shown = np.where(~failed, x, np.nan)
        if np.isfinite(shown).any() or key in ("alpha_c", "alpha_l"):
            ax.plot(shown[order], om[order], mark(marker) + ls, color=color, lw=2 if key == "alpha_c" else 1.5,
                    label=label)
        if failed.any():
            ax.plot(np.where(failed, x, np.nan), om, marker, mfc="none", color=color,
                    label="positional: solver failed beyond")
        if errors is None:
            continue
        err = np.array([e.get(f"{key}_err", math.nan) for e in errors], dtype=float)
        ok = np.isfinite(x) & np.isfinite(err)
        if ok.any():
            lo, hi = np.where(ok, x - err, np.nan), np.where(ok, x + err, np.nan)
            ax.fill_betweenx(om[order], lo[order], hi[order], where=ok[order], color=color, alpha=0.3, lw=0,
                             label=r"bands: $\pm$ 1 standard error (right: their size)" if key == "alpha_c" else None,
                             gid=f"band_{key}")
            if not dense:
                ax.errorbar(x[ok], om[ok], xerr=err[ok], fmt="none", ecolor=color, capsize=4, lw=1.2)
            ex.plot(err[ok][np.argsort(om[ok])], np.sort(om[ok]), mark(marker) + "-", color=color, ms=5,
                    gid=f"err_{key}")
    if bayes is None:
        bayes = bayes_thresholds_of(rows)
    if bayes:
        _bayes_lines(ax, bayes, alpha_max)
    xs = np.array([b.alpha_c for b in rows], dtype=float)
    xs = xs[np.isfinite(xs)]
    mid = float(np.nanmedian(xs)) if xs.size else alpha_max / 2
    # the regions' names: between the rows (above the only one), the semantic one kept inside the axes
    ymid = float(np.mean(om)) + (0.025 if len(rows) == 1 else 0.0)
    ax.text(0.5 * mid, ymid, "positional", ha="center", va="center", color="tab:red", fontsize=12, alpha=0.8)
    right = alpha_max - mid < 0.3 * alpha_max
    ax.text(0.98 * alpha_max if right else 0.5 * (mid + alpha_max), ymid, "semantic", ha="right" if right else "center",
            va="center", color="tab:blue", fontsize=12, alpha=0.8)
    ax.set_xlim(0, alpha_max)
    ax.set_xlabel(r"sample complexity $\alpha = n/d$")
    ax.set_ylabel(r"$\omega$ (weight of the positional teacher $A$)")
    ax.set_title("Phase diagram (global minimiser of the training loss)", fontsize=11)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    if len(rows) == 1:
        ax.set_ylim(om[0] - 0.05, om[0] + 0.05)
    if ex is not None:
        drawn = np.concatenate([np.asarray(line.get_xdata(), dtype=float) for line in ex.get_lines()] + [np.array([])])
        drawn = drawn[np.isfinite(drawn) & (drawn > 0)]
        if drawn.size:
            ex.set_xscale("log")
            lo, hi = drawn.min(), drawn.max()
            ex.set_xlim(10 ** math.floor(math.log10(lo) - 0.15), 10 ** math.ceil(math.log10(hi) + 0.15))
            ex.xaxis.set_minor_formatter(NullFormatter())
        else:
            ex.text(0.5, 0.5, "no error bars estimated", transform=ex.transAxes, ha="center", fontsize=9)
        ex.set_xlabel(r"standard error of the boundary (in $\alpha$)")
        ex.set_title("standard errors (log scale)", fontsize=11)
        ex.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return fig


def plot_branch_curves(
    sem: BranchSweep, pos: BranchSweep, eps_lin: float, alpha_c: float, alpha_l: float, path: str | Path, title: str,
    alpha_max: float | None = None,
):
    """eps_g, m, theta and Delta e_t against alpha for both branches, with eps_lin; returns the Figure.

    ``alpha_max``: the alpha axis ends there (the branches may be followed further: the positional one
    to the search limit); the points beyond are left out."""
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
    ax.axhline(eps_lin, color="tab:green", ls="--", label=r"$\epsilon_{lin}$")
    ax.set_ylabel(r"test error $\epsilon_g$")
    def to_bifurcation(ax, sw: BranchSweep, a: np.ndarray, y: np.ndarray, color: str) -> None:
        # an end located as a bifurcation of the agnostic branch: the order parameter reaches 0 there
        end = sw.end.alpha
        if sw.end.method == "eigenvalue" and math.isfinite(end) and a.size:
            i = int(np.argmin(np.abs(a - end)))
            ax.plot([a[i], end], [y[i], 0.0], ":", color=color, lw=1)
            ax.plot([end], [0.0], "o", mfc="none", color=color, label="bifurcation (order parameter 0)")

    ax = axes[0, 1]
    a, y = arr(pos, "m")
    ax.plot(a, y, "o-", color="tab:red", ms=3, label="positional m" if a.size else None)
    to_bifurcation(ax, pos, a, y, "tab:red")
    if not a.size:
        empty(ax, "no positional point in the alpha range")
    ax.set_ylabel(r"positional overlap $m$")
    ax = axes[1, 0]
    a, y = arr(sem, "theta")
    ax.plot(a, y, "o-", color="tab:blue", ms=3, label=r"semantic $\theta$" if a.size else None)
    to_bifurcation(ax, sem, a, np.abs(y), "tab:blue")
    if not a.size:
        empty(ax, "no semantic point in the alpha range")
    ax.set_ylabel(r"semantic overlap $\theta = Q\cdot Q^*/d$")
    ax = axes[1, 1]
    sa = np.array([p.alpha for p in sem.on_branch()])
    se = np.array([p.record["e_t"] for p in sem.on_branch()])
    pa = np.array([p.alpha for p in pos.on_branch()])
    pe = np.array([p.record["e_t"] for p in pos.on_branch()])
    common = sorted(set(sa.tolist()) & set(pa.tolist()))
    if common:
        d = [se[sa.tolist().index(x)] - pe[pa.tolist().index(x)] for x in common]
        ax.plot(common, d, "o-", color="k", ms=3)
    else:
        empty(ax, "no alpha of the grid where both branches exist")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_ylabel(r"$\Delta e_t = e_t^{sem} - e_t^{pos}$")
    for ax in axes.flat:
        for sw, color in ((sem, "tab:blue"), (pos, "tab:red")):
            if math.isfinite(sw.end.alpha):
                ax.axvline(sw.end.alpha, color=color, ls="--", lw=0.8,
                           label=f"{sw.branch} end {sw.end.alpha:.3f} ({sw.end.kind})")
        if math.isfinite(alpha_c):
            ax.axvline(alpha_c, color="k", ls=":", lw=1, label=rf"$\alpha_c$={alpha_c:.3f}")
        if math.isfinite(alpha_l):
            ax.axvline(alpha_l, color="tab:green", ls=":", lw=1, label=rf"$\alpha_l$={alpha_l:.3f}")
        ax.set_xlabel(r"$\alpha$")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[1]:
            ax.legend(fontsize=8)
        if alpha_max is not None:
            ax.set_xlim(0, alpha_max)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return fig


def plot_branch_diagram(rows: Sequence[Boundaries], path: str | Path):
    """The phase diagram of the search over every branch (r >= 2 or r* >= 2).  Left: alpha_c, alpha_l and the
    branch ends in the (alpha, omega) plane, error bars = bracket widths;
    middle: those bracket widths on a log scale (at the plane's scale a bar may be thinner than its marker);
    right: e_t of each branch minus the lowest one, over alpha, at the first omega.  Returns the Figure."""
    keys = ["alpha_c", "alpha_l"] + [f"{br}_end" for br in model_branches(rows[0].r)]
    if not any(math.isfinite(float(b.row()[k])) for b in rows for k in keys):  # every task failed, or nothing found
        return empty_figure(path, f"rank r = {rows[0].r}, r* = {rows[0].r_star}", why_empty(rows, ["alpha_c"]),
                            r"$\alpha$", r"$\omega$")
    fig, (ax, wx, bx) = plt.subplots(1, 3, figsize=(14, 5.4), gridspec_kw={"width_ratios": [2.2, 1, 2.2]})
    wx.sharey(ax)
    om = np.array([b.omega for b in rows])
    series = [("alpha_c", "o-", "k"), ("alpha_l", "s--", "tab:green")] + [
        (f"{br}_end", m, c) for br, m, c in zip(model_branches(rows[0].r), ("v:", "^:", "d:"),
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
    return fig


def plot_estimators_eps_g(erm: dict[str, tuple[Sequence[float], Sequence[float], Sequence[float]]], eps_lin: float,
                          bo: tuple[Sequence[float], Sequence[float], Sequence[float]], bayes: dict, path: str | Path,
                          title: str, amp: tuple[Sequence[float], Sequence[float], Sequence[float]] | None = None,
                          alpha_c: float | None = None, amp_label: str = r"AMP at finite $d$ (mean $\pm$ s.e. over seeds)"):
    """eps_g against alpha: ERM's branches (``erm``: branch -> (alpha, eps_g, err)), the linear baseline
    eps_lin, the Bayes-optimal curve ``bo`` (alpha, eps_g, err) with its thresholds ``bayes`` and, where given,
    AMP at finite d (``amp``: alpha, mean eps_g over seeds, its standard error); returns the Figure.  The test
    errors are in the same units (docs/model.md section 4), so they share the axis."""
    fig, ax = plt.subplots(figsize=(10.0, 5.0))
    colors = {"semantic": "tab:blue", "positional": "tab:red"}
    for branch, (a, y, e) in erm.items():
        ax.errorbar(a, y, yerr=e, fmt="o-", ms=3, lw=1.5, color=colors.get(branch, "k"), label=f"ERM {branch} branch",
                    gid=f"erm_{branch}")
    ax.axhline(eps_lin, color="tab:green", ls="--", label=r"linear baseline $\epsilon_{lin}$", gid="eps_lin")
    a, y, e = (np.asarray(v, dtype=float) for v in bo)
    ax.errorbar(a, y, yerr=e, fmt="-", lw=2.2, color=BAYES_COLOR, label="Bayes-optimal", gid="bayes_optimal")
    if amp is not None and len(amp[0]):
        ax.errorbar(amp[0], amp[1], yerr=amp[2], fmt="D", ms=5, mfc="none", color="k", capsize=3,
                    label=amp_label, gid="amp")
    top = max(ax.get_ylim()[1], 1.15 * eps_lin)
    _bayes_lines(ax, {k: v for k, v in bayes.items()}, float(np.max(a)) if a.size else 1.0)
    if alpha_c is not None and math.isfinite(alpha_c):
        ax.axvline(alpha_c, color="k", ls=":", lw=1, label=rf"ERM $\alpha_c$ = {alpha_c:.3g}")
    ax.set_ylim(0, top)
    ax.set_xlim(0, float(np.max(a)) if a.size else None)
    ax.set_xlabel(r"sample complexity $\alpha = n/d$")
    ax.set_ylabel(r"test error $\epsilon_g$")
    ax.set_title(title, fontsize=11)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return fig
