"""When events come out and when a call ends, the same for every adapter.

Each test runs every adapter (stdlib, httpx sync, httpx async under asyncio
and trio, trio + h11) against the loopback ScriptServer, and how a response
ended is read from the server's side.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("httpx")
pytest.importorskip("trio")

from adapter_scenarios import ADAPTERS, HELLO, HELLO_EVENTS, ServerFactory, run, running_servers

from ssestate import RemoteProtocolError
from ssestate._script import Script

pytestmark = pytest.mark.network

HELLO_BYTES = [s for s in HELLO if isinstance(s, bytes)]


@pytest.fixture
def server_factory() -> Iterator[ServerFactory]:
    yield from running_servers()


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_fault_behind_events_is_raised_without_waiting(adapter: str, server_factory: ServerFactory) -> None:
    # One write holds an event and then a payload that is not JSON; the
    # server then pauses 5 s.  The event comes out, then the error, at once.
    first = HELLO_BYTES[0] + b"data: not json\n\n"
    server = server_factory(Script(steps=[first, 5.0, *HELLO[1:]]))
    result = run(adapter, server.url, retry=None)
    assert result.events == HELLO_EVENTS[:1]
    assert isinstance(result.error, RemoteProtocolError)
    record = server.record_for(0)
    assert record is not None
    assert (record.outcome, record.step) == ("disconnected", 1)

