"""SPEC §1 for both machines: plain methods, ``feed``, copies, the state tables.

Every property here is stated once and run on ``EventStreamParser`` and on
``ChatStream`` (chat completions, and each dialect of the other APIs over
their captured payloads), over generated streams (well formed and damaged)
cut in arbitrary ways:

* the reference of a method taken at any time, before the first byte
  included, keeps working: ``nx = m.next_event`` sees every event, and so
  does ``iter(m.next_event, NEED_DATA)``;
* ``feed`` gives the events ``next_event`` gives, under any chunking and in
  any mix with ``receive_data`` / ``next_event``, and a fault is raised by
  the call after the events before it;
* ``copy.copy``, ``copy.deepcopy`` and a pickle round trip give an
  independent machine in the same state: both go on to the same events, and feeding one never moves the
  other;
* every state change a machine shows is a path of its table in
  ``_state.py``, every call in ``ERROR`` raises ``LocalProtocolError``, and
  nothing else than a ``ProtocolError`` ever escapes.
"""

from __future__ import annotations

import copy
import functools
import pickle
import pydoc
from collections.abc import Callable
from typing import Any

import pytest
from helpers import chunked, until_error
from hypothesis import given
from hypothesis import strategies as st
from test_api_readers import odd_streams
from test_properties_framing import long_sse_bytes, sse_bytes

from ssestate import (
    CLOSED,
    NEED_DATA,
    ChatState,
    ChatStream,
    Delta,
    Done,
    EventStreamParser,
    Finish,
    LocalProtocolError,
    ParserState,
    ProtocolError,
    RemoteProtocolError,
    ServerSentEvent,
)
from ssestate._state import CHAT_TRANSITIONS, PARSER_TRANSITIONS
from ssestate.testing.strategies import chat_streams, mutated_streams

Make = Callable[[], Any]
MACHINES: dict[str, Make] = {
    "parser": lambda: EventStreamParser(max_event_size=64),
    "chat": lambda: ChatStream(max_event_size=256),
    "lenient-chat": lambda: ChatStream(strict=False),
    "openai-responses": lambda: ChatStream(dialect="openai-responses"),
    "anthropic": lambda: ChatStream(dialect="anthropic", max_event_size=512),
    "gemini": lambda: ChatStream(dialect="gemini"),
    "auto": lambda: ChatStream(dialect="auto"),
}
bodies = {
    "parser": st.one_of(sse_bytes(), long_sse_bytes()),
    "chat": st.one_of(chat_streams().map(lambda case: case.body), mutated_streams()),
    "lenient-chat": mutated_streams(),
    # Captured payloads of each API, some members given odd values.
    "openai-responses": odd_streams("openai-responses").map(lambda case: case[1]),
    "anthropic": odd_streams("anthropic").map(lambda case: case[1]),
    "gemini": odd_streams("gemini").map(lambda case: case[1]),
    "auto": odd_streams().map(lambda case: case[1]),
}
# A machine, and a body for it.
cases = st.sampled_from(sorted(MACHINES)).flatmap(lambda name: st.tuples(st.just(name), bodies[name]))


def reference(name: str, chunks: list[bytes]) -> tuple[list[Any], str | None]:
    """Events (up to CLOSED) and the error, read the plain way."""
    events, error = until_error(MACHINES[name](), chunks)
    return events, None if error is None else str(error)


def by_feed(machine: Any, chunks: list[bytes]) -> tuple[list[Any], str | None]:
    events: list[Any] = []
    try:
        for chunk in [*chunks, b""]:
            events += machine.feed(chunk)
        assert machine.next_event() is CLOSED
        events.append(CLOSED)
    except RemoteProtocolError as exc:
        with pytest.raises(LocalProtocolError):
            machine.feed(b"")
        return events, str(exc)
    return events, None


@given(case=cases, data=st.data())
def test_feed_gives_what_next_event_gives(case: tuple[str, bytes], data: st.DataObject) -> None:
    name, body = case
    chunks = data.draw(chunked(body), label="chunks")
    assert by_feed(MACHINES[name](), chunks) == reference(name, [body] if body else [])


@given(case=cases, data=st.data())
def test_references_taken_before_the_first_byte_keep_working(case: tuple[str, bytes], data: st.DataObject) -> None:
    name, body = case
    chunks = data.draw(chunked(body), label="chunks")
    machine = MACHINES[name]()
    receive = functools.partial(machine.receive_data)
    nx = machine.next_event
    events: list[Any] = []
    error = None
    try:
        for chunk in chunks:
            receive(chunk)
            events += iter(nx, NEED_DATA)
        receive(b"")
        events += iter(nx, CLOSED)
        events.append(nx())
    except RemoteProtocolError as exc:
        error = str(exc)
    assert (events, error) == reference(name, chunks)


