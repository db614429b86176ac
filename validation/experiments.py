"""One finite-d simulation end to end: :func:`run_simulation` draws the teacher and data, trains the attention
student from the chosen initialisation, fits the linear baseline on the same training set and measures everything
on one fresh test set.

Seeds: every random stream is a CPU ``torch.Generator`` seeded from ``(seed, stream)`` through
``numpy.random.SeedSequence`` (streams ``teacher``, ``train``, ``test``, ``init``, ``amp``), so that a seed gives
the same data on every device and in both dtypes, its semantic and positional runs share their data, and a smaller
alpha's training set is a prefix of a larger one's.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from attnphase.theory.params import ModelParams

from .data import check_dimension, check_seed, make_teacher, n_samples, sample
from .measure import overlaps, test_errors, training_objective
from .students import fit_linear, prepare
from .training import INITS, TrainConfig, check_choice, initial_Q, train

_STREAMS = {"teacher": 0, "train": 1, "test": 2, "init": 3, "amp": 4}

#: Keys of the ``attnphase simulate --json`` object, in order.
JSON_KEYS = ("d", "alpha", "omega", "init", "optimizer", "seed", "m", "theta", "q", "eps_g", "e_t", "eps_lin", "steps",
             "converged", "status", "grad_norm", "grad_tol", "seconds", "n", "n_test", "err_eps_g", "err_eps_lin",
             "device", "dtype")
#: The JSON's name of a field where the two differ: an error bar is ``err_<name>`` in every output.
_JSON_FIELD = {"err_eps_g": "eps_g_se", "err_eps_lin": "eps_lin_se"}
#: Keys ``simulate --json`` adds when a rank is above 1 (the rotation invariants, docs/model.md section 7).
RANK_JSON_KEYS = ("rank", "teacher_rank", "q0_eigenvalues", "theta_singular_values", "m_norms")

DTYPES = {"float64": torch.float64, "float32": torch.float32}


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"``: CUDA when available, else CPU; anything else is passed to ``torch.device``."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"device: cannot use {device!r} ({exc})") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {device!r}: CUDA is not available on this machine (use 'cpu' or 'auto')")
    return dev


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """``"float64"`` or ``"float32"`` (or the torch dtype itself)."""
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
    return DTYPES[dtype]


def generator(seed: int, stream: str) -> torch.Generator:
    """The CPU generator of one named random stream of ``seed`` (module docstring); ValueError for a seed that is no
    integer >= 0 or an unknown stream."""
    if stream not in _STREAMS:
        raise ValueError(f"stream must be one of {', '.join(_STREAMS)}, got {stream!r}")
    state = np.random.SeedSequence([check_seed(seed), _STREAMS[stream]]).generate_state(2, dtype=np.uint32)
    return torch.Generator(device="cpu").manual_seed(int(state[0]) << 32 | int(state[1]))


@dataclass(frozen=True)
class SimSpec:
    """One simulation: dimension ``d`` (>= 2), sample complexity ``alpha = n / d`` (> 0; ``n = round(alpha d)``),
    ``init`` (:data:`~attnphase.validation.training.INITS`), the ``seed`` of every random stream, the model, the
    optimiser and stopping rule, ``n_test`` fresh samples for ``eps_g`` and ``eps_lin``, the torch ``device``
    (``"auto"``, ``"cpu"``, ``"cuda"``, ...) and ``dtype``, and ``exact_teacher_norm``
    (:func:`attnphase.validation.data.make_teacher`)."""

    d: int
    alpha: float
    init: str
    seed: int = 0
    params: ModelParams = field(default_factory=ModelParams)
    train: TrainConfig = field(default_factory=TrainConfig)
    n_test: int = 10000
    device: str = "auto"
    dtype: str = "float64"
    exact_teacher_norm: bool = True

    def __post_init__(self) -> None:
        for name, kind in (("params", ModelParams), ("train", TrainConfig)):
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"{name} must be a {kind.__name__}, got {type(getattr(self, name)).__name__}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float, np.integer, np.floating)):
            raise ValueError(f"alpha (sample complexity n/d) must be a number, got {self.alpha!r}")
        object.__setattr__(self, "d", check_dimension(self.d))
        object.__setattr__(self, "seed", check_seed(self.seed))
        n_samples(self.alpha, self.d)  # (the device is checked where the run is: a worker may have CUDA)
        check_choice("init", self.init, INITS)
        # its name, as the result records it (a torch dtype is no JSON)
        object.__setattr__(self, "dtype", str(resolve_dtype(self.dtype)).removeprefix("torch."))
        if self.n_test < 2:
            raise ValueError(f"n_test must be >= 2, got {self.n_test}")


@dataclass(frozen=True)
class SimResult:
    """Measurements of one simulation (units of :mod:`attnphase.validation.measure`): :data:`JSON_KEYS`, and the
    invariants (:class:`attnphase.validation.measure.Overlaps`) when ``rank`` or ``teacher_rank`` is above 1.

    ``seconds``: wall time of the whole simulation, ``cpu_seconds`` its CPU time (every torch thread); ``status``,
    ``grad_norm`` and ``grad_tol`` say how training stopped (:class:`attnphase.validation.training.TrainResult`).
    """

    d: int
    alpha: float
    omega: float
    init: str
    optimizer: str
    seed: int
    m: float
    theta: float
    q: float
    eps_g: float
    e_t: float
    eps_lin: float
    steps: int
    converged: bool
    seconds: float
    eps_g_se: float
    eps_lin_se: float
    status: str
    grad_norm: float
    train_seconds: float
    n: int
    n_test: int
    device: str
    dtype: str
    rank: int = 1
    teacher_rank: int = 1
    m_norms: tuple[float, ...] = ()
    q0_eigenvalues: tuple[float, ...] = ()
    theta_singular_values: tuple[float, ...] = ()
    grad_tol: float = float("nan")
    cpu_seconds: float = float("nan")

    @property
    def m_norm(self) -> float:
        """``(sum_l |m_l|^2)^{1/2}``."""
        return float(np.sqrt(np.sum(np.square(self.m_norms))))

    def to_json(self) -> dict[str, Any]:
        """The run's own numbers as ``simulate --json`` gives them: :data:`JSON_KEYS`, and :data:`RANK_JSON_KEYS` at a
        rank above 1.  The model is the :class:`SimSpec`'s (``spec.params.to_dict()``), which the command adds beside
        them (sigma, lam, L, A, P, rho0, the rank, the loss) with its ``error_note``."""
        full = asdict(self)
        keys = JSON_KEYS + (RANK_JSON_KEYS if max(self.rank, self.teacher_rank) > 1 else ())
        return {k: full[_JSON_FIELD.get(k, k)] for k in keys}

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready."""
        return asdict(self)


