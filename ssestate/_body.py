"""Reading a response body that is not an event stream, whole.

Theory of operation
-------------------
A response with a status other than 2xx, or a content type other than
``text/event-stream``, is kept by ``ChatStream`` until the body ends and
then read here in one go:

* a ``chat.completion`` on a 2xx status (a gateway that answered a
  streaming request with a whole completion) becomes the events its stream
  would have carried: its choices are turned into one chunk (each message
  as the choice's delta, each tool call given its array position as
  index) that the chunk reader reads like any other, then
  ``Done(sentinel=False)``.  Callers handle one shape.
* anything else (an error object of any shape, HTML from a proxy, an empty
  body) becomes one ``StreamError`` whose ``status`` is the HTTP status.

Nothing in a body escapes as an exception: text that is not JSON, or JSON
nested too deeply to read, is an error body like any other.
"""

from __future__ import annotations

import json
from typing import Any

from ._chunks import ChunkReader, snippet, stream_error
from ._events import Done

__all__ = ["read_body"]


def read_body(body: bytes | bytearray, status: int, content_type: str, reader: ChunkReader) -> list[Any]:
    """The events of a whole non-stream response body."""
    text = body.decode("utf-8", "replace")
    try:
        value: Any = json.loads(text)
    except (ValueError, RecursionError):
        value = text
    out: list[Any] = []
    if (
        200 <= status < 300
        and type(value) is dict
        and not value.get("error")
        and type(value.get("choices")) is list
        and reader.read_chunk("", _as_chunk(value), out)
    ):
        out.append(Done(False))
        return out
    if type(value) is dict and value.get("error"):
        error = value["error"]
    elif type(value) is dict and (value.get("message") or value.get("detail")):
        error = value
    else:
        head = content_type or "no content type"
        what = snippet(text) if text.strip() else "an empty body"
        error = f"HTTP {status} ({head}): {what}"
    out.append(stream_error(status, error, value, text))
    return out


def _as_chunk(completion: dict[str, Any]) -> dict[str, Any]:
    """A whole ``chat.completion`` as the one chunk a stream of it would sum
    to: each choice's message as its delta, tool calls indexed by position."""
    choices = []
    for pos, c in enumerate(completion["choices"]):
        if type(c) is not dict:
            continue
        message = c.get("message")
        if type(message) is not dict:
            message = {}
        calls = message.get("tool_calls")
        if type(calls) is list:
            message = {
                **message,
                "tool_calls": [{**call, "index": n} if type(call) is dict else call for n, call in enumerate(calls)],
            }
        choices.append({**c, "index": c.get("index", pos), "delta": message})
    chunk = {k: v for k, v in completion.items() if k != "choices"}
    chunk["choices"] = choices
    return chunk
