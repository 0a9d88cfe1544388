"""AnthropicReader: the Anthropic Messages stream as chat events.

Theory of operation
-------------------
Every payload names itself in its ``type`` member (the SSE ``event:`` line
says the same, and gateways drop it), and the reader dispatches on it
(``handlers``).  The answer is choice 0; a tool call's index is its content
block's ``index``.

* ``message_start`` starts the choice (its role) and carries the first
  usage.  Usage is cumulative and comes in two halves: ``message_start``
  has the input counts, each ``message_delta`` restates some counts (most
  often only ``output_tokens``); the reader merges them field by field, so
  a count that a later event leaves out is never lost, and the prompt is
  the sum of the input, cache-creation and cache-read tokens.
* Content blocks: a ``text`` block's deltas are content, a ``thinking``
  block's are reasoning, a ``tool_use`` block is a tool call whose input
  arrives as ``input_json_delta`` fragments.  A tool with no parameters
  sends one empty fragment and nothing else: at its ``content_block_stop``
  the input it started with (``{}``) is handed out instead, so the
  arguments are always JSON.  Blocks of the server's own tools
  (``server_tool_use``, ``*_tool_result``) are not the caller's calls and
  give nothing.  A thinking block (with its signature) and redacted
  thinking become a ``Continuation`` at their stop, for the next request.
* ``message_delta``'s ``stop_reason`` finishes the choice (mapped onto
  OpenAI's words, the native word kept); ``message_stop`` is the format's
  end marker.  A stream cut after the stop reason is complete (only the
  marker was lost); cut before it, truncated.
* ``ping`` is a ``Heartbeat``; ``error`` (also as the only event of a 200
  response) a ``StreamError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._events import Continuation, Delta, Heartbeat, StreamError, ToolCallFragment, Usage, _fast
from ._reader import TypedReader, compact, count, stream_error, text_of
from ._state import Input
from ._templates import Spec, TemplateKind

__all__ = ["AnthropicReader", "stop_reason"]

_new_content = _fast(Delta, "choice", "content")
_new_delta = _fast(Delta)
_new_arguments = _fast(ToolCallFragment, "choice", "index", "arguments")
_new_fragment = _fast(ToolCallFragment)
_new_usage = _fast(Usage)
_PING = Heartbeat("ping")
_REASONING = ("", None, "", None)  # the fields of a reasoning Delta (the text goes in slot 2)
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


def stop_reason(native: str, made_calls: bool) -> str:
    """An Anthropic stop reason in OpenAI's words (others kept as sent)."""
    reason = _STOP_REASONS.get(native, native)
    return "tool_calls" if reason == "stop" and made_calls else reason


class _Block:
    """What the reader keeps of one content block until its stop."""

    __slots__ = ("input", "kind", "parts", "signature", "start")

    def __init__(self, kind: str, start: dict[str, Any]) -> None:
        self.kind = kind
        self.start = start  # the content_block of content_block_start
        self.parts: list[str] = []  # thinking text, or the tool input's non-empty fragments
        self.signature: str | None = None


