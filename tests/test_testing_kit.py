"""The testing kit's promises: ``chat_streams`` draws every hazard of the
servers we know, ``chunkings`` draws every cut that matters, and the pytest
plugin's ``sse_server`` fixture works in any project that installs ssestate.

(The kit's expectations are checked against two independent readers,
``ChatStream`` + ``Accumulator`` and a hand-written one, in
``test_testing_teeth.py`` and ``test_properties_chat.py``.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from helpers import untraced
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from ssestate import CLOSED, Accumulator, ChatStream, StreamError
from ssestate.testing import strategies
from ssestate.testing.strategies import ChatCase, chat_streams, chunkings, cut_at, mutated_streams

# Find the first example that shows a hazard; shrinking it would only cost time.
# The same draws on every run: what is tested is that the strategy reaches the
# hazard, and random draws made a search for a rare one take from 0.1 to 50 s.
FIRST = settings(max_examples=2000, phases=[Phase.generate], database=None, derandomize=True)


def _payloads(case: ChatCase) -> list[dict[str, Any]]:
    return case.payloads


def _deltas(case: ChatCase) -> list[dict[str, Any]]:
    return [c.get("delta") or {} for p in case.payloads for c in p.get("choices") or []]


def _tool_items(case: ChatCase) -> list[dict[str, Any]]:
    return [item for d in _deltas(case) for item in d.get("tool_calls") or []]


def _raw(case: ChatCase, kind: str) -> bytes:
    return b"".join(b.raw for b in case.blocks if b.kind == kind)


HAZARDS: dict[str, Callable[[ChatCase], bool]] = {
    # framing
    "CRLF line endings": lambda c: c.newline == "\r\n",
    "data: without its space (DashScope)": lambda c: not c.space,
    "keep-alive comments": lambda c: "keep-alive" in c.heartbeats,
    "empty comment (llama.cpp)": lambda c: "" in c.heartbeats,
    "OpenRouter's processing comment": lambda c: "OPENROUTER PROCESSING" in c.heartbeats,
    "whitespace-only payload": lambda c: any(b.kind == "blank" for b in c.blocks),
    "[DONE] padded with whitespace": lambda c: b"[DONE] \t" in c.body,
    "no [DONE]": lambda c: c.ending in ("clean-eof", "eof-before-done"),
    "bytes after [DONE]": lambda c: any(b.kind == "after-done" for b in c.blocks),
    "cut inside an event": lambda c: c.ending == "partial-event",
    # serializers and shapes
    "Python's spaced ASCII JSON": lambda c: c.serializer == "python",
    "Go's escaped <>&": lambda c: c.serializer == "go" and b"\\u003c" in c.body,
    "keys sorted (Azure)": lambda c: any(list(p) == sorted(p) and "choices" in p and p.get("id") for p in c.payloads),
    "choices first (llama.cpp)": lambda c: any(next(iter(p)) == "choices" and p.get("id") for p in c.payloads),
    "explicit nulls (SGLang, vLLM)": lambda c: b'"finish_reason":null' in c.body,
    "UTF-8 of 2, 3 and 4 bytes": lambda c: all(
        any(ch.encode() and len(ch.encode()) == n for ch in c.body.decode()) for n in (2, 3, 4)
    ),
    # choices
    "n > 1, indexes interleaved": lambda c: (
        len(c.choices) > 1 and any(len(p.get("choices") or []) > 1 for p in c.payloads)
    ),
    "choice indexes not counting from 0": lambda c: min(c.choices, default=0) > 0,
    "role on every chunk": lambda c: sum(d.get("role") == "assistant" for d in _deltas(c)) > len(c.choices) + 1,
    "reasoning_content (DeepSeek, vLLM)": lambda c: any(
        isinstance(d.get("reasoning_content"), str) for d in _deltas(c)
    ),
    "reasoning (Ollama, OpenRouter)": lambda c: any(
        isinstance(d.get("reasoning"), str) and "reasoning_content" not in d for d in _deltas(c)
    ),
    "reasoning and reasoning_content alike (OpenRouter)": lambda c: any(
        d.get("reasoning") and d.get("reasoning") == d.get("reasoning_content") for d in _deltas(c)
    ),
    "reasoning beside reasoning_content: null": lambda c: any(
        d.get("reasoning") and "reasoning_content" in d and d["reasoning_content"] is None for d in _deltas(c)
    ),
    "refusal": lambda c: any(ch.refusal for ch in c.choices.values()),
    "logprobs": lambda c: any(ch.logprobs for ch in c.choices.values()),
    "empty content fragment (vLLM)": lambda c: any(d == {"content": ""} for d in _deltas(c)),
    "finish on its own chunk": lambda c: any(
        ch.get("delta") == {} and ch.get("finish_reason") for p in c.payloads for ch in p.get("choices") or []
    ),
    "finish on the last content chunk": lambda c: any(
        (ch.get("delta") or {}).get("content") and ch.get("finish_reason")
        for p in c.payloads
        for ch in p.get("choices") or []
    ),
    "a choice that never finishes": lambda c: any(ch.finish_reason is None for ch in c.choices.values()),
    "insufficient_system_resource (DeepSeek)": lambda c: b"insufficient_system_resource" in c.body,
    "finish repeated with another reason (SGLang)": lambda c: (
        len(
            {
                (ch["index"], ch["finish_reason"])
                for p in c.payloads
                for ch in p.get("choices") or []
                if ch.get("finish_reason")
            }
        )
        > len(c.choices)
    ),
    # tool calls
    "parallel tool calls": lambda c: any(len(ch.tool_calls) > 1 for ch in c.choices.values()),
    "tool call whole in one delta (Ollama, Groq)": lambda c: any(
        (i.get("function") or {}).get("name") and len((i.get("function") or {}).get("arguments") or "") > 2
        for i in _tool_items(c)
    ),
    "tool call without index (Gemini)": lambda c: any("index" not in i for i in _tool_items(c)),
    "tool call without id": lambda c: any(t.id is None for ch in c.choices.values() for t in ch.tool_calls),
    "null id and name on fragments (SGLang)": lambda c: any(
        "id" in i and i["id"] is None and (i.get("function") or {}).get("name", "") is None for i in _tool_items(c)
    ),
    'name "" on fragments (LiteLLM to OCI)': lambda c: any(
        (i.get("function") or {}).get("name") == "" for i in _tool_items(c)
    ),
    "name split over fragments": lambda c: any(
        sum(bool((i.get("function") or {}).get("name")) for i in _tool_items(c))
        > len([t for ch in c.choices.values() for t in ch.tool_calls])
        for _ in [0]
    ),
    "type repeated on fragments (LiteLLM)": lambda c: any(
        list(i) == ["function", "type", "index"] for i in _tool_items(c)
    ),
    "the whole name again on a fragment": lambda c: any(
        sum((i.get("function") or {}).get("name") == t.name for i in _tool_items(c)) > 1
        for ch in c.choices.values()
        for t in ch.tool_calls
    ),
    "id repeated on fragments": lambda c: any(
        "id" in i and i["id"] and "name" not in (i.get("function") or {}) for i in _tool_items(c)
    ),
    "no arguments on the first fragment (vLLM)": lambda c: any(
        (i.get("function") or {}).get("name") and "arguments" not in i["function"] for i in _tool_items(c)
    ),
    "fragments of two calls interleaved": lambda c: any(
        [i.get("index") for i in _tool_items(c)] != sorted(i.get("index", 0) for i in _tool_items(c)) for _ in [0]
    ),
    'content "" beside a tool call (Ollama)': lambda c: any(
        d.get("tool_calls") and d.get("content") == "" for d in _deltas(c)
    ),
    # usage
    "usage on a choices: [] chunk": lambda c: any(p.get("usage") and p.get("choices") == [] for p in c.payloads),
    "usage: null on every chunk, then the usage": lambda c: any(
        "usage" in p and p["usage"] is None for p in c.payloads
    ),
    "usage on every chunk (vLLM)": lambda c: sum(bool(p.get("usage")) for p in c.payloads) > 2,
    "usage in x_groq": lambda c: any(p.get("x_groq") for p in c.payloads),
    "usage on the last chunk with choices (DeepSeek, Together)": lambda c: any(
        p.get("usage") and p.get("choices") and not any(q.get("usage") for q in c.payloads if q is not p)
        for p in c.payloads
    ),
    "usage chunk with an empty choice 0 (LiteLLM)": lambda c: any(
        p.get("usage") and p.get("choices") == [{"index": 0, "delta": {}}] for p in c.payloads
    ),
    # Azure
    "prompt filter chunk first (Azure)": lambda c: any(p.get("prompt_filter_results") for p in c.payloads),
    "annotation chunk without delta (Azure)": lambda c: any(
        "content_filter_offsets" in ch for p in c.payloads for ch in p.get("choices") or []
    ),
    # errors
    "error: OpenAI": lambda c: b'"type": "server_error"' in _raw(c, "error"),
    "error: vLLM, then [DONE]": lambda c: b'"InternalServerError"' in _raw(c, "error") and c.ending == "done",
    "error: SGLang": lambda c: b'"object": "error"' in _raw(c, "error"),
    "error: LiteLLM, code a string": lambda c: b'"code": "500"' in _raw(c, "error"),
    "error: OpenRouter, beside finish_reason error": lambda c: (
        b'"finish_reason":"error"' in _raw(c, "error") or b'"finish_reason": "error"' in _raw(c, "error")
    ),
    "error: Groq's event: error": lambda c: b"event: error" in _raw(c, "error") and b"tool_use_failed" in c.body,
    "error: event: error with text": lambda c: b"event: error" in _raw(c, "error") and b"{" not in _raw(c, "error"),
    "error: llama.cpp's error: field": lambda c: _raw(c, "error").startswith(b"error: "),
    "error: Ollama's empty chunk": lambda c: any(p.get("model") == "" and p.get("id") for p in c.payloads),
}


def test_chat_streams_draws_every_hazard() -> None:
    # One pass over many streams sees most hazards; each one it missed must
    # then be found on its own.  Both draw the same examples on every run of
    # the same suite (see FIRST; hypothesis also draws constants from the
    # modules loaded, so a run of this file alone draws others), untraced.
    seen: set[str] = set()

    @settings(max_examples=800, phases=[Phase.generate], database=None, deadline=None, derandomize=True)
    @given(chat_streams(max_choices=2))
    def look(case: ChatCase) -> None:
        seen.update(name for name, shows in HAZARDS.items() if name not in seen and shows(case))

    untraced(look)
    for name in sorted(set(HAZARDS) - seen):
        assert HAZARDS[name](untraced(partial(find, chat_streams(max_choices=2), HAZARDS[name], settings=FIRST))), name


@given(chat_streams())
def test_expected_messages_are_what_the_accumulator_gives_back(case: ChatCase) -> None:
    stream, acc = ChatStream(), Accumulator()
    stream.receive_data(case.body)
    stream.receive_data(b"")
    while (event := stream.next_event()) is not CLOSED:
        acc.feed(event)
    assert {i: case.expected.message(i) for i in case.expected.choices} == {i: acc.message(i) for i in acc.choices}


API_HAZARDS: dict[str, dict[str, Callable[[ChatCase], bool]]] = {
    "openai-responses": {
        "keepalive": lambda c: "keepalive" in c.heartbeats,
        "response.incomplete": lambda c: b"event: response.incomplete\n" in c.body,
        "arguments only in .done": lambda c: b"arguments.done" in c.body and b"arguments.delta" not in c.body,
        "nested error": lambda c: b'"type":"error","sequence_number"' in c.body,
        "flat error": lambda c: b'"type":"error","code"' in c.body,
        "response.failed": lambda c: b"event: response.failed\n" in c.body,
        "lost terminal event": lambda c: c.ending == "eof-before-done",
    },
    "anthropic": {
        "ping": lambda c: "ping" in c.heartbeats,
        "padded payload": lambda c: b'"            }' in c.body,
        "tool without arguments": lambda c: b'"input":{}}}' in c.body and b'"partial_json":"{' not in c.body,
        "refusal": lambda c: b'"stop_reason":"refusal"' in c.body,
        "overloaded_error": lambda c: b"overloaded_error" in c.body,
        "no message_stop after the stop reason": lambda c: c.ending == "clean-eof",
    },
    "gemini": {
        "CRLF": lambda c: c.body.count(b"\n") == c.body.count(b"\r\n") > 0,
        "raw JSON error lines": lambda c: b'\n{\n  "error"' in b"\n" + c.body,
        "call without args": lambda c: any(
            b'"functionCall": {"name": "' in b.raw and b'"args"' not in b.raw for b in c.blocks
        ),
        "no candidate index": lambda c: b'"candidates": [' in c.body and b'"index"' not in c.body,
        "usageMetadata without counts": lambda c: b'"trafficType"' in c.body,
        "two candidates": lambda c: len(c.expected.choices) > 1,
    },
}


@pytest.mark.parametrize("dialect", list(API_HAZARDS))
def test_chat_streams_of_each_api_draw_its_hazards(dialect: str) -> None:
    for name, shows in API_HAZARDS[dialect].items():
        assert shows(untraced(partial(find, chat_streams(dialect), shows, settings=FIRST))), name


def _read(dialect: str, chunks: list[bytes]) -> tuple[Accumulator, list[Any]]:
    stream, acc, events = ChatStream(dialect=dialect), Accumulator(), []
    for chunk in [*chunks, b""]:
        events += stream.feed(chunk)
    for event in events:
        acc.feed(event)
    return acc, events


@pytest.mark.parametrize("dialect", list(API_HAZARDS))
def test_chat_streams_of_each_api_read_back_as_expected(dialect: str) -> None:
    @given(chat_streams(dialect), st.data())
    def check(case: ChatCase, data: st.DataObject) -> None:
        acc, events = _read(dialect, data.draw(chunkings(case.body)))
        want = case.expected

        def calls(choice: Any) -> list[tuple[int, str | None, str, str]]:
            return [(t.index, t.id, t.name, t.arguments) for t in choice.tool_calls]

        assert {i: (c.content, c.reasoning, c.finish_reason, calls(c)) for i, c in acc.choices.items()} == {
            i: (c.content, c.reasoning, c.finish_reason, calls(c)) for i, c in want.choices.items()
        }
        assert acc.outcome == want.outcome
        u = acc.usage
        names = ("prompt_tokens", "completion_tokens", "total_tokens")
        counts = (
            None if u is None else dict(zip(names, (u.prompt_tokens, u.completion_tokens, u.total_tokens), strict=True))
        )
        assert counts == want.usage  # in OpenAI's words, for every API
        errors = [(e.message, e.code, e.type) for e in events if type(e) is StreamError]
        assert errors == ([] if want.error is None else [(want.error.message, want.error.code, want.error.type)])

    check()


def test_openai_shape_keeps_to_what_openai_sends() -> None:
    @settings(max_examples=max(10, settings().max_examples // 3))
    @given(chat_streams(openai_shape=True, faults=False))
    def check(case: ChatCase) -> None:
        assert case.space and case.newline == "\n" and case.serializer == "compact"
        assert case.ending == "done"
        assert all(len(p["choices"]) <= 1 for p in case.payloads)
        assert all(not p.get("usage") or p["choices"] == [] for p in case.payloads)

    check()


@given(chat_streams(faults=False))
def test_faults_can_be_left_out(case: ChatCase) -> None:
    assert case.expected.error is None
    assert case.ending != "partial-event"
    assert all(block.kind != "error" for block in case.blocks)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"dialect": "cohere"}, "draws dialect openai-chat, openai-responses, anthropic, gemini; not 'cohere'"),
     ({"max_choices": 0}, "max_choices must be at least 1, got 0")],
)  # fmt: skip
def test_chat_streams_refuses_what_it_cannot_draw(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        chat_streams(**kwargs)


def test_the_smallest_stream_is_the_plain_one() -> None:
    simplest = settings(database=None, max_examples=1, phases=[Phase.generate])  # the first example drawn
    case = find(chat_streams(), lambda c: True, settings=simplest)
    assert case.body == (
        b'data: {"id":"chatcmpl-0","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini",'
        b'"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
        b'data: {"id":"chatcmpl-0","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini",'
        b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    assert case.expected.message(0) == {"role": "assistant", "content": ""}
    assert case.expected.outcome == "complete"
    assert repr(case).startswith("ChatCase(body=b'data: {")


# -- chunkings -----------------------------------------------------------------------------------

BODY = 'data: {"content":"é中🚀"}\r\n\r\n'.encode()


@given(st.data())
def test_chunkings_join_to_the_body(data: st.DataObject) -> None:
    body = data.draw(st.one_of(st.just(BODY), st.binary(max_size=300), chat_streams().map(lambda c: c.body)))
    chunks = data.draw(chunkings(body))
    assert b"".join(chunks) == body
    assert all(chunks)


def _cuts(chunks: list[bytes]) -> set[int]:
    ends, at = set(), 0
    for chunk in chunks[:-1]:
        at += len(chunk)
        ends.add(at)
    return ends


@pytest.mark.parametrize(
    ("what", "wanted"),
    [
        ("the whole body", lambda chunks: chunks == [BODY]),
        ("one byte at a time", lambda chunks: len(chunks) == len(BODY)),
        ("inside a 4-byte character", lambda chunks: bool(_cuts(chunks) & {BODY.index("🚀".encode()) + 2})),
        ("between CR and LF", lambda chunks: bool(_cuts(chunks) & {BODY.index(b"\r\n") + 1})),
        ("fixed sizes", lambda chunks: len({len(c) for c in chunks[:-1]}) == 1 and len(chunks) > 2),
    ],
)
def test_chunkings_cut_where_it_matters(what: str, wanted: Callable[[list[bytes]], bool]) -> None:
    assert wanted(find(chunkings(BODY), wanted, settings=FIRST)), what


def test_chunkings_start_with_the_cuts_that_matter_and_shrink_to_them() -> None:
    # Every cut inside a character or a CRLF: first, and what a failure that
    # does not depend on the cuts shrinks to; a body without such places is
    # then delivered whole.
    every = sorted({BODY.index(b"\r\n") + 1, BODY.index(b"\r\n\r\n") + 3} | {
        i for i in range(len(BODY)) if 0x80 <= BODY[i] < 0xC0
    })  # fmt: skip
    assert find(chunkings(BODY), lambda chunks: True, settings=settings(database=None)) == cut_at(BODY, every)
    plain = b"data: {}\n\n"
    assert find(chunkings(plain), lambda chunks: True, settings=settings(database=None)) == [plain]
    assert find(chunkings(b"x"), lambda chunks: True) == [b"x"]
    assert find(chunkings(b""), lambda chunks: True) == []
    assert cut_at(b"abcdef", [4, 2, 2]) == [b"ab", b"cd", b"ef"]


@settings(max_examples=max(10, settings().max_examples // 3))
@given(mutated_streams(max_choices=2))
def test_mutated_streams_are_bytes(body: bytes) -> None:
    assert isinstance(body, bytes)


def test_strategies_module_lists_its_names() -> None:
    assert {name for name in strategies.__all__ if not hasattr(strategies, name)} == set()


# -- the pytest plugin -------------------------------------------------------------------------------


def test_the_plugin_is_registered_by_its_entry_point(pytestconfig: pytest.Config) -> None:
    plugin = pytestconfig.pluginmanager.get_plugin("ssestate")
    assert plugin is not None
    assert plugin.__name__ == "pytest_ssestate"


def test_sse_server_serves_until_the_test_ends(sse_server: Callable[..., str]) -> None:
    urls = [sse_server("cjk", speed=float("inf")), sse_server(seed=3)]
    assert urls[0] != urls[1]
    request = urllib.request.Request(
        urls[0] + "/chat/completions", data=b'{"messages": []}', headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        completion = json.loads(response.read())
    assert "流式传输" in completion["choices"][0]["message"]["content"]


def test_sse_server_in_a_project_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "test_client.py").write_text(
        textwrap.dedent(
            """
            import json, urllib.request

            def test_answer(sse_server):
                url = sse_server("tools", speed=float("inf"))
                request = urllib.request.Request(url + "/chat/completions", data=b"{}")
                reply = json.loads(urllib.request.urlopen(request).read())
                assert reply["choices"][0]["finish_reason"] == "tool_calls"
                test_answer.url = url

            def test_closed_after_the_test():
                try:
                    urllib.request.urlopen(test_answer.url + "/models", timeout=5)
                except OSError:
                    return
                raise AssertionError("the server outlived its test")
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_client.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
