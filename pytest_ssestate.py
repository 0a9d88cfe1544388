"""ssestate's pytest plugin: the ``sse_server`` fixture.

Theory of operation
-------------------
Registered through the ``pytest11`` entry point, so any project with
ssestate installed has the fixture without a ``conftest.py``.  The fixture
is a factory: ``sse_server(scenario, **kw)`` starts a test server (the
arguments of ``ssestate.testing.serve``) and returns its base URL; every
server a test started is closed when the test ends, pass or fail.

The module lives beside the ``ssestate`` package, not inside it: pytest
imports its plugins before any test run starts, coverage measurement
included, and a module inside the package would import all of ssestate at
that moment.  Nothing of ssestate is imported until a test asks for the
fixture, so the plugin costs the test runs that do not use it nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

__all__ = ["sse_server"]


@pytest.fixture
def sse_server() -> Iterator[Callable[..., str]]:
    """Start ssestate's test server: ``sse_server("tools", speed=10)``
    returns a base URL (``http://127.0.0.1:PORT/v1``) that serves until the
    test ends.  Arguments: those of ``ssestate.testing.serve``."""
    from ssestate.testing import ScenarioServer, serve  # noqa: PLC0415 - only when a test asks for it

    servers: list[ScenarioServer] = []

    def start(scenario: str = "text", **kwargs: Any) -> str:
        server = serve(scenario, **kwargs).start()
        servers.append(server)
        return server.base_url

    try:
        yield start
    finally:
        for server in servers:
            server.close()
