"""Reader: what the readers of every streaming API share.

Theory of operation
-------------------
``ChatStream`` hands its reader what one parser call dispatched (the data of
each event as ``str``, a huge one as its bytes, ``event: error`` events
whole, heartbeats, a ``Truncated`` at the end, a fault last; see
``EventStreamParser.feed_data``) and a list to append chat events to.  One
reader per API (``_chunks.py``, ``_responses.py``, ``_anthropic.py``,
``_gemini.py``) turns each JSON payload into events in its ``_chunk``
method; everything else is here:

* the read loop: a payload that a learnt template matches is read from it
  (``_templates.py``; only the readers that learn templates have any);
  anything else is parsed with the C JSON scanner, and a JSON object goes to
  ``_chunk``, which may say that the format's end marker came (``MARKER``);
* what is not one JSON object (``_other``): ``[DONE]``, blank data, a
  payload padded with whitespace, an ``event: error``, or text that is not
  JSON (a fault in strict mode, skipped otherwise);
* the other items (``_item``): a huge payload read from its bytes
  (``_large.py``), heartbeats, the parser's ``Truncated`` and fault;
* each choice's finish (``_finish``: a ``Finish`` when the reason or the
  server's own word for it changes), the verdict at the end of a body that
  had no end marker (``verdict``), and the metadata attributes.

Nothing a payload holds may escape as another exception: a payload nested
too deeply to read (the C scanner and writer recurse) is treated like one
that is not JSON, and whatever its chunk had appended is taken back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ._events import Done, Finish, ServerSentEvent, StreamError, Truncated, _fast
from ._framing import UnknownLine
from ._large import read_large
from ._state import Input
from ._templates import NO_TEMPLATES, Templates, scan
from ._util import RemoteProtocolError

__all__ = [
    "Reader",
    "Stop",
    "TypedReader",
    "Unreadable",
    "count",
    "compact",
    "error_code",
    "error_message",
    "flat_error",
    "snippet",
    "stream_error",
    "text_of",
]

_JSON_WS = " \t\n\r"  # JSON's whitespace: RFC 8259 allows these four only
_ASCII_WS = " \t\n\r\x0c"  # WHATWG's ASCII whitespace, around [DONE]
DONE_SENTINEL = Done(True)
_new_finish = _fast(Finish)

Stop = "Input | RemoteProtocolError | None"


class Unreadable(Exception):
    """A chunk nested too deeply to read (raised inside ``_chunk``)."""


class Reader:
    """The shared part of every API's reader (see the module docstring).

    Args:
        strict: a payload that is not JSON is a fault (True) or skipped.
        locate: the stream offset where item ``k`` of the latest parser call
            was dispatched (for error messages).
        limit: the stream's ``max_event_size``, which bounds what a reader
            keeps of anything unfinished (raw JSON lines waiting to make a
            value: see ``RawJson`` for the floor it keeps all the same).

    Attributes:
        response_id, model, created, system_fingerprint: from the first
            payload that carries each; None until then.
        finish: choice index -> the ``Finish`` it ended with (None: started).
        truncated: the parser reported a partial event at the end.
        templates: the templates learnt (none for readers that learn none).
    """

    dialect: ClassVar[str] = ""
    learns: ClassVar[bool] = True  # whether it learns templates (see _templates.py)

    __slots__ = (
        "created",
        "finish",
        "limit",
        "locate",
        "model",
        "response_id",
        "strict",
        "system_fingerprint",
        "templates",
        "truncated",
    )

    def __init__(self, strict: bool, locate: Callable[[int], int], limit: int) -> None:
        self.strict = strict
        self.locate = locate
        self.limit = limit
        self.response_id: str | None = None
        self.model: str | None = None
        self.created: int | None = None
        self.system_fingerprint: str | None = None
        self.finish: dict[int, Finish | None] = {}
        self.templates = Templates() if self.learns else NO_TEMPLATES
        self.truncated = False

    def read(self, items: list[Any], out: list[Any], first: int = 0) -> Input | RemoteProtocolError | None:
        """Append the chat events of ``items`` to ``out``.  Returns
        ``Input.MARKER`` after the format's end marker and a
        ``RemoteProtocolError`` at a fault (nothing after either is read),
        else None.  ``first`` is the place of ``items[0]`` among what the
        parser call dispatched."""
        templates = self.templates
        for n, data in enumerate(items, first):
            if templates.learnt and templates.fit(data, out):  # a usual chunk: no parse
                continue
            try:
                chunk, end = scan(data, 0)  # TypeError: an item that is not text
                if end != len(data):
                    raise ValueError("more than one value")
                chunk.get  # noqa: B018 - AttributeError: not an object, the only JSON type with get()
            except TypeError:
                stop = self._item(data, n, out)
            except (StopIteration, ValueError, RecursionError, AttributeError):
                stop = self._other(data, "message", n, out)
            else:
                mark = len(out)
                try:
                    stop = self._chunk(data, chunk, out)
                except (RecursionError, Unreadable):
                    del out[mark:]  # a chunk is read whole or not at all
                    stop = self._refuse(data, "is JSON nested too deeply to read", n)
            if stop is not None:
                return stop
        return None

    def _chunk(self, data: str, chunk: dict[str, Any], out: list[Any]) -> Input | None:
        """Read one payload that is a JSON object (``data``: its text, "" when
        it was read from bytes).  Returns ``Input.MARKER`` when it was the
        format's end marker.  Each API's reader says how."""
        raise NotImplementedError  # pragma: no cover - every reader has its own

    def read_chunk(self, data: str, chunk: dict[str, Any], out: list[Any]) -> bool:
        """Read one parsed payload, and nothing more; False, having taken back
        what it appended, when it is nested too deeply to read."""
        mark = len(out)
        try:
            self._chunk(data, chunk, out)
        except (RecursionError, Unreadable):
            del out[mark:]
            return False
        return True

    def _payload(self, data: str, chunk: dict[str, Any], n: int, out: list[Any]) -> Input | RemoteProtocolError | None:
        """Read one parsed payload, item ``n`` of the parser call."""
        mark = len(out)
        try:
            return self._chunk(data, chunk, out)
        except (RecursionError, Unreadable):
            del out[mark:]
            return self._refuse(data, "is JSON nested too deeply to read", n)

    def _item(self, data: Any, n: int, out: list[Any]) -> Input | RemoteProtocolError | None:
        """An item that is not a payload's text: the bytes of a huge payload,
        an ``event: error``, a ``Heartbeat``, a ``Truncated`` at the end, the
        parser's fault, or a line that names no field (see ``_line``)."""
        if type(data) is bytearray:  # a huge payload, as its bytes
            large = read_large(data, scan)
            if large is None:
                return self.read([data.decode("utf-8", "replace")], out, n)
            return self._payload("", large, n, out)
        if type(data) is ServerSentEvent:
            return self._other(data.data, data.event, n, out)
        if type(data) is RemoteProtocolError:
            return data
        if type(data) is UnknownLine:
            return self._line(data.text, n, out)
        self.truncated = self.truncated or type(data) is Truncated
        out.append(data)  # Heartbeat, Truncated
        return None

    def _line(self, text: str, n: int, out: list[Any]) -> Input | RemoteProtocolError | None:
        """A line that names no field the event stream format knows: the
        format ignores it, and so do readers of APIs that never write one."""
        return None

    def _other(self, data: str, event: str, n: int, out: list[Any]) -> Input | RemoteProtocolError | None:
        """A payload that is not one JSON object: ``[DONE]``, blank, padded
        with whitespace, an ``event: error``, JSON of another kind (a number,
        a string, an array, null: a chunk whose fields are all absent, so it
        says nothing and is ignored), or not JSON (refused)."""
        text = data.strip(_ASCII_WS)
        if text == "[DONE]":
            return self._done(out)
        text = data.strip(_JSON_WS)
        if not text:
            return None
        failure = None  # why it is not JSON (kept as text: the exception's frames would hold the reader)
        try:
            value = json.loads(text)
        except ValueError as exc:
            value, failure = None, f"is not JSON ({exc})"
        except RecursionError:
            value, failure = None, "is JSON nested too deeply to read"
        if type(value) is dict and (event != "error" or value.get("error")):
            return self._payload(text, value, n, out)  # a chunk (an error member included) with whitespace around it
        if event == "error":
            if type(value) is dict:
                return self._error_event(text, value, n, out)
            else:
                out.append(StreamError(None, None, text, None, data if failure is not None else value))
            return None
        if failure is not None:
            return self._refuse(data, failure, n)
        return None

    def _error_event(
        self, text: str, value: dict[str, Any], n: int, out: list[Any]
    ) -> Input | RemoteProtocolError | None:
        """An ``event: error`` whose data is a JSON object without an
        ``error`` member: a ``StreamError`` all the same."""
        out.append(flat_error(value) if value.get("type") == "error" else stream_error(None, value, value, text))
        return None

    def _done(self, out: list[Any]) -> Input | None:
        """``data: [DONE]``: the end marker of Chat Completions, which
        gateways add to other formats too."""
        out.append(DONE_SENTINEL)
        return Input.MARKER

    def _refuse(self, data: str, problem: str, n: int) -> RemoteProtocolError | None:
        """A payload that cannot be read: a fault in strict mode, else skipped."""
        if not self.strict:
            return None
        end_at = self.locate(n)
        return RemoteProtocolError(
            f"data payload of the event that ends at byte {end_at} {problem}: {snippet(data)}", end_at
        )

    def _start(self, choice: int) -> bool:
        """Note that ``choice`` started; True the first time."""
        if choice in self.finish:
            return False
        self.finish[choice] = None
        return True

    def _finish(self, choice: int, reason: str, native: str | None, out: list[Any]) -> None:
        """``choice`` finished: a ``Finish`` unless it already finished with
        the same reason and the same word for it."""
        held = self.finish.get(choice)
        if held is None or held.reason != reason or held.native != native:
            self.finish[choice] = event = _new_finish(choice, reason, native)
            out.append(event)

    def read_whole(self, body: object, out: list[Any]) -> bool:
        """A whole non-stream response of this API (a gateway answered a
        streaming request with one), as the events its stream would have
        carried, ``Done`` left out; False when ``body`` is not one.  Each
        API's reader says how."""
        raise NotImplementedError  # pragma: no cover - every reader has its own

    def verdict(self) -> Done | Truncated | None:
        """How a body that ended without its end marker ends: ``Done(False)``
        when every started choice finished, else
        ``Truncated("eof-before-done")``; None when the parser already
        reported a partial event."""
        if self.truncated:
            return None
        if self.finish and None not in self.finish.values():
            return Done(False)
        return Truncated("eof-before-done", 0)


