"""The benchmark fixtures are what they claim to be.

A benchmark is only as honest as its input: these tests pin the shape, size
and determinism of every generator in ``benchmarks/fixtures.py`` and check
that ``EventStreamParser`` reads each one into exactly the payloads the
fixture says it carries, under every chunk size the benchmarks use; and the
streams of the other APIs (``benchmarks/api_fixtures.py``) are complete
answers that ``ChatStream`` reads the same under every chunking.
"""

from __future__ import annotations

import itertools
import json
import statistics
from functools import partial
from typing import Any

import pytest
from helpers import untraced
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import api_fixtures as api
from benchmarks import bench_dialects
from benchmarks import fixtures as fx
from ssestate import (
    CLOSED,
    NEED_DATA,
    Accumulator,
    ChatStream,
    Delta,
    EventStreamParser,
    ServerSentEvent,
    Truncated,
)

HEAD_KEYS = ["id", "object", "created", "model", "system_fingerprint", "choices"]


def parse(chunks: list[bytes]) -> list[Any]:
    parser = EventStreamParser()
    events: list[Any] = []
    for piece in chunks:
        parser.receive_data(piece)
        while (ev := parser.next_event()) is not NEED_DATA:
            events.append(ev)
    parser.receive_data(b"")
    while (ev := parser.next_event()) is not CLOSED:
        events.append(ev)
    return events


def chunks_of(fixture: fx.Fixture) -> list[dict[str, Any]]:
    return [json.loads(p) for p in fixture.json_payloads]


def has_astral(text: str) -> bool:
    return any(ord(ch) > 0xFFFF for ch in text)


def has_cjk(text: str) -> bool:
    return any(0x3000 <= ord(ch) <= 0x9FFF or 0xAC00 <= ord(ch) <= 0xD7AF for ch in text)


SMALL = [
    fx.chat_stream(n_chunks=40),
    fx.tool_call_stream(n_items=2),
    fx.n2_stream(n_chunks=20),
    fx.big_event_stream(n_events=2, event_size=4096),
    fx.big_payload(20_000),
]


# -- every fixture ---------------------------------------------------------------


@pytest.mark.parametrize("label", list(fx.CHUNK_SIZES))
@pytest.mark.parametrize("fixture", SMALL, ids=[f.name for f in SMALL])
def test_parser_reads_exactly_the_payloads(fixture: fx.Fixture, label: str) -> None:
    events = parse(fx.chunk(fixture.body, fx.CHUNK_SIZES[label]))
    assert events == [ServerSentEvent("message", p, "", None) for p in fixture.payloads]
    assert len(events) == fixture.events


@pytest.mark.parametrize("fixture", SMALL, ids=[f.name for f in SMALL])
def test_payloads_are_chat_completion_chunks(fixture: fx.Fixture) -> None:
    body = fixture.body.decode("utf-8")  # strict: valid UTF-8 throughout
    assert body.endswith("\n\n") and "\r" not in body
    decoded = chunks_of(fixture)
    assert len({c["id"] for c in decoded}) == 1
    for chunk in decoded:
        assert list(chunk)[:6] == HEAD_KEYS
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["model"] == fx.MODEL
        assert chunk["id"].startswith("chatcmpl-") and len(chunk["id"]) == len("chatcmpl-") + 29
        fp = chunk["system_fingerprint"]
        assert fp.startswith("fp_") and len(fp) == 13 and int(fp[3:], 16) >= 0


@pytest.mark.parametrize(
    "make",
    [
        lambda seed: fx.chat_stream(30, seed=seed).body,
        lambda seed: fx.tool_call_stream(2, seed=seed).body,
        lambda seed: fx.n2_stream(15, seed=seed).body,
        lambda seed: fx.big_event_stream(2, 2048, seed=seed).body,
        lambda seed: fx.big_payload(5000, seed=seed).body,
        lambda seed: fx.huge_line(10_000, seed=seed),
    ],
    ids=["chat", "tool", "n2", "64KiB", "payload", "huge_line"],
)
def test_generators_are_deterministic(make: Any) -> None:
    assert make(fx.SEED) == make(fx.SEED)
    assert make(7) == make(7)
    assert make(7) != make(fx.SEED)


