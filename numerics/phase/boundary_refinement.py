"""alpha_c and alpha_l refined on finer rules than the solves', with their standard errors (docs/method.md
sections 6-7): :func:`refine_alpha_c` (Newton steps on Delta e_t with E[M] on a finer rule, :func:`corrected_alpha_c`),
:func:`refine_alpha_l` (a multilevel secant step), :func:`block_root_error` (a root's standard error from the solve
rule's blocks), :func:`global_alpha_l` (whether the semantic alpha_l is the global minimum's).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.brackets import BranchLost
from attnphase.numerics.quadrature.rules import finer_rule, make_rule, rule_blocks
from attnphase.numerics.errors.replicates import block_config, linearised_root_error, replicate_count, standard_error
from attnphase.numerics.se.state_evolution import FixedPoint, solve
from attnphase.numerics.se.training_objective import refined_training_objective

#: A fine-rule Newton step on alpha_c larger than this is not taken (noted instead).
MAX_ALPHA_C_CORRECTION = 0.1

#: A Newton step shorter than this ends the correction: the next one would be about
#: |curvature| step^2 / (2 |slope|) < 1e-4.
ONE_NEWTON_STEP = 0.01

#: Newton steps on alpha_c with the fine rule, at most.
MAX_NEWTON_STEPS = 3


def refine_alpha_c(
    pair_at: Callable[[float], tuple[FixedPoint, FixedPoint]], alpha_0: float, spec: str, config: SolverConfig
) -> tuple[float, str, float]:
    """Newton steps on Delta e_t with E[M] from the rule ``spec``; (alpha_c, note -- empty if all went
    well, its standard error).

    From the (semantic, positional) fixed points ``pair_at(alpha)``, starting at ``alpha_0``,
    alpha <- alpha - Delta e_t / (E_sem[M] - E_pos[M]), both e_t variational on the rule
    (:mod:`attnphase.numerics.se.training_objective`), until a step is shorter than ONE_NEWTON_STEP (at most
    MAX_NEWTON_STEPS).  A rule of R blocks is evaluated block by block: the pooled e_t and E[M] are the blocks'
    means, the blocks' own Newton roots at the last step give the standard error (NaN with one block or
    ``config.error_bars`` off; docs/method.md section 6).
    """
    params = pair_at(alpha_0)[0].params
    blocks = rule_blocks(spec) if config.error_bars else []
    rules = [make_rule(params.L, b) for b in blocks] or [make_rule(params.L, spec)]
    name = rules[0].name.split("@")[0]
    alpha, failures, err = alpha_0, 0, math.nan
    for _ in range(MAX_NEWTON_STEPS):
        pair = pair_at(alpha)
        per_rule = [[refined_training_objective(fp.params, fp.alpha, fp.overlaps, fp.hat, rule, config) for fp in pair]
                    for rule in rules]
        d_et = [rs.e_t - rp.e_t for rs, rp in per_rule]
        d_em = [rs.E_M - rp.E_M for rs, rp in per_rule]
        failures += sum(r.prox_failures for pr in per_rule for r in pr)
        delta, slope = float(np.mean(d_et)), float(np.mean(d_em))
        step = -delta / slope if slope < 0 else math.nan
        if not abs(step) <= MAX_ALPHA_C_CORRECTION:
            return alpha_0, (
                f"alpha_c: {name} correction not applied (Delta e_t = {delta:.2e}, "
                f"slope {slope:.2e} at alpha = {alpha:.5f}); the value is the solve rule's root"
            ), math.nan
        if len(rules) >= 2:
            err = standard_error([alpha - d / e for d, e in zip(d_et, d_em) if e < 0])
        alpha += step
        if abs(step) < ONE_NEWTON_STEP:
            return alpha, (f"alpha_c: {failures} proximal failures on {name}" if failures else ""), err
    return alpha, f"alpha_c: {name} correction still moving after {MAX_NEWTON_STEPS} Newton steps ({step:+.1e})", err


def corrected_alpha_c(alpha_c: float, s_on: list[FixedPoint], p_on: list[FixedPoint],
                      solve_at: Callable[[str, float], FixedPoint], config: SolverConfig) -> tuple[float, str, float]:
    """(alpha_c, note, its standard error) from the solve rule's root ``alpha_c`` and the semantic and positional
    points ``s_on``, ``p_on`` its search left: :func:`refine_alpha_c` on ``config.alpha_c_quadrature`` from their
    common alpha nearest the root (each branch's point at an alpha taken from them, else ``solve_at(branch, alpha)``);
    where that rule is None, the root with :func:`coarse_alpha_c_error`."""
    if config.alpha_c_quadrature is None:
        return alpha_c, "", coarse_alpha_c_error(s_on, p_on, alpha_c, config)

    def pair_at(alpha: float) -> tuple[FixedPoint, FixedPoint]:
        # the root-finding iterates already hold both branches at alpha_0
        return tuple(next((p for p in pts if p.alpha == alpha), None) or solve_at(b, alpha)
                     for b, pts in (("semantic", s_on), ("positional", p_on)))

    common = {p.alpha for p in s_on} & {p.alpha for p in p_on}
    return refine_alpha_c(pair_at, min(common, key=lambda a: abs(a - alpha_c)), config.alpha_c_quadrature, config)


#: The secant slope of eps_g(alpha) that refines alpha_l is taken between points at least this far apart (closer
#: ones see the solve rule's jumps).
ALPHA_L_SLOPE_SPAN = 0.02


def refine_alpha_l(s_on: list[FixedPoint], alpha_l: float, cfg: SolverConfig) -> tuple[float, float, str]:
    """alpha_l refined on ``cfg.alpha_l_quadrature`` and its standard error; (alpha_l, err, note).

    The semantic point nearest the solve rule's root a (the root finder's last evaluation) is re-solved on
    the finer rule (warm), and alpha_l = a - (eps_g,fine(a) - eps_lin) / slope, with the slope of eps_g the
    solve rule's secant over at least ALPHA_L_SLOPE_SPAN (a multilevel step: the fine rule is solved once).
    The error is that rule's blocks' (:func:`block_root_error`; none without error bars); without a finer rule (None,
    or one of no more nodes than the solve rule), where its re-solve fails or where fewer than two of its blocks
    reproduce the point, the solve rule's root and its error.  A root left without an error bar has a note that says why.
    """
    near = sorted(s_on, key=lambda p: abs(p.alpha - alpha_l))
    other = next((p for p in near[1:] if abs(p.alpha - near[0].alpha) >= ALPHA_L_SLOPE_SPAN), None)
    if other is None:
        return alpha_l, math.nan, (f"alpha_l: no error bar (no two semantic points {ALPHA_L_SLOPE_SPAN:g} apart in "
                                   "alpha for the slope of eps_g)" if replicate_count(cfg) else "")
    fp = near[0]
    slope = (other.observables.eps_g - fp.observables.eps_g) / (other.alpha - fp.alpha)
    eps_lin = fp.observables.eps_lin
    gap = lambda fps: fps[0].observables.eps_g - eps_lin  # noqa: E731
    coarse_err = (lambda: block_root_error([fp], gap, slope, cfg) if slope < 0 else math.nan)  # noqa: E731
    fine_rule = finer_rule(fp.params.L, cfg.alpha_l_quadrature, cfg.quadrature)
    if fine_rule is None:
        err = coarse_err()
        unbarred = _no_bar(err, slope, cfg)
        return alpha_l, err, f"alpha_l: {unbarred}" if unbarred else ""
    fine_cfg = cfg.replace(quadrature=fine_rule)
    fine = solve(fp.params, fp.alpha, "semantic", init=fp.overlaps, config=fine_cfg)
    fine_ok = fine.status.converged and fine.branch == "semantic" and slope < 0
    fine_err = block_root_error([fine], gap, slope, fine_cfg) if fine_ok else math.nan
    if fine_ok and (math.isfinite(fine_err) or not replicate_count(fine_cfg)):  # (no blocks: no bar asked for)
        return fp.alpha - gap([fine]) / slope, fine_err, ""
    why = ("fewer than two of its blocks reproduce the re-solved point" if fine_ok else
           f"re-solve: {fine.status.message}, {fine.branch}; slope {slope:.2e}")
    err = coarse_err()
    unbarred = _no_bar(err, slope, cfg)
    bar = " and its blocks' error" if math.isfinite(err) else f"; {unbarred}" if unbarred else ""
    return alpha_l, err, f"alpha_l: {cfg.alpha_l_quadrature} refinement not applied ({why}); the solve rule's root{bar}"


def _no_bar(err: float, slope: float, cfg: SolverConfig) -> str:
    """Why a root of eps_g - eps_lin on ``cfg``'s solve rule has no error bar (``err`` NaN), or "" where it has one or
    none was asked for (no blocks)."""
    if math.isfinite(err) or not replicate_count(cfg):
        return ""
    if not slope < 0:
        return f"no error bar (the slope of eps_g, {slope:.2e}, is not negative)"
    return f"no error bar (fewer than two blocks of {cfg.quadrature} reproduce the point)"


def block_root_error(points: Sequence[FixedPoint], g: Callable[[list[FixedPoint]], float], slope: float,
                      cfg: SolverConfig) -> float:
    """Standard error of a root b of g found on the pooled solve rule, linearised at the points' alpha a
    (all at one alpha): the points re-solved on each block j (warm), b_j = a - g_j / slope
    (:func:`~attnphase.numerics.errors.replicates.linearised_root_error`); a block whose solves leave the
    points' branches is left out (NaN without blocks)."""
    a, values = points[0].alpha, []
    for j in range(replicate_count(cfg)):
        cfg_j = block_config(cfg, j)
        fps = [solve(fp.params, fp.alpha, fp.requested, init=fp.overlaps, config=cfg_j) for fp in points]
        if all(f.status.converged and f.branch == fp.branch for f, fp in zip(fps, points)):
            values.append(g(fps))
    return linearised_root_error(a, values, slope)


