"""Round-off bounds of the generated code and the sample points of checks 1 and 7."""

from __future__ import annotations

import ast
import math

import numpy as np

from attnphase.theory.params import ModelParams


def generated_op_count(L: int, cse: bool = True, name: str = "prox_value_grad_hess") -> int:
    """Arithmetic operations (binary and unary operators, calls) in a generated one-point function."""
    from attnphase.theory.kernels import scalar_kernel_source

    tree = ast.parse(scalar_kernel_source(L, 1, cse))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return sum(isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Call)) for n in ast.walk(node))
    raise KeyError(name)


def _term_scales(h: np.ndarray, w: np.ndarray, V: np.ndarray, sigma2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per point, bounds on the size of the terms summed in the proximal value and in its derivatives.

    Value: sum_l (|h_l| + |w_l|)^2 / (2 V_l) + 2 L sum_k sigma_k^2 (|S - T| <= 1). Derivatives: each
    derivative of a score a_lk = h_l h_k is at most 2 max(1, |h|), each softmax derivative at most 1,
    so gradient and Hessian terms are below (|h| + |w|) / V + 1 / V + L^2 sum_k sigma_k^2 (2 max(1, |h|))^2.
    """
    L = h.shape[-1]
    hmax = np.maximum(1.0, np.abs(h).max(axis=-1))
    s2 = float(np.sum(sigma2))
    value = np.sum((np.abs(h) + np.abs(w)) ** 2 / (2 * V), axis=-1) + 2 * L * s2
    deriv = np.max((np.abs(h) + np.abs(w) + 1.0) / V, axis=-1) + L**2 * s2 * (2 * hmax) ** 2
    return value, deriv


def _sample_points(params: ModelParams, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """n random points (h, w, V, h*) plus n // 4 at extreme fields (components up to 1e3 in size)."""
    L = params.L
    h, w, hs = rng.normal(scale=1.5, size=(3, n, L))
    V = np.exp(rng.uniform(math.log(0.05), math.log(50.0), size=(n, L)))
    n_ext = max(2, n // 4)
    levels = np.array([-1e3, -30.0, -3.0, 0.0, 1e-3, 3.0, 30.0, 1e3])
    ext = rng.choice(levels, size=(3, n_ext, L)) * rng.uniform(0.5, 1.0, size=(3, n_ext, L))
    V_ext = np.exp(rng.uniform(math.log(0.05), math.log(50.0), size=(n_ext, L)))
    cat = lambda a, b: np.concatenate([a, b], axis=0)  # noqa: E731
    return dict(h=cat(h, ext[0]), w=cat(w, ext[1]), hstar=cat(hs, ext[2]), V=cat(V, V_ext), n_ext=n_ext)
