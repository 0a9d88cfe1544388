"""EventStreamParser: the WHATWG "interpret an event stream" algorithm, sans-IO.

Theory of operation
-------------------
The parser works eagerly.  ``receive_data`` appends a chunk to its
``ReceiveBuffer`` and, when the chunk brings a line terminator, takes every
complete line out at once (a *batch*), interprets it and queues the events
it dispatches; ``next_event`` only hands queued events out, and ``feed``
returns them as a list.  A chunk without a terminator cannot complete an
event, so it costs one append and one C-level test of its own bytes.  Every
state the parser can be in, and every move between them, is in
``_state.py``.

Interpreting a batch:

* CRLF and lone CR become LF first (two C-level ``replace`` calls, skipped
  when the batch holds no CR): CR and LF never occur inside a UTF-8
  sequence, so this changes no character.
* **The usual batch** starts at a block boundary and is nothing but
  one-line ``data: `` events, each followed by a blank line.  Its bytes are
  cut where a blank line is followed by ``data: ``; every piece is one
  event's data exactly when the batch holds no other LF (a C-level count
  says so).  Each piece is decoded alone, so a piece without emoji stays a
  narrow string.
* Everything else goes through the line loop (``_lines``), which follows
  the WHATWG steps line by line on bytes: a blank line dispatches, ``data``
  lines are appended to the data buffer, a comment is a ``Heartbeat`` at
  once, and ``event``, ``id`` and ``retry`` are read as the spec says.  Data
  is decoded (UTF-8 with replacement) when its event is dispatched.

The block that is still open at the end of a batch (a field line was read,
its blank line has not come) stays in the parser's slots: its data lines,
type, ``retry``, the stream offset where it began and the bytes it keeps.

``max_event_size`` bounds what an unfinished event makes the parser keep:
the data buffer (each line's value and its LF), the event type and the id
set in the open block, plus the unterminated line, whatever it is.  Each
line is checked as it was just before its terminator arrived, when it was
the unterminated line: the kept bytes plus the line must fit.  Any later
moment holds no more than that, so the error comes at the same place under
every chunking.  A batch whose every line fits for sure (the kept bytes
plus the whole batch fit) takes the usual path unchecked.

Offsets are not tracked per line, which would cost every line: the buffer
knows the offset of its first byte, and the rare things that need the
offset of a line inside a batch (where an open block began, where an
oversized event began, where an item was dispatched for a layer above)
recompute it from the batch's bytes.

The layers above (``ChatStream``) read through one batch method,
``feed_data``: every item one call dispatches, events as their bare data
(but ``event: error``), and a fault as the last item.
"""

from __future__ import annotations

import copy
import re
from collections import deque
from collections.abc import Iterable
from typing import Any, NamedTuple, Union, cast

from ._buffer import ReceiveBuffer
from ._events import Heartbeat, ServerSentEvent, Truncated, _fast
from ._state import PARSER_TRANSITIONS, Input, ParserState, transition
from ._util import CLOSED, NEED_DATA, LocalProtocolError, RemoteProtocolError, Sentinel, fresh

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "EventStreamParser", "FramingEvent", "UnknownLine"]

# 16 MiB: far above any chat-completion chunk (a few hundred bytes; a whole
# non-streamed tool call rarely exceeds a few hundred KiB) and still small
# enough that 10,000 concurrent streams cannot be made to hold terabytes.
DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024

FramingEvent = Union[ServerSentEvent, Heartbeat, Truncated]
# What feed_data hands a layer above: the data of "message" events as str,
# a huge one's undecoded bytes, other events, and a fault last.
Item = Union[str, bytearray, ServerSentEvent, Heartbeat, Truncated, RemoteProtocolError, "UnknownLine"]

# An owning layer gets the data of an event at least this large as its bytes,
# undecoded (a bytearray), so that it can read it without holding its text
# whole (see _large.py).
HUGE = 32 * 1024
_TERMINATOR = re.compile(rb"\r\n|\r|\n")
_FIELDS = (b"data", b"event", b"id", b"retry")
_new_event = _fast(ServerSentEvent)
_new_heartbeat = _fast(Heartbeat)
_OPEN = ParserState.OPEN


