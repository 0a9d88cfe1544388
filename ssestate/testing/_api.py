"""The test server's face: four streaming APIs on loopback.

Theory of operation
-------------------
``ScenarioHandler`` turns each request into a ``Script``.  It answers every
API at its own path, whatever ``dialect`` a server was started with:

* ``POST /v1/chat/completions``: OpenAI Chat Completions;
* ``POST /v1/responses``: the OpenAI Responses API;
* ``POST /v1/messages``: Anthropic Messages;
* ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` and
  ``POST /v1beta/models/{model}:generateContent``: Gemini (``/v1/models/...``
  too, Google's other version);
* ``GET /v1/models``, ``GET /v1/models/{id}`` (OpenAI's shape) and
  ``GET /v1beta/models``, ``GET /v1beta/models/{id}`` (Gemini's): the
  scenarios, as models;

and every other path with the API's 404 (Gemini's shape under ``/v1beta``,
OpenAI's elsewhere).  A request is read as its API reads it
(``_requests.read_request``: stream or not, token limit, prompt), answered
with the scenario in that API (``scenario(..., dialect=...)``), and refused
in that API's error shape (``_errors``) when the API would refuse it, or
when it names a scenario that API cannot play.

Which scenario plays is the test server's own business, chosen per request:
the ``X-Ssestate-Scenario`` header, else a model naming a scenario (``cjk``
or ``ssestate-cjk``; Gemini's model is in the path), else the server's
default.  The seed is the request's integer ``seed`` (Gemini:
``generationConfig.seed``), else the server's base seed plus the number of
requests it received before, so ``random`` varies from one request to the
next and a whole test run replays exactly.  ``X-Ssestate-Speed`` overrides
the speed.

``ScenarioServer`` is a ``ScriptServer`` with this handler, and ``serve()``
the context manager that runs one in the background.  Its ``dialect`` only
chooses the ``base_url`` it reports (SPEC §7's base URL of that API, the
one ssestate's adapters take) and the scenarios its default may be.
"""

from __future__ import annotations

import json
import math
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

from ._errors import error_script
from ._requests import Ask, BadRequest, prompt_tokens, read_request
from ._scenarios import DIALECTS, REFUSED, SCENARIOS, random_choice, scenario
from ._script import Script
from ._server import ScriptRequest, ScriptServer

__all__ = ["BASE_PATHS", "PATHS", "ScenarioHandler", "ScenarioServer", "prompt_tokens", "serve"]

#: What each API's base URL ends with (SPEC §7: the adapters add the rest).
BASE_PATHS = {"openai-chat": "/v1", "openai-responses": "/v1", "anthropic": "/v1", "gemini": "/v1beta"}
#: The paths the server answers, with the API of each, for help texts.
PATHS = (
    ("POST /v1/chat/completions", "OpenAI Chat Completions"),
    ("POST /v1/responses", "OpenAI Responses API"),
    ("POST /v1/messages", "Anthropic Messages"),
    ("POST /v1beta/models/{model}:streamGenerateContent?alt=sse", "Gemini (and :generateContent, not streamed)"),
    ("GET  /v1/models, /v1beta/models", "the scenarios, as models"),
)
_POSTS = {"/v1/chat/completions": "openai-chat", "/v1/responses": "openai-responses", "/v1/messages": "anthropic"}
_GEMINI = re.compile(r"/(v1|v1beta)/models/([^/:]+):(streamGenerateContent|generateContent)")


def _json(status: int, body: object) -> Script:
    data = (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode()
    return Script(status, [("Content-Type", "application/json")], [data], chunked=False)


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "ssestate"}


def _gemini_model(name: str) -> dict[str, Any]:
    methods = ["generateContent", "streamGenerateContent"]
    return {"name": f"models/{name}", "displayName": name, "supportedGenerationMethods": methods}


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadRequest(f"X-Ssestate-Speed is not a number: {text!r}") from None
    if not value > 0:
        raise BadRequest(f"X-Ssestate-Speed must be a positive number, got {text!r}")
    return value


