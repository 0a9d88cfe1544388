"""Templates: a chunk read from a learnt template gives what a parse gives.

``ChatStream`` learns the template of the usual chunk (its text around the
one string that varies: the text, or the tool-call arguments) and reads a
later payload that matches it without parsing it whole.  Every stream here is
read twice, once as users read it and once with templates out of reach
(``ssestate._templates.SIZE`` patched to 0: no payload is small enough to
learn from, so every payload is parsed); the events, and the error that ends
the stream if one does, must be the same.  That differential is the one
place these tests reach into a private module.
"""

from __future__ import annotations

import json
import unittest.mock
from typing import Any

import pytest
from helpers import chunkings, until_error
from hypothesis import given, settings
from hypothesis import strategies as st

import ssestate._templates
from ssestate import ChatStream, Delta, Done, Finish, ToolCallFragment, Usage
from ssestate.testing.strategies import chat_streams, mutated_streams, texts

ENVELOPE: dict[str, Any] = {
    "id": "chatcmpl-C42qMU7",
    "object": "chat.completion.chunk",
    "created": 1755080278,
    "model": "gpt-4o-mini-2024-07-18",
    "service_tier": "default",
    "system_fingerprint": "fp_34a54111",
}
TEXTS = ["Once", ' "upon"', " a\\b", "\n\t\u2028", " 時間", " 😀👍🏽", "", "</x>&", "ssestate", "\x1f"]


def chunk(delta: dict[str, Any], *, finish: str | None = None, pad: str | None = None, **extra: Any) -> dict[str, Any]:
    """An OpenAI chat chunk of one choice, as api.openai.com writes it."""
    out: dict[str, Any] = {
        **ENVELOPE,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }
    out.update(extra)
    if pad is not None:
        out["obfuscation"] = pad
    return out


def body(*payloads: Any, done: bool = True) -> bytes:
    lines = [p if isinstance(p, str) else json.dumps(p, ensure_ascii=False, separators=(",", ":")) for p in payloads]
    if done:
        lines.append("[DONE]")
    return "".join(f"data: {line}\n\n" for line in lines).encode()


def read(data: bytes | list[bytes], *, learn: bool = True, strict: bool = True) -> tuple[list[Any], str | None]:
    with unittest.mock.patch.object(ssestate._templates, "SIZE", ssestate._templates.SIZE if learn else 0):
        events, error = until_error(ChatStream(strict=strict), [data] if isinstance(data, bytes) else data)
    return events, None if error is None else str(error)


def same_as_parsed(data: bytes | list[bytes], *, strict: bool = True) -> list[Any]:
    """The events of ``data`` read with templates, checked against a parse of
    every payload."""
    got = read(data, strict=strict)
    assert got == read(data, learn=False, strict=strict)
    return got[0]


# -- the usual streams: read from their templates ----------------------------------


def test_openai_stream_with_padding_is_read_from_one_template() -> None:
    pads = ["AAatV4uAp", "x", "", "RmYFV8ad65HP9F", 'q\\"', "ü"]
    payloads = [chunk({"role": "assistant", "content": "", "refusal": None}, pad="WuQNX")]
    payloads += [chunk({"content": text}, pad=pads[n % len(pads)]) for n, text in enumerate(TEXTS)]
    data = body(*payloads, chunk({}, finish="stop", pad="IPio8"), done=False)
    events = same_as_parsed(data + b"data: [DONE]\n\n")
    assert events == [
        Delta(0, "", "assistant"),
        *[Delta(0, text) for text in TEXTS if text],
        Finish(0, "stop"),
        Done(True),
        events[-1],
    ]


def test_tool_call_arguments_are_read_from_their_template() -> None:
    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
    pieces = ['{"lo', 'cation"', ': "Par', 'is \\u00e9"', "}", ""]
    payloads = [chunk({"role": "assistant", "content": None, "tool_calls": [first]})]
    payloads += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
    data = body(*payloads, done=False)
    events = same_as_parsed(data)
    assert [e.arguments for e in events if type(e) is ToolCallFragment] == ["", *pieces]


