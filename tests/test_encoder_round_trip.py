"""Encoder round trip: ``ChatStream(dialect=X)`` over what ``Encoder(X)``
wrote assembles what the events assembled, for every API, any chunking.

The events come from ``eventgen.event_streams`` (text, reasoning, refusal,
tool calls cut anywhere, n>1 where the API has it, usage, finish reasons of
every kind, errors, heartbeats, continuation data); ``eventgen.expected``
says what each API cannot carry.  Checked on the way, event by event: what
the encoder wrote so far already reads as the text fed so far (an event's
bytes come as soon as it does).
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest
from eventgen import DIALECTS, event_streams, expected, fold, summary
from helpers import chunked, chunkings, feed_all
from hypothesis import given, settings
from hypothesis import strategies as st

from ssestate import (
    Accumulator,
    ChatStream,
    Continuation,
    Delta,
    Done,
    Encoder,
    Finish,
    Heartbeat,
    LocalProtocolError,
    StreamError,
    ToolCallFragment,
    Usage,
)


def read(dialect: str, chunks: list[bytes]) -> tuple[Accumulator, list[Any]]:
    stream = ChatStream(dialect=dialect)
    events = feed_all(stream, chunks)[:-1]
    acc = Accumulator()
    for event in events:
        acc.feed(event)
    return acc, events


def encode_all(dialect: str, events: list[Any]) -> bytes:
    encoder = Encoder(dialect)
    return b"".join(encoder.feed(event) for event in events)


def same_as_expected(acc: Accumulator, events: list[Any], dialect: str) -> None:
    got, wanted = summary(acc, dialect), expected(events, dialect)
    # Ids the API requires and the events lacked are made up, each its own
    # (a caller answers a call by its id); compare the others.
    for i, choice in got["choices"].items():
        calls = wanted["choices"].get(i, {}).get("tool_calls", [])
        ids = [call_id for _, _, call_id in choice["tool_calls"]]
        for n, (name, args, call_id) in enumerate(choice["tool_calls"]):
            if n < len(calls) and calls[n][2] is None and dialect in ("openai-responses", "anthropic"):
                assert isinstance(call_id, str) and call_id and ids.count(call_id) == 1
                choice["tool_calls"][n] = (name, args, None)
    assert got == wanted


def is_subsequence(small: list[Any], big: list[Any]) -> bool:
    rest = iter(big)
    return all(any(item == other for other in rest) for item in small)


def continuation_data(event: Continuation, dialect: str) -> Any:
    data = event.data
    if dialect == "openai-responses" and isinstance(data, dict):
        return {k: v for k, v in data.items() if k != "id"}  # a streamed item keeps the id it streamed under
    return data


def check_so_far(fed: Accumulator, live: Accumulator, dialect: str) -> None:
    """The text fed so far has been written: the bytes already read back to it."""
    for i, choice in fed.choices.items():
        said = choice.content or choice.reasoning or choice.refusal
        if not said and (dialect == "gemini" or not choice.tool_calls):
            continue  # nothing written yet (Gemini writes calls whole, when complete)
        mine = live.choices[i]
        assert (mine.content, mine.reasoning, mine.refusal) == (choice.content, choice.reasoning, choice.refusal)
        if dialect != "gemini":  # Gemini's calls are written whole, when complete
            wrote = [t.arguments for t in mine.tool_calls]
            for n, call in enumerate(choice.tool_calls):
                if call.arguments:
                    assert wrote[n] == call.arguments


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=4 * settings().max_examples)
@given(data=st.data())
def test_round_trip(dialect: str, data: st.DataObject) -> None:
    events = data.draw(event_streams(dialect), label="events")
    encoder = Encoder(dialect)
    live, live_acc, fed = ChatStream(dialect=dialect), Accumulator(), Accumulator()
    pieces = []
    for event in events:
        piece = encoder.feed(event)
        pieces.append(piece)
        fed.feed(fold(event, dialect))
        if piece:
            for got in live.feed(piece):
                live_acc.feed(got)
        check_so_far(fed, live_acc, dialect)
    body = b"".join(pieces)

    acc, out = read(dialect, data.draw(chunked(body, max_cuts=30), label="chunks"))
    same_as_expected(acc, events, dialect)
    beats = sum(type(e) is Heartbeat for e in events)
    assert sum(type(e) is Heartbeat for e in out) == (0 if dialect == "gemini" else beats)
    fed_errors = [e.message for e in events if type(e) is StreamError]
    assert is_subsequence(fed_errors, [e.message for e in out if type(e) is StreamError])
    for i in acc.choices:  # continuation data of the API's own kinds, in order per choice
        fed_kept = [
            (e.kind, continuation_data(e, dialect))
            for e in events
            if type(e) is Continuation and e.choice == i and e.kind in KINDS[dialect]
        ]
        out_kept = [(e.kind, continuation_data(e, dialect)) for e in out if type(e) is Continuation and e.choice == i]
        assert is_subsequence(fed_kept, out_kept)


KINDS = {
    "openai-chat": (),
    "openai-responses": ("reasoning_item",),
    "anthropic": ("thinking", "redacted_thinking"),
    "gemini": ("thought_signature",),
}


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=2 * settings().max_examples)
@given(data=st.data())
def test_a_refused_event_changes_nothing(dialect: str, data: st.DataObject) -> None:
    """An event the encoder refuses leaves it as it was: the stream written
    around the refusal is the stream written without that event."""
    events = data.draw(event_streams(dialect), label="events")
    at = data.draw(st.integers(0, len(events) - 1), label="at")
    bad = data.draw(
        st.sampled_from(
            [
                Delta(0, "\ud800"),  # a lone surrogate
                ToolCallFragment(0, 0, None, None, 7),  # type: ignore[arg-type]
                Finish(0, ""),
                Usage(1, 2, "3"),  # type: ignore[arg-type]
                Continuation(0, "thinking", {"thinking": 1}),
                Continuation(0, "reasoning_item", ["not", "an", "object"]),
                Continuation(0, "thought_signature", ""),
                "not an event",
            ]
        ),
        label="bad",
    )
    encoder = Encoder(dialect)
    written = []
    for n, event in enumerate(events):
        if n == at:
            with contextlib.suppress(LocalProtocolError):
                written.append(encoder.feed(bad))  # type: ignore[arg-type]
        written.append(encoder.feed(event))
    assert b"".join(written) == encode_all(dialect, events)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_small_answer_reads_back_under_every_chunking(dialect: str) -> None:
    events = [
        Delta(0, "", "assistant"),
        Delta(0, "", None, "Let me think: 2 + 2."),
        Delta(0, "Grüß dich 👋, "),
        Delta(0, "it's 4.\r\nBye"),
        ToolCallFragment(0, 0, "call_1", "calc", '{"expr": "2+2"'),
        ToolCallFragment(0, 0, None, None, "}"),
        Heartbeat("ping"),
        Finish(0, "tool_calls"),
        Usage(12, 9, 21),
        Done(),
    ]
    body = encode_all(dialect, events)
    results = {name: summary(read(dialect, chunks)[0], dialect) for name, chunks in chunkings(body)}
    for name, got in results.items():
        assert got == results["whole"], name
    acc, _ = read(dialect, [body])
    same_as_expected(acc, events, dialect)


def _result(acc: Accumulator) -> tuple[Any, ...]:
    return acc.outcome, {i: acc.message(i) for i in acc.choices}, acc.usage


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=settings().max_examples)
@given(data=st.data())
def test_a_copied_encoder_or_accumulator_is_independent(dialect: str, data: st.DataObject) -> None:
    # As with the parsers, copy.copy gives an object that shares nothing
    # mutable: the copy runs to the end first, and the original then goes on
    # as if no copy had been made.
    events = data.draw(event_streams(dialect), label="events")
    at = data.draw(st.integers(0, len(events)), label="copy after event")
    encoder, acc, head_only = Encoder(dialect), Accumulator(), Accumulator()
    head = b"".join(encoder.feed(event) for event in events[:at])
    for event in events[:at]:
        acc.feed(event)
        head_only.feed(event)
    twin_encoder, twin_acc = copy.copy(encoder), copy.copy(acc)
    twin_tail = b"".join(twin_encoder.feed(event) for event in events[at:])
    for event in events[at:]:
        twin_acc.feed(event)
    assert _result(acc) == _result(head_only)
    tail = b"".join(encoder.feed(event) for event in events[at:])
    for event in events[at:]:
        acc.feed(event)
    assert head + tail == head + twin_tail == encode_all(dialect, events)
    whole = Accumulator()
    for event in events:
        whole.feed(event)
    assert _result(acc) == _result(twin_acc) == _result(whole)
