"""The Hessian check (studies/risk_hessian.py, the helper of the GD-end studies): Lanczos against the full Hessian,
a saddle found."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from attnphase.theory.params import ModelParams  # noqa: E402
from attnphase.validation.data import make_teacher, sample  # noqa: E402
from attnphase.validation.experiments import generator  # noqa: E402
from attnphase.validation.students import prepare, risk  # noqa: E402
from attnphase.validation.training import TrainConfig, initial_Q, train  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "studies"))  # the studies' helper module
from risk_hessian import full_hessian_min, lowest_hessian_eigs  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _problem(d=40, alpha=1.5, seed=0):
    p = ModelParams()
    t = make_teacher(p, d, generator(seed, "teacher"))
    return p, t, prepare(t, sample(t, int(alpha * d), generator(seed, "train")))


def test_lanczos_gives_the_full_hessians_lowest_eigenvalues_at_a_gd_end():
    p, t, g = _problem()
    res = train(initial_Q("positional", t, 1, generator(0, "init")), g, p.lam, TrainConfig(grad_tol=1e-8))
    assert res.converged
    e = lowest_hessian_eigs(res.Q, g, p.lam, k=2)
    assert e.values[0] == pytest.approx(full_hessian_min(res.Q, g, p.lam), abs=1e-9)
    assert e.values[0] <= e.values[1] and e.products > 0 and e.vectors.shape == (40, 2)
    # the eigenvector satisfies H v = lambda v: R's second difference along it is lambda
    v = torch.as_tensor(e.vectors[:, 0]).reshape(res.Q.shape)
    h = 1e-4
    with torch.no_grad():
        second = (risk(res.Q + h * v, g, p.lam) - 2 * risk(res.Q, g, p.lam) + risk(res.Q - h * v, g, p.lam)) / h**2
    assert float(second) == pytest.approx(e.values[0], rel=1e-3, abs=1e-6)


def test_the_critical_point_q_zero_is_a_saddle():
    p, t, g = _problem()
    e = lowest_hessian_eigs(torch.zeros(40, 1, dtype=torch.float64), g, p.lam, k=1)
    assert e.values[0] < 0
    assert e.values[0] == pytest.approx(full_hessian_min(torch.zeros(40, 1, dtype=torch.float64), g, p.lam), abs=1e-9)


def test_k_out_of_range_is_refused():
    p, t, g = _problem(d=10)
    with pytest.raises(ValueError, match="k must lie"):
        lowest_hessian_eigs(torch.zeros(10, 1, dtype=torch.float64), g, p.lam, k=10)
