"""``ChatStream``, rule by rule: exact bytes in, exact events out.

Each entry of ``CASES`` is a minimal body for one rule of SPEC §3 or one wire
quirk a real server has (see DIALECTS.md), with the HTTP head it comes with
and every event ``next_event()`` must hand out up to ``CLOSED`` (end of
stream included).  Every case is run under every chunking of
``helpers.chunkings`` and must give the same events, and the same error, each
time.  This file holds the rows of well-formed streams (shapes, order,
choices, reasoning, refusal, tool calls, finish, usage);
``test_chat_errors.py`` the rows of errors, end markers, ends of stream and
bodies that are not streams, and what a table cannot check.

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
   ``"x"``, ``[1]``) is a chunk whose every field is absent: ignored, in
   strict mode too (only text that is not JSON is refused, SPEC §1).
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

import pytest
from chat_cases import (
    D_HI,
    D_ROLE,
    DONE,
    EOF_TRUNC,
    F_STOP,
    HI,
    ROLE,
    STOP,
    TF,
    U123,
    Case,
    check_case,
)

from ssestate import (
    Delta,
    Done,
    Finish,
    Usage,
)

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
}


@pytest.mark.parametrize("name", CASES)
def test_case_under_every_chunking(name: str) -> None:
    check_case(CASES[name])
