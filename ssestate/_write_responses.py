"""ResponsesWriter: chat events as an OpenAI Responses API stream.

Theory of operation
-------------------
A Responses stream is one answer (choice 0; events of another choice are
refused) made of output items written one after another, every event named
by its ``type`` and numbered by ``sequence_number`` from 0:
``response.created`` and ``response.in_progress`` first, then per item
``response.output_item.added``, its parts and deltas, their ``.done``
events, ``response.output_item.done``; last a terminal event carrying the
whole response.  The writer keeps the open item and the items done:

* content and refusal go into a ``message`` item, each run of one kind as
  an ``output_text`` or ``refusal`` part; reasoning into a ``reasoning``
  item with one summary part;
* a tool call is a ``function_call`` item whose arguments stream as
  ``response.function_call_arguments.delta``.  The item must be added with
  its ``call_id`` and whole name, so a call is held (nothing written) until
  its first fragment with arguments, or until anything else comes, as in
  ``_write_anthropic.py``; calls without an id get one (``call_...``);
* a ``reasoning_item`` ``Continuation`` closes the open reasoning item with
  that item as its ``output_item.done`` (keeping the id the item streamed
  under, which the SDK checks), or is written as an item of its own.

Only the terminal event says how the answer ended, and only it carries the
usage, so ``Finish`` and ``Usage`` are kept (a later ``Finish`` replaces an
earlier one, except that a response that failed stays failed), and ``Done``
closes the open item, the last of the answer, with the status of that
finish, and writes the terminal event of the finish reason:
``response.completed`` (``stop``, ``tool_calls`` and words this API has no
status for), ``response.incomplete`` (``length`` as ``max_output_tokens``,
``content_filter``) or ``response.failed`` (``error``,
``insufficient_system_resource``; the error of the latest ``StreamError``
when there was one).  ``Done`` before the answer finished writes nothing,
so the stream reads as cut, like the one it came from; ``Done`` before
anything started writes an empty, completed response.  ``Truncated`` after
the finish writes the terminal event too: only trailing bytes were lost.

A ``Heartbeat`` is a ``keepalive`` event once the response has started and
a comment before (the SDK wants ``response.created`` first); a
``StreamError`` an ``error`` event with the error both nested (what OpenAI
sends) and flat (what the SDK's type declares).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._encode import encode
from ._events import Continuation, Delta, Done, Finish, Heartbeat, StreamError, ToolCallFragment, Truncated, Usage
from ._writer import ERROR_REASONS, Call, Refused, Writer, dumps, json_text, sse, usage_object

__all__ = ["ResponsesWriter"]

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


class _Item:
    """The open output item: its kind, place and id; for a message its done
    parts and the open part; the text of the open part or summary; its call."""

    __slots__ = ("call", "id", "index", "kind", "part", "parts", "text")

    def __init__(self, kind: str, index: int, item_id: str, call: Call | None = None) -> None:
        self.kind = kind
        self.index = index
        self.id = item_id
        self.call = call
        self.part: str | None = None  # "output_text" or "refusal" (message items)
        self.parts: list[dict[str, Any]] = []
        self.text: list[str] = []


class ResponsesWriter(Writer):
    """Write an OpenAI Responses API stream (see the module docstring)."""

    dialect = "openai-responses"
    one_choice = True

    def __init__(self, model: str | None, response_id: str | None, created: int | None) -> None:
        super().__init__(model, response_id, created)
        self._sequence = 0
        self._started = False
        self._item: _Item | None = None
        self._held: Call | None = None
        self._output: list[dict[str, Any]] = []  # the items done, for the terminal event
        self._items = 0  # output items added
        self._tools: set[int] = set()  # wire indexes of calls whose item was added
        self._finish: Finish | None = None
        self._gave_up = False  # a finish said the server gave up: the response failed, whatever came later
        self._usage: dict[str, Any] | None = None
        self._failure: dict[str, Any] | None = None  # the error of the latest StreamError

    # -- the frame ------------------------------------------------------------------------------

    def _event(self, kind: str, **fields: Any) -> bytes:
        # "type" first and the other members sorted, as OpenAI writes them.
        fields["sequence_number"] = self._sequence
        self._sequence += 1
        return sse(dumps({"type": kind, **dict(sorted(fields.items()))}), kind)

    def _response(self, status: str, **fields: Any) -> dict[str, Any]:
        response = {
            "id": self.response_id or "",
            "object": "response",
            "created_at": self.created or 0,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": self.model or "",
            "output": [],
            "usage": None,
        }
        response.update(fields)
        return response

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        return self._event("response.created", response=self._response("in_progress")) + self._event(
            "response.in_progress", response=self._response("in_progress")
        )

    def _terminal(self) -> bytes:
        finish = self._finish
        assert finish is not None
        out = self._settle(last=True)
        fields: dict[str, Any] = {"output": self._output, "usage": self._usage}
        if self._gave_up:
            status = "failed"
            fields["error"] = self._failure or {"code": "server_error", "message": "the server gave up on the answer"}
        elif finish.reason in _INCOMPLETE:
            status = "incomplete"
            fields["incomplete_details"] = {"reason": _INCOMPLETE[finish.reason]}
        else:
            status = "completed"
        return out + self._event(f"response.{status}", response=self._response(status, **fields))

    # -- items ----------------------------------------------------------------------------------------

    def _add(self, kind: str, item: dict[str, Any], call: Call | None = None) -> bytes:
        self._item = _Item(kind, self._items, item["id"], call)
        self._items += 1
        return self._event("response.output_item.added", item=item, output_index=self._item.index)

    def _close(self, replacement: Mapping[str, Any] | None = None, last: bool = False) -> bytes:
        """Close the open item (a reasoning item as ``replacement``, when
        given); ``last``: the terminal event closes it."""
        item = self._item
        if item is None:
            return b""
        self._item = None
        where = {"item_id": item.id, "output_index": item.index}
        text = "".join(item.text)
        # The last item of an answer that was cut (the token limit, a filter)
        # ends "incomplete", as the response does; an item that more output
        # followed ended whole.
        finish = self._finish
        cut = last and finish is not None and finish.reason in _INCOMPLETE and not self._gave_up
        status = "incomplete" if cut else "completed"
        if item.kind == "message":
            out = self._close_part(item)
            done: dict[str, Any] = {
                "id": item.id,
                "type": "message",
                "status": status,
                "content": item.parts,
                "role": "assistant",
            }
        elif item.kind == "reasoning":
            part = {"type": "summary_text", "text": text}
            out = self._event("response.reasoning_summary_text.done", summary_index=0, text=text, **where)
            out += self._event("response.reasoning_summary_part.done", summary_index=0, part=part, **where)
            done = {"id": item.id, "type": "reasoning", "summary": [part]}
            if replacement is not None:
                kept = {k: v for k, v in replacement.items() if k not in ("id", "type")}
                done = {"id": item.id, "type": "reasoning", **kept}
        else:
            assert item.call is not None
            name = "".join(item.call.name)
            out = self._event("response.function_call_arguments.done", arguments=text, name=name, **where)
            done = {
                "id": item.id,
                "type": "function_call",
                "status": status,
                "arguments": text,
                "call_id": item.call.id,
                "name": name,
            }
        self._output.append(done)
        return out + self._event("response.output_item.done", item=done, output_index=item.index)

    def _close_part(self, item: _Item) -> bytes:
        if item.part is None:
            return b""
        where = {"content_index": len(item.parts), "item_id": item.id, "output_index": item.index}
        text = "".join(item.text)
        if item.part == "output_text":
            part: dict[str, Any] = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
            out = self._event("response.output_text.done", logprobs=[], text=text, **where)
        else:
            part = {"type": "refusal", "refusal": text}
            out = self._event("response.refusal.done", refusal=text, **where)
        item.parts.append(part)
        item.part, item.text = None, []
        return out + self._event("response.content_part.done", part=part, **where)

    def _unhold(self) -> bytes:
        """Add the item of the held call, if one is held."""
        call = self._held
        if call is None:
            return b""
        self._held = None
        self._tools.add(call.index)
        out = self._close()
        call.id = call.id or self.ident("call", self._items)
        item = {
            "id": self.ident("fc", self._items),
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call.id,
            "name": "".join(call.name),
        }
        return out + self._add("function_call", item, call)

    def _settle(self, last: bool = False) -> bytes:
        """Add a held call, then close the open item (``last``: see ``_close``)."""
        return self._unhold() + self._close(last=last)

    def _into(self, kind: str) -> bytes:
        """Make sure an item of ``kind`` ("message" or "reasoning") is open."""
        out = self._unhold()
        if self._item is not None and self._item.kind == kind:
            return out
        out += self._close()
        if kind == "message":
            message = {"id": self.ident("msg", self._items), "type": "message", "status": "in_progress"}
            return out + self._add(kind, {**message, "content": [], "role": "assistant"})
        out += self._add(kind, {"id": self.ident("rs", self._items), "type": "reasoning", "summary": []})
        assert self._item is not None
        part = {"type": "summary_text", "text": ""}
        where = {"item_id": self._item.id, "output_index": self._item.index}
        return out + self._event("response.reasoning_summary_part.added", part=part, summary_index=0, **where)

    def _into_part(self, part: str) -> bytes:
        """Make sure the open message item has an open part of ``part``."""
        out = self._into("message")
        item = self._item
        assert item is not None
        if item.part == part:
            return out
        out += self._close_part(item)
        item.part = part
        fresh: dict[str, Any] = (
            {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            if part == "output_text"
            else {"type": "refusal", "refusal": ""}
        )
        where = {"content_index": len(item.parts), "item_id": item.id, "output_index": item.index}
        return out + self._event("response.content_part.added", part=fresh, **where)

    def _more(self, kind: str, text: str, **fields: Any) -> bytes:
        item = self._item
        assert item is not None
        item.text.append(text)
        return self._event(kind, delta=text, item_id=item.id, output_index=item.index, **fields)

    # -- events ---------------------------------------------------------------------------------------

    def delta(self, event: Delta) -> bytes:
        logprobs = event.logprobs
        if isinstance(logprobs, Mapping):
            logprobs = logprobs.get("content")  # Chat Completions' shape: the token list inside
        if not isinstance(logprobs, list):
            logprobs = []
        json_text(logprobs, "the logprobs of a Delta")
        out = self._start()
        if event.reasoning:
            out += self._into("reasoning") + self._more(
                "response.reasoning_summary_text.delta", event.reasoning, summary_index=0
            )
        if event.content:
            out += self._into_part("output_text")
            index = len(self._item.parts) if self._item is not None else 0
            out += self._more("response.output_text.delta", event.content, content_index=index, logprobs=logprobs)
        if event.refusal:
            out += self._into_part("refusal")
            index = len(self._item.parts) if self._item is not None else 0
            out += self._more("response.refusal.delta", event.refusal, content_index=index)
        return out

    def fragment(self, event: ToolCallFragment) -> bytes:
        item, held, index = self._item, self._held, event.index
        if item is not None and item.call is not None and item.call.index == index:
            if event.name and event.name != "".join(item.call.name):
                raise Refused(
                    f"tool call {index} was added with the name {''.join(item.call.name)!r}; "
                    f"a function_call item cannot take the name fragment {event.name!r}"
                )
            if not event.arguments:
                return b""
            return self._more("response.function_call_arguments.delta", event.arguments)
        if held is None or held.index != index:
            if index in self._tools:
                raise Refused(f"the item of tool call {index} is done; the Responses API adds one item at a time")
            out = self._start() + self._settle()
            held = self._held = Call(index)
        else:
            out = b""
        held.take(event.id, event.name)
        if event.arguments:
            out += self._unhold() + self._more("response.function_call_arguments.delta", event.arguments)
        return out

    def finish(self, event: Finish) -> bytes:
        # A held call is added now, closing the item before it, which the
        # call followed and so ended whole.  The call's item, or whatever
        # item is open, stays open: the terminal event closes it with the
        # status of the finish that stands then (a later one may change it).
        out = self._start() + self._unhold()
        self._finish = event
        self._gave_up = self._gave_up or event.reason in ERROR_REASONS
        return out

    def usage(self, event: Usage) -> bytes:
        self._usage = usage_object(self.dialect, event)
        return b""

    def done(self, event: Done) -> bytes:
        if not self._started:
            if self.errored:
                return b""  # an error ended the stream before any answer
            self._finish = Finish(0, "stop")
            return self._start() + self._terminal()
        if self._finish is None:
            return self._settle()  # no terminal event: the answer reads as cut, as it was
        return self._terminal()

    def truncated(self, event: Truncated) -> bytes:
        if self._finish is not None:
            return self._terminal()
        return self._unhold()

    def heartbeat(self, event: Heartbeat) -> bytes:
        if self._started:
            return self._event("keepalive")
        if "\n" in event.comment or "\r" in event.comment:
            raise Refused(f"a comment cannot contain a line break: {event.comment!r}")
        return encode(event)

    def error(self, event: StreamError) -> bytes:
        self.errored = True
        self._failure = {"code": event.code, "message": event.message}
        nested = {"type": event.type, "code": event.code, "message": event.message, "param": None}
        return self._event("error", code=event.code, message=event.message, param=None, error=nested)

    def continuation(self, event: Continuation) -> bytes:
        if event.kind != "reasoning_item":
            return b""  # another API's data: the Responses API has no place for it
        data = event.data
        if not isinstance(data, Mapping):
            raise Refused(f"the data of a 'reasoning_item' Continuation must be an object, not {type(data).__name__}")
        json_text(data, "the data of a 'reasoning_item' Continuation")
        out = self._start() + self._unhold()
        if self._item is not None and self._item.kind == "reasoning":
            return out + self._close(data)
        out += self._close()
        found = data.get("id")
        item_id = found if type(found) is str and found else self.ident("rs", self._items)
        item = {"id": item_id, "type": "reasoning", **{k: v for k, v in data.items() if k not in ("id", "type")}}
        out += self._add("reasoning", {**item, "summary": []})
        self._item = None
        self._output.append(item)
        return out + self._event("response.output_item.done", item=item, output_index=self._items - 1)
