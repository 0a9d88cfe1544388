"""Hypothesis strategies for valid OpenAI-compatible chat-completion streams.

``chat_streams()`` draws a whole stream as it would come off the wire from one
of the servers of DIALECTS.md, together with what a correct consumer must
build from it: per choice the content, reasoning, refusal, role, finish
reason, tool calls and logprobs; the usage; the metadata; the heartbeats;
how the stream ends; and the outcome of SPEC §4.

How a stream is built:

1. Each choice gets a *plan*: its texts and tool calls, each split into
   fragments anywhere (tool arguments are ``json.dumps`` output, possibly
   with ``\\uXXXX`` escapes, cut at any character, so inside escapes too),
   written as a list of choice entries (``{"delta": {...}, "finish_reason":
   ...}``) in one of the shapes real servers use.
2. The plans are interleaved in a random order that keeps each choice's own
   order; consecutive entries of different choices may share a chunk.  Wire
   choice indexes are assigned by first appearance (ascending for OpenAI's
   own shape, otherwise any distinct numbers, so 1 may come before 0).
3. Usage, metadata, a leading Azure filter chunk, trailing annotation
   chunks, heartbeats, blank payloads, the serializer (compact UTF-8,
   Python's spaced ASCII, Go's escaped ``<>&``), the line ending, the
   ``data:`` prefix with or without its space, ``[DONE]`` and bytes after it
   are drawn per stream.

``chat_streams(openai_shape=True)`` keeps to what api.openai.com sends (one
choice per chunk, first seen in index order; role chunk first; tool index =
position, id and name only on the first fragment; usage only on a final
``choices: []`` chunk) so that the official SDK's accumulator can be fed the
same chunks.

``mutated_streams()`` damages generated streams (drop, duplicate, swap
blocks; flip bytes; truncate; insert garbage lines; replace JSON values of
any position with values of other types) for never-crash properties.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from ssestate import DONE_BYTES, Heartbeat, ServerSentEvent, encode, encode_chunk

__all__ = [
    "Block",
    "ChatCase",
    "ExpectedChoice",
    "ExpectedToolCall",
    "chat_streams",
    "json_values",
    "mutated_streams",
    "texts",
]

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

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
"""Any JSON value (no NaN: it would not compare equal to itself)."""

_names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,20}", fullmatch=True)
_ids = st.from_regex(r"[A-Za-z0-9]{1,24}", fullmatch=True)


@dataclass
class ExpectedToolCall:
    """A tool call as the consumer must assemble it."""

    index: int
    id: str | None
    name: str
    arguments: str
    value: Any  # what ``arguments`` decodes to


@dataclass
class ExpectedChoice:
    """A choice as the consumer must assemble it."""

    index: int
    role: str | None = None
    content: str = ""
    reasoning: str | None = None
    refusal: str | None = None
    finish_reason: str | None = None
    tool_calls: list[ExpectedToolCall] = field(default_factory=list)
    logprobs: list[Any] | None = None


@dataclass
class Block:
    """One unit of the body: its bytes and, for a chunk, the object it carries.

    ``kind`` is "chunk", "comment", "blank" (a whitespace-only payload),
    "done" or "after-done" (bytes a consumer must ignore).
    """

    kind: str
    raw: bytes
    payload: dict[str, Any] | None = None
    comment: str | None = None


@dataclass
class ChatCase:
    """A generated stream and everything a consumer must get from it."""

    blocks: list[Block]
    newline: str
    space: bool  # "data: " (True) or "data:" (False)
    serializer: str
    choices: dict[int, ExpectedChoice]
    usage: dict[str, Any] | None
    ending: str  # "done" ([DONE]), "clean-eof" or "eof-before-done"
    outcome: str
    response_id: str
    model: str
    created: int
    heartbeats: list[str]

    @property
    def body(self) -> bytes:
        return b"".join(block.raw for block in self.blocks)

    @property
    def payloads(self) -> list[dict[str, Any]]:
        """The chunk objects, in wire order."""
        return [block.payload for block in self.blocks if block.payload is not None]

    def encode_payload(self, payload: Any) -> bytes:
        """Write ``payload`` (any JSON value) the way this stream writes chunks."""
        return _data_line(_serialize(payload, self.serializer), self.newline, self.space)


def _serialize(payload: Any, serializer: str) -> str:
    if serializer == "python":  # json.dumps defaults: spaces, \\u escapes
        return json.dumps(payload)
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    if serializer == "go":  # encoding/json escapes these three inside strings
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return text


def _data_line(text: str, newline: str, space: bool) -> bytes:
    raw = encode_chunk(text, newline=newline)
    if not space:
        assert raw.startswith(b"data: ")
        raw = b"data:" + raw[6:]
    return raw


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
    held = ""
    for piece in pieces:
        if piece == held:
            return [name]
        held += piece
    return pieces


@st.composite
def _tool_call(
    draw: st.DrawFn, index: int, call_id: str | None, openai_shape: bool
) -> tuple[list[dict[str, Any]], ExpectedToolCall]:
    """The ``tool_calls[]`` items of one call, and the call they make."""
    name = draw(_names)
    value = draw(st.dictionaries(texts, json_values, max_size=3))
    ascii_only = draw(st.booleans())
    spaced = draw(st.booleans())
    arguments = json.dumps(value, ensure_ascii=ascii_only, separators=None if spaced else (",", ":"))
    expected = ExpectedToolCall(index, call_id, name, arguments, value)
    head: dict[str, Any] = {"index": index}
    if call_id is not None:
        head["id"] = call_id
    head["type"] = "function"

    if openai_shape:
        items = [{**head, "function": {"name": name, "arguments": ""}}]
        items += [{"index": index, "function": {"arguments": p}} for p in draw(_split(arguments, 8))]
        return items, expected

    style = draw(st.sampled_from(["whole", "fragments", "split-name"]))
    if style == "whole":  # Ollama, Groq, Mistral, Gemini
        return [{**head, "function": {"name": name, "arguments": arguments}}], expected

    names = draw(_split_name(name)) if style == "split-name" else [name]
    pieces = draw(_split(arguments, 8))
    first_fn: dict[str, Any] = {"name": names[0]}
    if draw(st.booleans()):  # vLLM's hermes parser leaves "arguments" out of the first item
        first_fn["arguments"] = ""
    items = [{**head, "function": first_fn}]
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
            fn["name"] = name
        elif continuation == "repeat-id" and call_id is not None:
            item["id"] = call_id
        item["function"] = fn
        items.append(item)
    return items, expected


@st.composite
def _choice_plan(draw: st.DrawFn, openai_shape: bool) -> tuple[list[dict[str, Any]], ExpectedChoice]:
    """One choice's entries (``choices[]`` items without ``index``) in wire
    order, and what they must assemble to (``index`` filled in later)."""
    exp = ExpectedChoice(index=-1)
    reasoning = "" if openai_shape else draw(texts)
    content = draw(texts)
    refusal = draw(texts) if draw(st.integers(0, 4)) == 0 else ""
    n_tools = draw(st.integers(0, 3)) if draw(st.booleans()) else 0
    finish = draw(st.sampled_from((*FINISH_REASONS, None)))  # None: the choice never finishes
    has_role = openai_shape or draw(st.booleans())
    if not (has_role or reasoning or content or refusal or n_tools or finish):
        has_role = True
    repeat_role = not openai_shape and draw(st.integers(0, 4)) == 0  # old Ollama, OpenRouter, DashScope
    with_logprobs = draw(st.integers(0, 3)) == 0
    entries: list[dict[str, Any]] = []

    if has_role:
        role_delta: dict[str, Any] = {"role": "assistant", "content": "" if not (refusal or n_tools) else None}
        if openai_shape or draw(st.booleans()):
            role_delta["refusal"] = "" if refusal else None
        entries.append({"delta": role_delta})

    if reasoning:
        style = draw(st.sampled_from(["reasoning_content", "reasoning", "both", "reasoning+null"]))
        for piece in draw(_split(reasoning)):
            if style == "both":  # OpenRouter routes that fill both with the same text
                delta: dict[str, Any] = {"reasoning": piece, "reasoning_content": piece}
            elif style == "reasoning+null":
                delta = {"content": None, "reasoning_content": None, "reasoning": piece}
            else:
                delta = {"content": None, style: piece} if draw(st.booleans()) else {style: piece}
            entries.append({"delta": delta})
        exp.reasoning = reasoning

    tokens: list[Any] = []
    for piece in draw(_split(content)):
        entry: dict[str, Any] = {"delta": {"content": piece}}
        if with_logprobs:
            token = {"token": piece, "logprob": -0.5, "bytes": list(piece.encode()), "top_logprobs": []}
            entry["logprobs"] = {"content": [token], "refusal": None}
            tokens.append(token)
        entries.append(entry)
        if not openai_shape and draw(st.integers(0, 5)) == 0:
            entries.append({"delta": {"content": ""}})  # vLLM sends empty text too
    exp.content = content
    exp.logprobs = tokens or None

    entries.extend({"delta": {"refusal": piece}} for piece in draw(_split(refusal)))
    exp.refusal = refusal or None

    if n_tools:
        if openai_shape:
            tool_indexes = list(range(n_tools))
        else:
            tool_indexes = sorted(draw(st.lists(st.integers(0, 5), min_size=n_tools, max_size=n_tools, unique=True)))
        call_ids = draw(st.lists(_ids, min_size=n_tools, max_size=n_tools, unique=True))
        no_ids = not openai_shape and draw(st.integers(0, 5)) == 0
        omit_index = not openai_shape and n_tools == 1 and draw(st.booleans())  # Gemini, old mistral.rs
        if omit_index:
            tool_indexes = [0]
        per_call = []
        for t, cid in zip(tool_indexes, call_ids, strict=True):
            items, call = draw(_tool_call(t, None if no_ids else "call_" + cid, openai_shape))
            if omit_index:
                for item in items:
                    del item["index"]
            per_call.append(items)
            exp.tool_calls.append(call)
        # parallel calls: sequential (OpenAI) or interleaved fragments
        if openai_shape or draw(st.booleans()):
            stream = [item for items in per_call for item in items]
        else:
            labels = draw(st.permutations([k for k, items in enumerate(per_call) for _ in items]))
            queues = [list(items) for items in per_call]
            stream = [queues[k].pop(0) for k in labels]
        # group consecutive items into deltas (position matters without index)
        group: list[dict[str, Any]] = []
        for item in stream:
            if group and (openai_shape or omit_index or draw(st.booleans())):
                entries.append({"delta": {"tool_calls": group}})
                group = []
            group.append(item)
        entries.append({"delta": {"tool_calls": group}})
        if not openai_shape and draw(st.integers(0, 3)) == 0:
            entries[-1]["delta"]["content"] = ""  # Ollama writes content "" beside a call

    if finish is not None:
        if not openai_shape and bool(entries) and draw(st.booleans()):
            entries[-1]["finish_reason"] = finish  # vLLM, old Ollama, Mistral, Gemini
        else:
            entries.append({"delta": {}, "finish_reason": finish})
        if not openai_shape and draw(st.integers(0, 4)) == 0:
            # SGLang repeats the finish in an extra empty-delta chunk, and one
            # version changed tool_calls to stop there.
            finish = draw(st.sampled_from((finish, *FINISH_REASONS)))
            entries.append({"delta": {}, "finish_reason": finish})
    exp.finish_reason = finish

    if repeat_role:
        for entry in entries:
            entry["delta"]["role"] = "assistant"
    explicit_nulls = openai_shape or draw(st.booleans())
    for entry in entries:
        if explicit_nulls:
            entry.setdefault("logprobs", None)
            entry.setdefault("finish_reason", None)
    if any(entry["delta"].get("role") for entry in entries):
        exp.role = "assistant"
    return entries, exp


@st.composite
def chat_streams(draw: st.DrawFn, *, openai_shape: bool = False, max_choices: int = 3) -> ChatCase:
    """A valid chat-completion stream and what it must assemble to."""
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

    # group into chunks: consecutive entries of different choices may share one
    groups: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    seen_in_current: set[int] = set()
    for k in order:
        if current and (openai_shape or k in seen_in_current or draw(st.booleans())):
            groups.append(current)
            current, seen_in_current = [], set()
        current.append({"index": wire[k], **queues[k].pop(0)})
        seen_in_current.add(k)
    groups.append(current)

    expected = {}
    for k, (_, exp) in enumerate(plans):
        exp.index = wire[k]
        expected[exp.index] = exp

    # metadata and key order
    response_id = "chatcmpl-" + draw(_ids)
    model = draw(st.sampled_from(["gpt-4o-mini", "llama-3.1-8b", "deepseek-reasoner", "qwen3:8b", "模型"]))
    created = draw(st.integers(1, 2**31))
    fingerprint = draw(st.sampled_from([None, "fp_44709d6fcb", "b6432-abcdef"]))
    key_order = "openai" if openai_shape else draw(st.sampled_from(["openai", "sorted", "llama.cpp"]))

    def meta(choices: list[dict[str, Any]]) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": response_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }
        if fingerprint is not None:
            chunk["system_fingerprint"] = fingerprint
        chunk["choices"] = choices
        return chunk

    chunks = [meta(group) for group in groups]

    if not openai_shape and draw(st.integers(0, 4)) == 0:  # Azure's prompt filter chunk
        filter_results = [{"prompt_index": 0, "content_filter_results": {"hate": {"filtered": False}}}]
        chunks.insert(
            0,
            {"choices": [], "created": 0, "id": "", "model": "", "object": "", "prompt_filter_results": filter_results},
        )
    if not openai_shape and draw(st.integers(0, 4)) == 0:  # Azure's async filter annotation, no delta
        idx = draw(st.sampled_from(sorted(expected)))
        annotation: dict[str, Any] = {
            "index": idx,
            "finish_reason": None,
            "content_filter_results": {},
            "content_filter_offsets": {},
        }
        chunks.append({"choices": [annotation], "created": 0, "id": "", "model": "", "object": ""})

    # usage
    modes = ["absent", "final-chunk", "null-then-final"]
    if not openai_shape:
        modes += ["last-chunk", "every-chunk", "x_groq"]
        if 0 in expected:
            modes.append("litellm")
    mode = draw(st.sampled_from(modes))
    usage: dict[str, Any] | None = None
    if mode != "absent":
        prompt = draw(st.integers(0, 10**6))
        completion = draw(st.integers(0, 10**6))
        pairs: list[tuple[str, Any]] = [
            ("prompt_tokens", prompt),
            ("completion_tokens", completion),
            ("total_tokens", prompt + completion),
        ]
        if draw(st.booleans()):
            pairs.append(("prompt_tokens_details", {"cached_tokens": 0}))
        usage = dict(draw(st.permutations(pairs)))
        if mode == "final-chunk":
            chunks.append({**meta([]), "usage": usage})
        elif mode == "null-then-final":
            for chunk in chunks:
                chunk["usage"] = None
            chunks.append({**meta([]), "usage": usage})
        elif mode == "last-chunk":
            chunks[-1]["usage"] = usage
        elif mode == "every-chunk":  # vLLM continuous_usage_stats: running totals, last wins
            for k, chunk in enumerate(chunks[:-1]):
                chunk["usage"] = {"prompt_tokens": prompt, "completion_tokens": k, "total_tokens": prompt + k}
            chunks[-1]["usage"] = usage
        elif mode == "x_groq":
            chunks[-1]["x_groq"] = {"id": "req_01", "usage": usage}
        else:  # LiteLLM's synthetic usage chunk carries an empty choice 0
            chunks.append({**meta([{"index": 0, "delta": {}}]), "usage": usage})

    if key_order == "sorted":
        chunks = [dict(sorted(chunk.items())) for chunk in chunks]
    elif key_order == "llama.cpp":
        chunks = [{"choices": c["choices"], **{k: v for k, v in c.items() if k != "choices"}} for c in chunks]

    # framing
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    space = openai_shape or draw(st.integers(0, 3)) > 0
    serializer = "compact" if openai_shape else draw(st.sampled_from(["compact", "python", "go"]))
    blocks = [Block("chunk", _data_line(_serialize(c, serializer), newline, space), c) for c in chunks]

    fillers = HEARTBEATS if openai_shape else (*HEARTBEATS, None)
    extras = draw(st.lists(st.tuples(st.integers(0, len(blocks)), st.sampled_from(fillers)), max_size=4))
    for position, comment in sorted(extras, key=lambda pair: -pair[0]):
        if comment is None:  # a whitespace-only payload, which is ignored
            blocks.insert(position, Block("blank", encode(ServerSentEvent("message", " "), newline=newline)))
        else:
            blocks.insert(position, Block("comment", encode(Heartbeat(comment), newline=newline), comment=comment))
    heartbeats = [block.comment for block in blocks if block.comment is not None]

    all_finished = all(exp.finish_reason is not None for exp in expected.values())
    if openai_shape or draw(st.integers(0, 3)) > 0:
        ending = "done"
        if newline == "\n" and space:
            done = DONE_BYTES
        else:
            done = (b"data: " if space else b"data:") + b"[DONE]" + newline.encode() * 2
        blocks.append(Block("done", done))
        after = draw(st.sampled_from([None, b": ping\n\n", b"data: not json\n\n", b'data: {"choices":']))
        if after is not None and not openai_shape:
            blocks.append(Block("after-done", after))
    else:
        ending = "clean-eof" if all_finished else "eof-before-done"

    reasons = {exp.finish_reason for exp in expected.values()}
    if not all_finished:
        outcome = "truncated"
    elif "length" in reasons:
        outcome = "length"
    elif "content_filter" in reasons:
        outcome = "filtered"
    else:
        outcome = "complete"

    return ChatCase(
        blocks=blocks,
        newline=newline,
        space=space,
        serializer=serializer,
        choices=expected,
        usage=usage,
        ending=ending,
        outcome=outcome,
        response_id=response_id,
        model=model,
        created=created,
        heartbeats=heartbeats,
    )


# --- damage -------------------------------------------------------------------

_ODD_VALUES = st.sampled_from(
    [None, True, False, 0, -1, 7, 2**63, 1.5, -0.0, "", "x", "stop", [], [None], [1, "a"], {}, {"a": {"b": [None]}}]
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position inside a JSON value, the value itself included."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for pos, item in enumerate(value):
            out += _paths(item, (*prefix, pos))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(copy[head], rest, new)
    return copy


@st.composite
def _damage(draw: st.DrawFn, case: ChatCase) -> bytes:
    blocks = [block.raw for block in case.blocks]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(["drop", "duplicate", "swap", "flip", "truncate", "garbage", "retype", "retype", "retype"])
        )
        if kind == "drop" and len(blocks) > 1:
            del blocks[draw(st.integers(0, len(blocks) - 1))]
        elif kind == "duplicate":
            k = draw(st.integers(0, len(blocks) - 1))
            blocks.insert(k, blocks[k])
        elif kind == "swap" and len(blocks) > 1:
            a, b = draw(st.integers(0, len(blocks) - 1)), draw(st.integers(0, len(blocks) - 1))
            blocks[a], blocks[b] = blocks[b], blocks[a]
        elif kind == "flip":
            body = bytearray(b"".join(blocks))
            if body:
                k = draw(st.integers(0, len(body) - 1))
                body[k] ^= draw(st.integers(1, 255))
            blocks = [bytes(body)]
        elif kind == "truncate":
            whole = b"".join(blocks)
            blocks = [whole[: draw(st.integers(0, len(whole)))]]
        elif kind == "garbage":
            line = draw(
                st.one_of(
                    st.binary(max_size=20),
                    st.sampled_from([b"data: {", b"data: [1,2]", b"data: null", b"event: error", b"id: 7", b"data:"]),
                )
            )
            blocks.insert(draw(st.integers(0, len(blocks))), line + case.newline.encode() * draw(st.integers(1, 2)))
        elif kind == "retype":
            chunks = [k for k, block in enumerate(case.blocks) if block.payload is not None]
            if chunks:
                k = draw(st.sampled_from(chunks))
                payload = case.blocks[k].payload
                path = draw(st.sampled_from(_paths(payload)))
                new = draw(_ODD_VALUES | json_values)
                raw = case.encode_payload(_replace(payload, path, new))
                if k < len(blocks) and blocks[k] == case.blocks[k].raw:
                    blocks[k] = raw
                else:
                    blocks.append(raw)
    return b"".join(blocks)


def mutated_streams(**kwargs: Any) -> st.SearchStrategy[bytes]:
    """Bodies of generated streams with one to three kinds of damage."""
    return chat_streams(**kwargs).flatmap(_damage)
