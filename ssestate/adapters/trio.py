"""The trio adapter: HTTP/1.1 with h11 over a trio TCP (or TLS) stream.

Needs ``pip install 'ssestate[trio]'``.

Theory of operation
-------------------
Two sans-IO machines stacked on one byte stream, the composition h11 was
made for: ``trio.open_tcp_stream`` (wrapped in ``trio.SSLStream`` for
https) carries bytes; an ``h11.Connection(our_role=h11.CLIENT)`` turns the
request into bytes and the bytes that come back into a response head and
``h11.Data`` events (h11 undoes the chunked framing, checks lengths and
reports a body cut short as ``h11.RemoteProtocolError``); each ``Data``
payload goes to the ``StreamDriver``'s ``ChatStream`` untouched, as soon as
``receive_some`` returned it.  The loop is the one
``ssestate.adapters._common`` describes; one connection per attempt.

Timeouts are deadlines on trio's clock.  Connecting, the TLS handshake,
sending the request and reading the head run inside one
``trio.move_on_at`` scope ending at the first-byte deadline.  The body's
reads run without a scope of their own (on a stream whose reads bring a
piece each, a scope per read made the adapter 15 % dearer: the paced mode
of ``benchmarks/bench_adapters.py``): a watchdog task, started with
the body, sleeps until the driver's deadline (first-byte until a body byte
arrived, then the last byte's time plus the idle limit), looks again when
it wakes, and sleeps on while bytes keep moving the deadline.  Only when
the deadline has passed while a read waits does it close the stream; that
read ends, and the call raises ``StreamTimeout``.  A read that starts after
the deadline (the caller kept the events that long) takes the bytes that
arrived meanwhile, waiting ``_common.LATE`` at most, and times out only
when there are none.  So any byte resets the idle clock, a stream that
keeps talking is never cut, and the watchdog wakes about once per idle
limit instead of a timer being armed per read.  It runs as a trio system
task (it needs no nursery from the caller) and stops when the response is
closed.  Retries wait with ``trio.sleep``, so a cancel scope around the
call cuts a wait short too.

Closing.  ``aclose()``, leaving the ``async with`` block, breaking out and
then leaving it, an exception, and cancellation by any enclosing cancel
scope all run the loop's ``finally``, which closes the stream with
``trio.aclose_forcefully`` (no TLS goodbye that could hang on a peer that
stopped reading): the socket is closed at once and the server sees the
connection go.  Iterate the call inside ``async with`` so that closing
happens when the block is left; an async generator that is merely dropped
is finalised whenever trio gets to it.
"""

from __future__ import annotations

import contextlib
import math
import ssl
from collections.abc import AsyncGenerator, Mapping
from typing import Any

try:
    import h11
    import trio  # type: ignore[import-untyped, unused-ignore]  # typed from trio 0.23 on
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("ssestate.adapters.trio needs trio and h11: pip install 'ssestate[trio]'") from exc

from .._events import ChatEvent
from .._retry import RetryPolicy, StreamTimeout
from ._coding import Inflater, inflater_for
from ._common import LATE, AsyncCall, StreamDriver
from ._request import ChatRequest, HeaderInput, build_request

__all__ = ["DEFAULT_RETRY", "TrioCall", "stream_chat"]

DEFAULT_RETRY = RetryPolicy()

# Failures of the connection: refused or reset (OSError), a stream broken
# underneath trio (TLS errors included), and a peer that broke HTTP/1.1 or
# hung up in the middle of a message (h11.RemoteProtocolError).
_TRANSPORT_ERRORS = (OSError, trio.BrokenResourceError, h11.RemoteProtocolError)


