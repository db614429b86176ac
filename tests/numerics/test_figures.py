"""The figures the tool writes show what they promise: each plotting function writes its PNG and returns the
Figure, and these tests inspect its artists (not its pixels): the phase diagram's error bands and its panel
of error bars, the curves' positional branch sampled densely, fig3's proximal maps told apart in the legend,
finite_size.png's bars that stay visible on log axes and its readable legend, the histogram task's learning
curves."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.collections import LineCollection, PolyCollection

from attnphase.numerics.phase.boundary_results import Boundaries
from attnphase.numerics.jobs.plots import DENSE_ROWS, plot_branch_curves, plot_phase_diagram


def _rows(omegas):
    return [Boundaries(omega=w, alpha_c=1.0 + 1.2 * w, alpha_l=1.3 + w, semantic_end=0.5 + w, positional_end=math.nan)
            for w in omegas]


def _errors(rows):
    return [{"err_alpha_c": 2e-3, "err_alpha_l": 5e-3 * (1 + i), "err_semantic_end": 7e-3, "err_positional_end": math.nan}
            for i, _ in enumerate(rows)]


def _band(ax, gid):
    return next(c for c in ax.collections if isinstance(c, PolyCollection) and c.get_gid() == gid)


@pytest.mark.parametrize("n", [3, DENSE_ROWS])
def test_phase_diagram_shows_its_error_bars_as_bands_and_in_a_panel(tmp_path, n) -> None:
    rows = _rows(np.linspace(0.1, 0.4, n))
    errors = _errors(rows)
    fig = plot_phase_diagram(rows, tmp_path / "pd.png", alpha_max=3.0, errors=errors)
    assert (tmp_path / "pd.png").read_bytes()[:4] == b"\x89PNG"
    ax, ex = fig.axes
    for key in ("alpha_c", "alpha_l", "semantic_end"):
        band = _band(ax, f"band_{key}")
        xs = np.concatenate([p.vertices[:, 0] for p in band.get_paths()])
        centre = np.array([getattr(b, key) for b in rows])
        err = np.array([e[f"err_{key}"] for e in errors])
        assert xs.min() == pytest.approx((centre - err).min()) and xs.max() == pytest.approx((centre + err).max())
        line = next(li for li in ex.get_lines() if li.get_gid() == f"err_{key}")  # the bars, magnified
        assert sorted(line.get_xdata()) == pytest.approx(sorted(err))
        assert list(line.get_ydata()) == pytest.approx(sorted(b.omega for b in rows))
    assert ex.get_xscale() == "log" and ex.get_shared_y_axes().joined(ax, ex)
    assert not any(li.get_gid() == "err_positional_end" for li in ex.get_lines())  # no bar: nothing drawn
    assert "standard error" in " ".join(t.get_text() for t in ax.get_legend().get_texts())
    if n < DENSE_ROWS:  # few omegas: capped error bars too
        assert sum(isinstance(c, LineCollection) for c in ax.collections) >= 3


def test_region_names_stay_inside_the_axes_when_alpha_c_is_small(tmp_path) -> None:
    # alpha_c ~ 0.2-0.5 on an axis to 7 (the L = 3 simplex P's diagram): a name centred on 0.5 alpha_c spilled over
    # the omega axis's tick labels
    rows = [Boundaries(omega=w, alpha_c=0.2 + 0.6 * (w - 0.1), alpha_l=1.0, semantic_end=0.2, positional_end=math.nan,
                       alpha_c_from="agnostic", alpha_c_to="semantic") for w in (0.1, 0.2, 0.3, 0.4)]
    fig = plot_phase_diagram(rows, tmp_path / "pd.png", alpha_max=7.0)
    ax = fig.axes[0]
    fig.canvas.draw()
    box = ax.get_window_extent()
    names = [t for t in ax.texts if t.get_text() in ("agnostic", "semantic")]
    assert [t.get_text() for t in names] == ["agnostic", "semantic"]
    for t in names:
        extent = t.get_window_extent()
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1, t.get_text()


def test_region_names_are_the_families_every_omega_shares(tmp_path) -> None:
    """A rank-2 diagram named its region after one omega's branch (mixed#4) where another omega's change is to
    mixed#1 or to the semantic point."""
    rows = [Boundaries(omega=w, alpha_c=0.6 + w, alpha_l=1.0, semantic_end=math.nan, positional_end=math.nan,
                       alpha_c_from="positional", alpha_c_to=to, r=2) for w, to in ((0.1, "mixed#4"), (0.2, "mixed#1"),
                                                                                     (0.3, "semantic"))]
    ax = plot_phase_diagram(rows, tmp_path / "pd.png", alpha_max=3.0).axes[0]
    assert [t.get_text() for t in ax.texts if t.get_text().startswith(("positional", "mixed"))] == [
        "positional", "mixed / semantic"]


