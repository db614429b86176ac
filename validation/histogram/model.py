"""The single-layer transformer of the histogram task, with restrictable attention (docs/histogram.md,
"Architecture": ``h_l = [E_tok[x_l] ; E_pos[l]]``, queries and keys from the slice ``h_l[S]``, the value path
from all of ``h``, LayerNorm, a residual ReLU MLP, ``L + 1`` classes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

Restriction = Literal["positional", "semantic", "both"]
RESTRICTIONS: tuple[Restriction, ...] = ("positional", "semantic", "both")
"""The attention's query/key input: the positional half, the semantic half, or all of h."""


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the histogram transformer: L (``seq_len``, also the learned positions), T (``n_tokens``), the even
    embedding width ``d_model`` (token and positional halves of ``d_model / 2``), the MLP's ``d_hidden``, the width
    of queries and keys ``d_attn`` (default ``d_model``), and what they see (``restriction``, :data:`RESTRICTIONS`).
    """

    seq_len: int = 10
    n_tokens: int = 15
    d_model: int = 64
    d_hidden: int = 128
    d_attn: int | None = None
    restriction: Restriction = "both"

    def __post_init__(self) -> None:
        if self.seq_len < 1 or self.n_tokens < 1:
            raise ValueError(f"seq_len and n_tokens must be >= 1, got {self.seq_len}, {self.n_tokens}")
        if self.d_model < 2 or self.d_model % 2:
            raise ValueError(f"d_model must be even and >= 2, got {self.d_model}")
        if self.d_hidden < 1:
            raise ValueError(f"d_hidden must be >= 1, got {self.d_hidden}")
        if self.d_attn is not None and self.d_attn < 1:
            raise ValueError(f"d_attn must be >= 1, got {self.d_attn}")
        if self.restriction not in RESTRICTIONS:
            raise ValueError(f"restriction must be one of {', '.join(RESTRICTIONS)}, got {self.restriction!r}")

    @property
    def half(self) -> int:
        """Width of each half of the embedding, ``d_model // 2``."""
        return self.d_model // 2

    @property
    def attn_width(self) -> int:
        """Width of queries and keys."""
        return self.d_model if self.d_attn is None else self.d_attn

    @property
    def n_classes(self) -> int:
        """Number of classes, ``seq_len + 1``."""
        return self.seq_len + 1

    def qk_slice(self) -> slice:
        """The coordinates of h that queries and keys see."""
        halves = {"semantic": slice(0, self.half), "positional": slice(self.half, self.d_model)}
        return halves.get(self.restriction, slice(0, self.d_model))


class HistogramTransformer(nn.Module):
    """One attention layer, LayerNorm, a residual ReLU MLP and a classifier (see module doc)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        d, h, a = config.d_model, config.half, config.attn_width
        n_qk = config.qk_slice().stop - config.qk_slice().start
        self.tok_emb = nn.Parameter(torch.zeros(config.n_tokens, h))
        self.pos_emb = nn.Parameter(torch.zeros(config.seq_len, h))
        self.w_q = nn.Parameter(torch.zeros(n_qk, a))
        self.w_k = nn.Parameter(torch.zeros(n_qk, a))
        self.w_v = nn.Parameter(torch.zeros(d, d))
        self.norm = nn.LayerNorm(d)
        self.w_1 = nn.Parameter(torch.zeros(d, config.d_hidden))
        self.b_1 = nn.Parameter(torch.zeros(config.d_hidden))
        self.w_2 = nn.Parameter(torch.zeros(config.d_hidden, d))
        self.b_2 = nn.Parameter(torch.zeros(d))
        self.w_out = nn.Parameter(torch.zeros(d, config.n_classes))
        self.b_out = nn.Parameter(torch.zeros(config.n_classes))

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """``h = [E_tok[x] ; E_pos]``, shape ``(B, L, d)``, for tokens ``x`` of shape ``(B, L)``."""
        return torch.cat([self.tok_emb[x], self.pos_emb.unsqueeze(0).expand(x.shape[0], -1, -1)], dim=-1)

    def attention(self, h: torch.Tensor) -> torch.Tensor:
        """Attention weights ``A``, shape ``(B, L, L)``, computed from the allowed slice of ``h``."""
        u = h[..., self.config.qk_slice()]
        scores = (u @ self.w_q) @ (u @ self.w_k).transpose(-1, -2)
        return torch.softmax(scores / math.sqrt(self.config.attn_width), dim=-1)

    def head(self, h: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, L, L + 1)`` from the embedding and the attention weights."""
        y = self.norm(h + attn @ (h @ self.w_v))
        z = y + torch.relu(y @ self.w_1 + self.b_1) @ self.w_2 + self.b_2
        return z @ self.w_out + self.b_out

    def forward_with_attention(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(B, L, L + 1)`` and attention weights ``(B, L, L)`` for tokens ``x``."""
        h = self.embed(x)
        attn = self.attention(h)
        return self.head(h, attn), attn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, L, L + 1)`` for tokens ``x`` of shape ``(B, L)``."""
        return self.forward_with_attention(x)[0]


def init_parameters(model: HistogramTransformer, generator: torch.Generator) -> None:
    """Fill ``model``'s parameters in place from ``generator`` (a CPU generator), in a fixed order: embeddings
    N(0, 1), weight matrices U(-1/sqrt(fan_in), 1/sqrt(fan_in)), biases 0, LayerNorm gain 1 and shift 0."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name in ("tok_emb", "pos_emb"):
                value = torch.randn(param.shape, generator=generator)
            elif name.startswith("w_"):
                bound = 1.0 / math.sqrt(param.shape[0])
                value = (2.0 * torch.rand(param.shape, generator=generator) - 1.0) * bound
            else:  # LayerNorm's gain 1, the biases and its shift 0
                value = (torch.ones if name == "norm.weight" else torch.zeros)(param.shape)
            param.copy_(value.to(param.device, param.dtype))


def build_model(config: ModelConfig, generator: torch.Generator,
                device: torch.device | str = "cpu") -> HistogramTransformer:
    """A freshly initialised model on ``device`` (see :func:`init_parameters`)."""
    model = HistogramTransformer(config)
    init_parameters(model, generator)
    return model.to(device)