def coarse_alpha_c_error(s_on: Sequence[FixedPoint], p_on: Sequence[FixedPoint], alpha_c: float,
                         cfg: SolverConfig) -> float:
    """The error of alpha_c left on the solve rule (no fine-rule correction): Delta e_t's blocks at the
    common point of both branches nearest alpha_c (:func:`block_root_error`; NaN without blocks)."""
    if not replicate_count(cfg):
        return math.nan
    a = min({p.alpha for p in s_on} & {p.alpha for p in p_on}, key=lambda x: abs(x - alpha_c))
    s_fp, p_fp = (next(p for p in pts if p.alpha == a) for pts in (s_on, p_on))
    return block_root_error([s_fp, p_fp], lambda fps: fps[0].observables.e_t - fps[1].observables.e_t,
                            s_fp.observables.E_M - p_fp.observables.E_M, cfg)


def refined_alpha_l(s_on: Sequence[FixedPoint], alpha_l: float, alpha_c: float, alpha_c_err: float,
                    cfg: SolverConfig) -> tuple[float, float, str]:
    """(alpha_l, its error, a note): alpha_c's where alpha_l is alpha_c (eps_g already below eps_lin
    there, and the note says so), else :func:`refine_alpha_l` on the semantic points ``s_on``; NaN stays NaN."""
    if not math.isfinite(alpha_l):
        return alpha_l, math.nan, ""
    if alpha_l == alpha_c:
        return alpha_l, alpha_c_err, ("alpha_l = alpha_c: the semantic eps_g is already below eps_lin where the "
                                      "semantic point becomes the lowest")
    return refine_alpha_l(list(s_on), alpha_l, cfg)


