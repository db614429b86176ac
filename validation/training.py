"""Training the attention student on the empirical risk of docs/model.md section 1 (docs/validation.md, "Choices
worth knowing"), the penalty written out (never an optimiser's weight decay)::

    R(Q) = sum_mu (1 / 2d) |y^mu - f(X^mu)|^2 + (lambda / 2) |Q|_F^2 .

Optimisers: ``"gd"``, full-batch gradient descent ``Q <- Q - eta grad R`` with Armijo backtracking (a step is
accepted only if ``R(Q - eta g) <= R(Q) - c eta |g|^2``, else ``eta`` halves; ``eta`` grows by ``grow`` after each
accepted step); ``"adam"``, ``torch.optim.Adam`` with its rate halved after ``adam_patience`` steps without
improvement, a cross-check (its momentum can carry it into another basin: compare endpoints, not paths).
Stopping: ``|grad_Q R|_F / sqrt(d)`` (the gradient of ``e_t = R / d`` in ``u = Q / sqrt(d)``) ``<= grad_tol``
(``status = "converged"``, the only status that sets ``converged``), else the budget ``max_steps`` runs out
(``"budget"``), the line search finds no decrease (``"stalled"``) or the risk or its gradient is not finite (NaN or
inf, ``"diverged"``: an extreme model value; the run stops at the last finite Q).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import torch

from .data import Teacher
from .students import GramData, fields, fields_gradient, fields_risk, risk, transposed_tokens

INITS = ("semantic", "positional", "random")
OPTIMIZERS = ("gd", "adam")

#: The default tolerance on ``|grad_Q R|_F / sqrt(d)`` per dtype (in float32 the round-off floor of the gradient
#: lies near 1e-6; the risk is evaluated in float64, :func:`_in_float64`).
GRAD_TOL = {torch.float64: 3e-7, torch.float32: 1e-5}


def check_choice(what: str, value: str, allowed: tuple[str, ...]) -> None:
    """Validate a name among ``allowed`` (``what``: the option, for the message): ``"init"`` among :data:`INITS`,
    ``"optimizer"`` among :data:`OPTIMIZERS`."""
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}; got {value!r}")


@dataclass(frozen=True)
class TrainConfig:
    """How to minimise ``R(Q)``.

    Attributes:
        optimizer: ``"gd"`` (Armijo gradient descent) or ``"adam"``.
        grad_tol: stop when ``|grad R|_F / sqrt(d) <= grad_tol``; ``None``: :data:`GRAD_TOL` of the dtype.
        max_steps: step budget (accepted updates; ``status = "budget"`` when reached).
        step0, grow, armijo_c, min_step: GD's initial step ``eta``, its growth after an accepted step, the
            sufficient-decrease constant ``c``, the ``eta`` below which the line search stops as ``"stalled"``.
        adam_lr, adam_patience, adam_min_lr: Adam's initial rate (Q's entries are O(1)), the steps without
            improvement of R before it halves, its floor; adam_betas: (0.9, 0.99), memory ~100 steps.
        random_scale: standard deviation of the random initialisation's entries.
    """

    optimizer: str = "gd"
    grad_tol: float | None = None
    max_steps: int = 20000
    step0: float = 1.0
    grow: float = 1.5
    armijo_c: float = 1e-4
    min_step: float = 1e-10
    adam_lr: float = 0.02
    adam_patience: int = 50
    adam_betas: tuple[float, float] = (0.9, 0.99)
    adam_min_lr: float = 1e-5
    random_scale: float = 0.1

    def __post_init__(self) -> None:
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        if self.grad_tol is not None and not self.grad_tol > 0:
            raise ValueError(f"grad_tol must be > 0, got {self.grad_tol}")
        if isinstance(self.max_steps, bool) or int(self.max_steps) != self.max_steps or self.max_steps < 0:
            raise ValueError(f"max_steps must be an integer >= 0, got {self.max_steps!r}")
        for name in ("step0", "adam_lr", "adam_min_lr", "min_step", "random_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not self.grow >= 1:
            raise ValueError(f"grow must be >= 1, got {self.grow}")
        if not 0 < self.armijo_c < 1:
            raise ValueError(f"armijo_c must lie in (0, 1), got {self.armijo_c}")
        if not self.min_step < self.step0:
            raise ValueError(f"min_step ({self.min_step}) must lie below step0 ({self.step0})")
        if not self.adam_min_lr <= self.adam_lr:
            raise ValueError(f"adam_min_lr ({self.adam_min_lr}) must not exceed adam_lr ({self.adam_lr})")
        if isinstance(self.adam_patience, bool) or int(self.adam_patience) != self.adam_patience \
                or self.adam_patience < 1:
            raise ValueError(f"adam_patience must be an integer >= 1, got {self.adam_patience!r}")
        if len(self.adam_betas) != 2 or not all(0 <= b < 1 for b in self.adam_betas):
            raise ValueError(f"adam_betas must be two numbers in [0, 1), got {self.adam_betas!r}")

    def tolerance(self, dtype: torch.dtype) -> float:
        """The gradient tolerance actually used for ``dtype``."""
        return float(self.grad_tol) if self.grad_tol is not None else GRAD_TOL.get(dtype, GRAD_TOL[torch.float32])

    def for_dtype(self, dtype: torch.dtype) -> "TrainConfig":
        """This config with ``grad_tol`` the tolerance used for ``dtype`` (what a plan records)."""
        return replace(self, grad_tol=self.tolerance(dtype))


@dataclass(frozen=True)
class TrainResult:
    """Outcome of one minimisation: the final weights ``Q`` ``(d, r)`` (detached), the accepted ``steps``,
    ``status`` (module doc; ``converged``: it is ``"converged"``), the final ``grad_norm`` ``|grad R|_F / sqrt(d)``
    and its tolerance ``grad_tol``, the final ``objective`` ``R(Q)`` and the loop's wall time."""

    Q: torch.Tensor
    steps: int
    converged: bool
    status: str
    grad_norm: float
    objective: float
    seconds: float
    grad_tol: float = math.nan


