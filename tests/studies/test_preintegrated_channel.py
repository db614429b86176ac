"""Pre-integration: the line integral across a jump of the global proximal map, cell edges searched, the
jump located by a root-find and each piece integrated by Gauss-Legendre, agrees with a brute-force
midpoint rule of 2^15 nodes on the same line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import ndtri

from attnphase.numerics.quadrature.rules import QuadratureRule
from attnphase.numerics.se.channel import channel_moments, prox_with_minima
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.theory.correlated_kernels import model_kernels
from attnphase.theory.params import ModelParams

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "studies"))  # the study's helper module
from preintegrated_channel import TAIL_MASS, LineRule, OuterRule, preintegrated_moments  # noqa: E402

# a study's measurement (studies/preintegrated_channel.py), about 2 s a line: run with the heavy checks
pytestmark = pytest.mark.heavy

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "quadrature_jumps_reference.json"
LINE = LineRule(cells=32, n_gl=8, root_steps=1, direction=(0.9, 0.5, 0.7, 0.3))


@pytest.fixture(scope="module")
def state():
    data = json.loads(REFERENCE.read_text())
    p = next(p for p in data["points"] if p["branch"] == "positional" and p["alpha"] == 2.0)
    o = p["overlaps"]
    params = ModelParams(omega=data["omega"])
    return params, model_kernels(params), Overlaps(q0=o["q0"], V0=o["V0"], m=np.array(o["m"]), th0=o["th0"])


def _line_nodes(o: np.ndarray, n: int) -> np.ndarray:
    """z = U o + t v at n midpoints of u = Phi(t) in [TAIL_MASS, 1 - TAIL_MASS]."""
    v = np.asarray(LINE.direction) / np.linalg.norm(LINE.direction)
    q, _ = np.linalg.qr(np.column_stack([v, np.eye(v.size)]))
    u = TAIL_MASS + (1 - 2 * TAIL_MASS) * (np.arange(n) + 0.5) / n
    return o @ q[:, 1:].T + ndtri(u)[:, None] * v[None, :]


@pytest.mark.parametrize("which", ["crosses a jump", "smooth"])
def test_line_integral_matches_a_brute_force_rule_on_the_line(state, which):
    params, kernels, ov = state
    outer = np.random.default_rng(0).standard_normal((40, 3))
    # the line's jumps, seen by the brute-force rule: a step of the minimiser between neighbouring nodes
    n = 2 ** 15
    steps = []
    for o in outer[:16]:
        z = _line_nodes(o, n)
        res = prox_with_minima(kernels, params, ov, QuadratureRule(z, np.full(n, 1.0 / n), "line"))[2]
        steps.append(np.max(np.abs(np.diff(res.h, axis=0))))
    i = int(np.argmax(steps)) if which == "crosses a jump" else int(np.argmin(steps))
    assert (steps[i] > 0.3) == (which == "crosses a jump")
    z = _line_nodes(outer[i], n)
    brute = channel_moments(kernels, params, ov, QuadratureRule(z, np.full(n, 1.0 / n), "line"))
    pre = preintegrated_moments(kernels, params, ov, OuterRule(outer[i:i + 1], np.ones(1), "one line"), LINE)
    assert pre.prox_failures == 0
    scale = np.max(np.abs(brute.E_g))
    for key in ("E_g", "E_ggT", "E_gxi", "E_geta"):
        assert np.max(np.abs(getattr(pre, key) - getattr(brute, key))) <= 1e-3 * max(scale, np.max(np.abs(getattr(brute, key)))), key
    assert abs(pre.E_M - brute.E_M) <= 1e-3 * brute.E_M
