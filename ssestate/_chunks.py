"""ChunkReader: OpenAI Chat Completions chunks as chat events.

Theory of operation
-------------------
The shared read loop (``_reader.py``) hands every payload that is a JSON
object to ``_chunk``.  The reader keeps what the rules of SPEC §3 need to
remember between chunks beside what every reader keeps: the ids and next
free index of tool calls that came without an ``index``, and which
metadata is still missing.

A chunk's usual shape (one started choice, a lone text or a lone arguments
fragment in its delta, no finish) is read by unpacking and subscripts: a
member of another shape ends that reading with an exception before
anything is appended, and the general loop (``_choices``) reads the chunk
instead.  Usage, ``x_groq`` and ``error`` members are read after the
choices.  A usual chunk that no template read may teach one
(``_templates.py``), so that the next is read without a parse; the usage
a chunk carries (vLLM's on every chunk) varies under the template.
"""

from __future__ import annotations

from typing import Any

from ._events import Delta, ToolCallFragment, Usage, _fast
from ._reader import Reader, compact, count, stream_error, text_of
from ._state import Input
from ._templates import Spec, TemplateKind, text_fields, text_hole

__all__ = ["ChunkReader"]

_META = ("id", "model", "created", "system_fingerprint")
_new_delta = _fast(Delta)
_new_content = _fast(Delta, "choice", "content", "logprobs")  # the usual Delta: text alone
_new_fragment = _fast(ToolCallFragment)
_new_arguments = _fast(ToolCallFragment, "choice", "index", "arguments")  # the usual fragment
_new_usage = _fast(Usage)
_HOLE = "\x00hole"  # a text no server sends, to find which field a member's text fills


class _ToolPlaces:
    """Where a choice's tool calls are, for the calls that come without an
    index (SPEC §3): the id held at each index, the index an id-less
    fragment at an array position continues, and the next index no call of
    the choice holds."""

    __slots__ = ("free", "ids", "where")

    def __init__(self) -> None:
        self.ids: dict[tuple[int, int], str] = {}  # (choice, tool index) -> id
        self.where: dict[tuple[int, int], int] = {}  # (choice, array position) -> tool index
        self.free: dict[int, int] = {}  # choice -> next free tool index


def usage_event(usage: object) -> Usage | None:
    """The ``Usage`` of a chunk's ``usage`` member, when it is a non-empty
    object; else None."""
    if not usage or type(usage) is not dict:
        return None
    get = usage.get
    return _new_usage(count(get("prompt_tokens")), count(get("completion_tokens")), count(get("total_tokens")), usage)


