"""The httpx adapter (``httpx.Client`` and ``httpx.AsyncClient``) against
the loopback ScriptServer, over HTTP/1.1.

The scenario list is ``adapter_scenarios.CASES``, the one every adapter
passes.  Claims about connections are checked from the server's side: the
server records how each response ended, so no test times the client.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import ssl
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("anyio")

import anyio
import httpx
from adapter_scenarios import (
    CASES,
    HELLO,
    HELLO_EVENTS,
    PAYLOAD,
    Case,
    ServerFactory,
    check_case,
    default_tls,
    delta,
    long_stream,
    run,
    running_servers,
    tls_contexts,
)

from ssestate import (
    ChatEvent,
    ChatStream,
    Delta,
    EventStreamParser,
    Heartbeat,
    ServerSentEvent,
    StreamTimeout,
    Truncated,
)
from ssestate.adapters import httpx as sse_httpx
from ssestate.testing import Script, ScriptServer

pytestmark = pytest.mark.network

MODES = ("httpx", "httpx-asyncio")


@pytest.fixture
def server_factory() -> Iterator[ServerFactory]:
    yield from running_servers()


def disconnected_early(server: ScriptServer, attempt: int = 0) -> None:
    """The server saw request ``attempt``'s client hang up long before
    ``long_stream`` would have ended."""
    record = server.record_for(attempt)
    assert record is not None
    assert record.outcome == "disconnected", record
    assert record.step < 10, record


# -- the shared scenarios -----------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("mode", MODES)
def test_case(mode: str, case: Case, server_factory: ServerFactory) -> None:
    server = server_factory(*case.scripts)
    result = run(mode, server.url, **case.kwargs)
    check_case(case, result, server)
    assert result.http_version == "HTTP/1.1"


# -- the request and the call surface ---------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_request_shape(mode: str, server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=HELLO))
    result = run(mode, server.url + "/", api_key="sk-test", headers={"X-Trace": "t1"})
    assert result.events == HELLO_EVENTS
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.json == {**PAYLOAD, "stream": True, "stream_options": {"include_usage": True}}
    assert request.header("Authorization") == "Bearer sk-test"
    assert request.header("Accept") == "text/event-stream"
    assert request.header("Accept-Encoding") == "identity"  # replaces httpx's "gzip, deflate"
    assert request.header("Content-Type") == "application/json"
    assert request.header("X-Trace") == "t1"
    assert request.header("Content-Length") == str(len(request.body))
    assert (request.header("User-Agent") or "").startswith("python-httpx/")  # the client's own defaults stay


def test_caller_stream_options_and_headers_win(server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=HELLO))
    payload = {**PAYLOAD, "stream_options": {"include_usage": False}}
    with (
        httpx.Client(headers={"X-Client": "c"}, verify=default_tls()) as client,
        sse_httpx.stream_chat(client, server.url, payload, headers=[("Accept", "*/*")]) as call,
    ):
        assert list(call) == HELLO_EVENTS
    (request,) = server.requests
    assert request.json["stream_options"] == {"include_usage": False}
    assert request.header("Authorization") is None
    assert request.header("X-Client") == "c"
    assert [v for n, v in request.headers if n.lower() == "accept"] == ["*/*"]


def test_bad_arguments_fail_at_once() -> None:
    with httpx.Client(verify=default_tls()) as client:
        with pytest.raises(ValueError, match="base_url"):
            sse_httpx.stream_chat(client, "ftp://example.com", PAYLOAD)
        with pytest.raises(ValueError, match="idle_timeout"):
            sse_httpx.stream_chat(client, "http://127.0.0.1:1/v1", PAYLOAD, idle_timeout=0)
    with pytest.raises(ValueError, match="JSON"):
        sse_httpx.astream_chat(httpx.AsyncClient(verify=default_tls()), "http://127.0.0.1:1/v1", {"x": object()})


@pytest.mark.parametrize("mode", MODES)
def test_stats_and_head(mode: str, server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=[HELLO[0], 0.2, *HELLO[1:]]))
    result = run(mode, server.url)
    assert result.events == HELLO_EVENTS
    assert result.status_code == 200
    assert ("Content-Type", "text/event-stream") in result.headers  # the case the server sent
    stats = result.stats
    assert stats.bytes == sum(len(s) for s in HELLO if isinstance(s, bytes))
    assert stats.events == len(HELLO_EVENTS)
    assert stats.ttfb is not None
    assert stats.ttft is not None
    assert stats.total is not None
    assert 0 <= stats.ttfb <= stats.ttft <= stats.total
    assert stats.gaps_p50 is not None
    assert stats.gaps_p95 is not None
    assert stats.gaps_max is not None
    assert 0 <= stats.gaps_p50 <= stats.gaps_p95 <= stats.gaps_max
    assert stats.gaps_max >= 0.1  # the scripted 0.2 s pause lies between two byte arrivals


def test_call_surface(server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=HELLO))
    with httpx.Client(verify=default_tls()) as client, sse_httpx.stream_chat(client, server.url, PAYLOAD) as call:
        assert (call.status_code, call.response, call.http_version, call.attempts) == (None, None, None, 0)
        assert next(call) == HELLO_EVENTS[0]
        assert call.response is not None
        assert call.response.status_code == 200
        assert call.machine is not None
        assert call.machine.response_id == "c1"
        assert list(call) == HELLO_EVENTS[1:]
        assert call.response is None  # closed at Done
    assert list(call) == []


@pytest.mark.parametrize("mode", MODES)
def test_first_byte_and_idle_limits_apply_per_read(mode: str, server_factory: ServerFactory) -> None:
    # The first body byte may take longer than the idle limit; once the body
    # has started, a silence longer than the idle limit ends the call.
    limits = {"first_byte_timeout": 1.0, "idle_timeout": 0.3, "retry": None}
    slow_start = server_factory(Script(steps=[0.6, *HELLO]))
    assert run(mode, slow_start.url, **limits).events == HELLO_EVENTS
    stall = server_factory(Script(steps=[HELLO[0], 0.6, *HELLO[1:]]))
    result = run(mode, stall.url, **limits)
    assert result.events == HELLO_EVENTS[:1]
    assert isinstance(result.error, StreamTimeout)
    assert (result.error.phase, result.error.limit) == ("idle", 0.3)
    record = stall.record_for(0)
    assert record is not None
    assert (record.outcome, record.step) == ("disconnected", 1)


@pytest.mark.parametrize("mode", MODES)
def test_connection_refused_is_retried_then_raised(mode: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run(mode, f"http://127.0.0.1:{port}/v1")
    assert isinstance(result.error, httpx.ConnectError)
    assert result.attempts == 3
    assert result.status_code is None


@pytest.mark.parametrize("mode", MODES)
def test_a_server_that_never_answers(mode: str) -> None:
    # The kernel accepts the connection; nobody ever writes a response head.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        result = run(mode, url, first_byte_timeout=0.3, retry=None)
    assert isinstance(result.error, StreamTimeout)
    assert result.error.phase == "first-byte"
    assert result.error.waited >= 0.3
    assert result.status_code is None


# -- cancellation, seen from the server -----------------------------------------------------


def test_breaking_out_closes_the_connection_and_the_client_stays_usable(server_factory: ServerFactory) -> None:
    server = server_factory(long_stream(), Script(steps=HELLO))
    with httpx.Client(verify=default_tls()) as client:
        with sse_httpx.stream_chat(client, server.url, PAYLOAD) as call:
            for event in call:
                assert event == Delta(0, "t0 ")
                break
        disconnected_early(server)
        with sse_httpx.stream_chat(client, server.url, PAYLOAD) as call:
            assert list(call) == HELLO_EVENTS


def test_closing_a_generator_closes_the_connection(server_factory: ServerFactory) -> None:
    server = server_factory(long_stream())

    def contents(client: httpx.Client) -> Generator[str, None, None]:
        with sse_httpx.stream_chat(client, server.url, PAYLOAD) as call:
            for event in call:
                if isinstance(event, Delta):
                    yield event.content

    with httpx.Client(verify=default_tls()) as client:
        texts = contents(client)
        assert next(texts) == "t0 "
        texts.close()
        disconnected_early(server)


def test_close_and_a_dropped_call_close_the_connection(server_factory: ServerFactory) -> None:
    server = server_factory(long_stream())
    with httpx.Client(verify=default_tls()) as client:
        call = sse_httpx.stream_chat(client, server.url, PAYLOAD)
        assert next(call) == Delta(0, "t0 ")
        call.close()
        assert list(call) == []
        call.close()
        disconnected_early(server, 0)
        for event in sse_httpx.stream_chat(client, server.url, PAYLOAD):
            assert event == Delta(0, "t0 ")
            break
        gc.collect()
        disconnected_early(server, 1)


def test_an_exception_in_the_loop_closes_the_connection(server_factory: ServerFactory) -> None:
    server = server_factory(long_stream())
    with httpx.Client(verify=default_tls()) as client:
        with pytest.raises(KeyboardInterrupt), sse_httpx.stream_chat(client, server.url, PAYLOAD) as call:
            for _ in call:
                raise KeyboardInterrupt
        disconnected_early(server)


def test_a_call_never_iterated_opens_nothing(server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=HELLO))
    with httpx.Client(verify=default_tls()) as client, sse_httpx.stream_chat(client, server.url, PAYLOAD) as call:
        pass
    assert list(call) == []  # a closed call stays closed
    assert (call.status_code, call.attempts) == (None, 0)
    assert server.requests == []


def test_an_async_call_closed_before_iterating_opens_nothing(server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=HELLO))

    async def main() -> list[ChatEvent]:
        async with httpx.AsyncClient(verify=default_tls()) as client:
            call = sse_httpx.astream_chat(client, server.url, PAYLOAD)
            await call.aclose()
            return [e async for e in call]

    assert asyncio.run(main()) == []
    assert server.requests == []


def _mock_client(version: bytes, body: bytes, *, is_async: bool) -> httpx.Client | httpx.AsyncClient:
    """A client whose transport answers every request in memory, as tests
    of applications do (``httpx.MockTransport``): no socket, no httpcore."""

    def answer(request: httpx.Request) -> httpx.Response:
        head = {"Content-Type": "text/event-stream"}
        return httpx.Response(200, headers=head, stream=httpx.ByteStream(body), extensions={"http_version": version})

    transport = httpx.MockTransport(answer)
    return httpx.AsyncClient(transport=transport) if is_async else httpx.Client(transport=transport)


@pytest.mark.parametrize("version", [b"HTTP/1.1", b"HTTP/2"])
def test_a_transport_without_sockets(version: bytes) -> None:
    # Bytes follow [DONE]: over "HTTP/2" the adapter would reset the stream,
    # and over "HTTP/1.1" read the rest; without httpcore's connection it
    # just closes the response.
    body = b"".join(s for s in HELLO if isinstance(s, bytes)) + b": more\n\n"
    client = _mock_client(version, body, is_async=False)
    assert isinstance(client, httpx.Client)
    with client, sse_httpx.stream_chat(client, "http://mock/v1", PAYLOAD) as call:
        assert list(call) == HELLO_EVENTS
        assert call.http_version == version.decode()

    async def main() -> list[ChatEvent]:
        aclient = _mock_client(version, body, is_async=True)
        assert isinstance(aclient, httpx.AsyncClient)
        async with aclient, sse_httpx.astream_chat(aclient, "http://mock/v1", PAYLOAD) as acall:
            return [e async for e in acall]

    assert asyncio.run(main()) == HELLO_EVENTS


def test_async_break_and_generator_close(server_factory: ServerFactory) -> None:
    server = server_factory(long_stream())

    async def contents(client: httpx.AsyncClient) -> AsyncIterator[str]:
        async with sse_httpx.astream_chat(client, server.url, PAYLOAD) as call:
            async for event in call:
                if isinstance(event, Delta):
                    yield event.content

    async def main() -> None:
        async with httpx.AsyncClient(verify=default_tls()) as client:
            async with sse_httpx.astream_chat(client, server.url, PAYLOAD) as call:
                async for event in call:
                    assert event == Delta(0, "t0 ")
                    break
            await asyncio.to_thread(disconnected_early, server, 0)
            texts = contents(client)
            assert await texts.__anext__() == "t0 "
            await texts.aclose()  # type: ignore[attr-defined]
            await asyncio.to_thread(disconnected_early, server, 1)
            call = sse_httpx.astream_chat(client, server.url, PAYLOAD)
            assert await call.__anext__() == Delta(0, "t0 ")
            await call.aclose()
            await call.aclose()
            assert [e async for e in call] == []
            await asyncio.to_thread(disconnected_early, server, 2)

    asyncio.run(main())


def test_asyncio_task_cancellation_closes_the_connection(server_factory: ServerFactory) -> None:
    server = server_factory(long_stream(), Script(steps=HELLO))

    async def main() -> None:
        first = asyncio.Event()
        got: list[ChatEvent] = []

        async def consume(client: httpx.AsyncClient) -> None:
            async with sse_httpx.astream_chat(client, server.url, PAYLOAD) as call:
                async for event in call:
                    got.append(event)
                    first.set()

        async with httpx.AsyncClient(verify=default_tls()) as client:
            task = asyncio.create_task(consume(client))
            await first.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.to_thread(disconnected_early, server)
            assert got[0] == Delta(0, "t0 ")
            # The client is still usable after a cancelled call.
            async with sse_httpx.astream_chat(client, server.url, PAYLOAD) as call:
                assert [e async for e in call] == HELLO_EVENTS

    asyncio.run(main())


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_cancel_scope_closes_the_connection(backend: str, server_factory: ServerFactory) -> None:
    if backend == "trio":
        pytest.importorskip("trio")
    server = server_factory(long_stream())
    got: list[ChatEvent] = []

    async def main() -> None:
        async with httpx.AsyncClient(verify=default_tls()) as client:
            with anyio.move_on_after(0.35):
                async with sse_httpx.astream_chat(client, server.url, PAYLOAD) as call:
                    async for event in call:
                        got.append(event)  # noqa: PERF401 - the loop is what gets cancelled

    anyio.run(main, backend=backend)
    disconnected_early(server)
    assert got[0] == Delta(0, "t0 ")
    assert len(got) < 10


# -- https ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext, Path]:
    return tls_contexts(tmp_path_factory.mktemp("tls"))


@pytest.mark.parametrize("mode", MODES)
def test_https_stream_and_cancellation(
    mode: str, tls: tuple[ssl.SSLContext, ssl.SSLContext, Path], server_factory: ServerFactory
) -> None:
    server_context, client_context, _ = tls
    server = server_factory(Script(steps=HELLO), long_stream(), ssl_context=server_context)
    assert server.url.startswith("https://")
    assert run(mode, server.url, client_kwargs={"verify": client_context}).events == HELLO_EVENTS
    with httpx.Client(verify=client_context) as client, sse_httpx.stream_chat(client, server.url, PAYLOAD) as call:
        assert next(call) == Delta(0, "t0 ")
    disconnected_early(server, 1)


def test_https_certificate_is_verified(
    tls: tuple[ssl.SSLContext, ssl.SSLContext, Path], server_factory: ServerFactory
) -> None:
    server = server_factory(Script(steps=HELLO), ssl_context=tls[0])
    result = run("httpx", server.url, retry=None)  # the default trust store does not know it
    assert isinstance(result.error, httpx.ConnectError)
    assert "CERTIFICATE_VERIFY_FAILED" in str(result.error)


# -- helpers for responses the caller opened ----------------------------------------------


def test_iter_events_on_a_response_stops_at_done(server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=[*HELLO, "hold"]))
    with (
        httpx.Client(verify=default_tls()) as client,
        client.stream("POST", server.url + "/chat/completions", json=PAYLOAD) as response,
    ):
        assert list(sse_httpx.iter_events(response)) == HELLO_EVENTS
    record = server.record_for(0)
    assert record is not None
    assert (record.outcome, record.step) == ("disconnected", len(HELLO))


def test_iter_events_with_a_framing_parser(server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=[b"event: a\ndata: 1\n\n: c\n", b"data: 2"]))
    with httpx.Client(verify=default_tls()) as client, client.stream("GET", server.url) as response:
        events = list(sse_httpx.iter_events(response, EventStreamParser()))
    assert events == [ServerSentEvent("a", "1"), Heartbeat("c"), Truncated("partial-event", 7)]


def test_aiter_events_on_a_response(server_factory: ServerFactory) -> None:
    partial = delta("lo")[:20]
    server = server_factory(Script(steps=[*HELLO, "hold"]), Script(steps=[HELLO[0], partial]))

    async def main() -> None:
        async with httpx.AsyncClient(verify=default_tls()) as client:
            url = server.url + "/chat/completions"
            async with client.stream("POST", url, json=PAYLOAD) as response:
                assert [e async for e in sse_httpx.aiter_events(response)] == HELLO_EVENTS
            async with client.stream("POST", url, json=PAYLOAD) as response:
                machine = ChatStream(200, "text/event-stream")
                events = [e async for e in sse_httpx.aiter_events(response, machine)]
        assert events == [HELLO_EVENTS[0], Truncated("partial-event", len(partial))]

    asyncio.run(main())
