"""Translation: every capture of every API read with its ``ChatStream``,
each event written by an ``Encoder`` of every API, read back with that API's
``ChatStream``: the same message, usage and outcome (as far as the target
can say them, ``eventgen.expected``), and the same metadata.

The event streams are the real ones (Chat Completions captures from a dozen
servers, and the Responses, Anthropic and Gemini captures), with what real
streams hold that generated ones rarely do: server tools, errors before and
after the answer, cuts mid-event, usage merged over two events.  Where a
target cannot say a capture at all, the test pins the refusal: two choices
into an API that has one, a Gemini call whose arguments are not an object.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from eventgen import DIALECTS, expected, summary
from helpers import feed_all, until_error

from ssestate import (
    CLOSED,
    Accumulator,
    ChatStream,
    Encoder,
    Finish,
    LocalProtocolError,
    ToolArgumentsError,
    ToolCallFragment,
    Truncated,
)

CAPTURES = Path(__file__).parent / "captures"
SOURCES = sorted(
    [(p.parent.name, f"apis/{p.parent.name}/{p.stem}") for p in (CAPTURES / "apis").glob("*/*.sse")]
    + [("openai-chat", p.stem) for p in CAPTURES.glob("*.sse")]
)


def read_capture(name: str, dialect: str) -> tuple[list[Any], ChatStream]:
    """The events of a capture, up to the end or to the fault that stops it."""
    sidecar = json.loads((CAPTURES / f"{name}.json").read_text())
    stream = ChatStream(status_code=sidecar["status"], content_type=sidecar["content_type"], dialect=dialect)
    body = (CAPTURES / f"{name}.sse").read_bytes()
    events, _ = until_error(stream, [body] if body else [])
    return [e for e in events if e is not CLOSED], stream


def cannot_say(events: list[Any], target: str) -> str | None:
    """Why ``target`` must refuse ``events``, or None."""
    if target in ("openai-responses", "anthropic"):
        if any(getattr(e, "choice", 0) for e in events):
            return "this API answers with one choice"
        names: dict[int, str] = {}
        begun: set[int] = set()
        for e in (e for e in events if type(e) is ToolCallFragment):
            if e.name and e.name != names.get(e.index):
                if e.index in begun:
                    return "cannot take the name fragment"
                names[e.index] = names.get(e.index, "") + e.name
            if e.arguments:
                begun.add(e.index)
    if target == "gemini":
        for call, cut in _gemini_calls(events):
            if not cut and not _is_object(call):
                return "has arguments that are not a JSON object"
    return None


def _is_object(arguments: str) -> bool:
    try:
        return not arguments or type(json.loads(arguments)) is dict
    except ValueError:
        return False


def _gemini_calls(events: list[Any]) -> list[tuple[str, bool]]:
    """Each call's arguments, and whether the stream cut it (the token limit,
    an error finish or the end came while it was the last thing of its choice)."""
    calls: dict[tuple[int, int], list[str]] = {}
    open_call: dict[int, tuple[int, int]] = {}
    cut: set[tuple[int, int]] = set()
    for e in events:
        if type(e) is ToolCallFragment:
            key = (e.choice, e.index)
            calls.setdefault(key, []).append(e.arguments)
            open_call[e.choice] = key
        elif (
            type(e) is Finish
            and e.reason in ("length", "error", "insufficient_system_resource")
            and e.choice in open_call
        ):
            cut.add(open_call.pop(e.choice))
        elif type(e) is Truncated:
            cut.update(open_call.values())
        elif getattr(e, "choice", None) in open_call and type(e).__name__ in ("Delta", "Finish"):
            open_call.pop(e.choice)
    return [("".join(parts), key in cut) for key, parts in calls.items()]


def left_out(events: list[Any], target: str) -> list[Any]:
    """``events`` without the calls ``target`` leaves out: Gemini's calls cut
    inside arguments that are not an object."""
    if target != "gemini":
        return events
    dropped = {
        key
        for key, (arguments, cut) in zip(_keys(events), _gemini_calls(events), strict=True)
        if cut and not _is_object(arguments)
    }
    return [e for e in events if not (type(e) is ToolCallFragment and (e.choice, e.index) in dropped)]


def _keys(events: list[Any]) -> list[tuple[int, int]]:
    return list(dict.fromkeys((e.choice, e.index) for e in events if type(e) is ToolCallFragment))


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize(("source", "name"), SOURCES)
def test_every_capture_translates_into_every_api(source: str, name: str, target: str) -> None:
    events, stream = read_capture(name, source)
    encoder = Encoder(target, model=stream.model, response_id=stream.response_id, created=stream.created)
    problem = cannot_say(events, target)
    if problem is not None:
        with pytest.raises(LocalProtocolError, match=problem):
            for event in events:
                encoder.feed(event)
        return
    body = b"".join(encoder.feed(event) for event in events)

    back = ChatStream(dialect=target)
    acc = Accumulator()
    for event in feed_all(back, [body])[:-1]:
        acc.feed(event)
    got, wanted = summary(acc, target), expected(left_out(events, target), target)
    for i, choice in got["choices"].items():  # ids the target requires are made up where the source had none
        for n, (call_name, args, _call_id) in enumerate(choice["tool_calls"]):
            if wanted["choices"][i]["tool_calls"][n][2] is None:
                choice["tool_calls"][n] = (call_name, args, None)
    if wanted["outcome"] == "in-progress":  # the source stopped at a fault: no end was fed, the reader judges the cut
        got["outcome"] = "in-progress"
    assert got == wanted
    if acc.choices:
        assert (back.model, back.response_id) == (stream.model, stream.response_id)
    # The turn goes back in the target's shape, from either side of the gateway.
    read = Accumulator()
    for event in events:
        read.feed(event)
    for side in (read, acc):
        for i in side.choices:
            with contextlib.suppress(ToolArgumentsError):  # arguments that are not JSON
                side.message(i, dialect=target)


def test_the_refusals_above_are_met() -> None:
    """The captures hold both kinds of what a target cannot say."""
    problems = {
        (name, target): cannot_say(read_capture(name, source)[0], target)
        for source, name in SOURCES
        for target in DIALECTS
    }
    assert problems[("apis/gemini/two-candidates", "anthropic")] == "this API answers with one choice"
    assert problems[("openai-n3-interleaved", "openai-responses")] == "this API answers with one choice"
    assert problems[("sglang-old-tool-ids", "anthropic")] == "cannot take the name fragment"
    assert {p for p in problems.values() if p} == {
        "this API answers with one choice",
        "cannot take the name fragment",
        "has arguments that are not a JSON object",
    }
