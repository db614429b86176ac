"""The channel of the state evolution as an object: the attention map, the target and the loss (docs/model.md
section 2).

A channel scores a sample's fields by loss(h, h*) = l(S(h), T(h*); sigma^2), with h in R^{L x r}, h* in R^{L x r*}.
A subclass states l once, in sympy (:meth:`Channel.loss_of`); from it come its derivatives in h
(:func:`attnphase.theory.prox.derive_loss`) and the generated kernels (``get_kernels(L, r, channel=...)``),
cached under a kind carrying :attr:`Channel.cache_tag`. Everything downstream only calls these kernels: a new
loss is a new module here (docs/howto/add-a-loss.md), registered in :mod:`attnphase.theory.channels`.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np


@dataclass(frozen=True)
class Channel:
    """A loss of the attention model (module doc).  Subclasses set :attr:`name` and :meth:`loss_of`: a polynomial
    (or rational function) in S, T and the sigma_k^2 that vanishes where S = T (where the proximal search starts).
    """

    #: The registry name (``ModelParams.loss``; the command line keeps the square loss).
    name: ClassVar[str] = ""

    def loss_of(self, S: Any, T: Any, sigma2: Sequence[Any]) -> Any:
        """l(S, T; sigma^2) in sympy for L x L matrices S (the student's attention) and T (the target)."""
        raise NotImplementedError

    def loss_values(self, S: np.ndarray, T: np.ndarray, sigma2: np.ndarray) -> np.ndarray | None:
        """The loss at batches S, T (..., L, L) in numpy (a fast path, checked against the generated kernel), or None
        (the default): the generated kernel is used."""
        return None

    def loss(self, L: int, r: int = 1, r_star: int = 1) -> Any:
        """loss(h, h*) in sympy: :meth:`loss_of` at S(h) and T(h*), the softmax written out with exp, for fields
        h (L x r), h* (L x r*), with the symbols of :mod:`attnphase.theory.symbols`."""
        import sympy as sp

        from attnphase.theory.attention import attention_explicit, teacher
        from attnphase.theory.symbols import pair_symbols, token_scalars, token_symbols

        h = token_symbols("h", L, r, real=True)
        hstar = token_symbols("hstar", L, r_star, real=True)
        A = pair_symbols("A", L, nonnegative=True)
        omega = sp.Symbol("omega", nonnegative=True)
        sigma2 = tuple(token_scalars("sigma", L, power="2", positive=True))
        return self.loss_of(attention_explicit(h), teacher(attention_explicit(hstar), omega, A), sigma2)

    @cached_property
    def cache_tag(self) -> str:
        """``<name>_<hash>``: the channel's part of its kernels' cache kind; the hash is of the source of the
        module that defines the channel (and of this base), so editing the loss regenerates its kernels."""
        digest = hashlib.sha256()
        for cls in (Channel, type(self)):
            digest.update(inspect.getsource(inspect.getmodule(cls)).encode())
        digest.update(repr(self).encode())
        return f"{self.name}_{digest.hexdigest()[:10]}"
