"""``--continuation`` of ``attnphase phase-diagram``: which omegas are continued in omega, in how many chains
(docs/method.md section 13).  Standard library only, like :mod:`attnphase.options`.
"""

from __future__ import annotations

import argparse
import math

#: ``--continuation auto`` continues in omega where consecutive omegas lie at most this far apart ...
DENSE_OMEGA_STEP = 0.02
#: ... and every chain gets at least this many omegas.
MIN_CHAIN = 3
#: The most omegas of one chain (one task: a stopped job recomputes the chains it had not finished).
CHAIN_LENGTH = 8


def add_continuation_option(p: argparse.ArgumentParser) -> None:
    """``--continuation {auto,on,off}`` of ``phase-diagram`` (docs/method.md section 13, continuation in omega)."""
    p.add_argument("--continuation", default="auto", choices=("auto", "on", "off"),
                   help="continue the boundaries in omega: each omega's computed near its neighbour's (warm starts, "
                   "predicted boundaries; an omega where that fails is computed independently), along chains of "
                   "contiguous omegas, one task each, split by the omegas alone (the same numbers on any --workers); "
                   f"'auto' (default): on where {MIN_CHAIN} or more consecutive omegas are at most "
                   f"{DENSE_OMEGA_STEP:g} apart")


def chains_from_args(args: argparse.Namespace, omegas: list[float]) -> int:
    """How many chains ``--continuation`` splits the omegas into (0: every omega independently): at most
    CHAIN_LENGTH omegas each, two at least from 2 MIN_CHAIN omegas on (two cores' work), at most one per two omegas.
    The split depends on the omegas alone, not on the worker count: a chain's numbers depend on where it starts, so a
    run on another number of workers gives the same numbers and reads back the same stored tasks."""
    mode = getattr(args, "continuation", "off")
    w = sorted(set(omegas))
    dense = len(w) >= MIN_CHAIN and max(b - a for a, b in zip(w, w[1:])) <= DENSE_OMEGA_STEP + 1e-12
    if len(w) < 2 or mode == "off" or (mode == "auto" and not dense):
        return 0
    least = 2 if len(w) >= 2 * MIN_CHAIN else 1
    return max(1, min(max(least, math.ceil(len(w) / CHAIN_LENGTH)), len(w) // 2))