def global_alpha_l(point: Callable[[str, float], FixedPoint], alpha_l: float, eps_lin: float) -> tuple[float, str]:
    """(alpha_l, a note): NaN and why where the positional point, lower wherever the two branches were compared, is
    lower at the semantic branch's crossing of eps_lin too (e_t of ``point("positional", alpha_l)`` below the
    semantic one's): alpha_l is where the global minimum's eps_g drops below eps_lin, and the semantic point is not
    the global minimum there."""
    try:
        sem, pos = (point(branch, alpha_l).observables for branch in ("semantic", "positional"))
    except BranchLost:  # no positional point there: the semantic one is the lower
        return alpha_l, ""
    if not sem.e_t > pos.e_t:
        return alpha_l, ""
    side = "above" if pos.eps_g >= eps_lin else "below"
    return math.nan, (f"alpha_l: none: the semantic eps_g meets eps_lin at alpha = {alpha_l:.4g}, where the positional "
                      f"point lies lower (Delta e_t = {sem.e_t - pos.e_t:.2g}; no alpha_c), its eps_g "
                      f"{pos.eps_g:.4g} {side} eps_lin")


def alpha_c_method(config: SolverConfig, err: float, n_rules: int = 0) -> str:
    """How the r = r* = 1 alpha_c is located and what its error ``err`` is: the spread over ``n_rules`` >= 2
    independent rules, else the standard error over the rule's scrambling blocks, or why there is none."""
    rule = config.alpha_c_quadrature
    located = ("safeguarded Newton on Delta e_t = e_t(semantic) - e_t(positional)"
               + (f", corrected by Newton steps with E[M] on {rule}" if rule is not None else ""))
    if n_rules >= 2:
        return f"{located}; err = spread over {n_rules} independent rules"
    if math.isfinite(err):
        return f"{located}; err = standard error over the rules' scrambling blocks"
    why = ("--error-estimate 0" if not config.error_bars else
           "one rule, no scrambling blocks" if not replicate_count(config) else
           "fewer than two of the rule's blocks gave a root")
    return f"{located}; no error bar ({why})"


#: How a row's notes say that its alpha_l is an interval's centre, its error the half-width (:func:`alpha_l_interval`).
INTERVAL_NOTE = "as its centre +- half-width"


def alpha_l_interval(points: Sequence[FixedPoint], eps_lin: float, lo: float, hi: float, lost: Exception
                     ) -> tuple[float, float, str]:
    """alpha_l where Brent's root of eps_g - eps_lin on [lo, hi] (eps_g above eps_lin at lo, below at hi) lost the
    semantic branch (``lost``): the interval between the semantic ``points`` solved last on either side of eps_lin
    there (lo and hi where none is), as (centre, half-width, a note), so that the bar covers every root the
    converged solves allow."""
    gaps = sorted((p.alpha, p.observables.eps_g - eps_lin) for p in points if lo <= p.alpha <= hi)
    top = min((a for a, g in gaps if g <= 0), default=hi)
    bottom = max((a for a, g in gaps if a < top and g > 0), default=lo)
    return 0.5 * (bottom + top), 0.5 * (top - bottom), (
        f"alpha_l: the interval [{bottom:.4g}, {top:.4g}] between the semantic points solved last on either side of "
        f"eps_lin (the root search between them lost the branch: {lost}), {INTERVAL_NOTE}")
