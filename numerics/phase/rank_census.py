"""Every rank-r fixed point found at one (alpha, omega), deduplicated and ranked by e_t with error bars.

The rank-r twin of :mod:`attnphase.numerics.phase.census` (docs/method.md sections 11-12).  At one (params, alpha),
on the rule of ``config``:

1. **search** -- :func:`~attnphase.numerics.se.state_evolution.solve` from every start of :func:`rank_census_starts`:
   each branch's embedded start (the rank-1 fixed points, one per student axis; staged solve), each branch's
   cold start, and mixtures of the embedded mixed state (:func:`mixture`: its semantic th0 and positional m
   scaled by weights, the positional m tilted onto the semantic axis) -- fixed ones and ``n_random`` drawn
   from ``seed``; then (1b, :func:`perturbed_starts`) each converged positional point with a small th0 and each
   semantic point with a small m -- where a mixed branch is born from one of them, its start.  A solve that does
   not converge is listed as such (start, residual), never as a point;
2. **dedupe** -- two converged points with the same label are one fixed point when their invariants
   (eigenvalues of q0 and V0, singular values of th0, |m_l|: the gauge orbit's, :func:`invariant_vector`)
   agree to :data:`SAME_POINT_RTOL`; after the error bars, two points (any labels) are one when every
   invariant agrees within :data:`SAME_WITHIN_ERRORS` combined error bars and e_t within as many errors of the
   paired difference (:func:`_within_errors`; the one more starts reached is kept, the other listed as merged);
3. **error bars** -- each distinct point re-solved warm on each block of the solve rule (R >= 2 blocks: the
   standard error std_j / sqrt(R)) or on ``n_rules`` independent rules (std_j), :func:`replicate_points`;
4. **rank** -- by e_t, lowest first.  Each other point's height above the minimum,

       Delta = e_t(B) - e_t(A),   err(Delta) = std_j(e_t(B)_j - e_t(A)_j) [/ sqrt(R)],

   is estimated *per block* (:func:`paired_difference`): both points are solved on the same blocks, whose
   common quadrature error cancels in the difference, so err(Delta) is far below the combined bar
   hypot(err_A, err_B) that :mod:`~attnphase.numerics.phase.census` uses (both are reported).

No stability test (the rank-1 census's leading eigenvalue has no rank-r twin here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.results import MATRIX_ERROR_KEYS
from attnphase.numerics.se.se_map import admissible
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.se.state_evolution import embedded_start, solve
from attnphase.theory.params import ModelParams

#: Two invariant vectors closer than this (max |a - b| / max(1, |a|)) are one fixed point (same label).
SAME_POINT_RTOL = 1e-3

#: Points whose invariants and e_t agree within this many combined error bars are one fixed point.
SAME_WITHIN_ERRORS = 4.0

#: SE evaluations each quasi-Newton run of a start's solve may spend (the staged solve has up to three and a retry;
#: measured at L = 2, r = 2, r* = 1, omega = 0.3, alpha = 2, sobol9:2: converging starts took 50 - 240 evaluations
#: in all, failing ones 110 - 410, most of the search's time).
SEARCH_MAX_ITER = 150

#: Independent rules of the error bars when the solve rule has one block and none is asked.
CENSUS_RULES = 4

#: Fixed mixtures of the embedded mixed state: (weight of th0, weight of m, tilt angle of m onto the semantic axes).
FIXED_MIXTURES = ((0.25, 1.0, 0.0), (0.5, 1.0, 0.0), (1.0, 0.5, 0.0), (1.0, 1.0, math.pi / 6), (1.0, 1.0, math.pi / 3))

#: Sizes of the perturbations of step 1b (:func:`perturbed_starts`): th0 = eps sqrt(q0_aa rho0) onto a positional
#: point, m = eps P[:, 0] / max |P[:, 0]| onto a semantic one.
PERTURBATIONS = (0.05, 0.2)

#: Random mixtures drawn by default (weights uniform in [0.2, 1], tilt uniform in [0, pi/2], diagonals x e^{0.2 N}).
RANDOM_MIXTURES = 2


@dataclass(frozen=True, eq=False)
class RankStart:
    """One start: its name, the branch requested of the solve (its hat projection), and either a start kind of
    :func:`~attnphase.numerics.se.state_evolution.solve` (``embedded`` / ``cold``, ``overlaps`` None) or the overlaps to start from."""

    name: str
    branch: str
    kind: str
    overlaps: Overlaps | None = None


def branches(params: ModelParams) -> tuple[str, ...]:
    """The branches of a rank-r model: semantic, positional, agnostic, and mixed at r >= 2."""
    return ("semantic", "positional", "mixed", "agnostic") if params.r >= 2 else ("semantic", "positional", "agnostic")


def mixture(base: Overlaps, w_th: float, w_m: float, tilt: float) -> Overlaps:
    """``base`` (the embedded mixed state: semantic axes with th0, the last axis positional) with th0 scaled by
    w_th, m by w_m, and the positional column m_{:, r-1} turned by ``tilt`` onto axis 0:
    m_{:, 0} += sin(tilt) m_{:, r-1}, m_{:, r-1} <- cos(tilt) m_{:, r-1} (a direction carrying both overlaps)."""
    m = w_m * np.array(base.m)
    col = m[:, -1].copy()
    if base.r >= 2:
        m[:, 0] += math.sin(tilt) * col
        m[:, -1] = math.cos(tilt) * col
    return Overlaps(base.q0, base.V0, m, w_th * np.array(base.th0))


def rank_census_starts(params: ModelParams, alpha: float, config: SolverConfig, *, n_random: int = RANDOM_MIXTURES,
                       seed: int = 0) -> list[RankStart]:
    """The starts of step 1: embedded and cold per branch, then :data:`FIXED_MIXTURES` and ``n_random`` mixtures
    drawn from ``seed`` (numpy's default generator; an inadmissible draw is drawn again, up to 20 times), each of
    :func:`mixture` applied to the embedded mixed state (at r = 1: the semantic state with the positional m on
    its axis), requested branch ``mixed`` (no hat projected)."""
    starts = [RankStart(f"{b} embedded", b, "embedded") for b in branches(params) if b != "agnostic"]
    starts += [RankStart(f"{b} cold", b, "cold") for b in branches(params)]
    base = _mixed_base(params, alpha, config)
    for w_th, w_m, tilt in FIXED_MIXTURES:
        ov = mixture(base, w_th, w_m, tilt)
        if admissible(ov, params.rho0):
            starts.append(RankStart(f"mixture th0 x{w_th:g}, m x{w_m:g}, tilt {math.degrees(tilt):.0f} deg", "mixed",
                                    "init", ov))
    rng = np.random.default_rng(seed)
    for k in range(n_random):
        for _ in range(20):
            w_th, w_m, tilt = rng.uniform(0.2, 1.0), rng.uniform(0.2, 1.0), rng.uniform(0.0, math.pi / 2)
            noise = np.exp(0.2 * rng.standard_normal((2, base.r)))
            ov = mixture(base, w_th, w_m, tilt)
            ov = Overlaps(ov.q0 * np.sqrt(np.outer(noise[0], noise[0])), ov.V0 * np.sqrt(np.outer(noise[1], noise[1])),
                              ov.m, ov.th0)
            if admissible(ov, params.rho0):
                starts.append(RankStart(f"random mixture {k + 1} (seed {seed}): th0 x{w_th:.2f}, m x{w_m:.2f}, tilt "
                                        f"{math.degrees(tilt):.0f} deg", "mixed", "init", ov))
                break
    return starts


def perturbed_starts(params: ModelParams, points: list[FixedPoint]) -> list[RankStart]:
    """Step 1b: each positional point with th0_{a1} = eps sqrt(q0_aa rho0) on its axis a of largest q0 (canonical gauge),
    each semantic point with m_{:, a} = eps P[:, 0] / max |P[:, 0]| on its axis a of smallest q0, eps in
    :data:`PERTURBATIONS`; requested branch ``mixed``; inadmissible ones left out.  Named after the point (the k-th
    of its label found), so that every start's name is its own."""
    from attnphase.numerics.se.gauge import canonical

    col = params.P_array[:, 0]
    out = []
    seen: dict[str, int] = {}
    for fp in points:
        seen[fp.branch] = k = seen.get(fp.branch, 0) + 1
        ov = canonical(fp.overlaps)
        for eps in PERTURBATIONS:
            th, m = np.array(ov.th0), np.array(ov.m)
            if fp.branch == "positional":
                th[0, 0] = eps * math.sqrt(ov.q0[0, 0] * params.rho0)
            elif fp.branch == "semantic" and np.any(col):
                m[:, -1] = eps * col / np.abs(col).max()
            else:
                continue
            new = Overlaps(ov.q0, ov.V0, m, th)
            if admissible(new, params.rho0):
                out.append(RankStart(f"{fp.branch} point {k} + {eps:g} {'th0' if fp.branch == 'positional' else 'm'}",
                                     "mixed", "init", new))
    return out


def _mixed_base(params: ModelParams, alpha: float, config: SolverConfig) -> Overlaps:
    """The embedded mixed state (r >= 2), or at r = 1 the semantic one with the positional one's m added."""
    if params.r >= 2:
        return embedded_start(params, alpha, "mixed", config)
    sem, pos = embedded_start(params, alpha, "semantic", config), embedded_start(params, alpha, "positional", config)
    return Overlaps(sem.q0, sem.V0, pos.m, sem.th0)


def solve_start(params: ModelParams, alpha: float, start: RankStart, config: SolverConfig) -> FixedPoint:
    """Step 1 for one start."""
    if start.kind == "init":
        return solve(params, alpha, start.branch, config=config, init=start.overlaps)
    return solve(params, alpha, start.branch, config=config, start=start.kind)


def invariant_vector(fp: FixedPoint) -> np.ndarray:
    """(eigenvalues of q0, of V0, singular values of th0, |m_l|): the gauge orbit's coordinates."""
    inv = fp.invariants
    return np.concatenate([inv[k] for k in ("q0_eigenvalues", "V0_eigenvalues", "th0_singular_values", "m_norms")])


def same_point(a: np.ndarray, b: np.ndarray, rtol: float = SAME_POINT_RTOL) -> bool:
    """max_i |a_i - b_i| / max(1, |a_i|) <= rtol."""
    return bool(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(a))) <= rtol)


