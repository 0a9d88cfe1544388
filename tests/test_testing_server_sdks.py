"""The official SDKs against the test server's other APIs: ``openai``'s
Responses API, ``anthropic`` and ``google-genai`` read every scenario that
intends no fault as they read the real API, streamed and whole, and each
tells the answer Chat Completions tells (text, reasoning, calls, finish,
usage); the faults reach them as that API's errors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from ssestate import Accumulator, ChatStream
from ssestate.testing import ScenarioServer, random_choice, scenario, scenarios_for, serve

pytestmark = pytest.mark.network

FAST = math.inf
SEED = 7
# What each API's scenarios intend: the answer, with no fault.
FAULTS = {"drop-mid-event", "error-503", "error-401", "overloaded", "error-mid-stream", "downgrade", "no-done"}


@pytest.fixture(scope="module")
def server() -> Iterator[ScenarioServer]:
    with serve(speed=FAST) as running:
        yield running


def clean(dialect: str) -> list[str]:
    names = [n for n in scenarios_for(dialect) if n not in FAULTS and n != "random"]
    return [*names, "random"] if random_choice(SEED, dialect) not in FAULTS else names


def chat(name: str) -> Accumulator:
    """The answer as Chat Completions streams it, assembled by ssestate."""
    stream = ChatStream(dialect="openai-chat")
    acc = Accumulator()
    for event in [*stream.feed(scenario(name, SEED, FAST).body()), *stream.feed(b"")]:
        acc.feed(event)
    return acc


def wanted(name: str, dialect: str) -> tuple[dict[int, str], dict[int, str], dict[int, list[tuple[str, str]]], int]:
    """Per choice the text, the reasoning and the calls, and the completion
    tokens, that the API's stream of ``name`` must give (``random`` plays
    a perturbed seed: read the API's own stream)."""
    if name == "random":
        stream = ChatStream(dialect=dialect)
        acc = Accumulator()
        for event in [*stream.feed(scenario(name, SEED, FAST, dialect=dialect).body()), *stream.feed(b"")]:
            acc.feed(event)
    else:
        acc = chat(name)
    assert acc.usage is not None
    return (
        {i: c.content for i, c in acc.choices.items()},
        {i: c.reasoning or "" for i, c in acc.choices.items()},
        {i: [(t.name, t.arguments) for t in c.tool_calls] for i, c in acc.choices.items() if c.tool_calls},
        acc.usage.completion_tokens,
    )


def same_calls(got: dict[int, list[tuple[str, Any]]], want: dict[int, list[tuple[str, str]]]) -> None:
    assert {i: [(n, a if isinstance(a, dict) else json.loads(a)) for n, a in calls] for i, calls in got.items()} == {
        i: [(n, json.loads(a)) for n, a in calls] for i, calls in want.items()
    }


# -- openai: the Responses API ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", clean("openai-responses"))
def test_the_openai_sdk_reads_the_responses_api(server: ScenarioServer, name: str, stream: bool) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    texts, reasoning, calls, completion = wanted(name, "openai-responses")
    kwargs: dict[str, Any] = {"model": name, "input": "Hello", "extra_body": {"seed": SEED}}
    if stream:
        text = thought = ""
        final = None
        for event in client.responses.create(stream=True, **kwargs):
            if event.type == "response.output_text.delta":
                text += event.delta
            elif event.type in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                thought += event.delta
            elif event.type in ("response.completed", "response.incomplete"):
                final = event.response
        assert (text, thought) == (texts[0], reasoning[0])
        assert final is not None
    else:
        final = client.responses.create(**kwargs)
    assert final.output_text == texts[0]
    got = [(item.name, item.arguments) for item in final.output if item.type == "function_call"]
    same_calls({0: got} if got else {}, calls)
    assert final.status == ("incomplete" if name == "length" else "completed")
    assert final.usage is not None
    assert final.usage.output_tokens == completion


def test_the_openai_sdk_sees_the_responses_api_fail(server: ScenarioServer) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.responses.create(model="error-401", input="Hello")
    with pytest.raises(openai.APIError, match="had an error"):
        list(client.responses.create(model="error-mid-stream", input="Hello", stream=True))


