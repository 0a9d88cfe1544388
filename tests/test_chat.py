"""``ChatStream``, rule by rule: exact bytes in, exact events out.

Each entry of ``CASES`` is a minimal body for one rule of SPEC §3 or one wire
quirk a real server has (see DIALECTS.md), with the HTTP head it comes with
and every event ``next_event()`` must hand out up to ``CLOSED`` (end of
stream included).  Every case is run under every chunking of
``helpers.chunkings`` and must give the same events, and the same error, each
time.  The tests after the table check what a table cannot: the offset in a
``RemoteProtocolError``, the refusal to go on after it, ``Done`` before end
of stream, metadata attributes, buffering of non-stream bodies.

Where SPEC §3 is silent these tests pin the following behaviour (each has a
case whose name starts with ``assumed-``):

1. ``role: ""`` is absent (no role), like ``id: ""`` and ``name: ""``.
2. ``reasoning_content: ""`` counts as absent, so a string ``reasoning``
   beside it is used.
3. ``finish_reason: ""`` is absent: no ``Finish``, the choice stays open.
4. A usage count that is not an integer (null, a string, a float) counts 0,
   like a missing one; ``usage: {}`` is not a usage.
5. A tool fragment that carries ``index`` keeps it whatever its ``id`` (the
   "a different id starts a new call" rule belongs to fragments without
   ``index``); an id-less fragment without ``index`` continues the call most
   recently started at its array position (the new one, once an id moved it).
6. ``arguments`` that is not a string (a JSON object, as some servers send)
   becomes its compact JSON text; ``arguments: null`` or missing is "".
7. A ``data`` payload that is JSON but not an object (``42``, ``null``,
   ``"x"``, ``[1]``) is not a chunk: ``RemoteProtocolError`` when strict,
   skipped otherwise -- the same as text that is not JSON.
8. A clean end of stream before any choice started (an empty 200 body, only
   heartbeats, only an error) is ``Truncated("eof-before-done")``, not
   ``Done``: nothing was answered.
9. When the stream ends inside an event, the one ``Truncated`` is
   ``"partial-event"``; no ``"eof-before-done"`` follows it.
10. A non-stream body that is not an error object gives ``message`` =
    ``HTTP <status> (<content type>): <repr of the text, cut after 120
    characters>`` (or ``an empty body``); a JSON object with ``message`` or
    ``detail`` but no ``error`` is read as the error object itself, and when
    it has no string ``message`` the message is the body's text.
11. A choice without ``index`` is read at its array position; entries of
    ``choices`` or ``tool_calls`` that are not objects are skipped.
12. An ``event: error`` whose data is a JSON object without an ``error``
    member is read as the error object itself.
13. An ``error`` member that is neither an object nor a string (a number, a
    list) gives its JSON text as ``message``.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from helpers import chunkings, feed_all

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


def run(stream: ChatStream, chunks: list[bytes]) -> tuple[list[object], RemoteProtocolError | None]:
    """Feed ``chunks`` then end of stream, draining after each; return the
    events before ``CLOSED`` and the ``RemoteProtocolError`` raised, if any
    (events handed out before it are kept)."""
    events: list[object] = []
    try:
        for chunk in chunks:
            stream.receive_data(chunk)
            while (event := stream.next_event()) is not NEED_DATA:
                assert event is not CLOSED, f"CLOSED before end of stream after {events!r}"
                events.append(event)
        stream.receive_data(b"")
        while (event := stream.next_event()) is not CLOSED:
            assert event is not NEED_DATA, f"NEED_DATA after end of stream after {events!r}"
            events.append(event)
    except RemoteProtocolError as exc:
        return events, exc
    return events, None


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

CASES: dict[str, Case] = {
    # --- the basic shapes ------------------------------------------------------------------
    "first-chunk-role-and-empty-content": Case(ROLE, [D_ROLE, EOF_TRUNC]),
    "content-chunks-then-finish-chunk-with-empty-delta": Case(
        ROLE
        + b'data: {"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n'
        + b'data: {"choices":[{"index":0,"delta":{"content":"lo \xe2\x9c\x93"},"finish_reason":null}]}\n\n'
        + STOP,
        [D_ROLE, Delta(0, "Hel"), Delta(0, "lo \u2713"), F_STOP, Done(False)],
    ),
    "usage-chunk-with-empty-choices-and-other-key-order": Case(
        ROLE
        + STOP
        + b'data: {"usage":{"total_tokens":3,"completion_tokens":2,"prompt_tokens":1},"choices":[],'
        + b'"object":"chat.completion.chunk","id":"x"}\n\n'
        + DONE,
        [D_ROLE, F_STOP, Usage(1, 2, 3, {"total_tokens": 3, "completion_tokens": 2, "prompt_tokens": 1}), Done()],
    ),
    "no-usage-at-all": Case(ROLE + HI + STOP + DONE, [D_ROLE, D_HI, F_STOP, Done()]),
    "choice-index-is-the-wire-index-not-the-position": Case(
        b'data: {"choices":[{"index":2,"delta":{"content":"c"},"finish_reason":"stop"}]}\n\n',
        [Delta(2, "c"), Finish(2, "stop"), Done(False)],
    ),
    # --- wire order ----------------------------------------------------------------------------
    "wire-order-choices-in-array-order-then-usage": Case(
        b'data: {"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},"choices":['
        b'{"finish_reason":"tool_calls","delta":{"tool_calls":['
        b'{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}},'
        b'{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}],"content":"x","role":"assistant"},'
        b'"index":1},'
        b'{"index":0,"delta":{"content":"y"},"finish_reason":"stop"}]}\n\n',
        [
            Delta(1, "x", "assistant"),
            TF(1, 1, "b", "g", "{}"),
            TF(1, 0, "a", "f", "{}"),
            Finish(1, "tool_calls"),
            Delta(0, "y"),
            Finish(0, "stop"),
            Usage(1, 2, 3, U123),
            Done(False),
        ],
    ),
    "n2-interleaved-index-1-first-each-chunk-only-what-changed": Case(
        b'data: {"choices":[{"index":1,"delta":{"role":"assistant","content":""}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
        b'data: {"choices":[{"index":1,"delta":{"content":"b1"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"a1"}}]}\n\n'
        b'data: {"choices":[{"index":1,"delta":{},"finish_reason":"stop"}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"a2"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n',
        [
            Delta(1, "", "assistant"),
            Delta(0, "", "assistant"),
            Delta(1, "b1"),
            Delta(0, "a1"),
            Finish(1, "stop"),
            Delta(0, "a2"),
            Finish(0, "length"),
            Done(False),
        ],
    ),
    "n2-one-choice-never-finished": Case(
        b'data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}\n\n'
        b'data: {"choices":[{"index":1,"delta":{"content":"b"}}]}\n\n',
        [Delta(0, "a"), F_STOP, Delta(1, "b"), EOF_TRUNC],
    ),
    # --- payloads that are empty or whitespace ------------------------------------------------------
    "empty-and-whitespace-data-ignored-even-when-strict": Case(
        ROLE + b"data:  \n\n" + b"data:\t\n\n" + b"data:\ndata:\n\n" + b"data\n\n" + b"data: \r\n \r\n\r\n" + STOP,
        [D_ROLE, F_STOP, Done(False)],
    ),
    # --- choices / delta / content variants ----------------------------------------------------------
    "choices-missing-null-or-empty": Case(
        ROLE
        + b'data: {"id":"c","object":"chat.completion.chunk"}\n\n'
        + b'data: {"choices":null}\n\n'
        + b'data: {"choices":[]}\n\n'
        + b"data: {}\n\n"
        + STOP,
        [D_ROLE, F_STOP, Done(False)],
    ),
    "delta-missing-with-finish": Case(
        HI + b'data: {"choices":[{"index":0,"finish_reason":"stop"}]}\n\n', [D_HI, F_STOP, Done(False)]
    ),
    "delta-null-with-finish": Case(
        HI + b'data: {"choices":[{"index":0,"delta":null,"logprobs":null,"finish_reason":"length"}]}\n\n',
        [D_HI, Finish(0, "length"), Done(False)],
    ),
    "delta-missing-or-null-without-finish": Case(
        HI
        + b'data: {"choices":[{"index":0,"finish_reason":null}]}\n\n'
        + b'data: {"choices":[{"index":0,"delta":null,"finish_reason":null}]}\n\n'
        + STOP,
        [D_HI, F_STOP, Done(False)],
    ),
    "content-null": Case(
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":null}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":null,"reasoning_content":null,"tool_calls":null,'
        b'"refusal":null,"role":null},"finish_reason":"stop"}]}\n\n',
        [D_ROLE, F_STOP, Done(False)],
    ),
    "unknown-fields-anywhere-ignored": Case(
        b'data: {"zz":1,"obfuscation":"Zk9","moderation":{"flagged":false},"choices":[{"native_finish_reason":null,'
        b'"index":0,"matched_stop":null,"delta":{"audio":null,"token_id":7,"role":"assistant","content":"x",'
        b'"tool_calls":[{"index":0,"id":"c","type":"function","extra":[1],"function":{"name":"f",'
        b'"arguments":"{}","strict":true}}]},"content_filter_results":{}}],"prompt_filter_results":[]}\n\n',
        [Delta(0, "x", "assistant"), TF(0, 0, "c", "f", "{}"), EOF_TRUNC],
    ),
    "fields-read-by-name-in-any-key-order": Case(
        b'data: {"choices":[{"finish_reason":"tool_calls","logprobs":null,"delta":{"tool_calls":'
        b'[{"function":{"arguments":"{}","name":"f"},"type":"function","id":"c","index":0}],'
        b'"content":"x","role":"assistant"},"index":0}]}\n\n',
        [Delta(0, "x", "assistant"), TF(0, 0, "c", "f", "{}"), Finish(0, "tool_calls"), Done(False)],
    ),
    # --- empty strings count as absent -----------------------------------------------------------
    "empty-content-reasoning-refusal-give-no-delta": Case(
        HI + b'data: {"choices":[{"index":0,"delta":{"content":"","reasoning":"","refusal":""}}]}\n\n' + STOP,
        [D_HI, F_STOP, Done(False)],
    ),
    "tool-call-empty-id-and-name-are-absent": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",'
        b'"function":{"name":"lookup","arguments":""}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"","type":"function",'
        b'"function":{"name":"","arguments":"{\\"q\\":1}"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"","function":{"name":"","arguments":"x"}}]}}]}'
        b"\n\n",
        [TF(0, 0, "call_1", "lookup", ""), TF(0, 0, None, None, '{"q":1}'), TF(0, 0, None, None, "x"), EOF_TRUNC],
    ),
    "assumed-1-empty-role-is-absent": Case(
        b'data: {"choices":[{"index":0,"delta":{"role":"","content":"x"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"role":""},"finish_reason":"stop"}]}\n\n',
        [Delta(0, "x"), F_STOP, Done(False)],
    ),
    # --- reasoning ----------------------------------------------------------------------------------
    "reasoning-content": Case(
        b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}\n\n',
        [Delta(0, reasoning="hmm"), EOF_TRUNC],
    ),
    "reasoning": Case(
        b'data: {"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]}\n\n', [Delta(0, reasoning="hmm"), EOF_TRUNC]
    ),
    "reasoning-content-wins-over-reasoning-never-both": Case(
        b'data: {"choices":[{"index":0,"delta":{"reasoning":"B","reasoning_content":"A"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"C","reasoning":"D",'
        b'"reasoning_details":[{"type":"reasoning.text","text":"D"}]}}]}\n\n',
        [Delta(0, reasoning="A"), Delta(0, reasoning="C"), EOF_TRUNC],
    ),
    "reasoning-content-null-falls-back-to-reasoning": Case(
        b'data: {"choices":[{"index":0,"delta":{"reasoning_content":null,"reasoning":"r"}}]}\n\n',
        [Delta(0, reasoning="r"), EOF_TRUNC],
    ),
    "reasoning-non-string-shapes-ignored": Case(
        b'data: {"choices":[{"index":0,"delta":{"reasoning_content":{"text":"obj"},"reasoning":"r"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"reasoning_content":{"text":"obj"}}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"reasoning":["a"],"reasoning_content":7}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"reasoning":{"text":"x"},"content":"c"}}]}\n\n',
        [Delta(0, reasoning="r"), Delta(0, "c"), EOF_TRUNC],
    ),
    "assumed-2-empty-reasoning-content-falls-back-to-reasoning": Case(
        b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"","reasoning":"r"}}]}\n\n',
        [Delta(0, reasoning="r"), EOF_TRUNC],
    ),
    "reasoning-and-content-in-one-delta": Case(
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"c","reasoning":"r"}}]}\n\n',
        [Delta(0, "c", "assistant", "r"), EOF_TRUNC],
    ),
    # --- refusal and logprobs ----------------------------------------------------------------------------
    "refusal": Case(
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"refusal":"I can\'t"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"refusal":null,"content":null},"finish_reason":"stop"}]}\n\n',
        [D_ROLE, Delta(0, refusal="I can't"), F_STOP, Done(False)],
    ),
    "logprobs-as-sent-on-the-delta": Case(
        b'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":{"content":[{"token":"Hi",'
        b'"logprob":-0.5,"bytes":[72,105],"top_logprobs":[]}],"refusal":null},"finish_reason":null}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"!"},"logprobs":null}]}\n\n',
        [
            Delta(
                0,
                "Hi",
                logprobs={
                    "content": [{"token": "Hi", "logprob": -0.5, "bytes": [72, 105], "top_logprobs": []}],
                    "refusal": None,
                },
            ),
            Delta(0, "!"),
            EOF_TRUNC,
        ],
    ),
    # --- tool calls ----------------------------------------------------------------------------------
    "tool-call-id-and-name-once-arguments-split-anywhere": Case(
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,'
        b'"id":"call_9","type":"function","function":{"name":"set","arguments":""}}]}}]}\n\n'
        # split inside a string value
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"na"}}]}}]}\n\n'
        # split inside a \u escape of the arguments text
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
        b'{"arguments":"me\\":\\"Z\\\\u0"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"0fc"}}]}}]}\n\n'
        # a character written raw (3 UTF-8 bytes), then a surrogate pair split across two fragments
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\xe2\x82\xac'
        b'\\ud83d"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\ude00\\"}"}}]}}]}'
        b"\n\n"
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n',
        [
            D_ROLE,
            TF(0, 0, "call_9", "set", ""),
            TF(0, 0, None, None, '{"na'),
            TF(0, 0, None, None, 'me":"Z\\u0'),
            TF(0, 0, None, None, "0fc"),
            TF(0, 0, None, None, "\u20ac\ud83d"),
            TF(0, 0, None, None, '\ude00"}'),
            Finish(0, "tool_calls"),
            Done(False),
        ],
    ),
    "tool-call-name-itself-split": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"get_"}}]}}]}'
        b"\n\n"
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"weather",'
        b'"arguments":"{}"}}]}}]}\n\n',
        [TF(0, 0, "c", "get_", ""), TF(0, 0, None, "weather", "{}"), EOF_TRUNC],
    ),
    "parallel-tool-calls-told-apart-by-index-even-interleaved": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f",'
        b'"arguments":""}},{"index":1,"id":"b","function":{"name":"g","arguments":"{\\"y"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\\":2}"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}\n\n',
        [
            TF(0, 0, "a", "f", ""),
            TF(0, 1, "b", "g", '{"y'),
            TF(0, 1, None, None, '":2}'),
            TF(0, 0, None, None, "{}"),
            EOF_TRUNC,
        ],
    ),
    "tool-calls-of-two-choices-each-from-index-0": Case(
        b'data: {"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g"}}]}},'
        b'{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f"}}]}}]}\n\n',
        [TF(1, 0, "b", "g", ""), TF(0, 0, "a", "f", ""), EOF_TRUNC],
    ),
    "single-tool-call-without-index": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"f",'
        b'"arguments":"{\\"a"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"\\":1}"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c1","function":{"arguments":""}}]}}]}\n\n',
        [TF(0, 0, "c1", "f", '{"a'), TF(0, 0, None, None, '":1}'), TF(0, 0, "c1", None, ""), EOF_TRUNC],
    ),
    "tool-calls-without-index-take-their-array-position": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},'
        b'{"id":"b","function":{"name":"g","arguments":"[]"}}]}}]}\n\n',
        [TF(0, 0, "a", "f", "{}"), TF(0, 1, "b", "g", "[]"), EOF_TRUNC],
    ),
    "tool-call-without-index-and-a-new-id-starts-a-new-call": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"1"}}]}}]}'
        b"\n\n"
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"2"}}]}}]}'
        b"\n\n"
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c","function":{"name":"h","arguments":"3"}}]}}]}'
        b"\n\n",
        [TF(0, 0, "a", "f", "1"), TF(0, 1, "b", "g", "2"), TF(0, 2, "c", "h", "3"), EOF_TRUNC],
    ),
    "tool-call-without-index-new-id-at-position-1-goes-to-next-free-index": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"f"}},'
        b'{"id":"b","function":{"name":"g"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"arguments":"1"}},'
        b'{"id":"c","function":{"name":"h","arguments":"3"}}]}}]}\n\n',
        [TF(0, 0, "a", "f", ""), TF(0, 1, "b", "g", ""), TF(0, 0, "a", None, "1"), TF(0, 2, "c", "h", "3"), EOF_TRUNC],
    ),
    "assumed-5-id-less-fragment-continues-the-call-that-moved": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"1"}}]}}]}'
        b"\n\n"
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{"}}]}}]}'
        b"\n\n"
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}\n\n',
        [TF(0, 0, "a", "f", "1"), TF(0, 1, "b", "g", "{"), TF(0, 1, None, None, "}"), EOF_TRUNC],
    ),
    "assumed-5-indexed-fragment-keeps-its-index-whatever-its-id": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"0","function":{"name":"f"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"1","function":{"name":"g"}}]}}]}\n\n',
        [TF(0, 0, "0", "f", ""), TF(0, 0, "1", "g", ""), EOF_TRUNC],
    ),
    "whole-tool-call-in-one-chunk": Case(
        b'data: {"choices":[{"index":0,"delta":{"content":"","tool_calls":[{"id":"call_x","index":0,'
        b'"type":"function","function":{"name":"f","arguments":"{\\"k\\":\\"\\\\u003c\\"}"}}]},'
        b'"finish_reason":"tool_calls"}]}\n\n',
        [TF(0, 0, "call_x", "f", '{"k":"\\u003c"}'), Finish(0, "tool_calls"), Done(False)],
    ),
    "tool-calls-null-or-empty-and-function-null": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":null}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function"}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":null}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
        b'{"name":null,"arguments":null}}]}}]}\n\n',
        [TF(0, 0, "c", None, ""), TF(0, 0, None, None, ""), TF(0, 0, None, None, ""), EOF_TRUNC],
    ),
    "assumed-6-arguments-object-becomes-compact-json-text": Case(
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f",'
        b'"arguments":{"city": "Paris", "n": [1, 2]}}}]}}]}\n\n',
        [TF(0, 0, "c", "f", '{"city":"Paris","n":[1,2]}'), EOF_TRUNC],
    ),
    # --- finish ----------------------------------------------------------------------------------------
    "finish-repeated-with-the-same-reason-is-emitted-once": Case(
        b'data: {"choices":[{"index":0,"delta":{"content":"36"},"finish_reason":"stop","matched_stop":151645}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"role":null,"content":null},"finish_reason":"stop"}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n' + DONE,
        [Delta(0, "36"), F_STOP, Done()],
    ),
    "finish-again-only-on-a-different-reason": Case(
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n',
        [F_STOP, Finish(0, "tool_calls"), Done(False)],
    ),
    "finish-null-never-unfinishes": Case(
        HI + STOP + b'data: {"choices":[{"index":0,"content_filter_results":{},"finish_reason":null}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":null}]}\n\n',
        [D_HI, F_STOP, Done(False)],
    ),
    "assumed-3-empty-finish-reason-is-absent": Case(
        HI + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":""}]}\n\n', [D_HI, EOF_TRUNC]
    ),
    # --- usage ---------------------------------------------------------------------------------------
    "usage-on-every-chunk-each-one-reported": Case(
        b'data: {"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"total_tokens":6,'
        b'"completion_tokens":1}}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,'
        b'"total_tokens":7,"completion_tokens":2}}\n\n',
        [
            Delta(0, "a"),
            Usage(5, 1, 6, {"prompt_tokens": 5, "total_tokens": 6, "completion_tokens": 1}),
            Delta(0, "b"),
            F_STOP,
            Usage(5, 2, 7, {"prompt_tokens": 5, "total_tokens": 7, "completion_tokens": 2}),
            Done(False),
        ],
    ),
    "usage-null-or-empty-is-no-usage": Case(
        HI + b'data: {"choices":[],"usage":null}\n\n' + b'data: {"choices":[],"usage":{}}\n\n' + STOP,
        [D_HI, F_STOP, Done(False)],
    ),
    "usage-missing-counts-are-0": Case(
        STOP + b'data: {"choices":[],"usage":{"prompt_tokens":7,"cost":0.1}}\n\n',
        [F_STOP, Usage(7, 0, 0, {"prompt_tokens": 7, "cost": 0.1}), Done(False)],
    ),
    "assumed-4-usage-counts-that-are-not-integers-are-0": Case(
        STOP + b'data: {"choices":[],"usage":{"prompt_tokens":null,"completion_tokens":"5","total_tokens":5.0}}\n\n',
        [F_STOP, Usage(0, 0, 0, {"prompt_tokens": None, "completion_tokens": "5", "total_tokens": 5.0}), Done(False)],
    ),
    "usage-on-a-chunk-with-choices-comes-after-them": Case(
        b'data: {"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},'
        b'"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}\n\n',
        [Delta(0, "x"), F_STOP, Usage(1, 2, 3, U123), Done(False)],
    ),
    "usage-litellm-synthetic-choice-with-empty-delta": Case(
        STOP + b'data: {"choices":[{"index":0,"delta":{}}],"usage":{"prompt_tokens":1,"completion_tokens":2,'
        b'"total_tokens":3}}\n\n' + DONE,
        [F_STOP, Usage(1, 2, 3, U123), Done()],
    ),
    "usage-in-x-groq": Case(
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"x_groq":{"id":"req_1","usage":'
        b'{"queue_time":0.01,"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}}\n\n'
        b'data: {"choices":[],"x_groq":{"id":"req_1"}}\n\n',
        [
            F_STOP,
            Usage(1, 2, 3, {"queue_time": 0.01, "prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}),
            Done(False),
        ],
    ),
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
    "assumed-7-json-that-is-not-an-object-strict": Case(HI + b"data: 42\n\n", [D_HI], raises=True),
    "assumed-7-json-null-strict": Case(b"data: null\n\n", [], raises=True),
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
    case = CASES[name]
    first: tuple[list[object], str | None, int | None] | None = None
    for how, chunks in chunkings(case.body):
        stream = ChatStream(status_code=case.status, content_type=case.content_type, strict=case.strict)
        events, error = run(stream, chunks)
        assert events == case.events, how
        assert (error is not None) == case.raises, f"{how}: {error!r}"
        outcome = (events, str(error) if error else None, error.offset if error else None)
        if first is None:
            first = outcome
        assert outcome == first, how


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
        events, error = run(ChatStream(), chunks)
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
            events, error = run(ChatStream(max_event_size=128), chunks)
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
