"""How bytes reach a ChatStream: framed and read as they arrive while the
stream is live, ignored after ``[DONE]``, refused after the end or an error;
through any reference to its methods; and no reference cycle either way."""

from __future__ import annotations

import gc
import weakref

from helpers import feed_all, until_error

from ssestate import (
    CLOSED,
    NEED_DATA,
    ChatStream,
    Delta,
    Done,
    Finish,
    Heartbeat,
    LocalProtocolError,
    RemoteProtocolError,
    StreamError,
    Truncated,
)

HI = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
STOP = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'


def test_end_of_body_fed_before_any_event_is_read() -> None:
    stream = ChatStream()
    stream.receive_data(HI + STOP)
    stream.receive_data(b"")
    stream.receive_data(b"")  # may repeat
    events = [stream.next_event() for _ in range(6)]
    assert events == [Delta(0, "hi"), Finish(0, "stop"), Done(False), CLOSED, CLOSED, CLOSED]


def test_bytes_after_done_are_ignored_then_end_of_body_closes() -> None:
    stream = ChatStream()
    stream.receive_data(HI + b"data: [DONE]\n\n")
    assert [stream.next_event(), stream.next_event()] == [Delta(0, "hi"), Done(True)]
    stream.receive_data(b"data: not json at all\n\n" * 1000)  # ignored: not read, no error
    assert stream.next_event() is NEED_DATA
    stream.receive_data(b"")
    assert stream.next_event() is CLOSED
    try:
        stream.receive_data(b"more")
    except LocalProtocolError as exc:
        assert "after end of stream" in str(exc)
    else:
        raise AssertionError("bytes after the end of the body were accepted")


def test_done_and_end_of_body_in_one_go() -> None:
    assert feed_all(ChatStream(), [HI + b"data: [DONE]\n\n"]) == [Delta(0, "hi"), Done(True), CLOSED]


def test_a_stream_is_freed_without_the_cycle_collector() -> None:
    cases = [
        (200, "text/event-stream", HI + b"data: [DONE]\n\n"),
        (500, "application/json", HI + b"data: [DONE]\n\n"),
        (200, "text/event-stream", HI),
        (200, "text/event-stream", HI + b"data: not json\n\n"),  # raised, then unusable
        (200, "text/event-stream", HI + STOP + b"\n"),
    ]
    for status, content_type, body in cases:
        gc.disable()
        try:
            stream = ChatStream(status, content_type)
            stream.receive_data(body)
            if body.endswith(b"\n\n\n"):
                stream.receive_data(b"")  # drained to CLOSED
            try:
                while stream.next_event() not in (NEED_DATA, CLOSED):
                    pass
            except RemoteProtocolError:
                pass
            ref = weakref.ref(stream)
            del stream
            assert ref() is None, (status, content_type, body)
        finally:
            gc.enable()


def test_a_method_kept_after_its_stream_is_dropped_keeps_the_stream_working() -> None:
    # A bound method holds its stream: the idiom of keeping only the method.
    for status, content_type, body, expected in [
        (200, "text/event-stream", HI + STOP, [Delta(0, "hi"), Finish(0, "stop"), Done(False)]),
        (
            500,
            "application/json",
            b'{"error":{"message":"boom"}}',
            [StreamError(500, None, "boom", None, {"error": {"message": "boom"}})],
        ),
    ]:
        stream = ChatStream(status, content_type)
        feed, next_event = stream.feed, stream.next_event
        del stream
        gc.collect()
        assert feed(body) + feed(b"") == expected
        assert next_event() is CLOSED


def test_receive_data_and_next_event_kept_before_the_first_byte() -> None:
    stream = ChatStream()
    receive, next_event = stream.receive_data, stream.next_event
    assert next_event() is NEED_DATA
    receive(HI[:10])
    assert next_event() is NEED_DATA  # no line ended yet
    receive(HI[10:])
    assert [next_event(), next_event()] == [Delta(0, "hi"), NEED_DATA]
    receive(STOP)
    receive(b"")
    assert [next_event(), next_event(), next_event(), next_event()] == [Finish(0, "stop"), Done(False), CLOSED, CLOSED]


def test_blank_lines_in_chunks_of_their_own() -> None:
    """A server that writes each event's blank line on its own: the parser
    holds each data line as an open block until its blank line comes, and
    every event, the end of stream and an error offset are what one
    chunk gives."""
    tail = b'data: {"choices":[{"index":0,"delta":{"content":"\xe6\xb5\x81"},"finish_reason":null}]}\n'
    lines = [HI[:-1], b"\n", b"data: not json\n", b"\n"]
    whole, error = until_error(ChatStream(), [b"".join(lines)])
    split, split_error = until_error(ChatStream(), lines)
    assert whole == split == [Delta(0, "hi")]
    assert error is not None and split_error is not None
    assert (error.offset, str(error)) == (split_error.offset, str(split_error)) == (len(HI) + 15, str(error))
    # A data line whose blank line never comes is a partial event of its own size.
    events = feed_all(ChatStream(), [HI[:-1], b"\n", tail])
    assert events == [Delta(0, "hi"), Truncated("partial-event", len(tail)), CLOSED]
    # A comment between a data line and its blank line (read at once), and an
    # event type.
    events = feed_all(ChatStream(), [b"event: message\n", HI[:-1], b": ping\n", b"\n", tail, b"\n", STOP])
    assert events == [Heartbeat("ping"), Delta(0, "hi"), Delta(0, "\u6d41"), Finish(0, "stop"), Done(False), CLOSED]