def test_a_positional_end_that_is_a_birth_is_drawn_and_named_as_one(tmp_path) -> None:
    # scan --lam 0.01,0.03: the legend said "positional branch end" at alpha ~ 0.13, the positional branch's birth
    # (positional_end_exists "above"), beside ends where the branch stops going up ("below")
    rows = [Boundaries(omega=w, alpha_c=1.2, alpha_l=1.5, semantic_end=0.6, positional_end=e, positional_end_exists=side)
            for w, e, side in ((0.1, 0.13, "above"), (0.2, 0.15, "above"), (0.3, 1.7, "below"), (0.4, 1.9, "below"))]
    ax = plot_phase_diagram(rows, tmp_path / "pd.png", alpha_max=3.0).axes[0]
    birth = next(li for li in ax.get_lines() if li.get_gid() == "birth_positional_end")
    assert list(np.asarray(birth.get_xdata(), dtype=float)[[0, 1]]) == [0.13, 0.15]
    assert np.isnan(np.asarray(birth.get_xdata(), dtype=float)[2:]).all()
    end = next(li for li in ax.get_lines() if li.get_label() == "positional branch end")
    assert np.isnan(np.asarray(end.get_xdata(), dtype=float)[:2]).all()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "positional branch birth (it exists above)" in labels


def test_phase_diagram_without_errors_is_one_panel(tmp_path) -> None:
    fig = plot_phase_diagram(_rows([0.2, 0.3]), tmp_path / "pd.png", alpha_max=3.0)
    assert len(fig.axes) == 1 and not any(isinstance(c, PolyCollection) for c in fig.axes[0].collections)


@pytest.fixture(scope="module")
def branches():
    from attnphase.numerics import sweep
    from attnphase.numerics.phase.scalar_boundaries import refined_branch
    from attnphase.numerics.config import SolverConfig
    from attnphase.theory.params import ModelParams

    params, cfg = ModelParams(omega=0.3), SolverConfig(quadrature="gh6")
    sem = sweep(params, [1.5, 2.0, 2.5], "semantic", config=cfg)
    pos = sweep(params, [1.0, 1.5, 2.0, 2.5], "positional", config=cfg)
    return sem, pos, refined_branch(params, pos, cfg, upto=2.0)


def test_refined_branch_adds_points_on_the_branch_between_its_points(branches) -> None:
    _, pos, refined = branches
    on = [p.alpha for p in pos.on_branch()]
    assert on == [1.0, 1.5, 2.0, 2.5]
    got = [p.alpha for p in refined.on_branch()]
    assert got == sorted(got) and len(got) == len(on) + 2 * 2  # two between each neighbours up to alpha = 2
    added = [p for p in refined.on_branch() if p.alpha not in on]
    assert all(1.0 < p.alpha < 2.0 and p.status.converged and p.branch == "positional" for p in added)
    ms = [p.record["m"] for p in refined.on_branch()]
    assert all(abs(b - a) < 0.05 for a, b in zip(ms, ms[1:]))  # one smooth branch, not a jump to another


