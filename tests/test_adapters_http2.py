"""The httpx adapter over HTTP/2: hypercorn serving an ASGI app on loopback.

The app plays the same ``Script`` objects the HTTP/1.1 ``ScriptServer``
plays (bytes become DATA frames, pauses are sleeps, ``"hold"`` keeps the
stream open) and records how each response ended, so cancellation is seen
from the server's side.  hypercorn runs in a thread with its own event
loop, over cleartext HTTP/2 with prior knowledge (h2c) and over TLS with
ALPN; every test checks that the exchange really was HTTP/2 and that the
events equal those of the same script over HTTP/1.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx")
pytest.importorskip("h2")
pytest.importorskip("hypercorn")

import httpx
from adapter_scenarios import (
    HELLO,
    HELLO_EVENTS,
    OVERLOADED_EVENT,
    PAYLOAD,
    ServerFactory,
    default_tls,
    encoded,
    long_stream,
    read_as,
    reference,
    run,
    running_servers,
    tls_contexts,
)
from hypercorn.asyncio import serve
from hypercorn.config import Config

from ssestate import ChatEvent, Delta, Done, Finish, RetryPolicy, StreamTimeout, Truncated
from ssestate.adapters import httpx as sse_httpx
from ssestate.testing import Script, scenario

pytestmark = pytest.mark.network

# Headers that describe an HTTP/1.1 connection; HTTP/2 forbids them.
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "upgrade", "content-length"}

Message = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Ended:
    """How the app's response to request ``attempt`` ended."""

    attempt: int
    outcome: str  # "complete", "disconnected" or "aborted"
    step: int


class ScriptApp:
    """An ASGI app answering request n with scripts[n] (the last repeats)."""

    def __init__(self, scripts: tuple[Script, ...]) -> None:
        self.scripts = scripts
        self.versions: list[str] = []
        self.clients: list[tuple[str, int]] = []  # the connection each request came on
        self.ended: list[Ended] = []
        self.waited: dict[int, float] = {}  # seconds a pause or hold lasted until the client went away
        self._lock = threading.Condition()

    def ended_for(self, attempt: int, timeout: float = 10.0) -> Ended | None:
        with self._lock:
            self._lock.wait_for(lambda: any(e.attempt == attempt for e in self.ended), timeout)
            return next((e for e in self.ended if e.attempt == attempt), None)

    def _end(self, attempt: int, outcome: str, step: int) -> None:
        with self._lock:
            self.ended.append(Ended(attempt, outcome, step))
            self._lock.notify_all()

    async def __call__(
        self, scope: Message, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]
    ) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        while (await receive()).get("more_body"):
            pass
        with self._lock:
            attempt = len(self.versions)
            self.versions.append(scope["http_version"])
            self.clients.append(tuple(scope["client"]))
        script = self.scripts[min(attempt, len(self.scripts) - 1)]
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.create_task(watch())
        step = 0
        try:
            headers = [(n.lower().encode(), v.encode()) for n, v in script.headers if n.lower() not in _HOP_BY_HOP]
            await send({"type": "http.response.start", "status": script.status, "headers": headers})
            for step, item in enumerate(script.steps):
                if isinstance(item, bytes):
                    await send({"type": "http.response.body", "body": item, "more_body": True})
                    continue
                if item == "abort":  # the app fails: hypercorn resets the stream
                    self._end(attempt, "aborted", step)
                    raise RuntimeError("the app failed mid-stream")
                wait = 30.0 if item == "hold" else float(item)
                start = time.monotonic()
                with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                    await asyncio.wait_for(gone.wait(), wait)
                if gone.is_set():
                    self.waited[attempt] = time.monotonic() - start
                    self._end(attempt, "disconnected", step)
                    return
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            self._end(attempt, "complete", len(script.steps))
        finally:
            watcher.cancel()