def replicate_points(fp: FixedPoint, config: SolverConfig, n_rules: int) -> tuple[list[FixedPoint | None], bool]:
    """(the replicates of ``fp``, whether they are blocks): ``fp`` re-solved warm (with its Jacobian) on each of the
    solve rule's R >= 2 scrambling blocks, or, for a rule of one block, on ``config.variant(k)``, k = 1 .. n_rules - 1,
    after ``fp`` itself (k = 0).  A replicate that does not converge on ``fp``'s branch is None (kept in place, so
    that two points' replicates pair by index)."""
    from attnphase.numerics.errors.replicates import block_config, replicate_count

    R = replicate_count(config)
    configs = [block_config(config, j) for j in range(R)] if R else [config.variant(k) for k in range(1, n_rules)]
    out: list[FixedPoint | None] = [] if R else [fp]
    for cfg in configs:
        other = solve(fp.params, fp.alpha, fp.requested, config=cfg, init=fp.overlaps, memory=fp.memory)
        out.append(other if other.status.converged and other.branch == fp.branch else None)
    return out, bool(R)


def replicate_errors(fp: FixedPoint, reps: list[FixedPoint | None], blocks: bool) -> dict[str, Any]:
    """err_<key> of :data:`MATRIX_ERROR_KEYS`: std_j over the converged replicates, / sqrt(n) for blocks (NaN below two);
    ``err_replicates`` (used) and ``err_replicates_tried``."""
    recs = [p.record for p in reps if p is not None]
    ref = fp.record
    own = 0 if blocks else 1  # independent rules: the first replicate is fp itself
    out: dict[str, Any] = {"err_replicates": len(recs) - own, "err_replicates_tried": len(reps) - own}
    for key in MATRIX_ERROR_KEYS:
        if len(recs) < 2:
            sd = np.full(np.atleast_1d(np.asarray(ref[key], dtype=float)).shape, np.nan)
        else:
            vals = np.array([np.atleast_1d(np.asarray(r[key], dtype=float)) for r in recs])
            sd = vals.std(axis=0, ddof=1) / (np.sqrt(len(recs)) if blocks else 1.0)
        out[f"err_{key}"] = float(sd[0]) if np.ndim(ref[key]) == 0 else sd.tolist()
    return out


