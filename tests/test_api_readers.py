"""``ChatStream(dialect=...)`` on the captures of the Responses API, Anthropic
Messages and Gemini (``tests/captures/apis``, described in
``test_api_captures.py``).

Each capture is read with its dialect named and with ``dialect="auto"``,
whole, a byte at a time and in every chunking of ``helpers.chunkings``: the
events must be the sidecar's, ``Accumulator`` must assemble the sidecar's
``expected`` message, usage and outcome, and the metadata must be the
sidecar's.  Then what ``Accumulator.message`` writes back for each API, the
whole (non-stream) bodies of each API, and the rules that need no capture
(the templates are checked in ``test_api_templates.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import chunked, chunkings, feed_all, until_error
from hypothesis import given
from hypothesis import strategies as st

from ssestate import (
    CLOSED,
    Accumulator,
    ChatStream,
    Continuation,
    Delta,
    Done,
    Finish,
    Heartbeat,
    StreamError,
    ToolArgumentsError,
    ToolCallFragment,
    Truncated,
    Usage,
)

APIS = Path(__file__).parent / "captures" / "apis"
NAMES = sorted(f"{p.parent.name}/{p.stem}" for p in APIS.glob("*/*.sse"))


def errors(events: list[Any]) -> list[StreamError]:
    """``events``, each checked to be a ``StreamError``."""
    assert all(type(e) is StreamError for e in events), events
    return events


def load(name: str) -> tuple[bytes, dict[str, Any]]:
    return (APIS / f"{name}.sse").read_bytes(), json.loads((APIS / f"{name}.json").read_text())


def as_json(events: list[Any]) -> list[Any]:
    """Events in the sidecar's form (CLOSED left out)."""
    out = []
    for e in events:
        if e is CLOSED:
            continue
        entry = {"event": type(e).__name__}
        entry.update({f.name: getattr(e, f.name) for f in dataclasses.fields(e)})
        out.append(entry)
    result: list[Any] = json.loads(json.dumps(out))
    return result


def read(name: str, chunks: list[bytes], dialect: str) -> tuple[list[Any], str | None, ChatStream]:
    _, side = load(name)
    stream = ChatStream(side["status"], side["content_type"], dialect=dialect)
    events, error = until_error(stream, chunks)
    return events, None if error is None else type(error).__name__, stream


def assembled(events: list[Any]) -> dict[str, Any]:
    acc = Accumulator()
    for event in events:
        acc.feed(event)
    choices = {
        str(i): {
            "content": c.content,
            "reasoning": c.reasoning,
            "refusal": c.refusal,
            "role": c.role,
            "finish_reason": c.finish_reason,
            "native_finish_reason": c.native_finish_reason,
            "tool_calls": [{"id": t.id, "name": t.name, "arguments": t.arguments} for t in c.tool_calls],
        }
        for i, c in acc.choices.items()
    }
    usage = (
        None
        if acc.usage is None
        else {
            "prompt_tokens": acc.usage.prompt_tokens,
            "completion_tokens": acc.usage.completion_tokens,
            "total_tokens": acc.usage.total_tokens,
        }
    )
    return {"choices": choices, "usage": usage, "outcome": acc.outcome}


@pytest.mark.parametrize("dialect", ["named", "auto"])
@pytest.mark.parametrize("name", NAMES)
def test_capture_reads_as_its_sidecar_says(name: str, dialect: str) -> None:
    body, side = load(name)
    given_dialect = side["dialect"] if dialect == "named" else "auto"
    for how, chunks in chunkings(body):
        events, error, stream = read(name, chunks, given_dialect)
        assert as_json(events) == side["events"], how
        assert error == side["raises"], how
        assert assembled(events) == side["expected"], how
        metadata = {k: getattr(stream, k) for k in ("response_id", "model", "created", "system_fingerprint")}
        assert metadata == side["metadata"], how


@pytest.mark.parametrize("name", NAMES)
def test_auto_names_the_dialect_it_found(name: str) -> None:
    body, side = load(name)
    events, _, stream = read(name, [body], "auto")
    # A stream that is nothing but an error says nothing of its API.
    only_errors = all(type(e) in (StreamError, Truncated, Done) or e is CLOSED for e in events)
    assert stream.dialect == ("auto" if only_errors else side["dialect"])


