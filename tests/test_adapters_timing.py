"""When events come out and when a call ends, the same for every adapter.

The first-byte limit runs from the start of an attempt to the first body
byte, the idle limit from each body byte to the next; any byte resets the
idle clock.  A stream that keeps talking is never cut, however long it
lasts and however long the caller keeps each event; a silence past the limit
always ends the call.  Events come out as soon as their bytes arrived, and
an error behind them right after them.  Each test runs every adapter
(stdlib, httpx sync, httpx async under asyncio and trio, trio + h11)
against the loopback ScriptServer, and how a response ended is read from
the server's side.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("httpx")
pytest.importorskip("trio")

import anyio
import httpx
import trio  # type: ignore[import-untyped, unused-ignore]
from adapter_scenarios import (
    ADAPTERS,
    HELLO,
    HELLO_EVENTS,
    PAYLOAD,
    PING,
    ServerFactory,
    default_tls,
    run,
    running_servers,
)

from ssestate import ChatEvent, Heartbeat, RemoteProtocolError, StreamTimeout
from ssestate.adapters import httpx as sse_httpx
from ssestate.adapters import sync
from ssestate.adapters import trio as sse_trio
from ssestate.testing import Script

pytestmark = pytest.mark.network

HELLO_BYTES = [s for s in HELLO if isinstance(s, bytes)]


@pytest.fixture
def server_factory() -> Iterator[ServerFactory]:
    yield from running_servers()


def slow_caller(adapter: str, url: str, pause: float, **kwargs: Any) -> tuple[list[ChatEvent], BaseException | None]:
    """Run ``adapter``, keeping the first event ``pause`` seconds before
    asking for the next; the events, and the exception that ended the call."""
    events: list[ChatEvent] = []
    kwargs.setdefault("retry", None)
    try:
        if adapter in ("sync", "httpx"):
            with httpx.Client(verify=default_tls()) as client:
                call = (
                    sync.stream_chat(url, PAYLOAD, **kwargs)
                    if adapter == "sync"
                    else sse_httpx.stream_chat(client, url, PAYLOAD, **kwargs)
                )
                with call:
                    for event in call:
                        events.append(event)
                        if len(events) == 1:
                            time.sleep(pause)
        else:

            async def main() -> None:
                async with httpx.AsyncClient(verify=default_tls()) as client:
                    call = (
                        sse_trio.stream_chat(url, PAYLOAD, **kwargs)
                        if adapter == "trio"
                        else sse_httpx.astream_chat(client, url, PAYLOAD, **kwargs)
                    )
                    async with call:
                        async for event in call:
                            events.append(event)
                            if len(events) == 1:
                                await anyio.sleep(pause)

            if adapter == "httpx-asyncio":
                asyncio.run(main())
            else:
                trio.run(main)
    except Exception as exc:
        return events, exc
    return events, None


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_slow_caller_does_not_cut_a_talking_stream(adapter: str, server_factory: ServerFactory) -> None:
    # The rest of the stream arrives 0.1 s after the first event, while the
    # caller keeps that event for 0.6 s: the bytes came in time (the idle
    # limit is 0.2 s), so nothing times out when the caller reads them late.
    server = server_factory(Script(steps=[HELLO[0], 0.1, *HELLO[1:]]))
    events, error = slow_caller(adapter, server.url, 0.6, first_byte_timeout=2.0, idle_timeout=0.2)
    assert error is None, repr(error)
    assert events == HELLO_EVENTS


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_slow_caller_still_sees_a_silence(adapter: str, server_factory: ServerFactory) -> None:
    # Here the server is silent for 1.5 s after the first event: when the
    # caller comes back after 0.4 s nothing has arrived, so the call ends.
    server = server_factory(Script(steps=[HELLO[0], 1.5, *HELLO[1:]]))
    events, error = slow_caller(adapter, server.url, 0.4, first_byte_timeout=2.0, idle_timeout=0.2)
    assert isinstance(error, StreamTimeout)
    assert (error.phase, error.limit) == ("idle", 0.2)
    assert error.waited >= 0.4
    assert events == HELLO_EVENTS[:1]
    record = server.record_for(0)
    assert record is not None
    assert (record.outcome, record.step) == ("disconnected", 1)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_stream_that_keeps_talking_outlives_both_limits(adapter: str, server_factory: ServerFactory) -> None:
    # 1.2 s of heartbeats 0.1 s apart: longer than the first-byte limit and
    # four times the idle limit, and never silent for as long as either.
    steps: list[Any] = [HELLO[0]]
    for _ in range(12):
        steps += [0.1, PING]
    server = server_factory(Script(steps=[*steps, *HELLO[1:]]))
    result = run(adapter, server.url, first_byte_timeout=0.5, idle_timeout=0.3, retry=None)
    assert result.error is None, repr(result.error)
    assert result.events == [HELLO_EVENTS[0], *[Heartbeat("ping")] * 12, *HELLO_EVENTS[1:]]


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_no_first_byte_limit_still_leaves_an_idle_limit(adapter: str, server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=[0.5, HELLO[0], 1.5, *HELLO[1:]]))
    result = run(adapter, server.url, first_byte_timeout=None, idle_timeout=0.3, retry=None)
    assert result.events == HELLO_EVENTS[:1]
    assert isinstance(result.error, StreamTimeout)
    assert (result.error.phase, result.error.limit) == ("idle", 0.3)
    record = server.record_for(0)
    assert record is not None
    assert (record.outcome, record.step) == ("disconnected", 2)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_no_idle_limit_leaves_only_the_first_byte_limit(adapter: str, server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=[HELLO[0], 0.5, *HELLO[1:]]))
    result = run(adapter, server.url, first_byte_timeout=0.3, idle_timeout=None, retry=None)
    assert result.error is None, repr(result.error)
    assert result.events == HELLO_EVENTS


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_an_idle_limit_longer_than_the_first_byte_limit(adapter: str, server_factory: ServerFactory) -> None:
    # Once the first byte is in, a pause longer than the first-byte limit but
    # shorter than the idle limit is allowed: nothing may time out early.
    server = server_factory(Script(steps=[HELLO[0], 0.6, *HELLO[1:]]))
    result = run(adapter, server.url, first_byte_timeout=0.3, idle_timeout=1.2, retry=None)
    assert result.error is None, repr(result.error)
    assert result.events == HELLO_EVENTS


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_fault_behind_events_is_raised_without_waiting(adapter: str, server_factory: ServerFactory) -> None:
    # One write holds an event and then a payload that is not JSON; the
    # server then pauses 5 s.  The event comes out, then the error, at once.
    first = HELLO_BYTES[0] + b"data: not json\n\n"
    server = server_factory(Script(steps=[first, 5.0, *HELLO[1:]]))
    result = run(adapter, server.url, retry=None)
    assert result.events == HELLO_EVENTS[:1]
    assert isinstance(result.error, RemoteProtocolError)
    record = server.record_for(0)
    assert record is not None
    assert (record.outcome, record.step) == ("disconnected", 1)
