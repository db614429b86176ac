"""Channels (losses) of the attention model, by name (docs/model.md section 2; docs/howto/add-a-loss.md).

:func:`get_channel` turns a registry name (``ModelParams.loss``, ``--loss``) into its
:class:`~attnphase.theory.channels.base.Channel`.  Importing this package imports neither sympy nor numpy's
heavy dependents: a channel's module is imported when the channel is asked for.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnphase.theory.channels.base import Channel

#: name -> (module, class) of every channel.
REGISTRY: dict[str, tuple[str, str]] = {
    "square": ("attnphase.theory.channels.square", "SquareLoss"),
    "scaled_square": ("attnphase.theory.channels.scaled_square", "ScaledSquareLoss"),
}

#: The model's default loss.
DEFAULT = "square"


def channel_names() -> tuple[str, ...]:
    """The registered channel names."""
    return tuple(REGISTRY)


@lru_cache(maxsize=None)
def get_channel(name: str) -> "Channel":
    """The channel registered as ``name`` (one instance per name); ValueError naming the registered ones otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"unknown loss {name!r}; one of {', '.join(REGISTRY)}")
    module, cls = REGISTRY[name]
    return getattr(import_module(module), cls)()


def default_channel(channel: "Channel | None" = None) -> "Channel":
    """``channel``, or the default (square) loss's channel when None."""
    return get_channel(DEFAULT) if channel is None else channel


__all__ = ["DEFAULT", "REGISTRY", "channel_names", "default_channel", "get_channel"]
