"""Every fixed point at one (alpha, omega), for every L, r, r*: searched, deduplicated, labelled, tested, ranked by e_t
(docs/method.md section 12).  At one (params, alpha), with the rules of ``config``:

1. **search** -- :func:`~attnphase.numerics.se.state_evolution.solve` from every start of
   :func:`~attnphase.numerics.phase.census_starts.census_starts` and then of
   :func:`~attnphase.numerics.phase.census_starts.perturbed_starts`, on the search's rule and budget
   (:func:`~attnphase.numerics.phase.census_starts.search_config`; a start that does not converge is listed, never a
   point; at r = r* = 1 each point found is solved again on the solve rule, from the first start's point that
   reached it, else from the others', dropped and counted where every one fails);
2. **dedupe** -- points on one orbit are one (:mod:`~attnphase.numerics.phase.gauge_orbits`);
3. **error bars** -- each point re-solved warm on each block of the solve rule or on ``n_rules`` independent rules
   (:func:`~attnphase.numerics.errors.replicates.replicate_solves`); points one within the error bars
   (:func:`~attnphase.numerics.phase.gauge_orbits.within_errors`) merged, the one of fewer broken symmetries kept
   (a mixed point within the error bars of the positional one is that point), of two alike the one more starts
   reached; a point the blocks do not reproduce, most of its re-solves landing on the one point of another label,
   merged into that one (:func:`displaced_from`); without error bars a point below its branch's floor merged into
   the point beside it (:func:`_below_floor_merged`);
4. **stability** -- :func:`~attnphase.numerics.se.stability.stability_eigenvalue` (max Re(lambda)); stable when < 1;
5. **rank** -- by e_t, lowest first, each point's height above the minimum, Delta = e_t(B) - e_t(A), with its paired
   error (:func:`~attnphase.numerics.phase.gauge_orbits.paired_difference`) and the combined bar hypot(err_A, err_B).

For tokens correlated across positions the census works on the whitened model
(:func:`~attnphase.theory.whitening.se_params`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np

from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.errors.replicates import error_keys, on_its_branch, replicate_errors, replicate_solves
from attnphase.numerics.parallel import map_in_order, without_memory
from attnphase.numerics.quadrature.rules import rule_blocks
from attnphase.numerics.phase.census_starts import (CensusStart, census_rank_one, census_starts, perturbed_starts,
                                                    search_config, solve_start)
from attnphase.numerics.phase.gauge_orbits import Replicas, orbit_key, paired_difference, same_point, within_errors
from attnphase.numerics.se.stability import stability_eigenvalue
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.state_evolution import check_alpha, solve
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params

#: Independent rules of the census's error bars unless told otherwise (``--error-estimate K``).
CENSUS_RULES = 4

#: Why a point was merged into another (step 3 of the module doc), as :class:`MergedPoint` says it.
WITHIN_ERRORS = "within the error bars, the one of fewer broken symmetries kept"
DISPLACED = "its blocks do not reproduce it and land on the point it was merged into"
BELOW_FLOOR = "no error bars, its order parameter below its branch's floor beside the point it was merged into"
FINER_RULE = ("the rule's jumps: the agnostic point is stable in its direction and a finer rule's solve from it "
              "reaches the agnostic point")


class MergedPoint(NamedTuple):
    """A point merged into a listed one: its label, e_t, the starts that reached it, and why (:data:`WITHIN_ERRORS`,
    :data:`DISPLACED` or :data:`BELOW_FLOOR`)."""

    branch: str
    e_t: float
    starts: tuple[str, ...]
    reason: str


@dataclass(frozen=True, eq=False)
class CensusEntry(Replicas):
    """One distinct fixed point with its replicates and error bars (empty without error bars), the starts that
    reached it, its leading eigenvalue, and the points merged into it (:class:`MergedPoint`: label, e_t, starts,
    why)."""

    starts: tuple[str, ...] = ()
    leading_eigenvalue: float = math.nan
    merged: tuple[MergedPoint, ...] = ()

    @property
    def stable(self) -> bool | None:
        """max Re(lambda) < 1 (the module doc, step 4); None where the eigenvalue is not known (NaN)."""
        return None if math.isnan(self.leading_eigenvalue) else bool(self.leading_eigenvalue < 1.0)

    @property
    def e_t(self) -> float:
        """The point's e_t (inf where it is not finite: ranked last)."""
        e = self.point.observables.e_t
        return e if math.isfinite(e) else math.inf


