"""ssestate against the official OpenAI Python SDK's stream accumulator.

On streams of OpenAI's own shape, ``ChatStream`` + ``Accumulator`` must build
what the SDK's ``ChatCompletionStreamState`` builds from the same bytes
(decoded by the SDK's own ``SSEDecoder``): content, refusal, role, tool
calls, finish reasons, logprob tokens, usage, metadata.

Then named cases from real servers where the SDK crashes or assembles the
wrong message and ssestate gets it right.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import feed_all
from hypothesis import given

from ssestate import DONE_BYTES, Accumulator, ChatStream, encode_chunk
from ssestate.testing.strategies import ChatCase, chat_streams

pytest.importorskip("openai")

from openai._streaming import SSEDecoder
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk


def sdk_snapshot(body: bytes) -> Any:
    """What the SDK builds from ``body``: its SSE decoder, ``[DONE]`` check
    and chunk construction as ``Stream`` does them, then its accumulator."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for sse in SSEDecoder().iter_bytes(iter([body])):
        if sse.data.startswith("[DONE]"):
            break
        state.handle_chunk(ChatCompletionChunk.construct(**sse.json()))
    return state.current_completion_snapshot


def ours(body: bytes) -> tuple[Accumulator, ChatStream]:
    stream = ChatStream(content_type="text/event-stream; charset=utf-8")
    acc = Accumulator()
    for event in feed_all(stream, [body]):
        acc.feed(event)
    return acc, stream


@given(chat_streams(openai_shape=True, faults=False))
def test_same_result_as_the_openai_sdk(case: ChatCase) -> None:
    snapshot = sdk_snapshot(case.body)
    acc, stream = ours(case.body)

    assert [c.index for c in snapshot.choices] == sorted(acc.choices)
    for sdk_choice in snapshot.choices:
        mine = acc.choices[sdk_choice.index]
        message = sdk_choice.message
        assert mine.content == (message.content or "")
        assert mine.refusal == (message.refusal or None)
        assert mine.role == message.role
        assert mine.finish_reason == sdk_choice.finish_reason
        assert [(t.index, t.id, t.name, t.arguments) for t in mine.tool_calls] == [
            (t.index, t.id, t.function.name, t.function.arguments) for t in message.tool_calls or []
        ]
        sdk_tokens = sdk_choice.logprobs.content if sdk_choice.logprobs is not None else None
        if sdk_tokens:
            assert mine.logprobs is not None
            assert [t["token"] for t in mine.logprobs] == [t.token for t in sdk_tokens]
        else:
            assert not mine.logprobs

    if snapshot.usage is None:
        assert acc.usage is None
    else:
        assert acc.usage is not None
        assert (acc.usage.prompt_tokens, acc.usage.completion_tokens, acc.usage.total_tokens) == (
            snapshot.usage.prompt_tokens,
            snapshot.usage.completion_tokens,
            snapshot.usage.total_tokens,
        )
    assert (stream.response_id, stream.model, stream.created) == (snapshot.id, snapshot.model, snapshot.created)


# --- where the SDK is wrong --------------------------------------------------------------

_META = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}


def body_of(*choice_lists: list[dict[str, Any]]) -> bytes:
    return b"".join(encode_chunk({**_META, "choices": choices}) for choices in choice_lists) + DONE_BYTES


def summary(acc: Accumulator) -> dict[int, tuple[str | None, str, list[tuple[str | None, str, str]], str | None]]:
    return {
        i: (c.role, c.content, [(t.id, t.name, t.arguments) for t in c.tool_calls], c.finish_reason)
        for i, c in acc.choices.items()
    }


def sdk_summary(snapshot: Any) -> dict[int, tuple[str | None, str, list[tuple[str | None, str, str]], str | None]]:
    return {
        c.index: (
            c.message.role,
            c.message.content or "",
            [(t.id, t.function.name, t.function.arguments) for t in c.message.tool_calls or []],
            c.finish_reason,
        )
        for c in snapshot.choices
    }


_CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}

NAMED_CASES: dict[str, tuple[bytes, dict[int, Any], type[Exception] | None]] = {
    # n=2 and the server happens to stream choice 1 only, or first (vLLM, SGLang
    # and OpenAI itself interleave n>1 choices in any order)
    "only-choice-1": (
        body_of(
            [{"index": 1, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None}],
            [{"index": 1, "delta": {}, "finish_reason": "stop"}],
        ),
        {1: ("assistant", "hi", [], "stop")},
        IndexError,
    ),
    "choice-1-before-0": (
        body_of(
            [{"index": 1, "delta": {"role": "assistant", "content": "B"}}],
            [{"index": 0, "delta": {"role": "assistant", "content": "A"}}],
            [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            [{"index": 1, "delta": {}, "finish_reason": "length"}],
        ),
        {1: ("assistant", "B", [], "length"), 0: ("assistant", "A", [], "stop")},
        IndexError,
    ),
    # a tool index that is not its list position (the first call numbered 1)
    "tool-index-not-position": (
        body_of(
            [{"index": 0, "delta": {"role": "assistant", "content": None}}],
            [{"index": 0, "delta": {"tool_calls": [{"index": 1, **_CALL}]}}],
            [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
        ),
        {0: ("assistant", "", [("call_1", "get_weather", '{"city":"Paris"}')], "tool_calls")},
        IndexError,
    ),
    # Gemini's OpenAI-compatible endpoint sends tool calls without "index"
    "tool-index-missing": (
        body_of(
            [{"index": 0, "delta": {"role": "assistant", "tool_calls": [_CALL]}}],
            [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        ),
        {0: ("assistant", "", [("call_1", "get_weather", '{"city":"Paris"}')], "stop")},
        TypeError,
    ),
    # Azure's asynchronous content filter appends a choice with no "delta"
    "delta-missing": (
        body_of(
            [{"index": 0, "delta": {"role": "assistant", "content": "fine"}}],
            [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            [{"index": 0, "finish_reason": None, "content_filter_results": {}, "content_filter_offsets": {}}],
        ),
        {0: ("assistant", "fine", [], "stop")},
        AttributeError,
    ),
    # SGLang / LiteLLM repeat id and name on continuation fragments: the SDK
    # concatenates them into "call_1call_1" / "get_weatherget_weather"
    "repeated-id-and-name": (
        body_of(
            [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": ""},
                            }
                        ],
                    },
                }
            ],
            [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city":'},
                            }
                        ]
                    },
                }
            ],
            [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 0, "function": {"name": "get_weather", "arguments": '"Paris"}'}}]
                    },
                }
            ],
            [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
        ),
        {0: ("assistant", "", [("call_1", "get_weather", '{"city":"Paris"}')], "tool_calls")},
        None,
    ),
    # old Ollama, OpenRouter, DashScope send the role on every chunk: the SDK
    # builds "assistantassistantassistant"
    "repeated-role": (
        body_of(
            [{"index": 0, "delta": {"role": "assistant", "content": "a"}}],
            [{"index": 0, "delta": {"role": "assistant", "content": "b"}}],
            [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"}],
        ),
        {0: ("assistant", "ab", [], "stop")},
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(NAMED_CASES))
def test_named_case_where_the_sdk_is_wrong(name: str) -> None:
    body, expected, sdk_crash = NAMED_CASES[name]
    acc, _ = ours(body)
    assert summary(acc) == expected
    assert acc.outcome in ("complete", "length")

    if sdk_crash is not None:
        with pytest.raises(sdk_crash):
            sdk_snapshot(body)
    else:
        got = sdk_summary(sdk_snapshot(body))
        assert got != expected, f"the SDK now gets {name!r} right: {got}"
        assert set(got) == set(expected)
