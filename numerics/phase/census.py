"""Every fixed point at one (alpha, omega): searched, deduplicated, labelled, tested, ranked by e_t.

The phase diagram compares two fixed points, the semantic and the positional one; whether the
global minimum of the training objective e_t is among them is this module's question.  At one
(params, alpha), with the rules of ``config``:

1. **search** -- :func:`~attnphase.numerics.se.state_evolution.solve` from every start of
   :func:`census_starts` (the three branches' own starts, the positional one by continuation from
   alpha = 0.3, and a spread of overlaps with every combination of m != 0 and th0 != 0, i.e. mixed
   states), each with at most :data:`SEARCH_MAX_ITER` SE evaluations, on :func:`search_rule` (a
   quarter of the solve rule's points); a start that does not converge is dropped and counted.  Each
   distinct point found is solved again on the solve rule, warm-started from it (one that does not
   converge there is dropped and counted);
2. **dedupe** -- two converged points are one fixed point when their canonical forms (the image
   under the model's symmetry group with the largest (th0, m): theta -> -theta and the mirror images
   are the same fixed point) agree to :data:`SAME_POINT_RTOL` (after the search and again after the
   second solve);
3. **error bars** -- each distinct point gets its error bar as a solve does
   (:func:`~attnphase.numerics.errors.quadrature_error.fixed_point_error`): the standard error from the solve
   rule's scrambling blocks (each re-solved warm), or, for a rule of one block, the spread over K
   independent rules.  Points whose q, V, |m| and |theta| agree within
   :data:`SAME_WITHIN_ERRORS` combined error bars are then one fixed point (the one more starts
   reached is kept): one rule's map jumps, so a rule can have several fixed points a few error bars
   apart where the true map has one -- measured at omega = 0.3, alpha = 1.25 on sobol12: two
   positional points with m = 0.25325 and 0.25309 (+- 8e-5, 3e-5), and a "positional" point with
   m = 0.0021 +- 0.0019 next to the agnostic one (m = 0), with the same e_t to 8e-9;
4. **stability** -- :func:`~attnphase.numerics.phase.stability.stability_eigenvalue`: the leading eigenvalue
   max Re(lambda) of the SE map's Jacobian in every direction (symmetry-breaking ones included), with
   the likelihood-ratio eigenvalues at an agnostic state; stable when < 1;
5. **rank** -- by e_t, lowest first.

The census is rank r = r* = 1 (the state evolution of :mod:`attnphase.numerics.se.state_evolution`; rank r:
:mod:`attnphase.numerics.phase.rank_census`). For
tokens correlated across positions it searches, tests and ranks the fixed points of the whitened model
(docs/model.md section 7; :func:`~attnphase.theory.whitening.se_params`): the starts' m lie along the first
column of its Ptilde, and the symmetry group is the whitened model's (the same as the original's).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.parallel import map_in_order, without_memory
from attnphase.numerics.quadrature.rules import parse_rule_spec
from attnphase.numerics.errors.quadrature_error import fixed_point_error
from attnphase.numerics.errors.replicates import ERROR_KEYS, QuadratureError
from attnphase.numerics.phase.stability import stability_eigenvalue
from attnphase.numerics.se.starts import positional_direction
from attnphase.numerics.se.state_evolution import FixedPoint, solve
from attnphase.numerics.quadrature.symmetry import model_symmetry_group
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params

#: Two canonical forms closer than this (max |difference| / max(1, |value|)) are one fixed point.
SAME_POINT_RTOL = 1e-3

#: Points closer than this many combined error bars (in q, V, |m|, |theta|) are one fixed point.
SAME_WITHIN_ERRORS = 4.0

#: SE evaluations a search solve may spend (a start that needs more is dropped, and counted).
SEARCH_MAX_ITER = 100

#: The search's Sobol rules have at least 2^SEARCH_MIN_LOG2 points (:func:`search_rule`).
SEARCH_MIN_LOG2 = 10

#: Independent rules of the census's error bars unless told otherwise (``--error-estimate K``).
CENSUS_RULES = 4


@dataclass(frozen=True, eq=False)
class CensusEntry:
    """One distinct fixed point: its solve, its error bars (None without), its leading eigenvalue and
    how many starts reached it."""

    point: FixedPoint
    error: QuadratureError | None
    leading_eigenvalue: float
    starts: int

    @property
    def stable(self) -> bool:
        """max Re(lambda) < 1 (the module doc, step 4)."""
        return bool(self.leading_eigenvalue < 1.0)

    def err(self, key: str) -> float:
        """The error bar of ``key`` (NaN without error bars)."""
        return self.error.std[key] if self.error is not None else math.nan

    @property
    def e_t(self) -> float:
        """The point's e_t (inf where it is not finite: ranked last)."""
        e = self.point.observables.e_t
        return e if math.isfinite(e) else math.inf