@contextlib.contextmanager
def hypercorn_server(
    *scripts: Script, tls: tuple[Path, Path] | None = None, keep_alive: float = 5.0
) -> Iterator[tuple[str, ScriptApp]]:
    """Serve ``ScriptApp(scripts)`` with hypercorn on a free loopback port;
    yields ``(base_url, app)``.  ``tls``: (certificate, key) files;
    ``keep_alive``: how long hypercorn keeps a connection with no stream
    open."""
    app = ScriptApp(scripts)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # connections queue up until hypercorn accepts them
    port = listener.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{listener.detach()}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 0.2
    config.keep_alive_timeout = keep_alive
    if tls is not None:
        config.certfile, config.keyfile = str(tls[0]), str(tls[1])
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    def main() -> None:
        asyncio.set_event_loop(loop)
        # Cancelled when a client's pooled connection outlives the shutdown
        # (Python 3.12+ waits for every connection in Server.wait_closed).
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(serve(app, config, shutdown_trigger=stop.wait))  # type: ignore[arg-type]

    thread = threading.Thread(target=main, name="hypercorn", daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}/v1", app
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(2)
        if thread.is_alive():
            # Hypercorn is still waiting on a connection a client keeps in its
            # pool: cancel everything the loop runs, then wait again.
            loop.call_soon_threadsafe(_cancel_all, loop)
            thread.join(10)
        assert not thread.is_alive(), "hypercorn did not stop"
        loop.close()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()


H2C: dict[str, Any] = {"http2": True, "http1": False}  # cleartext HTTP/2 with prior knowledge
SCENARIOS = ("text", "cjk", "tools", "n2", "crlf", "error-401", "downgrade")


@pytest.fixture
def server_factory() -> Iterator[ServerFactory]:
    yield from running_servers()


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
@pytest.mark.parametrize("name", ["hello", *SCENARIOS])
def test_http2_events_equal_http11(mode: str, name: str, server_factory: ServerFactory) -> None:
    script = Script(steps=HELLO) if name == "hello" else scenario(name, seed=3, speed=20.0)
    http11 = run(mode, server_factory(script).url, retry=None)
    assert http11.http_version == "HTTP/1.1"
    assert http11.error is None
    with hypercorn_server(script) as (url, app):
        http2 = run(mode, url, retry=None, client_kwargs=H2C)
    assert http2.error is None, repr(http2.error)
    assert http2.http_version == "HTTP/2"
    assert app.versions == ["2"]
    assert http2.events == http11.events
    assert http2.status_code == http11.status_code
    # Both stop reading at Done: bytes the script writes after it may be left unread.
    assert 0 < http2.stats.bytes <= len(script.body())
    if name == "hello":
        assert http2.events == HELLO_EVENTS


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path, Path]:
    directory = tmp_path_factory.mktemp("tls")
    _, client_context, cert = tls_contexts(directory)
    return client_context, cert, directory / "key.pem"


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_http2_over_tls(mode: str, tls: tuple[ssl.SSLContext, Path, Path]) -> None:
    client_context, cert, key = tls
    script = scenario("reasoning", seed=1, speed=20.0)
    with hypercorn_server(script, tls=(cert, key)) as (url, app):
        result = run(mode, url, retry=None, client_kwargs={"http2": True, "verify": client_context})
    assert url.startswith("https://")
    assert result.error is None, repr(result.error)
    assert result.http_version == "HTTP/2"
    assert app.versions == ["2"]
    assert result.events == reference(script.body(), script.status, script.content_type)


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_first_byte_and_idle_limits_apply_per_read(mode: str) -> None:
    limits = {"first_byte_timeout": 1.0, "idle_timeout": 0.3, "retry": None, "client_kwargs": H2C}
    with hypercorn_server(Script(steps=[0.6, *HELLO]), Script(steps=[HELLO[0], 0.6, *HELLO[1:]])) as (url, app):
        slow_start = run(mode, url, **limits)
        assert slow_start.events == HELLO_EVENTS
        assert slow_start.http_version == "HTTP/2"
        stall = run(mode, url, **limits)
        assert stall.events == HELLO_EVENTS[:1]
        assert isinstance(stall.error, StreamTimeout)
        assert (stall.error.phase, stall.error.limit) == ("idle", 0.3)
        ended = app.ended_for(1)
    assert ended == Ended(1, "disconnected", 1)


def test_breaking_out_ends_the_stream_at_the_server() -> None:
    with (
        hypercorn_server(long_stream()) as (url, app),
        httpx.Client(verify=default_tls(), http2=True, http1=False) as client,
    ):
        with sse_httpx.stream_chat(client, url, PAYLOAD) as call:
            for event in call:
                assert event == Delta(0, "t0 ")
                break
        assert call.http_version == "HTTP/2"
        ended = app.ended_for(0)
        assert ended is not None
        assert (ended.outcome, ended.step < 10) == ("disconnected", True)
        # The client opens a new connection for the next call: the closed one
        # left the pool (no retry needed to get past it).
        with sse_httpx.stream_chat(client, url, PAYLOAD, retry=None) as call:
            assert next(call) == Delta(0, "t0 ")
    assert app.clients[0] != app.clients[1]


