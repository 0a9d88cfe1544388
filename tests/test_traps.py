"""Traps a new user fell into, each pinned by what the user sees.

Each test names the idiom or the input, and checks the outcome a caller can
observe: the events, the error, the time it takes (as a ratio between two
sizes, never against a clock), the memory it holds (with ``tracemalloc``).
"""

from __future__ import annotations

import copy
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from helpers import chunkings, drain, feed_all, until_error, untraced

from ssestate import (
    CLOSED,
    NEED_DATA,
    Accumulator,
    ChatStream,
    Delta,
    Done,
    EventStreamParser,
    Finish,
    LocalProtocolError,
    RemoteProtocolError,
    ServerSentEvent,
    StreamError,
    ToolCallFragment,
)

HI = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
STOP = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'


def chunk(**fields: Any) -> bytes:
    return b"data: " + json.dumps(fields, separators=(",", ":")).encode() + b"\n\n"


def grows_linearly(run: Callable[[int], object], n: int) -> float:
    """The time ``run(8 * n)`` takes over the time ``run(n)`` takes, each the
    best of three.  A linear ``run`` gives about 8, a quadratic one 64: the
    tests below allow 22 (between the two by the same factor), so they check
    the growth, not a speed, and a run slowed twofold by a busy machine
    still passes."""

    def best(size: int) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            run(size)
            times.append(time.perf_counter() - start)
        return min(times)

    def ratio() -> float:
        best(n)  # warm up
        return best(8 * n) / best(n)

    return untraced(ratio)  # under a tracer, the times would measure the tracer


# -- methods kept in a variable -------------------------------------------------------


@pytest.mark.parametrize("make", [EventStreamParser, ChatStream])
def test_next_event_bound_before_the_first_byte_sees_every_event(make: Callable[[], Any]) -> None:
    machine = make()
    nx = machine.next_event
    events = iter(machine.next_event, NEED_DATA)
    machine.receive_data(HI)
    assert nx() is not NEED_DATA
    machine.receive_data(HI)
    assert len(list(events)) == 1


def test_receive_data_kept_in_a_variable_is_the_streams_own() -> None:
    stream = ChatStream()
    feed = stream.receive_data
    feed(HI + b"data: [DONE]\n\n")
    assert drain(stream) == [Delta(0, "hi"), Done(True)]
    # After [DONE] later bytes are ignored, not held.
    block = b"data: " + b"x" * (1 << 20) + b"\n\n"
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(16):
            feed(block)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 1 << 20, f"{held} bytes held after 16 MiB fed past [DONE]"
    feed(b"")
    assert stream.next_event() is CLOSED


def test_receive_data_kept_in_a_variable_refuses_use_after_an_error() -> None:
    stream = ChatStream()
    feed = stream.receive_data
    feed(HI + b"data: not json\n\n")
    assert stream.next_event() == Delta(0, "hi")
    with pytest.raises(RemoteProtocolError):
        stream.next_event()
    with pytest.raises(LocalProtocolError, match="unusable after an earlier error"):
        feed(HI)


# -- many blank lines ---------------------------------------------------------------------


def test_forty_mib_of_blank_lines_in_one_call() -> None:
    parser = EventStreamParser()
    parser.receive_data(b"\n" * (40 << 20))
    assert parser.next_event() is NEED_DATA
    assert parser.feed(b"data: a\n\n") == [ServerSentEvent("message", "a")]


def test_an_event_after_forty_thousand_blank_lines_comes_at_once() -> None:
    stream = ChatStream()
    stream.receive_data(b"\n" * 40_000 + HI)
    assert stream.next_event() == Delta(0, "hi")  # not NEED_DATA until more bytes come
    assert ChatStream().feed(b"\n" * 40_000 + HI) == [Delta(0, "hi")]


# -- JSON nested deeper than the interpreter can follow --------------------------------------


def nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


