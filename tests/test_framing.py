"""EventStreamParser against SPEC §1 and §2, rule by rule.

The table (``CASES``) pins exact input bytes and exact output events for
every rule of the WHATWG "interpret an event stream" algorithm as SPEC §2
states it.  Each case runs through every chunking of tests/helpers.py, once
draining the parser after every chunk and once draining only at the end, and
must give the same events, ``last_event_id`` and ``retry`` every time.

The tests after the table cover what a table of whole streams cannot say:
when an event becomes available, the sentinels, and the errors.
"""

from __future__ import annotations

import dataclasses
import gc
import weakref
from typing import Any

import pytest
from helpers import chunkings, drain, feed_all

from ssestate import (
    CLOSED,
    DEFAULT_MAX_EVENT_SIZE,
    NEED_DATA,
    EventStreamParser,
    Heartbeat,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    Sentinel,
    ServerSentEvent,
    Truncated,
)

BOM = b"\xef\xbb\xbf"


def ev(data: str, event: str = "message", id: str = "", retry: int | None = None) -> ServerSentEvent:
    return ServerSentEvent(event, data, id, retry)


def hb(comment: str) -> Heartbeat:
    return Heartbeat(comment)


def cut(pending: int) -> Truncated:
    return Truncated("partial-event", pending)


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    stream: bytes
    events: tuple[Any, ...]
    last_event_id: str = ""
    retry: int | None = None


