"""ChatStream: an OpenAI-style chat-completion response as typed events, sans-IO.

Theory of operation
-------------------
``ChatStream`` owns an ``EventStreamParser`` and a ``ChunkReader`` and
joins them through the parser's batch method, ``feed_data``: the bytes a
call brings are framed, the items they dispatch are read into chat events,
and the events are queued, all in that call.  ``next_event`` hands queued
events out; ``feed`` returns them as a list.  Every state a stream can be
in, and every move between them, is in ``_state.py``.

The response head decides the mode once, at construction:

* **STREAMING** (2xx and ``text/event-stream``): every ``data`` payload is
  one chunk (``_chunks.py``).  ``[DONE]`` (exact, ASCII whitespace aside)
  moves the stream to ``DONE``: ``Done(sentinel=True)`` is queued and every
  later byte is ignored, never given to the parser.  At the end of the body
  without ``[DONE]``: ``Done(sentinel=False)`` when every started choice
  finished, else ``Truncated("eof-before-done")``, unless the parser
  already reported ``Truncated("partial-event")``.
* **BUFFERING** (any other status or content type): the body is kept (up
  to ``max_event_size``) and read whole at its end (``_body.py``): a
  ``chat.completion`` becomes the events its stream would have carried,
  anything else one ``StreamError``.

A fault (a payload that is not JSON in strict mode, an event or body past
``max_event_size``) moves the stream to ``FAILED``: the events before it
are handed out first, then the ``RemoteProtocolError`` is raised once, and
the stream is ``ERROR`` for good.  Events handed out are held by the caller
alone.
"""

from __future__ import annotations

import copy
from typing import Any, cast

from ._body import read_body
from ._dialects import DIALECTS, READERS, AutoReader
from ._events import ChatEvent
from ._framing import DEFAULT_MAX_EVENT_SIZE, EventStreamParser
from ._queue import Queued
from ._state import CHAT_TRANSITIONS, ChatState, Input, transition
from ._util import CLOSED, NEED_DATA, LocalProtocolError, RemoteProtocolError, Sentinel, copied, fresh

__all__ = ["ChatStream"]

_STREAMING = ChatState.STREAMING
# The most bytes without a line terminator a stream keeps before its parser
# sees them (see _stage): enough to spare the parser call for nearly every
# chunk that ends no line when chunks are small (a byte, a few dozen), few
# enough that an event that outgrows max_event_size is reported at most
# this many bytes late.
_STAGE = 1024


