"""StreamStats and StatsRecorder."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from ssestate import Delta, Done, Heartbeat, StreamStats, ToolCallFragment, Usage
from ssestate._stats import GAP_ACCURACY, GAP_FLOOR, StatsRecorder


def test_nothing_known_at_first() -> None:
    assert StatsRecorder().stats == StreamStats(None, None, None, 0, 0, None, None, None)
    assert StreamStats() == StatsRecorder().stats


def test_a_small_stream_exactly() -> None:
    r = StatsRecorder()
    r.on_start(10.0)
    r.on_bytes(10.0, 0)  # an empty read is not an arrival
    r.on_bytes(10.5, 100)
    r.on_event(10.5, Heartbeat("ping"))
    r.on_event(10.5, Usage())
    r.on_bytes(11.5, 20)
    r.on_event(11.5, Delta(0, "hi"))
    r.on_event(11.6, Delta(0, "again"))
    r.on_bytes(11.75, 5)
    r.on_event(11.75, Done())
    r.on_end(12.0)
    r.on_end(99.0)  # only the first end counts
    s = r.stats
    assert (s.ttfb, s.ttft, s.total, s.bytes, s.events) == (0.5, 1.5, 2.0, 125, 5)
    # gaps 1.0 and 0.25: nearest-rank p50 is 0.25, p95 is 1.0
    assert s.gaps_max == 1.0
    assert s.gaps_p50 is not None
    assert s.gaps_p95 is not None
    assert math.isclose(s.gaps_p50, 0.25, rel_tol=GAP_ACCURACY)
    assert math.isclose(s.gaps_p95, 1.0, rel_tol=GAP_ACCURACY)


def test_tool_call_sets_ttft() -> None:
    r = StatsRecorder()
    r.on_start(0.0)
    r.on_event(1.0, Heartbeat(""))
    r.on_event(2.0, ToolCallFragment(0, 0, "id", "f", ""))
    r.on_event(3.0, Delta(0, "x"))
    assert r.stats.ttft == 2.0


def test_without_start_durations_stay_unknown() -> None:
    r = StatsRecorder()
    r.on_bytes(1.0, 3)
    r.on_bytes(2.0, 4)
    r.on_event(2.0, Delta(0, "x"))
    r.on_end(3.0)
    s = r.stats
    assert (s.ttfb, s.ttft, s.total, s.bytes, s.events, s.gaps_max) == (None, None, None, 7, 1, 1.0)


def test_tiny_and_backwards_gaps_count_as_zero() -> None:
    r = StatsRecorder()
    r.on_start(0.0)
    r.on_bytes(1.0, 1)
    r.on_bytes(1.0, 1)
    r.on_bytes(0.5, 1)  # a clock that went backwards
    r.on_bytes(0.5 + GAP_FLOOR / 2, 1)
    s = r.stats
    assert (s.gaps_p50, s.gaps_p95, s.gaps_max) == (0.0, 0.0, (0.5 + GAP_FLOOR / 2) - 0.5)


def test_one_gap() -> None:
    r = StatsRecorder()
    r.on_bytes(1.0, 1)
    r.on_bytes(1.3, 1)
    s = r.stats
    assert s.gaps_p50 == s.gaps_p95 == s.gaps_max == 0.30000000000000004


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


@given(st.lists(st.floats(0, 3600, allow_nan=False), min_size=1, max_size=300))
def test_quantiles_within_the_documented_error(gaps: list[float]) -> None:
    r = StatsRecorder()
    r.on_start(0.0)
    t = 1.0
    r.on_bytes(t, 1)
    observed = []
    for g in gaps:
        before = t
        t += g
        observed.append(max(0.0, t - before))  # what the recorder sees after float rounding
        r.on_bytes(t, 1)
    s = r.stats
    assert s.gaps_max == max(observed)
    assert s.gaps_p50 is not None
    assert s.gaps_p95 is not None
    assert s.gaps_p50 <= s.gaps_p95 <= s.gaps_max
    assert s.bytes == len(gaps) + 1
    for q, got in ((0.50, s.gaps_p50), (0.95, s.gaps_p95)):
        exact = nearest_rank(observed, q)
        assert abs(got - exact) <= GAP_ACCURACY * exact * (1 + 1e-9) + GAP_FLOOR


def test_memory_stays_bounded() -> None:
    # 100,000 gaps spanning 1 µs to ~40 hours occupy one counter per 2 % band.
    r = StatsRecorder()
    t = 0.0
    for i in range(100_000):
        t += 1e-6 * 1.5 ** (i % 60)
        r.on_bytes(t, 1)
    bands = math.log(1.5**59) / math.log((1 + GAP_ACCURACY) / (1 - GAP_ACCURACY))
    assert len(r._buckets) <= math.ceil(bands) + 1
    assert r.stats.bytes == 100_000