def paired_difference(a: "RankCensusEntry", b: "RankCensusEntry") -> tuple[float, float, int]:
    """(Delta, err(Delta), pairs): Delta = e_t(b) - e_t(a) on the solve rule, err(Delta) the spread of the per-replicate
    differences e_t(b)_j - e_t(a)_j over the replicates j where both converged (std / sqrt(n) for blocks, std for
    independent rules; NaN below two pairs)."""
    delta = b.e_t - a.e_t
    d = [pb.observables.e_t - pa.observables.e_t for pa, pb in zip(a.replicates, b.replicates) if pa is not None and pb is not None]
    if len(d) < 2:
        return delta, math.nan, len(d)
    sd = float(np.std(d, ddof=1))
    return delta, sd / math.sqrt(len(d)) if a.blocks else sd, len(d)


@dataclass(frozen=True, eq=False)
class RankCensusEntry:
    """One distinct fixed point: its solve, its replicates (None: not converged on its branch; empty without error
    bars), whether they are blocks, its error bars (err_<key>), the starts that reached it, and the points merged
    into it within the error bars (step 2: each one's label, e_t and starts)."""

    point: FixedPoint
    replicates: tuple[FixedPoint | None, ...]
    blocks: bool
    errors: dict[str, Any]
    starts: tuple[str, ...]
    merged: tuple[tuple[str, float, tuple[str, ...]], ...] = ()

    @property
    def e_t(self) -> float:
        return self.point.observables.e_t if math.isfinite(self.point.observables.e_t) else math.inf

    def err(self, key: str) -> Any:
        return self.errors.get(f"err_{key}", math.nan)