@dataclass(frozen=True, eq=False)
class SearchResult:
    """Steps 1-2: the distinct fixed points, each with the names of the starts that reached it; the starts; those
    that did not converge (start name, residual, solver message); the points found on the search rule that did
    not converge on the solve rule (dropped, counted; ``dropped``: the starts that had reached them, with why); the
    search's rule."""

    points: tuple[tuple[FixedPoint, tuple[str, ...]], ...]
    starts: tuple[CensusStart, ...]
    failures: tuple[tuple[str, float, str], ...]
    polish_failures: int
    rule: str
    dropped: tuple[tuple[str, str], ...] = ()

    @property
    def not_converged(self) -> int:
        """How many starts did not converge."""
        return len(self.failures)


@dataclass(frozen=True, eq=False)
class Census:
    """The fixed points at (params, alpha), lowest e_t first, the search that found them and the number of
    independent rules of the error bars (0: from the rule's blocks, or none)."""

    params: ModelParams
    alpha: float
    entries: tuple[CensusEntry, ...]
    search: SearchResult | None
    n_rules: int
    seconds: float = math.nan

    @property
    def starts(self) -> tuple[CensusStart, ...]:
        return self.search.starts if self.search is not None else ()

    @property
    def failures(self) -> tuple[tuple[str, float, str], ...]:
        return self.search.failures if self.search is not None else ()

    def above_minimum(self, entry: CensusEntry) -> dict[str, Any]:
        """``entry``'s height above the global minimum: Delta e_t, its paired error
        (:func:`~attnphase.numerics.phase.gauge_orbits.paired_difference`), Delta / err paired, and
        Delta / hypot(err_A, err_B) (the combined bar); the minimum's own separations are 0 (both, with bars)."""
        best = self.entries[0]
        delta, err, n = paired_difference(best, entry)
        comb = math.hypot(best.err("e_t"), entry.err("e_t"))
        own = entry is best and math.isfinite(err)
        return {"delta_e_t": delta, "err_delta_e_t": err, "delta_pairs": n,
                "separation_paired": 0.0 if own else delta / err if err > 0 else math.nan,
                "separation_combined": delta / comb if comb > 0 else math.nan}

    def separation(self) -> float:
        """(e_t of the second - e_t of the first) / combined error bar: how many error bars separate the global
        minimum from the next fixed point (inf with one point; NaN without error bars)."""
        return self.above_minimum(self.entries[1])["separation_combined"] if len(self.entries) >= 2 else math.inf

    def separation_paired(self) -> float:
        """The same over the paired error of the difference (inf with one point, NaN below two pairs)."""
        return self.above_minimum(self.entries[1])["separation_paired"] if len(self.entries) >= 2 else math.inf


def _search_job(job: tuple) -> tuple[str, FixedPoint]:
    params, alpha, start, cfg, keep_memory, rank_one = job
    fp = solve_start(params, alpha, start, cfg, rank_one)
    return start.name, fp if keep_memory else without_memory(fp)


def _add(found: list[list], key: np.ndarray, fp: FixedPoint, names: tuple[str, ...]) -> None:
    """``fp`` into ``found`` ([key, point, start names, the orbit's other points reached], in the order first met), or
    its start names and itself onto the entry of the same orbit
    (:func:`~attnphase.numerics.phase.gauge_orbits.same_point`)."""
    same = next((f for f in found if same_point(f[0], key)), None)
    if same is None:
        found.append([key, fp, names, []])
    else:
        same[2] = same[2] + names
        same[3].append(fp)


def search(params: ModelParams, alpha: float, config: SolverConfig, *, starts: list[CensusStart] | None = None,
           perturb: bool = True, workers: int = 1,
           progress: Callable[[CensusStart, FixedPoint], None] | None = None,
           rank_one: Mapping[str, Overlaps | None] | None = None) -> SearchResult:
    """Steps 1-2 of the module doc on the state evolution's model (the whitened one for correlated tokens), the
    starts' solves on ``workers`` processes; ``starts`` (default the model's
    :func:`~attnphase.numerics.phase.census_starts.census_starts`), then, with ``perturb``, the perturbed starts of
    the points they reach.  ``progress(start, point)`` is called after each start's solve.  The embedded starts'
    rank-1 points (:func:`~attnphase.numerics.phase.census_starts.census_rank_one`) are solved once, those of
    ``rank_one`` taken from it."""
    model = se_params(params)
    search_cfg, polish = search_config(model, config)
    rank_one = census_rank_one(model, alpha, search_cfg, rank_one)
    starts = list(starts) if starts is not None else census_starts(model, alpha, config, rank_one=rank_one)
    found: list[list] = []
    failures: list[tuple[str, float, str]] = []

    def run(batch: list[CensusStart]) -> None:
        by_name = {s.name: s for s in batch}
        said = (lambda res: progress(by_name[res[0]], res[1])) if progress is not None else None
        jobs = [(model, alpha, s, search_cfg, workers == 1, rank_one) for s in batch]
        solved = map_in_order(_search_job, jobs, workers, said)
        for s, (_, fp) in zip(batch, solved):
            if not fp.status.converged or not math.isfinite(fp.observables.e_t):
                failures.append((s.name, float(fp.status.residual), fp.status.message))
            else:
                _add(found, orbit_key(model, fp), fp, (s.name,))

    run(starts)
    if perturb:
        more = perturbed_starts(model, [fp for _, fp, _, _ in found])
        run(more)
        starts += more
    lost, dropped = 0, []
    if polish:  # each point found solved again on the solve rule, and deduplicated again
        coarse, found = found, []
        for _, fp, names, others in coarse:
            # from the orbit's first point, else from its other points, best converged first (a point converged to
            # the rule's jump scale need not converge again from itself: the zero student at lam = 0.5)
            for start in (fp, *sorted(others, key=lambda p: p.status.residual)):
                fine = solve(model, alpha, start.requested, init=start.overlaps, config=config)
                if fine.status.converged:
                    _add(found, orbit_key(model, fine), fine, names)
                    break
            else:
                lost += 1
                why = (f"its {fp.branch} point on the search rule did not converge again on the solve rule "
                       f"{config.quadrature} (residual {fine.status.residual:.1e}): dropped")
                dropped += [(name, why) for name in names]
    return SearchResult(tuple((fp, names) for _, fp, names, _ in found), tuple(starts), tuple(failures), lost,
                        search_cfg.quadrature, tuple(dropped))


