"""A root of Delta e_t that is a jump between two points of the semantic label, and the upper point's branch
followed down by warm steps (numerics/phase/branch_jump.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from attnphase.numerics.phase import branch_jump as bj


def point(alpha: float, th0: float, converged: bool = True, branch: str = "semantic"):
    return SimpleNamespace(alpha=alpha, overlaps=SimpleNamespace(th0=th0), status=SimpleNamespace(converged=converged),
                           branch=branch)


def test_two_points_of_the_label_are_told_from_one_branch_by_their_order_parameter():
    assert bj.is_jump(point(0.68181, 0.048), point(0.68189, 0.541), "semantic")  # sigma = 0.8, omega = 0.2
    assert not bj.is_jump(point(0.60, 0.40), point(0.58, 0.24), "semantic")  # one branch, steep near its birth
    assert bj.order_parameter(point(1.0, -0.3), "semantic") == 0.3


def test_the_jump_is_found_between_the_neighbours_around_the_root_only():
    pts = {a: point(a, th) for a, th in [(0.6273, 0.038), (0.6817, 0.048), (0.6818, 0.048), (0.6819, 0.54),
                                         (0.8909, 0.68)]}
    lo, hi = bj.jump_at(pts, "semantic", 0.6818, 2e-4)
    assert (lo.alpha, hi.alpha) == (0.6818, 0.6819)
    assert bj.jump_at(pts, "semantic", 0.75, 2e-4) is None  # 0.6819 -> 0.8909 is one branch
    assert bj.jump_at({1.0: point(1.0, 0.5)}, "semantic", 1.0, 2e-4) is None


def test_the_follow_steps_over_single_failures_halves_where_they_persist_and_stops_below_the_least_step(monkeypatch):
    # a branch th0 = (alpha - 0.5)^1/2 whose solves fail at 0.875 and on [0.5, 0.62), and reach a point of |th0|
    # 0.05 (another point of the label) at 0.75: the follow from 1 down to 0.5 (steps of 1/16) goes past them
    calls = []

    def solve_from(params, alpha, branch, start, cfg, rule):
        calls.append(round(alpha, 6))
        if abs(alpha - 0.875) < 1e-9 or alpha < 0.62:
            return point(alpha, 0.3, converged=False)
        return point(alpha, 0.05 if abs(alpha - 0.75) < 1e-9 else math.sqrt(alpha - 0.5))

    monkeypatch.setattr(bj, "solve_from", solve_from)
    path = bj.follow_down(None, "semantic", point(1.0, math.sqrt(0.5)), 0.5, 1e-2, None, None)
    alphas = [p.alpha for p in path]
    assert alphas == sorted(alphas) and alphas[-1] == 1.0
    assert 0.875 not in alphas and 0.75 not in alphas  # the failure and the jump stepped over
    assert 0.9375 in alphas and 0.8125 in alphas
    assert 0.62 <= alphas[0] < 0.62 + 2 * 1e-2  # halved down to the least step above the failing range
    assert all(not bj.is_jump(a, b, "semantic") for a, b in zip(path, path[1:]))
    assert calls[:3] == [0.9375, 0.875, 0.8125]
