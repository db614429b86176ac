"""Gradient descent of a recorded general-suite run against the aligned-prox state evolution.

Reads a ``validate --suite general`` summary (default: the d = 1000 run in docs/data/general_suite_full/),
solves the state evolution with ``--prox aligned`` (docs/model.md section 3: per sample the lowest minimiser
on the side of the student's mean field m + (th0/rho0) h*) at every (case, alpha, start) of its rank-1 cases,
with error bars from the rule's scramblings, and writes the comparison (the suite's agreement rule) as
``aligned_vs_gd.md`` and ``aligned_vs_gd.json`` into ``--out``.

    python studies/aligned_vs_gd.py --out docs/data/aligned_vs_gd [--cases a,c]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from attnphase.theory.params import ModelParams
from attnphase.validation.agreement import within_rule
from attnphase.validation.basin_theory import aligned_config, aligned_job
from attnphase.validation.rule_retry import SolveJob

OBS = {"semantic": "abs_theta", "positional": "m_norm"}


def aligned_point(params: ModelParams, alpha: float, start: str) -> dict:
    """The suite's aligned-prox point (:func:`attnphase.validation.basin_theory.aligned_job`) with error bars."""
    pt = aligned_job(SolveJob(params, alpha, start, aligned_config()), errors=True)
    pt["branch"] = pt["branch_reached"]
    return pt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", default="docs/data/general_suite_full/summary.json")
    ap.add_argument("--cases", default=None, help="comma-separated case keys (default: every rank-1 case)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    summary = json.loads(Path(args.summary).read_text())
    keys = None if args.cases is None else set(args.cases.split(","))
    rows = []
    for case in summary["cases"]:
        if case["theory_kind"] != "rank-1" or (keys is not None and case["key"] not in keys):
            continue
        params = ModelParams(**{k: (tuple(map(tuple, v)) if k in ("A", "P") else tuple(v) if k == "sigma" else v)
                                for k, v in case["params"].items()})
        for r in sorted(case["rows"], key=lambda r: (r["alpha"], r["init"])):
            pt = aligned_point(params, r["alpha"], r["init"])
            row = {"case": case["key"], "alpha": r["alpha"], "start": r["init"], "n_runs": r["n_runs"],
                   "global_status": r["status"], "aligned": pt}
            for obs in (OBS[r["init"]], "eps_g"):
                row[f"gd_{obs}"] = (r[f"{obs}_mean"], r[f"{obs}_std"])
                ok = pt["converged"] and pt["branch"] == r["init"]
                row[f"agrees_{obs}"] = within_rule(r[f"{obs}_mean"], r[f"{obs}_std"], r["n_runs"], pt[obs]) if ok else None
            rows.append(row)
            print(f"({case['key']}) alpha={r['alpha']} {r['init']}: aligned {pt['branch']} conv={pt['converged']} "
                  f"{OBS[r['init']]}={pt.get(OBS[r['init']])} eps_g={pt.get('eps_g')} ({pt['seconds']:.0f} s)", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "aligned_vs_gd.json").write_text(json.dumps({"summary": args.summary, "d": summary["plan"]["d"],
                                                        "rows": rows}, indent=1))
    lines = [f"GD: `{args.summary}` (d = {summary['plan']['d']}, {len(summary['plan']['seeds'])} seeds; mean +- std). "
             "Theory: `solve --prox aligned --branch START` (default rule; +- its scramblings' standard error). "
             "Rule: 2 standard errors + 10 %.", "",
             "| case | alpha | start | GD overlap | aligned SE overlap | GD eps_g | aligned SE eps_g | aligned reached | "
             "global-prox verdict | aligned verdict |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        obs, pt = OBS[row["start"]], row["aligned"]
        flags = [row[f"agrees_{obs}"], row["agrees_eps_g"]]
        verdict = ("no aligned point" if None in flags else "agrees" if all(flags) else
                   "disagrees (" + ", ".join(o for o, f in zip((obs, "eps_g"), flags) if not f) + ")")

        def pm(v, e):
            return "--" if v is None else f"{v:.4g}" + ("" if e is None or not math.isfinite(e) else f" ± {e:.2g}")

        reached = (pt["branch"] if pt["converged"] else f"not converged ({pt['residual']:.1e})") + (
            f" (on {pt['quadrature']}; {'; '.join(pt['tries'])})" if pt["tries"] else "")
        lines.append(f"| ({row['case']}) | {row['alpha']} | {row['start']} | {obs} {pm(*row[f'gd_{obs}'])} | "
                     f"{pm(pt.get(obs), pt.get(f'err_{obs}'))} | {pm(*row['gd_eps_g'])} | "
                     f"{pm(pt.get('eps_g'), pt.get('err_eps_g'))} | {reached} | {row['global_status']} | {verdict} |")
    (out / "aligned_vs_gd.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
