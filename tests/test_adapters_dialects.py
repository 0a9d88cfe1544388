"""Every adapter speaks every API: the request each expects, its stream read.

For each API of SPEC §3b and each adapter (stdlib, httpx sync, httpx async
under asyncio and under trio, trio + h11), a loopback ``ScriptServer``
records the request (method, path and query, headers, JSON body) and
answers with a stream of that API, written by ``ssestate.Encoder``.  The tests check the request byte for byte where the
API cares, the events and the ``Accumulator``'s result, the stats, the
timeouts, where iteration ends, that the server sees the connection go,
and the retries of HTTP 529, and of 429/503 with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("httpx")
pytest.importorskip("trio")
pytest.importorskip("h11")

import anyio
import httpx
import trio  # type: ignore[import-untyped, unused-ignore]
from adapter_scenarios import (
    ADAPTERS,
    ServerFactory,
    default_tls,
    encoded,
    read_as,
    run,
    running_servers,
)

from ssestate import (
    Accumulator,
    ChatEvent,
    Delta,
    Done,
    Finish,
    RetryPolicy,
    StreamError,
    StreamTimeout,
    Usage,
)
from ssestate.adapters import httpx as sse_httpx
from ssestate.adapters import sync
from ssestate.adapters import trio as sse_trio
from ssestate.testing import Script, ScriptRequest, ScriptServer, Step

pytestmark = pytest.mark.network

DIALECTS = ("openai-chat", "openai-responses", "anthropic", "gemini")
# The adapters whose clocks differ (socket timeouts, httpx's read timeouts
# on asyncio, trio's watchdog): the timeout tests run on these.
TIMED = ("sync", "httpx-asyncio", "trio")
KEY = "sk-test"
JSON_HEAD = [("Content-Type", "application/json")]
NO_WAIT = RetryPolicy(max_retries=2, base_delay=0.0)

PAYLOADS: dict[str, dict[str, Any]] = {
    "openai-chat": {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]},
    "openai-responses": {"model": "gpt-5", "input": "hi", "reasoning": {"effort": "low"}},
    "anthropic": {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]},
    "gemini": {"model": "gemini-2.5-flash", "contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
}
# What each API must receive: path and query, its own headers, the JSON body.
EXPECTED: dict[str, tuple[str, dict[str, str], dict[str, Any]]] = {
    "openai-chat": (
        "/v1/chat/completions",
        {"authorization": f"Bearer {KEY}"},
        {**PAYLOADS["openai-chat"], "stream": True, "stream_options": {"include_usage": True}},
    ),
    "openai-responses": (
        "/v1/responses",
        {"authorization": f"Bearer {KEY}"},
        {**PAYLOADS["openai-responses"], "stream": True},
    ),
    "anthropic": (
        "/v1/messages",
        {"x-api-key": KEY, "anthropic-version": "2023-06-01"},
        {**PAYLOADS["anthropic"], "stream": True},
    ),
    "gemini": (
        "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        {"x-goog-api-key": KEY},
        {"contents": PAYLOADS["gemini"]["contents"]},
    ),
}
COMMON = {"content-type": "application/json", "accept": "text/event-stream", "accept-encoding": "identity"}
API_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "anthropic-version")

COUNTS = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
ANSWER: list[ChatEvent] = [
    Delta(0, "", "assistant"),
    Delta(0, "Hel"),
    Delta(0, "lo"),
    Finish(0, "stop"),
    Usage(3, 2, 5, COUNTS),
    Done(True),
]
# The body Anthropic sends with HTTP 529 (OTHER-APIS.md §2.5).
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_1"}


@pytest.fixture
def server_factory() -> Iterator[ServerFactory]:
    yield from running_servers()


def steps(dialect: str, events: list[ChatEvent] = ANSWER) -> list[bytes]:
    """The stream of ``events`` in ``dialect``, one step per event that
    writes anything (the role comes first, alone)."""
    return encoded(dialect, events)


def call(adapter: str, url: str, dialect: str, **kwargs: Any) -> Any:
    """``adapter_scenarios.run`` with this API's payload, key and dialect."""
    kwargs.setdefault("payload", PAYLOADS.get(dialect))
    return run(adapter, url, api_key=KEY, dialect=dialect, **kwargs)


def check_request(request: ScriptRequest, dialect: str) -> None:
    """The request is the one ``dialect``'s API expects."""
    path, own, body = EXPECTED[dialect]
    assert (request.method, request.path) == ("POST", path)
    assert request.json == body
    for name, value in {**COMMON, **own}.items():
        assert [v for n, v in request.headers if n.lower() == name] == [value], name
    for name in API_HEADERS:
        if name not in own:  # no other API's key or version header
            assert request.header(name) is None, name


def outcome(events: list[ChatEvent]) -> tuple[str, str, str | None, Any]:
    acc = Accumulator()
    for event in events:
        acc.feed(event)
    choice = acc.choices[0]
    return acc.outcome, choice.content, choice.finish_reason, acc.usage


def ended(server: ScriptServer, attempt: int = 0) -> tuple[str, int]:
    record = server.record_for(attempt)
    assert record is not None
    return record.outcome, record.step


