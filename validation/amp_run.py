"""One finite-d AMP run end to end (``attnphase simulate --algorithm amp``): the data of ``simulate``, GAMP
(validation/amp.py) and the Bayes-optimal state evolution's prediction at the same alpha.  Seeds: the streams
``teacher``, ``train`` (the training set of a gradient-descent run of the same seed) and ``amp`` (the signs of the
revealed fields, then AMP's random start) of :func:`attnphase.validation.experiments.generator`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from attnphase.numerics.se.bayes import BayesModel, solve_bayes
from attnphase.theory.params import ModelParams

from .amp import AmpConfig, gamp, revealed_fields
from .amp_spectral import spectral_start
from .data import check_dimension, check_seed, make_teacher, n_samples, sample
from .experiments import generator, resolve_device, resolve_dtype

#: Keys of the ``attnphase simulate --algorithm amp --json`` object, in order.
AMP_JSON_KEYS = (
    "algorithm", "d", "n", "alpha", "seed", "theta", "q", "iterations", "converged", "status", "change", "tol",
    "max_iter", "damping", "adaptive", "step", "halvings", "init_scale", "se_q0", "se_branch", "theta_path", "q_path",
    "seconds",
)


def amp_unsupported(params: ModelParams) -> str:
    """Why AMP for the Bayes-optimal channel does not run on ``params`` ("" where it does): rank r = r* = 1,
    omega < 1 (the revealed fields), independent tokens."""
    if max(params.r, params.r_star) != 1:
        return "AMP for the Bayes-optimal channel runs at rank r = r* = 1"
    if not params.omega < 1.0:
        return f"omega = {params.omega}: the fields are revealed only for omega < 1"
    if params.correlated_tokens:
        return "AMP for the Bayes-optimal channel runs with independent tokens"
    return ""


@dataclass(frozen=True)
class AmpSpec:
    """One AMP run: dimension d, alpha = n / d (n = round(alpha d)), seed, the model (sigma_l, rho0, omega < 1
    for the revealed fields), the AMP settings, the torch device and dtype."""

    d: int
    alpha: float
    seed: int = 0
    params: ModelParams = field(default_factory=ModelParams)
    amp: AmpConfig = field(default_factory=AmpConfig)
    device: str = "auto"
    dtype: str = "float64"

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", check_dimension(self.d))
        object.__setattr__(self, "seed", check_seed(self.seed))
        n_samples(self.alpha, self.d)
        resolve_dtype(self.dtype)
        if why := amp_unsupported(self.params):
            raise ValueError(why)


@dataclass(frozen=True)
class AmpRunResult:
    """What :func:`run_amp` measured (:data:`AMP_JSON_KEYS`): :class:`~attnphase.validation.amp.AmpResult`'s
    overlaps (theta's sign: the side of +-Q* AMP landed on), paths and stop, the settings, and se_q0, the state
    evolution's q0 = m0 at alpha = n / d on the branch AMP follows (se_branch); seconds: wall time."""

    algorithm: str
    d: int
    n: int
    alpha: float
    seed: int
    theta: float
    q: float
    iterations: int
    converged: bool
    status: str
    change: float
    tol: float
    max_iter: int
    damping: float
    adaptive: bool
    step: float
    halvings: int
    init_scale: float
    se_q0: float
    se_branch: str
    theta_path: tuple[float, ...]
    q_path: tuple[float, ...]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        """The run's own numbers (its fields, :data:`AMP_JSON_KEYS` in order); the model is the :class:`AmpSpec`'s
        (``spec.params.to_dict()``), which ``simulate --algorithm amp --json`` adds beside them."""
        return asdict(self)


def run_amp(spec: AmpSpec) -> AmpRunResult:
    """Draw the teacher and the training set of ``spec.seed``, reveal the fields, run GAMP, predict (module doc)."""
    t0 = time.perf_counter()
    device, dtype = resolve_device(spec.device), resolve_dtype(spec.dtype)
    p = spec.params
    teacher = make_teacher(p, spec.d, generator(spec.seed, "teacher"), device=device, dtype=dtype)
    n = n_samples(spec.alpha, spec.d)
    data = sample(teacher, n, generator(spec.seed, "train"))
    g = generator(spec.seed, "amp")
    Y = revealed_fields(data.hstar, g)
    start = spectral_start(data.X, Y, p.rho0, spec.amp.init_scale) if spec.amp.start == "spectral" else None
    res = gamp(data.X, Y, p.rho0, teacher.Qstar, g, spec.amp, start=start)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    branch = "uninformative"  # where the state evolution from q0 = 0+ ends, as AMP from a small start
    se = solve_bayes(BayesModel.of(p), n / spec.d, branch)
    return AmpRunResult(
        algorithm="amp", d=spec.d, n=n, alpha=float(spec.alpha), seed=int(spec.seed), theta=res.theta, q=res.q,
        iterations=res.iterations, converged=res.converged, status=res.status, change=res.change,
        tol=spec.amp.tol, max_iter=int(spec.amp.max_iter), damping=spec.amp.damping, adaptive=spec.amp.adaptive,
        step=res.step, halvings=res.halvings, init_scale=spec.amp.init_scale, se_q0=se.q0, se_branch=branch,
        theta_path=res.theta_path, q_path=res.q_path, seconds=seconds,
    )


__all__ = ["AMP_JSON_KEYS", "AmpSpec", "AmpRunResult", "run_amp"]
