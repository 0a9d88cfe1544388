"""Huge chat chunks: the data of an event of 32 KiB or more reaches
``ChatStream`` as bytes, and its long strings are decoded from them piece by
piece (``ssestate/_large.py``).  Whatever the payload, the events and errors
must be those of the ordinary path (decode the payload whole, then scan it),
and the peak memory must stay near one copy of the content.

The ordinary path is reached by patching the threshold
(``ssestate._blocks.HUGE``) out of reach, and the bytes path is made to
read small payloads in small pieces by patching it and ``_large``'s
constants down: the differential is what these tests check, so they reach
into those private modules for it, and for nothing else."""

from __future__ import annotations

import json
import sys
import tracemalloc
import unittest.mock
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from helpers import chunked, until_error
from hypothesis import given, settings
from hypothesis import strategies as st

import ssestate._blocks as blocks
import ssestate._large as large
from ssestate import CLOSED, NEED_DATA, ChatStream, Delta, Done, Finish, ToolCallFragment


def run(chunks: list[bytes]) -> list[Any]:
    got, exc = until_error(ChatStream(), chunks)
    if exc is not None:
        got.append((type(exc).__name__, str(exc), exc.offset))
    return got


def chunk_of(content: str, **extra: Any) -> dict[str, Any]:
    delta: dict[str, Any] = {"content": content, **extra}
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": delta}]}


