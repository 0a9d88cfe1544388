"""Encoder: chat events written as the stream of any API ssestate reads.

Theory of operation
-------------------
``ChatStream`` reads four APIs into one set of chat events; ``Encoder`` goes
the other way.  ``Encoder(dialect).feed(event)`` returns the bytes that say
the event in that API's stream, to be sent now: a gateway that feeds every
event a ``ChatStream`` of one API hands out to an ``Encoder`` of another
translates a stream as it arrives, and a test server writes any API from one
script.  The contract is the round trip: ``ChatStream(dialect=X)`` over what
an ``Encoder(X)`` wrote assembles the message, usage and outcome the events
assembled, as far as API X can say them.

The work is split as the readers' is.  This façade checks each event (its
type and the types of its fields, text that UTF-8 can hold, the single
choice of the APIs that have one, that the stream has not ended) and hands
it to the writer of its API (``_writer.py`` and one ``_write_*.py`` per API),
which keeps what its format needs between events: the open content block or
output item, sequence numbers, the usage to write at the end, function
calls collected whole.  An event is written as soon as it arrives, with the
few exceptions each writer's docstring names (a tool call is held until its
arguments begin, where the API wants the whole name up front; Gemini's
calls until they are complete; what only a terminal event can carry).

An event the target cannot carry, or one that is malformed, raises
``LocalProtocolError`` saying which event and why, before anything changes:
the encoder is as it was, and the caller may go on without that event.
After ``Done`` or ``Truncated`` the stream has ended and every event is
refused; the ``NEED_DATA`` and ``CLOSED`` sentinels are accepted and ignored
at any time, so a loop may feed everything ``next_event()`` returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._events import (
    ChatEvent,
    Continuation,
    Delta,
    Done,
    Finish,
    Heartbeat,
    StreamError,
    ToolCallFragment,
    Truncated,
    Usage,
)
from ._util import LocalProtocolError, Sentinel, copied
from ._write_anthropic import AnthropicWriter
from ._write_chat import ChatWriter
from ._write_gemini import GeminiWriter
from ._write_responses import ResponsesWriter
from ._writer import Refused, Writer

__all__ = ["Encoder"]

_WRITERS: dict[str, type[Writer]] = {
    "openai-chat": ChatWriter,
    "openai-responses": ResponsesWriter,
    "anthropic": AnthropicWriter,
    "gemini": GeminiWriter,
}
_METHODS: dict[type, str] = {  # the writer's method for each event type
    Delta: "delta",
    ToolCallFragment: "fragment",
    Finish: "finish",
    Usage: "usage",
    Done: "done",
    Truncated: "truncated",
    Heartbeat: "heartbeat",
    StreamError: "error",
    Continuation: "continuation",
}


class Encoder:
    """Write chat events as the stream of one API (SPEC §5).

    ::

        enc = Encoder("anthropic", model="claude-sonnet-4-5")
        for event in ChatStream(dialect="openai-chat").feed(chunk):
            send(enc.feed(event))

    Args:
        dialect: the API to write: "openai-chat" (Chat Completions),
            "openai-responses", "anthropic" (Messages) or "gemini"
            (``streamGenerateContent?alt=sse``).
        model: the model name the stream reports, where the API has one.
        response_id: the id of the response (``chatcmpl-...``, ``resp_...``,
            ``msg_...``, Gemini's ``responseId``); ids the API requires and
            the events do not give (items, tool calls) are made from it.
        created: the creation time (Unix seconds) where the API has one.

    Raises:
        ValueError: ``dialect`` is not one of the four, or an option is not
            something the stream can carry.
    """

    __slots__ = ("_ended", "_events", "_offset", "_writer")

    def __init__(
        self,
        dialect: str = "openai-chat",
        *,
        model: str | None = None,
        response_id: str | None = None,
        created: int | None = None,
    ) -> None:
        if dialect not in _WRITERS:
            raise ValueError(f"dialect must be one of {', '.join(_WRITERS)}; got {dialect!r}")
        for name, value in (("model", model), ("response_id", response_id)):
            if value is not None:
                try:
                    _text(value, name, optional=False)
                except Refused as exc:
                    raise ValueError(str(exc)) from None
        if created is not None and (type(created) is not int or created < 0):
            raise ValueError(f"created must be a non-negative integer or None, not {created!r}")
        self._writer = _WRITERS[dialect](model, response_id, created)
        self._events = 0  # events written
        self._offset = 0  # bytes written
        self._ended: str | None = None  # the event that ended the stream

    def __copy__(self) -> Encoder:
        """An independent encoder at the same place in its stream (a copy
        shares nothing mutable: feeding one never moves the other).

        Raises:
            TypeError: it holds data nested deeper than Python can copy.
        """
        return copied(self)

    @property
    def dialect(self) -> str:
        """The API this encoder writes."""
        return self._writer.dialect

    def feed(self, event: ChatEvent | Sentinel) -> bytes:
        """Return the bytes that say ``event`` in this API's stream, to send
        now (``b""`` when it says nothing yet, or nothing in this API).

        Raises:
            LocalProtocolError: ``event`` is not a chat event, is malformed,
                cannot be said in this API, or came after the stream ended
                (``Done`` or ``Truncated``); the encoder is left as it was.
        """
        if isinstance(event, Sentinel):
            return b""
        method = _METHODS.get(type(event))
        if method is None:
            raise LocalProtocolError(
                f"Encoder.feed() takes chat events (Delta, ToolCallFragment, Finish, Usage, Done, Truncated, "
                f"Heartbeat, StreamError, Continuation), not {type(event).__name__}",
                self._offset,
            )
        where = f"event #{self._events + 1} ({type(event).__name__}) fed to Encoder({self.dialect!r})"
        if self._ended is not None:
            raise LocalProtocolError(f"{where} came after the stream ended with {self._ended}", self._offset)
        try:
            _check(event)
            choice = getattr(event, "choice", 0)
            if choice != 0 and self._writer.one_choice:
                raise Refused(
                    f"it is for choice {choice}, and this API answers with one choice; "
                    "ask the server for one, or pass on only choice 0"
                )
            data: bytes = getattr(self._writer, method)(event)
        except Refused as exc:
            raise LocalProtocolError(f"{where}: {exc}", self._offset) from None
        self._events += 1
        self._offset += len(data)
        if type(event) is Done or type(event) is Truncated:
            self._ended = type(event).__name__
        return data

    def __repr__(self) -> str:
        return f"<Encoder {self.dialect!r}: {self._events} events, {self._offset} bytes>"


def _text(value: object, what: str, optional: bool = True) -> None:
    """``value`` is a string UTF-8 can hold (or None when ``optional``)."""
    if value is None and optional:
        return
    if type(value) is not str:
        kinds = "a string or None" if optional else "a string"
        raise Refused(f"{what} must be {kinds}, not {type(value).__name__}")
    if not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError as exc:
            char = value[exc.start]
            raise Refused(f"{what} holds U+{ord(char):04X}, a lone surrogate, which UTF-8 cannot encode") from None


def _int(value: object, what: str, optional: bool = False) -> None:
    if value is None and optional:
        return
    if type(value) is not int:
        kinds = "an integer or None" if optional else "an integer"
        raise Refused(f"{what} must be {kinds}, not {type(value).__name__}")


def _check(event: Any) -> None:
    """The fields of ``event`` have the types its class declares."""
    kind = type(event)
    if kind is Delta:
        _int(event.choice, "choice")
        _text(event.content, "content", optional=False)
        _text(event.role, "role")
        _text(event.reasoning, "reasoning")
        _text(event.refusal, "refusal")
    elif kind is ToolCallFragment:
        _int(event.choice, "choice")
        _int(event.index, "index")
        _text(event.id, "id")
        _text(event.name, "name")
        _text(event.arguments, "arguments", optional=False)
    elif kind is Finish:
        _int(event.choice, "choice")
        _text(event.reason, "reason", optional=False)
        if not event.reason:
            raise Refused("reason must not be empty")
        _text(event.native, "native")
    elif kind is Usage:
        _int(event.prompt_tokens, "prompt_tokens")
        _int(event.completion_tokens, "completion_tokens")
        _int(event.total_tokens, "total_tokens")
        if not isinstance(event.raw, Mapping):
            raise Refused(f"raw must be a mapping, not {type(event.raw).__name__}")
    elif kind is Heartbeat:
        _text(event.comment, "comment", optional=False)
    elif kind is StreamError:
        _int(event.status, "status", optional=True)
        _text(event.code, "code")
        _text(event.message, "message", optional=False)
        _text(event.type, "type")
    elif kind is Continuation:
        _int(event.choice, "choice")
        _text(event.kind, "kind", optional=False)
        _int(event.index, "index", optional=True)
