"""Scenarios: named, difficult but realistic chat-completion responses.

Theory of operation
-------------------
A scenario is a function of ``(seed, speed)`` that returns a ``Script``
(``ssestate._script``): the response head and the steps a loopback server
plays.  Nothing here performs I/O; ``ssestate serve``, ``ssestate demo``
and the tests all play or parse the same scripts.

Every streamed scenario is built in two passes:

1. **What the model produced**: a list of *units*, each one event or comment
   as ``ssestate.encode`` / ``encode_chunk`` writes it, with the delay since
   the previous unit (token pacing with jitter, occasional upstream stalls,
   keep-alive comments during long silences).  Chunk shapes follow what real
   servers send (OpenAI, DeepSeek, vLLM, OpenRouter, servers built on
   sse-starlette, nginx in front of a dead backend): role chunk first,
   finish on its own chunk or on the last content chunk, a ``choices: []``
   usage chunk, ``[DONE]``.
2. **What the network delivered** (``_deliver``): units are grouped into
   writes.  A unit with no delay joins the write before it (it was produced
   at the same moment: a finish right after the last token, tokens held up
   behind a stall); a unit after a short gap may be coalesced as well (as
   when a proxy buffers); and a write may be cut in
   two at an adversarial boundary: inside a multi-byte UTF-8 character,
   between the CR and the LF of a line ending, between the two line
   endings that dispatch an event, right after ``data:``, or between a
   backslash and the character it escapes.  The first
   write that contains a multi-byte character or a CRLF is always cut there,
   so scenarios with such bytes are guaranteed to exercise it.

All randomness comes from one ``random.Random`` seeded by the scenario name
and the seed, so a (name, seed) pair always gives the same steps; ``speed``
only divides the pauses.  ``random`` picks one of the other scenarios from
its seed and perturbs it (re-cuts every write, stretches and shrinks every
pause); its expected outcome is the picked scenario's.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from ._encode import DONE_BYTES, encode, encode_chunk
from ._events import Heartbeat
from ._script import Script, Step

__all__ = ["DESCRIPTIONS", "OUTCOMES", "SCENARIOS", "expected_outcome", "random_choice", "scenario"]

Outcome = Literal["complete", "length", "truncated", "error"]

# Gaps shorter than this may be coalesced into the previous write (a burst);
# a longer gap always starts a new write, so silences stay silences.
_BURST_GAP = 0.25
_SSE_HEADERS = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]

_TEXT = (
    'Server-sent events look simple: a line that starts with "data:", then a blank line. '
    "In practice the bytes arrive in bursts, a proxy may hold them back, and a write can end "
    "anywhere, even between the two halves of a line ending.\n\n"
    "A robust client parses whatever arrived, keeps the rest for later, and shows the text at "
    "a steady pace so the reader never notices the network."
)
_CJK = (
    "流式传输会把回答一点一点地送过来。日本語の文章も、한국어 문장도 같은 방식으로 도착합니다。"
    "絵文字 🚀✨ や 👩\u200d💻 のような文字は四バイトで、途中で切れることがあります。"
    "Café, naïve, façade — e\u0301 combinée."
)
_REASONING = (
    'The user asks how many r\'s are in "strawberry". Spell it out: s-t-r-a-w-b-e-r-r-y. '
    "Positions 3, 8 and 9 are r. That makes three."
)
_ANSWER = 'There are three r\'s in "strawberry".'
_LENGTH = (
    "Here is a long list of things a streaming client must handle: partial lines, split "
    "characters, comments, retries, usage chunks, tool calls, several choices at once, and"
)
_N2 = ("Bonjour ! Je peux vous aider.", "Hello! How can I help you today? Ask me anything about streams.")


def _tokens(text: str, rng: random.Random, *, cjk: bool = False) -> list[str]:
    """Cut ``text`` into token-like pieces: words with their leading space,
    long words in two; one to three characters at a time for ``cjk``."""
    pieces: list[str] = []
    if cjk:
        i = 0
        while i < len(text):
            n = rng.randint(1, 3)
            pieces.append(text[i : i + n])
            i += n
        return pieces
    word = ""
    for ch in text:
        if ch in " \n" and word.strip():
            pieces.append(word)
            word = ""
        word += ch
    pieces.append(word)
    out: list[str] = []
    for piece in pieces:
        if len(piece) > 7:
            cut = rng.randint(3, len(piece) - 3)
            out += [piece[:cut], piece[cut:]]
        else:
            out.append(piece)
    return out


class _Builder:
    """Collects units (delay, bytes) for one streamed response."""

    def __init__(self, name: str, seed: int, *, newline: str = "\n", fingerprint: str = "fp_ssestate") -> None:
        self.name = name
        self.rng = random.Random(f"{name}/{seed}")
        self.newline = newline
        self.units: list[tuple[float, bytes]] = []
        self.delay = 0.0  # carried into the next unit
        self.created = 1_735_689_600 + self.rng.randrange(10_000_000)
        self.id = f"chatcmpl-{self.rng.getrandbits(96):024x}"
        self.fingerprint = fingerprint
        self.tokens = 0
        self.held = 0  # tokens still to come without a gap after a stall

    def wait(self, seconds: float) -> None:
        self.delay += seconds

    def unit(self, data: bytes) -> None:
        self.units.append((self.delay, data))
        self.delay = 0.0

    def comment(self, text: str) -> None:
        self.unit(encode(Heartbeat(text), newline=self.newline))

    def silence(self, seconds: float, comment: str, every: float) -> None:
        """A pause of ``seconds`` broken by a keep-alive comment every ``every`` s."""
        elapsed = 0.0
        while elapsed + every < seconds:
            self.wait(every)
            self.comment(comment)
            elapsed += every
        self.wait(seconds - elapsed)

    def chunk(self, choices: list[dict[str, Any]], **extra: Any) -> None:
        body: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": f"ssestate-{self.name}",
            "system_fingerprint": self.fingerprint,
            "choices": choices,
        }
        body.update(extra)
        self.unit(encode_chunk(body, newline=self.newline))

    def delta(self, index: int = 0, finish: str | None = None, **delta: Any) -> None:
        self.chunk([{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}])

    def think(self) -> None:
        """The gap before the next token: 15-45 ms; now and then a stall of
        0.2-0.5 s, after which the 2-6 tokens held up behind it arrive in
        the same write (a burst)."""
        if self.held:
            self.held -= 1
        elif self.rng.random() < 0.05:
            self.wait(self.rng.uniform(0.2, 0.5))
            self.held = self.rng.randint(2, 6)
        else:
            self.wait(self.rng.uniform(0.015, 0.045))

    def stream_text(self, pieces: Sequence[str], field: str = "content", index: int = 0) -> None:
        for piece in pieces:
            self.think()
            self.delta(index, **{field: piece})
            self.tokens += 1

    def usage(self, prompt: int = 0) -> None:
        prompt = prompt or 20 + self.rng.randrange(40)
        usage = {"prompt_tokens": prompt, "completion_tokens": self.tokens, "total_tokens": prompt + self.tokens}
        self.wait(0.01)
        self.chunk([], usage=usage)

    def done(self) -> None:
        self.wait(0.005)
        self.unit(DONE_BYTES.replace(b"\n", self.newline.encode()))


def _adversarial_cuts(data: bytes) -> tuple[list[int], list[int]]:
    """Cut positions in ``data``: (inside a character or a CRLF, structural).

    Structural cuts fall between the two line endings that dispatch an
    event, right after a ``data:`` field name, or inside a JSON escape."""
    sharp: list[int] = []
    plain: list[int] = []
    for i in range(1, len(data)):
        prev, cur = data[i - 1], data[i]
        if 0x80 <= cur < 0xC0 or (prev, cur) == (13, 10):
            sharp.append(i)
        elif prev == 0x5C or (prev, cur) == (10, 10) or (i >= 5 and data[i - 5 : i] == b"data:"):
            plain.append(i)
    return sharp, plain


def _deliver(
    units: Sequence[tuple[float, bytes]],
    rng: random.Random,
    speed: float,
    *,
    burst: float = 0.2,
    split: float = 0.2,
) -> list[Step]:
    """Group units into writes with pauses (see the module docstring)."""
    groups: list[tuple[float, bytearray]] = []
    for delay, data in units:
        if groups and (delay == 0 or (delay < _BURST_GAP and rng.random() < burst)):
            groups[-1][1].extend(data)
            continue
        groups.append((delay, bytearray(data)))
    steps: list[Step] = []
    forced = False
    for delay, group in groups:
        _pause(steps, delay, speed)
        data = bytes(group)
        sharp, plain = _adversarial_cuts(data)
        force = bool(sharp) and not forced
        if force or rng.random() < split:
            forced = forced or force
            # Every unit ends with a blank line, so ``plain`` is never empty.
            cut = rng.choice(sharp or plain)
            steps.append(data[:cut])
            _pause(steps, rng.uniform(0.002, 0.02), speed)
            data = data[cut:]
        steps.append(data)
    return steps


def _pause(steps: list[Step], seconds: float, speed: float) -> None:
    scaled = round(seconds / speed, 4)
    if scaled > 0:
        steps.append(scaled)


def _sse(b: _Builder, speed: float, *, content_type: str = "text/event-stream", **deliver: float) -> Script:
    headers = [("Content-Type", content_type), *_SSE_HEADERS[1:]]
    headers.append(("X-Request-Id", f"req_{b.rng.getrandbits(64):016x}"))
    return Script(200, headers, _deliver(b.units, b.rng, speed, **deliver))


# -- the scenarios -------------------------------------------------------------


def _text(seed: int, speed: float) -> Script:
    b = _Builder("text", seed)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="", refusal=None)
    b.stream_text(_tokens(_TEXT, b.rng))
    b.think()
    b.delta(finish="stop")
    b.usage()
    b.done()
    return _sse(b, speed, burst=0.3)


def _cjk(seed: int, speed: float) -> Script:
    b = _Builder("cjk", seed)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_CJK, b.rng, cjk=True))
    b.delta(finish="stop")
    b.usage()
    b.done()
    return _sse(b, speed, burst=0.3, split=0.5)


def _tool_call(b: _Builder, index: int, name: str, arguments: dict[str, Any]) -> None:
    """One call in the OpenAI shape: id, type and name once, then the
    arguments in small fragments."""
    call_id = f"call_{b.rng.getrandbits(120):030x}"
    b.think()
    b.delta(
        tool_calls=[{"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]
    )
    raw = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    i = 0
    while i < len(raw):
        n = b.rng.randint(1, 6)
        b.think()
        b.delta(tool_calls=[{"index": index, "function": {"arguments": raw[i : i + n]}}])
        b.tokens += 1
        i += n


def _tools(seed: int, speed: float) -> Script:
    b = _Builder("tools", seed)
    b.wait(b.rng.uniform(0.3, 0.5))
    b.delta(role="assistant", content=None, refusal=None)
    _tool_call(b, 0, "get_weather", {"city": "São Paulo", "unit": "celsius", "note": 'quote " and ° sign'})
    b.delta(finish="tool_calls")
    b.usage()
    b.done()
    return _sse(b, speed, split=0.4)


def _parallel_tools(seed: int, speed: float) -> Script:
    b = _Builder("parallel-tools", seed)
    b.wait(b.rng.uniform(0.3, 0.5))
    b.delta(role="assistant", content=None, refusal=None)
    _tool_call(b, 0, "get_weather", {"city": "東京", "days": 3})
    _tool_call(b, 1, "get_time", {"timezone": "Asia/Tokyo"})
    b.delta(finish="tool_calls")
    b.usage()
    b.done()
    return _sse(b, speed, burst=0.4, split=0.3)


def _n2(seed: int, speed: float) -> Script:
    """Two choices interleaved, one choice per chunk, finish on the last
    content chunk (vLLM's shape), one usage chunk for both."""
    b = _Builder("n2", seed)
    b.wait(b.rng.uniform(0.2, 0.4))
    queues = [_tokens(text, b.rng) for text in _N2]
    for index in (0, 1):
        b.delta(index, role="assistant", content="")
    while queues[0] or queues[1]:
        index = b.rng.choice([i for i in (0, 1) if queues[i]])
        piece = queues[index].pop(0)
        b.think()
        b.delta(index, finish=None if queues[index] else "stop", content=piece)
        b.tokens += 1
    b.usage()
    b.done()
    return _sse(b, speed, content_type="text/event-stream; charset=utf-8", burst=0.3)


def _length(seed: int, speed: float) -> Script:
    b = _Builder("length", seed)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_LENGTH, b.rng))
    b.delta(finish="length")
    b.usage()
    b.done()
    return _sse(b, speed)


