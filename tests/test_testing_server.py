"""``ssestate.testing.serve``: the test server as a library, and the OpenAI API
it is where no fault is intended.

Driven from outside, as a user drives it: plain ``http.client`` requests for
the API's rules (streaming only when asked, usage only when asked,
``max_tokens``, 404s and 400s in the API's shape, usage counts that depend
on the prompt alone), and the official ``openai`` SDK for every scenario,
streaming and not.
"""

from __future__ import annotations

import http.client
import json
import math
import socketserver
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssestate import CLOSED, NEED_DATA, Accumulator, ChatStream, Delta, ToolCallFragment, Usage
from ssestate.testing import (
    OUTCOMES,
    SCENARIOS,
    ScenarioServer,
    ScriptServer,
    expected_outcome,
    prompt_tokens,
    random_choice,
    scenario,
    serve,
)

pytestmark = pytest.mark.network

FAST = math.inf  # no pauses
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello, how are you?"}]


@pytest.fixture(scope="module")
def server() -> Iterator[ScenarioServer]:
    with serve(speed=FAST, seed=100) as running:
        yield running


def post(
    server: ScriptServer, body: object, path: str = "/v1/chat/completions", **headers: str
) -> tuple[int, str, bytes]:
    """(status, content type, body) of one request."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", path, body=data, headers={"Content-Type": "application/json", **headers})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        conn.close()


def get(server: ScriptServer, path: str) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def events_of(body: bytes, content_type: str = "text/event-stream") -> tuple[list[Any], Accumulator]:
    stream = ChatStream(200, content_type)
    acc = Accumulator()
    events = []
    for chunk in (body, b""):
        stream.receive_data(chunk)
        while (event := stream.next_event()) not in (NEED_DATA, CLOSED):
            events.append(event)
            acc.feed(event)
    return events, acc


# -- serve() -----------------------------------------------------------------------------


def test_serve_yields_a_base_url_and_stops_on_leaving() -> None:
    with serve("cjk", speed=FAST) as running:
        assert running.base_url == f"http://127.0.0.1:{running.port}/v1"
        status, ctype, body = post(running, {"messages": MESSAGES, "stream": True})
        assert (status, ctype) == (200, "text/event-stream")
        assert "流式传输" in events_of(body)[1].choices[0].content  # the default scenario
    with pytest.raises(OSError):
        post(running, {"stream": True})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"dialect": "cohere"},
            "the test server speaks openai-chat, openai-responses, anthropic, gemini; not 'cohere'",
        ),
        (
            {"scenario": "n2", "dialect": "anthropic"},
            "scenario 'n2' cannot be the default for dialect 'anthropic': it streams two choices",
        ),
        ({"scenario": "nope"}, "unknown scenario 'nope'; choose one of: text, cjk"),
        ({"speed": 0.0}, "speed must be positive, got 0.0"),
        ({"speed": math.nan}, "speed must be positive, got nan"),
    ],
)
def test_serve_refuses_what_it_cannot_do(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        serve(**kwargs)


def test_requests_play_the_base_seed_plus_their_number() -> None:
    with serve("crlf", seed=5, speed=FAST) as running:
        bodies = [post(running, {"stream": True, "stream_options": {"include_usage": True}})[2] for _ in range(3)]
        assert bodies == [scenario("crlf", seed).body() for seed in (5, 6, 7)]
        assert running.wait_for(3)[-1].outcome == "complete"
        assert [r.attempt for r in running.requests] == [0, 1, 2]
        # A request's own seed wins.
        assert post(running, {"stream": True, "seed": 6})[2] == scenario("crlf", 6, include_usage=False).body()


# -- the API where no fault is intended -------------------------------------------------------


FAULT_FREE = [name for name, outcome in OUTCOMES.items() if outcome in ("complete", "length") and name != "downgrade"]


@pytest.mark.parametrize("name", FAULT_FREE)
def test_no_stream_asked_gives_one_chat_completion(server: ScenarioServer, name: str) -> None:
    streamed = post(server, {"model": name, "seed": 4, "messages": MESSAGES, "stream": True})[2]
    for stream in (False, None, "absent"):
        request: dict[str, Any] = {"model": name, "seed": 4, "messages": MESSAGES}
        if stream != "absent":
            request["stream"] = stream
        status, ctype, body = post(server, request)
        assert (status, ctype) == (200, "application/json")
        completion = json.loads(body)
        assert completion["object"] == "chat.completion"
        # The same answer as the stream, and the same events through ChatStream.
        _, acc = events_of(streamed)
        _, whole = events_of(body, ctype)
        assert {i: whole.message(i) for i in whole.choices} == {i: acc.message(i) for i in acc.choices}
        assert {i: c.finish_reason for i, c in whole.choices.items()} == {
            i: c.finish_reason for i, c in acc.choices.items()
        }
        assert whole.outcome == OUTCOMES[name]
        usage = completion["usage"]
        assert usage["prompt_tokens"] == prompt_tokens(MESSAGES)
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


@pytest.mark.parametrize("name", FAULT_FREE)
def test_usage_chunk_only_when_asked(server: ScenarioServer, name: str) -> None:
    plain = post(server, {"model": name, "seed": 2, "messages": MESSAGES, "stream": True})[2]
    assert not any(isinstance(e, Usage) for e in events_of(plain)[0])
    asked = post(
        server,
        {"model": name, "seed": 2, "messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}},
    )[2]
    events, _ = events_of(asked)
    (usage,) = [e for e in events if isinstance(e, Usage)]
    assert usage.prompt_tokens == prompt_tokens(MESSAGES)
    assert usage.completion_tokens == sum(_tokens_per_choice(events).values())
    not_asked = post(
        server,
        {"model": name, "seed": 2, "messages": MESSAGES, "stream": True, "stream_options": {"include_usage": False}},
    )[2]
    assert not_asked == plain


def _tokens_per_choice(events: list[Any]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for e in events:
        if isinstance(e, ToolCallFragment) or (isinstance(e, Delta) and (e.content or e.reasoning)):
            counts[e.choice] = counts.get(e.choice, 0) + 1
    return counts


@settings(max_examples=max(10, settings().max_examples // 2))
@given(st.sampled_from([*FAULT_FREE, "drop-mid-event"]), st.integers(1, 40), st.integers(0, 50))
def test_max_tokens_is_honoured(name: str, limit: int, seed: int) -> None:
    plain = scenario(name, seed)
    natural = _tokens_per_choice(events_of(plain.body(), plain.content_type)[0])
    script = scenario(name, seed, FAST, max_tokens=limit)
    events, acc = events_of(script.body(), script.content_type)
    spent = _tokens_per_choice(events)
    assert all(n <= limit for n in spent.values())
    usage = [e for e in events if isinstance(e, Usage)]
    if usage:
        assert usage[-1].completion_tokens == sum(spent.values())
    if name == "drop-mid-event":
        assert acc.outcome == "truncated"
        return
    for index, choice in acc.choices.items():
        cut = natural.get(index, 0) > limit
        assert (choice.finish_reason == "length") == (cut or name == "length"), (index, spent, natural)
        assert spent.get(index, 0) == min(limit, natural.get(index, 0))
    assert acc.outcome == ("length" if any(n > limit for n in natural.values()) or name == "length" else "complete")
    assert acc.outcome == expected_outcome(name, seed, max_tokens=limit)
    # Asked for no stream, the same answer in one piece.
    whole = scenario(name, seed, FAST, max_tokens=limit, stream=False)
    _, acc_whole = events_of(whole.body(), whole.content_type)
    assert {i: acc_whole.message(i) for i in acc_whole.choices} == {i: acc.message(i) for i in acc.choices}


def test_max_tokens_in_a_downgraded_answer() -> None:
    completion = json.loads(scenario("downgrade", 0, max_tokens=2).body())
    assert completion["choices"][0]["finish_reason"] == "length"
    assert completion["usage"]["completion_tokens"] == 2
    assert json.loads(scenario("downgrade", 0).body())["usage"]["completion_tokens"] > 2


def test_max_tokens_over_the_wire(server: ScenarioServer) -> None:
    for key in ("max_tokens", "max_completion_tokens"):
        body = post(server, {"model": "text", "messages": MESSAGES, "stream": False, key: 5})[2]
        completion = json.loads(body)
        assert completion["choices"][0]["finish_reason"] == "length"
        assert completion["usage"]["completion_tokens"] == 5


def test_prompt_tokens_depend_on_the_prompt_alone(server: ScenarioServer) -> None:
    def counted(messages: object, **extra: Any) -> int:
        body = post(server, {"messages": messages, "stream": False, **extra})[2]
        return int(json.loads(body)["usage"]["prompt_tokens"])

    first = counted(MESSAGES, model="text", seed=1)
    assert counted(MESSAGES, model="cjk", seed=9) == first == prompt_tokens(MESSAGES)
    longer = [*MESSAGES, {"role": "user", "content": [{"type": "text", "text": "And tell me a story."}]}]
    assert counted(longer) > first
    assert prompt_tokens(None) == prompt_tokens([]) == 3
    assert prompt_tokens(["odd", {"content": 7}]) == 3 + 4 + 4


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/nope/chat/completions"), ("POST", "/chat/completions"), ("GET", "/v1/chat/completions"),
     ("POST", "/v1/models"), ("GET", "/"), ("DELETE", "/v1/chat/completions")],
)  # fmt: skip
def test_unknown_paths_are_404_in_the_api_shape(server: ScenarioServer, method: str, path: str) -> None:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    conn.request(method, path, body=b"{}")
    response = conn.getresponse()
    assert response.status == 404
    assert response.getheader("Content-Type") == "application/json"
    assert json.loads(response.read()) == {
        "error": {"message": f"Invalid URL ({method} {path})", "type": "invalid_request_error", "param": None,
                  "code": None}
    }  # fmt: skip
    conn.close()


def test_models(server: ScenarioServer) -> None:
    status, models = get(server, "/v1/models")
    assert status == 200
    assert [m["id"] for m in models["data"]] == list(SCENARIOS)
    cjk = {"id": "cjk", "object": "model", "created": 0, "owned_by": "ssestate"}
    assert get(server, "/v1/models/cjk") == (200, cjk)
    status, error = get(server, "/v1/models/gpt-5")
    assert status == 404
    assert error["error"]["code"] == "model_not_found"


@pytest.mark.parametrize(
    ("request_body", "headers", "param", "code", "message"),
    [
        (b"{nope", {}, None, None, "We could not parse the JSON body of your request."),
        (b"[1]", {}, None, None, "We could not parse the JSON body of your request."),
        ({"stream_options": {"include_usage": True}}, {}, "stream_options", None,
         "The 'stream_options' parameter is only allowed when 'stream' is enabled."),
        ({"max_tokens": 0}, {}, "max_tokens", "integer_below_min_value",
         "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got 0 instead."),
        ({"max_completion_tokens": "5"}, {}, "max_completion_tokens", "invalid_type",
         "Invalid type for 'max_completion_tokens': expected an integer, but got str instead."),
        ({"max_tokens": True}, {}, "max_tokens", "invalid_type",
         "Invalid type for 'max_tokens': expected an integer, but got bool instead."),
        ({}, {"X-Ssestate-Scenario": "nope"}, None, "unknown_scenario", "unknown scenario 'nope' in X-Ssestate"),
        ({}, {"X-Ssestate-Speed": "-1"}, None, None, "X-Ssestate-Speed must be a positive number, got '-1'"),
        ({}, {"X-Ssestate-Speed": "fast"}, None, None, "X-Ssestate-Speed is not a number: 'fast'"),
    ],
)  # fmt: skip
def test_bad_requests_are_400_in_the_api_shape(
    server: ScenarioServer, request_body: object, headers: dict[str, str], param: str | None, code: str | None,
    message: str,
) -> None:  # fmt: skip
    status, ctype, body = post(server, request_body, **headers)
    assert (status, ctype) == (400, "application/json")
    error = json.loads(body)["error"]
    assert error["message"].startswith(message)
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)


def test_headers_pick_scenario_and_speed(server: ScenarioServer) -> None:
    _, _, body = post(server, {"model": "gpt-4o", "seed": 2, "stream": True}, **{"X-Ssestate-Scenario": "cjk"})
    assert body == scenario("cjk", 2, include_usage=False).body()
    slow = post(server, {"model": "ssestate-no-done", "seed": 2, "stream": True}, **{"X-Ssestate-Speed": "1000"})[2]
    assert slow == scenario("no-done", 2, include_usage=False).body()


# -- the official SDK ------------------------------------------------------------------------------


def _expected(name: str, seed: int) -> Accumulator:
    """What the scenario streams, assembled by ssestate."""
    script = scenario(name, seed)
    return events_of(script.body(), script.content_type)[1]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_the_openai_sdk_drives_every_scenario(server: ScenarioServer, name: str, stream: bool) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    seed = 11
    base = random_choice(seed) if name == "random" else name
    extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if stream else {}

    def create() -> Any:
        return client.chat.completions.create(model=name, messages=MESSAGES, stream=stream, seed=seed, **extra)

    if base == "error-401":
        with pytest.raises(openai.AuthenticationError) as info:
            create()
        assert info.value.code == "invalid_api_key"
        return
    if base in ("error-503", "overloaded"):
        with pytest.raises(openai.InternalServerError):
            create()
        return
    if base == "error-mid-stream":  # half the answer, then OpenAI's error payload; 500 when not streamed
        with pytest.raises(openai.InternalServerError if not stream else openai.APIError, match="had an error"):
            list(create()) if stream else create()
        return
    if base == "drop-mid-event":  # the connection dies mid-body: the SDK sees it, streaming or not
        with pytest.raises(openai.APIConnectionError):
            list(create()) if stream else create()
        return
    want = _expected(name, seed)
    if base == "downgrade" and stream:
        # A gateway that answered JSON to a streaming request: the SDK's stream
        # silently yields nothing (ChatStream reads it as the answer).
        assert list(create()) == []
        assert want.outcome == "complete"
        return
    texts: dict[int, str] = {}
    reasons: dict[int, str | None] = {}
    calls: dict[int, list[tuple[str, str]]] = {}
    if stream:
        usage = None
        for chunk in create():
            usage = chunk.usage or usage
            for choice in chunk.choices:
                texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
                reasons[choice.index] = choice.finish_reason or reasons.get(choice.index)
                for call in choice.delta.tool_calls or []:
                    named = calls.setdefault(choice.index, [])
                    if call.function.name:
                        named.append((call.function.name, ""))
                    name_so_far, args = named[-1]
                    named[-1] = (name_so_far, args + (call.function.arguments or ""))
    else:
        completion = create()
        usage = completion.usage
        for choice in completion.choices:
            texts[choice.index] = choice.message.content or ""
            reasons[choice.index] = choice.finish_reason
            for call in choice.message.tool_calls or []:
                calls.setdefault(choice.index, []).append((call.function.name, call.function.arguments))
    assert texts == {i: c.content for i, c in want.choices.items()}
    assert reasons == {i: c.finish_reason for i, c in want.choices.items()}
    assert calls == {i: [(t.name, t.arguments) for t in c.tool_calls] for i, c in want.choices.items() if c.tool_calls}
    assert usage is not None
    assert usage.prompt_tokens == prompt_tokens(MESSAGES)
    assert want.usage is not None
    assert usage.completion_tokens == want.usage.completion_tokens


def test_the_server_can_log_each_request() -> None:
    lines: list[str] = []
    with ScenarioServer("cjk", seed=1, speed=FAST, log=lines.append) as running:
        post(running, {"stream": True})
        post(running, {"model": "random", "seed": 4, "stream": False})
        post(running, {"max_tokens": 0})
        get(running, "/v1/models")
        get(running, "/v1/models/n2")
        post(running, {}, path="/v2/chat/completions")
        assert running.handler.chosen == {0: "cjk seed 1", 1: f"random seed 4 ({random_choice(4)}) (not streamed)"}
    assert lines == [
        "#0 POST /v1/chat/completions -> cjk seed 1",
        f"#1 POST /v1/chat/completions -> random seed 4 ({random_choice(4)}) (not streamed)",
        "#2 POST /v1/chat/completions -> 400 (Invalid 'max_tokens': integer below minimum value. Expected a value "
        ">= 1, but got 0 instead.)",
        "#3 GET /v1/models -> model list",
        "#4 GET /v1/models/n2 -> model n2",
        "#5 POST /v2/chat/completions -> 404",
    ]


# -- the script player, for hand-written scripts --------------------------------------------------


def test_a_handler_that_fails_gets_a_500_and_a_record() -> None:
    from ssestate.testing import ScriptRequest

    def broken(request: ScriptRequest) -> Any:
        raise RuntimeError("no script for you")

    with ScriptServer(broken) as running:
        status, ctype, body = post(running, {})
        assert (status, ctype) == (500, "text/plain; charset=utf-8")
        assert body == b"script handler failed: RuntimeError('no script for you')"
        (record,) = running.wait_for(1)
    assert (record.outcome, record.step) == ("handler-error", 0)


def test_hold_until_the_cap_and_stop_while_pausing() -> None:
    from ssestate.testing import Script

    scripts = iter([Script(steps=[b"data: x\n\n", "hold"]), Script(steps=[b": hi\n\n", 30.0, b"late"])])
    with ScriptServer(lambda request: next(scripts), hold_cap=0.2, verbose=True) as running:
        held = http.client.HTTPConnection(running.host, running.port, timeout=30)
        held.request("GET", "/")
        response = held.getresponse()
        assert response.read1(100) == b"data: x\n\n"
        record = running.record_for(0)
        assert record is not None and record.outcome == "hold-expired"
        paused = http.client.HTTPConnection(running.host, running.port, timeout=30)
        paused.request("GET", "/")
        assert paused.getresponse().read1(100) == b": hi\n\n"  # the server is at the pause
    # Leaving the block stops the server in the middle of the 30 s pause.
    record = running.record_for(1, timeout=5)
    assert record is not None and (record.outcome, record.step) == ("stopped", 1)
    held.close()
    paused.close()


def test_close_returns_after_an_interrupt_that_came_before_the_serve_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ctrl-C (or SIGTERM made Ctrl-C, as `ssestate serve` does) can land
    # before the standard library's loop begins; closing must not then wait
    # for that loop to stop.
    def interrupted(self: socketserver.BaseServer, poll_interval: float = 0.5) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(socketserver.BaseServer, "serve_forever", interrupted)
    server = ScriptServer(lambda request: scenario("text", 0, FAST))
    with pytest.raises(KeyboardInterrupt):
        server.serve_forever()
    closing = threading.Thread(target=server.close, daemon=True)
    closing.start()
    closing.join(10)
    assert not closing.is_alive(), "close() waited for a serve loop that never ran"
