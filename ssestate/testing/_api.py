"""The test server's face: the OpenAI Chat Completions API, on loopback.

Theory of operation
-------------------
``ScenarioHandler`` turns each request into a ``Script``.  It answers the
paths the real API answers under ``/v1`` (``POST /v1/chat/completions``,
``GET /v1/models``, ``GET /v1/models/{id}``) and every other path with the
API's 404 (``Invalid URL (POST /nope)``), in the API's error shape.  For a
chat request it reads what the API reads: ``stream`` (a stream only when it
is true), ``stream_options.include_usage`` (only with a stream),
``max_tokens`` or ``max_completion_tokens``, and the messages, from which the
prompt's token count is derived, so the same prompt always costs the same.
A request the API would refuse gets the API's 400.

Which scenario plays is the test server's own business, chosen per request:
the ``X-Ssestate-Scenario`` header, else a ``model`` naming a scenario
(``cjk`` or ``ssestate-cjk``), else the server's default.  The seed is the
request's integer ``seed``, else the server's base seed plus the number of
requests it received before, so ``random`` varies from one request to the
next and a whole test run replays exactly.  ``X-Ssestate-Speed`` overrides
the speed.

``ScenarioServer`` is a ``ScriptServer`` with this handler, and ``serve()``
the context manager that runs one in the background.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from ._scenarios import SCENARIOS, random_choice, scenario
from ._script import Script
from ._server import ScriptRequest, ScriptServer

__all__ = ["ScenarioHandler", "ScenarioServer", "prompt_tokens", "serve"]

DIALECTS = ("openai-chat",)

# One token per word or punctuation mark, four per message for the role and
# separators, three to prime the reply: not a tokenizer, but stable and
# growing with the prompt as the real counts do.
_WORDS = re.compile(r"\w+|[^\w\s]")
_PER_MESSAGE = 4
_PRIMING = 3


class BadRequest(Exception):
    """What the API answers with a 400: message, param and code."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.param = param
        self.code = code


def prompt_tokens(messages: object) -> int:
    """The prompt tokens the server counts for ``messages`` (any JSON)."""
    if not isinstance(messages, list):
        return _PRIMING
    total = _PRIMING
    for message in messages:
        total += _PER_MESSAGE
        content = message.get("content") if isinstance(message, dict) else None
        parts = content if isinstance(content, list) else [content]
        for part in parts:
            text = part.get("text") if isinstance(part, dict) else part
            if isinstance(text, str):
                total += len(_WORDS.findall(text))
    return total


def _error(status: int, message: str, *, param: str | None = None, code: str | None = None) -> Script:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}
    return _json(status, body)


def _json(status: int, body: object) -> Script:
    data = (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode()
    return Script(status, [("Content-Type", "application/json")], [data], chunked=False)


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "ssestate"}


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadRequest(f"X-Ssestate-Speed is not a number: {text!r}") from None
    if not value > 0:
        raise BadRequest(f"X-Ssestate-Speed must be a positive number, got {text!r}")
    return value


def _max_tokens(body: dict[str, Any]) -> int | None:
    param = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    value = body.get(param)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest(
            f"Invalid type for '{param}': expected an integer, but got {type(value).__name__} instead.",
            param,
            "invalid_type",
        )
    if value < 1:
        raise BadRequest(
            f"Invalid '{param}': integer below minimum value. Expected a value >= 1, but got {value} instead.",
            param,
            "integer_below_min_value",
        )
    return value


