"""Coverage of the default error bars: how often a careful reference lies within 2 bars.

    python benchmarks/error_bar_coverage.py                          # 20 seeds per fixed point, 10 for alpha_c
    python benchmarks/error_bar_coverage.py --seeds 4 --boundary-seeds 0   # a quick look

At omega = 0.3 (the paper's model), the default `solve` at alpha = 2 on the positional and the semantic
branch (rule `sobol10:4`, bars from its 4 blocks, docs/method.md section 7) and alpha_c of the default
phase-diagram row (Newton correction on `sobol16:4`, bar from its blocks) are computed on independent
scramblings: seed k is ``SolverConfig().variant(k)``, every quadrature role's seeds moved by k (k = 0 is the
default itself).  For each number, z = (value - reference) / bar; a bar covers when |z| <= 2 (a normal
error's 95.4 %).  Also printed per number: the mean of z (a bias of the rule that the blocks' spread does
not see shows as a mean away from 0), the root mean square of z (1 for honest bars) and the seeds' own
spread against the mean bar (the bar's calibration without the reference); and the coverage the same bars would
have as Student-t intervals of 68.3 % for the 4 blocks' 3 degrees of freedom (each bar x 1.197, :func:`t_factor`).

The references are the careful values already measured (not recomputed here):

* positional, alpha = 2: sobol18, 3 scramblings of 2^18 points (the careful reference measured once):
  q 0.2042669, m 0.2582371, V 45.4736;
* semantic, alpha = 2: the precise tier (`attnphase solve --alpha 2 --omega 0.3 --branch semantic
  --precision precise`, docs/method.md section 8): q 0.45927 +- 3.8e-5, V 50.681 +- 0.011,
  theta 0.63262 +- 4.4e-5 (bars about a tenth of the default's);
* alpha_c: the precise tier's row, 1.25150 +- 5.9e-5 (docs/method.md section 8).

The reference's own bar, where known, is added in quadrature to the default's (``--with-reference-error``
off by default: it changes the counts by at most one here).  Output: markdown tables on stdout, one row
per seed in ``--csv`` when given.  Cost: ~3 CPU s per fixed point and seed, ~15 CPU s per alpha_c seed.
"""

from __future__ import annotations

import argparse
import csv
import math
import time

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.errors.quadrature_error import fixed_point_error
from attnphase.numerics.phase.boundaries import phase_boundaries
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams

OMEGA = 0.3
ALPHA = 2.0
#: (value, its own standard error or NaN) per branch and overlap.
REFERENCES = {
    "positional": {"q": (0.2042669, math.nan), "m": (0.2582371, math.nan), "V": (45.4736, math.nan)},
    "semantic": {"q": (0.45927, 3.8e-5), "V": (50.681, 0.011), "theta": (0.63262, 4.4e-5)},
}
ALPHA_C_REFERENCE = (1.25150, 5.9e-5)


def t_factor(blocks: int) -> float:
    """The half-width of Student's t interval of 68.3 % (a normal error's 1 sigma) with ``blocks`` - 1 degrees of
    freedom, in standard errors: the factor a bar from ``blocks`` blocks would need for 2 bars to cover as 2 sigma
    of a known spread do (1.197 for 4 blocks: 2 such bars cover 90.4 % of t_3, 2 plain ones 86.1 %)."""
    from scipy import stats

    return float(stats.t.ppf(stats.norm.cdf(1.0), blocks - 1))


#: The blocks of the default rules' bars (``sobol10:4``, ``sobol16:4``).
BLOCKS = 4


def summary(name: str, values: list[float], bars: list[float], ref: tuple[float, float], with_ref: bool) -> dict:
    """Coverage of ``values`` +- ``bars`` against ``ref``: counts within 1 and 2 bars, within 2 bars scaled by
    :func:`t_factor` (the bars as Student-t intervals), mean and rms of z."""
    v, b = np.asarray(values), np.asarray(bars)
    ok = np.isfinite(v) & np.isfinite(b) & (b > 0)
    v, b = v[ok], b[ok]
    total = np.hypot(b, ref[1]) if with_ref and math.isfinite(ref[1]) else b
    z = (v - ref[0]) / total
    return {
        "name": name, "n": int(v.size), "within1": int((np.abs(z) <= 1).sum()), "within2": int((np.abs(z) <= 2).sum()),
        "within2_t": int((np.abs(z) <= 2 * t_factor(BLOCKS)).sum()),
        "mean_z": float(z.mean()) if z.size else math.nan,
        "rms_z": float(np.sqrt((z ** 2).mean())) if z.size else math.nan,
        "spread": float(v.std(ddof=1)) if v.size > 1 else math.nan, "mean_bar": float(b.mean()) if b.size else math.nan,
        "bias": float(v.mean() - ref[0]) if v.size else math.nan,
    }


