"""The trio adapter (trio streams + h11) against the loopback ScriptServer.

The scenario list is ``adapter_scenarios.CASES``, the one every adapter
passes.  Claims about connections are checked from the server's side: the
server records how each response ended, so no test times the client.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

trio = pytest.importorskip("trio")
pytest.importorskip("h11")

from adapter_scenarios import (  # noqa: E402
    CASES,
    HELLO,
    HELLO_EVENTS,
    PAYLOAD,
    Case,
    ServerFactory,
    check_case,
    long_stream,
    run,
    running_servers,
    tls_contexts,
)

from ssestate import ChatEvent, Delta, StreamTimeout  # noqa: E402
from ssestate.adapters import trio as sse_trio  # noqa: E402
from ssestate.testing import Script, ScriptServer  # noqa: E402

pytestmark = pytest.mark.network


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


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case, server_factory: ServerFactory) -> None:
    server = server_factory(*case.scripts)
    check_case(case, run("trio", server.url, **case.kwargs), server)


def test_request_shape(server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=HELLO))
    result = run("trio", server.url + "/", api_key="sk-test", headers={"X-Trace": "t1"})
    assert result.events == HELLO_EVENTS
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.json == {**PAYLOAD, "stream": True, "stream_options": {"include_usage": True}}
    assert request.header("Host") == f"127.0.0.1:{server.port}"
    assert request.header("Authorization") == "Bearer sk-test"
    assert request.header("Accept") == "text/event-stream"
    assert request.header("Accept-Encoding") == "identity"
    assert request.header("Content-Type") == "application/json"
    assert request.header("X-Trace") == "t1"
    assert request.header("Content-Length") == str(len(request.body))


def test_bad_arguments_fail_at_once() -> None:
    with pytest.raises(ValueError, match="base_url"):
        sse_trio.stream_chat("ftp://example.com", PAYLOAD)
    with pytest.raises(ValueError, match="first_byte_timeout"):
        sse_trio.stream_chat("http://127.0.0.1:1/v1", PAYLOAD, first_byte_timeout=-1)
    with pytest.raises(ValueError, match="receive_size"):
        sse_trio.stream_chat("http://127.0.0.1:1/v1", PAYLOAD, receive_size=0)


def test_stats_and_head(server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=[HELLO[0], 0.2, *HELLO[1:]]))
    result = run("trio", server.url)
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


def test_small_reads_give_the_same_events(server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=HELLO))
    assert run("trio", server.url, receive_size=3).events == HELLO_EVENTS


def test_first_byte_and_idle_limits_apply_per_read(server_factory: ServerFactory) -> None:
    limits = {"first_byte_timeout": 1.0, "idle_timeout": 0.3, "retry": None}
    slow_start = server_factory(Script(steps=[0.6, *HELLO]))
    assert run("trio", slow_start.url, **limits).events == HELLO_EVENTS
    stall = server_factory(Script(steps=[HELLO[0], 0.6, *HELLO[1:]]))
    result = run("trio", stall.url, **limits)
    assert result.events == HELLO_EVENTS[:1]
    assert isinstance(result.error, StreamTimeout)
    assert (result.error.phase, result.error.limit) == ("idle", 0.3)


def test_connection_refused_is_retried_then_raised() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run("trio", f"http://127.0.0.1:{port}/v1")
    assert isinstance(result.error, OSError)
    assert result.attempts == 3
    assert result.status_code is None


def test_a_server_that_never_answers() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        result = run("trio", url, first_byte_timeout=0.3, retry=None)
    assert isinstance(result.error, StreamTimeout)
    assert result.error.phase == "first-byte"
    assert result.error.waited >= 0.3


# -- cancellation, seen from the server -----------------------------------------------------


def test_a_cancel_scope_closes_the_connection(server_factory: ServerFactory) -> None:
    server = server_factory(long_stream())
    got: list[ChatEvent] = []

    async def main() -> None:
        with trio.move_on_after(0.35) as scope:
            async with sse_trio.stream_chat(server.url, PAYLOAD) as call:
                async for event in call:
                    got.append(event)  # noqa: PERF401 - the loop is what gets cancelled
        assert scope.cancelled_caught

    trio.run(main)
    disconnected_early(server)
    assert got[0] == Delta(0, "t0 ")
    assert len(got) < 10


def test_cancelled_from_another_task(server_factory: ServerFactory) -> None:
    server = server_factory(long_stream())

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            first = trio.Event()

            async def consume() -> None:
                async with sse_trio.stream_chat(server.url, PAYLOAD) as call:
                    async for _ in call:
                        first.set()

            nursery.start_soon(consume)
            await first.wait()
            nursery.cancel_scope.cancel()

    trio.run(main)
    disconnected_early(server)


def test_break_aclose_and_exceptions_close_the_connection(server_factory: ServerFactory) -> None:
    server = server_factory(long_stream())

    async def main() -> None:
        async with sse_trio.stream_chat(server.url, PAYLOAD) as call:
            async for event in call:
                assert event == Delta(0, "t0 ")
                break
        await trio.to_thread.run_sync(disconnected_early, server, 0)
        call = sse_trio.stream_chat(server.url, PAYLOAD)
        assert await call.__anext__() == Delta(0, "t0 ")
        await call.aclose()
        await call.aclose()
        assert [e async for e in call] == []
        await trio.to_thread.run_sync(disconnected_early, server, 1)
        with pytest.raises(KeyboardInterrupt):
            async with sse_trio.stream_chat(server.url, PAYLOAD) as call:
                async for _ in call:
                    raise KeyboardInterrupt
        await trio.to_thread.run_sync(disconnected_early, server, 2)

    trio.run(main)


def test_a_retry_wait_is_cancellable(server_factory: ServerFactory) -> None:
    limited = Script(429, [("Content-Type", "application/json"), ("Retry-After", "30")], [b"{}"], chunked=False)
    server = server_factory(limited)

    async def main() -> None:
        with trio.move_on_after(0.3) as scope:
            async with sse_trio.stream_chat(server.url, PAYLOAD) as call:
                async for _ in call:
                    pass  # pragma: no cover - the only response is retried
        assert scope.cancelled_caught
        assert call.attempts == 1

    trio.run(main)
    assert len(server.requests) == 1


def test_a_call_never_iterated_opens_nothing(server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=HELLO))

    async def main() -> None:
        async with sse_trio.stream_chat(server.url, PAYLOAD) as call:
            pass
        assert (call.status_code, call.attempts, call.machine) == (None, 0, None)

    trio.run(main)
    assert server.requests == []


# -- https ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext, Path]:
    return tls_contexts(tmp_path_factory.mktemp("tls"))


def test_https_stream_and_cancellation(
    tls: tuple[ssl.SSLContext, ssl.SSLContext, Path], server_factory: ServerFactory
) -> None:
    server_context, client_context, _ = tls
    server = server_factory(Script(steps=HELLO), long_stream(), ssl_context=server_context)
    assert server.url.startswith("https://")
    assert run("trio", server.url, ssl_context=client_context).events == HELLO_EVENTS

    async def main() -> None:
        async with sse_trio.stream_chat(server.url, PAYLOAD, ssl_context=client_context) as call:
            assert await call.__anext__() == Delta(0, "t0 ")

    trio.run(main)
    disconnected_early(server, 1)


def test_https_certificate_is_verified(
    tls: tuple[ssl.SSLContext, ssl.SSLContext, Path], server_factory: ServerFactory
) -> None:
    server = server_factory(Script(steps=HELLO), ssl_context=tls[0])
    result = run("trio", server.url, retry=None)  # the default trust store does not know it
    assert isinstance(result.error, trio.BrokenResourceError)
    assert isinstance(result.error.__cause__, ssl.SSLCertVerificationError)
    assert server.requests == []
