"""Every adapter makes the same thing of the same server stream.

One parametrised test: for each scenario (the realistic ones of
``ssestate.testing``, played at 40x speed, and the shared
``adapter_scenarios.CASES`` that end without an exception and without
a long wait), every adapter
(stdlib, httpx sync, httpx async under asyncio and under trio, trio + h11)
reads the stream from its own ``ScriptServer``, and the event lists and the
final ``Accumulator`` results must be identical across adapters and equal
to what ``ChatStream`` makes of the captured body.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Iterator

import pytest

pytest.importorskip("httpx")
pytest.importorskip("trio")
pytest.importorskip("h11")

from adapter_scenarios import (
    ADAPTERS,
    CASES,
    HELLO,
    HELLO_EVENTS,
    PAYLOAD,
    Case,
    ServerFactory,
    reference,
    run,
    running_servers,
    summary,
)

from ssestate import RemoteProtocolError
from ssestate.testing import SCENARIOS, Script, Step, expected_outcome, scenario

pytestmark = pytest.mark.network

SEED = 11
SPEED = 40.0


def realistic(name: str) -> Case:
    script = scenario(name, seed=SEED, speed=SPEED)
    expected = reference(script.body(), script.status, script.content_type)
    return Case(f"scenario-{name}", (script,), tuple(expected), kwargs={"retry": None})


# The cases that mostly wait (timeouts, long pauses) are left to each
# adapter's own test file.
_SLOW = {"heartbeats-through-silence", "slow-first-byte-within", "first-byte-timeout-is-retried"}
ALL: tuple[Case, ...] = (
    *(realistic(name) for name in SCENARIOS),
    *(case for case in CASES if case.raises is None and case.name not in _SLOW),
)


@pytest.fixture
def server_factory() -> Iterator[ServerFactory]:
    yield from running_servers()


@pytest.mark.parametrize("case", ALL, ids=[c.name for c in ALL])
def test_every_adapter_gives_the_same_result(case: Case, server_factory: ServerFactory) -> None:
    results = {}
    shared = server_factory(*case.scripts) if len(case.scripts) == 1 else None
    for adapter in ADAPTERS:
        # A case that answers retries differently needs a fresh request count.
        server = shared or server_factory(*case.scripts)
        results[adapter] = run(adapter, server.url, **case.kwargs)
    for adapter, result in results.items():
        assert result.error is None, (adapter, result.error)
        assert result.events == list(case.expected), adapter
        assert result.attempts == case.attempts, adapter
        assert result.status_code == case.scripts[-1].status, adapter
    summaries = {adapter: summary(result.events) for adapter, result in results.items()}
    assert len(set(map(repr, summaries.values()))) == 1, summaries
    if case.name.startswith("scenario-"):
        outcome = next(iter(summaries.values()))[0]
        assert outcome == expected_outcome(case.name.removeprefix("scenario-"), SEED)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_stats_count_only_the_events_handed_out(adapter: str, server_factory: ServerFactory) -> None:
    # One write completes every event; the caller leaves after two.
    server = server_factory(Script(steps=[b"".join(step for step in HELLO if isinstance(step, bytes))]))
    result = run(adapter, server.url, take=2)
    assert result.events == HELLO_EVENTS[:2]
    assert result.stats.events == 2


BODY = b"".join(step for step in HELLO if isinstance(step, bytes))


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("coding", "body"),
    [
        ("gzip", gzip.compress(BODY)),
        ("deflate", zlib.compress(BODY)),  # as the standard says: a zlib stream
        ("deflate", _raw_deflate(BODY)),  # as some servers write it
    ],
    ids=["gzip", "deflate", "raw-deflate"],
)
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_body_compressed_despite_identity_is_decoded(
    adapter: str, coding: str, body: bytes, server_factory: ServerFactory
) -> None:
    # The request asks for identity; a server that compresses anyway must
    # not have its answer read as compressed bytes (before, the stdlib and
    # trio adapters ended such a stream Truncated, every event lost).
    head = [("Content-Type", "text/event-stream"), ("Content-Encoding", coding)]
    for chunked in (False, True):
        pieces: list[Step] = [body[i : i + 7] for i in range(0, len(body), 7)] if chunked else [body]
        server = server_factory(Script(200, head, pieces, chunked=chunked))
        result = run(adapter, server.url, retry=None)
        assert (result.error, result.events) == (None, HELLO_EVENTS), chunked


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_body_that_does_not_decode_is_a_protocol_error(adapter: str, server_factory: ServerFactory) -> None:
    head = [("Content-Type", "text/event-stream"), ("Content-Encoding", "gzip")]
    server = server_factory(Script(200, head, [BODY], chunked=False))  # not gzip at all
    result = run(adapter, server.url, retry=None)
    assert result.events == []
    assert isinstance(result.error, RemoteProtocolError)
    assert "gzip" in str(result.error) or "Content-Encoding" in str(result.error)


@pytest.mark.parametrize("adapter", ["sync", "trio"])
def test_a_coding_the_adapter_cannot_read_is_a_protocol_error(adapter: str, server_factory: ServerFactory) -> None:
    # (httpx reads the codings it has decoders for itself.)
    head = [("Content-Type", "text/event-stream"), ("Content-Encoding", "br")]
    server = server_factory(Script(200, head, [b"\x1b\x00\x00"], chunked=False))
    result = run(adapter, server.url, retry=None)
    assert result.events == []
    assert isinstance(result.error, RemoteProtocolError)
    assert "Content-Encoding: br" in str(result.error)


@pytest.mark.parametrize("adapter", ["sync", "httpx"])
def test_close_from_another_thread_ends_a_blocked_read(adapter: str, server_factory: ServerFactory) -> None:
    # The way to cancel a blocking call: close() from another thread while
    # the iterating one waits in a read.  The read ends at once, the loop
    # ends without another event, and the server sees the connection go.
    import httpx

    from ssestate.adapters import httpx as sse_httpx
    from ssestate.adapters import sync

    server = server_factory(Script(steps=[HELLO[0], "hold"]))
    client = httpx.Client()
    call = (
        sync.stream_chat(server.url, PAYLOAD, idle_timeout=10)
        if adapter == "sync"
        else sse_httpx.stream_chat(client, server.url, PAYLOAD, idle_timeout=10)
    )
    events: list[object] = []
    errors: list[BaseException] = []
    first = threading.Event()

    def read() -> None:
        try:
            for event in call:
                events.append(event)
                first.set()
        except BaseException as exc:
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    assert first.wait(10)
    time.sleep(0.1)  # the reader is back in its read
    start = time.monotonic()
    call.close()
    reader.join(5)
    ended = time.monotonic() - start
    client.close()
    assert not reader.is_alive()
    assert (events, errors) == ([HELLO_EVENTS[0]], [])
    assert ended < 2.0  # not the 10 s idle limit
    assert server.wait_for(1)[0].outcome == "disconnected"
