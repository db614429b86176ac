"""Record tests/golden/phase_diagram_omega0.csv: the omega = 0 row of the phase diagram (issue 17).

    python benchmarks/record_omega0_golden.py            # writes the file (about a minute)

Default model, solver and alpha grid (0.1:3:12); the columns of :meth:`Boundaries.row`.  Rerun only
for a deliberate change of numerics, with a note of the change in docs/numerics.md.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from attnphase.numerics import SolverConfig, phase_boundaries
from attnphase.numerics.boundaries import BOUNDARY_COLUMNS
from attnphase.theory.params import ModelParams

OUT = Path(__file__).resolve().parents[1] / "tests" / "golden" / "phase_diagram_omega0.csv"


def main() -> None:
    row = phase_boundaries(ModelParams(omega=0.0), np.linspace(0.1, 3.0, 12), config=SolverConfig()).row()
    with open(OUT, "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=BOUNDARY_COLUMNS + ("notes",))
        wr.writeheader()
        wr.writerow(row)
    print(row)


if __name__ == "__main__":
    main()