CASES = [
    # --- line terminators --------------------------------------------------
    Case("lf", b"data: a\n\n", (ev("a"),)),
    Case("crlf", b"data: a\r\n\r\n", (ev("a"),)),
    Case("cr", b"data: a\r\r", (ev("a"),)),
    Case("mixed-terminators", b"data: a\r\ndata: b\rdata: c\n\r\n", (ev("a\nb\nc"),)),
    Case("crlf-is-one-terminator", b"data: a\r\n\r\ndata: b\r\n\r\n", (ev("a"), ev("b"))),
    Case("lf-cr-is-two-terminators", b"data: a\n\rdata: b\n\n", (ev("a"), ev("b"))),
    Case("cr-then-crlf", b"data: a\r\r\n", (ev("a"),)),
    Case("blank-lines-alone", b"\n\r\n\r\n\n", ()),
    Case("extra-blank-lines", b"data: a\n\n\n\ndata: b\n\n", (ev("a"), ev("b"))),
    # --- byte order mark ---------------------------------------------------
    Case("bom-dropped", BOM + b"data: a\n\n", (ev("a"),)),
    Case("bom-then-comment", BOM + b": hi\n", (hb("hi"),)),
    Case("bom-only", BOM, ()),
    Case("second-bom-kept-in-field-name", BOM + BOM + b"data: a\n\n", ()),
    Case("second-bom-kept-in-value", BOM + b"data: " + BOM + b"a\n\n", (ev("\ufeffa"),)),
    Case("bom-later-in-stream-kept", b"data: a\n\n" + BOM + b"data: b\n\n", (ev("a"),)),
    Case("partial-bom-is-data", b"\xef\xbbdata: a\n\n", ()),
    Case("partial-bom-at-eof", b"\xef\xbb", (cut(2),)),
    Case("bom-before-unterminated-line", BOM + b"data", (cut(4),)),
    # --- UTF-8 -------------------------------------------------------------
    Case("multibyte", "data: héllo 中文 😀\n\n".encode(), (ev("héllo 中文 😀"),)),
    Case("invalid-byte", b"data: a\xffb\n\n", (ev("a\ufffdb"),)),
    Case("lone-continuation-bytes", b"data: \x80\x80\n\n", (ev("\ufffd\ufffd"),)),
    Case("truncated-sequence-before-terminator", b"data: \xe2\x82\n\n", (ev("\ufffd"),)),
    Case("truncated-4-byte-sequence", b"data: \xf0\x9f\x98x\n\n", (ev("\ufffdx"),)),
    Case("surrogate-encoding", b"data: \xed\xa0\x80\n\n", (ev("\ufffd\ufffd\ufffd"),)),
    Case("overlong-encoding", b"data: \xc0\xaf\n\n", (ev("\ufffd\ufffd"),)),
    Case("truncated-sequence-at-eof", b"data: ok\n\ndata: \xe2\x82", (ev("ok"), cut(8))),
    Case("invalid-bytes-in-field-name", b"d\xffta: a\n\n", ()),
    Case(
        "invalid-bytes-in-typed-events",
        b"event: a\xff\ndata: \xff\n\nevent: b\ndata: \xe2\x82x\n\n",
        (ev("\ufffd", "a\ufffd"), ev("\ufffdx", "b")),
    ),
    # --- field syntax --------------------------------------------------------
    Case("no-space", b"data:a\n\n", (ev("a"),)),
    Case("one-space-removed", b"data: a\n\n", (ev("a"),)),
    Case("only-one-space-removed", b"data:  a\n\n", (ev(" a"),)),
    Case("trailing-space-kept", b"data: a \n\n", (ev("a "),)),
    Case("tab-not-removed", b"data:\ta\n\n", (ev("\ta"),)),
    Case("no-colon-is-empty-value", b"data\n\n", (ev(""),)),
    Case("empty-value", b"data:\n\n", (ev(""),)),
    Case("space-only-value", b"data: \n\n", (ev(""),)),
    Case("first-colon-splits", b"data: a:b: c\n\n", (ev("a:b: c"),)),
    Case("first-colon-splits-event", b"event:x: y\ndata: 1\n\n", (ev("1", event="x: y"),)),
    Case("space-before-colon-is-another-field", b"data : a\n\n", ()),
    Case("field-names-are-case-sensitive", b"Data: a\nEVENT: b\n\n", ()),
    Case("nul-in-data-kept", b"data: a\x00b\n\n", (ev("a\x00b"),)),
    # --- data ----------------------------------------------------------------
    Case("data-lines-joined-with-lf", b"data: a\ndata:\ndata: b\n\n", (ev("a\n\nb"),)),
    Case("trailing-empty-data-line", b"data: a\ndata\n\n", (ev("a\n"),)),
    Case("two-empty-data-lines", b"data\ndata\n\n", (ev("\n"),)),
    Case("data-after-other-fields", b"event: e\ndata: 1\nid: 2\ndata: 3\n\n", (ev("1\n3", "e", "2"),), "2"),
    # --- event ---------------------------------------------------------------
    Case("event-type", b"event: add\ndata: x\n\n", (ev("x", event="add"),)),
    Case("empty-event-is-message", b"event:\ndata: x\n\n", (ev("x"),)),
    Case("event-no-colon-is-message", b"event\ndata: x\n\n", (ev("x"),)),
    Case("last-event-line-wins", b"event: a\nevent: b\ndata: x\n\n", (ev("x", event="b"),)),
    Case("event-reset-after-dispatch", b"event: a\ndata: 1\n\ndata: 2\n\n", (ev("1", event="a"), ev("2"))),
    Case("event-reset-after-empty-block", b"event: a\n\ndata: 2\n\n", (ev("2"),)),
    Case("event-without-data-not-dispatched", b"event: a\n\n", ()),
    # --- id ------------------------------------------------------------------
    Case("id", b"id: 1\ndata: x\n\n", (ev("x", id="1"),), "1"),
    Case("id-persists", b"id: 1\ndata: a\n\ndata: b\n\n", (ev("a", id="1"), ev("b", id="1")), "1"),
    Case(
        "id-with-nul-ignored",
        b"id: 1\ndata: a\n\nid: 2\x00\ndata: b\n\n",
        (ev("a", id="1"), ev("b", id="1")),
        "1",
    ),
    Case("id-with-nul-first", b"id: \x00\ndata: a\n\n", (ev("a"),)),
    Case("empty-id-resets", b"id: 1\ndata: a\n\nid:\ndata: b\n\n", (ev("a", id="1"), ev("b"))),
    Case("id-no-colon-resets", b"id: 1\ndata: a\n\nid\ndata: b\n\n", (ev("a", id="1"), ev("b"))),
    Case("id-spaces", b"id:  x \ndata: a\n\n", (ev("a", id=" x "),), " x "),
    Case("id-of-empty-block-kept", b"id: 7\n\ndata: x\n\n", (ev("x", id="7"),), "7"),
    Case("id-only-block", b"id: 3\n\n", (), "3"),
    Case("id-of-unfinished-block-does-not-leak", b"id: 3\n", (cut(6),), ""),
    Case(
        "id-of-unfinished-block-after-event",
        b"id: 1\ndata: a\n\nid: 2\ndata: b\n",
        (ev("a", id="1"), cut(14)),
        "1",
    ),
    Case("id-after-data-in-block", b"data: a\nid: 9\n\n", (ev("a", id="9"),), "9"),
    # --- retry ---------------------------------------------------------------
    Case("retry", b"retry: 1000\ndata: x\n\n", (ev("x", retry=1000),), retry=1000),
    Case("retry-no-space", b"retry:5\ndata: x\n\n", (ev("x", retry=5),), retry=5),
    Case("retry-zero", b"retry: 0\ndata: x\n\n", (ev("x", retry=0),), retry=0),
    Case("retry-leading-zeros", b"retry: 007\ndata: x\n\n", (ev("x", retry=7),), retry=7),
    Case(
        "retry-beyond-64-bits",
        b"retry: 123456789012345678901234567890\ndata: x\n\n",
        (ev("x", retry=123456789012345678901234567890),),
        retry=123456789012345678901234567890,
    ),
    Case("retry-of-empty-block-not-on-next-event", b"retry: 5\n\ndata: x\n\n", (ev("x"),), retry=5),
    Case(
        "retry-latest-valid-wins",
        b"retry: 5\nretry: x\ndata: a\n\nretry: 7\ndata: b\n\ndata: c\n\n",
        (ev("a", retry=5), ev("b", retry=7), ev("c")),
        retry=7,
    ),
    Case("retry-invalid-after-valid-in-block", b"retry: 5\nretry: 1a\ndata: a\n\n", (ev("a", retry=5),), retry=5),
    Case("retry-of-unfinished-block-still-sets-parser-retry", b"retry: 9\n", (cut(9),), retry=9),
    # --- unknown fields ------------------------------------------------------
    Case("unknown-field-ignored", b"foo: bar\ndata: x\n\n", (ev("x"),)),
    Case("unknown-field-alone", b"foo\n\n", ()),
    Case("unknown-field-no-value", b"x:\ndata: a\n\n", (ev("a"),)),
    # --- comments ------------------------------------------------------------
    Case("comment", b": hello\n", (hb("hello"),)),
    Case("comment-no-space", b":hello\n", (hb("hello"),)),
    Case("bare-colon", b":\n", (hb(""),)),
    Case("comment-one-space-removed", b":  two\n", (hb(" two"),)),
    Case("comment-colons-kept", b":: a: b\n", (hb(": a: b"),)),
    Case("comment-crlf", b": ping\r\n", (hb("ping"),)),
    Case("comment-inside-block", b"data: a\n: c\ndata: b\n\n", (hb("c"), ev("a\nb"))),
    Case("comment-does-not-open-block", b": a\n\n: b\n", (hb("a"), hb("b"))),
    # --- Truncated at end of stream -----------------------------------------
    Case("complete-stream-not-truncated", b"data: a\n\n", (ev("a"),)),
    Case("trailing-comment-not-truncated", b"data: a\n\n: c\n", (ev("a"), hb("c"))),
    Case("unterminated-line", b"data: abc", (cut(9),)),
    Case("field-line-without-blank-line", b"data: abc\n", (cut(10),)),
    Case("comments-before-block-not-counted", b": x\ndata: a\n", (hb("x"), cut(8))),
    Case("comment-after-first-field-counted", b"data: a\n: x\n", (hb("x"), cut(12))),
    Case(
        "comments-before-and-inside-block",
        b": a\n: b\nevent: x\n: c\ndata: y\n",
        (hb("a"), hb("b"), hb("c"), cut(21)),
    ),
    Case("multibyte-counted-in-bytes", "data: é中\n".encode(), (cut(12),)),
    Case("crlf-counted-as-two", b"data: a\r\n", (cut(9),)),
    Case("cr-counted-as-one", b"data: a\r", (cut(8),)),
    Case("invalid-bytes-counted-raw", b"data: \xff\xff", (cut(8),)),
    Case("earlier-event-not-counted", b"data: a\n\nid: 5\n", (ev("a"), cut(6))),
    Case("unterminated-comment-is-pending", b": partial", (cut(9),)),
    Case("unknown-field-block", b"foo\n", (cut(4),)),
    Case("blank-line-then-partial-line", b"id: 1\n\n: c\nda", (hb("c"), cut(2)), "1"),
    Case("open-block-plus-unterminated-line", b"data: a\r\ndata: b", (cut(16),)),
    # --- large events (a batch over 4 KiB holding one event is decoded on its own path)
    Case("large-event", b"data: " + b"x" * 5000 + b"\n\n", (ev("x" * 5000),)),
    Case(
        "large-event-odd-bytes",
        b"data: " + b"x" * 5000 + "é😀".encode() + b"\xff\xe2\x82 \n\n",
        (ev("x" * 5000 + "é😀\ufffd\ufffd "),),
    ),
    Case("large-event-no-space", b"data:" + b"x" * 5000 + b"\n\n", (ev("x" * 5000),)),
    Case("large-event-two-spaces", b"data:  " + b"x" * 5000 + b"\n\n", (ev(" " + "x" * 5000),)),
    Case("large-event-crlf", b"data: " + b"x" * 5000 + b"\r\n\r\n", (ev("x" * 5000),)),
    Case("large-event-cr-inside", b"data: " + b"x" * 5000 + b"\rdata: y\n\n", (ev("x" * 5000 + "\ny"),)),
    Case("large-event-two-lines", b"data: " + b"x" * 5000 + b"\ndata: y\n\n", (ev("x" * 5000 + "\ny"),)),
    Case("large-event-unfinished", b"data: " + b"x" * 5000 + b"\n", (cut(5007),)),
    Case("large-event-then-more", b"data: " + b"x" * 5000 + b"\n\n: c\n", (ev("x" * 5000), hb("c"))),
    Case(
        "large-event-after-id",
        b"id: 7\n\n" + b"data: " + b"x" * 5000 + b"\n\n",
        (ev("x" * 5000, id="7"),),
        "7",
    ),
    Case("large-comment", b": " + b"c" * 5000 + b"\n\n", (hb("c" * 5000),)),
]


