"""How far apart two branches' e_t lie at the rule, and the rule's error of the alpha where they cross
(docs/method.md section 11, "error bars of the decision").

Delta = e_t(B) - e_t(A) with its paired error err(Delta) = std_j(e_t(B)_j - e_t(A)_j) / sqrt(R) over the rule's R
blocks (:func:`~attnphase.numerics.phase.gauge_orbits.paired_difference`); the two are *distinguishable* at the rule
where |Delta| >= :data:`DISTINGUISHABLE` err(Delta) (:func:`separation`).  A root x of Delta e_t has the rule's
standard error linearised at the root, x_j = a - Delta_j(a) / (d Delta / d alpha), err(x) = std_j(x_j) / sqrt(R)
(:func:`~attnphase.numerics.phase.global_minimum_changes.branch_root`).  Where Delta e_t *hugs 0* (:func:`hugs_zero`)
alpha_c is the interval where its sign is not established (:class:`SignSample`, :func:`unsettled_interval`,
:func:`settle_interval`), centre +- half-width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.errors.replicates import replicate_count, replicate_errors, replicate_points
from attnphase.numerics.phase.gauge_orbits import Replicas, paired_difference
from attnphase.numerics.se.results import FixedPoint

#: Two branches are told apart at the rule where |Delta e_t| is at least this many paired errors.
DISTINGUISHABLE = 2.0


def replicas(fp: FixedPoint, cfg: SolverConfig) -> Replicas:
    """``fp`` re-solved warm on each block of ``cfg``'s solve rule (none where the rule has one block), with its error
    bars from them (:func:`~attnphase.numerics.errors.replicates.replicate_errors`)."""
    reps, blocks = replicate_points(fp, cfg, 0) if replicate_count(cfg) else ([], True)
    errors = replicate_errors(fp, reps, blocks) if reps else {}
    return Replicas(fp, tuple(reps), blocks, errors)


@dataclass(frozen=True)
class Separation:
    """Delta e_t = e_t(upper) - e_t(lower) at ``alpha``, its paired error over ``pairs`` blocks (NaN below two)."""

    alpha: float
    lower: str
    upper: str
    delta: float
    err: float
    pairs: int

    @property
    def ratio(self) -> float:
        """|Delta| / err(Delta) (NaN without an error)."""
        if self.err == 0 and self.delta != 0:  # every block gives the same difference
            return math.inf
        return abs(self.delta) / self.err if self.err > 0 else math.nan

    @property
    def distinguishable(self) -> bool | None:
        """|Delta| >= DISTINGUISHABLE err(Delta); None where the error is not known."""
        return None if not math.isfinite(self.ratio) else bool(self.ratio >= DISTINGUISHABLE)

    def describe(self) -> str:
        """``at alpha = 0.627: mixed#1 below positional by 2.1e-05 +- 8.4e-06 (2.5 paired errors)``, with ``not
        distinguishable at the rule`` where it is not."""
        text = f"at alpha = {self.alpha:.4g}: {self.lower} below {self.upper} by {self.delta:.2g}"
        if not math.isfinite(self.err):
            return text + f" (no paired error: {self.pairs} block pairs converged)"
        text += f" +- {self.err:.2g} ({self.ratio:.1f} paired errors)"
        return text + ("" if self.distinguishable else ": not distinguishable at the rule")


def separation(lower: Replicas, upper: Replicas, names: tuple[str, str]) -> Separation:
    """The paired difference of the module doc between two points at one alpha (``names``: lower's, upper's)."""
    delta, err, n = paired_difference(lower, upper)
    return Separation(float(lower.point.alpha), names[0], names[1], delta, err, n)


# -- where the sign of Delta e_t is established ---------------------------------------------------------------------
#: A root search's evaluation farther than this many of the root's error bars from the root whose |Delta e_t| stays
#: below DISTINGUISHABLE paired errors (the flanks') is a sign that Delta e_t hugs 0 there (:func:`hugs_zero`): a clean
#: crossing, Delta ~ slope (alpha - x), is told apart from 0 at 2 paired errors within ~2 root errors of x.
HUG_BARS = 4.0
#: The sides of a sample (:attr:`SignSample.side`): A lowest (or A and B one point at the rule, or B absent), B lowest
#: (or A absent), not settled.
A_SIDE, B_SIDE, UNSETTLED = "A", "B", "?"


@dataclass(frozen=True)
class SignSample:
    """Delta e_t = e_t(A) - e_t(B) at ``alpha`` (< 0 where A lies lower) with its paired error over the rule's blocks
    (NaN: not known); ``same`` where A's and B's points are one fixed point at the rule
    (:func:`~attnphase.numerics.phase.gauge_orbits.within_errors`), ``absent`` the branch not on there ("A" or "B")."""

    alpha: float
    delta: float
    err: float
    same: bool = False
    absent: str = ""

    @property
    def side(self) -> str:
        """A_SIDE where A is established lowest -- Delta <= -DISTINGUISHABLE err(Delta) --, where A and B are one point
        at the rule (the lowest point does not change between them) or B is absent; B_SIDE where B is established
        lowest or A is absent; UNSETTLED otherwise (the sign of Delta e_t not established at the rule)."""
        if self.absent:
            return B_SIDE if self.absent == "A" else A_SIDE
        if self.same:
            return A_SIDE
        if not math.isfinite(self.err) or not math.isfinite(self.delta):
            return UNSETTLED
        if abs(self.delta) >= DISTINGUISHABLE * self.err and self.delta != 0:
            return A_SIDE if self.delta < 0 else B_SIDE
        return UNSETTLED

    def describe(self) -> str:
        """``0.3636: Delta -3e-07 +- 3.6e-07 (?)``; ``Delta 3.5e-06, no paired error`` where the bar is not known (fewer
        than two block pairs converged), ``Delta not known`` where Delta e_t itself is not."""
        if self.absent:
            what = f"{self.absent} absent"
        elif not math.isfinite(self.delta):
            what = "Delta not known"
        elif not math.isfinite(self.err):
            what = f"Delta {self.delta:.2g}, no paired error"
        else:
            what = f"Delta {self.delta:.2g} +- {self.err:.2g}"
        what += ", one point at the rule" if self.same and not self.absent else ""
        return f"{self.alpha:.4g}: {what} ({self.side})"


@dataclass(frozen=True)
class SignInterval:
    """[lo, hi]: the interval where the sign of Delta e_t = e_t(A) - e_t(B) is not established at the rule, from the
    last sample on A's side below the first that is not (``lo``) to the first on B's side above the last that is not
    (``hi``); ``open_below`` / ``open_above`` where no sample on that side was found (the interval runs at least to
    the samples' end); the samples it rests on."""

    lo: float
    hi: float
    samples: tuple[SignSample, ...]
    open_below: bool = False
    open_above: bool = False

    @property
    def centre(self) -> float:
        return 0.5 * (self.lo + self.hi)

    @property
    def half_width(self) -> float:
        return 0.5 * (self.hi - self.lo)

    def describe(self) -> str:
        """The method column's text: the interval, its evidence."""
        ends = ("" if not (self.open_below or self.open_above) else
                "; not settled " + " and ".join(w for w, o in (("at its lower end", self.open_below),
                                                               ("at its upper end", self.open_above)) if o))
        return (f"interval where Delta e_t is indistinguishable from 0 at the rule (|Delta| < {DISTINGUISHABLE:g} "
                f"paired errors, the sign not established): [{self.lo:.4g}, {self.hi:.4g}]{ends}; alpha_c its centre "
                f"+- its half-width; samples " + ", ".join(s.describe() for s in self.samples))


def unsettled_interval(samples: list[SignSample]) -> SignInterval | None:
    """The :class:`SignInterval` the samples show, None where every sample is on A's or B's side (a clean crossing:
    the root of Delta e_t and its error stand).  ``lo`` is the last A-side sample below the first sample not on A's
    side, ``hi`` the first B-side sample above the last one not on B's side (a non-monotone order is covered whole)."""
    s = sorted(samples, key=lambda t: t.alpha)
    if not any(t.side == UNSETTLED for t in s):
        return None
    first_not_a = min(t.alpha for t in s if t.side != A_SIDE)
    last_not_b = max(t.alpha for t in s if t.side != B_SIDE)
    below = [t.alpha for t in s if t.side == A_SIDE and t.alpha < first_not_a]
    above = [t.alpha for t in s if t.side == B_SIDE and t.alpha > last_not_b]
    return SignInterval(max(below) if below else s[0].alpha, min(above) if above else s[-1].alpha, tuple(s),
                        not below, not above)


def settle_interval(measure, samples: list[SignSample], tol: float) -> SignInterval | None:
    """:func:`unsettled_interval`, each of its edges bisected on the side of ``measure(alpha)``'s sample
    (:class:`SignSample`) until it is bracketed within ``tol`` (the gap between ``lo`` and the first sample not on A's
    side, and between the last not on B's side and ``hi``); the interval reported runs to the settled samples, so it
    covers every alpha where the sign was not established."""
    samples = list(samples)
    while True:
        iv = unsettled_interval(samples)
        if iv is None:
            return None
        first_not_a = min(t.alpha for t in samples if t.side != A_SIDE)
        last_not_b = max(t.alpha for t in samples if t.side != B_SIDE)
        if not iv.open_below and first_not_a - iv.lo > tol:
            samples.append(measure(0.5 * (iv.lo + first_not_a)))
        elif not iv.open_above and iv.hi - last_not_b > tol:
            samples.append(measure(0.5 * (last_not_b + iv.hi)))
        else:
            return iv


def hugs_zero(evaluations: list[tuple[float, float]], root: float, root_err: float, flank_err: float) -> list[float]:
    """The alphas of a root search's evaluations (alpha, Delta e_t on the pooled rule) farther than :data:`HUG_BARS`
    root errors from the root whose |Delta| is below DISTINGUISHABLE ``flank_err`` (the paired error beside the
    change): where a clean crossing would be told apart from 0 and this one may not be."""
    if not math.isfinite(flank_err):
        return []
    return [x for x, d in evaluations if abs(x - root) > HUG_BARS * root_err and abs(d) < DISTINGUISHABLE * flank_err]