def initial_Q(init: str, teacher: Teacher, r: int, generator: torch.Generator, random_scale: float = 0.1) -> torch.Tensor:
    """Initial weights ``Q`` (``(d, r)``, teacher's device and dtype): ``"semantic"`` the first ``min(r, r*)`` columns
    of ``Q*``; ``"positional"`` first column ``sqrt(rho0 d) p_1 / |p_1|`` (``q = rho0``, as the semantic start);
    ``"random"`` ``N(0, random_scale^2)`` entries, as the other columns of every start."""
    check_choice("init", init, INITS)
    if isinstance(r, bool) or int(r) != r or r < 1:
        raise ValueError(f"r (the student's rank) must be an integer >= 1, got {r!r}")
    d = teacher.d
    noise = random_scale * torch.randn((d, r), generator=generator, device=generator.device, dtype=torch.float64)
    Q = noise.to(device=teacher.device, dtype=teacher.dtype)
    if init == "semantic":
        k = min(r, teacher.r_star)
        Q[:, :k] = teacher.Qstar[:, :k]
    elif init == "positional":
        p1 = teacher.positions[0]
        norm = torch.linalg.vector_norm(p1)
        if norm == 0:
            raise ValueError("positional init needs p_1 != 0 (P[0, 0] > 0)")
        Q[:, 0] = math.sqrt(teacher.params.rho0 * d) * p1 / norm
    return Q


def _value_and_grad(h: torch.Tensor, Q: torch.Tensor, g: GramData, lam: float,
                    Xt: torch.Tensor) -> tuple[float, torch.Tensor]:
    """``R(Q)`` and ``grad_Q R`` from the fields ``h = h(Q)``: ``dR/dh`` by autograd on the ``(n, L, r)`` fields (in
    their dtype, with ``g``'s Grams), then the chain rule through them
    (:func:`~attnphase.validation.students.fields_gradient`, in the tokens' dtype) plus ``lambda Q``."""
    hv = h.detach().requires_grad_(True)
    R = fields_risk(hv, Q.to(h.dtype), g, lam)
    (dh,) = torch.autograd.grad(R, hv)
    return float(R.detach()), fields_gradient(dh.to(Xt.dtype), g, Xt) + lam * Q


def _in_float64(g: GramData) -> GramData:
    """``g`` with its ``(n, L, L)`` Grams and targets in float64 (the tokens as they are): what the risk and its
    line search are evaluated with.  In float32 the Armijo test cannot see a decrease below the risk's round-off:
    gradient descent then crawled at |grad| ~ 1.2e-5 (alpha = 2) to 2e-5 (alpha = 4), above float32's default
    tolerance 1e-5 (``simulate --d 200 --alpha 4 --init random --dtype float32 --grad-tol 1e-7 --max-steps 3000``)."""
    f64 = torch.float64
    return replace(g, T=g.T.to(f64), Gxx=g.Gxx.to(f64), Gxp=g.Gxp.to(f64), Pd=g.Pd.to(f64))


