"""The I/O-free parts every adapter shares: build_request and StreamDriver."""

from __future__ import annotations

import json

import pytest

from ssestate import Delta, Done, Heartbeat, RetryPolicy, StreamError, StreamTimeout, Truncated
from ssestate.adapters._common import ARRIVAL, StreamDriver, build_request, header_pairs

NO_WAIT = RetryPolicy(max_retries=2, base_delay=0.0)
SSE = [("Content-Type", "text/event-stream")]
CHUNK = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'


def test_build_request() -> None:
    r = build_request("https://api.example.com/v1/", {"model": "m"}, api_key="k", headers={"x-a": "1"})
    assert (r.method, r.url, r.scheme, r.host, r.port, r.target) == (
        "POST",
        "https://api.example.com/v1/chat/completions",
        "https",
        "api.example.com",
        443,
        "/v1/chat/completions",
    )
    assert r.authority == "api.example.com"
    assert r.headers == (
        ("Content-Type", "application/json"),
        ("Accept", "text/event-stream"),
        ("Accept-Encoding", "identity"),
        ("Authorization", "Bearer k"),
        ("x-a", "1"),
    )
    assert json.loads(r.body) == {"model": "m", "stream": True, "stream_options": {"include_usage": True}}


def test_build_request_ports_queries_ipv6_and_overrides() -> None:
    r = build_request(
        "http://[::1]:8080/api?key=1", {"stream": False, "stream_options": None}, headers=[("ACCEPT", "x")]
    )
    assert (r.host, r.port, r.target, r.authority) == ("::1", 8080, "/api/chat/completions?key=1", "[::1]:8080")
    assert r.url == "http://[::1]:8080/api/chat/completions?key=1"
    assert json.loads(r.body) == {"stream": True, "stream_options": None}
    assert ("ACCEPT", "x") in r.headers
    assert all(n != "Accept" for n, _ in r.headers)
    assert build_request("http://h", {}).target == "/chat/completions"
    assert build_request("http://h", {}).authority == "h"


@pytest.mark.parametrize("url", ["ftp://h/v1", "http:///v1", "localhost:8080", "http://h:99999/v1"])
def test_build_request_rejects_bad_urls(url: str) -> None:
    with pytest.raises(ValueError):
        build_request(url, {})


def test_build_request_rejects_unencodable_payloads() -> None:
    with pytest.raises(ValueError, match="JSON"):
        build_request("http://h", {"t": float("nan")})


def test_header_pairs() -> None:
    assert header_pairs(None) == []
    assert header_pairs({"a": "1"}) == [("a", "1")]
    assert header_pairs([("a", "1"), ("a", "2")]) == [("a", "1"), ("a", "2")]


def test_timeouts_and_phases() -> None:
    d = StreamDriver(first_byte_timeout=5.0, idle_timeout=1.0)
    d.begin_attempt(100.0)
    assert (d.phase, d.limit, d.deadline, d.read_timeout(101.0)) == ("first-byte", 5.0, 105.0, 4.0)
    assert d.read_timeout(106.0) == 0.0
    err = d.timeout_error(105.5)
    assert isinstance(err, StreamTimeout)
    assert (err.phase, err.waited, err.limit) == ("first-byte", 5.5, 5.0)
    assert d.on_response(200, SSE, 102.0) is None
    assert d.phase == "first-byte"  # the head is not a body byte
    assert d.feed(b": ping\n\n", 103.0) == [Heartbeat("ping")]
    assert (d.phase, d.deadline) == ("idle", 104.0)
    assert not d.emitted
    d.feed(CHUNK, 103.5)
    assert d.deadline == 104.5
    assert d.timeout_error(105.0).phase == "idle"


def test_no_timeouts() -> None:
    d = StreamDriver(first_byte_timeout=None, idle_timeout=None)
    d.begin_attempt(0.0)
    assert (d.deadline, d.read_timeout(1e9), d.timeout_error(7.0).limit) == (None, None, 0.0)


@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_bad_timeouts(value: float) -> None:
    with pytest.raises(ValueError, match="first_byte_timeout"):
        StreamDriver(first_byte_timeout=value)


