"""Encoder, byte for byte: a small text answer and a small tool-call answer
in each API, one entry per event fed (what to send at that moment), and
what the official readers of those bytes make of them.
"""

from __future__ import annotations

from typing import Any

import pytest
from eventgen import DIALECTS, read_back, write

from ssestate import (
    Delta,
    Done,
    Encoder,
    Finish,
    ToolCallFragment,
    Usage,
)

OPTIONS: dict[str, Any] = {"model": "m-1", "response_id": "r1", "created": 1700000000}
TEXT = [Delta(0, "", "assistant"), Delta(0, "Hi"), Delta(0, " there"), Finish(0, "stop"), Usage(5, 2, 7), Done()]
TOOL = [
    Delta(0, "", "assistant"),
    ToolCallFragment(0, 0, "call_1", "get_weather", ""),
    ToolCallFragment(0, 0, None, None, '{"city":'),
    ToolCallFragment(0, 0, None, None, '"Paris"}'),
    Finish(0, "tool_calls"),
    Done(),
]


TEXT_BYTES = {
    "openai-chat": [
        (  # Delta
            b'data: {"id":"r1","object":"chat.completion.chunk","created":1700000000,"model":"m-1",'
            b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
            b'"finish_reason":null}]}\n\n'
        ),
        (  # Delta
            b'data: {"id":"r1","object":"chat.completion.chunk","created":1700000000,"model":"m-1",'
            b'"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
        ),
        (  # Delta
            b'data: {"id":"r1","object":"chat.completion.chunk","created":1700000000,"model":"m-1",'
            b'"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}\n\n'
        ),
        (  # Finish
            b'data: {"id":"r1","object":"chat.completion.chunk","created":1700000000,"model":"m-1",'
            b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        ),
        (  # Usage
            b'data: {"id":"r1","object":"chat.completion.chunk","created":1700000000,"model":"m-1",'
            b'"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}\n\n'
        ),
        b"data: [DONE]\n\n",  # Done
    ],
    "openai-responses": [
        (  # Delta
            b"event: response.created\n"
            b'data: {"type":"response.created","response":{"id":"r1","object":"response",'
            b'"created_at":1700000000,"status":"in_progress","error":null,"incomplete_details":null,'
            b'"model":"m-1","output":[],"usage":null},"sequence_number":0}\n\n'
            b"event: response.in_progress\n"
            b'data: {"type":"response.in_progress","response":{"id":"r1","object":"response",'
            b'"created_at":1700000000,"status":"in_progress","error":null,"incomplete_details":null,'
            b'"model":"m-1","output":[],"usage":null},"sequence_number":1}\n\n'
        ),
        (  # Delta
            b"event: response.output_item.added\n"
            b'data: {"type":"response.output_item.added","item":{"id":"msg_r1_0","type":"message",'
            b'"status":"in_progress","content":[],"role":"assistant"},"output_index":0,'
            b'"sequence_number":2}\n\n'
            b"event: response.content_part.added\n"
            b'data: {"type":"response.content_part.added","content_index":0,"item_id":"msg_r1_0",'
            b'"output_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""},'
            b'"sequence_number":3}\n\n'
            b"event: response.output_text.delta\n"
            b'data: {"type":"response.output_text.delta","content_index":0,"delta":"Hi",'
            b'"item_id":"msg_r1_0","logprobs":[],"output_index":0,"sequence_number":4}\n\n'
        ),
        (  # Delta
            b"event: response.output_text.delta\n"
            b'data: {"type":"response.output_text.delta","content_index":0,"delta":" there",'
            b'"item_id":"msg_r1_0","logprobs":[],"output_index":0,"sequence_number":5}\n\n'
        ),
        b"",  # Finish: the item stays open until Done closes it
        b"",  # Usage
        (  # Done
            b"event: response.output_text.done\n"
            b'data: {"type":"response.output_text.done","content_index":0,"item_id":"msg_r1_0",'
            b'"logprobs":[],"output_index":0,"sequence_number":6,"text":"Hi there"}\n\n'
            b"event: response.content_part.done\n"
            b'data: {"type":"response.content_part.done","content_index":0,"item_id":"msg_r1_0",'
            b'"output_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],'
            b'"text":"Hi there"},"sequence_number":7}\n\n'
            b"event: response.output_item.done\n"
            b'data: {"type":"response.output_item.done","item":{"id":"msg_r1_0","type":"message",'
            b'"status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],'
            b'"text":"Hi there"}],"role":"assistant"},"output_index":0,"sequence_number":8}\n\n'
            b"event: response.completed\n"
            b'data: {"type":"response.completed","response":{"id":"r1","object":"response",'
            b'"created_at":1700000000,"status":"completed","error":null,"incomplete_details":null,'
            b'"model":"m-1","output":[{"id":"msg_r1_0","type":"message","status":"completed",'
            b'"content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hi there"}],'
            b'"role":"assistant"}],"usage":{"input_tokens":5,'
            b'"input_tokens_details":{"cached_tokens":0},"output_tokens":2,'
            b'"output_tokens_details":{"reasoning_tokens":0},"total_tokens":7}},'
            b'"sequence_number":9}\n\n'
        ),
    ],
    "anthropic": [
        (  # Delta
            b"event: message_start\n"
            b'data: {"type":"message_start","message":{"id":"r1","type":"message","role":"assistant",'
            b'"model":"m-1","content":[],"stop_reason":null,"stop_sequence":null,'
            b'"usage":{"input_tokens":0,"output_tokens":0}}}\n\n'
        ),
        (  # Delta
            b"event: content_block_start\n"
            b'data: {"type":"content_block_start","index":0,"content_block":{"type":"text",'
            b'"text":""}}\n\n'
            b"event: content_block_delta\n"
            b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
            b'"text":"Hi"}}\n\n'
        ),
        (  # Delta
            b"event: content_block_delta\n"
            b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
            b'"text":" there"}}\n\n'
        ),
        (  # Finish
            b"event: content_block_stop\n"
            b'data: {"type":"content_block_stop","index":0}\n\n'
            b"event: message_delta\n"
            b'data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
            b'"usage":{"output_tokens":0}}\n\n'
        ),
        (  # Usage
            b"event: message_delta\n"
            b'data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
            b'"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,'
            b'"output_tokens":2}}\n\n'
        ),
        (  # Done
            b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
        ),
    ],
    "gemini": [
        (  # Delta
            b'data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"index": 0}],'
            b'"modelVersion": "m-1","responseId": "r1"}\r\n'
            b"\r\n"
        ),
        (  # Delta
            b'data: {"candidates": [{"content": {"parts": [{"text": "Hi"}],"role": "model"},'
            b'"index": 0}],"modelVersion": "m-1","responseId": "r1"}\r\n'
            b"\r\n"
        ),
        (  # Delta
            b'data: {"candidates": [{"content": {"parts": [{"text": " there"}],"role": "model"},'
            b'"index": 0}],"modelVersion": "m-1","responseId": "r1"}\r\n'
            b"\r\n"
        ),
        (  # Finish
            b'data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},'
            b'"finishReason": "STOP","index": 0}],"modelVersion": "m-1","responseId": "r1"}\r\n'
            b"\r\n"
        ),
        (  # Usage
            b'data: {"usageMetadata": {"promptTokenCount": 5,"candidatesTokenCount": 2,'
            b'"totalTokenCount": 7},"modelVersion": "m-1","responseId": "r1"}\r\n'
            b"\r\n"
        ),
        b"",  # Done
    ],
}