def parse(chunks: list[bytes], *, lazy: bool = False, **kwargs: Any) -> tuple[list[Any], EventStreamParser]:
    """Feed chunks; drain after each (default) or only once at the end."""
    parser = EventStreamParser(**kwargs)
    if not lazy:
        return feed_all(parser, chunks), parser
    for chunk in chunks:
        parser.receive_data(chunk)
    return feed_all(parser, []), parser


def test_large_event_alone_in_its_batch_keeps_the_id() -> None:
    large = b"data: " + b"x" * 5000 + b"\n\n"
    got, parser = parse([b"id: 7\n\n", large, b"id\n\n", large])
    assert got == [ev("x" * 5000, id="7"), ev("x" * 5000), CLOSED]
    assert parser.last_event_id == ""
    got, parser = parse([b"id: 7\n", large])  # the id line's block is still open
    assert got == [ev("x" * 5000, id="7"), CLOSED]
    assert parser.last_event_id == "7"


def test_case_names_are_unique() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_whatwg_case(case: Case) -> None:
    expected = [*case.events, CLOSED]
    for name, chunks in chunkings(case.stream):
        for lazy in (False, True):
            got, parser = parse(chunks, lazy=lazy)
            label = f"{name} lazy={lazy}"
            assert got == expected, label
            assert parser.last_event_id == case.last_event_id, label
            assert parser.retry == case.retry, label


