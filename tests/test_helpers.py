"""Tests of tests/helpers.py: the chunkings really cut where they say, and
feed_all enforces the sentinel contract."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import FIXED_SIZES, chunked, chunkings, cut_at, drain, feed_all
from hypothesis import find, given, settings
from hypothesis import strategies as st

from ssestate import CLOSED, NEED_DATA, EventStreamParser, Heartbeat, ServerSentEvent, Truncated

SAMPLE = "data: é中😀\r\n\r\n: x\rid: 1\n\n".encode()


def boundaries(chunks: list[bytes]) -> set[int]:
    """Offsets where one chunk ends and the next begins."""
    out, pos = set(), 0
    for chunk in chunks[:-1]:
        pos += len(chunk)
        out.add(pos)
    return out


# --- cut_at ------------------------------------------------------------------


def test_cut_at_ignores_duplicates_ends_and_order() -> None:
    assert cut_at(b"abcdef", [4, 0, 2, 2, 6, 99, -1]) == [b"ab", b"cd", b"ef"]
    assert cut_at(b"abc", []) == [b"abc"]
    assert cut_at(b"", [0, 1]) == []


# --- chunkings ---------------------------------------------------------------


@given(st.binary(max_size=64), st.integers(0, 2**32))
def test_every_chunking_joins_back_without_empty_chunks(data: bytes, seed: int) -> None:
    names = []
    for name, chunks in chunkings(data, rng_seed=seed):
        names.append(name)
        assert b"".join(chunks) == data, name
        assert all(chunks), name
    assert len(names) == len(set(names))


def test_named_chunkings_have_the_promised_shape() -> None:
    got = dict(chunkings(SAMPLE))
    assert got["whole"] == [SAMPLE]
    assert got["bytewise"] == [bytes([b]) for b in SAMPLE]
    for size in FIXED_SIZES:
        chunks = got[f"fixed-{size}"]
        assert all(len(c) == size for c in chunks[:-1])
        assert 0 < len(chunks[-1]) <= size
    assert max(map(len, got["random-4"])) <= 4
    assert max(map(len, got["random-16"])) <= 16


def test_cuts_inside_every_crlf() -> None:
    crlfs = [i for i in range(len(SAMPLE) - 1) if SAMPLE[i : i + 2] == b"\r\n"]
    assert len(crlfs) == 2
    got = dict(chunkings(SAMPLE))
    for i in crlfs:
        chunks = got[f"crlf@{i}"]
        assert boundaries(chunks) == {i + 1}
        assert chunks[0].endswith(b"\r")
        assert chunks[1].startswith(b"\n")
    assert boundaries(got["crlf-all"]) == {i + 1 for i in crlfs}


def test_cuts_after_lone_cr_and_before_lone_lf() -> None:
    data = b"a\rb\nc\r\n"
    got = dict(chunkings(data))
    assert boundaries(got["cr@1"]) == {2}
    assert boundaries(got["lf@3"]) == {3}
    assert "lf@6" not in got  # that LF belongs to a CRLF: see crlf@5
    assert boundaries(got["crlf@5"]) == {6}


def test_cuts_inside_every_multibyte_character() -> None:
    text = "é中😀"
    data = text.encode()
    got = dict(chunkings(data))
    # 2 + 3 + 4 bytes: 1 + 2 + 3 interior positions.
    expected = {1, 3, 4, 6, 7, 8}
    assert {int(name.split("@")[1]) for name in got if name.startswith("utf8@")} == expected
    for i in expected:
        assert boundaries(got[f"utf8@{i}"]) == {i}
    assert boundaries(got["utf8-all"]) == expected


def test_cuts_inside_invalid_sequences_too() -> None:
    data = b"\xe2\x82 \x80"
    got = dict(chunkings(data))
    assert boundaries(got["utf8@1"]) == {1}
    assert boundaries(got["utf8@3"]) == {3}


def test_random_chunkings_depend_on_the_seed_only() -> None:
    data = bytes(range(256)) * 4
    first = dict(chunkings(data, rng_seed=1))
    assert first == dict(chunkings(data, rng_seed=1))
    assert first["random-16"] != dict(chunkings(data, rng_seed=2))["random-16"]


def test_chunkings_of_nothing() -> None:
    assert all(chunks == [] for _, chunks in chunkings(b""))


# --- chunked -----------------------------------------------------------------


@given(st.data())
def test_chunked_joins_back(data: st.DataObject) -> None:
    raw = data.draw(st.binary(max_size=40))
    chunks = data.draw(chunked(raw))
    assert b"".join(chunks) == raw
    assert all(chunks)


@given(st.data())
def test_chunked_respects_max_cuts(data: st.DataObject) -> None:
    chunks = data.draw(chunked(bytes(50), max_cuts=3))
    assert len(chunks) <= 4


def test_chunked_reaches_single_bytes() -> None:
    raw = b"abcd"
    quick = settings(max_examples=300, database=None)
    assert find(chunked(raw), lambda c: len(c) == len(raw), settings=quick) == [bytes([b]) for b in raw]


# --- drain / feed_all --------------------------------------------------------


class Scripted:
    """A fake machine that returns a fixed script of results."""

    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.received: list[bytes] = []

    def receive_data(self, data: bytes) -> None:
        self.received.append(data)

    def next_event(self) -> Any:
        return self.script.pop(0)


def test_feed_all_drains_after_every_chunk_and_ends_with_closed() -> None:
    machine = Scripted(["a", NEED_DATA, "b", "c", NEED_DATA, "d", CLOSED, CLOSED])
    assert feed_all(machine, [b"1", b"2"]) == ["a", "b", "c", "d", CLOSED]
    assert machine.received == [b"1", b"2", b""]
    assert machine.script == []


def test_feed_all_without_eof() -> None:
    machine = Scripted(["a", NEED_DATA])
    assert feed_all(machine, [b"1"], eof=False) == ["a"]
    assert machine.received == [b"1"]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (["a", CLOSED], "CLOSED before end of stream"),
        ([NEED_DATA, NEED_DATA], "NEED_DATA after end of stream"),
        ([NEED_DATA, CLOSED, "late"], "after CLOSED returned 'late'"),
    ],
)
def test_feed_all_enforces_the_sentinel_contract(script: list[Any], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        feed_all(Scripted(script), [b"1"])


def test_feed_all_refuses_empty_chunks() -> None:
    with pytest.raises(ValueError, match="empty chunk"):
        feed_all(Scripted([]), [b""])


def test_feed_all_and_drain_on_the_real_parser() -> None:
    parser = EventStreamParser()
    parser.receive_data(b": a\ndata: x\n\nda")
    assert drain(parser) == [Heartbeat("a"), ServerSentEvent("message", "x")]
    assert drain(parser) == []
    assert feed_all(parser, [b"ta: y\n\n", b"id"]) == [
        ServerSentEvent("message", "y"),
        Truncated("partial-event", 2),
        CLOSED,
    ]
