"""Figures of the numerics layer (matplotlib, Agg backend; files only, never shown)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.numerics.phase.continuation import BranchSweep  # noqa: E402
from attnphase.numerics.phase.boundaries import Boundaries  # noqa: E402

#: From this many omegas on, the phase diagram's curves have no markers and its error bars are bands.
DENSE_ROWS = 15


def plot_phase_diagram(
    rows: Sequence[Boundaries], path: str | Path, alpha_max: float, errors: Sequence[dict] | None = None
) -> None:
    """The (alpha, omega) plane: alpha_c, alpha_l and the branch ends, regions labelled.

    ``errors``: per row, ``<boundary>_err`` spreads (:func:`attnphase.numerics.errors.quadrature_error.boundary_errors`),
    drawn as horizontal error bars -- on a dense omega grid (DENSE_ROWS rows or more) as bands of
    +- the error around curves without markers.
    """
    om = np.array([b.omega for b in rows])
    ac = np.array([b.alpha_c for b in rows])
    al = np.array([b.alpha_l for b in rows])
    ss = np.array([b.semantic_end for b in rows])
    sp = np.array([b.positional_end for b in rows])
    dense = len(rows) >= DENSE_ROWS
    mark = (lambda m: "") if dense else (lambda m: m)
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.plot(ac, om, mark("o") + "-", color="k", lw=2, label=r"$\alpha_c$ (global minimum switches)")
    ax.plot(al, om, mark("s") + "--", color="tab:green", label=r"$\alpha_l$ (semantic beats linear)")
    if errors is not None:
        for key, x, color in (("alpha_c", ac, "k"), ("alpha_l", al, "tab:green"),
                              ("semantic_end", ss, "tab:blue"), ("positional_end", sp, "tab:red")):
            err = np.array([e[f"{key}_err"] for e in errors])
            if dense:
                ok = np.isfinite(x) & np.isfinite(err)
                ax.fill_betweenx(om, x - err, x + err, where=ok, color=color, alpha=0.25, lw=0)
            else:
                ax.errorbar(x, om, xerr=np.where(np.isfinite(err), err, 0.0), fmt="none", ecolor=color, capsize=3)
    if np.isfinite(ss).any():
        ax.plot(ss, om, mark("v") + ":", color="tab:blue", label="semantic branch end")
    if np.isfinite(sp).any():
        numeric = np.array([b.positional_end_kind == "solver failure" for b in rows])
        ax.plot(np.where(~numeric, sp, np.nan), om, mark("^") + ":", color="tab:red", label="positional branch end")
        if numeric.any():
            ax.plot(np.where(numeric, sp, np.nan), om, "^", mfc="none", color="tab:red",
                    label="positional: solver failed beyond")
    xs = ac[np.isfinite(ac)]
    mid = float(np.nanmedian(xs)) if xs.size else alpha_max / 2
    ymid = float(np.mean(om))
    ax.text(0.5 * mid, ymid, "positional", ha="center", color="tab:red", fontsize=12, alpha=0.8)
    ax.text(0.5 * (mid + alpha_max), ymid, "semantic", ha="center", color="tab:blue", fontsize=12, alpha=0.8)
    ax.set_xlim(0, alpha_max)
    ax.set_xlabel(r"sample complexity $\alpha = n/d$")
    ax.set_ylabel(r"$\omega$ (weight of the positional teacher $A$)")
    ax.set_title("Phase diagram (global minimiser of the training loss)")
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def plot_branch_curves(
    sem: BranchSweep, pos: BranchSweep, eps_lin: float, alpha_c: float, alpha_l: float, path: str | Path, title: str
) -> None:
    """eps_g, m, theta and Delta e_t against alpha for both branches, with eps_lin."""
    def arr(sw: BranchSweep, key: str) -> tuple[np.ndarray, np.ndarray]:
        # the grid points, then the points traced towards the branch's end (ordered along the branch)
        pts = sorted(sw.on_branch(), key=lambda p: -p.alpha) + list(sw.end.points)
        if sw.branch != "semantic":
            pts = sorted(pts, key=lambda p: p.alpha)
        return np.array([p.alpha for p in pts]), np.array([p.record[key] for p in pts])

    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    ax = axes[0, 0]
    for sw, c in ((sem, "tab:blue"), (pos, "tab:red")):
        a, y = arr(sw, "eps_g")
        ax.plot(a, y, "o-", color=c, ms=3, label=sw.branch)
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
    ax.plot(a, y, "o-", color="tab:red", ms=3, label="positional m")
    to_bifurcation(ax, pos, a, y, "tab:red")
    ax.set_ylabel(r"positional overlap $m$")
    ax = axes[1, 0]
    a, y = arr(sem, "theta")
    ax.plot(a, y, "o-", color="tab:blue", ms=3, label=r"semantic $\theta$")
    to_bifurcation(ax, sem, a, np.abs(y), "tab:blue")
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
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
