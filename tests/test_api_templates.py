"""Templates on the other APIs: what a template reads is what a parse reads.

Every capture of ``tests/captures/apis`` is stretched (each event that
carries text followed by copies with the text changed, so that templates
learn and then read), generated streams of captured payloads with odd
values are drawn, and envelopes that must not be read by a template are
written by hand; each is read with templates and with none (no payload is
small enough to learn from) and must give the same events and error.
"""

from __future__ import annotations

import json
import unittest.mock
from typing import Any

import pytest
from helpers import chunked, until_error
from hypothesis import given
from hypothesis import strategies as st
from test_api_readers import NAMES, load, odd_streams

import ssestate._templates
from ssestate import ChatStream


def without_templates(body: bytes, chunks: list[bytes], dialect: str, strict: bool = True) -> Any:
    with unittest.mock.patch.object(ssestate._templates, "SIZE", 0):  # no payload is small enough to learn from
        return until_error(ChatStream(dialect=dialect, strict=strict), chunks)


@pytest.mark.parametrize("name", NAMES)
def test_captures_read_by_templates_read_as_parsed(name: str) -> None:
    body, side = load(name)
    stretched = stretch(body)
    for dialect in (side["dialect"], "auto"):
        for how, chunks in [
            ("whole", [stretched]),
            ("1460", [stretched[i : i + 1460] for i in range(0, len(stretched), 1460)]),
        ]:
            got = until_error(ChatStream(dialect=dialect), chunks)
            want = without_templates(stretched, chunks, dialect)
            assert (got[0], str(got[1])) == (want[0], str(want[1])), how


TEXT_KEYS = (b'"delta":"', b'"text":"', b'"text": "', b'"partial_json":"', b'"thinking":"')


def stretch(body: bytes) -> bytes:
    """``body`` with each event that carries text followed by three copies
    of it, the text changed in each (the envelope stays): templates learn
    from the first and read the others."""
    out = []
    for block in body.split(b"\n\n"):
        out.append(block)
        if any(key in block for key in TEXT_KEYS):
            for n in range(3):
                copy = block
                for key in TEXT_KEYS:
                    copy = copy.replace(key, key + b"%d" % n)
                out.append(copy)
    return b"\n\n".join(out)


@given(case=odd_streams(), data=st.data())
def test_payloads_of_any_shape_read_by_templates_as_parsed(case: tuple[str, bytes], data: st.DataObject) -> None:
    dialect, body = case
    chunks = data.draw(chunked(body), label="chunks")
    strict = data.draw(st.booleans())
    got = until_error(ChatStream(dialect=dialect, strict=strict), chunks)
    want = without_templates(body, chunks, dialect, strict)
    assert (got[0], str(got[1])) == (want[0], str(want[1]))


def responses_text(n: int, number: Any, first: bool = False, nested: bool = False) -> bytes:
    """A Responses API text delta event, its sequence number written before
    the delta (``first``) or after it, as OpenAI writes it; ``nested``: an
    object after it holds a member of the same name and value."""
    members: list[tuple[str, Any]] = [("type", "response.output_text.delta"), ("content_index", 0)]
    members += [("delta", f"word {n} ")]
    members.insert(1 if first else 3, ("sequence_number", number))
    if nested:
        members.append(("item", {"sequence_number": number}))
    payload = json.dumps(dict(members), separators=(",", ":"))
    return f"event: response.output_text.delta\ndata: {payload}\n\n".encode()


def chat_chunk(content: str, pad: str, key: str) -> bytes:
    """A chat chunk whose padding is followed by a top-level member ``key``."""
    chunk = {"id": "c", "choices": [{"index": 0, "delta": {"content": content}}], "obfuscation": pad, key: "q"}
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


def gemini_chunk(text: str, usage: str, *, usage_first: bool = False, thought: bool = False, more: str = "") -> bytes:
    """A Gemini chunk of one text part (a thought: ``thought``), with
    ``usage`` written as is (any text, JSON or not) after the candidates or
    before them (``usage_first``), and ``more`` members at its end."""
    part = json.dumps({"text": text, **({"thought": True} if thought else {})}, ensure_ascii=False)
    candidates = f'"candidates": [{{"content": {{"parts": [{part}], "role": "model"}}, "index": 0}}]'
    members = [f'"usageMetadata": {usage}', candidates] if usage_first else [candidates, f'"usageMetadata": {usage}']
    payload = "{" + ", ".join([*members, '"modelVersion": "gemini-2.5-flash"']) + more + "}"
    return f"data: {payload}\r\n\r\n".encode()


def gemini_usage(n: int) -> str:
    return json.dumps({"promptTokenCount": 9, "candidatesTokenCount": n, "totalTokenCount": 9 + n})


