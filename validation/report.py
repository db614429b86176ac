"""Figures, ``report.md`` and ``summary.json`` of a validation campaign (the only module that plots).

Input: the summary dict of :func:`attnphase.validation.campaign.run_campaign`.
Output in ``out_dir``:

* ``fig2_alpha_sweep.png`` -- |m|, |theta|, eps_g and Delta e_t against alpha:
  theory (semantic global solid, semantic local dashed, positional global
  solid), each branch drawn only where it exists and its end marked by a tick up from the x axis
  (:mod:`attnphase.validation.branch_segments`), and simulation means +- std per
  init, alpha_c and alpha_l marked;
* ``fig3_heatmap.png`` -- simulated Delta e_t over (alpha, omega) with the
  theory's alpha_c(omega) curve on top, computed at every heat-map omega and at the
  plan's ``curve_omegas`` in between and beyond, so that it spans the whole map;
* ``finite_size.png`` -- |simulation - theory| against d, and the small-alpha
  semantic overlap against 1/sqrt(d) with its extrapolation and both theories;
* ``summary.json`` -- the summary plus ``headline`` (the numbers quoted in the report);
* ``report.md``.

Agreement rule (stated in the report): a simulated mean agrees with the theory
when ``|mean - theory| <= 2 std / sqrt(n_runs) + 0.1 |theory|`` (statistical
error plus a 10 % allowance for finite-size corrections).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .branch_segments import drawn_end, existing_segments

REL_TOL = 0.10
"""Relative allowance for finite-size corrections in the agreement rule."""

_INIT_STYLE = {"semantic": ("o", "C0"), "positional": ("s", "C1"), "random": ("^", "C2")}
_COMPARED = {"semantic": ("abs_theta", "eps_g"), "positional": ("abs_m", "eps_g")}


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)


def agrees(row: dict[str, Any], obs: str, prox: str = "global") -> bool | None:
    """The agreement rule for one observable of one aggregated row (``None``: no theory point on the branch)."""
    th = row["theory"].get(prox)
    if not th or not th["converged"] or th["branch_reached"] != row["branch"] or not th.get("exists", True):
        return None  # no theory point on the branch (a noise-level point past the branch's end included)
    mean, std, n = row[f"{obs}_mean"], row[f"{obs}_std"], row["n_runs"]
    return abs(mean - th[obs]) <= 2 * std / math.sqrt(n) + REL_TOL * abs(th[obs])


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    """Simulation vs theory at the largest alpha, the smallest alpha down to which every point agrees, and the verdict."""
    rows = summary["sweep"]
    out: dict[str, Any] = {"rel_tol": REL_TOL}
    for init, observables in _COMPARED.items():
        sel = sorted((r for r in rows if r["init"] == init), key=lambda r: -r["alpha"])
        if not sel:
            continue
        top = sel[0]
        out[f"{init}_at_alpha_max"] = {
            "alpha": top["alpha"],
            **{f"{o}_sim": top[f"{o}_mean"] for o in observables},
            **{f"{o}_std": top[f"{o}_std"] for o in observables},
            **{f"{o}_theory": (top["theory"]["global"] or {}).get(o) for o in observables},
        }
        smallest = None
        for r in sel:
            if all(agrees(r, o) for o in observables):
                smallest = r["alpha"]
            else:
                break
        row = next((r for r in sel if r["alpha"] == smallest), None)
        out[f"{init}_smallest_agreeing_alpha"] = smallest
        if row is not None:
            out[f"{init}_at_smallest_agreeing_alpha"] = {
                **{f"{o}_sim": row[f"{o}_mean"] for o in observables},
                **{f"{o}_theory": row["theory"]["global"][o] for o in observables},
            }
    out["global_vs_local"] = global_vs_local(summary)
    return out


def global_vs_local(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`global_vs_local_at` for each of the plan's small alphas."""
    return [global_vs_local_at(summary, a) for a in summary["plan"]["alphas_small"]]