DEPTHS = [500, 900, 980, 990, 1000, 1100, 5000, 100_000]


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deeply_nested_error_member_never_escapes(depth: int) -> None:
    body = HI + b'data: {"error":{"message":"m","code":' + nested(depth).encode() + b"}}\n\n" + STOP
    for strict in (True, False):
        events, error = until_error(ChatStream(strict=strict), [body])
        # Whatever the depth: the Delta before is kept, then the error is a
        # StreamError (read) or a RemoteProtocolError (strict, unreadable).
        assert events[0] == Delta(0, "hi")
        if error is None:
            assert any(type(e) is StreamError for e in events) or not strict
        else:
            assert strict
            assert "nested too deeply to read" in str(error)


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deeply_nested_member_of_a_whole_completion_never_escapes(depth: int) -> None:
    body = (
        '{"object":"chat.completion","extra":' + nested(depth) + ',"choices":[{"index":0,'
        '"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'
    ).encode()
    events = feed_all(ChatStream(200, "application/json"), [body])
    assert events[-1] is CLOSED
    assert events[:-1] == [Delta(0, "hi", "assistant"), Finish(0, "stop"), Done(False)] or (
        len(events) == 2 and type(events[0]) is StreamError
    )


@pytest.mark.parametrize("depth", [900, 980, 990, 1000])
def test_deep_tool_arguments_never_escape(depth: int) -> None:
    call = '{"index":0,"id":"c","function":{"name":"f","arguments":' + nested(depth) + "}}"
    payload = '{"choices":[{"index":0,"delta":{"tool_calls":[' + call + "]}}]}"
    body = HI + b"data: " + payload.encode() + b"\n\n" + STOP
    events, error = until_error(ChatStream(), [body])
    assert events[0] == Delta(0, "hi")
    if error is None:
        fragment = events[1]
        assert type(fragment) is ToolCallFragment and json.loads(fragment.arguments) == json.loads(nested(depth))
    else:
        assert "nested too deeply to read" in str(error)


def test_deep_json_under_a_low_recursion_limit() -> None:
    # The interpreter's limit is the caller's: with a low one, a payload
    # nested a little below it is readable by the scanner and not by what
    # follows.  Nothing escapes either way.
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        for depth in range(120, 200, 7):
            body = HI + b'data: {"error":' + nested(depth).encode() + b"}\n\n"
            for strict in (True, False):
                events, error = until_error(ChatStream(strict=strict), [body])
                assert events[0] == Delta(0, "hi")
                assert error is None or isinstance(error, RemoteProtocolError)
        for depth in range(120, 200, 7):
            body = (
                '{"object":"chat.completion","extra":' + nested(depth) + ',"choices":[{"index":0,'
                '"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'
            ).encode()
            events = feed_all(ChatStream(200, "application/json"), [body])
            assert events[-1] is CLOSED and len(events) in (2, 4)
    finally:
        sys.setrecursionlimit(old)


# -- tool calls without an index ----------------------------------------------------------


def test_tool_calls_without_index_each_with_a_new_id_cost_linear_time() -> None:
    def run(n: int) -> None:
        body = b"".join(
            chunk(choices=[{"index": 0, "delta": {"tool_calls": [{"id": f"c{i}", "function": {"arguments": "{}"}}]}}])
            for i in range(n)
        )
        assert len(ChatStream().feed(body)) == n

    assert grows_linearly(run, 2000) < 22


