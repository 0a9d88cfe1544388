"""Accumulator examples: every assembly rule and every outcome of SPEC §4,
fed with hand-built event sequences."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest
from helpers import feed_all

from ssestate import (
    CLOSED,
    NEED_DATA,
    Accumulator,
    ChatEvent,
    ChatStream,
    Delta,
    Done,
    Finish,
    Heartbeat,
    Sentinel,
    ServerSentEvent,
    StreamError,
    ToolArgumentsError,
    ToolCallFragment,
    Truncated,
    Usage,
)


def fed(events: Iterable[ChatEvent | Sentinel]) -> Accumulator:
    acc = Accumulator()
    for event in events:
        acc.feed(event)
    return acc


# --- text ------------------------------------------------------------------


def test_empty_accumulator() -> None:
    acc = Accumulator()
    assert dict(acc.choices) == {}
    assert acc.usage is None
    assert acc.error is None
    assert acc.done is None
    assert acc.truncated is None
    assert acc.outcome == "in-progress"


def test_content_fragments_are_joined_in_order() -> None:
    acc = fed([Delta(0, "", role="assistant"), Delta(0, "Hel"), Delta(0, "lo, "), Delta(0, "世界 🌍")])
    choice = acc.choices[0]
    assert choice.content == "Hello, 世界 🌍"
    assert choice.content == "Hello, 世界 🌍"  # reading twice gives the same text
    assert choice.role == "assistant"
    assert choice.reasoning is None
    assert choice.refusal is None
    assert choice.tool_calls == []
    assert choice.finish_reason is None
    assert choice.logprobs is None
    assert choice.index == 0


def test_content_read_between_fragments() -> None:
    acc = Accumulator()
    acc.feed(Delta(0, "a"))
    assert acc.choices[0].content == "a"
    acc.feed(Delta(0, "b"))
    acc.feed(Delta(0, "c"))
    assert acc.choices[0].content == "abc"
    acc.feed(Delta(0, "d"))
    assert acc.choices[0].content == "abcd"


def test_choice_without_content_has_empty_content() -> None:
    acc = fed([Delta(0, role="assistant")])
    assert acc.choices[0].content == ""


def test_role_is_assigned_not_appended() -> None:
    # Old Ollama, OpenRouter, DashScope repeat the role on every chunk.
    acc = fed([Delta(0, "a", role="assistant"), Delta(0, "b", role="assistant"), Delta(0, "c", role="assistant")])
    assert acc.choices[0].role == "assistant"
    assert acc.choices[0].content == "abc"


def test_role_changes_to_the_latest_and_empty_role_is_absent() -> None:
    acc = fed([Delta(0, role="assistant"), Delta(0, role="tool"), Delta(0, "x", role="")])
    assert acc.choices[0].role == "tool"


def test_reasoning_and_refusal_are_joined() -> None:
    acc = fed(
        [
            Delta(0, role="assistant", reasoning="Let me "),
            Delta(0, reasoning="think."),
            Delta(0, "Answer"),
            Delta(1, refusal="I can't "),
            Delta(1, refusal="help."),
        ]
    )
    assert acc.choices[0].reasoning == "Let me think."
    assert acc.choices[0].content == "Answer"
    assert acc.choices[0].refusal is None
    assert acc.choices[1].refusal == "I can't help."
    assert acc.choices[1].content == ""
    assert acc.choices[1].reasoning is None
    assert acc.choices[1].role is None


def test_empty_reasoning_and_refusal_count_as_absent() -> None:
    acc = fed([Delta(0, "x", reasoning="", refusal="")])
    assert acc.choices[0].reasoning is None
    assert acc.choices[0].refusal is None


def test_choices_are_keyed_by_wire_index() -> None:
    acc = fed([Delta(1, "one"), Delta(1, " more")])
    assert list(acc.choices) == [1]
    assert 0 not in acc.choices
    assert acc.choices[1].content == "one more"
    assert acc.choices[1].index == 1


def test_interleaved_choices_in_order_first_seen() -> None:
    acc = fed([Delta(2, "c"), Delta(0, "a"), Delta(2, "C"), Delta(1, "b"), Delta(0, "A")])
    assert list(acc.choices) == [2, 0, 1]
    assert [c.content for c in acc.choices.values()] == ["cC", "aA", "b"]


def test_logprobs_content_entries_are_concatenated() -> None:
    tok1 = {"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}
    tok2 = {"token": "!", "logprob": -0.2, "bytes": [33], "top_logprobs": []}
    acc = fed(
        [
            Delta(0, "", role="assistant", logprobs={"content": [], "refusal": None}),
            Delta(0, "Hi", logprobs={"content": [tok1], "refusal": None}),
            Delta(0, "!", logprobs={"content": [tok2], "refusal": None}),
        ]
    )
    assert acc.choices[0].logprobs == [tok1, tok2]


def test_logprobs_of_other_shapes_are_ignored() -> None:
    acc = fed([Delta(0, "a", logprobs=[1, 2]), Delta(0, "b", logprobs={"content": None}), Delta(0, "c", logprobs={})])
    assert acc.choices[0].logprobs is None
    assert acc.choices[0].content == "abc"


# --- tool calls --------------------------------------------------------------


def test_tool_call_fragments_assemble() -> None:
    args = json.dumps({"city": "Paris", "unit": "°C"})
    acc = fed(
        [
            Delta(0, role="assistant"),
            ToolCallFragment(0, 0, "call_1", "get_weather", ""),
            ToolCallFragment(0, 0, None, None, args[:5]),
            ToolCallFragment(0, 0, None, None, args[5:17]),
            ToolCallFragment(0, 0, None, None, args[17:]),
            Finish(0, "tool_calls"),
        ]
    )
    (call,) = acc.choices[0].tool_calls
    assert (call.index, call.id, call.name, call.arguments) == (0, "call_1", "get_weather", args)
    assert call.parsed_arguments() == {"city": "Paris", "unit": "°C"}
    assert acc.choices[0].finish_reason == "tool_calls"


def test_tool_call_first_non_empty_id_wins() -> None:
    acc = fed(
        [
            ToolCallFragment(0, 0, "", "f", ""),
            ToolCallFragment(0, 0, None, None, "{"),
            ToolCallFragment(0, 0, "call_a", None, "}"),
            ToolCallFragment(0, 0, "call_b", None, ""),
            ToolCallFragment(0, 0, "", None, ""),
        ]
    )
    call = acc.choices[0].tool_calls[0]
    assert call.id == "call_a"
    assert call.arguments == "{}"


def test_tool_call_without_any_id() -> None:
    acc = fed([ToolCallFragment(0, 0, None, "f", "{}")])
    call = acc.choices[0].tool_calls[0]
    assert call.id is None
    assert call.to_dict() == {"type": "function", "function": {"name": "f", "arguments": "{}"}}


def test_tool_call_name_split_across_fragments_is_appended() -> None:
    acc = fed(
        [
            ToolCallFragment(0, 0, "c", "get_", ""),
            ToolCallFragment(0, 0, None, "wea", ""),
            ToolCallFragment(0, 0, None, "ther", "{}"),
        ]
    )
    assert acc.choices[0].tool_calls[0].name == "get_weather"


def test_tool_call_repeated_whole_name_is_ignored() -> None:
    # SGLang / LiteLLM style: type, and sometimes the name, repeated on each fragment.
    acc = fed(
        [
            ToolCallFragment(0, 0, "c", "get_weather", ""),
            ToolCallFragment(0, 0, None, "get_weather", '{"a":'),
            ToolCallFragment(0, 0, None, "", "1}"),
            ToolCallFragment(0, 0, None, None, ""),
            ToolCallFragment(0, 0, None, "get_weather", ""),
        ]
    )
    call = acc.choices[0].tool_calls[0]
    assert call.name == "get_weather"
    assert call.arguments == '{"a":1}'


def test_tool_call_name_arriving_after_arguments() -> None:
    acc = fed([ToolCallFragment(0, 0, "c", None, "{}"), ToolCallFragment(0, 0, None, "late", "")])
    call = acc.choices[0].tool_calls[0]
    assert call.name == "late"
    assert call.arguments == "{}"


def test_parallel_tool_calls_are_ordered_by_index() -> None:
    acc = fed(
        [
            ToolCallFragment(0, 2, "c2", "g", '{"x":'),
            ToolCallFragment(0, 0, "c0", "f", "[1,"),
            ToolCallFragment(0, 2, None, None, "2}"),
            ToolCallFragment(0, 0, None, None, "2]"),
            ToolCallFragment(0, 1, "c1", "h", "null"),
        ]
    )
    calls = acc.choices[0].tool_calls
    assert [(c.index, c.id, c.name, c.arguments) for c in calls] == [
        (0, "c0", "f", "[1,2]"),
        (1, "c1", "h", "null"),
        (2, "c2", "g", '{"x":2}'),
    ]
    assert [c.parsed_arguments() for c in calls] == [[1, 2], None, {"x": 2}]


def test_tool_calls_of_different_choices_are_separate() -> None:
    acc = fed([ToolCallFragment(1, 0, "a", "f", "{}"), ToolCallFragment(0, 0, "b", "g", "[]")])
    assert acc.choices[1].tool_calls[0].id == "a"
    assert acc.choices[0].tool_calls[0].id == "b"
    assert list(acc.choices) == [1, 0]


def test_parsed_arguments_error_names_call_and_position() -> None:
    acc = fed([ToolCallFragment(0, 3, "call_9", "lookup", '{"q": "x",'), ToolCallFragment(0, 3, None, None, " }")])
    call = acc.choices[0].tool_calls[0]
    with pytest.raises(ToolArgumentsError) as info:
        call.parsed_arguments()
    err = info.value
    assert isinstance(err, json.JSONDecodeError)
    assert isinstance(err, ValueError)
    assert err.tool_call is call
    assert err.doc == '{"q": "x", }'
    # Where json places the error differs between Python versions (3.13 names
    # the trailing comma); the Accumulator passes json's own position on.
    with pytest.raises(json.JSONDecodeError) as plain:
        json.loads(err.doc)
    assert (err.pos, err.lineno, err.colno) == (plain.value.pos, plain.value.lineno, plain.value.colno)
    assert err.pos in (9, 11)
    assert err.msg.startswith("tool call 3 (name 'lookup', id 'call_9') has arguments that are not JSON: ")
    assert f"(char {err.pos})" in str(err)


def test_parsed_arguments_of_empty_arguments_raises() -> None:
    acc = fed([ToolCallFragment(0, 0, "c", "noargs", "")])
    call = acc.choices[0].tool_calls[0]
    assert call.arguments == ""
    with pytest.raises(ToolArgumentsError) as info:
        call.parsed_arguments()
    assert info.value.pos == 0


def test_parsed_arguments_nested_too_deeply_raises_clear_error() -> None:
    deep = "[" * 200_000 + "]" * 200_000
    acc = fed([ToolCallFragment(0, 0, "c", "f", deep)])
    with pytest.raises(ToolArgumentsError, match="nested too deeply") as info:
        acc.choices[0].tool_calls[0].parsed_arguments()
    assert info.value.tool_call is acc.choices[0].tool_calls[0]


def test_parsed_arguments_is_not_cached() -> None:
    acc = fed([ToolCallFragment(0, 0, "c", "f", '{"a":')])
    call = acc.choices[0].tool_calls[0]
    with pytest.raises(ToolArgumentsError):
        call.parsed_arguments()
    acc.feed(ToolCallFragment(0, 0, None, None, "1}"))
    assert call.parsed_arguments() == {"a": 1}


def test_tool_call_to_dict() -> None:
    acc = fed([ToolCallFragment(0, 0, "call_1", "f", '{"a":1}')])
    assert acc.choices[0].tool_calls[0].to_dict() == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "f", "arguments": '{"a":1}'},
    }


# --- finish, usage, errors, terminal events -----------------------------------


def test_finish_for_unseen_choice_creates_it() -> None:
    acc = fed([Finish(1, "stop")])
    assert acc.choices[1].finish_reason == "stop"
    assert acc.choices[1].content == ""


def test_finish_reason_keeps_the_latest_word() -> None:
    acc = fed([Delta(0, "x"), Finish(0, "tool_calls"), Finish(0, "stop")])
    assert acc.choices[0].finish_reason == "stop"


def test_usage_last_wins() -> None:
    first = Usage(1, 0, 1, {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1})
    last = Usage(1, 5, 6, {"prompt_tokens": 1, "completion_tokens": 5, "total_tokens": 6})
    acc = fed([first, Delta(0, "x"), last])
    assert acc.usage is last


def test_error_first_wins() -> None:
    first = StreamError(None, "server_error", "boom", None, {"error": {"message": "boom"}})
    second = StreamError(None, None, "again", None, None)
    acc = fed([first, second])
    assert acc.error is first


def test_done_and_truncated_first_wins() -> None:
    acc = fed([Truncated("partial-event", 3), Truncated("eof-before-done"), Done(True), Done(False)])
    assert acc.truncated == Truncated("partial-event", 3)
    assert acc.done == Done(True)


def test_heartbeats_and_sentinels_are_ignored() -> None:
    acc = fed([Heartbeat("ping"), NEED_DATA, Delta(0, "a"), Heartbeat(""), CLOSED])
    assert list(acc.choices) == [0]
    assert acc.choices[0].content == "a"
    assert acc.outcome == "in-progress"


@pytest.mark.parametrize("bad", [ServerSentEvent("message", "x"), "data: x", None, 3])
def test_feed_rejects_non_events(bad: object) -> None:
    acc = Accumulator()
    with pytest.raises(TypeError, match="takes chat events"):
        acc.feed(bad)  # type: ignore[arg-type]


# --- outcome ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "outcome"),
    [
        # 1. error
        ([Delta(0, "x"), StreamError(None, None, "boom", None, None)], "error"),
        ([Delta(0, "x"), Finish(0, "stop"), StreamError(None, "1", "m", None, None), Done(True)], "error"),
        ([Delta(0, "x"), Finish(0, "error"), Done(True)], "error"),
        ([Delta(0, "x"), Finish(0, "insufficient_system_resource")], "error"),
        ([Delta(0, "x"), Finish(0, "error"), Finish(0, "stop"), Done(True)], "error"),
        ([Delta(0, "x"), Finish(0, "stop"), Finish(1, "error"), Done(True)], "error"),
        # 2. in-progress
        ([Delta(0, "x")], "in-progress"),
        ([Delta(0, "x"), Finish(0, "stop"), Usage(1, 1, 2)], "in-progress"),
        ([Delta(0, "x"), Finish(0, "length")], "in-progress"),
        # 3. truncated
        ([Delta(0, "x"), Truncated("eof-before-done")], "truncated"),
        ([Delta(0, "x"), Truncated("partial-event", 12)], "truncated"),
        ([Truncated("eof-before-done")], "truncated"),
        ([Heartbeat("ping"), Truncated("partial-event", 5)], "truncated"),
        ([Delta(0, "x"), Done(True)], "truncated"),
        ([Delta(0, "x"), Finish(0, "stop"), Delta(1, "y"), Done(True)], "truncated"),
        ([Delta(0, "x"), Finish(0, "length"), Delta(1, "y"), Truncated("eof-before-done")], "truncated"),
        # the cut is judged when the terminal event comes, not later
        ([Delta(0, "x"), Done(True), Finish(0, "stop")], "truncated"),
        # 4. length
        ([Delta(0, "x"), Finish(0, "length"), Done(True)], "length"),
        ([Delta(0, "x"), Finish(0, "content_filter"), Delta(1, "y"), Finish(1, "length"), Done(True)], "length"),
        ([Delta(0, "x"), Finish(0, "length"), Truncated("partial-event", 40)], "length"),
        # 5. filtered
        ([Delta(0, "x"), Finish(0, "content_filter"), Done(True)], "filtered"),
        ([Delta(0, "x"), Finish(0, "stop"), Finish(1, "content_filter"), Done(False)], "filtered"),
        # 6. complete
        ([Delta(0, "x"), Finish(0, "stop"), Done(True)], "complete"),
        ([Delta(0, "x"), Finish(0, "stop"), Done(False)], "complete"),
        ([Done(True)], "complete"),
        ([ToolCallFragment(0, 0, "c", "f", "{}"), Finish(0, "tool_calls"), Usage(3, 4, 7), Done(True)], "complete"),
        # only the trailing usage chunk or [DONE] was lost
        ([Delta(0, "x"), Finish(0, "stop"), Truncated("partial-event", 80)], "complete"),
        # eof-before-done is the chat layer's verdict that a choice it saw start
        # (maybe with empty deltas only, which make no event) never finished
        ([Delta(0, "x"), Finish(0, "stop"), Truncated("eof-before-done")], "truncated"),
        # finish reasons the list does not know count as complete
        ([Delta(0, "x"), Finish(0, "function_call"), Done(True)], "complete"),
        ([Delta(0, "x"), Finish(0, "end_turn"), Done(True)], "complete"),
        # a later reason replaces length: the server's latest word counts
        ([Delta(0, "x"), Finish(0, "length"), Finish(0, "stop"), Done(True)], "complete"),
    ],
)
def test_outcome(events: list[ChatEvent], outcome: str) -> None:
    assert fed(events).outcome == outcome


def test_outcome_moves_from_in_progress_to_complete() -> None:
    acc = Accumulator()
    steps: list[tuple[ChatEvent, str]] = [
        (Delta(0, "", role="assistant"), "in-progress"),
        (Delta(0, "hi"), "in-progress"),
        (Finish(0, "stop"), "in-progress"),
        (Usage(1, 1, 2), "in-progress"),
        (Done(True), "complete"),
    ]
    for event, expected in steps:
        acc.feed(event)
        assert acc.outcome == expected


def test_choice_seen_only_with_empty_deltas_makes_eof_truncated() -> None:
    # n=2: choice 1 starts with an empty delta and the connection drops.  The
    # chat layer saw it start, so the stream was cut, although the only event
    # the Accumulator gets for choice 1 is none at all.
    body = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"},{"index":1,"delta":{}}]}\n\n'
    stream = ChatStream()
    events = feed_all(stream, [body])
    assert events == [Delta(0, "hi"), Finish(0, "stop"), Truncated("eof-before-done", 0), CLOSED]
    acc = fed(events)
    assert list(acc.choices) == [0]
    assert acc.outcome == "truncated"


def test_unknown_finish_reason_is_kept_verbatim() -> None:
    acc = fed([Delta(0, "x"), Finish(0, "end_turn"), Done(True)])
    assert acc.choices[0].finish_reason == "end_turn"


# --- message() -----------------------------------------------------------------


def test_message_text() -> None:
    acc = fed([Delta(0, "", role="assistant"), Delta(0, "Hi!"), Finish(0, "stop"), Done(True)])
    assert acc.message() == {"role": "assistant", "content": "Hi!"}


def test_message_role_defaults_to_assistant_and_empty_content_stays_a_string() -> None:
    acc = fed([Finish(0, "stop")])
    assert acc.message(0) == {"role": "assistant", "content": ""}


def test_message_tool_calls_without_text_has_null_content() -> None:
    acc = fed(
        [
            Delta(0, role="assistant"),
            ToolCallFragment(0, 1, "call_b", "g", "[]"),
            ToolCallFragment(0, 0, "call_a", "f", '{"a":1}'),
            ToolCallFragment(0, 2, None, "h", "{}"),
        ]
    )
    assert acc.message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
            {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "[]"}},
            {"type": "function", "function": {"name": "h", "arguments": "{}"}},
        ],
    }


def test_message_tool_calls_with_text_keeps_content() -> None:
    acc = fed([Delta(0, "Let me look.", role="assistant"), ToolCallFragment(0, 0, "c", "f", "{}")])
    msg = acc.message()
    assert msg["content"] == "Let me look."
    assert msg["tool_calls"] == [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]


def test_message_refusal() -> None:
    acc = fed([Delta(0, role="assistant", refusal="No.")])
    assert acc.message() == {"role": "assistant", "content": "", "refusal": "No."}


def test_message_of_another_choice_and_reasoning_key() -> None:
    acc = fed([Delta(0, "zero"), Delta(1, "one", role="assistant", reasoning="because")])
    assert acc.message(1) == {"role": "assistant", "content": "one"}
    assert acc.message(1, reasoning_key="reasoning_content") == {
        "role": "assistant",
        "content": "one",
        "reasoning_content": "because",
    }
    # no reasoning: the key is not added
    assert acc.message(0, reasoning_key="reasoning") == {"role": "assistant", "content": "zero"}


def test_message_of_missing_choice_raises_key_error() -> None:
    acc = fed([Delta(1, "x"), Delta(3, "y")])
    with pytest.raises(KeyError, match=r"no choice 0 in this stream \(choices seen: \[1, 3\]\)"):
        acc.message()


# --- repr -------------------------------------------------------------------------


def test_reprs() -> None:
    acc = fed([Delta(0, "x", role="assistant"), ToolCallFragment(0, 0, "c", "f", "{}"), Finish(0, "tool_calls")])
    assert repr(acc.choices[0].tool_calls[0]) == "ToolCall(index=0, id='c', name='f', arguments='{}')"
    assert repr(acc.choices[0]) == (
        "Choice(index=0, role='assistant', content='x', reasoning=None, refusal=None, "
        "tool_calls=[ToolCall(index=0, id='c', name='f', arguments='{}')], finish_reason='tool_calls')"
    )
