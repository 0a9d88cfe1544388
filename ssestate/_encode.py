"""The server side: events and chat chunks as event-stream bytes.

Theory of operation: ``encode`` is the inverse of ``EventStreamParser`` for
one unit (an event or a comment).  It writes ``event``/``id``/``retry``
lines only when they carry something, then one ``data:`` line per line of
the data, then the blank line that dispatches.  Values that could not be
read back as written (a line break inside an event type, id or comment; a
NUL in an id, which a parser must ignore) raise ``LocalProtocolError``
instead of writing a stream that means something else.  CR and CRLF inside
``data`` are line breaks like LF, so they come back as LF.

``encode_chunk`` and ``DONE_BYTES`` are what a gateway or test server needs
to write an OpenAI-style chat stream.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ._events import Heartbeat, ServerSentEvent
from ._util import LocalProtocolError

__all__ = ["DONE_BYTES", "encode", "encode_chunk"]

DONE_BYTES = b"data: [DONE]\n\n"
_BREAK = re.compile(r"\r\n|\r|\n")
_NEWLINES = ("\n", "\r\n", "\r")


def encode(event: ServerSentEvent | Heartbeat, *, newline: str = "\n") -> bytes:
    """Return the UTF-8 bytes that make a parser yield ``event`` again.

    Args:
        event: a ``ServerSentEvent`` or a ``Heartbeat`` (written as a comment
            line followed by a blank line).
        newline: the line terminator to write: "\\n", "\\r\\n" or "\\r".

    Raises:
        LocalProtocolError: the event cannot be written so that it reads back
            the same (see the module docstring).
    """
    if newline not in _NEWLINES:
        raise LocalProtocolError(f"newline must be one of {_NEWLINES!r}, got {newline!r}")
    if isinstance(event, Heartbeat):
        _check_line("comment", event.comment)
        return f":{' ' if event.comment else ''}{event.comment}{newline}{newline}".encode()
    if not isinstance(event, ServerSentEvent):
        raise LocalProtocolError(f"encode() takes ServerSentEvent or Heartbeat, not {type(event).__name__}")
    parts = []
    if event.event != "message":
        if not event.event:
            raise LocalProtocolError("an empty event type reads back as 'message'; write 'message'")
        _check_line("event type", event.event)
        parts.append(f"event: {event.event}{newline}")
    if event.id:
        _check_line("id", event.id)
        if "\x00" in event.id:
            raise LocalProtocolError("an id containing U+0000 is ignored by every parser")
        parts.append(f"id: {event.id}{newline}")
    if event.retry is not None:
        if event.retry < 0:
            raise LocalProtocolError(f"retry must be a non-negative integer, got {event.retry}")
        parts.append(f"retry: {event.retry}{newline}")
    for line in _BREAK.split(event.data):
        parts.append(f"data: {line}{newline}")
    parts.append(newline)
    return "".join(parts).encode()


def encode_chunk(payload: Mapping[str, Any] | str, *, event: str | None = None, newline: str = "\n") -> bytes:
    """Write one chat-completion chunk (a mapping, dumped as compact JSON
    with raw UTF-8, or an already serialised string) as a ``data:`` event."""
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return encode(ServerSentEvent(event or "message", text), newline=newline)


def _check_line(what: str, value: str) -> None:
    if "\n" in value or "\r" in value:
        raise LocalProtocolError(f"a {what} cannot contain a line break: {value!r}")
