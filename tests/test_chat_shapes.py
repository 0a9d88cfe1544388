"""A choice reads the same whatever path reads it.

``ChatStream`` reads the usual one-choice chunk on a short path and every
other chunk with its general loop.  A ``choices`` entry that is not an object
is skipped, so a chunk whose choices are ``[c, null]`` goes through the
general loop and must give exactly the events ``[c]`` gives; and the
events of a chunk with two indexed choices are those of two chunks with one
each.  The choices below are the usual ones (a text delta; a tool-call
fragment with ``index`` and ``function.arguments``) and their near misses,
with up to two edits anywhere: a place given any JSON value, removed, or
given one more member.
"""

from __future__ import annotations

import json
from typing import Any

from helpers import feed_all
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ssestate import ChatStream, Delta, Finish, ToolCallFragment
from ssestate.testing.strategies import json_values

START = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
STOP = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
_ARGS = {"index": 0, "function": {"arguments": '{"a'}}
_FIRST = {"index": 1, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
_USUAL = [
    {"index": 0, "delta": {"content": "x"}, "logprobs": None, "finish_reason": None},
    {"index": 0, "delta": {"tool_calls": [_ARGS]}, "finish_reason": None},
    # Near misses, one for each thing the short path checks: a call's first
    # fragment, or an id or a name beside the arguments; two calls in one
    # chunk; a role beside the text; a finish in the same chunk; a choice
    # not started yet; an index, a text or arguments of another type.
    {"index": 0, "delta": {"tool_calls": [_FIRST]}, "finish_reason": None},
    {"index": 0, "delta": {"tool_calls": [{**_ARGS, "id": "call_2"}]}, "finish_reason": None},
    {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "g", "arguments": "{}"}}]}},
    {"index": 0, "delta": {"tool_calls": [_ARGS, _FIRST]}, "finish_reason": None},
    {"index": 0, "delta": {"role": "assistant", "content": "x"}, "finish_reason": None},
    {"index": 0, "delta": {"content": "x"}, "finish_reason": "length"},
    {"index": 1, "delta": {"content": "x"}, "finish_reason": None},
    {"index": False, "delta": {"content": "x"}},
    {"index": 0, "delta": {"content": ["x"]}},
    {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": 1}}]}},
    {"index": 0, "delta": {"tool_calls": [{"index": 0.0, "function": {"arguments": "x"}}]}},
]
_NEW_KEYS = st.sampled_from(
    ["index", "delta", "finish_reason", "content", "role", "reasoning", "tool_calls", "id", "name", "function", "type"]
)
# Any JSON value, often one that is close to a usual one but of another type.
_VALUES = st.one_of(st.sampled_from([None, False, True, 0, 1, 0.0, "", "0", "stop", [], {}, ["x"]]), json_values)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position inside a JSON value, the value itself included."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for pos, item in enumerate(value):
            out += _paths(item, (*prefix, pos))
    return out


def _edit(value: Any, path: tuple[Any, ...], how: str, new: Any, key: str) -> Any:
    """``value`` with the place at ``path`` replaced by ``new``, or removed,
    or (an object) given one more member ``key``."""
    if path:
        head, rest = path[0], path[1:]
        copy = dict(value) if type(value) is dict else list(value)
        if how == "remove" and not rest:
            del copy[head]
        else:
            copy[head] = _edit(copy[head], rest, how, new, key)
        return copy
    if how == "add" and type(value) is dict:
        return {**value, key: new}
    return new


@st.composite
def choices(draw: st.DrawFn) -> Any:
    """A usual choice or a near miss, with up to two edits: a place replaced
    by any JSON value, removed, or given one more member."""
    choice = draw(st.sampled_from(_USUAL))
    for _ in range(draw(st.integers(0, 2))):
        path = draw(st.sampled_from(_paths(choice)))
        how = draw(st.sampled_from(["replace", "remove", "add"] if path else ["replace", "add"]))
        choice = _edit(choice, path, how, draw(_VALUES), draw(_NEW_KEYS))
    return choice


def _line(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"


@settings(max_examples=10 * settings().max_examples)
@given(choices(), st.booleans())
def test_a_choice_reads_the_same_alone_and_beside_a_skipped_one(choice: Any, started: bool) -> None:
    head = [START] if started else []
    alone = feed_all(ChatStream(), [*head, _line({"choices": [choice]}), STOP])
    beside = feed_all(ChatStream(), [*head, _line({"choices": [choice, None]}), STOP])
    assert repr(alone) == repr(beside)  # repr: Delta(choice=False) == Delta(choice=0)


@settings(max_examples=4 * settings().max_examples)
@given(choices(), choices(), st.booleans())
def test_two_choices_in_one_chunk_read_as_in_two_chunks(first: Any, second: Any, started: bool) -> None:
    # A choice without an integer index takes its array position.
    assume(all(type(c) is not dict or type(c.get("index")) is int for c in (first, second)))
    head = [START] if started else []
    one = feed_all(ChatStream(), [*head, _line({"choices": [first, second]}), STOP])
    two = feed_all(ChatStream(), [*head, _line({"choices": [first]}), _line({"choices": [second]}), STOP])
    assert repr(one) == repr(two)


def test_the_usual_chunks_and_their_near_misses() -> None:
    """Pinned examples of the paths the property explores."""

    def events(choice: Any) -> list[Any]:
        return feed_all(ChatStream(), [START, _line({"choices": [choice]})], eof=False)[1:]

    usual_call = {"index": 0, "function": {"arguments": '{"a'}}
    assert events({"index": 0, "delta": {"content": "x"}, "finish_reason": None}) == [Delta(0, "x")]
    assert events({"index": 0, "delta": {"tool_calls": [usual_call]}}) == [ToolCallFragment(0, 0, None, None, '{"a')]
    # A delta that is not an object, a tool call list that is an object, a
    # function without arguments, a choice that is a list: nothing, or the
    # general reading.
    assert events({"index": 0, "delta": "x"}) == []
    assert events({"index": 0, "delta": {"tool_calls": {"0": usual_call}}}) == []
    assert events({"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "f"}}]}}) == [
        ToolCallFragment(0, 0, None, "f", "")
    ]
    assert events(["index", 0]) == []
    # Arguments that are not a string are written back as JSON text.
    assert events({"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": {"a": 1}}}]}}) == [
        ToolCallFragment(0, 0, None, None, '{"a":1}')
    ]
    # A choice that has not started yet, and one that finishes in the same chunk.
    assert events({"index": 1, "delta": {"content": "y"}}) == [Delta(1, "y")]
    assert events({"index": 0, "delta": {"content": "z"}, "finish_reason": "length"}) == [
        Delta(0, "z"),
        Finish(0, "length"),
    ]
