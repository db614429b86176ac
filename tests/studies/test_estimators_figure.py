"""The figure of studies/bayes_vs_erm.py (studies/estimators_figure.py) shows what it promises: ERM's branches, the
Bayes-optimal curve, AMP, the linear baseline and the thresholds on one axis."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "studies"))  # the study's helper module
from estimators_figure import plot_estimators_eps_g  # noqa: E402


def test_estimators_figure_draws_erm_bo_amp_and_the_thresholds_on_one_axis(tmp_path) -> None:
    erm = {"semantic": ([1.0, 2.0], [2.8e-3, 1.4e-3], [1e-6, 1e-6]), "positional": ([0.2, 1.0], [3.6e-3, 3.3e-3], [1e-6, 1e-6])}
    bo = ([0.1, 0.3, 0.5, 2.0], [1.97e-3, 1.83e-3, 0.0, 0.0], [0.0, 1e-8, 0.0, 0.0])
    bayes = {"alpha_weak_recovery": 1 / 6, "alpha_it": 0.5, "alpha_amp": 0.5}
    fig = plot_estimators_eps_g(erm, 1.97e-3, bo, bayes, tmp_path / "e.png", "t", amp=([0.3], [1.8e-3], [5e-5]))
    assert (tmp_path / "e.png").read_bytes()[:4] == b"\x89PNG"
    ax = fig.axes[0]
    gids = {li.get_gid() for li in ax.get_lines()}
    assert {"erm_semantic", "erm_positional", "bayes_optimal", "amp", "eps_lin", "bayes_alpha_it",
            "bayes_alpha_weak_recovery"} <= gids
    bo_line = next(li for li in ax.get_lines() if li.get_gid() == "bayes_optimal")
    assert list(bo_line.get_ydata()) == pytest.approx(bo[1])


def test_the_studys_amp_points_and_the_benchmarks_amp_run_read_amps_overlap(monkeypatch, capsys) -> None:
    """AMP's overlap is theta (Q.Q*/d): studies/bayes_vs_erm.py and benchmarks/bench_bayes.py still read ``r.m`` and
    crashed after their ERM sweeps (the study) or their BO timings (the benchmark)."""
    import bayes_vs_erm

    from attnphase.theory.params import ModelParams

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import bench_bayes

    monkeypatch.setattr(bayes_vs_erm, "AMP_ALPHAS", (0.6,))
    alphas, mean, se, runs = bayes_vs_erm.amp_points(ModelParams(omega=0.3), d=100, seeds=2)
    assert alphas == [0.6] and len(runs) == 2 and all(0.0 <= abs(r["theta"]) <= 1.0 + 1e-6 for r in runs)
    assert mean[0] >= 0.0 and se[0] >= 0.0
    bench_bayes.amp(d=100, alpha=0.6)
    assert "|theta| = " in capsys.readouterr().out
