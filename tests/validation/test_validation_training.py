"""Training (attnphase.validation.training / experiments): GD, Adam, stopping, inits, seeds."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from attnphase.theory.params import ModelParams  # noqa: E402
from attnphase.validation.data import make_teacher, sample  # noqa: E402
from attnphase.validation.experiments import JSON_KEYS, SimSpec, generator, resolve_device, run_simulation  # noqa: E402
from attnphase.validation.measure import overlaps  # noqa: E402
from attnphase.validation.students import prepare, risk  # noqa: E402
from attnphase.validation.training import TrainConfig, initial_Q, train  # noqa: E402


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _problem(d=60, alpha=2.0, seed=0):
    p = ModelParams()
    t = make_teacher(p, d, generator(seed, "teacher"))
    g = prepare(t, sample(t, int(alpha * d), generator(seed, "train")))
    return p, t, g


def test_inits_have_the_documented_overlaps():
    p, t, g = _problem(d=100)
    sem = overlaps(initial_Q("semantic", t, 1, generator(0, "init")), t)
    pos = overlaps(initial_Q("positional", t, 1, generator(0, "init")), t)
    rnd = overlaps(initial_Q("random", t, 1, generator(0, "init"), random_scale=0.1), t)
    assert sem.theta == pytest.approx(1.0) and sem.q == pytest.approx(1.0) and abs(sem.m) < 0.5
    assert pos.m == pytest.approx(1.0) and pos.q == pytest.approx(1.0) and abs(pos.theta) < 0.5
    assert rnd.q == pytest.approx(0.01, rel=0.5)


def test_gd_decreases_risk_monotonically_and_converges():
    p, t, g = _problem()
    Q0 = initial_Q("positional", t, 1, generator(0, "init"))
    values = []
    R_prev = math.inf
    for budget in (0, 1, 2, 5, 10, 30):
        res = train(Q0, g, p.lam, TrainConfig(max_steps=budget))
        values.append(res.objective)
        assert res.objective <= R_prev + 1e-12
        R_prev = res.objective
    assert values[-1] < values[0]
    res = train(Q0, g, p.lam, TrainConfig())
    assert res.converged and res.status == "converged" and res.grad_norm <= 1e-6
    Qv = res.Q.clone().requires_grad_(True)
    (G,) = torch.autograd.grad(risk(Qv, g, p.lam), Qv)
    assert float(G.norm()) / math.sqrt(g.d) == pytest.approx(res.grad_norm, rel=1e-6)


def test_budget_flag():
    p, t, g = _problem()
    Q0 = initial_Q("random", t, 1, generator(0, "init"))
    res = train(Q0, g, p.lam, TrainConfig(max_steps=3))
    assert res.steps == 3 and not res.converged and res.status == "budget"


@pytest.mark.parametrize("init", ["semantic", "positional"])
def test_gd_and_adam_agree_at_convergence(init):
    p, t, g = _problem(d=40)
    Q0 = initial_Q(init, t, 1, generator(1, "init"))
    gd = train(Q0, g, p.lam, TrainConfig(optimizer="gd"))
    adam = train(Q0, g, p.lam, TrainConfig(optimizer="adam"))
    assert gd.converged and adam.converged
    a, b = overlaps(gd.Q, t), overlaps(adam.Q, t)
    # both stop at |grad R|/sqrt(d) <= 1e-6; the smallest curvature is >= lambda = 0.01,
    # so the two minimisers are within ~1e-4 in u = Q/sqrt(d)
    assert a.m == pytest.approx(b.m, abs=5e-4)
    assert a.theta == pytest.approx(b.theta, abs=5e-4)
    assert a.q == pytest.approx(b.q, abs=5e-4)
    assert gd.objective == pytest.approx(adam.objective, rel=1e-7)


def test_float32_runs_and_matches_float64():
    spec = dict(d=60, alpha=2.0, init="semantic", n_test=500)
    r64 = run_simulation(SimSpec(**spec))
    r32 = run_simulation(SimSpec(**spec, dtype="float32"))
    assert r32.converged and r64.converged
    assert r32.theta == pytest.approx(r64.theta, abs=2e-3)
    assert r32.eps_g == pytest.approx(r64.eps_g, rel=1e-2)


def test_float32_gradient_descent_gets_below_its_tolerance_from_every_start():
    """In float32 the Armijo test on a float32 risk saw no decrease below its round-off: from the random and
    positional starts gradient descent crawled at |grad| 1.2e-5 to 2e-5 (alpha 2 to 4), above float32's default
    tolerance 1e-5, and ran out its 20000-step budget (exit 1).  The risk is evaluated in float64: each run
    converges to 1e-6, ten times below that tolerance, to the float64 run's overlaps."""
    for init in ("random", "positional"):
        spec = dict(d=120, alpha=2.0, init=init, n_test=300)
        r32 = run_simulation(SimSpec(**spec, dtype="float32", train=TrainConfig(grad_tol=1e-6, max_steps=3000)))
        r64 = run_simulation(SimSpec(**spec))
        assert r32.converged and r32.grad_norm <= 1e-6 and r32.steps < 3000, (init, r32.status, r32.grad_norm)
        assert r32.m == pytest.approx(r64.m, abs=1e-4) and r32.theta == pytest.approx(r64.theta, abs=1e-4)