TOOL_BYTES = {
    "openai-chat": [
        (  # Delta
            b'data: {"id":"r1","object":"chat.completion.chunk","created":1700000000,"model":"m-1",'
            b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
            b'"finish_reason":null}]}\n\n'
        ),
        (  # ToolCallFragment
            b'data: {"id":"r1","object":"chat.completion.chunk","created":1700000000,"model":"m-1",'
            b'"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",'
            b'"function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}\n\n'
        ),
        (  # ToolCallFragment
            b'data: {"id":"r1","object":"chat.completion.chunk","created":1700000000,"model":"m-1",'
            b'"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
            b'"function":{"arguments":"{\\"city\\":"}}]},"finish_reason":null}]}\n\n'
        ),
        (  # ToolCallFragment
            b'data: {"id":"r1","object":"chat.completion.chunk","created":1700000000,"model":"m-1",'
            b'"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
            b'"function":{"arguments":"\\"Paris\\"}"}}]},"finish_reason":null}]}\n\n'
        ),
        (  # Finish
            b'data: {"id":"r1","object":"chat.completion.chunk","created":1700000000,"model":"m-1",'
            b'"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
        ),
        b"data: [DONE]\n\n",  # Done
    ],
    "openai-responses": [
        (  # Delta
            b"event: response.created\n"
            b'data: {"type":"response.created","response":{"id":"r1","object":"response",'
            b'"created_at":1700000000,"status":"in_progress","error":null,"incomplete_details":null,'
            b'"model":"m-1","output":[],"usage":null},"sequence_number":0}\n\n'
            b"event: response.in_progress\n"
            b'data: {"type":"response.in_progress","response":{"id":"r1","object":"response",'
            b'"created_at":1700000000,"status":"in_progress","error":null,"incomplete_details":null,'
            b'"model":"m-1","output":[],"usage":null},"sequence_number":1}\n\n'
        ),
        b"",  # ToolCallFragment
        (  # ToolCallFragment
            b"event: response.output_item.added\n"
            b'data: {"type":"response.output_item.added","item":{"id":"fc_r1_0","type":"function_call",'
            b'"status":"in_progress","arguments":"","call_id":"call_1","name":"get_weather"},'
            b'"output_index":0,"sequence_number":2}\n\n'
            b"event: response.function_call_arguments.delta\n"
            b'data: {"type":"response.function_call_arguments.delta","delta":"{\\"city\\":",'
            b'"item_id":"fc_r1_0","output_index":0,"sequence_number":3}\n\n'
        ),
        (  # ToolCallFragment
            b"event: response.function_call_arguments.delta\n"
            b'data: {"type":"response.function_call_arguments.delta","delta":"\\"Paris\\"}",'
            b'"item_id":"fc_r1_0","output_index":0,"sequence_number":4}\n\n'
        ),
        b"",  # Finish
        (  # Done
            b"event: response.function_call_arguments.done\n"
            b'data: {"type":"response.function_call_arguments.done",'
            b'"arguments":"{\\"city\\":\\"Paris\\"}","item_id":"fc_r1_0","name":"get_weather",'
            b'"output_index":0,"sequence_number":5}\n\n'
            b"event: response.output_item.done\n"
            b'data: {"type":"response.output_item.done","item":{"id":"fc_r1_0","type":"function_call",'
            b'"status":"completed","arguments":"{\\"city\\":\\"Paris\\"}","call_id":"call_1",'
            b'"name":"get_weather"},"output_index":0,"sequence_number":6}\n\n'
            b"event: response.completed\n"
            b'data: {"type":"response.completed","response":{"id":"r1","object":"response",'
            b'"created_at":1700000000,"status":"completed","error":null,"incomplete_details":null,'
            b'"model":"m-1","output":[{"id":"fc_r1_0","type":"function_call","status":"completed",'
            b'"arguments":"{\\"city\\":\\"Paris\\"}","call_id":"call_1","name":"get_weather"}],'
            b'"usage":null},"sequence_number":7}\n\n'
        ),
    ],
    "anthropic": [
        (  # Delta
            b"event: message_start\n"
            b'data: {"type":"message_start","message":{"id":"r1","type":"message","role":"assistant",'
            b'"model":"m-1","content":[],"stop_reason":null,"stop_sequence":null,'
            b'"usage":{"input_tokens":0,"output_tokens":0}}}\n\n'
        ),
        b"",  # ToolCallFragment
        (  # ToolCallFragment
            b"event: content_block_start\n"
            b'data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use",'
            b'"id":"call_1","name":"get_weather","input":{}}}\n\n'
            b"event: content_block_delta\n"
            b'data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",'
            b'"partial_json":"{\\"city\\":"}}\n\n'
        ),
        (  # ToolCallFragment
            b"event: content_block_delta\n"
            b'data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta",'
            b'"partial_json":"\\"Paris\\"}"}}\n\n'
        ),
        (  # Finish
            b"event: content_block_stop\n"
            b'data: {"type":"content_block_stop","index":0}\n\n'
            b"event: message_delta\n"
            b'data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},'
            b'"usage":{"output_tokens":0}}\n\n'
        ),
        (  # Done
            b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
        ),
    ],
    "gemini": [
        (  # Delta
            b'data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"index": 0}],'
            b'"modelVersion": "m-1","responseId": "r1"}\r\n'
            b"\r\n"
        ),
        b"",  # ToolCallFragment
        b"",  # ToolCallFragment
        b"",  # ToolCallFragment
        (  # Finish
            b'data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather",'
            b'"args": {"city": "Paris"},"id": "call_1"}}],"role": "model"},"finishReason": "STOP",'
            b'"index": 0}],"modelVersion": "m-1","responseId": "r1"}\r\n'
            b"\r\n"
        ),
        b"",  # Done
    ],
}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_text_answer_byte_for_byte(dialect: str) -> None:
    assert write(dialect, TEXT, **OPTIONS) == TEXT_BYTES[dialect]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_tool_call_byte_for_byte(dialect: str) -> None:
    assert write(dialect, TOOL, **OPTIONS) == TOOL_BYTES[dialect]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_pinned_answers_read_back(dialect: str) -> None:
    acc, _ = read_back(dialect, b"".join(TEXT_BYTES[dialect]))
    assert (acc.choices[0].content, acc.choices[0].finish_reason, acc.outcome) == ("Hi there", "stop", "complete")
    assert acc.usage is not None
    assert (acc.usage.prompt_tokens, acc.usage.completion_tokens, acc.usage.total_tokens) == (5, 2, 7)
    acc, _ = read_back(dialect, b"".join(TOOL_BYTES[dialect]))
    [call] = acc.choices[0].tool_calls
    assert (call.id, call.name, call.parsed_arguments()) == ("call_1", "get_weather", {"city": "Paris"})
    assert (acc.choices[0].finish_reason, acc.outcome) == ("tool_calls", "complete")


def test_the_encoder_says_what_it_writes() -> None:
    encoder = Encoder()
    assert encoder.dialect == "openai-chat"
    encoder.feed(Delta(0, "Hi"))
    assert repr(encoder) == f"<Encoder 'openai-chat': 1 events, {len(write('openai-chat', [Delta(0, 'Hi')])[0])} bytes>"
    assert Encoder("gemini").dialect == "gemini"