def global_vs_local_at(summary: dict[str, Any], alpha: float) -> dict[str, Any]:
    """Which proximal mode the semantic-init simulations follow at a small ``alpha`` (finite-size evidence).

    The d -> inf extrapolation ``a +- a_se`` of |theta| (fit ``a + b / sqrt(d)``)
    is compared with both theories; a theory is "consistent" when within
    ``2 a_se + 0.02``.
    """
    fit = next((f for f in summary["finite_size_fits"]
                if f["alpha"] == alpha and f["init"] == "semantic" and f["observable"] == "abs_theta"), None)
    if fit is None:
        return {"alpha": alpha, "verdict": "no finite-size data at this alpha"}
    th = {p: _nan(v) for p, v in fit["theory"].items()}
    margin = 2 * fit["a_se"] + 0.02
    consistent = {p: (not math.isnan(v)) and abs(fit["a"] - v) <= margin for p, v in th.items()}
    rows = sorted((r for r in summary["finite_size"] if r["alpha"] == alpha and r["init"] == "semantic"),
                  key=lambda r: r["d"])
    trend = [(r["d"], r["abs_theta_mean"], r["abs_theta_std"]) for r in rows]
    gap = abs(th["global"] - th["local"]) if all(not math.isnan(v) for v in th.values()) else math.nan
    dist = ", ".join(f"{p} {v:.4f} ({abs(fit['a'] - v) / fit['a_se']:.1f} se away)" for p, v in th.items()
                     if not math.isnan(v))
    if consistent["global"] and consistent["local"]:
        verdict = (f"the two theories give |theta| = {th['global']:.4f} (global) and {th['local']:.4f} (local); "
                   f"the simulations extrapolate to {fit['a']:.4f} +- {fit['a_se']:.4f}, consistent with both: "
                   + (f"the data cannot separate modes {gap:.3f} apart at a resolution of +-{margin:.3f}"
                      if gap > 1e-3 else "the modes coincide here"))
    elif consistent["global"] or consistent["local"]:
        which = "global" if consistent["global"] else "local"
        verdict = (f"gradient descent follows the {which} proximal theory (within 2 se + 0.02): |theta| "
                   f"extrapolates to {fit['a']:.4f} +- {fit['a_se']:.4f}; theory: {dist}")
    else:
        verdict = ("gradient descent follows neither theory (none within 2 se + 0.02): "
                   f"|theta| extrapolates to {fit['a']:.4f} +- {fit['a_se']:.4f} (fit a + b/sqrt(d) over d = "
                   f"{', '.join(str(d) for d, _, _ in trend)}); theory: {dist}")
    return {"alpha": alpha, "extrapolated": fit["a"], "extrapolated_se": fit["a_se"], "slope_b": fit["b"],
            "theory": th, "consistent": consistent, "trend": trend, "verdict": verdict}


# --- figures -----------------------------------------------------------------------------

def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def mark_end(ax: Any, alpha: float, color: str, label: str | None = None) -> None:
    """Mark a branch's end: a thick tick in the branch's colour rising from the x axis at its alpha."""
    ax.axvline(alpha, ymin=0.0, ymax=0.08, color=color, lw=3, solid_capstyle="butt", label=label)


def plot_theory_branch(ax: Any, theory: dict[str, Any], key: str, obs: str, color: str, ls: str, label: str,
                       absolute: bool = False) -> None:
    """One theory branch (``key`` = ``"branch/prox"``) drawn only where it exists, its end marked (a tick up
    from the x axis in the branch's colour)."""
    c = theory["curves"].get(key)
    if c is None:
        return
    branch = key.split("/")[0]
    end = _nan(c.get("end"))
    for i, (a, v) in enumerate(existing_segments(c["records"], branch, end, obs, absolute)):
        ax.plot(a, v, color=color, ls=ls, lw=1.5, marker="." if len(a) == 1 else None,
                label=f"theory {label}" if i == 0 else None)
    at = drawn_end(c["records"], branch, end)
    if at is not None:
        mark_end(ax, at, color)


