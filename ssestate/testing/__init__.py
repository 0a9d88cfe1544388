"""ssestate's testing kit: the test server as a library, hypothesis
strategies and a pytest plugin, for testing your own clients, gateways and
parsers of chat-completion streams.

Theory of operation
-------------------
Three pieces, each usable alone:

* ``serve(scenario, ...)`` runs the loopback server behind ``ssestate
  serve`` in a background thread: the OpenAI Chat Completions API where no
  fault is intended, and realistic trouble where it is (bursts, silences,
  writes cut inside characters, dropped connections, error pages), scene
  by scene as ``SCENARIOS`` lists them.  Standard library only.
* ``ssestate.testing.strategies`` (import it by name; it needs hypothesis):
  ``chat_streams()`` draws response bodies with the hazards real servers
  produce and what a correct client makes of them; ``chunkings(body)``
  draws the ways a network cuts them.
* The pytest plugin (the module ``pytest_ssestate``, registered by the
  ``pytest11`` entry point when ssestate is installed) gives the fixture
  ``sse_server``.

``import ssestate`` never imports this package; the ``testing`` extra
(``pip install 'ssestate[testing]'``) brings hypothesis and pytest.
"""

from __future__ import annotations

from ._api import ScenarioHandler, ScenarioServer, prompt_tokens, serve
from ._scenarios import DESCRIPTIONS, OUTCOMES, SCENARIOS, expected_outcome, random_choice, scenario
from ._script import Script, Step
from ._server import ResponseRecord, ScriptRequest, ScriptServer

__all__ = (
    "DESCRIPTIONS",
    "OUTCOMES",
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
    "serve",
)