def test_a_finished_call_leaves_the_connection_in_the_pool() -> None:
    with (
        hypercorn_server(Script(steps=[*HELLO, "hold"]), Script(steps=HELLO)) as (url, app),
        httpx.Client(verify=default_tls(), http2=True, http1=False) as client,
    ):
        for _ in range(3):
            with sse_httpx.stream_chat(client, url, PAYLOAD) as call:
                assert list(call) == HELLO_EVENTS
    assert app.versions == ["2"] * 3
    assert len(set(app.clients)) == 1  # one connection for all three


def test_async_cancellation_ends_the_stream_at_the_server() -> None:
    with hypercorn_server(long_stream()) as (url, app):

        async def main() -> None:
            first = asyncio.Event()

            async def consume(client: httpx.AsyncClient) -> None:
                async with sse_httpx.astream_chat(client, url, PAYLOAD) as call:
                    async for _ in call:
                        first.set()

            async with httpx.AsyncClient(verify=default_tls(), http2=True, http1=False) as client:
                task = asyncio.create_task(consume(client))
                await first.wait()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

        asyncio.run(main())
        ended = app.ended_for(0)
    assert ended is not None
    assert (ended.outcome, ended.step < 10) == ("disconnected", True)


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_a_stream_the_server_drops_ends_truncated(mode: str) -> None:
    second = HELLO[1]
    assert isinstance(second, bytes)
    partial = second[:20]
    # Hypercorn drops a failed app's stream without a word to the client and
    # closes the connection once no stream is left open, after its keep-alive
    # time: the client must see the stream end there, cut inside an event.
    scripts = (Script(steps=[HELLO[0], partial, "abort"]), Script(steps=HELLO))
    with hypercorn_server(*scripts, keep_alive=0.3) as (url, app):
        if mode == "httpx":
            with httpx.Client(verify=default_tls(), http2=True, http1=False) as client:
                with sse_httpx.stream_chat(client, url, PAYLOAD, retry=None) as call:
                    events = list(call)
                with sse_httpx.stream_chat(client, url, PAYLOAD) as call:
                    after = list(call)
        else:

            async def main() -> tuple[list[ChatEvent], list[ChatEvent]]:
                async with httpx.AsyncClient(verify=default_tls(), http2=True, http1=False) as client:
                    async with sse_httpx.astream_chat(client, url, PAYLOAD, retry=None) as call:
                        first = [e async for e in call]
                    async with sse_httpx.astream_chat(client, url, PAYLOAD) as call:
                        return first, [e async for e in call]

            events, after = asyncio.run(main())
    assert events == [HELLO_EVENTS[0], Truncated("partial-event", len(partial))]
    assert after == HELLO_EVENTS  # the client is still usable
    assert app.ended[0] == Ended(0, "aborted", 2)


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_after_done_the_stream_ends_at_the_server_and_the_connection_stays(mode: str) -> None:
    # The server would hold the stream open after [DONE] for 30 s: the
    # adapter resets it, while the client and its connection stay open.
    scripts = (Script(steps=[*HELLO, "hold"]), Script(steps=HELLO))
    with hypercorn_server(*scripts) as (url, app):

        async def two_calls(client: httpx.AsyncClient) -> None:
            async with sse_httpx.astream_chat(client, url, PAYLOAD) as call:
                assert [e async for e in call] == HELLO_EVENTS
            assert await asyncio.to_thread(app.ended_for, 0) == Ended(0, "disconnected", len(HELLO))
            async with sse_httpx.astream_chat(client, url, PAYLOAD) as call:
                assert [e async for e in call] == HELLO_EVENTS

        if mode == "httpx":
            with httpx.Client(verify=default_tls(), http2=True, http1=False) as client:
                with sse_httpx.stream_chat(client, url, PAYLOAD) as call:
                    assert list(call) == HELLO_EVENTS
                assert app.ended_for(0) == Ended(0, "disconnected", len(HELLO))
                with sse_httpx.stream_chat(client, url, PAYLOAD) as call:
                    assert list(call) == HELLO_EVENTS
        else:

            async def main() -> None:
                async with httpx.AsyncClient(verify=default_tls(), http2=True, http1=False) as client:
                    await two_calls(client)

            asyncio.run(main())
        assert app.ended_for(1) == Ended(1, "complete", len(HELLO))
    assert app.waited[0] < 2.0  # the stream ended right after Done, not when the 30 s hold did
    assert app.versions == ["2", "2"]
    assert app.clients[0] == app.clients[1]  # one connection for both