def test_auto_reads_errors_until_a_payload_names_the_api() -> None:
    # Two errors (one a gateway's, with an id and a model) come before the
    # first Anthropic event: each is a StreamError, the metadata of the first
    # carries over, and the stream is then read as Anthropic.
    first = {"id": "gw-1", "model": "gw", "error": {"message": "retrying upstream", "type": "overloaded_error"}}
    second = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    start = {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "role": "assistant"}}
    text = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}
    body = b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in (first, second, start, text))
    stream = ChatStream()
    events = stream.feed(body)
    assert [type(e).__name__ for e in events] == ["StreamError", "StreamError", "Delta", "Delta"]
    assert [e.message for e in events if type(e) is StreamError] == ["retrying upstream", "Overloaded"]
    assert (stream.dialect, stream.response_id, stream.model) == ("anthropic", "gw-1", "gw")
    assert [e.content for e in events if type(e) is Delta] == ["", "hi"]


@pytest.mark.parametrize("event_line", [b"event: error\n", b""], ids=["event line", "data only"])
def test_auto_reads_a_flat_responses_error_first_as_the_responses_reader_does(event_line: bytes) -> None:
    # The documented error shape has no error member; a gateway may drop the
    # event line.  Nothing names the API, and the error is all there is.
    flat = {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": None}
    body = event_line + b"data: " + json.dumps(flat).encode() + b"\n\n"
    for how, chunks in chunkings(body):
        named = feed_all(ChatStream(dialect="openai-responses"), chunks)
        auto = feed_all(ChatStream(), chunks)
        assert auto == named, how
        error = auto[0]
        assert type(error) is StreamError
        assert (error.code, error.message, error.type) == ("rate_limit_exceeded", "Slow down", None)


@given(name=st.sampled_from(NAMES), data=st.data())
def test_any_chunking_of_a_capture_reads_the_same(name: str, data: st.DataObject) -> None:
    body, side = load(name)
    chunks = data.draw(chunked(body), label="chunks")
    events, error, _ = read(name, chunks, data.draw(st.sampled_from([side["dialect"], "auto"])))
    assert (as_json(events), error) == (side["events"], side["raises"])


def damaged(body: bytes, draw: Any) -> bytes:
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(0, len(body) - 1)))
        new = draw(st.sampled_from([b"", b"\n", b"\r", b"}", b'"', b"\\", b"\xff", b"{", b"\x00", b":", b"data: "]))
        body = body[:at] + new + body[at + draw(st.integers(0, 8)) :]
    return body


@given(name=st.sampled_from(NAMES), data=st.data(), strict=st.booleans())
def test_damaged_captures_never_crash_and_read_the_same_under_any_chunking(
    name: str, data: st.DataObject, strict: bool
) -> None:
    body, side = load(name)
    body = damaged(body, data.draw)
    dialect = data.draw(st.sampled_from([side["dialect"], "auto"]))
    want = until_error(ChatStream(dialect=dialect, strict=strict, max_event_size=4096), [body] if body else [])
    chunks = data.draw(chunked(body), label="chunks")
    got = until_error(ChatStream(dialect=dialect, strict=strict, max_event_size=4096), chunks)
    assert (got[0], str(got[1])) == (want[0], str(want[1]))


# -- the message written back -------------------------------------------------------------


def accumulate(name: str) -> Accumulator:
    body, side = load(name)
    acc = Accumulator()
    for event in ChatStream(dialect=side["dialect"]).feed(body) + ChatStream(dialect=side["dialect"]).feed(b""):
        acc.feed(event)
    events, _, _ = read(name, [body], side["dialect"])
    acc = Accumulator()
    for event in events:
        acc.feed(event)
    return acc