def test_simulation_is_seeded_and_complete():
    spec = SimSpec(d=40, alpha=1.0, init="random", seed=7, n_test=300)
    a, b = run_simulation(spec), run_simulation(spec)
    assert tuple(a.to_json()) == JSON_KEYS
    for k in ("m", "theta", "q", "eps_g", "e_t", "eps_lin", "steps"):
        assert getattr(a, k) == getattr(b, k)
    c = run_simulation(SimSpec(d=40, alpha=1.0, init="random", seed=8, n_test=300))
    assert c.e_t != a.e_t
    assert a.n == 40 and a.n_test == 300 and a.device == str(resolve_device("auto"))


def test_semantic_and_positional_runs_share_data():
    """Same seed => same teacher, training and test sets: the linear baseline is identical."""
    s = run_simulation(SimSpec(d=40, alpha=1.5, init="semantic", seed=3, n_test=300))
    p = run_simulation(SimSpec(d=40, alpha=1.5, init="positional", seed=3, n_test=300))
    assert s.eps_lin == p.eps_lin


def test_bad_configs():
    with pytest.raises(ValueError, match="init"):
        SimSpec(d=10, alpha=1.0, init="sideways")
    with pytest.raises(ValueError, match="d \\(embedding dimension\\)"):
        SimSpec(d=1, alpha=1.0, init="semantic")
    with pytest.raises(ValueError, match="alpha"):
        SimSpec(d=10, alpha=-1.0, init="semantic")
    with pytest.raises(ValueError, match="optimizer"):
        TrainConfig(optimizer="sgd")
    with pytest.raises(ValueError, match="dtype"):
        SimSpec(d=10, alpha=1.0, init="semantic", dtype="float16")


def test_a_small_run_reaches_the_default_gradient_tolerance():
    r = run_simulation(SimSpec(d=40, alpha=1.5, init="positional", seed=3, n_test=300))
    assert r.grad_tol == 3e-7  # the float64 default, on |grad_Q R|_F / sqrt(d)
    assert r.converged and r.status == "converged" and r.grad_norm <= r.grad_tol
    js = r.to_json()
    assert js["status"] == "converged" and js["grad_norm"] == r.grad_norm and js["grad_tol"] == 3e-7


def test_a_run_on_a_tiny_step_budget_is_reported_not_converged():
    r = run_simulation(SimSpec(d=40, alpha=1.5, init="positional", seed=3, n_test=300,
                               train=TrainConfig(max_steps=2)))
    assert r.steps == 2 and not r.converged and r.status == "budget" and r.grad_norm > r.grad_tol
    assert r.to_json()["converged"] is False


def _plain_armijo_gd(Q0, g, lam, cfg, steps):
    """Armijo GD written directly on the risk (autograd through Q, every trial point from Q): the reference of
    :func:`train`'s gradient descent, which carries the fields h(Q) along its steps."""
    Q, eta = Q0.clone(), cfg.step0
    for _ in range(steps):
        Qv = Q.clone().requires_grad_(True)
        R = risk(Qv, g, lam)
        (G,) = torch.autograd.grad(R, Qv)
        gn2 = float((G * G).sum())
        while float(risk(Q - eta * G, g, lam)) > float(R.detach()) - cfg.armijo_c * eta * gn2:
            eta *= 0.5
        Q, eta = Q - eta * G, eta * cfg.grow
    return Q


