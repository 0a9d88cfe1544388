"""The official SDKs read what ``Encoder`` writes.

A text answer (with reasoning, the continuation data of every API and a
heartbeat) and a tool-call answer (two calls, arguments cut mid-value) are
written by an ``Encoder`` of each API and handed, in memory, to that
vendor's SDK (``sdk_oracles``: openai-python's chat and Responses stream
helpers, anthropic-sdk-python's ``messages.stream``, google-genai's
``generate_content_stream``).  Each SDK must finish without complaint and
hand its user the message the events said: text, reasoning where the SDK
has it, tool calls with their ids and arguments, the finish word of its own
API, and the usage.
"""

from __future__ import annotations

from typing import Any

import pytest
from sdk_oracles import ALL_ORACLES, ALL_SDK_MODULES

from ssestate import Continuation, Delta, Done, Encoder, Finish, Heartbeat, ToolCallFragment, Usage

THINKING = "The user greets me. Answer in French."
TEXT_ANSWER = [
    Delta(0, "", "assistant"),
    Heartbeat("ping"),
    Delta(0, "", None, "The user greets me. "),
    Delta(0, "", None, "Answer in French."),
    Continuation(0, "thinking", {"type": "thinking", "thinking": THINKING, "signature": "EqQBCkYIBxgC"}, 0),
    Continuation(
        0,
        "reasoning_item",
        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": THINKING}]},
        0,
    ),
    Delta(0, "Bonjour ! "),
    Delta(0, "Ça va ? 👋"),
    Continuation(0, "thought_signature", "c2lnbmF0dXJl", None),
    Finish(0, "stop"),
    Usage(12, 30, 42),
    Done(),
]
TOOL_ANSWER = [
    Delta(0, "", "assistant"),
    Delta(0, "Let me check both cities."),
    ToolCallFragment(0, 0, "call_a", "get_weather", ""),
    ToolCallFragment(0, 0, None, None, '{"city": "Pa'),
    Heartbeat("ping"),
    ToolCallFragment(0, 0, None, None, 'ris"}'),
    ToolCallFragment(0, 1, "call_b", "get_weather", '{"city": "Tokyo", "unit": "celsius"}'),
    Finish(0, "tool_calls"),
    Usage(61, 38, 99),
    Done(),
]
CALLS = [
    {"id": "call_a", "name": "get_weather", "arguments": {"city": "Paris"}},
    {"id": "call_b", "name": "get_weather", "arguments": {"city": "Tokyo", "unit": "celsius"}},
]
# The finish word each SDK reports: the API's own.
WORDS = {
    "openai-chat": ("stop", "tool_calls"),
    "openai-responses": ("completed", "completed"),
    "anthropic": ("end_turn", "tool_use"),
    "gemini": ("STOP", "STOP"),
}


def sdk_reads(dialect: str, events: list[Any]) -> Any:
    pytest.importorskip(ALL_SDK_MODULES[dialect])
    encoder = Encoder(dialect, model="oracle-model", response_id="resp_oracle")
    body = b"".join(encoder.feed(event) for event in events)
    return ALL_ORACLES[dialect](body)


@pytest.mark.parametrize("dialect", sorted(ALL_ORACLES))
def test_the_sdk_reads_a_text_answer(dialect: str) -> None:
    result = sdk_reads(dialect, TEXT_ANSWER)
    assert result.verdict == "finished", result.error
    assert result.choices == {
        "0": {
            "content": "Bonjour ! Ça va ? 👋",
            "reasoning": None if dialect == "openai-chat" else THINKING,
            "refusal": None,
            "native_finish_reason": WORDS[dialect][0],
            "tool_calls": [],
        }
    }
    assert result.usage == {"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42}


@pytest.mark.parametrize("dialect", sorted(ALL_ORACLES))
def test_the_sdk_reads_a_tool_call_answer(dialect: str) -> None:
    result = sdk_reads(dialect, TOOL_ANSWER)
    assert result.verdict == "finished", result.error
    assert result.choices == {
        "0": {
            "content": "Let me check both cities.",
            "reasoning": None,
            "refusal": None,
            "native_finish_reason": WORDS[dialect][1],
            "tool_calls": CALLS,
        }
    }
    assert result.usage == {"prompt_tokens": 61, "completion_tokens": 38, "total_tokens": 99}
