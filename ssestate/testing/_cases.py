"""What a client must make of a generated stream, and the stream itself.

Theory of operation
-------------------
A generated body is a list of ``Block``s (a chunk, a comment, ``[DONE]``, an
error...).  Each block that carries choice entries also carries, beside its
bytes, what each entry *gives* its choice (``Gives``: a text piece, a tool
fragment, a finish reason), written down by the generator as it writes the
entry.  ``fold`` assembles the choices from the gives of the blocks that made
it onto the wire, by the rules of SPEC §4, and ``outcome`` names how the
stream ended: the expectation is never computed by parsing the bytes back,
which would repeat whatever a parser gets wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .. import encode_chunk

__all__ = [
    "Block",
    "ChatCase",
    "Entry",
    "Expected",
    "ExpectedChoice",
    "ExpectedError",
    "ExpectedToolCall",
    "Gives",
    "data_line",
    "first_of",
    "fold",
    "last_usage",
    "outcome",
    "serialize",
]

_ERROR_REASONS = frozenset({"error", "insufficient_system_resource"})

# --- what a client must build ---------------------------------------------------------------


@dataclass
class ExpectedToolCall:
    """A tool call as a client must assemble it.

    Attributes:
        index: the tool index (``tool_calls[].index``, or the position
            when the server sent none).
        id: the first non-empty id sent, or None.
        name: the function name, its pieces joined.
        arguments: the argument fragments joined, exactly as sent.
        value: ``arguments`` decoded, or None when the stream stopped
            before they were whole.
    """

    index: int
    id: str | None
    name: str
    arguments: str
    value: Any

    def to_dict(self) -> dict[str, Any]:
        """The call as an assistant message's ``tool_calls[]`` entry."""
        out: dict[str, Any] = {"type": "function", "function": {"name": self.name, "arguments": self.arguments}}
        return out if self.id is None else {"id": self.id, **out}


@dataclass
class ExpectedChoice:
    """A choice as a client must assemble it (one that some byte of the
    stream started: a role, a text, a tool fragment or a finish reason)."""

    index: int
    role: str | None = None
    content: str = ""
    reasoning: str | None = None
    refusal: str | None = None
    finish_reason: str | None = None
    tool_calls: list[ExpectedToolCall] = field(default_factory=list)
    logprobs: list[Any] | None = None


@dataclass
class ExpectedError:
    """The error a client must report, as ``ssestate.StreamError`` words it:
    ``code`` as a string (None when absent or empty), ``type`` as sent."""

    message: str
    code: str | None
    type: str | None


@dataclass
class Expected:
    """Everything a correct client makes of one generated body.

    Attributes:
        choices: by wire index, every choice the stream started.
        usage: the usage object that counts (the last non-empty one), or None.
        error: the error reported inside the stream, or None.
        outcome: "complete", "length", "filtered", "truncated" or "error",
            as ``ssestate.Accumulator.outcome`` defines them.
    """

    choices: dict[int, ExpectedChoice]
    usage: dict[str, Any] | None
    error: ExpectedError | None
    outcome: str

    def message(self, index: int = 0) -> dict[str, Any]:
        """Choice ``index`` as the assistant message to send back, in the
        shape ``ssestate.Accumulator.message`` gives."""
        c = self.choices[index]
        msg: dict[str, Any] = {
            "role": c.role or "assistant",
            "content": c.content if c.content or not c.tool_calls else None,
        }
        if c.refusal is not None:
            msg["refusal"] = c.refusal
        if c.tool_calls:
            msg["tool_calls"] = [call.to_dict() for call in c.tool_calls]
        return msg


# --- the stream -------------------------------------------------------------------------------


@dataclass
class Gives:
    """What one choice entry gives its choice, in the assembly rules' terms.
    ``tools`` holds (tool index, id, new name text, arguments fragment); a
    repeated whole name gives no new name text."""

    role: bool = False
    content: str = ""
    reasoning: str = ""
    refusal: str = ""
    tools: list[tuple[int, str | None, str, str]] = field(default_factory=list)
    finish: str | None = None
    logprob: Any = None

    @property
    def starts(self) -> bool:
        """Whether a client sees anything of this entry (an event is due)."""
        return bool(self.role or self.content or self.reasoning or self.refusal or self.tools or self.finish)


Entry = tuple[dict[str, Any], Gives]


@dataclass
class Block:
    """One unit of the body: its bytes and, for a chunk, the object it carries.

    ``kind`` is "chunk", "comment", "blank" (a whitespace-only payload),
    "done", "error" (an error in the stream, in some server's shape) or
    "after-done" (bytes a client must ignore).
    """

    kind: str
    raw: bytes
    payload: dict[str, Any] | None = None
    comment: str | None = None
    gives: list[tuple[int, Gives]] = field(default_factory=list, repr=False)