class ChunkReader(Reader):
    """Read OpenAI Chat Completions chunks (see the module docstring)."""

    dialect = "openai-chat"

    __slots__ = ("_missing", "_tools")

    def __init__(self, strict: bool, locate: Any, limit: int) -> None:
        super().__init__(strict, locate, limit)
        self._missing: tuple[str, ...] = _META
        # Where tool calls are, for those that come without an index (made
        # at the first tool call).
        self._tools: _ToolPlaces | None = None

    def _chunk(self, data: str, chunk: dict[str, Any], out: list[Any]) -> Input | None:
        """A chunk: its choices in array order, then its usage, then its error."""
        if self._missing:
            self._take_metadata(chunk)
        choices: Any = chunk.get("choices")
        hole = None  # the varying string of a chunk a template may read (set: the usual chunk)
        where: int | str  # where that string is: a tool index, or a delta member
        # The usual chunk: one choice that started and has not finished, one
        # member in its delta, no finish.  Its containers are read by
        # unpacking, subscripts and len(): a member of another shape ends
        # the reading with an exception before anything is appended.
        try:
            [c] = choices  # ValueError: not one choice; TypeError: no list
            delta = c["delta"]  # TypeError: the choice is not an object
            if (
                len(delta) == 1
                and type(i := c["index"]) is int  # KeyError: no index (rare)
                and self.finish.get(i, 0) is None
                and not c.get("finish_reason")
            ):
                if type(content := delta.get("content")) is str:  # AttributeError: not an object
                    if content:
                        out.append(_new_content(i, content, c.get("logprobs")))
                    hole, where = content, "content"
                elif (calls := delta.get("tool_calls")) is not None:
                    [call] = calls  # ValueError: not one call
                    if (
                        len(call) == 2
                        and type(index := call["index"]) is int
                        and len(fn := call["function"]) == 1
                        and type(args := fn["arguments"]) is str
                    ):
                        # The usual fragment: {"index": i, "function": {"arguments": ...}}.
                        self._tool_seen(i, index)
                        out.append(_new_arguments(i, index, args))
                        hole, where = args, index
        except (LookupError, TypeError, AttributeError, ValueError):
            pass
        if hole is None and type(choices) is list:  # not read above: the general loop
            self._choices(choices, out)
            if len(choices) == 1 and not self.templates.waiting():
                found = text_hole(choices[0])
                if found is not None:
                    i, where, hole = found  # one text member beside neutral ones
        if hole is not None and data and (spec := self._spec(chunk, i, where)) is not None:
            self.templates.missed(data, chunk, spec, hole)  # a chunk a template may read, and none did
        usage = chunk.get("usage")
        if usage or "x_groq" in chunk or "error" in chunk:
            self._usage_and_error(chunk, usage, data, out)
        return None

    @staticmethod
    def _spec(chunk: dict[str, Any], i: int, where: int | str) -> Spec | None:
        """Where the one varying string of a usual chunk of choice ``i`` is
        (``where``: the delta member holding the text, or the tool index of
        a lone arguments fragment), for a template, with the usage when the
        chunk carries one (vLLM's usage on every chunk); None when the chunk
        has more to read than that: ``x_groq``, an error, logprobs."""
        if "x_groq" in chunk or "error" in chunk or chunk["choices"][0].get("logprobs") is not None:
            return None
        if isinstance(where, int):
            path = ("choices", 0, "delta", "tool_calls", 0, "function", "arguments")
            spec = Spec(path, i, TemplateKind.ARGUMENTS, tool=where, empty=_new_arguments(i, where, ""))
        else:
            # What the delta gives with a text in this member, and with none.
            # The other members hold no text, so the two differ in one field.
            delta = chunk["choices"][0]["delta"]
            probed = text_fields({**delta, where: _HOLE})
            spec = Spec(("choices", 0, "delta", where), i)
            if probed != (_HOLE, None, None, None):
                blank = text_fields({**delta, where: ""})
                empty = _new_delta(i, *blank, None) if any(blank) else None
                fields = TemplateKind.FIELDS
                spec = spec._replace(kind=fields, fields=probed, slot=probed.index(_HOLE), empty=empty)
        if type(chunk.get("usage")) is dict:
            return spec._replace(member="usage", value_event=usage_event)
        return spec

    def _choices(self, choices: list[Any], out: list[Any]) -> None:
        """A chunk's choices, in array order: per choice its ``Delta``, its
        ``ToolCallFragment``s, its ``Finish``."""
        finish_of = self.finish
        for pos, c in enumerate(choices):
            if type(c) is not dict:
                continue
            i = c.get("index")
            if type(i) is not int:
                i = pos
            if i not in finish_of:
                finish_of[i] = None
            delta = c.get("delta")
            if delta and type(delta) is dict:
                content, role, reasoning, refusal = text_fields(delta)
                if content or role or reasoning or refusal:
                    out.append(_new_delta(i, content, role, reasoning, refusal, c.get("logprobs")))
                calls = delta.get("tool_calls")
                if calls and type(calls) is list:
                    self._tool_calls(i, calls, out)
            reason = c.get("finish_reason")
            if reason and type(reason) is str:
                self._finish(i, reason, None, out)

    def _tool_calls(self, choice: int, calls: list[Any], out: list[Any]) -> None:
        for pos, call in enumerate(calls):
            if type(call) is not dict:
                continue
            call_id = call.get("id")
            if call_id is not None and (type(call_id) is not str or not call_id):
                call_id = None
            index = call.get("index")
            if type(index) is not int:
                index = self._place(choice, pos, call_id)
            else:
                if call_id is not None:
                    self._places().ids.setdefault((choice, index), call_id)
                self._tool_seen(choice, index)
            fn = call.get("function")
            name = args = None
            if type(fn) is dict:
                name = fn.get("name")
                args = fn.get("arguments")
            if name is not None and (type(name) is not str or not name):
                name = None
            if type(args) is not str:
                args = "" if args is None else compact(args)
            out.append(_new_fragment(choice, index, call_id, name, args))

    def _tool_seen(self, choice: int, index: int) -> None:
        """A call of ``choice`` holds ``index``: a call without an index that
        starts later must take a higher one."""
        free = (self._tools or self._places()).free
        if index >= free.get(choice, 0):
            free[choice] = index + 1

    def _place(self, choice: int, pos: int, call_id: str | None) -> int:
        """The tool index of a call that came without one: its array position,
        unless it carries an id other than the one held there, which starts a
        new call at the next index no call of the choice holds (and later
        id-less fragments at that position continue the new call)."""
        places = self._places()
        ids, where = places.ids, places.where
        index = where.get((choice, pos), pos)
        if call_id is not None:
            held = ids.get((choice, index))
            if held is None:
                ids[(choice, index)] = call_id
            elif held != call_id:
                index = places.free.get(choice, 0)
                ids[(choice, index)] = call_id
                where[(choice, pos)] = index
        self._tool_seen(choice, index)
        return index

    def _places(self) -> _ToolPlaces:
        if self._tools is None:
            self._tools = _ToolPlaces()
        return self._tools

    def _usage_and_error(self, chunk: dict[str, Any], usage: object, data: str, out: list[Any]) -> None:
        """A chunk's ``Usage`` (or Groq's ``x_groq.usage``), then its error."""
        if not usage or type(usage) is not dict:
            groq = chunk.get("x_groq")
            usage = groq.get("usage") if type(groq) is dict else None
        found = usage_event(usage)
        if found is not None:
            out.append(found)
        error = chunk.get("error")
        if error:
            out.append(stream_error(None, error, chunk, text_of(error, data)))

    def read_whole(self, body: object, out: list[Any]) -> bool:
        """A whole ``chat.completion``: its choices are turned into one chunk
        (each message as the choice's delta, each tool call given its array
        position as index) and read like any other."""
        if type(body) is not dict or type(body.get("choices")) is not list:
            return False
        choices = []
        for pos, c in enumerate(body["choices"]):
            if type(c) is not dict:
                continue
            message = c.get("message")
            if type(message) is not dict:
                message = {}
            calls = message.get("tool_calls")
            if type(calls) is list:
                message = {
                    **message,
                    "tool_calls": [
                        {**call, "index": n} if type(call) is dict else call for n, call in enumerate(calls)
                    ],
                }
            choices.append({**c, "index": c.get("index", pos), "delta": message})
        chunk = {k: v for k, v in body.items() if k != "choices"}
        chunk["choices"] = choices
        return self.read_chunk("", chunk, out)

    def _take_metadata(self, chunk: dict[str, Any]) -> None:
        missing = []
        for key in self._missing:
            value = chunk.get(key)
            if key == "created":
                if type(value) is int and value:
                    self.created = value
                    continue
            elif type(value) is str and value:
                setattr(self, "response_id" if key == "id" else key, value)
                continue
            missing.append(key)
        self._missing = tuple(missing)
