"""Coverage of the default error bars: how often a careful reference lies within 2 bars.

    python benchmarks/error_bar_coverage.py                          # 20 seeds per fixed point, 10 boundary rows
    python benchmarks/error_bar_coverage.py --seeds 4 --boundary-seeds 0   # a quick look
    python benchmarks/error_bar_coverage.py --blocks 4,8 --csv FILE  # 4 against 8 blocks of the same nodes
    python benchmarks/error_bar_coverage.py --from-csv FILE          # the tables of a run, again

At omega = 0.3 (the paper's model), the default `solve` at alpha = 2 on the positional and the semantic
branch (rule `sobol10:4`, bars from its 4 blocks, docs/method.md section 7) and the default phase-diagram row
(alpha_c from the Newton correction on `sobol16:4`, alpha_l, the semantic end; bars from their rules' blocks)
are computed on independent scramblings: seed k is ``SolverConfig().variant(k)``, every quadrature role's seeds
moved by k (k = 0 is the default itself).  ``--blocks 4,8`` runs every seed twice, in turn: on the default rules
and on the same total nodes split into 8 blocks in every role (``sobol9:8`` for ``sobol10:4``, ``sobol15:8`` for
``sobol16:4``, ...: :func:`with_blocks`), so that a bar has 7 degrees of freedom instead of 3.

For each number, z = (value - reference) / bar; a bar covers when |z| <= 2 (a normal error's 95.4 %).  Also
printed per number: the mean of z (a bias of the rule that the blocks' spread does not see shows as a mean away
from 0), the root mean square of z (1 for honest bars), the factor the bars would need for 90 % of the seeds within
2 bars, the root-mean-square error against the reference (the accuracy of the pooled rule) and the seeds' own
spread against the mean bar (the bar's calibration without the reference); the coverage the same bars would have
as Student-t intervals of 68.3 % for the blocks' degrees of freedom (each bar x :func:`t_factor`: 1.197 for 4
blocks, 1.077 for 8); and the CPU seconds of a solve and of its error bar.

The references are the careful values already measured (not recomputed here):

* positional, alpha = 2: sobol18, 3 scramblings of 2^18 points (the careful reference measured once):
  q 0.2042669, m 0.2582371, V 45.4736;
* semantic, alpha = 2: the precise tier (`attnphase solve --alpha 2 --omega 0.3 --branch semantic
  --precision precise`, docs/method.md section 8): q 0.45927 +- 3.8e-5, V 50.681 +- 0.011,
  theta 0.63262 +- 4.4e-5 (bars about a tenth of the default's);
* alpha_c, alpha_l, the semantic end: the precise tier's row, 1.25150 +- 5.9e-5, 1.49230 +- 7.0e-5,
  0.7185 +- 5.6e-4 (docs/method.md section 8; the end's bar is a third of the default's).

The reference's own bar, where known, is added in quadrature to the default's (``--with-reference-error``
off by default).  Output: markdown tables on stdout, one row per seed in ``--csv`` when given.  Cost: ~4 CPU s
per positional and ~1 per semantic fixed point and seed, ~25 CPU s per boundary row and seed (each twice with
``--blocks 4,8``).
"""

from __future__ import annotations

import argparse
import csv
import math
import time

import numpy as np

