"""What every adapter shares that is not I/O: the request and the driver.

Theory of operation
-------------------
An adapter is a loop: open a connection, send the request, read the
response head, feed body bytes to a machine as they arrive, hand out the
events, stop at ``Done`` or ``CLOSED``.  Everything in that loop that is a
decision rather than I/O lives here, so the adapters (stdlib, httpx sync and
async, trio) decide alike:

* ``build_request`` turns ``(base_url, payload, api_key, headers,
  dialect)`` into a ``ChatRequest``: the API's path under ``base_url`` and
  what its body and headers need to stream (``_apis.py`` holds that, per
  API; for ``"openai-chat"``, ``POST {base_url}/chat/completions`` with
  ``"stream": true`` and ``stream_options.include_usage`` unless the caller
  set ``stream_options``), ``Content-Type: application/json``,
  ``Accept: text/event-stream``, ``Accept-Encoding: identity`` (the body must
  reach the parser as the server wrote it, never compressed) and the key in
  the API's header when one is given; caller headers replace defaults of
  the same name.
* ``StreamDriver`` owns one call: the ``ChatStream`` of the current attempt
  (reading the request's dialect), the ``StatsRecorder``, the *emitted* flag
  (a ``Delta`` or ``ToolCallFragment`` was handed out), the idle-timeout
  clock and the retry decisions.  It never reads a clock: every method that
  needs the time takes ``now``, a reading of the adapter's monotonic clock.
* The driver counts bytes and events itself and tells the recorder only
  the times it needs: the start, each arrival, the first output (a
  ``Delta`` or ``ToolCallFragment``: ``ttft``) and the end.  An arrival is
  what one read of the socket brought: the transports hand a read over one
  HTTP chunk at a time, so pieces handed over less than ``ARRIVAL`` after
  the previous one count as part of its arrival.  The gaps then measure the
  silences of the stream, not the adapter's own work between the pieces of
  one read; and recording every piece and every event would cost 4-9 % of a
  stream's CPU (``benchmarks/bench_adapters.py``).

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
    while True:                                   # one pass per attempt
        driver.begin_attempt(clock())
        try:
            open connection, send request.body, read the head, all bounded
            by driver.deadline  (on expiry: raise driver.timeout_error(clock()))
        except <transport error or StreamTimeout> as exc:
            close the connection
            sleep(driver.retry_open(failure, exc, clock()))   # raises when no retry is left
            continue
        delay = driver.on_response(status, header_pairs, clock())
        if delay is not None:                     # e.g. 429, 503: try again
            close the connection; sleep(delay); continue
        try:
            for data in <the body, as it arrives, each read bounded by driver.deadline>:
                events = driver.feed(data, clock())
                if events:
                    yield events                  # one list per read, never one step per event
                    driver.check()                # a fault behind those events is raised now
                if driver.finished: break         # Done: do not wait for the server to close
            else:
                yield driver.feed(b"", clock())   # the end of the body (if not empty)
        except <transport error or timeout> as exc:  (failure: a library
                              timeout becomes driver.timeout_error(clock()))
            delay = driver.retry_read(failure, exc, clock())  # raises an unretried timeout
            if delay is not None: close; sleep(delay); continue
            yield driver.feed(b"", clock())       # the body ended early: Truncated
        return
    finally: close the connection; driver.close(clock())

The call objects hand the lists out one event at a time (``BlockingCall``,
``AsyncCall``), so the caller's loop costs a list ``pop`` per event and one
generator step per read.  How each adapter bounds a read by the deadline
without paying for a timer per read is told in its module.

Retries happen only while nothing was emitted (``RetryPolicy`` rule 1), so
a caller never sees two completions spliced together; events that are not
output (a ``Heartbeat`` read before a failure) may repeat across attempts.
Statuses are judged on the response head, before the body is read: a
retried 503's body is discarded unread, the last attempt's body is fed to
the machine and comes out as a ``StreamError``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterable, Mapping
from types import TracebackType
from typing import Any, NoReturn, TypeVar, Union
from urllib.parse import urlsplit

from .._chat import ChatStream
from .._events import ChatEvent, Delta, Done, ToolCallFragment
from .._framing import EventStreamParser
from .._retry import Phase, RetryPolicy, StreamTimeout
from .._state import ChatState
from .._stats import StatsRecorder, StreamStats
from ._apis import DIALECTS, api_request

__all__ = [
    "ARRIVAL",
    "LATE",
    "AsyncCall",
    "BlockingCall",
    "CallSurface",
    "ChatRequest",
    "HeaderInput",
    "StreamDriver",
    "build_request",
    "header_pairs",
    "settled",
]

HeaderInput = Union[Mapping[str, str], Iterable[tuple[str, str]]]

# How long a read made after the deadline waits.  When the caller kept the
# events longer than the limit, bytes that arrived meanwhile arrived in
# time: such a read takes them, and times out only when there are none.
# (Not 0: a timeout of 0 makes a blocking socket non-blocking, and the error
# it raises is not a timeout.)
LATE = 0.001
# Pieces of the body handed over less than this long after the previous one
# came from the same read of the socket (see "the driver counts" above).
ARRIVAL = 0.0001

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclasses.dataclass(frozen=True)
class ChatRequest:
    """A streaming request to one of the APIs, ready for any HTTP client.

    Attributes:
        method: always "POST".
        url: the full URL (e.g. ``{base_url}/chat/completions``).
        scheme: "http" or "https".
        host: host name or address (IPv6 without brackets).
        port: TCP port (the scheme's default when the URL has none).
        target: the request target: path plus ``?query`` if any.
        headers: ``(name, value)`` pairs, ``Host`` and ``Content-Length``
            excluded (every HTTP client adds those itself; with h11 add
            ``("Host", request.authority)`` and the length).
        body: the JSON body.
    """

    method: str
    url: str
    scheme: str
    host: str
    port: int
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    @property
    def authority(self) -> str:
        """The ``Host`` header value: host, plus ``:port`` when not default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if _DEFAULT_PORTS[self.scheme] == self.port else f"{host}:{self.port}"


def header_pairs(headers: HeaderInput | None) -> list[tuple[str, str]]:
    """Headers as a list of ``(name, value)`` pairs, in order."""
    if headers is None:
        return []
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(str(name), str(value)) for name, value in items]


