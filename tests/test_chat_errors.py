"""``ChatStream``, rule by rule, continued: errors inside the stream, the
``[DONE]`` marker, ends of stream, heartbeats, framing variants, payloads
that are not JSON and bodies that are not streams, as rows run like those of
``test_chat.py`` (whose docstring lists the rules these rows pin where SPEC
§3 is silent).  Then what a table cannot check: the offset in a
``RemoteProtocolError``, the refusal to go on after it, ``Done`` before end
of stream, metadata attributes, buffering of non-stream bodies, sizes.
"""

from __future__ import annotations

import json

import pytest
from chat_cases import (
    BAD_BYTES,
    COMPLETION,
    COMPLETION_N2,
    COMPLETION_TOOLS,
    D_HI,
    D_ROLE,
    DONE,
    E400,
    EOF_TRUNC,
    F_STOP,
    HI,
    HTML,
    PARTIAL_BLOCK,
    PARTIAL_CRLF,
    PARTIAL_LINE,
    ROLE,
    SSE,
    STOP,
    TF,
    U123,
    Case,
    check_case,
)
from helpers import chunkings, collect, feed_all

from ssestate import (
    CLOSED,
    NEED_DATA,
    ChatState,
    ChatStream,
    Delta,
    Done,
    Finish,
    Heartbeat,
    LocalProtocolError,
    RemoteProtocolError,
    StreamError,
    Truncated,
    Usage,
)

