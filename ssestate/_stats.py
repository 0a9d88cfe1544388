"""StreamStats and StatsRecorder: timing of one streamed response, sans-IO.

Theory of operation
-------------------
The recorder never reads a clock.  The adapter reads its monotonic clock
(``time.monotonic()``, ``trio.current_time()``, ...) and passes the reading
to each hook:

* ``on_start(t)`` when the request is sent (the origin of every duration);
* ``on_bytes(t, n)`` when ``n`` body bytes arrived (a read that returned
  nothing is not an arrival and is ignored);
* ``on_event(t, event)`` for each chat event handed to the caller;
* ``on_end(t)`` when the response is finished with (the first call counts).

``ttfb`` is the time from the start to the first body byte, ``ttft`` to the
first ``Delta`` or ``ToolCallFragment``, ``total`` to the end.  ``bytes``
counts body bytes, ``events`` every event handed out (heartbeats included).

Gaps are the intervals between consecutive byte arrivals.  A long stream can
have hundreds of thousands of them, so they are not kept: each gap goes into
a logarithmic histogram (the scheme of the DDSketch paper, relative accuracy
``GAP_ACCURACY`` = 1 %): bucket ``i`` holds the gaps in
``(g**(i-1), g**i]`` with ``g = (1 + a) / (1 - a)``, and a quantile reported
from a bucket is ``2 * g**i / (g + 1)``, within ``a`` (relative) of every gap
in it.  Gaps shorter than ``GAP_FLOOR`` (1 µs: below what the clocks resolve
reliably) share one bucket reported as 0.  Memory is one counter per
occupied bucket, about 1,150 counters to span 1 µs to 1 hour, whatever the
number of gaps.  ``gaps_max`` is exact.

Quantiles use the nearest-rank definition: ``p`` is the ``ceil(p * n)``-th
smallest gap.  The reported p50/p95 are within 1 % (relative) of that exact
gap, or below ``GAP_FLOOR`` when it is; they are clamped to the exact
observed minimum and maximum, so ``p50 <= p95 <= gaps_max`` always holds.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math

from ._events import Delta, ToolCallFragment

__all__ = ["GAP_ACCURACY", "GAP_FLOOR", "StatsRecorder", "StreamStats"]

GAP_ACCURACY = 0.01
GAP_FLOOR = 1e-6

_GAMMA = (1 + GAP_ACCURACY) / (1 - GAP_ACCURACY)
_LOG_GAMMA = math.log(_GAMMA)
_ZERO = -(2**31)  # bucket key for gaps below GAP_FLOOR (sorts first)


@dataclasses.dataclass(frozen=True)
class StreamStats:
    """Timing of one streamed response (seconds; None until known).

    Attributes:
        ttfb: start of the request to the first body byte.
        ttft: start of the request to the first Delta or ToolCallFragment.
        total: start of the request to the end of the response.
        bytes: body bytes received.
        events: events handed to the caller, heartbeats included.
        gaps_p50: median interval between byte arrivals.
        gaps_p95: 95th percentile of those intervals.
        gaps_max: longest interval between byte arrivals.
    """

    ttfb: float | None = None
    ttft: float | None = None
    total: float | None = None
    bytes: int = 0
    events: int = 0
    gaps_p50: float | None = None
    gaps_p95: float | None = None
    gaps_max: float | None = None


class StatsRecorder:
    """Collects ``StreamStats`` from timestamps the caller passes in.

    See the module docstring for what each hook means.  Hooks called before
    ``on_start`` count bytes and events but leave the durations None.
    """

    def __init__(self) -> None:
        self._start: float | None = None
        self._ttfb: float | None = None
        self._ttft: float | None = None
        self._total: float | None = None
        self._bytes = 0
        self._events = 0
        self._last: float | None = None  # time of the previous byte arrival
        self._buckets: dict[int, int] = {}
        self._gaps = 0
        self._gap_min = math.inf
        self._gap_max = -math.inf

    def on_start(self, t: float) -> None:
        """The request was sent at ``t``."""
        self._start = t

    def on_bytes(self, t: float, n: int) -> None:
        """``n`` body bytes arrived at ``t``."""
        if n <= 0:
            return
        self._bytes += n
        last = self._last
        self._last = t
        if last is None:
            if self._start is not None:
                self._ttfb = t - self._start
            return
        gap = max(0.0, t - last)
        key = _ZERO if gap < GAP_FLOOR else math.ceil(math.log(gap) / _LOG_GAMMA)
        self._buckets[key] = self._buckets.get(key, 0) + 1
        self._gaps += 1
        self._gap_min = min(self._gap_min, gap)
        self._gap_max = max(self._gap_max, gap)

    def on_event(self, t: float, event: object) -> None:
        """``event`` was handed to the caller at ``t``."""
        self._events += 1
        if self._ttft is None and self._start is not None and type(event) in (Delta, ToolCallFragment):
            self._ttft = t - self._start

    def on_end(self, t: float) -> None:
        """The response was finished with at ``t`` (later calls are ignored)."""
        if self._total is None and self._start is not None:
            self._total = t - self._start

    @property
    def stats(self) -> StreamStats:
        """A snapshot of what was recorded so far."""
        if not self._gaps:
            return StreamStats(self._ttfb, self._ttft, self._total, self._bytes, self._events)
        return StreamStats(
            self._ttfb,
            self._ttft,
            self._total,
            self._bytes,
            self._events,
            self._quantile(0.50),
            self._quantile(0.95),
            self._gap_max,
        )

    def _quantile(self, q: float) -> float:
        keys = sorted(self._buckets)
        ranks = list(itertools.accumulate(self._buckets[k] for k in keys))
        key = keys[bisect.bisect_left(ranks, max(1, math.ceil(q * self._gaps)))]
        value = 0.0 if key == _ZERO else 2 * _GAMMA**key / (_GAMMA + 1)
        return min(self._gap_max, max(self._gap_min, value))