@pytest.mark.parametrize(
    "value",
    [
        *(b"1a", b"-1", b"", b" 5", b"+5", b"1.5", b"5 ", b"0x10", b"1e3", b"\t5"),
        "\u0661\u0662".encode(),  # ARABIC-INDIC DIGITS ONE, TWO
        "\uff15".encode(),  # FULLWIDTH DIGIT FIVE
        "\u00b2".encode(),  # SUPERSCRIPT TWO
    ],
    ids=repr,
)
def test_retry_must_be_ascii_digits(value: bytes) -> None:
    stream = b"retry: " + value + b"\ndata: x\n\n"
    for name, chunks in chunkings(stream):
        got, parser = parse(chunks)
        assert got == [ev("x"), CLOSED], name
        assert parser.retry is None, name


def test_retry_too_long_for_an_integer_is_ignored() -> None:
    # int() refuses digit strings over sys.get_int_max_str_digits() (4300 by
    # default); such a value is no time anyone can wait, and it must not
    # escape as a ValueError.
    stream = b"retry: 5\n\nretry: " + b"9" * 5000 + b"\ndata: x\n\n"
    got, parser = parse([stream])
    assert got == [ev("x"), CLOSED]
    assert parser.retry == 5


# --- when events become available -------------------------------------------


def test_cr_ending_a_chunk_ends_the_line_at_once() -> None:
    parser = EventStreamParser()
    parser.receive_data(b"data: a\r")
    assert drain(parser) == []
    parser.receive_data(b"\r")
    assert drain(parser) == [ev("a")]  # before any later byte arrives
    parser.receive_data(b"\ndata: b\r\n\r")  # that LF is swallowed
    assert drain(parser) == [ev("b")]
    parser.receive_data(b"\n")
    assert drain(parser) == []
    assert feed_all(parser, []) == [CLOSED]