def test_fixture_properties() -> None:
    f = fx.Fixture("t", b'data: {"a":1}\n\ndata: [DONE]\n\n', ('{"a":1}', fx.DONE))
    assert f.json_payloads == ('{"a":1}',)
    assert f.events == 2
    assert f.largest_event == len(b'data: {"a":1}\n\n')


# -- (a) the chat stream -------------------------------------------------------------


def test_chat_stream_shape() -> None:
    f = fx.chat_stream(n_chunks=300)
    assert f.events == 300 + 4
    assert f.payloads[-1] == fx.DONE
    decoded = chunks_of(f)
    assert decoded[0]["choices"] == [
        {
            "index": 0,
            "delta": {"role": "assistant", "content": "", "refusal": None},
            "logprobs": None,
            "finish_reason": None,
        }
    ]
    content = decoded[1:-2]
    for chunk in content:
        (choice,) = chunk["choices"]
        assert list(choice) == ["index", "delta", "logprobs", "finish_reason"]
        assert list(choice["delta"]) == ["content"] and choice["delta"]["content"]
        assert choice["finish_reason"] is None
    assert decoded[-2]["choices"] == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]
    usage = decoded[-1]
    assert usage["choices"] == []
    assert usage["usage"]["completion_tokens"] == 300
    assert usage["usage"]["total_tokens"] == usage["usage"]["prompt_tokens"] + 300
    text = "".join(c["choices"][0]["delta"]["content"] for c in content)
    assert has_astral(text) and has_cjk(text) and any(ch.isascii() and ch.isalpha() for ch in text)


def test_chat_events_are_about_272_bytes() -> None:
    f = fx.chat_stream()
    sizes = [len(f"data: {p}\n\n".encode()) for p in f.payloads[1:-3]]
    assert len(sizes) == 2000
    assert 264 <= statistics.mean(sizes) <= 280
    assert len(f.body) == sum(len(f"data: {p}\n\n".encode()) for p in f.payloads)


# -- (b) tool calls ----------------------------------------------------------------------