# What may stand where Gemini's usage varies: reports of other shapes (a
# thinking model's count, nested details, no count, counts of other types)
# and other JSON values; text that is not JSON or nests too deeply (each
# ends its stream with a fault, so each has a stream of its own).
ODD_USAGE = [
    json.dumps({"promptTokenCount": 9, "candidatesTokenCount": 3, "thoughtsTokenCount": 40, "totalTokenCount": 52}),
    json.dumps({"promptTokenCount": 9, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}]}),
    "{}",
    json.dumps({"promptTokenCount": True, "candidatesTokenCount": 2.5, "totalTokenCount": "12"}),
    "null",
    "[1, 2]",
    '"many"',
    "-7",
    "{ }",
    json.dumps({"promptTokenCount": 9, "long": "[{" * 300}),  # long, with brackets inside a string only
    json.dumps({"promptTokenCount": 9, "deep": [[[[[[[[[[1]]]]]]]]]], "long": "-" * 500}),
]


def typed(payload: dict[str, Any]) -> bytes:
    """One event of the Responses API or Anthropic, its type on the event line."""
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def block_start(kind: str) -> bytes:
    block = (
        {"type": kind, "thinking": ""} if kind == "thinking" else {"type": kind, "id": "t", "name": "f", "input": {}}
    )
    return typed({"type": "content_block_start", "index": 0, "content_block": block})


def block_delta(kind: str, text: str) -> bytes:
    member = {"thinking_delta": "thinking", "input_json_delta": "partial_json", "text_delta": "text"}[kind]
    return typed({"type": "content_block_delta", "index": 0, "delta": {"type": kind, member: text}})