def test_anthropic_message_keeps_thinking_blocks_with_their_signatures() -> None:
    acc = accumulate("anthropic/thinking")
    message = acc.message(0, dialect="anthropic")
    kinds = [block["type"] for block in message["content"]]
    assert kinds == ["thinking", "redacted_thinking", "text"]
    thinking = message["content"][0]
    assert thinking["thinking"] == acc.choices[0].reasoning and thinking["signature"].startswith("EqQBCkYI")
    assert message["content"][2] == {"type": "text", "text": acc.choices[0].content}


def test_anthropic_message_has_tool_use_blocks_with_parsed_input() -> None:
    message = accumulate("anthropic/parallel-tool-calls").message(0, dialect="anthropic")
    assert message["role"] == "assistant"
    assert [b["type"] for b in message["content"]] == ["text", "tool_use", "tool_use"]
    assert message["content"][1] == {
        "type": "tool_use",
        "id": "toolu_01RX68weRSquLx6HUTj65iBo",
        "name": "get_weather",
        "input": {"city": "Paris"},
    }
    assert accumulate("anthropic/tool-no-args").message(0, dialect="anthropic")["content"][-1]["input"] == {}


def test_a_cut_tool_input_cannot_be_sent_back_parsed() -> None:
    acc = accumulate("anthropic/max-tokens-mid-tool")
    with pytest.raises(ToolArgumentsError):
        acc.message(0, dialect="anthropic")
    assert acc.message(0)["tool_calls"][0]["function"]["arguments"] == acc.choices[0].tool_calls[0].arguments


def test_gemini_message_puts_each_thought_signature_on_its_part() -> None:
    message = accumulate("gemini/function-calls").message(0, dialect="gemini")
    assert message["role"] == "model"
    first, second = message["parts"]
    assert first["functionCall"] == {"name": "get_weather", "args": {"location": "Boston, MA"}}
    assert first["thoughtSignature"].startswith("CpcCAQbw") and "thoughtSignature" not in second
    text = accumulate("gemini/thoughts").message(0, dialect="gemini")["parts"][0]
    assert set(text) == {"text", "thoughtSignature"}


def test_responses_message_is_reasoning_then_text_then_calls() -> None:
    items = accumulate("openai-responses/reasoning-summary").message(0, dialect="openai-responses")
    assert items[0]["type"] == "reasoning" and items[0]["encrypted_content"].startswith("gAAAAA")
    content = load("openai-responses/reasoning-summary")[1]["expected"]["choices"]["0"]["content"]
    assert items[1:] == [{"role": "assistant", "content": content}]
    calls = accumulate("openai-responses/parallel-tool-calls").message(0, dialect="openai-responses")
    assert [i.get("type") for i in calls if i.get("type") == "function_call"] == ["function_call", "function_call"]
    assert all(i["call_id"].startswith("call_") for i in calls if i.get("type") == "function_call")


def test_an_unknown_dialect_is_refused() -> None:
    with pytest.raises(ValueError, match="dialect must be one of"):
        ChatStream(dialect="cohere")
    acc = accumulate("anthropic/text")
    with pytest.raises(ValueError, match="no message shape"):
        acc.message(0, dialect="cohere")


# -- whole bodies ---------------------------------------------------------------------------


def whole(body: Any, dialect: str, status: int = 200) -> list[Any]:
    stream = ChatStream(status, "application/json", dialect=dialect)
    return stream.feed(json.dumps(body).encode()) + stream.feed(b"")


