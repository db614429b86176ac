"""The phase diagram's profile per omega, this checkout against another commit, interleaved.

    python benchmarks/profile_vs_commit.py main --omega 0.1,0.3

For each omega, ``benchmarks/profile_phase_diagram.py --omega W`` (this checkout's script) runs once with REF's
sources and once with this working tree's (laid out as importable packages as in ``speed_vs_commit.py``), one after
the other, so that both see the same load.  Printed per omega and side: the CPU seconds of the boundary search, its
SE evaluations and proximal nodes searched / polished (load-independent), and the boundaries; then the ratios
this / REF over the omegas.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed_vs_commit import ROOT, export_commit, package_tree  # noqa: E402

PROFILE = str(ROOT / "benchmarks" / "profile_phase_diagram.py")
#: Runs the profile with the first ``PYTHONPATH`` entry's ``attnphase`` (not an editable install's).
BOOT = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
        "sys.argv = [{script!r}, '--omega', {w!r}]; import runpy; runpy.run_path({script!r}, run_name='__main__')")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ref", help="the git revision to compare with")
    ap.add_argument("--omega", default="0.1,0.3", help="comma-separated omegas (default 0.1,0.3)")
    args = ap.parse_args()
    omegas = args.omega.split(",")
    with tempfile.TemporaryDirectory(prefix="attnphase-profile-") as tmp:
        tmp = Path(tmp)
        trees = {"ref": package_tree(export_commit(args.ref, tmp / "ref-src"), tmp / "ref"),
                 "this": package_tree(ROOT, tmp / "this")}
        total = {side: [0.0, 0, 0.0, 0.0] for side in trees}
        for w in omegas:
            for side in ("ref", "this"):
                env = dict(os.environ, PYTHONPATH=str(trees[side]))
                out = subprocess.run([sys.executable, "-c", BOOT.format(script=PROFILE, w=w)], env=env, cwd=tmp,
                                     capture_output=True, text=True).stdout
                cpu = float(re.search(r"^\s+all\s+([\d.]+)", out, re.M).group(1))
                m = re.search(r"SE evaluations (\d+).*searched (\d+)k, polished (\d+)k", out)
                counts = (cpu, int(m.group(1)), float(m.group(2)), float(m.group(3)))
                row = next(line for line in out.splitlines() if re.match(r"^\s*\d\.\d{3}\s", line))
                print(f"omega {w} {side:4s}: CPU {cpu:6.1f} s, SE evaluations {counts[1]}, nodes searched "
                      f"{counts[2]:.0f}k polished {counts[3]:.0f}k | boundaries " + " ".join(row.split()[-4:]), flush=True)
                total[side] = [a + b for a, b in zip(total[side], counts)]
        r, t = total["ref"], total["this"]
        print(f"this / {args.ref} over omegas {args.omega}: CPU {t[0] / r[0]:.3f} ({t[0]:.1f} / {r[0]:.1f} s), "
              f"SE evaluations {t[1] / r[1]:.3f} ({t[1]} / {r[1]}), nodes searched {t[2] / r[2]:.3f}, "
              f"polished {t[3] / r[3]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