#: GD carries the fields h(Q) along its steps (h(Q - eta G) = h(Q) - eta h(G)); they are computed afresh from Q
#: every this many steps, so that round-off does not accumulate.
FIELDS_REFRESH = 64


def _gd(Q0: torch.Tensor, g: GramData, lam: float, cfg: TrainConfig, tol: float) -> TrainResult:
    """Armijo gradient descent (module doc).  The fields are linear in Q, so a step's trial points cost no product
    with the tokens: h(Q - eta G) = h(Q) - eta h(G), one product h(G) per step, one more for the gradient."""
    d = g.d
    t0 = time.perf_counter()
    Xt = transposed_tokens(g)
    g64 = _in_float64(g)  # the fields and the risk in float64; the products with the tokens in their dtype
    Q = Q0.detach().clone()
    h = fields(Q, g.X, g.positions).to(torch.float64)
    R, G = _value_and_grad(h, Q, g64, lam, Xt)
    eta, steps, status = cfg.step0, 0, "budget"
    while True:
        gn2 = float((G * G).sum())
        gnorm = math.sqrt(gn2 / d)
        if not (math.isfinite(R) and math.isfinite(gn2)):
            status = "diverged"
            break
        if gnorm <= tol or steps >= cfg.max_steps:
            break
        hG = fields(G, g.X, g.positions).to(torch.float64)
        while True:  # Armijo backtracking on the full-batch objective
            trial, h_trial = Q - eta * G, h - eta * hG
            with torch.no_grad():
                R_trial = float(fields_risk(h_trial, trial.to(torch.float64), g64, lam))
            if R_trial <= R - cfg.armijo_c * eta * gn2:
                break
            eta *= 0.5
            if eta < cfg.min_step:
                status = "stalled"
                break
        if status == "stalled":
            break
        Q, h = trial, h_trial
        steps += 1
        if steps % FIELDS_REFRESH == 0:
            h = fields(Q, g.X, g.positions).to(torch.float64)
        R, G = _value_and_grad(h, Q, g64, lam, Xt)
        eta *= cfg.grow
    status = "converged" if gnorm <= tol else status
    return TrainResult(Q, steps, status == "converged", status, gnorm, R, time.perf_counter() - t0, tol)


def _adam(Q0: torch.Tensor, g: GramData, lam: float, cfg: TrainConfig, tol: float) -> TrainResult:
    d = g.d
    t0 = time.perf_counter()
    Q = Q0.detach().clone().requires_grad_(True)
    opt = torch.optim.Adam([Q], lr=cfg.adam_lr, betas=cfg.adam_betas)
    best, since, steps = math.inf, 0, 0
    while True:
        opt.zero_grad(set_to_none=True)
        R_t = risk(Q, g, lam)
        R_t.backward()
        R = float(R_t.detach())
        gnorm = math.sqrt(float((Q.grad * Q.grad).sum()) / d)
        if not (math.isfinite(R) and math.isfinite(gnorm)):
            break
        if gnorm <= tol or steps >= cfg.max_steps:
            break
        if R < best:
            best, since = R, 0
        else:
            since += 1
            if since >= cfg.adam_patience:
                for group in opt.param_groups:
                    group["lr"] = max(0.5 * group["lr"], cfg.adam_min_lr)
                since = 0
        opt.step()
        steps += 1
    status = "converged" if gnorm <= tol else "budget" if math.isfinite(R) and math.isfinite(gnorm) else "diverged"
    return TrainResult(Q.detach(), steps, status == "converged", status, gnorm, R, time.perf_counter() - t0, tol)


def train(Q0: torch.Tensor, g: GramData, lam: float, cfg: TrainConfig = TrainConfig()) -> TrainResult:
    """Minimise ``R(Q)`` on the prepared training set ``g`` from ``Q0`` (``(d, r)``)."""
    if Q0.ndim != 2 or Q0.shape[0] != g.d:
        raise ValueError(f"Q0 must have shape (d, r) = ({g.d}, r), got {tuple(Q0.shape)}")
    if isinstance(lam, bool) or not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam (the ridge penalty) must be a finite number >= 0, got {lam!r}")
    return (_gd if cfg.optimizer == "gd" else _adam)(Q0, g, lam, cfg, cfg.tolerance(Q0.dtype))
