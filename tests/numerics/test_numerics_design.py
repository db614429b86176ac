"""The numerics core's design, as properties: one configuration, a model-free fixed-point solver,
the SE map = update o update_hat, one place for branch ends, no hidden module-level caches."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from attnphase.numerics import SolverConfig, se_step, sweep, update
from attnphase.numerics.config import QUADRATURE_ROLES
from attnphase.numerics.se.fixed_point import FixedPointSolver
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.quadrature.rules import make_rule
from attnphase.numerics.se.se_map import hat_step
from attnphase.theory.params import ModelParams
from toy_maps import AffineMap as _AffineMap

NUMERICS = Path(__file__).resolve().parents[2] / "numerics"


@pytest.mark.parametrize("warm", [False, True])
def test_fixed_point_solver_solves_a_model_free_map(warm: bool) -> None:
    rng = np.random.default_rng(0)
    A = 0.5 * rng.standard_normal((4, 4)) / 2
    b = rng.standard_normal(4)
    x_star = np.linalg.solve(np.eye(4) - A, b)
    res = FixedPointSolver(_AffineMap(A, b, exact_every=3), SolverConfig(tol=1e-12)).solve(np.zeros(4), warm=warm)
    assert res.converged and res.evaluation.exact
    assert np.allclose(res.evaluation.x, x_star, atol=1e-10)
    assert res.residual <= 1e-12


def test_fixed_point_solver_reports_failure_with_its_best_point() -> None:
    """x -> x + 1 has no fixed point: the solve ends not converged, with its best exact evaluation
    (residual 1 / max(1, |x|)) and a message, within its evaluation budget."""
    res = FixedPointSolver(_AffineMap(np.eye(1), np.array([1.0])), SolverConfig(max_iter=5, anderson_budget=5)).solve(np.array([5.0]))
    assert not res.converged
    assert res.evaluation is not None and res.evaluations <= 5
    assert "not converged" in res.message and np.isfinite(res.residual)


def test_se_step_is_update_of_update_hat() -> None:
    """The map the solver iterates equals update(update_hat(channel moments)) on the same rule."""
    p = ModelParams(omega=0.3)
    ov = Overlaps(q0=0.4, V0=50.0, m=[0.0, 0.0], th0=0.5)
    rule = make_rule(2, "gh6")  # axis-aligned: the SE map uses it whole
    new, step = se_step(p, 2.0, ov, rule=rule)
    hat, mom = hat_step(p, 2.0, ov, rule)
    assert np.array_equal(new.to_vector(), update(p, hat).to_vector())
    assert np.array_equal(step.hat.qhat, hat.qhat) and step.moments.E_M == mom.E_M


def test_config_is_validated_and_variants_shift_every_rule() -> None:
    for bad in (dict(prox="nearest"), dict(backend="cuda"), dict(branch_end="guess"), dict(tol=0.0),
                dict(quadrature="sobolX"), dict(alpha_c_quadrature="gauss"), dict(damping=1.0)):
        with pytest.raises(ValueError):
            SolverConfig(**bad)
    cfg = SolverConfig(quadrature="sobol12", e_t_quadrature="sobol16:1:3", alpha_c_quadrature="gh6")
    v = cfg.variant(2)
    assert (v.quadrature, v.e_t_quadrature, v.alpha_c_quadrature, v.bifurcation_quadrature) == (
        "sobol12:1:2", "sobol16:1:5", "gh10", "sobol15:4:2")
    assert cfg.variant(0) is cfg
    assert set(QUADRATURE_ROLES) <= set(cfg.as_dict())


def test_rule_blocks_partition_the_pooled_rule() -> None:
    """sobolK:R:S@j is the j-th of the R scramblings of sobolK:R:S: the blocks' nodes, stacked, are the
    pooled rule's, so an expectation on the pooled rule is the mean of the blocks' (what the error bars
    of numerics/errors/replicates.py rest on); a block selector needs a rule of several scramblings."""
    from attnphase.numerics.quadrature.rules import make_rule, replicates, rule_blocks, rule_nodes, rule_variant

    pooled = make_rule(2, "sobol6:3:5")
    blocks = [make_rule(2, b) for b in rule_blocks("sobol6:3:5")]
    assert [b.size for b in blocks] == [64] * 3 and rule_nodes(2, "sobol6:3:5@1") == 64
    assert np.array_equal(np.concatenate([b.nodes for b in blocks]), pooled.nodes)
    f = np.cos(pooled.nodes.sum(axis=1))
    means = [float(b.weights @ np.cos(b.nodes.sum(axis=1))) for b in blocks]
    assert float(pooled.weights @ f) == pytest.approx(np.mean(means), rel=1e-13)
    assert len(set(means)) == 3  # independent scramblings differ
    assert replicates("sobol6:3:5") == 3 and replicates("sobol6:3:5@2") == 1 and rule_blocks("sobol12") == []
    assert rule_variant("sobol6:3:5@2", 1) == "sobol6:3:6@2"
    # a rotated grid's replicates are other rotations of the same order (its seed kept at k = 0: ghr10:5 and
    # ghr10:7 had the same replicates, of seed 0); a plain grid's, higher orders
    assert [rule_variant("ghr10:5", k) for k in range(3)] == ["ghr10:5", "ghr10:6", "ghr10:7"]
    assert [rule_variant("gh10", k) for k in range(3)] == ["gh10", "gh12", "gh14"]
    for bad in ("sobol6:3:5@3", "sobol6@1", "gh6@0", "sobol6:3:5@x"):
        with pytest.raises(ValueError):
            make_rule(2, bad)


def test_sobol_nodes_are_cached_on_disk_and_reloaded_bit_for_bit(tmp_path: Path) -> None:
    """A Sobol rule drawn once is kept in the cache: a second process loads the same nodes bit for bit without
    importing scipy.stats (the slow import of a warm start); an unreadable cache file is drawn again."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import sys, json, hashlib\n"
        "from attnphase.numerics.quadrature.rules import make_rule\n"
        "nodes = make_rule(2, 'sobol7:2:3@1').nodes\n"
        "print(json.dumps({'sha': hashlib.sha256(nodes.tobytes()).hexdigest(), 'stats': 'scipy.stats' in sys.modules}))"
    )
    env = dict(os.environ, ATTNPHASE_CACHE_DIR=str(tmp_path))

    def run() -> dict:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold = run()
    cached = list((tmp_path / "rules").glob("sobol_d4_m7_s3_r2_b1_*.npy"))
    assert cold["stats"] and len(cached) == 1
    warm = run()
    assert warm == {"sha": cold["sha"], "stats": False}
    cached[0].write_bytes(b"garbage")
    assert run() == cold


