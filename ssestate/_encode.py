"""The server side: events and chat chunks as event-stream bytes.

Theory of operation: ``encode`` is the inverse of ``EventStreamParser`` for
one unit (an event or a comment).  It writes ``event``/``id``/``retry``
lines only when they carry something, then one ``data:`` line per line of
the data, then the blank line that dispatches.  Values that could not be
read back as written (a line break inside an event type, id or comment; a
NUL in an id, which a parser must ignore) raise ``LocalProtocolError``
instead of writing a stream that means something else; so do text that
UTF-8 cannot hold (a lone surrogate) and a chunk payload that is not JSON
(NaN, a cycle, an object json cannot write).  CR and CRLF inside
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
        _check_line("a comment", event.comment)
        return _utf8(f":{' ' if event.comment else ''}{event.comment}{newline}{newline}")
    if not isinstance(event, ServerSentEvent):
        raise LocalProtocolError(f"encode() takes ServerSentEvent or Heartbeat, not {type(event).__name__}")
    parts = []
    if event.event != "message":
        if not event.event:
            raise LocalProtocolError("an empty event type reads back as 'message'; write 'message'")
        _check_line("an event type", event.event)
        parts.append(f"event: {event.event}{newline}")
    if event.id:
        _check_line("an id", event.id)
        if "\x00" in event.id:
            raise LocalProtocolError("an id containing U+0000 is ignored by every parser")
        parts.append(f"id: {event.id}{newline}")
    if event.retry is not None:
        if event.retry < 0:
            raise LocalProtocolError(f"retry must be a non-negative integer, got {event.retry}")
        parts.append(f"retry: {event.retry}{newline}")
    parts.extend(f"data: {line}{newline}" for line in _BREAK.split(event.data))
    parts.append(newline)
    return _utf8("".join(parts))


def encode_chunk(payload: Mapping[str, Any] | str, *, event: str | None = None, newline: str = "\n") -> bytes:
    """Write one chat-completion chunk (a mapping, dumped as compact JSON
    with raw UTF-8, or an already serialised string) as a ``data:`` event.

    Raises:
        LocalProtocolError: the payload is not JSON, or see ``encode``.
    """
    if isinstance(payload, str):
        text = payload
    else:
        try:
            text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:  # not JSON: an unknown type, NaN, a cycle
            raise LocalProtocolError(f"payload cannot be written as JSON: {exc}") from None
    return encode(ServerSentEvent(event or "message", text), newline=newline)


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        char = exc.object[exc.start]
        raise LocalProtocolError(f"U+{ord(char):04X} is a lone surrogate, which UTF-8 cannot encode") from None


def _check_line(what: str, value: str) -> None:
    if "\n" in value or "\r" in value:
        raise LocalProtocolError(f"{what} cannot contain a line break: {value!r}")