class AnthropicReader(TypedReader):
    """Read an Anthropic Messages stream (see the module docstring)."""

    dialect = "anthropic"

    __slots__ = ("_blocks", "_calls", "_usage")

    def __init__(self, strict: bool, locate: Callable[[int], int], limit: int) -> None:
        super().__init__(strict, locate, limit)
        self._blocks: dict[int, _Block] = {}
        self._calls = False  # a tool_use block was seen
        self._usage: dict[str, Any] | None = None  # merged across message_start and message_delta

    def _message_start(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        message = chunk.get("message")
        if type(message) is not dict:
            message = {}
        if self.response_id is None and type(found := message.get("id")) is str and found:
            self.response_id = found
        if self.model is None and type(found := message.get("model")) is str and found:
            self.model = found
        if self._start(0):
            out.append(_new_delta(0, "", "assistant", None, None, None))
        self._merge_usage(message.get("usage"), out)

    def _block_start(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        index, block = chunk.get("index"), chunk.get("content_block")
        if type(index) is not int or type(block) is not dict:
            return
        kind = block.get("type")
        kind = kind if type(kind) is str else ""
        # A template learnt at this index before (from an earlier block, or a
        # delta with no block) notes elsewhere than in the new block's parts.
        self.templates.forget(index)
        self._blocks[index] = _Block(kind, block)
        self._start(0)
        if kind == "text":
            if type(text := block.get("text")) is str and text:
                out.append(_new_content(0, text))
        elif kind == "thinking":
            if type(text := block.get("thinking")) is str and text:
                self._blocks[index].parts.append(text)
                out.append(_new_delta(0, "", None, text, None, None))
        elif kind == "tool_use":
            self._calls = True
            call_id, name = block.get("id"), block.get("name")
            call_id = call_id if type(call_id) is str and call_id else None
            name = name if type(name) is str and name else None
            out.append(_new_fragment(0, index, call_id, name, ""))

    def _block_delta(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        index, delta = chunk.get("index"), chunk.get("delta")
        if type(delta) is not dict:
            return
        block = self._blocks.get(index) if type(index) is int else None
        kind = delta.get("type")
        spec = None
        if kind == "text_delta":
            if type(text := delta.get("text")) is str and text:
                out.append(_new_content(0, text))
                spec = Spec(("delta", "text"), 0)
        elif kind == "thinking_delta":
            if type(text := delta.get("thinking")) is str and text:
                note = None
                if block is not None:
                    note = block.parts
                    note.append(text)
                out.append(_new_delta(0, "", None, text, None, None))
                spec = Spec(("delta", "thinking"), 0, TemplateKind.FIELDS, fields=_REASONING, slot=2, note=note)
        elif kind == "input_json_delta":
            text = delta.get("partial_json")
            if block is not None and block.kind == "tool_use" and type(text) is str and text:
                block.parts.append(text)
                out.append(_new_arguments(0, index, text))
                spec = Spec(("delta", "partial_json"), 0, TemplateKind.ARGUMENTS, tool=index, note=block.parts)  # type: ignore[arg-type]
        elif kind == "signature_delta" and block is not None and type(signature := delta.get("signature")) is str:
            block.signature = signature
        if spec is not None and data:
            # A delta read by a parse may teach a template of the next ones
            # of its block, which notes what it reads where the parse does.
            self.templates.missed(data, chunk, spec._replace(owner=index), text)  # type: ignore[arg-type]

    def _block_stop(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        index = chunk.get("index")
        block = self._blocks.pop(index, None) if type(index) is int else None
        if block is None:
            return
        self.templates.forget(index)  # a fragment after the stop belongs to no block
        if block.kind == "tool_use" and not block.parts:
            # A tool with no parameters streams one empty fragment: its
            # arguments are the input it started with.
            start_input = block.start.get("input")
            out.append(_new_arguments(0, index, compact(start_input if type(start_input) is dict else {})))
        elif block.kind == "thinking":
            thinking = {"type": "thinking", "thinking": "".join(block.parts), "signature": block.signature or ""}
            out.append(Continuation(0, "thinking", thinking, index))
        elif block.kind == "redacted_thinking":
            out.append(Continuation(0, "redacted_thinking", block.start, index))

    def _message_delta(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        delta = chunk.get("delta")
        native = delta.get("stop_reason") if type(delta) is dict else None
        if type(native) is str and native:
            self._start(0)
            self._finish(0, stop_reason(native, self._calls), native, out)
        self._merge_usage(chunk.get("usage"), out)

    def _merge_usage(self, usage: object, out: list[Any]) -> None:
        """Fold one usage report into the merged one and hand that out."""
        if type(usage) is not dict or not usage:
            return
        merged = dict(self._usage or {})
        merged.update((key, value) for key, value in usage.items() if value is not None)
        self._usage = merged
        prompt = (
            count(merged.get("input_tokens"))
            + count(merged.get("cache_creation_input_tokens"))
            + count(merged.get("cache_read_input_tokens"))
        )
        completion = count(merged.get("output_tokens"))
        # The event gets a dict of its own: one a caller edits must not
        # change the next report.
        out.append(_new_usage(prompt, completion, prompt + completion, dict(merged)))

    def _message_stop(self, data: str, chunk: dict[str, Any], out: list[Any]) -> Input | None:
        return self._done(out)

    def _ping(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        out.append(_PING)

    def _error(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        error = chunk.get("error")
        if type(error) is dict:
            out.append(stream_error(None, error, chunk, text_of(error, "")))
        else:
            out.append(StreamError(None, None, text_of(chunk, ""), None, chunk))

    def read_whole(self, body: object, out: list[Any]) -> bool:
        """A whole Messages response (a ``message`` object) as the events its
        stream would have carried; False for anything else."""
        if type(body) is not dict or body.get("type") != "message" or type(body.get("content")) is not list:
            return False
        self._message_start("", {"message": body}, out)
        for index, block in enumerate(body["content"]):
            if type(block) is not dict:
                continue
            kind = block.get("type")
            self._block_start(
                "", {"index": index, "content_block": {**block, "input": {}} if kind == "tool_use" else block}, out
            )
            if kind == "tool_use":
                fragment = {"type": "input_json_delta", "partial_json": compact(block.get("input", {}))}
                self._block_delta("", {"index": index, "delta": fragment}, out)
            elif kind == "thinking" and type(block.get("signature")) is str:
                self._block_delta(
                    "", {"index": index, "delta": {"type": "signature_delta", "signature": block["signature"]}}, out
                )
            self._block_stop("", {"index": index}, out)
        self._message_delta("", {"delta": {"stop_reason": body.get("stop_reason")}}, out)
        return True


AnthropicReader.handlers = {
    "message_start": AnthropicReader._message_start,
    "content_block_start": AnthropicReader._block_start,
    "content_block_delta": AnthropicReader._block_delta,
    "content_block_stop": AnthropicReader._block_stop,
    "message_delta": AnthropicReader._message_delta,
    "message_stop": AnthropicReader._message_stop,
    "ping": AnthropicReader._ping,
    "error": AnthropicReader._error,
}
