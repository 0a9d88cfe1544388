"""Seeded, deterministic byte streams for the benchmarks.

Theory of operation: every generator draws from its own ``random.Random``
seeded with a fixed value (``SEED`` unless the caller passes another), builds
the payloads as Python objects with a fixed key order, and serialises them the
way OpenAI's servers do (compact separators, non-ASCII written as raw UTF-8).
The same arguments therefore give byte-identical output on every call, on
every machine.  ``tests/test_bench_fixtures.py`` checks that each fixture is
what its docstring claims.

A ``Fixture`` holds the body and the ``data`` payloads the body carries, in
order; the payloads are what the ``json.loads`` floor decodes and what every
contender must end up decoding too.

Chunking helpers cut a body into the chunk sizes the benchmarks use: the
whole body, 64 KiB (a large socket read), 1460 (one TCP segment), 37 (an
awkward size that lands inside CRLF pairs and multi-byte characters) and 1.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "CHUNK_SIZES",
    "DONE",
    "EVENT",
    "MODEL",
    "SEED",
    "Fixture",
    "big_event_stream",
    "big_payload",
    "chat_stream",
    "chunk",
    "huge_line",
    "moving_envelope",
    "n2_stream",
    "tool_call_stream",
]

SEED = 20240718
MODEL = "gpt-4o-mini-2024-07-18"
DONE = "[DONE]"
CREATED = 1721300000

# One piece per event, as a server writes each event when it is ready: what
# a client reads while the model is slower than the network.
EVENT = -1
# Label -> chunk size in bytes (None: the whole body in one piece; EVENT).
CHUNK_SIZES: dict[str, int | None] = {"whole": None, "64KiB": 65536, "1460": 1460, "event": EVENT, "37": 37, "1": 1}

# Token-sized pieces of text, in the proportions a multilingual chat answer
# has: mostly English words with their leading space, runs of CJK, some emoji
# (including a skin-tone modifier and a ZWJ sequence), markdown and escapes.
# fmt: off
_ASCII = [
    " the", " stream", " parser", " event", " data", " of", " and", " to", " a", " in", " is",
    " server", " chunk", " JSON", " token", " that", " with", " for", " response", " model",
    " bytes", " line", " buffer", " client", " which", " can", " each", " when", " it", "ing",
    ".", ",", ":", " (", ")", " `", "`", "**", "\n\n", "\n-", " \"", "\"", " 42", " 2024",
    "Hello", " world", " Python", " async", " await", " function", "'s", " we", " you",
    " implementation", " incrementally", " completion", " boundary", " character", " specification",
]
_CJK = [
    "流", "式", "解析", "数据", "事件", "服务器", "客户端", "的", "了", "是", "在", "我们", "可以",
    "。", "\uff0c", "东京", "日本語", "テスト", "ストリーム", "한국어", "데이터", "模型", "回答", "字符",
]
_EMOJI = ["😀", "🚀", "👍🏽", "👨\u200d👩\u200d👧", "✨", "🎉", "🤖", "❤\ufe0f", "🇯🇵", "🔥"]
# fmt: on


def _token(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.62:
        return rng.choice(_ASCII)
    if r < 0.93:
        return rng.choice(_CJK)
    return rng.choice(_EMOJI)


def _piece(rng: random.Random) -> str:
    """The content of one chunk: a token, or two that the server coalesced."""
    return _token(rng) + _token(rng) if rng.random() < 0.55 else _token(rng)


def _text(rng: random.Random, n_tokens: int) -> str:
    return "".join(_token(rng) for _ in range(n_tokens))


def _dumps(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# Bytes each token adds inside a JSON string on the wire (escapes included).
_WIRE_SIZE = {tok: len(_dumps(tok).encode()) - 2 for tok in _ASCII + _CJK + _EMOJI}


def _alnum(rng: random.Random, n: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class Fixture:
    """A stream body and the ``data`` payloads it carries, in wire order.

    Attributes:
        name: short label used in result tables.
        body: the bytes of the HTTP response body.
        payloads: every dispatched event's data, ``"[DONE]"`` included.
    """

    name: str
    body: bytes
    payloads: tuple[str, ...]

    @property
    def json_payloads(self) -> tuple[str, ...]:
        """The payloads a client decodes as JSON (everything but ``[DONE]``)."""
        return tuple(p for p in self.payloads if p != DONE)

    @property
    def events(self) -> int:
        """Number of events the body dispatches."""
        return len(self.payloads)

    @property
    def largest_event(self) -> int:
        """Size in bytes of the largest event on the wire (``data: …\\n\\n``)."""
        return max(len(p.encode()) for p in self.payloads) + len("data: \n\n")


class _Chunks:
    """Builds ``chat.completion.chunk`` payloads sharing one response head."""

    def __init__(self, rng: random.Random) -> None:
        self.head = {
            "id": "chatcmpl-" + _alnum(rng, 29),
            "object": "chat.completion.chunk",
            "created": CREATED + rng.randrange(10_000_000),
            "model": MODEL,
            "system_fingerprint": "fp_" + "".join(rng.choice("0123456789abcdef") for _ in range(10)),
        }

    def choice(self, delta: dict[str, object], index: int = 0, finish: str | None = None) -> str:
        chunk = dict(self.head)
        chunk["choices"] = [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return _dumps(chunk)

    def usage(self, prompt: int, completion: int) -> str:
        chunk = dict(self.head)
        chunk["choices"] = []
        chunk["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        return _dumps(chunk)


def _build(name: str, payloads: list[str]) -> Fixture:
    body = "".join(f"data: {p}\n\n" for p in payloads).encode()
    return Fixture(name, body, tuple(payloads))


def chat_stream(n_chunks: int = 2000, seed: int = SEED) -> Fixture:
    """An OpenAI chat-completion stream of one answer.

    Shape (as api.openai.com sends it with ``include_usage``): a role chunk
    ``{"role":"assistant","content":"","refusal":null}``, ``n_chunks`` content
    chunks of one or two tokens each (about 272 bytes each on the wire, text
    mixing ASCII, CJK and emoji), a
    finish chunk with ``delta: {}``, a usage chunk with ``choices: []``, then
    ``data: [DONE]``.
    """
    rng = random.Random(seed)
    c = _Chunks(rng)
    payloads = [c.choice({"role": "assistant", "content": "", "refusal": None})]
    payloads += [c.choice({"content": _piece(rng)}) for _ in range(n_chunks)]
    payloads.append(c.choice({}, finish="stop"))
    payloads.append(c.usage(rng.randrange(20, 400), n_chunks))
    payloads.append(DONE)
    return _build("chat", payloads)


def _arguments(rng: random.Random, n_items: int) -> str:
    """A tool call's JSON arguments text with mixed-script strings."""
    args = {
        "location": rng.choice(["東京, 日本", "São Paulo, Brasil", "Paris, France", "서울, 대한민국"]),
        "unit": rng.choice(["celsius", "fahrenheit"]),
        "queries": [_text(rng, 8) for _ in range(n_items)],
    }
    return _dumps(args)


