"""A generic fixed-point solver for x = F(x): Anderson acceleration, quasi-Newton, a status always.

Knows nothing of the model: the map is any object with the :class:`FixedPointMap` methods
(:class:`attnphase.numerics.se.se_map.SEMap` is the state evolution's).  Converged when

    residual(x) = max_i |F(x)_i - x_i| / max(1, |x_i|)  <=  tol

at an *exact* evaluation (a candidate found with the map's cheaper approximate evaluations is re-evaluated
exactly first); damping: ``x_new = (1 - damping) F(x) + damping x``.  Strategy, consistent finite differences
and the moved Jacobian (:func:`moved_jacobian`): docs/method.md section 4 and section 11.
"""

from __future__ import annotations

from dataclasses import dataclass
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable, Protocol

import numpy as np

from attnphase.numerics.config import SolverConfig

#: Backtracking of a quasi-Newton step stops below this fraction of the step (then the Jacobian is refreshed).
MIN_NEWTON_STEP = 0.05

#: Relative step of the forward-difference Jacobian (large enough to average over the rule's basin switches).
FD_STEP = 1e-4

#: The step with ``consistent_differences``: the columns are polished from the base point's minima, so no node
#: switches basin and the step only has to stay above round-off; FD_STEP's truncation error turns the matrix map's
#: soft direction into Newton steps far off it (docs/method.md section 11, "A soft direction";
#: ``studies/rank2_soft_mode.py``).
FD_STEP_CONSISTENT = 1e-5

#: A candidate fixed point of the approximate map that the exact map rejects with a residual above this is a
#: point of the approximate map alone: the map is told to evaluate exactly (docs/method.md section 4).
DISTRUST_RESIDUAL = 1e-2

#: The finite-difference step is halved at most this many times to stay in the map's domain (2^-40 FD_STEP ~ 1e-16).
MAX_FD_HALVINGS = 40

#: Anderson is stalled when its best residual has not halved over this many steps.
STALL_WINDOW = 12


def scaled_residual(x: np.ndarray, fx: np.ndarray) -> float:
    """max_i |F(x)_i - x_i| / max(1, |x_i|)."""
    return float(np.max(np.abs(fx - x) / np.maximum(1.0, np.abs(x))))


@dataclass(frozen=True, eq=False)
class Evaluation:
    """One evaluation of the map: the point x (a copy), F(x), :func:`scaled_residual`, whether F(x) is a function
    of x alone (``exact``), and whatever the map attaches (``data``; the SE map's :class:`SEStep`)."""

    x: np.ndarray
    fx: np.ndarray
    residual: float
    exact: bool
    data: Any = None


@dataclass(frozen=True, eq=False)
class FixedPointResult:
    """How a solve ended: the accepted evaluation, else the best exact one (or None); whether its residual is
    within tol; the evaluations spent (finite differences included); a message; the point evaluated farthest from
    the origin, max_i |x_i| largest (how far the iterates went: a run that diverged is told by it, its best point
    being near the start)."""

    evaluation: Evaluation | None
    converged: bool
    evaluations: int
    message: str
    farthest: np.ndarray | None = None

    @property
    def residual(self) -> float:
        return self.evaluation.residual if self.evaluation is not None else float("nan")


def moved_jacobian(J0: np.ndarray, B0: np.ndarray, x0: np.ndarray, B1: np.ndarray, x1: np.ndarray) -> np.ndarray | None:
    """J1 = B1^T diag(D1 / D0) B0 J0 B0^T B1 - B1^T D1 (I - B0 B0^T) B1: the Jacobian J0 (k x k) of
    G = B^T D (F - I) on the orthonormal basis B0 (n x k) at x0 (n,) moved to the basis B1 at x1
    (D = 1 / max(1, |x|); F' = 0 assumed outside the span of B0); None where the dimensions differ."""
    if B1.shape[0] != B0.shape[0]:
        return None
    ratio = np.maximum(1.0, np.abs(x0)) / np.maximum(1.0, np.abs(x1))  # D1 / D0
    off = B1 - B0 @ (B0.T @ B1)  # the part of the new basis the old one lacks: F' = 0 assumed there
    carried = B1.T @ (ratio[:, None] * (B0 @ J0 @ (B0.T @ B1)))
    return carried - B1.T @ (off / np.maximum(1.0, np.abs(x1))[:, None])