def test_curves_figure_draws_the_refined_positional_branch_within_its_alpha_range(tmp_path, branches) -> None:
    sem, _, refined = branches
    fig = plot_branch_curves(sem, refined, 2e-3, 1.25, 1.5, tmp_path / "curves.png", title="t", alpha_max=2.2)
    assert (tmp_path / "curves.png").stat().st_size > 0
    m_panel = fig.axes[1]
    line = next(li for li in m_panel.get_lines() if li.get_label() == "positional m")
    assert len(line.get_xdata()) == len([p for p in refined.on_branch() if p.alpha <= 2.2]) == 7
    assert max(line.get_xdata()) <= 2.2 and m_panel.get_xlim() == (0.0, 2.2)
    # Delta e_t likewise: a point past the axis' end (2.5) would set the y-range of points it does not show
    (delta,) = [li for li in fig.axes[3].get_lines() if li.get_marker() == "o"]
    assert list(delta.get_xdata()) == [1.5, 2.0]


def test_curves_figure_shows_the_boundaries_bars_and_says_its_points_have_none(tmp_path, branches) -> None:
    # curves_omega0.3.png drew alpha_c, alpha_l and the ends as bare lines and its points without bars, and said
    # nothing of either
    from dataclasses import replace

    sem, pos, _ = branches
    errors = {"err_alpha_c": 0.01, "err_alpha_l": 0.02, "err_semantic_end": math.nan, "err_positional_end": 0.03}
    fig = plot_branch_curves(sem, pos, 2e-3, 1.25, 1.5, tmp_path / "curves.png", title="t", alpha_max=3.0,
                             errors=errors)
    eps = fig.axes[0]
    band = next(p for p in eps.patches if p.get_gid() == "band_alpha_c")
    lo, hi = band.get_x(), band.get_x() + band.get_width()
    assert lo == pytest.approx(1.24) and hi == pytest.approx(1.26)
    assert not any(p.get_gid() == "band_semantic_end" for p in eps.patches)  # no bar: no band
    # the boundaries named once, in the Delta e_t panel: in every panel's legend they hid the eps_g curves
    labels = [t.get_text() for t in fig.axes[3].get_legend().get_texts()]
    assert r"$\alpha_c$=1.250 +- 0.010" in labels and "standard error" in fig._suptitle.get_text()
    # an end's nature and how it was located (a traced end's legend said "(bifurcation)" alone)
    from attnphase.numerics.phase.branch_end import BranchEnd

    traced = replace(sem, end=BranchEnd(1.2, "bifurcation", "trace"))
    fig2 = plot_branch_curves(traced, pos, 2e-3, 1.25, 1.5, tmp_path / "traced.png", title="t", alpha_max=3.0)
    assert "semantic end 1.200 (bifurcation, by trace)" in [t.get_text() for t in fig2.axes[3].get_legend().get_texts()]
    assert not any("alpha_c" in t.get_text() for t in eps.get_legend().get_texts())
    assert [t.get_gid() for t in eps.texts] == ["no_point_bars"] and not eps.containers
    # a sweep that carries its points' bars draws them, and the note goes
    with_bars = replace(sem, errors=tuple({"err_eps_g": 1e-5} for _ in sem.points))
    fig = plot_branch_curves(with_bars, pos, 2e-3, 1.25, 1.5, tmp_path / "curves2.png", title="t", alpha_max=3.0)
    assert len(fig.axes[0].containers) == 1  # the semantic points' error bars
    assert not [t for t in fig.axes[0].texts if t.get_gid() == "no_point_bars"]