@given(case=cases, data=st.data())
def test_feed_mixes_with_receive_data_and_next_event(case: tuple[str, bytes], data: st.DataObject) -> None:
    name, body = case
    chunks = data.draw(chunked(body), label="chunks")
    machine = MACHINES[name]()
    events: list[Any] = []
    error = None
    try:
        for chunk in [*chunks, b""]:
            how = data.draw(st.sampled_from(["feed", "receive", "receive+drain"]))
            if how == "feed":
                events += machine.feed(chunk)
            else:
                machine.receive_data(chunk)
                if how == "receive+drain" and chunk:
                    events += iter(machine.next_event, NEED_DATA)
        events += machine.feed(b"")  # whatever is still queued
        assert machine.next_event() is CLOSED
        events = [e for e in events if e is not CLOSED] + [CLOSED]
    except RemoteProtocolError as exc:
        error = str(exc)
    assert (events, error) == reference(name, chunks)


@given(case=cases, data=st.data(), how=st.sampled_from(["copy", "deepcopy", "pickle"]))
def test_copies_are_independent_machines_in_the_same_state(
    case: tuple[str, bytes], data: st.DataObject, how: str
) -> None:
    name, body = case
    chunks = data.draw(chunked(body), label="chunks")
    at = data.draw(st.integers(0, len(chunks)), label="copy after chunk")
    expected = reference(name, chunks)
    original = MACHINES[name]()
    before: list[Any] = []
    try:
        for chunk in chunks[:at]:
            before += original.feed(chunk)
    except RemoteProtocolError:
        return  # a fault before the copy: nothing left to compare
    twin: Any = original
    if how == "pickle":
        twin = pickle.loads(pickle.dumps(original))
    else:
        twin = copy.deepcopy(original) if how == "deepcopy" else copy.copy(original)
    assert twin.state is original.state
    # The twin runs first, all the way: the original must not have moved.
    twin_events = by_feed(twin, chunks[at:])
    assert (before + twin_events[0], twin_events[1]) == expected
    rest = by_feed(original, chunks[at:])
    assert (before + rest[0], rest[1]) == expected


def test_a_copy_does_not_share_the_receive_buffer() -> None:
    parser = EventStreamParser()
    parser.receive_data(b"data: a")
    twin = copy.copy(parser)
    assert twin.feed(b"\n\n") == [ServerSentEvent("message", "a")]
    assert parser.feed(b"bc\n\n") == [ServerSentEvent("message", "abc")]
    chat = ChatStream()
    chat.receive_data(b'data: {"choices":[{"index":0,"delta":{"content":"x')
    twin_chat = copy.copy(chat)
    assert twin_chat.feed(b'y"}}]}\n\n') == [Delta(0, "xy")]
    assert chat.feed(b'z"}}]}\n\n') == [Delta(0, "xz")]


# -- the state tables ------------------------------------------------------------------

ALPHABET = [b"data: a\n\n", b"data: [DONE]\n\n", b"data: {", b"\n", b"x" * 300, b": c\n", b"data: 1\n\n", b"\r"]
CHAT_ALPHABET = [
    b'data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
    *ALPHABET,
]
operations = st.lists(
    st.one_of(
        st.sampled_from(CHAT_ALPHABET).map(lambda b: ("receive", b)),
        st.sampled_from(CHAT_ALPHABET).map(lambda b: ("feed", b)),
        st.just(("receive", b"")),
        st.just(("feed", b"")),
        st.just(("next", None)),
    ),
    max_size=12,
)


def reachable(table: dict[Any, Any], start: Any) -> set[Any]:
    seen = {start}
    todo = [start]
    while todo:
        state = todo.pop()
        for (source, _), target in table.items():
            if source is state and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


@pytest.mark.parametrize(
    ("make", "table"),
    [
        (lambda: EventStreamParser(max_event_size=128), PARSER_TRANSITIONS),
        (lambda: ChatStream(max_event_size=128), CHAT_TRANSITIONS),
        (lambda: ChatStream(500, "application/json", max_event_size=128), CHAT_TRANSITIONS),
        (lambda: ChatStream(strict=False, max_event_size=128), CHAT_TRANSITIONS),
        (lambda: ChatStream(dialect="anthropic", max_event_size=128), CHAT_TRANSITIONS),
        (lambda: ChatStream(dialect="auto", max_event_size=128), CHAT_TRANSITIONS),
    ],
)
@given(ops=operations)
def test_every_state_change_is_a_path_of_the_table(make: Make, table: dict[Any, Any], ops: list[Any]) -> None:
    machine = make()
    for op, arg in ops:
        before = machine.state
        try:
            if op == "receive":
                machine.receive_data(arg)
            elif op == "feed":
                machine.feed(arg)
            else:
                machine.next_event()
        except LocalProtocolError:
            # Misuse: bytes after the end, or any call after the error.
            assert before.name in ("ENDED", "CLOSED", "ERROR"), (before, op, arg)
            assert machine.state is before
            continue
        except RemoteProtocolError:
            assert machine.state.name == "ERROR"
        except ProtocolError as exc:  # pragma: no cover - the two above are all there is
            raise AssertionError(f"unexpected {exc!r}") from exc
        assert machine.state in reachable(table, before), (before, op, arg, machine.state)