CASES: dict[str, Case] = {
    # --- errors inside the stream -----------------------------------------------------------------------
    "midstream-error-object": Case(
        HI + b'data: {"error": {"message": "boom", "type": "server_error", "param": null, "code": "overloaded"}}\n\n',
        [
            D_HI,
            StreamError(
                None,
                "overloaded",
                "boom",
                "server_error",
                {"error": {"message": "boom", "type": "server_error", "param": None, "code": "overloaded"}},
            ),
            EOF_TRUNC,
        ],
    ),
    "midstream-error-code-integer-becomes-string": Case(
        b'data: {"error":{"message":"m","type":"t","code":429}}\n\n' + DONE,
        [StreamError(None, "429", "m", "t", {"error": {"message": "m", "type": "t", "code": 429}}), Done()],
    ),
    "midstream-error-code-empty-null-or-absent-is-none": Case(
        b'data: {"error":{"message":"a","code":""}}\n\n'
        b'data: {"error":{"message":"b","code":null}}\n\n'
        b'data: {"error":{"message":"c"}}\n\n',
        [
            StreamError(None, None, "a", None, {"error": {"message": "a", "code": ""}}),
            StreamError(None, None, "b", None, {"error": {"message": "b", "code": None}}),
            StreamError(None, None, "c", None, {"error": {"message": "c"}}),
            EOF_TRUNC,
        ],
    ),
    "midstream-error-as-a-bare-string": Case(
        HI + b'data: {"error":"model crashed"}\n\n',
        [D_HI, StreamError(None, None, "model crashed", None, {"error": "model crashed"}), EOF_TRUNC],
    ),
    "error-member-null-or-empty-is-no-error": Case(
        b'data: {"error":null,"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
        b'data: {"error":{},"choices":[{"index":0,"delta":{"content":"b"}}]}\n\n'
        b'data: {"error":"","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
        [Delta(0, "a"), Delta(0, "b"), F_STOP, Done(False)],
    ),
    "error-after-the-same-chunks-choices-and-usage": Case(
        b'data: {"error":{"code":"server_error","message":"gone"},"usage":{"prompt_tokens":1,"completion_tokens":2,'
        b'"total_tokens":3},"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"error"}]}\n\n',
        [
            Delta(0, "x"),
            Finish(0, "error"),
            Usage(1, 2, 3, U123),
            StreamError(
                None,
                "server_error",
                "gone",
                None,
                {
                    "error": {"code": "server_error", "message": "gone"},
                    "usage": U123,
                    "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "error"}],
                },
            ),
            Done(False),
        ],
    ),
    "parsing-goes-on-after-a-midstream-error": Case(
        b'data: {"error":{"message":"transient"}}\n\n' + HI + STOP + DONE,
        [StreamError(None, None, "transient", None, {"error": {"message": "transient"}}), D_HI, F_STOP, Done()],
    ),
    "event-error-with-text-data": Case(
        HI + b"event: error\ndata: upstream timed out\n\n",
        [D_HI, StreamError(None, None, "upstream timed out", None, "upstream timed out"), EOF_TRUNC],
    ),
    "event-error-with-text-data-when-lenient": Case(
        b"event: error\ndata: upstream timed out\n\n" + HI + STOP,
        [StreamError(None, None, "upstream timed out", None, "upstream timed out"), D_HI, F_STOP, Done(False)],
        strict=False,
    ),
    "event-error-with-a-json-error-member": Case(
        b'event: error\ndata: {"error":{"message":"Failed","type":"invalid_request_error","code":"tool_use_failed",'
        b'"status_code":400}}\n\n',
        [
            StreamError(
                None,
                "tool_use_failed",
                "Failed",
                "invalid_request_error",
                {
                    "error": {
                        "message": "Failed",
                        "type": "invalid_request_error",
                        "code": "tool_use_failed",
                        "status_code": 400,
                    }
                },
            ),
            EOF_TRUNC,
        ],
    ),
    "error-member-is-an-error-whatever-the-event-name": Case(
        b'event: message\ndata: {"error":{"message":"x"}}\n\nevent: delta\ndata: {"error":{"message":"y"}}\n\n',
        [
            StreamError(None, None, "x", None, {"error": {"message": "x"}}),
            StreamError(None, None, "y", None, {"error": {"message": "y"}}),
            EOF_TRUNC,
        ],
    ),
    # --- [DONE] ------------------------------------------------------------------------------------------
    "done-then-more-bytes-ignored": Case(
        HI + DONE + HI + b'data: not json\n\nevent: error\ndata: late\n\n: ping\n\ndata: {"partial',
        [D_HI, Done()],
    ),
    "done-with-surrounding-ascii-whitespace": Case(HI + b"data:  \t[DONE] \t \n\n", [D_HI, Done()]),
    "done-split-over-data-lines-is-not-done": Case(HI + b"data: [DO\ndata: NE]\n\n", [D_HI], raises=True),
    "done-with-a-suffix-is-not-done": Case(HI + STOP + b"data: [DONE]x\n\n", [D_HI, F_STOP], raises=True),
    "done-with-a-suffix-skipped-when-lenient": Case(
        HI + STOP + b"data: [DONE]x\n\n", [D_HI, F_STOP, Done(False)], strict=False
    ),
    "done-lowercase-is-not-done": Case(HI + b"data: [done]\n\n", [D_HI], raises=True),
    "done-while-a-choice-is-unfinished-is-still-done": Case(HI + DONE, [D_HI, Done()]),
    "done-under-another-event-name": Case(HI + b"event: end\ndata: [DONE]\n\n", [D_HI, Done()]),
    "done-under-event-error-is-still-done": Case(HI + b"event: error\ndata: [DONE]\n\n" + HI, [D_HI, Done()]),
    # --- end of stream -------------------------------------------------------------------------------------
    "clean-end-after-every-choice-finished": Case(HI + STOP, [D_HI, F_STOP, Done(False)]),
    "clean-end-with-a-choice-unfinished": Case(ROLE + HI, [D_ROLE, D_HI, EOF_TRUNC]),
    "end-inside-an-unterminated-line": Case(HI + PARTIAL_LINE, [D_HI, Truncated("partial-event", len(PARTIAL_LINE))]),
    "end-after-a-line-but-before-the-blank-line": Case(
        HI + STOP + PARTIAL_BLOCK, [D_HI, F_STOP, Truncated("partial-event", len(PARTIAL_BLOCK))]
    ),
    "end-inside-a-crlf-block-after-a-comment": Case(
        HI + b": ping\r\n" + PARTIAL_CRLF, [D_HI, Heartbeat("ping"), Truncated("partial-event", len(PARTIAL_CRLF))]
    ),
    "end-after-a-comment-is-clean": Case(HI + STOP + b": ping\n", [D_HI, F_STOP, Heartbeat("ping"), Done(False)]),
    "assumed-8-empty-body-is-truncated": Case(b"", [EOF_TRUNC]),
    "assumed-8-only-heartbeats-is-truncated": Case(b": ping\n\n:\n\n", [Heartbeat("ping"), Heartbeat(""), EOF_TRUNC]),
    "assumed-8-only-an-error-is-truncated": Case(
        b'data: {"error":{"message":"no"}}\n\n',
        [StreamError(None, None, "no", None, {"error": {"message": "no"}}), EOF_TRUNC],
    ),
    # --- heartbeats ---------------------------------------------------------------------------------------
    "heartbeats": Case(
        b": ping\n\n: OPENROUTER PROCESSING\n\n:\n\n: keep-alive\r\n\r\n:no space\n\n" + HI + b": \n\n" + STOP,
        [
            Heartbeat("ping"),
            Heartbeat("OPENROUTER PROCESSING"),
            Heartbeat(""),
            Heartbeat("keep-alive"),
            Heartbeat("no space"),
            D_HI,
            Heartbeat(""),
            F_STOP,
            Done(False),
        ],
    ),
    # --- framing variants the chat layer must not care about --------------------------------------------------
    "data-without-space-cr-line-endings-and-bom": Case(
        b"\xef\xbb\xbfdata:" + HI[6:-2] + b"\r\r" + b"data:" + STOP[6:-2] + b"\r\rdata:[DONE]\r\r",
        [D_HI, F_STOP, Done()],
    ),
    "invalid-utf8-in-a-payload-becomes-u-fffd": Case(
        b'data: {"choices":[{"index":0,"delta":{"content":"a\xffb\xe2\x82"},"finish_reason":"stop"}]}\n\n',
        [Delta(0, "a\ufffdb\ufffd"), F_STOP, Done(False)],
    ),
    "json-payload-spread-over-data-lines": Case(
        b'data: {"choices":[{"index":0,\ndata: "delta":{"content":"x"}}]}\n\n', [Delta(0, "x"), EOF_TRUNC]
    ),
    "assumed-11-choice-without-index-at-its-position": Case(
        b'data: {"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}\n\n',
        [Delta(0, "x"), F_STOP, Done(False)],
    ),
    "assumed-11-entries-that-are-not-objects-are-skipped": Case(
        b'data: {"choices":[null,7,"x",{"index":0,"delta":{"tool_calls":[null,[],{"index":0,"id":"c",'
        b'"function":{"name":"f"}}]},"finish_reason":"tool_calls"}]}\n\n',
        [TF(0, 0, "c", "f", ""), Finish(0, "tool_calls"), Done(False)],
    ),
    "json-payload-with-leading-whitespace": Case(
        b'data:  \t {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]} \n\n',
        [Delta(0, "x"), F_STOP, Done(False)],
    ),
    "assumed-12-event-error-with-a-json-object-without-error-member": Case(
        b'event: error\ndata: {"type":"overloaded_error","message":"Overloaded","code":529}\n\n',
        [
            StreamError(
                None,
                "529",
                "Overloaded",
                "overloaded_error",
                {"type": "overloaded_error", "message": "Overloaded", "code": 529},
            ),
            EOF_TRUNC,
        ],
    ),
    "assumed-13-error-member-that-is-a-number-or-a-list": Case(
        b'data: {"error":500}\n\ndata: {"error":["a",1]}\n\n',
        [
            StreamError(None, None, "500", None, {"error": 500}),
            StreamError(None, None, '["a", 1]', None, {"error": ["a", 1]}),
            EOF_TRUNC,
        ],
    ),
    # --- not JSON ----------------------------------------------------------------------------------------------
    "not-json-strict-raises-after-earlier-events": Case(HI + b"data: {oops\n\n" + STOP, [D_HI], raises=True),
    "not-json-lenient-skipped": Case(HI + b"data: {oops\n\n" + STOP, [D_HI, F_STOP, Done(False)], strict=False),
    "json-with-trailing-garbage-is-not-json": Case(HI + b'data: {"choices":[]} x\n\n', [D_HI], raises=True),
    "assumed-7-json-that-is-not-an-object-strict": Case(
        HI + b'data: 42\n\ndata: null\n\ndata: "x"\n\ndata: [1]\n\n' + STOP, [D_HI, F_STOP, Done(False)]
    ),
    "assumed-7-json-null-strict": Case(b"data: null\n\n", [EOF_TRUNC]),  # nothing was answered (8)
    "assumed-7-json-that-is-not-an-object-lenient": Case(
        HI + b'data: 42\n\ndata: null\n\ndata: "x"\n\ndata: [1]\n\n' + STOP, [D_HI, F_STOP, Done(False)], strict=False
    ),
    # --- bodies that are not streams ----------------------------------------------------------------------------
    "http-400-openai-error-object": Case(
        json.dumps(E400, indent=2).encode(),
        [StreamError(400, "bad", "bad request", "invalid_request_error", E400)],
        status=400,
        content_type="application/json",
    ),
    "http-500-bare-string-error": Case(
        b'{"error":"model not loaded"}',
        [StreamError(500, None, "model not loaded", None, {"error": "model not loaded"})],
        status=500,
        content_type="application/json",
    ),
    "http-504-html": Case(
        HTML,
        [StreamError(504, None, "HTTP 504 (text/html; charset=utf-8): " + repr(HTML.decode()), None, HTML.decode())],
        status=504,
        content_type="text/html; charset=utf-8",
    ),
    "http-502-empty-body": Case(
        b"",
        [StreamError(502, None, "HTTP 502 (text/plain): an empty body", None, "")],
        status=502,
        content_type="text/plain",
    ),
    "http-500-bytes-that-are-not-utf8": Case(
        BAD_BYTES,
        [
            StreamError(
                500,
                None,
                "HTTP 500 (text/plain): " + repr(BAD_BYTES.decode("utf-8", "replace")),
                None,
                BAD_BYTES.decode("utf-8", "replace"),
            )
        ],
        status=500,
        content_type="text/plain",
    ),
    # Gemini writes an error body as a list of one error object.
    "http-500-json-list": Case(
        b'[{"error":"x"}]',
        [StreamError(500, None, "x", None, [{"error": "x"}])],
        status=500,
        content_type="application/json",
    ),
    "http-500-json-number": Case(
        b"42",
        [StreamError(500, None, "HTTP 500 (application/json): '42'", None, 42)],
        status=500,
        content_type="application/json",
    ),
    "assumed-10-http-404-fastapi-detail": Case(
        b'{"detail":"Not Found"}',
        [StreamError(404, None, '{"detail":"Not Found"}', None, {"detail": "Not Found"})],
        status=404,
        content_type="application/json",
    ),
    "assumed-10-http-400-unwrapped-error-object": Case(
        b'{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}',
        [
            StreamError(
                400,
                "400",
                "bad",
                "BadRequestError",
                {"object": "error", "message": "bad", "type": "BadRequestError", "param": None, "code": 400},
            )
        ],
        status=400,
        content_type="application/json",
    ),
    "http-429-with-an-event-stream-content-type-is-still-an-error": Case(
        b'data: {"error":{"message":"slow down"}}\n\n',
        [
            StreamError(
                429,
                None,
                "HTTP 429 (text/event-stream): " + repr('data: {"error":{"message":"slow down"}}\n\n'),
                None,
                'data: {"error":{"message":"slow down"}}\n\n',
            )
        ],
        status=429,
    ),
    "http-500-json-error-with-event-stream-content-type": Case(
        b'{"error":{"message":"down","code":503}}',
        [StreamError(500, "503", "down", None, {"error": {"message": "down", "code": 503}})],
        status=500,
    ),
    "http-200-text-plain-is-an-error": Case(
        b"hello", [StreamError(200, None, "HTTP 200 (text/plain): 'hello'", None, "hello")], content_type="text/plain"
    ),
    "http-200-json-error-object": Case(
        b'{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}',
        [
            StreamError(
                200,
                "insufficient_quota",
                "quota",
                "insufficient_quota",
                {"error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}},
            )
        ],
        content_type="application/json",
    ),
    "http-500-chat-completion-is-not-a-downgrade": Case(
        json.dumps(COMPLETION).encode(),
        [
            StreamError(
                500,
                None,
                "HTTP 500 (application/json): " + repr(json.dumps(COMPLETION)[:120] + "..."),
                None,
                COMPLETION,
            )
        ],
        status=500,
        content_type="application/json",
    ),
    # --- a whole chat.completion where a stream was asked for ------------------------------------------------
    "downgrade-text": Case(
        json.dumps(COMPLETION).encode(),
        [Delta(0, "Hello!", "assistant"), F_STOP, Usage(1, 2, 3, U123), Done(False)],
        content_type="application/json",
    ),
    "downgrade-tool-calls-indexed-by-position": Case(
        json.dumps(COMPLETION_TOOLS, indent=1).encode(),
        [
            D_ROLE,
            TF(0, 0, "call_a", "f", '{"x":1}'),
            TF(0, 1, "call_b", "g", "{}"),
            Finish(0, "tool_calls"),
            Done(False),
        ],
        content_type="Application/JSON; charset=utf-8",
    ),
    "downgrade-two-choices-in-array-order-with-reasoning": Case(
        json.dumps(COMPLETION_N2).encode(),
        [Delta(1, "B", "assistant"), Finish(1, "length"), Delta(0, "A", "assistant", "think"), F_STOP, Done(False)],
        status=201,
        content_type="application/json",
    ),
    "downgrade-with-entries-that-are-not-objects": Case(
        b'{"object":"chat.completion","choices":[null,{"index":0,"message":null,"finish_reason":"stop"},'
        b'{"index":1,"message":{"role":"assistant","content":"b","tool_calls":[null,{"id":"t","function":'
        b'{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}',
        [F_STOP, Delta(1, "b", "assistant"), TF(1, 1, "t", "f", "{}"), Finish(1, "tool_calls"), Done(False)],
        content_type="application/json",
    ),
    # --- content types that are event streams --------------------------------------------------------
    "content-type-with-charset": Case(
        HI + STOP, [D_HI, F_STOP, Done(False)], content_type="text/event-stream; charset=utf-8"
    ),
    "content-type-in-other-case": Case(
        HI + STOP, [D_HI, F_STOP, Done(False)], content_type="Text/Event-Stream;Charset=UTF-8"
    ),
    "status-201-is-2xx": Case(HI + STOP, [D_HI, F_STOP, Done(False)], status=201),
}


@pytest.mark.parametrize("name", CASES)
def test_case_under_every_chunking(name: str) -> None:
    check_case(CASES[name])


# --- RemoteProtocolError: where, and what follows ------------------------------------------------------------

BEFORE = (
    b"\xef\xbb\xbf: \xc3\xa9t\xc3\xa9 ping\r\n\r\n"
    + b'data: {"choices":[{"index":0,"delta":{"content":"\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2\xe5\xad\x97"}}]}\r\n\r\n'
    + b": \xf0\x9f\x98\x80\r\n\r\n"
)
BAD = b"event: x\r\ndata: not \xe2\x9c\x93 json\r\n\r\n"
AFTER = b'data: {"choices":[{"index":0,"delta":{"content":"late"}}]}\r\n\r\n'


def test_not_json_error_names_a_byte_offset_inside_the_bad_event() -> None:
    body = BEFORE + BAD + AFTER
    start, end = len(BEFORE), len(BEFORE) + len(BAD)
    for how, chunks in chunkings(body):
        events, error = collect(ChatStream(), chunks)
        assert events == [
            Heartbeat("\u00e9t\u00e9 ping"),
            Delta(0, "\u6f22\u5b57\u6f22\u5b57"),
            Heartbeat("\U0001f600"),
        ]
        assert isinstance(error, RemoteProtocolError), how
        assert error.offset is not None and start <= error.offset <= end, (how, error.offset)
        assert str(error.offset) in str(error), how


def test_not_json_error_poisons_the_machine() -> None:
    stream = ChatStream()
    stream.receive_data(HI + b"data: nope\n\n" + HI)
    assert stream.next_event() == D_HI  # handed out before the error: not lost
    with pytest.raises(RemoteProtocolError):
        stream.next_event()
    with pytest.raises(LocalProtocolError):
        stream.next_event()
    with pytest.raises(LocalProtocolError):
        stream.receive_data(HI)
    with pytest.raises(LocalProtocolError):
        stream.receive_data(b"")
    with pytest.raises(LocalProtocolError):
        stream.next_event()


def test_receive_data_after_end_of_stream_is_refused() -> None:
    stream = ChatStream()
    assert feed_all(stream, [HI + STOP]) == [D_HI, F_STOP, Done(False), CLOSED]
    stream.receive_data(b"")  # end of stream may repeat
    with pytest.raises(LocalProtocolError):
        stream.receive_data(HI)


# --- latency: nothing waits for later bytes ------------------------------------------------------------


def test_done_is_handed_out_at_once_on_a_connection_that_stays_open() -> None:
    stream = ChatStream()
    assert feed_all(stream, [ROLE + HI + DONE], eof=False) == [D_ROLE, D_HI, Done()]
    for _ in range(3):
        assert stream.next_event() is NEED_DATA
    stream.receive_data(b'data: {"choices":[{"index":0,"delta":{"content":"late"}}]}\n\ndata: garbage\n\n')
    assert stream.next_event() is NEED_DATA
    stream.receive_data(b"")
    assert stream.next_event() is CLOSED
    assert stream.next_event() is CLOSED


def test_each_event_is_available_as_soon_as_its_blank_line_arrives() -> None:
    body = ROLE + HI + STOP + DONE
    stream = ChatStream()
    got: list[object] = []
    for i in range(len(body)):
        stream.receive_data(body[i : i + 1])
        while (event := stream.next_event()) is not NEED_DATA:
            got.append(event)
        complete = body[: i + 1].count(b"\n\n")
        assert len(got) == complete, i
    assert got == [D_ROLE, D_HI, F_STOP, Done()]


@pytest.mark.parametrize(
    ("status", "content_type", "body"),
    [
        (400, "application/json", json.dumps(E400).encode()),
        (200, "application/json", json.dumps(COMPLETION).encode()),
        (503, SSE, HI + STOP),
    ],
)
def test_bodies_that_are_not_streams_are_read_only_at_end_of_stream(
    status: int, content_type: str, body: bytes
) -> None:
    stream = ChatStream(status_code=status, content_type=content_type)
    for i in range(len(body)):
        stream.receive_data(body[i : i + 1])
        assert stream.next_event() is NEED_DATA
    stream.receive_data(b"")
    events = list(iter(stream.next_event, CLOSED))
    assert events and NEED_DATA not in events
    assert isinstance(events[-1], (StreamError, Done))


# --- metadata attributes -----------------------------------------------------------------------------


def metadata(stream: ChatStream) -> tuple[object, object, object, object]:
    return stream.response_id, stream.model, stream.created, stream.system_fingerprint


def test_metadata_is_none_before_any_chunk() -> None:
    stream = ChatStream()
    assert metadata(stream) == (None, None, None, None)
    feed_all(stream, [b": ping\n\n"])
    assert metadata(stream) == (None, None, None, None)


def test_metadata_treats_empty_and_zero_as_absent_and_keeps_the_first() -> None:
    body = (
        b'data: {"choices":[],"created":0,"id":"","model":"","object":"","system_fingerprint":null,'
        b'"prompt_filter_results":[]}\n\n'
        b'data: {"id":"chatcmpl-1","created":1700000000,"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
        b'data: {"id":"chatcmpl-2","created":1700000099,"model":"m-1","system_fingerprint":"",'
        b'"choices":[{"index":0,"delta":{}}]}\n\n'
        b'data: {"id":"","model":"m-2","created":0,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b'data: {"id":"chatcmpl-3","model":"m-3","system_fingerprint":"fp_1","choices":[],"usage":null}\n\n'
        b'data: {"system_fingerprint":"fp_2","choices":[]}\n\n'
    )
    for how, chunks in chunkings(body):
        stream = ChatStream()
        feed_all(stream, chunks)
        assert metadata(stream) == ("chatcmpl-1", "m-1", 1700000000, "fp_1"), how


def test_metadata_is_set_by_the_chunk_that_carries_it() -> None:
    stream = ChatStream()
    stream.receive_data(b'data: {"id":"a","model":"m","created":5,"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n')
    assert stream.next_event() == Delta(0, "x")
    assert metadata(stream) == ("a", "m", 5, None)


def test_metadata_of_a_downgraded_completion() -> None:
    stream = ChatStream(content_type="application/json")
    feed_all(stream, [json.dumps({**COMPLETION, "system_fingerprint": "fp_9"}).encode()])
    assert metadata(stream) == ("chatcmpl-1", "m", 1700000000, "fp_9")


def test_metadata_of_an_error_body_stays_none() -> None:
    stream = ChatStream(status_code=400, content_type="application/json")
    feed_all(stream, [json.dumps({"id": "x", "model": "m", "created": 1, **E400}).encode()])
    assert metadata(stream) == (None, None, None, None)


# --- size limits -----------------------------------------------------------------------------------------


def test_an_event_larger_than_max_event_size_is_refused() -> None:
    big = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 200 + b'"}}]}\n\n'
    # The limit bounds what an *unfinished* event holds (SPEC §2), so it is
    # checked on cuts that leave the big event unfinished past 128 bytes.
    for how, chunks in chunkings(HI + big):
        if how in ("bytewise", "fixed-7", "random-16"):
            events, error = collect(ChatStream(max_event_size=128), chunks)
            assert events == [D_HI], how
            assert isinstance(error, RemoteProtocolError), how
    stream = ChatStream(max_event_size=128)
    stream.receive_data(big[:150])
    with pytest.raises(RemoteProtocolError):
        stream.next_event()
    with pytest.raises(LocalProtocolError):
        stream.next_event()


def test_a_body_that_is_not_a_stream_is_bounded_by_max_event_size() -> None:
    stream = ChatStream(status_code=500, content_type="text/html", max_event_size=64)
    stream.receive_data(b"<p>" + b"x" * 100 + b"</p>")
    with pytest.raises(RemoteProtocolError) as info:
        stream.next_event()
    assert info.value.offset is not None and str(info.value.offset) in str(info.value)
    with pytest.raises(LocalProtocolError):
        stream.receive_data(b"more")


@pytest.mark.parametrize("status", [200, 400])
def test_a_whole_body_may_start_with_a_byte_order_mark(status: int) -> None:
    # json.loads(bytes) skips one, and so do clients that parse the bytes.
    body = json.dumps(COMPLETION if status == 200 else E400).encode()
    plain = feed_all(ChatStream(status, "application/json"), [body])
    for how, chunks in chunkings(b"\xef\xbb\xbf" + body):
        assert feed_all(ChatStream(status, "application/json"), chunks) == plain, how
    if status == 200:
        assert not any(type(e) is StreamError for e in plain)
    else:
        assert [(e.status, e.code) for e in plain if type(e) is StreamError] == [(400, "bad")]


def test_the_content_type_may_be_missing_or_bytes() -> None:
    # None: the response has no Content-Type (what getheader() gives then);
    # bytes: a header value as h11 hands it out.
    assert ChatStream(200, None).state is ChatState.BUFFERING
    assert ChatStream(200, None).content_type == ""
    stream = ChatStream(200, b"text/event-stream; charset=utf-8")
    assert (stream.state, stream.content_type) == (ChatState.STREAMING, "text/event-stream; charset=utf-8")
    events = feed_all(ChatStream(502, None), [b"Bad gateway"])
    assert type(events[0]) is StreamError
    assert "no content type" in events[0].message