def build_request(
    base_url: str,
    payload: Mapping[str, Any],
    api_key: str | None = None,
    headers: HeaderInput | None = None,
    dialect: str = "openai-chat",
) -> ChatRequest:
    """Build the streaming request of ``dialect``'s API (SPEC §7).

    Args:
        base_url: e.g. "https://api.openai.com/v1" (a trailing slash is fine).
        payload: the request body (model, messages, ...); not modified.
        api_key: sent in the API's header (``Authorization: Bearer``,
            ``x-api-key``, ``x-goog-api-key``) when given.
        headers: extra headers; they replace defaults of the same name.
        dialect: "openai-chat", "openai-responses", "anthropic", "gemini",
            or "auto" (the "openai-chat" request); see ``_apis.py``.

    Raises:
        ValueError: an unknown dialect; the URL is not http(s) with a host;
            the payload cannot be encoded as JSON, or (Gemini) names no
            model.
    """
    parts = urlsplit(base_url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"base_url must be an http:// or https:// URL with a host, got {base_url!r}")
    port = parts.port or _DEFAULT_PORTS[scheme]  # raises ValueError for a bad port
    suffix, api_query, body, defaults = api_request(dialect, payload, api_key)
    path = parts.path.rstrip("/") + suffix
    query = "&".join(q for q in (api_query, parts.query) if q)
    target = f"{path}?{query}" if query else path
    url = f"{scheme}://{parts.netloc}{target}"
    try:
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"payload cannot be sent as JSON: {exc}") from exc

    extra = header_pairs(headers)
    replaced = {name.lower() for name, _ in extra}
    defaults = [
        ("Content-Type", "application/json"),
        ("Accept", "text/event-stream"),
        ("Accept-Encoding", "identity"),
        *defaults,
    ]
    pairs = [(n, v) for n, v in defaults if n.lower() not in replaced] + extra
    return ChatRequest("POST", url, scheme, parts.hostname, port, target, tuple(pairs), data)


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
        emitted: a ``Delta`` or ``ToolCallFragment`` was handed out.
        finished: ``Done`` was handed out or the machine reached ``CLOSED``.
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
        self._reset()

    def _reset(self) -> None:
        self.status_code: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.content_type = ""
        self.machine: ChatStream | None = None
        self.finished = False
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
        attempt; None when the body just ended early (feed ``b""``, so that
        ``Truncated`` follows); a ``StreamTimeout`` no retry covers is raised."""
        delay = self.on_failure(failure, now)
        if delay is None and isinstance(failure, StreamTimeout):
            _reraise(failure, cause)
        return delay

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
            self._events += len(events)
            if not self.emitted:
                for event in events:
                    if type(event) is Delta or type(event) is ToolCallFragment:
                        self.emitted = True
                        self._recorder.on_event(now, event)  # ttft
                        break
            if type(events[-1]) is Done:
                self.finished = True
        if not data:
            self.finished = True  # feed(b"") handed out everything: the machine is CLOSED
        if self.finished:
            self.close(now)
        return events

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


class CallSurface:
    """The read-only surface every adapter's call object shares; a call
    object keeps its ``StreamDriver`` in ``_driver``."""

    _driver: StreamDriver

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
        """Timing and counts of the response being read."""
        return self._driver.stats

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
    _batch: list[ChatEvent]  # the rest of the current list, reversed: the next event is last
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
    _batch: list[ChatEvent]
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
