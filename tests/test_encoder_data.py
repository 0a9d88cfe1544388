"""Encoder: what each API's writer does with continuation data, usage,
every kind of text and logprobs, where its API has room for them and where
it has none, pinned on the wire and read back through ``ChatStream``.
"""

from __future__ import annotations

from typing import Any

import pytest
from eventgen import payloads, read_back, write

from ssestate import (
    Continuation,
    Delta,
    Done,
    Encoder,
    Finish,
    LocalProtocolError,
    ToolCallFragment,
    Truncated,
    Usage,
)

# -- continuation data ------------------------------------------------------------------------------------


SIGNATURE = "EqQBCkYIBxgC"


def test_anthropic_thinking_is_closed_with_its_signature() -> None:
    thinking = {"type": "thinking", "thinking": "2 + 2 = 4", "signature": SIGNATURE}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgB"}
    events = [
        Delta(0, "", "assistant"),
        Delta(0, "", None, "2 + 2"),
        Delta(0, "", None, " = 4"),
        Continuation(0, "thinking", thinking, 0),
        Continuation(0, "redacted_thinking", redacted, 1),
        Delta(0, "4"),
        Finish(0, "stop"),
        Done(),
    ]
    written = write("anthropic", events)
    assert written[3] == (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"signature_delta","signature":"EqQBCkYIBxgC"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    )
    assert written[4] == (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":1,'
        b'"content_block":{"type":"redacted_thinking","data":"EmwKAhgB"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n'
    )
    acc, _ = read_back("anthropic", b"".join(written))
    assert acc.choices[0].reasoning == "2 + 2 = 4"
    assert acc.message(0, dialect="anthropic")["content"] == [thinking, redacted, {"type": "text", "text": "4"}]


def test_anthropic_thinking_without_its_text_streamed_is_a_whole_block() -> None:
    events = [Delta(0, "Hi"), Continuation(0, "thinking", {"thinking": "", "signature": SIGNATURE}), Finish(0, "stop")]
    acc, _ = read_back("anthropic", b"".join(write("anthropic", events)))
    [kept] = acc.choices[0].continuations
    assert (kept.index, kept.data) == (1, {"type": "thinking", "thinking": "", "signature": SIGNATURE})
    assert acc.choices[0].reasoning is None
    events = [Continuation(0, "thinking", {"thinking": "hmm"}), Finish(0, "stop")]
    acc, _ = read_back("anthropic", b"".join(write("anthropic", events)))
    assert acc.choices[0].reasoning == "hmm"


def test_gemini_thought_signatures_go_on_their_part() -> None:
    events = [
        Delta(0, "Checking."),
        Continuation(0, "thought_signature", "c2ln", None),
        ToolCallFragment(0, 0, None, "get_weather", '{"city": "Paris"}'),
        Continuation(0, "thought_signature", SIGNATURE, 0),
        Continuation(0, "thought_signature", "bGF0ZQ==", 5),  # no such call held: on an empty text part
        Finish(0, "stop"),
    ]
    written = write("gemini", events)
    assert payloads(written[1])[0]["candidates"][0]["content"]["parts"] == [{"text": "", "thoughtSignature": "c2ln"}]
    assert written[3] == b""
    assert payloads(written[5])[0]["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": SIGNATURE}
    ]
    acc, _ = read_back("gemini", b"".join(written))
    kept = [(k.index, k.data) for k in acc.choices[0].continuations]
    assert kept == [(None, "c2ln"), (None, "bGF0ZQ=="), (0, SIGNATURE)]
    assert acc.message(0, dialect="gemini")["parts"][1]["thoughtSignature"] == SIGNATURE


