"""encode(), encode_chunk() and DONE_BYTES: exact bytes, and every refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import chunkings, feed_all

from ssestate import (
    DONE_BYTES,
    EventStreamParser,
    Heartbeat,
    LocalProtocolError,
    ServerSentEvent,
    Truncated,
    encode,
    encode_chunk,
)


def reparse(stream: bytes) -> list[Any]:
    """Parse ``stream`` under every chunking; they must all agree."""
    results = {name: feed_all(EventStreamParser(), chunks) for name, chunks in chunkings(stream)}
    first = results["whole"]
    for name, got in results.items():
        assert got == first, name
    return first[:-1]


@pytest.mark.parametrize(
    ("event", "newline", "expected"),
    [
        (ServerSentEvent(data="x"), "\n", b"data: x\n\n"),
        (ServerSentEvent("message", "x"), "\n", b"data: x\n\n"),
        (
            ServerSentEvent("add", "a\nb", "7", 100),
            "\n",
            b"event: add\nid: 7\nretry: 100\ndata: a\ndata: b\n\n",
        ),
        (
            ServerSentEvent("add", "a\nb", "7", 100),
            "\r\n",
            b"event: add\r\nid: 7\r\nretry: 100\r\ndata: a\r\ndata: b\r\n\r\n",
        ),
        (ServerSentEvent("add", "a\nb", "7", 100), "\r", b"event: add\rid: 7\rretry: 100\rdata: a\rdata: b\r\r"),
        (ServerSentEvent(data=""), "\n", b"data: \n\n"),
        (ServerSentEvent(data="a\r\nb\rc\nd"), "\n", b"data: a\ndata: b\ndata: c\ndata: d\n\n"),
        (ServerSentEvent(data="a\n"), "\n", b"data: a\ndata: \n\n"),
        (ServerSentEvent(data="\n"), "\n", b"data: \ndata: \n\n"),
        (ServerSentEvent(data=" x"), "\n", b"data:  x\n\n"),
        (ServerSentEvent(data="é中😀"), "\n", "data: é中😀\n\n".encode()),
        (ServerSentEvent(data="\x00"), "\n", b"data: \x00\n\n"),
        (ServerSentEvent(retry=0), "\n", b"retry: 0\ndata: \n\n"),
        (ServerSentEvent(event=" spaced ", id=" i "), "\n", b"event:  spaced \nid:  i \ndata: \n\n"),
        (Heartbeat("ping"), "\n", b": ping\n\n"),
        (Heartbeat(""), "\n", b":\n\n"),
        (Heartbeat(" x"), "\n", b":  x\n\n"),
        (Heartbeat("ping"), "\r\n", b": ping\r\n\r\n"),
        (Heartbeat("ping"), "\r", b": ping\r\r"),
    ],
    ids=repr,
)
def test_encode_exact_bytes(event: ServerSentEvent | Heartbeat, newline: str, expected: bytes) -> None:
    assert encode(event, newline=newline) == expected


def test_encode_default_newline_is_lf() -> None:
    assert encode(ServerSentEvent("e", "d", "i", 1)) == encode(ServerSentEvent("e", "d", "i", 1), newline="\n")


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (ServerSentEvent("add", "a\nb", "7", 100), ServerSentEvent("add", "a\nb", "7", 100)),
        (ServerSentEvent(data="a\r\nb\rc"), ServerSentEvent(data="a\nb\nc")),
        (ServerSentEvent(data=""), ServerSentEvent(data="")),
        (ServerSentEvent(data="\n\n"), ServerSentEvent(data="\n\n")),
        (ServerSentEvent(data=" x "), ServerSentEvent(data=" x ")),
        (ServerSentEvent(event=" e", id=" i"), ServerSentEvent(event=" e", id=" i")),
        (Heartbeat(" x"), Heartbeat(" x")),
        (Heartbeat(""), Heartbeat("")),
    ],
    ids=repr,
)
def test_encoded_events_read_back(event: ServerSentEvent | Heartbeat, expected: ServerSentEvent | Heartbeat) -> None:
    for newline in ("\n", "\r\n", "\r"):
        assert reparse(encode(event, newline=newline)) == [expected]


def test_encode_chunk_writes_compact_raw_utf8_json() -> None:
    chunk = {"id": "c1", "choices": [{"index": 0, "delta": {"content": 'é中😀 "q"'}}]}
    expected = 'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"é中😀 \\"q\\""}}]}\n\n'.encode()
    assert encode_chunk(chunk) == expected
    (event,) = reparse(expected)
    assert json.loads(event.data) == chunk


def test_encode_chunk_options() -> None:
    assert encode_chunk({"a": 1}, event="error") == b'event: error\ndata: {"a":1}\n\n'
    assert encode_chunk({"a": 1}, newline="\r\n") == b'data: {"a":1}\r\n\r\n'
    assert encode_chunk({"a": 1}, event="") == b'data: {"a":1}\n\n'
    assert encode_chunk("[DONE]") == DONE_BYTES


def test_encode_chunk_with_a_preformatted_multiline_string() -> None:
    text = json.dumps({"a": [1, 2]}, indent=1)
    stream = encode_chunk(text)
    assert stream == b'data: {\ndata:  "a": [\ndata:   1,\ndata:   2\ndata:  ]\ndata: }\n\n'
    (event,) = reparse(stream)
    assert json.loads(event.data) == {"a": [1, 2]}


def test_done_bytes() -> None:
    assert DONE_BYTES == b"data: [DONE]\n\n"
    assert reparse(DONE_BYTES) == [ServerSentEvent("message", "[DONE]")]


def test_a_stream_of_encoded_units() -> None:
    units: list[ServerSentEvent | Heartbeat] = [
        Heartbeat("open"),
        ServerSentEvent("a", "1", "x", 5),
        ServerSentEvent("b", "2\n3", "y"),
        Heartbeat(""),
        ServerSentEvent(data="4"),
    ]
    stream = b"".join(encode(u, newline=nl) for u, nl in zip(units, ["\r", "\n", "\r\n", "\r", "\n"], strict=True))
    assert reparse(stream) == [
        Heartbeat("open"),
        ServerSentEvent("a", "1", "x", 5),
        ServerSentEvent("b", "2\n3", "y"),
        Heartbeat(""),
        ServerSentEvent("message", "4", "y"),  # ids are sticky
    ]
    assert reparse(stream[:-1]) == [*reparse(stream)[:-1], Truncated("partial-event", len(b"data: 4\n"))]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: encode(ServerSentEvent(data="x"), newline="\n\n"),
            r"newline must be one of \('\\n', '\\r\\n', '\\r'\), got '\\n\\n'",
        ),
        (lambda: encode(Heartbeat(), newline=""), "newline must be one of"),
        (lambda: encode(Heartbeat("a\nb")), r"a comment cannot contain a line break: 'a\\nb'"),
        (lambda: encode(Heartbeat("a\rb")), "a comment cannot contain a line break"),
        (
            lambda: encode(Truncated("partial-event", 1)),  # type: ignore[arg-type]
            r"encode\(\) takes ServerSentEvent or Heartbeat, not Truncated",
        ),
        (lambda: encode(b"data: x"), "not bytes"),  # type: ignore[arg-type]
        (lambda: encode(ServerSentEvent(event="")), "an empty event type reads back as 'message'"),
        (lambda: encode(ServerSentEvent(event="a\nb")), r"an event type cannot contain a line break: 'a\\nb'"),
        (lambda: encode(ServerSentEvent(event="a\r")), "an event type cannot contain a line break"),
        (lambda: encode(ServerSentEvent(id="1\r\n")), "an id cannot contain a line break"),
        (lambda: encode(ServerSentEvent(id="1\x002")), "an id containing U\\+0000 is ignored by every parser"),
        (lambda: encode(ServerSentEvent(retry=-1)), "retry must be a non-negative integer, got -1"),
        (lambda: encode(ServerSentEvent(data="a\ud800")), "U\\+D800 is a lone surrogate"),
        (lambda: encode(ServerSentEvent(event="\udfff")), "U\\+DFFF is a lone surrogate"),
        (lambda: encode(Heartbeat("\udc80")), "U\\+DC80 is a lone surrogate"),
        (lambda: encode_chunk({"a": float("nan")}), "payload cannot be written as JSON"),
        (lambda: encode_chunk({"a": object()}), "payload cannot be written as JSON: Object of type object"),
        (lambda: encode_chunk({"a": "\ud800"}), "U\\+D800 is a lone surrogate"),
        (lambda: encode_chunk({"a": 1}, event="a\nb"), "an event type cannot contain a line break"),
        (lambda: encode_chunk({"a": 1}, newline="\t"), "newline must be one of"),
    ],
)
def test_encode_refuses_what_cannot_read_back(call: Any, message: str) -> None:
    with pytest.raises(LocalProtocolError, match=message) as info:
        call()
    assert info.value.offset is None


def test_encode_chunk_refuses_a_cycle() -> None:
    payload: dict[str, Any] = {}
    payload["self"] = payload
    with pytest.raises(LocalProtocolError, match="payload cannot be written as JSON: Circular reference"):
        encode_chunk(payload)