# -- anthropic -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", clean("anthropic"))
def test_the_anthropic_sdk_reads_messages(server: ScenarioServer, name: str, stream: bool) -> None:
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(base_url=server.origin, api_key="sk-ant-test", max_retries=0)
    texts, reasoning, calls, completion = wanted(name, "anthropic")
    kwargs: dict[str, Any] = {
        "model": name,
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "Hello"}],
        "extra_body": {"seed": SEED},
    }
    if stream:
        with client.messages.stream(**kwargs) as events:
            text = "".join(events.text_stream)
            message = events.get_final_message()
        assert text == texts[0]
    else:
        message = client.messages.create(**kwargs)
    assert "".join(b.text for b in message.content if b.type == "text") == texts[0]
    assert "".join(b.thinking for b in message.content if b.type == "thinking") == reasoning[0]
    assert all(b.signature for b in message.content if b.type == "thinking")
    got = [(b.name, b.input) for b in message.content if b.type == "tool_use"]
    same_calls({0: got} if got else {}, calls)
    assert all(b.id.startswith("toolu_") for b in message.content if b.type == "tool_use")
    assert message.stop_reason == {"length": "max_tokens"}.get(name, "tool_use" if got else "end_turn")
    assert message.usage.output_tokens == completion


def test_the_anthropic_sdk_sees_overload(server: ScenarioServer) -> None:
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(base_url=server.origin, api_key="sk-ant-test", max_retries=0)
    kwargs: dict[str, Any] = {"max_tokens": 99, "messages": [{"role": "user", "content": "Hello"}]}
    with pytest.raises(anthropic.APIStatusError) as info:
        client.messages.create(model="overloaded", **kwargs)
    assert info.value.status_code == 529
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
        "request_id": info.value.body["request_id"],
    }
    assert info.value.response.headers["request-id"] == info.value.body["request_id"]
    with (
        pytest.raises(anthropic.APIStatusError, match="Overloaded"),
        client.messages.stream(model="error-mid-stream", **kwargs) as events,
    ):
        list(events)
    with pytest.raises(anthropic.AuthenticationError):
        client.messages.create(model="error-401", **kwargs)


# -- google-genai --------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", clean("gemini"))
def test_google_genai_reads_gemini(server: ScenarioServer, name: str, stream: bool) -> None:
    genai = pytest.importorskip("google.genai")
    types = pytest.importorskip("google.genai.types")
    client = genai.Client(
        api_key="test-key", http_options=types.HttpOptions(base_url=server.origin, api_version="v1beta")
    )
    texts, reasoning, calls, completion = wanted(name, "gemini")
    config = types.GenerateContentConfig(seed=SEED)
    if stream:
        chunks = list(client.models.generate_content_stream(model=name, contents="Hello", config=config))
    else:
        chunks = [client.models.generate_content(model=name, contents="Hello", config=config)]
    got_texts: dict[int, str] = {}
    got_thoughts: dict[int, str] = {}
    got_calls: dict[int, list[tuple[str, Any]]] = {}
    finish: dict[int, str] = {}
    for chunk in chunks:
        for position, candidate in enumerate(chunk.candidates or []):
            i = candidate.index if candidate.index is not None else position
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.function_call is not None:
                    got_calls.setdefault(i, []).append((part.function_call.name, part.function_call.args))
                elif part.thought:
                    got_thoughts[i] = got_thoughts.get(i, "") + (part.text or "")
                elif part.text:
                    got_texts[i] = got_texts.get(i, "") + part.text
            if candidate.finish_reason is not None:
                finish[i] = candidate.finish_reason.value
    assert got_texts == {i: text for i, text in texts.items() if text}  # a call-only answer has no text part
    assert {i: got_thoughts.get(i, "") for i in reasoning} == reasoning
    same_calls(got_calls, calls)
    assert finish == dict.fromkeys(texts, "MAX_TOKENS" if name == "length" else "STOP")
    usage = chunks[-1].usage_metadata
    assert usage is not None
    assert (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0) == completion


def test_google_genai_sees_gemini_errors(server: ScenarioServer) -> None:
    genai = pytest.importorskip("google.genai")
    types = pytest.importorskip("google.genai.types")
    errors = pytest.importorskip("google.genai.errors")
    client = genai.Client(
        api_key="test-key", http_options=types.HttpOptions(base_url=server.origin, api_version="v1beta")
    )
    with pytest.raises(errors.ClientError) as info:
        client.models.generate_content(model="error-401", contents="Hello")
    assert (info.value.code, info.value.status) == (400, "INVALID_ARGUMENT")
    with pytest.raises(errors.ServerError) as failed:
        list(client.models.generate_content_stream(model="error-mid-stream", contents="Hello"))
    assert (failed.value.code, failed.value.status) == (503, "UNAVAILABLE")