def test_responses_reasoning_items_are_written_back() -> None:
    item = {
        "id": "rs_abc",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Hmm."}],
        "encrypted_content": "gAAA",
    }
    streamed = [
        Delta(0, "", None, "Hmm."),
        Continuation(0, "reasoning_item", item, 0),
        Delta(0, "Hi"),
        Finish(0, "stop"),
        Done(),
    ]
    acc, _ = read_back("openai-responses", b"".join(write("openai-responses", streamed)))
    [kept] = acc.choices[0].continuations
    assert kept.data == {**item, "id": "rs_0"}  # the id the item streamed under, which the SDK checks
    assert acc.choices[0].reasoning == "Hmm."
    alone = [
        Delta(0, "Hi"),
        Continuation(0, "reasoning_item", {k: v for k, v in item.items() if k != "id"}),
        Finish(0, "stop"),
        Done(),
    ]
    acc, _ = read_back("openai-responses", b"".join(write("openai-responses", alone)))
    [kept] = acc.choices[0].continuations
    assert kept.data == {**item, "id": "rs_1"}
    assert acc.choices[0].content == "Hi"


@pytest.mark.parametrize(
    ("dialect", "continuation"),
    [
        ("openai-chat", Continuation(0, "thinking", {"thinking": "x"})),
        ("openai-responses", Continuation(0, "thought_signature", "c2ln")),
        ("anthropic", Continuation(0, "reasoning_item", {"id": "rs_1"})),
        ("gemini", Continuation(0, "redacted_thinking", {"data": "x"})),
    ],
)
def test_another_apis_continuation_writes_nothing(dialect: str, continuation: Continuation) -> None:
    assert Encoder(dialect).feed(continuation) == b""


@pytest.mark.parametrize(
    ("dialect", "continuation", "problem"),
    [
        ("anthropic", Continuation(0, "thinking", "sig"), "must be an object, not str"),
        ("anthropic", Continuation(0, "thinking", {"signature": 5}), "must be strings"),
        ("anthropic", Continuation(0, "redacted_thinking", {"data": {1, 2}}), "cannot be written as JSON"),
        ("openai-responses", Continuation(0, "reasoning_item", None), "must be an object, not NoneType"),
        ("openai-responses", Continuation(0, "reasoning_item", {"x": float("nan")}), "cannot be written as JSON"),
        ("gemini", Continuation(0, "thought_signature", b"sig"), "must be a non-empty string"),
        ("gemini", Continuation(0, "thought_signature", "sig\ud800"), "cannot be written as JSON"),
    ],
)
def test_continuation_data_that_cannot_be_written_is_refused(
    dialect: str, continuation: Continuation, problem: str
) -> None:
    with pytest.raises(LocalProtocolError, match=problem):
        Encoder(dialect).feed(continuation)


# -- usage ------------------------------------------------------------------------------------------------


ANTHROPIC_USAGE = {
    "input_tokens": 2,
    "cache_creation_input_tokens": 22,
    "cache_read_input_tokens": 13993,
    "output_tokens": 98,
    "service_tier": "standard",
}


def usage_written(dialect: str, usage: Usage) -> Any:
    body = b"".join(write(dialect, [Delta(0, "", "assistant"), Finish(0, "stop"), usage, Done()]))
    acc, _ = read_back(dialect, body)
    assert acc.usage is not None
    return acc.usage.raw


def test_a_usage_object_of_the_target_api_is_written_as_it_is() -> None:
    usage = Usage(14017, 98, 14115, ANTHROPIC_USAGE)
    assert usage_written("anthropic", usage) == ANTHROPIC_USAGE
    chat = {
        "prompt_tokens": 9,
        "completion_tokens": 3,
        "total_tokens": 12,
        "prompt_tokens_details": {"audio_tokens": 0},
    }
    assert usage_written("openai-chat", Usage(9, 3, 12, chat)) == chat
    gemini = {
        "promptTokenCount": 9,
        "candidatesTokenCount": 3,
        "thoughtsTokenCount": 5,
        "totalTokenCount": 17,
        "trafficType": "ON_DEMAND",
    }
    assert usage_written("gemini", Usage(9, 8, 17, gemini)) == gemini
    responses = {
        "input_tokens": 9,
        "output_tokens": 3,
        "total_tokens": 12,
        "output_tokens_details": {"reasoning_tokens": 1},
    }
    assert usage_written("openai-responses", Usage(9, 3, 12, responses)) == responses


