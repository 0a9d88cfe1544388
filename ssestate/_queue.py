"""Queued: the event queue both machines hand their events out of.

Theory of operation
-------------------
A machine reads the bytes a call brings in that call and queues the events
they complete; ``next_event`` hands them out one at a time, ``feed`` all at
once.  Most calls of a stream find the queue empty, so an idle machine
holds none (None) and the deque is made only when events wait.  When the
queue runs dry the machine's own state says what comes next (its
``_empty``: a sentinel, or the error waiting behind the events handed out),
and handing out the last events of an ended stream moves it on from ENDED.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from ._state import Input

if TYPE_CHECKING:
    from ._util import Sentinel

__all__ = ["Queued"]

E = TypeVar("E")  # what the machine hands out


class Queued(Generic[E]):
    """The event queue of ``EventStreamParser`` and ``ChatStream`` (which
    name their ENDED state in ``_ENDED``): None while nothing waits."""

    __slots__ = ("_queue",)
    _ENDED: ClassVar[object]
    _queue: deque[E] | None
    _state: Any

    if TYPE_CHECKING:

        def _empty(self) -> Sentinel: ...

        def _move(self, event: Input, size: int = 0) -> None: ...

    def _push(self, events: list[E]) -> None:
        """Queue events for ``next_event``."""
        if events:
            if self._queue is None:
                self._queue = deque()
            self._queue.extend(events)

    def _take(self) -> list[E]:
        """Every queued event, the queue let go."""
        events = list(self._queue or ())
        self._queue = None
        return events

    def _drain(self) -> list[E]:
        """Everything queued, for ``feed``; with nothing queued, the error
        that waits behind the events handed out is raised."""
        events = self._take()
        if events:
            if self._state is self._ENDED:
                self._move(Input.DRAINED)
            return events
        self._empty()
        return events