ANTHROPIC_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
        {"type": "text", "text": "Hi."},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 5, "cache_read_input_tokens": 2, "output_tokens": 7},
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1768300000,
    "model": "gpt-x",
    "status": "incomplete",
    "incomplete_details": {"reason": "max_output_tokens"},
    "output": [
        {"type": "message", "content": [{"type": "output_text", "text": "Hello"}]},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
    ],
    "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
}
GEMINI = [
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}], "modelVersion": "gemini-x"},
    {
        "candidates": [{"content": {"parts": [{"text": "lo"}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 2},
    },
]


@pytest.mark.parametrize("dialect", ["named", "auto"])
def test_whole_responses_read_as_their_streams(dialect: str) -> None:
    got = whole(ANTHROPIC_MESSAGE, "anthropic" if dialect == "named" else "auto")
    assert got == [
        Delta(0, "", "assistant"),
        Usage(7, 7, 14, {**ANTHROPIC_MESSAGE["usage"]}),  # type: ignore[dict-item]
        Delta(0, "", None, "hmm"),
        Continuation(0, "thinking", {"type": "thinking", "thinking": "hmm", "signature": "c2ln"}, 0),
        Delta(0, "Hi."),
        ToolCallFragment(0, 2, "toolu_1", "f", ""),
        ToolCallFragment(0, 2, None, None, '{"a":1}'),
        Finish(0, "tool_calls", "tool_use"),
        Done(False),
    ]
    got = whole(RESPONSE, "openai-responses" if dialect == "named" else "auto")
    assert got == [
        Delta(0, "", "assistant"),
        Delta(0, "Hello"),
        ToolCallFragment(0, 1, "call_1", "f", "{}"),
        Finish(0, "length", "max_output_tokens"),
        Usage(3, 4, 7, RESPONSE["usage"]),  # type: ignore[arg-type]
        Done(False),
    ]
    got = whole(GEMINI, "gemini" if dialect == "named" else "auto")
    assert got == [
        Delta(0, "", "assistant"),
        Delta(0, "Hel"),
        Delta(0, "lo"),
        Finish(0, "stop", "STOP"),
        Usage(2, 0, 0, {"promptTokenCount": 2}),
        Done(False),
    ]


def test_error_bodies_of_each_api() -> None:
    gemini = [{"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}]
    [error] = whole(gemini, "gemini", 429)
    assert (error.status, error.code, error.message, error.type) == (429, "429", "slow down", "RESOURCE_EXHAUSTED")
    anthropic = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    [error] = whole(anthropic, "anthropic", 529)
    assert (error.status, error.code, error.message, error.type) == (529, None, "Overloaded", "overloaded_error")
    [error] = whole({"object": "response", "output": "not a list"}, "openai-responses")
    assert type(error) is StreamError and error.status == 200


# -- rules that need no capture ---------------------------------------------------------------


def sse(*payloads: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return b"".join((head + "data: " + json.dumps(p) + "\n\n").encode() for p in payloads)


def test_responses_arguments_and_text_only_in_done_events_are_not_doubled() -> None:
    body = sse(
        {"type": "response.created", "response": {"id": "r", "model": "m"}},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hel"},
        {"type": "response.output_text.done", "output_index": 0, "content_index": 0, "text": "Hello"},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": '{"a"'},
        {"type": "response.function_call_arguments.done", "output_index": 1, "arguments": '{"a":1}', "name": "f"},
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {"type": "function_call", "arguments": '{"a":1}'},
        },
        {"type": "response.completed", "response": {"status": "completed"}},
    )
    events = ChatStream(dialect="openai-responses").feed(body)
    assert events == [
        Delta(0, "", "assistant"),
        Delta(0, "Hel"),
        Delta(0, "lo"),
        ToolCallFragment(0, 1, None, None, '{"a"'),
        ToolCallFragment(0, 1, None, "f", ":1}"),  # the name comes with .done
        Finish(0, "tool_calls", "completed"),
        Done(True),
    ]


def test_anthropic_usage_is_merged_never_replaced() -> None:
    body = sse(
        {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 9, "input_tokens": None},
        },
    )
    events = ChatStream(dialect="anthropic").feed(body)
    assert events[-1] == Usage(10, 9, 19, {"input_tokens": 10, "output_tokens": 9})
    assert ChatStream(dialect="anthropic").feed(body + b"")[-2] == Finish(0, "stop", "end_turn")


def test_a_keepalive_and_a_ping_are_heartbeats_in_any_dialect_that_sends_them() -> None:
    assert ChatStream().feed(sse({"type": "keepalive", "sequence_number": 3})) == [Heartbeat("keepalive")]
    assert ChatStream().feed(sse({"type": "ping"}, event="ping")) == [Heartbeat("ping")]


def test_gemini_raw_error_lines_need_not_end_a_block() -> None:
    raw = b'{\r\n  "error": {\r\n    "code": 503,\r\n    "message": "busy"\r\n  }\r\n}\r\n'
    stream = ChatStream(dialect="gemini")
    [error] = errors(stream.feed(raw))  # at once: the last line closed the object
    assert (error.code, error.message) == ("503", "busy")
    assert stream.feed(b"") == [Truncated("partial-event", len(raw))]
    # Lines that are no JSON at all are ignored, as the format says.
    assert ChatStream(dialect="gemini").feed(b"what: ever\n}\n\n") == []


# -- payloads of every shape ---------------------------------------------------------------

# Every JSON payload of every capture, with its SSE event name.
PAYLOADS: dict[str, list[tuple[str | None, Any]]] = {}
for _name in NAMES:
    _dialect = _name.split("/")[0]
    for _block in load(_name)[0].replace(b"\r\n", b"\n").split(b"\n\n"):
        _lines = _block.decode().split("\n")
        _event = next((line[7:] for line in _lines if line.startswith("event: ")), None)
        for _line in _lines:
            try:
                _payload = json.loads(_line[5:]) if _line.startswith("data:") else None
            except ValueError:  # the payload a cut capture ends inside
                continue
            if type(_payload) is dict:
                PAYLOADS.setdefault(_dialect, []).append((_event, _payload))

ODD_VALUES = [None, 0, -1, 2.5, "", "x", "STOP", [], [None], {}, {"type": "text"}, True]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if type(value) is dict:
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif type(value) is list:
        for n, item in enumerate(value):
            found += paths(item, (*prefix, n))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if type(value) is dict:
        return {**value, head: replaced(value[head], rest, new)}
    copy = list(value)
    copy[head] = replaced(value[head], rest, new)
    return copy


@st.composite
def odd_streams(draw: st.DrawFn, dialect: str | None = None) -> tuple[str, bytes]:
    """A dialect (``dialect`` if given), and a stream of its captured
    payloads, some of them with a member of the wrong type or an odd value."""
    if dialect is None:
        dialect = draw(st.sampled_from(sorted(PAYLOADS)))
    pool = PAYLOADS[dialect]
    out = []
    for _ in range(draw(st.integers(1, 12))):
        event, payload = draw(st.sampled_from(pool))
        if draw(st.booleans()):
            path = draw(st.sampled_from(paths(payload)[1:] or [()]))
            payload = replaced(payload, path, draw(st.sampled_from(ODD_VALUES)))
        head = f"event: {event}\n" if event and draw(st.booleans()) else ""
        out.append((head + "data: " + json.dumps(payload, ensure_ascii=False) + "\n\n").encode())
    return dialect, b"".join(out)


@given(case=odd_streams(), data=st.data())
def test_payloads_of_any_shape_read_the_same_under_any_chunking(case: tuple[str, bytes], data: st.DataObject) -> None:
    dialect, body = case
    for name in (dialect, "auto"):
        want = until_error(ChatStream(dialect=name), [body])
        got = until_error(ChatStream(dialect=name), data.draw(chunked(body), label="chunks"))
        assert (got[0], str(got[1])) == (want[0], str(want[1]))
        acc = Accumulator()
        for event in want[0]:
            acc.feed(event)
        for choice in acc.choices:
            for shape in ("openai-chat", "openai-responses", "anthropic", "gemini"):
                with contextlib.suppress(ToolArgumentsError):  # arguments that are not JSON
                    acc.message(choice, dialect=shape)
        assert acc.outcome in ("error", "in-progress", "truncated", "length", "filtered", "complete")


def test_every_member_of_every_kind_of_payload_may_hold_any_value() -> None:
    # One payload of each kind (its type, or its set of keys), every member
    # replaced by each odd value in turn: the reader reads on (a fault is a
    # ProtocolError, never another exception) and the machine stays usable.
    kinds: dict[tuple[str, str], tuple[str | None, Any]] = {}
    for dialect, pool in PAYLOADS.items():
        for event, payload in pool:
            kinds.setdefault((dialect, str(payload.get("type") or sorted(payload))), (event, payload))
    for (dialect, _), (event, payload) in sorted(kinds.items()):
        for path in paths(payload)[1:]:  # a member, not the payload itself
            for value in ODD_VALUES:
                text = json.dumps(replaced(payload, path, value))
                head = f"event: {event}\n" if event else ""
                for name in (dialect, "auto"):
                    stream = ChatStream(dialect=name)
                    events, error = until_error(stream, [(head + "data: " + text + "\n\n").encode()])
                    assert error is None, (dialect, path, value)
                    assert events[-1] is CLOSED


def test_whole_responses_of_every_part() -> None:
    message = {
        "type": "message",
        "content": [None, {"type": "redacted_thinking", "data": "ZGF0YQ=="}, {"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
    }
    assert whole(message, "anthropic") == [
        Delta(0, "", "assistant"),
        Continuation(0, "redacted_thinking", {"type": "redacted_thinking", "data": "ZGF0YQ=="}, 1),
        Delta(0, "ok"),
        Finish(0, "stop", "end_turn"),
        Done(False),
    ]
    reasoning = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "e"}
    response = {
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "content_filter"},
        "output": [
            "junk",
            reasoning,
            {"type": "message", "content": [{"type": "refusal", "refusal": "no"}, None]},
            {"type": "web_search_call", "status": "completed"},
        ],
    }
    assert whole(response, "openai-responses") == [
        Delta(0, "", "assistant"),
        Delta(0, "", None, "think"),
        Continuation(0, "reasoning_item", reasoning, 1),
        Delta(0, "", None, None, "no"),
        Finish(0, "content_filter", "content_filter"),
        Done(False),
    ]
    # A failed response carries an error member: it reads as an error body.
    failed = {**response, "status": "failed", "error": {"code": "server_error", "message": "boom"}}
    [error] = whole(failed, "openai-responses")
    assert (error.status, error.code, error.message) == (200, "server_error", "boom")
    [error] = whole([{"candidates": []}, "junk"], "gemini")
    assert type(error) is StreamError


def test_raw_json_lines_of_gemini() -> None:
    # A list of one error object, as Gemini writes error bodies.
    lines = b'[{\n  "error": {"code": 500, "message": "m", "status": "INTERNAL"}\n}\n]\n'
    for dialect in ("gemini", "auto"):
        [error] = errors(ChatStream(dialect=dialect).feed(lines))
        assert (error.code, error.type) == ("500", "INTERNAL")
    # Raw lines that never make an object are dropped after 1 MiB.
    stream = ChatStream(dialect="gemini", max_event_size=1 << 22)
    assert stream.feed(b"{\n" + b'  "pad": "' + b"x" * (1 << 20) + b'",\n}\n') == []
    assert errors(stream.feed(b'{"error": {"message": "late"}\n}\n'))[0].message == "late"


def test_a_chat_message_may_carry_the_reasoning_back() -> None:
    acc = Accumulator()
    for event in ChatStream(dialect="openai-chat").feed(
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"r","content":"c"}}]}\n\n'
    ):
        acc.feed(event)
    assert acc.message(0, reasoning_key="reasoning_content") == {
        "role": "assistant",
        "content": "c",
        "reasoning_content": "r",
    }


