"""The standard-library adapter against the loopback ScriptServer.

Every claim about connections is checked from the server's side: the
server records how each response ended ("complete", "disconnected" while
pausing or holding, ...), so the tests never time the client.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from ssestate import (
    DONE_BYTES,
    ChatEvent,
    ChatStream,
    Delta,
    Done,
    EventStreamParser,
    Finish,
    Heartbeat,
    RemoteProtocolError,
    RetryPolicy,
    Sentinel,
    ServerSentEvent,
    StreamError,
    StreamTimeout,
    Truncated,
    Usage,
    encode_chunk,
)
from ssestate.adapters import sync
from ssestate.testing import Script, ScriptRequest, ScriptServer, Step

pytestmark = pytest.mark.network

PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
FAST_RETRY = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)
JSON_HEAD = [("Content-Type", "application/json")]


def delta(text: str, role: str | None = None) -> bytes:
    d: dict[str, str] = {"content": text}
    if role:
        d["role"] = role
    return encode_chunk({"id": "c1", "choices": [{"index": 0, "delta": d, "finish_reason": None}]})


FINISH = encode_chunk({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
COUNTS = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
USAGE = encode_chunk({"id": "c1", "choices": [], "usage": COUNTS})
PING = b": ping\n\n"
HELLO_BYTES = [delta("Hel", "assistant"), delta("lo"), FINISH, USAGE, DONE_BYTES]
HELLO: list[Step] = list(HELLO_BYTES)
HELLO_EVENTS: list[ChatEvent] = [
    Delta(0, "Hel", "assistant"),
    Delta(0, "lo"),
    Finish(0, "stop"),
    Usage(3, 2, 5, COUNTS),
    Done(True),
]


def reference(body: bytes, status: int = 200, content_type: str = "text/event-stream") -> list[ChatEvent]:
    """What ChatStream makes of a whole captured body, up to Done/CLOSED."""
    machine = ChatStream(status, content_type)
    machine.receive_data(body)
    machine.receive_data(b"")
    out: list[ChatEvent] = []
    while not isinstance(event := machine.next_event(), Sentinel):
        out.append(event)
        if isinstance(event, Done):
            break
    return out


def serve(*scripts: Script, hold_cap: float = 30.0) -> ScriptServer:
    """A server answering request n with scripts[n] (the last one repeats)."""

    def handler(request: ScriptRequest) -> Script:
        return scripts[min(request.attempt, len(scripts) - 1)]

    return ScriptServer(handler, hold_cap=hold_cap)


def run(server: ScriptServer, **kwargs: object) -> tuple[list[ChatEvent], sync.SyncCall]:
    kwargs.setdefault("retry", FAST_RETRY)
    with sync.stream_chat(server.url, PAYLOAD, **kwargs) as call:  # type: ignore[arg-type]
        events = list(call)
    return events, call


@pytest.fixture
def server_factory() -> Iterator[Callable[..., ScriptServer]]:
    started: list[ScriptServer] = []

    def make(*scripts: Script, hold_cap: float = 30.0) -> ScriptServer:
        server = serve(*scripts, hold_cap=hold_cap).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.close()


Factory = Callable[..., ScriptServer]


# -- the request ------------------------------------------------------------------


def test_request_shape(server_factory: Factory) -> None:
    server = server_factory(Script(steps=HELLO))
    with sync.stream_chat(
        server.url + "/", {**PAYLOAD, "temperature": 0}, api_key="sk-test", headers={"X-Trace": "t1"}
    ) as call:
        assert list(call) == HELLO_EVENTS
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.json == {**PAYLOAD, "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    assert request.header("Authorization") == "Bearer sk-test"
    assert request.header("Accept") == "text/event-stream"
    assert request.header("Accept-Encoding") == "identity"
    assert request.header("Content-Type") == "application/json"
    assert request.header("X-Trace") == "t1"
    assert request.header("Content-Length") == str(len(request.body))


def test_caller_stream_options_and_headers_win(server_factory: Factory) -> None:
    server = server_factory(Script(steps=HELLO))
    payload = {**PAYLOAD, "stream_options": {"include_usage": False}}
    with sync.stream_chat(server.url, payload, headers=[("Accept", "*/*")]) as call:
        list(call)
    (request,) = server.requests
    assert request.json["stream_options"] == {"include_usage": False}
    assert request.header("Authorization") is None
    assert [v for n, v in request.headers if n.lower() == "accept"] == ["*/*"]


def test_bad_arguments_fail_at_once() -> None:
    with pytest.raises(ValueError, match="base_url"):
        sync.stream_chat("ftp://example.com", PAYLOAD)
    with pytest.raises(ValueError, match="JSON"):
        sync.stream_chat("http://127.0.0.1:1/v1", {"x": object()})
    with pytest.raises(ValueError, match="idle_timeout"):
        sync.stream_chat("http://127.0.0.1:1/v1", PAYLOAD, idle_timeout=0)


# -- streams --------------------------------------------------------------------


def test_a_plain_stream_and_its_stats(server_factory: Factory) -> None:
    server = server_factory(Script(steps=[HELLO[0], 0.05, *HELLO[1:]]))
    events, call = run(server)
    assert events == HELLO_EVENTS
    assert call.status_code == 200
    assert ("Content-Type", "text/event-stream") in call.headers
    assert call.attempts == 1
    stats = call.stats
    assert stats.bytes == len(b"".join(HELLO_BYTES))
    assert stats.events == len(HELLO_EVENTS)
    assert stats.ttfb is not None
    assert stats.ttft is not None
    assert stats.total is not None
    assert 0 <= stats.ttfb <= stats.ttft <= stats.total
    assert stats.gaps_max is not None
    assert stats.gaps_p50 is not None
    assert stats.gaps_p95 is not None
    assert 0 <= stats.gaps_p50 <= stats.gaps_p95 <= stats.gaps_max
    assert call.machine is not None
    assert call.machine.response_id == "c1"


def test_bursts_and_drips_give_the_same_events(server_factory: Factory) -> None:
    body = b"".join([*(delta(f"w{i} ") for i in range(40)), FINISH, USAGE, DONE_BYTES])
    burst = Script(steps=[body[:1500], body[1500:]])
    drip: list[Step] = [body[i : i + 7] for i in range(0, len(body), 7)]
    expected = reference(body)
    assert len(expected) == 43
    for script in (burst, Script(steps=drip), Script(steps=[body], chunked=False)):
        server = server_factory(script)
        events, call = run(server, chunk_size=16)
        assert events == expected
        assert call.stats.bytes == len(body)


def test_slow_first_byte_within_the_limit(server_factory: Factory) -> None:
    # The pause is longer than the idle limit: only the first-byte limit
    # applies before the first byte.
    server = server_factory(Script(steps=[0.5, *HELLO]))
    events, call = run(server, first_byte_timeout=1.5, idle_timeout=0.25)
    assert events == HELLO_EVENTS
    assert call.stats.ttfb is not None
    assert call.stats.ttfb >= 0.5


def test_slow_first_byte_beyond_the_limit(server_factory: Factory) -> None:
    server = server_factory(Script(steps=[3.0, *HELLO]))
    call = sync.stream_chat(server.url, PAYLOAD, first_byte_timeout=0.5, retry=None)
    with call, pytest.raises(StreamTimeout) as info:
        next(call)
    assert info.value.phase == "first-byte"
    assert info.value.limit == 0.5
    assert info.value.waited >= 0.5
    assert "first-byte timeout" in str(info.value)
    record = server.record_for(0)
    assert record is not None
    assert (record.outcome, record.step) == ("disconnected", 0)  # hung up during the pause


def test_first_byte_timeout_is_retried(server_factory: Factory) -> None:
    server = server_factory(Script(steps=[3.0, *HELLO]), Script(steps=HELLO))
    events, call = run(server, first_byte_timeout=0.3)
    assert events == HELLO_EVENTS
    assert call.attempts == 2
    assert len(server.requests) == 2


def test_silence_beyond_the_idle_limit(server_factory: Factory) -> None:
    server = server_factory(Script(steps=[HELLO[0], 1.3, *HELLO[1:]]))
    got: list[ChatEvent] = []
    call = sync.stream_chat(server.url, PAYLOAD, idle_timeout=1.0, retry=FAST_RETRY)
    with call, pytest.raises(StreamTimeout) as info:
        got.extend(call)
    assert got == HELLO_EVENTS[:1]
    assert info.value.phase == "idle"
    assert info.value.limit == 1.0
    assert info.value.waited >= 1.0
    assert "idle timeout" in str(info.value)
    assert len(server.requests) == 1  # output was emitted: never retried
    record = server.record_for(0)
    assert record is not None
    assert (record.outcome, record.step) == ("disconnected", 1)


def test_heartbeats_keep_a_silent_stream_alive(server_factory: Factory) -> None:
    steps: list[Step] = [HELLO[0]]
    for _ in range(4):
        steps += [0.3, PING]
    steps += [0.1, *HELLO[1:]]
    server = server_factory(Script(steps=steps))
    events, call = run(server, idle_timeout=1.0)
    assert events == [HELLO_EVENTS[0], *[Heartbeat("ping")] * 4, *HELLO_EVENTS[1:]]
    assert call.stats.gaps_max is not None
    assert call.stats.gaps_max < 1.0


def test_close_in_the_middle_of_an_event(server_factory: Factory) -> None:
    partial = delta("lo")[:20]
    server = server_factory(Script(steps=[HELLO[0], partial, "abort"]))
    events, call = run(server)
    assert events == [HELLO_EVENTS[0], Truncated("partial-event", len(partial))]
    assert call.attempts == 1
    record = server.record_for(0)
    assert record is not None
    assert record.outcome == "aborted"


def test_connection_lost_before_output_is_retried(server_factory: Factory) -> None:
    server = server_factory(Script(steps=[PING, b"data: {", "abort"]), Script(steps=HELLO))
    events, call = run(server)
    assert events == [Heartbeat("ping"), *HELLO_EVENTS]  # heartbeats are not output
    assert call.attempts == 2


def test_eof_before_done(server_factory: Factory) -> None:
    server = server_factory(Script(steps=HELLO[:2]))
    events, _ = run(server)
    assert events == [*HELLO_EVENTS[:2], Truncated("eof-before-done", 0)]


def test_done_then_held_open_ends_at_done(server_factory: Factory) -> None:
    server = server_factory(Script(steps=[*HELLO, "hold"]))
    events, _ = run(server)
    assert events == HELLO_EVENTS
    record = server.record_for(0)
    assert record is not None
    # The client left while the server still held the body open: it did not
    # wait for the server to end the response.
    assert (record.outcome, record.step) == ("disconnected", len(HELLO))


# -- errors and retries ----------------------------------------------------------


def test_429_with_retry_after_then_success(server_factory: Factory) -> None:
    limited = Script(429, [*JSON_HEAD, ("Retry-After", "0")], [b'{"error":{"message":"slow down"}}'], chunked=False)
    server = server_factory(limited, Script(steps=HELLO))
    events, call = run(server, retry=RetryPolicy())
    assert events == HELLO_EVENTS
    assert call.attempts == 2
    assert call.status_code == 200
    assert [r.attempt for r in server.requests] == [0, 1]


def test_401_is_not_retried(server_factory: Factory) -> None:
    error = {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}
    body = {"error": error}
    server = server_factory(Script(401, JSON_HEAD, [json.dumps(body).encode()], chunked=False))
    events, call = run(server)
    assert events == [StreamError(401, "invalid_api_key", "Incorrect API key provided", "invalid_request_error", body)]
    assert call.attempts == 1
    assert call.status_code == 401


def test_503_is_retried_then_reported(server_factory: Factory) -> None:
    body = {"error": {"message": "overloaded", "type": "server_error", "code": None}}
    server = server_factory(Script(503, JSON_HEAD, [json.dumps(body).encode()]))
    events, call = run(server)
    assert events == [StreamError(503, None, "overloaded", "server_error", body)]
    assert call.attempts == 3
    assert len(server.requests) == 3


def test_html_error_page(server_factory: Factory) -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    server = server_factory(Script(502, [("Content-Type", "text/html")], [page]))
    events, call = run(server, retry=None)
    assert events == reference(page, 502, "text/html")
    assert len(events) == 1
    assert isinstance(events[0], StreamError)
    assert events[0].status == 502
    assert call.attempts == 1


def test_json_downgrade(server_factory: Factory) -> None:
    completion = {
        "id": "c9",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    body = json.dumps(completion).encode()
    server = server_factory(Script(200, JSON_HEAD, [body], chunked=False))
    events, _ = run(server)
    assert events == reference(body, 200, "application/json")
    assert events[0] == Delta(0, "Hello", "assistant")
    assert events[-1] == Done(False)


def test_connection_refused_is_retried_then_raised() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    call = sync.stream_chat(f"http://127.0.0.1:{port}/v1", PAYLOAD, retry=FAST_RETRY)
    with call, pytest.raises(ConnectionRefusedError):
        next(call)
    assert call.attempts == 3


def test_strict_mode_raises_on_non_json(server_factory: Factory) -> None:
    server = server_factory(Script(steps=[HELLO[0], b"data: not json\n\n", 5.0, *HELLO[1:]]))
    got: list[ChatEvent] = []
    with sync.stream_chat(server.url, PAYLOAD) as call, pytest.raises(RemoteProtocolError):
        got.extend(call)
    assert got == HELLO_EVENTS[:1]
    record = server.record_for(0)
    assert record is not None
    assert record.outcome == "disconnected"


def test_lenient_mode_skips_non_json(server_factory: Factory) -> None:
    server = server_factory(Script(steps=[HELLO[0], b"data: not json\n\n", *HELLO[1:]]))
    events, _ = run(server, strict=False)
    assert events == HELLO_EVENTS


# -- cancellation ----------------------------------------------------------------


def long_stream() -> Script:
    steps: list[Step] = []
    for i in range(100):
        steps += [delta(f"t{i} "), 0.1]
    return Script(steps=[*steps, FINISH, DONE_BYTES])


def test_breaking_out_closes_the_connection(server_factory: Factory) -> None:
    server = server_factory(long_stream())
    with sync.stream_chat(server.url, PAYLOAD) as call:
        for event in call:
            assert event == Delta(0, "t0 ")
            break
    record = server.record_for(0)
    assert record is not None
    assert record.outcome == "disconnected"
    assert record.step < 10  # long before the 100 scripted deltas


def test_close_and_a_dropped_call_close_the_connection(server_factory: Factory) -> None:
    server = server_factory(long_stream())
    call = sync.stream_chat(server.url, PAYLOAD)
    assert next(call) == Delta(0, "t0 ")
    call.close()
    assert list(call) == []
    call.close()
    for event in sync.stream_chat(server.url, PAYLOAD):
        assert event == Delta(0, "t0 ")
        break
    gc.collect()
    for attempt in (0, 1):
        record = server.record_for(attempt)
        assert record is not None
        assert record.outcome == "disconnected"
        assert record.step < 10


def test_an_exception_in_the_loop_closes_the_connection(server_factory: Factory) -> None:
    server = server_factory(long_stream())
    with pytest.raises(KeyboardInterrupt), sync.stream_chat(server.url, PAYLOAD) as call:
        for _ in call:
            raise KeyboardInterrupt
    record = server.record_for(0)
    assert record is not None
    assert record.outcome == "disconnected"


def test_a_call_never_iterated_opens_nothing(server_factory: Factory) -> None:
    server = server_factory(Script(steps=HELLO))
    with sync.stream_chat(server.url, PAYLOAD) as call:
        pass
    assert call.status_code is None
    assert call.attempts == 0
    assert server.requests == []


# -- iter_events ----------------------------------------------------------------


class ReadOnly:
    """A readable without read1: only read(n), a few bytes at a time."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self, n: int = -1, /) -> bytes:
        piece, self._data = self._data[:3], self._data[3:]
        return piece