def _reasoning(seed: int, speed: float) -> Script:
    """DeepSeek's shape: ``reasoning_content`` with ``content: null``, then
    the answer; ``: keep-alive`` while the request is queued."""
    b = _Builder("reasoning", seed, fingerprint="fp_deepseek")
    b.silence(0.6, "keep-alive", 0.25)
    b.delta(role="assistant", content=None, reasoning_content="")
    for piece in _tokens(_REASONING, b.rng):
        b.think()
        b.delta(content=None, reasoning_content=piece)
        b.tokens += 1
    b.stream_text(_tokens(_ANSWER, b.rng))
    b.delta(finish="stop", content="")
    b.usage()
    b.done()
    return _sse(b, speed)


def _drop_mid_event(seed: int, speed: float) -> Script:
    """Text, then the connection dies in the middle of an event."""
    b = _Builder("drop-mid-event", seed)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="")
    pieces = _tokens(_TEXT, b.rng)
    b.stream_text(pieces[: len(pieces) // 2])
    b.think()
    b.delta(content=pieces[len(pieces) // 2])
    last_delay, last = b.units.pop()
    script = _sse(b, speed)
    _pause(script.steps, last_delay, speed)
    script.steps += [last[: b.rng.randint(10, len(last) - 5)], "abort"]
    return script


def _no_done(seed: int, speed: float) -> Script:
    """Every choice finishes, the usage chunk comes, then the body ends
    without ``[DONE]``."""
    b = _Builder("no-done", seed)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_ANSWER + " " + _ANSWER, b.rng))
    b.delta(finish="stop")
    b.usage()
    return _sse(b, speed)


def _error_503(seed: int, speed: float) -> Script:
    """A reverse proxy's HTML page: the backend is down."""
    body = (
        b"<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
        b"<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n"
        b"</body>\r\n</html>\r\n"
    )
    headers = [("Content-Type", "text/html"), ("Retry-After", "1")]
    return Script(503, headers, [*_lead(0.05, speed), body], chunked=False)


def _error_401(seed: int, speed: float) -> Script:
    """OpenAI's answer to a bad key: pretty-printed JSON, no stream."""
    error = {
        "error": {
            "message": "Incorrect API key provided: sk-test. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    body = (json.dumps(error, indent=2) + "\n").encode()
    headers = [("Content-Type", "application/json; charset=utf-8"), ("X-Request-Id", f"req_{seed:016x}")]
    return Script(401, headers, [*_lead(0.05, speed), body], chunked=False)


def _downgrade(seed: int, speed: float) -> Script:
    """A gateway ignored ``stream: true`` and answered with one
    ``chat.completion`` object."""
    rng = random.Random(f"downgrade/{seed}")
    completion = {
        "id": f"chatcmpl-{rng.getrandbits(96):024x}",
        "object": "chat.completion",
        "created": 1_735_689_600 + rng.randrange(10_000_000),
        "model": "ssestate-downgrade",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": _ANSWER, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 14, "completion_tokens": 9, "total_tokens": 23},
    }
    body = json.dumps(completion, ensure_ascii=False).encode()
    steps = [*_lead(rng.uniform(0.5, 0.9), speed), body]
    return Script(200, [("Content-Type", "application/json")], steps, chunked=False)


def _lead(seconds: float, speed: float) -> list[Step]:
    steps: list[Step] = []
    _pause(steps, seconds, speed)
    return steps


def _heartbeat_silence(seed: int, speed: float) -> Script:
    """OpenRouter's shape: ``: OPENROUTER PROCESSING`` while queued, then a
    1.3 s silence mid-answer broken by ``: ping`` comments."""
    b = _Builder("heartbeat-silence", seed, fingerprint="fp_openrouter")
    b.silence(1.2, "OPENROUTER PROCESSING", 0.4)
    b.delta(role="assistant", content="")
    pieces = _tokens(_N2[1] + " " + _ANSWER, b.rng)
    half = len(pieces) // 3
    b.stream_text(pieces[:half])
    b.silence(1.3, "ping", 0.3)
    b.stream_text(pieces[half:])
    b.delta(finish="stop")
    b.usage()
    b.done()
    return _sse(b, speed, burst=0.1)


def _crlf(seed: int, speed: float) -> Script:
    """sse-starlette's shape: CRLF everywhere, ``: ping`` comments; writes
    cut between CR and LF."""
    b = _Builder("crlf", seed, newline="\r\n")
    b.wait(b.rng.uniform(0.2, 0.4))
    b.comment("ping")
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_ANSWER + "\r\nLine two.\nLine three.", b.rng))
    b.delta(finish="stop")
    b.usage()
    b.done()
    return _sse(b, speed, content_type="text/event-stream; charset=utf-8", split=0.5)


def _slow_first_byte(seed: int, speed: float) -> Script:
    """Nothing for 2.5 s after the response head, then a fast answer."""
    b = _Builder("slow-first-byte", seed)
    b.wait(2.5)
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_ANSWER, b.rng))
    b.delta(finish="stop")
    b.usage()
    b.done()
    return _sse(b, speed)