class FixedPointMap(Protocol):
    """What the solver needs from a map x -> F(x)."""

    def evaluate(self, x: np.ndarray, exact: bool = False) -> Evaluation | None:
        """F(x), or None where x (or F(x)) leaves the admissible region."""

    def admissible(self, x: np.ndarray) -> bool:
        """Whether x lies in the domain of the map."""

    def subspace(self, x: np.ndarray) -> np.ndarray:
        """Orthonormal basis (columns) of the directions quasi-Newton may move x in."""

    def jacobian_seed(self, n: int) -> np.ndarray | None:
        """A Jacobian (n x n, on :meth:`subspace`) known from a previous solve, or None."""

    def keep_jacobian(self, J: np.ndarray) -> None:
        """Told of every new quasi-Newton Jacobian (for the next solve)."""

    def distrust_approximation(self) -> None:
        """Told that an approximate evaluation converged where the exact map does not: evaluate exactly from now."""

    def polishing(self) -> AbstractContextManager[None]:
        """Within it, every inexact evaluation refines the last exact one's (``consistent_differences`` only)."""


class FixedPointSolver:
    """Solves x = F(x) for one map with the settings of ``config``.  ``consistent_differences``: the
    finite-difference Jacobian from an exact base point, its columns polished from it.  Local to one solve."""

    def __init__(self, fmap: FixedPointMap, config: SolverConfig, consistent_differences: bool = False):
        self.fmap, self.cfg = fmap, config
        self.consistent_differences = consistent_differences
        self.evaluations = 0
        self.best: Evaluation | None = None
        self.farthest: np.ndarray | None = None

    def _eval(self, x: np.ndarray, exact: bool = False) -> Evaluation | None:
        ev = self.fmap.evaluate(x, exact)
        self.evaluations += 1
        if self.farthest is None or np.max(np.abs(x)) > np.max(np.abs(self.farthest)):
            self.farthest = np.array(x, copy=True)
        if ev is not None and ev.exact and (self.best is None or ev.residual < self.best.residual):
            self.best = ev
        return ev

    def solve(self, x: np.ndarray, warm: bool = False) -> FixedPointResult:
        """Find the fixed point from x: Anderson, then quasi-Newton from the best point (warm: quasi-Newton first)."""
        cfg = self.cfg
        if warm:
            if (done := self._newton(x, min(cfg.max_iter, cfg.anderson_budget))) is not None:
                return done
            if not cfg.warm_fallback:
                return self._failure()
            x = self.best.x if self.best is not None else x
        if (done := self._anderson(x, budget=min(cfg.max_iter - self.evaluations, cfg.anderson_budget))) is not None:
            return done
        remaining = cfg.max_iter - self.evaluations
        if self.best is not None and remaining > 0 and (done := self._newton(self.best.x, remaining)) is not None:
            return done
        return self._failure()

    def _failure(self) -> FixedPointResult:
        """The best exact evaluation, reported as not converged."""
        message = ("the first step left the admissible region" if self.best is None else
                   f"not converged after {self.evaluations} evaluations (best residual {self.best.residual:.2e})")
        return FixedPointResult(self.best, False, self.evaluations, message, self.farthest)

    def _verify(self, ev: Evaluation) -> FixedPointResult | Evaluation | None:
        """The converged result of a candidate verified by an exact evaluation, else that exact evaluation to go
        on from, or None where it left the admissible region."""
        if not ev.exact:
            if (exact := self._eval(ev.x, exact=True)) is None:
                return None
            if exact.residual > DISTRUST_RESIDUAL:
                self.fmap.distrust_approximation()
            ev = exact
        if ev.residual <= self.cfg.tol:
            return FixedPointResult(ev, True, self.evaluations, "converged", self.farthest)
        return ev

    def _anderson(self, x: np.ndarray, budget: int) -> FixedPointResult | None:
        """Anderson-accelerated (type II) damped iteration; None when stalled or out of budget."""
        cfg, admissible = self.cfg, self.fmap.admissible
        pairs: list[tuple[np.ndarray, np.ndarray]] = []  # the last (x, F(x) - x), at most anderson + 1
        last_good: np.ndarray | None = None
        history: list[float] = []
        start = self.evaluations
        while self.evaluations - start < budget:
            ev = self._eval(x)
            if ev is None:
                if last_good is None:
                    return None
                pairs.clear()
                x = 0.5 * (x + last_good)
                continue
            fx = ev.fx
            last_good = x
            history.append(ev.residual)
            if ev.residual <= cfg.tol:
                exact = self._verify(ev)
                if not isinstance(exact, Evaluation):
                    return exact
                # go on from the exact evaluation; the history belongs to the approximate map
                fx = exact.fx
                history[-1] = exact.residual
                pairs.clear()
            if len(history) > STALL_WINDOW and min(history[-STALL_WINDOW:]) > 0.5 * min(history[:-STALL_WINDOW]):
                return None
            f = fx - x
            x_new = (1.0 - cfg.damping) * fx + cfg.damping * x
            if cfg.anderson > 0:
                pairs = pairs[-cfg.anderson:] + [(x.copy(), f.copy())]
                if len(pairs) >= 2:
                    dX, dR = (np.diff(np.array(v), axis=0).T for v in zip(*pairs))
                    gamma, *_ = np.linalg.lstsq(dR, f, rcond=1e-12)
                    beta = 1.0 - cfg.damping
                    x_aa = x + beta * f - (dX + beta * dR) @ gamma
                    if admissible(x_aa):
                        x_new = x_aa
                    else:
                        pairs.clear()
            x = x_new if admissible(x_new) else 0.5 * (x + fx)
        return None

    def _newton(self, x: np.ndarray, budget: int) -> FixedPointResult | None:
        """Quasi-Newton on G(y) = B^T D (F(x + B y) - x - B y), B spanning :meth:`FixedPointMap.subspace`,
        D = diag(1 / max(1, |x0|)), with backtracking: a forward-difference (or seeded) Jacobian, Broyden
        updates, re-taken when a step fails; None when a fresh Jacobian's step fails too."""
        cfg, fmap = self.cfg, self.fmap
        start = self.evaluations
        if (ev := self._eval(x)) is None:
            return None
        B = fmap.subspace(x)
        D = 1.0 / np.maximum(1.0, np.abs(x))

        def resid(xv: np.ndarray, fv: np.ndarray) -> np.ndarray:
            return B.T @ (D * (fv - xv))

        G = resid(x, ev.fx)
        J = fmap.jacobian_seed(B.shape[1])
        fresh = False
        while self.evaluations - start < budget:
            if ev.residual <= cfg.tol:
                exact = self._verify(ev)
                if not isinstance(exact, Evaluation):
                    return exact
                ev = exact  # go on from the exact residual
                G = resid(x, ev.fx)
            if J is None:
                J = self._fd_jacobian(x, G, B, resid)
                fresh = True
                if J is None:
                    return None
                fmap.keep_jacobian(J)
            try:
                dy = np.linalg.solve(J, -G)
            except np.linalg.LinAlgError:
                dy = np.linalg.lstsq(J, -G, rcond=None)[0]
            t = 1.0
            g0 = float(np.linalg.norm(G))
            while t > MIN_NEWTON_STEP and self.evaluations - start < budget:
                xt = x + t * (B @ dy)
                if fmap.admissible(xt) and (et := self._eval(xt)) is not None:
                    Gt = resid(xt, et.fx)
                    if np.linalg.norm(Gt) < (1 - 1e-4 * t) * g0:
                        step = t * dy
                        J = J + np.outer(Gt - G - J @ step, step) / float(step @ step)
                        x, ev, G = xt, et, Gt
                        fresh = False
                        fmap.keep_jacobian(J)
                        break
                t *= 0.5
            else:  # no step accepted
                if fresh:
                    return None
                J = None  # retry with a fresh finite-difference Jacobian
        return None

    def _fd_jacobian(
        self, x: np.ndarray, G: np.ndarray, B: np.ndarray, resid: Callable[[np.ndarray, np.ndarray], np.ndarray]
    ) -> np.ndarray | None:
        """Forward-difference Jacobian of ``resid`` along the columns of B (backward where forward fails), step
        FD_STEP * max(1, |x_j|) halved while both sides leave the map's domain (None where none stays inside or the
        map fails); with ``consistent_differences`` an exact base point, the columns polished from it, and the step
        FD_STEP_CONSISTENT."""
        polish: AbstractContextManager[Any] = nullcontext()
        # a full search at the base point: its minima are what the columns polish
        if self.consistent_differences and (base := self._eval(x, exact=True)) is not None:
            G, polish = resid(x, base.fx), self.fmap.polishing()
        step = FD_STEP_CONSISTENT if self.consistent_differences else FD_STEP
        with polish:
            n = B.shape[1]
            J = np.empty((n, n))
            for j in range(n):
                h = step * max(1.0, abs(float(B[:, j] @ x)))
                for _ in range(MAX_FD_HALVINGS + 1):
                    inside = [s * h for s in (1.0, -1.0) if self.fmap.admissible(x + s * h * B[:, j])]
                    if inside:
                        break
                    h *= 0.5
                for hj in inside:
                    xj = x + hj * B[:, j]
                    if (ej := self._eval(xj)) is not None:
                        break
                else:
                    return None
                J[:, j] = (resid(xj, ej.fx) - G) / hj
            return J