def test_usage_of_another_api_keeps_its_cached_and_reasoning_counts() -> None:
    assert usage_written("openai-chat", Usage(14017, 98, 14115, ANTHROPIC_USAGE)) == {
        "prompt_tokens": 14017,
        "completion_tokens": 98,
        "total_tokens": 14115,
        "prompt_tokens_details": {"cached_tokens": 13993},
    }
    gemini = {"promptTokenCount": 9, "cachedContentTokenCount": 4, "candidatesTokenCount": 3, "thoughtsTokenCount": 5}
    assert usage_written("openai-chat", Usage(9, 8, 17, gemini)) == {
        "prompt_tokens": 9,
        "completion_tokens": 8,
        "total_tokens": 17,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 5},
    }
    assert usage_written("openai-responses", Usage(9, 8, 17, gemini)) == {
        "input_tokens": 9,
        "input_tokens_details": {"cached_tokens": 4},
        "output_tokens": 8,
        "output_tokens_details": {"reasoning_tokens": 5},
        "total_tokens": 17,
    }
    chat = {"completion_tokens_details": {"reasoning_tokens": 5}, "prompt_tokens_details": {"cached_tokens": 4}}
    assert usage_written("gemini", Usage(9, 8, 17, chat)) == {
        "promptTokenCount": 9,
        "candidatesTokenCount": 3,
        "totalTokenCount": 17,
        "thoughtsTokenCount": 5,
        "cachedContentTokenCount": 4,
    }
    responses = {"input_tokens_details": {"cached_tokens": 4}, "output_tokens_details": {"reasoning_tokens": 99}}
    assert usage_written("anthropic", Usage(9, 8, 17, responses)) == {
        "input_tokens": 5,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 4,
        "output_tokens": 8,
    }


def test_a_usage_object_that_disagrees_with_its_counts_is_rebuilt() -> None:
    assert usage_written("openai-chat", Usage(9, 3, 12, {"prompt_tokens": 1})) == {
        "prompt_tokens": 9,
        "completion_tokens": 3,
        "total_tokens": 12,
    }
    weird = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12, "extra": object()}
    assert usage_written("openai-chat", Usage(9, 3, 12, weird)) == {
        "prompt_tokens": 9,
        "completion_tokens": 3,
        "total_tokens": 12,
    }


def test_anthropic_usage_goes_where_the_format_has_room_for_it() -> None:
    first = write("anthropic", [Usage(7, 0, 7, {}), Delta(0, "Hi")])
    assert first[0] == b""
    assert payloads(first[1])[0]["message"]["usage"] == {
        "input_tokens": 7,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 0,
    }
    # Usage of an answer that never finished: in a message_delta without a stop reason, before the end.
    for end in (Done(), Truncated("eof-before-done")):
        written = write("anthropic", [Delta(0, "Hi"), Usage(7, 2, 9), end])
        assert written[1] == b""
        [delta] = [p for p in payloads(written[2]) if p["type"] == "message_delta"]
        assert delta == {
            "type": "message_delta",
            "delta": {"stop_reason": None, "stop_sequence": None},
            "usage": {
                "input_tokens": 7,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 2,
            },
        }
        acc, _ = read_back("anthropic", b"".join(written))
        assert acc.usage is not None
        assert (acc.usage.prompt_tokens, acc.usage.completion_tokens, acc.outcome) == (7, 2, "truncated")
    # Usage after an error finish: the error ended the answer, the usage still goes out last.
    written = write("anthropic", [Delta(0, "Hi"), Finish(0, "error"), Usage(7, 2, 9), Done()])
    assert written[2] == b""
    assert payloads(written[3])[0]["delta"] == {"stop_reason": None, "stop_sequence": None}


def test_responses_usage_rides_on_the_terminal_event() -> None:
    written = write("openai-responses", [Delta(0, "Hi"), Usage(3, 1, 4), Finish(0, "stop"), Done()])
    assert written[1] == b""
    assert payloads(written[3])[-1]["response"]["usage"]["input_tokens"] == 3


# -- text, refusal, logprobs ----------------------------------------------------------------------------------


