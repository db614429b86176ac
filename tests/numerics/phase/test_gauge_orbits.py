"""When two fixed points are one (numerics/phase/gauge_orbits.py): the orbit key (the canonical form under the sign
group at r = r* = 1, the gauge invariants at r >= 2), the merge within error bars, and the paired difference of e_t."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from attnphase.numerics.phase.gauge_orbits import canonical, orbit_key, paired_difference, same_point, within_errors
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.theory.params import ModelParams


def test_canonical_form_identifies_mirror_images_only() -> None:
    p = ModelParams(omega=0.3)
    a = Overlaps(q0=0.3, V0=40.0, m=np.array([0.2, -0.2]), th0=0.0)
    b = Overlaps(q0=0.3, V0=40.0, m=np.array([-0.2, 0.2]), th0=0.0)
    s1, s2 = (Overlaps(q0=0.4, V0=50.0, m=np.zeros(2), th0=t) for t in (0.6, -0.6))
    assert same_point(canonical(p, a), canonical(p, b)) and same_point(canonical(p, s1), canonical(p, s2))
    assert not same_point(canonical(p, a), canonical(p, s1))
    c = Overlaps(q0=0.3, V0=40.0, m=np.array([0.21, -0.21]), th0=0.0)
    assert not same_point(canonical(p, a), canonical(p, c))


def _entry(q: float, m: float, err_m: float, err: float = 1e-3):
    rec = {"q": q, "V": 50.0, "m": m, "theta": 0.0}
    return SimpleNamespace(point=SimpleNamespace(record=rec), err=lambda key: err_m if key == "m" else err)


def test_points_merge_within_four_combined_error_bars() -> None:
    bar = 1e-3 * math.sqrt(2)  # two points with error bars 1e-3 each
    assert within_errors(_entry(0.3, 0.2, 1e-3), _entry(0.3 + 3.9 * bar, -0.2, 1e-3))  # |m|: mirror images
    assert not within_errors(_entry(0.3, 0.2, 1e-3), _entry(0.3 + 4.1 * bar, 0.2, 1e-3))
    nan = math.nan
    assert not within_errors(_entry(0.3, 0.2, nan, nan), _entry(0.3001, 0.2, nan, nan))  # no error bars
    assert within_errors(_entry(0.3, 0.2, nan, nan), _entry(0.3, 0.2, nan, nan))  # identical
    # a "positional" point whose m is within its bars of 0 is the agnostic point (m = 0 exactly, no spread)
    assert within_errors(_entry(0.3, 0.0, 0.0), _entry(0.3, 0.0021, 0.0019))
    assert not within_errors(_entry(0.3, 0.0, 0.0), _entry(0.3, 0.0021, 0.0004))


def _matrix_entry(e_t: float, q0_eig: list[float], reps: list[float], err: float = 1e-3):
    """An entry with matrix invariants (each with bar ``err``), e_t and block replicates of e_t."""
    rec = {"q0_eigenvalues": q0_eig, "V0_eigenvalues": [50.0, 40.0], "th0_singular_values": [0.5], "m_norms": [0.2, 0.2]}
    point = SimpleNamespace(record=rec, observables=SimpleNamespace(e_t=e_t))
    replicates = tuple(SimpleNamespace(observables=SimpleNamespace(e_t=v)) for v in reps)
    return SimpleNamespace(point=point, replicates=replicates, blocks=True,
                           err=lambda key: [err] * len(rec[key]) if key in rec else 1e-5)


def test_matrix_points_merge_only_where_the_paired_difference_of_e_t_allows() -> None:
    offs = [0.0, 1e-5, -2e-5, 3e-5]  # the blocks' common quadrature error: cancels in the difference
    a = _matrix_entry(1.0e-3, [0.3, 0.1], [1.0e-3 + o for o in offs])
    same = _matrix_entry(1.0e-3 + 1e-8, [0.3005, 0.1], [1.0e-3 + o + s for o, s in zip(offs, (3e-8, -2e-8, 1e-8, 0.0))])
    apart = _matrix_entry(1.0e-3 + 1e-6, [0.3005, 0.1], [1.0e-3 + 1e-6 + o + s for o, s in zip(offs, (1e-9, -1e-9, 0, 0))])
    delta, err, n = paired_difference(a, apart)
    assert n == 4 and delta == apart.point.observables.e_t - a.point.observables.e_t
    assert err == pytest.approx(np.std([1e-9, -1e-9, 0, 0], ddof=1) / 2, rel=1e-6)
    assert within_errors(a, same)
    # the invariants agree within their bars, but the difference of e_t is the same on every block
    assert not within_errors(a, apart)
    far = _matrix_entry(1.0e-3 + 1e-8, [0.32, 0.1], [1.0e-3 + o for o in offs])
    assert not within_errors(a, far)  # q0's first eigenvalue 0.02 apart: > 4 combined bars of 1e-3


def test_orbit_key_is_the_canonical_form_at_rank_one_and_the_invariants_above() -> None:
    from attnphase.numerics.se.gauge import invariants, rotate

    ov = Overlaps(np.array([[0.4, 0.1], [0.1, 0.2]]), np.array([[50.0, 3.0], [3.0, 40.0]]),
                  np.array([[0.2, 0.05], [-0.2, -0.05]]), np.array([[0.3], [0.1]]))
    c, s = math.cos(0.7), math.sin(0.7)
    turned = rotate(ov, np.array([[c, -s], [s, c]]))
    keys = [orbit_key(ModelParams(omega=0.3), SimpleNamespace(overlaps=o, invariants=invariants(o))) for o in (ov, turned)]
    assert same_point(keys[0], keys[1], rtol=1e-12) and not np.allclose(ov.to_vector(), turned.to_vector())
    assert not same_point(keys[0], orbit_key(ModelParams(omega=0.3), SimpleNamespace(
        overlaps=Overlaps(ov.q0, ov.V0, 1.1 * ov.m, ov.th0), invariants=invariants(Overlaps(ov.q0, ov.V0, 1.1 * ov.m, ov.th0)))))
    p, scalar = ModelParams(omega=0.3), Overlaps(q0=0.3, V0=40.0, m=np.array([-0.2, 0.2]), th0=0.0)
    assert np.array_equal(orbit_key(p, SimpleNamespace(overlaps=scalar)), canonical(p, scalar))
