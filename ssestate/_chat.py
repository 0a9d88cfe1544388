"""ChatStream: OpenAI-style chat-completion chunks as typed events, sans-IO.

Theory of operation
-------------------
``ChatStream`` composes an ``EventStreamParser`` (it owns one and reads only
its output) with a chunk interpreter.  While the stream is live its
``receive_data`` *is* the parser's, so bytes reach the buffer without an
extra call; afterwards (``[DONE]``, end of body, an error) bytes go to
``_receive``, through a weak reference so that no cycle forms.
``next_event`` is a C-level callable answering ``NEED_DATA`` until the
parser has work (the parser wakes the stream through a weak reference: it
stores the bound ``_next_event`` in the slot, as it does for itself), then
takes everything one parser step produced (``_take``: the data of plain
"message" events as bare ``str``, other events as objects) and interprets it
in one loop (``_feed``), queueing chat events in wire order for an iterator
that hands them out one per call.

The response head decides the mode once, at construction:

* **stream** (2xx and ``text/event-stream``): every ``data`` payload is one
  chunk.  ``[DONE]`` (exact, ASCII whitespace aside) ends the stream at once:
  ``Done(sentinel=True)``, and every later byte is ignored.  Any other
  payload is decoded with the C JSON scanner; an object is read in ``_feed``
  (the hot path: choices in array order, per choice its ``Delta``, its
  ``ToolCallFragment``s, its ``Finish``; then ``Usage``; then ``StreamError``
  when the chunk has a non-empty ``error`` member).  ``_feed`` itself reads
  only the usual chunk (one choice, a lone text or tool-call fragment); the
  general loop over choices is ``_choices``, and rare shapes go to
  ``_delta``, ``_tool_calls``, ``_usage_and_error``, ``_item`` (items that
  are not a payload's text) and ``_other``.  Anything else that is not JSON
  raises ``RemoteProtocolError`` (``strict=True``) or is skipped.  A payload
  of 32 KiB or more arrives as bytes and goes to ``read_large`` (``_large``),
  which decodes its long strings piece by piece (it hands the bytes back, to
  be decoded whole, when anything is unusual).

  **Templates.**  The usual chunks of one stream differ in one string (the
  text, reasoning or refusal, or the arguments fragment) and, on
  api.openai.com, a random padding string: the rest of the payload is the
  same text.  So after parsing such a chunk (the short path's usual chunk,
  or a one-choice chunk of the general loop whose delta holds one text:
  ``_text_hole``), ``_learn`` keeps its text around that string as a
  *template* (``_template``: checked once with a probe parse), and ``_fit``
  reads a later payload that matches a template by scanning that one string
  with the C string reader; no object tree is built.  A payload that matches no
  template is parsed as above.  A stream keeps at most four templates (one
  per choice when ``n`` > 1) and learns when a usual chunk matches none.  A
  template that misses the next usual chunk of its choice is let go, and
  while the templates learnt go unused, learning waits for four times as
  many misses each time, up to 256: a server that changes its envelope at
  every chunk costs one learning in 256 chunks.

  At end of stream: ``Done(sentinel=False)`` when every started choice has
  finished, else ``Truncated("eof-before-done")`` — unless the parser
  already reported ``Truncated("partial-event")``.  Events handed out are
  held by the caller alone: a step's output list is let go once queued.
* **buffered** (any other status or content type): the body is kept (up to
  ``max_event_size``) and read whole at end of stream.  A ``chat.completion``
  on a 2xx status becomes the events a stream of it would have produced, then
  ``Done(sentinel=False)``; anything else becomes one ``StreamError``.

Per-stream state is small: the parser, the output queue, the finish reason
of every choice seen (to emit ``Finish`` once per reason and to decide
between ``Done`` and ``Truncated``), the ids of tool calls that came without
an ``index`` (to tell a new call from a continuation), the templates (let go
when the stream stops being live), the metadata attributes, and the flags
for end of stream, ``[DONE]`` and errors.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Iterator
from json.scanner import make_scanner
from typing import Any, cast

from ._events import (
    ChatEvent,
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
from ._framing import DEFAULT_MAX_EVENT_SIZE, EventStreamParser
from ._large import read_large
from ._util import CLOSED, ENDED, IDLE, NEED_DATA, LocalProtocolError, RemoteProtocolError, Sentinel, fresh, unusable

__all__ = ["ChatStream"]

# The C scanner behind json.loads, called directly: (object, end) for the
# value at an index, without json.loads's argument checks and trailing
# whitespace regex (the caller checks what follows the value itself).
_scan = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed names the class, not the factory
# The C scanner's string reader: (text, end) for the literal whose opening
# quote is just before the index.
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
# The C string writers behind json.dumps (str -> its JSON literal).
_literal_of: Callable[[str], str] = json.encoder.encode_basestring
_ascii_literal_of: Callable[[str], str] = json.encoder.encode_basestring_ascii
_new_delta = _fast(Delta)
_new_content = _fast(Delta, "choice", "content", "logprobs")  # the usual Delta: text alone
_new_fragment = _fast(ToolCallFragment)
_new_arguments = _fast(ToolCallFragment, "choice", "index", "arguments")  # the usual fragment
_new_finish = _fast(Finish)
_new_usage = _fast(Usage)
_ASCII_WS = " \t\n\r\x0c"
# Templates (see _fit and _template): at most this many per stream, learnt
# from payloads of at most this many characters; while the templates learnt
# go unused, learning waits for four times as many usual chunks each time
# (up to _PATIENCE) before it tries again.
_TEMPLATES = 4
_TEMPLATE_SIZE = 2048
_PATIENCE = 256
_PROBE = "ssestate probe"
_PROBE_PAD = "ssestate padding probe"
_PAD = "obfuscation"  # OpenAI's random padding: a top-level string no event reads
_META = ("id", "model", "created", "system_fingerprint")
_DONE_SENTINEL = Done(True)
_EXHAUSTED: Iterator[ChatEvent] = iter(())
# The output "list" between steps (a step starts a list of its own): a tuple,
# so that appending to it outside a step fails loudly.
_SPENT = cast("list[ChatEvent]", ())
# A template: (head, tail, pad, choice, kind, text fields, empty); see
# _template.  A stream holds none (this tuple) until it learns one.
_Template = tuple[str, str, "str | None", int, int, "_Fields | None", "Delta | None"]
_Fields = tuple[str, "str | None", "str | None", "str | None"]  # content, role, reasoning, refusal
_TEXT = ("content", "reasoning_content", "reasoning", "refusal")  # the members of a delta that hold text
_NO_TEMPLATES = cast("list[_Template]", ())


class ChatStream:
    """Turn the body of a streamed ``/chat/completions`` response into events.

    Args:
        status_code: the HTTP status of the response.
        content_type: its ``Content-Type`` header.
        strict: raise ``RemoteProtocolError`` on a ``data`` payload that is not
            JSON (True) or skip it (False).
        max_event_size: passed to the ``EventStreamParser``; also bounds a
            buffered (non-stream) body.

    Attributes:
        response_id, model, created, system_fingerprint: from the first chunk
            that carries each ("" and 0 count as absent); None until then.
        receive_data: ``receive_data(data)`` appends bytes of the body;
            ``b""`` marks its end (and may repeat).  While the stream is live
            this is its parser's own method, so feeding costs no extra call.
        next_event: ``next_event()`` returns the next chat event,
            ``NEED_DATA`` or ``CLOSED`` (see ``_next_event``); while there is
            nothing to do it is a C-level callable answering ``NEED_DATA``.
    """

    receive_data: Callable[[bytes | bytearray | memoryview], None]
    next_event: Callable[[], ChatEvent | Sentinel]

    __slots__ = (
        "__weakref__",
        "_body",
        "_done",
        "_eof",
        "_finish",
        "_fresh",
        "_live",
        "_misses",
        "_missing",
        "_out",
        "_parser",
        "_pending_error",
        "_poisoned",
        "_queue",
        "_streaming",
        "_templates",
        "_tool_ids",
        "_tool_pos",
        "_truncated",
        "_wait",
        "content_type",
        "created",
        "model",
        "next_event",
        "receive_data",
        "response_id",
        "status_code",
        "strict",
        "system_fingerprint",
    )

    def __init__(
        self,
        status_code: int = 200,
        content_type: str = "text/event-stream",
        strict: bool = True,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
    ) -> None:
        self.status_code = status_code
        self.content_type = content_type
        self.strict = strict
        self.response_id: str | None = None
        self.model: str | None = None
        self.created: int | None = None
        self.system_fingerprint: str | None = None
        self._missing: tuple[str, ...] = _META
        media = content_type.partition(";")[0].strip().lower()
        self._streaming = 200 <= status_code < 300 and media == "text/event-stream"
        # Streaming, and no end of body, [DONE] or error yet: the fast paths.
        self._live = self._streaming
        self._parser = EventStreamParser(max_event_size)
        self._parser._raw = True  # plain "message" events come as their data str
        self._parser._host = weakref.ref(self)  # to wake this stream (see _wake)
        self.next_event = IDLE  # until there is work (see _wake)
        # A live stream's bytes go straight to its parser, with no call in
        # between; other bytes go to _receive (see _stop).
        self.receive_data = self._parser.receive_data if self._streaming else _receiver(self)
        self._body: bytearray | None = None  # the buffered body, when not streaming
        self._out = _SPENT  # a step's own list while it runs
        self._queue: Iterator[ChatEvent] = _EXHAUSTED  # what the latest step produced, not yet handed out
        self._finish: dict[int, str | None] = {}  # choice -> finish reason (None: started)
        # For tool calls that come without an index (rare; created when needed):
        # (choice, tool index) -> id, and (choice, array position) -> tool index.
        self._tool_ids: dict[tuple[int, int], str] | None = None
        self._tool_pos: dict[tuple[int, int], int] | None = None
        self._eof = False
        self._done = False  # [DONE] seen, or the buffered body was read
        self._truncated = False
        self._pending_error: RemoteProtocolError | None = None
        self._poisoned: str | None = None
        # Templates of the usual chunk, newest first (see _fit),
        # and when to learn the next one (see _learn).
        self._templates = _NO_TEMPLATES
        self._misses = 0
        self._wait = 0
        self._fresh = False  # the newest template has matched no chunk yet

    # -- public API ---------------------------------------------------------

    def _receive(self, data: bytes | bytearray | memoryview) -> None:
        """``receive_data`` when the stream is not live: a buffered body, or
        bytes after ``[DONE]``, the end of the body or an error."""
        if self._poisoned is not None:
            raise LocalProtocolError(f"stream unusable after an earlier error: {self._poisoned}")
        if not data:
            self._eof = True
            self._wake()
            return
        if self._eof:
            raise LocalProtocolError(f"receive_data() got {len(data)} bytes after end of stream")
        if self._done or self._streaming:
            return  # after [DONE] (or an error still to be raised) nothing more is read
        if self._body is None:
            self._body = bytearray()
        self._body += data
        if len(self._body) > self._parser.max_event_size:
            self._pending_error = RemoteProtocolError(
                f"response body exceeds max_event_size={self._parser.max_event_size} "
                f"at byte {len(self._body)} (status {self.status_code}, {self.content_type!r})",
                len(self._body),
            )
            self._wake()

    def _wake(self) -> None:
        """There is work: make ``next_event`` the method that does it.  While
        there is none it is a C-level callable that returns ``NEED_DATA``;
        the parser does the same through a weak reference when a line ends."""
        self.next_event = self._next_event

    def _stop(self) -> None:
        """The stream is no longer live (``[DONE]``, the end of the body, an
        error): from now on bytes go to ``_receive``."""
        self._live = False
        self._templates = _NO_TEMPLATES
        self._eof = self._eof or self._parser._eof
        self.receive_data = _receiver(self)

    def _next_event(self) -> ChatEvent | Sentinel:
        """Return the next chat event, ``NEED_DATA`` or ``CLOSED``.

        Raises:
            RemoteProtocolError: a payload is not JSON (strict mode) or an
                event/body outgrew ``max_event_size``; every event before it
                has been handed out first.
            LocalProtocolError: the stream was used after such an error.

        Any other exception is a bug in ssestate.
        """
        for event in self._queue:  # what the latest step produced, not yet handed out
            return event
        parser = self._parser
        if self._live and not parser._ready:
            self.next_event = IDLE  # no line ended since the last call: nothing to do
            return NEED_DATA
        out: list[ChatEvent] = []
        self._out = out
        while not out:
            if self._pending_error is not None:
                self._poisoned = str(self._pending_error)
                self.next_event = unusable("stream", self._poisoned)
                raise fresh(self._pending_error)
            if self._done or not self._streaming:
                if not self._eof:
                    self.next_event = IDLE  # until _receive sees the end of the body
                    return NEED_DATA
                if not self._done:
                    self._done = True
                    self._read_body()
                    continue
                self.next_event = ENDED
                return CLOSED
            items = parser._take()
            if items:
                self._feed(items)
            elif parser._pending_error is not None:
                self._poisoned = str(parser._pending_error)
                self.next_event = unusable("stream", self._poisoned)
                self._stop()
                raise fresh(parser._pending_error)
            elif not parser._closed:
                self.next_event = IDLE  # until the parser wakes this stream
                return NEED_DATA
            else:  # the body ended without [DONE]
                self._done = True
                self._stop()
                if not self._truncated:
                    finish = self._finish
                    if finish and None not in finish.values():
                        out.append(Done(False))
                    else:
                        out.append(Truncated("eof-before-done", 0))
        self._out = _SPENT  # so that an event handed out is held only by the caller
        if len(out) == 1 and self._live and not parser._ready:
            self.next_event = IDLE  # the usual step of small chunks: one event, then nothing to do
            return out[0]
        self._queue = queue = iter(out)
        return next(queue)

    # -- stream mode ------------------------------------------------------------

    def _feed(self, items: list[Any], scan: Callable[[Any, int], tuple[Any, int]] = _scan, first: int = 0) -> None:
        """Interpret what one parser step produced: the hot path.

        ``items`` holds the data of plain "message" events as str (as a
        ``bytearray`` for a huge one), other events as ``ServerSentEvent``,
        and ``Heartbeat`` / ``Truncated``.  A JSON object is a chunk,
        interpreted here; everything else goes to ``_other``.  Stops at
        ``[DONE]`` and at a strict-mode error.  ``scan`` gives the JSON
        value at an index of a payload, and where it ends; ``first`` is the
        place of ``items[0]`` in the parser step's output (for offsets in
        error messages).
        """
        out = self._out
        append = out.append
        new_content = _new_content
        finish_of = self._finish
        for n, data in enumerate(items, first):
            if self._templates and self._fit(data):  # a usual chunk that matches a template: no parse
                continue
            try:
                chunk, end = scan(data, 0)  # TypeError: an item that is not text
                if end != len(data):
                    raise ValueError("more than one value")
                choices = chunk.get("choices")  # AttributeError: not an object, the only JSON type with get
            except TypeError:
                if self._item(data, n):
                    return
                continue
            except (StopIteration, ValueError, RecursionError, AttributeError):
                if self._other(data, "message", n):
                    return
                continue
            if self._missing:
                self._take_metadata(chunk)
            hole = None  # the varying string of a chunk a template may read (set: the short path read it)
            kind: int | str  # where that string is: a tool index, or a delta member
            # The usual chunk: one choice that started and has not finished,
            # one member in its delta, no finish.  Its containers are read by
            # unpacking, subscripts and len(), so a member of another shape
            # ends the reading with an exception before anything is queued,
            # and the general loop reads the chunk instead.
            try:
                [c] = choices  # ValueError: not one choice; TypeError: no list
                delta = c["delta"]  # TypeError: the choice is not an object
                if (
                    len(delta) == 1
                    and type(i := c["index"]) is int  # KeyError: no index (rare)
                    and finish_of.get(i, 0) is None
                    and not c.get("finish_reason")
                ):
                    if type(content := delta.get("content")) is str:  # AttributeError: not an object
                        if content:
                            append(new_content(i, content, c.get("logprobs")))
                        hole, kind = content, "content"
                    elif (calls := delta.get("tool_calls")) is not None:
                        [call] = calls  # ValueError: not one call
                        if (
                            len(call) == 2
                            and type(index := call["index"]) is int
                            and len(fn := call["function"]) == 1
                            and type(args := fn["arguments"]) is str
                        ):
                            # The usual fragment: {"index": i, "function": {"arguments": ...}}.
                            append(_new_arguments(i, index, args))
                            hole, kind = args, index
            except (LookupError, TypeError, AttributeError, ValueError):
                pass
            if hole is None and type(choices) is list:  # not read above: the general loop
                self._choices(choices)
                if len(choices) == 1:
                    if self._misses < self._wait and not self._fresh:
                        self._misses += 1  # learning waits: a miss, whatever the chunk holds
                    elif (found := _text_hole(choices[0])) is not None:
                        i, kind, hole = found  # one text member beside neutral ones: a template may read it
            if hole is not None:  # a chunk a template may read, and none did
                self._misses += 1
                if self._misses > self._wait or self._fresh:
                    self._learn(data, chunk, i, kind, hole)
            usage = chunk.get("usage")
            if usage or "x_groq" in chunk or "error" in chunk:
                self._usage_and_error(chunk, usage)

    def _fit(self, data: Any) -> bool:
        """Read a payload that matches a template (see ``_template``): its one
        varying string is scanned, its event queued, and True returned.
        Anything else (no template matches, a literal that is not valid, not
        text) returns False, having done nothing, and ``_feed`` parses the
        payload.  The events are those the parse would give: the choice has
        started (it had when the template was learnt), and a finished choice
        gets its text all the same."""
        for head, tail, pad, i, k, fields, empty in self._templates:
            try:
                if not data.startswith(head):  # AttributeError / TypeError: not text
                    continue
                value, end = _scanstring(data, len(head))  # ValueError: not a valid string
                if pad is not None:
                    if not data.startswith(pad, end):
                        return False
                    end = _scanstring(data, end + len(pad))[1]
            except (AttributeError, TypeError, ValueError):
                return False
            if end + len(tail) != len(data) or not data.endswith(tail):
                return False
            if k >= 0:
                self._out.append(_new_arguments(i, k, value))
            elif value:
                if k == -1:
                    self._out.append(_new_content(i, value, None))
                else:
                    text = [*cast("_Fields", fields)]
                    text[-2 - k] = value
                    self._out.append(_new_delta(i, *text, None))
            elif empty is not None:
                self._out.append(empty)
            self._wait = 0
            self._fresh = False
            return True
        return False

    def _learn(self, data: str, chunk: dict[str, Any], i: int, kind: int | str, value: str) -> None:
        """A usual chunk of choice ``i`` that no template matched was parsed
        (``_misses`` counts it), and learning is due or the newest template
        is on trial: let that template go if it missed its choice's chunk,
        and learn this chunk's template, unless learning waits (for
        ``_wait`` misses: four times as many, up to ``_PATIENCE``, after each
        learning, and none once a template matches a chunk)."""
        if self._fresh and self._templates[0][3] == i:
            # The newest template missed the first usual chunk of its choice
            # after it was learnt: the envelope moves, and it is let go.
            self._templates = self._templates[1:]
            self._fresh = False
        if self._misses <= self._wait or not self._live:
            return
        if not len(value) < len(data) <= _TEMPLATE_SIZE:  # a large chunk, or one read from bytes (data "")
            return
        self._misses = 0
        self._wait = min(4 * self._wait + 1, _PATIENCE)
        template = _template(data, chunk, i, kind, value)
        if template is not None and template not in self._templates:
            self._templates = [template, *self._templates[: _TEMPLATES - 1]]
            self._fresh = True

    def _choices(self, choices: list[Any]) -> None:
        """A chunk's choices, in array order: per choice its ``Delta``, its
        ``ToolCallFragment``s, its ``Finish``."""
        append = self._out.append
        finish_of = self._finish
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
                self._delta(i, delta, c)
            reason = c.get("finish_reason")
            if reason and type(reason) is str and finish_of[i] != reason:
                finish_of[i] = reason
                append(_new_finish(i, reason))

    def _item(self, data: Any, n: int) -> bool:
        """An item of a parser step that is not a payload's text: the bytes of
        a huge payload, an event other than a plain "message", a
        ``Heartbeat`` or ``Truncated``.  ``n`` is its place in the batch.
        Returns True when nothing after it may be read."""
        if type(data) is bytearray:  # a huge payload, as its bytes
            large = read_large(data, _scan)
            if large is not None:
                # Interpreted as a payload whose scan gives this chunk.
                self._feed([""], _given(large), n)
            else:
                self._feed([data.decode("utf-8", "replace")], _scan, n)
        elif type(data) is not ServerSentEvent:  # Heartbeat, or Truncated at the end
            self._truncated = type(data) is Truncated
            self._out.append(data)
        elif data.event == "error":
            return self._other(data.data, "error", n)
        else:
            self._feed([data.data], _scan, n)
        return self._done or self._pending_error is not None

    def _delta(self, i: int, delta: dict[str, Any], choice: dict[str, Any]) -> None:
        """A choice's delta read in full (``_feed`` reads the usual lone text or
        fragment itself): role, content, reasoning, refusal, tool calls;
        empty strings and other types count as absent."""
        content, role, reasoning, refusal = _text_fields(delta)
        if content or role or reasoning or refusal:
            self._out.append(_new_delta(i, content, role, reasoning, refusal, choice.get("logprobs")))
        calls = delta.get("tool_calls")
        if calls and type(calls) is list:
            self._tool_calls(i, calls)

    def _usage_and_error(self, chunk: dict[str, Any], usage: object) -> None:
        """A chunk's ``Usage`` (or Groq's ``x_groq.usage``), then its error."""
        out = self._out
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
            out.append(_stream_error(None, error, chunk, json.dumps(error)))

    def _other(self, data: str, event: str, n: int) -> bool:
        """A payload that is not one JSON object: ``[DONE]``, blank, padded
        with whitespace, an ``event: error``, or not JSON.  ``n`` is its place
        in the batch.  Returns True when nothing after it may be read."""
        text = data.strip(_ASCII_WS)
        if text == "[DONE]":
            self._done = True
            self._stop()
            self._out.append(_DONE_SENTINEL)
            return True
        if not text:
            return False
        failure = None  # why it is not JSON (kept as text: the exception's frames would hold self)
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            value, failure = None, str(exc)
        if type(value) is dict and (event != "error" or value.get("error")):
            # A chunk (an error member included) with whitespace around it.
            self._feed([text], _scan, n)
            return self._done or self._pending_error is not None
        if event == "error":
            if type(value) is dict:
                self._out.append(_stream_error(None, value, value, data))
            else:
                self._out.append(StreamError(None, None, text, None, data if failure is not None else value))
            return False
        if failure is not None:
            problem = f"is not JSON ({failure})"
        else:
            problem = f"is JSON but not an object ({type(value).__name__})"
        if not self.strict:
            return False
        end_at = self._parser._item_offset(n)
        self._stop()
        self._pending_error = RemoteProtocolError(
            f"data payload of the event that ends at byte {end_at} {problem}: {_snippet(data)}",
            end_at,
        )
        return True

    def _tool_calls(self, choice: int, calls: list[Any]) -> None:
        out = self._out
        for pos, call in enumerate(calls):
            if type(call) is not dict:
                continue
            call_id = call.get("id")
            if call_id is not None and (type(call_id) is not str or not call_id):
                call_id = None
            index = call.get("index")
            if type(index) is not int:
                index = self._place(choice, pos, call_id)
            fn = call.get("function")
            name = args = None
            if type(fn) is dict:
                name = fn.get("name")
                args = fn.get("arguments")
            if name is not None and (type(name) is not str or not name):
                name = None
            if type(args) is not str:
                args = "" if args is None else json.dumps(args, ensure_ascii=False, separators=(",", ":"))
            out.append(_new_fragment(choice, index, call_id, name, args))

    def _place(self, choice: int, pos: int, call_id: str | None) -> int:
        """The tool index of a call that came without one: its array position,
        unless it carries an id other than the one held there, which starts a
        new call at the next free index (and later id-less fragments at that
        position continue the new call)."""
        if self._tool_ids is None or self._tool_pos is None:
            self._tool_ids, self._tool_pos = {}, {}
        ids, where = self._tool_ids, self._tool_pos
        index = where.get((choice, pos), pos)
        if call_id is not None:
            held = ids.get((choice, index))
            if held is None:
                ids[(choice, index)] = call_id
            elif held != call_id:
                index = 1 + max(i for c, i in ids if c == choice)
                ids[(choice, index)] = call_id
                where[(choice, pos)] = index
        return index

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

    # -- buffered mode ------------------------------------------------------------

    def _read_body(self) -> None:
        """Interpret a whole non-stream body (at end of stream)."""
        text = (self._body or b"").decode("utf-8", "replace")
        self._body = None
        try:
            body: Any = json.loads(text)
        except (ValueError, RecursionError):
            body = text
        ok = 200 <= self.status_code < 300
        if ok and type(body) is dict and not body.get("error") and type(body.get("choices")) is list:
            self._completion(body)
            return
        if type(body) is dict and body.get("error"):
            error = body["error"]
        elif type(body) is dict and (body.get("message") or body.get("detail")):
            error = body
        else:
            head = self.content_type or "no content type"
            what = _snippet(text) if text.strip() else "an empty body"
            error = f"HTTP {self.status_code} ({head}): {what}"
        self._out.append(_stream_error(self.status_code, error, body, text))

    def _completion(self, body: dict[str, Any]) -> None:
        """A whole ``chat.completion``: the events its stream would carry."""
        stream = []
        for pos, c in enumerate(body["choices"]):
            if type(c) is not dict:
                continue
            message = c.get("message")
            if type(message) is not dict:
                message = {}
            calls = message.get("tool_calls")
            if type(calls) is list:
                message = dict(message)
                message["tool_calls"] = [
                    {**call, "index": n} if type(call) is dict else call for n, call in enumerate(calls)
                ]
            stream.append({**c, "index": c.get("index", pos), "delta": message})
        chunk = {k: v for k, v in body.items() if k != "choices"}
        chunk["choices"] = stream
        self._feed([json.dumps(chunk)])
        self._out.append(Done(False))


def _receiver(stream: ChatStream) -> Callable[[bytes | bytearray | memoryview], None]:
    """``stream._receive``, holding the stream weakly: a bound method stored on
    the stream itself would make a reference cycle."""
    ref = weakref.ref(stream)

    def receive(data: bytes | bytearray | memoryview) -> None:
        alive = ref()
        if alive is not None:
            alive._receive(data)

    return receive


def _given(chunk: dict[str, Any]) -> Callable[[Any, int], tuple[Any, int]]:
    """A scanner that gives ``chunk`` for an empty payload: how a chunk read
    by ``read_large`` enters ``_feed``."""
    return lambda _text, _at: (chunk, 0)


def _template(data: str, chunk: dict[str, Any], i: int, kind: int | str, value: str) -> _Template | None:
    """The template of a chunk of one choice ``i`` whose only varying string
    is ``value``, learnt from its payload ``data``, or None.  ``kind`` says
    where that string is: a tool call's arguments (the tool index; the
    fragment is alone in the delta, with its index), or the delta's member of
    that name (content, reasoning, refusal; the other members hold no text).

    A template is the payload's text before the string literal that holds
    ``value`` (up to its opening quote: ``head``) and after it (``tail``);
    OpenAI's random padding, when present after it, is a second literal whose
    value is skipped (``pad``: the text between the two).  It also says what
    to build (``k``): a fragment (``k`` is the tool index), a ``Delta`` of the
    text alone (-1), or a ``Delta`` of ``fields`` with the text in field
    ``-2 - k``; ``empty`` is what an empty text gives.

    Why a match needs no parse: JSON text is a sequence of tokens, and when
    the literal is one of this payload's tokens, a payload made of ``head``,
    any string literal and ``tail`` is the same sequence with that one token
    changed, so it parses to this chunk with one string changed.  Whether the
    literal found is that token, and the one that becomes the text, is
    checked once, here: the payload is parsed with a probe string in its
    place, and the probe must come out as the text (the padding probe as the
    padding).  A literal found inside another string only changes that
    string; one found where two strings meet makes the probe text invalid; a
    key, or a value that a later duplicate key overrides, leaves the text as
    it was: each fails the check.  Chunks with more to read than the one
    string are refused: usage, ``x_groq`` or an error member, logprobs.
    """
    if value == _PROBE or chunk.get("usage") or "x_groq" in chunk or "error" in chunk:
        return None
    if chunk["choices"][0].get("logprobs") is not None:
        return None
    k, fields, empty = -1, None, None
    if isinstance(kind, int):
        k = kind
    else:
        # What the delta gives with a text in this member, and with none.
        # The other members hold no text (see _text_hole), so the two differ
        # in the one field the member fills.
        delta = chunk["choices"][0]["delta"]
        fields = _text_fields({**delta, kind: _PROBE})
        blank = _text_fields({**delta, kind: ""})
        slot = fields.index(_PROBE)
        if fields == (_PROBE, None, None, None):
            fields = None  # the usual Delta: text alone
        else:
            k = -2 - slot
            empty = _new_delta(i, *blank, None) if any(blank) else None
    at, size = _literal(data, value)
    if at < 0:
        return None
    head = data[: at + 1]
    tail = data[at + size :]
    probe_text = head + _PROBE + '"' + tail
    pad_value = chunk.get(_PAD)
    pad = None
    if type(pad_value) is str and pad_value != _PROBE_PAD:
        b, pad_size = _literal(tail, pad_value)
        if b >= 0:
            pad = tail[: b + 1]
            tail = tail[b + pad_size :]
            probe_text = head + _PROBE + '"' + pad + _PROBE_PAD + '"' + tail
    try:
        probe = _scan(probe_text, 0)[0]
        place = probe["choices"][0]["delta"]
        if isinstance(kind, int):
            place, kind = place["tool_calls"][0]["function"], "arguments"
        if place[kind] != _PROBE:
            return None
        if pad is not None and probe[_PAD] != _PROBE_PAD:
            return None
    except (StopIteration, ValueError, RecursionError, LookupError, TypeError):
        return None
    return (head, tail, pad, i, k, fields, empty)


def _text_fields(delta: dict[str, Any]) -> _Fields:
    """A delta's content, role, reasoning and refusal as ``Delta`` holds them:
    empty strings and other types count as absent (content "", the others
    None); reasoning is ``reasoning_content``, else ``reasoning``."""
    content = delta.get("content")
    if type(content) is not str:
        content = ""
    role = delta.get("role")
    if type(role) is not str or not role:
        role = None
    reasoning = delta.get("reasoning_content")
    if type(reasoning) is not str or not reasoning:
        reasoning = delta.get("reasoning")
        if type(reasoning) is not str or not reasoning:
            reasoning = None
    refusal = delta.get("refusal")
    if type(refusal) is not str or not refusal:
        refusal = None
    return content, role, reasoning, refusal


def _text_hole(choice: object) -> tuple[int, str, str] | None:
    """``(index, member, text)`` when ``choice``, the only one of its chunk,
    has an index and a delta with exactly one non-empty text member, no tool
    calls and no finish: the text is all a template of the chunk would have
    to read.  Else None."""
    if type(choice) is not dict or choice.get("finish_reason"):
        return None
    i = choice.get("index")
    delta = choice.get("delta")
    if type(i) is not int or type(delta) is not dict or delta.get("tool_calls"):
        return None
    found = None
    for member in _TEXT:
        text = delta.get(member)
        if type(text) is str and text:
            if found is not None:
                return None
            found = (i, member, text)
    return found


def _literal(text: str, value: str) -> tuple[int, int]:
    """Where the last string literal of ``value`` in ``text`` starts, written
    as JSON with or without escapes of non-ASCII characters, and its length;
    (-1, 0) when neither is there."""
    for literal in dict.fromkeys((_literal_of(value), _ascii_literal_of(value))):
        at = text.rfind(literal)
        if at >= 0:
            return at, len(literal)
    return -1, 0


def _count(value: object) -> int:
    return value if type(value) is int else 0


def _snippet(text: str, limit: int = 120) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _stream_error(status: int | None, error: object, body: object, raw: str) -> StreamError:
    """Build a ``StreamError`` from an error member of any shape."""
    code = kind = None
    if type(error) is dict:
        message = error.get("message")
        if type(message) is not str:
            message = raw if message is None else json.dumps(message, ensure_ascii=False)
        code = error.get("code")
        if code is not None and type(code) is not str:
            code = json.dumps(code, ensure_ascii=False)
        kind = error.get("type")
        if type(kind) is not str:
            kind = None
    elif type(error) is str:
        message = error
    else:
        message = json.dumps(error, ensure_ascii=False)
    return StreamError(status, code or None, message, kind, body)