def test_anthropic_deltas_of_a_block_that_never_started() -> None:
    body = sse(
        {"type": "message_start", "message": {}},
        {"type": "content_block_delta", "index": 3, "delta": {"type": "thinking_delta", "thinking": "t"}},
        {"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
        {"type": "content_block_stop", "index": 3},
    )
    assert ChatStream(dialect="anthropic").feed(body) == [Delta(0, "", "assistant"), Delta(0, "", None, "t")]


def test_odd_whole_bodies() -> None:
    # Not a body of the API named: an error of the status it came with.
    for body, dialect in [({"foo": 1}, d) for d in ("openai-chat", "openai-responses", "anthropic", "gemini")]:
        [error] = whole(body, dialect)
        assert type(error) is StreamError and error.status == 200, dialect
    # A chat.completion found by auto; a response whose status says nothing.
    [error] = whole([1, 2], "auto")
    assert type(error) is StreamError
    completion = {"object": "chat.completion", "choices": [{"index": 0, "message": {"refusal": "no"}}]}
    assert whole(completion, "auto") == [Delta(0, "", None, None, "no"), Done(False)]
    odd = {"object": "response", "status": "queued", "output": [{"type": "reasoning", "summary": ["x"]}]}
    assert whole(odd, "openai-responses") == [Delta(0, "", "assistant"), Done(False)]


def test_replayed_messages_keep_ids_and_refusals() -> None:
    acc = Accumulator()
    events: list[Any] = [
        Delta(0, "", "assistant", refusal="no"),
        ToolCallFragment(0, 0, "id-1", "f", "{}"),
        Delta(0, "", None, "thinking only"),
    ]
    for event in events:
        acc.feed(event)
    assert acc.message(0)["refusal"] == "no"
    assert acc.message(0, dialect="gemini")["parts"] == [{"functionCall": {"name": "f", "args": {}, "id": "id-1"}}]
    assert acc.message(0, dialect="openai-responses") == [
        {"role": "assistant", "content": "no"},
        {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "id-1"},
    ]
    empty = sse({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": ""}})
    assert ChatStream(dialect="anthropic").feed(empty) == []


def test_a_continuation_may_come_first() -> None:
    acc = Accumulator()
    acc.feed(Continuation(2, "thought_signature", "c2ln", None))
    assert acc.message(2, dialect="gemini") == {"role": "model", "parts": []}
    assert [k.data for k in acc.choices[2].continuations] == ["c2ln"]


def test_a_whole_message_whose_input_cannot_be_written_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def dumps(*args: Any, **kwargs: Any) -> str:
        raise RecursionError("maximum recursion depth exceeded while encoding a JSON object")

    body = json.dumps(ANTHROPIC_MESSAGE).encode()
    monkeypatch.setattr(json, "dumps", dumps)
    stream = ChatStream(200, "application/json", dialect="anthropic")
    [error] = errors(stream.feed(body) + stream.feed(b""))
    assert error.status == 200


HUGE_TEXT = "長い文章 " * 9000  # 117 KB of UTF-8: read from its bytes, never decoded whole

HUGE_EVENTS: dict[str, list[tuple[str | None, dict[str, Any]]]] = {
    "openai-responses": [
        ("response.output_text.delta", {"type": "response.output_text.delta", "content_index": 0, "delta": HUGE_TEXT}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "content_index": 0, "delta": "."}),
    ],
    "anthropic": [
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": HUGE_TEXT}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "."}},
        ),
    ],
    "gemini": [
        (None, {"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": HUGE_TEXT}]}}]}),
        (None, {"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": "."}]}}]}),
    ],
}