@dataclass(frozen=True, eq=False)
class Census:
    """The fixed points at (params, alpha), lowest e_t first, the search that found them and the number
    of rules of the error bars (0: none)."""

    params: ModelParams
    alpha: float
    entries: tuple[CensusEntry, ...]
    search: "SearchResult"
    n_rules: int

    def separation(self) -> float:
        """(e_t of the second - e_t of the first) / combined error bar: how many error bars separate the
        global minimum from the next fixed point (inf with one point; NaN without error bars)."""
        if len(self.entries) < 2:
            return math.inf
        a, b = self.entries[:2]
        bar = math.hypot(a.err("e_t"), b.err("e_t"))
        return (b.e_t - a.e_t) / bar if bar > 0 else math.nan


def census_starts(params: ModelParams) -> list[tuple[str, Overlaps | None]]:
    """(branch, start) pairs: each branch's own start (None: :func:`solve`'s cold start; no positional one
    where P = 0), then the grid q0 = 0.3, V0 in (1, 50), |m| in (0, 0.2, 0.5) along P's first non-zero
    column (scaled to max 1, :func:`positional_direction`), th0 in (0, 0.3, 0.8) sqrt(q0 rho0) -- mixed states included (21
    starts).  ``branch`` is the label of the start.  Overlaps of the state evolution's model (the whitened
    one for correlated tokens, its P the Ptilde)."""
    params = se_params(params)
    direction = positional_direction(params)
    own = ("semantic", "positional", "agnostic") if direction is not None else ("semantic", "agnostic")
    starts: list[tuple[str, Overlaps | None]] = [(b, None) for b in own]
    direction = direction if direction is not None else np.zeros(params.L)
    for q0, V0, m, th in itertools.product((0.3,), (1.0, 50.0), (0.0, 0.2, 0.5), (0.0, 0.3, 0.8)):
        ov = Overlaps(q0=q0, V0=V0, m=m * direction, th0=th * math.sqrt(q0 * params.rho0))
        label = "semantic" if m == 0 and th > 0 else "positional" if th == 0 and m > 0 else "agnostic"
        starts.append((label, ov))
    return starts


def canonical(params: ModelParams, ov: Overlaps) -> np.ndarray:
    """The image of ``ov`` under the model's symmetry group with the lexicographically largest
    (th0, m_1, .., m_L) (element (pi, s, t): m -> s m[pi], th0 -> s t th0), as (q0, V0, m, th0)."""
    best: tuple[tuple, np.ndarray] | None = None
    for e in model_symmetry_group(params):
        m = e.s * ov.m[list(e.perm)]
        th = e.s * e.t * ov.th0
        key = (round(th, 9), *np.round(m, 9))
        if best is None or key > best[0]:
            best = (key, np.concatenate([[ov.q0, ov.V0], m, [th]]))
    return best[1] if best is not None else ov.to_vector()


