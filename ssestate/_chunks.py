"""ChunkReader: OpenAI Chat Completions chunks as chat events.

Theory of operation
-------------------
``ChatStream`` hands the reader what one parser call dispatched (the data
of plain events as ``str``, other items as they are, see
``EventStreamParser.feed_data``) and a list to append chat events to.  The
reader keeps what the rules of SPEC §3 need to remember between chunks: the
finish reason of every choice seen, the ids and next free index of tool
calls that came without an ``index``, the metadata, and the templates.

Per payload, the cheapest reading that is exact wins:

1. A payload that matches a learnt template (``_templates.py``) is read by
   scanning its one varying string.
2. Anything else is parsed with the C JSON scanner.  An object is a chunk.
   Its usual shape (one started choice, a lone text or a lone arguments
   fragment in its delta, no finish) is read by unpacking and subscripts:
   a member of another shape ends that reading with an exception before
   anything is appended, and the general loop (``_choices``) reads the
   chunk instead.  Usage, ``x_groq`` and ``error`` members are read after
   the choices.  A usual chunk that no template read may teach one.
3. What is not a JSON object goes to ``_other``: ``[DONE]``, blank data, a
   payload padded with whitespace, an ``event: error``, or a payload that
   is not JSON (a fault in strict mode, skipped otherwise).

Nothing a payload holds may escape as another exception: a payload nested
too deeply to read (the C scanner and writer recurse) is treated like one
that is not JSON, and whatever its chunk had appended is taken back.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ._events import (
    Delta,
    Done,
    Finish,
    ServerSentEvent,
    StreamError,
    ToolCallFragment,
    Truncated,
    Usage,
    _fast,
)
from ._large import read_large
from ._state import Input
from ._templates import Templates, text_fields, text_hole
from ._util import RemoteProtocolError

__all__ = ["ChunkReader", "snippet", "stream_error"]

# The C scanner behind json.loads, called directly: (object, end) for the
# value at an index, without json.loads's argument checks and trailing
# whitespace regex (the reader checks what follows the value itself).
_scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[attr-defined]
_JSON_WS = " \t\n\r"  # JSON's whitespace: RFC 8259 allows these four only
_ASCII_WS = " \t\n\r\x0c"  # WHATWG's ASCII whitespace, around [DONE]
_META = ("id", "model", "created", "system_fingerprint")
DONE_SENTINEL = Done(True)
_new_delta = _fast(Delta)
_new_content = _fast(Delta, "choice", "content", "logprobs")  # the usual Delta: text alone
_new_fragment = _fast(ToolCallFragment)
_new_arguments = _fast(ToolCallFragment, "choice", "index", "arguments")  # the usual fragment
_new_finish = _fast(Finish, "choice", "reason")
_new_usage = _fast(Usage)


class _Unreadable(Exception):
    """A chunk nested too deeply to read (raised inside ``_chunk``)."""


class _ToolPlaces:
    """Where a choice's tool calls are, for the calls that come without an
    index (SPEC §3): the id held at each index, the index an id-less
    fragment at an array position continues, and the next index no call of
    the choice holds."""

    __slots__ = ("free", "ids", "where")

    def __init__(self) -> None:
        self.ids: dict[tuple[int, int], str] = {}  # (choice, tool index) -> id
        self.where: dict[tuple[int, int], int] = {}  # (choice, array position) -> tool index
        self.free: dict[int, int] = {}  # choice -> next free tool index


class ChunkReader:
    """Read OpenAI Chat Completions chunks (see the module docstring).

    Args:
        strict: a payload that is not JSON is a fault (True) or skipped.
        locate: the stream offset where item ``k`` of the latest parser call
            was dispatched (for error messages).

    Attributes:
        response_id, model, created, system_fingerprint: from the first chunk
            that carries each ("" and 0 count as absent).
        finish: choice index -> its finish reason (None: started).
        truncated: the parser reported a partial event at the end.
    """

    __slots__ = (
        "_missing",
        "_tools",
        "created",
        "finish",
        "locate",
        "model",
        "response_id",
        "strict",
        "system_fingerprint",
        "templates",
        "truncated",
    )

    def __init__(self, strict: bool, locate: Callable[[int], int]) -> None:
        self.strict = strict
        self.locate = locate
        self.response_id: str | None = None
        self.model: str | None = None
        self.created: int | None = None
        self.system_fingerprint: str | None = None
        self._missing: tuple[str, ...] = _META
        self.finish: dict[int, str | None] = {}
        self.templates = Templates()
        self.truncated = False
        # Where tool calls are, for those that come without an index (made
        # at the first tool call).
        self._tools: _ToolPlaces | None = None

    def read(self, items: list[Any], out: list[Any], first: int = 0) -> Input | RemoteProtocolError | None:
        """Append the chat events of ``items`` to ``out``.  Returns
        ``Input.MARKER`` after ``[DONE]`` and a ``RemoteProtocolError`` at a
        fault (nothing after either is read), else None.  ``first`` is the
        place of ``items[0]`` among what the parser call dispatched."""
        templates = self.templates
        for n, data in enumerate(items, first):
            if templates.learnt and templates.fit(data, out):  # a usual chunk: no parse
                continue
            try:
                chunk, end = _scan(data, 0)  # TypeError: an item that is not text
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
                    self._chunk(data, chunk, out)
                    continue
                except (RecursionError, _Unreadable):
                    del out[mark:]  # a chunk is read whole or not at all
                    stop = self._refuse(data, "is JSON nested too deeply to read", n)
            if stop is not None:
                return stop
        return None

    def _payload(self, data: str, chunk: dict[str, Any], n: int, out: list[Any]) -> RemoteProtocolError | None:
        """Read one parsed chunk, item ``n`` of the parser call."""
        if self.read_chunk(data, chunk, out):
            return None
        return self._refuse(data, "is JSON nested too deeply to read", n)

    def read_chunk(self, data: str, chunk: dict[str, Any], out: list[Any]) -> bool:
        """Read one parsed chunk (``data``: its payload, "" when there is
        none to learn a template from).  Returns False, having taken back
        what it appended, when the chunk is nested too deeply to read."""
        mark = len(out)
        try:
            self._chunk(data, chunk, out)
        except (RecursionError, _Unreadable):
            del out[mark:]
            return False
        return True

    def _chunk(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        """A chunk: its choices in array order, then its usage, then its error."""
        if self._missing:
            self._take_metadata(chunk)
        choices: Any = chunk.get("choices")
        hole = None  # the varying string of a chunk a template may read (set: the usual chunk)
        where: int | str  # where that string is: a tool index, or a delta member
        # The usual chunk: one choice that started and has not finished, one
        # member in its delta, no finish.  Its containers are read by
        # unpacking, subscripts and len(): a member of another shape ends
        # the reading with an exception before anything is appended.
        try:
            [c] = choices  # ValueError: not one choice; TypeError: no list
            delta = c["delta"]  # TypeError: the choice is not an object
            if (
                len(delta) == 1
                and type(i := c["index"]) is int  # KeyError: no index (rare)
                and self.finish.get(i, 0) is None
                and not c.get("finish_reason")
            ):
                if type(content := delta.get("content")) is str:  # AttributeError: not an object
                    if content:
                        out.append(_new_content(i, content, c.get("logprobs")))
                    hole, where = content, "content"
                elif (calls := delta.get("tool_calls")) is not None:
                    [call] = calls  # ValueError: not one call
                    if (
                        len(call) == 2
                        and type(index := call["index"]) is int
                        and len(fn := call["function"]) == 1
                        and type(args := fn["arguments"]) is str
                    ):
                        # The usual fragment: {"index": i, "function": {"arguments": ...}}.
                        self._tool_seen(i, index)
                        out.append(_new_arguments(i, index, args))
                        hole, where = args, index
        except (LookupError, TypeError, AttributeError, ValueError):
            pass
        if hole is None and type(choices) is list:  # not read above: the general loop
            self._choices(choices, out)
            if len(choices) == 1 and not self.templates.waiting():
                found = text_hole(choices[0])
                if found is not None:
                    i, where, hole = found  # one text member beside neutral ones
        if hole is not None and data:  # a chunk a template may read, and none did
            self.templates.missed(data, chunk, i, where, hole)
        usage = chunk.get("usage")
        if usage or "x_groq" in chunk or "error" in chunk:
            self._usage_and_error(chunk, usage, data, out)

    def _choices(self, choices: list[Any], out: list[Any]) -> None:
        """A chunk's choices, in array order: per choice its ``Delta``, its
        ``ToolCallFragment``s, its ``Finish``."""
        finish_of = self.finish
        for pos, c in enumerate(choices):
            if type(c) is not dict:
                continue
            i = c.get("index")
            if type(i) is not int:
                i = pos
            if i not in finish_of:
                finish_of[i] = None
            delta = c.get("delta")
            if delta and type(delta) is dict:
                content, role, reasoning, refusal = text_fields(delta)
                if content or role or reasoning or refusal:
                    out.append(_new_delta(i, content, role, reasoning, refusal, c.get("logprobs")))
                calls = delta.get("tool_calls")
                if calls and type(calls) is list:
                    self._tool_calls(i, calls, out)
            reason = c.get("finish_reason")
            if reason and type(reason) is str and finish_of[i] != reason:
                finish_of[i] = reason
                out.append(_new_finish(i, reason))

    def _tool_calls(self, choice: int, calls: list[Any], out: list[Any]) -> None:
        for pos, call in enumerate(calls):
            if type(call) is not dict:
                continue
            call_id = call.get("id")
            if call_id is not None and (type(call_id) is not str or not call_id):
                call_id = None
            index = call.get("index")
            if type(index) is not int:
                index = self._place(choice, pos, call_id)
            else:
                if call_id is not None:
                    self._places().ids.setdefault((choice, index), call_id)
                self._tool_seen(choice, index)
            fn = call.get("function")
            name = args = None
            if type(fn) is dict:
                name = fn.get("name")
                args = fn.get("arguments")
            if name is not None and (type(name) is not str or not name):
                name = None
            if type(args) is not str:
                args = "" if args is None else _compact(args)
            out.append(_new_fragment(choice, index, call_id, name, args))

    def _tool_seen(self, choice: int, index: int) -> None:
        """A call of ``choice`` holds ``index``: a call without an index that
        starts later must take a higher one."""
        free = (self._tools or self._places()).free
        if index >= free.get(choice, 0):
            free[choice] = index + 1

    def _place(self, choice: int, pos: int, call_id: str | None) -> int:
        """The tool index of a call that came without one: its array position,
        unless it carries an id other than the one held there, which starts a
        new call at the next index no call of the choice holds (and later
        id-less fragments at that position continue the new call)."""
        places = self._places()
        ids, where = places.ids, places.where
        index = where.get((choice, pos), pos)
        if call_id is not None:
            held = ids.get((choice, index))
            if held is None:
                ids[(choice, index)] = call_id
            elif held != call_id:
                index = places.free.get(choice, 0)
                ids[(choice, index)] = call_id
                where[(choice, pos)] = index
        self._tool_seen(choice, index)
        return index

    def _places(self) -> _ToolPlaces:
        if self._tools is None:
            self._tools = _ToolPlaces()
        return self._tools

    def _usage_and_error(self, chunk: dict[str, Any], usage: object, data: str, out: list[Any]) -> None:
        """A chunk's ``Usage`` (or Groq's ``x_groq.usage``), then its error."""
        if not usage or type(usage) is not dict:
            groq = chunk.get("x_groq")
            usage = groq.get("usage") if type(groq) is dict else None
        if usage and type(usage) is dict:
            out.append(
                _new_usage(
                    _count(usage.get("prompt_tokens")),
                    _count(usage.get("completion_tokens")),
                    _count(usage.get("total_tokens")),
                    usage,
                )
            )
        error = chunk.get("error")
        if error:
            out.append(stream_error(None, error, chunk, _text_of(error, data)))

    def _item(self, data: Any, n: int, out: list[Any]) -> Input | RemoteProtocolError | None:
        """An item that is not a payload's text: the bytes of a huge payload,
        an event other than a plain "message", a ``Heartbeat``, a
        ``Truncated`` at the end, or the parser's fault."""
        if type(data) is bytearray:  # a huge payload, as its bytes
            large = read_large(data, _scan)
            if large is None:
                return self.read([data.decode("utf-8", "replace")], out, n)
            return self._payload("", large, n, out)
        if type(data) is ServerSentEvent:
            if data.event == "error":
                return self._other(data.data, "error", n, out)
            return self.read([data.data], out, n)
        if type(data) is RemoteProtocolError:
            return data
        self.truncated = self.truncated or type(data) is Truncated
        out.append(data)  # Heartbeat, Truncated
        return None

    def _other(self, data: str, event: str, n: int, out: list[Any]) -> Input | RemoteProtocolError | None:
        """A payload that is not one JSON object: ``[DONE]``, blank, padded
        with whitespace, an ``event: error``, or not JSON."""
        text = data.strip(_ASCII_WS)
        if text == "[DONE]":
            out.append(DONE_SENTINEL)
            return Input.MARKER
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
                out.append(stream_error(None, value, value, data))
            else:
                out.append(StreamError(None, None, text, None, data if failure is not None else value))
            return None
        if failure is not None:
            return self._refuse(data, failure, n)
        return self._refuse(data, f"is JSON but not an object ({type(value).__name__})", n)

    def _refuse(self, data: str, problem: str, n: int) -> RemoteProtocolError | None:
        """A payload that cannot be read: a fault in strict mode, else skipped."""
        if not self.strict:
            return None
        end_at = self.locate(n)
        return RemoteProtocolError(
            f"data payload of the event that ends at byte {end_at} {problem}: {snippet(data)}", end_at
        )

    def _take_metadata(self, chunk: dict[str, Any]) -> None:
        missing = []
        for key in self._missing:
            value = chunk.get(key)
            if key == "created":
                if type(value) is int and value:
                    self.created = value
                    continue
            elif type(value) is str and value:
                setattr(self, "response_id" if key == "id" else key, value)
                continue
            missing.append(key)
        self._missing = tuple(missing)

    def verdict(self) -> Done | Truncated | None:
        """How a body that ended without ``[DONE]`` ends: ``Done(False)`` when
        every started choice finished, else ``Truncated("eof-before-done")``;
        None when the parser already reported a partial event."""
        if self.truncated:
            return None
        if self.finish and None not in self.finish.values():
            return Done(False)
        return Truncated("eof-before-done", 0)


def _count(value: object) -> int:
    return value if type(value) is int else 0


def snippet(text: str, limit: int = 120) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _compact(value: object) -> str:
    """``value`` as compact JSON text (arguments sent as an object)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        raise _Unreadable from None


def _text_of(value: object, fallback: str) -> str:
    """``value`` as JSON text for a message, or ``fallback`` when it is
    nested too deeply to write."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return fallback


def stream_error(status: int | None, error: object, body: object, raw: str) -> StreamError:
    """A ``StreamError`` from an error member of any shape; ``raw`` is the
    payload's text, the message of last resort."""
    code = kind = None
    if type(error) is dict:
        message = error.get("message")
        if type(message) is not str:
            message = raw if message is None else _text_of(message, raw)
        code = error.get("code")
        if code is not None and type(code) is not str:
            code = _text_of(code, raw)
        kind = error.get("type")
        if type(kind) is not str:
            kind = None
    elif type(error) is str:
        message = error
    else:
        message = _text_of(error, raw)
    return StreamError(status, code or None, message, kind, body)