class ScenarioHandler:
    """Answer each request as the API would, with a scenario's script (see
    the module docstring).

    Args:
        default: the scenario of a request that names none.
        seed: the base seed.
        speed: pauses are divided by it.
        log: called with one line per request, if given.

    Attributes:
        chosen: for each request number, "name seed N", while ``log`` is set
            (for a log line that reports how the response ended).
    """

    def __init__(
        self, default: str = "text", seed: int = 0, speed: float = 1.0, log: Callable[[str], None] | None = None
    ) -> None:
        self.default = default
        self.seed = seed
        self.speed = speed
        self.log = log
        self.chosen: dict[int, str] = {}

    def pick(self, request: ScriptRequest) -> tuple[str, int, float]:
        """(scenario, seed, speed) for ``request``.

        Raises:
            BadRequest: a header asks for what does not exist.
        """
        body = request.json if isinstance(request.json, dict) else {}
        name = request.header("X-Ssestate-Scenario")
        if name is not None:
            name = name.strip()
            if name not in SCENARIOS:
                raise BadRequest(
                    f"unknown scenario {name!r} in X-Ssestate-Scenario; choose one of: {', '.join(SCENARIOS)}",
                    code="unknown_scenario",
                )
        else:
            model = body.get("model")
            if isinstance(model, str) and model.removeprefix("ssestate-") in SCENARIOS:
                name = model.removeprefix("ssestate-")
            else:
                name = self.default
        seed = body.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool):
            seed = self.seed + request.attempt
        text = request.header("X-Ssestate-Speed")
        speed = self.speed if text is None else _positive(text.strip())
        return name, seed, speed

    def __call__(self, request: ScriptRequest) -> Script:
        path = request.path.partition("?")[0].rstrip("/")
        what = f"#{request.attempt} {request.method} {request.path}"
        if request.method == "GET" and path == "/v1/models":
            self._log(f"{what} -> model list")
            return _json(200, {"object": "list", "data": [_model(name) for name in SCENARIOS]})
        if request.method == "GET" and path.startswith("/v1/models/"):
            name = path.removeprefix("/v1/models/")
            self._log(f"{what} -> model {name}")
            if name not in SCENARIOS:
                return _error(404, f"The model '{name}' does not exist", param="model", code="model_not_found")
            return _json(200, _model(name))
        if request.method != "POST" or path != "/v1/chat/completions":
            self._log(f"{what} -> 404")
            return _error(404, f"Invalid URL ({request.method} {request.path})")
        try:
            script, label = self._chat(request)
        except BadRequest as exc:
            self._log(f"{what} -> 400 ({exc})")
            return _error(400, str(exc), param=exc.param, code=exc.code)
        if self.log is not None:
            self.chosen[request.attempt] = label
        self._log(f"{what} -> {label}")
        return script

    def _chat(self, request: ScriptRequest) -> tuple[Script, str]:
        body = request.json
        if not isinstance(body, dict):
            raise BadRequest(
                "We could not parse the JSON body of your request. The API expects a JSON object; "
                "what was sent was not one."
            )
        stream = body.get("stream") is True
        options = body.get("stream_options")
        if options is not None and not stream:
            raise BadRequest(
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"
            )
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        max_tokens = _max_tokens(body)
        name, seed, speed = self.pick(request)
        label = f"{name} seed {seed}" + (f" speed {speed:g}" if speed != self.speed else "")
        if name == "random":
            label += f" ({random_choice(seed)})"
        if not stream:
            label += " (not streamed)"
        script = scenario(
            name,
            seed,
            speed,
            stream=stream,
            include_usage=include_usage,
            max_tokens=max_tokens,
            prompt_tokens=prompt_tokens(body.get("messages")),
        )
        return script, label

    def _log(self, text: str) -> None:
        if self.log is not None:
            self.log(text)


class ScenarioServer(ScriptServer):
    """The test server: the OpenAI API on loopback, answering with scenarios.

    A ``ScriptServer`` (its ``requests``, ``responses``, ``wait_for`` and
    ``record_for`` tell what clients did) whose handler is a
    ``ScenarioHandler``.  Use it as a context manager, or ``start()`` and
    ``close()`` it.

    Attributes:
        base_url: what a client's ``base_url`` is, e.g.
            ``http://127.0.0.1:PORT/v1``.
        handler: the ``ScenarioHandler``.
    """

    handler: ScenarioHandler

    def __init__(
        self,
        scenario: str = "text",
        *,
        dialect: str = "openai-chat",
        seed: int | None = None,
        speed: float = 1.0,
        host: str = "127.0.0.1",
        port: int = 0,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"the test server speaks {', '.join(DIALECTS)}; not {dialect!r} (yet)")
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(SCENARIOS)}")
        if not (speed > 0 and not math.isnan(speed)):
            raise ValueError(f"speed must be positive, got {speed!r}")
        self.dialect = dialect
        super().__init__(ScenarioHandler(scenario, 0 if seed is None else seed, speed, log), host, port)

    @property
    def base_url(self) -> str:
        return self.url


def serve(
    scenario: str = "text", *, dialect: str = "openai-chat", seed: int | None = None, speed: float = 1.0
) -> ScenarioServer:
    """The loopback test server, to run in a ``with`` block.

    ``with serve("tools", speed=10) as server:`` starts it in the background
    and yields it; ``server.base_url`` (``http://127.0.0.1:PORT/v1``) is
    what any client takes, the official SDKs included.  Leaving the block
    stops it and closes every connection.

    Args:
        scenario: what a request that names no scenario gets (see
            ``SCENARIOS``; a request names one with its ``model`` or the
            ``X-Ssestate-Scenario`` header).
        dialect: the API spoken; "openai-chat" (``/v1/chat/completions``).
        seed: the base seed (None: 0): request number k plays seed k more
            than it, unless its body has an integer ``seed``.
        speed: every pause is divided by it (``float("inf")``: none).

    Raises:
        ValueError: an unknown scenario or dialect, or a speed that is not
            positive.
    """
    return ScenarioServer(scenario, dialect=dialect, seed=seed, speed=speed)