# Deltas with other members beside the text, as servers send them: the
# Delta field the text goes to, and whether a chunk with an empty text still
# gives a Delta (a role beside it).
TEXT_SHAPES: dict[str, tuple[dict[str, Any], str, bool]] = {
    "deepseek reasoning": ({"content": None, "reasoning_content": "x"}, "reasoning", False),
    "deepseek answer": ({"content": "x", "reasoning_content": None}, "content", False),
    "sglang": ({"role": None, "content": None, "reasoning_content": "x", "tool_calls": None}, "reasoning", False),
    "ollama reasoning": ({"content": "", "reasoning": "x"}, "reasoning", False),
    "role on every chunk": ({"role": "assistant", "content": "x"}, "content", True),
    "dashscope": ({"content": None, "role": "assistant", "reasoning_content": "x"}, "reasoning", True),
    "litellm": (
        {"content": "x", "role": None, "function_call": None, "tool_calls": None, "audio": None},
        "content",
        False,
    ),
    "refusal": ({"refusal": "x"}, "refusal", False),
}


@pytest.mark.parametrize("name", TEXT_SHAPES)
def test_deltas_with_neutral_members_read_as_parsed(name: str) -> None:
    delta, field, empty = TEXT_SHAPES[name]
    member = next(k for k, v in delta.items() if v == "x")
    texts = ["first", *TEXTS]
    payloads = [chunk({**delta, member: text}) for text in texts]
    deltas = [e for e in same_as_parsed(body(*payloads, done=False)) if type(e) is Delta]
    assert [getattr(e, field) or "" for e in deltas] == [t for t in texts if t or empty]
    assert all(e.role == ("assistant" if empty else None) for e in deltas)


def test_a_chunk_with_more_than_its_text_teaches_nothing() -> None:
    # Tool calls beside the text, and a finish: a template would read the
    # text alone.  Here the finish reason changes and changes back, so the
    # last chunk's Finish comes from its parse.
    calls = [{"index": 0, "function": {"arguments": "{}"}}]
    payloads = [chunk({"content": f"a{n}", "tool_calls": calls}) for n in range(4)]
    payloads += [chunk({"content": "b"}, finish="stop"), chunk({"content": "c"}, finish="stop")]
    payloads += [chunk({}, finish="length"), chunk({"content": "d"}, finish="stop")]
    events = same_as_parsed(body(*payloads))
    assert [e.reason for e in events if type(e) is Finish] == ["stop", "length", "stop"]
    assert sum(type(e) is ToolCallFragment for e in events) == 4


def test_two_text_members_are_always_parsed() -> None:
    payloads = [chunk({"content": f"a{n}", "reasoning_content": f"b{n}"}) for n in range(4)]
    same_as_parsed(body(*payloads))


def test_a_new_envelope_is_learnt_again() -> None:
    # api.openai.com's "created" moves on during a long answer; a template
    # of the new envelope is learnt at the first chunk that misses.
    early = [chunk({"content": f"a{n}"}) for n in range(3)]
    late = [{**chunk({"content": f"b{n}"}), "created": ENVELOPE["created"] + 1} for n in range(3)]
    same_as_parsed(body(*early, *late))


def test_an_envelope_that_moves_at_every_chunk_reads_as_parsed() -> None:
    # Older Ollama writes "created" anew for every chunk: no template ever
    # matches, templates are let go and learning waits longer each time.
    payloads = [{**chunk({"content": f"t{n}"}), "created": n} for n in range(601)]
    events = same_as_parsed(body(*payloads, done=False))
    assert [e.content for e in events if type(e) is Delta] == [f"t{n}" for n in range(601)]
    # DeepSeek's deltas ("content":null beside the reasoning) go through the
    # general loop.
    payloads = [{**chunk({"content": None, "reasoning_content": f"t{n}"}), "created": n} for n in range(601)]
    events = same_as_parsed(body(*payloads, done=False))
    assert [e.reasoning for e in events if type(e) is Delta] == [f"t{n}" for n in range(601)]


