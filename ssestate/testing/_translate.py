"""Scenarios in the other APIs: a scenario's Chat Completions chunks as the
stream, or the whole answer, of the Responses API, Anthropic Messages or
Gemini.

Theory of operation
-------------------
A scenario is written once, as the Chat Completions chunks of ``_builder``:
what the model produced and how long each piece took.  For another API the
chunks are read back with ``ChatStream`` and the events handed to an
``Encoder`` of that API, unit by unit (the gateway of the README, run ahead
of time), so every API says exactly what the chunks said.  Each unit keeps
its delay; a unit that says nothing in the target (a role chunk, a call
that Gemini collects whole) hands its delay on to the next one.

Along the way each API gets what the real one does and Chat Completions
does not:

* usage always (these APIs have no ``include_usage``): the final usage is
  handed over before the finish reason, so that Anthropic's one
  ``message_delta`` and the Responses API's terminal event carry both, but
  after it in Gemini, whose SDK users read the usage of the last chunk;
  Anthropic's ``message_start`` carries the prompt's count (with one output
  token, as Anthropic writes it);
* the Responses API and Anthropic open the response (``response.created``,
  ``message_start``) at once when the answer starts with a wait, and keep
  the stream alive after that (``keepalive``, ``ping``) where Chat
  Completions servers write comments; Anthropic also pings right after
  ``message_start``, as it always does.  Gemini has no keep-alive: a comment
  is a silence there;
* tool call ids in the API's form (``toolu_...`` for Anthropic; none for
  Gemini, whose calls carry no id), and a signature on every Anthropic
  thinking block (``signature_delta`` before it closes);
* line endings: Gemini writes CRLF always; the Responses API and Anthropic
  write LF, and CRLF only where the scenario is about CRLF (a gateway that
  rewrites the framing; JSON text holds no line break, so every LF of the
  stream is framing);
* a mid-stream error in the API's own words (``_errors.mid_stream``).

``whole`` assembles an API's non-streamed answer from that API's stream:
the Responses API's terminal event already carries the whole response;
Anthropic's ``message`` is ``message_start``'s with the blocks filled in and
``message_delta``'s stop reason and usage (a tool call whose input the
token limit cut is left out: a whole answer carries the input as an
object, and there is none); Gemini's response joins each
candidate's parts (consecutive texts of one kind in one part), with the
last finish reason and usage.
"""

from __future__ import annotations

import json
from typing import Any

from .. import (
    ChatStream,
    Continuation,
    Delta,
    Encoder,
    EventStreamParser,
    Finish,
    Heartbeat,
    ServerSentEvent,
    StreamError,
    ToolCallFragment,
    Usage,
)
from ._errors import mid_stream

__all__ = ["Unit", "translate", "whole"]

Unit = tuple[float, bytes]
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


class _Translator:
    """Chat Completions bytes in, the bytes of ``dialect`` out (see above)."""

    def __init__(
        self, dialect: str, *, model: str, response_id: str, created: int, prompt_tokens: int, signature: str
    ) -> None:
        self.dialect = dialect
        self.one_choice = dialect != "gemini"
        self.reader = ChatStream(dialect="openai-chat")
        self.writer = Encoder(dialect, model=model, response_id=response_id, created=created)
        self.prompt_tokens = prompt_tokens
        self.signature = signature
        self.started = False
        self.held: list[Finish] = []  # finish reasons waiting for the usage that follows them
        self.thinking: list[str] = []  # Anthropic: the open thinking block's text, signed when it ends

    def feed(self, data: bytes) -> bytes:
        return b"".join(self.event(event) for event in self.reader.feed(data))

    def event(self, event: Any) -> bytes:
        if type(event) is Finish:
            self.held.append(event)
            return b""
        if type(event) is Usage:
            if not self.one_choice:
                return self.release() + self.write(event)  # Gemini: the last chunk has the usage
            return self.write(event) + self.release()
        return self.release() + self.write(event)

    def release(self) -> bytes:
        held, self.held = self.held, []
        return b"".join(self.write(event) for event in held)

    def start(self) -> bytes:
        """Open the answer of a one-choice API (once)."""
        if self.started or not self.one_choice:
            return b""
        self.started = True
        out = b""
        if self.dialect == "anthropic":
            p = self.prompt_tokens
            out += self.writer.feed(Usage(p, 1, p + 1))
        out += self.writer.feed(Delta(0, "", "assistant"))
        if self.dialect == "anthropic":
            out += self.writer.feed(Heartbeat("ping"))
        return out

    def sign(self) -> bytes:
        """End Anthropic's open thinking block with its signature."""
        if not self.thinking:
            return b""
        data = {"type": "thinking", "thinking": "".join(self.thinking), "signature": self.signature}
        self.thinking = []
        return self.writer.feed(Continuation(0, "thinking", data, None))

    def write(self, event: Any) -> bytes:
        kind = type(event)
        if kind is Heartbeat:
            if self.dialect == "gemini":
                return b""  # no keep-alive in Gemini: the comment's time passes in silence
            return self.start() + self.writer.feed(event)
        if kind is StreamError:
            error = mid_stream(self.dialect)
            return error if isinstance(error, bytes) else self.writer.feed(error)
        out = self.start()
        if kind is Delta and event.reasoning and self.dialect == "anthropic":
            self.thinking.append(event.reasoning)
        elif kind is not Delta or event.content or event.refusal:
            out += self.sign()  # anything but reasoning ends the thinking block
        if kind is ToolCallFragment and event.id is not None:
            if self.dialect == "anthropic":
                event = ToolCallFragment(event.choice, event.index, "toolu_" + event.id.removeprefix("call_"),
                                         event.name, event.arguments)  # fmt: skip
            elif self.dialect == "gemini":
                event = ToolCallFragment(event.choice, event.index, None, event.name, event.arguments)
        return out + self.writer.feed(event)


