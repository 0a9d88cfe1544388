"""The httpx adapter: ``stream_chat`` on an ``httpx.Client``, ``astream_chat``
on an ``httpx.AsyncClient``, and feeding helpers for responses opened with
``client.stream(...)``.  Needs ``pip install 'ssestate[httpx]'`` (HTTP/2:
``'ssestate[http2]'`` and a client made with ``http2=True``).

Theory of operation
-------------------
Both calls run the loop that ``ssestate.adapters._common`` describes,
with ``client.send(request, stream=True)`` for the head and the response's
raw byte iterator for the body: ``iter_raw``/``aiter_raw``, which hand over
what arrived (one HTTP/1.1 chunk, one HTTP/2 DATA frame) without waiting
for more and without decoding anything.  Each piece goes to the driver's
``ChatStream`` in one ``feed`` call, and the events it completes go to the
caller as one list.  The request carries ``Accept-Encoding: identity``; a
server that compresses anyway is read through ``iter_bytes``/``aiter_bytes``
(content decoding only, never text decoding).  The status and
``Content-Type`` of the response head go to the driver's ``ChatStream``;
headers keep the case the server sent.

Timeouts.  The driver owns one deadline: the first-byte limit from the
start of the attempt (a pool slot, connecting and the head included) to the
first body byte, then the idle limit from each body byte to the next.
httpx's own timeouts are replaced, for these requests, by a mapping that
answers every question httpcore asks (``connect``, ``pool``, ``write``,
``read``) with the time left until that deadline, and every network read of
the body asks it again (``_httpcore.Timeouts``, ``bound_reads``): the bound
is the transport's own read timeout, which it arms on every read anyway,
so keeping the deadline costs a clock reading per read and no timer of
ours.  A read asked for after the deadline (the caller kept the events
that long) waits ``_common.LATE`` at most: bytes that arrived meanwhile
still count.  The async head also runs inside one ``anyio.move_on_after`` scope
ending at the first-byte deadline, so that a head that trickles in is cut
exactly there.  Whatever fires, an httpx timeout becomes the driver's
``StreamTimeout``.

Keeping the connection.  Iteration ends at ``Done`` without waiting for
the server.  A response closed before the end of its body takes its
HTTP/1.1 connection with it, so after ``Done`` the adapter reads what is
left of the body (the terminating chunk, which a server writes right after
``[DONE]``) for at most ``DRAIN_TIME`` seconds and ``DRAIN_BYTES`` bytes,
then closes the response: when the body ended, httpx keeps the connection
for the next request; when the server holds it open, the connection is
closed.  That read happens when the caller asks for the event after
``Done`` (the end of its loop) or closes the call normally; an exception on
its way (cancellation included) closes at once.

Closing.  ``close()``/``aclose()``, leaving the ``with`` block, breaking out
of the loop (then the ``with`` block, or garbage collection, closes the
call), closing a generator that iterates the call, an exception, asyncio
task cancellation and trio or anyio cancel scopes all close the response;
the async close runs shielded from the cancellation that caused it.  On
HTTP/1.1 httpx then closes a connection whose body was not read to its
end, and the server sees the FIN.  On HTTP/2, httpx (httpcore 1.x) closes
the response without telling the server, which would go on generating into
a stream nobody reads.  So the adapter ends the stream itself: after
``Done`` it resets the stream (``RST_STREAM``; nothing is sent when the
server had ended it) and the connection stays in the pool; a response
abandoned before ``Done`` takes its whole connection down by default
(``close_http2_connection=True``: other requests multiplexed on it fail
with a transport error), or has its stream reset with ``False``, which
keeps the connection.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator, Mapping
from typing import Any, overload

try:
    import anyio
    import httpx
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("ssestate.adapters.httpx needs httpx: pip install 'ssestate[httpx]'") from exc

from .._chat import ChatStream
from .._events import ChatEvent
from .._framing import EventStreamParser, FramingEvent
from .._retry import RetryPolicy, StreamTimeout
from .._state import ChatState
from .._util import RemoteProtocolError
from ._common import AsyncCall, BlockingCall, CallSurface, StreamDriver, settled
from ._httpcore import Timeouts, areset_h2_stream, bound_reads, close_network, reset_h2_stream
from ._request import ChatRequest, HeaderInput, build_request

__all__ = [
    "DEFAULT_RETRY",
    "DRAIN_BYTES",
    "DRAIN_TIME",
    "AsyncHttpxCall",
    "HttpxCall",
    "aiter_events",
    "astream_chat",
    "iter_events",
    "stream_chat",
]

DEFAULT_RETRY = RetryPolicy()

# After Done, what is left of an HTTP/1.1 body is read for at most this long
# and this much, so that the connection can serve the next request.  A server
# writes the terminating chunk right after [DONE], so it is normally there at
# once; the time covers a delayed ACK holding it back (Nagle's algorithm on a
# server that did not turn it off), and is about what a new connection would
# cost behind TLS.  A server that holds the body open loses its connection
# after that time.
DRAIN_TIME = 0.25
DRAIN_BYTES = 65536

# Failures of the connection (refused, reset, a body cut short, a timeout),
# as opposed to bugs and to errors in what the caller asked for.
_TRANSPORT_ERRORS = (httpx.TransportError,)


# -- helpers for responses opened by the caller --------------------------------


def _undecodable(exc: httpx.DecodingError) -> RemoteProtocolError:
    """A body whose content coding does not decode: the same error the
    other adapters raise."""
    return RemoteProtocolError(f"the body is not valid in its Content-Encoding ({exc})")


def _raw_body(response: httpx.Response) -> bool:
    """True when the body can be read untouched (no content coding)."""
    coding = response.headers.get("content-encoding", "").strip().lower()
    return coding in ("", "identity")


def _body(response: httpx.Response) -> Iterator[bytes]:
    return response.iter_raw() if _raw_body(response) else response.iter_bytes()


def _abody(response: httpx.Response) -> AsyncIterator[bytes]:
    return response.aiter_raw() if _raw_body(response) else response.aiter_bytes()


def _machine_for(response: httpx.Response) -> ChatStream:
    return ChatStream(response.status_code, response.headers.get("content-type", ""))


def _header_pairs(response: httpx.Response) -> list[tuple[str, str]]:
    """The response headers as ``(name, value)`` pairs, names as sent."""
    encoding = response.headers.encoding
    return [(name.decode(encoding), value.decode(encoding)) for name, value in response.headers.raw]


@overload
def iter_events(response: httpx.Response, machine: None = ...) -> Iterator[ChatEvent]: ...
@overload
def iter_events(response: httpx.Response, machine: ChatStream) -> Iterator[ChatEvent]: ...
@overload
def iter_events(response: httpx.Response, machine: EventStreamParser) -> Iterator[FramingEvent]: ...
def iter_events(
    response: httpx.Response, machine: ChatStream | EventStreamParser | None = None
) -> Iterator[ChatEvent | FramingEvent]:
    """Feed the body of a response opened with ``client.stream(...)`` to a
    machine and yield its events.

    Args:
        response: an ``httpx.Response`` whose body was not read yet.
        machine: a ``ChatStream`` or an ``EventStreamParser``; by default a
            ``ChatStream`` built from the response's status and
            ``Content-Type``.

    Stops after ``Done`` (the rest of the body is not read) or when the
    machine reaches ``CLOSED``.  Timeouts are the client's; closing the
    response is up to the caller (the ``with client.stream(...)`` block).
    Raises what the machine raises and what reading raises (``httpx``
    errors; a body cut short is ``httpx.RemoteProtocolError``).
    """
    if machine is None:
        machine = _machine_for(response)
    for data in _body(response):
        events = machine.feed(data)
        yield from events
        if settled(machine, events, data):
            return
    events = machine.feed(b"")
    yield from events
    settled(machine, events, b"")


@overload
def aiter_events(response: httpx.Response, machine: None = ...) -> AsyncIterator[ChatEvent]: ...
@overload
def aiter_events(response: httpx.Response, machine: ChatStream) -> AsyncIterator[ChatEvent]: ...
@overload
def aiter_events(response: httpx.Response, machine: EventStreamParser) -> AsyncIterator[FramingEvent]: ...
def aiter_events(
    response: httpx.Response, machine: ChatStream | EventStreamParser | None = None
) -> AsyncIterator[ChatEvent | FramingEvent]:
    """``iter_events`` for a response opened with ``AsyncClient.stream(...)``."""
    return _aiter_events(response, _machine_for(response) if machine is None else machine)


async def _aiter_events(
    response: httpx.Response, machine: ChatStream | EventStreamParser
) -> AsyncGenerator[ChatEvent | FramingEvent, None]:
    chunks = _abody(response)
    try:
        async for data in chunks:
            events = machine.feed(data)
            for event in events:
                yield event
            if settled(machine, events, data):
                return
    finally:
        await _aclose_iterator(chunks)
    events = machine.feed(b"")
    for event in events:
        yield event
    settled(machine, events, b"")


async def _aclose_iterator(chunks: AsyncIterator[bytes]) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:  # pragma: no branch - httpx's body iterators are async generators
        await aclose()


# -- the calls ------------------------------------------------------------------


def stream_chat(  # noqa: PLR0917 - the positional order SPEC §7 fixes
    client: httpx.Client,
    base_url: str,
    payload: Mapping[str, Any],
    api_key: str | None = None,
    headers: HeaderInput | None = None,
    first_byte_timeout: float | None = 30.0,
    idle_timeout: float | None = 30.0,
    retry: RetryPolicy | None = DEFAULT_RETRY,
    *,
    dialect: str = "openai-chat",
    strict: bool = True,
    close_http2_connection: bool = True,
) -> HttpxCall:
    """Stream a chat completion through an ``httpx.Client`` (SPEC §7).

    Args:
        client: the client (its pool, proxies, TLS settings and default
            headers are used; its timeouts are replaced for this request).
        base_url: e.g. "https://api.openai.com/v1"; the request goes to
            ``{base_url}/chat/completions`` (the path depends on
            ``dialect``).
        payload: the request body; what the API needs to stream is added
            (``"stream": true``, ``stream_options``; see ``_apis.py``).
        api_key: sent in the API's key header when given (a Bearer token
            for OpenAI).
        headers: extra request headers (they replace the client's).
        first_byte_timeout: seconds to the first body byte (None: no limit).
        idle_timeout: seconds allowed between body bytes (None: no limit).
        retry: retry policy; None never retries.
        dialect: the API (SPEC §3b): "openai-chat", "openai-responses",
            "anthropic", "gemini"; it picks the request and how the
            answer is read.  "auto" sends the "openai-chat" request and
            reads the answer in whichever format it comes.
        strict: a ``data`` payload that is not JSON raises (True) or is
            skipped (False).
        close_http2_connection: on HTTP/2, close the connection when a
            response is abandoned before ``Done`` (True), or reset the
            response's stream and keep the connection (False); see the
            module docstring.

    Returns:
        An ``HttpxCall``: use it as a context manager and iterate it.

    Raises:
        ValueError: a bad URL, payload, dialect or timeout (at once, not on
            iteration); a Gemini payload without a model.
    """
    request = build_request(base_url, payload, api_key, headers, dialect)
    driver = StreamDriver(
        first_byte_timeout=first_byte_timeout, idle_timeout=idle_timeout, retry=retry, strict=strict, dialect=dialect
    )
    return HttpxCall(client, request, driver, close_http2_connection=close_http2_connection)


def astream_chat(  # noqa: PLR0917 - the positional order SPEC §7 fixes
    client: httpx.AsyncClient,
    base_url: str,
    payload: Mapping[str, Any],
    api_key: str | None = None,
    headers: HeaderInput | None = None,
    first_byte_timeout: float | None = 30.0,
    idle_timeout: float | None = 30.0,
    retry: RetryPolicy | None = DEFAULT_RETRY,
    *,
    dialect: str = "openai-chat",
    strict: bool = True,
    close_http2_connection: bool = True,
) -> AsyncHttpxCall:
    """``stream_chat`` for an ``httpx.AsyncClient`` (asyncio or trio).

    Returns an ``AsyncHttpxCall``: use it with ``async with`` and
    ``async for``.  Arguments as for ``stream_chat``.
    """
    request = build_request(base_url, payload, api_key, headers, dialect)
    driver = StreamDriver(
        first_byte_timeout=first_byte_timeout, idle_timeout=idle_timeout, retry=retry, strict=strict, dialect=dialect
    )
    return AsyncHttpxCall(client, request, driver, close_http2_connection=close_http2_connection)


class _CallBase(CallSurface):
    """What the sync and async calls share: the surface and the response."""

    def __init__(self, request: ChatRequest, driver: StreamDriver, close_http2_connection: bool) -> None:
        self.request = request
        self._driver = driver
        self._timeouts = Timeouts(driver)
        self._close_http2 = close_http2_connection
        self._response: httpx.Response | None = None
        self._restore: Callable[[], None] | None = None  # removes bound_reads' wrapper
        self._reading = False  # the current response's body is being read
        self._complete = False  # ... and was read to its end
        self._closed = False
        self._http_version: str | None = None
        self._batch: list[ChatEvent] = []

    @property
    def response(self) -> httpx.Response | None:
        """The ``httpx.Response`` being read (None before the head, and
        after the call was closed)."""
        return self._response

    @property
    def http_version(self) -> str | None:
        """``"HTTP/1.1"``, ``"HTTP/2"``, ... of the last response, or None."""
        return self._http_version

    def _build(self, client: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        request = self.request
        built = client.build_request(request.method, request.url, content=request.body, headers=list(request.headers))
        built.extensions["timeout"] = self._timeouts  # every wait httpcore makes asks the driver's deadline
        return built

    def _accept(self, response: httpx.Response, *, is_async: bool) -> float | None:
        """The head arrived: hand it to the driver; its reads follow the deadline."""
        self._response = response
        self._http_version = response.http_version
        self._reading = self._complete = False
        delay = self._driver.on_response(response.status_code, _header_pairs(response), time.monotonic())
        self._reading = delay is None
        if self._reading:
            self._restore = bound_reads(response, self._timeouts, is_async=is_async)
        return delay

    def _failure(self, exc: BaseException) -> BaseException:
        """An httpx timeout becomes the driver's ``StreamTimeout``."""
        if isinstance(exc, httpx.TimeoutException):
            return self._driver.timeout_error(time.monotonic())
        return exc

    @property
    def _after_done(self) -> bool:
        """``Done`` was handed out and the body has not ended (a body that
        ended or failed leaves the machine ``CLOSED``)."""
        machine = self._driver.machine
        return machine is not None and machine.state is ChatState.DONE and self._reading and not self._complete

    def _start_drain(self) -> float | None:
        """When to stop reading the rest of the body before closing, or None
        not to read it (a drain is for ``Done`` on an HTTP/1.1 body that has
        not ended; see the module docstring).  Each read waits until then at
        most, and the drain checks the time between reads too: a server that
        keeps writing small pieces would otherwise hold the caller for
        ``DRAIN_BYTES`` of them."""
        response = self._response
        if response is None or response.http_version != "HTTP/1.1" or not self._after_done:
            return None
        until = self._timeouts.until = time.monotonic() + DRAIN_TIME
        return until

    def _ended(self) -> None:
        """The body was read to its end: httpx has given the connection back
        to its pool, where another request may take it before the caller
        asks for the next event, so the deadline's wrapper comes off now."""
        self._complete = True
        restore, self._restore = self._restore, None
        if restore is not None:
            restore()

    def _take(self) -> tuple[httpx.Response | None, str]:
        """Let go of the response; says how to end an HTTP/2 stream that
        the server has not ended: "reset", "close" (the connection), or ""."""
        response, restore = self._response, self._restore
        self._response = self._restore = None
        if restore is not None:
            restore()
        if response is None or response.http_version != "HTTP/2" or not self._reading or self._complete:
            return response, ""
        if self._after_done:
            return response, "reset"
        if self._driver.finished:  # the body ended or failed: nothing is left generating
            return response, ""
        return response, "close" if self._close_http2 else "reset"


class HttpxCall(_CallBase, BlockingCall):
    """One streamed chat call on an ``httpx.Client``: a context manager and
    an iterator of events.

    Iteration may raise ``StreamTimeout``, the ``httpx.TransportError`` that
    ended the last attempt when no response head was received, and
    ``RemoteProtocolError`` (strict mode, or a body whose content coding
    does not decode).  A body cut short after its head
    is not an exception: it ends with a ``Truncated`` event.  See
    ``ssestate.adapters._common`` for the shape shared by every adapter.
    """

    def __init__(
        self, client: httpx.Client, request: ChatRequest, driver: StreamDriver, *, close_http2_connection: bool = True
    ) -> None:
        super().__init__(request, driver, close_http2_connection)
        self._client = client
        self._chunks: Iterator[bytes] | None = None
        self._batches: Generator[list[ChatEvent], None, None] | None = None

    def close(self) -> None:
        """Close the response and stop iterating; idempotent.  After
        ``Done`` the rest of the body is read first, for a short while, so
        that the connection can be reused (see the module docstring)."""
        self._shut(finish=True)

    def _abort(self) -> None:
        self._shut(finish=False)

    def _shut(self, *, finish: bool) -> None:
        self._closed = True
        self._drop_batch()
        batches = self._batches
        if batches is not None and getattr(batches, "gi_running", False):
            # close() from another thread while one iterates: shutting the
            # socket down ends that thread's read at once, and its loop,
            # seeing the call closed, ends and closes the rest.
            response = self._response
            if response is not None:
                close_network(response)
            return
        if finish:
            self._finish_body()
        if self._batches is not None:
            self._batches.close()  # runs the loop's finally: closes the response
        self._disconnect()
        self._driver.close(time.monotonic())

    def __del__(self) -> None:
        # A call dropped without close() must not leave its response open.
        with contextlib.suppress(Exception):
            self._disconnect()

    def _run(self) -> Generator[list[ChatEvent], None, None]:
        driver = self._driver
        clock = time.monotonic
        try:
            while True:  # one pass per attempt
                driver.begin_attempt(clock())
                try:
                    response = self._client.send(self._build(self._client), stream=True)
                except (StreamTimeout, *_TRANSPORT_ERRORS) as exc:
                    self._disconnect()
                    time.sleep(driver.retry_open(self._failure(exc), exc, clock()))
                    continue
                delay = self._accept(response, is_async=False)
                if delay is not None:  # a retryable status: its body is not read
                    self._disconnect()
                    time.sleep(delay)
                    continue
                chunks = self._chunks = _body(response)
                while driver.reading:  # until Done, the end of the body (b""), or a retry
                    try:
                        data = next(chunks, b"")  # the body iterators never yield b""
                    except httpx.DecodingError as exc:
                        raise _undecodable(exc) from None
                    except (StreamTimeout, *_TRANSPORT_ERRORS) as exc:
                        if self._closed:
                            return  # close() from another thread ended the read
                        if driver.retry_read(self._failure(exc), exc, clock()) is not None:
                            break
                        data = b""  # the body was cut short: Truncated follows
                    else:
                        if self._closed:
                            return
                        if not data:
                            self._ended()
                    events = driver.feed(data, clock())
                    if events:
                        yield events
                        driver.check()
                if driver.retry_in is None:
                    self._finish_body()
                    return
                self._disconnect()  # the body failed, or an error came, before any output
                time.sleep(driver.retry_in)
        finally:
            self._disconnect()
            driver.close(clock())

    def _finish_body(self) -> None:
        """After ``Done``: read the rest of the body, briefly (``_start_drain``)."""
        chunks = self._chunks
        if chunks is None or (until := self._start_drain()) is None:
            return
        budget = DRAIN_BYTES
        with contextlib.suppress(*_TRANSPORT_ERRORS):
            for data in chunks:
                budget -= len(data)
                if budget < 0 or time.monotonic() >= until:
                    return
            self._ended()

    def _disconnect(self) -> None:
        chunks = self._chunks
        self._chunks = None
        response, end = self._take()
        if chunks is not None:
            close = getattr(chunks, "close", None)
            if close is not None:  # pragma: no branch - httpx's body iterators are generators
                with contextlib.suppress(*_TRANSPORT_ERRORS):
                    close()
        if response is None:
            return
        with contextlib.suppress(Exception):
            if end == "reset" and not reset_h2_stream(response):
                end = "close"
            if end == "close":
                closing = close_network(response)
                if closing is not None:
                    closing.close()
        with contextlib.suppress(*_TRANSPORT_ERRORS):
            response.close()


class AsyncHttpxCall(_CallBase, AsyncCall):
    """One streamed chat call on an ``httpx.AsyncClient``: an async context
    manager and an async iterator of events (see ``HttpxCall``)."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        request: ChatRequest,
        driver: StreamDriver,
        *,
        close_http2_connection: bool = True,
    ) -> None:
        super().__init__(request, driver, close_http2_connection)
        self._client = client
        self._chunks: AsyncIterator[bytes] | None = None
        self._batches: AsyncGenerator[list[ChatEvent], None] | None = None

    async def aclose(self) -> None:
        """Close the response and stop iterating; idempotent (see ``HttpxCall.close``)."""
        await self._shut(finish=True)

    async def _abort(self) -> None:
        await self._shut(finish=False)

    async def _shut(self, *, finish: bool) -> None:
        self._closed = True
        self._drop_batch()
        try:
            if finish:
                await self._finish_body()
            if self._batches is not None:
                await self._batches.aclose()  # runs the loop's finally
        finally:
            await self._shielded_disconnect()
            self._driver.close(time.monotonic())

    async def _run(self) -> AsyncGenerator[list[ChatEvent], None]:
        driver = self._driver
        clock = time.monotonic
        try:
            while True:  # one pass per attempt
                driver.begin_attempt(clock())
                try:
                    response = await self._open()
                except (StreamTimeout, *_TRANSPORT_ERRORS) as exc:
                    await self._shielded_disconnect()
                    await anyio.sleep(driver.retry_open(self._failure(exc), exc, clock()))
                    continue
                delay = self._accept(response, is_async=True)
                if delay is not None:  # a retryable status: its body is not read
                    await self._shielded_disconnect()
                    await anyio.sleep(delay)
                    continue
                chunks = self._chunks = _abody(response)
                while driver.reading:  # until Done, the end of the body (b""), or a retry
                    try:
                        data = await anext(chunks, b"")  # the body iterators never yield b""
                    except httpx.DecodingError as exc:
                        raise _undecodable(exc) from None
                    except (StreamTimeout, *_TRANSPORT_ERRORS) as exc:
                        if driver.retry_read(self._failure(exc), exc, clock()) is not None:
                            break
                        data = b""  # the body was cut short: Truncated follows
                    else:
                        if not data:
                            self._ended()
                    events = driver.feed(data, clock())
                    if events:
                        yield events
                        driver.check()
                if driver.retry_in is None:
                    await self._finish_body()
                    return
                await self._shielded_disconnect()  # the body failed, or an error came, before any output
                await anyio.sleep(driver.retry_in)
        finally:
            driver.close(clock())
            await self._shielded_disconnect()

    async def _open(self) -> httpx.Response:
        deadline = self._driver.deadline
        left = math.inf if deadline is None else deadline - time.monotonic()
        with anyio.move_on_after(left):
            return await self._client.send(self._build(self._client), stream=True)
        raise self._driver.timeout_error(time.monotonic())

    async def _finish_body(self) -> None:
        """After ``Done``: read the rest of the body, briefly (``_start_drain``)."""
        chunks = self._chunks
        if chunks is None or (until := self._start_drain()) is None:
            return
        budget = DRAIN_BYTES
        with contextlib.suppress(*_TRANSPORT_ERRORS):
            async for data in chunks:
                budget -= len(data)
                if budget < 0 or time.monotonic() >= until:
                    return
            self._ended()

    async def _shielded_disconnect(self) -> None:
        # Closing must finish even inside a cancelled scope (the very
        # cancellation that asks for it), but never hang on a peer that
        # stopped reading: a few seconds at most.
        with anyio.move_on_after(5.0, shield=True):
            await self._disconnect()

    async def _disconnect(self) -> None:
        chunks = self._chunks
        self._chunks = None
        response, end = self._take()
        if chunks is not None:
            with contextlib.suppress(*_TRANSPORT_ERRORS):
                await _aclose_iterator(chunks)
        if response is None:
            return
        with contextlib.suppress(Exception):
            if end == "reset" and not await areset_h2_stream(response):
                end = "close"
            if end == "close":
                closing = close_network(response)
                if closing is not None:
                    await closing.aclose()
        with contextlib.suppress(*_TRANSPORT_ERRORS):
            await response.aclose()
