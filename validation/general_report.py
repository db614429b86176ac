"""Figure (``general_suite.png``, :func:`plot_general`), ``report.md`` (:func:`render_general_markdown`) and
``summary.json`` of ``attnphase validate --suite general``, from the summary dict of
:func:`attnphase.validation.general_suite.run_general_suite`.
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Any

from attnphase.execution.outputs import json_value

from .agreement import EXTRAPOLATED_SE, REL_TOL, all_runs_converged, within_rule
from .basin_theory import rule_verdict
from .general_cases import COMPARED
from .finite_size import MIN_FIT_DS
from .plots import _plt, plot_theory_branch, tiny_bars
from .output_names import summary_for_output
from .reference import _nan
from .report import _convergence_lines, _f, _pm, _pmv

_STYLE = {"semantic": ("o", "C0"), "positional": ("s", "C1")}
#: Rank-r theory points: (marker, colour) per branch.
_RANK_STYLE = {"semantic": ("*", "C0"), "positional": ("*", "C1"), "mixed": ("P", "C2")}


def _theory_lines(ax: Any, theory: dict[str, Any], obs_by_branch: dict[str, str]) -> None:
    for branch, obs in obs_by_branch.items():
        plot_theory_branch(ax, theory, f"{branch}/global", obs, _STYLE[branch][1], "-", branch, absolute=True,
                           ms=None, end_label=f"{branch} branch ends")


def _invariant_points(top: Any, bottom: Any, theory: dict[str, Any]) -> None:
    """The rank-r fixed points of a case: converged ones as points (semantic |theta|, positional |m|, mixed
    both; every branch's eps_g below), a solve that did not converge as 'nc' at its alpha (no number)."""
    for branch, (marker, color) in _RANK_STYLE.items():
        pts = sorted((p for p in theory["points"] if p["requested"] == branch), key=lambda p: p["alpha"])
        ok = [p for p in pts if p["converged"]]
        shown = {"semantic": ("abs_theta",), "positional": ("m_norm",), "mixed": ("abs_theta", "m_norm")}[branch]
        for k, obs in enumerate(shown):
            top.plot([p["alpha"] for p in ok], [p[obs] for p in ok], marker if k == 0 else "X", color=color, ms=9,
                     ls="none", label=f"SE {branch} ({'|theta|' if obs == 'abs_theta' else '|m|'})" if ok else None)
        bottom.plot([p["alpha"] for p in ok], [p["eps_g"] for p in ok], marker, color=color, ms=9, ls="none",
                    label=f"SE {branch}" if ok else None)
        for p in pts:
            if not p["converged"]:
                for ax in (top, bottom):
                    ax.annotate(f"{branch[:3]} nc", (p["alpha"], 0.02), xycoords=("data", "axes fraction"),
                                color=color, fontsize=6, rotation=90, ha="center")
    bottom.axhline(theory["eps_lin"], color="C4", lw=1, label="eps_lin")


def _aligned_points(top: Any, bottom: Any, rows: list[dict[str, Any]]) -> None:
    """The aligned-prox fixed points on the start's branch (diamonds): the start's overlap above, eps_g below; a
    rank-r case's aligned-prox mixed point (green diamonds: its |theta| and |m| above, eps_g below)."""
    for init, (_, color) in _STYLE.items():
        pts = [r["aligned"] for r in rows if r["init"] == init and (r.get("aligned") or {}).get("exists")]
        if pts:
            for ax, obs in zip((top, bottom), COMPARED[init]):
                ax.plot([p["alpha"] for p in pts], [p[obs] for p in pts], "D", color=color, ms=7, mfc="none", mew=1.5,
                        ls="none", label=f"SE aligned prox, {init}")
    mixed = list({p["alpha"]: p for p in (r.get("aligned_mixed") or {} for r in rows) if p.get("exists")}.values())
    for ax, obs in ((top, "abs_theta"), (top, "m_norm"), (bottom, "eps_g")):
        if mixed:
            ax.plot([p["alpha"] for p in mixed], [p[obs] for p in mixed], "D", color="C2", ms=9, mfc="none", mew=1.5,
                    ls="none", label="SE aligned prox, mixed (|theta|, |m|)" if ax is top else "SE aligned prox, mixed")


def figure_legend_entries(axes: Any) -> tuple[list[Any], list[str]]:
    """Every labelled artist of ``axes``, each label once (the first panel that draws it): one legend for the
    figure, so a marker drawn only in a later panel (the aligned-prox diamonds, a rank-r case's points) is in it."""
    entries: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(lab, h)
    return list(entries.values()), list(entries)


def _is_rank(theory: dict[str, Any] | None) -> bool:
    return theory is not None and theory.get("kind") == "rank"


def plot_general(summary: dict[str, Any], path: Path) -> None:
    """``general_suite.png``, one column per case against alpha: the theory's semantic |theta| and positional |m|
    (top) and eps_g (bottom), each branch only where it exists, its end ticked; the landmark dotted; GD's means
    +- std from each start, and each run's eps_g (dots: seeds that land on two minima show as two groups); the
    aligned-prox points (open diamonds); a rank-r case's converged points (stars, the mixed point's |theta| and
    |m| both)."""
    plt = _plt()
    cases = summary["cases"]
    fig, axes = plt.subplots(2, len(cases), figsize=(3.6 * len(cases), 7), squeeze=False)
    for j, case in enumerate(cases):
        top, bottom = axes[0, j], axes[1, j]
        th = case["theory"]
        if _is_rank(th):
            _invariant_points(top, bottom, th)
        elif th is not None:
            _theory_lines(top, th, {"semantic": "theta", "positional": "m_norm"})
            _theory_lines(bottom, th, {"semantic": "eps_g", "positional": "eps_g"})
            bottom.axhline(th["eps_lin"], color="C4", lw=1, label="eps_lin")
        else:
            top.text(0.5, 0.92, "theory pending", transform=top.transAxes, ha="center", fontsize=9)
        if math.isfinite(_nan(case["landmark"])):
            for ax in (top, bottom):
                ax.axvline(case["landmark"], color="grey", ls=":", lw=1)
        for init, (marker, color) in _STYLE.items():
            rows = sorted((r for r in case["rows"] if r["init"] == init), key=lambda r: r["alpha"])
            for obs in ("abs_theta", "m_norm") if _is_rank(th) else COMPARED[init][:1]:
                top.errorbar([r["alpha"] for r in rows], [r[f"{obs}_mean"] for r in rows],
                             yerr=[r[f"{obs}_std"] for r in rows], fmt="o" if obs == "abs_theta" else "s", color=color,
                             mfc="none", capsize=2,
                             label=f"GD, {init} start ({'|theta|' if obs == 'abs_theta' else '|m|'})")
            bottom.errorbar([r["alpha"] for r in rows], [r["eps_g_mean"] for r in rows],
                            yerr=[r["eps_g_std"] for r in rows], fmt=marker, color=color, mfc="none", capsize=2,
                            label=f"GD, {init} start")
            # each run's eps_g: a mean over seeds that land on two minima lies between them, on neither
            runs = [r for r in summary.get("runs", []) if r.get("case") == case["key"] and r.get("init") == init
                    and r.get("d") == summary["plan"]["d"] and r.get("eps_g") is not None]
            bottom.plot([r["alpha"] for r in runs], [r["eps_g"] for r in runs], ".", color=color, ms=3, alpha=0.6,
                        label=f"GD, {init} start: each run")
        _aligned_points(top, bottom, case["rows"])
        top_note = tiny_bars(top, [r.get(f"{o}_std") for r in case["rows"] for o in ("abs_theta", "m_norm")])
        top.set_title(f"({case['key']}) {case['title']}" + (f"\n{top_note}" if top_note else ""), fontsize=9)
        bottom.set_title(tiny_bars(bottom, [r.get("eps_g_std") for r in case["rows"]]), fontsize=8)
        top.set_ylabel("|theta| (o), |m| (s)" if _is_rank(th) else "|theta| (semantic), |m| (positional)", fontsize=9)
        bottom.set_ylabel("eps_g", fontsize=9)
        for ax in (top, bottom):
            ax.set_xlabel("alpha", fontsize=9)
            ax.tick_params(labelsize=8)
    handles, labels = figure_legend_entries(axes.flat)
    ncol = max(1, min(len(labels), (3 * len(cases)) // 2 + (len(cases) == 1), 6))  # what the width holds
    fig.suptitle(textwrap.fill(f"general model: GD at d = {summary['plan']['d']} vs theory (global prox); GD bars: "
                               "the seeds' standard deviation (their spread, not an error of the mean); dots: each "
                               "run; dotted: alpha_c, or the semantic end where there is none",
                               width=38 * len(cases)), fontsize=10)
    fig.tight_layout(rect=(0, 0.035 * (1 + math.ceil(len(labels) / ncol)), 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False, markerscale=0.9)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table_lines(summary: dict[str, Any]) -> list[str]:
    """One markdown table row per (case, alpha, start): GD vs the theory reached from the same start."""
    lines = ["| case | alpha | side | start | runs (conv.) | GD overlap | theory | GD eps_g | theory eps_g | "
             "theory reached | verdict |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for case in summary["cases"]:
        for r in sorted(case["rows"], key=lambda r: (r["alpha"], r["init"])):
            obs = COMPARED[r["init"]][0]
            th = r["theory"] or {}
            name = "abs(theta)" if obs == "abs_theta" else "abs(m)"
            verdict = rule_verdict(r["agrees"]) if r["status"] == "disagrees" else r["status"]
            at_mixed = bool(r.get("mixed_agrees")) and all(r["mixed_agrees"].values())
            if at_mixed:
                verdict += "; GD at the mixed point (agrees with it)"
            if r["status"] != "agrees" and rule_verdict(r.get("aligned_agrees")) == "agrees":
                verdict += "; agrees with the aligned-prox SE (the basin GD keeps)"
            elif r["status"] != "agrees" and not at_mixed and rule_verdict(r.get("aligned_mixed_agrees")) == "agrees":
                verdict += "; at the aligned-prox mixed point (agrees with it: the basin GD keeps)"
            elif r["status"] == "disagrees" and not at_mixed:
                verdict += nearest_point(case["rows"], r)
            reached = _reached(th)
            if th and not th["converged"]:
                th = {}
            elif th:
                reached += "" if th.get("exists", True) else f" (past the {r['init']} branch end)"
                reached += f" (on {th['quadrature']}; {'; '.join(th['tries'])})" if th.get("tries") else ""
            lines.append(f"| ({case['key']}) | {r['alpha']} | {r['side'] or '--'} | {r['init']} | {r['n_runs']} "
                         f"({r['n_converged']}) | {name} {_pm(r, obs)} | {_f(th.get(obs))} | {_pm(r, 'eps_g')} | "
                         f"{_f(th.get('eps_g'))} | {reached} | {verdict} |")
    return lines


#: The names of the compared observables in the verdicts.
OBSERVABLE_NAMES = {"abs_theta": "abs(theta)", "m_norm": "abs(m)", "eps_g": "eps_g"}


def nearest_point(rows: list[dict[str, Any]], row: dict[str, Any]) -> str:
    """For a rank-r ``row`` of ``rows`` (its case's) that agrees with none of its fixed points: the one at its alpha
    -- its start's branch, the other start's, the mixed point, each where it exists -- that GD agrees with, by the
    rule, in the most of the mixed comparison's observables (at least all but one), e.g. "; nearest the positional
    point: agrees in abs(m), eps_g; abs(theta) 0.061 +- 0.014 against 0"; "" for a rank-1 row or where no point
    agrees in that many."""
    observables = tuple(row.get("mixed_agrees") or ())
    if not observables or not all_runs_converged(row):
        return ""
    other = next((o for o in rows if o["alpha"] == row["alpha"] and o["init"] != row["init"]), None)
    best, agreeing = None, []
    for th in (row["theory"], other and other["theory"], row.get("mixed")):
        if not th or not th.get("converged") or not th.get("exists", True):
            continue
        ok = [o for o in observables
              if within_rule(row[f"{o}_mean"], row[f"{o}_std"], row["n_runs"], th[o])]
        if len(ok) > len(agreeing):
            best, agreeing = th, ok
    if best is None or len(agreeing) < len(observables) - 1:
        return ""
    apart = "; ".join(f"{OBSERVABLE_NAMES[o]} {_pm(row, o)} against {_f(best[o])}" for o in observables
                      if o not in agreeing)
    return (f"; nearest the {best['branch_reached']} point: agrees in "
            f"{', '.join(OBSERVABLE_NAMES[o] for o in agreeing)}" + (f"; {apart}" if apart else ""))


def _reached(th: dict[str, Any] | None) -> str:
    if not th:
        return "--"
    if not th["converged"]:
        return "not converged" + (f" (residual {th['residual']:.2g})" if th.get("residual") is not None else "")
    return th["branch_reached"]


def mixed_table_lines(summary: dict[str, Any], key: str = "mixed", name: str = "mixed") -> list[str]:
    """One row per (rank-r case, alpha, start): GD's |theta|, |m|, eps_g against the rank-r mixed fixed point
    ``row[key]`` (``"mixed"``: the global-prox one; ``"aligned_mixed"``: the aligned-prox one), the rule's verdict
    ``row[key + "_agrees"]``."""
    lines = [f"| case | alpha | start | GD abs(theta) | GD abs(m) | GD eps_g | {name} abs(theta) | {name} abs(m) | "
             f"{name} eps_g | {name} solve reached | GD vs {name} |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for case in summary["cases"]:
        for r in sorted(case["rows"], key=lambda r: (r["alpha"], r["init"])):
            if key not in r:
                continue
            mx = r[key] or {}
            vals = mx if mx.get("converged") else {}
            reached = _reached(mx) + (f" (on {mx['quadrature']}; {'; '.join(mx['tries'])})" if mx.get("tries") else "")
            lines.append(f"| ({case['key']}) | {r['alpha']} | {r['init']} | {_pm(r, 'abs_theta')} | "
                         f"{_pm(r, 'm_norm')} | {_pm(r, 'eps_g')} | {_f(vals.get('abs_theta'))} | "
                         f"{_f(vals.get('m_norm'))} | {_f(vals.get('eps_g'))} | {reached} | "
                         f"{rule_verdict(r.get(key + '_agrees'), f'no {name} point')} |")
    return lines


def aligned_table_lines(summary: dict[str, Any]) -> list[str]:
    """One row per (case, alpha, start): GD against the aligned-prox fixed point on the start's branch."""
    lines = ["| case | alpha | start | GD overlap | aligned-prox SE | GD eps_g | aligned-prox eps_g | reached | "
             "global-prox verdict | aligned-prox verdict |", "|---|---|---|---|---|---|---|---|---|---|"]
    for case in summary["cases"]:
        for r in sorted(case["rows"], key=lambda r: (r["alpha"], r["init"])):
            if "aligned" not in r:
                continue
            obs = COMPARED[r["init"]][0]
            pt = r["aligned"]
            vals = pt if pt["converged"] else {}
            reached = (_reached(pt) + ("" if pt["exists"] or not pt["converged"] else f" (not {r['init']})")
                       + (f" (on {pt['quadrature']}; {'; '.join(pt['tries'])})" if pt.get("tries") else ""))
            lines.append(f"| ({case['key']}) | {r['alpha']} | {r['init']} | "
                         f"{'abs(theta)' if obs == 'abs_theta' else 'abs(m)'} {_pm(r, obs)} | {_f(vals.get(obs))} | "
                         f"{_pm(r, 'eps_g')} | {_f(vals.get('eps_g'))} | {reached} | {r['status']} | "
                         f"{rule_verdict(r.get('aligned_agrees'))} |")
    return lines


def _default_command(plan: dict[str, Any]) -> str:
    """The command of a summary that does not record its own (one written before it did)."""
    return "attnphase validate --suite general" + (" --quick" if plan["quick"] else "")


def render_general_markdown(summary: dict[str, Any]) -> str:
    """The text of ``report.md`` of the general suite."""
    plan = summary["plan"]
    lines = [
        "# The general model: gradient descent against the theory", "",
        f"Generated by `{summary.get('command') or _default_command(plan)}`. d = {plan['d']}, "
        f"{len(plan['seeds'])} seeds per point, {plan['n_test']} fresh test samples per run, dtype {plan['dtype']}. "
        f"{summary['n_simulations']} simulations ({summary['simulation_seconds']:.0f} s), theory "
        f"{summary['theory_seconds']:.0f} s, both on {summary.get('workers', 1)} worker process(es) "
        f"({summary['theory_jobs_cached']} job(s) from the cache); wall time {summary['wall_seconds']:.0f} s. "
        f"All runs converged: {summary['all_converged']}.", "",
        f"Each case is run from the semantic and the positional start at a grid alpha at or below "
        f"0.85 alpha_c and one at or above 1.2 alpha_c (alpha_c from the state evolution, global proximal map; "
        f"the rank-r cases at their own alphas, see below). "
        f"Agreement rule: |mean - theory| <= 2 std/sqrt(n_runs) + {REL_TOL:.0%} |theory|, for the start's overlap "
        f"(semantic: abs(theta) = |Q^T Q*|_F/d; positional: abs(m) = (sum_l |m_l|^2)^(1/2)) and eps_g, against the "
        f"fixed point the state evolution reaches from the same start (its label in 'theory reached'; rank-r "
        f"cases: the rank-r solve on the start's branch, its invariants). A solve that did not converge is no "
        f"theory point: 'not converged' with its residual where known, no number. A row with a gradient-descent "
        f"run that did not reach the gradient tolerance is never counted as agreement ('GD not converged').",
        *_convergence_lines(summary)[1:],
        "", "## Cases", "",
    ]
    for case in summary["cases"]:
        p = case["params"]
        lines.append(f"* ({case['key']}) {case['title']}: L = {p['L']}, sigma = {p['sigma']}, A = {p['A']}, "
                     f"P = {p['P']}, omega = {p['omega']}, r = {p['r']}, r* = {p['r_star']}.")
        th = case["theory"]
        if _is_rank(th):
            lines.append(f"  Theory: the rank-r state evolution (`solve --rank {p['r']} --teacher-rank {p['r_star']}`, "
                         f"global prox, {th['quadrature']}), at each alpha the semantic, positional and mixed fixed "
                         f"points; eps_lin = {_f(th['eps_lin'], '.5g')}. GD at alpha = "
                         f"{', '.join(str(a) for a in case['alphas'])}: {case.get('alphas_note') or 'its own'}.")
            continue
        if th is None:
            lines.append(f"  No theory; GD at alpha = {', '.join(str(a) for a in case['alphas'])}.")
            continue
        sem_end = th["curves"].get("semantic/global", {}).get("end")
        pos_end = th["curves"].get("positional/global", {}).get("end")
        lines.append(f"  Theory: alpha_c = {_f(th['alpha_c'].get('global'), '.4f')}, alpha_l = "
                     f"{_f(th['alpha_l'].get('global'), '.4f')}, semantic branch ends at {_f(sem_end, '.3f')}, "
                     f"positional at {_f(pos_end, '.3f')}, eps_lin = {_f(th['eps_lin'], '.5g')}; runs straddle the "
                     f"{case['landmark_kind']} = {_f(_nan(case['landmark']), '.4f')}"
                     + (f". Notes: {'; '.join(th['notes'].get('global', ()))}" if th["notes"].get("global") else "")
                     + ".")
    lines += ["", "## Gradient descent against the theory", ""] + table_lines(summary)
    mixed = mixed_table_lines(summary)
    if len(mixed) > 2:
        lines += ["", "## Rank r >= 2: gradient descent against the mixed fixed point", "",
                  "A rank-2 student can hold a positional and a semantic direction at once. Beside the fixed point of "
                  "the start's branch (table above), each rank-r row is compared, by the same rule, on abs(theta), "
                  "abs(m) and eps_g with the rank-r state evolution's mixed fixed point at its alpha ('no mixed "
                  "point': that solve did not converge onto a mixed point). A rank-r row that agrees with none of "
                  "its points is said, in the first table, to be nearest the one it agrees with in all of abs(theta), "
                  "abs(m), eps_g but one (its start's branch, the other start's or the mixed point, where each "
                  "exists), and what lies apart.", ""] + mixed
    basin = aligned_table_lines(summary)
    if len(basin) > 2:
        lines += ["", "## Gradient descent against the aligned-prox state evolution (the basin of its start)", "",
                  "The global-prox state evolution describes the global minimiser of the risk. Gradient descent can "
                  "stay in the basin its start set: the aligned proximal map (`solve --prox aligned`) takes, per "
                  "sample, the lowest local minimiser h of the proximal problem on the side of the student's mean "
                  "field r = E[w | h*] = m + th0 h*/rho0 (sum_l h_l . r_l > 0: the teacher's mirror image from the "
                  "semantic start, the positional one from the positional start). Same rule, same observables; "
                  "'reached' is the aligned solve's label; a rank-r case's rows compare with the aligned-prox rank-r "
                  "point on the start's branch here and with its aligned-prox mixed point in the second table"
                  + (f"; cases with L > {plan['aligned_max_L']} have no aligned-prox points in this plan (each takes "
                     "minutes; the full suite has them)" if plan.get("aligned_max_L", 99) < 3 else "") + ".",
                  ""] + basin
    aligned_mixed = mixed_table_lines(summary, "aligned_mixed", "aligned mixed")
    if len(aligned_mixed) > 2:
        lines += [""] + aligned_mixed
    trends = [(case, r) for case in summary["cases"] for r in case["rows"] if r.get("trend")]
    if trends:
        lines += ["", "## Finite-size trend where GD and the theory disagree", "",
                  "The same alpha and start at smaller d (same seeds): the gap to the theory at each d, and the "
                  "d -> inf value a +- its standard error of the weighted fit a + b/d^p (the form with the smaller "
                  f"chi^2, over the dimensions whose every run converged, at least {MIN_FIT_DS}), 'agrees' where "
                  f"|a - theory| <= {EXTRAPOLATED_SE:g} hypot(a_se, err_theory), err_theory the theory's standard "
                  "error over its rule's scrambling blocks.", "",
                  "| case | alpha | start | observable | theory ± err_theory | " + " | ".join(
                      f"d = {p['d']}" for p in trends[0][1]["trend"]) + " | d -> inf | at d -> inf |",
                  "|---|---|---|---|---|" + "---|" * (len(trends[0][1]["trend"]) + 2)]
        for case, r in trends:
            for e in r["extrapolations"]:
                fit = (f"{_pmv(e['a'], e['a_se'])} ({e['form']})" if "a" in e else "--")
                said = {True: "agrees", False: "disagrees", None: "--"}[e["agrees"]]
                lines += [f"| ({case['key']}) | {r['alpha']} | {r['init']} | {e['observable']}"
                          f"{' (mixed point)' if e['against'] == 'mixed point' else ''} | "
                          f"{_pmv(e['theory'], e.get('theory_se'))} | "
                          + " | ".join(_pm(p, e["observable"]) for p in r["trend"]) + f" | {fit} | {said} |"]
    lines += ["", "## Figure", "",
              "* `general_suite.png`: per case, theory branches (only where they exist; a tick up from the x axis where one ends) and GD "
              "means ± std; dotted: the alpha the runs straddle. Rank-r cases: the rank-r fixed points as stars (semantic "
              "|theta|, positional |m|) and crosses (mixed: |theta| and |m|), 'nc' where a solve did not converge, GD's "
              "|theta| (circles) and |m| (squares) from each start. Rank-1 cases: the aligned-prox fixed points "
              "as open diamonds.", ""]
    return "\n".join(lines)


def write_general_report(summary: dict[str, Any], out_dir: str | Path) -> None:
    """Write ``general_suite.png``, ``summary.json`` and ``report.md`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plot_general(summary, out / "general_suite.png")
    (out / "summary.json").write_text(json.dumps(json_value(summary_for_output(summary)), indent=1))
    (out / "report.md").write_text(render_general_markdown(summary))