def plot_alpha_sweep(summary: dict[str, Any], path: Path) -> None:
    """Fig. 2: theory curves and simulation means +- std against alpha."""
    plt = _plt()
    th = summary["theory"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    panels = (("abs_m", "|m|"), ("abs_theta", "|theta|"), ("eps_g", "eps_g"))
    for ax, (obs, label) in zip(axes.flat, panels):
        key = obs.replace("abs_", "")
        for ckey, style, name in (("semantic/global", ("C0", "-"), "semantic, global prox"),
                                  ("semantic/local", ("C0", "--"), "semantic, local prox"),
                                  ("positional/global", ("C1", "-"), "positional, global prox"),
                                  ("positional/local", ("C1", ":"), "positional, local prox")):
            plot_theory_branch(ax, th, ckey, key, style[0], style[1], name, absolute=obs.startswith("abs_"))
        if obs == "eps_g":
            line = ax.axhline(th["eps_lin"], color="C4", lw=1.2, ls="-", label="theory eps_lin")
            ax.legend(handles=[line], fontsize=7, loc="upper right")
        for init, (marker, color) in _INIT_STYLE.items():
            rows = sorted((r for r in summary["sweep"] if r["init"] == init), key=lambda r: r["alpha"])
            if rows:
                ax.errorbar([r["alpha"] for r in rows], [r[f"{obs}_mean"] for r in rows],
                            yerr=[r[f"{obs}_std"] for r in rows], fmt=marker, color=color, mfc="none", ms=5,
                            capsize=2, label=f"GD, {init} init")
        ax.set_xlabel("alpha")
        ax.set_ylabel(label)
    ax = axes.flat[3]
    for prox, ls in (("global", "-"), ("local", "--")):
        rows = [r for r in summary["delta_e_t"] if r["theory"][prox] is not None]
        if rows:
            ax.plot([r["alpha"] for r in rows], [r["theory"][prox] for r in rows], color="k", ls=ls,
                    label=f"theory, {prox} prox")
    rows = summary["delta_e_t"]
    ax.errorbar([r["alpha"] for r in rows], [r["delta_e_t_mean"] for r in rows],
                yerr=[r["delta_e_t_std"] for r in rows], fmt="D", color="C3", mfc="none", capsize=2,
                label="GD (paired seeds)")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("alpha")
    ax.set_ylabel("Delta e_t = e_t(sem) - e_t(pos)")
    for a in axes.flat:
        for prox, ls in (("global", ":"),):
            ac, al = _nan(th["alpha_c"].get(prox)), _nan(th["alpha_l"].get(prox))
            if not math.isnan(ac):
                a.axvline(ac, color="grey", ls=ls, lw=1)
            if not math.isnan(al):
                a.axvline(al, color="grey", ls="-.", lw=1)
    axes.flat[0].legend(fontsize=7, loc="best")
    axes.flat[3].legend(fontsize=7, loc="best")
    ac, al = _nan(th["alpha_c"].get("global")), _nan(th["alpha_l"].get("global"))
    d = summary["plan"]["d"]
    fig.suptitle(f"GD at d = {d} vs theory, omega = {th['omega']}: alpha_c = {ac:.3f} (dotted), alpha_l = {al:.3f} "
                 f"(dash-dot)\neach theory branch is drawn where it exists; a tick on the alpha axis marks where it ends", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def alpha_c_curve(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The theory's alpha_c(omega) over the map, by omega: ``summary["alpha_c_curve"]`` (the heat-map and curve
    omegas), or for an older summary the heat-map omegas' ``heat_theory``."""
    if summary.get("alpha_c_curve"):
        return sorted(summary["alpha_c_curve"], key=lambda c: c["omega"])
    out = []
    for t in summary["heat_theory"]:
        prox = "global" if "global" in t["alpha_c"] else next(iter(t["alpha_c"]))
        out.append({"omega": t["omega"], "alpha_c": t["alpha_c"][prox], "prox": prox})
    return sorted(out, key=lambda c: c["omega"])


def plot_heatmap(summary: dict[str, Any], path: Path) -> None:
    """Fig. 3: simulated Delta e_t over (alpha, omega) and the theory's alpha_c(omega)."""
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
    runs: list[list[tuple[float, float, str]]] = [[]]
    for w, a, p in pts:  # the curve is not drawn across an omega where alpha_c was not found
        if math.isnan(a):
            runs.append([])
        else:
            runs[-1].append((w, a, p))
    for k, run in enumerate(r for r in runs if r):
        ax.plot([a for _, a, _ in run], [w for w, _, _ in run], "k-", lw=2,
                label="theory alpha_c(omega)" if k == 0 else None)
        for w, a, p in run:
            ax.plot([a], [w], "ko" if p == "global" else "kP", ms=5)
    if any(not math.isnan(a) for _, a, _ in pts):
        ax.plot([], [], "ko", ms=5, label="global prox")
        if any(p == "local" and not math.isnan(a) for _, a, p in pts):
            ax.plot([], [], "kP", ms=5, label="local prox")
        ax.legend(loc="upper left", fontsize=8)
    missing = [w for w, a, _ in pts if math.isnan(a)]
    if missing:
        ax.text(0.01, 0.01, "no alpha_c found at omega = " + ", ".join(f"{w:g}" for w in missing),
                transform=ax.transAxes, fontsize=7)
    ax.set_xlim(_edges(alphas)[[0, -1]])
    ax.set_ylim(_edges(omegas)[[0, -1]])
    ax.set_xlabel("alpha")
    ax.set_ylabel("omega")
    ax.set_title(f"GD at d = {summary['plan']['d']}: red = positional lower, blue = semantic lower")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _edges(v: list[float]) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    if v.size == 1:
        return np.array([v[0] - 0.5, v[0] + 0.5])
    mid = (v[1:] + v[:-1]) / 2
    return np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]])