def test_a_new_id_never_takes_an_index_an_indexed_call_holds() -> None:
    body = (
        chunk(choices=[{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}}])
        + chunk(choices=[{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}])
        + chunk(choices=[{"index": 0, "delta": {"tool_calls": [{"id": "b", "function": {"name": "h"}}]}}])
        + chunk(choices=[{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": '{"b":2}'}}]}}])
        + STOP
    )
    for name, chunks in chunkings(body):
        acc = Accumulator()
        for event in feed_all(ChatStream(), chunks):
            acc.feed(event)
        calls = [(c.index, c.id, c.name, c.arguments) for c in acc.choices[0].tool_calls]
        assert calls == [(0, "a", "f", "{}"), (1, "b", "h", '{"b":2}')], name


def test_tool_names_sent_a_character_at_a_time_cost_linear_time() -> None:
    def run(n: int) -> None:
        acc = Accumulator()
        acc.feed(ToolCallFragment(0, 0, "c", "n"))
        for _ in range(n):
            acc.feed(ToolCallFragment(0, 0, None, "x"))
        assert len(acc.choices[0].tool_calls[0].name) == n + 1

    assert grows_linearly(run, 15_000) < 22


def test_a_repeated_whole_name_is_still_ignored() -> None:
    acc = Accumulator()
    for name in ("get_", "weather", "get_weather", "get_weather", "x"):
        acc.feed(ToolCallFragment(0, 0, None, name))
    assert acc.choices[0].tool_calls[0].name == "get_weatherx"


# -- JSON whitespace ---------------------------------------------------------------------------


def test_a_form_feed_is_not_json_whitespace() -> None:
    body = HI + b'data: {"choices":[]}\x0c\n\n'
    events, error = until_error(ChatStream(), [body])
    assert events == [Delta(0, "hi")]
    assert error is not None and "is not JSON" in str(error)
    # Around [DONE] a form feed is ASCII whitespace, which the marker allows.
    assert feed_all(ChatStream(), [HI + b"data: \x0c[DONE]\x0c\n\n"]) == [Delta(0, "hi"), Done(True), CLOSED]
    # JSON's own whitespace around a payload is fine.
    body = b'data:  {"choices":[{"index":0,"delta":{"content":"a"}}]}\t \r\n\r\n' + STOP
    assert feed_all(ChatStream(), [body]) == [Delta(0, "a"), Finish(0, "stop"), Done(False), CLOSED]


# -- JSON that the reader can parse but not write back --------------------------------------


@pytest.fixture
def writer_recurses(monkeypatch: pytest.MonkeyPatch) -> None:
    """``json.dumps`` raising RecursionError, as it does on CPython 3.10 and
    3.11 for a value parsed a few frames higher up the stack than it is
    written (on 3.12 and later the C recursion limit no longer depends on
    the stack, and no payload can reach this)."""

    def dumps(*args: Any, **kwargs: Any) -> str:
        raise RecursionError("maximum recursion depth exceeded while encoding a JSON object")

    monkeypatch.setattr(json, "dumps", dumps)


@pytest.mark.usefixtures("writer_recurses")
def test_arguments_that_cannot_be_written_back_refuse_their_chunk() -> None:
    call = b'{"index":0,"id":"c","function":{"name":"f","arguments":{"a":1}}}'
    payload = b'{"choices":[{"index":0,"delta":{"content":"x","tool_calls":[' + call + b"]}}]}"
    for wrap in (b"%s", b" %s "):  # parsed at once, or after the whitespace around it
        body = HI + b"data: " + wrap % payload + b"\n\n" + STOP
        events, error = until_error(ChatStream(), [body])
        assert events == [Delta(0, "hi")]  # nothing of the refused chunk, not even its Delta
        assert error is not None and "nested too deeply to read" in str(error)
        events, error = until_error(ChatStream(strict=False), [body])
        assert (events, error) == ([Delta(0, "hi"), Finish(0, "stop"), Done(False), CLOSED], None)
    completion = b'{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[' + call + b"]}}]}"
    [error_event, closed] = feed_all(ChatStream(200, "application/json"), [completion])
    assert type(error_event) is StreamError and error_event.status == 200 and closed is CLOSED


@pytest.mark.usefixtures("writer_recurses")
def test_an_error_member_that_cannot_be_written_back_keeps_the_payload_text() -> None:
    payload = b'{"error":{"message":{"deep":[1]},"code":[2]}}'
    [error_event, _] = feed_all(ChatStream(), [b"data: " + payload + b"\n\n"])[:2]
    assert error_event == StreamError(None, payload.decode(), payload.decode(), None, json.loads(payload))


@pytest.mark.parametrize("dialect", ["gemini", "auto"])
def test_raw_json_lines_that_never_close_cost_linear_time(dialect: str) -> None:
    # Lines without data: that open as many brackets as they close: the
    # value they start never ends (each line once cost a parse of them all).
    def run(n: int) -> None:
        events = ChatStream(dialect=dialect).feed(b"[[\n" + b"],[\n" * n)
        assert not any(isinstance(e, StreamError) for e in events)

    assert grows_linearly(run, 2000) < 22


@pytest.mark.parametrize("dialect", ["gemini", "auto"])
def test_a_raw_json_error_with_every_line_at_column_0_is_read(dialect: str) -> None:
    error = {"error": {"code": 500, "message": "Internal error", "status": "INTERNAL", "details": [{"i": 1}, {}]}}
    body = json.dumps(error, indent=0).encode() + b"\n"
    for name, chunks in chunkings(body):
        events = feed_all(ChatStream(dialect=dialect), chunks)
        errors = [e for e in events if isinstance(e, StreamError)]
        assert [(e.code, e.message) for e in errors] == [("500", "Internal error")], name


@pytest.mark.parametrize("dialect", ["gemini", "auto"])
def test_raw_json_lines_that_do_not_parse_are_let_go(dialect: str) -> None:
    # A value that closes without parsing, then one that closes more than it
    # opened: both let go, and the error after them is read.
    error = (
        b'{\n  "error": {\n    "code": 503,\n    "message": "Overloaded {[\\"",\n    "status": "UNAVAILABLE"\n  }\n}\n'
    )
    body = b'{\n  "a": 1,,\n}\n' + b"[\n]]\n" + error
    for name, chunks in chunkings(body):
        events = feed_all(ChatStream(dialect=dialect), chunks)
        errors = [(e.code, e.message) for e in events if isinstance(e, StreamError)]
        assert errors == [("503", 'Overloaded {["')], name


def test_raw_json_lines_are_held_within_a_bound() -> None:
    # Raw lines that start a JSON value are kept until it ends: never more
    # than max_event_size or 64 KiB, whichever is more (the value here never ends).
    stream = ChatStream(dialect="gemini", max_event_size=4096)
    body = b"{\n" + (b'"a": "' + b"x" * 1000 + b'",\n') * 2000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for start in range(0, len(body), 1460):
            assert stream.feed(body[start : start + 1460]) == []
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < 512 * 1024, f"{peak} bytes held at the peak for raw lines, max_event_size=4096"


@pytest.mark.parametrize("dialect", ["gemini", "auto"])
def test_a_raw_json_error_larger_than_a_small_max_event_size_is_read(dialect: str) -> None:
    # An error with its details runs to a few KiB, more than a small limit.
    details = [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"n": n} for n in range(60)]}]
    error = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED", "details": details}}
    body = json.dumps(error, indent=2).encode() + b"\n"
    assert len(body) > 2 * 1024
    for name, chunks in chunkings(body):
        events = feed_all(ChatStream(dialect=dialect, max_event_size=1024), chunks)
        assert [(e.code, e.message) for e in events if isinstance(e, StreamError)] == [("429", "Quota exceeded")], name