class ChatStream(Queued[ChatEvent]):
    """Turn the body of a chat-completion response into chat events.

    Args:
        status_code: the HTTP status of the response.
        content_type: its ``Content-Type`` header: a ``str``, the header's
            bytes as h11 gives them (read as Latin-1, as HTTP says), or None
            when the response has none (``getheader`` gives None then).
        strict: raise ``RemoteProtocolError`` on a ``data`` payload that is
            not JSON (True) or skip it (False).
        max_event_size: passed to the ``EventStreamParser``; also bounds a
            body that is not an event stream.
        dialect: the API whose stream this is (SPEC §3b): "openai-chat",
            "openai-responses", "anthropic", "gemini", or "auto" (the
            default), which decides on the first payload.

    Attributes:
        status_code, strict: as given.
        content_type: as given, a ``str`` ("" for None).
    """

    _ENDED = ChatState.ENDED  # for Queued
    __slots__ = (
        "__weakref__",
        "_body",
        "_fault",
        "_parser",
        "_reader",
        "_stage",
        "_stage_room",
        "_state",
        "content_type",
        "status_code",
        "strict",
    )

    def __init__(
        self,
        status_code: int = 200,
        content_type: str | bytes | None = "text/event-stream",
        strict: bool = True,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
        dialect: str = "auto",
    ) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}; got {dialect!r}")
        if content_type is None:
            content_type = ""
        elif not isinstance(content_type, str):
            content_type = bytes(content_type).decode("latin-1")
        self.status_code = status_code
        self.content_type: str = content_type
        self.strict = strict
        # Gemini writes errors as raw JSON lines: the parser hands them on.
        self._parser = EventStreamParser(max_event_size, unknown_lines=dialect in ("auto", "gemini"))
        reader_class = AutoReader if dialect == "auto" else READERS[dialect]
        self._reader = reader_class(strict, self._parser.dispatch_offset, max_event_size)
        media = content_type.partition(";")[0].strip().lower()
        streaming = 200 <= status_code < 300 and media == "text/event-stream"
        self._state: ChatState = _STREAMING if streaming else ChatState.BUFFERING
        self._body: bytearray | None = None  # the body, while BUFFERING
        # Events not handed out yet: created when the first ones wait (an
        # empty deque is most of an idle stream's memory).
        self._queue = None
        self._fault: RemoteProtocolError | None = None
        # Bytes that end no line cannot complete an event: while streaming,
        # they wait here (up to _stage_room bytes, 0 in every other state)
        # until a chunk brings a line terminator, and reach the parser with
        # it in one call.
        self._stage = bytearray()
        self._stage_room = min(_STAGE, max_event_size) if streaming else 0

    @property
    def state(self) -> ChatState:
        """Where the stream stands (see ``ChatState``)."""
        return self._state

    @property
    def dialect(self) -> str:
        """The API being read: the one given, or with ``"auto"`` the one
        found on the first payload ("auto" until then)."""
        return self._reader.dialect

    @property
    def response_id(self) -> str | None:
        """The ``id`` of the first chunk that has one ("" counts as absent)."""
        return self._reader.response_id

    @property
    def model(self) -> str | None:
        """The ``model`` of the first chunk that has one."""
        return self._reader.model

    @property
    def created(self) -> int | None:
        """The ``created`` time of the first chunk that has one (0 counts as absent)."""
        return self._reader.created

    @property
    def system_fingerprint(self) -> str | None:
        """The ``system_fingerprint`` of the first chunk that has one."""
        return self._reader.system_fingerprint

    # -- the three methods of SPEC §1 ------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes of the body; ``b""`` marks its end (and may repeat).

        The events the bytes complete are queued for ``next_event``.

        Raises:
            LocalProtocolError: bytes after the end of the body, or any call
                after the stream raised ``RemoteProtocolError``.
        """
        stage = self._stage
        if (
            data.__class__ is bytes
            and data
            and len(stage) + len(data) <= self._stage_room
            and not (10 in data or 13 in data)  # no line ends: the bytes can wait (see _stage)
        ):
            stage += data
        elif self._state is not _STREAMING:
            self._receive(data)
        elif stage or not data:
            self._push(self._stream(data))
        elif items := self._parser.feed_data(data):
            out: list[Any] = []
            self._read(items, out)
            self._push(out)

    def next_event(self) -> ChatEvent | Sentinel:
        """Return the next chat event, ``NEED_DATA`` or ``CLOSED``.

        Raises:
            RemoteProtocolError: a payload is not JSON (strict mode), or an
                event or body outgrew ``max_event_size``; every event before
                it was handed out first.
            LocalProtocolError: the stream was used after such an error.

        Any other exception is a bug in ssestate.
        """
        queue = self._queue
        if queue:
            return queue.popleft()
        if self._state is _STREAMING:
            return NEED_DATA
        return self._empty()

    def feed(self, data: bytes | bytearray | memoryview) -> list[ChatEvent]:
        """``receive_data(data)``, then every event now available, in order.

        The list is empty when nothing is ready.  When the bytes hold a
        fault, the events before it are returned and the error is raised by
        the next call (at once when there are none).

        Raises:
            RemoteProtocolError, LocalProtocolError: as ``next_event``.
        """
        stage = self._stage
        if (
            data.__class__ is bytes
            and data
            and len(stage) + len(data) <= self._stage_room
            and not (10 in data or 13 in data)  # no line ends: the bytes can wait (see _stage)
        ):
            if not self._queue:
                stage += data
                return []
        elif self._state is _STREAMING and not self._queue:
            if stage or not data:
                out = self._stream(data)
            elif items := self._parser.feed_data(data):
                out = []
                self._read(items, out)
            else:
                return []
            if out or self._fault is None:
                return out
            return self._drain()
        self.receive_data(data)
        return self._drain()

    # -- copies -------------------------------------------------------------------

    def __copy__(self) -> ChatStream:
        """An independent stream in the same state (copies share nothing
        mutable: feeding one never moves the other).

        Raises:
            TypeError: it holds data nested deeper than Python can copy.
        """
        return copied(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> ChatStream:
        twin = ChatStream.__new__(ChatStream)
        memo[id(self)] = twin
        for name in (*Queued.__slots__, *ChatStream.__slots__):
            if name != "__weakref__":
                setattr(twin, name, copy.deepcopy(getattr(self, name), memo))
        return twin

    # -- the rest -------------------------------------------------------------------

    def _move(self, event: Input, size: int = 0) -> None:
        """Take the move of ``CHAT_TRANSITIONS`` for ``event``.  Every move
        taken here leaves STREAMING (data while streaming never comes here),
        and only a streaming body stages bytes.  A move the table does not
        have is a misuse: ``size`` bytes after the end of the body, or any
        use after the error was raised.

        Raises:
            LocalProtocolError: the misuse, said in the caller's terms.
        """
        try:
            self._state = transition(CHAT_TRANSITIONS, self._state, event, "stream")
        except LocalProtocolError:
            if self._state is ChatState.ERROR:
                raise LocalProtocolError(f"stream unusable after an earlier error: {self._fault}") from None
            raise LocalProtocolError(f"receive_data() got {size} bytes after end of stream") from None
        self._stage_room = 0

    def _stream(self, data: bytes | bytearray | memoryview) -> list[Any]:
        """Hand the staged bytes and ``data`` to the parser while streaming;
        the events of what it dispatches, and of the end of the body."""
        out: list[Any] = []
        stage = self._stage
        if stage:
            if data.__class__ is not bytes:
                # Refused (or made bytes: a strided view cannot be joined as
                # it is) before the staged bytes are let go, so that a caller
                # may try again.
                if not isinstance(data, (bytes, bytearray, memoryview)):
                    raise TypeError(f"receive_data() takes bytes, not {type(data).__name__}")
                data = bytes(data)
            staged = bytes(stage)
            stage.clear()
            if data:
                data = staged + data
            else:
                # The staged bytes end no line: they dispatch nothing, but
                # may make the unfinished event too large.
                self._read(self._parser.feed_data(staged), out)
                if self._state is not _STREAMING:
                    self._receive(data)
                    return out
        items = self._parser.feed_data(data)
        if items:
            self._read(items, out)
        if not data:
            verdict = self._reader.verdict()
            if verdict is not None:
                out.append(verdict)
            self._move(Input.END)
            self._reader.templates.clear()
        return out

    def _read(self, items: list[Any], out: list[Any]) -> None:
        """Read what the parser dispatched; ``[DONE]`` and faults move the state."""
        reader = self._reader
        stop = reader.read(items, out)
        if type(reader) is AutoReader and reader.decided is not None:
            self._reader = reader.decided  # the API is known: its reader reads on
        if stop is None:
            return
        if isinstance(stop, RemoteProtocolError):
            self._fault = stop
            self._move(Input.FAULT)
        else:
            self._move(Input.MARKER)
        self._reader.templates.clear()

    def _receive(self, data: bytes | bytearray | memoryview) -> None:
        """``receive_data`` in every state but STREAMING."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"receive_data() takes bytes, not {type(data).__name__}")
        state = self._state
        self._move(Input.DATA if data else Input.END, len(data))
        if state is not ChatState.BUFFERING:
            return  # after [DONE], or after a fault: nothing more is read
        if data:
            if self._body is None:
                self._body = bytearray()
            body = self._body
            body += data
            limit = self._parser.max_event_size
            if len(body) > limit:
                self._fault = RemoteProtocolError(
                    f"response body exceeds max_event_size={limit} at byte {len(body)} "
                    f"(status {self.status_code}, {self.content_type!r})",
                    len(body),
                )
                self._move(Input.FAULT)
                self._body = None
            return
        self._push(read_body(self._body or b"", self.status_code, self.content_type, self._reader))
        self._body = None
        reader = self._reader
        if type(reader) is AutoReader and reader.decided is not None:
            self._reader = reader.decided

    def _empty(self) -> Sentinel:
        """``next_event`` with nothing queued: the sentinel of the state, or
        the error waiting behind the events handed out."""
        state = self._state
        if state is _STREAMING or state is ChatState.BUFFERING or state is ChatState.DONE:
            return NEED_DATA
        if state is ChatState.CLOSED:
            return CLOSED
        self._move(Input.DRAINED)
        if state is ChatState.ENDED:
            return CLOSED
        raise fresh(cast("RemoteProtocolError", self._fault))  # FAILED: entered with the fault set
