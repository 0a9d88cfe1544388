"""GeminiReader: Gemini's ``streamGenerateContent?alt=sse`` as chat events.

Theory of operation
-------------------
Every payload is a whole ``GenerateContentResponse``: candidates with the
parts they add, maybe a finish reason, and the usage so far.  There is no
end marker: the body ends when the answer does.

* A candidate is the choice of its ``index`` (missing on Vertex: then its
  array position).  The first sight of one gives its role; each part then
  gives, in order, a ``Delta`` of its text (``thought: true`` text is
  reasoning) or a ``ToolCallFragment`` of a whole function call, whose tool
  index is the count of the candidate's calls so far and whose arguments
  are its ``args`` as compact JSON (``{}`` when there are none).  A part's
  ``thoughtSignature`` is kept as a ``Continuation``, for the next request.
* ``finishReason`` finishes the candidate (mapped onto OpenAI's words,
  the native word kept), and again when a later chunk changes it (old
  models say ``STOP`` on every chunk, then ``RECITATION``).  A prompt
  blocked before any candidate (``promptFeedback.blockReason``) finishes
  choice 0 as ``content_filter``.
* ``usageMetadata`` is cumulative: every report with a token count is a
  ``Usage`` (completion counts the thoughts); one without counts is none.
* The usual chunk (one candidate adding one text part, the usage so far)
  teaches a template (see ``_templates.py``) that reads the text and the
  usage, the only two members that change, without parsing the rest.
* An error inside a 200 stream comes two ways: as a ``data:`` payload with
  an ``error`` member, or written as raw, pretty-printed JSON lines with no
  ``data:``, which the event stream format ignores.  The parser hands those
  lines on (``UnknownLine``) and ``RawJson`` joins them until they make one
  JSON object: an error one is a ``StreamError``.  It counts the brackets
  of each line as it comes (strings left out) and parses once, when the
  outer value closes, so that no line is read twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ._events import Continuation, Delta, StreamError, ToolCallFragment, Usage, _fast
from ._reader import Reader, compact, count, text_of
from ._state import Input
from ._templates import Spec, TemplateKind

__all__ = ["GeminiReader", "RawJson", "gemini_error"]

_new_content = _fast(Delta, "choice", "content")
_new_delta = _fast(Delta)
_new_fragment = _fast(ToolCallFragment)
_new_usage = _fast(Usage)
_REASONING = ("", None, "", None)  # the fields of a reasoning Delta (the text goes in slot 2)
_TEXT = ("candidates", 0, "content", "parts", 0, "text")
_FILTERED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
# The most text of raw JSON lines kept while waiting for them to make an
# object: the stream's max_event_size, but never less than _RAW_FLOOR (an
# error with its details runs to a few KiB, and lines past the limit are
# let go unread) nor more than _RAW_LIMIT.
_RAW_FLOOR = 64 * 1024
_RAW_LIMIT = 1 << 20
# A JSON string within a line, or what is left of the line after a quote
# that no quote closes: its brackets are not the value's.  Each character
# matches one way only, so the search stays linear.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?')


def finish_reason(native: str, made_calls: bool) -> str:
    """A Gemini finish reason in OpenAI's words (others kept as sent)."""
    if native == "STOP":
        return "tool_calls" if made_calls else "stop"
    if native == "MAX_TOKENS":
        return "length"
    if native in _FILTERED:
        return "content_filter"
    return native


def gemini_error(error: object, body: object) -> StreamError:
    """A ``StreamError`` of a Gemini error object: ``code`` its number as
    text, ``type`` its ``status``."""
    if type(error) is not dict:
        return StreamError(None, None, text_of(error, ""), None, body)
    code, message, status = error.get("code"), error.get("message"), error.get("status")
    return StreamError(
        None,
        None if code is None or code == "" else str(code) if type(code) in (int, str) else text_of(code, ""),
        message if type(message) is str else text_of(error, ""),
        status if type(status) is str and status else None,
        body,
    )


class RawJson:
    """Lines of raw JSON written into an event stream, joined until they
    make one value (see the module docstring)."""

    __slots__ = ("_depth", "_limit", "_lines", "_size")

    def __init__(self, limit: int) -> None:
        self._limit = min(max(limit, _RAW_FLOOR), _RAW_LIMIT)
        self._lines: list[str] = []
        self._size = 0
        self._depth = 0  # brackets opened and not closed by the lines kept

    def line(self, text: str) -> Any:
        """Take one line; return the value the lines make when this one
        closes it (and start afresh), else None.  Lines that cannot make
        one (brackets that close more than they opened, a value that does
        not parse, more than the limit) are let go."""
        if not self._lines and not text.lstrip().startswith(("{", "[")):
            return None  # not the start of a JSON value: an unknown field of the format
        self._lines.append(text)
        self._size += len(text)
        if self._size > self._limit:
            self._lines, self._size, self._depth = [], 0, 0
            return None
        bare = _STRING.sub("", text) if '"' in text else text
        self._depth += bare.count("{") + bare.count("[") - bare.count("}") - bare.count("]")
        if self._depth > 0:
            return None
        lines = self._lines
        self._lines, self._size, self._depth = [], 0, 0
        try:
            return json.loads("\n".join(lines))
        except (ValueError, RecursionError):
            return None

    def error(self, text: str) -> StreamError | None:
        """``line``, for a reader: the ``StreamError`` of an object (or of
        the first item of an array) with an ``error`` member, once the
        lines make one."""
        value = self.line(text)
        if type(value) is list and value:
            value = value[0]
        if type(value) is dict and value.get("error"):
            return gemini_error(value["error"], value)
        return None


