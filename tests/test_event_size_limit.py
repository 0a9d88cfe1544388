"""max_event_size under every chunking (SPEC §1, §2, §6.1, §6.3).

An event is too large when, after some byte of it arrived and every line it
completed was read, the parser keeps more than the limit for it: the open
block's data buffer, event type and id, plus the unterminated line (a line
counts whole while it is that line, whatever it is).  The error then comes
at the same place in the event sequence, with the same message, whether the
stream arrives whole or a byte at a time.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import chunked, chunkings, until_error
from hypothesis import given
from hypothesis import strategies as st

from ssestate import (
    CLOSED,
    ChatStream,
    EventStreamParser,
    Heartbeat,
    LocalProtocolError,
    ServerSentEvent,
)


def run(chunks: list[bytes], limit: int) -> list[Any]:
    """Events, then the error (text and offset) and what the next call does."""
    parser = EventStreamParser(max_event_size=limit)
    got, exc = until_error(parser, chunks)
    if exc is not None:
        got.append(("error", str(exc), exc.offset))
        try:
            parser.next_event()
        except LocalProtocolError:
            got.append("then LocalProtocolError")
    return got


def test_a_complete_event_over_the_limit_fails_even_in_one_chunk() -> None:
    stream = b"data: ok\n\ndata: " + b"x" * 40 + b"\n\ndata: after\n\n"
    for name, chunks in chunkings(stream):
        assert run(chunks, 30) == [
            ServerSentEvent("message", "ok"),
            ("error", "event too large: the event that starts at byte 10 holds more than max_event_size=30 bytes", 10),
            "then LocalProtocolError",
        ], name


def test_an_event_exactly_at_the_limit_passes() -> None:
    # "data: 123\n" is 10 bytes; the blank line dispatches it before it grows.
    stream = b"data: 123\n\n"
    for name, chunks in chunkings(stream):
        assert run(chunks, 10) == [ServerSentEvent("message", "123"), CLOSED], name


def test_a_comment_read_before_the_limit_breaks_is_still_handed_out() -> None:
    # The block keeps "1" (its id); the comment is handed out when its CR
    # comes; the data line then holds 1 + 16 bytes > 11 before its CR.
    stream = b"id: 1\r\n: c\r\ndata: " + b"x" * 10 + b"\r\n"
    for name, chunks in chunkings(stream):
        got = run(chunks, 11)
        assert got[0] == Heartbeat("c"), name
        assert got[1][0] == "error", name


def test_a_long_comment_outside_a_block_counts_as_an_unterminated_line() -> None:
    stream = b": " + b"z" * 20 + b"\ndata: x\n\n"
    for name, chunks in chunkings(stream):
        got = run(chunks, 10)
        message = "event too large: the event that starts at byte 0 holds more than max_event_size=10 bytes"
        assert got[0] == ("error", message, 0), name


@pytest.mark.parametrize("before", [b"", b"data: {}\n\n"])
def test_a_huge_event_over_the_limit_fails_for_the_layers_above_too(before: bytes) -> None:
    # An event of 32 KiB or more reaches ChatStream as its bytes, by a path
    # of its own; the limit holds there as everywhere.
    stream = before + b"data: " + b"a" * 40_000 + b"\n\n"
    message = f"event too large: the event that starts at byte {len(before)} holds more than max_event_size=1000 bytes"
    cuts = {"whole": [stream], "cut": [stream[:100], stream[100:]], "after": [before, stream[len(before) :]]}
    for name, chunks in cuts.items():
        chunks = [chunk for chunk in chunks if chunk]
        parser = EventStreamParser(max_event_size=1000)
        items = [item for chunk in chunks for item in parser.feed_data(chunk)]
        assert [str(item) for item in items] == [*(["{}"] if before else []), message], name
        events, error = until_error(ChatStream(max_event_size=1000), chunks)
        assert (events, str(error)) == ([], message), name


LINE = st.sampled_from(["data: ", "data:", ": ", "event: e", "id: 7", "retry: 5", "", "x: y"]).flatmap(
    lambda head: st.text(alphabet="ab é", max_size=12).map(lambda tail: head + tail if head else "")
)
STREAM = st.lists(st.tuples(LINE, st.sampled_from(["\n", "\r\n", "\r"])), max_size=12).map(
    lambda pairs: "".join(line + end for line, end in pairs).encode()
)


@given(st.data(), STREAM, st.integers(min_value=1, max_value=40))
def test_the_limit_does_not_depend_on_chunking(data: st.DataObject, stream: bytes, limit: int) -> None:
    whole = run([stream] if stream else [], limit)
    assert run(data.draw(chunked(stream)), limit) == whole
    assert run([stream[i : i + 1] for i in range(len(stream))], limit) == whole


def test_an_event_line_after_the_blank_line_of_an_open_block_counts_as_its_type() -> None:
    # Cut after "data: 1\n", the first block is still open when the next
    # chunk brings its blank line and the event line "bb"; that line opens a
    # block all the same.  Cut after "data: 22\n", the event line "ccc"
    # comes first in a chunk but opens nothing: it replaces the open block's
    # type.  The limit counts each type once, under every cut of the stream
    # into three chunks, at every limit.
    stream = b"event: a\ndata: 1\n\nevent: bb\ndata: 22\nevent: ccc\ndata: 3333333\n\n"
    for limit in range(1, 24):
        whole = run([stream], limit)
        for i in range(1, len(stream)):
            for j in range(i + 1, len(stream)):
                chunks = [stream[:i], stream[i:j], stream[j:]]
                assert run(chunks, limit) == whole, (limit, chunks)
