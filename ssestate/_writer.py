"""Writer: what the writers of every streaming API share.

Theory of operation
-------------------
An ``Encoder`` owns one writer, the mirror image of a reader (``_reader.py``):
each chat event goes to the writer's method of that event's type, which
updates what the format must remember and returns the bytes to send now.
One writer per API (``_write_chat.py``, ``_write_responses.py``,
``_write_anthropic.py``, ``_write_gemini.py``); here is what they share:

* how a payload becomes bytes (``dumps``, ``sse``): JSON without ASCII
  escapes and without NaN, one ``data:`` line (JSON text never holds a line
  break), the ``event:`` line of the formats that have one;
* ``Refused``: what a writer raises for an event its API cannot carry, or
  for data that cannot be written.  A writer raises it before it changes any
  state, so the event is refused whole and the writer stays usable; the
  ``Encoder`` turns it into a ``LocalProtocolError`` that says which event;
* usage in each API's own words (``usage_object``): the ``raw`` object of a
  ``Usage`` is written again when it is already in the target's shape and
  reads back to the same counts (so a stream re-encoded into its own API
  keeps its cache and detail counts); otherwise the object is built from the
  counts, with the cached-prompt and reasoning counts that any of the four
  shapes names;
* the finish words (``native_or``): the server's own word (``Finish.native``)
  is written when it belongs to the target's vocabulary and the target's
  reader maps it back to the same reason; otherwise the target's word for
  the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar

from ._events import Continuation, Delta, Done, Finish, Heartbeat, StreamError, ToolCallFragment, Truncated, Usage

__all__ = [
    "ERROR_REASONS",
    "Call",
    "Refused",
    "Writer",
    "add_name",
    "dumps",
    "json_text",
    "native_or",
    "sse",
    "usage_object",
]

# Finish reasons that mean the server gave up (the Accumulator's error reasons).
ERROR_REASONS = frozenset({"error", "insufficient_system_resource"})


class Refused(Exception):
    """An event the target cannot carry (the message says why)."""


def dumps(value: object, separators: tuple[str, str] = (",", ":")) -> str:
    """``value`` as JSON text, raw UTF-8 kept; NaN is refused (callers have
    checked the data they were handed, see ``json_text``)."""
    return json.dumps(value, ensure_ascii=False, separators=separators, allow_nan=False)


def json_text(value: object, what: str) -> str:
    """``value`` as JSON text, or ``Refused`` naming ``what`` when it cannot
    be written (a type JSON has no word for, NaN, a cycle, a lone
    surrogate)."""
    try:
        text = dumps(value)
        text.encode()
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else exc
        raise Refused(f"{what} cannot be written as JSON: {reason}") from None
    return text


def sse(data: str, event: str | None = None, newline: str = "\n") -> bytes:
    """One event-stream event: an ``event:`` line when given, one ``data:``
    line (``data`` is JSON text, which holds no line break), the blank line."""
    if event is None:
        return f"data: {data}{newline}{newline}".encode()
    return f"event: {event}{newline}data: {data}{newline}{newline}".encode()


def add_name(parts: list[str], fragment: str | None) -> None:
    """Add a tool name fragment as the Accumulator does: a fragment equal to
    the whole name held is a repeat and is ignored, any other is appended."""
    if fragment and fragment != "".join(parts):
        parts.append(fragment)


class Call:
    """A tool call as a writer keeps it: its wire index, the first id given,
    its name fragments and (for the writers that need them whole) its
    argument fragments."""

    __slots__ = ("arguments", "id", "index", "name")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id: str | None = None
        self.name: list[str] = []
        self.arguments: list[str] = []

    def take(self, call_id: str | None, name: str | None) -> None:
        """Keep the first id and the name as the Accumulator assembles them."""
        if call_id and self.id is None:
            self.id = call_id
        add_name(self.name, name)


def native_or(
    native: str | None, reason: str, vocabulary: Collection[str], mapped: Callable[[str], str], word: str
) -> str:
    """``native`` when it is a word of the target (``vocabulary``) that the
    target's reader maps back to ``reason`` (``mapped``), else ``word``."""
    if native is not None and native in vocabulary and mapped(native) == reason:
        return native
    return word


# -- usage ------------------------------------------------------------------------------------------


def _count(value: object) -> int:
    return value if type(value) is int and value >= 0 else 0


def _nested(raw: Mapping[str, Any], outer: str, inner: str) -> int:
    found = raw.get(outer)
    return _count(found.get(inner)) if isinstance(found, Mapping) else 0


def _shape(raw: Mapping[str, Any]) -> str | None:
    """Which API's usage object ``raw`` is, by the names of its counts."""
    if "prompt_tokens" in raw or "completion_tokens" in raw:
        return "openai-chat"
    if "input_tokens" in raw or "output_tokens" in raw:
        return "openai-responses" if "total_tokens" in raw else "anthropic"
    if "promptTokenCount" in raw or "totalTokenCount" in raw or "candidatesTokenCount" in raw:
        return "gemini"
    return None