def test_lf_after_a_chunk_ending_in_cr_is_swallowed() -> None:
    # Were the LF a line of its own, it would be a blank line dispatching "a".
    got, _ = parse([b"data: a\r", b"\ndata: b\n\n"])
    assert got == [ev("a\nb"), CLOSED]


def test_only_one_lf_is_swallowed() -> None:
    parser = EventStreamParser()
    parser.receive_data(b"data: a\r")
    assert drain(parser) == []
    parser.receive_data(b"\n\n")
    assert drain(parser) == [ev("a")]


def test_swallowing_applies_only_to_the_next_byte() -> None:
    parser = EventStreamParser()
    parser.receive_data(b"data: a\r")
    assert drain(parser) == []
    parser.receive_data(b"x")
    parser.receive_data(b"\n\n")
    assert drain(parser) == [ev("a")]  # "x" was an unknown field line


def test_comment_ending_in_cr_is_a_heartbeat_at_once() -> None:
    parser = EventStreamParser()
    parser.receive_data(b": ping\r")
    assert drain(parser) == [hb("ping")]


def test_blank_line_lf_dispatches_at_once() -> None:
    parser = EventStreamParser()
    parser.receive_data(b"data: a\n")
    assert drain(parser) == []
    parser.receive_data(b"\n")
    assert drain(parser) == [ev("a")]


def test_bom_split_across_chunks() -> None:
    parser = EventStreamParser()
    for piece in (b"\xef", b"\xbb"):
        parser.receive_data(piece)
        assert drain(parser) == []
    parser.receive_data(b"\xbfdata: a\n\n")
    assert drain(parser) == [ev("a")]


def test_bom_in_second_chunk_is_not_dropped() -> None:
    assert parse([b"data: a\n\n", BOM + b"data: b\n\n"])[0] == [ev("a"), CLOSED]
    assert parse([BOM, BOM + b"data: b\n\n"])[0] == [CLOSED]


def test_waiting_for_a_possible_bom_does_not_delay_a_line() -> None:
    parser = EventStreamParser()
    parser.receive_data(b":\n")
    assert drain(parser) == [hb("")]


# --- sentinels ------------------------------------------------------------------


def test_sentinels() -> None:
    assert repr(NEED_DATA) == str(NEED_DATA) == "NEED_DATA"
    assert repr(CLOSED) == str(CLOSED) == "CLOSED"
    assert isinstance(NEED_DATA, Sentinel)
    assert isinstance(CLOSED, Sentinel)
    assert NEED_DATA is not CLOSED
    assert set(Sentinel) == {NEED_DATA, CLOSED}


def test_need_data_until_an_event_is_complete() -> None:
    parser = EventStreamParser()
    assert parser.next_event() is NEED_DATA
    parser.receive_data(b"data: a\n")
    assert parser.next_event() is NEED_DATA
    assert parser.next_event() is NEED_DATA
    parser.receive_data(b"\n")
    assert parser.next_event() == ev("a")
    assert parser.next_event() is NEED_DATA


def test_closed_is_returned_again_and_again() -> None:
    parser = EventStreamParser()
    parser.receive_data(b"data: a\n\ndata")
    parser.receive_data(b"")
    assert parser.next_event() == ev("a")
    assert parser.next_event() == cut(4)
    assert [parser.next_event() for _ in range(3)] == [CLOSED] * 3


