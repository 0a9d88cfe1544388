"""Hypothesis properties of EventStreamParser (SPEC §6) and encode() (§5).

The strongest oracle here is ``reference``: a deliberately plain
line-by-line reading of the WHATWG "interpret an event stream" algorithm
over the whole decoded stream, written for clarity and nothing else.  The
parser must agree with it on every input, including which events exist,
their order, ``Truncated.pending``, ``last_event_id``, ``retry``, and the
byte after which each event must be available.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from helpers import chunked, chunkings, drain, feed_all
from hypothesis import given, note, settings
from hypothesis import strategies as st

from ssestate import (
    CLOSED,
    NEED_DATA,
    EventStreamParser,
    FramingEvent,
    Heartbeat,
    LocalProtocolError,
    RemoteProtocolError,
    ServerSentEvent,
    Truncated,
    encode,
)

BOM = b"\xef\xbb\xbf"

# Pieces a stream is glued from: field names with and without the space,
# every line terminator, BOMs (whole and partial), multi-byte characters,
# invalid UTF-8, NUL, digits of several scripts, and plain words.
TOKENS = [
    b"data:",
    b"data: ",
    b"data",
    b"event:",
    b"event: ",
    b"id:",
    b"id: ",
    b"retry:",
    b"retry: ",
    b":",
    b": ",
    b" ",
    b"\r",
    b"\n",
    b"\r\n",
    b"\n\n",
    b"\r\n\r\n",
    BOM,
    b"\xef\xbb",
    "é".encode(),
    "中".encode(),
    "😀".encode(),
    b"\xff",
    b"\xe2\x82",
    b"\x80",
    b"\x00",
    b"x",
    b"message",
    b"12",
    b"007",
    "\u0661".encode(),  # ARABIC-INDIC DIGIT ONE
    b"foo",
]


def sse_bytes(max_parts: int = 40) -> st.SearchStrategy[bytes]:
    """Bytes that look like an event stream often enough to reach every rule."""
    part = st.one_of(
        st.sampled_from(TOKENS),
        st.binary(max_size=6),
        st.text(max_size=4).map(str.encode),
    )
    start = st.sampled_from([b"", b"", b"", BOM, b"\xef", b"\xef\xbb"])
    return st.tuples(start, st.lists(part, max_size=max_parts)).map(lambda t: t[0] + b"".join(t[1]))


def long_sse_bytes() -> st.SearchStrategy[bytes]:
    """Like sse_bytes, plus long runs, so that small size limits are hit."""
    run = st.builds(
        lambda piece, n: piece * n,
        st.sampled_from([b"x", "é".encode(), b"data: ", b": c", b"data: x\n"]),
        st.integers(1, 40),
    )
    part = st.one_of(st.sampled_from(TOKENS), run)
    return st.lists(part, max_size=30).map(b"".join)


# --- the reference interpreter ------------------------------------------------


@dataclasses.dataclass
class Reference:
    """What the WHATWG algorithm says a stream means.

    ``events`` pairs every event with the stream length after which it must
    be available (the byte that ends its line is in), or None for "at end of
    stream" (only ``Truncated``).  ``starts`` holds, for every event but
    ``Truncated``, the offset where the line that dispatched it starts.
    """

    events: list[tuple[FramingEvent, int | None]]
    last_event_id: str
    retry: int | None
    starts: list[int]


def split_lines(seq: Any) -> tuple[list[tuple[Any, int, int]], Any]:
    """Split ``seq`` (str or bytes) at CRLF, LF and CR.

    Returns ``(lines, tail)``: each line as ``(text, start, end)`` where
    ``seq[start:end]`` is the line and ``seq[end]`` its first terminator
    character; ``tail`` is what follows the last terminator.
    """
    cr, lf = ("\r", "\n") if isinstance(seq, str) else (b"\r", b"\n")
    lines = []
    start = i = 0
    while i < len(seq):
        ch = seq[i : i + 1]
        if ch in (cr, lf):
            lines.append((seq[start:i], start, i))
            i += 2 if ch == cr and seq[i + 1 : i + 2] == lf else 1
            start = i
        else:
            i += 1
    return lines, seq[start:]


def reference(stream: bytes) -> Reference:
    # "UTF-8 decode" the stream: errors become U+FFFD, one leading BOM goes.
    text = stream.decode("utf-8", "replace")
    skip = 0
    if text.startswith("\ufeff"):
        text = text[1:]
        skip = 3
    assert (skip == 3) == stream.startswith(BOM)
    text_lines, _ = split_lines(text)
    # The same lines in bytes, only to know byte offsets.  CR and LF are
    # never part of a multi-byte sequence, so both splits agree line by line.
    byte_lines, byte_tail = split_lines(stream[skip:])
    assert [b.decode("utf-8", "replace") for b, _, _ in byte_lines] == [t for t, _, _ in text_lines]

    events: list[tuple[FramingEvent, int | None]] = []
    data_buffer = ""
    type_buffer = ""
    id_buffer = ""
    last_event_id = ""
    retry: int | None = None
    block_retry: int | None = None
    block_start: int | None = None  # byte offset of the block's first field line
    starts: list[int] = []
    for (line, _, _), (_, b_start, b_end) in zip(text_lines, byte_lines, strict=True):
        ready = skip + b_end + 1
        if line == "":
            # "If the line is empty (a blank line): Dispatch the event."
            last_event_id = id_buffer
            if data_buffer != "":
                if data_buffer.endswith("\n"):
                    data_buffer = data_buffer[:-1]
                event = ServerSentEvent(type_buffer or "message", data_buffer, last_event_id, block_retry)
                events.append((event, ready))
                starts.append(skip + b_start)
            data_buffer = ""
            type_buffer = ""
            block_retry = None
            block_start = None
        elif line.startswith(":"):
            # "If the line starts with a U+003A COLON character: ignore the
            # line" -- ssestate reports it as a heartbeat.
            comment = line[1:]
            if comment.startswith(" "):
                comment = comment[1:]
            events.append((Heartbeat(comment), ready))
            starts.append(skip + b_start)
        else:
            if block_start is None:
                block_start = skip + b_start
            if ":" in line:
                name, value = line.split(":", 1)
                if value.startswith(" "):
                    value = value[1:]
            else:
                name, value = line, ""
            if name == "event":
                type_buffer = value
            elif name == "data":
                data_buffer += value + "\n"
            elif name == "id":
                if "\x00" not in value:
                    id_buffer = value
            elif name == "retry" and value != "" and all(c in "0123456789" for c in value):
                try:
                    number = int(value)
                except ValueError:  # more digits than int() accepts: ignored
                    pass
                else:
                    retry = block_retry = number
            # Any other name: "The field is ignored."
    # End of stream: "any pending data must be discarded".  ssestate says
    # how many bytes of an unfinished event were lost.
    if block_start is not None:
        events.append((Truncated("partial-event", len(stream) - block_start), None))
    elif byte_tail:
        events.append((Truncated("partial-event", len(byte_tail)), None))
    return Reference(events, last_event_id, retry, starts)


def first_oversize(stream: bytes, limit: int) -> tuple[int, int] | None:
    """Where an event first outgrows ``limit`` (SPEC §2 ``max_event_size``):
    ``(received, start)`` for the smallest stream prefix after which, every
    line it completes having been read, the parser keeps more than ``limit``
    bytes for the unfinished event: the open block's data buffer (each data
    value and its LF), its event type and the id it set, plus the
    unterminated line whatever it is (a byte order mark, or what may still
    become one, is not part of it).  ``start`` is where the open block
    starts (its first field line), or the unterminated line when no block is
    open.  None when that never happens."""
    skip = 3 if stream.startswith(BOM) else 0
    lines, _ = split_lines(stream[skip:])
    kept, type_size, id_size = 0, 0, 0
    is_open, block_start = False, 0
    for line, start, end in [*lines, (None, len(stream[skip:]) - len(_), len(stream[skip:]))]:
        start, end = skip + start, skip + end
        # Just before its terminator came, the line was the unterminated one.
        if kept + (end - start) > limit:
            received = start + limit - kept + 1
            if start == 0:  # what may still become a byte order mark holds nothing yet
                while received < 3 and BOM.startswith(stream[:received]):
                    received += 1
            if received <= end:
                return received, block_start if is_open else start
        if line is None:
            return None
        if line == b"":
            kept, type_size, id_size, is_open = 0, 0, 0, False
            continue
        if line.startswith(b":"):
            continue
        if not is_open:
            is_open, block_start = True, start
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            kept += len(value) + 1
        elif name == b"event":
            kept += len(value) - type_size
            type_size = len(value)
        elif name == b"id" and b"\x00" not in value:
            kept += len(value) - id_size
            id_size = len(value)
    return None


def test_first_oversize_on_known_streams() -> None:
    # The reference is pinned on a few streams, so it cannot drift unnoticed.
    assert first_oversize(b"event: x\ndata: yy\n", 8) == (17, 0)  # 1 kept + the data line's 8
    assert first_oversize(b"event: x\ndata: yy\n", 9) is None
    # A comment or a retry line is the unterminated line while it arrives,
    # and is not kept once read: only "a" and its LF stay.
    stream = b"data: a\n:" + b"c" * 20 + b"\nretry: 12345678901\n\n"
    assert first_oversize(stream, 23) is None
    assert first_oversize(stream, 22) == (29, 0)
    assert first_oversize(b"data: a\n\n:" + b"c" * 20, 10) == (20, 9)
    assert first_oversize(BOM + b":\n", 1) is None
    assert first_oversize(b"\xef\xbbX\n", 2) == (3, 0)


def test_reference_on_a_known_stream() -> None:
    # The reference itself is pinned once, so it cannot drift unnoticed.
    ref = reference(BOM + b": hi\r\nid: 1\ndata: a\rdata: b\n\nretry: 5\ndata")
    assert ref.events == [
        (Heartbeat("hi"), 8),
        (ServerSentEvent("message", "a\nb", "1", None), 32),
        (Truncated("partial-event", 13), None),
    ]
    assert ref.last_event_id == "1"
    assert ref.retry == 5


# --- running the parser ------------------------------------------------------


def outcome(chunks: list[bytes], drains: list[bool] | None = None) -> tuple[list[Any], str, int | None]:
    """Feed chunks (draining after chunk i when ``drains[i]``, default
    always), then end of stream; return events, last_event_id and retry."""
    parser = EventStreamParser()
    events: list[Any] = []
    for i, chunk in enumerate(chunks):
        parser.receive_data(chunk)
        if drains is None or drains[i]:
            events += drain(parser)
    events += feed_all(parser, [])
    return events, parser.last_event_id, parser.retry


def bytewise(stream: bytes) -> list[bytes]:
    return [stream[i : i + 1] for i in range(len(stream))]


fewer = settings(max_examples=max(10, settings().max_examples // 2))


# --- 1. chunking invariance ----------------------------------------------------


@given(stream=sse_bytes(), data=st.data())
def test_chunking_invariance(stream: bytes, data: st.DataObject) -> None:
    whole = outcome([stream])
    chunks = data.draw(chunked(stream), label="chunks")
    drains = data.draw(st.lists(st.booleans(), min_size=len(chunks), max_size=len(chunks)), label="drains")
    assert outcome(chunks, drains) == whole
    assert outcome(bytewise(stream)) == whole


# --- 2. agreement with the reference ---------------------------------------------


@given(stream=sse_bytes(), data=st.data())
def test_agrees_with_reference(stream: bytes, data: st.DataObject) -> None:
    ref = reference(stream)
    expected = ([e for e, _ in ref.events] + [CLOSED], ref.last_event_id, ref.retry)
    assert outcome([stream]) == expected
    assert outcome(data.draw(chunked(stream), label="chunks")) == expected


@given(stream=st.binary(max_size=120))
def test_agrees_with_reference_on_raw_bytes(stream: bytes) -> None:
    ref = reference(stream)
    assert outcome([stream]) == ([e for e, _ in ref.events] + [CLOSED], ref.last_event_id, ref.retry)


def limited(chunks: list[bytes], limit: int, *, lazy: bool = False) -> tuple[list[Any], tuple[str, int | None] | None]:
    """Events handed out, and the RemoteProtocolError that followed them.
    Drains after every chunk, or (``lazy``) only after end of stream."""
    parser = EventStreamParser(max_event_size=limit)
    events: list[Any] = []
    try:
        for i, chunk in enumerate([*chunks, b""]):
            parser.receive_data(chunk)
            if lazy and i < len(chunks):
                continue
            while (event := parser.next_event()) is not NEED_DATA:
                events.append(event)
                if event is CLOSED:
                    return events, None
    except RemoteProtocolError as err:
        with pytest.raises(LocalProtocolError):
            parser.next_event()
        return events, (str(err), err.offset)
    raise AssertionError("NEED_DATA after end of stream")


# A few well-formed events first, so that the limit often breaks after some
# events were handed out and in a block that starts after byte 0.
complete_events = st.lists(
    st.sampled_from(
        [b"data: a\n\n", b": hb\r\n", b"id: 1\r\rdata: xy\r\r", b"event: e\ndata: 1\ndata: 2\n\n", b"\n", BOM]
    ),
    max_size=6,
).map(b"".join)


@given(stream=st.tuples(complete_events, long_sse_bytes()).map(b"".join), limit=st.integers(1, 64), data=st.data())
def test_size_limit_agrees_with_reference(stream: bytes, limit: int, data: st.DataObject) -> None:
    ref = reference(stream)
    cut = first_oversize(stream, limit)
    expected: tuple[list[Any], tuple[str, int | None] | None]
    if cut is None:
        expected = ([e for e, _ in ref.events] + [CLOSED], None)
    else:
        received, start = cut
        before = [e for e, ready in ref.events if ready is not None and ready <= received]
        message = f"event too large: the event that starts at byte {start} holds more than max_event_size={limit} bytes"
        expected = (before, (message, start))
    assert limited([stream] if stream else [], limit) == expected
    chunks = data.draw(chunked(stream), label="chunks")
    assert limited(chunks, limit) == expected
    assert limited(chunks, limit, lazy=True) == expected


# Events over 4 KiB, and over 32 KiB: the data of a huge one reaches the
# layers above as its bytes (feed_data), by a path of its own, which must
# mean the same.
def payloads(*sizes: int) -> st.SearchStrategy[bytes]:
    """A piece repeated to at least one of ``sizes`` bytes."""
    return st.builds(
        lambda piece, size, extra: piece * (size // len(piece) + extra),
        st.sampled_from([b"x", "é".encode(), b"\xff", "😀".encode(), b"a:b "]),
        st.sampled_from(sizes),
        st.integers(0, 40),
    )


large_payload = payloads(4100, 33_000)
large_streams = st.builds(
    lambda before, gap, head, payload, end, after: before + gap + head + payload + end + after,
    sse_bytes(max_parts=8),
    st.sampled_from([b"", b"\n\n", b"\r\r", b"\r\n\r\n"]),
    st.sampled_from([b"data: ", b"data:", b"data:  ", b"event: e\ndata: ", b": "]),
    large_payload,
    st.sampled_from([b"\n\n", b"\r\n\r\n", b"\r\r", b"\n", b"\ndata: y\n\n", b""]),
    sse_bytes(max_parts=4),
)


@fewer
@given(stream=large_streams, data=st.data())
def test_agrees_with_reference_on_large_events(stream: bytes, data: st.DataObject) -> None:
    ref = reference(stream)
    expected = ([e for e, _ in ref.events] + [CLOSED], ref.last_event_id, ref.retry)
    assert outcome([stream]) == expected
    assert outcome(data.draw(chunked(stream, max_cuts=6), label="chunks")) == expected


def data_view(chunks: list[bytes], limit: int | None, *, by_data: bool) -> list[Any]:
    """What ``feed_data`` hands out (``by_data``), or what it should: the
    events of ``feed`` with each one's data alone, unless its type is
    "error"; the fault last, as text and offset."""
    parser = EventStreamParser() if limit is None else EventStreamParser(max_event_size=limit)
    out: list[Any] = []
    try:
        for chunk in [*chunks, b""]:
            for item in parser.feed_data(chunk) if by_data else parser.feed(chunk):
                if type(item) is ServerSentEvent and item.event != "error":
                    item = item.data
                if type(item) is bytearray:  # the data of a huge event, undecoded
                    item = item.decode("utf-8", "replace")
                if type(item) is RemoteProtocolError:
                    raise item
                out.append(item)
    except RemoteProtocolError as err:
        out.append((str(err), err.offset))
    return out


@given(stream=sse_bytes(), limit=st.one_of(st.none(), st.integers(1, 64)), data=st.data())
def test_feed_data_gives_the_data_of_what_feed_gives(stream: bytes, limit: int | None, data: st.DataObject) -> None:
    chunks = data.draw(chunked(stream), label="chunks")
    assert data_view(chunks, limit, by_data=True) == data_view(chunks, limit, by_data=False)


@given(stream=sse_bytes(), limit=st.one_of(st.none(), st.integers(1, 64)), data=st.data())
def test_dispatch_offset_names_the_line_that_dispatched_each_item(
    stream: bytes, limit: int | None, data: st.DataObject
) -> None:
    # Each call's items, each with the start of its line; a call that
    # dispatched nothing has no item to name, nor has the fault an event
    # that outgrew the limit ends the stream with (the lines after it are
    # not read).  The events before a fault are the first ones of the
    # stream read without a limit.
    parser = EventStreamParser() if limit is None else EventStreamParser(max_event_size=limit)
    starts: list[int] = []
    for chunk in [*data.draw(chunked(stream), label="chunks"), b""]:
        items = parser.feed_data(chunk)
        dispatched = [item for item in items if type(item) not in (Truncated, RemoteProtocolError)]
        starts += [parser.dispatch_offset(k) for k in range(len(dispatched))]
        with pytest.raises(IndexError):
            parser.dispatch_offset(len(dispatched))
        if len(dispatched) < len(items) and type(items[-1]) is RemoteProtocolError:
            assert starts == reference(stream).starts[: len(starts)]
            return
    assert starts == reference(stream).starts


@given(stream=sse_bytes(), data=st.data())
def test_bytes_after_the_end_name_where_the_stream_ended(stream: bytes, data: st.DataObject) -> None:
    # However much of the stream was still unread in the buffer at the end.
    for feed in ("feed", "feed_data", "receive_data"):
        parser = EventStreamParser()
        for chunk in [*data.draw(chunked(stream), label="chunks"), b""]:
            getattr(parser, feed)(chunk)
        with pytest.raises(LocalProtocolError, match=f"stream ended at byte {len(stream)}\\)") as caught:
            getattr(parser, feed)(b"x")
        assert caught.value.offset == len(stream)


def test_dispatch_offset_names_no_line_after_a_fault() -> None:
    # The third line outgrows the limit: the blank lines after it end no
    # event, since they are never read.
    parser = EventStreamParser(max_event_size=10)
    items = parser.feed_data(b"data: a\n\n: c\ndata: 123456789\n\ndata: b\n\n")
    assert items[:2] == ["a", Heartbeat("c")] and type(items[2]) is RemoteProtocolError
    assert [parser.dispatch_offset(0), parser.dispatch_offset(1)] == [8, 9]
    with pytest.raises(IndexError):
        parser.dispatch_offset(2)


def test_dispatch_offset_names_no_item_after_a_call_that_dispatched_none() -> None:
    parser = EventStreamParser()
    calls = [
        (b"data: a\n\n", ["a"], [8]),
        (b"data: b", [], []),  # no line
        (b"\n", [], []),  # a line, no event
        (b"\n", ["b"], [17]),
        (b"event: x\n", [], []),  # the line stays in the buffer
        (b"", [Truncated("partial-event", 9)], []),
    ]
    for chunk, items, starts in calls:
        assert parser.feed_data(chunk) == items
        assert [parser.dispatch_offset(k) for k in range(len(starts))] == starts
        with pytest.raises(IndexError):
            parser.dispatch_offset(len(starts))


# One-line events of 32 KiB or more among plain ones: feed_data's own path.
huge_streams = st.builds(
    lambda before, payload, after: before + b"data: " + payload + b"\n\n" + after,
    complete_events,
    payloads(33_000),
    st.sampled_from([b"", b"data: y\n\n", b"event: e\ndata: z\n\n", b"data: x"]),
)


@fewer
@given(
    stream=st.one_of(large_streams, huge_streams),
    limit=st.one_of(st.none(), st.integers(4000, 40_000)),
    data=st.data(),
)
def test_feed_data_gives_the_data_of_large_events(stream: bytes, limit: int | None, data: st.DataObject) -> None:
    chunks = data.draw(chunked(stream, max_cuts=6), label="chunks")
    assert data_view(chunks, limit, by_data=True) == data_view(chunks, limit, by_data=False)


def test_feed_data_hands_out_error_events_whole_however_the_blocks_come() -> None:
    # An event line, its data line and the blank line, alone in a chunk or
    # among others: "error" comes as the event, every other type as its data.
    blocks = [b"event: a\ndata: 1\n\n", b"event: error\ndata: 2\n\n", b"event: \ndata: 3\n\n", b"data: 4\n\n"]
    expected = ["1", ServerSentEvent("error", "2", "", None), "3", "4"]
    cuts = {
        "whole": [b"".join(blocks)],
        "per event": blocks,
        "line by line": [line + b"\n" for line in b"".join(blocks).split(b"\n")[:-1]],
    }
    for name, chunks in cuts.items():
        parser = EventStreamParser()
        assert [item for chunk in chunks for item in parser.feed_data(chunk)] == expected, name
        assert [parser.feed_data(b"")] == [[]], name


def test_feed_data_hands_out_data_of_32_kib_or_more_as_bytes() -> None:
    # Data of 32 KiB or more comes undecoded, shorter data as text, however
    # the batch around it is cut (alone, or with the line after it).
    for size, kind in ((32 * 1024 - 1, str), (32 * 1024, bytearray)):
        event = b"data: " + b"x" * size + b"\n\n"
        for after in (b"", b"event: e\n", b"data: y\n\n", b": ping\n"):
            for name, chunks in chunkings(event + after):
                parser = EventStreamParser()
                items = [item for chunk in chunks for item in parser.feed_data(chunk)]
                first = items[0]
                assert type(first) is kind, (size, after, name)
                assert (first.encode() if isinstance(first, str) else bytes(first)) == b"x" * size


def test_a_whole_body_in_one_call() -> None:
    # 3,000 events (about 90 KiB) in one call: every event at once, none lost.
    body = b"".join(b'id: %d\ndata: {"n":%d}\n\n' % (i, i) for i in range(3000)) + b"data: tail"
    parser = EventStreamParser()
    next_event = parser.next_event  # bound before the first byte
    parser.receive_data(body)
    events = list(iter(next_event, NEED_DATA))
    assert events == [ServerSentEvent("message", f'{{"n":{i}}}', str(i)) for i in range(3000)]
    parser.receive_data(b"")
    assert feed_all(parser, []) == [Truncated("partial-event", len(b"data: tail")), CLOSED]


# --- 3. encode -> parse round trip ------------------------------------------------

one_line = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"))
server_events = st.builds(
    ServerSentEvent,
    event=one_line.filter(bool),
    data=st.text(st.characters(codec="utf-8")),
    id=st.text(st.characters(codec="utf-8", exclude_characters="\r\n\x00")),
    retry=st.none() | st.integers(0, 10**15),
)
units = st.lists(st.one_of(server_events, st.builds(Heartbeat, one_line)), max_size=8)
newlines = st.sampled_from(["\n", "\r\n", "\r"])


@given(units=units, data=st.data())
def test_encode_parse_round_trip(units: list[ServerSentEvent | Heartbeat], data: st.DataObject) -> None:
    stream = b"".join(encode(u, newline=data.draw(newlines, label="newline")) for u in units)
    # What comes back: ids are sticky (encode writes no "id:" line for an
    # empty id, so the previous one stays), and CR / CRLF in data are line
    # breaks that come back as LF.
    expected: list[Any] = []
    current_id = ""
    last_retry = None
    for unit in units:
        if isinstance(unit, Heartbeat):
            expected.append(unit)
            continue
        current_id = unit.id or current_id
        if unit.retry is not None:
            last_retry = unit.retry
        data_text = unit.data.replace("\r\n", "\n").replace("\r", "\n")
        expected.append(ServerSentEvent(unit.event, data_text, current_id, unit.retry))
    chunks = data.draw(chunked(stream), label="chunks")
    assert outcome(chunks) == ([*expected, CLOSED], current_id, last_retry)


any_text = st.text(st.one_of(st.sampled_from("\r\n\x00 :\ud800\udfff"), st.characters()), max_size=6)


@given(
    unit=st.one_of(
        st.builds(ServerSentEvent, any_text, any_text, any_text, st.none() | st.integers(-3, 10**6)),
        st.builds(Heartbeat, any_text),
    ),
    newline=newlines,
)
def test_encode_writes_what_reads_back_or_refuses(unit: ServerSentEvent | Heartbeat, newline: str) -> None:
    try:
        stream = encode(unit, newline=newline)
    except LocalProtocolError:
        return
    if isinstance(unit, ServerSentEvent):
        data_text = unit.data.replace("\r\n", "\n").replace("\r", "\n")
        unit = ServerSentEvent(unit.event, data_text, unit.id, unit.retry)
    assert outcome([stream])[0] == [unit, CLOSED]


# --- 4. never crashes ----------------------------------------------------------------


@given(
    stream=st.one_of(st.binary(max_size=200), sse_bytes(), long_sse_bytes()),
    limit=st.none() | st.integers(1, 64),
    data=st.data(),
)
def test_never_crashes(stream: bytes, limit: int | None, data: st.DataObject) -> None:
    parser = EventStreamParser() if limit is None else EventStreamParser(max_event_size=limit)
    chunks = data.draw(chunked(stream), label="chunks")
    try:
        events = feed_all(parser, chunks)
    except RemoteProtocolError as err:
        assert limit is not None  # the default limit is far above these streams
        assert err.offset is not None
        assert 0 <= err.offset <= len(stream)
        assert f"at byte {err.offset} " in str(err)
        with pytest.raises(LocalProtocolError):
            parser.next_event()
        with pytest.raises(LocalProtocolError):
            parser.receive_data(b"x")
        return
    assert events[-1] is CLOSED
    body = events[:-1]
    assert all(type(e) in (ServerSentEvent, Heartbeat, Truncated) for e in body)
    truncated = [e for e in body if type(e) is Truncated]
    if truncated:
        assert body[-1] is truncated[0]
        assert 0 < truncated[0].pending <= len(stream)


# --- 5. bounded memory ---------------------------------------------------------------


@given(stream=long_sse_bytes(), size=st.integers(1, 16), limit=st.integers(1, 64))
def test_bounded_memory(stream: bytes, size: int, limit: int) -> None:
    # The only test that reads private state: what the parser holds between
    # calls for the unfinished event is its receive buffer (``_buf``) plus
    # the open block's data lines and event type (``_block.data``, and the
    # size of ``_block.type`` in bytes).
    # SPEC §6.3: never more than max_event_size plus one chunk.
    parser = EventStreamParser(max_event_size=limit)

    def held() -> int:
        block = parser._block
        return len(parser._buf) + sum(len(line) for line in block.data) + len(block.type.encode())

    for i in range(0, len(stream), size):
        parser.receive_data(stream[i : i + size])
        assert held() <= limit + size
        try:
            drain(parser)
        except RemoteProtocolError:
            note(f"limit hit after {i + size} bytes")
            return
        assert held() <= limit + size


def test_bounded_memory_on_one_endless_line() -> None:
    parser = EventStreamParser(max_event_size=1000)
    chunk = b"x" * 64
    with pytest.raises(RemoteProtocolError, match="at byte 0 "):
        for _ in range(100):
            parser.receive_data(chunk)
            assert len(parser._buf) <= 1000 + 64
            drain(parser)


# --- 6. latency ------------------------------------------------------------------------


def availability(chunks: list[bytes]) -> list[tuple[Any, int | None]]:
    """Feed chunks, draining after each; pair every event with the number of
    bytes received when it came out (None: only after end of stream)."""
    parser = EventStreamParser()
    got: list[tuple[Any, int | None]] = []
    received = 0
    for chunk in chunks:
        parser.receive_data(chunk)
        received += len(chunk)
        got += [(e, received) for e in drain(parser)]
    got += [(e, None) for e in feed_all(parser, [])[:-1]]
    return got


@fewer
@given(stream=sse_bytes(), data=st.data())
def test_latency(stream: bytes, data: st.DataObject) -> None:
    ref = reference(stream)
    # Byte by byte, every event comes out right after the byte that ends
    # its line (the CR of a CRLF included), never later.
    assert availability(bytewise(stream)) == ref.events
    # With any chunking, an event comes out with the chunk holding that byte.
    chunks = data.draw(chunked(stream), label="chunks")
    ends = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        ends.append(total)

    def with_chunk(ready: int | None) -> int | None:
        return None if ready is None else next(end for end in ends if end >= ready)

    assert availability(chunks) == [(e, with_chunk(ready)) for e, ready in ref.events]