def translate(
    units: list[Unit],
    dialect: str,
    *,
    model: str,
    response_id: str,
    created: int,
    prompt_tokens: int,
    signature: str,
    crlf: bool = False,
) -> list[Unit]:
    """The Chat Completions ``units`` as units of ``dialect``'s stream."""
    t = _Translator(
        dialect, model=model, response_id=response_id, created=created, prompt_tokens=prompt_tokens, signature=signature
    )
    out: list[Unit] = []
    if units and units[0][1].startswith(b":"):
        out.append((0.0, t.start()))  # a response that waits is opened at once, then kept alive
    delay = 0.0
    for wait, data in units:
        delay += wait
        written = t.feed(data)
        if written:
            out.append((delay, written))
            delay = 0.0
    tail = t.release()  # the finish of a stream that ended without [DONE]
    if tail:
        out.append((delay, tail))
    if crlf and dialect != "gemini":
        out = [(wait, data.replace(b"\n", b"\r\n")) for wait, data in out]
    return [unit for unit in out if unit[1]]


# -- whole answers ---------------------------------------------------------------------------------


def _payloads(body: bytes) -> list[dict[str, Any]]:
    parser = EventStreamParser()
    found = []
    for event in [*parser.feed(body), *parser.feed(b"")]:
        if type(event) is ServerSentEvent:
            try:
                value = json.loads(event.data)
            except ValueError:
                continue
            if type(value) is dict:
                found.append(value)
    return found


def whole(dialect: str, stream: bytes) -> dict[str, Any]:
    """The non-streamed answer of ``dialect`` that says what ``stream`` (a
    whole stream of that API, ended) says."""
    payloads = _payloads(stream)
    if dialect == "openai-responses":
        return next(p["response"] for p in reversed(payloads) if p.get("type") in _TERMINAL)
    if dialect == "anthropic":
        return _message(payloads)
    return _gemini(payloads)


def _message(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for p in payloads:
        kind = p.get("type")
        if kind == "message_start":
            message = {**p["message"], "content": []}
        elif kind == "content_block_start":
            message["content"].append(dict(p["content_block"]))
        elif kind == "content_block_delta":
            index, delta = p["index"], p["delta"]
            block = message["content"][index]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            else:
                partial[index] = partial.get(index, "") + delta["partial_json"]
        elif kind == "content_block_stop" and p["index"] in partial:
            try:
                message["content"][p["index"]]["input"] = json.loads(partial[p["index"]])
            except ValueError:
                message["content"][p["index"]] = None  # cut by the token limit: no object to carry
        elif kind == "message_delta":
            message.update(p["delta"])
            message["usage"] = {**message["usage"], **p["usage"]}
    message["content"] = [block for block in message["content"] if block is not None]
    return message


def _gemini(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    candidates: dict[int, dict[str, Any]] = {}
    answer: dict[str, Any] = {}
    for p in payloads:
        for position, c in enumerate(p.get("candidates") or []):
            index = c.get("index", position)
            joined = candidates.setdefault(index, {"content": {"parts": [], "role": "model"}})
            parts = joined["content"]["parts"]
            for part in c["content"]["parts"]:
                last = parts[-1] if parts else None
                if "text" in part and not part["text"] and len(part) == 1:
                    continue  # an empty text part says nothing
                texts = last is not None and set(last) - {"thought"} == {"text"} == set(part) - {"thought"}
                if texts and last is not None and last.get("thought") == part.get("thought"):
                    last["text"] += part["text"]  # one kind of text, one part
                    continue
                parts.append(dict(part))
            if "finishReason" in c:
                joined["finishReason"] = c["finishReason"]
        for key in ("promptFeedback", "usageMetadata", "modelVersion", "responseId"):
            if key in p:
                answer[key] = p[key]
    for index, c in candidates.items():
        if not c["content"]["parts"]:
            c["content"]["parts"].append({"text": ""})
        c["index"] = index
    return {"candidates": [candidates[i] for i in sorted(candidates)], **answer}
