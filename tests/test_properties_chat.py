"""Properties of the chat layer (SPEC §3, §4, §6) over generated streams.

1. Chunking invariance: ``ChatStream`` hands out the same events (and the
   same error, if any) whatever way the body is cut.
2. A valid generated stream assembles, through ``ChatStream`` and
   ``Accumulator``, into exactly the message the generator intended.
3. Damaged streams yield only typed chat events or a ``ProtocolError``
   (strict and lenient), and the ``Accumulator`` takes whatever comes out.
4. The ``Accumulator`` takes any sequence of chat events and agrees with a
   plain reference model of SPEC §4.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from helpers import chunked, chunkings, feed_all
from hypothesis import given, settings
from hypothesis import strategies as st

from ssestate import (
    CLOSED,
    NEED_DATA,
    Accumulator,
    ChatStream,
    Delta,
    Done,
    Finish,
    Heartbeat,
    ProtocolError,
    Sentinel,
    StreamError,
    ToolArgumentsError,
    ToolCallFragment,
    Truncated,
    Usage,
)
from ssestate.testing.strategies import ChatCase, chat_streams, mutated_streams, texts

Collected = tuple[list[Any], tuple[type[BaseException], str, int | None] | None]
ChatEventOrSentinel: TypeAlias = (
    Delta | ToolCallFragment | Finish | Usage | Done | Truncated | StreamError | Heartbeat | Sentinel
)


def collect(chunks: Iterable[bytes], *, strict: bool = True) -> Collected:
    """Feed ``chunks`` then end of stream; return the events handed out and
    the ``ProtocolError`` that stopped the stream, if any (as comparable
    type, message and offset).  Any other exception propagates."""
    stream = ChatStream(strict=strict)
    events: list[Any] = []
    try:
        for chunk in chunks:
            if not chunk:
                continue  # b"" would mean end of stream
            stream.receive_data(chunk)
            while (event := stream.next_event()) is not NEED_DATA:
                assert event is not CLOSED, "CLOSED before end of stream"
                events.append(event)
        stream.receive_data(b"")
        while (event := stream.next_event()) is not CLOSED:
            assert event is not NEED_DATA, "NEED_DATA after end of stream"
            events.append(event)
    except ProtocolError as exc:
        return events, (type(exc), str(exc), exc.offset)
    return events, None


def check_typed(event: Any) -> None:
    """``event`` is a chat event whose fields have the types SPEC §3 gives."""
    opt_str = (str, type(None))
    if type(event) is Delta:
        assert type(event.choice) is int
        assert type(event.content) is str
        assert isinstance(event.role, opt_str) and event.role != ""
        assert isinstance(event.reasoning, opt_str) and event.reasoning != ""
        assert isinstance(event.refusal, opt_str) and event.refusal != ""
        assert event.content or event.role or event.reasoning or event.refusal
    elif type(event) is ToolCallFragment:
        assert type(event.choice) is int and type(event.index) is int
        assert isinstance(event.id, opt_str) and event.id != ""
        assert isinstance(event.name, opt_str) and event.name != ""
        assert type(event.arguments) is str
    elif type(event) is Finish:
        assert type(event.choice) is int
        assert type(event.reason) is str and event.reason
    elif type(event) is Usage:
        assert type(event.prompt_tokens) is int
        assert type(event.completion_tokens) is int
        assert type(event.total_tokens) is int
        assert isinstance(event.raw, Mapping)
    elif type(event) is Done:
        assert type(event.sentinel) is bool
    elif type(event) is Heartbeat:
        assert type(event.comment) is str
    elif type(event) is Truncated:
        assert event.reason in ("partial-event", "eof-before-done")
        assert type(event.pending) is int and event.pending >= 0
    elif type(event) is StreamError:
        assert event.status is None or type(event.status) is int
        assert isinstance(event.code, opt_str) and event.code != ""
        assert type(event.message) is str
        assert isinstance(event.type, opt_str)
    else:
        raise AssertionError(f"not a chat event: {event!r}")


def read_everything(acc: Accumulator) -> None:
    """Read every result an Accumulator offers; only documented errors may occur."""
    assert acc.outcome in ("error", "in-progress", "truncated", "length", "filtered", "complete")
    for index, choice in acc.choices.items():
        assert choice.index == index
        assert isinstance(choice.content, str)
        repr(choice)
        message = acc.message(index)
        assert message["role"]
        for call in choice.tool_calls:
            assert isinstance(call.arguments, str)
            try:
                call.parsed_arguments()
            except ToolArgumentsError as exc:
                assert exc.tool_call is call


# --- 1. chunking invariance ---------------------------------------------------------


@given(st.data())
def test_chat_events_do_not_depend_on_chunking(data: st.DataObject) -> None:
    body = data.draw(st.one_of(chat_streams().map(lambda case: case.body), mutated_streams()), label="body")
    strict = data.draw(st.booleans(), label="strict")
    whole = collect([body], strict=strict)
    cuts = data.draw(chunked(body), label="chunks")
    assert collect(cuts, strict=strict) == whole
    assert collect([body[i : i + 1] for i in range(len(body))], strict=strict) == whole


@settings(max_examples=max(1, settings().max_examples // 6))
@given(st.one_of(chat_streams(max_choices=2).map(lambda case: case.body), mutated_streams(max_choices=2)))
def test_chat_events_are_the_same_under_every_named_chunking(body: bytes) -> None:
    whole = collect([body])
    for name, chunks in chunkings(body):
        assert collect(chunks) == whole, name


# --- 2. generated stream -> intended message ---------------------------------------------


def check_against_case(case: ChatCase, stream: ChatStream, events: list[Any]) -> None:
    assert events[-1] is CLOSED
    events = events[:-1]
    for event in events:
        check_typed(event)
    acc = Accumulator()
    for event in events:
        acc.feed(event)

    assert sorted(acc.choices) == sorted(case.choices)
    for index, want in case.choices.items():
        got = acc.choices[index]
        assert got.role == want.role, index
        assert got.content == want.content, index
        assert got.reasoning == want.reasoning, index
        assert got.refusal == want.refusal, index
        assert got.finish_reason == want.finish_reason, index
        assert got.logprobs == want.logprobs, index
        assert [(c.index, c.id, c.name, c.arguments) for c in got.tool_calls] == [
            (c.index, c.id, c.name, c.arguments) for c in want.tool_calls
        ], index
        for call, want_call in zip(got.tool_calls, want.tool_calls, strict=True):
            if want_call.value is not None:  # whole arguments (a cut stream may end inside them)
                assert call.parsed_arguments() == want_call.value, index

    if case.usage is None:
        assert acc.usage is None
    else:
        assert acc.usage is not None
        assert dict(acc.usage.raw) == case.usage
        assert (acc.usage.prompt_tokens, acc.usage.completion_tokens, acc.usage.total_tokens) == (
            case.usage["prompt_tokens"],
            case.usage["completion_tokens"],
            case.usage["total_tokens"],
        )

    want_error = case.expected.error
    if want_error is None:
        assert acc.error is None
    else:
        assert acc.error is not None
        assert (acc.error.message, acc.error.code, acc.error.type) == (
            want_error.message,
            want_error.code,
            want_error.type,
        )
    assert acc.outcome == case.outcome
    last = {
        "done": Done(True),
        "clean-eof": Done(False),
        "eof-before-done": Truncated("eof-before-done", 0),
        "partial-event": Truncated("partial-event", case.pending),
    }
    assert events[-1] == last[case.ending]
    assert sum(type(e) in (Done, Truncated) for e in events) == 1
    assert [e.comment for e in events if type(e) is Heartbeat] == case.heartbeats
    assert (stream.response_id, stream.model, stream.created) == (case.response_id, case.model, case.created)


@given(st.data())
def test_generated_stream_assembles_to_intended_message(data: st.DataObject) -> None:
    case = data.draw(chat_streams(), label="case")
    chunks = data.draw(chunked(case.body, max_cuts=40), label="chunks")
    stream = ChatStream()
    events = feed_all(stream, chunks)
    check_against_case(case, stream, events)


@given(chat_streams(openai_shape=True))
def test_openai_shaped_stream_assembles_to_intended_message(case: ChatCase) -> None:
    stream = ChatStream(content_type="text/event-stream; charset=utf-8")
    events = feed_all(stream, [case.body])
    check_against_case(case, stream, events)


@given(chat_streams())
def test_generated_stream_is_the_same_in_lenient_mode(case: ChatCase) -> None:
    # A valid stream has nothing to skip: strict=False changes nothing.
    assert collect([case.body], strict=False) == collect([case.body], strict=True)


# --- 3. damaged streams never crash --------------------------------------------------------


@settings(max_examples=settings().max_examples * 3)
@given(mutated_streams(), st.booleans())
def test_damaged_stream_yields_only_chat_events_or_protocol_error(body: bytes, strict: bool) -> None:
    events, _error = collect([body], strict=strict)
    acc = Accumulator()
    for event in events:
        check_typed(event)
        acc.feed(event)
    read_everything(acc)


@given(st.data())
def test_damaged_stream_chunked_never_crashes(data: st.DataObject) -> None:
    body = data.draw(mutated_streams(), label="body")
    chunks = data.draw(chunked(body, max_cuts=30), label="chunks")
    for strict in (True, False):
        events, _error = collect(chunks, strict=strict)
        for event in events:
            check_typed(event)


# --- 4. Accumulator over any event sequence ---------------------------------------------------

_choice = st.integers(0, 3)
_opt_text = st.none() | st.sampled_from(["", "a", "b", "ab", "get", "get_weather", "assistant"])
_reasons = st.sampled_from(
    ["stop", "length", "tool_calls", "content_filter", "error", "insufficient_system_resource", "function_call", "x"]
)
_events = st.one_of(
    st.builds(Delta, _choice, texts, _opt_text, _opt_text, _opt_text, st.none() | st.just({"content": [1]})),
    st.builds(ToolCallFragment, _choice, st.integers(0, 3), _opt_text, _opt_text, st.sampled_from(["", "{", "}", "1"])),
    st.builds(Finish, _choice, _reasons),
    st.builds(Usage, st.integers(0, 9), st.integers(0, 9), st.integers(0, 9), st.just({})),
    st.builds(Done, st.booleans()),
    st.builds(Truncated, st.sampled_from(["partial-event", "eof-before-done"]), st.integers(0, 9)),
    st.builds(StreamError, st.none() | st.just(500), _opt_text, texts, _opt_text, st.none()),
    st.builds(Heartbeat, texts),
    st.sampled_from([NEED_DATA, CLOSED]),
)


def reference(events: list[Any]) -> dict[str, Any]:
    """SPEC §4 written as plainly as possible."""
    choices: dict[int, dict[str, Any]] = {}
    usage = error = None
    ended_unfinished = ended = errored = False

    def choice(i: int) -> dict[str, Any]:
        return choices.setdefault(
            i, {"role": None, "content": "", "reasoning": None, "refusal": None, "finish": None, "tools": {}}
        )

    for e in events:
        if isinstance(e, Delta):
            c = choice(e.choice)
            if e.role:
                c["role"] = e.role
            c["content"] += e.content
            if e.reasoning:
                c["reasoning"] = (c["reasoning"] or "") + e.reasoning
            if e.refusal:
                c["refusal"] = (c["refusal"] or "") + e.refusal
        elif isinstance(e, ToolCallFragment):
            t = choice(e.choice)["tools"].setdefault(e.index, {"id": None, "name": "", "arguments": ""})
            if t["id"] is None and e.id:
                t["id"] = e.id
            if e.name and e.name != t["name"]:
                t["name"] += e.name
            t["arguments"] += e.arguments
        elif isinstance(e, Finish):
            choice(e.choice)["finish"] = e.reason
            errored = errored or e.reason in ("error", "insufficient_system_resource")
        elif isinstance(e, Usage):
            usage = e
        elif isinstance(e, StreamError):
            error = error or e
        elif isinstance(e, (Done, Truncated)):
            unfinished = any(c["finish"] is None for c in choices.values())
            if unfinished or (isinstance(e, Truncated) and (not choices or e.reason == "eof-before-done")):
                ended_unfinished = True
            ended = True

    reasons = {c["finish"] for c in choices.values()}
    if error is not None or errored:
        outcome = "error"
    elif not ended:
        outcome = "in-progress"
    elif ended_unfinished:
        outcome = "truncated"
    elif "length" in reasons:
        outcome = "length"
    elif "content_filter" in reasons:
        outcome = "filtered"
    else:
        outcome = "complete"
    return {"choices": choices, "usage": usage, "error": error, "outcome": outcome}


@given(st.lists(_events, max_size=30))
def test_accumulator_takes_any_event_sequence(events: list[ChatEventOrSentinel]) -> None:
    acc = Accumulator()
    for event in events:
        acc.feed(event)
    read_everything(acc)
    want = reference(events)
    assert acc.outcome == want["outcome"]
    assert acc.usage is want["usage"]
    assert acc.error is want["error"]
    assert list(acc.choices) == list(want["choices"])
    for i, c in want["choices"].items():
        got = acc.choices[i]
        assert (got.role, got.content, got.reasoning, got.refusal, got.finish_reason) == (
            c["role"],
            c["content"],
            c["reasoning"],
            c["refusal"],
            c["finish"],
        )
        tools = c["tools"]
        assert [(t.index, t.id, t.name, t.arguments) for t in got.tool_calls] == [
            (k, tools[k]["id"], tools[k]["name"], tools[k]["arguments"]) for k in sorted(tools)
        ]