@dataclass(frozen=True, eq=False)
class RankCensus:
    """The fixed points at (params, alpha), lowest e_t first; the starts; those that did not converge
    (start name, residual, solver message); the error bars' rule count (0: from blocks or none)."""

    params: ModelParams
    alpha: float
    entries: tuple[RankCensusEntry, ...]
    starts: tuple[RankStart, ...]
    failures: tuple[tuple[str, float, str], ...]
    n_rules: int

    def above_minimum(self, entry: RankCensusEntry) -> dict[str, Any]:
        """``entry``'s height above the global minimum: Delta e_t, its paired error (:func:`paired_difference`),
        Delta / err paired, and Delta / hypot(err_A, err_B) (the rank-1 census's combined bar)."""
        best = self.entries[0]
        delta, err, n = paired_difference(best, entry)
        comb = math.hypot(best.err("e_t"), entry.err("e_t"))
        return {"delta_e_t": delta, "err_delta_e_t": err, "delta_pairs": n,
                "separation_paired": delta / err if err > 0 else math.nan,
                "separation_combined": delta / comb if comb > 0 else math.nan}

    def separation(self) -> float:
        """(e_t of the second - e_t of the first) / combined error bar (inf with one point, NaN without bars)."""
        return self.above_minimum(self.entries[1])["separation_combined"] if len(self.entries) >= 2 else math.inf

    def separation_paired(self) -> float:
        """The same over the paired error of the difference (:func:`paired_difference`)."""
        return self.above_minimum(self.entries[1])["separation_paired"] if len(self.entries) >= 2 else math.inf


