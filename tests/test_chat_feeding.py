"""How bytes reach a ChatStream: straight to its parser while the stream is
live, through ``_receive`` afterwards; and no reference cycle either way."""

from __future__ import annotations

import gc
import weakref

from helpers import feed_all

from ssestate import CLOSED, NEED_DATA, ChatStream, Delta, Done, Finish, LocalProtocolError

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
    stream.receive_data(b"data: not json at all\n\n" * 1000)  # ignored, not buffered
    assert stream._parser._buf == bytearray()
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
    for status, content_type in [(200, "text/event-stream"), (500, "application/json")]:
        gc.disable()
        try:
            stream = ChatStream(status, content_type)
            stream.receive_data(HI + b"data: [DONE]\n\n")
            while stream.next_event() is not NEED_DATA:
                pass
            ref = weakref.ref(stream)
            del stream
            assert ref() is None, (status, content_type)
        finally:
            gc.enable()


def test_a_feeder_kept_after_its_stream_is_gone_does_nothing() -> None:
    stream = ChatStream(500, "application/json")
    feed = stream.receive_data
    del stream
    gc.collect()
    feed(b"x")  # no stream to feed any more: nothing happens
