"""The standard-library adapter: ``http.client`` over a socket, no threads.

Theory of operation
-------------------
``stream_chat`` returns a ``SyncCall``; nothing touches the network until
the first ``next()``.  Then one generator runs the loop that
``ssestate.adapters._common`` describes: connect, send the request, read the
head, and read the body with ``HTTPResponse.read1`` (what has arrived, at
most ``chunk_size`` bytes; ``http.client`` undoes the chunked framing, and
``Accept-Encoding: identity`` keeps the content itself untouched; a server
that compresses anyway is decoded, see ``_coding``), feeding
each read to the ``StreamDriver`` and handing out its events.

Timeouts are socket timeouts: before every blocking step, and every
receive of the head and the body (``http.client`` reads through
``_Armed``), the socket may wait what is left until the driver's deadline
(a timeout already set is kept while it is not shorter and at most
``SLACK``, 2 ms, longer: setting one costs system calls).  The first-byte limit runs from the start of the
attempt (connecting and the head included) to the first body byte, the
idle limit from each body byte to the next.  Any byte, a
heartbeat comment included, pushes the deadline back, so a stream that
keeps sending is never cut however long it lasts; a read made after the
deadline (the caller kept the events that long) still takes the bytes that
arrived meanwhile (``_common.LATE``).

Closing shuts the socket down (``shutdown(SHUT_RDWR)`` sends the FIN at
once, whatever references ``http.client`` still holds) and closes it.  It
happens when iteration ends (``Done``, ``CLOSED``), on ``close()``, when the
``with`` block is left, when the call is garbage collected, and on every
exception passing through the loop, ``KeyboardInterrupt`` included.

``iter_events(readable, machine)`` is the same feeding loop without HTTP,
for any object with ``read1`` or ``read`` (a file, a pipe, a response).
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import io
import math
import socket
import ssl
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, Protocol, overload

from .._chat import ChatStream
from .._events import ChatEvent
from .._framing import EventStreamParser, FramingEvent
from .._retry import RetryPolicy, StreamTimeout
from ._coding import inflater_for
from ._common import LATE, BlockingCall, StreamDriver, settled
from ._request import ChatRequest, HeaderInput, build_request

__all__ = ["DEFAULT_RETRY", "SyncCall", "iter_events", "stream_chat"]

DEFAULT_RETRY = RetryPolicy()

# How much longer than what is left until the deadline a read may wait.
# Keeping the socket's timeout while it is neither shorter than that nor
# longer by more than this spares the system calls of setting it for every
# piece (about 7 % of the adapter's CPU on a stream that flows), and a read
# never times out before the deadline.
SLACK = 0.002

# The errors that mean "the connection failed", as opposed to bugs or an
# interrupt: socket and TLS errors, and http.client's own (a body cut short
# is IncompleteRead, a head that never came is RemoteDisconnected).
_TRANSPORT_ERRORS = (OSError, http.client.HTTPException)


class Readable(Protocol):
    """Anything with ``read(n) -> bytes`` (``read1`` is used when present)."""

    def read(self, n: int = -1, /) -> bytes: ...


@overload
def iter_events(readable: Readable, machine: ChatStream, chunk_size: int = ...) -> Iterator[ChatEvent]: ...
@overload
def iter_events(readable: Readable, machine: EventStreamParser, chunk_size: int = ...) -> Iterator[FramingEvent]: ...
def iter_events(
    readable: Readable, machine: ChatStream | EventStreamParser, chunk_size: int = 65536
) -> Iterator[ChatEvent | FramingEvent]:
    """Feed ``machine`` from ``readable`` and yield its events.

    Reads with ``read1(chunk_size)`` when the object has it (what has
    arrived, without waiting for a full ``chunk_size``), else with
    ``read(chunk_size)``; an empty read is the end of the stream.  Stops
    after ``Done`` (a ``ChatStream`` is then finished; the rest of the
    stream is not read) or when the machine reaches ``CLOSED``.  Closing
    ``readable`` is up to the caller.

    Raises what the machine raises (``RemoteProtocolError``) and what
    reading raises.
    """
    read = getattr(readable, "read1", None) or readable.read
    while True:
        data = read(chunk_size)
        events = machine.feed(data)
        yield from events
        if settled(machine, events, data):
            return


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
    chunk_size: int = 65536,
) -> SyncCall:
    """Stream a chat completion with the standard library (SPEC §7).

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
        chunk_size: most bytes taken from the socket per read.

    Returns:
        A ``SyncCall``: use it as a context manager and iterate it.

    Raises:
        ValueError: a bad URL, payload, dialect or timeout (at once, not on
            iteration); a Gemini payload without a model.
    """
    request = build_request(base_url, payload, api_key, headers, dialect)
    driver = StreamDriver(
        first_byte_timeout=first_byte_timeout, idle_timeout=idle_timeout, retry=retry, strict=strict, dialect=dialect
    )
    return SyncCall(request, driver, ssl_context=ssl_context, chunk_size=chunk_size)


def _decoded(read: Callable[[int], bytes], content_encoding: str | None) -> Callable[[int], bytes]:
    """``read`` itself, or, for a body with a content coding, a read of the
    decoded content: it reads on until a piece decodes to something, and
    returns ``b""`` only at the body's end (see ``_coding``)."""
    inflater = inflater_for(content_encoding)
    if inflater is None:
        return read

    def read_decoded(size: int) -> bytes:
        while data := read(size):
            if content := inflater.decode(data):
                return content
        return inflater.end()  # then b"" on the next call: the end

    return read_decoded


