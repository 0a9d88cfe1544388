"""A choice's assembled message in the shape each API takes back.

Theory of operation
-------------------
A caller that answers tool calls sends the assistant's turn back in the next
request, in the shape of the API it talks to.  ``Accumulator.message``
builds it here from what the choice assembled: its text, its tool calls,
and the ``Continuation`` data the API wants returned untouched (thinking
blocks and their signatures, redacted thinking, thought signatures,
reasoning items with encrypted content).  Without that data, Anthropic and
Gemini refuse the next turn of a conversation that used thinking with tools.

* ``openai-chat``: ``{"role", "content", "refusal"?, "tool_calls"?}``; the
  content is None when the choice only made tool calls.
* ``openai-responses``: a list of input items: the reasoning items, the
  assistant message (when it said something) and one ``function_call``
  item per call.  With reasoning items they keep the order the API sent
  them in (each reasoning item must be followed by the item it led to):
  reasoning items and calls by their ``output_index``.  No event carries
  the message's: it goes last when a reasoning item would end the list
  without it (items not sent back, such as a web search, leave gaps that
  say nothing), else at the first place no item takes (a preamble before
  the calls).  Without reasoning items, the message comes first.
* ``anthropic``: ``{"role": "assistant", "content": [blocks]}``: thinking
  and redacted thinking blocks first (the API wants them before the text
  and tool use of the same turn), then the text, then one ``tool_use`` per
  call with its input parsed.
* ``gemini``: ``{"role": "model", "parts": [...]}``: the text, then one
  ``functionCall`` part per call, each with its thought signature.

Arguments are parsed only for the APIs that take them as objects
(Anthropic, Gemini): arguments that are not JSON raise ``ToolArgumentsError``
there, as ``parsed_arguments()`` does.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ._accumulate import Choice

__all__ = ["replay"]


def replay(c: Choice, dialect: str, reasoning_key: str | None) -> Any:
    """The message of choice ``c`` for ``dialect`` (see the module docstring)."""
    if dialect == "openai-chat":
        return _chat(c, reasoning_key)
    if dialect == "openai-responses":
        return _responses(c)
    if dialect == "anthropic":
        return _anthropic(c)
    if dialect == "gemini":
        return _gemini(c)
    raise ValueError(f"no message shape for dialect {dialect!r}")


def _chat(c: Choice, reasoning_key: str | None) -> dict[str, Any]:
    calls = c.tool_calls
    content = c.content
    msg: dict[str, Any] = {"role": c.role or "assistant", "content": content if content or not calls else None}
    refusal = c.refusal
    if refusal is not None:
        msg["refusal"] = refusal
    if calls:
        msg["tool_calls"] = [call.to_dict() for call in calls]
    reasoning = c.reasoning
    if reasoning_key is not None and reasoning is not None:
        msg[reasoning_key] = reasoning
    return msg


def _kept(c: Choice, *kinds: str) -> list[Any]:
    """The continuation data of these kinds, in the order of their index."""
    found = [k for k in c.continuations if k.kind in kinds]
    found.sort(key=lambda k: -1 if k.index is None else k.index)
    return [k.data for k in found]


def _responses(c: Choice) -> list[dict[str, Any]]:
    text = c.content or c.refusal
    message = {"role": "assistant", "content": text} if text else None
    calls: list[tuple[int, dict[str, Any]]] = []
    for call in c.tool_calls:
        item: dict[str, Any] = {"type": "function_call", "name": call.name, "arguments": call.arguments}
        if call.id is not None:
            item["call_id"] = call.id
        calls.append((call.index, item))
    reasoning = [k for k in c.continuations if k.kind == "reasoning_item"]
    if not reasoning or any(k.index is None for k in reasoning):
        return [*_kept(c, "reasoning_item"), *([message] if message else []), *(item for _, item in calls)]
    items = [(cast(int, k.index), cast("dict[str, Any]", k.data)) for k in reasoning]
    placed = sorted(items + calls, key=itemgetter(0))
    if message is not None:
        if placed[-1][1].get("type") != "function_call":
            at = len(placed)  # after a reasoning item, which must not end the turn
        else:
            taken = {index for index, _ in placed}
            free = next(index for index in range(len(placed) + 1) if index not in taken)
            at = sum(index < free for index, _ in placed)
        placed.insert(at, (-1, message))
    return [item for _, item in placed]


def _anthropic(c: Choice) -> dict[str, Any]:
    blocks: list[Any] = list(_kept(c, "thinking", "redacted_thinking"))
    if c.content:
        blocks.append({"type": "text", "text": c.content})
    for call in c.tool_calls:
        block: dict[str, Any] = {"type": "tool_use", "name": call.name, "input": call.parsed_arguments()}
        if call.id is not None:
            block = {"type": "tool_use", "id": call.id, **{k: v for k, v in block.items() if k != "type"}}
        blocks.append(block)
    return {"role": "assistant", "content": blocks}


def _gemini(c: Choice) -> dict[str, Any]:
    signatures = {k.index: k.data for k in c.continuations if k.kind == "thought_signature"}
    parts: list[dict[str, Any]] = []
    if c.content:
        part: dict[str, Any] = {"text": c.content}
        if None in signatures:
            part["thoughtSignature"] = signatures[None]
        parts.append(part)
    for call in c.tool_calls:
        function: dict[str, Any] = {"name": call.name, "args": call.parsed_arguments()}
        if call.id is not None:
            function["id"] = call.id
        part = {"functionCall": function}
        if call.index in signatures:
            part["thoughtSignature"] = signatures[call.index]
        parts.append(part)
    return {"role": "model", "parts": parts}