def test_every_cell_of_the_tables_names_a_state_of_its_machine() -> None:
    for table, states in ((PARSER_TRANSITIONS, ParserState), (CHAT_TRANSITIONS, ChatState)):
        for (source, _), target in table.items():
            assert isinstance(source, states) and isinstance(target, states)
        # Every state but ERROR can be left or stays by some input; ERROR has
        # no cell: every input there is misuse.
        assert {source for source, _ in table} == set(states) - {states["ERROR"]}


def test_misuse_names_the_state() -> None:
    parser = EventStreamParser()
    parser.receive_data(b"")
    assert parser.next_event() is CLOSED and parser.state is ParserState.CLOSED
    with pytest.raises(LocalProtocolError, match="after end of stream"):
        parser.receive_data(b"x")
    chat = ChatStream()
    chat.receive_data(b"data: oops\n\n")
    with pytest.raises(RemoteProtocolError):
        chat.next_event()
    assert chat.state is ChatState.ERROR
    for call in (chat.next_event, lambda: chat.receive_data(b"x"), lambda: chat.feed(b"")):
        with pytest.raises(LocalProtocolError, match="unusable after an earlier error"):
            call()


@pytest.mark.parametrize("cls", [EventStreamParser, ChatStream])
def test_methods_are_documented_plain_methods(cls: type) -> None:
    for name in ("receive_data", "next_event", "feed"):
        assert callable(cls.__dict__[name]) and not isinstance(cls.__dict__[name], property)
        assert cls.__dict__[name].__doc__
    text = pydoc.render_doc(cls.__dict__["next_event"], renderer=pydoc.plaintext)  # type: ignore[attr-defined]
    assert "NEED_DATA" in text and "CLOSED" in text and "RemoteProtocolError" in text


# -- the rarer roads of SPEC §1 ------------------------------------------------------------

HI = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'


def test_feed_returns_what_receive_data_queued_before_bytes_that_end_no_line() -> None:
    chat = ChatStream()
    chat.receive_data(HI)
    assert chat.feed(b"data: {") == [Delta(0, "hi")]
    parser = EventStreamParser()
    parser.receive_data(b"data: a\n\n")
    assert parser.feed(b"data: {") == [ServerSentEvent("message", "a")]


def test_bytes_that_end_no_line_count_against_the_limit_at_the_end_of_the_body() -> None:
    # The open block keeps 5 bytes; 9 more without a line end make 14 > 10
    # (in ChatStream they wait until the end of the body comes).
    for make in (lambda: ChatStream(max_event_size=10), lambda: EventStreamParser(max_event_size=10)):
        machine = make()
        assert machine.feed(b"data: aaaa\n") == []
        with pytest.raises(RemoteProtocolError, match="starts at byte 0 holds more than max_event_size=10"):
            machine.feed(b"data: bbb")
            machine.feed(b"")
        with pytest.raises(LocalProtocolError):
            machine.feed(b"")


@pytest.mark.parametrize("make", [EventStreamParser, ChatStream, lambda: ChatStream(404, "text/html")])
def test_receive_data_takes_bytes_like_objects_only(make: Make) -> None:
    machine = make()
    with pytest.raises(TypeError, match="takes bytes, not str"):
        machine.receive_data("data: a\n\n")


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_bytes_like_chunks_read_as_bytes(kind: Callable[[bytes], Any]) -> None:
    body = HI + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    chat = ChatStream()
    got = chat.feed(kind(body[:40])) + chat.feed(kind(body[40:])) + chat.feed(kind(b""))
    assert [*got, chat.next_event()] == [Delta(0, "hi"), Finish(0, "stop"), Done(False), CLOSED]
    parser = EventStreamParser()
    assert parser.feed(kind(b"data: a")) == []
    assert parser.feed(kind(b"\n\n")) == [ServerSentEvent("message", "a")]
    small = ChatStream(max_event_size=8)
    with pytest.raises(RemoteProtocolError, match="max_event_size=8"):
        small.feed(kind(b"data: 123456789\n\n"))
