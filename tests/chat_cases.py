"""The rows of the ``ChatStream`` tables (``test_chat.py``,
``test_chat_errors.py``): the ``Case`` record, the reference loop that runs
one, and the payloads and events several rows share.  What each rule means
is in ``test_chat.py``'s docstring."""

from __future__ import annotations

import dataclasses

from helpers import chunkings, collect

from ssestate import (
    ChatStream,
    Delta,
    Finish,
    ToolCallFragment,
    Truncated,
    Usage,
)

TF = ToolCallFragment
EOF_TRUNC = Truncated("eof-before-done", 0)
SSE = "text/event-stream"


@dataclasses.dataclass(frozen=True)
class Case:
    body: bytes
    events: list[object]
    status: int = 200
    content_type: str = SSE
    strict: bool = True
    raises: bool = False  # RemoteProtocolError after ``events``


def usage(raw: dict[str, object]) -> Usage:
    def n(key: str) -> int:
        value = raw.get(key)
        return value if type(value) is int else 0

    return Usage(n("prompt_tokens"), n("completion_tokens"), n("total_tokens"), raw)


ROLE = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
STOP = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
HI = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
DONE = b"data: [DONE]\n\n"
D_ROLE = Delta(0, "", "assistant")
D_HI = Delta(0, "hi")
F_STOP = Finish(0, "stop")

U123 = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}

E400 = {"error": {"message": "bad request", "type": "invalid_request_error", "param": None, "code": "bad"}}
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello!", "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": U123,
}
COMPLETION_TOOLS = {
    "id": "chatcmpl-2",
    "object": "chat.completion",
    "created": 1700000001,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}},
                    {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
}
COMPLETION_N2 = {
    "object": "chat.completion",
    "choices": [
        {"index": 1, "message": {"role": "assistant", "content": "B"}, "finish_reason": "length"},
        {
            "index": 0,
            "message": {"role": "assistant", "content": "A", "reasoning_content": "think"},
            "finish_reason": "stop",
        },
    ],
    "usage": None,
}
BAD_BYTES = b"\xff\xfe upstream \xc3 exploded"
PARTIAL_LINE = b'data: {"choices":[{"index":0,"delta":{"content":"\xc3\xa9"}'
PARTIAL_BLOCK = b'data: {"choices":[]}\n'
PARTIAL_CRLF = b"event: error\r\ndata: x\r\n"
HTML = b"<html><body><h1>504 Gateway Time-out</h1></body></html>\n"


def check_case(case: Case) -> None:
    """``case`` under every chunking of ``helpers.chunkings``: its events, and
    its error (the same message and offset) each time."""
    first: tuple[list[object], str | None, int | None] | None = None
    for how, chunks in chunkings(case.body):
        stream = ChatStream(status_code=case.status, content_type=case.content_type, strict=case.strict)
        events, error = collect(stream, chunks)
        assert events == case.events, how
        assert (error is not None) == case.raises, f"{how}: {error!r}"
        outcome = (events, str(error) if error else None, error.offset if error else None)
        if first is None:
            first = outcome
        assert outcome == first, how