class TypedReader(Reader):
    """A reader of an API whose payloads name their kind in a ``type`` member
    (the Responses API, Anthropic Messages): ``handlers`` maps each kind to
    the method that reads it; a payload of another kind is read only for an
    ``error`` member it may carry."""

    __slots__ = ()
    handlers: ClassVar[Mapping[str, Callable[[Any, str, dict[str, Any], list[Any]], Input | None]]] = {}

    def _chunk(self, data: str, chunk: dict[str, Any], out: list[Any]) -> Input | None:
        kind = chunk.get("type")
        handler = self.handlers.get(kind) if type(kind) is str else None
        if handler is not None:
            return handler(self, data, chunk, out)
        error = chunk.get("error")
        if error:
            out.append(stream_error(None, error, chunk, text_of(error, data)))
        return None


def count(value: object) -> int:
    """A token count as sent, or 0 when it is not an integer."""
    return value if type(value) is int else 0


def snippet(text: str, limit: int = 120) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def compact(value: object) -> str:
    """``value`` as compact JSON text (arguments sent as an object)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        raise Unreadable from None


def text_of(value: object, fallback: str) -> str:
    """``value`` as JSON text for a message, or ``fallback`` when it is
    nested too deeply to write."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return fallback


def flat_error(chunk: dict[str, Any]) -> StreamError:
    """The flat error payload (``type: "error"``, ``code``, ``message`` at
    the top), as the Responses API documents it: ``type`` names the event,
    not a kind of error, so the ``StreamError`` has none, whichever reader
    meets it."""
    return StreamError(None, error_code(chunk.get("code")), error_message(chunk, chunk), None, chunk)


def error_code(code: object) -> str | None:
    """An error's ``code``: None when absent or empty, else as text."""
    if code is None or code == "":
        return None
    return code if type(code) is str else text_of(code, "")


def error_message(error: dict[str, Any], whole: dict[str, Any]) -> str:
    """An error's ``message``; the whole payload as text when it has none."""
    message = error.get("message")
    return message if type(message) is str else text_of(whole, "")


def stream_error(status: int | None, error: object, body: object, raw: str, kind: str | None = None) -> StreamError:
    """A ``StreamError`` from an error member of any shape; ``raw`` is the
    message of last resort, ``kind`` the type when the member has none."""
    code = None
    if type(error) is dict:
        message = error.get("message")
        if type(message) is not str:
            message = raw if message is None else text_of(message, raw)
        code = error.get("code")
        if code is not None and type(code) is not str:
            code = text_of(code, raw)
        found = error.get("type")
        if type(found) is not str:
            found = error.get("status")  # Gemini's word for its kind of error
        if type(found) is str and found:
            kind = found
    elif type(error) is str:
        message = error
    else:
        message = text_of(error, raw)
    return StreamError(status, code or None, message, kind, body)
