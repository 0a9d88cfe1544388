"""The httpx adapter keeps its HTTP/1.1 connection for the next call.

A response closed before the end of its body takes its connection with it,
so after ``Done`` the adapter reads the end of the body (briefly) before it
closes the response.  These tests count connections from the server's side:
``CountingServer`` is a small keep-alive HTTP/1.1 server that numbers the
connections it accepts and notes when a client closes one.
"""

from __future__ import annotations

import asyncio
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import Any, Literal, Union

import pytest

pytest.importorskip("httpx")
pytest.importorskip("anyio")

import httpx
from adapter_scenarios import HELLO, HELLO_EVENTS, PAYLOAD, PING, default_tls

from ssestate import ChatEvent, Done
from ssestate.adapters import httpx as sse_httpx

pytestmark = pytest.mark.network

# What the server does for one response, step by step: bytes are one chunk,
# a float pauses, "end" writes the terminating chunk (the connection then
# waits for the next request), "hold" waits until the client closes.
Step = Union[bytes, float, Literal["end", "hold"]]
ENDS_AT_ONCE: list[Step] = [*HELLO, "end"]  # type: ignore[list-item]
MODES = ("httpx", "httpx-asyncio", "httpx-trio")


class CountingServer:
    """Answers request n with ``scripts[n]`` (the last repeats).

    Attributes:
        connections: connections accepted so far.
        closed: set when a client closed a connection.
        ended: set when a response's terminating chunk was written.
    """

    def __init__(self, *scripts: list[Step]) -> None:
        self.scripts = scripts
        self.connections = 0
        self.requests = 0
        self.closed = threading.Event()
        self.ended = threading.Event()
        self.held: list[float] = []  # seconds each "hold" lasted until the client closed
        self.lock = threading.Lock()
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                owner.serve(self.request)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def serve(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.lock:
            self.connections += 1
        reader = sock.makefile("rb")
        try:
            while self.respond(sock, reader):
                pass
        except OSError:
            pass
        finally:
            self.closed.set()
            reader.close()

    def respond(self, sock: socket.socket, reader: Any) -> bool:
        """One exchange; False when the client closed the connection."""
        if not reader.readline():
            return False
        length = 0
        while (line := reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        reader.read(length)
        with self.lock:
            script = self.scripts[min(self.requests, len(self.scripts) - 1)]
            self.requests += 1
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for step in script:
            if isinstance(step, bytes):
                sock.sendall(b"%x\r\n%s\r\n" % (len(step), step))
            elif isinstance(step, float):
                threading.Event().wait(step)
            elif step == "end":
                self.ended.set()  # before the client can read the end
                sock.sendall(b"0\r\n\r\n")
            else:  # hold until the client goes away
                start = time.monotonic()
                gone = not sock.recv(1)
                self.held.append(time.monotonic() - start)
                return not gone
        return True

    def wait_closed(self) -> bool:
        return self.closed.wait(10)


@pytest.fixture
def servers() -> Iterator[Any]:
    started: list[CountingServer] = []

    def make(*scripts: list[Step]) -> CountingServer:
        started.append(CountingServer(*scripts))
        return started[-1]

    yield make
    for server in started:
        server.close()


def calls(mode: str, url: str, count: int, *, stop_at_done: bool = False, **kwargs: Any) -> list[list[ChatEvent]]:
    """``count`` calls one after another over one client; the events of each."""
    if mode == "httpx":
        out = []
        with httpx.Client(verify=default_tls()) as client:
            for _ in range(count):
                with sse_httpx.stream_chat(client, url, PAYLOAD, **kwargs) as call:
                    events = []
                    for event in call:
                        events.append(event)
                        if stop_at_done and isinstance(event, Done):
                            break
                out.append(events)
        return out

    async def main() -> list[list[ChatEvent]]:
        out = []
        async with httpx.AsyncClient(verify=default_tls()) as client:
            for _ in range(count):
                async with sse_httpx.astream_chat(client, url, PAYLOAD, **kwargs) as call:
                    events = []
                    async for event in call:
                        events.append(event)
                        if stop_at_done and isinstance(event, Done):
                            break
                out.append(events)
        return out

    if mode == "httpx-asyncio":
        return asyncio.run(main())
    trio = pytest.importorskip("trio")
    result: list[list[ChatEvent]] = trio.run(main)
    return result


@pytest.mark.parametrize("mode", MODES)
def test_sequential_calls_share_one_connection(mode: str, servers: Any) -> None:
    server = servers(ENDS_AT_ONCE)
    assert calls(mode, server.url, 3) == [HELLO_EVENTS] * 3
    assert (server.connections, server.requests) == (1, 3)


@pytest.mark.parametrize("mode", MODES)
def test_breaking_out_at_done_still_shares_the_connection(mode: str, servers: Any) -> None:
    server = servers(ENDS_AT_ONCE)
    assert calls(mode, server.url, 3, stop_at_done=True) == [HELLO_EVENTS] * 3
    assert (server.connections, server.requests) == (1, 3)


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_done_comes_before_the_body_ends(mode: str, servers: Any) -> None:
    # The server ends the body 0.1 s after [DONE]: Done is handed out first,
    # the end of the body is read after it, and the connection is kept.
    server = servers([*HELLO, 0.1, "end"])
    seen: list[bool] = []

    def watch(event: ChatEvent) -> None:
        if isinstance(event, Done):
            seen.append(server.ended.is_set())

    if mode == "httpx":
        with httpx.Client(verify=default_tls()) as client:
            for _ in range(2):
                with sse_httpx.stream_chat(client, server.url, PAYLOAD) as call:
                    for event in call:
                        watch(event)
                server.ended.clear()
    else:

        async def main() -> None:
            async with httpx.AsyncClient(verify=default_tls()) as client:
                for _ in range(2):
                    async with sse_httpx.astream_chat(client, server.url, PAYLOAD) as call:
                        async for event in call:
                            watch(event)
                    server.ended.clear()

        asyncio.run(main())
    assert seen == [False, False]
    assert (server.connections, server.requests) == (1, 2)


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_a_body_that_ends_first_leaves_no_deadline_on_its_connection(mode: str, servers: Any) -> None:
    # A body that ends before any end marker (Gemini's way; a stream cut
    # cleanly) gives its connection back to httpx's pool while the caller
    # still holds its last events.  A call started then, on that
    # connection, reads with its own limits: 0.2 s pauses within its idle
    # limit of 1 s, long after the first call's 0.1 s limit ran out.
    server = servers([*HELLO[:-1], "end"], [HELLO[0], 0.2, *HELLO[1:], "end"])
    outer: list[ChatEvent] = []
    inner: list[ChatEvent] = []
    if mode == "httpx":
        with (
            httpx.Client(verify=default_tls()) as client,
            sse_httpx.stream_chat(client, server.url, PAYLOAD, idle_timeout=0.1, retry=None) as call,
        ):
            for event in call:
                outer.append(event)
                if len(outer) == len(HELLO_EVENTS):  # the last, handed out after the body's end
                    time.sleep(0.2)
                    with sse_httpx.stream_chat(client, server.url, PAYLOAD, idle_timeout=1.0) as second:
                        inner.extend(second)
    else:

        async def main() -> None:
            async with (
                httpx.AsyncClient(verify=default_tls()) as client,
                sse_httpx.astream_chat(client, server.url, PAYLOAD, idle_timeout=0.1, retry=None) as call,
            ):
                async for event in call:
                    outer.append(event)
                    if len(outer) == len(HELLO_EVENTS):
                        await asyncio.sleep(0.2)
                        async with sse_httpx.astream_chat(client, server.url, PAYLOAD, idle_timeout=1.0) as second:
                            inner.extend([e async for e in second])

        asyncio.run(main())
    assert outer == [*HELLO_EVENTS[:-1], Done(sentinel=False)]  # a clean end after the finish
    assert inner == HELLO_EVENTS
    assert (server.connections, server.requests) == (1, 2)


@pytest.mark.parametrize("mode", MODES)
def test_a_body_held_open_after_done_loses_its_connection(mode: str, servers: Any) -> None:
    server = servers([*HELLO, "hold"])
    assert calls(mode, server.url, 1) == [HELLO_EVENTS]
    assert server.wait_closed()  # the server saw the client close it ...
    assert server.held[0] < 5.0  # ... long before the 30 s idle limit
    assert calls(mode, server.url, 1) == [HELLO_EVENTS]
    assert server.connections == 2


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_too_much_after_done_loses_the_connection(mode: str, servers: Any) -> None:
    # More than DRAIN_BYTES after [DONE]: not worth reading to keep a connection.
    tail = b": " + b"x" * sse_httpx.DRAIN_BYTES + b"\n\n"
    server = servers([*HELLO, tail, "end"])
    assert calls(mode, server.url, 2) == [HELLO_EVENTS] * 2
    assert server.connections == 2


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_a_trickle_after_done_is_read_for_a_short_while_only(mode: str, servers: Any) -> None:
    # A comment every fraction of a millisecond after [DONE], for seconds:
    # each read is quick, but the drain as a whole stops after DRAIN_TIME
    # (it used to go on until DRAIN_BYTES, 2-3 s here) and the connection
    # is given up.
    server = servers([*HELLO, *[PING, 0.0002] * 20_000, "end"])
    start = time.monotonic()
    assert calls(mode, server.url, 1) == [HELLO_EVENTS]
    assert time.monotonic() - start < 1.5
    assert server.wait_closed()


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_an_exception_after_done_closes_at_once(mode: str, servers: Any) -> None:
    # The body would end 0.1 s later, but an exception is on its way: the
    # connection is closed, not drained, and the next call needs another.
    server = servers([*HELLO, 0.1, "end"])
    after: list[list[ChatEvent]] = []

    class Stop(Exception):
        pass

    if mode == "httpx":
        with httpx.Client(verify=default_tls()) as client:
            with pytest.raises(Stop), sse_httpx.stream_chat(client, server.url, PAYLOAD) as call:
                for event in call:
                    if isinstance(event, Done):
                        raise Stop
            assert server.wait_closed()
            with sse_httpx.stream_chat(client, server.url, PAYLOAD) as call:
                after.append(list(call))
    else:

        async def main() -> None:
            async with httpx.AsyncClient(verify=default_tls()) as client:
                with pytest.raises(Stop):
                    async with sse_httpx.astream_chat(client, server.url, PAYLOAD) as call:
                        async for event in call:
                            if isinstance(event, Done):
                                raise Stop
                assert await asyncio.to_thread(server.wait_closed)
                async with sse_httpx.astream_chat(client, server.url, PAYLOAD) as call:
                    after.append([e async for e in call])

        asyncio.run(main())
    assert after == [HELLO_EVENTS]
    assert (server.connections, server.requests) == (2, 2)


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_heartbeats_after_done_are_read_past(mode: str, servers: Any) -> None:
    server = servers([*HELLO, PING, PING, "end"])
    assert calls(mode, server.url, 2) == [HELLO_EVENTS] * 2
    assert server.connections == 1