@pytest.mark.parametrize("dialect", sorted(HUGE_EVENTS))
def test_a_huge_text_of_each_api(dialect: str) -> None:
    body = b"".join(
        (f"event: {name}\n" if name else "").encode() + b"data: " + json.dumps(payload).encode() + b"\n\n"
        for name, payload in HUGE_EVENTS[dialect]
    )
    for size in (len(body), 1460, 65536):
        events, error = until_error(
            ChatStream(dialect=dialect), [body[i : i + size] for i in range(0, len(body), size)]
        )
        assert error is None
        assert [e.content for e in events if type(e) is Delta and e.content] == [HUGE_TEXT, "."]


def test_a_tool_call_without_an_id_is_written_back_without_one() -> None:
    # Gemini gives no id to its calls (and a gateway may drop it): the item
    # written back for the other APIs leaves the member out, not null.
    acc = Accumulator()
    acc.feed(ToolCallFragment(0, 0, None, "lookup", '{"q": "x"}'))
    assert acc.message(0, dialect="openai-responses") == [
        {"type": "function_call", "name": "lookup", "arguments": '{"q": "x"}'}
    ]
    assert acc.message(0, dialect="anthropic") == {
        "role": "assistant",
        "content": [{"type": "tool_use", "name": "lookup", "input": {"q": "x"}}],
    }