def test_a_whole_call_with_one_retried_status() -> None:
    d = StreamDriver(retry=NO_WAIT)
    assert d.attempts == 0
    d.begin_attempt(0.0)
    assert d.on_response(503, [("Content-Type", "application/json")], 0.1) == 0.0
    assert d.machine is None
    assert d.stats.total == pytest.approx(0.1)
    d.begin_attempt(1.0)
    assert (d.attempt, d.attempts, d.status_code) == (1, 2, None)
    assert d.on_response(200, {"content-type": "text/event-stream; charset=utf-8"}, 1.1) is None
    assert d.content_type == "text/event-stream; charset=utf-8"
    assert d.feed(CHUNK + b"data: [DONE]\n\ndata: ignored\n\n", 1.5) == [Delta(0, "hi"), Done(True)]
    assert d.emitted
    assert d.finished
    assert d.feed(b"more", 1.7) == []  # after Done, bytes are counted and ignored
    s = d.stats
    assert (s.bytes, s.events) == (len(CHUNK + b"data: [DONE]\n\ndata: ignored\n\nmore"), 2)
    assert s.ttfb == pytest.approx(0.5)
    assert s.ttft == pytest.approx(0.5)  # the events of a read are handed out when it arrived
    assert s.total == pytest.approx(0.5)  # Done ends the attempt


def test_last_attempt_reads_the_error_body() -> None:
    d = StreamDriver(retry=RetryPolicy(max_retries=0))
    d.begin_attempt(0.0)
    assert d.on_response(503, [("Content-Type", "application/json")], 0.0) is None
    assert d.feed(b'{"error":{"message":"busy"}}', 0.1) == []
    (event,) = d.feed(b"", 0.2)
    assert isinstance(event, StreamError)
    assert (event.status, event.message) == (503, "busy")
    assert d.finished  # CLOSED reached


def test_failures_and_the_emitted_rule() -> None:
    d = StreamDriver(retry=NO_WAIT)
    d.begin_attempt(0.0)
    assert d.on_failure(ConnectionRefusedError(), 0.1) == 0.0
    d.begin_attempt(1.0)
    d.on_response(200, SSE, 1.0)
    assert d.feed(CHUNK, 1.1) == [Delta(0, "hi")]
    # Output was emitted: a failure is final, and the body ends Truncated.
    assert d.on_failure(ConnectionResetError(), 1.2) is None
    assert d.should_retry(0, 503, None, None) is None
    assert d.feed(b"data: {", 1.3) == []
    assert d.feed(b"", 1.4) == [Truncated("partial-event", 7)]
    assert d.finished


def test_exhausted_and_disabled_retries() -> None:
    d = StreamDriver(retry=NO_WAIT)
    for attempt in range(3):
        d.begin_attempt(float(attempt))
        delay = d.on_failure(d.timeout_error(attempt + 0.5), attempt + 0.5)
        assert delay == (0.0 if attempt < 2 else None)
    # A transport failure is judged as "no response", whatever the status.
    assert StreamDriver(retry=NO_WAIT).should_retry(0, 401, None, OSError()) == 0.0
    assert StreamDriver(retry=None).should_retry(0, None, None, OSError()) is None


def test_feed_before_a_response_is_a_bug() -> None:
    d = StreamDriver()
    d.begin_attempt(0.0)
    with pytest.raises(RuntimeError, match="on_response"):
        d.feed(b"x", 0.0)


def test_pieces_of_one_read_are_one_arrival() -> None:
    # A transport hands one read of the socket over an HTTP chunk at a time:
    # pieces less than ARRIVAL apart are one arrival, and the gaps measure
    # the silences between reads.
    d = StreamDriver()
    d.begin_attempt(10.0)
    d.on_response(200, SSE, 10.0)
    for t in (10.5, 10.5 + ARRIVAL / 4, 10.5 + ARRIVAL / 2, 11.0, 11.0 + ARRIVAL / 4, 11.25):
        d.feed(b": ping\n\n", t)
    s = d.stats
    assert (s.bytes, s.events) == (6 * 8, 6)
    assert s.ttfb == pytest.approx(0.5)
    assert s.gaps_max == pytest.approx(0.5)
    assert s.gaps_p50 == pytest.approx(0.25, rel=0.02)  # gaps 0.5 and 0.25, none of a few microseconds


# -- the request of each API ------------------------------------------------------