def _within_errors(a: RankCensusEntry, b: RankCensusEntry, k: float = SAME_WITHIN_ERRORS) -> bool:
    """One fixed point: every invariant within ``k`` combined error bars, and e_t(b) - e_t(a) within ``k`` of its
    paired error (:func:`paired_difference`; the combined bar where fewer than two replicates pair).  False without
    bars.  The paired test is what separates two points of one rule: a point that the rule's jumps split in two
    (docs/method.md section 12) splits differently on each block, so its halves' per-block differences scatter as
    much as the difference itself; two distinct points keep their difference on every block."""
    ra, rb = a.point.record, b.point.record
    for key in ("q0_eigenvalues", "V0_eigenvalues", "th0_singular_values", "m_norms"):
        va, vb = np.atleast_1d(np.asarray(ra[key], float)), np.atleast_1d(np.asarray(rb[key], float))
        bar = np.hypot(np.atleast_1d(np.asarray(a.err(key), float)), np.atleast_1d(np.asarray(b.err(key), float)))
        diff = np.abs(va - vb)
        if not np.all((diff == 0) | (diff <= k * bar)):
            return False
    delta, err, _ = paired_difference(a, b)
    if not math.isfinite(err):
        err = math.hypot(a.err("e_t"), b.err("e_t"))
    return bool(delta == 0 or abs(delta) <= k * err)


def rank_census(params: ModelParams, alpha: float, *, config: SolverConfig | None = None, n_rules: int = 0,
                n_random: int = RANDOM_MIXTURES, seed: int = 0, starts: list[RankStart] | None = None,
                perturb: bool = True,
                progress: Callable[[RankStart, FixedPoint], None] | None = None) -> RankCensus:
    """The module doc's four steps at (params, alpha), from ``starts`` (default :func:`rank_census_starts` with
    ``n_random`` and ``seed``) and, with ``perturb``, the :func:`perturbed_starts` of the points they reach; each
    solve with at most :data:`SEARCH_MAX_ITER` evaluations per run.  Error bars from
    the solve rule's blocks, else from ``n_rules`` independent rules (CENSUS_RULES when 0), none with
    ``config.error_bars`` off.  ``progress(start, point)`` is called after each start's solve."""
    cfg = config or SolverConfig()
    if starts is None:
        starts = rank_census_starts(params, alpha, cfg, n_random=n_random, seed=seed)
    search_cfg = cfg.replace(max_iter=min(cfg.max_iter, SEARCH_MAX_ITER))
    found: list[tuple[np.ndarray, FixedPoint, list[str]]] = []
    failures = []

    def run(batch: list[RankStart]) -> None:
        for s in batch:
            fp = solve_start(params, alpha, s, search_cfg)
            if progress is not None:
                progress(s, fp)
            if not fp.status.converged or not math.isfinite(fp.observables.e_t):
                failures.append((s.name, float(fp.status.residual), fp.status.message))
                continue
            key = invariant_vector(fp)
            same = next((f for f in found if f[1].branch == fp.branch and same_point(f[0], key)), None)
            if same is None:
                found.append((key, fp, [s.name]))
            else:
                same[2].append(s.name)

    run(starts)
    if perturb:
        more = perturbed_starts(params, [fp for _, fp, _ in found])
        run(more)
        starts = list(starts) + more
    entries: list[RankCensusEntry] = []
    for _, fp, names in found:
        if cfg.error_bars:
            reps, blocks = replicate_points(fp, cfg, n_rules or CENSUS_RULES)
        else:
            reps, blocks = [], False
        errors = replicate_errors(fp, reps, blocks) if reps else {}
        entry = RankCensusEntry(fp, tuple(reps), blocks, errors, tuple(names))
        same = next((i for i, other in enumerate(entries) if errors and _within_errors(entry, other)), None)
        if same is None:
            entries.append(entry)
        else:  # one fixed point: keep the one more starts reached, list the other
            other = entries[same]
            keep, drop = (other, entry) if len(other.starts) >= len(names) else (entry, other)
            gone = ((drop.point.branch, drop.point.observables.e_t, drop.starts),) + drop.merged
            entries[same] = RankCensusEntry(keep.point, keep.replicates, keep.blocks, keep.errors,
                                            keep.starts + drop.starts, keep.merged + gone)
    entries.sort(key=lambda e: e.e_t)
    return RankCensus(params, float(alpha), tuple(entries), tuple(starts), tuple(failures), n_rules)