def test_a_delta_with_every_kind_of_text() -> None:
    delta = Delta(0, "Hi", "assistant", "Hmm", "No")
    assert payloads(write("openai-chat", [delta])[0]) == [
        {
            "id": "",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "",
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": "Hi", "reasoning_content": "Hmm", "refusal": "No"},
                    "finish_reason": None,
                }
            ],
        }
    ]
    anthropic = [p["delta"] for p in payloads(write("anthropic", [delta])[0]) if p["type"] == "content_block_delta"]
    assert anthropic == [{"type": "thinking_delta", "thinking": "Hmm"}, {"type": "text_delta", "text": "HiNo"}]
    [gemini] = payloads(write("gemini", [delta])[0])
    assert gemini["candidates"][0]["content"]["parts"] == [
        {"text": "Hmm", "thought": True},
        {"text": "Hi"},
        {"text": "No"},
    ]
    kinds = [p["type"] for p in payloads(write("openai-responses", [delta])[0])]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.content_part.added",
        "response.refusal.delta",
    ]


def test_responses_refusal_and_text_are_parts_of_one_message() -> None:
    events = [
        Delta(0, "", None, None, "I can't"),
        Delta(0, " help."),
        Delta(0, "", None, None, " Sorry."),
        Finish(0, "stop"),
        Done(),
    ]
    body = b"".join(write("openai-responses", events))
    [message] = payloads(body)[-1]["response"]["output"]
    assert message["content"] == [
        {"type": "refusal", "refusal": "I can't"},
        {"type": "output_text", "annotations": [], "logprobs": [], "text": " help."},
        {"type": "refusal", "refusal": " Sorry."},
    ]
    acc, _ = read_back("openai-responses", body)
    assert (acc.choices[0].content, acc.choices[0].refusal) == (" help.", "I can't Sorry.")


@pytest.mark.parametrize("dialect", ["anthropic", "gemini"])
def test_refusal_text_is_plain_text_where_the_api_has_no_refusal_text(dialect: str) -> None:
    events = [Delta(0, "", None, None, "I can't help."), Finish(0, "content_filter"), Done()]
    acc, _ = read_back(dialect, b"".join(write(dialect, events)))
    assert (acc.choices[0].content, acc.choices[0].refusal, acc.outcome) == ("I can't help.", None, "filtered")


LOGPROBS = {"content": [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}]}


def test_logprobs() -> None:
    [chat] = payloads(write("openai-chat", [Delta(0, "Hi", logprobs=LOGPROBS)])[0])
    assert chat["choices"][0]["logprobs"] == LOGPROBS
    for logprobs, written in ((LOGPROBS, LOGPROBS["content"]), (LOGPROBS["content"], LOGPROBS["content"]), ("?", [])):
        text = payloads(write("openai-responses", [Delta(0, "Hi", logprobs=logprobs)])[0])[-1]
        assert text["logprobs"] == written
    assert payloads(write("gemini", [Delta(0, "Hi", logprobs=LOGPROBS)])[0])[0]["candidates"][0]["content"][
        "parts"
    ] == [{"text": "Hi"}]


@pytest.mark.parametrize("dialect", ["openai-chat", "openai-responses"])
def test_logprobs_that_are_not_json_are_refused(dialect: str) -> None:
    with pytest.raises(LocalProtocolError, match="the logprobs of a Delta cannot be written as JSON"):
        Encoder(dialect).feed(Delta(0, "Hi", logprobs=[float("inf")]))


def test_a_role_alone_says_something_only_where_it_is_news() -> None:
    assert write("gemini", [Delta(3, "", "assistant"), Delta(3, "", "assistant")])[1] == b""
    assert write("anthropic", [Delta(0, "", "assistant"), Delta(0, "", "assistant")])[1] == b""
    assert write("openai-responses", [Delta(0, "", "assistant"), Delta(0, "")])[1] == b""
    [chunk] = payloads(write("openai-chat", [Delta(2, "")])[0])
    assert chunk["choices"] == [{"index": 2, "delta": {}, "finish_reason": None}]
