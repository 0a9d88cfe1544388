"""A loopback HTTP/1.1 server process for the adapter benchmark.

Theory of operation
-------------------
``python -m benchmarks._loopback`` binds 127.0.0.1 on a free port, prints
the port on its first line of output and serves until its standard input
closes.  It runs in a process of its own so that the client's CPU time,
which the benchmark measures with ``time.process_time``, holds no server
work at all.

Every body is built before the first request (``fixtures``: seeded, the
same bytes on every run) and cut into the pieces a server writes: 1,460
bytes each (one TCP segment), each framed as one HTTP/1.1 chunk.  A request
names its body in the JSON ``model`` member, ``"<fixture>-<size>"``:
``chat-2000`` is ``fixtures.chat_stream(2000)``, ``tool-190`` is
``fixtures.tool_call_stream(190)``; ``-paced`` after it (``chat-2000-paced``)
asks for the same body paced (below).  The response is ``200``,
``text/event-stream``, chunked; after the terminating chunk the connection
stays open for the next request (keep-alive) unless the client asked for
``Connection: close``.

Each connection gets a thread that writes its pieces with ``sendall``, as
fast as it can.  The client reads what has arrived: a read of the socket
may hold many pieces, but every transport hands them over one HTTP chunk at
a time (``read1``, ``iter_raw``/``aiter_raw``, h11's ``Data``), so a
client's loop runs once per piece, about 370 times for a 2,000-event chat
stream.  What a client spends per read of the socket shows only when the
pieces arrive one by one, as they do from a model that is generating: a
paced body sleeps ``PACE`` seconds between two writes (``time.sleep`` is
precise to tens of microseconds, an event loop's timers only to a
millisecond).  Each paced read then also costs the client a wakeup, which
on a virtual machine costs more than reading the piece.

Commands on standard input, one a line, each answered with one line:
``count`` prints ``<connections accepted> <responses completed>`` (the
connection count is how a benchmark sees whether a client reuses its
connections); ``quit`` (or end of input) stops the server.
"""

from __future__ import annotations

import argparse
import functools
import json
import socket
import socketserver
import sys
import threading
import time

from . import fixtures

__all__ = ["PACE", "PIECE", "body", "main", "pieces"]

PIECE = 1460
PACE = 0.0003
HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/event-stream\r\n"
    b"Cache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)
END = b"0\r\n\r\n"


@functools.cache
def body(model: str) -> bytes:
    """The body a request for ``model`` (``"chat-2000"``, ``"tool-190"``) gets."""
    kind, _, size = model.removesuffix("-paced").rpartition("-")
    if kind == "chat":
        return fixtures.chat_stream(int(size)).body
    if kind == "tool":
        return fixtures.tool_call_stream(int(size)).body
    raise ValueError(f"no such stream: {model!r}")


@functools.cache
def pieces(model: str) -> tuple[bytes, ...]:
    """``body(model)`` as the HTTP chunks the server writes, one per piece."""
    data = body(model)
    return tuple(b"%x\r\n%s\r\n" % (len(p), p) for p in fixtures.chunk(data, PIECE))


class _Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connections = 0
        self.responses = 0


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        counters = self.server.counters
        with counters.lock:
            counters.connections += 1
        reader = sock.makefile("rb")
        try:
            while True:
                line = reader.readline()
                if not line:
                    return
                length, close = 0, False
                while (header := reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.partition(b":")
                    name = name.strip().lower()
                    if name == b"content-length":
                        length = int(value)
                    elif name == b"connection":
                        close = value.strip().lower() == b"close"
                model = str(json.loads(reader.read(length) or b"{}").get("model", "chat-2000"))
                pace = PACE if model.endswith("-paced") else 0.0
                sock.sendall(HEAD)
                for piece in pieces(model):
                    sock.sendall(piece)
                    if pace:
                        time.sleep(pace)
                sock.sendall(END)
                with counters.lock:
                    counters.responses += 1
                if close:
                    return
        except OSError:
            return  # the client went away
        finally:
            reader.close()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512  # a hundred clients connect at once

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.counters = _Counters()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._loopback", description=__doc__.splitlines()[0])
    parser.add_argument("--streams", nargs="*", default=[], help="bodies to build before serving")
    args = parser.parse_args(argv)
    for model in args.streams:
        pieces(model)
    server = _Server()
    threading.Thread(target=server.serve_forever, name="loopback", daemon=True).start()
    print(server.server_address[1], flush=True)
    for command in sys.stdin:
        if command.strip() == "count":
            with server.counters.lock:
                print(server.counters.connections, server.counters.responses, flush=True)
        elif command.strip() == "quit":
            break
    server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