@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_leaving_early_can_end_only_the_stream(mode: str) -> None:
    # close_http2_connection=False: the stream is reset, the connection kept.
    kwargs: dict[str, Any] = {"close_http2_connection": False}
    with hypercorn_server(long_stream(), Script(steps=HELLO)) as (url, app):
        if mode == "httpx":
            with httpx.Client(verify=default_tls(), http2=True, http1=False) as client:
                with sse_httpx.stream_chat(client, url, PAYLOAD, **kwargs) as call:
                    assert next(call) == Delta(0, "t0 ")
                ended = app.ended_for(0)
                with sse_httpx.stream_chat(client, url, PAYLOAD, **kwargs) as call:
                    assert list(call) == HELLO_EVENTS
        else:

            async def main() -> Ended | None:
                async with httpx.AsyncClient(verify=default_tls(), http2=True, http1=False) as client:
                    async with sse_httpx.astream_chat(client, url, PAYLOAD, **kwargs) as call:
                        async for event in call:
                            assert event == Delta(0, "t0 ")
                            break
                    first = await asyncio.to_thread(app.ended_for, 0)
                    async with sse_httpx.astream_chat(client, url, PAYLOAD, **kwargs) as call:
                        assert [e async for e in call] == HELLO_EVENTS
                return first

            ended = asyncio.run(main())
    assert ended is not None
    assert (ended.outcome, ended.step < 10) == ("disconnected", True)
    assert app.clients[0] == app.clients[1]


# -- the other APIs -----------------------------------------------------------------------------

ANSWER: list[ChatEvent] = [Delta(0, "", "assistant"), Delta(0, "Hi"), Finish(0, "stop"), Done(True)]


@pytest.mark.parametrize("dialect", ["openai-responses", "anthropic"])
@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_an_end_marker_ends_the_stream_at_the_server(mode: str, dialect: str) -> None:
    # response.completed, message_stop: then the server would hold the
    # stream open for 30 s; the adapter resets it right away.
    answer = encoded(dialect, ANSWER)
    with hypercorn_server(Script(steps=[*answer, "hold"])) as (url, app):
        result = run(mode, url, dialect=dialect, client_kwargs=H2C)
        ended = app.ended_for(0)
    assert result.error is None, repr(result.error)
    assert result.http_version == "HTTP/2"
    assert result.events == read_as(dialect, b"".join(answer))
    assert result.events[-1] == Done(True)
    assert ended == Ended(0, "disconnected", len(answer))
    assert app.waited[0] < 2.0


@pytest.mark.parametrize("close", [True, False])
@pytest.mark.parametrize("mode", ["httpx", "httpx-asyncio"])
def test_an_error_before_output_ends_its_stream_and_is_retried(mode: str, close: bool) -> None:
    # An overloaded_error as the first event of a stream the server then
    # holds open: the retry does not wait for the server, and the stream is
    # ended as when a call is left early: with its connection, or alone
    # (close_http2_connection=False).
    answer = encoded("anthropic", ANSWER)
    with hypercorn_server(Script(steps=[OVERLOADED_EVENT, "hold"]), Script(steps=[*answer])) as (url, app):
        result = run(
            mode,
            url,
            dialect="anthropic",
            retry=RetryPolicy(max_retries=1, base_delay=0.0),
            client_kwargs=H2C,
            close_http2_connection=close,
        )
        ended = app.ended_for(0)
    assert result.error is None, repr(result.error)
    assert (result.attempts, result.http_version) == (2, "HTTP/2")
    assert result.events == read_as("anthropic", b"".join(answer))
    assert ended == Ended(0, "disconnected", 1)
    assert app.waited[0] < 2.0
    assert app.versions == ["2", "2"]
    assert (app.clients[0] == app.clients[1]) is not close
