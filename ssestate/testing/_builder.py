"""How a scenario is written: what the model produced, then what the network
delivered.

Theory of operation
-------------------
A ``Builder`` collects the *units* of one response, each one event or
comment as ``ssestate.encode`` / ``encode_chunk`` writes it, with the delay
since the previous unit (token pacing with jitter, occasional upstream
stalls, keep-alive comments during long silences).  While it does, it keeps
per choice the message the chunks add up to (content, reasoning, tool
calls, finish reason) and the tokens spent, so that the same production
can be answered as a stream or, when the request did not ask for one, as
one ``chat.completion`` object, and so that ``max_tokens`` is honoured the
way the API honours it: per choice, counting every piece of text and every
tool-call fragment, the choice finishing with ``length`` when it runs out.

``deliver`` turns the units into the steps a server plays.  A unit with no
delay joins the write before it (it was produced at the same moment: a
finish right after the last token, tokens held up behind a stall); a unit
after a short gap may be coalesced as well (as when a proxy buffers); and a
write may be cut in two at an adversarial boundary: inside a multi-byte
UTF-8 character, between the CR and the LF of a line ending, between the
two line endings that dispatch an event, right after ``data:``, or between
a backslash and the character it escapes.  The first write that contains a
multi-byte character or a CRLF is always cut there, so scenarios with such
bytes are guaranteed to exercise it.

A request to another API (``Options.dialect``) gets the same production in
that API's stream or whole answer: ``wire_units`` and ``whole_answer`` hand
the Chat Completions units to ``_translate``, which reads them back and
writes them with that API's ``Encoder``.

All randomness comes from one ``random.Random`` seeded by the scenario name
and the seed, so the same (name, seed, request) always gives the same steps;
another API draws nothing more (its ids derive from the chunks' id), so it
says the same answer with the same timing.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import DONE_BYTES, Heartbeat, encode, encode_chunk
from ._errors import mid_stream
from ._script import Script, Step
from ._translate import Unit, translate, whole

__all__ = ["PRIMING_TOKENS", "SSE_HEADERS", "Builder", "Options", "deliver", "pause"]

# Gaps shorter than this may be coalesced into the previous write (a burst);
# a longer gap always starts a new write, so silences stay silences.
_BURST_GAP = 0.25
SSE_HEADERS = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
#: The prompt tokens of a request with no messages (OpenAI primes every reply with three).
PRIMING_TOKENS = 3


@dataclass(frozen=True)
class Options:
    """What the request asked for, as far as a scenario honours it.

    Attributes:
        stream: answer as an event stream (else one ``chat.completion``).
        include_usage: end a stream with a usage chunk.
        max_tokens: the most tokens each choice may produce (None: no limit).
        prompt_tokens: the usage's prompt count.
        dialect: the API that answers ("openai-chat", "openai-responses",
            "anthropic" or "gemini").
    """

    stream: bool = True
    include_usage: bool = True
    max_tokens: int | None = None
    prompt_tokens: int = PRIMING_TOKENS
    dialect: str = "openai-chat"


@dataclass
class _Message:
    content: str = ""
    reasoning: str = ""
    refusal: str = ""
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: str | None = None


class Builder:
    """Collects units (delay, bytes) and the message of each choice for one
    response."""

    def __init__(
        self,
        name: str,
        seed: int,
        options: Options,
        *,
        newline: str = "\n",
        fingerprint: str = "fp_ssestate",
    ) -> None:
        self.name = name
        self.options = options
        self.rng = random.Random(f"{name}/{seed}")
        self.newline = newline
        self.units: list[tuple[float, bytes]] = []
        self.delay = 0.0  # carried into the next unit
        self.created = 1_735_689_600 + self.rng.randrange(10_000_000)
        self.id = f"chatcmpl-{self.rng.getrandbits(96):024x}"
        self.fingerprint = fingerprint
        self.spent: dict[int, int] = {}  # tokens per choice
        self.cut: set[int] = set()  # choices that ran out of max_tokens
        self.messages: dict[int, _Message] = {}
        self.held = 0  # tokens still to come without a gap after a stall
        self.ended = False  # [DONE] written
        self.usage_sent = False  # the usage chunk written

    # -- time and raw units --------------------------------------------------------

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

    # -- chunks ----------------------------------------------------------------------

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
        """One chunk with one choice; its text and tool calls are added to the
        choice's message."""
        m = self.messages.setdefault(index, _Message())
        m.content += delta.get("content") or ""
        m.reasoning += delta.get("reasoning_content") or ""
        m.refusal += delta.get("refusal") or ""
        for item in delta.get("tool_calls") or ():
            call = m.tool_calls.setdefault(item["index"], {"type": "function", "function": {"arguments": ""}})
            if "id" in item:
                call["id"] = item["id"]
            function = item["function"]
            if "name" in function:
                call["function"]["name"] = function["name"]
            call["function"]["arguments"] += function["arguments"]
        if finish is not None:
            m.finish = finish
        self.chunk([{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}])

    # -- tokens ----------------------------------------------------------------------

    def room(self, index: int = 0) -> bool:
        """Whether choice ``index`` may produce one more token; marks it cut
        by ``max_tokens`` when not."""
        limit = self.options.max_tokens
        if limit is not None and self.spent.get(index, 0) >= limit:
            self.cut.add(index)
            return False
        return True

    def spend(self, index: int = 0) -> None:
        self.spent[index] = self.spent.get(index, 0) + 1

    def stream_text(self, pieces: Sequence[str], field: str = "content", index: int = 0, **beside: Any) -> bool:
        """Stream ``pieces`` one token each; False when ``max_tokens`` cut them."""
        for piece in pieces:
            if not self.room(index):
                return False
            self.think()
            self.delta(index, **beside, **{field: piece})
            self.spend(index)
        return True

    def finish(self, reason: str, index: int = 0, **delta: Any) -> None:
        """The finish chunk of choice ``index``: ``length`` if it was cut."""
        self.delta(index, finish="length" if index in self.cut else reason, **delta)

    def usage(self) -> None:
        """The ``choices: []`` usage chunk, when the request asked for it."""
        if not self.options.include_usage:
            return
        self.wait(0.01)
        self.chunk([], usage=self.usage_object())
        self.usage_sent = True

    def usage_object(self) -> dict[str, int]:
        prompt = self.options.prompt_tokens
        completion = sum(self.spent.values())
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def done(self) -> None:
        self.wait(0.005)
        self.unit(DONE_BYTES.replace(b"\n", self.newline.encode()))
        self.ended = True

    def error(self) -> None:
        """The error that ends the stream half-way: Chat Completions' payload
        with an ``error`` member (another API's own error, once translated)."""
        error = mid_stream("openai-chat")
        assert not isinstance(error, bytes)
        self.wait(0.05)
        body = {"error": {"message": error.message, "type": error.type, "param": None, "code": error.code}}
        self.unit(encode_chunk(body, newline=self.newline))

    # -- other APIs ------------------------------------------------------------------------

    @property
    def response_id(self) -> str:
        """The response's id in the form of the API that answers."""
        digits = self.id.removeprefix("chatcmpl-")
        dialect = self.options.dialect
        if dialect == "openai-responses":
            return f"resp_{digits}"
        if dialect == "anthropic":
            return f"msg_{digits}"
        if dialect == "gemini":
            return base64.urlsafe_b64encode(bytes.fromhex(digits)).decode().rstrip("=")
        return self.id

    def wire_units(self, units: list[Unit] | None = None) -> list[Unit]:
        """The units (``self.units`` when None) as the answering API streams them."""
        units = list(self.units if units is None else units)
        if self.options.dialect == "openai-chat":
            return units
        return translate(
            units,
            self.options.dialect,
            model=f"ssestate-{self.name}",
            response_id=self.response_id,
            created=self.created,
            prompt_tokens=self.options.prompt_tokens,
            signature=base64.b64encode(bytes.fromhex(self.id.removeprefix("chatcmpl-")) * 4).decode(),
            crlf=self.newline == "\r\n",
        )

    # -- the whole answer --------------------------------------------------------------

    def outcome(self) -> str:
        """``Accumulator.outcome`` of the answer as produced (no fault)."""
        return "length" if any(m.finish == "length" for m in self.messages.values()) else "complete"

    def whole_answer(self) -> dict[str, Any]:
        """The answer as one object of the answering API (``stream`` false):
        a ``chat.completion``, a Responses ``response``, a Messages
        ``message``, a Gemini response.  Another API's answer is whole: the
        choices that had not finished finish with ``stop``."""
        if self.options.dialect == "openai-chat":
            return self.completion()
        units = list(self.units)
        for index, m in self.messages.items():
            if m.finish is None:
                body = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": "",
                        "choices": [{"index": index, "delta": {}, "finish_reason": "stop"}]}  # fmt: skip
                units.append((0.0, encode_chunk(body)))
        if not self.usage_sent:
            units.append((0.0, encode_chunk({"id": self.id, "choices": [], "usage": self.usage_object()})))
        if not self.ended:
            units.append((0.0, DONE_BYTES))
        return whole(self.options.dialect, b"".join(data for _, data in self.wire_units(units)))

    def completion(self) -> dict[str, Any]:
        """The answer as one ``chat.completion`` object (``stream`` false)."""
        choices = []
        for index in sorted(self.messages):
            m = self.messages[index]
            calls = [m.tool_calls[k] for k in sorted(m.tool_calls)]
            message: dict[str, Any] = {"role": "assistant", "content": m.content or (None if calls else "")}
            if m.reasoning:
                message["reasoning_content"] = m.reasoning
            message["refusal"] = m.refusal or None
            if calls:
                message["tool_calls"] = calls
            choices.append({"index": index, "message": message, "logprobs": None, "finish_reason": m.finish})
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": f"ssestate-{self.name}",
            "system_fingerprint": self.fingerprint,
            "choices": choices,
            "usage": self.usage_object(),
        }

    def generation_time(self) -> float:
        """How long the model took: what a non-streaming client waits."""
        return sum(delay for delay, _ in self.units) + self.delay

    def request_id(self) -> tuple[str, str]:
        """The request id header, as the answering API names it."""
        name = "request-id" if self.options.dialect == "anthropic" else "X-Request-Id"
        return name, f"req_{self.rng.getrandbits(64):016x}"

    def streamed(
        self,
        speed: float,
        *,
        units: list[Unit] | None = None,
        content_type: str = "text/event-stream",
        burst: float = 0.2,
        split: float = 0.2,
    ) -> Script:
        """The units (``wire_units()`` when None) as an event stream,
        delivered as ``deliver`` does."""
        headers = [("Content-Type", content_type), *SSE_HEADERS[1:], self.request_id()]
        steps = deliver(self.wire_units() if units is None else units, self.rng, speed, burst=burst, split=split)
        return Script(200, headers, steps, outcome=self.outcome())

    def non_streamed(self, speed: float, *, keepalive: float | None = None) -> Script:
        """The answer as one JSON body after the generation time; with
        ``keepalive``, a newline every that many seconds while waiting (what
        DeepSeek and OpenRouter send a non-streaming client; the other APIs
        wait in silence)."""
        dialect = self.options.dialect
        answer = self.whole_answer()
        if dialect == "openai-chat":
            text = json.dumps(answer, ensure_ascii=False) + "\n"
        elif dialect == "anthropic":
            text = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
        else:
            text = json.dumps(answer, ensure_ascii=False, indent=2) + "\n"
        body = text.encode()
        content_type = "application/json; charset=UTF-8" if dialect == "gemini" else "application/json"
        headers = [("Content-Type", content_type), self.request_id()]
        steps: list[Step] = []
        left = self.generation_time()
        if dialect != "openai-chat":
            keepalive = None
        if keepalive is None:
            pause(steps, left, speed)
        else:
            while left > keepalive:
                pause(steps, keepalive, speed)
                steps.append(b"\n")
                left -= keepalive
            pause(steps, left, speed)
        steps.append(body)
        return Script(200, headers, steps, chunked=keepalive is not None, outcome=self.outcome())


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


def deliver(
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
        pause(steps, delay, speed)
        data = bytes(group)
        sharp, plain = _adversarial_cuts(data)
        force = bool(sharp) and not forced
        if (force or rng.random() < split) and (sharp or plain):
            # (A unit may offer no cut: Gemini's raw JSON error lines end
            # with one LF, hold no escape and no data: field.)
            forced = forced or force
            cut = rng.choice(sharp or plain)
            steps.append(data[:cut])
            pause(steps, rng.uniform(0.002, 0.02), speed)
            data = data[cut:]
        steps.append(data)
    return steps


def pause(steps: list[Step], seconds: float, speed: float) -> None:
    """Append a pause of ``seconds / speed`` (none when it rounds to 0)."""
    scaled = round(seconds / speed, 4)
    if scaled > 0:
        steps.append(scaled)
