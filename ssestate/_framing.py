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

The batch is interpreted by a ``BlockReader`` (``_blocks.py``), which keeps
the block still open between batches and says where an event that outgrew
``max_event_size`` begins; the parser checks the unterminated line against
the limit itself (what the block keeps plus the line must fit), so that the
error comes at the same place under every chunking.

The layers above (``ChatStream``) read through one batch method,
``feed_data``: every item one call dispatches, events as their bare data
(but ``event: error``), and a fault as the last item.
"""

from __future__ import annotations

import copy
from typing import Any, Union, cast

from ._blocks import BlockReader, UnknownLine, is_unknown_field, lines_with_offsets
from ._buffer import HELD_EXTRA, ReceiveBuffer
from ._events import Heartbeat, ServerSentEvent, Truncated
from ._queue import Queued
from ._state import PARSER_TRANSITIONS, Input, ParserState, transition
from ._util import CLOSED, NEED_DATA, LocalProtocolError, RemoteProtocolError, Sentinel, copied, fresh

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "EventStreamParser", "FramingEvent", "UnknownLine"]

# 16 MiB: far above any chat-completion chunk (a few hundred bytes; a whole
# non-streamed tool call rarely exceeds a few hundred KiB) and still small
# enough that 10,000 concurrent streams cannot be made to hold terabytes.
DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024

FramingEvent = Union[ServerSentEvent, Heartbeat, Truncated]
# What feed_data hands a layer above: the data of "message" events as str,
# a huge one's undecoded bytes, other events, and a fault last.
Item = Union[str, bytearray, ServerSentEvent, Heartbeat, Truncated, RemoteProtocolError, "UnknownLine"]

_OPEN = ParserState.OPEN
# dispatch_offset's record of a feed_data call that read no batch: no item to name.
_NO_BATCH: tuple[bytes, int, bool, int | None] = (b"", 0, False, None)


class EventStreamParser(Queued[FramingEvent]):
    """Turn the bytes of a ``text/event-stream`` body into events.

    Args:
        max_event_size: the most bytes an unfinished event may make the
            parser keep (see the module docstring); default 16 MiB.
        unknown_lines: ``feed_data`` also hands on each line whose field
            name the parser does not know, as an ``UnknownLine``; what
            ``feed`` and ``next_event`` hand out never changes.

    Attributes:
        max_event_size: the limit given.
    """

    _ENDED = ParserState.ENDED  # for Queued
    __slots__ = (
        "__weakref__",
        "_block",
        "_buf",
        "_fault",
        "_last",
        "_room",
        "_state",
        "max_event_size",
    )

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE, *, unknown_lines: bool = False) -> None:
        if max_event_size < 1:
            raise LocalProtocolError(f"max_event_size must be positive, got {max_event_size}")
        self.max_event_size = max_event_size
        self._state: ParserState = _OPEN
        self._buf = ReceiveBuffer()
        self._block = BlockReader(max_event_size, unknown_lines)
        # Events not handed out yet: created when the first ones wait (an
        # empty deque is most of an idle parser's memory).
        self._queue = None
        self._fault: RemoteProtocolError | None = None
        # How long the unterminated line may grow before the limit breaks.
        self._room = max_event_size
        # The latest batch read for feed_data: its bytes, their stream offset,
        # whether a block with data was open before it, and how many items it
        # dispatched before a fault (None: no fault) (see dispatch_offset).
        self._last: tuple[bytes | bytearray, int, bool, int | None] = _NO_BATCH

    @property
    def last_event_id(self) -> str:
        """The "last event ID string": the id buffer as it stood when the
        latest blank line ended a block."""
        return self._block.last_event_id

    @property
    def retry(self) -> int | None:
        """The latest valid ``retry`` value seen, else None."""
        return self._block.retry

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
            if 10 in data or 13 in data:
                self._push(self._read(False, data))
            else:
                buf = self._buf
                buf += data
                if len(buf) > self._room:
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
            if 10 in data or 13 in data:
                events: list[Any] = self._read(False, data)
            else:
                buf = self._buf
                buf += data
                if len(buf) <= self._room:
                    return []
                events = self._read(False)
            if events or self._fault is None:
                return events
            return self._drain()  # a fault with nothing before it: raised now
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
        self._last = _NO_BATCH  # until this call reads a batch
        if self._state is _OPEN and data.__class__ is bytes and data and not self._queue:
            if 10 in data or 13 in data:
                items: list[Any] = self._read(True, data)
            else:
                buf = self._buf
                buf += data
                if len(buf) <= self._room:
                    return []
                items = self._read(True)
            if self._fault is not None:
                items.append(self._fault)
                self._move(Input.DRAINED)
            return items
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
        line, or a line handed on as an ``UnknownLine``.

        For error messages of the layers above: unlike the end of a CRLF
        line, the start of a line does not depend on the chunking.

        Raises:
            IndexError: the call dispatched fewer items (a ``Truncated`` at
                the end and a fault are not dispatched by a line)."""
        raw, base, has_data, dispatched = self._last
        marks: list[int] = []
        unknown = self._block.unknown_lines
        for start, line in lines_with_offsets(raw, base):
            if line[:5] == b"data:" or line == b"data":
                has_data = True
            elif not line:
                if has_data:
                    marks.append(start)
                has_data = False
            elif line[0] == 0x3A or (unknown and is_unknown_field(line)):
                marks.append(start)
        # The lines after a fault were not read: they dispatched nothing.
        return marks[:dispatched][k]

    # -- copies ---------------------------------------------------------------------

    def __copy__(self) -> EventStreamParser:
        """An independent parser in the same state (copies share nothing
        mutable: feeding one never moves the other).

        Raises:
            TypeError: it holds data nested deeper than Python can copy.
        """
        return copied(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> EventStreamParser:
        twin = EventStreamParser.__new__(EventStreamParser)
        memo[id(self)] = twin
        for name in (*Queued.__slots__, *EventStreamParser.__slots__):
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

    def _read(self, data_only: bool, data: bytes = b"") -> list[Any]:
        """Append ``data`` and read every complete line in the buffer, then
        check the unterminated line against the limit; returns what was
        dispatched.  A fault is kept in ``_fault``, the state FAILED."""
        out: list[Any] = []
        buf = self._buf
        block = self._block
        # An event line may stay in the buffer when it opens a block that
        # fits the limit (itself, as the unterminated line it was).
        lines = buf.extract_lines(self.max_event_size + 1, not block.open, data)
        if lines is not None:
            base = buf.offset - len(lines)
            size = len(lines)
            if data_only:
                self._last = (lines, base, bool(block.data), None)
            too_large = block.read(lines, base, out, data_only)
            if len(lines) < size:
                # A lone huge event, handed out as the batch trimmed in place:
                # dispatch_offset reads a stand-in of its blank line instead.
                self._last = (b"\n", buf.offset - 1, True, None)
            if too_large is not None:
                if data_only:
                    self._last = (*self._last[:3], len(out))
                self._too_large(too_large)
                return out
        # A held event line counts as the block it opens would: its type.
        self._room = self.max_event_size - block.kept + (HELD_EXTRA if buf.held else 0)
        if len(buf) > self._room:
            buf.start()  # a byte order mark is not part of the line (nor a prefix of one, yet)
            if buf.started and len(buf) > self._room:
                self._too_large(block.start if block.open else buf.offset)
        return out

    def _finish(self) -> list[Any]:
        """The end of the stream: an unfinished event is not dispatched;
        ``Truncated`` says how many of its bytes were pending."""
        buf = self._buf
        buf.start(ended=True)
        end = buf.offset + len(buf)
        pending = end - self._block.start if self._block.open else len(buf)
        buf.clear()
        buf.offset = end  # where the stream ended, for a misuse after it
        self._block.data = []
        return [Truncated("partial-event", pending)] if pending else []

    def _too_large(self, start: int) -> None:
        self._fault = RemoteProtocolError(
            f"event too large: the event that starts at byte {start} holds more than "
            f"max_event_size={self.max_event_size} bytes",
            start,
        )
        self._move(Input.FAULT)
        self._buf.clear()
        self._block.data = []
