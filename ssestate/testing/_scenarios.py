"""Scenarios: named, difficult but realistic chat-completion responses.

Theory of operation
-------------------
A scenario is a function of ``(seed, speed, options)`` that returns a
``Script`` (``ssestate.testing._script``): the response head and the steps a
loopback server plays.  Nothing here performs I/O; ``ssestate serve``,
``ssestate demo``, ``ssestate.testing.serve`` and the tests all play or parse
the same scripts.

Each scenario tells a ``Builder`` (``_builder``) what the model produced,
in the chunk shapes real servers send (OpenAI, DeepSeek, vLLM, OpenRouter,
servers built on sse-starlette, nginx in front of a dead backend): role
chunk first, finish on its own chunk or on the last content chunk, a
``choices: []`` usage chunk, ``[DONE]``; the builder delivers it in
adversarial writes.  Where no fault is intended a scenario is the OpenAI
API: it streams only when the request asked for a stream (else it answers
with one ``chat.completion``), sends the usage chunk only with
``stream_options.include_usage``, and stops a choice at ``max_tokens`` with
``finish_reason: "length"``, its usage counting exactly the tokens sent.
The faults are the scenario's point and stay whatever the request: a
dropped connection, an error head, a body that is not a stream although a
stream was asked for.

Every scenario plays in each of the four APIs (``Options.dialect``): the
Builder writes the production as Chat Completions chunks and, for another
API, hands them to ``_translate``, which says the same answer in that API's
stream or whole answer with that API's own habits (Anthropic's ``ping``,
the Responses API's ``keepalive``, Gemini's CRLF and whole function
calls).  Where a scenario's meaning is one API's own, each API gets its
honest equivalent: a bad key is that API's error body and status, an
overload is Anthropic's 529, a stream that loses its end marker reads as
cut in the Responses API (whose terminal event says how the answer ended),
and Gemini, which has no keep-alive, is silent where others send one.  A
scenario an API cannot say at all (``n2``: the Responses API and Anthropic
answer with one choice) is refused for that API (``REFUSED``).

All randomness comes from the scenario name and the seed, so a (name, seed,
options) triple always gives the same steps; ``speed`` only divides the
pauses.  ``random`` picks one of the other scenarios from its seed and
perturbs it (re-cuts every write, stretches and shrinks every pause); its
outcome is the picked scenario's.  Every script carries its ``outcome``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from typing import Literal

from .._dialects import APIS
from ._builder import PRIMING_TOKENS, Builder, Options, pause
from ._errors import bad_key, overloaded, server_error
from ._script import Script, Step

__all__ = [
    "DESCRIPTIONS",
    "DIALECTS",
    "OUTCOMES",
    "REFUSED",
    "SCENARIOS",
    "Options",
    "expected_outcome",
    "random_choice",
    "scenario",
    "scenarios_for",
]

#: The APIs the scenarios play.
DIALECTS = APIS
#: For each API, the scenarios it cannot play, and why.
REFUSED: Mapping[str, Mapping[str, str]] = {
    "openai-responses": {"n2": "it streams two choices, and the Responses API answers with one (it has no n)"},
    "anthropic": {"n2": "it streams two choices, and the Messages API answers with one (it has no n)"},
}

Outcome = Literal["complete", "length", "truncated", "error"]

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


# -- the scenarios -------------------------------------------------------------


def _answer(
    b: Builder, speed: float, *, content_type: str = "text/event-stream", burst: float = 0.2, split: float = 0.2
) -> Script:
    """The script of a fault-free answer: streamed or whole, as asked."""
    if b.options.stream:
        return b.streamed(speed, content_type=content_type, burst=burst, split=split)
    return b.non_streamed(speed)


def _text(seed: int, speed: float, options: Options) -> Script:
    b = Builder("text", seed, options)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="", refusal=None)
    b.stream_text(_tokens(_TEXT, b.rng))
    b.think()
    b.finish("stop")
    b.usage()
    b.done()
    return _answer(b, speed, burst=0.3)


def _cjk(seed: int, speed: float, options: Options) -> Script:
    b = Builder("cjk", seed, options)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_CJK, b.rng, cjk=True))
    b.finish("stop")
    b.usage()
    b.done()
    return _answer(b, speed, burst=0.3, split=0.5)


def _tool_call(b: Builder, index: int, name: str, arguments: dict[str, object]) -> bool:
    """One call in the OpenAI shape: id, type and name once, then the
    arguments in small fragments; False when ``max_tokens`` cut it."""
    call_id = f"call_{b.rng.getrandbits(120):030x}"
    if not b.room():
        return False
    b.think()
    b.delta(
        tool_calls=[{"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]
    )
    b.spend()
    raw = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    i = 0
    while i < len(raw):
        if not b.room():
            return False
        n = b.rng.randint(1, 6)
        b.think()
        b.delta(tool_calls=[{"index": index, "function": {"arguments": raw[i : i + n]}}])
        b.spend()
        i += n
    return True


def _tools(seed: int, speed: float, options: Options) -> Script:
    b = Builder("tools", seed, options)
    b.wait(b.rng.uniform(0.3, 0.5))
    b.delta(role="assistant", content=None, refusal=None)
    _tool_call(b, 0, "get_weather", {"city": "São Paulo", "unit": "celsius", "note": 'quote " and ° sign'})
    b.finish("tool_calls")
    b.usage()
    b.done()
    return _answer(b, speed, split=0.4)


def _parallel_tools(seed: int, speed: float, options: Options) -> Script:
    b = Builder("parallel-tools", seed, options)
    b.wait(b.rng.uniform(0.3, 0.5))
    b.delta(role="assistant", content=None, refusal=None)
    if _tool_call(b, 0, "get_weather", {"city": "東京", "days": 3}):
        _tool_call(b, 1, "get_time", {"timezone": "Asia/Tokyo"})
    b.finish("tool_calls")
    b.usage()
    b.done()
    return _answer(b, speed, burst=0.4, split=0.3)


def _n2(seed: int, speed: float, options: Options) -> Script:
    """Two choices interleaved, one choice per chunk, finish on the last
    content chunk (vLLM's shape), one usage chunk for both; ``max_tokens``
    counts per choice."""
    b = Builder("n2", seed, options)
    b.wait(b.rng.uniform(0.2, 0.4))
    queues = [_tokens(text, b.rng) for text in _N2]
    for index in (0, 1):
        b.delta(index, role="assistant", content="")
    while queues[0] or queues[1]:
        index = b.rng.choice([i for i in (0, 1) if queues[i]])
        b.think()
        if not b.room(index):
            queues[index].clear()
            b.finish("stop", index)
            continue
        piece = queues[index].pop(0)
        b.delta(index, finish=None if queues[index] else "stop", content=piece)
        b.spend(index)
    b.usage()
    b.done()
    return _answer(b, speed, content_type="text/event-stream; charset=utf-8", burst=0.3)


def _length(seed: int, speed: float, options: Options) -> Script:
    """The text stops where a ``max_tokens`` of its own length stopped it."""
    b = Builder("length", seed, options)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_LENGTH, b.rng))
    b.cut.add(0)
    b.finish("length")
    b.usage()
    b.done()
    return _answer(b, speed)


def _reasoning(seed: int, speed: float, options: Options) -> Script:
    """DeepSeek's shape: ``reasoning_content`` with ``content: null``, then
    the answer; ``: keep-alive`` while the request is queued."""
    b = Builder("reasoning", seed, options, fingerprint="fp_deepseek")
    b.silence(0.6, "keep-alive", 0.25)
    b.delta(role="assistant", content=None, reasoning_content="")
    if b.stream_text(_tokens(_REASONING, b.rng), "reasoning_content", content=None):
        b.stream_text(_tokens(_ANSWER, b.rng))
    b.finish("stop", content="")
    b.usage()
    b.done()
    return _answer(b, speed)


def _drop_mid_event(seed: int, speed: float, options: Options) -> Script:
    """Text, then the connection dies in the middle of an event: of the
    stream, or of the JSON body when no stream was asked for."""
    b = Builder("drop-mid-event", seed, options)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="")
    pieces = _tokens(_TEXT, b.rng)
    if not b.stream_text(pieces[: len(pieces) // 2 + 1]):
        b.finish("stop")
    if not options.stream:
        whole = b.non_streamed(speed)
        body = whole.body()
        whole.headers.append(("Content-Length", str(len(body))))
        whole.steps = [*whole.steps[:-1], body[: b.rng.randint(10, len(body) - 5)], "abort"]
        whole.outcome = "error"  # what is left of the body is not JSON
        return whole
    units = b.wire_units()
    last_delay, last = units.pop()
    script = b.streamed(speed, units=units)
    pause(script.steps, last_delay, speed)
    script.steps += [last[: b.rng.randint(10, len(last) - 5)], "abort"]
    script.outcome = "truncated"
    return script


def _no_done(seed: int, speed: float, options: Options) -> Script:
    """Every choice finishes, the usage chunk comes, then the body ends
    without ``[DONE]``."""
    b = Builder("no-done", seed, options)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_ANSWER + " " + _ANSWER, b.rng))
    b.finish("stop")
    b.usage()
    script = _answer(b, speed)
    if options.stream and options.dialect == "openai-responses":
        # The terminal event is what says how a Responses answer ended:
        # without it the answer reads as cut, whatever its items said.
        script.outcome = "truncated"
    return script


def _error_503(seed: int, speed: float, options: Options) -> Script:
    """A reverse proxy's HTML page: the backend is down."""
    body = (
        b"<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
        b"<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n"
        b"</body>\r\n</html>\r\n"
    )
    headers = [("Content-Type", "text/html"), ("Retry-After", "1")]
    return Script(503, headers, [*_lead(0.05, speed), body], chunked=False, outcome="error")


def _error_401(seed: int, speed: float, options: Options) -> Script:
    """The API's answer to a bad key, no stream: OpenAI's and Anthropic's
    401, Gemini's 400 ``API_KEY_INVALID``."""
    return bad_key(options.dialect, f"req_{seed:016x}", _lead(0.05, speed))


def _overloaded(seed: int, speed: float, options: Options) -> Script:
    """The API is overloaded and says so before any stream: Anthropic's 529
    ``overloaded_error``, Gemini's 503 ``UNAVAILABLE``, OpenAI's 503."""
    return overloaded(options.dialect, f"req_{seed:016x}", _lead(0.1, speed))


def _error_mid_stream(seed: int, speed: float, options: Options) -> Script:
    """Half the answer, then the API's own error event and the end of the
    body (Anthropic's ``overloaded_error``, Gemini's raw JSON lines); a
    request that asked for no stream gets the API's 5xx instead."""
    b = Builder("error-mid-stream", seed, options)
    b.wait(b.rng.uniform(0.2, 0.4))
    b.delta(role="assistant", content="")
    pieces = _tokens(_TEXT, b.rng)
    if not b.stream_text(pieces[: len(pieces) // 2]):
        b.finish("stop")  # max_tokens came first: an ordinary answer
        b.usage()
        b.done()
        return _answer(b, speed)
    if not options.stream:
        return server_error(options.dialect, f"req_{seed:016x}", _lead(b.generation_time(), speed))
    b.error()
    script = b.streamed(speed)
    script.outcome = "error"
    return script


def _downgrade(seed: int, speed: float, options: Options) -> Script:
    """A gateway ignored ``stream: true`` and answered with the API's whole
    answer (a ``chat.completion``, a ``response``...), at once."""
    b = Builder("downgrade", seed, options)
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_ANSWER, b.rng))
    b.finish("stop")
    body = json.dumps(b.whole_answer(), ensure_ascii=False).encode()
    steps = [*_lead(b.rng.uniform(0.5, 0.9), speed), body]
    return Script(200, [("Content-Type", "application/json")], steps, chunked=False, outcome=b.outcome())


def _lead(seconds: float, speed: float) -> list[Step]:
    steps: list[Step] = []
    pause(steps, seconds, speed)
    return steps


def _heartbeat_silence(seed: int, speed: float, options: Options) -> Script:
    """OpenRouter's shape: ``: OPENROUTER PROCESSING`` while queued, then a
    1.3 s silence mid-answer broken by ``: ping`` comments (newlines for a
    client that asked for no stream)."""
    b = Builder("heartbeat-silence", seed, options, fingerprint="fp_openrouter")
    b.silence(1.2, "OPENROUTER PROCESSING", 0.4)
    b.delta(role="assistant", content="")
    pieces = _tokens(_N2[1] + " " + _ANSWER, b.rng)
    half = len(pieces) // 3
    if b.stream_text(pieces[:half]):
        b.silence(1.3, "ping", 0.3)
        b.stream_text(pieces[half:])
    b.finish("stop")
    b.usage()
    b.done()
    return b.streamed(speed, burst=0.1) if options.stream else b.non_streamed(speed, keepalive=0.4)


def _crlf(seed: int, speed: float, options: Options) -> Script:
    """sse-starlette's shape: CRLF everywhere, ``: ping`` comments; writes
    cut between CR and LF."""
    b = Builder("crlf", seed, options, newline="\r\n")
    b.wait(b.rng.uniform(0.2, 0.4))
    b.comment("ping")
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_ANSWER + "\r\nLine two.\nLine three.", b.rng))
    b.finish("stop")
    b.usage()
    b.done()
    return _answer(b, speed, content_type="text/event-stream; charset=utf-8", split=0.5)


