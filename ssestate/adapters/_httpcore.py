"""What the httpx adapter asks of httpcore, the engine under httpx.

Theory of operation
-------------------
httpx hands its requests to httpcore and exposes little of it; the httpx
adapter needs three things httpx has no switch for.  Each lives here, each
falls back to what httpx does by itself when httpcore looks different.

**Timeouts that follow the driver's deadline.**  httpcore asks the
request's ``extensions["timeout"]`` for a number with ``.get(name)`` when it
waits for a pool slot, connects, writes, and reads.  ``Timeouts`` is that
mapping: every ``get`` answers the seconds left until the deadline (the
driver's: the first-byte limit from the start of the attempt, then the idle
limit from the latest body byte; or a drain's, see ``until``).  So the
bound is the transport's own read timeout, which httpcore arms on every
read anyway (a socket timeout, or one ``fail_after`` scope per read in
async code): following the deadline costs one clock reading, no timer of
our own.  On HTTP/2 httpcore asks before every network read.  On HTTP/1.1
it asks once, when the body starts, and then passes that number to every
read; ``bound_reads`` makes those reads ask again: an instance attribute
``read`` on the connection's network stream (the ``network_stream`` the
response exposes) takes precedence over the class's method, so a wrapper
installed there sees every read of that response and passes the time left.
The wrapper holds the ``Timeouts``, never the call, so that a call dropped
without closing can still be collected; it is removed when the response is
closed, before the connection can serve anybody else.

**Ending one HTTP/2 stream.**  httpcore never resets a stream whose
response was closed before the server ended it: the server would go on
writing into a stream nobody reads.  ``reset_h2_stream`` sends
``RST_STREAM(CANCEL)`` for it through httpcore's own HTTP/2 connection
(found by following the wrappers of the response's byte stream: httpx's
``BoundSyncStream`` -> its transport's ``ResponseStream`` -> httpcore's
``PoolByteStream`` -> the connection's stream, which knows its connection),
under the connection's write lock, as httpcore writes.  A stream that had
already ended gets nothing (h2 refuses to reset a closed stream).  h2 then
answers any frame still arriving on that stream, credits the connection's
flow-control window for it, and the connection stays usable for the next
request.

**Closing one HTTP/2 connection.**  ``close_network`` shuts the
connection's socket (waking any thread blocked reading it) and hands back
httpcore's connection to be closed: for a caller who chose to drop the
connection of an abandoned response, or when the stream cannot be reset.
Closing httpcore's connection, not only its socket, marks it closed, so the
pool drops it: a connection whose socket alone was closed stays in the pool
as idle, and the next request sent on it (a retry, at once) fails.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from typing import Any

import httpx

from ._common import LATE, StreamDriver

__all__ = ["Timeouts", "areset_h2_stream", "bound_reads", "close_network", "reset_h2_stream"]

# The most a reset's write may wait (thirteen bytes; only a peer that stopped
# reading altogether makes it wait at all).
_WRITE_WAIT = 1.0


class Timeouts(dict):  # type: ignore[type-arg]  # httpcore reads it as a dict
    """``request.extensions["timeout"]`` that answers the time left.

    Attributes:
        driver: whose ``deadline`` bounds every wait.
        until: a clock reading that replaces the driver's deadline (set to
            read the end of a body after ``Done`` for a short while).
    """

    __slots__ = ("driver", "until")

    def __init__(self, driver: StreamDriver) -> None:
        super().__init__()
        self.driver = driver
        self.until: float | None = None

    def left(self) -> float | None:
        """Seconds until the deadline (``LATE`` when it has passed), or None."""
        deadline = self.driver.deadline if self.until is None else self.until
        if deadline is None:
            return None
        return max(deadline - time.monotonic(), LATE)

    def get(self, key: str, default: Any = None) -> float | None:
        return self.left()


def bound_reads(response: httpx.Response, timeouts: Timeouts, *, is_async: bool) -> Callable[[], None] | None:
    """Make every read of an HTTP/1.1 response's connection ask ``timeouts``.

    Returns the function that removes the wrapper, or None when there is
    nothing to wrap (HTTP/2 asks ``timeouts`` itself; a transport without a
    network stream).  The caller removes it as soon as the body ends: httpx
    then gives the connection back to its pool, and the next request on it
    must read with its own timeout.  Until then, the wrapper itself passes
    the timeout it is given through once the response is closed, so that
    no window is left in which a pooled connection reads with this call's
    deadline.
    """
    if response.http_version != "HTTP/1.1":
        return None
    stream = response.extensions.get("network_stream")
    read = getattr(stream, "read", None)
    if not callable(read):
        return None
    bounded: Callable[..., Any]
    if is_async:

        async def bounded(max_bytes: int, timeout: float | None = None) -> bytes:
            return await read(max_bytes, timeout if response.is_closed else timeouts.left())  # type: ignore[no-any-return]

    else:

        def bounded(max_bytes: int, timeout: float | None = None) -> bytes:
            return read(max_bytes, timeout if response.is_closed else timeouts.left())  # type: ignore[no-any-return]

    try:
        stream.read = bounded  # type: ignore[union-attr]
    except (AttributeError, TypeError):  # pragma: no cover - a stream with slots
        return None

    def restore() -> None:
        # Only this call's own wrapper: a later call's, put on top of it,
        # stays (this one then passes its timeout through).
        if vars(stream).get("read") is bounded:
            del stream.read  # type: ignore[union-attr]

    return restore


def _h2_connection(response: httpx.Response) -> Any:
    """httpcore's HTTP/2 connection carrying ``response``, or None."""
    layer: Any = response.stream
    while layer is not None:  # each wrapper keeps the next in one of these attributes
        connection = getattr(layer, "_connection", None)
        if connection is not None and hasattr(connection, "_h2_state"):
            return connection
        layer = getattr(layer, "_stream", None) or getattr(layer, "_httpcore_stream", None)
    return None


