"""AnthropicWriter: chat events as an Anthropic Messages stream.

Theory of operation
-------------------
A Messages stream is one answer (choice 0; events of another choice are
refused) made of content blocks written one after another:
``message_start``, then per block ``content_block_start``, its deltas and
``content_block_stop``, then ``message_delta`` with the stop reason and the
usage, then ``message_stop``.  The writer keeps the block that is open and
opens another when the kind of text changes:

* reasoning goes into a ``thinking`` block, content into a ``text`` block;
  refusal text too, since the API has no refusal text (a refusal is a stop
  reason: ``content_filter`` is written ``refusal``);
* a tool call is a ``tool_use`` block whose input streams as
  ``input_json_delta`` fragments.  The block must start with the call's id
  and whole name, so a call is held (nothing written) until its first
  fragment with arguments, or until anything else comes; a name fragment
  after that (other than a repeat of the whole name) and a fragment of a call
  whose block has closed are refused.  Calls without an id get one
  (``toolu_...``, see ``Writer.ident``);
* a ``Continuation`` of Anthropic's own is written back where it came
  from: a ``thinking`` one ends the open thinking block with its
  ``signature_delta`` (or is written as a whole thinking block when none is
  open), a ``redacted_thinking`` one is a block of its own.

``message_start`` goes out with the first event of the answer, carrying the
usage known then (zero counts when none: the SDK needs the object).  Later
usage waits for the ``message_delta`` of the ``Finish``; usage that arrives
after it is written in another ``message_delta`` that repeats the stop
reason (the format allows several), and usage never written by the end goes
out in one before it.  An error finish (``error``,
``insufficient_system_resource``) is written as the API says errors: an
``error`` event, with no stop reason.  ``Done`` writes ``message_stop``
(the stream is then cut if the answer had not finished, as the one it came
from); ``Done`` before anything started writes an empty, finished answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._anthropic import stop_reason
from ._events import Continuation, Delta, Done, Finish, Heartbeat, StreamError, ToolCallFragment, Truncated, Usage
from ._writer import ERROR_REASONS, Call, Refused, Writer, dumps, json_text, native_or, sse, usage_object

__all__ = ["AnthropicWriter"]

_STOP_WORDS = frozenset(
    {"end_turn", "stop_sequence", "tool_use", "max_tokens", "model_context_window_exceeded", "refusal", "pause_turn"}
)
_WORDS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}
_PING = sse(dumps({"type": "ping"}, (", ", ": ")), "ping")


class _Block:
    """The open content block: its kind, its index, its call (tool_use)."""

    __slots__ = ("call", "index", "kind")

    def __init__(self, kind: str, index: int, call: Call | None = None) -> None:
        self.kind = kind
        self.index = index
        self.call = call


class AnthropicWriter(Writer):
    """Write an Anthropic Messages stream (see the module docstring)."""

    dialect = "anthropic"
    one_choice = True

    def __init__(self, model: str | None, response_id: str | None, created: int | None) -> None:
        super().__init__(model, response_id, created)
        self._started = False
        self._block: _Block | None = None
        self._held: Call | None = None
        self._blocks = 0  # content blocks written
        self._tools: set[int] = set()  # wire indexes of calls whose block was written
        self._stop: str | None = None  # the stop reason written
        self._finished = False
        self._usage: dict[str, Any] | None = None
        self._unsent = False  # usage known that no event has carried yet

    # -- the frame ------------------------------------------------------------------------------

    @staticmethod
    def _event(kind: str, **fields: Any) -> bytes:
        return sse(dumps({"type": kind, **fields}), kind)

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        self._unsent = False
        message: dict[str, Any] = {
            "id": self.response_id or "",
            "type": "message",
            "role": "assistant",
            "model": self.model or "",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self._usage or {"input_tokens": 0, "output_tokens": 0},
        }
        return self._event("message_start", message=message)

    def _message_delta(self) -> bytes:
        self._unsent = False
        return self._event(
            "message_delta",
            delta={"stop_reason": self._stop, "stop_sequence": None},
            usage=self._usage or {"output_tokens": 0},
        )

    # -- blocks -------------------------------------------------------------------------------------

    def _open(self, kind: str, block: dict[str, Any], call: Call | None = None) -> bytes:
        self._block = _Block(kind, self._blocks, call)
        self._blocks += 1
        return self._event("content_block_start", index=self._block.index, content_block=block)

    def _close(self) -> bytes:
        if self._block is None:
            return b""
        index, self._block = self._block.index, None
        return self._event("content_block_stop", index=index)

    def _unhold(self) -> bytes:
        """Start the block of the held call, if one is held."""
        call = self._held
        if call is None:
            return b""
        self._held = None
        self._tools.add(call.index)
        out = self._close()
        block = {"type": "tool_use", "id": call.id or self.ident("toolu", self._blocks), "name": "".join(call.name)}
        return out + self._open("tool_use", {**block, "input": {}}, call)

    def _settle(self) -> bytes:
        """End whatever is open: the held call (started first) and the block."""
        return self._unhold() + self._close()

    def _into(self, kind: str) -> bytes:
        """Make sure a block of ``kind`` (text or thinking) is the open one."""
        out = self._unhold()
        if self._block is not None and self._block.kind == kind:
            return out
        out += self._close()
        fresh = (
            {"type": "text", "text": ""} if kind == "text" else {"type": "thinking", "thinking": "", "signature": ""}
        )
        return out + self._open(kind, fresh)

    def _delta(self, **delta: Any) -> bytes:
        assert self._block is not None
        return self._event("content_block_delta", index=self._block.index, delta=delta)

    # -- events ---------------------------------------------------------------------------------------

    def delta(self, event: Delta) -> bytes:
        out = self._start()
        if event.reasoning:
            out += self._into("thinking") + self._delta(type="thinking_delta", thinking=event.reasoning)
        text = event.content + (event.refusal or "")
        if text:
            out += self._into("text") + self._delta(type="text_delta", text=text)
        return out

    def fragment(self, event: ToolCallFragment) -> bytes:
        block, held, index = self._block, self._held, event.index
        if block is not None and block.call is not None and block.call.index == index:
            if event.name and event.name != "".join(block.call.name):
                raise Refused(
                    f"tool call {index} has its block started with the name {''.join(block.call.name)!r}; "
                    f"a tool_use block cannot take the name fragment {event.name!r}"
                )
            return self._delta(type="input_json_delta", partial_json=event.arguments) if event.arguments else b""
        if held is None or held.index != index:
            if index in self._tools:
                raise Refused(f"the block of tool call {index} has closed; Anthropic writes one block at a time")
            out = self._start() + self._settle()
            held = self._held = Call(index)
        else:
            out = b""
        held.take(event.id, event.name)
        if event.arguments:
            out += self._unhold() + self._delta(type="input_json_delta", partial_json=event.arguments)
        return out

    def finish(self, event: Finish) -> bytes:
        out = self._start() + self._settle()
        self._finished = True
        if event.reason in ERROR_REASONS:
            self._stop = None
            return out + self._error("api_error", f"the answer ended with finish reason {event.reason!r}")
        made_calls = bool(self._tools)
        word = _WORDS.get(event.reason, event.reason)
        self._stop = native_or(event.native, event.reason, _STOP_WORDS, lambda n: stop_reason(n, made_calls), word)
        return out + self._message_delta()

    def usage(self, event: Usage) -> bytes:
        self._usage = usage_object(self.dialect, event)
        if self._finished and self._stop is not None:
            return self._message_delta()
        self._unsent = self._started
        return b""

    def done(self, event: Done) -> bytes:
        if not self._started:
            if self.errored:
                return b""  # an error ended the stream before any answer
            self._stop = "end_turn"
            return self._start() + self._message_delta() + self._event("message_stop")
        out = self._settle()
        if self._unsent:
            out += self._message_delta()
        return out + self._event("message_stop")

    def truncated(self, event: Truncated) -> bytes:
        out = self._unhold()
        if self._unsent:
            out += self._message_delta()
        return out

    def heartbeat(self, event: Heartbeat) -> bytes:
        return _PING

    def error(self, event: StreamError) -> bytes:
        return self._error(event.type or "api_error", event.message)

    def _error(self, kind: str, message: str) -> bytes:
        self.errored = True
        return sse(dumps({"type": "error", "error": {"type": kind, "message": message}}, (", ", ": ")), "error")

    def continuation(self, event: Continuation) -> bytes:
        if event.kind not in ("thinking", "redacted_thinking"):
            return b""  # another API's data: Anthropic has no place for it
        data = event.data
        if not isinstance(data, Mapping):
            raise Refused(f"the data of a {event.kind!r} Continuation must be an object, not {type(data).__name__}")
        json_text(data, f"the data of a {event.kind!r} Continuation")
        if event.kind == "redacted_thinking":
            block = {"type": "redacted_thinking", **{k: v for k, v in data.items() if k != "type"}}
            return self._start() + self._settle() + self._open("redacted_thinking", block) + self._close()
        thinking, signature = data.get("thinking", ""), data.get("signature", "")
        if type(thinking) is not str or type(signature) is not str:
            raise Refused("the thinking and signature of a 'thinking' Continuation must be strings")
        out = self._start()
        if self._held is not None or self._block is None or self._block.kind != "thinking":
            out += self._into("thinking")
            if thinking:
                out += self._delta(type="thinking_delta", thinking=thinking)
        if signature:
            out += self._delta(type="signature_delta", signature=signature)
        return out + self._close()