def _slow_first_byte(seed: int, speed: float, options: Options) -> Script:
    """Nothing for 2.5 s after the response head, then a fast answer."""
    b = Builder("slow-first-byte", seed, options)
    b.wait(2.5)
    b.delta(role="assistant", content="")
    b.stream_text(_tokens(_ANSWER, b.rng))
    b.finish("stop")
    b.usage()
    b.done()
    return _answer(b, speed)


_BUILDERS: dict[str, tuple[Callable[[int, float, Options], Script], Outcome, str]] = {
    "text": (_text, "complete", "plain answer in bursts, JSON escapes cut across writes"),
    "cjk": (_cjk, "complete", "CJK, emoji and combining marks cut inside UTF-8 characters"),
    "tools": (_tools, "complete", "one tool call, arguments in 1-6 character fragments (Gemini: whole)"),
    "parallel-tools": (_parallel_tools, "complete", "two tool calls, index 0 then 1"),
    "n2": (_n2, "complete", "two choices interleaved (n=2), finish on the last content chunk"),
    "length": (_length, "length", "answer cut by max_tokens (finish_reason length)"),
    "reasoning": (_reasoning, "complete", "reasoning first, then the answer"),
    "drop-mid-event": (_drop_mid_event, "truncated", "connection dropped in the middle of an event"),
    "no-done": (_no_done, "complete", "every choice finished, but no [DONE] before the end"),
    "error-503": (_error_503, "error", "503 HTML page from a reverse proxy"),
    "error-401": (_error_401, "error", "the API's error for a bad API key (401; Gemini: 400 API_KEY_INVALID)"),
    "overloaded": (_overloaded, "error", "overloaded before the stream (Anthropic: 529 overloaded_error)"),
    "error-mid-stream": (_error_mid_stream, "error", "half the answer, then the API's own error event"),
    "downgrade": (_downgrade, "complete", "200 application/json: the whole answer, although a stream was asked for"),
    "heartbeat-silence": (_heartbeat_silence, "complete", "keep-alive comments before and during long silences"),
    "crlf": (_crlf, "complete", "CRLF line endings, writes cut between CR and LF"),
    "slow-first-byte": (_slow_first_byte, "complete", "2.5 s before the first byte"),
}

