"""Side-by-side wall and CPU times of this checkout against another commit, on the same machine.

    python benchmarks/speed_vs_commit.py REF [--runs 3] [--only solve,rank2] [--out FILE.json]

REF is any git revision (a commit before a refactor, a tag).  The script lays REF's sources out as an
importable ``attnphase`` package in a temporary folder (``git archive``; nothing is installed), does
the same for this working tree, and runs each command with both, alternating (A B A B ...) so that a
drift of the machine's speed hits both alike.  Each version gets its own kernel cache
(``ATTNPHASE_CACHE_DIR``), warmed by one uncounted run.  Printed per command: the median wall and
CPU seconds of each version and the median of the pairwise ratios this/REF (a ratio below 1.1 means
"no slower than 1.1x").

The commands (``--only`` picks some by name):

* ``solve``: ``solve --alpha 2 --omega 0.3 --branch positional --json`` (rank 1, default rules);
* ``solve-semantic``: the same on the semantic branch;
* ``phase-diagram``: ``phase-diagram --omega 0.1:0.4:7 --workers 1 --fresh`` (rank 1, slow: ~1-2 min);
* ``rank2``: ``solve --alpha 2 --rank 2 --branch mixed --json`` (rank-2 student, rank-1 teacher);
* ``sweep``: ``sweep --alpha 0.5:2.5:9 --omega 0.3 --fresh`` (rank 1, default rules, one task in the process);
* ``simulate``: ``simulate --d 2000 --alpha 2 --rank 2 --init positional --threads 1`` (gradient descent to its
  gradient tolerance, 272 steps, on one torch thread; no numerics).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: package name -> folder of the checkout (pyproject.toml's package-dir)
LAYERS = {"execution": "execution", "theory": "theory", "numerics": "numerics", "validation": "validation"}

COMMANDS = {
    "solve": ["solve", "--alpha", "2", "--omega", "0.3", "--branch", "positional", "--json"],
    "solve-semantic": ["solve", "--alpha", "2", "--omega", "0.3", "--branch", "semantic", "--json"],
    "phase-diagram": ["phase-diagram", "--omega", "0.1:0.4:7", "--workers", "1", "--fresh", "--quiet", "--out", "{tmp}"],
    "rank2": ["solve", "--alpha", "2", "--rank", "2", "--branch", "mixed", "--json"],
    "sweep": ["sweep", "--alpha", "0.5:2.5:9", "--omega", "0.3", "--fresh", "--quiet", "--out", "{tmp}"],
    "simulate": ["simulate", "--d", "2000", "--alpha", "2", "--rank", "2", "--init", "positional", "--threads", "1",
                 "--json"],
}


#: Runs ``attnphase`` from the first ``PYTHONPATH`` entry even where an editable install of the
#: project is on the path (its import finder would otherwise answer first).
BOOT = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
        "sys.argv[0] = 'attnphase'; from attnphase.cli import main; sys.exit(main())")


def package_tree(source: Path, dest: Path) -> Path:
    """``dest/attnphase`` importable from ``source`` laid out as in pyproject.toml (copies of the folders)."""
    pkg = dest / "attnphase"
    shutil.copytree(source / "attnphase", pkg)
    for name, folder in LAYERS.items():
        if (source / folder).is_dir():
            shutil.copytree(source / folder, pkg / name)
    return dest


def export_commit(ref: str, dest: Path) -> Path:
    """The tree of ``ref`` extracted into ``dest`` (``git archive``)."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child, exit code) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 3):
        print(f"  exit {proc.returncode}: {' '.join(cmd)}\n{proc.stderr[-2000:]}", file=sys.stderr)
    return wall, cpu, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ref", help="the git revision to compare with")
    ap.add_argument("--runs", type=int, default=3, help="counted runs of each command and version")
    ap.add_argument("--only", default=",".join(COMMANDS), help="comma-separated command names")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - set(COMMANDS)
    if unknown:
        ap.error(f"--only: unknown {sorted(unknown)}; choose from {sorted(COMMANDS)}")
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="attnphase-speed-") as tmp:
        tmp = Path(tmp)
        trees = {"this": package_tree(ROOT, tmp / "this"),
                 "ref": package_tree(export_commit(args.ref, tmp / "ref-src"), tmp / "ref")}
        envs = {}
        for version, tree in trees.items():
            env = dict(os.environ, PYTHONPATH=str(tree), ATTNPHASE_CACHE_DIR=str(tmp / f"cache-{version}"))
            envs[version] = env
        for name in names:
            rows: dict[str, list[tuple[float, float]]] = {"this": [], "ref": []}
            for i in range(args.runs + 1):  # the first pair warms the caches and is not counted
                for version in ("ref", "this"):
                    out_dir = tmp / f"out-{version}-{name}"
                    cmd = [sys.executable, "-c", BOOT] + [c.replace("{tmp}", str(out_dir)) for c in COMMANDS[name]]
                    wall, cpu, _ = timed(cmd, envs[version], tmp)
                    if i:
                        rows[version].append((wall, cpu))
            ratios = [t[0] / r[0] for t, r in zip(rows["this"], rows["ref"])]
            cpu_ratios = [t[1] / r[1] for t, r in zip(rows["this"], rows["ref"])]
            results[name] = {
                "command": " ".join(COMMANDS[name]),
                "ref_wall_s": statistics.median(w for w, _ in rows["ref"]),
                "this_wall_s": statistics.median(w for w, _ in rows["this"]),
                "ref_cpu_s": statistics.median(c for _, c in rows["ref"]),
                "this_cpu_s": statistics.median(c for _, c in rows["this"]),
                "wall_ratio_median": statistics.median(ratios),
                "cpu_ratio_median": statistics.median(cpu_ratios),
                "runs": args.runs,
            }
            r = results[name]
            print(f"{name:15s} ref {r['ref_wall_s']:7.2f} s wall {r['ref_cpu_s']:7.2f} s CPU | "
                  f"this {r['this_wall_s']:7.2f} s wall {r['this_cpu_s']:7.2f} s CPU | "
                  f"ratio this/ref wall {r['wall_ratio_median']:.3f} CPU {r['cpu_ratio_median']:.3f}", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"ref": args.ref, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