def test_a_warm_solve_imports_neither_scipy_optimize_special_nor_stats() -> None:
    """Each costs a third to half a second of every command's start-up: a solve whose rules are in the cache needs no
    root finder and no Phi^{-1}, so a second solve in a fresh process imports none of them."""
    import subprocess
    import sys

    code = (
        "import contextlib, io, sys\n"
        "from attnphase.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['solve', '--alpha', '2', '--omega', '0.3', '--branch', 'semantic', '--precision', 'fast'])\n"
        "print(sorted(m for m in ('scipy.optimize', 'scipy.special', 'scipy.stats') if m in sys.modules))"
    )

    def run() -> str:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True
                              ).stdout.strip().splitlines()[-1]

    run()  # the rules and kernels into the cache (if this is the first run on the machine)
    assert run() == "[]"


def test_phase_boundaries_give_both_branches_the_same_config(monkeypatch) -> None:
    """Regression: the branch-end strategy and the bifurcation rule reached only the semantic sweep
    (``phase-diagram --branch-end trace`` never reached the positional branch; ``--error-estimate``
    never varied the positional bifurcation rule)."""
    from attnphase.numerics.phase import boundaries, scalar_boundaries
    from attnphase.numerics.phase.continuation import BranchSweep

    seen = {}

    def fake_sweep(params, alphas, branch, *, config=None, **kw):
        seen[branch] = config
        return BranchSweep(branch, [])

    monkeypatch.setattr(scalar_boundaries, "sweep", fake_sweep)
    cfg = SolverConfig(branch_end="trace").variant(1)
    boundaries.phase_boundaries(ModelParams(omega=0.3), [1.0, 2.0], config=cfg)
    assert seen["semantic"] is cfg and seen["positional"] is cfg


def test_semantic_sweep_solves_a_grid_point_just_above_the_branch_end() -> None:
    """Regression: ``sweep --omega 0.3 --alpha 0.8:2.4:16 --branch semantic`` reported alpha = 0.8
    (above the branch's end at ~0.71, where a plain solve converges to theta = 0.232 on sobol12) as not
    converged: the warm step with the continuation's short budget failed and nothing else was tried."""
    res = sweep(ModelParams(omega=0.3), np.linspace(0.8, 2.4, 16), "semantic", config=SolverConfig())
    first = res.points[0]
    assert first.alpha == pytest.approx(0.8)
    assert first.status.converged and first.branch == "semantic"
    # the semantic branch there: th0 = 0.22-0.25 on independent rules (error bar 0.019 on sobol10:4), not a
    # point near the agnostic one (th0 ~ 0)
    assert 0.2 < first.overlaps.th0 < 0.3
    assert all(p.status.converged and p.branch == "semantic" for p in res.points)
    # the branch ends at ~0.71, below the grid: where a failed warm step located it, it lies there
    assert math.isnan(res.end.alpha) or (res.end.alpha < 0.8 and res.end.kind == "bifurcation")