def _read_back(dialect: str, raw: Mapping[str, Any]) -> tuple[int, int, int]:
    """The counts the reader of ``dialect`` takes from ``raw`` (SPEC §3b)."""
    if dialect == "openai-chat":
        return _count(raw.get("prompt_tokens")), _count(raw.get("completion_tokens")), _count(raw.get("total_tokens"))
    if dialect == "openai-responses":
        return _count(raw.get("input_tokens")), _count(raw.get("output_tokens")), _count(raw.get("total_tokens"))
    if dialect == "anthropic":
        prompt = sum(
            _count(raw.get(key)) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        completion = _count(raw.get("output_tokens"))
        return prompt, completion, prompt + completion
    completion = _count(raw.get("candidatesTokenCount")) + _count(raw.get("thoughtsTokenCount"))
    return _count(raw.get("promptTokenCount")), completion, _count(raw.get("totalTokenCount"))


def usage_object(dialect: str, usage: Usage) -> dict[str, Any]:
    """``usage`` as the usage object of ``dialect`` (see the module docstring).
    Anthropic has no total: it reads back as prompt + completion."""
    prompt, completion, total = usage.prompt_tokens, usage.completion_tokens, usage.total_tokens
    raw = usage.raw  # a mapping: the Encoder checked
    if _shape(raw) == dialect:
        wanted = (prompt, completion, prompt + completion if dialect == "anthropic" else total)
        if _read_back(dialect, raw) == wanted:
            try:
                json_text(raw, "")
            except Refused:
                pass  # counts alone, below
            else:
                return dict(raw)
    cached = (
        _nested(raw, "prompt_tokens_details", "cached_tokens")
        or _nested(raw, "input_tokens_details", "cached_tokens")
        or _count(raw.get("cache_read_input_tokens"))
        or _count(raw.get("cachedContentTokenCount"))
    )
    reasoning = (
        _nested(raw, "completion_tokens_details", "reasoning_tokens")
        or _nested(raw, "output_tokens_details", "reasoning_tokens")
        or _count(raw.get("thoughtsTokenCount"))
    )
    cached, reasoning = min(cached, prompt), min(reasoning, completion)
    if dialect == "openai-chat":
        built: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
        if cached:
            built["prompt_tokens_details"] = {"cached_tokens": cached}
        if reasoning:
            built["completion_tokens_details"] = {"reasoning_tokens": reasoning}
        return built
    if dialect == "openai-responses":
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": total,
        }
    if dialect == "anthropic":
        return {
            "input_tokens": prompt - cached,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached,
            "output_tokens": completion,
        }
    built = {"promptTokenCount": prompt, "candidatesTokenCount": completion - reasoning, "totalTokenCount": total}
    if reasoning:
        built["thoughtsTokenCount"] = reasoning
    if cached:
        built["cachedContentTokenCount"] = cached
    return built


class Writer:
    """The shared part of every API's writer: its options, and the methods
    each writer has (one per event type; see the module docstring).

    Attributes:
        model, response_id, created: the ``Encoder``'s options.
        errored: an error has been written.
    """

    dialect: ClassVar[str] = ""
    # The API answers with one choice: events of another are refused.
    one_choice: ClassVar[bool] = False

    def __init__(self, model: str | None, response_id: str | None, created: int | None) -> None:
        self.model = model
        self.response_id = response_id
        self.created = created
        self.errored = False

    def ident(self, prefix: str, n: int) -> str:
        """An id the target requires and the events did not give: made from
        the response id (when given) and the place ``n`` of what it names."""
        return f"{prefix}_{self.response_id}_{n}" if self.response_id else f"{prefix}_{n}"

    def delta(self, event: Delta) -> bytes:
        raise NotImplementedError  # pragma: no cover - every writer has its own

    def fragment(self, event: ToolCallFragment) -> bytes:
        raise NotImplementedError  # pragma: no cover - every writer has its own

    def finish(self, event: Finish) -> bytes:
        raise NotImplementedError  # pragma: no cover - every writer has its own

    def usage(self, event: Usage) -> bytes:
        raise NotImplementedError  # pragma: no cover - every writer has its own

    def done(self, event: Done) -> bytes:
        raise NotImplementedError  # pragma: no cover - every writer has its own

    def truncated(self, event: Truncated) -> bytes:
        raise NotImplementedError  # pragma: no cover - every writer has its own

    def heartbeat(self, event: Heartbeat) -> bytes:
        raise NotImplementedError  # pragma: no cover - every writer has its own

    def error(self, event: StreamError) -> bytes:
        raise NotImplementedError  # pragma: no cover - every writer has its own

    def continuation(self, event: Continuation) -> bytes:
        raise NotImplementedError  # pragma: no cover - every writer has its own
