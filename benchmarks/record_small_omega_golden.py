"""Record tests/golden/phase_diagram_omega<w>.csv: small-omega rows of the phase diagram (issue 17).

    python benchmarks/record_small_omega_golden.py              # omega = 0 and 0.05 (about a minute each)
    python benchmarks/record_small_omega_golden.py --omega 0.05

Default model, solver and alpha grid (0.1:3:12); the columns of :meth:`Boundaries.row`.  Rerun only
for a deliberate change of numerics, with a note of the change in docs/numerics.md.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from attnphase.numerics import SolverConfig, phase_boundaries
from attnphase.numerics.boundaries import BOUNDARY_COLUMNS
from attnphase.theory.params import ModelParams

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden"


def golden_path(omega: float) -> Path:
    """tests/golden/phase_diagram_omega<omega>.csv (omega written as 0, 0.05, ...)."""
    return GOLDEN / f"phase_diagram_omega{omega:g}.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--omega", type=float, nargs="*", default=[0.0, 0.05])
    for w in ap.parse_args().omega:
        row = phase_boundaries(ModelParams(omega=w), np.linspace(0.1, 3.0, 12), config=SolverConfig()).row()
        with open(golden_path(w), "w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=BOUNDARY_COLUMNS + ("notes",))
            wr.writeheader()
            wr.writerow(row)
        print(row)


if __name__ == "__main__":
    main()
