"""Hypothesis strategies for testing what reads chat-completion streams.

``chat_streams()`` draws a whole response body as the OpenAI-compatible
servers in use write them (OpenAI, Azure, vLLM, llama.cpp, Ollama, SGLang,
LiteLLM, OpenRouter, DeepSeek, Groq, Together, Mistral, Gemini's OpenAI
endpoint), with what a correct client must make of it (``case.expected``):
per choice the content, reasoning, refusal, role, finish reason and tool
calls; the usage; the error, if any; and the outcome in the words of
``Accumulator.outcome``.  ``chunkings(body)`` draws the ways a network may
cut those bytes.  Together::

    @given(chat_streams(), st.data())
    def test_my_client(case, data):
        chunks = data.draw(chunkings(case.body))
        ...feed the chunks to the client, compare with case.expected...

Theory of operation
-------------------
``_wire`` writes the stream: first its style (framing, where the usage
goes, whether and how it fails), then each choice's plan of fragments in
one of the shapes real servers use, then the wire, with the faults applied
(a mid-stream error in one of nine servers' shapes, or a cut inside an
event).  Beside each choice entry it writes down what the entry gives the
choice, and ``_cases`` folds those gives over the blocks that made it onto
the wire: the expectation is never computed by parsing the bytes back, which
would repeat whatever a parser gets wrong.  Every draw is arranged so that
hypothesis shrinks towards the plain case (one choice, LF, ``data:`` with a
space, no fault), and a ``ChatCase`` prints as its body, one block per
line, and the expectation, so a counterexample reads as a capture and the
answer it should have given.

``chunkings`` begins with the cuts where line-based readers break (inside
characters, between CR and LF), because hypothesis draws the first option of
a late draw most often; a failure that does not depend on the cuts shrinks
to a plain body and so to the whole of it.

``chat_streams(openai_shape=True)`` keeps to what api.openai.com itself
sends (one choice per chunk, first seen in index order; role chunk first;
tool index = position, id and name only on the first fragment; usage only
on a final ``choices: []`` chunk; OpenAI's own error shape; LF only).

``chat_streams(dialect)`` draws the other APIs' streams (``_apis_wire``:
the Responses API, Anthropic Messages, Gemini) with their own hazards and
the same ``expected``, read with ``ChatStream(dialect=...)``; their usage
is expected in OpenAI's words (``prompt_tokens``, ``completion_tokens``,
``total_tokens``: the counts of SPEC §3b).

``mutated_streams()`` damages generated bodies (drop, duplicate, swap
blocks; flip bytes; truncate; insert garbage lines; replace JSON values of
any position with values of other types) for never-crash properties: no
expectation comes with them.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

from .._dialects import APIS
from ._apis_wire import api_case
from ._cases import Block, ChatCase, Expected, ExpectedChoice, ExpectedError, ExpectedToolCall
from ._wire import chat_case, json_values, texts

__all__ = [
    "Block",
    "ChatCase",
    "Expected",
    "ExpectedChoice",
    "ExpectedError",
    "ExpectedToolCall",
    "chat_streams",
    "chunkings",
    "cut_at",
    "json_values",
    "mutated_streams",
    "texts",
]


def chat_streams(
    dialect: str = "openai-chat", *, max_choices: int = 3, faults: bool = True, openai_shape: bool = False
) -> st.SearchStrategy[ChatCase]:
    """Chat-completion response bodies with what a client must make of them.

    Args:
        dialect: the API whose streams to draw: "openai-chat" (Chat
            Completions, as every OpenAI-compatible server writes it),
            "openai-responses", "anthropic" or "gemini" (one choice but
            in Gemini; ``openai_shape`` is Chat Completions' only).
        max_choices: at most this many choices (n) per stream.
        faults: also draw streams that stop with a mid-stream error or are
            cut inside an event.
        openai_shape: only what api.openai.com itself writes (no other
            server's habits).

    Returns:
        A strategy of ``ChatCase``: ``.body`` (bytes) and ``.expected``.

    Raises:
        ValueError: an unknown dialect, or ``max_choices`` below 1.
    """
    if dialect not in APIS:
        raise ValueError(f"chat_streams() draws dialect {', '.join(APIS)}; not {dialect!r}")
    if max_choices < 1:
        raise ValueError(f"max_choices must be at least 1, got {max_choices!r}")
    if dialect != "openai-chat":
        return api_case(dialect, max_choices, faults)
    return chat_case(openai_shape, max_choices, faults)


def chunkings(body: bytes) -> st.SearchStrategy[list[bytes]]:
    """Ways a network may deliver ``body``: lists of non-empty chunks that
    join to it.

    Drawn from: a cut inside every multi-byte UTF-8 character and between
    the CR and LF of every line ending (the whole body when it has neither);
    the whole body; one byte at a time; some of those cuts among cuts
    anywhere; fixed sizes.  The first comes first on purpose: hypothesis
    draws the first choice of a late draw most often, and it is where
    line-based readers break.  A counterexample that does not depend on the
    cuts shrinks to a plain body, and so to the whole of it.
    """
    n = len(body)
    if n < 2:
        return st.just([body] if body else [])
    sharp = [i for i in range(1, n) if 0x80 <= body[i] < 0xC0 or body[i - 1 : i + 1] == b"\r\n"]
    anywhere = st.lists(st.integers(1, n - 1), min_size=1, max_size=64)
    cuts: list[st.SearchStrategy[list[int]]] = [st.just(sharp), st.just([]), st.just(list(range(1, n)))]
    if sharp:
        some = st.lists(st.sampled_from(sharp), max_size=64)
        cuts.append(st.tuples(some, anywhere).map(lambda pair: pair[0] + pair[1]))
    cuts.append(anywhere)
    cuts.append(st.integers(2, 64).map(lambda size: list(range(size, n, size))))
    return st.one_of(cuts).map(lambda points: cut_at(body, points))


def cut_at(body: bytes, points: list[int]) -> list[bytes]:
    """``body`` cut at the offsets ``points``, as ``chunkings`` draws it
    (and as hypothesis prints a drawn chunking: ``cut_at(body, [12, 40])``)."""
    bounds = [0, *sorted(set(points)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds) if b > a]


# --- damage ---------------------------------------------------------------------------------

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
    chunks = [k for k, block in enumerate(case.blocks) if block.payload is not None]
    for _ in range(draw(st.integers(1, 3))):
        # Only the kinds of damage that can be done to what is left.
        kinds = (
            ["duplicate", "truncate", "garbage"]
            + (["drop", "swap"] if len(blocks) > 1 else [])
            + (["flip"] if any(blocks) else [])
            + (["retype"] * 3 if chunks else [])
        )
        kind = draw(st.sampled_from(kinds))
        if kind == "drop":
            del blocks[draw(st.integers(0, len(blocks) - 1))]
        elif kind == "duplicate":
            k = draw(st.integers(0, len(blocks) - 1))
            blocks.insert(k, blocks[k])
        elif kind == "swap":
            a, b = draw(st.integers(0, len(blocks) - 1)), draw(st.integers(0, len(blocks) - 1))
            blocks[a], blocks[b] = blocks[b], blocks[a]
        elif kind == "flip":
            body = bytearray(b"".join(blocks))
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
        else:  # retype: one JSON value of a chunk, anywhere in it, becomes a value of another type
            k = draw(st.sampled_from(chunks))
            payload = case.blocks[k].payload
            path = draw(st.sampled_from(_paths(payload)))
            raw = case.encode_payload(_replace(payload, path, draw(_ODD_VALUES | json_values)))
            # In place while the block is still where it was, else appended.
            in_place = k < len(blocks) and blocks[k] == case.blocks[k].raw
            blocks = [*blocks[:k], raw, *blocks[k + 1 :]] if in_place else [*blocks, raw]
    return b"".join(blocks)


def mutated_streams(**kwargs: Any) -> st.SearchStrategy[bytes]:
    """Bodies of ``chat_streams(**kwargs)`` with one to three kinds of
    damage, for properties that only ask that nothing crashes."""
    return chat_streams(**kwargs).flatmap(_damage)