BLOCK_STOP = typed({"type": "content_block_stop", "index": 0})
MESSAGE_START = typed({"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}})


def call_item(n: int) -> bytes:
    item = {"type": "function_call", "call_id": "c", "name": "f"}
    added = typed({"type": "response.output_item.added", "output_index": 1, "item": item})
    return added + b"".join(
        typed({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": f"{n}{k}"})
        for k in range(3)
    )


ODD_NUMBERS: list[Any] = [None, -1, "7", 2.5, True, 3e2, [[{}]], 8]
BAD_USAGE = ["{oops}", "oops", "01", "[" * 5000 + "]" * 5000, '{"promptTokenCount": 9'.ljust(30)]


ODD_ENVELOPES = {
    # Any JSON value may stand where the sequence number varies: the reader
    # has no use for it, and a template reads past it.
    "sequence numbers of other types": (
        "openai-responses",
        b"".join(responses_text(n, n) for n in range(6))
        + b"".join(responses_text(n, odd) for n, odd in enumerate(ODD_NUMBERS)),
    ),
    # Where the usage so far varies, what stands there is read as a parse
    # reads it, or the chunk is parsed (and refused, when it is not JSON).
    "gemini usage of other shapes": (
        "gemini",
        b"".join(gemini_chunk(f"w{n} ", gemini_usage(n)) for n in range(6))
        + b"".join(gemini_chunk(f"odd{n}", odd) for n, odd in enumerate(ODD_USAGE)),
    ),
    # Thoughts are reasoning; a finish, a signature or a second part after
    # a template is learnt are parsed.
    **{
        f"gemini usage that is not JSON ({bad[:8]})": (
            "gemini",
            b"".join(gemini_chunk(f"w{n} ", gemini_usage(n)) for n in range(6)) + gemini_chunk("bad", bad),
        )
        for bad in BAD_USAGE
    },
    # A part that is not a thought, and says so.
    "gemini thought false": (
        "gemini",
        b"".join(gemini_chunk(f"w{n} ", gemini_usage(n)).replace(b'"}]', b'", "thought": false}]') for n in range(6)),
    ),
    "gemini thoughts and chunks with more to read": (
        "gemini",
        b"".join(gemini_chunk(f"t{n} ", gemini_usage(n), thought=True) for n in range(6))
        + b"".join(gemini_chunk(f"w{n} ", gemini_usage(n)) for n in range(6))
        + gemini_chunk("x", gemini_usage(7), more=', "error": {"code": 500, "message": "late"}')
        + gemini_chunk("y", gemini_usage(8)).replace(b'"index": 0', b'"index": 0, "finishReason": "MAX_TOKENS"')
        + gemini_chunk("z", gemini_usage(9)).replace(b'"text": "z"', b'"text": "z", "thoughtSignature": "c2ln"')
        + gemini_chunk("w", gemini_usage(10)).replace(b'"text": "w"}', b'"text": "w"}, {"text": "v"}'),
    ),
    # A block or an item started again at its index, or fragments after its
    # stop: what a template learnt from the first noted into the first one's
    # parts, and a fragment after the stop belongs to no block.
    "anthropic thinking started again": (
        "anthropic",
        MESSAGE_START
        + block_start("thinking")
        + b"".join(block_delta("thinking_delta", t) for t in "abc")
        + block_start("thinking")
        + b"".join(block_delta("thinking_delta", t) for t in "de")
        + BLOCK_STOP,
    ),
    "anthropic tool input started again, and after its stop": (
        "anthropic",
        MESSAGE_START
        + block_start("tool_use")
        + b"".join(block_delta("input_json_delta", t) for t in ["{", '"a"', ":1"])
        + block_start("tool_use")
        + b"".join(block_delta("input_json_delta", t) for t in ["{", '"b"', ":2", "}"])
        + BLOCK_STOP
        + b"".join(block_delta("input_json_delta", t) for t in "xy")
        + block_start("tool_use")
        + BLOCK_STOP,
    ),
    # Thinking deltas before their block starts, or after it stopped: a
    # template learnt from them noted nowhere, and must not read the block's.
    "anthropic thinking before its block starts": (
        "anthropic",
        b"".join(block_delta("thinking_delta", t) for t in "ab")
        + block_start("thinking")
        + b"".join(block_delta("thinking_delta", t) for t in "cd")
        + BLOCK_STOP,
    ),
    "anthropic thinking after its stop, then started again": (
        "anthropic",
        block_start("thinking")
        + BLOCK_STOP
        + b"".join(block_delta("thinking_delta", t) for t in "xy")
        + block_start("thinking")
        + block_delta("thinking_delta", "b")
        + BLOCK_STOP,
    ),
    "responses call item added again": (
        "openai-responses",
        call_item(1)
        + call_item(2)
        + typed({"type": "response.function_call_arguments.done", "output_index": 1, "arguments": "202122z"}),
    ),
    # The usage before the text: the envelope before the text varies, and no
    # template is learnt.
    "gemini usage first": (
        "gemini",
        b"".join(gemini_chunk(f"w{n} ", gemini_usage(n), usage_first=True) for n in range(8)),
    ),
    # A member of that name nested after the top-level one, equal to it in
    # the chunk a template is learnt from, then varying while the top-level
    # one stays: the probe finds it is not the chunk's usage.
    "gemini usage nested after it": (
        "gemini",
        b"".join(
            gemini_chunk(f"n{n} ", gemini_usage(0), more=f', "x": {{"usageMetadata": {gemini_usage(n)}}}')
            for n in range(8)
        ),
    ),
    # The usage written twice, the last one counting: a template reads the
    # last, or none.
    "gemini usage twice": (
        "gemini",
        b"".join(
            gemini_chunk(f"d{n} ", gemini_usage(n), more=f', "usageMetadata": {gemini_usage(0)}') for n in range(8)
        ),
    ),
    # A sequence number before the varying string: no template is learnt.
    "the sequence number first": (
        "openai-responses",
        b"".join(responses_text(n, n, first=True) for n in range(12)),
    ),
    # The last "sequence_number" is not the top-level one: no template.
    "a nested sequence number": (
        "openai-responses",
        b"".join(responses_text(n, n, nested=True) for n in range(12)),
    ),
    # The padding's value is also the key after it (found last): no template
    # is learnt, else it would read any key there, an error member too.
    "padding equal to a key": (
        "openai-chat",
        b"".join(chat_chunk(f"w{n}", "zz", "zz") for n in range(6)) + chat_chunk("w", "zz", "error"),
    ),
}


@pytest.mark.parametrize("name", sorted(ODD_ENVELOPES))
def test_odd_envelopes_read_by_templates_as_parsed(name: str) -> None:
    dialect, body = ODD_ENVELOPES[name]
    for chunks in ([body], [body[i : i + 1460] for i in range(0, len(body), 1460)], list(map(bytes, zip(body)))):
        got = until_error(ChatStream(dialect=dialect), chunks)
        want = without_templates(body, chunks, dialect)
        assert (got[0], str(got[1])) == (want[0], str(want[1]))


def nested_value_streams(depth: int) -> dict[str, bytes]:
    """For each API whose template reads a varying member, two payloads:
    the usual one, then one whose varying member is an array ``depth``
    deep."""
    deep = "[" * depth + "]" * depth
    usual = gemini_usage(1)
    return {
        "gemini": gemini_chunk("a", usual) + gemini_chunk("b", deep),
        "openai-responses": responses_text(1, 1)
        + responses_text(2, 0).replace(b'"sequence_number":0', b'"sequence_number":' + deep.encode()),
    }


def read_at_one_depth(body: bytes, dialect: str, learn: bool) -> tuple[list[Any], str]:
    """``body`` read whole, with templates or without, from the same stack
    depth either way: on CPython 3.10 and 3.11 the frames of the caller
    count toward the limit that makes a parse refuse deep JSON."""
    with unittest.mock.patch.object(ssestate._templates, "SIZE", ssestate._templates.SIZE if learn else 0):
        events, error = until_error(ChatStream(dialect=dialect), [body])
    return events, str(error)


@pytest.mark.parametrize("dialect", ["gemini", "openai-responses"])
def test_a_varying_value_nested_at_the_parse_limit_reads_as_parsed(dialect: str) -> None:
    # Read alone, the varying value nests one level less than in its
    # payload: at the depth where a parse of the payload refuses it, a
    # template must not read it.  The depth is found on the running Python.
    def refused(depth: int) -> bool:
        return read_at_one_depth(nested_value_streams(depth)[dialect], dialect, False)[1] != "None"

    low, high = 1, 1 << 16
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if refused(middle) else (middle + 1, high)
    assert refused(low) and not refused(low - 1)
    for depth in (low - 1, low, low + 1):
        body = nested_value_streams(depth)[dialect]
        for name in (dialect, "auto"):
            assert read_at_one_depth(body, name, True) == read_at_one_depth(body, name, False), depth