def test_choices_of_n_2_keep_a_template_each() -> None:
    # Choices 0 and 1 take turns from the first chunk on: a new template of
    # choice 0 is not let go when a chunk of choice 1 misses it.
    payloads = []
    for n in range(10):
        one = chunk({"content": f"t{n}"})
        one["choices"][0]["index"] = n % 2
        payloads.append(one)
    same_as_parsed(body(*payloads))


def usage(n: int) -> dict[str, int]:
    return {"prompt_tokens": 17, "total_tokens": 17 + n, "completion_tokens": n}


# What may stand where the usage varies once a template reads it: reports of
# other shapes, other JSON values, none.
ODD_USAGE: list[Any] = [
    {"prompt_tokens": 17, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 3}},
    {},
    None,
    [1],
    "x",
    {"prompt_tokens": True, "completion_tokens": 2.5, "total_tokens": "9"},
    usage(9),
]


def test_usage_on_every_chunk_is_read_with_the_text() -> None:
    # vLLM's continuous_usage_stats: the usage so far on every chunk, after
    # the choices; a template reads the text and the usage.
    payloads = [chunk({"role": "assistant", "content": ""}, usage=usage(0))]
    payloads += [chunk({"content": text}, usage=usage(n)) for n, text in enumerate(TEXTS, 1)]
    payloads += [chunk({"content": "w"}, usage=odd) for odd in ODD_USAGE]
    events = same_as_parsed(body(*payloads))
    reports = [(e.prompt_tokens, e.completion_tokens, e.total_tokens) for e in events if type(e) is Usage]
    assert reports[: len(TEXTS) + 2] == [(17, n, 17 + n) for n in range(len(TEXTS) + 1)] + [(17, 4, 0)]
    assert reports[len(TEXTS) + 2 :] == [(0, 0, 0), (17, 9, 26)]  # {}, null, [1] and "x" give none
    assert [e.content for e in events if type(e) is Delta] == ["", *[t for t in TEXTS if t], *"w" * len(ODD_USAGE)]


def test_usage_that_moves_or_is_written_twice_reads_as_parsed() -> None:
    first = json.dumps(chunk({"content": "a"}), separators=(",", ":"))
    streams: list[list[Any]] = [
        # Before the choices: the envelope before the text varies.
        [json.dumps({"usage": usage(n), **chunk({"content": f"w{n}"})}) for n in range(8)],
        # Twice, the last one counting; equal in the chunk learnt from.
        [first[:-1] + f',"usage":{json.dumps(usage(n))},"usage":{json.dumps(usage(0))}}}' for n in range(8)],
        # A member of that name nested after it, equal to it in the chunk
        # learnt from, then varying while the top-level one stays.
        [first[:-1] + f',"usage":{json.dumps(usage(0))},"x":{{"usage":{json.dumps(usage(n))}}}}}' for n in range(8)],
        # An error member after a template was learnt.
        [*(chunk({"content": f"w{n}"}, usage=usage(n)) for n in range(4)), chunk({"content": "e"}, error={"m": 1})],
    ]
    for payloads in streams:
        same_as_parsed(body(START, *payloads))


# -- chunks a template must not be learnt from, or must not read ----------------------