def plot_finite_size(summary: dict[str, Any], path: Path) -> None:
    """|simulation - theory| against d (overlaps absolute, eps_g relative), and the small-alpha |theta| against 1/sqrt(d)."""
    plt = _plt()
    rows = summary["finite_size"]
    fig, (ax, cx, bx) = plt.subplots(1, 3, figsize=(16, 4.6))
    cases = sorted({(r["alpha"], r["init"]) for r in rows})
    ds_all = np.array(sorted({r["d"] for r in rows}), dtype=float)
    for i, (alpha, init) in enumerate(cases):
        sel = sorted((r for r in rows if r["alpha"] == alpha and r["init"] == init), key=lambda r: r["d"])
        for obs in _COMPARED[init]:
            target = cx if obs == "eps_g" else ax
            for prox, ls in (("global", "-"), ("local", "--")):
                if prox == "local" and not any(_differs(r, obs) for r in sel):
                    continue  # the modes coincide here: one line is enough
                pts = [(r["d"], abs(r[f"{obs}_mean"] - r["theory"][prox][obs]), r[f"{obs}_std"] / math.sqrt(r["n_runs"]),
                        abs(r["theory"][prox][obs])) for r in sel if r["theory"].get(prox)]
                if not pts:
                    continue
                d, dev, se, th = np.array(pts).T
                scale = th if obs == "eps_g" else np.ones_like(th)
                target.errorbar(d, dev / scale, yerr=se / scale, ls=ls, marker="o", ms=4, capsize=2, color=f"C{i}",
                                label=f"{init} init, alpha = {alpha}, vs {prox}")
    for target, ylabel in ((ax, "|simulated mean - theory| of |theta| (semantic) or |m| (positional)"),
                           (cx, "|simulated mean - theory| / theory, eps_g")):
        if ds_all.size:
            target.plot(ds_all, 0.3 * (ds_all / ds_all[0]) ** -0.5, "k:", label="~ d^-1/2")
        target.set_xscale("log")
        target.set_yscale("log")
        target.set_xlabel("d")
        target.set_ylabel(ylabel, fontsize=8)
        target.legend(fontsize=6)
    ax.set_title("finite-size gap: overlaps")
    cx.set_title("finite-size gap: test error")

    gls = summary["headline"]["global_vs_local"] if "headline" in summary else global_vs_local(summary)
    for k, gl in enumerate(g for g in gls if "trend" in g):
        color = f"C{k}"
        d, mean, std = np.array(gl["trend"]).T
        n = next(r["n_runs"] for r in rows if r["alpha"] == gl["alpha"])
        x = 1 / np.sqrt(d)
        bx.errorbar(x, mean, yerr=std / math.sqrt(n), fmt="o", color=color, capsize=2,
                    label=f"GD, semantic init, alpha = {gl['alpha']}")
        xx = np.linspace(0, x.max() * 1.05, 50)
        bx.plot(xx, gl["extrapolated"] + gl["slope_b"] * xx, "-", color=color, lw=1)
        bx.errorbar([0], [gl["extrapolated"]], yerr=[2 * gl["extrapolated_se"]], fmt="none", color=color, capsize=4)
        for prox, marker in (("global", "*"), ("local", "P")):
            v = gl["theory"][prox]
            if not math.isnan(v):
                bx.plot([-0.004 if prox == "global" else 0.004], [v], marker, ms=12, color=color, mfc="none",
                        label=f"theory, {prox} prox, alpha = {gl['alpha']}")
    bx.set_xlabel("1 / sqrt(d)")
    bx.set_ylabel("|theta|")
    bx.set_title("semantic start, small alpha: fit a + b/sqrt(d) (a +- 2 se at 0)")
    bx.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _differs(row: dict[str, Any], obs: str) -> bool:
    g, loc = row["theory"].get("global"), row["theory"].get("local")
    if not g or not loc:
        return False
    return abs(g[obs] - loc[obs]) > 1e-3 * max(abs(g[obs]), 1e-3) or g["branch_reached"] != loc["branch_reached"]


# --- markdown ----------------------------------------------------------------------------

def _f(x: Any, fmt: str = ".4g") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "--"
    return format(x, fmt)