class UnknownLine(NamedTuple):
    """A line whose field name the parser does not know, as ``feed_data``
    hands it on to a layer that asked for such lines: the WHATWG algorithm
    ignores them, but a peer may write unframed text inside a stream (Gemini
    writes an error that way).  ``text`` is the whole line, decoded."""

    text: str


class EventStreamParser:
    """Turn the bytes of a ``text/event-stream`` body into events.

    Args:
        max_event_size: the most bytes an unfinished event may make the
            parser keep (see the module docstring); default 16 MiB.
        unknown_lines: ``feed_data`` also hands on each line whose field
            name the parser does not know, as an ``UnknownLine``; what
            ``feed`` and ``next_event`` hand out never changes.

    Attributes:
        last_event_id: the "last event ID string": the id buffer as it stood
            when the latest blank line ended a block.
        retry: the latest valid ``retry`` value seen, else None.
        max_event_size: the limit given.
    """

    __slots__ = (
        "__weakref__",
        "_block_start",
        "_buf",
        "_data",
        "_fault",
        "_id",
        "_id_size",
        "_kept",
        "_last",
        "_open",
        "_queue",
        "_retry",
        "_room",
        "_state",
        "_type",
        "_type_size",
        "_unknown_lines",
        "last_event_id",
        "max_event_size",
        "retry",
    )

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE, *, unknown_lines: bool = False) -> None:
        if max_event_size < 1:
            raise LocalProtocolError(f"max_event_size must be positive, got {max_event_size}")
        self.max_event_size = max_event_size
        self._unknown_lines = unknown_lines
        self.last_event_id = ""
        self.retry: int | None = None
        self._state = _OPEN
        self._buf = ReceiveBuffer()
        # Events not handed out yet: created when the first ones wait (an
        # empty deque is most of an idle parser's memory).
        self._queue: deque[FramingEvent] | None = None
        self._fault: RemoteProtocolError | None = None
        # The open block: its data lines (bytes), type, retry, the bytes it
        # keeps and where it began; the id buffer outlives blocks.
        self._data: list[bytes | bytearray] = []
        self._type = ""
        self._type_size = 0
        self._id = ""
        self._id_size = 0  # bytes of an id set in the open block
        self._retry: int | None = None
        self._open = False
        self._block_start = 0
        self._kept = 0
        # How long the unterminated line may grow before the limit breaks.
        self._room = max_event_size
        # The latest batch read for feed_data: its bytes, their stream offset,
        # and whether a block with data was open before it (see dispatch_offset).
        self._last: tuple[bytes | bytearray, int, bool] = (b"", 0, False)

    @property
    def state(self) -> ParserState:
        """Where the parser stands (see ``ParserState``)."""
        return self._state

    # -- the three methods of SPEC §1 ------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes of the stream; ``b""`` marks its end (and may repeat).

        The events the bytes complete are queued for ``next_event``.

        Raises:
            LocalProtocolError: bytes after the end of the stream, or any
                call after the parser raised ``RemoteProtocolError``.
        """
        if self._state is _OPEN and data.__class__ is bytes and data:
            buf = self._buf
            buf += data
            if 10 in data or 13 in data or len(buf) > self._room:
                self._push(self._read(False))
            return
        self._receive(data, False)

    def next_event(self) -> FramingEvent | Sentinel:
        """Return the next event, ``NEED_DATA`` or ``CLOSED``.

        Raises:
            RemoteProtocolError: an unfinished event outgrew
                ``max_event_size``; every event before it was handed out
                first.
            LocalProtocolError: the parser was used after such an error.

        Any other exception is a bug in ssestate.
        """
        queue = self._queue
        if queue:
            return queue.popleft()
        if self._state is _OPEN:
            return NEED_DATA
        return self._empty()

    def feed(self, data: bytes | bytearray | memoryview) -> list[FramingEvent]:
        """``receive_data(data)``, then every event now available, in order.

        The list is empty when nothing is ready.  When the bytes break the
        format, the events before the fault are returned and the error is
        raised by the next call (at once when there are none).

        Raises:
            RemoteProtocolError, LocalProtocolError: as ``next_event``.
        """
        if self._state is _OPEN and data.__class__ is bytes and data and not self._queue:
            buf = self._buf
            buf += data
            if 10 in data or 13 in data or len(buf) > self._room:
                events: list[Any] = self._read(False)
                if events or self._fault is None:
                    return events
                return self._drain()  # a fault with nothing before it: raised now
            return []
        self._receive(data, False)
        return self._drain()

    # -- the batch method of the layers above ---------------------------------

    def feed_data(self, data: bytes | bytearray | memoryview) -> list[Item]:
        """``feed`` for a layer that reads the data of events (as
        ``ChatStream`` does, whose APIs name their payloads inside the JSON):
        the same items in the same order, except that an event is given as
        its data alone (a ``str``, or, for data of 32 KiB or more, its
        undecoded UTF-8 as a ``bytearray`` the caller may consume) unless its
        type is "error", which comes whole; that lines of unknown fields come
        as ``UnknownLine`` when the parser was made with ``unknown_lines``;
        and that a fault is not raised: the ``RemoteProtocolError`` is the
        last item, and the parser is unusable afterwards.
        ``dispatch_offset`` says where each item of the latest call came
        from.
        """
        if self._state is _OPEN and data.__class__ is bytes and data and not self._queue:
            buf = self._buf
            buf += data
            if 10 in data or 13 in data or len(buf) > self._room:
                items: list[Any] = self._read(True)
                if self._fault is not None:
                    items.append(self._fault)
                    self._move(Input.DRAINED)
                return items
            return []
        self._receive(data, True)
        queued: list[Any] = self._take()
        if self._state is ParserState.FAILED:
            queued.append(self._fault)
        if self._state is not _OPEN and self._state is not ParserState.CLOSED:
            self._move(Input.DRAINED)
        return queued

    def dispatch_offset(self, k: int) -> int:
        """The stream offset of the line that dispatched item ``k`` of the
        latest ``feed_data`` call (``k`` counts from 0 among the items its
        bytes dispatched): the blank line that ended an event, a comment
        line, or a line handed on as an ``UnknownLine``.  For error messages of the layers above: unlike the end of a
        CRLF line, the start of a line does not depend on the chunking."""
        raw, base, has_data = self._last
        marks: list[int] = []
        for start, line in _lines_with_offsets(raw, base):
            if line[:5] == b"data:" or line == b"data":
                has_data = True
            elif not line:
                if has_data:
                    marks.append(start)
                has_data = False
            elif line[0] == 0x3A or (self._unknown_lines and line.partition(b":")[0] not in _FIELDS):
                marks.append(start)
        return marks[k]

    # -- copies ---------------------------------------------------------------------

    def __copy__(self) -> EventStreamParser:
        """An independent parser in the same state (copies share nothing
        mutable: feeding one never moves the other)."""
        return self.__deepcopy__({})

    def __deepcopy__(self, memo: dict[int, Any]) -> EventStreamParser:
        twin = EventStreamParser.__new__(EventStreamParser)
        memo[id(self)] = twin
        for name in EventStreamParser.__slots__:
            if name != "__weakref__":
                setattr(twin, name, copy.deepcopy(getattr(self, name), memo))
        return twin

    # -- everything but the usual chunk ------------------------------------------

    def _receive(self, data: bytes | bytearray | memoryview, data_only: bool) -> None:
        """``receive_data`` for what its first line does not take: other
        bytes-like types, the end of the stream, and every state but OPEN."""
        if data.__class__ is not bytes:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(f"receive_data() takes bytes, not {type(data).__name__}")
            data = bytes(data)
        state = self._state
        self._move(Input.DATA if data else Input.END, len(data))
        if state is not _OPEN:
            return  # the end again, or bytes after a fault: dropped
        if data:
            buf = self._buf
            buf += data
            if 10 in data or 13 in data or len(buf) > self._room:
                self._push(self._read(data_only))
            return
        self._push(self._finish())

    def _push(self, events: list[Any]) -> None:
        """Queue events for ``next_event``."""
        if events:
            if self._queue is None:
                self._queue = deque()
            self._queue.extend(events)

    def _take(self) -> list[Any]:
        """Every queued event, the queue let go."""
        events = list(self._queue or ())
        self._queue = None
        return events

    def _drain(self) -> list[Any]:
        """Everything queued, for ``feed``; with nothing queued, the error
        that waits behind the events handed out is raised."""
        events = self._take()
        if events:
            if self._state is ParserState.ENDED:
                self._move(Input.DRAINED)
            return events
        self._empty()
        return events

    def _empty(self) -> Sentinel:
        """``next_event`` with nothing queued: the sentinel of the state, or
        the error waiting behind the events handed out."""
        state = self._state
        if state is _OPEN:
            return NEED_DATA
        if state is ParserState.CLOSED:
            return CLOSED
        self._move(Input.DRAINED)
        if state is ParserState.ENDED:
            return CLOSED
        raise fresh(cast("RemoteProtocolError", self._fault))  # FAILED: entered with the fault set

    def _move(self, event: Input, size: int = 0) -> None:
        """Take the move of ``PARSER_TRANSITIONS`` for ``event``.  A move the
        table does not have is a misuse: ``size`` bytes after the end of the
        stream, or any use after the error was raised.

        Raises:
            LocalProtocolError: the misuse, said in the caller's terms.
        """
        try:
            self._state = transition(PARSER_TRANSITIONS, self._state, event, "parser")
        except LocalProtocolError:
            if self._state is ParserState.ERROR:
                raise LocalProtocolError(f"parser unusable after an earlier error: {self._fault}") from None
            end = self._buf.offset + len(self._buf)
            raise LocalProtocolError(
                f"receive_data() got {size} bytes after end of stream (stream ended at byte {end})", end
            ) from None

    def _read(self, data_only: bool) -> list[Any]:
        """Read every complete line in the buffer, then check the
        unterminated line against the limit; returns what was dispatched.
        A fault is kept in ``_fault``, the state FAILED."""
        out: list[Any] = []
        buf = self._buf
        lines = buf.extract_lines()
        if lines is not None:
            if data_only:
                self._last = (lines, buf.offset - len(lines), bool(self._data))
            self._interpret(lines, out, data_only)
            if self._fault is not None:
                return out
        self._room = self.max_event_size - self._kept
        if len(buf) > self._room:
            buf.start()  # a byte order mark is not part of the line (nor a prefix of one, yet)
            if buf.started and len(buf) > self._room:
                self._too_large(self._block_start if self._open else buf.offset)
        return out

    def _finish(self) -> list[Any]:
        """The end of the stream: an unfinished event is not dispatched;
        ``Truncated`` says how many of its bytes were pending."""
        buf = self._buf
        buf.start(ended=True)
        end = buf.offset + len(buf)
        pending = end - self._block_start if self._open else len(buf)
        buf.clear()
        self._data = []
        return [Truncated("partial-event", pending)] if pending else []

    def _too_large(self, start: int) -> None:
        self._fault = RemoteProtocolError(
            f"event too large: the event that starts at byte {start} holds more than "
            f"max_event_size={self.max_event_size} bytes",
            start,
        )
        self._move(Input.FAULT)
        self._buf.clear()
        self._data = []

    # -- interpreting a batch ----------------------------------------------------------

    def _interpret(self, lines: bytearray, out: list[Any], data_only: bool) -> None:
        """Interpret a batch of complete lines (see the module docstring)."""
        lf = lines.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if 13 in lines else lines
        if (
            data_only
            and lf is lines
            and len(lf) > HUGE
            and not self._open
            and lf.find(b"\n", 0, HUGE) < 0  # the first line is huge
            and self._huge(lines, out)
        ):
            return
        if not self._open and lf.startswith(b"data: ") and lf.endswith(b"\n\n") and len(lines) <= self.max_event_size:
            # The usual batch: one-line data events only, when no piece
            # holds another LF.
            pieces = lf[6:-2].split(b"\n\ndata: ")
            if 10 not in b"".join(pieces) and not (data_only and len(lf) >= HUGE and _has_huge(pieces)):
                try:  # valid UTF-8, the usual case, is decoded fastest strictly
                    texts = list(map(bytearray.decode, pieces))
                except UnicodeDecodeError:
                    # Each piece with replacement, as the whole batch would be:
                    # a cut before an ASCII byte changes no replacement.
                    texts = [piece.decode("utf-8", "replace") for piece in pieces]
                ident = self.last_event_id = self._id
                if data_only:
                    out += texts
                else:
                    out += [_new_event("message", text, ident, None) for text in texts]
                return
        # Blank lines outside a block do nothing: a run of them at the start
        # of the batch is skipped at C speed (the line loop counts lines from
        # after it).
        lead = 0
        if not self._open and lf[:1] == b"\n":
            rest = lf.lstrip(b"\n")
            lead = len(lf) - len(rest)
            lf = rest
        too_large = self._lines(lf.split(b"\n"), out, data_only)
        base = self._buf.offset - len(lines)
        if self._open and self._block_start < 0:
            # The block opened in this batch, at line -1 - _block_start.
            self._block_start = _line_start(lines, base, lead - 1 - self._block_start)
        if too_large is not None:
            self._too_large(self._block_start if self._open else _line_start(lines, base, lead + too_large))

    def _huge(self, lf: bytearray, out: list[Any]) -> bool:
        """A batch for ``feed_data`` whose first line is huge (and that holds
        no CR): when it is nothing but one-line ``data: `` events, each
        followed by a blank line, hand out their data without decoding or
        splitting the batch
        (which would mean several copies of each, at up to four bytes a
        character): the bytes of a huge one, the text of the others.  A lone
        huge event is the batch itself, trimmed in place.  Returns False,
        having handed out nothing, for any other batch."""
        size = len(lf)
        items: list[str | bytearray] = []
        start = 0
        with memoryview(lf) as view:
            while start < size:
                end = lf.find(b"\n", start)  # found: a batch ends with a terminator
                if not lf.startswith(b"data: ", start) or end + 1 >= size or lf[end + 1] != 0x0A:
                    return False
                if end - start < HUGE:
                    items.append(str(view[start + 6 : end], "utf-8", "replace"))
                elif start == 0 and end + 2 == size:
                    items.append(lf)  # alone: the batch becomes its data (below)
                else:
                    items.append(bytearray(view[start + 6 : end]))
                start = end + 2
        if items[0] is lf:
            # Trimmed in place, the batch no longer says where its blank line
            # was: dispatch_offset reads a stand-in of that one line instead.
            self._last = (b"\n", self._buf.offset - 1, True)
            del lf[-2:]
            del lf[:6]
        out += items
        self.last_event_id = self._id
        return True

    def _lines(self, lines: list[bytearray], out: list[Any], data_only: bool) -> int | None:
        """Interpret complete lines (the last item of ``lines`` is the empty
        text after the final LF), the WHATWG way.

        The block state lives in locals for the loop and is written back
        once at the end.  A block that opens here records the index of its
        first line as ``-1 - index`` in ``_block_start``, for ``_interpret``
        to turn into an offset.  Returns the index of a line that made an
        event too large, having read the lines before it, else None.
        """
        limit = self.max_event_size
        unknown = data_only and self._unknown_lines
        data = self._data
        is_open = self._open
        etype = self._type
        type_size = self._type_size
        ident = self._id
        id_size = self._id_size
        retry = self._retry
        kept = self._kept
        last_id = self.last_event_id
        start = self._block_start
        lines.pop()
        for k, line in enumerate(lines):
            if kept + len(line) > limit:
                # This line, before its terminator came, made the event too
                # large: what was dispatched before it stands.
                self._open = is_open
                self._block_start = start
                self.last_event_id = last_id
                return k
            if not line:
                # A blank line: "dispatch the event".
                if is_open:
                    is_open = False
                    last_id = ident
                    if data:
                        out.append(_dispatched(data, etype, ident, retry, data_only))
                        data = []
                    etype = ""
                    type_size = id_size = kept = 0
                    retry = None
            elif line[:5] == b"data:":
                value = line[6:] if line[5:6] == b" " else line[5:]
                data.append(value)
                kept += len(value) + 1
                if not is_open:
                    is_open, start = True, -1 - k
            elif line[0] == 0x3A:  # ":" a comment
                text = line[2:] if line[1:2] == b" " else line[1:]
                out.append(_new_heartbeat(text.decode("utf-8", "replace")))
            else:
                if not is_open:
                    is_open, start = True, -1 - k
                name, colon, value = line.partition(b":")
                if colon and value[:1] == b" ":
                    value = value[1:]
                if name == b"data":  # "data" with no colon: an empty value
                    data.append(value)
                    kept += len(value) + 1
                elif name == b"event":
                    etype = value.decode("utf-8", "replace")
                    kept += len(value) - type_size
                    type_size = len(value)
                elif name == b"id":
                    if 0 not in value:
                        ident = value.decode("utf-8", "replace")
                        kept += len(value) - id_size
                        id_size = len(value)
                elif name == b"retry":
                    if value.isdigit():
                        retry = self._retry_value(value, retry)
                elif unknown:
                    # Any other field name is ignored; feed_data hands the
                    # line on when asked (see UnknownLine).
                    out.append(UnknownLine(line.decode("utf-8", "replace")))
        self._data = data
        self._open = is_open
        self._type = etype
        self._type_size = type_size
        self._id = ident
        self._id_size = id_size
        self._retry = retry
        self._kept = kept
        self.last_event_id = last_id
        self._block_start = start
        return None

    def _retry_value(self, digits: bytes | bytearray, current: int | None) -> int | None:
        """Honour a ``retry`` value, unless int() refuses it as too long
        (past ``sys.get_int_max_str_digits()``): no one can wait that long."""
        try:
            self.retry = value = int(digits)
        except ValueError:
            return current
        return value


def _dispatched(
    data: list[bytes | bytearray], etype: str, ident: str, retry: int | None, data_only: bool
) -> ServerSentEvent | str | bytearray:
    """What a blank line dispatches for a block with data: the event, or for
    ``feed_data`` its data, unless its type is "error" (a huge one as its
    bytes, for the layer above to read without holding its text whole)."""
    raw = data[0] if len(data) == 1 else b"\n".join(data)
    if data_only and etype != "error":
        return bytearray(raw) if len(raw) >= HUGE else raw.decode("utf-8", "replace")
    return _new_event(etype or "message", raw.decode("utf-8", "replace"), ident, retry)


def _has_huge(pieces: list[bytearray]) -> bool:
    return max(map(len, pieces)) >= HUGE


def _lines_with_offsets(raw: bytes | bytearray, base: int) -> Iterable[tuple[int, bytes | bytearray]]:
    """The lines of ``raw`` (complete lines, any terminators), each with the
    stream offset where it starts (``raw`` starts at ``base``)."""
    at = 0
    for m in _TERMINATOR.finditer(raw):
        yield base + at, raw[at : m.start()]
        at = m.end()


def _line_start(raw: bytes | bytearray, base: int, k: int) -> int:
    """The stream offset where line ``k`` of ``raw`` starts."""
    if k == 0:
        return base
    if 13 not in raw:
        # Every line ends in LF: the start of line k follows the k-th LF.
        end = 0
        for _ in range(k):
            end = raw.index(10, end) + 1
        return base + end
    for n, (start, _) in enumerate(_lines_with_offsets(raw, base)):
        if n == k:
            return start
    raise AssertionError(f"no line {k} in a batch of complete lines")  # pragma: no cover - callers pass a line
