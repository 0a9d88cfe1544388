"""RetryPolicy and StreamTimeout: when to try a request again, sans-IO.

Theory of operation
-------------------
``RetryPolicy.delay`` is a pure decision: given how many attempts already
failed, what the failed attempt returned (a status and headers, or nothing
at all when the connection failed before a response head) and whether any
output was handed to the caller, it returns the seconds to wait before the
next attempt, or None for "do not retry".  It never sleeps and never reads a
clock but for that last case (an HTTP-date with nothing to read it
against), and the clock is the policy's own ``clock``; the adapters sleep.  The rules, first match wins:

1. Output was emitted (a ``Delta`` or ``ToolCallFragment`` reached the
   caller): never retry.  A second attempt would produce a different
   completion and the caller would see two answers spliced together.
2. ``attempt >= max_retries``: the retry budget is spent.
3. A status that is not retryable: no retry.  Retryable are 408, 409, 429
   and every 5xx, plus ``status=None`` (connection refused or reset, a
   timeout before the first byte: nothing was received at all).  Every
   other status, 400/401/403/404/422 among them, is the server's final word.
4. The server said how long to wait: ``retry-after-ms`` (milliseconds, a
   non-standard header some APIs send) first, then ``Retry-After``, as
   delay-seconds or as an HTTP-date.  A date is turned into seconds with
   ``now`` (wall-clock seconds since the epoch) when the caller gives one,
   else with the response's own ``Date`` header, which also sidesteps clock
   skew between client and server, else with the local wall clock
   (``clock``, ``time.time`` unless the policy was given another): a
   response without ``Date`` still asked for that instant.  A date in the past means "now" (0 s).  A wait longer
   than ``max_retry_after`` returns None: the server asked for more time
   than a caller blocked in a request should spend, so its answer goes to
   the caller instead.  Unparseable values are ignored.
5. Exponential backoff: ``base_delay * 2**attempt``, capped at
   ``max_delay``, then reduced by a random fraction of up to ``jitter`` (so
   with the default 0.25 the wait is 75-100 % of the nominal value and
   never exceeds ``max_delay``).  The randomness comes from ``rng`` (any
   ``random.Random``, or a subclass overriding ``random()``), a module-level
   ``random.Random`` by default, so tests pass a seeded or fixed source.

``attempt`` counts from 0: after the first request failed, ask
``delay(0, ...)``.  With ``max_retries=2`` a call makes at most three
requests.

``StreamTimeout`` is what adapters raise when no byte arrives in time; it is
a ``TimeoutError`` so generic timeout handling catches it.
"""

from __future__ import annotations

import calendar
import dataclasses
import email.utils
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Literal, Union

__all__ = ["RetryPolicy", "StreamTimeout"]

Headers = Union[Mapping[str, str], Iterable[tuple[str, str]]]
"""Response headers: a mapping (``http.client.HTTPMessage``,
``httpx.Headers``, a dict) or a sequence of ``(name, value)`` pairs.
Names are matched case-insensitively."""

_RETRYABLE = frozenset({408, 409, 429})
_RNG = random.Random()


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before trying a request again.

    See the module docstring for the rules.

    Args:
        max_retries: retries after the first attempt (0 disables retrying).
        base_delay: nominal wait after the first failure, in seconds.
        max_delay: cap on every backoff wait, in seconds.
        max_retry_after: longest server-requested wait (``Retry-After``)
            that is honoured; a longer one means "do not retry".
        jitter: fraction (0 to 1) by which a backoff wait is randomly reduced.
        rng: source of randomness for the jitter.
        clock: wall-clock time (seconds since the epoch), read only for an
            HTTP-date ``Retry-After`` on a response without a usable
            ``Date`` header when the caller passes no ``now``.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0
    jitter: float = 0.25
    rng: random.Random | None = dataclasses.field(default=None, compare=False, repr=False)
    clock: Callable[[], float] = dataclasses.field(default=time.time, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        for name in ("base_delay", "max_delay", "max_retry_after"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter!r}")

    @staticmethod
    def retryable(status: int | None) -> bool:
        """True when a failure with this status may be retried at all."""
        return status is None or status in _RETRYABLE or 500 <= status <= 599

    def delay(
        self,
        attempt: int,
        status: int | None = None,
        headers: Headers | None = None,
        emitted: bool = False,
        now: float | None = None,
    ) -> float | None:
        """Seconds to wait before the next attempt, or None for no retry.

        Args:
            attempt: number of the attempt that just failed, from 0.
            status: its HTTP status; None when no response head arrived.
            headers: its response headers (for ``Retry-After``).
            emitted: whether any Delta/ToolCallFragment reached the caller.
            now: wall-clock time (seconds since the epoch) for an HTTP-date
                ``Retry-After``; None uses the response's ``Date`` header,
                else ``clock()``.
        """
        if emitted or attempt >= self.max_retries or not self.retryable(status):
            return None
        if headers is not None:
            asked = _server_delay(headers, now, self.clock)
            if asked is not None:
                return asked if asked <= self.max_retry_after else None
        nominal = min(self.max_delay, self.base_delay * 2.0 ** min(attempt, 64))
        rng = _RNG if self.rng is None else self.rng
        return nominal * (1.0 - self.jitter * rng.random())


def _server_delay(headers: Headers, now: float | None, clock: Callable[[], float]) -> float | None:
    """The wait the response asks for, in seconds, or None if it asks none."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    found: dict[str, str] = {}
    for name, value in items:
        found.setdefault(name.lower(), value)
    ms = _seconds(found.get("retry-after-ms", ""))
    if ms is not None:
        return ms / 1000.0
    value = found.get("retry-after", "")
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    when = _http_date(value)
    if when is None:
        return None
    if now is None:
        now = _http_date(found.get("date", ""))
        if now is None:
            now = clock()
    return max(0.0, when - now)


def _seconds(value: str) -> float | None:
    """A non-negative finite number of seconds, or None."""
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if number >= 0 and math.isfinite(number) else None


def _http_date(value: str) -> float | None:
    """Seconds since the epoch for an HTTP-date (RFC 9110 §5.6.7), or None."""
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    # HTTP-dates are always GMT; a date without a zone is read as GMT too
    # (never as local time, which would make the answer depend on the host).
    return float(calendar.timegm(parsed[:6]) - (parsed[9] or 0))


Phase = Literal["first-byte", "idle"]


class StreamTimeout(TimeoutError):
    """No byte arrived within a timeout.

    Attributes:
        phase: "first-byte" (nothing of the response body arrived yet; the
            first-byte timeout fired) or "idle" (the body had started and then
            went silent; the between-bytes timeout fired).
        waited: seconds since the request was sent ("first-byte") or since
            the last byte arrived ("idle").
        limit: the timeout that fired, in seconds.
    """

    def __init__(self, phase: Phase, waited: float, limit: float) -> None:
        if phase == "first-byte":
            what = f"first-byte timeout: no response body byte {waited:.3f} s after the request was sent"
        else:
            what = f"idle timeout: no byte for {waited:.3f} s after the last one"
        super().__init__(f"{what} (limit {limit:g} s)")
        self.phase: Phase = phase
        self.waited = waited
        self.limit = limit

    def __reduce__(self) -> tuple[type[StreamTimeout], tuple[Phase, float, float]]:
        return (StreamTimeout, (self.phase, self.waited, self.limit))