def test_tool_call_stream_shape() -> None:
    f = fx.tool_call_stream()
    decoded = chunks_of(f)
    assert decoded[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert decoded[-1]["choices"] == [] and "usage" in decoded[-1]
    calls = [c["choices"][0]["delta"]["tool_calls"] for c in decoded[:-2]]
    assert all(len(entry) == 1 for entry in calls)
    indexes = [entry[0]["index"] for entry in calls]
    assert indexes == sorted(indexes) and set(indexes) == {0, 1}  # call 0, then call 1
    args: dict[int, list[str]] = {0: [], 1: []}
    for entry in calls:
        (call,) = entry
        if "id" in call:  # the opening fragment
            assert call["id"].startswith("call_") and call["type"] == "function"
            assert call["function"] == {"name": "get_weather", "arguments": ""}
            assert not args[call["index"]]
        else:
            assert list(call) == ["index", "function"] and list(call["function"]) == ["arguments"]
            piece = call["function"]["arguments"]
            assert 1 <= len(piece) <= 12
        args[call["index"]].append(call["function"]["arguments"])
    assert decoded[0]["choices"][0]["delta"]["role"] == "assistant"
    for pieces in args.values():
        assert len(pieces) > 50
        whole = json.loads("".join(pieces))
        assert list(whole) == ["location", "unit", "queries"]
        # Fragments are cut inside strings, not only between JSON tokens.
        assert any(p.count('"') % 2 for p in pieces)


# -- (c) n = 2 -------------------------------------------------------------------------------


def test_n2_stream_interleaves_choices() -> None:
    f = fx.n2_stream(n_chunks=200)
    decoded = chunks_of(f)
    assert all(len(c["choices"]) == 1 for c in decoded[:-1])
    order = [c["choices"][0]["index"] for c in decoded[:-1]]
    assert order[:2] == [0, 1]
    content = [c["choices"][0] for c in decoded[2:-3]]
    assert [c["index"] for c in content].count(0) == 200
    assert [c["index"] for c in content].count(1) == 200
    runs = sum(1 for a, b in itertools.pairwise(content) if a["index"] != b["index"])
    assert runs > 50  # interleaved, not one answer after the other
    assert [(c["choices"][0]["index"], c["choices"][0]["finish_reason"]) for c in decoded[-3:-1]] == [
        (1, "stop"),
        (0, "length"),
    ]
    assert decoded[-1]["choices"] == [] and decoded[-1]["usage"]["completion_tokens"] == 400


# -- (d) 64 KiB events ---------------------------------------------------------------------


def test_big_events_are_exactly_64_kib() -> None:
    f = fx.big_event_stream()
    assert f.events == 32 and f.largest_event == 65536
    assert len(f.body) == 32 * 65536
    for raw in f.body.split(b"\n\n")[:-1]:
        assert len(raw) + 2 == 65536
    text = "".join(c["choices"][0]["delta"]["content"] for c in chunks_of(f))
    assert has_astral(text) and has_cjk(text)


def test_ascii_big_events() -> None:
    f = fx.big_event_stream(n_events=3, ascii_only=True)
    assert f.name == "64KiB-ascii" and f.body.isascii()
    assert len(f.body) == 3 * 65536 and f.largest_event == 65536
    assert parse(fx.chunk(f.body, 1460)) == [ServerSentEvent("message", p, "", None) for p in f.payloads]
    assert fx.big_event_stream(n_events=3, ascii_only=True).body == f.body


def test_big_event_too_small_is_refused() -> None:
    with pytest.raises(ValueError, match="overhead"):
        fx.big_event_stream(n_events=1, event_size=100)


# -- (e) one huge line ------------------------------------------------------------------------


def test_huge_line_has_no_terminator() -> None:
    line = fx.huge_line()
    assert len(line) == 4 << 20
    assert line.startswith(b"data: ")
    assert b"\n" not in line and b"\r" not in line
    text = line.decode("utf-8")  # cut at a character boundary
    assert has_astral(text) and has_cjk(text)
    parser = EventStreamParser()
    for piece in fx.chunk(line, 65536):
        parser.receive_data(piece)
        assert parser.next_event() is NEED_DATA
    parser.receive_data(b"")
    assert parser.next_event() == Truncated("partial-event", 4 << 20)
    assert parser.next_event() is CLOSED


def test_terminated_huge_line_is_one_event() -> None:
    line = fx.huge_line(300_000, terminated=True)
    assert len(line) == 300_002 and line.endswith(b"\n\n") and b"\n" not in line[:-2]
    assert parse(fx.chunk(line, 4096)) == [ServerSentEvent("message", line[6:-2].decode(), "", None)]


def test_huge_line_too_small_is_refused() -> None:
    with pytest.raises(ValueError, match="below"):
        fx.huge_line(3)


# -- (f) a 1 MB payload ---------------------------------------------------------------------------


def test_big_payload_is_one_exact_event() -> None:
    f = fx.big_payload()
    assert len(f.body) == 1 << 20 and f.events == 1 and f.largest_event == 1 << 20
    (chunk,) = chunks_of(f)
    assert chunk["choices"][0]["finish_reason"] == "stop"
    assert len(chunk["choices"][0]["delta"]["content"].encode()) > 1_000_000


# -- chunking -----------------------------------------------------------------------------------------


def test_chunk_sizes_are_the_documented_ones() -> None:
    assert fx.CHUNK_SIZES == {"whole": None, "64KiB": 65536, "1460": 1460, "event": fx.EVENT, "37": 37, "1": 1}


@pytest.mark.parametrize("label", list(fx.CHUNK_SIZES))
def test_chunk_cuts_the_chat_stream(label: str) -> None:
    body = fx.chat_stream(n_chunks=400).body
    size = fx.CHUNK_SIZES[label]
    pieces = fx.chunk(body, size)
    assert b"".join(pieces) == body
    if size is None:
        assert pieces == [body]
    elif size == fx.EVENT:
        assert len(pieces) == body.count(b"\n\n") == 400 + 4  # role, content, finish, usage, [DONE]
        assert all(p.endswith(b"\n\n") and p.count(b"\n") == 2 for p in pieces)
    else:
        assert len(pieces) == -(-len(body) // size)
        assert all(len(p) == size for p in pieces[:-1]) and 1 <= len(pieces[-1]) <= size


@given(st.binary(max_size=300), st.integers(min_value=1, max_value=400))
def test_chunk_is_a_partition(body: bytes, size: int) -> None:
    pieces = fx.chunk(body, size)
    assert b"".join(pieces) == body
    assert all(1 <= len(p) <= size for p in pieces)
    assert all(len(p) == size for p in pieces[:-1])


def test_chunk_by_event_ends_each_piece_with_its_blank_line() -> None:
    crlf = b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n"
    assert fx.chunk(crlf, fx.EVENT) == [b"event: a\r\ndata: 1\r\n\r\n", b"data: 2\r\n\r\n"]
    assert fx.chunk(b"data: 1\n\ndata: 2", fx.EVENT) == [b"data: 1\n\n", b"data: 2"]


def test_chunk_refuses_a_size_below_one() -> None:
    with pytest.raises(ValueError, match="positive"):
        fx.chunk(b"abc", 0)


@pytest.mark.parametrize("fixture", SMALL[:3], ids=[f.name for f in SMALL[:3]])
def test_moving_envelope_keeps_the_events_and_moves_every_created(fixture: fx.Fixture) -> None:
    moved = fx.moving_envelope(fixture)
    assert len(moved.body) == len(fixture.body)
    created = [chunk["created"] for chunk in chunks_of(moved)]
    assert len(set(created)) == len(created)
    want = [{k: v for k, v in chunk.items() if k != "created"} for chunk in chunks_of(fixture)]
    assert [{k: v for k, v in chunk.items() if k != "created"} for chunk in chunks_of(moved)] == want
    assert moved.payloads[-1] == fixture.payloads[-1] == fx.DONE


# -- the other APIs (benchmarks/api_fixtures.py) -------------------------------------


@pytest.mark.parametrize(
    ("make", "dialect"),
    [
        (api.responses_stream, "openai-responses"),
        (api.anthropic_stream, "anthropic"),
        (api.gemini_stream, "gemini"),
    ],
)
def test_api_streams_read_as_one_complete_answer(make: Any, dialect: str) -> None:
    fixture = make(30)
    assert make(30) == fixture  # seeded: the same bytes every time
    assert parse([fixture.body]) == [
        ServerSentEvent(event.event, event.data, "", None) for event in parse(fx.chunk(fixture.body, 1))
    ]
    assert [e.data for e in parse([fixture.body]) if type(e) is ServerSentEvent] == list(fixture.json_payloads)
    acc = Accumulator()
    for label in ("whole", "1460", "37"):
        stream = ChatStream(dialect=dialect)
        events = [e for piece in [*fx.chunk(fixture.body, fx.CHUNK_SIZES[label]), b""] for e in stream.feed(piece)]
        if label == "whole":
            for event in events:
                acc.feed(event)
        assert sum(type(e) is Delta and bool(e.content) for e in events) == 30, label
    assert acc.outcome == "complete"
    assert has_cjk(acc.choices[0].content) and has_astral(acc.choices[0].content)
    assert (b"\r\n" in fixture.body) == (dialect == "gemini")  # Gemini writes CRLF


def test_the_dialect_benchmark_runs() -> None:
    # A smoke run of every cell (the SDKs that are installed included): the
    # harness checks each contender's count of events.  Untraced: it times
    # what other tests cover.
    results = untraced(partial(bench_dialects.run, rounds=1, n_chunks=5, log=lambda _: None))
    text, summary = bench_dialects.report(results)
    assert [(cell["stream"], cell["chunk"]) for cell in summary["cells"]] == [
        (dialect, label) for dialect in bench_dialects.STREAMS for label in bench_dialects.LABELS
    ]
    assert "openai-responses @ 1460: ChatStream feed <= 1.0x json floor" in text