@pytest.mark.parametrize("machine", [ChatStream, EventStreamParser])
@pytest.mark.parametrize("bad", ["data: x", 7, None])
def test_a_chunk_of_the_wrong_type_is_refused_and_loses_nothing(machine: Callable[[], Any], bad: Any) -> None:
    # Bytes that end no line wait inside the machine; refusing a str must
    # not let them go, so that a caller who catches the error and tries
    # again with bytes gets every event.
    head, tail = HI[:20], HI[20:]
    stream = machine()
    assert stream.feed(head) == []
    with pytest.raises(TypeError, match=r"receive_data\(\) takes bytes, not "):
        stream.feed(bad)
    after = stream.feed(tail) + stream.feed(b"")
    fresh = machine()
    assert after == fresh.feed(HI) + fresh.feed(b"")


def test_a_strided_memoryview_after_staged_bytes_is_read() -> None:
    # A view with a step is bytes-like but cannot be joined as it is.
    head, tail = HI[:20], HI[20:]
    spread = bytes(b for pair in zip(tail, b"\0" * len(tail), strict=True) for b in pair)
    for machine in (ChatStream, EventStreamParser):
        stream = machine()
        assert stream.feed(head) == []
        got = stream.feed(memoryview(spread)[::2]) + stream.feed(b"")
        fresh = machine()
        assert got == fresh.feed(HI) + fresh.feed(b""), machine.__name__


def test_copying_data_nested_deeper_than_python_can_copy_is_a_type_error() -> None:
    # The parse reads an error body this deep; a deep copy of it cannot be
    # made, and copy callers know TypeError (SPEC §1), not RecursionError.
    deep = b'data: {"error": {"message": "boom", "detail": ' + b"[" * 600 + b"]" * 600 + b"}}\n\n"
    stream = ChatStream()
    stream.receive_data(deep)  # queued, not handed out
    with pytest.raises(TypeError, match="nested too deeply"):
        copy.copy(stream)
    acc = Accumulator()
    for event in stream.feed(b""):
        acc.feed(event)
    assert acc.outcome == "error"
    with pytest.raises(TypeError, match="nested too deeply"):
        copy.copy(acc)
