"""ssestate's testing kit: the test server as a library, for testing your
own clients, gateways and parsers of chat-completion streams.

Theory of operation
-------------------
``serve(scenario, ...)`` runs the loopback server behind ``ssestate serve``
in a background thread: the OpenAI Chat Completions API where no fault is
intended, and realistic trouble where it is (bursts, silences, writes cut
inside characters, dropped connections, error pages), scene by scene as
``SCENARIOS`` lists them.  Standard library only.

``import ssestate`` never imports this package.
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
