"""AMP against its own state evolution iteration by iteration, from AMP's own start (docs/bayes-optimal.md,
"AMP at finite d").

The Bayes-optimal state evolution of numerics/se/bayes.py lives on the Nishimori line (q = m, v = rho0 - q).
AMP's default start is off it: ``q_0 = init_scale rho0`` but ``m_0 ~ sqrt(init_scale / d) rho0`` (validation/amp.py).
The state evolution of GAMP (validation/amp.py's iteration) from any ``(m, q, v)``, per token with
``c_l = sigma_l^2``: the teacher and estimated fields are jointly Gaussian,

    h*_l = sigma_l a_l,  w_l = sigma_l b_l,  (a_l, b_l) ~ N(0, [[rho0, m], [m, q]]),  V_l = sigma_l^2 v,
    g_l  = g_out(h*; w, V)_l   (sign-blind channel, theory/channels/bayes_optimal.py; even in h*)
    qhat = alpha sum_l sigma_l^2 E[g_l^2],    mhat = alpha sum_l sigma_l^2 E[d g_l / d h*_l],
    Ahat = -alpha sum_l sigma_l^2 E[dg_out[l, l]]
    m' = rho0 mhat / (1 / rho0 + Ahat),   q' = (rho0 mhat^2 + qhat) / (1 / rho0 + Ahat)^2,   v' = 1 / (1 / rho0 + Ahat)

(the prior side: ``B = F^T g + Ahat Q = mhat Q* + sqrt(qhat) z``, then the Gaussian prior's posterior mean).  On the
Nishimori line it is numerics/se/bayes.py's one-dimensional map.  The expectations are plain Monte Carlo over
``(a, b)`` with antithetic pairs ``b -> -b`` at the noise part (so ``mhat = 0`` exactly at ``m = 0``).

What it prints: (0) one step on the Nishimori line against numerics/se/bayes.py's map (they agree to the Monte
Carlo error, ~1e-3); (1) the state evolution from AMP's random start with ``m_0 = 1e-9``: its plateau at the noise
fixed point ``(m = 0, q = q_noise)`` -- stable in q, a saddle -- and the growth factor of m there, against
``alpha / alpha_WR`` (m's growth at the start); (2) for a few seeds at one d, AMP's ``|m_t|`` and ``q_t`` beside the
state evolution started from that run's own ``(|m_0|, q_0, rho0)``, at t = 0, 5, 10, 20, 40, 80, 160, 320.

    python studies/amp_state_evolution.py --alpha 0.25 --d 2000 --seeds 4     # ~2 min on a free core
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch

from attnphase.numerics.se.bayes import BayesModel, sign_rule, solve_bayes
from attnphase.numerics.se.bayes import se_step as nishimori_step
from attnphase.theory.params import ModelParams
from attnphase.validation.amp import AmpConfig, gamp, revealed_fields
from attnphase.validation.data import make_teacher, n_samples, sample
from attnphase.validation.experiments import generator


def se_step(alpha: float, m: float, q: float, v: float, sigma: np.ndarray, rho0: float,
            A: np.ndarray, B: np.ndarray) -> tuple[float, float, float]:
    """One step of the module doc's state evolution on the Monte Carlo nodes (A, B): (N, L) standard normals,
    B holding antithetic pairs."""
    a = math.sqrt(rho0) * A
    b = (m / rho0) * a + math.sqrt(max(q - m * m / rho0, 0.0)) * B
    h, w, V = sigma * a, sigma * b, sigma ** 2 * v
    t = np.tanh((h * w / V).sum(axis=1, keepdims=True))
    g = (t * h - w) / V
    dg = (1.0 - t * t) * (h / V) ** 2 - 1.0 / V
    dgdh = (t + (1.0 - t * t) * h * w / V) / V  # d g_l / d h*_l
    s2 = sigma ** 2
    qhat = alpha * float((s2 * (g * g).mean(axis=0)).sum())
    mhat = alpha * float((s2 * dgdh.mean(axis=0)).sum())
    Ahat = -alpha * float((s2 * dg.mean(axis=0)).sum())
    prec = 1.0 / rho0 + Ahat
    return rho0 * mhat / prec, (rho0 * mhat ** 2 + qhat) / prec ** 2, 1.0 / prec


def trajectory(alpha: float, m0: float, q0: float, v0: float, steps: int, params: ModelParams,
               nodes: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """(steps + 1, 3): (m_t, q_t, v_t) of the state evolution from (m0, q0, v0)."""
    sigma = np.asarray(params.sigma, dtype=float)
    out = [(m0, q0, v0)]
    for _ in range(steps):
        out.append(se_step(alpha, *out[-1], sigma, params.rho0, *nodes))
    return np.asarray(out)


def mc_nodes(L: int, pairs: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((pairs, L)), rng.standard_normal((pairs, L))
    return np.vstack([A, A]), np.vstack([B, -B])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=0.25)
    ap.add_argument("--d", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=100_000, help="Monte Carlo pairs of the state evolution")
    ap.add_argument("--steps", type=int, default=320)
    args = ap.parse_args()
    torch.set_num_threads(1)
    p = ModelParams()
    nodes = mc_nodes(p.L, args.pairs)
    cfg = AmpConfig(max_iter=args.steps)
    wr = 1.0 / (p.L * (p.L + 1))
    n = n_samples(args.alpha, args.d)
    alpha = n / args.d
    q0 = solve_bayes(BayesModel.of(p), alpha, "uninformative").q0
    tr = trajectory(alpha, 1e-9, cfg.init_scale * p.rho0, p.rho0, args.steps, p, nodes)
    m, q = tr[:, 0], tr[:, 1]
    # the plateau: m still below 1e-4 while q has stopped moving (relative change < 1e-3 per iteration)
    flat = [t for t in range(5, m.size - 1) if m[t] < 1e-4 and abs(q[t + 1] - q[t]) < 1e-3 * q[t]]
    print(f"alpha = {alpha:g} (alpha / alpha_WR = {alpha / wr:.3f}); the Nishimori state evolution's q0 = {q0:.4f}")
    model, rule = BayesModel.of(p), sign_rule(p.L)
    sigma = np.asarray(p.sigma, dtype=float)
    check = ", ".join(f"q = {x}: (m', q', v') = ({a:.4f}, {b:.4f}, {c:.4f}) against q0' = "
                      f"{nishimori_step(model, rule, alpha, x):.4f}"
                      for x in (0.05, 0.3, 0.5) for a, b, c in [se_step(alpha, x, x, p.rho0 - x, sigma, p.rho0, *nodes)])
    print(f"  on the Nishimori line (m = q, v = rho0 - q) one step against numerics/se/bayes.py's map: {check}")
    if flat:
        t = flat[len(flat) // 2]
        print(f"  state evolution from m_0 = 1e-9, q_0 = {cfg.init_scale:g} rho0: plateau at the noise fixed point "
              f"m = 0, q = {q[t]:.4f}, v = {tr[t, 2]:.4f} (iterations {flat[0]} to {flat[-1]}); m grows there by "
              f"{m[t + 1] / m[t]:.3f} per iteration; final m = {m[-1]:.4f}, q = {q[-1]:.4f} after {args.steps}")
    else:
        print(f"  state evolution from m_0 = 1e-9: no plateau; final m = {m[-1]:.4f}, q = {q[-1]:.4f}")
    ts = [t for t in (0, 5, 10, 20, 40, 80, 160, 320) if t <= args.steps]
    for seed in range(args.seeds):
        teacher = make_teacher(p, args.d, generator(seed, "teacher"))
        data = sample(teacher, n, generator(seed, "train"))
        g = generator(seed, "amp")
        r = gamp(data.X, revealed_fields(data.hstar, g), p.rho0, teacher.Qstar, g, cfg)
        am, aq = np.abs(np.asarray(r.theta_path)), np.asarray(r.q_path)
        se = trajectory(alpha, am[0], aq[0], p.rho0, args.steps, p, nodes)
        cols = "; ".join(f"t={t}: AMP {am[t]:.3f}/{aq[t]:.3f} SE {se[t, 0]:.3f}/{se[t, 1]:.3f}"
                         for t in ts if t < am.size)
        print(f"  seed {seed} (d = {args.d}, {r.status}), |m|/q: {cols}")


if __name__ == "__main__":
    main()
