"""The validation figures show what they draw: general_suite.png has one legend for the figure that names every
marker of every panel (the aligned-prox diamonds and a rank-r case's points included, wherever they first appear);
fig2_alpha_sweep.png and general_suite.png say, in the panel, where the GD error bars are hidden by their markers
(with the largest bar's size); fonts a reader can read."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from attnphase.validation.general_report import plot_general  # noqa: E402
from attnphase.validation.plots import plot_alpha_sweep  # noqa: E402


def _records(branch, values):
    return [{"alpha": a, "converged": True, "branch": branch, "theta": v, "m_norm": v, "eps_g": 1e-3 * (2 - v)}
            for a, v in values]


def _rows(alphas, aligned):
    out = []
    for init in ("semantic", "positional"):
        for a in alphas:
            row = {"init": init, "alpha": a, "abs_theta_mean": 0.3 * a, "abs_theta_std": 0.01, "m_norm_mean": 0.2,
                   "m_norm_std": 0.005, "eps_g_mean": 2e-3 / a, "eps_g_std": 1e-5}
            if aligned:
                row["aligned"] = {"exists": True, "alpha": a, "abs_theta": 0.31 * a, "m_norm": 0.21, "eps_g": 2e-3 / a}
            out.append(row)
    return out


def _summary():
    theory = {"curves": {"semantic/global": {"records": _records("semantic", [(1.0, 0.3), (1.5, 0.45), (2.0, 0.6)]),
                                             "end": 0.9},
                         "positional/global": {"records": _records("positional", [(1.0, 0.2), (1.5, 0.21)]), "end": 1.7}},
              "eps_lin": 2e-3}
    rank = {"kind": "rank", "eps_lin": 2e-3, "points": [
        {"requested": b, "alpha": 1.5, "converged": True, "abs_theta": 0.4, "m_norm": 0.2, "eps_g": 1e-3}
        for b in ("semantic", "positional", "mixed")]}
    cases = [
        {"key": "a", "title": "L = 3", "theory": theory, "landmark": 1.2, "rows": _rows((1.0, 1.5, 2.0), aligned=False)},
        {"key": "b", "title": "correlated tokens", "theory": theory, "landmark": 1.2,
         "rows": _rows((1.0, 1.5, 2.0), aligned=True)},
        {"key": "d", "title": "rank 2", "theory": rank, "landmark": float("nan"), "rows": _rows((1.5,), aligned=False)},
    ]
    return {"cases": cases, "plan": {"d": 200}}


def _drawn(plot, summary, path):
    """The Figure ``plot`` saves (the validation's plotting functions return none)."""
    import matplotlib.pyplot as plt

    captured = {}
    real = plt.Figure.savefig

    def keep(fig, *args, **kwargs):
        captured["fig"] = fig
        return real(fig, *args, **kwargs)

    plt.Figure.savefig = keep
    try:
        plot(summary, path)
    finally:
        plt.Figure.savefig = real
    return captured["fig"]


def test_one_legend_names_every_marker_of_every_panel(tmp_path):
    fig = _drawn(plot_general, _summary(), tmp_path / "general_suite.png")
    assert (tmp_path / "general_suite.png").read_bytes()[:4] == b"\x89PNG"
    (legend,) = fig.legends
    named = {t.get_text() for t in legend.get_texts()}
    drawn = {lab for ax in fig.axes for lab in ax.get_legend_handles_labels()[1]}
    assert drawn <= named, drawn - named
    assert {"SE aligned prox, semantic", "SE mixed"} <= named  # drawn only in the second and third cases' panels
    assert all(ax.get_legend() is None for ax in fig.axes)  # no per-panel legend hiding the others' markers
    assert min(t.get_fontsize() for t in legend.get_texts()) >= 8
    assert min(ax.title.get_fontsize() for ax in fig.axes) >= 8
    assert "bars within the markers (largest 1e-05)" in fig.axes[3].get_title()  # eps_g: std 1e-5 on a 1e-3 scale


def test_the_general_figure_says_what_its_bars_are_and_draws_each_run(tmp_path):
    """Its bars are the seeds' standard deviation, which the figure did not say; and a start whose seeds land on two
    minima (rank 2, alpha 2: three runs at the mixed point's eps_g 1.3e-3, one at the positional point's 3.1e-3)
    showed as one mean between them, on neither."""
    summary = _summary()
    eps = [1.33e-3, 1.40e-3, 3.11e-3, 1.50e-3]
    summary["runs"] = [{"case": "d", "init": "positional", "d": 200, "alpha": 1.5, "seed": k, "eps_g": e}
                       for k, e in enumerate(eps)] + [{"case": "d", "init": "positional", "d": 100, "alpha": 1.5,
                                                       "seed": 0, "eps_g": 9.0}]  # another d: not this figure's
    fig = _drawn(plot_general, summary, tmp_path / "general_suite.png")
    assert "GD bars: the seeds' standard deviation" in fig._suptitle.get_text()
    bottom = fig.axes[5]  # the rank-2 case's eps_g panel
    (dots,) = [ln for ln in bottom.lines if ln.get_label() == "GD, positional start: each run"]
    assert sorted(dots.get_ydata()) == sorted(eps)


def _sweep_summary():
    alphas = (0.5, 1.0, 1.5, 2.0)
    curves = {"semantic/global": {"records": _records("semantic", [(a, 0.1 + 0.25 * a) for a in alphas]), "end": 0.4}}
    theory = {"omega": 0.3, "eps_lin": 2e-3, "alpha_c": {"global": 1.26}, "alpha_l": {"global": 1.49}, "curves": curves}
    sweep = [{"init": i, "alpha": a, "abs_m_mean": 0.2, "abs_m_std": 0.02, "abs_theta_mean": 0.1 + 0.25 * a,
              "abs_theta_std": 0.05, "eps_g_mean": 4e-3 / a, "eps_g_std": 2e-6}
             for i in ("semantic", "positional", "random") for a in alphas]
    delta = [{"alpha": a, "theory": {"global": 1e-4 * (1.26 - a), "local": None}, "delta_e_t_mean": 1e-4 * (1.26 - a),
              "delta_e_t_std": 1e-5} for a in alphas]
    return {"theory": theory, "sweep": sweep, "delta_e_t": delta, "plan": {"d": 200}}


def test_alpha_sweep_says_where_its_error_bars_hide_behind_the_markers(tmp_path):
    fig = _drawn(plot_alpha_sweep, _sweep_summary(), tmp_path / "fig2.png")
    m, theta, eps_g, delta = fig.axes
    assert eps_g.get_title(loc="left") == "GD +- std: bars within the markers (largest 2e-06)"
    assert theta.get_title(loc="left") == "" and delta.get_title(loc="left") == ""  # bars a reader sees: no note
    assert min(t.get_fontsize() for ax in (m, delta) for t in ax.get_legend().get_texts()) >= 8
    assert "GD (paired seeds, mean +- sd)" in [t.get_text() for t in delta.get_legend().get_texts()]


def test_alpha_sweep_with_no_data_says_why_in_each_panel(tmp_path):
    import warnings

    summary = {"theory": {"omega": 0.3, "eps_lin": 2e-3, "alpha_c": {}, "alpha_l": {}, "curves": {}}, "sweep": [],
               "delta_e_t": [], "plan": {"d": 200}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "No artists with labels found to put in legend"
        fig = _drawn(plot_alpha_sweep, summary, tmp_path / "fig2.png")
    for ax in fig.axes:
        (why,) = [t.get_text() for t in ax.texts if t.get_gid() == "why_empty"]
        assert why.startswith(("nothing to draw", "no paired GD runs"))
    assert fig.axes[0].get_legend() is None and fig.axes[3].get_legend() is None
    assert "alpha_c = not found" in fig._suptitle.get_text()


def _aligned_sweep_summary():
    s = _sweep_summary()
    alphas = (0.5, 1.0, 1.5, 2.0)
    # the aligned map's semantic branch exists below the global one's end (0.4 here: from 0.5 up both exist) and
    # differs from it below alpha = 1.5; the positional aligned branch is the global one
    s["theory"]["curves"]["semantic/aligned"] = {
        "records": _records("semantic", [(a, 0.1 + 0.25 * a + (0.05 if a < 1.5 else 0.0)) for a in alphas]), "end": None}
    s["theory"]["curves"]["positional/global"] = {"records": _records("positional", [(a, 0.2) for a in alphas]), "end": None}
    s["theory"]["curves"]["positional/aligned"] = {"records": _records("positional", [(a, 0.2) for a in alphas]), "end": None}
    for rec in s["theory"]["curves"]["positional/global"]["records"] + s["theory"]["curves"]["positional/aligned"]["records"]:
        rec["m"] = rec.pop("m_norm")
    for c in s["theory"]["curves"].values():
        for rec in c["records"]:
            rec.setdefault("m", 0.0)
    return s


def test_alpha_sweep_draws_the_aligned_branch_only_where_it_is_a_curve_of_its_own(tmp_path):
    fig = _drawn(plot_alpha_sweep, _aligned_sweep_summary(), tmp_path / "fig2.png")
    m, theta = fig.axes[:2]
    gids = {ln.get_gid() for ln in theta.lines}
    assert "theory_semantic/aligned" in gids and "theory_positional/aligned" not in gids  # coincides: not drawn
    assert "theory semantic, aligned prox" in [t.get_text() for t in m.get_legend().get_texts()]


def test_finite_size_legend_names_the_aligned_gap_where_drawn(tmp_path):
    from attnphase.validation.plots import plot_finite_size

    def point(theta, branch="semantic"):
        return {"abs_theta": theta, "abs_m": 0.0, "eps_g": 3e-3, "branch_reached": branch, "converged": True}

    rows = [{"d": d, "alpha": 0.5, "init": "semantic", "n_runs": 4, "abs_theta_mean": 0.2 + 0.3 / d ** 0.5,
             "abs_theta_std": 0.02, "eps_g_mean": 3.1e-3, "eps_g_std": 1e-5,
             "theory": {"global": point(0.0, "agnostic"), "local": {**point(0.03), "converged": False},
                        "aligned": point(0.21)}}
            for d in (50, 100, 200, 400)]
    gl = {"alpha": 0.5, "trend": [(r["d"], r["abs_theta_mean"], r["abs_theta_std"]) for r in rows], "extrapolated": 0.2,
          "extrapolated_se": 0.01, "slope_b": 0.3, "form": "a + b/sqrt(d)", "power": 0.5,
          "theory": {"global": 0.0, "local": float("nan"), "aligned": 0.21}}
    fig = plot_finite_size({"finite_size": rows, "headline": {"global_vs_local": [gl]}}, tmp_path / "fs.png")
    (legend,) = [lg for ax in fig.axes if (lg := ax.get_legend()) is not None and
                 "vs theory, global prox" in [t.get_text() for t in lg.get_texts()]]
    texts = [t.get_text() for t in legend.get_texts()]
    # a local-prox solve that did not converge is no point to measure a gap from: no line, whatever it stopped at
    assert "vs theory, aligned prox" in texts and "vs theory, local prox" not in texts
    assert min(t.get_fontsize() for t in legend.get_texts()) >= 9
    (bx,) = [ax for ax in fig.axes if ax.get_xlabel() == "1 / sqrt(d)"]
    assert "theory, aligned prox, alpha = 0.5" in bx.get_legend_handles_labels()[1]
