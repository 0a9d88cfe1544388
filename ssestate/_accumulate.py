"""Accumulator: chat events in, the finished message of every choice out.

Theory of operation
-------------------
``ChatStream`` hands out small pieces (``Delta``, ``ToolCallFragment``,
``Finish``, ``Usage``, ...); ``Accumulator.feed`` folds each one into a
per-choice builder, and the result can be read at any moment, mid-stream
included.

* Choices are kept in a dict keyed by the wire's ``choices[].index`` (never
  an array position), in the order they were first seen, so a stream that
  only ever carries choice 1, or carries 1 before 0, needs no padding.
* Text arrives in thousands of fragments, so each text field (content,
  reasoning, refusal, a tool call's name and arguments) collects its
  fragments in a list and joins them when read; the joined string replaces
  the list, so reading twice costs nothing and appending stays O(1).  A
  name fragment is compared with the whole name (a repeat is ignored) only
  when it is as long as the name, so a name sent a character at a time
  costs no join per fragment.
* Assembly rules (SPEC §4): ``role`` is assigned, never appended; a tool
  call's ``id`` is the first non-empty one; a ``name`` fragment equal to the
  whole name already held is a repeat and is ignored, any other is appended
  (servers split names, and others repeat them on every fragment); argument
  fragments are appended as they come and parsed only when asked.
* ``outcome`` is derived when read from a few facts recorded as events
  arrive: the first ``StreamError``, whether a choice ever finished with an
  error reason, the first ``Done`` / ``Truncated`` and whether a started
  choice was still unfinished when one of them came.  A started choice is
  one an event was fed for; ``Truncated("eof-before-done")`` counts as cut
  whatever was fed, since ``ChatStream`` sends it only when a choice it saw
  start (if only with empty deltas) never finished, or none started.
* ``feed`` runs once per event, so it tests the two frequent types (``Delta``,
  ``ToolCallFragment``) inline and sends the rare ones through a dict keyed
  by type.  ``Heartbeat`` and the ``NEED_DATA`` / ``CLOSED`` sentinels are
  accepted and ignored, so a loop can feed everything ``next_event()``
  returns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

from ._events import (
    ChatEvent,
    Continuation,
    Delta,
    Done,
    Finish,
    Heartbeat,
    StreamError,
    ToolCallFragment,
    Truncated,
    Usage,
)
from ._replay import replay
from ._util import Sentinel, copied

__all__ = ["Accumulator", "Choice", "Outcome", "ToolArgumentsError", "ToolCall"]

Outcome = Literal["error", "in-progress", "truncated", "length", "filtered", "complete"]

# Finish reasons that mean the server gave up on the answer: OpenRouter's
# "error" (sent beside a mid-stream error object) and DeepSeek's
# "insufficient_system_resource".
_ERROR_REASONS = frozenset({"error", "insufficient_system_resource"})


def _joined(parts: list[str]) -> str:
    """Join ``parts`` and keep the result as the list's only element."""
    if len(parts) > 1:
        text = "".join(parts)
        parts.clear()
        parts.append(text)
        return text
    return parts[0] if parts else ""


class ToolArgumentsError(json.JSONDecodeError):
    """A tool call's arguments are not JSON.

    A subclass of ``json.JSONDecodeError`` (hence of ``ValueError``): ``msg``
    names the tool call and says what is wrong, ``doc`` is the arguments
    text, ``pos`` / ``lineno`` / ``colno`` locate the error in it.

    Attributes:
        tool_call: the ``ToolCall`` whose arguments failed to parse.
    """

    tool_call: ToolCall | None = None


class ToolCall:
    """One tool call of one choice, as assembled so far.

    Attributes:
        index: the tool call's index on the wire (``tool_calls[].index``).
        id: the first non-empty id sent for it; None when the server sent none.
        name: the function name; "" until a fragment carries one.
    """

    __slots__ = ("_args", "_name", "_name_size", "id", "index")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id: str | None = None
        self._name: list[str] = []
        self._name_size = 0
        self._args: list[str] = []

    @property
    def name(self) -> str:
        """The function name: its fragments joined; "" until one comes."""
        return _joined(self._name)

    def _add_name(self, fragment: str) -> None:
        """Append a name fragment, unless it repeats the whole name held (a
        repeat can only be as long as the name: other fragments cost no join)."""
        if len(fragment) != self._name_size or fragment != _joined(self._name):
            self._name.append(fragment)
            self._name_size += len(fragment)

    @property
    def arguments(self) -> str:
        """The argument fragments joined, as raw text (JSON when complete)."""
        return _joined(self._args)

    def parsed_arguments(self) -> Any:
        """Parse ``arguments`` as JSON and return the result.

        Raises:
            ToolArgumentsError: the arguments are not (yet) valid JSON, or are
                nested too deeply to parse; the message names the tool call
                and the position of the error.
        """
        text = self.arguments
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            err = ToolArgumentsError(f"{self._describe()} has arguments that are not JSON: {exc.msg}", text, exc.pos)
        except RecursionError:
            err = ToolArgumentsError(f"{self._describe()} has arguments nested too deeply to parse", text, 0)
        err.tool_call = self
        raise err

    def to_dict(self) -> dict[str, Any]:
        """The call in the shape of an assistant message's ``tool_calls[]``
        entry; ``id`` is left out when the server sent none."""
        out: dict[str, Any] = {"type": "function", "function": {"name": self.name, "arguments": self.arguments}}
        if self.id is not None:
            out = {"id": self.id, **out}
        return out

    def _describe(self) -> str:
        return f"tool call {self.index} (name {self.name!r}, id {self.id!r})"

    def __repr__(self) -> str:
        return f"ToolCall(index={self.index}, id={self.id!r}, name={self.name!r}, arguments={self.arguments!r})"


