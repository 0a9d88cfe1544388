"""ScriptServer: a loopback HTTP/1.1 server that plays ``Script`` responses.

Theory of operation
-------------------
A ``ThreadingHTTPServer`` (standard library only) bound to 127.0.0.1 on a
free port; each connection gets a thread.  For every request the handler
reads the body (``Content-Length``), builds a ``ScriptRequest`` (method,
path, headers, body, parsed JSON, and ``attempt``: how many requests this
server received before it) and asks the user's ``handler(request)`` for a
``Script``, which it then plays:

* the head: status line, ``Date``/``Server``, the script's headers, and
  ``Transfer-Encoding: chunked`` (``chunked=True``) or ``Content-Length``
  (``chunked=False``) unless the script set its own framing header;
* a ``bytes`` step is written at once, as one HTTP chunk when chunked (an
  empty step writes nothing: an empty chunk would end the body);
* a ``float`` step pauses that many seconds;
* ``"abort"`` closes the socket without ending the body;
* ``"hold"`` keeps the connection open, body unfinished, until the client
  goes away (or ``hold_cap`` seconds, 30 by default);
* after the last step a chunked body gets its terminating chunk and the
  connection stays open for the next request (keep-alive).

While pausing or holding, the thread watches the socket with ``select``:
readable with nothing to read (a ``MSG_PEEK`` that returns ``b""``) or a
reset means the client closed its end.  That, or a write that fails, is
recorded as the response's outcome "disconnected", with the step index and
the monotonic time.  Tests read ``server.responses`` (one ``ResponseRecord``
per request, in order of completion) and wait on it with ``wait_for``, so
they can prove from the server's side that a client hung up promptly, i.e.
long before the script would have ended.  Errors caused by clients that
went away are swallowed: no tracebacks on stderr.

``with ScriptServer(handler) as server:`` serves from a background thread;
``server.url`` is ``http://127.0.0.1:PORT/v1``.  ``serve_forever()`` serves
from the calling thread instead (for a command line server).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import select
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, TypeVar

from ._script import Script

__all__ = ["Outcome", "ResponseRecord", "ScriptRequest", "ScriptServer"]

_S = TypeVar("_S", bound="ScriptServer")

Outcome = Literal["complete", "aborted", "disconnected", "hold-expired", "stopped", "handler-error"]

# How often a pause or hold re-checks that the server is not shutting down,
# and how long close() may wait for the accept loop to notice.
_TICK = 0.05


@dataclasses.dataclass(frozen=True)
class ScriptRequest:
    """One request as the handler sees it.

    Attributes:
        method: "POST", "GET", ...
        path: the request target, e.g. "/v1/chat/completions".
        headers: ``(name, value)`` pairs as received.
        body: the raw request body.
        json: the body parsed as JSON, or None when it is not JSON.
        attempt: requests this server received before this one (from 0).
    """

    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    json: Any
    attempt: int

    def header(self, name: str, default: str | None = None) -> str | None:
        """The first header called ``name`` (any case), else ``default``."""
        name = name.lower()
        return next((v for n, v in self.headers if n.lower() == name), default)


@dataclasses.dataclass(frozen=True)
class ResponseRecord:
    """How playing one response ended.

    Attributes:
        attempt: the request's ``attempt`` number.
        outcome: "complete" (body ended), "aborted" (an ``"abort"`` step),
            "disconnected" (the client went away first: a write failed, or
            it closed while the server paused or held), "hold-expired" (a
            hold reached ``hold_cap``), "stopped" (the server shut down) or
            "handler-error" (the handler raised; a 500 was sent).
        step: index of the step being played when it ended (``len(steps)``
            after the last one).
        time: ``time.monotonic()`` when it ended.
        detail: the error or reason, for messages.
    """

    attempt: int
    outcome: Outcome
    step: int
    time: float
    detail: str = ""


class _ClientGone(Exception):
    """The peer closed the connection while a response was being played."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ssestate-script"
    server: _HTTPServer

    def setup(self) -> None:
        sock = self.request
        if isinstance(sock, ssl.SSLSocket):
            # The handshake runs here, in the connection's thread, so a slow
            # or broken client never stalls the accept loop.
            sock.settimeout(10.0)
            sock.do_handshake()
            sock.settimeout(None)
        super().setup()
        # Every step must leave at once, not wait for an ACK (Nagle).
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.owner.verbose:
            super().log_message(format, *args)

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        try:
            parsed: Any = json.loads(body) if body else None
        except (ValueError, RecursionError):
            parsed = None
        owner = self.server.owner
        request = ScriptRequest(
            self.command, self.path, tuple(self.headers.items()), body, parsed, owner._next_attempt()
        )
        owner._requests_append(request)
        try:
            script = owner.handler(request)
        except Exception as exc:
            text = f"script handler failed: {exc!r}".encode()
            self.send_response(500)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)
            owner._record(request.attempt, "handler-error", 0, repr(exc))
            return
        self._play(request.attempt, script)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

    def _play(self, attempt: int, script: Script) -> None:
        owner = self.server.owner
        step_index = 0
        try:
            self.send_response(script.status)
            names = set()
            for name, value in script.headers:
                names.add(name.lower())
                self.send_header(name, value)
            if "transfer-encoding" not in names and "content-length" not in names:
                if script.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(len(script.body())))
            self.end_headers()
            for step_index, step in enumerate(script.steps):
                if isinstance(step, bytes):
                    if step:
                        frame = b"%x\r\n%s\r\n" % (len(step), step) if script.chunked else step
                        self.wfile.write(frame)
                elif step == "abort":
                    self.close_connection = True
                    _close(self.connection)
                    owner._record(attempt, "aborted", step_index)
                    return
                elif step == "hold":
                    self.close_connection = True
                    ended = self._wait(owner.hold_cap)
                    owner._record(attempt, "hold-expired" if ended == "elapsed" else "stopped", step_index)
                    _close(self.connection)
                    return
                elif self._wait(float(step)) == "stopped":
                    self.close_connection = True
                    owner._record(attempt, "stopped", step_index)
                    _close(self.connection)
                    return
            step_index = len(script.steps)
            if script.chunked:
                self.wfile.write(b"0\r\n\r\n")
            owner._record(attempt, "complete", step_index)
        except _ClientGone as exc:
            self.close_connection = True
            owner._record(attempt, "disconnected", step_index, str(exc))
        except OSError as exc:  # a write failed: the client went away
            self.close_connection = True
            owner._record(attempt, "disconnected", step_index, f"write failed: {exc!r}")

    def _wait(self, seconds: float) -> Literal["elapsed", "stopped"]:
        """Pause for ``seconds`` while watching the peer; raises
        ``_ClientGone`` as soon as the client closes its end."""
        stopping = self.server.owner._stopping
        end = time.monotonic() + seconds
        sock = self.connection
        peeking = True
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return "elapsed"
            if stopping.is_set():
                return "stopped"
            tick = min(left, _TICK)
            if not peeking:
                time.sleep(tick)
                continue
            try:
                readable, _, _ = select.select([sock], [], [], tick)
                gone = readable and not _peek(sock, tick)
            except (OSError, ValueError) as exc:
                gone, why = True, f"the connection failed: {exc!r}"
            else:
                why = "the client closed the connection"
            if gone:
                # At shutdown the server closes the sockets itself: that is
                # not the client going away.
                if stopping.is_set():
                    return "stopped"
                raise _ClientGone(why)
            if readable:
                peeking = False  # the client sent more (a pipelined request): just sleep


