"""Scenarios and runners shared by the adapter tests.

A ``Case`` is what a loopback ``ScriptServer`` plays (one script per
request: a retry gets the next one) and what any adapter must make of it:
the events, the number of attempts, the exception that ends the call (if
any) and how the server saw the response end.  ``CASES`` covers the
situations every adapter must handle alike: bursts and drips, a slow first
byte, heartbeats through a silence, a connection dropped mid-event, a body
without ``[DONE]``, ``[DONE]`` with the connection held open, 429 then
success, 401, 503 retried, an HTML error page, a JSON downgrade, first-byte
and idle timeouts, and a payload that is not JSON.

``run(adapter, url, **kwargs)`` runs one adapter (``ADAPTERS``) to the end
and returns a ``Result``; the third-party libraries are imported only by
the runners that need them.  ``running_servers`` is the body of a
``server_factory`` fixture.  ``encoded`` writes events as the stream of any
API (SPEC §3b), ``read_as`` reads one back.  ``tls_contexts`` makes a throwaway certificate
with the ``openssl`` command (or skips).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import shutil
import ssl
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ssestate import (
    DONE_BYTES,
    Accumulator,
    ChatEvent,
    ChatStream,
    Delta,
    Done,
    Encoder,
    Finish,
    Heartbeat,
    RemoteProtocolError,
    RetryPolicy,
    Sentinel,
    StreamError,
    StreamStats,
    StreamTimeout,
    Truncated,
    Usage,
    encode_chunk,
)
from ssestate.testing import Script, ScriptRequest, ScriptServer, Step

__all__ = [
    "ADAPTERS",
    "CASES",
    "FAST_RETRY",
    "HELLO",
    "HELLO_EVENTS",
    "PAYLOAD",
    "PING",
    "Case",
    "OVERLOADED_EVENT",
    "Result",
    "ServerFactory",
    "check_case",
    "default_tls",
    "delta",
    "encoded",
    "long_stream",
    "read_as",
    "reference",
    "run",
    "serve",
    "running_servers",
    "summary",
    "tls_contexts",
]

PAYLOAD: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
FAST_RETRY = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)
JSON_HEAD = [("Content-Type", "application/json")]


def delta(text: str, role: str | None = None) -> bytes:
    """One content chunk of choice 0."""
    d: dict[str, str] = {"content": text}
    if role:
        d["role"] = role
    return encode_chunk({"id": "c1", "choices": [{"index": 0, "delta": d, "finish_reason": None}]})


FINISH = encode_chunk({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
USAGE = encode_chunk(
    {"id": "c1", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
)
PING = b": ping\n\n"
HELLO: list[Step] = [delta("Hel", "assistant"), delta("lo"), FINISH, USAGE, DONE_BYTES]
HELLO_EVENTS: list[ChatEvent] = [
    Delta(0, "Hel", "assistant"),
    Delta(0, "lo"),
    Finish(0, "stop"),
    Usage(3, 2, 5, {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}),
    Done(True),
]


def reference(body: bytes, status: int = 200, content_type: str = "text/event-stream") -> list[ChatEvent]:
    """What ChatStream makes of a whole captured body, up to Done/CLOSED."""
    machine = ChatStream(status, content_type)
    machine.receive_data(body)
    machine.receive_data(b"")
    out: list[ChatEvent] = []
    while not isinstance(event := machine.next_event(), Sentinel):  # CLOSED: NEED_DATA cannot follow the end
        out.append(event)
        if isinstance(event, Done):
            break
    return out


def encoded(dialect: str, events: list[ChatEvent]) -> list[bytes]:
    """``events`` written as ``dialect``'s stream by ``Encoder``: one piece
    per event that writes anything."""
    encoder = Encoder(dialect, model="m", response_id="r1")
    return [data for data in map(encoder.feed, events) if data]


def read_as(dialect: str, body: bytes, *, end: bool = True) -> list[ChatEvent]:
    """What ``ChatStream(dialect=...)`` makes of a 200 event stream's
    ``body`` (and of its end, with ``end``)."""
    machine = ChatStream(200, "text/event-stream", dialect=dialect)
    return machine.feed(body) + (machine.feed(b"") if end else [])


# Anthropic's error event for an overloaded API, inside a 200 stream
# (OTHER-APIS.md §2.5): the same failure as its HTTP 529.
OVERLOADED_EVENT = (
    b'event: error\ndata: {"type": "error", "error": {"details": null, "type": "overloaded_error", '
    b'"message": "Overloaded"}, "request_id": "req_2"}\n\n'
)


def long_stream(count: int = 100, pause: float = 0.1) -> Script:
    """A stream that would take ``count * pause`` seconds to finish."""
    steps: list[Step] = []
    for i in range(count):
        steps += [delta(f"t{i} "), pause]
    return Script(steps=[*steps, FINISH, DONE_BYTES])


# -- servers ------------------------------------------------------------------------


def serve(*scripts: Script, hold_cap: float = 30.0, ssl_context: ssl.SSLContext | None = None) -> ScriptServer:
    """A server answering request n with scripts[n] (the last one repeats)."""

    def handler(request: ScriptRequest) -> Script:
        return scripts[min(request.attempt, len(scripts) - 1)]

    return ScriptServer(handler, hold_cap=hold_cap, ssl_context=ssl_context)


ServerFactory = Callable[..., ScriptServer]


def running_servers() -> Iterator[ServerFactory]:
    """The body of a ``server_factory`` fixture: yields
    ``make(*scripts, hold_cap=..., ssl_context=...)``, which starts a server;
    every one is closed when the generator is resumed or closed."""
    started: list[ScriptServer] = []

    def make(*scripts: Script, hold_cap: float = 30.0, ssl_context: ssl.SSLContext | None = None) -> ScriptServer:
        server = serve(*scripts, hold_cap=hold_cap, ssl_context=ssl_context)
        started.append(server)
        return server.start()

    try:
        yield make
    finally:
        for server in started:
            server.close()


def tls_contexts(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext, Path]:
    """A throwaway certificate for 127.0.0.1: (server context, client
    context, certificate file).  Skips the test without ``openssl``."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    command = ["openssl", "req", "-x509", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    command += ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    command += ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)]
    subprocess.run(command, check=True, capture_output=True)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(cert)), cert


