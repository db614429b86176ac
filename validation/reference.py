"""Theory values for the validation, from :mod:`attnphase.numerics` (never hard-coded).

For one omega and a grid of alpha, :func:`theory_at_omega` asks the numerics (``phase_boundaries``,
``sweep``, ``eps_lin``) for the phase boundaries (``alpha_c``, ``alpha_l``) and the semantic and positional
branches with the chosen proximal modes (``"global"``, ``"local"``, ``"aligned"``: docs/model.md section 3),
reusing the sweeps ``phase_boundaries`` returns.  The result is plain data (:class:`BranchCurve`,
:class:`TheoryAtOmega`) holding the numerics' records, so that reports and JSON need no numerics objects;
``validate`` runs each omega as a task of the execution layer (:mod:`attnphase.validation.jobs`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from attnphase.theory.params import ModelParams

from .branch_segments import exists_at

PROX_MODES = ("global", "local", "aligned")

#: The aligned map is not smooth where the lowest minimum on the student's side changes, and its solve on the
#: default rule fails more often than the global map's (semantic branch, alpha = 0.6 and 0.7, omega = 0.3: the
#: rule's blocks do not reproduce the point).  Such a point of an aligned curve is solved again on this rule, warm
#: from the curve's nearest converged point on the branch; its record names the rule (``rule``).
ALIGNED_RESCUE_QUADRATURE = "sobol12:4"


@dataclass(frozen=True)
class TheorySettings:
    """Accuracy of the numerics calls (their own defaults where ``None``): the fixed-point residual ``tol``, the
    alpha tolerance ``xtol`` of alpha_c / alpha_l and ``end_tol`` of a branch's end; ``error_alphas``: the alphas
    whose global-map points carry their quadrature error bars (``err_<field>`` of :data:`ERROR_FIELDS` and
    ``m_norm``: the standard error over the rule's scrambling blocks), those a d -> inf verdict compares with."""

    tol: float | None = None
    xtol: float | None = None
    end_tol: float | None = None
    error_alphas: tuple[float, ...] = ()

    def sweep_kwargs(self, prox: str, boundaries: bool = False) -> dict[str, Any]:
        """The keywords of ``sweep`` (with ``boundaries``: of ``phase_boundaries``, ``xtol`` too) for ``prox``."""
        from attnphase.numerics import SolverConfig

        config = SolverConfig(prox=prox)
        kw: dict[str, Any] = {"config": config if self.tol is None else config.replace(tol=self.tol)}
        if self.end_tol is not None:
            kw["bisection_tol"] = self.end_tol
        if boundaries and self.xtol is not None:
            kw["xtol"] = self.xtol
        return kw

BRANCHES = ("semantic", "positional")
RECORD_FIELDS = ("alpha", "branch", "q", "m", "V", "theta", "eps_g", "e_t", "eps_lin", "converged")
#: The record fields whose error bars (``err_<field>``) a point of ``TheorySettings.error_alphas`` carries.
ERROR_FIELDS = ("q", "m", "theta", "eps_g", "e_t")
#: The compared observables whose theory values carry an error bar where the theory computed one, by the record
#: field (``err_<field>``) it is the bar of.
THEORY_ERRORS = {"abs_m": "m", "m_norm": "m_norm", "abs_theta": "theta", "q": "q", "eps_g": "eps_g", "e_t": "e_t"}


@dataclass(frozen=True)
class BranchCurve:
    """One branch followed over alpha with one proximal mode: one numerics record per alpha (ascending, each with
    the label reached) and the alpha where the branch ends (NaN if none in range)."""

    branch: str
    prox: str
    records: tuple[dict[str, Any], ...]
    end: float = math.nan

    def point(self, alpha: float, values: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any] | None:
        """The curve's point at ``alpha`` as the comparison tables read it (None where the curve has no record there):
        ``branch_reached``, ``converged``, ``exists`` (:func:`~attnphase.validation.branch_segments.exists_at`), the
        ``values`` a caller computed from the record (``values(record)``, e.g. ``abs_m``) and the record's ``err_``
        bars (:data:`THEORY_ERRORS`); every value and bar None where the solve did not converge (no fixed point, no
        value)."""
        rec = next((r for r in self.records if abs(r["alpha"] - alpha) < 1e-9), None)
        if rec is None:
            return None
        ok = bool(rec["converged"])
        return ({"branch_reached": rec["branch"], "converged": rec["converged"],
                 "exists": exists_at(rec, self.branch, self.end)}
                | {k: v if ok else None for k, v in values(rec).items()}
                | {f"err_{k}": rec[f"err_{f}"] if ok else None for k, f in THEORY_ERRORS.items() if f"err_{f}" in rec})


@dataclass(frozen=True)
class TheoryAtOmega:
    """Theory at one omega: ``eps_lin`` (docs/model.md section 5), ``{prox: alpha_c}`` (NaN outside the grid),
    ``{prox: alpha_l}``, ``{prox: notes}`` of the numerics, ``{(branch, prox): BranchCurve}``, the wall and CPU
    seconds of the computation, and ``{prox: standard error}`` of alpha_c and alpha_l (NaN where none was made)."""

    omega: float
    eps_lin: float
    alpha_c: dict[str, float]
    alpha_l: dict[str, float]
    notes: dict[str, tuple[str, ...]]
    curves: dict[tuple[str, str], BranchCurve]
    seconds: float
    cpu_seconds: float = 0.0
    err_alpha_c: dict[str, float] = field(default_factory=dict)
    err_alpha_l: dict[str, float] = field(default_factory=dict)

    def curve(self, branch: str, prox: str) -> BranchCurve:
        return self.curves[(branch, prox)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (curves keyed ``"branch/prox"``)."""
        return {"omega": self.omega, "eps_lin": self.eps_lin,
                "alpha_c": {k: _num(v) for k, v in self.alpha_c.items()},
                "alpha_l": {k: _num(v) for k, v in self.alpha_l.items()},
                "notes": {k: list(v) for k, v in self.notes.items()},
                "curves": {f"{b}/{p}": {"end": _num(c.end), "records": [{k: _num(v) for k, v in r.items()}
                                                                         for r in c.records]}
                           for (b, p), c in self.curves.items()},
                "seconds": self.seconds, "cpu_seconds": self.cpu_seconds,
                "err_alpha_c": {k: _num(v) for k, v in self.err_alpha_c.items()},
                "err_alpha_l": {k: _num(v) for k, v in self.err_alpha_l.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TheoryAtOmega":
        curves = {}
        for key, c in data["curves"].items():
            b, p = key.split("/")
            recs = tuple({k: (math.nan if v is None else v) for k, v in r.items()} for r in c["records"])
            curves[(b, p)] = BranchCurve(b, p, recs, _nan(c["end"]))
        return cls(omega=data["omega"], eps_lin=data["eps_lin"],
                   alpha_c={k: _nan(v) for k, v in data["alpha_c"].items()},
                   alpha_l={k: _nan(v) for k, v in data["alpha_l"].items()},
                   notes={k: tuple(v) for k, v in data["notes"].items()}, curves=curves,
                   seconds=float(data.get("seconds", 0.0)), cpu_seconds=float(data.get("cpu_seconds", 0.0)),
                   err_alpha_c={k: _nan(v) for k, v in data.get("err_alpha_c", {}).items()},
                   err_alpha_l={k: _nan(v) for k, v in data.get("err_alpha_l", {}).items()})


def _num(x: Any) -> Any:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)


def _record(fp: Any) -> dict[str, Any]:
    rec = fp.record
    out = {k: rec[k] if k in ("branch", "converged") else float(rec[k]) for k in RECORD_FIELDS if k in rec}
    out["converged"] = bool(out.get("converged", False))
    m = getattr(getattr(fp, "overlaps", None), "m", None)
    if m is not None:  # |m| = (sum_l m_l^2)^{1/2}, the size of the positional overlap whatever L and P
        out["m_norm"] = float(math.sqrt(sum(float(x) ** 2 for x in m)))
    return out


def _points(result: Any) -> list[Any]:
    """The fixed points of a numerics sweep (a ``BranchSweep`` or a plain list)."""
    return list(getattr(result, "points", result))


def _curve(
    params: ModelParams, alphas: Sequence[float], branch: str, prox: str, settings: TheorySettings, existing: Any = None
) -> BranchCurve:
    from attnphase.numerics import sweep

    grid = sorted(float(a) for a in alphas)
    res = existing
    if res is None or [float(p.alpha) for p in _points(res)] != grid:
        res = sweep(params, grid, branch=branch, **settings.sweep_kwargs(prox))
    points = _points(res)
    records = tuple(_record(fp) for fp in points)
    if prox == "aligned":
        records = _rescued(params, branch, points, records, settings.sweep_kwargs(prox)["config"])
    elif prox == "global" and settings.error_alphas:
        records = _with_errors(branch, points, records, settings.error_alphas, settings.sweep_kwargs(prox)["config"])
    end = getattr(res, "end", None)
    return BranchCurve(branch, prox, records, float(end.alpha) if end is not None else math.nan)


def _rescued(params: ModelParams, branch: str, points: list[Any], records: tuple[dict[str, Any], ...],
             config: Any) -> tuple[dict[str, Any], ...]:
    """``records`` with each point that did not converge solved again on :data:`ALIGNED_RESCUE_QUADRATURE`, warm from
    the nearest converged point on ``branch`` (kept, with ``rule``, where that solve converges)."""
    from attnphase.numerics import solve

    good = [fp for fp in points if fp.status.converged and fp.branch == branch]
    out = list(records)
    for i, fp in enumerate(points):
        if fp.status.converged or not good:
            continue
        near = min(good, key=lambda g: abs(g.alpha - fp.alpha))
        again = solve(params, fp.alpha, branch, init=near.overlaps,
                      config=config.replace(quadrature=ALIGNED_RESCUE_QUADRATURE))
        if again.status.converged:
            out[i] = _record(again) | {"rule": ALIGNED_RESCUE_QUADRATURE}
    return tuple(out)


def _with_errors(branch: str, points: list[Any], records: tuple[dict[str, Any], ...], alphas: Sequence[float],
                 config: Any) -> tuple[dict[str, Any], ...]:
    """``records`` with ``err_<field>`` (:data:`ERROR_FIELDS` that are numbers, and ``m_norm``) at each point of
    ``alphas`` converged on ``branch``: over the point re-solved on each scrambling block of the rule
    (:func:`~attnphase.numerics.errors.replicates.derived_errors`); none where the rule has one block."""
    from attnphase.numerics.errors.replicates import derived_errors, replicate_configs, replicate_points

    def values(p: Any) -> dict[str, float]:
        return {k: v for k, v in _record(p).items() if k in (*ERROR_FIELDS, "m_norm") and isinstance(v, float)}

    if not replicate_configs(config, 0)[0]:
        return records
    out = list(records)
    for i, fp in enumerate(points):
        if fp.status.converged and fp.branch == branch and any(abs(fp.alpha - a) < 1e-9 for a in alphas):
            out[i] = out[i] | derived_errors(fp, *replicate_points(fp, config, 0), values)
    return tuple(out)


def theory_at_omega(params: ModelParams, alphas: Sequence[float], boundaries: Sequence[str] = ("global",),
                    extra_curves: Sequence[tuple[str, str]] = (("semantic", "local"),),
                    settings: TheorySettings = TheorySettings()) -> TheoryAtOmega:
    """Theory at ``params.omega`` over the grid ``alphas``: for each proximal mode in ``boundaries``,
    ``phase_boundaries`` (alpha_c, alpha_l) and both branches (the boundaries' own sweeps where the numerics return
    them); then the ``(branch, prox)`` pairs of ``extra_curves`` not yet computed."""
    for p in (*boundaries, *(p for _, p in extra_curves)):
        if p not in PROX_MODES:
            raise ValueError(f"prox must be one of {PROX_MODES}, got {p!r}")
    from attnphase.numerics import eps_lin, phase_boundaries

    t0, c0 = time.perf_counter(), time.process_time()
    alpha_c: dict[str, float] = {}
    alpha_l: dict[str, float] = {}
    errors: dict[str, dict[str, float]] = {"alpha_c": {}, "alpha_l": {}}
    notes: dict[str, tuple[str, ...]] = {}
    curves: dict[tuple[str, str], BranchCurve] = {}
    for prox in boundaries:
        b = phase_boundaries(params, sorted(alphas), **settings.sweep_kwargs(prox, boundaries=True))
        alpha_c[prox], alpha_l[prox] = float(b.alpha_c), float(b.alpha_l)
        errors["alpha_c"][prox], errors["alpha_l"][prox] = float(b.alpha_c_err), float(b.alpha_l_err)
        notes[prox] = tuple(getattr(b, "notes", ()))
        for branch in BRANCHES:
            curves[(branch, prox)] = _curve(params, alphas, branch, prox, settings, getattr(b, branch, None))
    for branch, prox in extra_curves:
        if (branch, prox) not in curves:
            curves[(branch, prox)] = _curve(params, alphas, branch, prox, settings)
    return TheoryAtOmega(omega=params.omega, eps_lin=float(eps_lin(params)), alpha_c=alpha_c, alpha_l=alpha_l,
                         notes=notes, curves=curves, seconds=time.perf_counter() - t0,
                         cpu_seconds=time.process_time() - c0, err_alpha_c=errors["alpha_c"],
                         err_alpha_l=errors["alpha_l"])