@dataclass
class ChatCase:
    """A generated body and what a client must make of it.

    ``body`` is the whole response body (status 200, ``text/event-stream``)
    and ``expected`` the answer.  The other attributes say how the body was
    written, for tests that want to look closer.

    Attributes:
        blocks: the body, block by block.
        newline: "\\n" or "\\r\\n".
        space: ``data: `` (True) or ``data:`` (False).
        serializer: "compact", "python" (spaced, ASCII) or "go" (escaped ``<>&``).
        expected: what a client must build.
        ending: how the stream ends, as ``ChatStream`` reports it: "done"
            (``[DONE]``), "clean-eof" (every started choice finished),
            "eof-before-done" or "partial-event" (cut inside an event).
        pending: for "partial-event", the bytes of the unfinished event.
        response_id, model, created: the metadata of the first chunk that
            has them (None when no chunk got through).
        heartbeats: the comments, in order.
    """

    blocks: list[Block]
    newline: str
    space: bool
    serializer: str
    expected: Expected
    ending: str
    pending: int
    response_id: str | None
    model: str | None
    created: int | None
    heartbeats: list[str]

    @property
    def body(self) -> bytes:
        return b"".join(block.raw for block in self.blocks)

    @property
    def choices(self) -> dict[int, ExpectedChoice]:
        return self.expected.choices

    @property
    def usage(self) -> dict[str, Any] | None:
        return self.expected.usage

    @property
    def outcome(self) -> str:
        return self.expected.outcome

    @property
    def payloads(self) -> list[dict[str, Any]]:
        """The chunk objects, in wire order."""
        return [block.payload for block in self.blocks if block.payload is not None]

    def encode_payload(self, payload: Any) -> bytes:
        """Write ``payload`` (any JSON value) the way this stream writes chunks."""
        return data_line(serialize(payload, self.serializer), self.newline, self.space)

    def __repr__(self) -> str:
        return f"ChatCase(body={self.body!r}, expected={self.expected!r})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        # How hypothesis prints a counterexample: the body one block per
        # line, as a capture reads, then the expectation.
        p.text("ChatCase(")
        with p.indent(4):
            p.break_()
            p.text("body=b''.join([")
            with p.indent(4):
                for block in self.blocks:
                    p.break_()
                    p.text(f"{block.raw!r},")
            p.break_()
            p.text("]),")
            p.break_()
            p.text("expected=")
            p.pretty(self.expected)
            p.text(",")
        p.break_()
        p.text(")")


def serialize(payload: Any, serializer: str) -> str:
    if serializer == "python":  # json.dumps defaults: spaces, \\u escapes
        return json.dumps(payload)
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    if serializer == "go":  # encoding/json escapes these three inside strings
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return text


def data_line(text: str, newline: str, space: bool) -> bytes:
    raw = encode_chunk(text, newline=newline)
    return raw if space else b"data:" + raw[6:]


# --- the expectation ------------------------------------------------------------------------


def fold(
    blocks: list[Block], wholes: dict[tuple[int, int], ExpectedToolCall]
) -> tuple[dict[int, ExpectedChoice], set[str]]:
    """The choices that the gives of ``blocks`` assemble to, and every finish
    reason they gave (a reason replaced by a later one still counts)."""
    reasons: set[str] = set()
    choices: dict[int, ExpectedChoice] = {}
    calls: dict[tuple[int, int], ExpectedToolCall] = {}
    for block in blocks:
        for label, gives in block.gives:
            if not gives.starts:
                continue
            c = choices.setdefault(label, ExpectedChoice(label))
            if gives.role:
                c.role = "assistant"
            c.content += gives.content
            if gives.reasoning:
                c.reasoning = (c.reasoning or "") + gives.reasoning
            if gives.refusal:
                c.refusal = (c.refusal or "") + gives.refusal
            if gives.logprob is not None:
                c.logprobs = [*(c.logprobs or []), gives.logprob]
            for index, call_id, name, arguments in gives.tools:
                call = calls.get((label, index))
                if call is None:
                    call = calls[label, index] = ExpectedToolCall(index, None, "", "", None)
                    c.tool_calls.append(call)
                call.id = call.id or call_id
                call.name += name
                call.arguments += arguments
            if gives.finish is not None:
                c.finish_reason = gives.finish
                reasons.add(gives.finish)
    for (label, index), call in calls.items():
        whole = wholes[label, index]
        call.value = whole.value if call.arguments == whole.arguments else None
    for c in choices.values():
        c.tool_calls.sort(key=lambda call: call.index)
    return choices, reasons


def outcome(choices: dict[int, ExpectedChoice], given: set[str], error: ExpectedError | None, ending: str) -> str:
    """``Accumulator.outcome`` for these choices, finish reasons ever given,
    error and ending (SPEC §4)."""
    reasons = {c.finish_reason for c in choices.values()}
    if error is not None or given & _ERROR_REASONS:
        return "error"
    if None in reasons or ending == "eof-before-done" or (ending == "partial-event" and not choices):
        return "truncated"
    if "length" in reasons:
        return "length"
    if "content_filter" in reasons:
        return "filtered"
    return "complete"


def last_usage(payloads: list[dict[str, Any]]) -> dict[str, Any] | None:
    usage = None
    for payload in payloads:
        for candidate in (payload.get("usage"), (payload.get("x_groq") or {}).get("usage")):
            if candidate:
                usage = candidate
    return usage


def first_of(payloads: list[dict[str, Any]], key: str) -> Any:
    return next((p[key] for p in payloads if p.get(key)), None)
