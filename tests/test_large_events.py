"""Large events: a batch that holds one large event alone takes a shorter
path (its data is decoded straight from the buffer); everything observable
must be the same as on the ordinary path."""

from __future__ import annotations

from typing import Any

from helpers import chunkings, until_error

from ssestate import ChatStream, Delta

BIG = "x" * 10_000


def run(chunks: list[bytes]) -> list[Any]:
    got, exc = until_error(ChatStream(), chunks)
    if exc is not None:
        got.append((str(exc), exc.offset))
    return got


def test_a_large_payload_that_is_not_json_is_named_by_its_blank_line() -> None:
    first = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    bad = b"data: " + BIG.encode() + b"\n\n"
    body = first + bad
    blank_line = len(body) - 1
    # [first, bad] puts the large event alone in its batch.
    for name, chunks in [*chunkings(body), ("alone", [first, bad])]:
        got = run(chunks)
        assert got[0] == Delta(0, "a"), name
        message, offset = got[1]
        assert offset == blank_line, name
        assert f"ends at byte {blank_line} is not JSON" in message, name


def test_a_large_chunk_alone_in_its_batch_is_a_chunk_like_any_other() -> None:
    body = b'data: {"choices":[{"index":0,"delta":{"content":"' + BIG.encode() + b'"}}]}\n\n'
    for name, chunks in [("whole", [body]), ("two", [body[:100], body[100:]])]:
        assert run(chunks)[0] == Delta(0, BIG), name


def test_several_large_events_in_one_batch() -> None:
    big = b'data: {"choices":[{"index":0,"delta":{"content":"' + BIG.encode() + b'"}}]}\n\n'
    bad = b"data: " + BIG.encode() + b"\n\n"
    body = big + big + bad
    for name, chunks in [
        ("whole", [body]),
        ("two", [big, big + bad]),
        ("bytes", [body[i : i + 1] for i in range(0, 200)] + [body[200:]]),
    ]:
        got = run(chunks)
        assert got[:2] == [Delta(0, BIG), Delta(0, BIG)], name
        message, offset = got[2]
        assert offset == len(body) - 1, name
        assert f"ends at byte {offset} is not JSON" in message, name
