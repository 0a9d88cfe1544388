"""The states of ssestate's two machines, and every transition between them.

Theory of operation
-------------------
Each machine (``EventStreamParser``, ``ChatStream``) is in exactly one state
of its enum, and moves only by the tables below.  A reader who wants to know
what a machine can do next reads this file, not the machines: every state is
listed here, every input that moves it, and where it goes.  An input that a
table has no cell for is a misuse of the machine, and the machine raises
``LocalProtocolError`` naming the state and the input (see ``transition``).

The inputs are the few things that happen to a machine:

``DATA``     bytes of the body arrived (``receive_data`` / ``feed`` with
             a non-empty chunk).
``END``      end of the body (``b""``); it may be repeated.
``MARKER``   the chat layer read the format's end marker (``[DONE]``):
             the answer is complete, and later bytes are ignored.
``FAULT``    the peer's bytes were refused (a ``RemoteProtocolError``
             waits behind the events before it).
``DRAINED``  the last queued event was handed out while nothing more can
             come: the machine has said everything it will say.

Both machines work eagerly: the bytes a call brings are read in that call,
and the events they complete are queued.  So the states describe the body,
not the queue: ``ENDED`` means the end of the body was fed and its events
are queued; ``CLOSED`` follows when the queue is empty, and is what
``next_event()`` then returns for ever.  ``FAILED`` keeps the events before
a fault; when they are handed out the error is raised once and the machine
is ``ERROR``, after which every call raises ``LocalProtocolError``.

The hot path (``DATA`` in ``OPEN`` / ``STREAMING``) leaves the state as it
is, so the machines test for that state directly instead of looking up the
table; every other move goes through ``transition``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TypeVar

from ._util import LocalProtocolError

__all__ = ["ChatState", "ParserState"]


class Input(enum.Enum):
    """What can happen to a machine (see the module docstring)."""

    DATA = "DATA"
    END = "END"
    MARKER = "MARKER"
    FAULT = "FAULT"
    DRAINED = "DRAINED"

    def __repr__(self) -> str:
        return self.value


class ParserState(enum.Enum):
    """The state of an ``EventStreamParser`` (its ``state`` attribute)."""

    #: Receiving the body.
    OPEN = "OPEN"
    #: End of the body fed; its last events may still be queued.
    ENDED = "ENDED"
    #: Everything was handed out after the end: ``next_event()`` is ``CLOSED``.
    CLOSED = "CLOSED"
    #: The peer's bytes broke the format; the events before the fault are
    #: handed out, then the ``RemoteProtocolError`` is raised.
    FAILED = "FAILED"
    #: The error was raised: every later call raises ``LocalProtocolError``.
    ERROR = "ERROR"

    def __repr__(self) -> str:
        return f"ParserState.{self.value}"


class ChatState(enum.Enum):
    """The state of a ``ChatStream`` (its ``state`` attribute)."""

    #: Reading an event stream (a 2xx ``text/event-stream`` response).
    STREAMING = "STREAMING"
    #: Keeping a body that is not an event stream, to read it whole at its end.
    BUFFERING = "BUFFERING"
    #: The end marker (``[DONE]``) was read: later bytes are ignored.
    DONE = "DONE"
    #: End of the body fed; its last events may still be queued.
    ENDED = "ENDED"
    #: Everything was handed out after the end: ``next_event()`` is ``CLOSED``.
    CLOSED = "CLOSED"
    #: A payload or the body was refused; the events before the fault are
    #: handed out, then the ``RemoteProtocolError`` is raised.
    FAILED = "FAILED"
    #: The error was raised: every later call raises ``LocalProtocolError``.
    ERROR = "ERROR"

    def __repr__(self) -> str:
        return f"ChatState.{self.value}"


S = TypeVar("S", ParserState, ChatState)

_P = ParserState
_C = ChatState

PARSER_TRANSITIONS: dict[tuple[ParserState, Input], ParserState] = {
    (_P.OPEN, Input.DATA): _P.OPEN,
    (_P.OPEN, Input.END): _P.ENDED,
    (_P.OPEN, Input.FAULT): _P.FAILED,
    (_P.ENDED, Input.END): _P.ENDED,
    (_P.ENDED, Input.DRAINED): _P.CLOSED,
    (_P.CLOSED, Input.END): _P.CLOSED,
    # Bytes after a fault cannot mean anything: they are dropped.
    (_P.FAILED, Input.DATA): _P.FAILED,
    (_P.FAILED, Input.END): _P.FAILED,
    (_P.FAILED, Input.DRAINED): _P.ERROR,
}

CHAT_TRANSITIONS: dict[tuple[ChatState, Input], ChatState] = {
    (_C.STREAMING, Input.DATA): _C.STREAMING,
    (_C.STREAMING, Input.END): _C.ENDED,
    (_C.STREAMING, Input.MARKER): _C.DONE,
    (_C.STREAMING, Input.FAULT): _C.FAILED,
    (_C.BUFFERING, Input.DATA): _C.BUFFERING,
    (_C.BUFFERING, Input.END): _C.ENDED,
    (_C.BUFFERING, Input.FAULT): _C.FAILED,
    # After [DONE] the answer is complete: bytes are ignored, not refused
    # (some gateways write more), until the body ends.
    (_C.DONE, Input.DATA): _C.DONE,
    (_C.DONE, Input.END): _C.ENDED,
    (_C.ENDED, Input.END): _C.ENDED,
    (_C.ENDED, Input.DRAINED): _C.CLOSED,
    (_C.CLOSED, Input.END): _C.CLOSED,
    (_C.FAILED, Input.DATA): _C.FAILED,
    (_C.FAILED, Input.END): _C.FAILED,
    (_C.FAILED, Input.DRAINED): _C.ERROR,
}


def transition(table: Mapping[tuple[S, Input], S], state: S, event: Input, what: str) -> S:
    """The state ``state`` moves to on ``event``, by ``table``.

    Raises:
        LocalProtocolError: the table has no such move; ``what`` names the
            machine in the message.
    """
    try:
        return table[(state, event)]
    except KeyError:
        raise LocalProtocolError(f"{what} cannot take {event!r} in state {state!r}") from None