BASE = ("Content-Type", "application/json"), ("Accept", "text/event-stream"), ("Accept-Encoding", "identity")
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("dialect", "target", "auth", "body"),
    [
        (
            "openai-chat",
            "/v1/chat/completions",
            [("Authorization", "Bearer k")],
            {"model": "m", "messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}},
        ),
        (
            "auto",
            "/v1/chat/completions",
            [("Authorization", "Bearer k")],
            {"model": "m", "messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}},
        ),
        (
            "openai-responses",
            "/v1/responses",
            [("Authorization", "Bearer k")],
            {"model": "m", "messages": MESSAGES, "stream": True},
        ),
        (
            "anthropic",
            "/v1/messages",
            [("anthropic-version", "2023-06-01"), ("x-api-key", "k")],
            {"model": "m", "messages": MESSAGES, "stream": True},
        ),
        (
            "gemini",
            "/v1/models/m:streamGenerateContent?alt=sse",
            [("x-goog-api-key", "k")],
            {"messages": MESSAGES},
        ),
    ],
)
def test_build_request_per_dialect(dialect: str, target: str, auth: list[tuple[str, str]], body: object) -> None:
    payload = {"model": "m", "messages": MESSAGES}
    r = build_request("https://api.example.com/v1", payload, api_key="k", dialect=dialect)
    assert (r.method, r.target, r.url) == ("POST", target, "https://api.example.com" + target)
    assert r.headers == (*BASE, *auth)
    assert json.loads(r.body) == body
    assert payload == {"model": "m", "messages": MESSAGES}  # not modified
    # Without a key, only the key header is left out.
    keyless = build_request("https://api.example.com/v1", payload, dialect=dialect)
    assert keyless.headers == tuple(h for h in r.headers if h[1] not in ("k", "Bearer k"))


def test_build_request_caller_fields_and_headers_win() -> None:
    r = build_request(
        "http://h/v1",
        {"model": "m", "stream": False, "stream_options": {"include_usage": False}},
        api_key="k",
        headers={"Anthropic-Version": "2024-01-01", "X-Api-Key": "other"},
        dialect="anthropic",
    )
    # A streaming call always streams; anything else the caller wrote stays.
    assert json.loads(r.body) == {"model": "m", "stream": True, "stream_options": {"include_usage": False}}
    assert r.headers == (*BASE, ("Anthropic-Version", "2024-01-01"), ("X-Api-Key", "other"))
    responses = build_request("http://h/v1", {"stream_options": {"x": 1}}, dialect="openai-responses")
    assert json.loads(responses.body) == {"stream_options": {"x": 1}, "stream": True}


def test_build_request_gemini_model_and_query() -> None:
    url = "https://generativelanguage.googleapis.com/v1beta/?trace=1"
    r = build_request(url, {"model": "models/gemini-2.5-flash", "contents": []}, dialect="gemini")
    assert r.target == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&trace=1"
    assert json.loads(r.body) == {"contents": []}
    # The model is one path segment, whatever it holds.
    odd = build_request("http://h", {"model": "a/b?c#d e"}, dialect="gemini")
    assert odd.target == "/models/a%2Fb%3Fc%23d%20e:streamGenerateContent?alt=sse"
    # A caller's "stream" is the caller's business: nothing is added.
    assert json.loads(build_request("http://h", {"model": "g", "stream": True}, dialect="gemini").body) == {
        "stream": True
    }


@pytest.mark.parametrize("payload", [{}, {"model": ""}, {"model": "models/"}, {"model": 3}, {"model": None}])
def test_build_request_gemini_needs_a_model(payload: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"gemini.*payload\['model'\]"):
        build_request("http://h/v1beta", payload, dialect="gemini")


def test_unknown_dialects_are_refused() -> None:
    with pytest.raises(ValueError, match="dialect must be one of openai-chat, openai-responses, anthropic"):
        build_request("http://h", {}, dialect="openai")
    with pytest.raises(ValueError, match="dialect must be one of"):
        StreamDriver(dialect="claude")


@pytest.mark.parametrize("dialect", ["openai-chat", "openai-responses", "anthropic", "gemini", "auto"])
def test_the_driver_reads_its_dialect(dialect: str) -> None:
    d = StreamDriver(dialect=dialect)
    d.begin_attempt(0.0)
    d.on_response(200, SSE, 0.0)
    assert d.machine is not None
    assert d.machine.dialect == dialect
