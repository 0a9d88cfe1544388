"""Shared test helpers: ways to cut a byte stream into chunks, and a driver
that feeds chunks to any sans-IO machine and collects what it hands out.

The names here are imported by several test files; keep them stable.

* ``chunkings(data, rng_seed=0)`` yields ``(name, chunks)`` pairs: the same
  bytes cut in every way that has ever mattered to a line-based parser
  (whole, one byte at a time, fixed sizes, random sizes, between the CR and
  the LF of every CRLF, inside every multi-byte UTF-8 sequence).
* ``feed_all(machine, chunks)`` drives any object with ``receive_data`` /
  ``next_event`` (``EventStreamParser``, ``ChatStream``) to the end of the
  stream and returns every event, ending with ``CLOSED``.  It also checks
  the sentinel contract of SPEC §1 on the way.
* ``drain(machine)`` returns the events available right now.
* ``until_error(machine, chunks)`` feeds chunks and end of stream and
  returns the events and the ``RemoteProtocolError`` that stopped them.
* ``chunked(data)`` is a hypothesis strategy for arbitrary cuts of ``data``.

Chunks are never empty: ``receive_data(b"")`` means end of stream.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from hypothesis import strategies as st

from ssestate import CLOSED, NEED_DATA, RemoteProtocolError

__all__ = ["FIXED_SIZES", "Machine", "chunked", "chunkings", "cut_at", "drain", "feed_all", "until_error"]

FIXED_SIZES = (2, 3, 7)


class Machine(Protocol):
    """Anything driven like ``EventStreamParser``."""

    def receive_data(self, data: bytes) -> None: ...

    def next_event(self) -> Any: ...


_T = TypeVar("_T")


def untraced(run: Callable[[], _T]) -> _T:
    """``run()`` with coverage measurement paused.  For the tests that count
    what a strategy draws over hundreds of examples: the lines they run are
    run by the kit's other tests too, and tracing them doubles the time."""
    try:
        import coverage
    except ImportError:  # pragma: no cover - coverage comes with the test extra
        return run()
    cov = coverage.Coverage.current()
    if cov is None:
        return run()
    cov.stop()
    try:
        return run()
    finally:
        cov.start()