def census(params: ModelParams, alpha: float, *, config: SolverConfig | None = None, n_rules: int = CENSUS_RULES,
           workers: int = 1, starts: list[CensusStart] | None = None, perturb: bool = True,
           progress: Callable[[CensusStart, FixedPoint], None] | None = None) -> Census:
    """Every fixed point found at (params, alpha), lowest e_t first (the module doc's five steps): the search's
    solves on ``workers`` processes (:func:`search`, with ``starts``, ``perturb`` and ``progress``), error bars
    from the rule's blocks (a rule of one block: from ``n_rules`` rules, CENSUS_RULES when 0; none with
    ``config.error_bars`` off), stability on ``config``'s solve rule."""
    t0 = time.perf_counter()
    alpha = check_alpha(alpha)  # before any search task runs
    if isinstance(n_rules, bool) or not isinstance(n_rules, (int, np.integer)) or n_rules < 0:
        raise ValueError(f"n_rules must be an integer >= 0 (0: CENSUS_RULES), got {n_rules!r}")
    cfg = config or SolverConfig()
    found = search(params, alpha, cfg, starts=starts, perturb=perturb, workers=workers, progress=progress)
    entries: list[CensusEntry] = []
    unreproduced: list[tuple[CensusEntry, list[str]]] = []
    for fp, names in found.points:
        solves, blocks = replicate_solves(fp, cfg, n_rules or CENSUS_RULES)
        reps = on_its_branch(fp, solves)
        errors = replicate_errors(fp, reps, blocks) if reps else {}
        entry = CensusEntry(fp, tuple(reps), blocks, errors, names)
        if entry.unreproduced:  # step 3's second test, once the others are in
            unreproduced.append((entry, [floor_label(p) for p in solves if p.status.converged]))
        else:
            _merge_within_errors(entries, entry)
    for entry, landed in unreproduced:
        target = displaced_from(entries, entry.point.branch, landed)
        if target is None:
            _merge_within_errors(entries, entry)
        else:
            entries[target] = _merged(entries[target], entry, DISPLACED)
    entries = _finer_rule_merged(_below_floor_merged(entries), cfg)
    model = se_params(params)
    entries = [replace(e, leading_eigenvalue=stability_eigenvalue(model, alpha, e.point.overlaps, cfg))
               for e in entries]
    entries.sort(key=lambda e: e.e_t)
    used = 0 if not cfg.error_bars or rule_blocks(cfg.quadrature) else (n_rules or CENSUS_RULES)  # as documented
    return Census(params, float(alpha), tuple(entries), found, used, time.perf_counter() - t0)


def _finer_rule_merged(entries: list[CensusEntry], cfg: SolverConfig) -> list[CensusEntry]:
    """At r = r* = 1, ``entries`` with each positional or semantic point that a finer rule shows to be the rule's own
    (:func:`~attnphase.numerics.phase.absence.finer_rule_note`: next to an agnostic point stable in its direction,
    the finer rule's solve from it reaches that point) merged into the one agnostic point listed, as ``solve``
    refuses it (``census --alpha 2 --omega 0 --precision fast`` listed a positional point of m = 0.043 that ``solve``
    there calls the rule's jumps)."""
    from attnphase.numerics.phase.absence import finer_rule_note

    out = list(entries)
    for entry in entries:
        fp = entry.point
        if not is_scalar_form(fp.params.r, fp.params.r_star) or fp.branch not in ("positional", "semantic"):
            continue
        agnostic = [i for i, e in enumerate(out) if e.point.branch == "agnostic"]
        if len(agnostic) == 1 and finer_rule_note(fp, fp.branch, model_rule(fp.params, cfg), cfg)[0]:
            out[agnostic[0]] = _merged(out[agnostic[0]], entry, FINER_RULE)
            out.remove(entry)
    return out


