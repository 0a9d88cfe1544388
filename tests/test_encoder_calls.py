"""Encoder: tool calls in each API (held until their name is whole, written
whole for Gemini) and every event an encoder refuses, with the message
that says which event and why; a refused event changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from eventgen import DIALECTS, payloads, read_back, write
from hypothesis import given, settings
from hypothesis import strategies as st

from ssestate import (
    CLOSED,
    NEED_DATA,
    Continuation,
    Delta,
    Done,
    Encoder,
    Finish,
    Heartbeat,
    LocalProtocolError,
    ServerSentEvent,
    StreamError,
    ToolCallFragment,
    Truncated,
    Usage,
)

# -- tool calls --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["openai-responses", "anthropic"])
def test_a_call_is_held_until_its_arguments_begin(dialect: str) -> None:
    """The name may come in pieces before the arguments: the block or item
    starts when the arguments do, with the whole name."""
    events = [
        ToolCallFragment(0, 0, "call_9", "get_", ""),
        ToolCallFragment(0, 0, None, "weather", ""),
        ToolCallFragment(0, 0, "call_other", "get_weather", ""),  # a repeat of the whole name; the first id stays
        ToolCallFragment(0, 0, None, None, "{}"),
        ToolCallFragment(0, 0, None, "get_weather", ""),  # a repeat, once started
        Finish(0, "tool_calls"),
        Done(),
    ]
    written = write(dialect, events)
    assert written[1:3] == [b"", b""]
    assert written[4] == b""
    acc, _ = read_back(dialect, b"".join(written))
    [call] = acc.choices[0].tool_calls
    assert (call.id, call.name, call.arguments) == ("call_9", "get_weather", "{}")


@pytest.mark.parametrize("dialect", ["openai-responses", "anthropic"])
@pytest.mark.parametrize(
    "end",
    [
        Delta(0, "Hi"),
        ToolCallFragment(0, 1, None, "g", ""),
        Finish(0, "tool_calls"),
        Done(),
        Truncated("eof-before-done"),
    ],
)
def test_a_held_call_starts_when_anything_else_comes(dialect: str, end: Any) -> None:
    written = write(
        dialect, [Delta(0, "", "assistant"), ToolCallFragment(0, 0, None, "f", ""), Heartbeat(), Usage(1, 1, 2), end]
    )
    acc, _ = read_back(dialect, b"".join(written))
    calls = acc.choices[0].tool_calls
    assert calls[0].name == "f"
    assert calls[0].id in ("call_0", "toolu_0")  # made from its place: the APIs require one
    assert calls[0].arguments in ("", "{}")  # Anthropic reads a call without input as {}


def test_made_up_ids_carry_the_response_id() -> None:
    acc, _ = read_back(
        "anthropic", b"".join(write("anthropic", [ToolCallFragment(0, 4, None, "f", "{}")], response_id="msg_1"))
    )
    assert acc.choices[0].tool_calls[0].id == "toolu_msg_1_0"


@pytest.mark.parametrize("dialect", ["openai-responses", "anthropic"])
def test_a_name_that_changes_after_its_call_started_is_refused(dialect: str) -> None:
    encoder = Encoder(dialect)
    encoder.feed(ToolCallFragment(0, 0, "c", "get", "{"))
    with pytest.raises(LocalProtocolError, match=r"event #2 \(ToolCallFragment\).*name fragment 'weather'"):
        encoder.feed(ToolCallFragment(0, 0, None, "weather", "}"))


@pytest.mark.parametrize("dialect", ["openai-responses", "anthropic", "gemini"])
def test_a_fragment_of_a_call_already_closed_is_refused(dialect: str) -> None:
    encoder = Encoder(dialect)
    encoder.feed(ToolCallFragment(0, 0, "a", "f", "{}"))
    encoder.feed(ToolCallFragment(0, 1, "b", "g", "{}"))
    with pytest.raises(LocalProtocolError, match=r"event #3 \(ToolCallFragment\).*tool call 0"):
        encoder.feed(ToolCallFragment(0, 0, None, None, " "))


def test_chat_interleaves_calls_and_choices_freely() -> None:
    events = [
        ToolCallFragment(1, 0, "a", "f", "{"),
        ToolCallFragment(0, 0, "b", "g", "["),
        ToolCallFragment(1, 1, "c", "h", "{}"),
        ToolCallFragment(1, 0, None, None, "}"),
        ToolCallFragment(0, 0, None, None, "]"),
        Finish(0, "tool_calls"),
        Finish(1, "tool_calls"),
        Done(),
    ]
    acc, _ = read_back("openai-chat", b"".join(write("openai-chat", events)))
    assert [(t.id, t.arguments) for t in acc.choices[1].tool_calls] == [("a", "{}"), ("c", "{}")]
    assert [(t.id, t.arguments) for t in acc.choices[0].tool_calls] == [("b", "[]")]


def test_gemini_writes_each_call_whole_when_it_is_complete() -> None:
    events = [
        Delta(1, "", "assistant"),
        ToolCallFragment(1, 0, "call_a", "f", '{"a": '),
        ToolCallFragment(1, 0, None, None, "1}"),
        ToolCallFragment(1, 1, None, "g", ""),  # another call: the first is complete
        Delta(1, "Done."),  # text: the second is complete
        ToolCallFragment(1, 2, None, "h", '{"x": [1, {"y": null}]}'),
        Finish(1, "tool_calls"),  # the finish: the third is complete
        Done(),
    ]
    written = write("gemini", events)
    assert written[1:3] == [b"", b""]
    parts = [payloads(w)[0]["candidates"][0]["content"]["parts"] for w in written if w]
    assert parts[1:] == [
        [{"functionCall": {"name": "f", "args": {"a": 1}, "id": "call_a"}}],
        [{"functionCall": {"name": "g", "args": {}}}, {"text": "Done."}],
        [{"functionCall": {"name": "h", "args": {"x": [1, {"y": None}]}}}],
    ]
    assert written[-1] == b""
    acc, _ = read_back("gemini", b"".join(written))
    assert [(t.index, t.parsed_arguments()) for t in acc.choices[1].tool_calls] == [
        (0, {"a": 1}),
        (1, {}),
        (2, {"x": [1, {"y": None}]}),
    ]
    assert acc.choices[1].finish_reason == "tool_calls"


def test_gemini_writes_held_calls_at_done_and_truncated() -> None:
    events = [ToolCallFragment(0, 0, None, "f", "{}"), ToolCallFragment(2, 0, None, "g", "{}")]
    for end in (Done(), Truncated("eof-before-done")):
        acc, _ = read_back("gemini", b"".join(write("gemini", [*events, end])))
        assert [c.tool_calls[0].name for c in acc.choices.values()] == ["f", "g"]


@pytest.mark.parametrize("arguments", ['{"a": 1', "[1, 2]", '"text"', "NaN", "{} {}", " "])
def test_gemini_refuses_a_complete_call_whose_arguments_are_not_an_object(arguments: str) -> None:
    for end in (Finish(0, "tool_calls"), Done(), Delta(0, "x"), ToolCallFragment(0, 1, None, "g", "")):
        encoder = Encoder("gemini")
        encoder.feed(ToolCallFragment(0, 0, None, "f", arguments))
        with pytest.raises(
            LocalProtocolError, match=r"event #2 .*tool call 0 of choice 0 has arguments that are not a JSON object"
        ):
            encoder.feed(end)


def test_gemini_leaves_out_a_call_cut_inside_its_arguments() -> None:
    for end in (Finish(0, "length"), Finish(0, "error"), Truncated("eof-before-done")):
        written = write("gemini", [Delta(0, "Hi"), ToolCallFragment(0, 0, None, "f", '{"a": "unfini'), end])
        acc, _ = read_back("gemini", b"".join(written))
        assert acc.choices[0].tool_calls == []
        assert acc.choices[0].content == "Hi"


def test_gemini_refuses_a_fragment_of_a_call_written_by_a_later_event() -> None:
    encoder = Encoder("gemini")
    encoder.feed(ToolCallFragment(0, 0, None, "f", "{}"))
    encoder.feed(Delta(0, "x"))
    with pytest.raises(LocalProtocolError, match="was written whole already"):
        encoder.feed(ToolCallFragment(0, 0, None, None, "{}"))


# -- what is refused ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", ["openai-responses", "anthropic"])
@pytest.mark.parametrize(
    "event",
    [Delta(1, "Hi"), ToolCallFragment(2, 0, None, "f", ""), Finish(1, "stop"), Continuation(1, "thinking", {})],
)
def test_a_second_choice_is_refused_where_the_api_has_one(dialect: str, event: Any) -> None:
    encoder = Encoder(dialect)
    first = encoder.feed(Delta(0, "Hi"))
    with pytest.raises(
        LocalProtocolError, match=r"event #2 .*is for choice [12], and this API answers with one choice"
    ) as caught:
        encoder.feed(event)
    assert caught.value.offset == len(first)
    assert encoder.feed(Finish(0, "stop")) == write(dialect, [Delta(0, "Hi"), Finish(0, "stop")])[1]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("end", [Done(), Truncated("eof-before-done")])
def test_nothing_may_follow_the_end(dialect: str, end: Any) -> None:
    encoder = Encoder(dialect)
    encoder.feed(Delta(0, "Hi"))
    encoder.feed(end)
    for event in (Delta(0, "more"), Heartbeat(), Done()):
        with pytest.raises(
            LocalProtocolError, match=f"event #3 .*came after the stream ended with {type(end).__name__}"
        ):
            encoder.feed(event)
    assert encoder.feed(CLOSED) == b""


@pytest.mark.parametrize("dialect", DIALECTS)
def test_sentinels_are_ignored(dialect: str) -> None:
    encoder = Encoder(dialect)
    assert encoder.feed(NEED_DATA) == b""
    assert encoder.feed(CLOSED) == b""
    assert repr(encoder).endswith(": 0 events, 0 bytes>")


@pytest.mark.parametrize("thing", [ServerSentEvent("message", "x"), b"data: x\n\n", None, {"choices": []}])
def test_what_is_not_a_chat_event_is_refused(thing: Any) -> None:
    with pytest.raises(LocalProtocolError, match=f"takes chat events .*not {type(thing).__name__}"):
        Encoder().feed(thing)


MALFORMED = [
    (Delta("0", "Hi"), "choice must be an integer, not str"),  # type: ignore[arg-type]
    (Delta(True, "Hi"), "choice must be an integer, not bool"),
    (Delta(0, None), "content must be a string, not NoneType"),  # type: ignore[arg-type]
    (Delta(0, "x", 1), "role must be a string or None, not int"),  # type: ignore[arg-type]
    (Delta(0, "", None, b"x"), "reasoning must be a string or None, not bytes"),  # type: ignore[arg-type]
    (Delta(0, "", None, None, "\udcff"), "refusal holds U\\+DCFF, a lone surrogate"),
    (ToolCallFragment(0, None), "index must be an integer, not NoneType"),  # type: ignore[arg-type]
    (ToolCallFragment(0, 0, 5), "id must be a string or None, not int"),  # type: ignore[arg-type]
    (ToolCallFragment(0, 0, None, ["f"]), "name must be a string or None, not list"),  # type: ignore[arg-type]
    (ToolCallFragment(0, 0, None, None, None), "arguments must be a string, not NoneType"),  # type: ignore[arg-type]
    (Finish(0, None), "reason must be a string, not NoneType"),  # type: ignore[arg-type]
    (Finish(0, ""), "reason must not be empty"),
    (Finish(0, "stop", 1), "native must be a string or None, not int"),  # type: ignore[arg-type]
    (Usage(1.5, 0, 0), "prompt_tokens must be an integer, not float"),  # type: ignore[arg-type]
    (Usage(0, None, 0), "completion_tokens must be an integer, not NoneType"),  # type: ignore[arg-type]
    (Usage(0, 0, "1"), "total_tokens must be an integer, not str"),  # type: ignore[arg-type]
    (Usage(0, 0, 0, [1]), "raw must be a mapping, not list"),  # type: ignore[arg-type]
    (Heartbeat(None), "comment must be a string, not NoneType"),  # type: ignore[arg-type]
    (StreamError("500"), "status must be an integer or None, not str"),  # type: ignore[arg-type]
    (StreamError(None, 7), "code must be a string or None, not int"),  # type: ignore[arg-type]
    (StreamError(None, None, None), "message must be a string, not NoneType"),  # type: ignore[arg-type]
    (StreamError(None, None, "m", 3), "type must be a string or None, not int"),  # type: ignore[arg-type]
    (Continuation(None, "thinking"), "choice must be an integer, not NoneType"),  # type: ignore[arg-type]
    (Continuation(0, None), "kind must be a string, not NoneType"),  # type: ignore[arg-type]
    (Continuation(0, "thinking", {}, "0"), "index must be an integer or None, not str"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("event", "problem"), MALFORMED)
def test_a_malformed_event_is_refused(dialect: str, event: Any, problem: str) -> None:
    encoder = Encoder(dialect)
    with pytest.raises(
        LocalProtocolError, match=rf"^event #1 \({type(event).__name__}\) fed to Encoder\('{dialect}'\): {problem}"
    ):
        encoder.feed(event)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"dialect": "auto"}, "dialect must be one of openai-chat, openai-responses, anthropic, gemini; got 'auto'"),
        ({"model": 4}, "model must be a string, not int"),
        ({"response_id": "\ud800"}, "response_id holds U\\+D800"),
        ({"created": -1}, "created must be a non-negative integer or None, not -1"),
        ({"created": "2024"}, "created must be a non-negative integer or None, not '2024'"),
    ],
)
def test_options_that_cannot_be_written_are_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Encoder(**options)


# Values of every type for every field (lone surrogates, NaN, bytes, objects
# JSON cannot write), beside plausible ones, drawn from pools: each pool is
# one sampled_from, so every value is as likely as the others.
ODD: list[Any] = [None, True, -1, 1.5, float("nan"), b"x", [1], {"a": {1, 2}}, object(), "\ud800", "a\udcff"]
TEXTS = ["", "x", "Grüß", "stop", "length", "error", "thinking", '{"a": 1}', "{", "}", "[1]", "c2ln", "\ud800"]
DATA = [*TEXTS, {"thinking": "t", "signature": "s"}, {"thinking": "\ud800"}, {"signature": 1}, {"id": "rs_1"}]
KINDS = ["thinking", "redacted_thinking", "thought_signature", "reasoning_item"]


def field(*plausible: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from([*plausible, *ODD])


CHOICE = field(0, 0, 0, 1)
TEXT = field(*TEXTS)
MAYBE = field(None, None, *TEXTS)
ANY_EVENT = st.one_of(
    st.builds(Delta, CHOICE, TEXT, MAYBE, MAYBE, MAYBE, field(None)),
    st.builds(ToolCallFragment, CHOICE, field(0, 1, 2), MAYBE, MAYBE, TEXT),
    st.builds(Finish, CHOICE, TEXT, MAYBE),
    st.builds(Usage, field(0, 7), field(0, 7), field(0, 14), field({}, {"prompt_tokens": 0})),
    st.builds(Heartbeat, TEXT),
    st.builds(StreamError, field(None, 500), MAYBE, TEXT, MAYBE, field(None)),
    st.builds(Continuation, CHOICE, field(*KINDS, *KINDS), field(*DATA), field(None, 0, 1)),
    st.builds(Done, field(True)),
    st.builds(Truncated, TEXT, field(0)),
    field(Delta(0, "x")),  # not always an event: whatever a caller might pass
)


@pytest.mark.parametrize("dialect", DIALECTS)
# Ten times the profile's count: an example is cheap (most odd values are
# refused at once), and the pools are wide.
@settings(max_examples=10 * settings().max_examples)
@given(events=st.lists(ANY_EVENT, max_size=12))
def test_any_event_is_written_or_refused_and_what_is_written_reads(dialect: str, events: list[Any]) -> None:
    """Whatever it is fed, an encoder writes bytes or raises ``LocalProtocolError``
    (never another exception), and what it wrote is a stream its API's reader
    takes without a fault."""
    encoder = Encoder(dialect)
    read_back(dialect, b"".join(written_or_refused(encoder, event) for event in events))


def written_or_refused(encoder: Encoder, event: Any) -> bytes:
    try:
        return encoder.feed(event)
    except LocalProtocolError as exc:
        assert str(exc).startswith(("event #", "Encoder.feed() takes chat events"))
        return b""