def test_gd_carrying_the_fields_takes_the_steps_of_plain_gd():
    """Past several refreshes of the carried fields (FIELDS_REFRESH steps each) the iterates equal those of Armijo GD
    on the risk itself to round-off, at r = 2 with positions; and the gradient through the fields is autograd's."""
    from attnphase.validation.students import field_losses, fields, fields_gradient, transposed_tokens
    from attnphase.validation.training import FIELDS_REFRESH

    p = ModelParams(r=2, omega=0.2)
    t = make_teacher(p, 40, generator(1, "teacher"))
    g = prepare(t, sample(t, 60, generator(1, "train")))
    Q0 = initial_Q("random", t, 2, generator(1, "init"), random_scale=0.5)
    Qv = Q0.clone().requires_grad_(True)
    (auto,) = torch.autograd.grad(field_losses(fields(Qv, g.X, g.positions), g).sum(), Qv)
    hv = fields(Q0, g.X, g.positions).requires_grad_(True)
    (dh,) = torch.autograd.grad(field_losses(hv, g).sum(), hv)
    torch.testing.assert_close(fields_gradient(dh, g, transposed_tokens(g)), auto, rtol=1e-12, atol=1e-15)
    steps = 3 * FIELDS_REFRESH + 5
    cfg = TrainConfig(max_steps=steps, grad_tol=1e-14)
    res = train(Q0, g, p.lam, cfg)
    assert res.steps == steps and res.status == "budget"
    torch.testing.assert_close(res.Q, _plain_armijo_gd(Q0, g, p.lam, cfg, steps), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("lam", [-1.0, math.nan, math.inf])
def test_train_refuses_a_ridge_penalty_that_is_not_a_finite_non_negative_number(lam):
    """train(Q0, g, -1.0) or NaN ran and returned status 'stalled'."""
    p, t, g = _problem(d=30)
    with pytest.raises(ValueError, match="lam"):
        train(initial_Q("semantic", t, 1, generator(0, "init")), g, lam, TrainConfig(max_steps=2))


def test_a_torch_dtype_is_recorded_by_its_name() -> None:
    """SimSpec(dtype=torch.float32) ran, and its result's dtype was the torch object: json.dumps of the record
    raised TypeError."""
    import json

    spec = SimSpec(d=20, alpha=1.0, init="semantic", device="cpu", dtype=torch.float32)
    assert spec.dtype == "float32" and spec == SimSpec(d=20, alpha=1.0, init="semantic", device="cpu", dtype="float32")
    rec = run_simulation(spec)
    assert rec.dtype == "float32" and json.loads(json.dumps(rec.to_dict()))["dtype"] == "float32"


def test_the_library_refuses_an_unknown_stream_a_negative_seed_and_a_missing_cuda(monkeypatch) -> None:
    """generator(0, "foo") raised KeyError: 'foo', generator(-1, ...) numpy's 'expected non-negative integer', and
    SimSpec(device="cuda") on a machine without CUDA torch's AssertionError, deep in the run."""
    with pytest.raises(ValueError, match="stream must be one of"):
        generator(0, "foo")
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        generator(-1, "test")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="CUDA is not available"):
        resolve_device("cuda:0")
    with pytest.raises(ValueError, match="CUDA is not available"):
        run_simulation(SimSpec(d=20, alpha=1.0, init="semantic", device="cuda"))


@pytest.mark.parametrize("kw, needle", [(dict(adam_betas=(1.5, 0.9)), "adam_betas"), (dict(min_step=10.0), "min_step"),
                                        (dict(adam_min_lr=0.5), "adam_min_lr"), (dict(adam_patience=0), "adam_patience")])
def test_train_config_refuses_settings_that_cannot_run(kw, needle) -> None:
    """adam_betas (1.5, 0.9) was refused only at run time, by torch, without the option's name; min_step above step0,
    adam_min_lr above adam_lr and adam_patience 0 were taken."""
    with pytest.raises(ValueError, match=needle):
        TrainConfig(**kw)


@pytest.mark.parametrize("optimizer", ["gd", "adam"])
def test_a_risk_that_is_not_finite_stops_training_as_diverged(optimizer) -> None:
    """simulate --sigma 1e300: the risk and its gradient are NaN from the start; gradient descent called that
    'stalled' (the line search found no decrease) and Adam ran its whole budget of NaN steps (61 s), then the
    observables' SVD raised LinAlgError.  Both stop at once, status 'diverged', the start kept."""
    p = ModelParams(sigma=(1e300, 1e300))
    t = make_teacher(p, 30, generator(0, "teacher"))
    g = prepare(t, sample(t, 30, generator(0, "train")))
    Q0 = initial_Q("random", t, 1, generator(0, "init"))
    res = train(Q0, g, p.lam, TrainConfig(optimizer=optimizer, max_steps=50))
    assert res.status == "diverged" and not res.converged and res.steps == 0
    assert bool(torch.isfinite(res.Q).all()) and torch.equal(res.Q, Q0)


def test_the_number_of_samples_rounds_halves_up() -> None:
    """n = round(alpha d) rounded halves to even: alpha d = 12.5 gave 12 samples where 13.5 gave 14, and 0.5 none."""
    from attnphase.validation.data import n_samples

    assert [n_samples(0.5, 25), n_samples(0.5, 27), n_samples(0.25, 2), n_samples(0.8, 1000)] == [13, 14, 1, 800]
    with pytest.raises(ValueError, match="0 training samples"):
        n_samples(0.2, 2)


def test_the_library_refuses_a_student_rank_below_1_and_an_omega_outside_0_1() -> None:
    """initial_Q(r=0) returned a (d, 0) student; target_attention(omega=1.5) a target with negative weights."""
    from attnphase.validation.data import target_attention

    p, t, g = _problem()
    with pytest.raises(ValueError, match="rank"):
        initial_Q("random", t, 0, generator(0, "init"))
    hs = torch.zeros((3, 2, 1), dtype=torch.float64)
    A = torch.tensor(p.A_array)
    assert torch.allclose(target_attention(hs, 1.0, A), A.expand(3, 2, 2))
    with pytest.raises(ValueError, match="omega"):
        target_attention(hs, 1.5, A)
