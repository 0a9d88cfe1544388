"""ssestate's testing kit: the test server as a library, hypothesis
strategies and a pytest plugin, for testing your own clients, gateways and
parsers of chat-completion streams.

Theory of operation
-------------------
Three pieces, each usable alone:

* ``serve(scenario, ...)`` runs the loopback server behind ``ssestate
  serve`` in a background thread: OpenAI Chat Completions, the Responses
  API, Anthropic Messages and Gemini, each at its own paths, each the real
  API where no fault is intended, and realistic trouble where it is
  (bursts, silences, writes cut inside characters, dropped connections,
  error pages, each API's own errors and keep-alives), scene by scene as
  ``SCENARIOS`` lists them.  Standard library only.
* ``ssestate.testing.strategies`` (import it by name; it needs hypothesis):
  ``chat_streams(dialect)`` draws response bodies of any of the four APIs
  with the hazards real servers produce and what a correct client makes of them; ``chunkings(body)``
  draws the ways a network cuts them.
* The pytest plugin (the module ``pytest_ssestate``, registered by the
  ``pytest11`` entry point when ssestate is installed) gives the fixture
  ``sse_server``.

``import ssestate`` never imports this package; the ``testing`` extra
(``pip install 'ssestate[testing]'``) brings hypothesis and pytest.
"""

from __future__ import annotations

from ._api import BASE_PATHS, PATHS, ScenarioHandler, ScenarioServer, prompt_tokens, serve
from ._scenarios import (
    DESCRIPTIONS,
    DIALECTS,
    OUTCOMES,
    REFUSED,
    SCENARIOS,
    expected_outcome,
    random_choice,
    scenario,
    scenarios_for,
)
from ._script import Script, Step
from ._server import ResponseRecord, ScriptRequest, ScriptServer

__all__ = (
    "BASE_PATHS",
    "DESCRIPTIONS",
    "DIALECTS",
    "OUTCOMES",
    "PATHS",
    "REFUSED",
    "SCENARIOS",
    "ResponseRecord",
    "ScenarioHandler",
    "ScenarioServer",
    "Script",
    "ScriptRequest",
    "ScriptServer",
    "Step",
    "expected_outcome",
    "prompt_tokens",
    "random_choice",
    "scenario",
    "scenarios_for",
    "serve",
)