_BUILDERS: dict[str, tuple[Callable[[int, float], Script], Outcome, str]] = {
    "text": (_text, "complete", "plain answer in bursts, JSON escapes cut across writes"),
    "cjk": (_cjk, "complete", "CJK, emoji and combining marks cut inside UTF-8 characters"),
    "tools": (_tools, "complete", "one tool call, arguments in 1-6 character fragments"),
    "parallel-tools": (_parallel_tools, "complete", "two tool calls, index 0 then 1"),
    "n2": (_n2, "complete", "two choices interleaved (n=2), finish on the last content chunk"),
    "length": (_length, "length", "answer cut by max_tokens (finish_reason length)"),
    "reasoning": (_reasoning, "complete", "reasoning_content first, then the answer"),
    "drop-mid-event": (_drop_mid_event, "truncated", "connection dropped in the middle of an event"),
    "no-done": (_no_done, "complete", "every choice finished, but no [DONE] before the end"),
    "error-503": (_error_503, "error", "503 HTML page from a reverse proxy"),
    "error-401": (_error_401, "error", "401 JSON error: bad API key"),
    "downgrade": (_downgrade, "complete", "200 application/json: a non-streamed chat.completion"),
    "heartbeat-silence": (_heartbeat_silence, "complete", "keep-alive comments before and during long silences"),
    "crlf": (_crlf, "complete", "CRLF line endings, writes cut between CR and LF"),
    "slow-first-byte": (_slow_first_byte, "complete", "2.5 s before the first byte"),
}

