"""ChatWriter: chat events as an OpenAI Chat Completions stream.

Theory of operation
-------------------
Chat Completions is the format the events were modelled on, so every event
maps onto one chunk and nothing is kept between events: a ``Delta`` is a
choice's ``delta`` (reasoning as ``reasoning_content``, the member the
reader prefers), a ``ToolCallFragment`` one ``tool_calls[]`` entry (``id``,
``type`` and ``name`` only when the fragment has them, as OpenAI sends the
first fragment of a call), a ``Finish`` a chunk with an empty delta and the
``finish_reason``, a ``Usage`` a chunk with ``"choices": []``, a
``StreamError`` a payload with an ``error`` member, a ``Heartbeat`` a
comment, ``Done`` the ``[DONE]`` line.  Any number of choices, in any
order.  The server's own word for a mapped finish reason (``Finish.native``)
and ``Continuation`` data have no place in this format and are left out.
"""

from __future__ import annotations

from typing import Any

from ._encode import DONE_BYTES, encode
from ._events import Continuation, Delta, Done, Finish, Heartbeat, StreamError, ToolCallFragment, Truncated, Usage
from ._writer import Refused, Writer, dumps, json_text, sse, usage_object

__all__ = ["ChatWriter"]


class ChatWriter(Writer):
    """Write an OpenAI Chat Completions stream (see the module docstring)."""

    dialect = "openai-chat"

    def _chunk(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> bytes:
        chunk: dict[str, Any] = {
            "id": self.response_id or "",
            "object": "chat.completion.chunk",
            "created": self.created or 0,
            "model": self.model or "",
            "choices": choices,
        }
        if usage is not None:
            chunk["usage"] = usage
        return sse(dumps(chunk))

    def delta(self, event: Delta) -> bytes:
        delta: dict[str, Any] = {}
        if event.role:
            delta["role"] = event.role
        if event.content or event.role:
            delta["content"] = event.content  # OpenAI's first chunk: the role with content ""
        if event.reasoning:
            delta["reasoning_content"] = event.reasoning
        if event.refusal:
            delta["refusal"] = event.refusal
        choice: dict[str, Any] = {"index": event.choice, "delta": delta}
        if event.logprobs is not None:
            json_text(event.logprobs, "the logprobs of a Delta")
            choice["logprobs"] = event.logprobs
        choice["finish_reason"] = None
        return self._chunk([choice])

    def fragment(self, event: ToolCallFragment) -> bytes:
        call: dict[str, Any] = {"index": event.index}
        if event.id:
            call["id"] = event.id
            call["type"] = "function"
        function: dict[str, Any] = {}
        if event.name:
            function["name"] = event.name
        function["arguments"] = event.arguments
        call["function"] = function
        return self._chunk([{"index": event.choice, "delta": {"tool_calls": [call]}, "finish_reason": None}])

    def finish(self, event: Finish) -> bytes:
        return self._chunk([{"index": event.choice, "delta": {}, "finish_reason": event.reason}])

    def usage(self, event: Usage) -> bytes:
        return self._chunk([], usage_object(self.dialect, event))

    def done(self, event: Done) -> bytes:
        return DONE_BYTES

    def truncated(self, event: Truncated) -> bytes:
        return b""  # the stream ends without [DONE], as the one it came from

    def heartbeat(self, event: Heartbeat) -> bytes:
        if "\n" in event.comment or "\r" in event.comment:
            raise Refused(f"a comment cannot contain a line break: {event.comment!r}")
        return encode(event)

    def error(self, event: StreamError) -> bytes:
        self.errored = True
        error = {"message": event.message, "type": event.type, "param": None, "code": event.code}
        return sse(dumps({"error": error}))

    def continuation(self, event: Continuation) -> bytes:
        return b""  # Chat Completions takes nothing back but the message itself