START = '{"choices":[{"index":0,"delta":{"role":"assistant"}}]}'
REFUSED = {
    # The literal of the text is found last inside another string (an escaped
    # quote opens it): the probe lands there, not in the text.
    "found inside another string": (chunk({"content": "hi"}, note='say "hi'), chunk({"content": "ho"}, note='say "hi')),
    # Found last where a closing quote, a comma and an opening quote meet:
    # the probe makes the payload invalid.
    "found across two strings": (
        chunk({"content": ","}, note="x", more="y"),
        chunk({"content": ";"}, note="x", more="y"),
    ),
    # Found last in a value that a later duplicate key overrides: the probe
    # changes nothing.
    "found in an overridden value": tuple(
        json.dumps(chunk({"content": t}), separators=(",", ":"))[:-1] + ',"z":"a","z":"b"}' for t in "ab"
    ),
    # Groq's usage counts when the chunk's own is not an object: a template
    # reading only the chunk's own would miss it.
    "usage beside x_groq": (
        {"x_groq": {"usage": {"prompt_tokens": 5}}, **chunk({"content": "a"}, usage={"prompt_tokens": 1})},
        {"x_groq": {"usage": {"prompt_tokens": 5}}, **chunk({"content": "b"}, usage=None)},
    ),
    "usage beside an error": (
        chunk({"content": "a"}, usage={"prompt_tokens": 1}, error={"message": "m"}),
        chunk({"content": "b"}, usage={"prompt_tokens": 2}, error={"message": "m"}),
    ),
    "logprobs": tuple(
        {**chunk({"content": t}), "choices": [{"index": 0, "delta": {"content": t}, "logprobs": {"content": []}}]}
        for t in "ab"
    ),
    "the probe itself": (chunk({"content": "ssestate probe"}), chunk({"content": "ssestate probe"})),
    "written with other escapes": (
        '{"choices":[{"index":0,"delta":{"content":"a\\/b"}}]}',
        '{"choices":[{"index":0,"delta":{"content":"a\\/c"}}]}',
    ),
    # Padding found last inside a later string: the padding probe lands
    # there.
    "padding found inside another string": (
        {**chunk({"content": "a"}, pad="x"), "later": 'q"x'},
        {**chunk({"content": "b"}, pad="y"), "later": 'q"x'},
    ),
}


@pytest.mark.parametrize("name", REFUSED)
def test_a_chunk_whose_template_cannot_be_checked_teaches_nothing(name: str) -> None:
    # The first chunk of a choice is never learnt from (it starts the choice).
    payloads = (START, *REFUSED[name])
    same_as_parsed(body(*payloads))


def test_padding_before_the_text_stays_in_the_template() -> None:
    # A gateway that moves the padding before the choices: it is part of the
    # head, so the next chunk (other padding) does not match: it is parsed,
    # and the template is let go.
    first = {"obfuscation": "pad1", **chunk({"content": "a"})}
    second = {"obfuscation": "pad2", **chunk({"content": "b"})}
    same_as_parsed(body(START, first, second))


@pytest.mark.parametrize("size", [2047, 2048, 2049])
def test_payloads_around_the_template_size_limit_read_as_parsed(size: int) -> None:
    def sized(text: str) -> str:
        def payload(content: str) -> str:
            return json.dumps(chunk({"content": content}), separators=(",", ":"))

        return payload(text + "x" * (size - len(payload(text))))

    assert len(sized("a")) == size
    events = same_as_parsed(body(START, sized("a"), sized("b"), sized("c")))
    overhead = len(sized("a")) - len(json.loads(sized("a"))["choices"][0]["delta"]["content"])
    assert [len(e.content) for e in events if type(e) is Delta][1:] == [size - overhead] * 3


def test_a_duplicate_key_is_read_as_a_parse_reads_it() -> None:
    # The later "choices" wins in a parse; the template's place is that one.
    first = '{"choices":[{"index":0,"delta":{"content":"old"}}],"choices":[{"index":0,"delta":{"content":"a"}}]}'
    later = [first.replace('"a"', f'"{t}"') for t in ("b", "old", 'c\\"d')]
    events = same_as_parsed(body(first, *later))
    assert [e.content for e in events if type(e) is Delta] == ["a", "b", "old", 'c"d']


