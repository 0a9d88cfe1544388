"""Pacer: replay text that arrived in bursts at a steady, readable rate.

Theory of operation
-------------------
A stream delivers text unevenly: nothing for 400 ms, then forty tokens in one
read.  Printing each read as it comes makes the answer jump.  A ``Pacer``
sits between the stream and the display.  The caller pushes text as it
arrives (``push(text, now)``) and asks, as often as it likes, what should be
on screen by time ``now`` (``take(now)``); the pacer never reads a clock,
never sleeps and never starts a thread: time is an argument.

The rate is a credit counter.  While text is waiting, credit grows by
``rate * dt`` characters per elapsed ``dt``, where ``rate`` is the larger of
the configured ``rate`` and ``backlog / max_lag``: when the backlog grows
the pacer speeds up so that, at the current pace, it would drain within
``max_lag`` seconds.  ``take`` hands out as many whole characters as the
credit allows.  On top of that, each pushed piece carries a deadline
(``now + max_lag`` at push time) and ``take`` always hands out everything
whose deadline has passed, so no character is ever displayed more than
``max_lag`` seconds after it arrived, however the caller spaces its calls.
Credit does not accumulate while nothing is waiting, so text that arrives
after a pause starts at the steady rate rather than all at once.

Units are code points.  A CRLF pair is never split: a cut that would fall
between CR and LF moves past the LF, and a CR at the very end of what was
pushed is held back until more text arrives (it may be the first half of a
CRLF whose LF is in the next read) or the pacer is closed.  ``close()``
marks the end: the next ``take`` returns everything that is left.
``drain()`` returns everything now without closing (for a caller that must
show something else, e.g. a tool call, right after the text).
"""

from __future__ import annotations

import math
from collections import deque

from ._util import LocalProtocolError

__all__ = ["Pacer"]


class Pacer:
    """Turn bursts of text into a steady stream of characters.

    Args:
        rate: the steady display rate, in characters per second.
        max_lag: the longest a character may wait between ``push`` and
            ``take``, in seconds; the pacer speeds up to keep the backlog
            within it.

    Attributes:
        rate, max_lag: as given.
        closed: ``close()`` was called.
    """

    def __init__(self, rate: float = 80.0, max_lag: float = 1.0) -> None:
        if not (rate > 0 and math.isfinite(rate)):
            raise LocalProtocolError(f"rate must be a positive number of characters per second, got {rate!r}")
        if not (max_lag > 0 and math.isfinite(max_lag)):
            raise LocalProtocolError(f"max_lag must be a positive number of seconds, got {max_lag!r}")
        self.rate = rate
        self.max_lag = max_lag
        self.closed = False
        self._pending = ""
        self._credit = 0.0
        self._last = 0.0  # when credit was last brought up to date
        self._taken = 0  # characters handed out so far
        self._pushed = 0  # characters pushed so far
        self._deadlines: deque[tuple[int, float]] = deque()  # (pushed total after a push, its deadline)

    @property
    def pending(self) -> int:
        """How many characters are waiting to be taken."""
        return len(self._pending)

    @property
    def done(self) -> bool:
        """True once the pacer is closed and everything was taken."""
        return self.closed and not self._pending

    def push(self, text: str, now: float) -> None:
        """Add ``text`` that arrived at time ``now`` (seconds, any epoch,
        the same clock as ``take``)."""
        if self.closed:
            raise LocalProtocolError("push() after close()")
        if not text:
            return
        if not self._pending:
            # Nothing was waiting: the steady clock starts now.
            self._credit = 0.0
            self._last = now
        self._pending += text
        self._pushed += len(text)
        self._deadlines.append((self._pushed, now + self.max_lag))

    def take(self, now: float) -> str:
        """Return the text due for display by time ``now`` (may be "")."""
        pending = self._pending
        if not pending:
            return ""
        if self.closed:
            return self._hand_out(len(pending))
        if now > self._last:
            rate = max(self.rate, len(pending) / self.max_lag)
            self._credit += (now - self._last) * rate
            self._last = now
        n = int(self._credit + 1e-9)  # 0.9999999 credit is one character
        deadlines = self._deadlines
        while deadlines and deadlines[0][1] <= now:
            n = max(n, deadlines.popleft()[0] - self._taken)
        n = min(n, len(pending))
        if 0 < n < len(pending) and pending[n - 1] == "\r" and pending[n] == "\n":
            n += 1
        if n == len(pending) and pending[-1] == "\r":
            n -= 1  # maybe the first half of a CRLF: wait for what follows
        # What is left is a fraction of a character.  It can be more when the
        # pending text ran out first: that is not banked, or a CR held back
        # for a while would let the text after it out in one burst.  It can
        # be negative when the LF of a CRLF went out early (a debt of one
        # character keeps the long-run rate) or when a deadline forced text
        # out (the debt is capped there: being late is no reason to slow).
        self._credit = min(max(self._credit - n, -1.0), 1.0)
        return self._hand_out(n)

    def wait(self, now: float) -> float | None:
        """Seconds from ``now`` until ``take`` has something to return: 0.0
        when it has now, None when nothing will come before the next
        ``push`` or ``close``."""
        pending = self._pending
        if not pending:
            return None
        if self.closed:
            return 0.0
        if pending == "\r":
            return None
        rate = max(self.rate, len(pending) / self.max_lag)
        at = self._last + max(0.0, 1.0 - self._credit) / rate
        # The first deadline is that of the first pending character: entries
        # leave the queue when their text is handed out or falls due.
        return max(0.0, min(at, self._deadlines[0][1]) - now)

    def drain(self) -> str:
        """Return everything waiting, now, without closing."""
        return self._hand_out(len(self._pending))

    def close(self) -> None:
        """Mark the end of the text: the next ``take`` returns the rest."""
        self.closed = True

    def _hand_out(self, n: int) -> str:
        out, self._pending = self._pending[:n], self._pending[n:]
        self._taken = taken = self._taken + n
        deadlines = self._deadlines
        while deadlines and deadlines[0][0] <= taken:
            deadlines.popleft()
        return out
