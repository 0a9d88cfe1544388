"""Hypothesis strategies for streams of chat events, and what an API makes of them.

``event_streams(dialect)`` draws a list of chat events as a reader hands
them out: per choice a role, text runs (content, reasoning, refusal) cut
into pieces, tool calls whose name and arguments are cut anywhere (the
arguments a JSON object, empty, or for the APIs that stream raw text any
text), the continuation data of that API, one or two finish reasons of every
kind; the choices interleaved (n>1 only where the API has it); usage, an
error and heartbeats anywhere; ``Done`` or ``Truncated`` last.  It keeps to
what ``dialect`` can say (see ``Encoder``'s documented limits): one choice
for the Responses API and Anthropic, each call's fragments together and
every call before its choice's finish, Gemini arguments that are objects,
and no cut that left every choice finished.

``summary(acc, dialect)`` and ``expected(events, dialect)`` give what the
round trip compares: per choice the content, reasoning, refusal, tool calls
(name, arguments as JSON values where they parse, id) and finish reason; the
usage counts; the outcome.  ``expected`` applies what each API cannot say:
refusal text is plain text in Anthropic and Gemini, which also read ``""``
arguments as ``{}``; outside Chat Completions whether calls were made decides
between ``stop`` and ``tool_calls`` (only Anthropic has a word for
``tool_calls`` without calls, ``tool_use``); an error finish is an
error event (Anthropic, Gemini: the choice stays unfinished) or a failed
response (Responses, whatever came after); Anthropic always reports usage
(zero counts when none was fed) and cannot carry a total other than prompt
+ completion; Responses says the finish and the usage only on the terminal
event, written at the end of a finished answer.

``write``, ``read_back`` and ``payloads`` are the small steps every encoder
test takes: events through an ``Encoder``, bytes through a ``ChatStream`` and
an ``Accumulator``, the JSON payloads of a body.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from helpers import feed_all
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
    StreamError,
    ToolCallFragment,
    Truncated,
    Usage,
)

__all__ = [
    "DIALECTS",
    "ERROR_REASONS",
    "REASONS",
    "event_streams",
    "expected",
    "fold",
    "payloads",
    "read_back",
    "summary",
    "write",
]

DIALECTS = ("openai-chat", "openai-responses", "anthropic", "gemini")
ERROR_REASONS = ("error", "insufficient_system_resource")
REASONS = (
    "stop",
    "tool_calls",
    "length",
    "content_filter",
    *ERROR_REASONS,
    "function_call",
    "pause_turn",
    "other_word",
)
NATIVES = {
    "openai-chat": (None,),
    "openai-responses": (None, "completed", "max_output_tokens", "content_filter", "failed"),
    "anthropic": (None, "end_turn", "stop_sequence", "tool_use", "max_tokens", "refusal", "pause_turn"),
    "gemini": (None, "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "OTHER", "MALFORMED_FUNCTION_CALL"),
}
ONE_CHOICE = ("openai-responses", "anthropic")
OBJECT_ARGUMENTS = ("gemini",)  # arguments must be JSON objects

texts = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
json_objects = st.dictionaries(
    st.text(max_size=5),
    st.recursive(
        st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=6),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=6,
    ),
    max_size=4,
)
signatures = st.binary(min_size=3, max_size=24).map(lambda b: b.hex())


def _split(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at any characters into non-empty pieces."""
    if len(text) < 2:
        return [text]
    cuts = sorted(set(draw(st.lists(st.integers(1, len(text) - 1), max_size=4))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def _call(draw: st.DrawFn, dialect: str, choice: int, index: int) -> list[Any]:
    """The fragments of one tool call: id and the name (maybe in two
    pieces) first, then the arguments cut anywhere."""
    name = draw(names)
    kinds = ["object", "empty"] if dialect in OBJECT_ARGUMENTS else ["object", "empty", "text"]
    kind = draw(st.sampled_from(kinds))
    if kind == "object":
        args = json.dumps(draw(json_objects), ensure_ascii=draw(st.booleans()))
    elif kind == "empty":
        args = ""
    else:
        args = draw(texts)
    call_id = draw(st.none() | st.from_regex(r"call_[A-Za-z0-9]{4}", fullmatch=True))
    name_pieces = _split(draw, name) if draw(st.booleans()) else [name]
    pieces = _split(draw, args) if args else []
    fragments: list[Any] = [ToolCallFragment(choice, index, call_id, name_pieces[0], "")]
    fragments += [ToolCallFragment(choice, index, None, piece, "") for piece in name_pieces[1:]]
    with_name: bool = draw(st.booleans())
    if pieces and with_name:  # arguments begin with the name, as many servers send them
        last = fragments[-1]
        fragments[-1] = ToolCallFragment(choice, index, last.id, last.name, pieces.pop(0))
    fragments += [ToolCallFragment(choice, index, None, None, piece) for piece in pieces]
    return fragments


@st.composite
def _choice(draw: st.DrawFn, dialect: str, choice: int) -> tuple[list[Any], bool]:
    """The events of one choice, and whether it finished."""
    events: list[Any] = []
    if draw(st.booleans()):
        events.append(Delta(choice, "", "assistant"))
    items = draw(st.lists(st.sampled_from(["content", "reasoning", "refusal", "call"]), max_size=5))
    # Runs of one kind of text come as one item: a second run right after
    # the first would be one block (Anthropic) or part (Responses) with it.
    items = [kind for n, kind in enumerate(items) if kind == "call" or n == 0 or items[n - 1] != kind]
    tool = draw(st.integers(0, 3))
    for kind in items:
        if kind == "call":
            events += draw(_call(dialect, choice, tool))
            if dialect == "gemini" and draw(st.booleans()):
                events.append(Continuation(choice, "thought_signature", draw(signatures), tool))
            tool += draw(st.integers(1, 2))
            continue
        text = draw(texts)
        for piece in _split(draw, text):
            if kind == "content":
                events.append(Delta(choice, piece))
            elif kind == "reasoning":
                events.append(Delta(choice, "", None, piece))
            else:
                events.append(Delta(choice, "", None, None, piece))
        if kind == "reasoning" and draw(st.booleans()):
            events.append(_reasoning_continuation(draw, dialect, choice, text))
        elif kind == "content" and dialect == "gemini" and draw(st.booleans()):
            events.append(Continuation(choice, "thought_signature", draw(signatures), None))
    if dialect == "anthropic" and draw(st.booleans()):
        redacted = {"type": "redacted_thinking", "data": draw(signatures)}
        events.append(Continuation(choice, "redacted_thinking", redacted, None))
    if dialect == "openai-responses" and draw(st.booleans()):
        item = {
            "id": "rs_" + draw(signatures),
            "type": "reasoning",
            "summary": [],
            "encrypted_content": draw(signatures),
        }
        events.append(Continuation(choice, "reasoning_item", item, None))
    finished = draw(st.integers(0, 4)) > 0
    if finished:
        reasons = [draw(st.sampled_from(REASONS))]
        if draw(st.integers(0, 4)) == 0:  # a second word, as old Gemini models send (STOP, then RECITATION)
            reasons.append(draw(st.sampled_from([r for r in REASONS if r not in ERROR_REASONS])))
        for reason in reasons:
            events.append(Finish(choice, reason, draw(st.sampled_from(NATIVES[dialect]))))
    if not events:
        events.append(Delta(choice, "", "assistant"))
    return events, finished


def _reasoning_continuation(draw: st.DrawFn, dialect: str, choice: int, text: str) -> Any:
    if dialect == "anthropic":
        data = {"type": "thinking", "thinking": text, "signature": draw(signatures)}
        return Continuation(choice, "thinking", data, None)
    if dialect == "openai-responses":
        item: dict[str, Any] = {"id": "rs_x", "type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}
        return Continuation(choice, "reasoning_item", {**item, "encrypted_content": draw(signatures)}, None)
    return Continuation(choice, "thinking", {"type": "thinking", "thinking": text, "signature": "s"}, None)


def _usage(draw: st.DrawFn, dialect: str) -> Usage:
    prompt, completion = draw(st.integers(0, 5000)), draw(st.integers(0, 5000))
    total = prompt + completion + draw(st.sampled_from([0, 0, 7]))
    cached = draw(st.integers(0, prompt))
    shapes: dict[str, dict[str, Any]] = {
        "openai-chat": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": total,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
        "openai-responses": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": completion,
            "total_tokens": total,
        },
        "anthropic": {"input_tokens": prompt - cached, "cache_read_input_tokens": cached, "output_tokens": completion},
        "gemini": {"promptTokenCount": prompt, "candidatesTokenCount": completion, "totalTokenCount": total},
    }
    raw = draw(st.sampled_from([{}, shapes[draw(st.sampled_from(DIALECTS))], shapes[dialect]]))
    return Usage(prompt, completion, total, raw)


@st.composite
def event_streams(draw: st.DrawFn, dialect: str) -> list[Any]:
    """A stream of chat events that ``dialect`` can say (module docstring)."""
    indexes = [0] if dialect in ONE_CHOICE else draw(st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True))
    plans = [draw(_choice(dialect, i)) for i in indexes]
    queues = [events for events, _ in plans]
    events: list[Any] = []
    while any(queues):  # interleave the choices, each in its own order
        queue = draw(st.sampled_from([q for q in queues if q]))
        events.append(queue.pop(0))
    for _ in range(draw(st.integers(0, 2))):
        events.insert(draw(st.integers(0, len(events))), _usage(draw, dialect))
    if draw(st.integers(0, 3)) == 0:
        error = StreamError(
            None, draw(st.none() | st.sampled_from(["503", "rate_limited"])), draw(texts), draw(st.none() | names)
        )
        events.insert(draw(st.integers(0, len(events))), error)
    for _ in range(draw(st.integers(0, 2))):
        events.insert(draw(st.integers(0, len(events))), Heartbeat(draw(st.sampled_from(["ping", "", "keep-alive"]))))
    every_finished = all(finished for _, finished in plans)
    if draw(st.booleans()):
        events.append(Done(draw(st.booleans())))
    else:
        events.append(Truncated("partial-event" if every_finished else "eof-before-done", draw(st.integers(0, 9))))
    return events


# -- what the round trip compares ------------------------------------------------------------------------


def fold(event: Any, dialect: str) -> Any:
    """``event`` as ``dialect`` says it: refusal text is content in the APIs
    that have no refusal text."""
    if type(event) is Delta and event.refusal and dialect in ("anthropic", "gemini"):
        return Delta(event.choice, event.content + event.refusal, event.role, event.reasoning, None, event.logprobs)
    return event


def _value(arguments: str, dialect: str) -> Any:
    """Arguments as compared: a JSON value when they parse (``""`` is ``{}``
    where the API writes arguments as objects), else the text."""
    if not arguments and dialect in ("anthropic", "gemini"):
        return {}
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _finish(reasons: list[str], made_calls: bool, dialect: str) -> str | None:
    if dialect == "openai-chat":
        return reasons[-1] if reasons else None
    if dialect == "openai-responses":
        if not reasons:
            return None
        if any(r in ERROR_REASONS for r in reasons):
            return "error"
        reason = reasons[-1]
    else:
        kept = [r for r in reasons if r not in ERROR_REASONS]
        if not kept:
            return None
        reason = kept[-1]
    if reason in ("length", "content_filter") or (reason == "tool_calls" and dialect == "anthropic"):
        return reason  # Anthropic has a word of its own for tool_calls (tool_use); for stop only with no calls
    if reason in ("stop", "tool_calls") or dialect == "openai-responses":
        return "tool_calls" if made_calls else "stop"
    return reason


def summary(acc: Accumulator, dialect: str, reasons: dict[int, list[str]] | None = None) -> dict[str, Any]:
    """What an Accumulator assembled, in the terms the round trip compares.
    With ``reasons`` (the finish reasons fed, per choice) the finish reason
    is the one ``dialect`` would report."""
    choices = {}
    for i, c in acc.choices.items():
        calls = [(t.name, _value(t.arguments, dialect), t.id) for t in c.tool_calls]
        finish = c.finish_reason if reasons is None else _finish(reasons.get(i, []), bool(calls), dialect)
        choices[i] = {
            "content": c.content,
            "reasoning": c.reasoning,
            "refusal": c.refusal,
            "tool_calls": calls,
            "finish_reason": finish,
        }
    usage = acc.usage
    return {
        "choices": choices,
        "usage": None if usage is None else (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
        "outcome": acc.outcome,
    }


def expected(events: list[Any], dialect: str) -> dict[str, Any]:
    """What ``ChatStream(dialect=...)`` over an ``Encoder(dialect)``'s writing
    of ``events`` must assemble (module docstring)."""
    acc = Accumulator()
    reasons: dict[int, list[str]] = {}
    for event in events:
        acc.feed(fold(event, dialect))
        if type(event) is Finish:
            reasons.setdefault(event.choice, []).append(event.reason)
    result = summary(acc, dialect, reasons)
    usage = acc.usage
    if dialect == "anthropic":
        prompt, completion = (0, 0) if usage is None else (usage.prompt_tokens, usage.completion_tokens)
        result["usage"] = (prompt, completion, prompt + completion) if acc.choices else None
    elif dialect == "openai-responses" and not (reasons.get(0) and any(type(e) in (Done, Truncated) for e in events)):
        result["usage"] = None  # no terminal event (no finish, or no end fed): nowhere to say it or the finish
        if 0 in result["choices"]:
            result["choices"][0]["finish_reason"] = None
    return result


# -- the steps of every encoder test -------------------------------------------------------------------


def write(dialect: str, events: list[Any], **options: Any) -> list[bytes]:
    """What an ``Encoder(dialect, **options)`` returns for each event."""
    encoder = Encoder(dialect, **options)
    return [encoder.feed(event) for event in events]


def read_back(dialect: str, body: bytes) -> tuple[Accumulator, list[Any]]:
    """``body`` read by ``ChatStream(dialect=...)``: the Accumulator and the events."""
    events = feed_all(ChatStream(dialect=dialect), [body] if body else [])[:-1]
    acc = Accumulator()
    for event in events:
        acc.feed(event)
    return acc, events


def payloads(body: bytes) -> list[Any]:
    """The JSON payloads of an event stream's ``data:`` lines."""
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith(b"data:") and line != b"data: [DONE]"]
