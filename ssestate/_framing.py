"""EventStreamParser: the WHATWG "interpret an event stream" algorithm, sans-IO.

Theory of operation
-------------------
Bytes come in through ``receive_data`` (``b""`` is end of stream) and are
only appended to one ``bytearray``.  All work happens in ``next_event``: when
the events of the last step are all handed out it runs one *step*, which
takes every complete line out of the buffer at once, decodes them,
interprets them and lists the events they dispatch; an iterator over that
list then hands them out one per call.  An owning ``ChatStream`` takes the
whole list instead (``_take``), with plain "message" data as bare ``str``.

* ``receive_data`` looks only at the bytes it appends (``10 in data``, a
  C-level ``memchr`` over the chunk; other bytes-like objects are copied to
  ``bytes`` first) and wakes the parser (``_wake``) when they hold a line
  terminator or push the unfinished event past ``max_event_size``.  Until
  then ``next_event`` is not even a method: it is a C-level callable that
  returns ``NEED_DATA`` (``_util.IDLE``), so a line that arrives in a
  million pieces costs a million appends and one scan, and no Python frame
  for the million ``next_event`` calls in between.  Waking stores the bound
  method ``_next_event`` in the ``next_event`` slot; it is swapped back to
  the idle callable when the events run out (to ``ENDED`` once ``CLOSED``,
  to a raiser after an error), so a parser that is not in the middle of
  handing out events holds no reference to itself.
* A step finds the **last** line terminator with C-level ``rfind`` (from
  the end of the buffer: it lies in the bytes that arrived last; CR is
  looked for only when ``13 in buf`` says there is one).  Everything up to
  it is the *batch*: the buffer object itself becomes the batch, and only
  the bytes after that terminator (at most about one chunk) are copied into
  a new buffer.  A buffer of complete lines longer than 32 KiB (a whole
  body fed at once) is read a slice at a time instead (``_edge``), so that
  a step's text stays in the CPU caches.
* The batch is decoded with replacement: whole, or on the hot path (below)
  event by event.  CR and LF never occur inside a UTF-8 sequence, so
  decoding complete lines gives the same text whatever the chunking, and a
  character split across chunks waits, undamaged, in the unterminated tail.
* CRLF and lone CR are folded into LF (two C-level ``str.replace`` calls,
  skipped when the batch holds no CR); a batch that ends in CR sets
  ``_skip_lf`` so that an LF starting the next data is swallowed, while the
  line itself is finished at once.
* A batch that starts at a block boundary is cut where a blank line is
  followed by ``data: ``: each piece without a line break is one event's
  data.  When the batch is nothing but such events (the hot path, inline in
  ``_step``) its bytes are cut before decoding (no cut at all when they
  hold no other LF: one event), and the pieces, checked for line breaks,
  are decoded one by one by a C-level ``map`` (strict, the fast case; with
  replacement after an error) and turned into events by ``_messages``, which
  builds them inline without a constructor call per event; otherwise
  ``_blocks`` reads the decoded text's pieces one by one.  Everything else
  goes through the line loop (``_lines``): a blank line dispatches, a
  ``data:`` line is appended to the data list, a comment becomes a
  ``Heartbeat``, and the other fields are read in its last branch.  A
  batch of large events is decoded event by event straight from the
  buffer; an owning ChatStream gets the data of an event of ``_HUGE`` bytes
  or more undecoded, as a ``bytearray`` (the batch itself, trimmed, when
  the event is alone in it).  A batch that is one lone ``data: `` line, or
  one lone blank line that ends the block such a line opened (a server or
  proxy that sends the blank line on its own), is read in ``_step`` too.
* ``max_event_size`` is checked per step from two numbers (the unterminated
  tail, and the bytes of the open block); a batch that could break it is
  checked line by line in bytes (``_oversize``), so the error comes at the
  same place whatever the chunking.
* Byte offsets are not tracked per line (that would cost every line).  The
  stream offset of the buffer start is kept; the few things that need the
  offset of a line inside a batch (the start of an unfinished block for
  ``Truncated.pending`` and the size limit, the end of an event for error
  messages) recompute it from the kept batch bytes, which costs one pass
  over one batch and happens only on those rare paths.

State that outlives a step: the unfinished block (data list, event type,
``retry`` of this block, whether a field line was read since the last blank
line and where that block started), the last-event-ID buffer, and the flags
for BOM, skipped LF, end of stream and errors.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterable, Iterator
from itertools import repeat
from typing import Any, Union, cast

from ._events import Heartbeat, ServerSentEvent, Truncated, _fast, _messages, _new_event
from ._util import CLOSED, ENDED, IDLE, NEED_DATA, LocalProtocolError, RemoteProtocolError, Sentinel, fresh, unusable

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "EventStreamParser", "FramingEvent"]

# 16 MiB: far above any chat-completion chunk (a few hundred bytes; a whole
# non-streamed tool call rarely exceeds a few hundred KiB) and still small
# enough that 10,000 concurrent streams cannot be made to hold terabytes.
DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024

FramingEvent = Union[ServerSentEvent, Heartbeat, Truncated]

_BOM = b"\xef\xbb\xbf"
_EXHAUSTED: Iterator[FramingEvent] = iter(())
# A batch larger than this whose first line is longer still is read as a
# batch of large events: each event's data is decoded alone (this bounds peak
# memory and copying on streams of large events).
_BIG = 4096
_ONE_EVENT = bytearray(b"data: \n\n")
_BLANK = ("",)  # the lines of a lone blank line
# An owning ChatStream gets the data of an event at least this large as its
# bytes, undecoded (see _large_events).
_HUGE = 32 * 1024
# A buffer longer than this that holds complete lines is read in slices of
# at most this size, each cut after an LF.
_SLICE = 32 * 1024
_TERMINATOR = re.compile(rb"\r\n|\r|\n")
_new_heartbeat = _fast(Heartbeat)
# Constant arguments of the C-level map() that decodes with replacement.
_UTF8 = repeat("utf-8")
_REPLACE = repeat("replace")


class EventStreamParser:
    """Turn the bytes of a ``text/event-stream`` body into events.

    Args:
        max_event_size: the most bytes one unfinished event may hold (its
            lines since the last blank line plus the unterminated line).

    Attributes:
        last_event_id: the "last event ID string": the id buffer as it stood
            when the latest blank line ended a block.
        retry: the latest valid ``retry`` value seen, else None.
        next_event: ``next_event()`` returns the next event, ``NEED_DATA``
            or ``CLOSED`` (see ``_next_event``).  It is an attribute, not a
            method: while there is nothing to do it holds a C-level callable
            that answers ``NEED_DATA`` without a Python frame.
    """

    __slots__ = (
        "__weakref__",
        "_accepts",
        "_batch",
        "_batch_has_data",
        "_block_retry",
        "_block_start",
        "_buf",
        "_closed",
        "_data",
        "_eof",
        "_host",
        "_id_buf",
        "_offset",
        "_open",
        "_out",
        "_pending_error",
        "_poisoned",
        "_queue",
        "_raw",
        "_ready",
        "_room",
        "_skip_lf",
        "_started",
        "_type",
        "last_event_id",
        "max_event_size",
        "next_event",
        "retry",
    )

    next_event: Callable[[], FramingEvent | Sentinel]

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        if max_event_size < 1:
            raise LocalProtocolError(f"max_event_size must be positive, got {max_event_size}")
        self.max_event_size = max_event_size
        self.last_event_id = ""
        self.retry: int | None = None
        self._buf = bytearray()
        self._offset = 0  # stream offset of _buf[0]
        self._started = False  # the BOM check has been made
        self._skip_lf = False  # the last batch ended in CR: swallow one LF
        # Set by an owning ChatStream: queue a single-line "message" event's
        # data as a bare str (no id or retry to carry), saving an object.
        self._raw = False
        # next_event has something to do: bytes that end a line arrived, the
        # limit broke, the stream ended, or an error waits to be raised.
        self._ready = False
        self.next_event = IDLE
        # A weak reference to an owning ChatStream, to wake (see _wake).
        self._host: weakref.ref[Any] | None = None
        self._room = max_event_size  # bytes the buffer may hold before the limit breaks
        self._eof = False
        # What the fast path of receive_data takes: bytes until the end of the
        # stream or an error, then nothing (one test for type and state).
        self._accepts: type[bytes] | None = bytes
        self._closed = False
        self._pending_error: RemoteProtocolError | None = None
        self._poisoned: str | None = None
        self._out: list[FramingEvent | str | bytearray] = []  # what the latest step produced...
        self._queue: Iterator[FramingEvent] = _EXHAUSTED  # ...and an iterator handing it out
        # The unfinished block.
        self._data: list[str] = []
        self._type = ""
        self._id_buf = ""
        self._block_retry: int | None = None
        self._open = False  # a field line was read since the last blank line
        self._block_start = 0  # stream offset of that block's first field line
        # The latest batch, kept for the rare paths that need line offsets.
        # It ends at _offset (it starts at _offset - len(_batch)).
        self._batch: bytes | bytearray = b""
        self._batch_has_data = False  # the data buffer was not empty before it

    # -- public API ---------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes of the stream; ``b""`` marks its end (may repeat)."""
        if data.__class__ is self._accepts and data:
            buf = self._buf
            buf += data
            # Wake the next step only when it has work: a line terminator
            # arrived, or the unfinished event just outgrew the limit (waking
            # a parser that is awake already does no harm).
            if 10 in data or 13 in data or len(buf) > self._room:
                self._wake()
            return
        if data and self._accepts is not None:
            # The fast path takes exact bytes: `10 in data` finds a byte in
            # bytes, but in a memoryview it compares items.
            self.receive_data(bytes(data))
            return
        if self._poisoned is not None:
            raise LocalProtocolError(f"parser unusable after an earlier error: {self._poisoned}")
        if data:
            raise LocalProtocolError(
                f"receive_data() got {len(data)} bytes after end of stream "
                f"(stream ended at byte {self._offset + len(self._buf)})",
                self._offset + len(self._buf),
            )
        if self._accepts is not None:
            self._eof = True
            self._accepts = None
            self._wake()

    def _wake(self) -> None:
        """There is work for the next step: make ``next_event`` the method
        that runs it (while idle it is a C-level callable that returns
        ``NEED_DATA``, the cheapest answer to the commonest call).  An owning
        ChatStream reads through ``_take`` and is woken instead."""
        self._ready = True
        if self._host is None:
            self.next_event = self._next_event
        elif (host := self._host()) is not None:
            host.next_event = host._next_event

    def _next_event(self) -> FramingEvent | Sentinel:
        """Return the next event, ``NEED_DATA`` or ``CLOSED``.

        Raises:
            RemoteProtocolError: an unfinished event outgrew ``max_event_size``.
                Every event before it has been handed out first.
            LocalProtocolError: the parser was used after such an error.

        Any other exception is a bug in ssestate.
        """
        for event in self._queue:  # what the latest step produced, not yet handed out
            return event
        if not self._ready:
            self.next_event = IDLE  # until _wake
            return NEED_DATA
        if self._pending_error is not None:
            self._poisoned = str(self._pending_error)
            self._accepts = None
            self.next_event = unusable("parser", self._poisoned)
            raise fresh(self._pending_error)
        if self._closed:
            self.next_event = ENDED
            return CLOSED
        # Only an owning ChatStream sets raw mode (and reads through _take):
        # here every item is an event.
        out: list[Any] = []
        self._out = out
        self._step()
        if len(out) == 1 and not self._ready:
            self.next_event = IDLE  # the usual step of small chunks: one event, then nothing to do
            event = out[0]
            return event
        queue: Iterator[FramingEvent] = iter(out)
        self._queue = queue
        for event in queue:
            return event
        return self._next_event()

    def _take(self) -> list[FramingEvent | str | bytearray]:
        """Run one step if it has work and hand over all it produced: the
        batch interface of an owning ChatStream, which then reads
        ``_pending_error`` and ``_closed`` itself when the list is empty."""
        if not self._ready or self._pending_error is not None or self._closed:
            return []
        out: list[FramingEvent | str | bytearray] = []
        self._out = out
        self._step()
        return out

    # -- the step -------------------------------------------------------------

    def _step(self) -> None:
        self._ready = False
        if (self._skip_lf or not self._started or len(self._buf) > _SLICE) and self._edge():
            return
        buf = self._buf
        size = len(buf)
        end = buf.rfind(b"\n") + 1
        cr = 13 in buf
        if cr:
            end = max(end, buf.rfind(b"\r", end) + 1)
        if end:
            # The buffer itself becomes the batch; only the tail (bytes after
            # the last terminator, at most about one chunk) is copied out.
            batch = buf
            if end == size:
                self._buf = buf = bytearray()
            else:
                self._buf = buf = buf[end:]
                del batch[end:]
            if cr:
                self._skip_lf = batch[-1] == 0x0D and not buf
            if size > self._room:  # the batch and the tail
                if not self._interpret_within_limit(batch):
                    return
            elif (
                not cr
                and not self._open
                and batch.startswith(b"data: ")
                and batch.endswith(b"\n\n")
                and (end <= _BIG or batch.find(b"\n", 0, _BIG) >= 0)
            ):
                # The hot path: a batch that starts at a block boundary with
                # a data line and ends with a blank line.  Cut where a blank
                # line is followed by "data: ", every piece is one event's
                # data exactly when the batch holds no other LF.  The bytes
                # are cut, then each piece decoded: a piece without emoji
                # stays narrow, where cutting text decoded whole would
                # narrow every piece of a batch that holds one.  Between
                # the first "data: " and the last blank line, a batch with
                # no LF is one event's data (the usual batch of small
                # chunks; the memchr stops at the first LF otherwise).
                decode: Callable[..., str] = bytes.decode
                if 10 not in (body := batch[6:-2]):
                    pieces: list[Any] | None = [body]
                    decode = bytearray.decode
                else:
                    pieces = bytes(body).split(b"\n\ndata: ")
                    if 10 in b"".join(pieces):  # a piece with a line break: not the hot path
                        pieces = None
                if pieces is None:
                    self._interpret(batch)
                else:
                    self._batch = batch
                    self._batch_has_data = False
                    self._offset += end
                    self.last_event_id = ident = self._id_buf
                    try:
                        texts = list(map(decode, pieces))  # strict: valid UTF-8, the usual case, is decoded fastest
                    except UnicodeDecodeError:
                        # Each piece with replacement, as the whole batch would
                        # be: a cut before an ASCII byte changes no replacement.
                        texts = list(map(decode, pieces, _UTF8, _REPLACE))
                    # self._out is empty: nothing before the hot path adds to it.
                    if self._raw:
                        self._out += texts
                    else:
                        _messages(self._out, texts, ident)
                    if not self._eof:  # no block open, and the tail fits (checked above)
                        self._room = self.max_event_size
                        return
            elif not cr and end == 1 and self._open:
                # A lone blank line: it ends the block that earlier bytes
                # opened (a server that writes the blank line on its own).
                self._batch = batch
                self._batch_has_data = bool(self._data)
                self._offset += 1
                self._lines(_BLANK)
            elif not cr and not self._open and batch.startswith(b"data: ") and batch.find(b"\n") == end - 1:
                # A lone data line: it opens a block that a later blank
                # line ends.
                self._batch = batch
                self._block_start = self._offset
                self._batch_has_data = False
                self._offset += end
                with memoryview(batch) as view:
                    self._data = [str(view[6:-1], "utf-8", "replace")]
                self._open = True
            else:
                self._interpret(batch)
        held = self._offset - self._block_start if self._open else 0
        self._room = self.max_event_size - held
        pending = len(buf) + held
        # The limit is checked at end of stream too: whether the caller asked
        # for events before feeding b"" must not change the outcome.
        if pending > self.max_event_size:
            self._too_large(self._offset + len(buf) - pending)
        elif self._eof:
            self._closed = self._ready = True  # CLOSED, from now on
            if pending:
                self._out.append(Truncated("partial-event", pending))

    def _edge(self) -> bool:
        """The rare beginnings of a step: an LF to swallow after a batch that
        ended in CR, the byte order mark, and a buffer too long to read in
        one go.  Returns True when the step is over."""
        buf = self._buf
        if self._skip_lf and buf:
            self._skip_lf = False
            if buf[0] == 0x0A:
                del buf[0]
                self._offset += 1
        # One U+FEFF at the very start of the stream is dropped, no other.
        # A prefix of it waits for the third byte; it holds no line
        # terminator, so the scan below finds nothing, and it counts against
        # max_event_size like any unterminated line.
        if not self._started and (len(buf) >= 3 or not _BOM.startswith(buf) or self._eof):
            self._started = True
            if buf.startswith(_BOM):
                del buf[:3]
                self._offset += 3
                if self.max_event_size < 2:
                    # Its first two bytes alone outgrew the limit, as they
                    # do when they arrive one at a time.
                    self._too_large(0)
                    return True
        if len(buf) > _SLICE and (end := buf.rfind(b"\n", 0, _SLICE) + 1):
            # Many complete lines at once (a whole body in one call): they
            # are read a slice at a time, so that the text of a step stays in
            # the CPU caches.  A slice ends in LF, never between CR and LF;
            # the rest waits in the buffer for the next step.
            batch = buf[:end]
            del buf[:end]
            self._ready = True
            if len(batch) <= self._room:
                self._interpret(batch)
            elif not self._interpret_within_limit(batch):
                return True
            held = self._offset - self._block_start if self._open else 0
            self._room = self.max_event_size - held
            return True
        return False

    def _interpret_within_limit(self, batch: bytearray) -> bool:
        """Interpret a batch that could make an event outgrow the limit: up to
        the line where one does, if one does (then False, the error set)."""
        cut = self._oversize(batch)
        if cut is None:
            self._interpret(batch)
            return True
        if cut[0]:
            self._interpret(batch[: cut[0]])
        self._too_large(cut[1])
        return False

    def _oversize(self, batch: bytearray) -> tuple[int, int] | None:
        """Where this batch makes an event outgrow ``max_event_size``, if it
        does: ``(cut, start)``, to interpret ``batch[:cut]`` and fail on the
        event that starts at stream offset ``start``.

        An event is too large when, after some byte of it arrived and every
        line it completed was read, it holds more than the limit: its block's
        bytes so far (terminators included) or, outside a block, its
        unterminated line's.  Checking that line by line, in bytes, makes the
        error come at the same place whatever the chunking; only batches
        that could break the limit come here.
        """
        limit = self.max_event_size
        base = self._offset
        is_open = self._open
        start = self._block_start
        a = 0
        for m in _TERMINATOR.finditer(batch):
            b, c = m.span()
            ref = start if is_open else base + a
            if base + b - ref > limit:
                return a, ref
            if b == a:  # a blank line ends the block
                is_open = False
            elif batch[a] != 0x3A and not is_open:  # not a comment: a field
                is_open = True
                start = base + a
            if is_open and base + c - start > limit:
                return c, start  # the line itself was read when it ended
            a = c
        return None

    def _too_large(self, start: int) -> None:
        self._ready = True  # the error is what the next call hands out
        self._pending_error = RemoteProtocolError(
            f"event too large: the event that starts at byte {start} holds more than "
            f"max_event_size={self.max_event_size} bytes",
            start,
        )

    def _interpret(self, batch: bytearray) -> None:
        """Interpret a batch of complete lines."""
        was_open = self._open
        self._batch = batch
        self._batch_has_data = bool(self._data)
        size = len(batch)
        self._offset += size
        if (
            size > _BIG
            and not was_open
            and batch.find(b"\n", 0, _BIG) < 0
            and batch.find(b"\r") < 0
            and self._large_events(batch)
        ):
            return
        text = batch.decode("utf-8", "replace")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if was_open:
            self._lines(_split_lines(text))
        else:
            self._blocks(text)
        if self._open:
            # Find where the block that is still open began, if in this batch.
            lines = _split_lines(text)
            k = len(lines)
            while k and lines[k - 1]:
                k -= 1
            if k or not was_open:
                while lines[k][:1] == ":":
                    k += 1
                self._block_start = self._line_offset(k)

    def _large_events(self, batch: bytearray) -> bool:
        """Dispatch a batch made only of one-line ``data:`` events, each
        followed by a blank line, straight from its bytes: each event's data
        is decoded once, and the batch is never decoded or split whole (which
        for large events would mean several copies of each, at up to four
        bytes a character).  Returns False, dispatching nothing, when the
        batch holds anything else."""
        size = len(batch)
        values: list[str | bytearray] = []
        start = 0
        with memoryview(batch) as view:
            while start < size:
                end = batch.find(b"\n", start)  # found: a batch ends with a terminator
                if not batch.startswith(b"data: ", start) or end + 1 >= size or batch[end + 1] != 0x0A:
                    return False
                if not self._raw or end - start < _HUGE:
                    values.append(str(view[start + 6 : end], "utf-8", "replace"))
                elif start == 0 and end + 2 == size:
                    values.append(batch)  # a huge event alone: the batch becomes its data (below)
                else:
                    values.append(bytearray(view[start + 6 : end]))  # a huge event's data, as bytes
                start = end + 2
        if values[0] is batch:
            # The batch becomes the data's bytes, trimmed in place (no copy):
            # ChatStream reads them without decoding them whole (_large).
            del batch[-2:]
            del batch[:6]
        if len(values) == 1:
            # Keep a stand-in with the same line structure, not the bytes
            # (for _item_offset): the large event is held once, as its data.
            self._batch = _ONE_EVENT
        ident = self._id_buf
        if self._raw:
            self._out.extend(values)
        else:
            _messages(self._out, cast("list[str]", values), ident)
        self.last_event_id = ident
        return True

    def _blocks(self, text: str) -> None:
        """Interpret text that starts at a block boundary: the hot path.

        Nearly every block of a real stream is one ``data: `` line, so the
        text is cut where a blank line is followed by ``data: ``: each cut
        piece then *is* an event's data, unless it holds a line break (the
        block had more lines, or blank lines or comments followed it), in
        which case that piece goes to ``_lines``.  So does whatever precedes
        the first cut, and the last piece, which runs to the end of the text
        and may hold an unfinished block.
        """
        pieces = text.split("\n\ndata: ")
        if text[:6] == "data: ":
            pieces[0] = pieces[0][6:]
        else:
            head = pieces.pop(0)
            if not pieces:
                self._lines(_split_lines(head))
                return
            lines = head.split("\n")
            lines.append("")
            self._lines(lines)
        last = pieces.pop()
        out = self._out
        raw = self._raw
        ident = self._id_buf
        for piece in pieces:  # each is followed by a blank line
            if "\n" in piece:
                lines = ("data: " + piece).split("\n")
                lines.append("")
                self._lines(lines)
                ident = self._id_buf
            else:
                out.append(piece if raw else _new_event("message", piece, ident, None))
        if last[-2:] == "\n\n" and last.find("\n") == len(last) - 2:
            # The usual end of a batch: one more single-line event, complete.
            out.append(last[:-2] if raw else _new_event("message", last[:-2], ident, None))
            self.last_event_id = ident
        else:
            if pieces:
                self.last_event_id = ident
            self._lines(_split_lines("data: " + last))

    def _lines(self, lines: Iterable[str]) -> None:
        """Interpret complete lines: the hot path.

        The block state lives in locals for the loop and is written back once
        at the end.  Blank lines and ``data:`` lines are tested first: they
        are nearly every line of a real stream.
        """
        out = self._out
        raw = self._raw
        data = self._data
        is_open = self._open
        etype = self._type
        ident = self._id_buf
        retry = self._block_retry
        last_id = self.last_event_id
        for line in lines:
            if not line:
                # A blank line: "dispatch the event".
                if is_open:
                    is_open = False
                    last_id = ident
                    if data:
                        value = data[0] if len(data) == 1 else "\n".join(data)
                        if raw and (not etype or etype == "message"):
                            out.append(value)  # an owning ChatStream reads only the data
                        else:
                            out.append(_new_event(etype or "message", value, ident, retry))
                        data = []
                    etype = ""
                    retry = None
            elif line[:5] == "data:":
                is_open = True
                data.append(line[6:] if line[5:6] == " " else line[5:])
            elif line[0] == ":":
                out.append(_new_heartbeat(line[2:] if line[1:2] == " " else line[1:]))
            else:
                is_open = True
                name, colon, value = line.partition(":")
                if colon and value[:1] == " ":
                    value = value[1:]
                if name == "data":  # "data" with no colon: an empty value
                    data.append(value)
                elif name == "event":
                    etype = value
                elif name == "id":
                    if "\x00" not in value:
                        ident = value
                elif name == "retry" and value.isascii() and value.isdigit():
                    retry = self._retry_value(value, retry)
                # Any other field name is ignored.
        self._open = is_open
        self._data = data
        self._type = etype
        self._id_buf = ident
        self._block_retry = retry
        self.last_event_id = last_id

    def _retry_value(self, digits: str, current: int | None) -> int | None:
        """Honour a ``retry`` value, unless int() refuses it as too long
        (past ``sys.get_int_max_str_digits()``): no one can wait that long."""
        try:
            self.retry = value = int(digits)
        except ValueError:
            return current
        return value

    # -- offsets, for the rare paths -----------------------------------------

    def _line_offset(self, k: int) -> int:
        """Stream offset of the start of line ``k`` of the latest batch."""
        batch = self._batch
        base = self._offset - len(batch)
        if k == 0:
            return base
        if 13 not in batch:
            # Every line ends in LF: the k-th LF, found by memchr.
            end = 0
            for _ in range(k):
                end = batch.index(10, end) + 1
            return base + end
        ends = _TERMINATOR.finditer(batch)
        for _ in range(k - 1):
            next(ends)
        return base + next(ends).end()

    def _item_offset(self, nth: int) -> int:
        """Stream offset where the line that produced item ``nth`` of the
        latest step's output begins: the blank line that dispatched an
        event (so the event's bytes end just before it), or the comment line
        of a heartbeat.  Chunking never moves it: unlike the end of a CRLF
        line, the start of a line does not depend on whether its LF has
        arrived yet."""
        has_data = self._batch_has_data
        text = self._batch.decode("utf-8", "replace")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        marks = []
        for k, line in enumerate(_split_lines(text)):
            if line[:5] == "data:" or line == "data":
                has_data = True
            elif not line:
                if has_data:
                    marks.append(k)
                has_data = False
            elif line[0] == ":":
                marks.append(k)
        return self._line_offset(marks[nth])


def _split_lines(text: str) -> list[str]:
    """The lines of LF-terminated text (its last character is LF)."""
    lines = text.split("\n")
    lines.pop()
    return lines