# -- the request, the stream, the stats -----------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_each_api_gets_its_request_and_its_stream_is_read(
    adapter: str, dialect: str, server_factory: ServerFactory
) -> None:
    answer = steps(dialect)
    server = server_factory(Script(steps=[answer[0], 0.2, *answer[1:]]))
    result = call(adapter, server.url, dialect)
    (request,) = server.requests
    check_request(request, dialect)
    assert result.error is None, repr(result.error)
    body = b"".join(answer)
    assert result.events == read_as(dialect, body)
    # Gemini has no end marker: the body's end completes it.
    assert result.events[-1] == Done(dialect != "gemini")
    acc_outcome, content, finish, usage = outcome(result.events)
    assert (acc_outcome, content, finish) == ("complete", "Hello", "stop")
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (3, 2, 5)
    assert (result.status_code, result.attempts) == (200, 1)
    stats = result.stats
    assert (stats.bytes, stats.events) == (len(body), len(result.events))
    assert stats.ttfb is not None
    assert stats.ttft is not None
    assert stats.total is not None
    assert stats.ttfb <= stats.ttft <= stats.total


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_auto_asks_like_chat_completions_and_reads_any_answer(adapter: str, server_factory: ServerFactory) -> None:
    answer = steps("anthropic")
    server = server_factory(Script(steps=[*answer]))
    result = call(adapter, server.url, "auto", payload=PAYLOADS["openai-chat"])
    (request,) = server.requests
    check_request(request, "openai-chat")
    assert result.events == read_as("anthropic", b"".join(answer))
    assert outcome(result.events)[:3] == ("complete", "Hello", "stop")


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_bad_dialects_and_models_fail_at_once(adapter: str) -> None:
    url = "http://127.0.0.1:1/v1"
    with pytest.raises(ValueError, match="dialect must be one of"):
        run(adapter, url, dialect="claude")
    with pytest.raises(ValueError, match=r"payload\['model'\]"):
        run(adapter, url, dialect="gemini", payload={"contents": []})


# -- where iteration ends -------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["openai-chat", "openai-responses", "anthropic"])
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_the_end_marker_ends_the_call_while_the_server_holds_on(
    adapter: str, dialect: str, server_factory: ServerFactory
) -> None:
    # [DONE], response.completed, message_stop: the call ends there and
    # hangs up while the server still holds the body open.
    answer = steps(dialect)
    server = server_factory(Script(steps=[*answer, "hold"]))
    result = call(adapter, server.url, dialect)
    assert result.error is None, repr(result.error)
    assert result.events == read_as(dialect, b"".join(answer))
    assert result.events[-1] == Done(True)
    assert ended(server) == ("disconnected", len(answer))


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_gemini_ends_only_when_the_server_closes(adapter: str, server_factory: ServerFactory) -> None:
    # No end marker: every event is handed out, then the call waits for the
    # end of the body (a raw JSON error may still come after STOP), and a
    # server that holds the connection open meets the idle limit.
    answer = steps("gemini")
    server = server_factory(Script(steps=[*answer, "hold"]))
    result = call(adapter, server.url, "gemini", idle_timeout=0.3)
    assert result.events == read_as("gemini", b"".join(answer), end=False)
    assert isinstance(result.error, StreamTimeout)
    assert (result.error.phase, result.error.limit) == ("idle", 0.3)
    assert ended(server) == ("disconnected", len(answer))


# -- timeouts ---------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("adapter", TIMED)
def test_first_byte_timeout(adapter: str, dialect: str, server_factory: ServerFactory) -> None:
    server = server_factory(Script(steps=[3.0, *steps(dialect)]))
    result = call(adapter, server.url, dialect, first_byte_timeout=0.3, retry=None)
    assert result.events == []
    assert isinstance(result.error, StreamTimeout)
    assert (result.error.phase, result.error.limit) == ("first-byte", 0.3)
    assert result.error.waited >= 0.3
    assert ended(server) == ("disconnected", 0)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("adapter", TIMED)
def test_idle_timeout_after_output(adapter: str, dialect: str, server_factory: ServerFactory) -> None:
    answer = steps(dialect)
    server = server_factory(Script(steps=[answer[0], answer[1], 3.0, *answer[2:]]))
    result = call(adapter, server.url, dialect, idle_timeout=0.3)
    assert result.events == read_as(dialect, answer[0] + answer[1], end=False)
    assert result.events[-1] == Delta(0, "Hel")
    assert isinstance(result.error, StreamTimeout)
    assert (result.error.phase, result.error.limit) == ("idle", 0.3)
    assert result.attempts == 1  # output was handed out: never retried
    assert ended(server) == ("disconnected", 2)


# -- closing and cancelling, seen from the server ----------------------------------------------


def long_answer(dialect: str) -> list[Step]:
    """A stream of that API that would take 10 s: the role, then 100 texts 0.1 s apart."""
    events: list[ChatEvent] = [Delta(0, "", "assistant"), *(Delta(0, f"t{i} ") for i in range(100))]
    answer = steps(dialect, [*events, Finish(0, "stop"), Done(True)])
    played: list[Step] = [answer[0]]
    for data in answer[1:]:
        played += [data, 0.1]
    return played


