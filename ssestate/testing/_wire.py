"""How ``chat_streams`` writes a stream (see ``strategies`` for the whole).

Theory of operation
-------------------
A case is drawn in three passes.  First the *style* of the stream: framing
(line ending, ``data:`` with or without its space, serializer, ``[DONE]``
padded or not), where the usage goes, Azure's extra chunks, whether and how
the stream fails.  These come first on purpose: hypothesis varies the first
choices of a test case most and tends to draw the last ones at their
simplest, and these decide most of what a client gets wrong.  Then each
choice's *plan*: its texts and tool calls, split into fragments anywhere
(tool arguments are ``json.dumps`` output, possibly with ``\\uXXXX`` escapes,
cut at any character, so inside escapes too), written as the choice entries
of one of the shapes real servers use, each with what it gives the choice.
Last the *wire*: plans interleaved in an order that keeps each choice's own
order, entries of different choices sharing chunks, wire indexes assigned by
first appearance, metadata, heartbeats and blank payloads placed, and the
fault applied (an error in one server's shape, or a cut inside an event).

Every draw is arranged so that its simplest value is the plain case (one
choice, LF, ``data:`` with a space, no fault), which is what hypothesis
shrinks towards.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from .. import Heartbeat, ServerSentEvent, encode
from ._cases import (
    Block,
    ChatCase,
    Entry,
    Expected,
    ExpectedError,
    ExpectedToolCall,
    Gives,
    data_line,
    first_of,
    fold,
    last_usage,
    outcome,
    serialize,
)

__all__ = ["chat_case", "json_values", "texts"]

FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter")
HEARTBEATS = ("ping", "", "OPENROUTER PROCESSING", "keep-alive")

_CHARS = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.sampled_from('\n\t\r"\\/<>&\x00\x7f\u2028\u0085\ufeff'),
    st.characters(min_codepoint=0xE0, max_codepoint=0x17F),  # Latin-1 / Latin Extended
    st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF),  # CJK
    st.characters(min_codepoint=0x1F300, max_codepoint=0x1F64F),  # emoji (astral)
)

texts = st.text(_CHARS, max_size=30)
"""Text as models write it: ASCII, control and escape-worthy characters,
accented Latin, CJK, astral emoji."""

# Answers as models write them, besides ``texts``: in other scripts (multi-byte
# UTF-8 in every chunk that carries them), and looking like the protocol (a
# client that searches the raw bytes for "[DONE]" or "data:" instead of
# parsing the fields finds these).
_answers = st.one_of(
    texts,
    st.sampled_from(
        [
            "Grüß dich 👋 — wie geht's?",
            "你好\uff01有什么可以帮你的吗\uff1f",
            "絵文字 🚀✨ と 👩\u200d💻",
            "[DONE]",
            "data: [DONE]\n\n",
            '"}]}\n\ndata: {"',
            ": ping\r\n",
        ]
    ),
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
"""Any JSON value (no NaN: it would not compare equal to itself)."""

_names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,20}", fullmatch=True)
_ids = st.from_regex(r"[A-Za-z0-9]{1,24}", fullmatch=True)


@st.composite
def _split(draw: st.DrawFn, text: str, max_pieces: int = 6) -> list[str]:
    """Cut ``text`` into non-empty pieces at arbitrary character positions."""
    if len(text) < 2:
        return [text] if text else []
    cuts = draw(st.lists(st.integers(1, len(text) - 1), max_size=max_pieces - 1, unique=True))
    points = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(points)]


@st.composite
def _split_name(draw: st.DrawFn, name: str) -> list[str]:
    """Cut a function name so that no piece equals the name held so far
    (such a piece would rightly be taken for a repeat)."""
    pieces = draw(_split(name, 3))
    held = itertools.accumulate(pieces)  # the name held after each piece
    repeats = any(piece == before for piece, before in zip(pieces[1:], held, strict=False))
    return [name] if repeats else pieces


@st.composite
def _tool_call(
    draw: st.DrawFn, index: int, call_id: str | None, openai_shape: bool
) -> tuple[list[tuple[dict[str, Any], tuple[int, str | None, str, str]]], ExpectedToolCall]:
    """The ``tool_calls[]`` items of one call, each with what it gives, and
    the whole call (for its decoded arguments)."""
    name = draw(_names)
    value = draw(st.dictionaries(texts, json_values, max_size=3))
    ascii_only = draw(st.booleans())
    spaced = draw(st.booleans())
    arguments = json.dumps(value, ensure_ascii=ascii_only, separators=None if spaced else (",", ":"))
    whole = ExpectedToolCall(index, call_id, name, arguments, value)
    head: dict[str, Any] = {"index": index}
    if call_id is not None:
        head["id"] = call_id
    head["type"] = "function"

    if openai_shape:
        items = [({**head, "function": {"name": name, "arguments": ""}}, (index, call_id, name, ""))]
        items += [
            ({"index": index, "function": {"arguments": p}}, (index, None, "", p)) for p in draw(_split(arguments, 8))
        ]
        return items, whole

    style = draw(st.sampled_from(["fragments", "whole", "split-name"]))
    if style == "whole":  # Ollama, Groq, Mistral, Gemini
        whole_item = {**head, "function": {"name": name, "arguments": arguments}}
        return [(whole_item, (index, call_id, name, arguments))], whole

    names = draw(_split_name(name)) if style == "split-name" else [name]
    pieces = draw(_split(arguments, 8))
    first_fn: dict[str, Any] = {"name": names[0]}
    if draw(st.booleans()):  # vLLM's hermes parser leaves "arguments" out of the first item
        first_fn["arguments"] = ""
    items = [({**head, "function": first_fn}, (index, call_id, names[0], ""))]
    continuation = draw(st.sampled_from(["plain", "sglang", "litellm", "oci", "repeat-name", "repeat-id"]))
    # each later fragment: the next name piece (if any is left) and the next arguments piece
    later_names = names[1:]
    for k in range(max(len(later_names), len(pieces))):
        name_piece = later_names[k] if k < len(later_names) else None
        piece = pieces[k] if k < len(pieces) else ""
        item: dict[str, Any] = {"index": index}
        fn: dict[str, Any] = {"arguments": piece}
        if name_piece is not None:
            fn["name"] = name_piece
        elif continuation == "sglang":
            item = {"id": None, "index": index, "type": "function"}
            fn["name"] = None
        elif continuation == "litellm":
            item = {"function": fn, "type": "function", "index": index}
        elif continuation == "oci":
            fn["name"] = ""
        elif continuation == "repeat-name" and len(names) == 1:
            fn["name"] = name  # the whole name again: a repeat, not more name
        elif continuation == "repeat-id" and call_id is not None:
            item["id"] = call_id
        item["function"] = fn
        items.append((item, (index, None, name_piece or "", piece)))
    return items, whole


@st.composite
def _choice_plan(draw: st.DrawFn, openai_shape: bool) -> tuple[list[Entry], dict[int, ExpectedToolCall]]:
    """One choice's entries (``choices[]`` items without ``index``) in wire
    order with what each gives, and its tool calls as wholes."""
    reasoning = "" if openai_shape else draw(texts)
    content = draw(_answers)
    refusal = draw(texts) if draw(st.integers(0, 4)) == 4 else ""
    n_tools = draw(st.integers(0, 3))
    reasons = (*FINISH_REASONS, None) if openai_shape else (*FINISH_REASONS, None, "insufficient_system_resource")
    finish = draw(st.sampled_from(reasons))  # None: the choice never finishes
    # A choice with nothing else to say still says its role.
    has_role = openai_shape or not draw(st.booleans()) or not (reasoning or content or refusal or n_tools or finish)
    repeat_role = not openai_shape and draw(st.integers(0, 4)) == 4  # old Ollama, OpenRouter, DashScope
    with_logprobs = draw(st.integers(0, 3)) == 3
    entries: list[Entry] = []
    wholes: dict[int, ExpectedToolCall] = {}

    if has_role:
        role_delta: dict[str, Any] = {"role": "assistant", "content": "" if not (refusal or n_tools) else None}
        if openai_shape or draw(st.booleans()):
            role_delta["refusal"] = "" if refusal else None
        entries.append(({"delta": role_delta}, Gives(role=True)))

    if reasoning:
        style = draw(st.sampled_from(["reasoning_content", "reasoning", "both", "reasoning+null"]))
        for piece in draw(_split(reasoning)):
            if style == "both":  # OpenRouter routes that fill both with the same text
                delta: dict[str, Any] = {"reasoning": piece, "reasoning_content": piece}
            elif style == "reasoning+null":
                delta = {"content": None, "reasoning_content": None, "reasoning": piece}
            else:
                delta = {"content": None, style: piece} if draw(st.booleans()) else {style: piece}
            entries.append(({"delta": delta}, Gives(reasoning=piece)))

    for piece in draw(_split(content)):
        entry: dict[str, Any] = {"delta": {"content": piece}}
        gives = Gives(content=piece)
        if with_logprobs:
            token = {"token": piece, "logprob": -0.5, "bytes": list(piece.encode()), "top_logprobs": []}
            entry["logprobs"] = {"content": [token], "refusal": None}
            gives.logprob = token
        entries.append((entry, gives))
        if not openai_shape and draw(st.integers(0, 5)) == 5:
            entries.append(({"delta": {"content": ""}}, Gives()))  # vLLM sends empty text too

    entries.extend(({"delta": {"refusal": piece}}, Gives(refusal=piece)) for piece in draw(_split(refusal)))

    if n_tools:
        if openai_shape:
            tool_indexes = list(range(n_tools))
        else:
            tool_indexes = sorted(draw(st.lists(st.integers(0, 5), min_size=n_tools, max_size=n_tools, unique=True)))
        call_ids = draw(st.lists(_ids, min_size=n_tools, max_size=n_tools, unique=True))
        no_ids = not openai_shape and draw(st.integers(0, 5)) == 5
        omit_index = not openai_shape and n_tools == 1 and draw(st.booleans())  # Gemini, old mistral.rs
        if omit_index:
            tool_indexes = [0]
        per_call = []
        for t, cid in zip(tool_indexes, call_ids, strict=True):
            items, whole = draw(_tool_call(t, None if no_ids else "call_" + cid, openai_shape))
            if omit_index:
                for item, _ in items:
                    del item["index"]
            per_call.append(items)
            wholes[t] = whole
        # parallel calls: sequential (OpenAI) or interleaved fragments
        if openai_shape or draw(st.booleans()):
            stream = [item for items in per_call for item in items]
        else:
            labels = draw(st.permutations([k for k, items in enumerate(per_call) for _ in items]))
            queues = [list(items) for items in per_call]
            stream = [queues[k].pop(0) for k in labels]
        # group consecutive items into deltas (position matters without index)
        group: list[tuple[dict[str, Any], tuple[int, str | None, str, str]]] = []
        for fragment in stream:
            if group and (openai_shape or omit_index or draw(st.booleans())):
                entries.append(({"delta": {"tool_calls": [i for i, _ in group]}}, Gives(tools=[g for _, g in group])))
                group = []
            group.append(fragment)
        entries.append(({"delta": {"tool_calls": [i for i, _ in group]}}, Gives(tools=[g for _, g in group])))
        if not openai_shape and draw(st.integers(0, 3)) == 3:
            entries[-1][0]["delta"]["content"] = ""  # Ollama writes content "" beside a call

    if finish is not None:
        if not openai_shape and bool(entries) and draw(st.booleans()):
            entries[-1][0]["finish_reason"] = finish  # vLLM, old Ollama, Mistral, Gemini
            entries[-1][1].finish = finish
        else:
            entries.append(({"delta": {}, "finish_reason": finish}, Gives(finish=finish)))
        if not openai_shape and draw(st.integers(0, 4)) == 4:
            # SGLang repeats the finish in an extra empty-delta chunk, and one
            # version changed tool_calls to stop there.
            again = draw(st.sampled_from((finish, *FINISH_REASONS)))
            entries.append(({"delta": {}, "finish_reason": again}, Gives(finish=again)))

    if repeat_role:
        for entry, gives in entries:
            entry["delta"]["role"] = "assistant"
            gives.role = True
    explicit_nulls = openai_shape or draw(st.booleans())
    for entry, _ in entries:
        if explicit_nulls:
            entry.setdefault("logprobs", None)
            entry.setdefault("finish_reason", None)
    return entries, wholes


# --- faults ---------------------------------------------------------------------------------

_MESSAGES = ("The server had an error while processing your request.", "upstream timed out", "Überlastet 🔥")


def _error_blocks(
    shape: str, message: str, *, label: int, meta: dict[str, Any], newline: str, space: bool, serializer: str
) -> tuple[list[Block], ExpectedError | None, bool]:
    """The blocks of a mid-stream error, the error a client must report, and
    whether ``[DONE]`` follows (vLLM and SGLang send it after the error)."""
    nl = newline.encode()
    body: dict[str, Any]
    if shape == "openai":  # Python's json.dumps spacing, then the connection closes
        body = {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
        return (
            [Block("error", data_line(json.dumps(body), newline, space))],
            ExpectedError(message, None, "server_error"),
            False,
        )
    if shape == "vllm":
        body = {"error": {"message": message, "type": "InternalServerError", "param": None, "code": 500}}
        return (
            [Block("error", data_line(json.dumps(body), newline, space))],
            ExpectedError(message, "500", "InternalServerError"),
            True,
        )
    if shape == "sglang":
        body = {"error": {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": 400}}
        return (
            [Block("error", data_line(json.dumps(body), newline, space))],
            ExpectedError(message, "400", "BadRequestError"),
            True,
        )
    if shape == "litellm":  # code always a string, and literal "None" where the exception had nothing
        body = {"error": {"message": message, "type": "None", "param": "None", "code": "500"}}
        return (
            [Block("error", data_line(json.dumps(body), newline, space))],
            ExpectedError(message, "500", "None"),
            False,
        )
    if shape == "openrouter":  # the error beside a choice that finishes with "error"
        body = {**meta, "choices": [{"index": label, "delta": {"content": ""}, "finish_reason": "error"}]}
        body["error"] = {"code": "server_error", "message": message}
        block = Block("error", data_line(serialize(body, serializer), newline, space), body)
        block.gives = [(label, Gives(finish="error"))]
        return [block], ExpectedError(message, "server_error", None), False
    if shape == "groq":
        body = {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "code": "tool_use_failed",
                "failed_generation": "",
                "status_code": 400,
            }
        }
        raw = b"event: error" + nl + data_line(json.dumps(body), newline, space)
        return [Block("error", raw)], ExpectedError(message, "tool_use_failed", "invalid_request_error"), False
    if shape == "text":  # a bare event: error whose data is not JSON
        raw = encode(ServerSentEvent("error", message), newline=newline)
        return [Block("error", raw)], ExpectedError(message, None, None), False
    if shape == "llama.cpp":  # an error: field line, which event-stream parsers ignore, then [DONE]
        raw = b"error: " + json.dumps({"code": 500, "message": message}).encode() + nl * 2
        return [Block("error", raw)], None, True
    # Ollama: the error becomes an ordinary empty chunk, then the body ends
    body = {**meta, "model": "", "choices": [{"index": label, "delta": {"role": "assistant", "content": ""}}]}
    block = Block("chunk", data_line(serialize(body, serializer), newline, space), body)
    block.gives = [(label, Gives(role=True))]
    return [block], None, False


# --- the strategy ---------------------------------------------------------------------------

_USAGE = ("absent", "final-chunk", "null-then-final", "last-chunk", "every-chunk", "x_groq", "litellm")
_SHAPES = ("openai", "vllm", "sglang", "litellm", "openrouter", "groq", "text", "llama.cpp", "ollama")


@dataclass
class _Style:
    """How one stream is written, drawn before anything else (see above)."""

    newline: str = "\n"
    space: bool = True
    serializer: str = "compact"
    padded_done: bool = False
    send_done: bool = True
    after_done: bytes | None = None
    fault: str = "none"  # "none", "error" or "cut"
    shape: str = "openai"  # of the error
    message: str = _MESSAGES[0]
    usage: str = "absent"
    key_order: str = "openai"
    azure_filter: bool = False
    azure_annotation: bool = False


@st.composite
def _style(draw: st.DrawFn, openai_shape: bool, faults: bool) -> _Style:
    fault = draw(st.sampled_from(["none", "none", "error", "cut"])) if faults else "none"
    if openai_shape:
        usage = draw(st.sampled_from(_USAGE[:3]))
        return _Style(fault=fault, message=draw(st.sampled_from(_MESSAGES)), usage=usage)
    return _Style(
        newline=draw(st.sampled_from(["\n", "\r\n"])),
        space=not draw(st.booleans()),
        serializer=draw(st.sampled_from(["compact", "python", "go"])),
        padded_done=draw(st.booleans()),  # a gateway pads it; still [DONE]
        send_done=draw(st.integers(0, 3)) < 3,
        after_done=draw(st.sampled_from([None, b": ping\n\n", b"data: not json\n\n", b'data: {"choices":'])),
        fault=fault,
        shape=draw(st.sampled_from(_SHAPES)),
        message=draw(st.sampled_from(_MESSAGES)),
        usage=draw(st.sampled_from(_USAGE)),
        key_order=draw(st.sampled_from(["openai", "sorted", "llama.cpp"])),
        azure_filter=draw(st.integers(0, 3)) == 3,
        azure_annotation=draw(st.integers(0, 3)) == 3,
    )


@st.composite
def _usage(draw: st.DrawFn) -> dict[str, Any]:
    prompt = draw(st.integers(0, 10**6))
    completion = draw(st.integers(0, 10**6))
    pairs: list[tuple[str, Any]] = [
        ("prompt_tokens", prompt),
        ("completion_tokens", completion),
        ("total_tokens", prompt + completion),
    ]
    if draw(st.booleans()):
        pairs.append(("prompt_tokens_details", {"cached_tokens": 0}))
    return dict(draw(st.permutations(pairs)))


def _place_usage(mode: str, usage: dict[str, Any], payloads: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """Put ``usage`` where the servers that use ``mode`` put it."""
    if mode in ("final-chunk", "null-then-final"):
        if mode == "null-then-final":
            for chunk in payloads:
                chunk["usage"] = None
        payloads.append({**meta, "choices": [], "usage": usage})
    elif mode == "last-chunk":
        payloads[-1]["usage"] = usage
    elif mode == "every-chunk":  # vLLM continuous_usage_stats: running totals, last wins
        prompt = usage["prompt_tokens"]
        for k, chunk in enumerate(payloads[:-1]):
            chunk["usage"] = {"prompt_tokens": prompt, "completion_tokens": k, "total_tokens": prompt + k}
        payloads[-1]["usage"] = usage
    elif mode == "x_groq":
        payloads[-1]["x_groq"] = {"id": "req_01", "usage": usage}
    else:  # LiteLLM's synthetic usage chunk carries an empty choice 0
        payloads.append({**meta, "choices": [{"index": 0, "delta": {}}], "usage": usage})


@st.composite
def chat_case(draw: st.DrawFn, openai_shape: bool, max_choices: int, faults: bool) -> ChatCase:
    style = draw(_style(openai_shape, faults))
    newline, space, serializer = style.newline, style.space, style.serializer
    n = draw(st.integers(1, max_choices))
    plans = [draw(_choice_plan(openai_shape)) for _ in range(n)]

    # interleave, keeping each choice's own order
    order = draw(st.permutations([k for k, (entries, _) in enumerate(plans) for _ in entries]))
    first_seen = list(dict.fromkeys(order))
    if openai_shape:
        labels = list(range(n))
    else:
        labels = draw(
            st.one_of(
                st.permutations(range(n)),
                st.lists(st.integers(0, 6), min_size=n, max_size=n, unique=True),
            )
        )
    wire = {plan: labels[rank] for rank, plan in enumerate(first_seen)}
    queues = [list(entries) for entries, _ in plans]
    wholes = {(wire[k], index): call for k, (_, calls) in enumerate(plans) for index, call in calls.items()}

    # group into chunks: consecutive entries of different choices may share one
    groups: list[list[tuple[int, Entry]]] = []
    current: list[tuple[int, Entry]] = []
    seen_in_current: set[int] = set()
    for k in order:
        if current and (openai_shape or k in seen_in_current or draw(st.booleans())):
            groups.append(current)
            current, seen_in_current = [], set()
        current.append((wire[k], queues[k].pop(0)))
        seen_in_current.add(k)
    groups.append(current)

    meta: dict[str, Any] = {"id": "chatcmpl-" + draw(_ids), "object": "chat.completion.chunk"}
    meta["created"] = draw(st.integers(1, 2**31))
    meta["model"] = draw(st.sampled_from(["gpt-4o-mini", "llama-3.1-8b", "deepseek-reasoner", "qwen3:8b", "模型"]))
    fingerprint = draw(st.sampled_from([None, "fp_44709d6fcb", "b6432-abcdef"]))
    if fingerprint is not None:
        meta["system_fingerprint"] = fingerprint

    chunks = [
        ({**meta, "choices": [{"index": label, **entry} for label, (entry, _) in group]}, group) for group in groups
    ]
    gives_of = {id(chunk): [(label, gives) for label, (_, gives) in group] for chunk, group in chunks}
    payloads = [chunk for chunk, _ in chunks]
    empty = {"created": 0, "id": "", "model": "", "object": ""}  # Azure's filter chunks
    if style.azure_filter:  # the prompt's filter results, before anything else
        filter_results = [{"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False}}}]
        payloads.insert(0, {"choices": [], **empty, "prompt_filter_results": filter_results})
    if style.azure_annotation:  # the async filter's annotation after the answer: no delta
        index = draw(st.sampled_from(labels))
        annotation: dict[str, Any] = {"index": index, "finish_reason": None}
        annotation.update(content_filter_results={}, content_filter_offsets={})
        payloads.append({"choices": [annotation], **empty})
    # LiteLLM's synthetic chunk names choice 0, which its streams always have.
    usage_mode = "final-chunk" if style.usage == "litellm" and 0 not in labels else style.usage
    if usage_mode != "absent":
        _place_usage(usage_mode, draw(_usage()), payloads, meta)

    def ordered(chunk: dict[str, Any]) -> dict[str, Any]:
        if style.key_order == "sorted":
            return dict(sorted(chunk.items()))
        if style.key_order == "llama.cpp":
            return {"choices": chunk["choices"], **{k: v for k, v in chunk.items() if k != "choices"}}
        return chunk

    blocks = []
    for chunk in payloads:
        payload = ordered(chunk)
        block = Block("chunk", data_line(serialize(payload, serializer), newline, space), payload)
        block.gives = gives_of.get(id(chunk), [])
        blocks.append(block)

    fillers = HEARTBEATS if openai_shape else (*HEARTBEATS, None)
    extras = draw(st.lists(st.tuples(st.integers(0, len(blocks)), st.sampled_from(fillers)), max_size=4))
    for position, comment in sorted(extras, key=lambda pair: -pair[0]):
        if comment is None:  # a whitespace-only payload, which is ignored
            blocks.insert(position, Block("blank", encode(ServerSentEvent("message", " "), newline=newline)))
        else:
            blocks.insert(position, Block("comment", encode(Heartbeat(comment), newline=newline), comment=comment))

    done_line = (b"data: " if space else b"data:") + b"[DONE]" + newline.encode() * 2
    if style.padded_done:
        done_line = (b"data:  " if space else b"data:\t") + b"[DONE] \t" + newline.encode() * 2
    error: ExpectedError | None = None
    pending = 0
    ending = ""
    send_done = style.send_done
    if style.fault == "error":
        at = draw(st.integers(0, len(blocks)))
        error_meta = ordered({**meta, "choices": []})
        del error_meta["choices"]
        tail, error, send_done = _error_blocks(
            style.shape,
            style.message,
            label=draw(st.sampled_from(labels)),
            meta=error_meta,
            newline=newline,
            space=space,
            serializer=serializer,
        )
        blocks = blocks[:at] + tail
    if send_done:
        blocks.append(Block("done", done_line))
        if style.after_done is not None:
            blocks.append(Block("after-done", style.after_done))
    if style.fault == "cut":  # the connection drops inside an event: its bytes are pending, never dispatched
        events = [k for k, block in enumerate(blocks) if block.kind in ("chunk", "done")]
        at = draw(st.sampled_from(events))
        raw = blocks[at].raw
        pending = draw(st.integers(1, len(raw) - len(newline)))
        blocks = [*blocks[:at], Block("cut", raw[:pending])]
        ending = "partial-event"

    choices, given = fold(blocks, wholes)
    if not ending:
        if any(block.kind == "done" for block in blocks):
            ending = "done"
        elif choices and all(c.finish_reason is not None for c in choices.values()):
            ending = "clean-eof"
        else:
            ending = "eof-before-done"
    chunk_payloads = [b.payload for b in blocks if b.payload is not None]
    return ChatCase(
        blocks=blocks,
        newline=newline,
        space=space,
        serializer=serializer,
        expected=Expected(choices, last_usage(chunk_payloads), error, outcome(choices, given, error, ending)),
        ending=ending,
        pending=pending,
        response_id=first_of(chunk_payloads, "id"),
        model=first_of(chunk_payloads, "model"),
        created=first_of(chunk_payloads, "created"),
        heartbeats=[block.comment for block in blocks if block.comment is not None],
    )