def _peek(sock: socket.socket, wait: float) -> bool:
    """After ``select`` found ``sock`` readable: False when the peer closed.

    A plain socket is peeked (``MSG_PEEK``), leaving any data in place.
    TLS cannot peek, so one byte is read: a peer that closed makes the read
    return ``b""`` or raise (``SSLEOFError`` when it sent no close_notify);
    a partial TLS record times out and counts as "still there".
    """
    if not isinstance(sock, ssl.SSLSocket):
        return bool(sock.recv(1, socket.MSG_PEEK))
    sock.settimeout(wait)
    try:
        return bool(sock.recv(1))
    except TimeoutError:
        return True
    finally:
        sock.settimeout(None)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], owner: ScriptServer) -> None:
        self.owner = owner
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.owner._connections_add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.owner._connections_discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError) or self.owner._stopping.is_set():
            return  # a client that went away, or a connection closed at shutdown
        super().handle_error(request, client_address)


class ScriptServer:
    """Serve ``Script`` responses on loopback (see the module docstring).

    Args:
        handler: called with each ``ScriptRequest``; returns the ``Script``.
        host: address to bind (127.0.0.1 by default).
        port: port to bind (0: a free one).
        hold_cap: longest a ``"hold"`` step waits for the client to leave.
        verbose: log each request to stderr.
        ssl_context: serve https with this (server-side) context.

    Attributes:
        requests: every ``ScriptRequest`` received, in order.
        responses: a ``ResponseRecord`` per played response, in order of
            completion.
        disconnected: set when a response ends "disconnected".
    """

    def __init__(
        self,
        handler: Callable[[ScriptRequest], Script],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        hold_cap: float = 30.0,
        verbose: bool = False,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.handler = handler
        self.hold_cap = hold_cap
        self.verbose = verbose
        self.requests: list[ScriptRequest] = []
        self.responses: list[ResponseRecord] = []
        self.disconnected = threading.Event()
        self._lock = threading.Condition()
        self._attempts = 0
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._serving = False
        self._httpd = _HTTPServer((host, port), self)
        self.scheme = "http"
        if ssl_context is not None:
            self.scheme = "https"
            self._httpd.socket = ssl_context.wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False
            )

    # -- addresses --------------------------------------------------------------

    @property
    def host(self) -> str:
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def origin(self) -> str:
        """``http://HOST:PORT`` (``https`` with TLS; no path)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The base URL clients use: ``http://HOST:PORT/v1``."""
        return self.origin + "/v1"

    # -- running ----------------------------------------------------------------

    def start(self: _S) -> _S:
        """Serve from a background thread."""
        if self._thread is None:
            self._serving = True
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, args=(_TICK,), name="ScriptServer", daemon=True
            )
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve from the calling thread until ``close()`` (or an exception,
        such as ``KeyboardInterrupt``, which closes the server and propagates)."""
        try:
            self._serving = True
            self._httpd.serve_forever(_TICK)
        finally:
            # The loop is over (or never began: an interrupt can land before
            # it starts), so close() must not wait for it to stop.
            self._serving = False
            self._shutdown_connections()
            self._httpd.server_close()

    def close(self) -> None:
        """Stop serving: end pauses and holds, close every connection."""
        self._stopping.set()
        if self._serving:
            self._serving = False
            self._httpd.shutdown()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._shutdown_connections()
        self._httpd.server_close()

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- records ------------------------------------------------------------------

    def wait_for(self, count: int = 1, timeout: float = 10.0) -> list[ResponseRecord]:
        """Wait until ``count`` responses have ended (or ``timeout`` passed);
        return the records so far."""
        with self._lock:
            self._lock.wait_for(lambda: len(self.responses) >= count, timeout)
            return list(self.responses)

    def record_for(self, attempt: int, timeout: float = 10.0) -> ResponseRecord | None:
        """Wait for the record of request ``attempt``; None if it never came."""
        with self._lock:
            self._lock.wait_for(lambda: any(r.attempt == attempt for r in self.responses), timeout)
            return next((r for r in self.responses if r.attempt == attempt), None)

    def _next_attempt(self) -> int:
        with self._lock:
            n = self._attempts
            self._attempts += 1
            return n

    def _requests_append(self, request: ScriptRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _record(self, attempt: int, outcome: Outcome, step: int, detail: str = "") -> None:
        with self._lock:
            self.responses.append(ResponseRecord(attempt, outcome, step, time.monotonic(), detail))
            if outcome == "disconnected":
                self.disconnected.set()
            self._lock.notify_all()

    def _connections_add(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections.add(sock)

    def _connections_discard(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections.discard(sock)

    def _shutdown_connections(self) -> None:
        self._stopping.set()
        with self._lock:
            connections = list(self._connections)
        for sock in connections:
            _close(sock)


if __name__ == "__main__":  # pragma: no cover - a manual check: python -m ssestate.testing._server
    from .. import DONE_BYTES

    def _demo(request: ScriptRequest) -> Script:
        return Script(steps=[b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n', 0.5, DONE_BYTES])

    server = ScriptServer(_demo, port=int(sys.argv[1]) if len(sys.argv) > 1 else 0, verbose=True)
    print(server.url, flush=True)
    server.serve_forever()
