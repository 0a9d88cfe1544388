"""Every adapter makes the same thing of the same server stream.

One parametrised test: for each scenario (the realistic ones of
``ssestate.testing``, played at 40x speed, and the shared
``adapter_scenarios.CASES`` that end without an exception and without
a long wait), every adapter
(stdlib, httpx sync, httpx async under asyncio and under trio, trio + h11)
reads the stream from its own ``ScriptServer``, and the event lists and the
final ``Accumulator`` results must be identical across adapters and equal
to what ``ChatStream`` makes of the captured body.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("httpx")
pytest.importorskip("trio")
pytest.importorskip("h11")

from adapter_scenarios import (
    ADAPTERS,
    CASES,
    HELLO,
    HELLO_EVENTS,
    Case,
    ServerFactory,
    reference,
    run,
    running_servers,
    summary,
)

from ssestate.testing import SCENARIOS, Script, expected_outcome, scenario

pytestmark = pytest.mark.network

SEED = 11
SPEED = 40.0


def realistic(name: str) -> Case:
    script = scenario(name, seed=SEED, speed=SPEED)
    expected = reference(script.body(), script.status, script.content_type)
    return Case(f"scenario-{name}", (script,), tuple(expected), kwargs={"retry": None})


# The cases that mostly wait (timeouts, long pauses) are left to each
# adapter's own test file.
_SLOW = {"heartbeats-through-silence", "slow-first-byte-within", "first-byte-timeout-is-retried"}
ALL: tuple[Case, ...] = (
    *(realistic(name) for name in SCENARIOS),
    *(case for case in CASES if case.raises is None and case.name not in _SLOW),
)


@pytest.fixture
def server_factory() -> Iterator[ServerFactory]:
    yield from running_servers()


@pytest.mark.parametrize("case", ALL, ids=[c.name for c in ALL])
def test_every_adapter_gives_the_same_result(case: Case, server_factory: ServerFactory) -> None:
    results = {}
    shared = server_factory(*case.scripts) if len(case.scripts) == 1 else None
    for adapter in ADAPTERS:
        # A case that answers retries differently needs a fresh request count.
        server = shared or server_factory(*case.scripts)
        results[adapter] = run(adapter, server.url, **case.kwargs)
    for adapter, result in results.items():
        assert result.error is None, (adapter, result.error)
        assert result.events == list(case.expected), adapter
        assert result.attempts == case.attempts, adapter
        assert result.status_code == case.scripts[-1].status, adapter
    summaries = {adapter: summary(result.events) for adapter, result in results.items()}
    assert len(set(map(repr, summaries.values()))) == 1, summaries
    if case.name.startswith("scenario-"):
        outcome = next(iter(summaries.values()))[0]
        assert outcome == expected_outcome(case.name.removeprefix("scenario-"), SEED)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_stats_count_only_the_events_handed_out(adapter: str, server_factory: ServerFactory) -> None:
    # One write completes every event; the caller leaves after two.
    server = server_factory(Script(steps=[b"".join(step for step in HELLO if isinstance(step, bytes))]))
    result = run(adapter, server.url, take=2)
    assert result.events == HELLO_EVENTS[:2]
    assert result.stats.events == 2
