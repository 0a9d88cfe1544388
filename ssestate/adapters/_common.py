"""What every adapter shares that is not I/O: the driver and the call objects.

Theory of operation
-------------------
An adapter is a loop: open a connection, send the request, read the
response head, feed body bytes to a machine as they arrive, hand out the
events, stop at ``Done`` or ``CLOSED``.  Everything in that loop that is a
decision rather than I/O lives here, so the adapters (stdlib, httpx sync and
async, trio) decide alike (the request they send is built by
``_request.build_request``, before the loop):

* ``StreamDriver`` owns one call: the ``ChatStream`` of the current attempt
  (reading the request's dialect), the ``StatsRecorder``, the *emitted*
  flag (output, as the retries below define it, or a ``StreamError`` was
  handed out), the idle-timeout clock and the retry decisions.  It never
  reads a clock: every method that needs the time takes ``now``, a reading
  of the adapter's monotonic clock.
* The driver counts bytes and events itself and tells the recorder only
  the times it needs: the start, each arrival, the first output (``ttft``)
  and the end.  An arrival is what one read of the socket brought: the
  transports hand a read over one HTTP chunk at a time, so pieces handed
  over less than ``ARRIVAL`` after the previous one count as part of its
  arrival.  The gaps then measure the silences of the stream, not the
  adapter's own work between the pieces of one read; and recording every
  piece and every event would cost 4-9 % of a stream's CPU
  (``benchmarks/bench_adapters.py``).

The call object every adapter returns
-------------------------------------
``stream_chat(...)`` returns a call object that is a context manager (async
for the async adapters) and an iterator (async iterator) of the chat events
of SPEC §3, with:

* ``.status_code`` (int, or None before the response head arrived) and
  ``.headers`` (list of ``(name, value)`` str pairs) of the response whose
  events are being read (the last attempt);
* ``.stats``: a ``StreamStats`` snapshot for that attempt;
* ``.attempts``: how many requests were made (1 when nothing was retried);
* ``.close()`` (``aclose()`` for async): closes the connection; idempotent.

Iteration ends right after ``Done`` (without waiting for the server to close
the connection) or when the machine reaches ``CLOSED``; a ``Truncated`` event
comes before ``CLOSED`` when the body ended early.  Leaving the ``with``
block, breaking out of the loop, closing the generator, an exception and
cancellation all close the connection.

The loop, with the driver
-------------------------
::

    driver = StreamDriver(first_byte_timeout=..., idle_timeout=..., retry=..., dialect=...)
    request = build_request(base_url, payload, api_key, headers, dialect)
    try:
        while True:                               # one pass per attempt
            driver.begin_attempt(clock())
            try:
                open connection, send request.body, read the head, all bounded
                by driver.deadline  (on expiry: raise driver.timeout_error(clock()))
            except <transport error or StreamTimeout> as exc:
                close the connection
                sleep(driver.retry_open(failure, exc, clock()))   # raises when no retry is left
                continue
            delay = driver.on_response(status, header_pairs, clock())
            if delay is not None:                 # e.g. 429, 503, 529: try again
                close the connection; sleep(delay); continue
            while driver.reading:                 # until Done, the end of the body, or a retry
                try:
                    data = <the next piece of the body (b"" at its end),
                            the read bounded by driver.deadline>
                except <transport error or timeout> as exc:  (failure: a library
                                  timeout becomes driver.timeout_error(clock()))
                    if driver.retry_read(failure, exc, clock()) is not None:
                        break                     # (an unretried timeout is raised)
                    data = b""                    # the body ended early: Truncated
                events = driver.feed(data, clock())  # [] when an error before output is retried
                if events:
                    yield events                  # one list per read, never one step per event
                    driver.check()                # a fault behind those events is raised now
            if driver.retry_in is None:
                return                            # Done: do not wait for the server to close
            close the connection; sleep(driver.retry_in)
    finally: close the connection; driver.close(clock())

The call objects hand the lists out one event at a time (``BlockingCall``,
``AsyncCall``), so the caller's loop costs a list ``pop`` per event and one
generator step per read.  How each adapter bounds a read by the deadline
without paying for a timer per read is told in its module.

Retries happen only while nothing was emitted (``RetryPolicy`` rule 1), so
a caller never sees two completions spliced together.  Output is what an
``Accumulator`` would hold twice if it came again: a ``Delta`` that carries
text (content, reasoning or refusal) or logprobs, a ``ToolCallFragment``, a
``Continuation``; a ``Delta`` that only names the role (OpenAI's first
chunk, Anthropic's ``message_start``, the Responses API's
``response.created``, Gemini's first sight of a candidate) is not, so an
error right after it can still be retried.  Events that are not output
(that role, a ``Heartbeat``, a first ``Usage``) may repeat across attempts.
Statuses are judged on the response head, before the body is read: a
retried 503's body is discarded unread, the last attempt's body is fed to
the machine and comes out as a ``StreamError``.  An error written inside a
2xx stream before any output is judged as the status the same failure has
outside a stream (``_apis.in_stream_status``: Anthropic's
``overloaded_error`` is its 529): when the policy retries it, the events of
that read are dropped with the connection and the next attempt starts;
otherwise the ``StreamError`` is handed out like any event.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from types import TracebackType
from typing import Any, NoReturn, TypeVar

from .._chat import ChatStream
from .._events import ChatEvent, Continuation, Delta, Done, StreamError, ToolCallFragment
from .._framing import EventStreamParser
from .._retry import Phase, RetryPolicy, StreamTimeout
from .._state import ChatState
from .._stats import StatsRecorder, StreamStats
from ._apis import DIALECTS, in_stream_status
from ._request import HeaderInput, header_pairs

__all__ = [
    "ARRIVAL",
    "LATE",
    "AsyncCall",
    "BlockingCall",
    "CallSurface",
    "StreamDriver",
    "is_output",
    "settled",
]

# How long a read made after the deadline waits.  When the caller kept the
# events longer than the limit, bytes that arrived meanwhile arrived in
# time: such a read takes them, and times out only when there are none.
# (Not 0: a timeout of 0 makes a blocking socket non-blocking, and the error
# it raises is not a timeout.)
LATE = 0.001
# Pieces of the body handed over less than this long after the previous one
# came from the same read of the socket (see "the driver counts" above).
ARRIVAL = 0.0001


def is_output(event: ChatEvent) -> bool:
    """Whether ``event`` is output: part of the answer that an ``Accumulator``
    would hold twice if another attempt sent it again.  That is a ``Delta``
    that carries text (content, reasoning or refusal) or logprobs, a
    ``ToolCallFragment``, or a ``Continuation`` (appended to the choice's
    list).  A ``Delta`` that only names the role is not: the role is
    assigned, never appended (see the retries above)."""
    if isinstance(event, Delta):
        return bool(event.content or event.reasoning or event.refusal) or event.logprobs is not None
    return isinstance(event, (ToolCallFragment, Continuation))


class StreamDriver:
    """The decisions of one streamed call, across its attempts (sans-IO).

    Args:
        first_byte_timeout: seconds from the start of an attempt to the first
            body byte (connecting and the response head included); None
            waits forever.
        idle_timeout: seconds allowed between two body bytes; None waits
            forever.
        retry: the retry policy; None never retries.
        strict: passed to ``ChatStream`` (non-JSON ``data`` raises).
        dialect: passed to ``ChatStream``: the API whose answer this is
            (SPEC §3b), or "auto".

    Attributes:
        attempt: number of the current attempt, from 0 (-1 before the first).
        status_code: status of the current attempt's response, or None.
        headers: its headers as ``(name, value)`` pairs.
        content_type: its ``Content-Type`` ("" when absent).
        machine: the current attempt's ``ChatStream`` (None until
            ``on_response`` accepted the head).
        emitted: output (``is_output``) or a ``StreamError`` was handed out:
            no later attempt may follow.
        finished: ``Done`` was handed out or the machine reached ``CLOSED``.
        retry_in: seconds to wait before the next attempt, once this one
            is to be retried after its body began (it failed, or it holds
            an error before any output); else None.
        deadline: clock reading by which the next body byte must arrive
            (the first-byte limit from the start of the attempt, then the
            idle limit from the latest body byte), or None.
    """

    def __init__(
        self,
        *,
        first_byte_timeout: float | None = 30.0,
        idle_timeout: float | None = 30.0,
        retry: RetryPolicy | None = None,
        strict: bool = True,
        dialect: str = "openai-chat",
    ) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}; got {dialect!r}")
        for name, value in (("first_byte_timeout", first_byte_timeout), ("idle_timeout", idle_timeout)):
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be > 0 or None, got {value!r}")
        self.first_byte_timeout = first_byte_timeout
        self.idle_timeout = idle_timeout
        self.retry = retry
        self.strict = strict
        self.dialect = dialect
        self.attempt = -1
        self.emitted = False
        self._ttft_known = False  # the first text or tool call was handed out
        self._reset()

    def _reset(self) -> None:
        self.status_code: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.content_type = ""
        self.machine: ChatStream | None = None
        self.finished = False
        self.retry_in: float | None = None
        self._recorder = StatsRecorder()
        self._bytes = 0
        self._events = 0
        self._last = 0.0  # start of the attempt, then time of the latest body byte
        self._got_bytes = False
        self.deadline: float | None = None
        self._closed = False

    # -- attempts and retries -------------------------------------------------

    @property
    def attempts(self) -> int:
        """Requests made so far."""
        return self.attempt + 1

    def begin_attempt(self, now: float) -> None:
        """A new request is about to be sent (the first-byte clock starts)."""
        self.attempt += 1
        self._reset()
        self._last = now
        self.deadline = None if self.first_byte_timeout is None else now + self.first_byte_timeout
        self._recorder.on_start(now)

    def should_retry(
        self,
        attempt: int,
        status: int | None,
        headers: HeaderInput | None,
        exc: BaseException | None,
    ) -> float | None:
        """Seconds to wait before retrying, or None.

        A transport failure (``exc`` not None: connection refused or reset,
        a ``StreamTimeout``, a body cut short) is judged as "no response"
        (status None) whatever status the head had.
        """
        if self.retry is None:
            return None
        if exc is not None:
            status, headers = None, None
        return self.retry.delay(attempt, status, headers, emitted=self.emitted)

    def on_response(self, status_code: int, headers: HeaderInput, now: float) -> float | None:
        """The response head arrived.

        Returns the seconds to wait before retrying (the status is
        retryable and the policy allows it; the adapter closes this response
        unread), or None: the body is to be read, and ``machine`` is ready.
        """
        self.status_code = status_code
        self.headers = header_pairs(headers)
        self.content_type = next((v for n, v in self.headers if n.lower() == "content-type"), "")
        delay = self.should_retry(self.attempt, status_code, self.headers, None)
        if delay is None:
            self.machine = ChatStream(status_code, self.content_type, self.strict, dialect=self.dialect)
        else:
            self.close(now)
        return delay

    def on_failure(self, exc: BaseException, now: float) -> float | None:
        """The attempt failed with a transport error or a ``StreamTimeout``.

        Returns the seconds to wait before retrying, or None.  On None the
        adapter re-raises ``exc`` when it is a ``StreamTimeout`` or when no
        response head was accepted (``machine is None``); otherwise the body
        ended early, and it feeds ``b""`` so that ``Truncated`` comes out.
        """
        delay = self.should_retry(self.attempt, self.status_code, self.headers, exc)
        if delay is not None:
            self.close(now)
        return delay

    def retry_open(self, failure: BaseException, cause: BaseException, now: float) -> float:
        """Opening the attempt (connect, request, head) failed with
        ``failure`` (``cause`` as the transport raised it): the seconds to
        wait before the next attempt, or ``failure`` raised when none is left."""
        delay = self.on_failure(failure, now)
        if delay is None:
            _reraise(failure, cause)
        return delay

    def retry_read(self, failure: BaseException, cause: BaseException, now: float) -> float | None:
        """Reading the body failed: the seconds to wait before the next
        attempt (also kept in ``retry_in``); None when the body just ended
        early (feed ``b""``, so that ``Truncated`` follows); a
        ``StreamTimeout`` no retry covers is raised."""
        delay = self.retry_in = self.on_failure(failure, now)
        if delay is None and isinstance(failure, StreamTimeout):
            _reraise(failure, cause)
        return delay

    @property
    def reading(self) -> bool:
        """The body of this attempt is still to be read: not finished, and
        not given up for a retry (``retry_in``)."""
        return not self.finished and self.retry_in is None

    # -- timeouts -------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        """The phase: "first-byte" until a body byte arrived in this attempt, then "idle"."""
        return "idle" if self._got_bytes else "first-byte"

    @property
    def limit(self) -> float | None:
        """The timeout of the current phase (None: no limit)."""
        return self.idle_timeout if self._got_bytes else self.first_byte_timeout

    def read_timeout(self, now: float) -> float | None:
        """Seconds the next read may block (0 when already late), or None."""
        deadline = self.deadline
        return None if deadline is None else max(0.0, deadline - now)

    def timeout_error(self, now: float) -> StreamTimeout:
        """The exception for a read that hit ``deadline``."""
        limit = self.limit
        return StreamTimeout(self.phase, now - self._last, 0.0 if limit is None else limit)

    # -- the body -------------------------------------------------------------

    def feed(self, data: bytes | bytearray | memoryview, now: float) -> list[ChatEvent]:
        """Body bytes arrived at ``now`` (``b""``: the body ended): the events
        they complete, in order, to hand out now.

        After ``Done`` (always the last event of its list) or the end of the
        body, ``finished`` is True and later bytes are only counted.  When
        the bytes hold an error before any output that the retry policy
        retries (see the retries above), nothing is returned and ``retry_in``
        says when to try again.  When
        the bytes hold a fault, the events before it are returned and
        ``check()`` raises it; with no event before it, it is raised here.

        Raises:
            RemoteProtocolError: a payload is not JSON (strict mode), an
                event is too large.
        """
        machine = self.machine
        if machine is None:
            raise RuntimeError("feed() before on_response() accepted a response head")
        if data:
            if now - self._last >= ARRIVAL or not self._got_bytes:
                self._recorder.on_bytes(now, len(data))
            self._last = now
            self._got_bytes = True
            self._bytes += len(data)
            idle = self.idle_timeout
            self.deadline = None if idle is None else now + idle
        if self.finished:
            return []
        events = machine.feed(data)
        if events:
            if not self._ttft_known and self._retry_before_output(events, now):
                return []
            self._events += len(events)
            if type(events[-1]) is Done:
                self.finished = True
        if not data:
            self.finished = True  # feed(b"") handed out everything: the machine is CLOSED
        if self.finished:
            self.close(now)
        return events

    def _retry_before_output(self, events: list[ChatEvent], now: float) -> bool:
        """Look at events about to be handed out before the first text or
        tool call: note output (``emitted``) and that first one (``ttft``),
        and whether an error comes before any output that the policy
        retries (then ``retry_in`` is set and True is returned).

        A ``StreamError`` handed out counts as emitted too: once the
        caller was told of a failure, an answer from another attempt would
        be spliced onto it (the ``Accumulator``'s outcome stays "error")."""
        for event in events:
            if is_output(event):
                self.emitted = True
                if type(event) is not Continuation:  # ttft is the first text or tool call
                    self._ttft_known = True
                    self._recorder.on_event(now, event)
                    return False
                continue
            if type(event) is StreamError and not self.emitted:
                status = in_stream_status(event)
                delay = None if status is None else self.should_retry(self.attempt, status, None, None)
                if delay is not None:
                    self.retry_in = delay
                    self.close(now)
                    return True
                self.emitted = True  # handed out: the output that may follow is still looked for
        return False

    def check(self) -> None:
        """Raise the fault that waited behind the events ``feed`` returned
        (call it once they are handed out)."""
        machine = self.machine
        if machine is not None and machine.state is ChatState.FAILED:
            machine.next_event()  # raises the RemoteProtocolError

    def close(self, now: float) -> None:
        """The attempt is over (finished, abandoned or failed); stops ``total``."""
        if not self._closed:
            self._closed = True
            self._recorder.on_end(now)

    @property
    def stats(self) -> StreamStats:
        """Stats of the current attempt."""
        return dataclasses.replace(self._recorder.stats, bytes=self._bytes, events=self._events)

    def untaken(self, count: int) -> None:
        """``count`` events that ``feed`` returned were never handed out (the
        caller left the loop first): ``stats.events`` leaves them out."""
        self._events -= count


class CallSurface:
    """The read-only surface every adapter's call object shares; a call
    object keeps its ``StreamDriver`` in ``_driver``."""

    _driver: StreamDriver
    _batch: list[ChatEvent]  # the rest of the current list, reversed: the next event is last

    @property
    def status_code(self) -> int | None:
        """Status of the response being read (the last attempt), or None."""
        return self._driver.status_code

    @property
    def headers(self) -> list[tuple[str, str]]:
        """Headers of that response as ``(name, value)`` pairs."""
        return self._driver.headers

    @property
    def stats(self) -> StreamStats:
        """Timing and counts of the response being read (``events``: those
        handed out so far)."""
        stats = self._driver.stats
        waiting = len(self._batch)
        return dataclasses.replace(stats, events=stats.events - waiting) if waiting else stats

    def _drop_batch(self) -> None:
        """The call closes: the events of the current list not handed out
        never will be."""
        self._driver.untaken(len(self._batch))
        self._batch = []

    @property
    def attempts(self) -> int:
        """Requests made so far (1 when nothing was retried)."""
        return self._driver.attempts

    @property
    def machine(self) -> ChatStream | None:
        """The ``ChatStream`` of the response being read (for its metadata)."""
        return self._driver.machine


_S = TypeVar("_S", bound="BlockingCall")
_A = TypeVar("_A", bound="AsyncCall")


class BlockingCall(CallSurface):
    """A blocking call object: context manager and iterator of the events
    in the lists its ``_run()`` generator yields (never an empty one),
    started on the first ``next()``.  Leaving the ``with`` block closes the
    call: ``close()`` normally, ``_abort()`` when an exception is on its
    way (for adapters where closing may wait a little, it must not then)."""

    _batches: Generator[list[ChatEvent], None, None] | None
    _closed: bool
    # What each adapter defines: the loop, and closing.
    _run: Callable[[], Generator[list[ChatEvent], None, None]]
    close: Callable[[], None]

    def _abort(self) -> None:
        self.close()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.close()
        else:
            self._abort()

    def __iter__(self: _S) -> _S:
        return self

    def __next__(self) -> ChatEvent:
        batch = self._batch
        if batch:
            return batch.pop()
        batches = self._batches
        if batches is None:
            if self._closed:
                raise StopIteration
            batches = self._batches = self._run()
        batch = next(batches)
        batch.reverse()
        self._batch = batch
        return batch.pop()


class AsyncCall(CallSurface):
    """An async call object: async context manager and async iterator of
    the events in the lists its ``_run()`` async generator yields (see
    ``BlockingCall``)."""

    _batches: AsyncGenerator[list[ChatEvent], None] | None
    _closed: bool
    # What each adapter defines: the loop, and closing.
    _run: Callable[[], AsyncGenerator[list[ChatEvent], None]]
    aclose: Callable[[], Awaitable[None]]

    async def _abort(self) -> None:
        await self.aclose()

    async def __aenter__(self: _A) -> _A:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            await self.aclose()
        else:
            await self._abort()

    def __aiter__(self: _A) -> _A:
        return self

    async def __anext__(self) -> ChatEvent:
        batch = self._batch
        if batch:
            return batch.pop()
        batches = self._batches
        if batches is None:
            if self._closed:
                raise StopAsyncIteration
            batches = self._batches = self._run()
        batch = await batches.__anext__()
        batch.reverse()
        self._batch = batch
        return batch.pop()


def settled(machine: ChatStream | EventStreamParser, events: list[Any], data: bytes | bytearray | memoryview) -> bool:
    """Once the events one ``machine.feed(data)`` returned are handed out:
    whether the stream is finished (``Done``, or the end of the body fed).
    A fault that waited behind those events is raised here."""
    if events and type(events[-1]) is Done:
        return True
    if events:
        machine.next_event()  # NEED_DATA or CLOSED, else it raises the fault
    return not data


def _reraise(failure: BaseException, cause: BaseException) -> NoReturn:
    """Raise ``failure``; chained to ``cause`` when a timeout replaced it."""
    if failure is cause:
        raise failure
    raise failure from cause