def stream_chat(  # noqa: PLR0917 - the positional order SPEC §7 fixes
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
    ssl_context: ssl.SSLContext | None = None,
    receive_size: int = 65536,
) -> TrioCall:
    """Stream a chat completion over trio and h11 (SPEC §7).

    Args:
        base_url: e.g. "https://api.openai.com/v1"; the request goes to
            ``{base_url}/chat/completions`` (the path depends on
            ``dialect``).
        payload: the request body; what the API needs to stream is added
            (``"stream": true``, ``stream_options``; see ``_apis.py``).
        api_key: sent in the API's key header when given (a Bearer token
            for OpenAI).
        headers: extra request headers.
        first_byte_timeout: seconds to the first body byte (None: no limit).
        idle_timeout: seconds allowed between body bytes (None: no limit).
        retry: retry policy; None never retries.
        dialect: the API (SPEC §3b): "openai-chat", "openai-responses",
            "anthropic", "gemini"; it picks the request and how the
            answer is read.  "auto" sends the "openai-chat" request and
            reads the answer in whichever format it comes.
        strict: a ``data`` payload that is not JSON raises (True) or is
            skipped (False).
        ssl_context: for https (default: ``ssl.create_default_context()``).
        receive_size: most bytes taken from the stream per read.

    Returns:
        A ``TrioCall``: use it with ``async with`` and ``async for``.

    Raises:
        ValueError: a bad URL, payload, dialect or timeout (at once, not on
            iteration); a Gemini payload without a model.
    """
    if receive_size < 1:
        raise ValueError(f"receive_size must be >= 1, got {receive_size!r}")
    request = build_request(base_url, payload, api_key, headers, dialect)
    driver = StreamDriver(
        first_byte_timeout=first_byte_timeout, idle_timeout=idle_timeout, retry=retry, strict=strict, dialect=dialect
    )
    return TrioCall(request, driver, ssl_context=ssl_context, receive_size=receive_size)


class TrioCall(AsyncCall):
    """One streamed chat call: an async context manager and an async
    iterator of events.

    Iteration may raise ``StreamTimeout``, the connection error that ended
    the last attempt when no response head was received (``OSError``,
    ``trio.BrokenResourceError``, ``h11.RemoteProtocolError``), and
    ``RemoteProtocolError`` (strict mode, or a body whose content coding
    does not decode).  A body cut short after its head
    is not an exception: it ends with a ``Truncated`` event.  See
    ``ssestate.adapters._common`` for the shape shared by every adapter.
    """

    def __init__(
        self,
        request: ChatRequest,
        driver: StreamDriver,
        *,
        ssl_context: ssl.SSLContext | None = None,
        receive_size: int = 65536,
    ) -> None:
        self.request = request
        self._driver = driver
        self._ssl_context = ssl_context
        self._receive_size = receive_size
        self._stream: trio.abc.Stream | None = None
        self._h11: h11.Connection | None = None
        self._watchdog: _Watchdog | None = None
        self._inflater: Inflater | None = None  # the body's content coding, when it has one
        self._batches: AsyncGenerator[list[ChatEvent], None] | None = None
        self._batch: list[ChatEvent] = []
        self._closed = False

    async def aclose(self) -> None:
        """Close the connection and stop iterating (idempotent)."""
        self._closed = True
        self._drop_batch()
        try:
            if self._batches is not None:
                await self._batches.aclose()  # runs the loop's finally
        finally:
            self._driver.close(trio.current_time())
            await self._disconnect()

    # -- the loop ---------------------------------------------------------------

    async def _run(self) -> AsyncGenerator[list[ChatEvent], None]:
        driver = self._driver
        clock = trio.current_time
        try:
            while True:  # one pass per attempt
                driver.begin_attempt(clock())
                try:
                    head = await self._open()
                except (StreamTimeout, *_TRANSPORT_ERRORS) as exc:
                    await self._disconnect()
                    await trio.sleep(driver.retry_open(exc, exc, clock()))
                    continue
                pairs = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in head.headers.raw_items()]
                delay = driver.on_response(head.status_code, pairs, clock())
                if delay is not None:  # a retryable status: its body is not read
                    await self._disconnect()
                    await trio.sleep(delay)
                    continue
                assert self._stream is not None
                self._inflater = inflater_for(next((v for n, v in pairs if n.lower() == "content-encoding"), None))
                self._watchdog = _Watchdog(driver, self._stream)
                trio.lowlevel.spawn_system_task(self._watchdog.run, name="ssestate idle watchdog")
                while driver.reading:  # until Done, the end of the body (b""), or a retry
                    try:
                        data = await self._receive()
                    except (StreamTimeout, trio.ClosedResourceError, *_TRANSPORT_ERRORS) as exc:
                        if driver.retry_read(self._failure(exc), exc, clock()) is not None:
                            break
                        data = b""  # the body was cut short: Truncated follows
                    events = driver.feed(data, clock())
                    if events:
                        yield events
                        driver.check()
                if driver.retry_in is None:
                    return
                await self._disconnect()  # the body failed, or an error came, before any output
                await trio.sleep(driver.retry_in)
        finally:
            driver.close(clock())
            await self._disconnect()

    async def _open(self) -> h11.Response:
        """Connect, send the request and read the response head, all before
        the first-byte deadline."""
        request = self.request
        deadline = self._driver.deadline
        with trio.move_on_at(math.inf if deadline is None else deadline):
            stream: trio.abc.Stream = await trio.open_tcp_stream(request.host, request.port)
            self._stream = stream
            if request.scheme == "https":
                context = self._ssl_context or ssl.create_default_context()
                tls = trio.SSLStream(stream, context, server_hostname=request.host, https_compatible=True)
                self._stream = stream = tls
                await tls.do_handshake()
            conn = self._h11 = h11.Connection(our_role=h11.CLIENT)
            head = [("Host", request.authority), *request.headers, ("Content-Length", str(len(request.body)))]
            out = bytearray()
            for message in (
                h11.Request(method=request.method, target=request.target, headers=head),
                h11.Data(data=request.body),
                h11.EndOfMessage(),
            ):
                out += conn.send(message) or b""
            await stream.send_all(out)
            while True:
                event = await self._next_event(stream, conn)
                if isinstance(event, h11.Response):
                    return event
                if not isinstance(event, h11.InformationalResponse):  # pragma: no cover - h11 allows nothing else
                    raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} before the response head")
        raise self._driver.timeout_error(trio.current_time())

    async def _next_event(self, stream: trio.abc.Stream, conn: h11.Connection) -> h11.Event:
        """The next h11 event, reading as needed (no deadline of its own)."""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(bytes(await stream.receive_some(self._receive_size)))
                continue
            if event is h11.PAUSED:  # pragma: no cover - a client pauses only after the response
                raise h11.RemoteProtocolError("the connection paused before the response head")
            assert isinstance(event, h11.Event)
            return event

    async def _receive(self) -> bytes:
        """The next piece of the body (decoded, when it has a content
        coding), ``b""`` at its end."""
        conn, inflater = self._h11, self._inflater
        assert conn is not None
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(bytes(await self._read()))
                continue
            if type(event) is not h11.Data:  # EndOfMessage (the body is complete), ConnectionClosed, PAUSED
                return b"" if inflater is None else inflater.end()  # then b"" when asked again
            if inflater is None:
                if event.data:  # pragma: no branch - h11 hands over no empty Data (b"" would end the body)
                    return bytes(event.data)
            elif content := inflater.decode(bytes(event.data)):
                return content

    async def _read(self) -> bytes | bytearray:
        """One read from the network.  The watchdog ends it at the deadline;
        a read that starts after the deadline (the caller kept the events
        that long) takes what arrived meanwhile, waiting ``LATE`` at most."""
        stream, watchdog, driver = self._stream, self._watchdog, self._driver
        assert stream is not None and watchdog is not None
        deadline = driver.deadline
        if deadline is not None and trio.current_time() >= deadline:
            with trio.move_on_after(LATE):
                return await stream.receive_some(self._receive_size)
            raise driver.timeout_error(trio.current_time())
        watchdog.reading = True
        try:
            return await stream.receive_some(self._receive_size)
        finally:
            watchdog.reading = False

    def _failure(self, exc: BaseException) -> BaseException:
        """A read ended by the watchdog becomes the driver's ``StreamTimeout``."""
        if self._watchdog is not None and self._watchdog.fired:
            return self._driver.timeout_error(trio.current_time())
        return exc

    async def _disconnect(self) -> None:
        """Close the connection now, without any goodbye that could block."""
        stream, watchdog = self._stream, self._watchdog
        self._stream = self._h11 = None
        if watchdog is not None:
            watchdog.stop()
        if stream is not None:
            await trio.aclose_forcefully(stream)


