"""The parser's cost is linear in the stream, whatever the chunking.

Timing is not measured here (benchmarks/ does that).  Instead the parser's
receive buffer is replaced by a ``bytearray`` subclass that counts the bytes
each C-level operation on it touches: the ranges ``find``/``rfind`` search,
the bytes a slice copies out, the bytes ``decode`` reads.  Feeding N bytes
one at a time must cost at most a small constant times N of that work; a
parser that searched the whole buffer again on every call (no scan memo), or
copied the unconsumed rest of it, would do about N²/2.

This file reads the parser's private module (``ssestate._framing``) to
swap the buffer type in, and one test forgets the buffer's scan memo on
every call on purpose, to show that the count does catch quadratic work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, SupportsIndex

import pytest
from helpers import drain

import ssestate._framing as framing
from ssestate import CLOSED, EventStreamParser, ServerSentEvent
from ssestate._buffer import ReceiveBuffer


class CountingBytearray(ReceiveBuffer):
    """A bytearray that adds the bytes its scans and copies touch to
    ``CountingBytearray.work``."""

    work = 0

    @staticmethod
    def _span(length: int, start: SupportsIndex | None, end: SupportsIndex | None) -> int:
        lo, hi, _ = slice(start, end).indices(length)
        return max(0, hi - lo)

    def find(self, sub: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None) -> int:
        CountingBytearray.work += self._span(len(self), start, end)
        return super().find(sub, start, end)

    def rfind(self, sub: Any, start: SupportsIndex | None = None, end: SupportsIndex | None = None) -> int:
        CountingBytearray.work += self._span(len(self), start, end)
        return super().rfind(sub, start, end)

    def __getitem__(self, key: Any) -> Any:
        item = super().__getitem__(key)
        if isinstance(key, slice):
            CountingBytearray.work += len(item)
            counted = CountingBytearray()
            counted += item  # so that what is done with it is counted too
            return counted
        return item

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        CountingBytearray.work += len(self)
        return super().decode(encoding, errors)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The parser builds its receive buffer by this name.
    monkeypatch.setattr(framing, "ReceiveBuffer", CountingBytearray)
    CountingBytearray.work = 0
    yield


def work_bytewise(stream: bytes, tamper: Callable[[EventStreamParser], None] | None = None) -> tuple[int, list[Any]]:
    """Feed ``stream`` one byte at a time, draining after each byte; return
    the counted work and the events."""
    CountingBytearray.work = 0
    parser = EventStreamParser()
    assert type(parser._buf) is CountingBytearray
    events: list[Any] = []
    view = memoryview(stream)
    for i in range(len(stream)):
        parser.receive_data(view[i : i + 1])
        if tamper is not None:
            tamper(parser)
        events += drain(parser)
    parser.receive_data(b"")
    events += drain(parser)
    assert parser.next_event() is CLOSED
    return CountingBytearray.work, events


# At most this many bytes of work per byte of stream.  The parser does about
# 2-4 counted here (a copy and a decode of each line, the search for the
# last terminator; the scan of each new byte for a terminator runs on the
# chunk, not on the buffer); the margin only has to separate linear from
# quadratic.
PER_BYTE = 8


@pytest.mark.usefixtures("counted")
@pytest.mark.parametrize("n", [4_000, 16_000])
def test_one_long_data_line(n: int) -> None:
    stream = b"data: " + b"x" * n + b"\n\n"
    work, events = work_bytewise(stream)
    assert events == [ServerSentEvent("message", "x" * n)]
    assert work <= PER_BYTE * len(stream)


@pytest.mark.usefixtures("counted")
@pytest.mark.parametrize("n", [4_000, 16_000])
def test_one_long_line_ending_in_cr(n: int) -> None:
    stream = b"data: " + "é".encode() * (n // 2) + b"\r\r"
    work, events = work_bytewise(stream)
    assert events == [ServerSentEvent("message", "é" * (n // 2))]
    assert work <= PER_BYTE * len(stream)


@pytest.mark.usefixtures("counted")
@pytest.mark.parametrize("n", [4_000, 16_000])
def test_a_long_multiline_payload(n: int) -> None:
    # One event whose data is many lines: the open block spans every step.
    lines = n // 8
    stream = b"data: abcde\n" * lines + b"\n"
    work, events = work_bytewise(stream)
    assert events == [ServerSentEvent("message", "\n".join(["abcde"] * lines))]
    assert work <= PER_BYTE * len(stream)


@pytest.mark.usefixtures("counted")
def test_many_small_events() -> None:
    stream = b"".join(b'id: %d\r\ndata: {"n":%d}\r\n\r\n' % (i, i) for i in range(400))
    work, events = work_bytewise(stream)
    assert len(events) == 400
    assert events[-1] == ServerSentEvent("message", '{"n":399}', "399")
    assert work <= PER_BYTE * len(stream)


@pytest.mark.usefixtures("counted")
def test_large_chunks_cost_the_same() -> None:
    stream = b"data: " + b"x" * 100_000 + b"\n\n"
    CountingBytearray.work = 0
    parser = EventStreamParser()
    for i in range(0, len(stream), 1460):
        parser.receive_data(stream[i : i + 1460])
        drain(parser)
    assert CountingBytearray.work <= PER_BYTE * len(stream)


@pytest.mark.usefixtures("counted")
def test_the_count_catches_a_rescan() -> None:
    # A parser that ran a step on every call would search the whole
    # unterminated line again each time: quadratic, and the count shows it.
    n = 4_000
    stream = b"data: " + b"x" * n + b"\n\n"

    def forget(parser: EventStreamParser) -> None:
        parser._buf.scanned = 0
        assert parser._buf.extract_lines() is None  # the parser took every line: a search in vain

    work, events = work_bytewise(stream, tamper=forget)
    assert events == [ServerSentEvent("message", "x" * n)]
    assert work > n * n // 4
