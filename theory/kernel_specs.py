"""The functions generated into the kernel modules of a channel (docs/model.md sections 2-3, 7), from
:func:`attnphase.theory.prox.derive_loss` / :func:`~attnphase.theory.prox.derive_prox`: the matrix form, every r
(:func:`matrix_specs`, h read as ``h[..., l, a]``), and the fields form, r = 1 (:func:`field_specs`, h read as
``h[..., l]``, with the proximal objective generated whole). Sympy is imported only when a module is
generated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from attnphase.theory.channels import default_channel
from attnphase.theory.codegen import Argument, FunctionSpec

if TYPE_CHECKING:
    from attnphase.theory.prox import Derivation

#: The fields-form functions rendered one point per call.
SCALAR_FUNCTIONS = ("loss", "prox_value", "prox_value_grad_hess")


def _outputs(d: Derivation, name: str, fields: Sequence[Any]) -> tuple[tuple[str, Any], ...]:
    """(name, d.value), the gradient and the upper triangle (row-major) of the Hessian of ``d`` in ``fields``."""
    n = len(fields)
    out = [(name, d.value)]
    out += [(f"d {name} / d {fields[j]}", d.grad[j]) for j in range(n)]
    out += [(f"d2 {name} / d {fields[i]} d {fields[j]}", d.hess[i, j]) for i in range(n) for j in range(i, n)]
    return tuple(out)


def field_specs(L: int, channel: Any = None) -> list[FunctionSpec]:
    """The fields-form functions of ``channel``'s loss at r = 1 (the batched module): ``scores``, ``target``,
    ``loss``, ``loss_grad_hess``, ``prox_value``, ``prox_value_grad_hess``."""
    import sympy as sp

    from attnphase.theory.attention import scores, teacher
    from attnphase.theory.prox import derive_prox
    from attnphase.theory.symbols import pair_symbols

    channel = default_channel(channel)
    pd = derive_prox(L, channel)
    ld = pd.loss
    h = list(ld.h)
    a = scores(ld.h)
    Sstar = pair_symbols("s", L, positive=True)
    A = pair_symbols("A", L, nonnegative=True)
    omega = sp.Symbol("omega", nonnegative=True)
    Tex = teacher(Sstar, omega, A)
    arg_h = Argument("h", h, "student fields h_l")
    arg_S = Argument("S", ld.S, "attention S(h)[l, k] = softmax_k(h_l h_k), computed max-shifted")
    arg_T = Argument("T", ld.T, "target attention T(h*)[l, k]")
    arg_s2 = Argument("sigma2", list(ld.sigma2), "per-token variances sigma_k^2")
    arg_w = Argument("w", list(pd.w), "field means w_l")
    arg_V = Argument("V", list(pd.V), "variances V_l > 0")

    # "basic" cse saves ~20 % of the operations but takes ~10 s on the L = 4 Hessian
    opt = "basic" if L <= 3 else None
    return [
        FunctionSpec(
            "scores", (arg_h,), tuple((f"a_{l + 1}{k + 1} = h_{l + 1} h_{k + 1}", a[l, k]) for l in range(L) for k in range(L)),
            "Attention scores a_lk = h_l . h_k, row-major.",
        ),
        FunctionSpec(
            "target",
            (Argument("Sstar", Sstar, "teacher softmax s = softmax_row(h* h*^T)"),
             Argument("omega", omega, "mixing weight"), Argument("A", A, "row-stochastic positional attention A")),
            tuple((f"T_{l + 1}{k + 1}", Tex[l, k]) for l in range(L) for k in range(L)),
            "Target attention T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A, row-major.",
        ),
        FunctionSpec(
            "loss", (arg_S, arg_T, arg_s2), (("loss", ld.value),),
            f"The channel's limit loss l(S(h), T(h*)) ({channel.name}; docs/model.md section 2).",
        ),
        FunctionSpec(
            "loss_grad_hess", (arg_h, arg_S, arg_T, arg_s2), _outputs(ld, "loss", h),
            "Limit loss, its gradient and Hessian (upper triangle, row-major) in h.",
            opt,
        ),
        FunctionSpec(
            "prox_value", (arg_h, arg_w, arg_V, arg_S, arg_T, arg_s2), (("prox", pd.value),),
            "Proximal objective sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T) alone (for line searches; "
            "docs/model.md section 3).",
        ),
        FunctionSpec(
            "prox_value_grad_hess", (arg_h, arg_w, arg_V, arg_S, arg_T, arg_s2),
            _outputs(pd, "prox", h),
            "Proximal objective sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T), gradient and Hessian "
            "(upper triangle, row-major) in h (docs/model.md section 3).",
            opt,
        ),
    ]


def scalar_field_specs(L: int, channel: Any = None) -> list[FunctionSpec]:
    """The fields-form functions rendered one point per call (:data:`SCALAR_FUNCTIONS`)."""
    return [s for s in field_specs(L, channel) if s.name in SCALAR_FUNCTIONS]


def matrix_specs(L: int, r: int, channel: Any = None) -> list[FunctionSpec]:
    """The matrix-form functions of ``channel``'s loss for (L, r), batched and one point per call alike:
    ``loss_grad_hess`` and ``loss`` (the value alone, in S: ``loss_grad_hess``'s first output)."""
    from attnphase.theory.prox import derive_loss

    ld = derive_loss(L, r, default_channel(channel))
    n = L * r
    args = (
        Argument("h", ld.h, "student fields h[l, a] (row l is h_l in R^r)"),
        Argument("S", ld.S, "attention S(h)[l, k] = softmax_k(h_l . h_k), computed max-shifted"),
        Argument("T", ld.T, "target attention T(h*)[l, k]"),
        Argument("sigma2", list(ld.sigma2), "per-token variances sigma_k^2"),
    )
    opt = "basic" if n <= 4 else None
    return [FunctionSpec("loss_grad_hess", args, _outputs(ld, "loss", list(ld.h)),
                         "Limit loss, gradient and Hessian (upper triangle, row-major) in the L r entries of h.", opt),
            FunctionSpec("loss", args[1:], (("loss", ld.value),), "Limit loss in S(h).", opt)]