def is_text(event: ChatEvent) -> bool:
    return isinstance(event, Delta) and bool(event.content)


def first_output(adapter: str, url: str, dialect: str) -> ChatEvent:
    """Iterate a call until its first text, then break out of the loop."""
    kwargs: dict[str, Any] = {"api_key": KEY, "dialect": dialect}
    payload = PAYLOADS[dialect]
    if adapter == "sync":
        with sync.stream_chat(url, payload, **kwargs) as blocking:
            return next(e for e in blocking if is_text(e))
    if adapter == "httpx":
        with httpx.Client(verify=default_tls()) as client, sse_httpx.stream_chat(client, url, payload, **kwargs) as hc:
            return next(e for e in hc if is_text(e))

    async def main() -> ChatEvent:
        async with httpx.AsyncClient(verify=default_tls()) as client:
            ac: sse_trio.TrioCall | sse_httpx.AsyncHttpxCall = (
                sse_trio.stream_chat(url, payload, **kwargs)
                if adapter == "trio"
                else sse_httpx.astream_chat(client, url, payload, **kwargs)
            )
            async with ac:
                async for event in ac:
                    if is_text(event):
                        return event
        raise AssertionError("no output")

    if adapter == "httpx-asyncio":
        return asyncio.run(main())
    event: ChatEvent = trio.run(main)
    return event


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_breaking_out_closes_the_connection(adapter: str, dialect: str, server_factory: ServerFactory) -> None:
    played = long_answer(dialect)
    server = server_factory(Script(steps=played))
    assert first_output(adapter, server.url, dialect) == Delta(0, "t0 ")
    outcome_, step = ended(server)
    assert outcome_ == "disconnected"
    assert step < len(played) // 4  # long before the end


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("adapter", ["httpx-asyncio", "httpx-trio", "trio"])
def test_cancellation_closes_the_connection(adapter: str, dialect: str, server_factory: ServerFactory) -> None:
    played = long_answer(dialect)
    server = server_factory(Script(steps=played))
    got: list[ChatEvent] = []
    payload = PAYLOADS[dialect]

    async def main() -> None:
        async with httpx.AsyncClient(verify=default_tls()) as client:
            ac = (
                sse_trio.stream_chat(server.url, payload, api_key=KEY, dialect=dialect)
                if adapter == "trio"
                else sse_httpx.astream_chat(client, server.url, payload, api_key=KEY, dialect=dialect)
            )
            with anyio.move_on_after(0.5) as scope:
                async with ac:
                    async for event in ac:
                        got.append(event)  # noqa: PERF401 - the loop is what gets cancelled
            assert scope.cancelled_caught

    asyncio.run(main()) if adapter == "httpx-asyncio" else trio.run(main)
    assert got[0] == Delta(0, "", "assistant")
    assert Delta(0, "t0 ") in got
    outcome_, step = ended(server)
    assert outcome_ == "disconnected"
    assert step < len(played) // 4


# -- retries ------------------------------------------------------------------------------------


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_http_529_before_the_stream_is_retried(adapter: str, server_factory: ServerFactory) -> None:
    answer = steps("anthropic")
    overloaded = Script(529, JSON_HEAD, [json.dumps(OVERLOADED).encode()], chunked=False)
    server = server_factory(overloaded, Script(steps=[*answer]))
    result = call(adapter, server.url, "anthropic", retry=NO_WAIT)
    assert result.events == read_as("anthropic", b"".join(answer))
    assert (result.attempts, result.status_code) == (2, 200)
    for request in server.requests:
        check_request(request, "anthropic")


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_http_529_on_the_last_attempt_is_handed_out(adapter: str, server_factory: ServerFactory) -> None:
    server = server_factory(Script(529, JSON_HEAD, [json.dumps(OVERLOADED).encode()], chunked=False))
    result = call(adapter, server.url, "anthropic", retry=NO_WAIT)
    assert result.events == [StreamError(529, None, "Overloaded", "overloaded_error", OVERLOADED)]
    assert (result.attempts, len(server.requests)) == (3, 3)


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_gemini_retry_after_is_honoured(adapter: str, status: int, server_factory: ServerFactory) -> None:
    # No backoff of its own (base_delay 0): the wait between the attempts
    # is the one the server asked for.
    text = "RESOURCE_EXHAUSTED" if status == 429 else "UNAVAILABLE"
    error = {"error": {"code": status, "message": "Try again later.", "status": text}}
    refused = Script(status, [*JSON_HEAD, ("Retry-After", "0.5")], [json.dumps(error).encode()], chunked=False)
    answer = steps("gemini")
    server = server_factory(refused, Script(steps=[*answer]))
    result = call(adapter, server.url, "gemini", retry=RetryPolicy(max_retries=1, base_delay=0.0))
    assert result.events == read_as("gemini", b"".join(answer))
    assert result.attempts == 2
    first, second = server.record_for(0), server.record_for(1)
    assert first is not None
    assert second is not None
    assert second.time - first.time >= 0.45
    for request in server.requests:
        check_request(request, "gemini")
