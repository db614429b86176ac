"""Embedding a restricted model into the unrestricted architecture (docs/histogram.md, "Re-parameterisation"):
``W_Q'[S] = W_Q``, zero on the other half's rows (the same for ``W_K``), every other parameter copied, so that
``h W_Q' = h[S] W_Q`` and both models compute the same function.
"""

from __future__ import annotations

import dataclasses

import torch

from attnphase.validation.histogram.model import HistogramTransformer


def embed_unrestricted(model: HistogramTransformer) -> HistogramTransformer:
    """An unrestricted (``restriction="both"``) model computing the same function as ``model``, on its device,
    sharing no storage with it (an unrestricted ``model`` is copied as is)."""
    config = model.config
    full = HistogramTransformer(dataclasses.replace(config, restriction="both"))
    full = full.to(device=model.w_q.device, dtype=model.w_q.dtype)
    rows = config.qk_slice()
    with torch.no_grad():
        for name, param in full.named_parameters():
            source = model.get_parameter(name)
            if name in ("w_q", "w_k"):
                param.zero_()
                param[rows] = source
            else:
                param.copy_(source)
    return full


def masked_qk_fraction(model: HistogramTransformer, restriction: str) -> float:
    """Share of ``|W_Q|^2 + |W_K|^2`` in the rows that ``restriction`` masks: 0 right after
    :func:`embed_unrestricted`, growing if training uses the other half.  ValueError if ``model`` is restricted or
    ``restriction`` is not ``"positional"`` or ``"semantic"``."""
    if model.config.restriction != "both":
        raise ValueError("masked_qk_fraction needs an unrestricted model")
    if restriction not in ("positional", "semantic"):
        raise ValueError(f"restriction must be 'positional' or 'semantic', got {restriction!r}")
    half = model.config.half
    masked = slice(0, half) if restriction == "positional" else slice(half, model.config.d_model)
    with torch.no_grad():
        total = model.w_q.square().sum() + model.w_k.square().sum()
        outside = model.w_q[masked].square().sum() + model.w_k[masked].square().sum()
    return float(outside / total) if float(total) > 0 else 0.0


@torch.no_grad()
def max_output_difference(a: HistogramTransformer, b: HistogramTransformer, x: torch.Tensor,
                          batch_size: int = 4096) -> float:
    """``max |logits_a(x) - logits_b(x)|`` over all inputs, positions and classes."""
    chunks = (x[start : start + batch_size] for start in range(0, x.shape[0], batch_size))
    return max([0.0, *(float((a(c) - b(c)).abs().max()) for c in chunks)])