class _Armed(io.RawIOBase):
    """A socket's reader that calls ``arm`` before every receive, so that
    each one waits only what is left until the deadline: a head or chunk
    framing that trickles in a byte at a time is cut at the deadline too,
    not each of its receives."""

    def __init__(self, sock: socket.socket, arm: Callable[[], None]) -> None:
        super().__init__()
        self._raw = sock.makefile("rb", buffering=0)
        self._arm = arm

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._arm()
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Response(http.client.HTTPResponse):
    """``http.client``'s response, reading through ``_Armed``."""

    def __init__(self, sock: socket.socket, *args: Any, arm: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(_Reader(io.BufferedReader(_Armed(sock, arm))), *args, **kwargs)  # type: ignore[arg-type]


class _Reader:
    """Hands ``http.client.HTTPResponse`` a reader that is open already."""

    def __init__(self, fp: Any) -> None:
        self.fp = fp

    def makefile(self, mode: str) -> Any:
        return self.fp


def _following(interim: http.client.HTTPResponse, method: str) -> http.client.HTTPResponse:
    """The response head after an interim one, read from where it stopped."""
    response = http.client.HTTPResponse(_Reader(interim.fp), method=method)  # type: ignore[arg-type]
    interim.fp = None  # type: ignore[assignment]  # the reader now belongs to the next head
    response.begin()
    return response


class SyncCall(BlockingCall):
    """One streamed chat call: a context manager and an iterator of events.

    Iteration may raise ``StreamTimeout``, the connection error that ended
    the last attempt (``OSError``, ``http.client.HTTPException``) when no
    response head was received, and ``RemoteProtocolError`` (strict mode,
    or a body whose content coding does not decode).  A body cut short
    after its head is not an exception: it ends with a ``Truncated`` event.
    See ``ssestate.adapters._common`` for the shape shared by every adapter.
    """

    def __init__(
        self,
        request: ChatRequest,
        driver: StreamDriver,
        *,
        ssl_context: ssl.SSLContext | None = None,
        chunk_size: int = 65536,
    ) -> None:
        self.request = request
        self._driver = driver
        self._ssl_context = ssl_context
        self._chunk_size = chunk_size
        self._conn: http.client.HTTPConnection | None = None
        self._sock: socket.socket | None = None
        self._response: http.client.HTTPResponse | None = None
        self._armed: float | None = math.nan  # the timeout set on the socket (None: none; nan: not known)
        self._batches: Generator[list[ChatEvent], None, None] | None = None
        self._batch: list[ChatEvent] = []
        self._closed = False

    def close(self) -> None:
        """Close the connection and stop iterating (idempotent).  Called
        from another thread while one iterates (the way to cancel a blocking
        call), it shuts the socket down: that thread's read ends at once,
        and so does its loop, without another event."""
        self._closed = True
        self._drop_batch()
        batches = self._batches
        if batches is not None and getattr(batches, "gi_running", False):
            sock = self._sock
            if sock is not None:
                # The base class method: an SSL socket's own would tear the
                # TLS state down under the reading thread.
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
            return  # the reading thread's loop closes the rest
        if batches is not None:
            batches.close()  # runs the loop's finally: closes the connection
        self._disconnect()
        self._driver.close(time.monotonic())

    def __del__(self) -> None:
        # A call dropped without close() (no ``with``, a broken-out loop)
        # must not leave its connection open.
        self._disconnect()

    # -- the loop ---------------------------------------------------------------

    def _run(self) -> Generator[list[ChatEvent], None, None]:
        driver = self._driver
        clock = time.monotonic
        try:
            while True:  # one pass per attempt
                driver.begin_attempt(clock())
                try:
                    response = self._open()
                except (StreamTimeout, *_TRANSPORT_ERRORS) as exc:
                    self._disconnect()
                    time.sleep(driver.retry_open(self._failure(exc), exc, clock()))
                    continue
                delay = driver.on_response(response.status, response.getheaders(), clock())
                if delay is not None:  # a retryable status: its body is not read
                    self._disconnect()
                    time.sleep(delay)
                    continue
                read, size = _decoded(response.read1, response.getheader("Content-Encoding")), self._chunk_size
                while driver.reading:  # until Done, the end of the body (b""), or a retry
                    try:
                        data = read(size)  # each receive waits until the deadline (_Response)
                        if not data and response.length:  # read1 says nothing of a body cut short
                            raise http.client.IncompleteRead(b"", response.length)
                    except (StreamTimeout, *_TRANSPORT_ERRORS) as exc:
                        if self._closed:
                            return  # close() from another thread ended the read
                        if driver.retry_read(self._failure(exc), exc, clock()) is not None:
                            break
                        data = b""  # the body was cut short: Truncated follows
                    if self._closed:
                        return
                    events = driver.feed(data, clock())
                    if events:
                        yield events
                        driver.check()
                if driver.retry_in is None:
                    return
                self._disconnect()  # the body failed, or an error came, before any output
                time.sleep(driver.retry_in)
        finally:
            self._disconnect()
            driver.close(clock())

    def _failure(self, exc: BaseException) -> BaseException:
        """A socket timeout becomes the driver's ``StreamTimeout``."""
        if isinstance(exc, TimeoutError) and not isinstance(exc, StreamTimeout):
            return self._driver.timeout_error(time.monotonic())
        return exc

    def _arm(self) -> None:
        """Let the next blocking step wait what is left until the deadline
        (``LATE`` when it has passed: what arrived meanwhile still counts).

        Setting a socket timeout costs system calls, and this runs for every
        piece of the body: a timeout already set is kept while it is not
        shorter than what is left and not ``SLACK`` longer.
        """
        deadline, armed = self._driver.deadline, self._armed
        if deadline is None:
            if armed is None:
                return
            wait = None
        else:
            left = deadline - time.monotonic()
            if armed is not None and armed - SLACK <= left <= armed:
                return
            wait = max(left + SLACK / 2, LATE)
        self._armed = wait
        assert self._sock is not None  # set as soon as the connection is made
        self._sock.settimeout(wait)

    def _open(self) -> http.client.HTTPResponse:
        request = self.request
        left = self._driver.read_timeout(time.monotonic())
        conn: http.client.HTTPConnection
        if request.scheme == "https":
            context = self._ssl_context or ssl.create_default_context()
            conn = http.client.HTTPSConnection(request.host, request.port, timeout=left, context=context)
        else:
            conn = http.client.HTTPConnection(request.host, request.port, timeout=left)
        self._conn = conn
        conn.response_class = functools.partial(_Response, arm=self._arm)  # type: ignore[assignment]
        conn.connect()
        self._sock = conn.sock
        self._armed = math.nan  # the timeout the socket got from connect() is not known here
        self._arm()
        conn.putrequest(request.method, request.target, skip_accept_encoding=True)
        for name, value in request.headers:
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(len(request.body)))
        conn.endheaders(request.body)
        response = conn.getresponse()
        while 100 <= response.status < 200 and response.status != 101:
            # An interim head (102 Processing, 103 Early Hints): http.client
            # passes over 100 Continue alone.  The final head follows on the
            # same reader, which may hold its first bytes already.
            response = _following(response, request.method)
        self._response = response
        return response

    def _disconnect(self) -> None:
        """Close the connection now: FIN to the server, socket released."""
        sock, response, conn = self._sock, self._response, self._conn
        self._sock = self._response = self._conn = None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        if response is not None:
            response.close()
        if conn is not None:
            conn.close()
