"""Channels (losses) of the attention model, by name (docs/model.md section 2; docs/howto/add-a-loss.md).

:func:`get_channel` turns a registry name (``ModelParams.loss``; the command line keeps the square loss) into its
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


def default_channel(channel: "Channel | str | None" = None) -> "Channel":
    """``channel``, the channel registered under that name (a str), or the default (square) loss's channel when
    None; ValueError for anything that is none of these (no ``cache_tag``)."""
    if channel is None or isinstance(channel, str):
        return get_channel(DEFAULT if channel is None else channel)
    if not hasattr(channel, "cache_tag"):  # what every channel has (theory/channels/base.py)
        raise ValueError(f"channel must be a Channel, its registered name ({', '.join(REGISTRY)}) or None, got "
                         f"{channel!r}")
    return channel


__all__ = ["DEFAULT", "REGISTRY", "channel_names", "default_channel", "get_channel"]