def test_a_finished_choice_is_not_read_from_its_template() -> None:
    payloads = [chunk({"content": "a"}), chunk({"content": "b"}), chunk({}, finish="stop"), chunk({"content": "c"})]
    events = same_as_parsed(body(*payloads))
    assert [type(e).__name__ for e in events[:4]] == ["Delta", "Delta", "Finish", "Delta"]


# -- properties --------------------------------------------------------------------------

_SHAPES = [
    chunk({"content": "x"}),
    chunk({"content": "x"}, pad="p"),
    chunk({"content": None, "reasoning_content": "x"}, pad="p"),
    chunk({"role": "assistant", "content": "x"}),
    chunk({"content": "", "reasoning": "x", "refusal": None}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": "x"}}]}),
    chunk({"tool_calls": [{"index": 1, "function": {"arguments": "x"}}]}, pad="p"),
    {"choices": [{"finish_reason": None, "index": 2, "delta": {"content": "x"}}], "created": 1, "id": "c"},
]
# Raw text for the varying string: quotes, escapes and their pieces, the
# characters that end JSON values, whitespace, control and non-ASCII ones.
_PIECES = [*'"\\u0aF/bnrtx}],:{[ \t\n\x01é時😀', "\\u00", '\\"', "\\\\", "null", '"p']
_RAW = st.lists(st.sampled_from(_PIECES), max_size=12).map("".join)


# What goes between the quotes of the varying string: a valid literal's
# inside, or raw text.
_INSIDE = st.one_of(texts.map(lambda text: json.dumps(text, ensure_ascii=False)[1:-1]), _RAW)


@st.composite
def near_template_streams(draw: st.DrawFn) -> bytes:
    """A stream of two usual chunks, then payloads of their text with the
    varying string (and the padding's) replaced, valid or not; the padding member
    left out, or everything up to its end; now and then one character
    changed anywhere."""
    shape = json.dumps(draw(st.sampled_from(_SHAPES)), ensure_ascii=False, separators=(",", ":"))
    head, _, tail = shape.partition('"x"')
    before, padding, after = tail.partition('"p"')
    # The first chunk starts the choice, the second (valid) is learnt from.
    lines = [shape, shape.replace('"x"', json.dumps(draw(texts), ensure_ascii=False), 1)]
    for _ in range(draw(st.integers(1, 5))):
        rest = tail
        if padding:
            rest = draw(
                st.sampled_from(
                    [
                        before + '"' + draw(_INSIDE) + '"' + after,
                        before[: before.rindex(',"obfuscation":')] + after,
                        after,
                    ]
                )
            )
        text = head + '"' + draw(_INSIDE) + '"' + rest
        if draw(st.integers(0, 3)) == 0:  # anywhere, or in what follows the varying string
            at = draw(st.integers(draw(st.sampled_from([0, len(text) - len(rest)])), len(text)))
            text = text[:at] + draw(st.sampled_from(list('"\\ }],{x0'))) + text[at + draw(st.integers(0, 1)) :]
        lines.append(text)
    return body(*lines, done=draw(st.booleans()))


@settings(max_examples=settings().max_examples * 4)
@given(near_template_streams(), st.booleans())
def test_payloads_near_a_template_read_as_parsed(data: bytes, strict: bool) -> None:
    same_as_parsed(data, strict=strict)


@given(st.one_of(chat_streams().map(lambda case: case.body), mutated_streams()), st.booleans())
def test_generated_and_damaged_streams_read_as_parsed(data: bytes, strict: bool) -> None:
    same_as_parsed(data, strict=strict)


@settings(max_examples=max(1, settings().max_examples // 6))
@given(chat_streams(max_choices=2))
def test_every_chunking_reads_as_parsed(case: Any) -> None:
    want = read(case.body, learn=False)
    for name, chunks in chunkings(case.body):
        assert read(chunks) == want, name