# -- cases ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """One scripted situation and what every adapter must make of it.

    Attributes:
        name: test id.
        scripts: the response to request n is scripts[n] (the last repeats).
        expected: the events handed out before the call ended.
        attempts: requests the call makes.
        kwargs: arguments for ``stream_chat`` (``retry`` defaults to
            ``FAST_RETRY``).
        raises: the exception that ends the call, if any.
        phase: for ``StreamTimeout``, the phase that fired.
        server_end: ``(outcome, step)`` of the server's record of the last
            request (step None: any), when it matters.
    """

    name: str
    scripts: tuple[Script, ...]
    expected: tuple[ChatEvent, ...]
    attempts: int = 1
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    raises: type[BaseException] | None = None
    phase: str | None = None
    server_end: tuple[str, int | None] | None = None


def _cases() -> tuple[Case, ...]:
    body = b"".join([*(delta(f"w{i} ") for i in range(40)), FINISH, USAGE, DONE_BYTES])
    drip: list[Step] = [body[i : i + 7] for i in range(0, len(body), 7)]
    partial = delta("lo")[:20]
    page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    error_401 = {
        "error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}
    }
    error_503 = {"error": {"message": "overloaded", "type": "server_error", "code": None}}
    completion = {
        "id": "c9",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    downgrade = _json(completion)
    heartbeats: list[Step] = [HELLO[0]]
    for _ in range(3):
        heartbeats += [0.2, PING]
    heartbeats += [0.1, *HELLO[1:]]
    limited = Script(429, [*JSON_HEAD, ("Retry-After", "0")], [b'{"error":{"message":"slow down"}}'], chunked=False)
    return (
        Case(
            "plain", (Script(steps=[HELLO[0], 0.05, *HELLO[1:]]),), tuple(HELLO_EVENTS), server_end=("complete", None)
        ),
        Case("burst", (Script(steps=[body[:1500], body[1500:]]),), tuple(reference(body))),
        Case("drip", (Script(steps=drip),), tuple(reference(body))),
        Case("content-length", (Script(steps=[body], chunked=False),), tuple(reference(body))),
        Case(
            "slow-first-byte-within",
            (Script(steps=[0.3, *HELLO]),),
            tuple(HELLO_EVENTS),
            kwargs={"first_byte_timeout": 1.0, "idle_timeout": 0.1},
        ),
        Case(
            "heartbeats-through-silence",
            (Script(steps=heartbeats),),
            (HELLO_EVENTS[0], *[Heartbeat("ping")] * 3, *HELLO_EVENTS[1:]),
            kwargs={"idle_timeout": 0.5},
        ),
        Case(
            "close-mid-event",
            (Script(steps=[HELLO[0], partial, "abort"]),),
            (HELLO_EVENTS[0], Truncated("partial-event", len(partial))),
            server_end=("aborted", None),
        ),
        Case(
            "lost-before-output-is-retried",
            (Script(steps=[PING, b"data: {", "abort"]), Script(steps=HELLO)),
            (Heartbeat("ping"), *HELLO_EVENTS),
            attempts=2,
        ),
        Case(
            # The connection closes before the Content-Length declared (the
            # stdlib's read1 reports that as an ordinary end).
            "short-content-length-before-output-is-retried",
            (
                Script(
                    200, [("Content-Type", "text/event-stream"), ("Content-Length", "500")], [PING, b"data: {", "abort"]
                ),
                Script(steps=HELLO),
            ),
            (Heartbeat("ping"), *HELLO_EVENTS),
            attempts=2,
        ),
        Case("eof-before-done", (Script(steps=HELLO[:2]),), (*HELLO_EVENTS[:2], Truncated("eof-before-done", 0))),
        Case(
            "done-then-held-open",
            (Script(steps=[*HELLO, "hold"]),),
            tuple(HELLO_EVENTS),
            server_end=("disconnected", len(HELLO)),
        ),
        Case("429-then-success", (limited, Script(steps=HELLO)), tuple(HELLO_EVENTS), 2, {"retry": RetryPolicy()}),
        Case(
            "401-not-retried",
            (Script(401, JSON_HEAD, [_json(error_401)], chunked=False),),
            (StreamError(401, "invalid_api_key", "Incorrect API key provided", "invalid_request_error", error_401),),
        ),
        Case(
            "503-retried-then-reported",
            (Script(503, JSON_HEAD, [_json(error_503)]),),
            (StreamError(503, None, "overloaded", "server_error", error_503),),
            attempts=3,
        ),
        Case(
            "html-error-page",
            (Script(502, [("Content-Type", "text/html")], [page]),),
            tuple(reference(page, 502, "text/html")),
            kwargs={"retry": None},
        ),
        Case(
            "json-downgrade",
            (Script(200, JSON_HEAD, [downgrade], chunked=False),),
            tuple(reference(downgrade, 200, "application/json")),
        ),
        Case(
            "lenient-skips-non-json",
            (Script(steps=[HELLO[0], b"data: not json\n\n", *HELLO[1:]]),),
            tuple(HELLO_EVENTS),
            kwargs={"strict": False},
        ),
        Case(
            "first-byte-timeout-is-retried",
            (Script(steps=[3.0, *HELLO]), Script(steps=HELLO)),
            tuple(HELLO_EVENTS),
            attempts=2,
            kwargs={"first_byte_timeout": 0.3},
        ),
        Case(
            "first-byte-timeout",
            (Script(steps=[3.0, *HELLO]),),
            (),
            kwargs={"first_byte_timeout": 0.3, "retry": None},
            raises=StreamTimeout,
            phase="first-byte",
            server_end=("disconnected", 0),
        ),
        Case(
            "idle-timeout-after-output",
            (Script(steps=[HELLO[0], 1.3, *HELLO[1:]]),),
            (HELLO_EVENTS[0],),
            kwargs={"idle_timeout": 0.3},
            raises=StreamTimeout,
            phase="idle",
            server_end=("disconnected", 1),
        ),
        Case(
            "strict-raises-on-non-json",
            (Script(steps=[HELLO[0], b"data: not json\n\n", 5.0, *HELLO[1:]]),),
            (HELLO_EVENTS[0],),
            raises=RemoteProtocolError,
            server_end=("disconnected", 2),
        ),
    )


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


CASES: tuple[Case, ...] = _cases()


# -- running adapters ------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    """What one call produced.

    Attributes:
        events: every event handed out.
        error: the exception that ended the iteration, or None.
        attempts, status_code, headers, stats: the call's, read at the end.
        http_version: "HTTP/1.1", "HTTP/2" where the adapter knows it.
    """

    events: list[ChatEvent]
    error: BaseException | None
    attempts: int
    status_code: int | None
    headers: list[tuple[str, str]]
    stats: StreamStats
    http_version: str | None = None


def _result(events: list[ChatEvent], error: BaseException | None, call: Any, version: str | None) -> Result:
    return Result(events, error, call.attempts, call.status_code, list(call.headers), call.stats, version)


def run_sync(url: str, *, payload: Mapping[str, Any] = PAYLOAD, take: int = -1, **kwargs: Any) -> Result:
    from ssestate.adapters import sync

    events: list[ChatEvent] = []
    error: BaseException | None = None
    with sync.stream_chat(url, payload, **kwargs) as call:
        try:
            for event in call:
                events.append(event)  # keep what came before an error
                if len(events) == take:
                    break
        except Exception as exc:
            error = exc
    return _result(events, error, call, "HTTP/1.1")


@functools.cache
def default_tls() -> ssl.SSLContext:
    """One default client TLS context for every httpx client the tests make
    (building one per client, as httpx does, costs tens of milliseconds)."""
    return ssl.create_default_context()


def run_httpx(
    url: str,
    *,
    payload: Mapping[str, Any] = PAYLOAD,
    client_kwargs: Mapping[str, Any] | None = None,
    take: int = -1,
    **kwargs: Any,
) -> Result:
    import httpx

    from ssestate.adapters import httpx as sse_httpx

    events: list[ChatEvent] = []
    error: BaseException | None = None
    with (
        httpx.Client(**{"verify": default_tls(), **(client_kwargs or {})}) as client,
        sse_httpx.stream_chat(client, url, payload, **kwargs) as call,
    ):
        try:
            for event in call:
                events.append(event)  # keep what came before an error
                if len(events) == take:
                    break
        except Exception as exc:
            error = exc
        version = call.http_version
    return _result(events, error, call, version)


async def arun_httpx(
    url: str,
    *,
    payload: Mapping[str, Any] = PAYLOAD,
    client_kwargs: Mapping[str, Any] | None = None,
    take: int = -1,
    **kwargs: Any,
) -> Result:
    """``run_httpx`` with an ``httpx.AsyncClient`` (under asyncio or trio)."""
    import httpx

    from ssestate.adapters import httpx as sse_httpx

    events: list[ChatEvent] = []
    error: BaseException | None = None
    async with (
        httpx.AsyncClient(**{"verify": default_tls(), **(client_kwargs or {})}) as client,
        sse_httpx.astream_chat(client, url, payload, **kwargs) as call,
    ):
        try:
            async for event in call:
                events.append(event)  # keep what came before an error
                if len(events) == take:
                    break
        except Exception as exc:
            error = exc
        version = call.http_version
    return _result(events, error, call, version)


def run_httpx_asyncio(url: str, **kwargs: Any) -> Result:
    import asyncio

    return asyncio.run(arun_httpx(url, **kwargs))


def run_httpx_trio(url: str, **kwargs: Any) -> Result:
    import trio  # type: ignore[import-untyped, unused-ignore]

    result: Result = trio.run(functools.partial(arun_httpx, url, **kwargs))
    return result


async def arun_trio(url: str, *, payload: Mapping[str, Any] = PAYLOAD, take: int = -1, **kwargs: Any) -> Result:
    from ssestate.adapters import trio as sse_trio

    events: list[ChatEvent] = []
    error: BaseException | None = None
    async with sse_trio.stream_chat(url, payload, **kwargs) as call:
        try:
            async for event in call:
                events.append(event)  # keep what came before an error
                if len(events) == take:
                    break
        except Exception as exc:
            error = exc
    return _result(events, error, call, "HTTP/1.1")


def run_trio(url: str, **kwargs: Any) -> Result:
    import trio  # type: ignore[import-untyped, unused-ignore]

    result: Result = trio.run(functools.partial(arun_trio, url, **kwargs))
    return result


ADAPTERS: dict[str, Callable[..., Result]] = {
    "sync": run_sync,
    "httpx": run_httpx,
    "httpx-asyncio": run_httpx_asyncio,
    "httpx-trio": run_httpx_trio,
    "trio": run_trio,
}


def run(adapter: str, url: str, **kwargs: Any) -> Result:
    """Run ``adapter`` on ``url`` with ``stream_chat`` arguments ``kwargs``
    (``payload`` defaults to ``PAYLOAD``, ``retry`` to ``FAST_RETRY``);
    ``take=n`` leaves the loop after n events."""
    kwargs.setdefault("retry", FAST_RETRY)
    return ADAPTERS[adapter](url, **kwargs)


def check_case(case: Case, result: Result, server: ScriptServer) -> None:
    """Assert that ``result`` is what ``case`` demands, the server's view included."""
    assert result.events == list(case.expected)
    assert result.attempts == case.attempts
    assert len(server.requests) == case.attempts
    if case.raises is None:
        assert result.error is None, repr(result.error)
    else:
        assert isinstance(result.error, case.raises), repr(result.error)
        if isinstance(result.error, StreamTimeout):
            assert result.error.phase == case.phase
            assert result.error.limit == case.kwargs[f"{case.phase.replace('-', '_')}_timeout"]
            assert result.error.waited >= result.error.limit
            assert f"{case.phase} timeout" in str(result.error)
    if result.events and case.raises is None and case.attempts == 1:  # stats are the last attempt's
        assert result.stats.bytes > 0
        assert result.stats.events == len(case.expected)
    if case.server_end is not None:
        record = server.record_for(case.attempts - 1)
        assert record is not None
        outcome, step = case.server_end
        assert record.outcome == outcome, record
        if step is not None:
            assert record.step == step, record


def summary(events: list[ChatEvent]) -> tuple[Any, ...]:
    """The final result an ``Accumulator`` builds from ``events``."""
    acc = Accumulator()
    for event in events:
        acc.feed(event)
    choices = tuple(
        (
            index,
            choice.role,
            choice.content,
            choice.reasoning,
            choice.refusal,
            choice.finish_reason,
            tuple((c.index, c.id, c.name, c.arguments) for c in choice.tool_calls),
        )
        for index, choice in sorted(acc.choices.items())
    )
    return acc.outcome, choices, acc.usage, acc.error, acc.truncated