def _reset_frame(connection: Any, stream_id: int) -> bytes:
    """The bytes of ``RST_STREAM(CANCEL)`` for the stream; b"" when it has
    ended already."""
    import h2.errors  # noqa: PLC0415 - installed only with the http2 extra, and only HTTP/2 comes here
    import h2.exceptions  # noqa: PLC0415

    try:
        connection._h2_state.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
    except h2.exceptions.ProtocolError:  # closed already: nothing to end
        return b""
    return connection._h2_state.data_to_send()  # type: ignore[no-any-return]


def reset_h2_stream(response: httpx.Response) -> bool:
    """End the response's HTTP/2 stream (blocking client); False when its
    connection cannot be found."""
    connection, stream_id = _h2_connection(response), response.extensions.get("stream_id")
    if connection is None or not isinstance(stream_id, int):
        return False
    with connection._write_lock:
        data = _reset_frame(connection, stream_id)
        if data:
            connection._network_stream.write(data, _WRITE_WAIT)
    return True


async def areset_h2_stream(response: httpx.Response) -> bool:
    """``reset_h2_stream`` for an async client."""
    connection, stream_id = _h2_connection(response), response.extensions.get("stream_id")
    if connection is None or not isinstance(stream_id, int):
        return False
    async with connection._write_lock:
        data = _reset_frame(connection, stream_id)
        if data:
            await connection._network_stream.write(data, _WRITE_WAIT)
    return True


def close_network(response: httpx.Response) -> Any:
    """Shut the socket of the response's connection; returns what to close
    next (``close()``, async: ``await aclose()``): httpcore's HTTP/2
    connection, else the network stream; None when there is neither."""
    network = response.extensions.get("network_stream")
    if network is None:
        return None
    sock = network.get_extra_info("socket")
    if isinstance(sock, socket.socket):
        # Wake any thread blocked reading this connection; the base class
        # method, because ssl.SSLSocket.shutdown() would also drop the TLS
        # state under that thread's feet.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
    connection = _h2_connection(response)
    return network if connection is None else connection