def _module_level_caches(path: Path) -> list[str]:
    """lru_cache/cache decorators and module-level mutable containers assigned at import time."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                name = ast.unparse(d)
                if "lru_cache" in name or name.endswith("cache"):
                    found.append(f"{path.name}:{node.name} @{name}")
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            empty = isinstance(value, (ast.Dict, ast.List, ast.Set)) and not (
                getattr(value, "keys", None) or getattr(value, "elts", None))
            made = isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in (
                "dict", "list", "set", "WeakKeyDictionary", "WeakValueDictionary", "defaultdict", "OrderedDict")
            if empty or made:
                found.append(f"{path.name}:{ast.unparse(node)[:40]}")
    return found


def test_unique_rows_is_numpys_unique_along_rows() -> None:
    """The orbit reduction's lexsort-based unique rows equal np.unique(axis=0, return_inverse=True): the same rows
    in the same order, the same inverse (a reduced rule's node order, hence every sum over it, is unchanged)."""
    from attnphase.numerics.quadrature.rules import _unique_rows

    rng = np.random.default_rng(3)
    a = np.round(rng.standard_normal((500, 4)), 1)  # coarse: many equal rows, ties in leading columns
    a = np.concatenate([a, a[:200], -a[:50]])
    rng.shuffle(a)
    uniq, inv = _unique_rows(a)
    ref_uniq, ref_inv = np.unique(a, axis=0, return_inverse=True)
    np.testing.assert_array_equal(uniq, ref_uniq)
    np.testing.assert_array_equal(inv, ref_inv.reshape(-1))
    np.testing.assert_array_equal(uniq[inv], a)


def test_numerics_holds_no_hidden_module_level_caches() -> None:
    found = [c for f in sorted(NUMERICS.rglob("*.py")) for c in _module_level_caches(f)]
    assert found == []


@pytest.mark.heavy
def test_a_cold_cache_announces_code_generation_and_compilation_once(tmp_path, monkeypatch, capsys) -> None:
    """First run on an empty cache: one line for the generated kernels and one for the numba JIT,
    on stderr; the second run is silent (everything is read from the cache)."""
    import subprocess
    import sys

    from attnphase.numerics.prox import compiled as prox_compiled

    # numba is a dependency (pyproject.toml): an install without it is broken, not a reason to skip
    assert prox_compiled.available(), "numba is not importable"
    env = {**__import__("os").environ, "ATTNPHASE_CACHE_DIR": str(tmp_path), "ATTNPHASE_QUIET": "0"}
    code = ("from attnphase.numerics import SolverConfig, solve; from attnphase.theory.params import ModelParams; "
            "solve(ModelParams(), 2.0, 'semantic', config=SolverConfig(quadrature='sobol6'))")
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    lines = first.stderr.strip().splitlines()
    assert len(lines) == 2 and "generating the kernels for L = 2" in lines[0] and "compiling" in lines[1], lines
    assert second.stderr.strip() == ""




def test_the_code_hash_leaves_out_only_presentation_that_no_task_code_imports() -> None:
    """numerics_version hashes theory/ and numerics/ but for PRESENTATION: each entry names a file or
    folder that exists, and no hashed module imports one of them (a task would run unhashed code)."""
    from test_import_layers import import_graph, project_modules

    from attnphase.numerics.jobs.tasks import PRESENTATION

    root = NUMERICS.parent
    bases = [root / "theory", NUMERICS]
    for entry in PRESENTATION:
        assert any((base / entry).exists() for base in bases), entry
    relative = {name: str(path.relative_to(base)) for name, path in project_modules(root).items()
                for base in bases if base in path.parents}
    shown = {name for name, rel in relative.items() if rel.startswith(PRESENTATION)}
    assert "attnphase.numerics.commands.solve" in shown and "attnphase.numerics.se.state_evolution" not in shown
    graph = import_graph(root)
    assert sorted((name, sorted(graph[name] & shown)) for name in relative
                  if name not in shown and graph[name] & shown) == []