def test_end_of_stream_may_be_fed_again() -> None:
    parser = EventStreamParser()
    parser.receive_data(b"data: a\n\n")
    parser.receive_data(b"")
    parser.receive_data(b"")
    assert parser.next_event() == ev("a")
    parser.receive_data(b"")
    assert parser.next_event() is CLOSED
    parser.receive_data(b"")
    assert parser.next_event() is CLOSED


def test_empty_stream() -> None:
    assert parse([])[0] == [CLOSED]


def test_accepts_bytearray_and_memoryview() -> None:
    parser = EventStreamParser()
    parser.receive_data(bytearray(b"data: a\n"))
    parser.receive_data(memoryview(b"xx\n\n")[2:])
    assert feed_all(parser, []) == [ev("a"), CLOSED]


# --- errors -----------------------------------------------------------------------


def test_error_classes() -> None:
    assert issubclass(ProtocolError, Exception)
    assert issubclass(RemoteProtocolError, ProtocolError)
    assert issubclass(LocalProtocolError, ProtocolError)
    assert not issubclass(LocalProtocolError, RemoteProtocolError)
    err = RemoteProtocolError("bad thing at byte 7", 7)
    assert str(err) == "bad thing at byte 7"
    assert err.offset == 7
    assert LocalProtocolError("misuse").offset is None


def test_data_after_end_of_stream_is_a_local_error() -> None:
    parser = EventStreamParser()
    parser.receive_data(b"data: a\n\n")
    parser.receive_data(b"")
    with pytest.raises(LocalProtocolError, match=r"after end of stream \(stream ended at byte 9\)") as info:
        parser.receive_data(b"x")
    assert info.value.offset == 9
    # The parser is still usable: the refused bytes were not taken.
    assert feed_all(parser, []) == [ev("a"), CLOSED]
    with pytest.raises(LocalProtocolError, match="byte 9"):
        parser.receive_data(b"more")


def test_max_event_size_must_be_positive() -> None:
    for bad in (0, -1):
        with pytest.raises(LocalProtocolError, match=f"max_event_size must be positive, got {bad}"):
            EventStreamParser(max_event_size=bad)
    assert EventStreamParser().max_event_size == DEFAULT_MAX_EVENT_SIZE == 16 * 1024 * 1024


def test_unterminated_line_over_the_limit() -> None:
    parser = EventStreamParser(max_event_size=10)
    parser.receive_data(b"data: 1234")  # exactly 10 bytes: allowed
    assert parser.next_event() is NEED_DATA
    parser.receive_data(b"5")
    with pytest.raises(RemoteProtocolError) as info:
        parser.next_event()
    assert info.value.offset == 0
    assert str(info.value) == "event too large: the event that starts at byte 0 holds more than max_event_size=10 bytes"


def test_events_before_the_oversized_one_come_first_then_the_parser_refuses_use() -> None:
    parser = EventStreamParser(max_event_size=10)
    parser.receive_data(b"data: a\n\n: hb\ndata: " + b"x" * 20)
    assert parser.next_event() == ev("a")
    assert parser.next_event() == hb("hb")
    with pytest.raises(RemoteProtocolError, match="at byte 14 ") as info:
        parser.next_event()
    assert info.value.offset == 14
    for call in (parser.next_event, lambda: parser.receive_data(b"x"), lambda: parser.receive_data(b"")):
        with pytest.raises(LocalProtocolError, match=r"unusable after an earlier error: event too large: .* byte 14"):
            call()


def test_limit_counts_what_the_parser_keeps() -> None:
    # "event: x" keeps 1 byte (the type), "data: yy" 3 ("yy" and its LF);
    # each line counts whole while it is the unterminated line: at most
    # 1 + 8 = 9 bytes are held for this event.
    stream = b"event: x\ndata: yy\n\n"
    for name, chunks in chunkings(stream):
        assert parse(chunks, max_event_size=9)[0] == [ev("yy", event="x"), CLOSED], name
        parser = EventStreamParser(max_event_size=8)
        with pytest.raises(RemoteProtocolError, match="starts at byte 0 holds more than max_event_size=8") as info:
            feed_all(parser, chunks)
        assert info.value.offset == 0, name