@pytest.mark.parametrize("dialect", ["auto", "openai-chat", "openai-responses", "anthropic", "gemini"])
@pytest.mark.parametrize("payload", [{"code": "server_error", "message": "Oops"}, {"type": "error", "message": "Oops"}])
def test_an_error_event_without_an_error_member_is_read_alike_by_every_reader(
    dialect: str, payload: dict[str, Any]
) -> None:
    # A flat payload's type names the event, not a kind of error: None.
    body = b"event: error\ndata: " + json.dumps(payload).encode() + b"\n\n"
    events = ChatStream(dialect=dialect).feed(body)
    assert [(e.code, e.message, e.type) for e in events if type(e) is StreamError] == [
        (payload.get("code"), "Oops", None)
    ]


def test_an_anthropic_usage_report_edited_by_the_caller_changes_no_later_one() -> None:
    # The reports are merged (message_start, then message_delta); each Usage
    # must hold its own raw dict, or editing one would change the next.
    start = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":'
        b'{"input_tokens":25,"cache_read_input_tokens":1000,"output_tokens":1}}}\n\n'
    )
    delta = (
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":12}}\n\n'
    )
    for edit in (False, True):
        stream = ChatStream(dialect="anthropic")
        (first,) = [e for e in stream.feed(start) if type(e) is Usage]
        if edit:
            dict.pop(first.raw, "cache_read_input_tokens")  # type: ignore[call-overload]
        (last,) = [e for e in stream.feed(delta) if type(e) is Usage]
        assert (last.prompt_tokens, last.completion_tokens, last.total_tokens) == (1025, 12, 1037), edit