def _heat_summary():
    heat = [{"alpha": a, "omega": w, "delta_e_t_mean": (a - 1 - w) * 1e-3} for a in (0.5, 1.0, 1.5, 2.0)
            for w in (0.2, 0.3, 0.4)]
    curve = [{"omega": 0.2, "alpha_c": 0.95, "prox": "local"}, {"omega": 0.25, "alpha_c": 1.1, "prox": "local"},
             {"omega": 0.3, "alpha_c": 1.25, "prox": "global"}, {"omega": 0.35, "alpha_c": 1.45, "prox": "local"},
             {"omega": 0.4, "alpha_c": None, "prox": "local"}]
    return {"heat": heat, "alpha_c_curve": curve, "plan": {"d": 60, "params": {"sigma": [0.5, 0.5], "lam": 0.01}}}


def test_heatmap_tells_the_proximal_maps_apart(tmp_path) -> None:
    from attnphase.validation.plots import plot_heatmap

    fig = plot_heatmap(_heat_summary(), tmp_path / "fig3.png")
    ax = fig.axes[0]
    assert ax.get_title().startswith("GD at d = 60, sigma = 0.5, lambda = 0.01:")  # the model, not d alone
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("global prox" in t for t in labels) and any("local prox" in t for t in labels)
    by_gid = {}
    for li in ax.get_lines():
        by_gid.setdefault(li.get_gid(), []).append(li)
    assert [list(li.get_ydata()) for li in by_gid["alpha_c_global"]] == [[0.3]]
    # the local curve through the local omegas, not joined to the global point, nor drawn across its omega (a line
    # from 0.25 to 0.35 read as the local map's alpha_c at 0.3, which it has not); the one global point says so
    local = by_gid["alpha_c_local"]
    assert [list(li.get_ydata()) for li in local] == [[0.2, 0.25], [0.35]]
    assert "theory alpha_c(omega), global prox at omega = 0.3 only" in labels
    g, loc = by_gid["alpha_c_global"][0], local[0]
    assert (g.get_marker(), g.get_linestyle()) != (loc.get_marker(), loc.get_linestyle())


def _fss_row(d, init, dev, se, alpha=2.0):
    obs = "abs_theta" if init == "semantic" else "abs_m"
    theory = {obs: 0.5, "eps_g": 2e-3, "branch_reached": init, "converged": True}
    return {"alpha": alpha, "init": init, "d": d, "n_runs": 4, f"{obs}_mean": 0.5 + dev, f"{obs}_std": 2 * se,
            "eps_g_mean": 2e-3 * (1 + dev), "eps_g_std": 2e-3 * 2 * se, "theory": {"global": theory, "local": None}}


def test_finite_size_bars_stay_visible_on_log_axes_and_the_legend_is_readable(tmp_path) -> None:
    from attnphase.validation.plots import plot_finite_size

    # at d = 400 the deviation (1e-3) is smaller than its standard error (5e-3): consistent with 0
    rows = [_fss_row(d, "semantic", dev, 5e-3 if d == 400 else 2e-3)
            for d, dev in ((50, 0.1), (100, 0.05), (200, 0.03), (400, 1e-3))]
    rows += [_fss_row(d, "positional", 0.02 / (d / 50) ** 0.5, 1e-3) for d in (50, 100, 200, 400)]
    fig = plot_finite_size({"finite_size": rows, "headline": {"global_vs_local": []}}, tmp_path / "fss.png")
    assert (tmp_path / "fss.png").stat().st_size > 0
    ax, cx = fig.axes[0], fig.axes[1]
    for panel in (ax, cx):
        bottom = panel.get_ylim()[0]
        assert bottom > 0 and panel.get_yscale() == "log"
        bars = [c for c in panel.collections if isinstance(c, LineCollection)]
        assert bars
        for c in bars:  # every bar has two finite ends inside the axes: none is dropped by the log scale
            for seg in c.get_segments():
                lo, hi = sorted(seg[:, 1])
                assert np.isfinite([lo, hi]).all() and lo >= bottom * (1 - 1e-9) and hi > lo
    seg400 = [seg for c in ax.collections if isinstance(c, LineCollection) for seg in c.get_segments()
              if seg[0, 0] == 400]
    assert any(min(seg[:, 1]) == pytest.approx(ax.get_ylim()[0]) for seg in seg400)  # down to the bottom edge
    legends = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    texts = [t for lg in legends for t in lg.get_texts()]
    assert any("semantic init, alpha = 2.0" in t.get_text() for t in texts)
    assert min(t.get_fontsize() for t in texts) >= 10