#: Every scenario name, in a stable order; ``random`` last.
SCENARIOS: tuple[str, ...] = (*_BUILDERS, "random")
#: The ``Accumulator.outcome`` each fixed scenario ends with when the request sets no ``max_tokens``.
OUTCOMES: Mapping[str, Outcome] = {name: spec[1] for name, spec in _BUILDERS.items()}
#: One line per scenario, for help texts.
DESCRIPTIONS: Mapping[str, str] = {
    **{name: spec[2] for name, spec in _BUILDERS.items()},
    "random": "one of the others, picked by the seed, with every write and pause perturbed",
}


def scenarios_for(dialect: str) -> tuple[str, ...]:
    """The scenarios ``dialect``'s API plays (``SCENARIOS`` less ``REFUSED``)."""
    _check_dialect(dialect)
    return tuple(name for name in SCENARIOS if name not in REFUSED.get(dialect, {}))


def random_choice(seed: int, dialect: str = "openai-chat") -> str:
    """The scenario ``random`` plays for ``seed`` in ``dialect``'s API."""
    names = [name for name in _BUILDERS if name not in REFUSED.get(_check_dialect(dialect), {})]
    return random.Random(f"random/{seed}").choice(names)


def expected_outcome(
    name: str, seed: int = 0, *, max_tokens: int | None = None, stream: bool = True, dialect: str = "openai-chat"
) -> str:
    """The outcome an ``Accumulator`` reaches on ``scenario(name, seed, ...)``."""
    if max_tokens is None and stream and dialect == "openai-chat":
        return OUTCOMES[random_choice(seed) if name == "random" else _check(name)]
    script = scenario(name, seed, float("inf"), stream=stream, max_tokens=max_tokens, dialect=dialect)
    assert script.outcome is not None
    return script.outcome


