"""The figure of ``phase-diagram --estimator bayes-optimal``: left the (alpha, omega) plane with the thresholds and
their error bars (the regions of no and of perfect recovery shaded), right the Bayes-optimal eps_g over alpha at
every omega, eps_lin dotted (docs/bayes-optimal.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

#: The thresholds: (key, label, colour, marker).
THRESHOLD_SERIES = (
    ("alpha_weak_recovery", r"$\alpha_{WR}$ (weak recovery)", "tab:purple", "o"),
    ("alpha_it", r"$\alpha_{IT}$ (information-theoretic)", "k", "s"),
    ("alpha_amp", r"$\alpha_{AMP}$ (algorithmic)", "tab:orange", "x"),
)


#: The height in omega of the shadings where the figure has one omega (a band about it).
SINGLE_OMEGA_BAND = 0.1


def _values(rows: Sequence[Mapping[str, Any]], key: str) -> tuple[np.ndarray, np.ndarray]:
    v = np.array([np.nan if r[key] is None else float(r[key]) for r in rows])
    e = np.array([np.nan if r.get(f"err_{key}") is None else float(r[f"err_{key}"]) for r in rows])
    return v, np.nan_to_num(e)


def plot_bayes_diagram(rows: Sequence[Mapping[str, Any]], alphas: Sequence[float],
                       curves: Mapping[float, Sequence[Mapping[str, Any]]], path: str | Path, title: str = ""):
    """The two panels of the module doc into ``path`` (``rows`` one per omega, ``curves[omega]`` one mapping per alpha);
    returns the Figure."""
    om = np.array([float(r["omega"]) for r in rows])
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.4))
    series = {key: _values(rows, key) for key, *_ in THRESHOLD_SERIES}
    hi = max(max(alphas), *(np.nanmax(v) for v, _ in series.values() if np.isfinite(v).any()))
    lo = 0.0
    wr, it = series["alpha_weak_recovery"][0], series["alpha_it"][0]
    band = om
    if len(om) == 1:  # one omega: the shadings as a band of height SINGLE_OMEGA_BAND about it
        band, wr, it = om[0] + np.array([-0.5, 0.5]) * SINGLE_OMEGA_BAND, np.repeat(wr, 2), np.repeat(it, 2)
        ax.set_ylim(band[0], band[1])
    if np.isfinite(wr).all():
        ax.fill_betweenx(band, lo, wr, color="0.85", step=None, label="no recovery (q0 = 0)")
    if np.isfinite(it).all():
        ax.fill_betweenx(band, it, 1.05 * hi, color="tab:green", alpha=0.15, label="perfect recovery")
    for key, label, colour, marker in THRESHOLD_SERIES:
        v, e = series[key]
        if not np.isfinite(v).any():
            ax.plot([], [], color=colour, label=f"{label}: none")
            continue
        lw = 2.5 if key == "alpha_amp" else 1.5
        ax.errorbar(v, om, xerr=e, color=colour, marker=marker, ms=5, lw=lw, ls=":" if key == "alpha_amp" else "-",
                    capsize=2, label=label)
    ax.set_xlim(lo, 1.05 * hi)
    ax.set_xlabel(r"$\alpha$")
    ax.set_ylabel(r"$\omega$")
    ax.set_title("Bayes-optimal thresholds")
    ax.legend(fontsize=7, loc="upper right")
    cmap = plt.get_cmap("viridis")
    for i, r in enumerate(rows):
        w = float(r["omega"])
        colour = cmap(0.85 * i / max(1, len(rows) - 1))  # viridis past 0.85 is a yellow unreadable on white
        eps = np.array([float(p["eps_g"]) for p in curves[w]])
        err = np.array([float(p["err_eps_g"]) for p in curves[w]])
        bx.errorbar(alphas, eps, yerr=err, color=colour, marker=".", ms=4, lw=1, capsize=1.5,
                    label=rf"$\omega$ = {w:g}")
        if r["eps_lin"] is not None:  # None: the omega's task failed
            bx.axhline(float(r["eps_lin"]), color=colour, ls=":", lw=0.8)
    bx.set_xlabel(r"$\alpha$")
    bx.set_ylabel(r"Bayes-optimal $\epsilon_g$ (dotted: $\epsilon_{lin}$)")
    bx.set_title(r"Bayes-optimal test error")
    if len(rows) <= 10:
        bx.legend(fontsize=7, loc="upper right")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return fig


__all__ = ["THRESHOLD_SERIES", "plot_bayes_diagram"]