def same_point(a: np.ndarray, b: np.ndarray, rtol: float = SAME_POINT_RTOL) -> bool:
    """max_i |a_i - b_i| / max(1, |a_i|) <= rtol."""
    return bool(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(a))) <= rtol)


def within_errors(a: CensusEntry, b: CensusEntry, k: float = SAME_WITHIN_ERRORS) -> bool:
    """q, V, |m| and |theta| of the two points within ``k`` combined error bars (False without error
    bars).  The labels may differ: a point whose m (or theta) is within the bars of 0 is one the rules
    cannot tell from the point with m = 0 (theta = 0) there."""
    ra, rb = a.point.record, b.point.record
    for key in ("q", "V", "m", "theta"):
        diff = abs(abs(ra[key]) - abs(rb[key]))
        if diff > 0 and not diff <= k * math.hypot(a.err(key), b.err(key)):
            return False
    return True


def search_rule(spec: str) -> str:
    """The rule of the search: a scrambled Sobol rule of 2^K points, K > :data:`SEARCH_MIN_LOG2`, with a
    quarter of its points (2^max(K - 2, SEARCH_MIN_LOG2), the same scramblings and seed); any other
    rule as it is."""
    kind, args = parse_rule_spec(spec)
    if kind != "sobol" or args[0] <= SEARCH_MIN_LOG2:
        return spec
    return f"sobol{max(args[0] - 2, SEARCH_MIN_LOG2)}:{args[1]}:{args[2]}"


def _search_job(job: tuple) -> FixedPoint:
    params, alpha, branch, start, cfg = job
    return without_memory(solve(params, alpha, branch, init=start, config=cfg))


def _distinct(params: ModelParams, points: list[tuple[FixedPoint, int]]) -> list[tuple[FixedPoint, int]]:
    """The points with distinct canonical forms (:func:`same_point`), in the order first met, each with
    the sum of the counts of the points merged into it."""
    found: list[tuple[np.ndarray, FixedPoint, int]] = []
    for fp, n in points:
        key = canonical(params, fp.overlaps)
        same = next((i for i, (k, _, _) in enumerate(found) if same_point(k, key)), None)
        if same is None:
            found.append((key, fp, n))
        else:
            k, first, m = found[same]
            found[same] = (k, first, m + n)
    return [(fp, n) for _, fp, n in found]


@dataclass(frozen=True, eq=False)
class SearchResult:
    """Steps 1-2: the distinct fixed points on the solve rule, each with how many starts reached it;
    the starts, those that did not converge on the search rule, and the points found there that did
    not converge on the solve rule (dropped, counted)."""

    points: tuple[tuple[FixedPoint, int], ...]
    starts: int
    not_converged: int
    polish_failures: int
    rule: str


def search(params: ModelParams, alpha: float, config: SolverConfig, workers: int = 1) -> SearchResult:
    """Steps 1-2 of the module doc.  The starts are solved on :func:`search_rule` (a quarter of the solve
    rule's points: the mixed starts break every symmetry, so their SE steps see the whole rule, and
    most of the search's time is theirs), each distinct point found there is solved again on
    ``config``'s rules, warm-started from it, and the results are deduplicated again."""
    params = se_params(params)  # correlated tokens: their whitened form (docs/model.md section 7)
    rule = search_rule(config.quadrature)
    cfg = config.replace(quadrature=rule, max_iter=min(config.max_iter, SEARCH_MAX_ITER), e_t_quadrature=None)
    starts = census_starts(params)
    solved = map_in_order(_search_job, [(params, alpha, b, s, cfg) for b, s in starts], workers)
    coarse = _distinct(params, [(fp, 1) for fp in solved if fp.status.converged])
    polished, lost = [], 0
    for fp, n in coarse:
        fine = solve(params, alpha, fp.requested, init=fp.overlaps, config=config)
        if fine.status.converged:
            polished.append((fine, n))
        else:
            lost += 1
    return SearchResult(tuple(_distinct(params, polished)), len(starts), len(solved) - sum(n for _, n in coarse),
                        lost, rule)