from attnphase.numerics.config import QUADRATURE_ROLES, SolverConfig
from attnphase.numerics.errors.quadrature_error import fixed_point_error
from attnphase.numerics.phase.boundaries import phase_boundaries
from attnphase.numerics.quadrature.rules import parse_rule_spec
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
    of a known spread do (1.197 for 4 blocks: 2 such bars cover 90.4 % of t_3, 2 plain ones 86.1 %; 1.077 for 8
    blocks: 2 plain bars cover 91.4 % of t_7)."""
    from scipy import stats

    return float(stats.t.ppf(stats.norm.cdf(1.0), blocks - 1))


#: The blocks of the default rules' bars (``sobol10:4``, ``sobol16:4``).
BLOCKS = 4


def with_blocks(spec: str, blocks: int) -> str:
    """The Sobol rule ``spec`` (``sobolK:R:seed``) as ``blocks`` scramblings of the same total node count:
    ``sobol(K - log2(blocks / R)):blocks:seed`` (``sobol10:4`` -> ``sobol9:8``); other rules unchanged.
    ValueError when blocks / R is not a power of 2."""
    kind, (log2_n, reps, seed) = parse_rule_spec(spec) if spec.startswith("sobol") else ("", (0, 0, 0))
    if kind != "sobol" or reps < 2 or blocks == reps:
        return spec
    shift = math.log2(blocks / reps)
    if shift != int(shift) or log2_n - int(shift) < 1:
        raise ValueError(f"{spec}: {blocks} blocks of the same node count need blocks / {reps} a power of 2")
    return f"sobol{log2_n - int(shift)}:{blocks}:{seed}"


def blocks_config(blocks: int, k: int) -> SolverConfig:
    """Seed k of the default configuration (``SolverConfig().variant(k)``) with every Sobol role as ``blocks``
    scramblings of the same node count (:func:`with_blocks`)."""
    cfg = SolverConfig().variant(k)
    return cfg.replace(**{role: with_blocks(getattr(cfg, role), blocks) for role in QUADRATURE_ROLES
                          if getattr(cfg, role) is not None})


#: The share of seeds within 2 bars the coverage target asks for.
COVERAGE_TARGET = 0.9


def summary(name: str, values: list[float], bars: list[float], ref: tuple[float, float], with_ref: bool,
            blocks: int = BLOCKS) -> dict:
    """Coverage of ``values`` +- ``bars`` against ``ref``: counts within 1 and 2 bars, within 2 bars scaled by
    :func:`t_factor` (the bars as Student-t intervals of ``blocks`` - 1 degrees of freedom), mean and rms of z, the
    root-mean-square error against ``ref``, and ``factor_90``: the factor the bars would need for COVERAGE_TARGET of
    the seeds to lie within 2 bars (the ceil(0.9 n)-th smallest |z|, over 2; below 1: covered already)."""
    v, b = np.asarray(values, dtype=float), np.asarray(bars, dtype=float)
    ok = np.isfinite(v) & np.isfinite(b) & (b > 0)
    v, b = v[ok], b[ok]
    total = np.hypot(b, ref[1]) if with_ref and math.isfinite(ref[1]) else b
    z = (v - ref[0]) / total
    need = math.ceil(COVERAGE_TARGET * z.size)
    return {
        "name": name, "blocks": blocks, "n": int(v.size), "within1": int((np.abs(z) <= 1).sum()),
        "within2": int((np.abs(z) <= 2).sum()), "within2_t": int((np.abs(z) <= 2 * t_factor(blocks)).sum()),
        "factor_90": float(np.sort(np.abs(z))[need - 1] / 2) if z.size else math.nan,
        "mean_z": float(z.mean()) if z.size else math.nan,
        "rms_z": float(np.sqrt((z ** 2).mean())) if z.size else math.nan,
        "spread": float(v.std(ddof=1)) if v.size > 1 else math.nan, "mean_bar": float(b.mean()) if b.size else math.nan,
        "bias": float(v.mean() - ref[0]) if v.size else math.nan,
        "rms_error": float(np.sqrt(((v - ref[0]) ** 2).mean())) if v.size else math.nan,
    }


def fixed_point_run(branch: str, blocks: int, k: int, rows: list[dict]) -> None:
    """Seed k of the default solve on ``branch`` with ``blocks`` blocks: a row of its values and bars (and the
    solve's and the error bar's CPU seconds) appended to ``rows``."""
    cfg = blocks_config(blocks, k)
    t0 = time.process_time()
    fp = solve(ModelParams(omega=OMEGA), ALPHA, branch, config=cfg)
    t1 = time.process_time()
    err = fixed_point_error(fp, cfg) if fp.status.converged and fp.branch == branch else None
    t2 = time.process_time()
    row = {"what": f"{branch} alpha={ALPHA:g}", "blocks": blocks, "rule": cfg.quadrature, "seed": k,
           "converged": fp.status.converged, "branch": fp.branch, "cpu_s": round(t2 - t0, 2),
           "cpu_solve_s": round(t1 - t0, 2), "cpu_bar_s": round(t2 - t1, 2),
           "blocks_converged": err.converged if err is not None else 0}
    for key in REFERENCES[branch]:
        row[key] = float(fp.record[key]) if err is not None else math.nan
        row[f"err_{key}"] = float(err.std[key]) if err is not None else math.nan
    rows.append(row)
    print(f"  {branch} {cfg.quadrature} seed {k}: " + ", ".join(f"{key} {row[key]:.6g} +- {row['err_' + key]:.2g}"
                                                               for key in REFERENCES[branch])
          + f" ({row['cpu_solve_s']} + {row['cpu_bar_s']} CPU s, {row['blocks_converged']} blocks)", flush=True)


#: The boundaries of the alpha_c runs and their references (value, its own standard error): the precise tier's row
#: at omega = 0.3 (docs/method.md section 8).
BOUNDARY_REFERENCES = {"alpha_c": ALPHA_C_REFERENCE, "alpha_l": (1.49230, 7.0e-5), "semantic_end": (0.7185, 5.6e-4)}


def boundary_run(blocks: int, k: int, rows: list[dict]) -> None:
    """Seed k of the default phase-diagram row at omega = 0.3 with ``blocks`` blocks: a row of alpha_c, alpha_l and
    the semantic end with their bars appended to ``rows``."""
    cfg = blocks_config(blocks, k)
    t0 = time.process_time()
    b = phase_boundaries(ModelParams(omega=OMEGA), None, config=cfg)
    row = {"what": f"boundaries omega={OMEGA:g}", "blocks": blocks, "rule": cfg.alpha_c_quadrature, "seed": k,
           "cpu_s": round(time.process_time() - t0, 2)}
    for key in BOUNDARY_REFERENCES:
        row[key], row[f"err_{key}"] = float(getattr(b, key)), float(getattr(b, f"{key}_err"))
    rows.append(row)
    print(f"  boundaries {cfg.alpha_c_quadrature} seed {k}: "
          + ", ".join(f"{key} {row[key]:.6f} +- {row['err_' + key]:.2g}" for key in BOUNDARY_REFERENCES)
          + f" ({row['cpu_s']} CPU s)", flush=True)


def what_references(what: str) -> dict[str, tuple[float, float]]:
    """The references of a row kind (``"positional alpha=2"``, ``"boundaries omega=0.3"``)."""
    return BOUNDARY_REFERENCES if what.startswith("boundaries") else REFERENCES[what.split()[0]]


def print_tables(rows: list[dict], with_ref: bool) -> None:
    """The coverage table of ``rows`` (one per number and block count) and the CPU seconds per run."""
    table = []
    kinds = dict.fromkeys((r["what"], int(r["blocks"])) for r in rows)
    for what, B in kinds:
        mine = [r for r in rows if r["what"] == what and int(r["blocks"]) == B]
        for key, ref in what_references(what).items():
            table.append(summary(f"{what}: {key}", [float(r[key]) for r in mine], [float(r[f"err_{key}"]) for r in mine],
                                 ref, with_ref, B))
    print("\n| number | blocks | seeds | within 1 bar | within 2 bars | within 2 t-bars | x for 90 % | mean z | rms z "
          "| bias (mean - ref) | rms error | seeds' spread | mean bar |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in table:
        print(f"| {s['name']} | {s['blocks']} | {s['n']} | {s['within1']} | {s['within2']} "
              f"({s['within2'] / max(s['n'], 1):.0%}) | {s['within2_t']} ({s['within2_t'] / max(s['n'], 1):.0%}, "
              f"x {t_factor(s['blocks']):.3f}) | {s['factor_90']:.2f} | {s['mean_z']:+.2f} | {s['rms_z']:.2f} | "
              f"{s['bias']:+.2e} | {s['rms_error']:.2e} | {s['spread']:.2e} | {s['mean_bar']:.2e} |")
    print("\nCPU seconds per run, mean over seeds (solve + error bar where split):")
    for what, B in kinds:
        mine = [r for r in rows if r["what"] == what and int(r["blocks"]) == B]
        parts = [c for c in ("cpu_s", "cpu_solve_s", "cpu_bar_s") if c in mine[0] and mine[0][c] != ""]
        print(f"  {what}, {B} blocks: " + ", ".join(f"{c} {np.mean([float(r[c]) for r in mine]):.2f}" for c in parts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20, help="independent scramblings per fixed point (default 20)")
    ap.add_argument("--boundary-seeds", type=int, default=10, help="independent scramblings for alpha_c (default 10)")
    ap.add_argument("--branches", nargs="+", default=["positional", "semantic"], choices=sorted(REFERENCES))
    ap.add_argument("--blocks", default=str(BLOCKS),
                    help="comma-separated block counts of the same total nodes per rule, run seed by seed interleaved "
                         "(default 4, the default rules; 4,8 compares sobol10:4 with sobol9:8, sobol16:4 with "
                         "sobol15:8, ...)")
    ap.add_argument("--with-reference-error", action="store_true", help="add the reference's own bar in quadrature")
    ap.add_argument("--csv", default=None, help="write one row per seed here")
    ap.add_argument("--from-csv", default=None, help="print the tables of a run's --csv file (no computation)")
    args = ap.parse_args()
    block_counts = [int(b) for b in args.blocks.split(",")]
    if args.from_csv:
        with open(args.from_csv, newline="") as fh:
            rows = [{k: (v if k in ("what", "rule", "branch") else float(v) if v not in ("", "True", "False") else v)
                     for k, v in r.items()} for r in csv.DictReader(fh)]
        print_tables(rows, args.with_reference_error)
        return
    rows: list[dict] = []
    for branch in args.branches:
        for k in range(args.seeds):
            for B in block_counts:
                fixed_point_run(branch, B, k, rows)
    for k in range(args.boundary_seeds):
        for B in block_counts:
            boundary_run(B, k, rows)
    if args.csv:
        keys = sorted({k for r in rows for k in r}, key=lambda k: (k not in ("what", "blocks", "seed"), k))
        with open(args.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
    print_tables(rows, args.with_reference_error)


if __name__ == "__main__":
    main()