class Choice:
    """One choice's message as assembled so far.

    Attributes:
        index: the choice's index on the wire (``choices[].index``).
        role: the latest role sent; None until one is.
        finish_reason: the latest finish reason, exactly as the server sent
            it; None while the choice is unfinished.
        native_finish_reason: the server's own word for it when
            ``finish_reason`` was mapped from another API's vocabulary
            (``Finish.native``), else None.
        continuations: the ``Continuation`` events of the choice, in order:
            what its API wants back in the next request.
        logprobs: the ``logprobs.content`` token entries of every fragment,
            concatenated; None when no fragment carried any.
    """

    __slots__ = (
        "_content",
        "_reasoning",
        "_refusal",
        "_tools",
        "continuations",
        "finish_reason",
        "index",
        "logprobs",
        "native_finish_reason",
        "role",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.role: str | None = None
        self.finish_reason: str | None = None
        self.native_finish_reason: str | None = None
        self.continuations: list[Continuation] = []
        self.logprobs: list[Any] | None = None
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._tools: dict[int, ToolCall] = {}

    @property
    def content(self) -> str:
        """The content fragments joined; "" when there were none."""
        return _joined(self._content)

    @property
    def reasoning(self) -> str | None:
        """The reasoning fragments joined; None when there were none."""
        return _joined(self._reasoning) if self._reasoning else None

    @property
    def refusal(self) -> str | None:
        """The refusal fragments joined; None when there were none."""
        return _joined(self._refusal) if self._refusal else None

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls, ordered by their wire index."""
        tools = self._tools
        return [tools[i] for i in sorted(tools)]

    def _add_logprobs(self, logprobs: object) -> None:
        tokens = logprobs.get("content") if isinstance(logprobs, Mapping) else None
        if isinstance(tokens, list):
            if self.logprobs is None:
                self.logprobs = []
            self.logprobs.extend(tokens)

    def __repr__(self) -> str:
        return (
            f"Choice(index={self.index}, role={self.role!r}, content={self.content!r}, "
            f"reasoning={self.reasoning!r}, refusal={self.refusal!r}, tool_calls={self.tool_calls!r}, "
            f"finish_reason={self.finish_reason!r})"
        )


class Accumulator:
    """Build the final message(s) of a chat-completion stream from its events.

    Feed it every event ``ChatStream.next_event()`` returns (heartbeats and
    the ``NEED_DATA`` / ``CLOSED`` sentinels are ignored)::

        acc = Accumulator()
        for event in events:
            acc.feed(event)
        acc.choices[0].content, acc.usage, acc.outcome

    Attributes:
        usage: the last ``Usage`` event, or None.
        error: the first ``StreamError`` event, or None.
        done: the first ``Done`` event, or None.
        truncated: the first ``Truncated`` event, or None.
    """

    __slots__ = ("_choices", "_cut", "_errored", "done", "error", "truncated", "usage")

    def __init__(self) -> None:
        self._choices: dict[int, Choice] = {}
        self.usage: Usage | None = None
        self.error: StreamError | None = None
        self.done: Done | None = None
        self.truncated: Truncated | None = None
        # A choice finished with an error reason (sticky: a later reason
        # does not undo that the server gave up).
        self._errored = False
        # Done/Truncated came while a started choice was unfinished.
        self._cut = False

    def __copy__(self) -> Accumulator:
        """An independent accumulator with the same result so far: as with
        the parsers, a copy shares nothing mutable, so feeding one never
        moves the other.

        Raises:
            TypeError: it holds data nested deeper than Python can copy.
        """
        return copied(self)

    @property
    def choices(self) -> Mapping[int, Choice]:
        """The choices seen so far: a mapping keyed by the wire's choice
        index (not a list position), in the order first seen."""
        return self._choices

    def feed(self, event: ChatEvent | Sentinel) -> None:
        """Fold one chat event into the result.

        Raises:
            TypeError: ``event`` is not a chat event or a sentinel.
        """
        if type(event) is Delta:
            choice = self._choices.get(event.choice)
            if choice is None:
                choice = self._choices[event.choice] = Choice(event.choice)
            if event.content:
                choice._content.append(event.content)
            if event.role:
                choice.role = event.role
            if event.reasoning:
                choice._reasoning.append(event.reasoning)
            if event.refusal:
                choice._refusal.append(event.refusal)
            if event.logprobs is not None:
                choice._add_logprobs(event.logprobs)
        elif type(event) is ToolCallFragment:
            choice = self._choices.get(event.choice)
            if choice is None:
                choice = self._choices[event.choice] = Choice(event.choice)
            call = choice._tools.get(event.index)
            if call is None:
                call = choice._tools[event.index] = ToolCall(event.index)
            if event.id and call.id is None:
                call.id = event.id
            if event.name:
                call._add_name(event.name)
            if event.arguments:
                call._args.append(event.arguments)
        else:
            handler = _HANDLERS.get(type(event))
            if handler is None:
                raise TypeError(f"Accumulator.feed() takes chat events, not {type(event).__name__}")
            handler(self, event)

    @property
    def outcome(self) -> Outcome:
        """How the stream ended, the first that applies:

        "error" (a ``StreamError``, or a choice finished with ``error`` or
        ``insufficient_system_resource``), "in-progress" (no ``Done`` or
        ``Truncated`` yet), "truncated" (the stream ended while a started
        choice was unfinished, or ``Truncated`` came before any choice
        started), "length", "filtered" (a choice finished with ``length`` /
        ``content_filter``), else "complete".
        """
        if self.error is not None or self._errored:
            return "error"
        if self.done is None and self.truncated is None:
            return "in-progress"
        if self._cut:
            return "truncated"
        reasons = {choice.finish_reason for choice in self._choices.values()}
        if "length" in reasons:
            return "length"
        if "content_filter" in reasons:
            return "filtered"
        return "complete"

    def message(self, choice: int = 0, *, reasoning_key: str | None = None, dialect: str = "openai-chat") -> Any:
        """Return one choice as the assistant's turn, ready to send back in
        the next request of ``dialect``'s API (see ``_replay.py``): for
        Chat Completions (the default) a message dict whose ``content`` is
        None when the choice only made tool calls, with ``refusal`` and
        ``tool_calls`` when present; for the Responses API a list of input
        items; for Anthropic and Gemini a message with content blocks or
        parts, the continuation data (thinking signatures, redacted
        thinking, thought signatures, encrypted reasoning) in place.
        Reasoning text is left out of a Chat Completions message unless
        ``reasoning_key`` names the field to put it in (some servers want it
        back as ``reasoning_content``, most reject it).

        Raises:
            KeyError: no event for choice ``choice`` was fed.
            ValueError: ``dialect`` is not one ssestate reads.
            ToolArgumentsError: a tool call's arguments are not JSON, for an
                API that takes them parsed (Anthropic, Gemini).
        """
        try:
            c = self._choices[choice]
        except KeyError:
            raise KeyError(f"no choice {choice} in this stream (choices seen: {sorted(self._choices)})") from None
        return replay(c, dialect, reasoning_key)

    def _unfinished(self) -> bool:
        return any(choice.finish_reason is None for choice in self._choices.values())

    def _on_finish(self, event: Finish) -> None:
        choice = self._choices.get(event.choice)
        if choice is None:
            choice = self._choices[event.choice] = Choice(event.choice)
        choice.finish_reason = event.reason
        choice.native_finish_reason = event.native
        if event.reason in _ERROR_REASONS:
            self._errored = True

    def _on_usage(self, event: Usage) -> None:
        self.usage = event

    def _on_done(self, event: Done) -> None:
        if self.done is None:
            self.done = event
        if self._unfinished():
            self._cut = True

    def _on_truncated(self, event: Truncated) -> None:
        if self.truncated is None:
            self.truncated = event
        # "eof-before-done" is ChatStream's own verdict that a choice it saw
        # start (perhaps with nothing but empty deltas, which make no event
        # here) never finished; "partial-event" is judged from what was fed.
        if event.reason == "eof-before-done" or not self._choices or self._unfinished():
            self._cut = True

    def _on_error(self, event: StreamError) -> None:
        if self.error is None:
            self.error = event

    def _on_continuation(self, event: Continuation) -> None:
        choice = self._choices.get(event.choice)
        if choice is None:
            choice = self._choices[event.choice] = Choice(event.choice)
        choice.continuations.append(event)

    def _ignore(self, event: object) -> None:
        pass


_HANDLERS: dict[type, Callable[[Accumulator, Any], None]] = {
    Finish: Accumulator._on_finish,
    Usage: Accumulator._on_usage,
    Done: Accumulator._on_done,
    Truncated: Accumulator._on_truncated,
    StreamError: Accumulator._on_error,
    Continuation: Accumulator._on_continuation,
    Heartbeat: Accumulator._ignore,
    Sentinel: Accumulator._ignore,
}
