"""The figure of ``studies/bayes_vs_erm.py`` (docs/bayes-optimal.md, "Against ERM"): the test error against alpha of
ERM's branches, the linear baseline, the Bayes-optimal estimator with its thresholds (drawn as the phase diagram
draws them, :mod:`attnphase.numerics.jobs.plots`) and AMP at finite d, on one axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.numerics.jobs.plots import BAYES_COLOR, _bayes_lines, saved  # noqa: E402


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
    return saved(fig, path)
