"""Sympy symbols of the model, named as in docs/model.md (``h_1``, ``S_12``, ``sigma_1^2`` ...): token-indexed
quantities L x r, pair-indexed ones L x L, 1-based indices separated by commas once one reaches 10.
"""

from __future__ import annotations

import sympy as sp


def _index(*idx: int) -> str:
    return ("{:d}" * len(idx)).format(*idx) if all(i < 10 for i in idx) else ",".join(map(str, idx))


def token_symbols(name: str, L: int, r: int = 1, **assumptions: bool) -> sp.Matrix:
    """L x r matrix of per-token symbols ``name_l`` (r = 1) or ``name_{l a}`` (r > 1)."""
    index = [_index(l + 1) if r == 1 else _index(l + 1, a + 1) for l in range(L) for a in range(r)]
    return sp.Matrix(L, r, [sp.Symbol(f"{name}_{i}", **assumptions) for i in index])


def token_scalars(name: str, L: int, power: str = "", **assumptions: bool) -> list[sp.Symbol]:
    """L per-token scalar symbols ``name_l`` (``name_l^power`` if power is given, e.g. sigma_l^2)."""
    sup = f"^{power}" if power else ""
    return [sp.Symbol(f"{name}_{_index(l + 1)}{sup}", **assumptions) for l in range(L)]


def pair_symbols(name: str, L: int, **assumptions: bool) -> sp.Matrix:
    """L x L matrix of symbols ``name_lk``."""
    return sp.Matrix(L, L, [sp.Symbol(f"{name}_{_index(l + 1, k + 1)}", **assumptions) for l in range(L) for k in range(L)])