def _responses_turn(items: list[tuple[str, str]]) -> bytes:
    """A Responses stream whose output items are ``items`` in order: each a
    ("reasoning", id), ("call", call_id), ("search", id) or ("message", text)."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "resp_1", "output": []}}]
    for n, (kind, value) in enumerate(items):
        if kind == "reasoning":
            item: dict[str, Any] = {"id": value, "type": "reasoning", "summary": [], "encrypted_content": "e" + value}
        elif kind == "call":
            item = {"id": "fc_" + value, "type": "function_call", "call_id": value, "name": "f", "arguments": "{}"}
        elif kind == "search":  # a tool the server ran: not sent back
            item = {"id": value, "type": "web_search_call", "status": "completed"}
        else:
            item = {"id": "msg_" + str(n), "type": "message", "role": "assistant", "content": []}
        events.append({"type": "response.output_item.added", "output_index": n, "item": item})
        if kind == "message":
            delta = {"type": "response.output_text.delta", "output_index": n, "content_index": 0, "delta": value}
            events.append(delta)
        events.append({"type": "response.output_item.done", "output_index": n, "item": item})
    events.append({"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}})
    return b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), json.dumps(e).encode()) for e in events)


@pytest.mark.parametrize(
    "items",
    [
        [("reasoning", "rs_a"), ("call", "call_1"), ("reasoning", "rs_b"), ("call", "call_2")],
        [("reasoning", "rs_a"), ("message", "Checking."), ("call", "call_1")],
        [("reasoning", "rs_a"), ("call", "call_1"), ("reasoning", "rs_b"), ("message", "Done.")],
        [("message", "Hi."), ("call", "call_1")],
        [("reasoning", "rs_a"), ("search", "ws_1"), ("reasoning", "rs_b"), ("message", "Found it.")],
        [("reasoning", "rs_a"), ("message", "Calling f."), ("reasoning", "rs_b"), ("call", "call_1")],
    ],
)
def test_a_responses_turn_is_replayed_in_the_order_it_was_sent(items: list[tuple[str, str]]) -> None:
    # Each reasoning item must be followed by the item it led to: the turn
    # goes back in the order of its output items.
    acc = Accumulator()
    stream = ChatStream(dialect="openai-responses")
    for event in stream.feed(_responses_turn(items)) + stream.feed(b""):
        acc.feed(event)
    assert acc.outcome == "complete"
    replayed = [
        ("reasoning", i["id"])
        if i.get("type") == "reasoning"
        else ("call", i["call_id"])
        if i.get("type") == "function_call"
        else ("message", i["content"])
        for i in acc.message(0, dialect="openai-responses")
    ]
    assert replayed == [item for item in items if item[0] != "search"]