def census(params: ModelParams, alpha: float, *, config: SolverConfig | None = None, n_rules: int = CENSUS_RULES,
           workers: int = 1) -> Census:
    """Every fixed point found from :func:`census_starts` at (params, alpha), lowest e_t first (the
    module doc's five steps): the search's solves on ``workers`` processes, error bars from the rule's blocks
    (a rule of one block: from ``n_rules`` rules, CENSUS_RULES when 0; none with ``config.error_bars`` off),
    stability on ``config``'s solve rule."""
    cfg = config or SolverConfig()
    found = search(params, alpha, cfg, workers)
    entries: list[CensusEntry] = []
    for fp, n in found.points:
        error = fixed_point_error(fp, cfg, n_rules or CENSUS_RULES)
        entry = CensusEntry(fp, error, math.nan, n)
        same = next((i for i, other in enumerate(entries) if within_errors(entry, other)), None)
        if same is None:
            entries.append(entry)
        else:  # one fixed point: keep the one more starts reached
            other = entries[same]
            keep = other if other.starts >= n else entry
            entries[same] = CensusEntry(keep.point, keep.error, math.nan, other.starts + n)
    model = se_params(params)
    entries = [CensusEntry(e.point, e.error, stability_eigenvalue(model, alpha, e.point.overlaps, cfg), e.starts)
               for e in entries]
    entries.sort(key=lambda e: e.e_t)
    return Census(params, float(alpha), tuple(entries), found, n_rules)


def entry_errors(entry: CensusEntry) -> dict[str, float]:
    """``err_<key>`` for every key of the error estimate (NaN without error bars)."""
    return {f"err_{k}": entry.err(k) for k in ERROR_KEYS}


#: The columns of :func:`census_check` (``phase-diagram --census``: census.csv, one row per omega).
CENSUS_COLUMNS = ("omega", "census_alpha", "census_global_min", "census_fixed_points", "census_separation",
                  "census_beaten_by")

#: Another fixed point beats the pair compared when its e_t lies this many combined error bars below the better one.
BEATEN_BY_ERRORS = 2.0


def census_check(params: ModelParams, alpha: float, *, config: SolverConfig | None = None,
                 n_rules: int = CENSUS_RULES) -> dict[str, Any]:
    """The census at (params, alpha) -- ``phase-diagram --census`` calls it at alpha_c, where the semantic
    and positional fixed points tie -- as one row: the label of the lowest-e_t point, how many distinct
    fixed points there are, the separation of the first two (:meth:`Census.separation`), and every fixed
    point other than those two whose e_t lies more than :data:`BEATEN_BY_ERRORS` combined error bars below
    the better of them (empty: no other fixed point beats the pair compared).  NaN alpha: an empty row."""
    row: dict[str, Any] = {"omega": params.omega, "census_alpha": alpha, "census_global_min": "",
                           "census_fixed_points": 0, "census_separation": math.nan, "census_beaten_by": ""}
    if not math.isfinite(alpha):
        return row
    res = census(params, alpha, config=config, n_rules=n_rules)
    pair = [e for e in res.entries if e.point.branch in ("semantic", "positional")]
    best = min(pair, key=lambda e: e.e_t, default=None)
    beaten = []
    for e in res.entries:
        if e.point.branch in ("semantic", "positional"):
            continue
        bar = math.hypot(e.err("e_t"), best.err("e_t")) if best is not None else 0.0
        if best is None or e.e_t < best.e_t - BEATEN_BY_ERRORS * (bar if math.isfinite(bar) else 0.0):
            beaten.append(f"{e.point.branch} (e_t {e.e_t:.7g})")
    return row | {"census_global_min": res.entries[0].point.branch if res.entries else "",
                  "census_fixed_points": len(res.entries), "census_separation": res.separation(),
                  "census_beaten_by": "; ".join(beaten)}