#: Every scenario name, in a stable order; ``random`` last.
SCENARIOS: tuple[str, ...] = (*_BUILDERS, "random")
#: The ``Accumulator.outcome`` each fixed scenario ends with.
OUTCOMES: Mapping[str, Outcome] = {name: spec[1] for name, spec in _BUILDERS.items()}
#: One line per scenario, for help texts.
DESCRIPTIONS: Mapping[str, str] = {
    **{name: spec[2] for name, spec in _BUILDERS.items()},
    "random": "one of the others, picked by the seed, with every write and pause perturbed",
}


def random_choice(seed: int) -> str:
    """The scenario ``random`` plays for ``seed``."""
    return random.Random(f"random/{seed}").choice(list(_BUILDERS))


def expected_outcome(name: str, seed: int = 0) -> Outcome:
    """The outcome an ``Accumulator`` reaches on ``scenario(name, seed)``."""
    if name == "random":
        return OUTCOMES[random_choice(seed)]
    return OUTCOMES[_check(name)]


def scenario(name: str, seed: int = 0, speed: float = 1.0) -> Script:
    """Build the script of scenario ``name``.

    Args:
        name: one of ``SCENARIOS``.
        seed: varies token timing, write boundaries, ids (and, for
            ``random``, which scenario is played).
        speed: pauses are divided by it; ``float("inf")`` removes them.

    Raises:
        ValueError: unknown name, or ``speed`` not positive.
    """
    if not speed > 0:
        raise ValueError(f"speed must be positive, got {speed!r}")
    if name == "random":
        return _random(seed, speed)
    script = _BUILDERS[_check(name)][0](seed, speed)
    script.headers.append(("X-Ssestate-Scenario", name))
    return script


def _check(name: str) -> str:
    if name not in _BUILDERS:
        raise ValueError(f"unknown scenario {name!r}; choose one of: {', '.join(SCENARIOS)}")
    return name


def _random(seed: int, speed: float) -> Script:
    base = random_choice(seed)
    rng = random.Random(f"random/{seed}/perturb")
    script = _BUILDERS[base][0](rng.randrange(1 << 30), speed)
    steps: list[Step] = []
    for step in script.steps:
        if isinstance(step, float):
            _pause(steps, step * rng.uniform(0.3, 2.0), 1.0)
        elif isinstance(step, bytes) and script.chunked and len(step) > 1 and rng.random() < 0.5:
            cut = rng.randrange(1, len(step))
            steps.append(step[:cut])
            _pause(steps, rng.uniform(0.001, 0.01), speed)
            steps.append(step[cut:])
        else:
            steps.append(step)
    script.steps = steps
    script.headers.append(("X-Ssestate-Scenario", f"random/{base}"))
    return script