def test_histogram_learning_curves_are_drawn(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    from attnphase.validation.histogram.experiment import HistogramConfig, run_experiment
    from attnphase.validation.histogram.plots import plot_learning_curves

    tiny = HistogramConfig(seq_len=5, n_tokens=4, n_samples=300, d_model=16, d_hidden=16, epochs=2, reparam_epochs=1,
                           n_score=50, n_plot=2)
    result = run_experiment(tiny, seed=5, device=torch.device("cpu"))
    fig = plot_learning_curves(result.variants, tmp_path / "lc.png", majority_acc=result.majority_acc)
    assert (tmp_path / "lc.png").read_bytes()[:4] == b"\x89PNG"
    assert len(fig.axes) == 4  # (from scratch, re-parameterised) x (loss, accuracy)
    drawn = {li.get_label(): li for a in fig.axes for li in a.get_lines()}
    for name, v in result.variants.items():
        for split in ("training", "validation"):
            line = drawn[f"{name}, {split}"]
            field = "train" if split == "training" else "val"
            assert list(line.get_xdata()) == [r.epoch for r in v.curve]
            assert set(line.get_ydata()) <= {getattr(r, f"{field}_loss") for r in v.curve} | {
                getattr(r, f"{field}_acc") for r in v.curve}
    assert "majority-class baseline" in drawn


def test_rank_diagram_shows_its_bracket_widths_on_a_log_panel(tmp_path) -> None:
    """At r = 2 the one phase-diagram figure draws the mixed branch's end too, the searches' bracket widths as its
    error panel, and the branches' e_t above the lowest one at the first omega."""
    from attnphase.numerics.phase.boundary_results import Boundaries, LocatedEnd

    nan = math.nan
    rows = [Boundaries(omega=w, alpha_c=nan, alpha_l=0.95 + w, semantic_end=0.35 + w, positional_end=nan,
                       alpha_l_err=0.002 * (1 + w), alpha_l_branch="semantic", eps_lin=0.002, r=2, r_star=1,
                       semantic_end_err=0.03, semantic_end_kind="agnostic", mixed_end=1.6 + w, mixed_end_err=0.01,
                       mixed_end_kind="no converged solve (solver failure)" if w > 0.2 else "fold",
                       ends=(LocatedEnd("semantic", 0.35 + w, 0.03, "above", "agnostic"),),
                       curves={"semantic": ((1.0, True, 0.003, 0.002),), "mixed": ((1.0, True, 0.0029, 0.002),)})
            for w in (0.1, 0.3)]
    fig = plot_phase_diagram(rows, tmp_path / "rank.png", alpha_max=3.0, errors=[b.errors() for b in rows])
    assert (tmp_path / "rank.png").stat().st_size > 0
    ax, wx, bx = fig.axes
    widths = {li.get_gid(): li for li in wx.get_lines()}
    assert list(widths["err_alpha_l"].get_xdata()) == pytest.approx([0.0022, 0.0026])
    assert list(widths["err_semantic_end"].get_xdata()) == [0.03, 0.03] and wx.get_xscale() == "log"
    assert list(widths["err_mixed_end"].get_xdata()) == [0.01, 0.01]
    assert "bracket width" in wx.get_xlabel()
    assert "err_alpha_c" not in widths  # alpha_c found nowhere: no width, and the panel says so
    assert any("alpha_c: not found" in t.get_text() for t in ax.texts)
    drawn = {li.get_label(): li for li in ax.get_lines()}
    assert list(drawn["mixed branch end"].get_xdata()) == pytest.approx([1.7, nan], nan_ok=True)
    failed = drawn["mixed: solver failed beyond"]  # the end past which the solver failed: an open marker
    assert list(failed.get_xdata()) == pytest.approx([nan, 1.9], nan_ok=True) and failed.get_markerfacecolor() == "none"
    gaps = {li.get_label(): list(li.get_ydata()) for li in bx.get_lines()}
    assert gaps["semantic"] == pytest.approx([1e-4]) and gaps["mixed"] == [0.0]
    # each branch in its colour of the left panel (the gaps took matplotlib's cycle: mixed green there, orange left)
    colour = {li.get_label(): li.get_color() for li in bx.get_lines()}
    assert colour == {"semantic": "tab:blue", "mixed": "tab:orange"} == {
        k.removesuffix(" branch end"): drawn[k].get_color() for k in ("semantic branch end", "mixed branch end")}


def test_phase_diagram_draws_the_bayes_optimal_thresholds_of_its_model(tmp_path, branches) -> None:
    """The rows' model gives the thresholds (L = 2: alpha_WR = 1/6, alpha_IT = alpha_AMP = 1/2, one line for both)."""
    sem, pos = branches[:2]
    rows = [Boundaries(omega=0.3, alpha_c=1.25, alpha_l=1.4, semantic_end=1.0, positional_end=math.nan, semantic=sem,
                       positional=pos)]
    fig = plot_phase_diagram(rows, tmp_path / "pd.png", alpha_max=3.0)
    lines = {li.get_gid(): li for li in fig.axes[0].get_lines() if (li.get_gid() or "").startswith("bayes_")}
    assert set(lines) == {"bayes_alpha_weak_recovery", "bayes_alpha_it"}
    assert lines["bayes_alpha_weak_recovery"].get_xdata()[0] == pytest.approx(1 / 6, rel=1e-7)
    assert lines["bayes_alpha_it"].get_xdata()[0] == 0.5
    assert "AMP" in lines["bayes_alpha_it"].get_label()
    bare = plot_phase_diagram(rows, tmp_path / "pd2.png", alpha_max=3.0, bayes=False)
    assert not any((li.get_gid() or "").startswith("bayes_") for li in bare.axes[0].get_lines())
    gap = plot_phase_diagram(rows, tmp_path / "pd3.png", alpha_max=3.0, bayes={"alpha_weak_recovery": 0.5,
                                                                              "alpha_it": 1.0, "alpha_amp": 1.13})
    assert {li.get_gid() for li in gap.axes[0].get_lines()} >= {"bayes_alpha_it", "bayes_alpha_amp"}


def test_phase_diagram_of_a_job_whose_every_task_failed_says_why(tmp_path) -> None:
    rows = [Boundaries(omega=w, alpha_c=math.nan, alpha_l=math.nan, semantic_end=math.nan, positional_end=math.nan,
                       notes=("task failed: ValueError: the proximal map diverged",)) for w in (0.2, 0.3)]
    fig = plot_phase_diagram(rows, tmp_path / "pd.png", alpha_max=3.0, errors=_errors(rows))
    assert (tmp_path / "pd.png").read_bytes()[:4] == b"\x89PNG"
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 0 and len(ax.collections) == 0  # no empty plane with an axis around 0
    (why,) = [t for t in ax.texts if t.get_gid() == "why_empty"]
    assert "nothing to draw" in why.get_text() and "the proximal map diverged" in why.get_text()
    assert why.get_text().count("proximal map diverged") == 1  # the same reason once, not once per omega


def test_curves_figure_says_which_panels_have_nothing_to_draw(tmp_path, branches) -> None:
    """At a grid where the semantic branch does not exist, its panels and Delta e_t say so (no empty legend box,
    no matplotlib warning); the positional branch is still drawn."""
    import warnings

    from attnphase.numerics import sweep
    from attnphase.numerics.config import SolverConfig
    from attnphase.theory.params import ModelParams

    sem = sweep(ModelParams(omega=0.3), [0.1], "semantic", config=SolverConfig(quadrature="gh6"))
    assert not sem.on_branch()
    _, pos, _ = branches
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot_branch_curves(sem, pos, 2e-3, math.nan, math.nan, tmp_path / "curves.png", title="t", alpha_max=2.6)
    eps, m_panel, theta, delta = fig.axes
    why = {i: [t.get_text() for t in ax.texts if t.get_gid() == "why_empty"] for i, ax in enumerate(fig.axes)}
    assert why[2] == ["no semantic point in the alpha range"] and why[3] == ["no alpha of the grid where both branches exist"]
    assert why[0] == why[1] == []
    assert theta.get_legend() is None and delta.get_legend() is None
    assert [t.get_text() for t in eps.get_legend().get_texts()][:1] == ["positional"]  # no entry for the empty semantic


def test_rank_2_phase_diagram_of_a_job_whose_every_task_failed_says_why(tmp_path) -> None:
    import warnings

    from attnphase.numerics.phase.boundary_results import failed_boundaries

    rows = [failed_boundaries(w, "ValueError: the proximal map diverged", r=2) for w in (0.2, 0.3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "No artists with labels found to put in legend"
        fig = plot_phase_diagram(rows, tmp_path / "rank.png", alpha_max=3.0, errors=[b.errors() for b in rows])
    (ax,) = fig.axes
    (why,) = [t.get_text() for t in ax.texts if t.get_gid() == "why_empty"]
    assert "nothing to draw" in why and "task failed: ValueError: the proximal map diverged" in why
    assert "not found in the alpha range" not in why  # they failed: not "not found"


@pytest.mark.parametrize("omegas", [[0.3], [0.1, 0.3]])
def test_bayes_optimal_thresholds_shade_their_regions_with_height_at_one_omega_too(tmp_path, omegas) -> None:
    """The no-recovery and perfect-recovery shadings cover omega: at one omega, a band about it (zero height before)."""
    from attnphase.numerics.jobs.bayes_plots import plot_bayes_diagram

    rows = [{"omega": w, "alpha_weak_recovery": 1 / 6, "err_alpha_weak_recovery": 1e-4, "alpha_it": 0.5,
             "err_alpha_it": 0.0, "alpha_amp": 0.5, "err_alpha_amp": 0.0, "eps_lin": 0.04} for w in omegas]
    curves = {w: [{"eps_g": 0.03, "err_eps_g": 1e-5}, {"eps_g": 0.0, "err_eps_g": 0.0}] for w in omegas}
    fig = plot_bayes_diagram(rows, [0.2, 1.0], curves, tmp_path / "bo.png")
    shades = [c for c in fig.axes[0].collections if isinstance(c, PolyCollection)]
    assert len(shades) == 2
    for c in shades:
        ys = np.concatenate([p.vertices[:, 1] for p in c.get_paths()])
        assert ys.max() - ys.min() > 0.05
        assert ys.min() <= min(omegas) and ys.max() >= max(omegas)


def test_a_figure_title_names_the_model_beyond_the_papers() -> None:
    """The L = 3 figures (P = I and the simplex P) had the L = 2 figures' titles: nothing told them apart; and
    phase_diagram.png named neither sigma nor lambda."""
    from attnphase.numerics.jobs.report import model_shape, model_title
    from attnphase.theory import ModelParams

    assert model_title(ModelParams(sigma=0.8, lam=0.1)) == "sigma = 0.8, lambda = 0.1"
    assert model_title(ModelParams(L=3)) == "sigma = 0.5, lambda = 0.01, L = 3"

    assert model_shape(ModelParams()) == "" and model_shape(ModelParams(L=3)) == "L = 3"
    simplex = ModelParams(L=3, P=np.array([[1.0, -1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    assert model_shape(simplex) == "L = 3, P = 1,-1,0;-1,1,0;0,0,0"
    assert model_shape(ModelParams(A=np.array([[0.3, 0.7], [0.8, 0.2]]))) == "A = 0.3,0.7;0.8,0.2"
