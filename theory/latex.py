"""Every equation of the theory, for a given L, rendered for a terminal, as raw LaTeX, as JSON or as the markdown
document ``docs/derivation.md``: the very sympy expressions the kernels are generated from.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import Any

import sympy as sp

from attnphase.theory.params import ModelParams


@dataclass(frozen=True)
class Equation:
    """One displayed equation ``lhs = rhs`` of a section, with an optional one-line note."""

    section: str
    lhs: Any
    rhs: Any
    note: str = ""


def _attention_equations(L: int) -> list[Equation]:
    from attnphase.theory.attention import attention_explicit, scores, teacher
    from attnphase.theory.symbols import pair_symbols, token_symbols

    sec = "Attention and target (docs/model.md sections 1-2)"
    h = token_symbols("h", L, 1, real=True)
    a, S_exp = scores(h), attention_explicit(h)
    asym, S, T, s, A = (pair_symbols(n, L) for n in ("a", "S", "T", "s", "A"))
    omega = sp.Symbol("omega", nonnegative=True)
    Tex = teacher(s, omega, A)
    eqs = [Equation(sec, asym[l, k], a[l, k], "scores a_lk = h_l h_k") for l in range(L) for k in range(L)]
    eqs += [Equation(sec, S[l, k], S_exp[l, k], "row softmax (evaluated max-shifted)") for l in range(L) for k in range(L)]
    eqs.append(Equation(sec, sp.Derivative(sp.Symbol("S_lk"), sp.Symbol("a_lj")),
                        sp.Symbol("S_lk") * (sp.KroneckerDelta(sp.Symbol("k"), sp.Symbol("j")) - sp.Symbol("S_lj")),
                        "softmax derivative used for every derivative below"))
    eqs += [Equation(sec, T[l, k], Tex[l, k], "target, s = softmax_row(h* h*^T)") for l in range(L) for k in range(L)]
    return eqs


def _loss_and_prox_equations(L: int) -> list[Equation]:
    from attnphase.theory.prox import derive_prox

    pd = derive_prox(L)
    h = list(pd.loss.h)
    loss_f = sp.Function("loss")(*h)
    prox_f = sp.Function("prox")(*h)
    sec_l = "Limit loss (docs/model.md section 2)"
    sec_p = "Proximal objective, gradient and Hessian in h (docs/model.md section 3)"
    eqs = [Equation(sec_l, loss_f, pd.loss.value, "S = S(h), T = T(h*)"), Equation(sec_p, prox_f, pd.value)]
    eqs += [Equation(sec_p, sp.Derivative(prox_f, h[j]), pd.grad[j]) for j in range(L)]
    eqs += [Equation(sec_p, sp.Derivative(prox_f, h[i], h[j]), pd.hess[i, j]) for i in range(L) for j in range(i, L)]
    return eqs


def _channel_equations() -> list[Equation]:
    from attnphase.theory import channel as ch

    s = ch.symbols()
    sec = "Channel side, per token l (docs/model.md sections 2-3)"
    ov, fe, he = ch.token_overlap_exprs(), ch.field_exprs(), ch.hat_overlap_exprs()
    hat = {k: sp.Symbol(n) for k, n in (("qhat", "qhat_l"), ("mhat", "mhat_l"), ("thhat", "thetahat_l"), ("Vhat", "Vhat_l"))}
    eqs = [Equation(sec, s[k], ov[k]) for k in ("q", "theta", "V", "rho")]
    eqs += [Equation(sec, s["rho_tilde"], ch.residual_variance_expr(), "variance of h*_l not explained by xi_l")]
    eqs += [Equation(sec, sp.Symbol("w_l"), fe["w"]), Equation(sec, sp.Symbol("h*_l"), fe["hstar"])]
    eqs.append(Equation(sec, s["g"], (sp.Symbol("hhat_l") - sp.Symbol("w_l")) / s["V"],
                        "hhat = argmin_h sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, h*), the global minimiser"))
    eqs += [Equation(sec, hat[k], he[k]) for k in ("qhat", "mhat", "thhat", "Vhat")]
    return eqs


def _prior_equations(L: int) -> list[Equation]:
    from attnphase.theory.priors.ridge import ridge_exprs

    ex = ridge_exprs(L)
    sec = "Prior side: ridge in closed form (docs/model.md section 3)"
    Lam, Lam_sym = ex["Lam"], sp.Symbol("Lambda")
    eqs = [Equation(sec, Lam_sym, Lam), Equation(sec, sp.Symbol("q_0"), ex["N"] / Lam_sym ** 2),
           Equation(sec, sp.Symbol("V_0"), 1 / Lam_sym)]
    eqs += [Equation(sec, sp.Symbol(f"m_{k + 1}"), sp.expand(ex["m"][k] * Lam) / Lam_sym) for k in range(L)]
    return eqs + [Equation(sec, sp.Symbol("theta_0"), sp.expand(ex["th0"] * Lam) / Lam_sym)]


def _free_entropy_equations(L: int) -> list[Equation]:
    from attnphase.theory.free_entropy import free_entropy_expr
    from attnphase.theory.priors.ridge import ridge_exprs, symbols as prior_symbols
    from attnphase.theory.symbols import token_scalars

    sec = "Test error, free entropy and training objective (docs/model.md section 4)"
    lam, Lam_sym = prior_symbols(L)["lam"], sp.Symbol("Lambda")
    Phi = free_entropy_expr(L).subs(lam, Lam_sym - (ridge_exprs(L)["Lam"] - lam))
    h, w, V = (token_scalars(name, L) for name in ("h", "w", "V"))
    M = sum((h[l] - w[l]) ** 2 / (2 * V[l]) for l in range(L)) + sp.Function("loss")(*h)
    return [
        Equation(sec, sp.Symbol("epsilon_g"), sp.Function("E")(sp.Function("loss")(*w)),
                 "the limit loss at the student's field w (no proximal step), averaged over the channel"),
        Equation(sec, sp.Symbol("Phi"), Phi, "q_l = sigma_l^2 q_0, V_l = sigma_l^2 V_0, theta_l = sigma_l^2 theta_0"),
        Equation(sec, sp.Symbol("M"), sp.Function("min_h")(M), "Moreau envelope, averaged over the channel"),
        Equation(sec, sp.Symbol("e_t"), -sp.Symbol("Phi")),
    ]


def _baseline_equations(L: int) -> list[Equation]:
    from attnphase.theory.baseline import eps_lin_expr

    sec = "Linear positional baseline (docs/model.md section 5)"
    return [Equation(sec, sp.Symbol("epsilon_lin"), eps_lin_expr(L), "s = softmax_row(h* h*^T), h*_l ~ N(0, rho_l)")]


def _bayes_equations(L: int) -> list[Equation]:
    from attnphase.theory.channels.bayes_optimal import bayes_exprs
    from attnphase.theory.symbols import token_scalars

    ex = bayes_exprs(L)
    sec = "Bayes-optimal estimator: channel and Gaussian prior (docs/model.md section 9)"
    w, Y = ex["w"], ex["Y"]
    logz = sp.log(sp.Function("Z_out")(*Y, *w))
    g, sigma2 = token_scalars("g_out", L), token_scalars("sigma", L, "2")
    alpha, q0 = sp.Symbol("alpha"), sp.Symbol("q_0")
    eqs = [Equation(sec, sp.Function("Z_out")(*Y, *w), ex["z_out"],
                    "the sign-blind observation Y = +-(h* + zeta); Ve_l = V_l + Delta rho_l"),
           Equation(sec, sp.Symbol("a"), ex["a"], "E[s | Y, w] = tanh(a)")]
    eqs += [Equation(sec, sp.Derivative(logz, w[l]), ex["g_out"][l], "g_out_l: sympy's derivative of log Z_out, "
                     "written with tanh(a) (the channel's numeric form is tested against both)") for l in range(L)]
    eqs += [Equation(sec, sp.Derivative(logz, w[l], w[k]), ex["dg_out"][l, k]) for l in range(L) for k in range(l, L)]
    return eqs + [
        Equation(sec, ex["Qhat"], alpha * sum(sigma2[l] * sp.Function("E")(g[l] ** 2) for l in range(L)),
                 "Nishimori line: q = m, every hat equal; w_l = sqrt(q_l) xi_l, Y_l = w_l + sqrt(Ve_l) eta_l"),
        Equation(sec, q0, ex["q0"], "the Gaussian prior Q* ~ N(0, rho0 I_d)"),
        Equation(sec, sp.Symbol("V_0"), ex["rho0"] - q0),
        Equation(sec, sp.Function("psi")(ex["Qhat"]), ex["psi"], "the prior's free entropy"),
    ]


def equations(L: int) -> list[Equation]:
    """All equations of the theory for sequence length L (r = 1), in document order."""
    return (_attention_equations(L) + _loss_and_prox_equations(L) + _channel_equations() + _prior_equations(L)
            + _free_entropy_equations(L) + _baseline_equations(L) + _bayes_equations(L))


def _params_lines(params: ModelParams) -> list[str]:
    return [f"{k} = {v}" for k, v in params.to_dict().items()]


#: What the parameters printed beside the equations are: the equations depend on L alone.
SYMBOLIC_NOTE = ("The equations depend on L alone: sigma_l, P, A, omega, lambda and rho0 are symbols in them, and the "
                 "values listed label the model (`attnphase check` evaluates the equations at them).")


def _sections(eqs: list[Equation]) -> list[tuple[str, list[Equation]]]:
    return [(title, list(group)) for title, group in groupby(eqs, key=lambda eq: eq.section)]


def _linear(expr: Any) -> str:
    """One-line form of an expression (``^`` for powers, ``d f / d x`` for derivatives)."""
    if isinstance(expr, sp.Derivative):
        f = _linear(expr.expr)
        xs = " ".join(f"d{_linear(v)}" for v, n in expr.variable_count for _ in range(int(n)))
        order = sum(int(n) for _, n in expr.variable_count)
        return f"d{'' if order == 1 else order} {f} / {xs}"
    return sp.sstr(expr).replace("**", "^")


#: Widest pretty-printed equation shown as a 2-D picture; wider ones are printed on one line.
TERMINAL_WIDTH = 100


def render_terminal(params: ModelParams) -> str:
    """Every equation for a terminal: sympy's unicode pretty form, or one clean line if too wide."""
    lines = [f"attnphase derivation, L = {params.L}, r = {params.r}", "", "Parameters:"]
    lines += ["  " + s for s in _params_lines(params)] + ["", SYMBOLIC_NOTE]
    for title, eqs in _sections(equations(params.L)):
        lines += ["", title, "=" * len(title)]
        for note, group in groupby(eqs, key=lambda eq: eq.note):
            lines += [f"[{note}]"] if note else []
            for eq in group:
                pic = sp.pretty(sp.Eq(eq.lhs, eq.rhs, evaluate=False), use_unicode=True, wrap_line=False)
                wide = max(len(row) for row in pic.splitlines()) > TERMINAL_WIDTH
                lines += [f"{_linear(eq.lhs)} = {_linear(eq.rhs)}" if wide else pic, ""]
    return "\n".join(lines).rstrip() + "\n"


