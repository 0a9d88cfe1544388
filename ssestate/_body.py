"""Reading a response body that is not an event stream, whole.

Theory of operation
-------------------
A response with a status other than 2xx, or a content type other than
``text/event-stream``, is kept by ``ChatStream`` until the body ends and
then read here in one go:

* a whole response on a 2xx status (a gateway that answered a streaming
  request with one: a ``chat.completion``, a Messages ``message``, a
  Responses ``response``, a Gemini response) becomes the events its stream
  would have carried, as the reader of its API says (``read_whole``), then
  ``Done(sentinel=False)``.  Callers handle one shape.
* anything else (an error object of any shape, HTML from a proxy, an empty
  body) becomes one ``StreamError`` whose ``status`` is the HTTP status.

Nothing in a body escapes as an exception: text that is not JSON, or JSON
nested too deeply to read, is an error body like any other.
"""

from __future__ import annotations

import json
from typing import Any

from ._events import Done
from ._reader import Reader, Unreadable, snippet, stream_error

__all__ = ["read_body"]


def read_body(body: bytes | bytearray, status: int, content_type: str, reader: Reader) -> list[Any]:
    """The events of a whole non-stream response body."""
    text = body.decode("utf-8", "replace")
    if text[:1] == "\ufeff":
        text = text[1:]  # a byte order mark: json.loads(bytes) skips it, and so do clients that read bytes
    try:
        value: Any = json.loads(text)
    except (ValueError, RecursionError):
        value = text
    out: list[Any] = []
    if 200 <= status < 300 and not _error_of(value) and _whole(reader, value, out):
        out.append(Done(False))
        return out
    error = _error_of(value)
    if not error:
        if type(value) is dict and (value.get("message") or value.get("detail")):
            error = value
        else:
            head = content_type or "no content type"
            what = snippet(text) if text.strip() else "an empty body"
            error = f"HTTP {status} ({head}): {what}"
    return [stream_error(status, error, value, text)]


def _whole(reader: Reader, value: object, out: list[Any]) -> bool:
    """``reader.read_whole``, giving up (with nothing appended) on a body
    nested too deeply to read."""
    try:
        return reader.read_whole(value, out)
    except (RecursionError, Unreadable):
        out.clear()
        return False


def _error_of(value: object) -> object:
    """The error member of an error body: of an object, or of the first
    object of a list (Gemini writes its errors both ways)."""
    if type(value) is list and value:
        value = value[0]
    return value.get("error") if type(value) is dict else None
