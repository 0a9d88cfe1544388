"""How ``chat_streams(dialect)`` writes a stream of the Responses API,
Anthropic Messages or Gemini (see ``strategies`` for the whole).

Theory of operation
-------------------
Each stream is drawn as Chat Completions' are (``_wire``): the style first
(the fault, the usage's shape, the framing habits), then each choice's plan
(reasoning, text, tool calls, finish), then the wire, written by hand in
the API's own events, not by ssestate's ``Encoder``, so that a bug shared by
ssestate's writer and reader cannot hide.  Beside every block the writer
notes what it gives its choice (``Gives``) and the usage a client holds
after it, and ``_cases.fold`` and ``_cases.outcome`` turn the blocks that
made it onto the wire into the expectation, as for Chat Completions.

What each API adds to Chat Completions' hazards (OTHER-APIS.md):

* the Responses API: ``event:`` lines and strictly numbered
  ``sequence_number``\\s; undocumented ``keepalive`` events that take a
  number; arguments that come only in ``.done`` (no delta); usage and
  finish only on the terminal event (``response.completed``,
  ``response.incomplete`` with its reason; none when the stream is lost);
  errors nested (what OpenAI sends), flat (what it documents) or a
  ``response.failed``;
* Anthropic: ``ping`` anywhere (and right after ``message_start``);
  payloads padded before the closing brace; usage split between
  ``message_start`` (input and cache counts, which add up) and a cumulative
  ``message_delta``; the empty first ``partial_json``; tools without
  arguments (one ``""`` fragment: ``"{}"``); thinking signed before it
  stops; a refusal that is a stop reason; ``overloaded_error``;
* Gemini: CRLF always, ``": "`` spacing, no end marker, candidate
  ``index`` left out when there is one, whole ``functionCall``\\s without
  ids (``"{}"`` for a call without ``args``), usage cumulative on every
  chunk or only at the end (with count-less ``usageMetadata`` between), the
  error as raw pretty-printed JSON lines without ``data:``, or as a
  ``data:`` payload.

Usage is expected in OpenAI's words (``prompt_tokens``,
``completion_tokens``, ``total_tokens``), the counts SPEC §3b defines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from ._cases import Block, ChatCase, Expected, ExpectedError, ExpectedToolCall, Gives, fold, outcome
from ._wire import _answers, _split, json_values, texts

__all__ = ["api_case"]

_MESSAGES = ("The server had an error processing your request.", "Overloaded", "Überlastet 🔥")
_NATIVE = {
    "openai-responses": {"length": "max_output_tokens", "content_filter": "content_filter"},
    "anthropic": {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"},
    "gemini": {"stop": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"},
}
_names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,20}", fullmatch=True)


@dataclass
class _Call:
    name: str
    value: dict[str, Any]
    arguments: str  # as the API sends them (Gemini: ssestate's compact form of args)
    pieces: list[str]  # streamed fragments ([] = whole at the end)


@dataclass
class _Plan:
    reasoning: list[str]
    content: list[str]
    calls: list[_Call]
    finish: str | None  # in OpenAI's words before the tool_calls rule; None: never finishes


@dataclass
class _Out:
    """The blocks written so far, each with the usage a client holds after it."""

    blocks: list[Block] = field(default_factory=list)
    usage: dict[int, dict[str, int]] = field(default_factory=dict)
    wholes: dict[tuple[int, int], ExpectedToolCall] = field(default_factory=dict)

    def add(self, kind: str, raw: bytes, payload: Any = None, gives: list[tuple[int, Gives]] | None = None) -> Block:
        block = Block(kind, raw, payload if isinstance(payload, dict) else None, gives=gives or [])
        self.blocks.append(block)
        return block


def _counts(prompt: int, completion: int, total: int | None = None) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion if total is None else total,
    }


@st.composite
def _plan(draw: st.DrawFn, dialect: str) -> _Plan:
    reasoning = draw(_split(draw(texts)))
    content = draw(_split(draw(_answers)))
    calls = []
    for _ in range(draw(st.integers(0, 2))):
        value = draw(st.dictionaries(texts, json_values, max_size=3))
        arguments = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if dialect != "gemini":
            arguments = json.dumps(value, ensure_ascii=draw(st.booleans()))
        # Gemini's calls are whole; some Responses backends send arguments only in .done
        whole = dialect == "gemini" or (dialect == "openai-responses" and draw(st.booleans()))
        pieces: list[str] = [] if whole else draw(_split(arguments, 8))
        calls.append(_Call(draw(_names), value, arguments, pieces))
    finish = draw(st.sampled_from(["stop", "length", "content_filter", None]))
    return _Plan(reasoning, content, calls, finish)


def _reason(plan: _Plan) -> str | None:
    if plan.finish == "stop" and plan.calls:
        return "tool_calls"
    return plan.finish


# --- the Responses API -----------------------------------------------------------------------------


def _responses(draw: st.DrawFn, plan: _Plan, out: _Out, meta: dict[str, Any]) -> None:
    delta: dict[str, Any]
    seq = iter(range(10**6))
    keepalives = draw(st.lists(st.integers(0, 40), max_size=3))

    def event(payload: dict[str, Any], gives: Gives | None = None) -> None:
        while keepalives and keepalives[0] <= len(out.blocks):
            keepalives.pop(0)
            body = {"type": "keepalive", "sequence_number": next(seq)}
            out.add("heartbeat", _sse("keepalive", _compact(body)), body).comment = "keepalive"
        payload["sequence_number"] = next(seq)
        out.add("chunk", _sse(payload["type"], _compact(payload)), payload, [(0, gives)] if gives else None)

    response = {**meta, "object": "response", "status": "in_progress", "output": [], "usage": None}
    event({"type": "response.created", "response": response}, Gives(role=True))
    event({"type": "response.in_progress", "response": response})
    index = 0
    if plan.reasoning:
        item = {"id": "rs_1", "type": "reasoning", "summary": []}
        event({"type": "response.output_item.added", "item": item, "output_index": index})
        for piece in plan.reasoning:
            delta = {"type": "response.reasoning_summary_text.delta", "delta": piece, "item_id": "rs_1"}
            event({**delta, "output_index": index, "summary_index": 0}, Gives(reasoning=piece))
        event({"type": "response.output_item.done", "item": item, "output_index": index})
        index += 1
    if plan.content:
        item = {"id": "msg_1", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
        event({"type": "response.output_item.added", "item": item, "output_index": index})
        for piece in plan.content:
            delta = {"type": "response.output_text.delta", "content_index": 0, "delta": piece}
            delta["item_id"] = "msg_1"
            event({**delta, "logprobs": [], "output_index": index}, Gives(content=piece))
        text = "".join(plan.content)
        done = {"type": "response.output_text.done", "content_index": 0, "item_id": "msg_1", "output_index": index}
        event({**done, "text": text})
        index += 1
    for k, call in enumerate(plan.calls):
        item = {"id": f"fc_{k}", "type": "function_call", "status": "in_progress", "arguments": ""}
        item |= {"call_id": f"call_{k}", "name": call.name}
        out.wholes[0, index] = ExpectedToolCall(index, f"call_{k}", call.name, call.arguments, call.value)
        added = {"type": "response.output_item.added", "item": item, "output_index": index}
        event(added, Gives(tools=[(index, f"call_{k}", call.name, "")]))
        for piece in call.pieces:
            delta = {"type": "response.function_call_arguments.delta", "delta": piece, "item_id": f"fc_{k}"}
            event({**delta, "output_index": index}, Gives(tools=[(index, None, "", piece)]))
        done = {"type": "response.function_call_arguments.done", "arguments": call.arguments, "item_id": f"fc_{k}"}
        rest = "" if call.pieces else call.arguments  # only what the deltas did not say
        event({**done, "output_index": index}, Gives(tools=[(index, None, "", rest)]) if rest else None)
        index += 1
    if plan.finish is None:
        return
    words = draw(_responses_usage())
    status = "completed" if plan.finish == "stop" else "incomplete"
    ended = {**response, "status": status, "usage": words[0]}
    if status == "incomplete":
        ended["incomplete_details"] = {"reason": _NATIVE["openai-responses"][plan.finish]}
    event({"type": f"response.{status}", "response": ended}, Gives(finish=_reason(plan)))
    out.usage[len(out.blocks) - 1] = words[1]
    out.blocks[-1].kind = "done"


@st.composite
def _responses_usage(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, int]]:
    inp, cached, out, reasoning = (draw(st.integers(0, 10**5)) for _ in range(4))
    usage = {"input_tokens": inp + cached, "input_tokens_details": {"cached_tokens": cached}}
    usage |= {"output_tokens": out + reasoning, "output_tokens_details": {"reasoning_tokens": reasoning}}
    usage["total_tokens"] = inp + cached + out + reasoning
    return usage, _counts(inp + cached, out + reasoning)


# --- Anthropic ----------------------------------------------------------------------------------


def _anthropic(draw: st.DrawFn, plan: _Plan, out: _Out, meta: dict[str, Any]) -> None:
    block: dict[str, Any]
    delta: dict[str, Any]
    pad = " " * draw(st.sampled_from([0, 0, 12]))  # Anthropic pads some payloads before the closing brace
    pings = draw(st.lists(st.integers(2, 40), max_size=2))

    def event(payload: dict[str, Any], gives: Gives | None = None) -> int:
        """Write ``payload`` (and maybe a ping after it); its block's position."""
        text = _compact(payload)
        out.add("chunk", _sse(payload["type"], text[:-1] + pad + "}"), payload, [(0, gives)] if gives else None)
        at = len(out.blocks) - 1
        if (pings and pings[0] <= len(out.blocks)) or len(out.blocks) == 1:
            if pings and pings[0] <= len(out.blocks):
                pings.pop(0)
            out.add("heartbeat", _sse("ping", '{"type": "ping"}'), {"type": "ping"}).comment = "ping"
        return at

    inp, created, read, first, final = (draw(st.integers(0, 10**5)) for _ in range(5))
    usage = {"input_tokens": inp, "cache_creation_input_tokens": created, "cache_read_input_tokens": read}
    message = {**meta, "type": "message", "role": "assistant", "content": [], "stop_reason": None}
    event(
        {"type": "message_start", "message": {**message, "usage": {**usage, "output_tokens": first}}}, Gives(role=True)
    )
    out.usage[0] = _counts(inp + created + read, first)
    index = 0
    if plan.reasoning:
        block = {"type": "thinking", "thinking": "", "signature": ""}
        event({"type": "content_block_start", "index": index, "content_block": block})
        for piece in plan.reasoning:
            delta = {"type": "thinking_delta", "thinking": piece}
            event({"type": "content_block_delta", "index": index, "delta": delta}, Gives(reasoning=piece))
        signature = {"type": "signature_delta", "signature": "RXN0YWJsZQ=="}
        event({"type": "content_block_delta", "index": index, "delta": signature})
        event({"type": "content_block_stop", "index": index})
        index += 1
    if plan.content:
        event({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        for piece in plan.content:
            delta = {"type": "text_delta", "text": piece}
            event({"type": "content_block_delta", "index": index, "delta": delta}, Gives(content=piece))
        event({"type": "content_block_stop", "index": index})
        index += 1
    for k, call in enumerate(plan.calls):
        block = {"type": "tool_use", "id": f"toolu_{k}", "name": call.name, "input": {}}
        arguments = call.arguments if call.value else "{}"
        out.wholes[0, index] = ExpectedToolCall(index, f"toolu_{k}", call.name, arguments, call.value)
        event({"type": "content_block_start", "index": index, "content_block": block},
              Gives(tools=[(index, f"toolu_{k}", call.name, "")]))  # fmt: skip
        pieces = [""] + (call.pieces if call.value else [])  # the first fragment is empty; no-argument tools stop there
        for piece in pieces:
            delta = {"type": "input_json_delta", "partial_json": piece}
            gives = Gives(tools=[(index, None, "", piece)]) if piece else None
            event({"type": "content_block_delta", "index": index, "delta": delta}, gives)
        stop = Gives(tools=[(index, None, "", "{}")]) if not call.value else None
        event({"type": "content_block_stop", "index": index}, stop)
        index += 1
    if plan.finish is None:
        return
    word = "tool_use" if _reason(plan) == "tool_calls" else _NATIVE["anthropic"][plan.finish or ""]
    restated = {"input_tokens": inp} if draw(st.booleans()) else {}  # some deltas restate the input count
    delta = {"type": "message_delta", "delta": {"stop_reason": word, "stop_sequence": None}}
    at = event({**delta, "usage": {**restated, "output_tokens": final}}, Gives(finish=_reason(plan)))
    out.usage[at] = _counts(inp + created + read, final)
    if draw(st.integers(0, 4)) > 0:  # else the connection ends before message_stop: still whole
        out.add("done", _sse("message_stop", '{"type":"message_stop"' + pad + "}"), {"type": "message_stop"})


# --- Gemini --------------------------------------------------------------------------------------


def _gemini(draw: st.DrawFn, plans: list[_Plan], out: _Out, meta: dict[str, Any]) -> None:
    usage_mode = draw(st.sampled_from(["every", "last", "separate"]))
    with_index = len(plans) > 1 or draw(st.booleans())
    entries: list[tuple[int, dict[str, Any], Gives]] = []
    for i, plan in enumerate(plans):
        mine: list[tuple[dict[str, Any], Gives]] = []
        mine += [({"text": p, "thought": True}, Gives(reasoning=p)) for p in plan.reasoning]
        mine += [({"text": p}, Gives(content=p)) for p in plan.content]
        for k, call in enumerate(plan.calls):
            fn: dict[str, Any] = {"name": call.name} | ({"args": call.value} if call.value else {})
            out.wholes[i, k] = ExpectedToolCall(k, None, call.name, call.arguments if call.value else "{}", call.value)
            mine.append(({"functionCall": fn}, Gives(tools=[(k, None, call.name, out.wholes[i, k].arguments)])))
        if not mine:
            mine.append(({"text": ""}, Gives()))
        mine[0][1].role = True
        entries += [(i, part, gives) for part, gives in mine]
    order = draw(st.permutations(range(len(entries))))
    # keep each candidate's own order: take the k-th entry of whichever candidate comes next
    queues: dict[int, list[tuple[dict[str, Any], Gives]]] = {}
    for i, part, gives in entries:
        queues.setdefault(i, []).append((part, gives))
    labels = [entries[k][0] for k in order]
    prompt, thoughts = draw(st.integers(0, 10**5)), draw(st.integers(0, 10**4))
    produced = 0
    for n, i in enumerate(labels):
        part, gives = queues[i].pop(0)
        candidate: dict[str, Any] = {"content": {"parts": [part], "role": "model"}}
        last = not queues[i]
        if last and plans[i].finish is not None:
            candidate["finishReason"] = _NATIVE["gemini"][plans[i].finish or ""]
            gives.finish = _reason(plans[i])
        if with_index:
            candidate["index"] = i
        payload: dict[str, Any] = {"candidates": [candidate]}
        produced += 1 + len(part.get("text", ""))
        counts = {"promptTokenCount": prompt, "candidatesTokenCount": produced, "thoughtsTokenCount": thoughts}
        counts["totalTokenCount"] = prompt + produced + thoughts
        final = n == len(labels) - 1
        if usage_mode == "every" or (usage_mode == "last" and final):
            payload["usageMetadata"] = counts
        elif usage_mode == "last":
            payload["usageMetadata"] = {"trafficType": "ON_DEMAND"}  # no counts: changes nothing
        out.add("chunk", _gemini_data(payload | meta), payload, [(i, gives)])
        if "candidatesTokenCount" in payload.get("usageMetadata", {}):
            out.usage[len(out.blocks) - 1] = _counts(prompt, produced + thoughts)
        if final and usage_mode == "separate":
            out.add("chunk", _gemini_data({"usageMetadata": counts} | meta), {"usageMetadata": counts})
            out.usage[len(out.blocks) - 1] = _counts(prompt, produced + thoughts)


def _gemini_data(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ": ")).encode() + b"\r\n\r\n"


# --- errors --------------------------------------------------------------------------------------


def _error(draw: st.DrawFn, dialect: str, out: _Out, message: str, meta: dict[str, Any]) -> ExpectedError:
    """Append the API's mid-stream error; the error a client must report
    (``meta``: the members of a Responses API ``response``)."""
    body: dict[str, Any]
    if dialect == "anthropic":
        body = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
        out.add("error", _sse("error", json.dumps(body)), body)
        return ExpectedError(message, None, "overloaded_error")
    if dialect == "gemini":
        error = {"code": 503, "message": message, "status": "UNAVAILABLE"}
        if draw(st.booleans()):  # raw pretty-printed lines, no data: (what Gemini sends after a 200)
            out.add("error", json.dumps({"error": error}, indent=2, ensure_ascii=False).encode() + b"\n")
        else:
            out.add("error", _gemini_data({"error": error}), {"error": error})
        return ExpectedError(message, "503", "UNAVAILABLE")
    seq = sum(1 for b in out.blocks if b.payload is not None)
    # response.failed ends a response that started; an error event may come first.
    shape = draw(st.sampled_from(["nested", "flat", "failed"] if out.blocks else ["nested", "flat"]))
    if shape == "failed":  # the terminal event of a response that failed: the answer's end, with an error
        failure = {"code": "server_error", "message": message}
        response = {**meta, "object": "response", "status": "failed", "error": failure, "output": [], "usage": None}
        body = {"type": "response.failed", "response": response, "sequence_number": seq}
        out.add("done", _sse("response.failed", _compact(body)), body, [(0, Gives(finish="error"))])
        return ExpectedError(message, "server_error", None)
    if shape == "nested":  # what OpenAI sends
        error = {"type": "too_many_requests", "code": "too_many_requests", "message": message, "param": None}
        body = {"type": "error", "sequence_number": seq, "error": error}
        expected = ExpectedError(message, "too_many_requests", "too_many_requests")
    else:  # what it documents
        body = {"type": "error", "code": "server_error", "message": message, "param": None, "sequence_number": seq}
        expected = ExpectedError(message, "server_error", None)
    out.add("error", _sse("error", _compact(body)), body)
    return expected


# --- the strategy --------------------------------------------------------------------------------


def _compact(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _sse(name: str, data: str) -> bytes:
    return f"event: {name}\ndata: {data}\n\n".encode()


@st.composite
def api_case(draw: st.DrawFn, dialect: str, max_choices: int, faults: bool) -> ChatCase:
    fault = draw(st.sampled_from(["none", "none", "error", "cut"])) if faults else "none"
    message = draw(st.sampled_from(_MESSAGES))
    n = draw(st.integers(1, max_choices)) if dialect == "gemini" else 1
    plans = [draw(_plan(dialect)) for _ in range(n)]
    model = draw(st.sampled_from(["gpt-5", "claude-sonnet-4-5", "gemini-2.5-flash", "模型"]))
    out = _Out()
    meta_id = {"openai-responses": "resp_1", "anthropic": "msg_1"}.get(dialect, "r1")
    meta: dict[str, Any] = {}
    if dialect == "openai-responses":
        meta = {"id": "resp_1", "created_at": draw(st.integers(1, 2**31)), "model": model}
        _responses(draw, plans[0], out, meta)
    elif dialect == "anthropic":
        _anthropic(draw, plans[0], out, {"id": "msg_1", "model": model})
    else:
        _gemini(draw, plans, out, {"modelVersion": model, "responseId": "r1"})
    error: ExpectedError | None = None
    pending = 0
    ending = ""
    if fault == "error":
        # The error takes the end marker's place: a reader is done after one.
        last = next((k for k, b in enumerate(out.blocks) if b.kind == "done"), len(out.blocks))
        at = draw(st.integers(0, last))
        del out.blocks[at:]
        out.usage = {k: u for k, u in out.usage.items() if k < at}
        error = _error(draw, dialect, out, message, meta)
    elif fault == "cut":
        events = [k for k, b in enumerate(out.blocks) if b.payload is not None]
        at = draw(st.sampled_from(events))
        pending = draw(st.integers(1, len(out.blocks[at].raw) - 2))
        out.blocks[at:] = [Block("cut", out.blocks[at].raw[:pending])]
        ending = "partial-event"
    blocks = out.blocks
    choices, given = fold(blocks, out.wholes)
    if not ending:
        if any(b.kind == "done" for b in blocks):
            ending = "done"
        elif choices and all(c.finish_reason is not None for c in choices.values()):
            ending = "clean-eof"
        else:
            ending = "eof-before-done"
    usage = None
    for k in range(len(blocks)):
        usage = out.usage.get(k, usage) if blocks[k].kind != "cut" else usage
    return ChatCase(
        blocks=blocks,
        newline="\r\n" if dialect == "gemini" else "\n",
        space=True,
        serializer="compact",
        expected=Expected(choices, usage, error, outcome(choices, given, error, ending)),
        ending=ending,
        pending=pending,
        response_id=meta_id if any(b.payload is not None for b in blocks) else None,
        model=model,
        created=None,
        heartbeats=[b.comment for b in blocks if b.comment is not None],
    )