class ScenarioHandler:
    """Answer each request as its API would, with a scenario's script (see
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

    def pick(
        self, request: ScriptRequest, ask: Ask | None = None, dialect: str = "openai-chat"
    ) -> tuple[str, int, float]:
        """(scenario, seed, speed) for ``request`` (read as ``ask``; as a
        Chat Completions request when None).

        Raises:
            BadRequest: a header asks for what does not exist, or the
                scenario is one ``dialect``'s API cannot play.
        """
        if ask is None:
            ask = read_request("openai-chat", request.json if isinstance(request.json, dict) else {})
        name = request.header("X-Ssestate-Scenario")
        if name is not None:
            name = name.strip()
            if name not in SCENARIOS:
                raise BadRequest(
                    f"unknown scenario {name!r} in X-Ssestate-Scenario; choose one of: {', '.join(SCENARIOS)}",
                    code="unknown_scenario",
                )
        elif ask.model is not None and ask.model.removeprefix("ssestate-") in SCENARIOS:
            name = ask.model.removeprefix("ssestate-")
        else:
            name = self.default
        refused = REFUSED.get(dialect, {}).get(name)
        if refused is not None:
            raise BadRequest(f"scenario {name!r} cannot play here: {refused}", code="unsupported_scenario")
        seed = self.seed + request.attempt if ask.seed is None else ask.seed
        text = request.header("X-Ssestate-Speed")
        speed = self.speed if text is None else _positive(text.strip())
        return name, seed, speed

    def __call__(self, request: ScriptRequest) -> Script:
        path, _, query = request.path.partition("?")
        path = path.rstrip("/")
        what = f"#{request.attempt} {request.method} {request.path}"
        if request.method == "GET":
            listed = self._models(path)
            if listed is not None:
                self._log(f"{what} -> {listed[0]}")
                return listed[1]
        found = _POSTS.get(path)
        gemini = _GEMINI.fullmatch(path)
        if request.method != "POST" or (found is None and gemini is None):
            self._log(f"{what} -> 404")
            if path.startswith("/v1beta/"):
                return error_script("gemini", 404, f"Method not found: {request.method} {request.path}")
            return error_script("openai-chat", 404, f"Invalid URL ({request.method} {request.path})")
        dialect = found or "gemini"
        try:
            if gemini is not None:
                stream = gemini.group(3) == "streamGenerateContent"
                if stream and urllib.parse.parse_qs(query).get("alt") != ["sse"]:
                    raise BadRequest(
                        "the test server streams Gemini with alt=sse only: "
                        "POST .../models/{model}:streamGenerateContent?alt=sse"
                    )
                ask = read_request(dialect, request.json, model=gemini.group(2), stream=stream)
            else:
                ask = read_request(dialect, request.json)
            script, label = self._play(request, ask, dialect)
        except BadRequest as exc:
            self._log(f"{what} -> {exc.status} ({exc})")
            return error_script(dialect, exc.status, str(exc), param=exc.param, code=exc.code)
        if self.log is not None:
            self.chosen[request.attempt] = label
        self._log(f"{what} -> {label}")
        return script

    def _models(self, path: str) -> tuple[str, Script] | None:
        """The answer to a GET of the model list or of one model, if it is one."""
        if path in ("/v1/models", "/v1beta/models"):
            gemini = path == "/v1beta/models"
            models = [_gemini_model(n) if gemini else _model(n) for n in SCENARIOS]
            return "model list", _json(200, {"models": models} if gemini else {"object": "list", "data": models})
        for prefix, dialect in (("/v1/models/", "openai-chat"), ("/v1beta/models/", "gemini")):
            if path.startswith(prefix) and ":" not in path:
                name = path.removeprefix(prefix).removeprefix("models/")
                if name not in SCENARIOS:
                    message = f"The model '{name}' does not exist"
                    return f"model {name}", error_script(dialect, 404, message, param="model", code="model_not_found")
                return f"model {name}", _json(200, _gemini_model(name) if dialect == "gemini" else _model(name))
        return None

    def _play(self, request: ScriptRequest, ask: Ask, dialect: str) -> tuple[Script, str]:
        name, seed, speed = self.pick(request, ask, dialect)
        label = f"{name} seed {seed}" + (f" speed {speed:g}" if speed != self.speed else "")
        if name == "random":
            label += f" ({random_choice(seed, dialect)})"
        if not ask.stream:
            label += " (not streamed)"
        script = scenario(
            name,
            seed,
            speed,
            stream=ask.stream,
            include_usage=ask.include_usage,
            max_tokens=ask.max_tokens,
            prompt_tokens=ask.prompt_tokens,
            dialect=dialect,
        )
        return script, label

    def _log(self, text: str) -> None:
        if self.log is not None:
            self.log(text)


class ScenarioServer(ScriptServer):
    """The test server: four streaming APIs on loopback, answering with
    scenarios.

    A ``ScriptServer`` (its ``requests``, ``responses``, ``wait_for`` and
    ``record_for`` tell what clients did) whose handler is a
    ``ScenarioHandler``.  Use it as a context manager, or ``start()`` and
    ``close()`` it.  Every API is answered at its own paths whatever the
    ``dialect``, which chooses the ``base_url``.

    Attributes:
        base_url: the base URL of ``dialect``'s API, as ssestate's adapters
            take it: ``http://127.0.0.1:PORT/v1`` (OpenAI, Anthropic) or
            ``.../v1beta`` (Gemini).  The Anthropic and Google SDKs take
            ``origin`` instead (they add the version themselves).
        origin: ``http://127.0.0.1:PORT``.
        dialect: the API of ``base_url``.
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
            raise ValueError(f"the test server speaks {', '.join(DIALECTS)}; not {dialect!r}")
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; choose one of: {', '.join(SCENARIOS)}")
        refused = REFUSED.get(dialect, {}).get(scenario)
        if refused is not None:
            raise ValueError(f"scenario {scenario!r} cannot be the default for dialect {dialect!r}: {refused}")
        if not (speed > 0 and not math.isnan(speed)):
            raise ValueError(f"speed must be positive, got {speed!r}")
        self.dialect = dialect
        super().__init__(ScenarioHandler(scenario, 0 if seed is None else seed, speed, log), host, port)

    @property
    def base_url(self) -> str:
        return self.origin + BASE_PATHS[self.dialect]


