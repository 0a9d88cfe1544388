"""Scenarios: each script parses to its declared outcome, and is as
difficult as it says (adversarial write boundaries, silences, bad heads)."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from helpers import feed_all
from hypothesis import given, settings
from hypothesis import strategies as st

from ssestate import (
    CLOSED,
    DONE_BYTES,
    Accumulator,
    ChatEvent,
    ChatStream,
    Delta,
    Done,
    Heartbeat,
    StreamError,
    ToolCallFragment,
    Truncated,
)
from ssestate.testing import (
    DESCRIPTIONS,
    OUTCOMES,
    SCENARIOS,
    Script,
    expected_outcome,
    random_choice,
    scenario,
)

FIXED = [name for name in SCENARIOS if name != "random"]


def _play(script: Script, chunks: list[bytes] | None = None) -> tuple[list[ChatEvent], Accumulator]:
    """Feed a script's writes (or ``chunks``) to a ChatStream built from its
    head; return the events (CLOSED dropped) and the accumulator."""
    stream = ChatStream(script.status, script.content_type)
    writes = chunks if chunks is not None else [s for s in script.steps if isinstance(s, bytes)]
    events = feed_all(stream, writes)
    assert events[-1] is CLOSED
    acc = Accumulator()
    for ev in events[:-1]:
        acc.feed(ev)
    return events[:-1], acc


def _writes(script: Script) -> list[bytes]:
    return [s for s in script.steps if isinstance(s, bytes)]


def _pauses(script: Script) -> list[float]:
    return [s for s in script.steps if isinstance(s, float)]


# -- the catalogue --------------------------------------------------------------


def test_catalogue_is_complete() -> None:
    assert SCENARIOS == (
        "text",
        "cjk",
        "tools",
        "parallel-tools",
        "n2",
        "length",
        "reasoning",
        "drop-mid-event",
        "no-done",
        "error-503",
        "error-401",
        "overloaded",
        "error-mid-stream",
        "downgrade",
        "heartbeat-silence",
        "crlf",
        "slow-first-byte",
        "random",
    )
    assert set(OUTCOMES) == set(FIXED)
    assert set(DESCRIPTIONS) == set(SCENARIOS)
    assert all(DESCRIPTIONS[name] for name in SCENARIOS)
    assert {expected_outcome(name) for name in FIXED} == {"complete", "length", "truncated", "error"}


@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("name", SCENARIOS)
def test_each_scenario_reaches_its_declared_outcome(name: str, seed: int) -> None:
    script = scenario(name, seed)
    events, acc = _play(script)
    assert acc.outcome == expected_outcome(name, seed)
    # Written as the network delivered it, or whole: the same events.
    assert _play(script, [script.body()])[0] == events


@pytest.mark.parametrize("name", SCENARIOS)
def test_one_byte_writes_give_the_same_events(name: str) -> None:
    script = scenario(name, 3)
    body = script.body()
    assert _play(script, [body[i : i + 1] for i in range(len(body))])[0] == _play(script)[0]


@settings(max_examples=max(10, settings().max_examples // 3))
@given(st.sampled_from(SCENARIOS), st.integers(0, 2**32))
def test_any_seed_reaches_the_declared_outcome(name: str, seed: int) -> None:
    script = scenario(name, seed)
    assert _play(script)[1].outcome == expected_outcome(name, seed)
    for step in script.steps:
        assert step in ("abort", "hold") or (isinstance(step, bytes) and step) or (isinstance(step, float) and step > 0)


def test_same_seed_same_script_other_seed_other_script() -> None:
    for name in SCENARIOS:
        assert scenario(name, 5) == scenario(name, 5)
    for name in ("text", "cjk", "tools", "n2", "crlf", "random"):
        assert scenario(name, 1).steps != scenario(name, 2).steps


def test_every_script_names_its_scenario() -> None:
    for name in FIXED:
        assert ("X-Ssestate-Scenario", name) in scenario(name).headers
    for seed in range(3):
        assert ("X-Ssestate-Scenario", f"random/{random_choice(seed)}") in scenario("random", seed).headers


# -- timing ---------------------------------------------------------------------


def test_speed_divides_pauses_and_keeps_bytes() -> None:
    slow, fast = scenario("text", 2), scenario("text", 2, speed=4.0)
    assert _writes(slow) == _writes(fast)
    assert len(_pauses(slow)) == len(_pauses(fast))
    for a, b in zip(_pauses(slow), _pauses(fast), strict=True):
        assert b == pytest.approx(a / 4, abs=1e-4)


def test_infinite_speed_removes_every_pause() -> None:
    for name in SCENARIOS:
        script = scenario(name, 4, speed=math.inf)
        assert _pauses(script) == []
        assert script.body() == scenario(name, 4).body()


@pytest.mark.parametrize("speed", [0.0, -1.0, math.nan])
def test_bad_speed(speed: float) -> None:
    with pytest.raises(ValueError, match="speed must be positive"):
        scenario("text", speed=speed)


def test_unknown_scenario() -> None:
    with pytest.raises(ValueError, match="unknown scenario 'nope'; choose one of: text, cjk"):
        scenario("nope")
    with pytest.raises(ValueError, match="unknown scenario"):
        expected_outcome("nope")


def test_text_arrives_in_bursts_and_silences() -> None:
    script = scenario("text", 0)
    pauses = _pauses(script)
    assert 0.2 <= pauses[0] <= 0.4  # time to first byte
    assert max(pauses) >= 0.2  # at least one stall
    assert min(pauses) < 0.05  # and steady tokens
    # At least one write carries several events (a burst).
    assert any(w.count(b"\n\n") >= 3 for w in _writes(script))


def test_slow_first_byte() -> None:
    script = scenario("slow-first-byte", 0)
    assert script.steps[0] == 2.5
    assert isinstance(script.steps[1], bytes)


def test_heartbeat_silence_is_a_long_gap_with_comments_only() -> None:
    script = scenario("heartbeat-silence", 0)
    events, acc = _play(script)
    comments = [e.comment for e in events if isinstance(e, Heartbeat)]
    assert comments.count("OPENROUTER PROCESSING") >= 2
    assert comments.count("ping") >= 3
    # The longest stretch of time during which only comments were written.
    longest = gap = 0.0
    for step in script.steps:
        if isinstance(step, float):
            gap += step
        elif isinstance(step, bytes) and b"data:" in step:
            longest, gap = max(longest, gap), 0.0
    assert longest >= 1.2
    assert acc.outcome == "complete"


# -- adversarial bytes -------------------------------------------------------------


def _cuts(script: Script) -> list[tuple[bytes, bytes]]:
    """(end of a write, start of the next write) for every write boundary."""
    writes = _writes(script)
    return [(a[-4:], b[:4]) for a, b in itertools.pairwise(writes)]


def test_cjk_writes_cut_inside_utf8_characters() -> None:
    for seed in range(5):
        script = scenario("cjk", seed)
        inside = [b for _, b in _cuts(script) if 0x80 <= b[0] < 0xC0]
        assert inside, seed
        # Such a write is not valid UTF-8 on its own.
        torn = next(w for w in _writes(script) if 0x80 <= w[0] < 0xC0)
        with pytest.raises(UnicodeDecodeError):
            torn.decode()
        _, acc = _play(script)
        assert "🚀✨" in acc.choices[0].content
        assert "👩\u200d💻" in acc.choices[0].content
        assert "e\u0301" in acc.choices[0].content


def test_crlf_writes_cut_between_cr_and_lf() -> None:
    for seed in range(5):
        script = scenario("crlf", seed)
        body = script.body()
        assert b"\n" not in body.replace(b"\r\n", b"")  # CRLF everywhere
        assert any(a.endswith(b"\r") and b.startswith(b"\n") for a, b in _cuts(script)), seed
        events, acc = _play(script)
        assert Heartbeat("ping") in events
        assert acc.choices[0].content == 'There are three r\'s in "strawberry".\r\nLine two.\nLine three.'
        assert script.content_type == "text/event-stream; charset=utf-8"


def test_json_escapes_and_dispatch_lines_are_cut_too() -> None:
    seen_blank_cut = seen_data_cut = seen_escape_cut = False
    for seed in range(10):
        writes = _writes(scenario("text", seed))
        for a, b in itertools.pairwise(writes):
            seen_blank_cut |= a.endswith(b"\n") and not a.endswith(b"\n\n") and b.startswith(b"\n")
            seen_data_cut |= a.endswith(b"data:")
            seen_escape_cut |= a.endswith(b"\\") and b[:1] in (b'"', b"n")
    assert seen_blank_cut
    assert seen_data_cut
    assert seen_escape_cut


# -- each scenario's content ---------------------------------------------------------


def test_text_content() -> None:
    events, acc = _play(scenario("text", 0))
    choice = acc.choices[0]
    assert choice.role == "assistant"
    assert choice.content.startswith('Server-sent events look simple: a line that starts with "data:"')
    assert "\n\nA robust client" in choice.content
    assert choice.finish_reason == "stop"
    assert events[-1] == Done(sentinel=True)
    assert acc.usage is not None
    assert acc.usage.completion_tokens == sum(1 for e in events if isinstance(e, Delta) and e.content)


def test_tools_content() -> None:
    events, acc = _play(scenario("tools", 0))
    (call,) = acc.choices[0].tool_calls
    assert call.name == "get_weather"
    assert call.id is not None and call.id.startswith("call_")
    assert call.parsed_arguments() == {"city": "São Paulo", "unit": "celsius", "note": 'quote " and ° sign'}
    assert acc.choices[0].finish_reason == "tool_calls"
    assert sum(1 for e in events if isinstance(e, ToolCallFragment)) > 10


def test_parallel_tools_content() -> None:
    _, acc = _play(scenario("parallel-tools", 0))
    calls = acc.choices[0].tool_calls
    assert [c.name for c in calls] == ["get_weather", "get_time"]
    assert [c.parsed_arguments() for c in calls] == [{"city": "東京", "days": 3}, {"timezone": "Asia/Tokyo"}]
    assert calls[0].id != calls[1].id


def test_n2_content() -> None:
    events, acc = _play(scenario("n2", 0))
    assert acc.choices[0].content == "Bonjour ! Je peux vous aider."
    assert acc.choices[1].content == "Hello! How can I help you today? Ask me anything about streams."
    order = [e.choice for e in events if isinstance(e, Delta) and e.content]
    assert order != sorted(order)  # interleaved


def test_length_content() -> None:
    _, acc = _play(scenario("length", 0))
    assert acc.choices[0].finish_reason == "length"
    assert acc.choices[0].content.endswith("several choices at once, and")


def test_reasoning_content() -> None:
    events, acc = _play(scenario("reasoning", 0))
    assert acc.choices[0].reasoning is not None
    assert acc.choices[0].reasoning.endswith("That makes three.")
    assert acc.choices[0].content == 'There are three r\'s in "strawberry".'
    assert Heartbeat("keep-alive") in events
    first_content = next(i for i, e in enumerate(events) if isinstance(e, Delta) and e.content)
    assert all(not (isinstance(e, Delta) and e.reasoning) for e in events[first_content:])


def test_drop_mid_event() -> None:
    script = scenario("drop-mid-event", 0)
    assert script.steps[-1] == "abort"
    assert not script.body().endswith(b"\n")
    events, acc = _play(script)
    assert isinstance(events[-1], Truncated)
    assert events[-1].reason == "partial-event"
    assert events[-1].pending > 0
    assert acc.outcome == "truncated"
    assert acc.choices[0].content  # what came before is kept


def test_no_done() -> None:
    script = scenario("no-done", 0)
    assert DONE_BYTES not in script.body()
    events, acc = _play(script)
    assert events[-1] == Done(sentinel=False)
    assert acc.usage is not None


@pytest.mark.parametrize(
    ("name", "status", "ctype"),
    [("error-503", 503, "text/html"), ("error-401", 401, "application/json; charset=utf-8"),
     ("overloaded", 503, "application/json")],
)  # fmt: skip
def test_error_heads(name: str, status: int, ctype: str) -> None:
    script = scenario(name, 0)
    assert (script.status, script.content_type, script.chunked) == (status, ctype, False)
    events, _ = _play(script)
    (error,) = events
    assert isinstance(error, StreamError)
    assert error.status == status


def test_error_401_is_openai_shaped() -> None:
    body = json.loads(scenario("error-401").body())
    assert body["error"]["code"] == "invalid_api_key"
    (error,), _ = _play(scenario("error-401"))
    assert isinstance(error, StreamError)
    assert error.code == "invalid_api_key"


def test_downgrade() -> None:
    script = scenario("downgrade", 0)
    assert (script.status, script.content_type, script.chunked) == (200, "application/json", False)
    events, acc = _play(script)
    assert events[-1] == Done(sentinel=False)
    assert acc.choices[0].content == 'There are three r\'s in "strawberry".'


def test_random_plays_every_scenario_over_enough_seeds() -> None:
    picked = {random_choice(seed) for seed in range(80)}
    assert picked == set(FIXED)
    for seed in range(80):
        script = scenario("random", seed)
        base = random_choice(seed)
        assert expected_outcome("random", seed) == OUTCOMES[base]
        assert _play(script)[1].outcome == OUTCOMES[base]
        plain = scenario(base, 0)
        assert (script.status, script.content_type, script.chunked) == (plain.status, plain.content_type, plain.chunked)
        if script.chunked:
            assert len(_writes(script)) >= len(_writes(plain)) // 2
        else:
            assert len(_writes(script)) == 1


# -- what the request asked for -------------------------------------------------------------


@settings(max_examples=max(10, settings().max_examples // 2))
@given(
    st.sampled_from(SCENARIOS),
    st.integers(0, 2**16),
    st.booleans(),
    st.booleans(),
    st.none() | st.integers(1, 60),
    st.integers(0, 500),
)
def test_every_script_knows_its_outcome(
    name: str, seed: int, stream: bool, include_usage: bool, max_tokens: int | None, prompt: int
) -> None:
    script = scenario(
        name, seed, math.inf, stream=stream, include_usage=include_usage, max_tokens=max_tokens, prompt_tokens=prompt
    )
    _, acc = _play(script)
    assert acc.outcome == script.outcome
    assert script.outcome == expected_outcome(name, seed, max_tokens=max_tokens, stream=stream)
    if max_tokens is None and stream:
        assert script.outcome == expected_outcome(name, seed)
    if acc.usage is not None:
        assert acc.usage.prompt_tokens == prompt
        assert acc.usage.total_tokens == prompt + acc.usage.completion_tokens
    streamed = script.content_type.startswith("text/event-stream")
    if streamed:
        assert stream or random_choice(seed) == "drop-mid-event" or name == "drop-mid-event"
        # a stream cut or failed half-way never got to its usage
        assert (acc.usage is not None) == include_usage or acc.outcome in ("truncated", "error")


@pytest.mark.parametrize("name", [n for n in FIXED if OUTCOMES[n] in ("complete", "length") and n != "downgrade"])
def test_no_stream_is_one_chat_completion_with_the_same_answer(name: str) -> None:
    whole = scenario(name, 3, stream=False)
    assert whole.content_type == "application/json"
    completion = json.loads(whole.body())
    assert completion["object"] == "chat.completion"
    _, streamed = _play(scenario(name, 3))
    _, read = _play(whole)
    assert {i: read.message(i, reasoning_key="r") for i in read.choices} == {
        i: streamed.message(i, reasoning_key="r") for i in streamed.choices
    }
    assert read.usage == streamed.usage


def test_no_stream_keeps_the_faults() -> None:
    dropped = scenario("drop-mid-event", 0, stream=False)
    assert dropped.steps[-1] == "abort"
    head = dict(dropped.headers)
    assert int(head["Content-Length"]) > len(dropped.body())
    silence = scenario("heartbeat-silence", 0, stream=False)
    assert silence.chunked
    assert _writes(silence)[:3] == [b"\n", b"\n", b"\n"]
    assert json.loads(silence.body())["choices"][0]["finish_reason"] == "stop"
    for name in ("error-503", "error-401", "overloaded", "downgrade"):
        assert scenario(name, 0, stream=False).body() == scenario(name, 0).body()


def test_usage_chunk_only_when_asked() -> None:
    events, acc = _play(scenario("text", 0, include_usage=False))
    assert acc.usage is None
    assert events[-1] == Done(sentinel=True)


@pytest.mark.parametrize("limit", [0, -3])
def test_bad_max_tokens(limit: int) -> None:
    with pytest.raises(ValueError, match=f"max_tokens must be at least 1, got {limit}"):
        scenario("text", max_tokens=limit)


def test_max_tokens_between_and_inside_tool_calls() -> None:
    natural = _play(scenario("parallel-tools", 0))[0]
    first = sum(1 for e in natural if isinstance(e, ToolCallFragment) and e.index == 0)
    # Exactly the first call: the second is never started.
    _, acc = _play(scenario("parallel-tools", 0, max_tokens=first))
    assert [c.name for c in acc.choices[0].tool_calls] == ["get_weather"]
    assert acc.choices[0].tool_calls[0].parsed_arguments() == {"city": "東京", "days": 3}
    assert acc.choices[0].finish_reason == "length"
    # Inside the first call: its arguments stop short.
    _, acc = _play(scenario("parallel-tools", 0, max_tokens=first - 1))
    (call,) = acc.choices[0].tool_calls
    assert acc.choices[0].finish_reason == "length"
    with pytest.raises(ValueError, match="not JSON"):
        call.parsed_arguments()
    # Before the silence of heartbeat-silence: no silence is waited out.
    short = scenario("heartbeat-silence", 0, max_tokens=1)
    assert (
        sum(s for s in short.steps if isinstance(s, float))
        < sum(s for s in scenario("heartbeat-silence", 0).steps if isinstance(s, float)) - 1.0
    )


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", FIXED)
def test_two_tokens_at_most(name: str, stream: bool) -> None:
    script = scenario(name, 1, math.inf, stream=stream, max_tokens=2)
    _, acc = _play(script)
    faults = {
        "error-503": "error",
        "error-401": "error",
        "overloaded": "error",
        "drop-mid-event": "truncated" if stream else "error",
    }
    assert acc.outcome == script.outcome == faults.get(name, "length")
    if acc.usage is not None:
        assert acc.usage.completion_tokens <= 2 * len(acc.choices)
    if name == "drop-mid-event" and stream:
        assert acc.choices[0].content  # what came before the cut is kept