class _Watchdog:
    """Closes ``stream`` when the driver's deadline passes while a read
    waits on it (see the module docstring); ``fired`` says it did."""

    def __init__(self, driver: StreamDriver, stream: trio.abc.Stream) -> None:
        self.driver = driver
        self.stream = stream
        self.reading = False  # a read is waiting on the stream
        self.fired = False
        self.scope = trio.CancelScope()

    def stop(self) -> None:
        self.scope.cancel()

    async def run(self) -> None:
        driver = self.driver
        idle = math.inf if driver.idle_timeout is None else driver.idle_timeout
        with self.scope:
            while True:
                now = trio.current_time()
                deadline = math.inf if driver.deadline is None else driver.deadline
                if now < deadline:
                    # A byte arriving from now on puts the deadline at now +
                    # idle or later; only the first-byte deadline can come
                    # sooner, and it is known already.
                    wake = min(deadline, now + idle)
                elif self.reading:
                    break
                else:
                    # The caller holds the events: the reader looks at the
                    # deadline itself when it reads next.
                    wake = now + (driver.limit or idle)
                await trio.sleep_until(wake)
            self.fired = True
            # An exception out of a system task would end the whole trio run.
            with contextlib.suppress(Exception):
                await trio.aclose_forcefully(self.stream)
