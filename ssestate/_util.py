"""Errors, sentinels and limits shared by every ssestate machine.

Theory of operation: nothing here parses.  The machines raise
``RemoteProtocolError`` when the peer's bytes cannot be accepted and
``LocalProtocolError`` when the caller misuses them; both carry the byte
offset into the stream where the problem was found.  ``NEED_DATA`` and
``CLOSED`` are members of one ``Enum`` so that ``mypy --strict`` narrows
``if ev is NEED_DATA`` checks, and their repr is the bare name.
"""

from __future__ import annotations

import copy
import enum
from typing import TypeVar

__all__ = [
    "CLOSED",
    "NEED_DATA",
    "LocalProtocolError",
    "ProtocolError",
    "RemoteProtocolError",
    "Sentinel",
]


class ProtocolError(Exception):
    """Base class of every error a machine raises on purpose.

    Attributes:
        offset: byte offset into the stream the message refers to, or None
            when the error is not about a position.
    """

    def __init__(self, msg: str, offset: int | None = None) -> None:
        super().__init__(msg)
        self.offset = offset


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes that cannot be accepted."""


class LocalProtocolError(ProtocolError):
    """The caller used a machine in a way it does not allow."""


class Sentinel(enum.Enum):
    """Values ``next_event()`` returns instead of an event."""

    NEED_DATA = "NEED_DATA"
    CLOSED = "CLOSED"

    def __repr__(self) -> str:
        return self.value

    __str__ = __repr__


NEED_DATA = Sentinel.NEED_DATA
CLOSED = Sentinel.CLOSED


_E = TypeVar("_E", bound=ProtocolError)
_T = TypeVar("_T")


def fresh(error: _E) -> _E:
    """A copy of a stored error, to raise: the stored one never gets a
    traceback, whose frames would hold the machine that stored it (a
    reference cycle)."""
    return type(error)(str(error), error.offset)


def copied(thing: _T) -> _T:
    """``copy.deepcopy(thing)``, the copy of every stateful ssestate object:
    a copy shares nothing mutable with its original.  Data nested deeper
    than Python's recursion limit (an error body, say, which the parse took)
    cannot be copied: that is a ``TypeError``, which ``copy`` callers know,
    not a ``RecursionError``."""
    try:
        return copy.deepcopy(thing)
    except RecursionError:
        raise TypeError(f"cannot copy this {type(thing).__name__}: it holds data nested too deeply") from None