def render_json(params: ModelParams) -> dict[str, Any]:
    """Every equation as one JSON object (``derive --json``): the model, and each equation's section, sides, note."""
    eqs = [{"section": eq.section, "lhs": sp.sstr(eq.lhs), "rhs": sp.sstr(eq.rhs), "lhs_latex": sp.latex(eq.lhs),
            "rhs_latex": sp.latex(eq.rhs), "note": eq.note} for eq in equations(params.L)]
    return {"model": params.to_dict(), "L": params.L, "r": params.r, "note": SYMBOLIC_NOTE, "equations": eqs}


def render_latex(params: ModelParams) -> str:
    """Every equation as raw LaTeX, one per line, sections as LaTeX comments."""
    lines = [f"% attnphase derivation, L = {params.L}, r = {params.r}"]
    lines += ["% " + s for s in _params_lines(params)] + ["% " + SYMBOLIC_NOTE]
    for title, eqs in _sections(equations(params.L)):
        lines += ["", f"% {title}"]
        lines += [f"{sp.latex(eq.lhs)} = {sp.latex(eq.rhs)}" for eq in eqs]
    return "\n".join(lines) + "\n"


def render_markdown(params: ModelParams) -> str:
    """The markdown document (docs/derivation.md for the default L = 2 model)."""
    from attnphase.theory.notes import HANDWRITTEN

    lines = [
        f"# Derivation of the attention model, L = {params.L}",
        "",
        "<!-- Generated by `attnphase derive --markdown` (attnphase.theory.latex); do not edit by hand.",
        "     A test regenerates this file and fails when it is stale. -->",
        "",
        "Symbols as in `docs/model.md`. The equations below are printed from the very sympy",
        "expressions the numeric kernels are generated from.",
        "",
        "Parameters of the model this document was generated for:",
        "",
    ]
    lines += [f"* `{s}`" for s in _params_lines(params)] + ["", SYMBOLIC_NOTE]
    for title, eqs in _sections(equations(params.L)):
        lines += ["", f"## {title}", ""]
        for note, group in groupby(eqs, key=lambda eq: eq.note):
            lines += [f"{note}:", ""] if note else []
            for eq in group:
                lines += ["$$", f"{sp.latex(eq.lhs)} = {sp.latex(eq.rhs)}", "$$", ""]
    lines += ["", HANDWRITTEN.strip(), ""]
    return "\n".join(lines).replace("\n\n\n", "\n\n")
