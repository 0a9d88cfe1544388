"""ResponsesReader: the OpenAI Responses API stream as chat events.

Theory of operation
-------------------
Every payload names itself in its ``type`` member (gateways drop the SSE
``event:`` lines, so the name on the wire is never read), and the reader
dispatches on it (``handlers``).  The answer is choice 0; a tool call's
index is its ``output_index`` and its id is the ``call_id`` a caller answers
with (not the item's ``fc_`` id).

* Text, refusal and reasoning come as ``*.delta`` events; the matching
  ``*.done`` event repeats the whole text.  Some servers send only the
  ``.done``, so the reader remembers how much of each text (and of each
  call's arguments) it handed out, and a ``.done`` gives only what is
  missing: nothing is lost and nothing is doubled.
* Only a terminal event says how the answer ended: ``response.completed``
  (``stop``, or ``tool_calls`` when a function call was made),
  ``response.incomplete`` (the reason mapped: ``max_output_tokens`` is
  ``length``, ``content_filter`` stays), ``response.failed`` (``error``,
  then the ``StreamError``).  Each carries the usage, and each is the
  format's end marker.  A stream cut before one is truncated, whatever its
  items said.
* ``error`` events come nested (``{"error": {...}}``, what OpenAI sends) or
  flat (``code`` and ``message`` beside ``type``, as documented); both
  become a ``StreamError``.  ``keepalive`` is a ``Heartbeat``.
* Built-in tools (web search, file search, code interpreter, ...) are run
  by the server: their items are not the caller's tool calls, and give
  nothing.  A reasoning item with encrypted content is kept as a
  ``Continuation``, for the next request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._events import Continuation, Delta, Heartbeat, StreamError, ToolCallFragment, Usage, _fast
from ._reader import TypedReader, count, error_code, error_message, flat_error, stream_error, text_of
from ._state import Input
from ._templates import Spec, TemplateKind
from ._util import RemoteProtocolError

__all__ = ["ResponsesReader"]

_new_content = _fast(Delta, "choice", "content", "logprobs")
_new_delta = _fast(Delta)
_new_arguments = _fast(ToolCallFragment, "choice", "index", "arguments")
_new_fragment = _fast(ToolCallFragment)
_new_usage = _fast(Usage)
_KEEPALIVE = Heartbeat("keepalive")
_REFUSAL = ("", None, None, "")  # the fields of a refusal Delta (the text goes in slot 3)
_REASONING = ("", None, "", None)  # of a reasoning Delta (slot 2)
# The reasons of response.incomplete mapped onto OpenAI Chat's words.
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


class ResponsesReader(TypedReader):
    """Read an OpenAI Responses API stream (see the module docstring)."""

    dialect = "openai-responses"

    __slots__ = ("_calls", "_said")

    def __init__(self, strict: bool, locate: Callable[[int], int], limit: int) -> None:
        super().__init__(strict, locate, limit)
        # output_index -> the call_id and name of each function call item.
        self._calls: dict[int, tuple[str | None, str | None]] = {}
        # (what, output_index, part) -> the pieces of text handed out so far,
        # so that a .done event gives only what its deltas did not.
        self._said: dict[tuple[str, int | None, int | None], list[str]] = {}

    # -- the answer begins ------------------------------------------------------------

    def _created(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        response = chunk.get("response")
        if type(response) is dict:
            self._metadata(response)
        if self._start(0):
            out.append(_new_delta(0, "", "assistant", None, None, None))

    def _metadata(self, response: dict[str, Any]) -> None:
        if self.response_id is None and type(found := response.get("id")) is str and found:
            self.response_id = found
        if self.model is None and type(found := response.get("model")) is str and found:
            self.model = found
        if self.created is None and type(found := response.get("created_at")) is int and found:
            self.created = found

    # -- text, refusal, reasoning ----------------------------------------------------------

    def _text(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        delta = chunk.get("delta")
        if type(delta) is str and delta:
            key = _part("text", chunk, "content_index")
            self._said_more(key, delta)
            logprobs = chunk.get("logprobs")
            out.append(_new_content(0, delta, logprobs or None))
            if not logprobs:
                self._learn(data, chunk, key, delta, Spec(("delta",), 0))

    def _text_done(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        rest = self._rest(_part("text", chunk, "content_index"), chunk.get("text"))
        if rest:
            out.append(_new_content(0, rest, None))

    def _refusal(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        delta = chunk.get("delta")
        if type(delta) is str and delta:
            key = _part("refusal", chunk, "content_index")
            self._said_more(key, delta)
            out.append(_new_delta(0, "", None, None, delta, None))
            self._learn(data, chunk, key, delta, Spec(("delta",), 0, TemplateKind.FIELDS, fields=_REFUSAL, slot=3))

    def _refusal_done(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        rest = self._rest(_part("refusal", chunk, "content_index"), chunk.get("refusal"))
        if rest:
            out.append(_new_delta(0, "", None, None, rest, None))

    def _reasoning(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        delta = chunk.get("delta")
        if type(delta) is str and delta:
            key = self._reasoning_part(chunk)
            self._said_more(key, delta)
            out.append(_new_delta(0, "", None, delta, None, None))
            self._learn(data, chunk, key, delta, Spec(("delta",), 0, TemplateKind.FIELDS, fields=_REASONING, slot=2))

    def _reasoning_done(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        rest = self._rest(self._reasoning_part(chunk), chunk.get("text"))
        if rest:
            out.append(_new_delta(0, "", None, rest, None, None))

    @staticmethod
    def _reasoning_part(chunk: dict[str, Any]) -> tuple[str, int | None, int | None]:
        # Summary text and raw reasoning text are told apart by their type.
        what = "reasoning-" + str(chunk.get("type", "")).rsplit(".", 1)[0]
        return _part(what, chunk, "summary_index" if "summary_index" in chunk else "content_index")

    def _said_more(self, key: tuple[str, int | None, int | None], text: str) -> None:
        said = self._said.get(key)
        if said is None:
            self._said[key] = [text]
        else:
            said.append(text)  # joined once, by the .done event, if one comes

    def _rest(self, key: tuple[str, int | None, int | None], whole: object) -> str:
        """What of ``whole`` (the text a .done event repeats) was not handed
        out yet: the suffix after what was, or nothing when what was is not
        its start (a server that changed its mind cannot be undone)."""
        if type(whole) is not str:
            return ""
        said = self._said.setdefault(key, [])
        before = "".join(said)
        said[:] = [whole]  # in place: a template notes its strings in this list
        return whole[len(before) :] if whole.startswith(before) else ""

    def _learn(
        self, data: str, chunk: dict[str, Any], key: tuple[str, int | None, int | None], value: str, spec: Spec
    ) -> None:
        """A delta read by a parse: it may teach a template, which notes what
        it reads where the parse does, so that a .done event still gives only
        what is missing.  The sequence number varies from event to event."""
        if data:
            number = "sequence_number" if type(chunk.get("sequence_number")) is int else None
            self.templates.missed(data, chunk, spec._replace(note=self._said[key], member=number, owner=key), value)

    # -- tool calls ---------------------------------------------------------------------------

    def _item_added(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        item = chunk.get("item")
        index = chunk.get("output_index")
        if type(item) is not dict or type(index) is not int or item.get("type") != "function_call":
            return  # messages, reasoning and the server's own tools: not the caller's calls
        self._start(0)
        call_id, name, args = item.get("call_id"), item.get("name"), item.get("arguments")
        call_id = call_id if type(call_id) is str and call_id else None
        name = name if type(name) is str and name else None
        args = args if type(args) is str else ""
        self._calls[index] = (call_id, name)
        key = ("arguments", index, None)
        self.templates.forget(key)  # the item starts (again): a template of it notes in the list replaced here
        self._said[key] = [args]
        out.append(_new_fragment(0, index, call_id, name, args))

    def _arguments(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        delta, index = chunk.get("delta"), chunk.get("output_index")
        if type(delta) is str and delta and type(index) is int:
            key = ("arguments", index, None)
            self._said_more(key, delta)
            known = index in self._calls
            self._fragment(index, delta, chunk, out)
            if known and chunk.get("call_id") is None and chunk.get("name") is None:  # a plain fragment
                self._learn(data, chunk, key, delta, Spec(("delta",), 0, TemplateKind.ARGUMENTS, tool=index))

    def _arguments_done(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        index = chunk.get("output_index")
        if type(index) is int:
            self._fragment(index, self._rest(("arguments", index, None), chunk.get("arguments")), chunk, out)

    def _item_done(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        item = chunk.get("item")
        index = chunk.get("output_index")
        if type(item) is not dict or type(index) is not int:
            return
        kind = item.get("type")
        if kind == "function_call":
            self._fragment(index, self._rest(("arguments", index, None), item.get("arguments")), item, out)
        elif kind == "reasoning" and item.get("encrypted_content"):
            out.append(Continuation(0, "reasoning_item", item, index))

    def _fragment(self, index: int, args: str, source: dict[str, Any], out: list[Any]) -> None:
        """A fragment of the call at ``index`` with ``args``, and with the
        call's id or name when ``source`` (an event or an item) is the first
        to carry one; nothing when it would carry nothing."""
        call_id, name = source.get("call_id"), source.get("name")
        call_id = call_id if type(call_id) is str and call_id else None
        name = name if type(name) is str and name else None
        held = self._calls.get(index)
        if held is None:
            self._start(0)
        else:
            call_id = None if held[0] is not None else call_id
            name = None if held[1] is not None else name
        if held is None or call_id is not None or name is not None:
            self._calls[index] = (call_id or (held and held[0]), name or (held and held[1]))
            out.append(_new_fragment(0, index, call_id, name, args))
        elif args:
            out.append(_new_arguments(0, index, args))

    # -- the end ----------------------------------------------------------------------------------

    def _completed(self, data: str, chunk: dict[str, Any], out: list[Any]) -> Input:
        return self._terminal(chunk, "tool_calls" if self._calls else "stop", "completed", out)

    def _incomplete(self, data: str, chunk: dict[str, Any], out: list[Any]) -> Input:
        response = chunk.get("response")
        details = response.get("incomplete_details") if type(response) is dict else None
        native = details.get("reason") if type(details) is dict else None
        native = native if type(native) is str and native else "incomplete"
        return self._terminal(chunk, _INCOMPLETE.get(native, native), native, out)

    def _failed(self, data: str, chunk: dict[str, Any], out: list[Any]) -> Input:
        response = chunk.get("response")
        error = response.get("error") if type(response) is dict else None
        if type(error) is dict:
            failure = StreamError(None, error_code(error.get("code")), error_message(error, chunk), None, chunk)
        else:
            failure = StreamError(None, None, "the response failed", None, chunk)
        return self._terminal(chunk, "error", "failed", out, failure)

    def _terminal(
        self, chunk: dict[str, Any], reason: str, native: str, out: list[Any], failure: StreamError | None = None
    ) -> Input:
        """A terminal event: the finish, the usage, the failure, the end
        marker (not for a whole response, see ``read_whole``)."""
        self._start(0)
        self._finish(0, reason, native, out)
        response = chunk.get("response")
        if type(response) is dict:
            self._metadata(response)
            usage = response.get("usage")
            if type(usage) is dict and usage:
                out.append(_usage(usage))
        if failure is not None:
            out.append(failure)
        if chunk.get("type") is not None:
            self._done(out)
        return Input.MARKER

    # -- errors and keep-alives ---------------------------------------------------------------

    def _error(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        nested = chunk.get("error")
        if type(nested) is dict:  # what OpenAI sends
            out.append(stream_error(None, nested, chunk, text_of(nested, "")))
        else:
            out.append(flat_error(chunk))

    def _error_event(
        self, text: str, value: dict[str, Any], n: int, out: list[Any]
    ) -> Input | RemoteProtocolError | None:
        """``event: error`` without an ``error`` member: the documented,
        flat payload, or one without even a ``type``; an error all the same."""
        self._error(text, value, out)
        return None

    def _keepalive(self, data: str, chunk: dict[str, Any], out: list[Any]) -> None:
        out.append(_KEEPALIVE)

    def read_whole(self, body: object, out: list[Any]) -> bool:
        """A whole Responses response (a ``response`` object) as the events
        its stream would have carried; False for anything else."""
        if type(body) is not dict or body.get("object") != "response" or type(body.get("output")) is not list:
            return False
        self._created("", {"response": body}, out)
        for index, item in enumerate(body["output"]):
            if type(item) is not dict:
                continue
            kind = item.get("type")
            if kind == "function_call":
                self._item_added("", {"output_index": index, "item": item}, out)
            elif kind == "message":
                for part in item.get("content") or ():
                    if type(part) is dict and part.get("type") == "output_text":
                        self._text_done("", {"output_index": index, "text": part.get("text")}, out)
                    elif type(part) is dict and part.get("type") == "refusal":
                        self._refusal_done("", {"output_index": index, "refusal": part.get("refusal")}, out)
            elif kind == "reasoning":
                for n, part in enumerate(item.get("summary") or ()):
                    if type(part) is dict:
                        self._reasoning_done(
                            "", {"output_index": index, "summary_index": n, "text": part.get("text")}, out
                        )
                self._item_done("", {"output_index": index, "item": item}, out)
        ending = {"completed": self._completed, "incomplete": self._incomplete, "failed": self._failed}
        end = ending.get(body.get("status"))  # type: ignore[arg-type]
        if end is not None:
            end("", {"response": body}, out)
        return True


def _part(what: str, chunk: dict[str, Any], member: str) -> tuple[str, int | None, int | None]:
    """The key of one text of the answer: what it is, its output item and
    its part (integers as sent, else None)."""
    index, part = chunk.get("output_index"), chunk.get(member)
    return (what, index if type(index) is int else None, part if type(part) is int else None)


def _usage(usage: dict[str, Any]) -> Usage:
    return _new_usage(
        count(usage.get("input_tokens")), count(usage.get("output_tokens")), count(usage.get("total_tokens")), usage
    )


ResponsesReader.handlers = {
    "response.created": ResponsesReader._created,
    "response.queued": ResponsesReader._created,
    "response.in_progress": ResponsesReader._created,
    "response.output_text.delta": ResponsesReader._text,
    "response.output_text.done": ResponsesReader._text_done,
    "response.refusal.delta": ResponsesReader._refusal,
    "response.refusal.done": ResponsesReader._refusal_done,
    "response.reasoning_summary_text.delta": ResponsesReader._reasoning,
    "response.reasoning_summary_text.done": ResponsesReader._reasoning_done,
    "response.reasoning_text.delta": ResponsesReader._reasoning,
    "response.reasoning_text.done": ResponsesReader._reasoning_done,
    "response.output_item.added": ResponsesReader._item_added,
    "response.function_call_arguments.delta": ResponsesReader._arguments,
    "response.function_call_arguments.done": ResponsesReader._arguments_done,
    "response.output_item.done": ResponsesReader._item_done,
    "response.completed": ResponsesReader._completed,
    "response.incomplete": ResponsesReader._incomplete,
    "response.failed": ResponsesReader._failed,
    "error": ResponsesReader._error,
    "keepalive": ResponsesReader._keepalive,
}