def scenario(
    name: str,
    seed: int = 0,
    speed: float = 1.0,
    *,
    stream: bool = True,
    include_usage: bool = True,
    max_tokens: int | None = None,
    prompt_tokens: int = PRIMING_TOKENS,
    dialect: str = "openai-chat",
) -> Script:
    """Build the script of scenario ``name``.

    Args:
        name: one of ``SCENARIOS``.
        seed: varies token timing, write boundaries, ids (and, for
            ``random``, which scenario is played).
        speed: pauses are divided by it; ``float("inf")`` removes them.
        stream: answer as an event stream; False answers with the API's
            whole answer (a ``chat.completion``, a ``response``, a
            ``message``, a Gemini response), faults aside.
        include_usage: end a Chat Completions stream with a usage chunk
            (the other APIs always report the usage).
        max_tokens: the most tokens each choice may produce.
        prompt_tokens: the usage's prompt count.
        dialect: the API that answers: one of ``DIALECTS``.

    Raises:
        ValueError: unknown name or dialect, a scenario the API cannot play
            (``REFUSED``), ``speed`` not positive, ``max_tokens`` below 1.
    """
    if not speed > 0:
        raise ValueError(f"speed must be positive, got {speed!r}")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens!r}")
    refused = REFUSED.get(_check_dialect(dialect), {}).get(name)
    if refused is not None:
        raise ValueError(f"scenario {name!r} cannot play in {dialect}: {refused}")
    options = Options(stream, include_usage or dialect != "openai-chat", max_tokens, prompt_tokens, dialect)
    if name == "random":
        return _random(seed, speed, options)
    script = _BUILDERS[_check(name)][0](seed, speed, options)
    script.headers.append(("X-Ssestate-Scenario", name))
    return script


def _check(name: str) -> str:
    if name not in _BUILDERS:
        raise ValueError(f"unknown scenario {name!r}; choose one of: {', '.join(SCENARIOS)}")
    return name


def _check_dialect(dialect: str) -> str:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}; choose one of: {', '.join(DIALECTS)}")
    return dialect


def _random(seed: int, speed: float, options: Options) -> Script:
    base = random_choice(seed, options.dialect)
    rng = random.Random(f"random/{seed}/perturb")
    script = _BUILDERS[base][0](rng.randrange(1 << 30), speed, options)
    steps: list[Step] = []
    for step in script.steps:
        if isinstance(step, float):
            pause(steps, step * rng.uniform(0.3, 2.0), 1.0)
        elif isinstance(step, bytes) and script.chunked and len(step) > 1 and rng.random() < 0.5:
            cut = rng.randrange(1, len(step))
            steps.append(step[:cut])
            pause(steps, rng.uniform(0.001, 0.01), speed)
            steps.append(step[cut:])
        else:
            steps.append(step)
    script.steps = steps
    script.headers.append(("X-Ssestate-Scenario", f"random/{base}"))
    return script