def cut_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """Cut ``data`` at the given offsets (duplicates and offsets at either end
    are ignored) and return the non-empty pieces, in order."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    pieces = []
    start = 0
    for point in [*points, len(data)]:
        if point > start:
            pieces.append(data[start:point])
        start = point
    return pieces


def _fixed(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _random(data: bytes, rng: random.Random, largest: int) -> list[bytes]:
    pieces = []
    i = 0
    while i < len(data):
        n = rng.randint(1, largest)
        pieces.append(data[i : i + n])
        i += n
    return pieces


def chunkings(data: bytes, rng_seed: int = 0) -> Iterator[tuple[str, list[bytes]]]:
    """Yield ``(name, chunks)`` for many ways of cutting ``data``.

    Every list of chunks joins back to ``data`` and holds no empty chunk.
    Names are unique; they say what the cut is, for test failure messages:

    - ``whole``: one chunk;
    - ``bytewise``: one byte per chunk;
    - ``fixed-2``, ``fixed-3``, ``fixed-7``: chunks of that size;
    - ``random-4``, ``random-16``, ``random-any``: random sizes of at most
      4, 16 and ``len(data)`` bytes, drawn from ``random.Random(rng_seed)``;
    - ``crlf@i``: cut between the CR at ``i`` and the LF after it, for
      every CRLF; ``crlf-all`` cuts inside all of them at once;
    - ``cr@i`` and ``lf@i``: cut right after every lone CR and before every
      LF, one chunking each (``i`` is the byte's offset);
    - ``utf8@i``: cut before the continuation byte at ``i`` (0x80-0xBF after
      any byte), that is inside every multi-byte sequence at every position,
      valid or not; ``utf8-all`` makes all those cuts at once.
    """
    rng = random.Random(rng_seed)
    yield "whole", cut_at(data, [])
    yield "bytewise", _fixed(data, 1)
    for size in FIXED_SIZES:
        yield f"fixed-{size}", _fixed(data, size)
    for largest in (4, 16):
        yield f"random-{largest}", _random(data, rng, largest)
    yield "random-any", _random(data, rng, max(1, len(data)))

    crlf = [i for i in range(len(data) - 1) if data[i : i + 2] == b"\r\n"]
    for i in crlf:
        yield f"crlf@{i}", cut_at(data, [i + 1])
    if len(crlf) > 1:
        yield "crlf-all", cut_at(data, [i + 1 for i in crlf])
    for i, byte in enumerate(data):
        if byte == 0x0D and i + 1 < len(data) and data[i + 1] != 0x0A:
            yield f"cr@{i}", cut_at(data, [i + 1])
        elif byte == 0x0A and i > 0 and data[i - 1] != 0x0D:
            yield f"lf@{i}", cut_at(data, [i])

    inside = [i for i in range(1, len(data)) if 0x80 <= data[i] <= 0xBF]
    for i in inside:
        yield f"utf8@{i}", cut_at(data, [i])
    if len(inside) > 1:
        yield "utf8-all", cut_at(data, inside)


def drain(machine: Machine) -> list[Any]:
    """Call ``next_event`` until it returns ``NEED_DATA`` or ``CLOSED``;
    return the events before that sentinel (the sentinel is not included)."""
    events: list[Any] = []
    while True:
        event = machine.next_event()
        if event is NEED_DATA or event is CLOSED:
            return events
        events.append(event)


def until_error(machine: Machine, chunks: Iterable[bytes]) -> tuple[list[Any], RemoteProtocolError | None]:
    """Feed ``chunks`` then end of stream, draining after each; return every
    event (ending with ``CLOSED`` when the stream closed) and the
    ``RemoteProtocolError`` that stopped it, if one did."""
    got: list[Any] = []
    try:
        for chunk in [*chunks, b""]:
            machine.receive_data(chunk)
            while (event := machine.next_event()) is not NEED_DATA:
                got.append(event)
                if event is CLOSED:
                    assert not chunk, f"CLOSED before end of stream after {got!r}"
                    return got, None
    except RemoteProtocolError as exc:
        return got, exc
    raise AssertionError(f"NEED_DATA after end of stream after {got!r}")


def collect(machine: Machine, chunks: Iterable[bytes]) -> tuple[list[Any], RemoteProtocolError | None]:
    """``until_error`` without the final ``CLOSED``: the events the stream
    carried and the ``RemoteProtocolError`` that stopped it, if one did
    (events handed out before it are kept)."""
    got, error = until_error(machine, chunks)
    return [event for event in got if event is not CLOSED], error


def feed_all(machine: Machine, chunks: Iterable[bytes], *, eof: bool = True) -> list[Any]:
    """Feed ``chunks`` one at a time, draining the machine after each, then
    (when ``eof``) feed end of stream and drain to ``CLOSED``.

    Returns every event in order; with ``eof`` the list ends with ``CLOSED``.
    Exceptions raised by the machine propagate.  Raises ``AssertionError``
    when the machine breaks the sentinel contract of SPEC §1: ``CLOSED``
    before end of stream was fed, ``NEED_DATA`` after it, or a second
    ``next_event()`` after ``CLOSED`` that does not return ``CLOSED`` again.
    An empty chunk is refused (it would mean end of stream).
    """
    events: list[Any] = []
    for chunk in chunks:
        if not chunk:
            raise ValueError("feed_all() got an empty chunk; b'' means end of stream")
        machine.receive_data(chunk)
        while True:
            event = machine.next_event()
            if event is NEED_DATA:
                break
            if event is CLOSED:
                raise AssertionError(f"CLOSED before end of stream, after {events!r}")
            events.append(event)
    if not eof:
        return events
    machine.receive_data(b"")
    while True:
        event = machine.next_event()
        if event is NEED_DATA:
            raise AssertionError(f"NEED_DATA after end of stream, after {events!r}")
        events.append(event)
        if event is CLOSED:
            again = machine.next_event()
            if again is not CLOSED:
                raise AssertionError(f"next_event() after CLOSED returned {again!r}")
            return events


def chunked(data: bytes, *, max_cuts: int | None = None) -> st.SearchStrategy[list[bytes]]:
    """A strategy for lists of non-empty chunks that join back to ``data``,
    cut at arbitrary offsets (at most ``max_cuts`` of them when given).
    Shrinks toward fewer cuts, i.e. toward ``[data]``."""
    if len(data) < 2:
        return st.just(cut_at(data, []))
    offsets = st.lists(st.integers(1, len(data) - 1), max_size=max_cuts if max_cuts is not None else len(data))
    return offsets.map(lambda cuts: cut_at(data, cuts))
