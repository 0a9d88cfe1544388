"""How each API reads a request: what it asks for, and the 400 it gets when
the API would refuse it.

Theory of operation
-------------------
The test server answers four APIs, and reads each request the way that API
does (``read_request``): whether a stream was asked for, the token limit,
the prompt (the usage counts its tokens, so the same prompt always costs the
same), the model (which may name a scenario) and a seed.

=================  ==========================  ==============================  =============================
API                stream                      token limit                     prompt
=================  ==========================  ==============================  =============================
Chat Completions   ``"stream": true``          ``max_completion_tokens`` or    ``messages``
                   (``stream_options`` only    ``max_tokens`` (>= 1)
                   with it)
Responses API      ``"stream": true``          ``max_output_tokens`` (>= 16)   ``instructions``, ``input``
Anthropic          ``"stream": true``          ``max_tokens``, required (>= 1) ``system``, ``messages``
Gemini             the method:                 ``generationConfig.             ``systemInstruction``,
                   ``:streamGenerateContent``  maxOutputTokens`` (>= 1)        ``contents``
                   (``alt=sse``) or
                   ``:generateContent``
=================  ==========================  ==============================  =============================

A request the API would refuse raises ``BadRequest`` with that API's
message, which the handler writes in that API's error shape
(``_errors.error_script``).  The seed is the body's integer ``seed``
(Gemini: ``generationConfig.seed``), which only the test server reads.
Nothing else is checked: keys, versions and unknown fields are the test
server's to ignore, as they only matter to a real account.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Ask", "BadRequest", "prompt_tokens", "read_request"]

# One token per word or punctuation mark, four per message for the role and
# separators, three to prime the reply: not a tokenizer, but stable and
# growing with the prompt as the real counts do.
_WORDS = re.compile(r"\w+|[^\w\s]")
_PER_MESSAGE = 4
_PRIMING = 3
_NOT_JSON = (
    "We could not parse the JSON body of your request. The API expects a JSON object; what was sent was not one."
)


class BadRequest(Exception):
    """What the API answers with a 4xx: message, param, code and status."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.param = param
        self.code = code
        self.status = status


@dataclass(frozen=True)
class Ask:
    """What a request asked for, as its API reads it.

    Attributes:
        stream: an event stream (else the whole answer).
        include_usage: a usage report (Chat Completions only with
            ``stream_options.include_usage``; the other APIs always).
        max_tokens: the token limit, or None.
        prompt_tokens: the prompt's token count.
        model: the model named, or None.
        seed: the request's integer seed, or None.
    """

    stream: bool
    include_usage: bool
    max_tokens: int | None
    prompt_tokens: int
    model: str | None
    seed: int | None


def _texts(content: object) -> list[str]:
    """The text of a message's content: a string, or parts with ``text``."""
    parts = content if isinstance(content, list) else [content]
    found = []
    for part in parts:
        text = part.get("text") if isinstance(part, dict) else part
        if isinstance(text, str):
            found.append(text)
    return found


def _count(messages: list[list[str]]) -> int:
    return _PRIMING + sum(_PER_MESSAGE + sum(len(_WORDS.findall(t)) for t in texts) for texts in messages)


def prompt_tokens(messages: object) -> int:
    """The prompt tokens the server counts for Chat Completions ``messages``
    (any JSON)."""
    if not isinstance(messages, list):
        return _PRIMING
    return _count([_texts(m.get("content")) if isinstance(m, dict) else [] for m in messages])


def _messages(dialect: str, body: dict[str, Any]) -> list[list[str]]:
    """The texts of each message of the prompt (a system prompt is one)."""
    found: list[list[str]] = []
    if dialect == "openai-responses":
        if isinstance(body.get("instructions"), str):
            found.append([body["instructions"]])
        items = body.get("input")
        for item in items if isinstance(items, list) else [items]:
            if isinstance(item, dict):
                found.append(_texts(item.get("content", item.get("output"))))
            elif isinstance(item, str):
                found.append([item])
        return found
    if dialect == "anthropic":
        if "system" in body:
            found.append(_texts(body["system"]))
        messages = body.get("messages")
        if isinstance(messages, list):
            found += [_texts(m.get("content")) if isinstance(m, dict) else [] for m in messages]
        return found
    system = body.get("systemInstruction")
    contents = body.get("contents")
    for message in [system, *contents] if isinstance(contents, list) else [system]:
        if isinstance(message, dict):
            found.append(_texts(message.get("parts")))
        elif isinstance(message, str):
            found.append([message])
    return found


def _integer(value: object, minimum: int, param: str, dialect: str) -> int:
    """``value`` as the API's token limit, or the API's 400."""
    if not isinstance(value, int) or isinstance(value, bool):
        if dialect == "anthropic":
            raise BadRequest(f"{param}: Input should be a valid integer")
        if dialect == "gemini":
            raise BadRequest(f"Invalid value at '{param}' (TYPE_INT32), {value!r}")
        raise BadRequest(
            f"Invalid type for '{param}': expected an integer, but got {type(value).__name__} instead.",
            param,
            "invalid_type",
        )
    if value < minimum:
        if dialect == "anthropic":
            raise BadRequest(f"{param}: Input should be greater than or equal to {minimum}")
        if dialect == "gemini":
            raise BadRequest(f"{param} must be at least {minimum}, got {value}")
        raise BadRequest(
            f"Invalid '{param}': integer below minimum value. Expected a value >= {minimum}, but got {value} instead.",
            param,
            "integer_below_min_value",
        )
    return value


def _seed(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_request(dialect: str, body: Any, *, model: str | None = None, stream: bool = False) -> Ask:
    """What ``body`` (the parsed JSON, None when it was not JSON) asks of
    ``dialect``'s API; for Gemini, ``model`` and ``stream`` come from the
    path.

    Raises:
        BadRequest: the API would refuse the request.
    """
    if not isinstance(body, dict):
        if dialect == "anthropic":
            raise BadRequest("The request body is not valid JSON: a JSON object was expected.")
        if dialect == "gemini":
            raise BadRequest("Invalid JSON payload received. Expected a JSON object.")
        raise BadRequest(_NOT_JSON)
    name = body.get("model")
    if dialect == "openai-chat":
        stream = body.get("stream") is True
        options = body.get("stream_options")
        if options is not None and not stream:
            raise BadRequest(
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"
            )
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        param = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
        limit = body.get(param)
        max_tokens = None if limit is None else _integer(limit, 1, param, dialect)
        return Ask(
            stream, include_usage, max_tokens, prompt_tokens(body.get("messages")), _name(name), _seed(body.get("seed"))
        )
    prompt = _count(_messages(dialect, body))
    if dialect == "gemini":
        config = body.get("generationConfig")
        config = config if isinstance(config, dict) else {}
        limit = config.get("maxOutputTokens")
        max_tokens = None if limit is None else _integer(limit, 1, "generation_config.max_output_tokens", dialect)
        return Ask(stream, True, max_tokens, prompt, model, _seed(config.get("seed")))
    if dialect == "anthropic":
        if body.get("max_tokens") is None:
            raise BadRequest("max_tokens: Field required")
        max_tokens = _integer(body["max_tokens"], 1, "max_tokens", dialect)
    else:
        limit = body.get("max_output_tokens")
        max_tokens = None if limit is None else _integer(limit, 16, "max_output_tokens", dialect)
    return Ask(body.get("stream") is True, True, max_tokens, prompt, _name(name), _seed(body.get("seed")))


def _name(value: object) -> str | None:
    return value if isinstance(value, str) else None