def test_iter_events_chat_stream_stops_at_done() -> None:
    body = b"".join(HELLO_BYTES) + b"data: trailing garbage\n\n"
    assert list(sync.iter_events(io.BytesIO(body), ChatStream())) == HELLO_EVENTS
    assert list(sync.iter_events(ReadOnly(body), ChatStream(), chunk_size=5)) == HELLO_EVENTS


def test_iter_events_framing_parser_until_closed() -> None:
    body = b"event: a\ndata: 1\n\n: c\ndata: 2"
    events = list(sync.iter_events(io.BufferedReader(io.BytesIO(body)), EventStreamParser()))
    assert events == [ServerSentEvent("a", "1"), Heartbeat("c"), Truncated("partial-event", 7)]


def test_a_server_that_never_answers() -> None:
    # The kernel accepts the connection; nobody ever writes a response head.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        call = sync.stream_chat(url, PAYLOAD, first_byte_timeout=0.3, retry=None)
        with call, pytest.raises(StreamTimeout) as info:
            next(call)
    assert info.value.phase == "first-byte"
    assert isinstance(info.value.__cause__, TimeoutError)
    assert call.status_code is None


@pytest.mark.parametrize("interim", [b"102 Processing", b"103 Early Hints"])
def test_an_interim_head_is_passed_over(interim: bytes) -> None:
    # http.client passes over 100 Continue only; the final head comes in the
    # same write as the interim one, so it sits in the reader's buffer.
    body = b"".join(step for step in HELLO if isinstance(step, bytes))
    answer = (
        b"HTTP/1.1 " + interim + b"\r\nLink: </a.css>; rel=preload\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    )
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def serve() -> None:
            conn, _ = listener.accept()
            with conn:
                while b"\r\n\r\n" not in conn.recv(65536):
                    pass  # the request (its small body comes with the head)
                conn.sendall(answer)

        server = threading.Thread(target=serve, daemon=True)
        server.start()
        with sync.stream_chat(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", PAYLOAD, retry=None) as call:
            events = list(call)
        server.join(5)
    assert (call.status_code, events) == (200, HELLO_EVENTS)


def test_a_head_that_trickles_in_is_cut_at_the_first_byte_limit() -> None:
    # One byte of the head every 50 ms: each receive is quick, but the
    # first-byte limit bounds them all (it used to bound each one).
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Pad: " + b"x" * 200 + b"\r\n\r\n"
    stop = threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def serve() -> None:
            conn, _ = listener.accept()
            with conn, contextlib.suppress(OSError):
                conn.recv(65536)
                for byte in head:
                    if stop.wait(0.05):
                        return
                    conn.sendall(bytes([byte]))

        server = threading.Thread(target=serve, daemon=True)
        server.start()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        start = time.monotonic()
        with (
            sync.stream_chat(url, PAYLOAD, first_byte_timeout=0.5, retry=None) as call,
            pytest.raises(StreamTimeout) as info,
        ):
            next(call)
        took = time.monotonic() - start
        stop.set()
        server.join(5)
    assert info.value.phase == "first-byte"
    assert took < 2.0  # not the 11 s the whole head takes


# -- https ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A throwaway certificate for 127.0.0.1: (server context, client context)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(cert))


def test_https_stream_and_cancellation(tls: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    server_context, client_context = tls
    scripts = [Script(steps=HELLO), long_stream()]
    with ScriptServer(lambda r: scripts[r.attempt], ssl_context=server_context) as server:
        assert server.url.startswith("https://127.0.0.1:")
        with sync.stream_chat(server.url, PAYLOAD, ssl_context=client_context) as call:
            assert list(call) == HELLO_EVENTS
        with sync.stream_chat(server.url, PAYLOAD, ssl_context=client_context) as call:
            assert next(call) == Delta(0, "t0 ")
        record = server.record_for(1)
        assert record is not None
        assert record.outcome == "disconnected"
        assert record.step < 10


def test_https_certificate_is_verified(tls: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    with ScriptServer(lambda r: Script(steps=HELLO), ssl_context=tls[0]) as server:
        call = sync.stream_chat(server.url, PAYLOAD, retry=None)  # the default context does not trust it
        with call, pytest.raises(ssl.SSLCertVerificationError):
            next(call)