def fixed_point_runs(branch: str, seeds: int, rows: list[dict]) -> dict[str, tuple[list[float], list[float]]]:
    params = ModelParams(omega=OMEGA)
    out: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in REFERENCES[branch]}
    for k in range(seeds):
        cfg = SolverConfig().variant(k)
        t0 = time.process_time()
        fp = solve(params, ALPHA, branch, config=cfg)
        err = fixed_point_error(fp, cfg) if fp.status.converged and fp.branch == branch else None
        row = {"what": f"{branch} alpha={ALPHA:g}", "seed": k, "converged": fp.status.converged, "branch": fp.branch,
               "cpu_s": round(time.process_time() - t0, 2)}
        for key in out:
            value = float(fp.record[key]) if err is not None else math.nan
            bar = float(err.std[key]) if err is not None else math.nan
            out[key][0].append(value)
            out[key][1].append(bar)
            row[key], row[f"err_{key}"] = value, bar
        rows.append(row)
        print(f"  {branch} seed {k}: " + ", ".join(f"{key} {row[key]:.6g} +- {row['err_' + key]:.2g}" for key in out)
              + f" ({row['cpu_s']} CPU s)", flush=True)
    return out


def alpha_c_runs(seeds: int, rows: list[dict]) -> tuple[list[float], list[float]]:
    values, bars = [], []
    for k in range(seeds):
        t0 = time.process_time()
        b = phase_boundaries(ModelParams(omega=OMEGA), None, config=SolverConfig().variant(k))
        values.append(b.alpha_c)
        bars.append(b.alpha_c_err)
        rows.append({"what": f"alpha_c omega={OMEGA:g}", "seed": k, "alpha_c": b.alpha_c, "err_alpha_c": b.alpha_c_err,
                     "cpu_s": round(time.process_time() - t0, 2)})
        print(f"  alpha_c seed {k}: {b.alpha_c:.6f} +- {b.alpha_c_err:.2g} ({rows[-1]['cpu_s']} CPU s)", flush=True)
    return values, bars


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20, help="independent scramblings per fixed point (default 20)")
    ap.add_argument("--boundary-seeds", type=int, default=10, help="independent scramblings for alpha_c (default 10)")
    ap.add_argument("--branches", nargs="+", default=["positional", "semantic"], choices=sorted(REFERENCES))
    ap.add_argument("--with-reference-error", action="store_true", help="add the reference's own bar in quadrature")
    ap.add_argument("--csv", default=None, help="write one row per seed here")
    args = ap.parse_args()
    rows: list[dict] = []
    table = []
    for branch in args.branches:
        for key, (values, bars) in fixed_point_runs(branch, args.seeds, rows).items():
            table.append(summary(f"{branch}, alpha = {ALPHA:g}: {key}", values, bars, REFERENCES[branch][key],
                                 args.with_reference_error))
    if args.boundary_seeds:
        values, bars = alpha_c_runs(args.boundary_seeds, rows)
        table.append(summary(f"alpha_c, omega = {OMEGA:g}", values, bars, ALPHA_C_REFERENCE,
                             args.with_reference_error))
    print(f"\n| number | seeds | within 1 bar | within 2 bars | within 2 t-bars (x {t_factor(BLOCKS):.3f}) | mean z | rms z "
          "| bias (mean - ref) | seeds' spread | mean bar |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in table:
        print(f"| {s['name']} | {s['n']} | {s['within1']} | {s['within2']} ({s['within2'] / max(s['n'], 1):.0%}) | "
              f"{s['within2_t']} ({s['within2_t'] / max(s['n'], 1):.0%}) | "
              f"{s['mean_z']:+.2f} | {s['rms_z']:.2f} | {s['bias']:+.2e} | {s['spread']:.2e} | {s['mean_bar']:.2e} |")
    if args.csv:
        keys = sorted({k for r in rows for k in r}, key=lambda k: (k not in ("what", "seed"), k))
        with open(args.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