def _pm(row: dict[str, Any], obs: str) -> str:
    return f"{_f(row[f'{obs}_mean'])} ± {_f(row[f'{obs}_std'], '.2g')}"


def render_markdown(summary: dict[str, Any]) -> str:
    """The text of ``report.md``."""
    plan, th, hl = summary["plan"], summary["theory"], summary["headline"]
    p = plan["params"]
    lines = [
        "# Gradient descent at finite d against the theory",
        "",
        f"Generated by `attnphase validate{' --quick' if plan['quick'] else ''}`. Model: L = {p['L']}, sigma = "
        f"{p['sigma'][0] if len(set(p['sigma'])) == 1 else p['sigma']}, lambda = {p['lam']}, A = {p['A']}, P = {p['P']}, omega = {p['omega']} (sweep). "
        f"Main dimension d = {plan['d']}, {len(plan['seeds'])} seeds per point, {plan['n_test']} fresh test "
        f"samples per run, dtype {plan['dtype']}, device {summary['runs'][0]['device'] if summary['runs'] else '?'}.",
        f"{summary['n_simulations']} simulations ({summary['simulation_seconds']:.0f} s wall, "
        f"{summary.get('simulation_cpu_seconds', math.nan):.0f} s CPU), theory from `attnphase.numerics` "
        f"({summary['theory_seconds']:.0f} s wall, {summary.get('theory_cpu_seconds', math.nan):.0f} s CPU; "
        f"{summary.get('theory_jobs_cached', 0)} theory job(s) read from the store), every simulation and theory "
        f"omega one task ({_tasks_line(summary)}), campaign wall time {summary['wall_seconds']:.0f} s. "
        f"All runs converged: {summary['all_converged']}.",
        "",
        "Training: full-batch gradient descent with Armijo backtracking on "
        "R(Q) = sum_mu (1/2d)|y - f|^2 + (lambda/2)|Q|^2 until |grad R|/sqrt(d) <= 1e-6 (float64). "
        "Overlaps: m = p_1.Q/sqrt(d), theta = Q.Q*/d, q = |Q|^2/d (compared in absolute value: Q -> -Q is a "
        "symmetry). Teacher norm fixed to |Q*|^2 = d.",
        "",
        "## Theory (numerics)",
        "",
        f"* eps_lin = {_f(th['eps_lin'], '.6g')}",
    ]
    for prox in th["alpha_c"]:
        sp = th["curves"].get(f"semantic/{prox}", {}).get("end")
        lines.append(f"* {prox} prox: alpha_c = {_f(th['alpha_c'][prox], '.4f')}, alpha_l = "
                     f"{_f(th['alpha_l'][prox], '.4f')}, semantic branch ends at alpha = {_f(sp, '.3f')}"
                     + (f" (notes: {'; '.join(th['notes'][prox])})" if th["notes"].get(prox) else ""))
    lines += ["", "## Headline", "",
              f"Agreement rule: |mean - theory| <= 2 std/sqrt(n_runs) + {REL_TOL:.0%} |theory|, theory = global prox.",
              "", "| | alpha | simulation | theory |", "|---|---|---|---|"]
    for init, observables in _COMPARED.items():
        top = hl.get(f"{init}_at_alpha_max")
        if top:
            for o in observables:
                lines.append(f"| {init} init, {o} | {top['alpha']} | {_f(top[f'{o}_sim'])} ± {_f(top[f'{o}_std'], '.2g')} "
                             f"| {_f(top[f'{o}_theory'])} |")
        sm = hl.get(f"{init}_at_smallest_agreeing_alpha")
        if sm:
            a = hl[f"{init}_smallest_agreeing_alpha"]
            for o in observables:
                lines.append(f"| {init} init, {o} (smallest agreeing alpha) | {a} | {_f(sm[f'{o}_sim'])} | {_f(sm[f'{o}_theory'])} |")
    lines += ["",
              f"Smallest alpha down to which every grid point agrees: semantic init "
              f"{_f(hl.get('semantic_smallest_agreeing_alpha'))}, positional init "
              f"{_f(hl.get('positional_smallest_agreeing_alpha'))}.",
              "",
              "## Global or local proximal theory? (semantic start, small alpha)",
              ""]
    for gl in hl["global_vs_local"]:
        lines += [f"**alpha = {gl['alpha']}**: {gl['verdict']}.", ""]
        if "trend" in gl:
            lines += ["| d | simulated abs(theta) (mean ± std) |", "|---|---|"]
            lines += [f"| {int(d)} | {_f(m)} ± {_f(s, '.2g')} |" for d, m, s in gl["trend"]]
            lines += ["", f"Extrapolation (weighted fit a + b/sqrt(d)): a = {_f(gl['extrapolated'])} ± "
                          f"{_f(gl['extrapolated_se'], '.2g')}, b = {_f(gl['slope_b'])}; theory: global "
                          f"{_f(gl['theory']['global'])}, local {_f(gl['theory']['local'])}.", ""]
    lines += ["Semantic branch near its end, both modes (theory |theta|, eps_g):", "",
              "| alpha | global abs(theta) | local abs(theta) | global eps_g | local eps_g | GD abs(theta) (semantic init) |",
              "|---|---|---|---|---|---|"]
    sem_rows = {r["alpha"]: r for r in summary["sweep"] if r["init"] == "semantic"}
    for a in sorted(sem_rows):
        r = sem_rows[a]
        g, loc = r["theory"]["global"] or {}, r["theory"]["local"] or {}

        def lab(t: dict[str, Any], key: str) -> str:
            if not t:
                return "--"
            tag = "" if t["branch_reached"] == "semantic" else f" ({t['branch_reached']})"
            return _f(t[key]) + tag

        lines.append(f"| {a} | {lab(g, 'abs_theta')} | {lab(loc, 'abs_theta')} | {lab(g, 'eps_g')} | "
                     f"{lab(loc, 'eps_g')} | {_pm(r, 'abs_theta')} |")
    lines += ["", "## Alpha sweep (every mean ± std next to the global-prox theory of the compared branch)", "",
              "| alpha | init | branch | runs (conv.) | abs(m) | theory | abs(theta) | theory | eps_g | theory | e_t | theory |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(summary["sweep"], key=lambda r: (r["init"], r["alpha"])):
        t = r["theory"]["global"] or {}
        lines.append(f"| {r['alpha']} | {r['init']} | {r['branch']} | {r['n_runs']} ({r['n_converged']}) | "
                     f"{_pm(r, 'abs_m')} | {_f(t.get('abs_m'))} | {_pm(r, 'abs_theta')} | {_f(t.get('abs_theta'))} | "
                     f"{_pm(r, 'eps_g')} | {_f(t.get('eps_g'))} | {_pm(r, 'e_t')} | {_f(t.get('e_t'))} |")
    lines += ["", "Theory entries are the record of the compared branch at that alpha; where the numerics "
              "landed on another fixed point (e.g. agnostic below the semantic branch's end) that is the value shown.",
              "", "## Finite-size scaling (fits a + b/sqrt(d), d -> inf value a)", "",
              "| alpha | init | observable | a ± se | b | theory global | theory local |", "|---|---|---|---|---|---|---|"]
    for f in summary["finite_size_fits"]:
        lines.append(f"| {f['alpha']} | {f['init']} | {f['observable']} | {_f(f['a'])} ± {_f(f['a_se'], '.2g')} | "
                     f"{_f(f['b'])} | {_f(f['theory']['global'])} | {_f(f['theory']['local'])} |")
    lines += ["", "## Figures", "",
              "* `fig2_alpha_sweep.png`: theory (lines) and GD means ± std (markers) against alpha; alpha_c dotted, "
              "alpha_l dash-dot.",
              "* `fig3_heatmap.png`: simulated Delta e_t over (alpha, omega) with the theory's alpha_c(omega).",
              "* `finite_size.png`: |simulation - theory| against d; small-alpha |theta| against 1/sqrt(d).",
              ""]
    return "\n".join(lines)


def _jsonable(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, np.integer)):
        return _jsonable(x.item())
    return x


def write_report(summary: dict[str, Any], out_dir: str | Path) -> dict[str, Any]:
    """Write the figures, ``summary.json`` and ``report.md``; returns the summary with ``headline`` added."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    full = {**summary, "headline": headline(summary)}
    plot_alpha_sweep(full, out / "fig2_alpha_sweep.png")
    plot_heatmap(full, out / "fig3_heatmap.png")
    plot_finite_size(full, out / "finite_size.png")
    (out / "summary.json").write_text(json.dumps(_jsonable(full), indent=1))
    (out / "report.md").write_text(render_markdown(full))
    return full


def _tasks_line(summary: dict) -> str:
    t = summary.get("tasks") or {}
    if not t:
        return "tasks not recorded"
    line = f"{t['computed']} computed, {t['stored']} read from the store, {t['failed']} failed"
    return line + (f": {t['failures']}" if t.get("failures") else "")