def test_limit_counts_a_type_set_twice_in_a_block_once() -> None:
    # "event: y" keeps 1 byte, "data: a" 2, and "event: x" replaces the type
    # (3 kept still): with "data: bbbb" unterminated (10 bytes) the event
    # holds 13 bytes at most, wherever one cut falls.
    stream = b"event: y\ndata: a\nevent: x\ndata: bbbb\n\n"
    for i in range(len(stream)):
        chunks = [part for part in (stream[:i], stream[i:]) if part]
        assert parse(chunks, max_event_size=13)[0] == [ev("a\nbbbb", event="x"), CLOSED], i
        with pytest.raises(RemoteProtocolError, match="starts at byte 0 holds more than max_event_size=12"):
            parse(chunks, max_event_size=12)


def test_an_event_line_that_opens_the_last_block_counts_as_its_type() -> None:
    # After the first event, "event: x" keeps 1 byte: the unterminated
    # "data: 1234" (10) may follow it at max_event_size=11, not at 10; and a
    # stream that ends there was cut 9 + 10 bytes into its event.
    stream = b"data: a\n\nevent: x\ndata: 1234"
    for name, chunks in chunkings(b"event: x\n"):  # the line itself, unterminated, holds 8
        assert parse(chunks, max_event_size=8)[0] == [cut(9), CLOSED], name
        with pytest.raises(RemoteProtocolError, match="starts at byte 0 holds more than max_event_size=7"):
            parse(chunks, max_event_size=7)
    for name, chunks in chunkings(stream):
        assert parse(chunks, max_event_size=11)[0] == [ev("a"), cut(19), CLOSED], name
        parser = EventStreamParser(max_event_size=10)
        with pytest.raises(RemoteProtocolError, match="starts at byte 9 holds more than max_event_size=10"):
            feed_all(parser, chunks)


def test_limit_counts_the_id_the_open_block_set() -> None:
    # "12345" is kept as the block's id: 5 + "data: 1" (7) = 12 held.
    stream = b"id: 12345\ndata: 1\n\n"
    assert parse([stream], max_event_size=12)[0] == [ev("1", id="12345"), CLOSED]
    with pytest.raises(RemoteProtocolError, match="starts at byte 0 "):
        parse([stream], max_event_size=11)


def test_limit_does_not_count_lines_the_parser_does_not_keep() -> None:
    # Inside an open block, a comment (handed out as a Heartbeat at once), a
    # retry line and an unknown field are each the unterminated line for a
    # while, and kept by nobody afterwards: only "a" and its LF stay.
    body = b"data: a\n: " + b"c" * 12 + b"\nretry: 1234567\nfoo: " + b"x" * 9 + b"\n\n"  # lines of 8, 14, 14, 14
    for name, chunks in chunkings(body):
        assert parse(chunks, max_event_size=16)[0] == [hb("c" * 12), ev("a", retry=1234567), CLOSED], name
        parser = EventStreamParser(max_event_size=15)  # 2 kept + the comment line's 14
        with pytest.raises(RemoteProtocolError, match="starts at byte 0 "):
            feed_all(parser, chunks)


def test_limit_names_the_start_of_the_open_block() -> None:
    parser = EventStreamParser(max_event_size=10)
    parser.receive_data(b"data: a\n\n")
    assert drain(parser) == [ev("a")]
    parser.receive_data(b"id: 1\n")
    assert drain(parser) == []
    parser.receive_data(b"data: 12345\n")
    with pytest.raises(RemoteProtocolError, match="starts at byte 9 ") as info:
        parser.next_event()
    assert info.value.offset == 9


def test_limit_on_an_unterminated_comment() -> None:
    parser = EventStreamParser(max_event_size=10)
    parser.receive_data(b"data: a\n\n")
    assert drain(parser) == [ev("a")]
    parser.receive_data(b":" + b"c" * 20)
    with pytest.raises(RemoteProtocolError, match="starts at byte 9 "):
        parser.next_event()