def event(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


# Mixed text as servers send it: ASCII words, CJK, emoji (4 bytes in UTF-8,
# and a 4-byte character in the string), line breaks and quotes to escape.
WORDS = ["hello ", "世界", "😀", "\n", '"q" ', "\\", "é", "tab\t", "ok. ", "🚀🚀", "中文字符 "]


def mixed(size: int) -> str:
    text = "".join(WORDS[i * 7 % len(WORDS)] for i in range(size // 4))
    return text[: size // 2]


def ordinary(chunks: list[bytes]) -> list[Any]:
    """``run`` with every payload decoded whole, the bytes path out of reach."""
    with unittest.mock.patch.object(blocks, "HUGE", 1 << 40):
        return run(chunks)


# -- exact bytes ------------------------------------------------------------------


def test_a_huge_chunk_gives_the_content_json_gives() -> None:
    content = mixed(100_000)
    payload = json.dumps(chunk_of(content), ensure_ascii=False).encode()
    assert len(payload) > blocks.HUGE
    body = event(payload) + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    for size in (None, 1460, 37, 4096):
        chunks = [body] if size is None else [body[i : i + size] for i in range(0, len(body), size)]
        stream = ChatStream()
        got, exc = until_error(stream, chunks)
        assert exc is None
        assert got[0] == Delta(0, content)
        assert got[1:] == [Finish(0, "stop"), Done(True), CLOSED]
        assert (stream.response_id, stream.model) == ("c1", "m")


def test_escapes_cut_anywhere_decode_exactly() -> None:
    # Every escape JSON has, a surrogate pair spelled as two escapes, a lone
    # surrogate, and raw UTF-8, repeated so that piece cuts fall everywhere.
    unit = b'ab\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\ud800\\u0000x\xe4\xb8\xad\xf0\x9f\x9a\x80'
    want = 'ab"\\/\b\f\n\r\té\U0001f600\ud800\x00x中🚀'
    text = unit * 3000
    payload = b'{"choices":[{"index":0,"delta":{"content":"' + text + b'"}}]}'
    for step in (7, 13, 2048):
        with unittest.mock.patch.object(large, "_STEP", step):
            assert run([event(payload)])[0] == Delta(0, want * 3000), step


def test_an_ascii_value_is_taken_as_the_scanner_read_it() -> None:
    content = 'plain ASCII text, "quoted", with a line break\n and a tab\t. ' * 1000
    payload = json.dumps(chunk_of(content)).encode()
    got = run([event(payload)])
    assert got == ordinary([event(payload)])
    assert got[0] == Delta(0, content)


def test_arguments_of_a_whole_tool_call_are_read_from_bytes_too() -> None:
    args = json.dumps({"rows": [mixed(200) for _ in range(300)]}, ensure_ascii=False)
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": args}}
    payload = json.dumps(chunk_of("", tool_calls=[call]), ensure_ascii=False).encode()
    got = run([event(payload)])
    assert got == ordinary([event(payload)])
    assert got[0] == ToolCallFragment(0, 0, "call_1", "f", args)


def test_unusual_payloads_take_the_ordinary_path_and_agree_with_it() -> None:
    long = "x" * 40_000
    cases = {
        "a NUL escape in a short literal": json.dumps({**chunk_of(long), "id": "\x00ssestate:0"}),
        "a long key": json.dumps({long: 1, "choices": []}),
        "a long literal overwritten by a duplicate key": (
            '{"choices":[{"index":0,"delta":{"content":"' + long + '","content":"b"}}]}'
        ),
        "a top-level string": json.dumps(long),
        "no long literal": json.dumps({"choices": [], "pad": [1] * 20_000}),
        "an invalid escape": '{"choices":[{"index":0,"delta":{"content":"' + long + '\\q"}}]}',
        "a \\u escape with three hex digits": '{"choices":[{"index":0,"delta":{"content":"' + long + '\\u123x"}}]}',
        "a raw control character": '{"choices":[{"index":0,"delta":{"content":"' + long + '\x01"}}]}',
        "an unterminated string": '{"choices":[{"index":0,"delta":{"content":"' + long,
        "trailing data": json.dumps(chunk_of(long)) + " 1",
        "a syntax error beside a long literal": '{"choices":[{"index":0,"delta":{"content":"' + long + '"}}],}',
    }
    for name, text in cases.items():
        body = event(text.encode())
        want = ordinary([body])
        assert run([body]) == want, name
        assert run([body[:1000], body[1000:]]) == want, name
        assert run([body, body]) == ordinary([body, body]), name


def test_peak_memory_stays_under_four_times_the_event() -> None:
    # Events of text with emoji: a str of it stores 4 bytes a character, so
    # the content alone is over twice the event.  The events are counted,
    # not kept, as a caller that passes them on would do.
    payloads = [json.dumps(chunk_of(mixed(60_000 + k)), ensure_ascii=False).encode() for k in range(3)]
    body = b"".join(event(p) for p in payloads)
    largest = max(len(event(p)) for p in payloads)
    chunks = [body[i : i + 1460] for i in range(0, len(body), 1460)]
    # A trace function (coverage's) stops CPython from growing a string in
    # place: this measures the interpreter as callers run it.
    tracer = sys.gettrace()
    sys.settrace(None)
    tracemalloc.start()
    try:
        stream = ChatStream()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        deltas = 0
        for piece in [*chunks, b""]:
            stream.receive_data(piece)
            while (got := stream.next_event()) is not NEED_DATA and got is not CLOSED:
                deltas += type(got) is Delta
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
        sys.settrace(tracer)
    assert deltas == 3
    assert peak <= 4 * largest, peak / largest


# -- properties: the bytes path against the ordinary one ----------------------------


@contextmanager
def small_thresholds() -> Iterator[None]:
    """Huge-event thresholds of a few bytes, so that generated payloads of
    a few hundred bytes take the bytes path, in pieces of a few bytes."""
    with (
        unittest.mock.patch.object(blocks, "HUGE", 24),
        unittest.mock.patch.object(large, "_LONG", 6),
        unittest.mock.patch.object(large, "_STEP", 3),
    ):
        yield


ALPHABET = ["a", " ", "é", "中", "😀", "\n", '"', "\\", "/", "\t", "\x01", "\ud83d", "\ude00", "\u2028", "u"]


@st.composite
def payloads(draw: st.DrawFn) -> bytes:
    content = "".join(draw(st.lists(st.sampled_from(ALPHABET), max_size=60)))
    obj: Any = chunk_of(content, reasoning_content=draw(st.sampled_from(["", "think" * 5])))
    if draw(st.booleans()):
        obj["usage"] = {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    raw = text.encode("utf-8", "surrogatepass")
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(raw) - 1))
        byte = draw(st.sampled_from([0x22, 0x5C, 0x00, 0x80, 0xF0, 0x20, 0x7B, 0x75, 0x30]))
        raw = raw[:at] + bytes([byte]) + raw[at + draw(st.integers(0, 1)) :]
    return raw


@settings(deadline=None)
@given(st.lists(payloads(), min_size=1, max_size=3), st.data())
def test_the_bytes_path_gives_what_the_ordinary_path_gives(items: list[bytes], data: st.DataObject) -> None:
    body = b"".join(event(p) for p in items)
    chunks = data.draw(chunked(body, max_cuts=6))
    with small_thresholds():
        got = run(chunks)
        # Each event alone in its batch: every one of them takes the bytes path.
        alone = run([event(p) for p in items])
        with unittest.mock.patch.object(blocks, "HUGE", 1 << 40):
            want = run(chunks)
            want_alone = run([event(p) for p in items])
    assert got == want
    assert alone == want_alone


def test_a_huge_event_then_a_typed_event_in_one_batch() -> None:
    content = mixed(50_000)
    body = event(json.dumps(chunk_of(content), ensure_ascii=False).encode()) + b"event: other\ndata: {}\n\n"
    assert run([body]) == ordinary([body])
    assert run([body])[0] == Delta(0, content)