def serve(
    scenario: str = "text", *, dialect: str = "openai-chat", seed: int | None = None, speed: float = 1.0
) -> ScenarioServer:
    """The loopback test server, to run in a ``with`` block.

    ``with serve("tools", speed=10) as server:`` starts it in the background
    and yields it; ``server.base_url`` (``http://127.0.0.1:PORT/v1``) is
    what any client takes, the official SDKs included.  Leaving the block
    stops it and closes every connection.

    The server answers all four APIs at their own paths (``PATHS``);
    ``dialect`` chooses which one ``base_url`` leads to: ``/v1`` for
    "openai-chat", "openai-responses" and "anthropic", ``/v1beta`` for
    "gemini" (what ssestate's adapters take as ``base_url``; the Anthropic
    SDK takes ``server.origin``, and google-genai ``base_url=server.origin``
    with ``api_version="v1beta"``).

    Args:
        scenario: what a request that names no scenario gets (see
            ``SCENARIOS``; a request names one with its model or the
            ``X-Ssestate-Scenario`` header).
        dialect: the API of ``base_url``: "openai-chat", "openai-responses",
            "anthropic" or "gemini".
        seed: the base seed (None: 0): request number k plays seed k more
            than it, unless the request has an integer seed.
        speed: every pause is divided by it (``float("inf")``: none).

    Raises:
        ValueError: an unknown scenario or dialect, a default scenario the
            dialect's API cannot play (``REFUSED``), or a speed that is not
            positive.
    """
    return ScenarioServer(scenario, dialect=dialect, seed=seed, speed=speed)