def run_simulation(spec: SimSpec) -> SimResult:
    """Draw data, train from ``spec.init``, fit the linear baseline, measure (module docstring)."""
    t0, c0 = time.perf_counter(), time.process_time()
    device, dtype = resolve_device(spec.device), resolve_dtype(spec.dtype)
    p = spec.params
    teacher = make_teacher(p, spec.d, generator(spec.seed, "teacher"), device=device, dtype=dtype,
                           exact_norm=spec.exact_teacher_norm)
    n = n_samples(spec.alpha, spec.d)
    g = prepare(teacher, sample(teacher, n, generator(spec.seed, "train")))
    Q0 = initial_Q(spec.init, teacher, p.r, generator(spec.seed, "init"), spec.train.random_scale)
    res = train(Q0, g, p.lam, spec.train)
    errs = test_errors(res.Q, fit_linear(g), teacher, generator(spec.seed, "test"), spec.n_test)
    ov = overlaps(res.Q, teacher)
    e_t = training_objective(res.Q, g, p.lam)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return SimResult(
        d=spec.d, alpha=float(spec.alpha), omega=p.omega, init=spec.init, optimizer=spec.train.optimizer,
        seed=int(spec.seed), m=ov.m, theta=ov.theta, q=ov.q, eps_g=errs.eps_g, e_t=e_t,
        eps_lin=errs.eps_lin, steps=res.steps, converged=res.converged,
        seconds=time.perf_counter() - t0, eps_g_se=errs.eps_g_se, eps_lin_se=errs.eps_lin_se,
        status=res.status, grad_norm=res.grad_norm, train_seconds=res.seconds, n=n,
        n_test=errs.n_test, device=str(device), dtype=spec.dtype, rank=p.r, teacher_rank=p.r_star,
        m_norms=ov.m_norms, q0_eigenvalues=ov.q0_eigenvalues, theta_singular_values=ov.theta_singular_values,
        grad_tol=res.grad_tol, cpu_seconds=time.process_time() - c0,
    )