def usage_event(usage: object) -> Usage | None:
    """The ``Usage`` of a usage report, when it is an object with a token
    count; else None."""
    if type(usage) is not dict:
        return None
    get = usage.get
    prompt, candidates = get("promptTokenCount"), get("candidatesTokenCount")
    thoughts, total = get("thoughtsTokenCount"), get("totalTokenCount")
    if type(prompt) is int and type(candidates) is int and type(total) is int and thoughts is None:
        return _new_usage(prompt, candidates, total, usage)  # the usual report, read in one step
    if type(prompt) is int or type(candidates) is int or type(thoughts) is int or type(total) is int:
        return _new_usage(count(prompt), count(candidates) + count(thoughts), count(total), usage)
    return None


class GeminiReader(Reader):
    """Read a Gemini ``streamGenerateContent?alt=sse`` stream (see the
    module docstring)."""

    dialect = "gemini"

    __slots__ = ("_calls", "_raw")

    def __init__(self, strict: bool, locate: Callable[[int], int], limit: int) -> None:
        super().__init__(strict, locate, limit)
        self._calls: dict[int, int] = {}  # choice -> function calls so far
        self._raw = RawJson(limit)

    def _chunk(self, data: str, chunk: dict[str, Any], out: list[Any]) -> Input | None:
        if self.response_id is None and type(found := chunk.get("responseId")) is str and found:
            self.response_id = found
        if self.model is None and type(found := chunk.get("modelVersion")) is str and found:
            self.model = found
        candidates = chunk.get("candidates")
        if type(candidates) is list and candidates:
            for pos, candidate in enumerate(candidates):
                if type(candidate) is dict:
                    self._candidate(pos, candidate, out)
            if data and len(candidates) == 1 and not self.templates.waiting():
                self._learn(data, chunk, candidates[0])
        else:
            feedback = chunk.get("promptFeedback")
            blocked = feedback.get("blockReason") if type(feedback) is dict else None
            if type(blocked) is str and blocked:
                self._start(0)
                self._finish(0, "content_filter", blocked, out)
        usage = usage_event(chunk.get("usageMetadata"))
        if usage is not None:
            out.append(usage)
        error = chunk.get("error")
        if error:
            out.append(gemini_error(error, chunk))
        return None

    def _learn(self, data: str, chunk: dict[str, Any], candidate: object) -> None:
        """The payload of a chunk whose one candidate adds one text part (or
        thought), without a finish or an error, may teach a template: the
        text varies, and so does the usage so far."""
        if type(candidate) is not dict or candidate.get("finishReason") or chunk.get("error"):
            return
        content = candidate.get("content")
        parts = content.get("parts") if type(content) is dict else None
        if type(parts) is not list or len(parts) != 1 or type(part := parts[0]) is not dict:
            return
        text = part.get("text")
        if type(text) is not str or not text:
            return
        i = candidate.get("index")
        i = i if type(i) is int else 0
        if len(part) == 1:
            spec = Spec(_TEXT, i)
        elif len(part) == 2 and part.get("thought") is True:
            spec = Spec(_TEXT, i, TemplateKind.FIELDS, fields=_REASONING, slot=2)
        else:
            return  # a signature, a call: more to read than the text
        if type(chunk.get("usageMetadata")) is dict:
            spec = spec._replace(member="usageMetadata", value_event=usage_event)
        self.templates.missed(data, chunk, spec, text)

    def _candidate(self, pos: int, candidate: dict[str, Any], out: list[Any]) -> None:
        i = candidate.get("index")
        if type(i) is not int:
            i = pos
        if self._start(i):
            out.append(_new_delta(i, "", "assistant", None, None, None))
        content = candidate.get("content")
        parts = content.get("parts") if type(content) is dict else None
        if type(parts) is list:
            for part in parts:
                if type(part) is dict:
                    self._part(i, part, out)
        native = candidate.get("finishReason")
        if type(native) is str and native:
            self._finish(i, finish_reason(native, i in self._calls), native, out)

    def _part(self, i: int, part: dict[str, Any], out: list[Any]) -> None:
        call = part.get("functionCall")
        tool = None
        if type(call) is dict:
            tool = self._calls.get(i, 0)
            self._calls[i] = tool + 1
            call_id, name, args = call.get("id"), call.get("name"), call.get("args")
            out.append(
                _new_fragment(
                    i,
                    tool,
                    call_id if type(call_id) is str and call_id else None,
                    name if type(name) is str and name else None,
                    compact(args if args is not None else {}),
                )
            )
        elif type(text := part.get("text")) is str and text:
            if part.get("thought") is True:
                out.append(_new_delta(i, "", None, text, None, None))
            else:
                out.append(_new_content(i, text))
        signature = part.get("thoughtSignature")
        if type(signature) is str and signature:
            out.append(Continuation(i, "thought_signature", signature, tool))

    def _line(self, text: str, n: int, out: list[Any]) -> Input | None:
        error = self._raw.error(text)
        if error is not None:
            out.append(error)
        return None

    def read_whole(self, body: object, out: list[Any]) -> bool:
        """A whole response: one ``GenerateContentResponse``, or the JSON
        array of them that streaming without ``alt=sse`` writes."""
        chunks: list[Any] = body if type(body) is list else [body]
        if not chunks or not all(type(c) is dict and ("candidates" in c or "promptFeedback" in c) for c in chunks):
            return False
        for chunk in chunks:
            self._chunk("", chunk, out)
        return True