def _merged(keep: CensusEntry, drop: CensusEntry, reason: str) -> CensusEntry:
    """``keep`` with ``drop``'s starts, and ``drop`` (with the points merged into it) listed as merged for
    ``reason``."""
    gone = (MergedPoint(drop.point.branch, drop.point.observables.e_t, drop.starts, reason),) + drop.merged
    return replace(keep, starts=keep.starts + drop.starts, merged=keep.merged + gone)


#: How many order parameters a label's points break the model's symmetries by (th0, m): of two points one within the
#: error bars the one of fewer is kept -- the other's extra order parameter is not resolved from 0.
BROKEN_ORDERS = {"agnostic": 0, "positional": 1, "semantic": 1, "mixed": 2}


def _merge_within_errors(entries: list[CensusEntry], entry: CensusEntry) -> None:
    """``entry`` appended to ``entries``, or merged with the one it lies within the error bars of (one fixed point:
    the one of fewer :data:`BROKEN_ORDERS` kept, of two alike the one more starts reached; the other listed)."""
    same = next((i for i, other in enumerate(entries) if within_errors(entry, other)), None)
    if same is None:
        entries.append(entry)
    else:
        other = entries[same]

        def rank(e: CensusEntry) -> tuple[int, int]:
            return BROKEN_ORDERS.get(e.point.branch, 0), -len(e.starts)
        entries[same] = (_merged(other, entry, WITHIN_ERRORS) if rank(other) <= rank(entry)
                         else _merged(entry, other, WITHIN_ERRORS))


#: The label a point of a label has without one of its order parameters (:data:`BRANCH_FLOORS`' names).
WITHOUT = {("positional", "m"): "agnostic", ("semantic", "th0"): "agnostic", ("mixed", "m"): "semantic",
           ("mixed", "th0"): "positional"}


def floor_label(fp: FixedPoint) -> str:
    """``fp``'s label, or where an order parameter of it lies below its branch's floor the label it has without that
    order parameter (both below: agnostic): the point it is the rule's noise next to."""
    from attnphase.numerics.phase.branch_end import BRANCH_FLOORS, below_floor, overlap_size

    if not below_floor(fp, fp.branch):
        return fp.branch
    low = [name for name, floor in BRANCH_FLOORS[fp.branch] if overlap_size(fp, name) < floor]
    return WITHOUT[(fp.branch, low[0])] if len(low) == 1 else "agnostic"


def _below_floor_merged(entries: list[CensusEntry]) -> list[CensusEntry]:
    """``entries`` with each point that has no error bars (``--error-estimate 0``: the merge within them cannot test
    it) and whose order parameter lies below its branch's floor merged into the one point of the label it has
    without that order parameter (both below: agnostic), where exactly one is listed: the rule's noise next to that
    point, as the bars would have merged it (``census --error-estimate 0`` listed a positional point of |m| =
    0.002 beside the agnostic one)."""
    out = list(entries)
    for entry in entries:
        fp = entry.point
        label = floor_label(fp)
        if entry.errors or label == fp.branch:
            continue
        same = [i for i, e in enumerate(out) if e.point.branch == label]
        if len(same) == 1 and entry in out:
            out[same[0]] = _merged(out[same[0]], entry, BELOW_FLOOR)
            out.remove(entry)
    return out


def displaced_from(entries: Sequence[CensusEntry], label: str, landed: Sequence[str]) -> int | None:
    """The index of the entry a point of ``label`` the rule's blocks do not reproduce (fewer than two of its
    re-solves stay on its branch) is a displaced copy of: more than half of its converged re-solves (their labels
    ``landed``) land on one other label, and exactly one entry has that label (a small theta or m the pooled rule's
    jumps put on the agnostic point, which its blocks do not keep); None where that is not so."""
    label = max(sorted(set(landed) - {label}), key=landed.count, default="")
    same = [i for i, e in enumerate(entries) if e.point.branch == label]
    return same[0] if landed.count(label) * 2 > len(landed) and len(same) == 1 else None


def entry_errors(entry: CensusEntry) -> dict[str, Any]:
    """``err_<key>`` for every key of the point's error estimate (NaN without error bars)."""
    return {f"err_{k}": entry.err(k) for k in error_keys(entry.point)}


#: The columns of :func:`census_check` (``phase-diagram --census``: phase_diagram_census.csv, one row per omega).
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