def test_limit_does_not_count_a_byte_order_mark() -> None:
    # Neither a byte order mark nor the bytes that may still become one are
    # part of a line, under every chunking.
    for name, chunks in chunkings(BOM + b":\n"):
        assert parse(chunks, max_event_size=1)[0] == [hb(""), CLOSED], name
    # Two bytes of a mark and then another byte: a line of three bytes.
    for _name, chunks in chunkings(b"\xef\xbbX\n"):
        parser = EventStreamParser(max_event_size=2)
        with pytest.raises(RemoteProtocolError, match="starts at byte 0 holds more than max_event_size=2"):
            feed_all(parser, chunks)
    parser = EventStreamParser(max_event_size=1)
    assert feed_all(parser, [b"\xef", b"\xbb"]) == [Truncated("partial-event", 2), CLOSED]


def test_limit_holds_when_end_of_stream_comes_before_next_event() -> None:
    # Feeding b"" before asking for events must not turn the error into a
    # Truncated: the unfinished event outgrew the limit all the same.
    parser = EventStreamParser(max_event_size=8)
    parser.receive_data(b"data: a\n\ndata:data:")
    parser.receive_data(b"")
    assert parser.next_event() == ev("a")
    with pytest.raises(RemoteProtocolError, match="starts at byte 9 holds more than max_event_size=8 bytes"):
        parser.next_event()
    parser = EventStreamParser(max_event_size=10)
    parser.receive_data(b"data: a\n\ndata:data:")
    parser.receive_data(b"")
    assert feed_all(parser, []) == [ev("a"), cut(10), CLOSED]


def test_a_complete_event_in_one_chunk_is_limited_too() -> None:
    # The limit does not depend on chunking: an event that outgrows it fails
    # whether its bytes arrive one at a time or all at once (more cases in
    # test_event_size_limit.py).
    parser = EventStreamParser(max_event_size=4)
    parser.receive_data(b"data: hello\n\n")
    with pytest.raises(RemoteProtocolError, match="starts at byte 0 "):
        parser.next_event()


# --- the events themselves --------------------------------------------------------


def test_framing_event_fields_in_spec_order() -> None:
    def names(cls: type) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    assert names(ServerSentEvent) == ["event", "data", "id", "retry"]
    assert names(Heartbeat) == ["comment"]
    assert names(Truncated) == ["reason", "pending"]
    assert ServerSentEvent() == ServerSentEvent("message", "", "", None)


def test_parsed_events_are_genuine_frozen_values() -> None:
    got, _ = parse([b"id: 1\nretry: 5\ndata: a\n\n: c\n"])
    event, beat = got[0], got[1]
    assert type(event) is ServerSentEvent
    assert type(beat) is Heartbeat
    assert event == ServerSentEvent("message", "a", "1", 5)
    assert hash(event) == hash(ServerSentEvent("message", "a", "1", 5))
    assert repr(event) == "ServerSentEvent(event='message', data='a', id='1', retry=5)"
    assert not hasattr(event, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.data = "b"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        beat.comment = "d"  # type: ignore[misc]


def test_methods_are_ordinary_and_any_reference_keeps_working() -> None:
    parser = EventStreamParser()
    receive, next_event, feed = parser.receive_data, parser.next_event, parser.feed  # before the first byte
    assert next_event() is NEED_DATA
    receive(b"data: a")
    assert next_event() is NEED_DATA
    receive(memoryview(b"\n\ndata: b\r"))  # any bytes-like object
    assert [next_event(), next_event()] == [ev("a"), NEED_DATA]
    assert feed(bytearray(b"\n\n")) == [ev("b")]  # the LF of CRLF, then a blank line
    receive(b"")
    assert [next_event(), next_event()] == [CLOSED, CLOSED]
    assert "Return the next event" in (EventStreamParser.next_event.__doc__ or "")
    assert EventStreamParser.feed.__doc__ and EventStreamParser.receive_data.__doc__


@pytest.mark.parametrize("body", [b"data: a\n\n", b"data: a\n\n" + b"x" * 20])
def test_a_parser_is_freed_without_the_cycle_collector(body: bytes) -> None:
    gc.disable()
    try:
        parser = EventStreamParser(max_event_size=10)
        parser.receive_data(body)
        try:
            while parser.next_event() is not NEED_DATA:
                pass
        except RemoteProtocolError:
            pass
        ref = weakref.ref(parser)
        del parser
        assert ref() is None
    finally:
        gc.enable()