def _fragments(rng: random.Random, text: str) -> Iterator[str]:
    """Cut ``text`` anywhere (inside strings and escapes) into 1..12-char pieces."""
    i = 0
    while i < len(text):
        n = rng.randint(1, 12)
        yield text[i : i + n]
        i += n


def tool_call_stream(n_items: int = 60, seed: int = SEED) -> Fixture:
    """Two parallel tool calls streamed as OpenAI does.

    Each call opens with ``index``, ``id``, ``type`` and ``function.name``
    and empty ``arguments``; its arguments then arrive as fragments of 1 to
    12 characters cut anywhere in the JSON text.  Call 0 runs to its end,
    then call 1 (OpenAI orders parallel calls this way).  A finish chunk with
    ``tool_calls``, a usage chunk and ``[DONE]`` close the stream.
    ``n_items`` sets the length of each call's arguments.
    """
    rng = random.Random(seed)
    c = _Chunks(rng)
    payloads = []
    fragments = 0
    for index in range(2):
        call: dict[str, object] = {
            "index": index,
            "id": "call_" + _alnum(rng, 24),
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        }
        delta: dict[str, object] = {"tool_calls": [call]}
        if index == 0:
            delta = {"role": "assistant", "content": None, "tool_calls": [call], "refusal": None}
        payloads.append(c.choice(delta))
        for piece in _fragments(rng, _arguments(rng, n_items)):
            payloads.append(c.choice({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
            fragments += 1
    payloads.append(c.choice({}, finish="tool_calls"))
    payloads.append(c.usage(rng.randrange(50, 400), fragments))
    payloads.append(DONE)
    return _build("tool", payloads)


def n2_stream(n_chunks: int = 1000, seed: int = SEED) -> Fixture:
    """An ``n=2`` stream: two answers whose chunks interleave.

    Each chunk carries one choice (as OpenAI sends ``n>1``).  Both role
    chunks come first, then ``n_chunks`` content chunks per choice in a
    seeded random interleaving, then each choice's finish chunk (choice 1
    first), the usage chunk and ``[DONE]``.
    """
    rng = random.Random(seed)
    c = _Chunks(rng)
    payloads = [c.choice({"role": "assistant", "content": "", "refusal": None}, index=i) for i in (0, 1)]
    left = [n_chunks, n_chunks]
    while left[0] or left[1]:
        i = rng.randrange(2) if left[0] and left[1] else (0 if left[0] else 1)
        left[i] -= 1
        payloads.append(c.choice({"content": _piece(rng)}, index=i))
    payloads.append(c.choice({}, index=1, finish="stop"))
    payloads.append(c.choice({}, index=0, finish="length"))
    payloads.append(c.usage(rng.randrange(20, 400), 2 * n_chunks))
    payloads.append(DONE)
    return _build("n2", payloads)


def _sized_content(
    c: _Chunks, rng: random.Random, event_size: int, finish: str | None = None, ascii_only: bool = False
) -> str:
    """A content chunk whose event (``data: …\\n\\n``) is exactly ``event_size`` bytes."""
    overhead = len(c.choice({"content": ""}, finish=finish).encode()) + len("data: \n\n")
    budget = event_size - overhead
    if budget < 0:
        raise ValueError(f"event_size {event_size} is below the {overhead}-byte chunk overhead")
    parts: list[str] = []
    used = 0
    while True:
        tok = rng.choice(_ASCII) if ascii_only else _token(rng)
        size = _WIRE_SIZE[tok]
        if used + size > budget:
            break
        parts.append(tok)
        used += size
    parts.append("x" * (budget - used))  # ASCII padding: one byte per character
    payload = c.choice({"content": "".join(parts)}, finish=finish)
    assert len(payload.encode()) + len("data: \n\n") == event_size
    return payload


def big_event_stream(
    n_events: int = 32, event_size: int = 65536, seed: int = SEED, *, ascii_only: bool = False
) -> Fixture:
    """``n_events`` content chunks of exactly ``event_size`` bytes each on the wire.

    Each is a valid ``chat.completion.chunk`` whose content mixes ASCII, CJK
    and emoji (only ASCII with ``ascii_only=True``: the memory benchmark uses
    both, because CPython stores a string that holds one emoji at 4 bytes a
    character); no usage chunk and no ``[DONE]``, so every event is the same
    size.
    """
    rng = random.Random(seed)
    c = _Chunks(rng)
    payloads = [_sized_content(c, rng, event_size, ascii_only=ascii_only) for _ in range(n_events)]
    return _build("64KiB-ascii" if ascii_only else "64KiB", payloads)


def moving_envelope(fx: Fixture) -> Fixture:
    """``fx`` with its ``created`` time moving on at every chunk, as older
    Ollama writes it: no two chunks share the text around their varying
    string, so ``ChatStream`` learns no template that a later chunk matches
    and parses every payload.  Same sizes, same events."""
    payloads = []
    for n, p in enumerate(fx.payloads):
        if p != DONE:
            chunk = json.loads(p)
            if "created" in chunk:
                chunk["created"] += n
            p = _dumps(chunk)
        payloads.append(p)
    moved = _build(fx.name, payloads)
    if len(moved.body) != len(fx.body):
        raise ValueError("the moved envelope changed the stream's size")
    return moved


def big_payload(size: int = 1 << 20, seed: int = SEED) -> Fixture:
    """One event of exactly ``size`` bytes on the wire: a chunk with a huge content."""
    rng = random.Random(seed)
    c = _Chunks(rng)
    return _build("payload", [_sized_content(c, rng, size, finish="stop")])


def huge_line(size: int = 4 << 20, seed: int = SEED, *, terminated: bool = False) -> bytes:
    """A ``data:`` line of exactly ``size`` bytes with no line terminator in it.

    The text mixes ASCII, CJK and emoji and is cut at a character boundary
    (padded with ASCII).  With ``terminated=True`` a ``\\n\\n`` follows, so the
    line becomes one event; without it, a parser must keep buffering until
    the stream ends.  Built by repeating one seeded 64 KiB block, which keeps
    multi-megabyte lines cheap to make.
    """
    rng = random.Random(seed)
    prefix = b"data: "
    if size < len(prefix):
        raise ValueError(f"size {size} is below len({prefix!r})")
    block = _text(rng, 12_000).replace("\n", " ").encode()[:65536]
    block = block.decode("utf-8", "ignore").encode()  # drop a character cut at the end
    room = size - len(prefix)
    body = (block * (room // len(block) + 1))[:room]
    body = body.decode("utf-8", "ignore").encode()
    body += b"x" * (room - len(body))
    return prefix + body + (b"\n\n" if terminated else b"")


def chunk(body: bytes, size: int | None) -> list[bytes]:
    """Cut ``body`` into pieces of ``size`` bytes (the last may be shorter).

    ``size=None`` gives the whole body as one piece, ``EVENT`` one piece per
    event: each ends with the blank line that ends its event (CRLF blank
    lines in a body that has them, else LF).
    """
    if size is None:
        return [body]
    if size == EVENT:
        blank = b"\r\n\r\n" if b"\r\n\r\n" in body else b"\n\n"
        pieces = body.split(blank)
        return [piece + blank for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
    if size < 1:
        raise ValueError(f"chunk size must be positive, got {size}")
    return [body[i : i + size] for i in range(0, len(body), size)]
