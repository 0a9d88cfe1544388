"""Encoder: how each API's writer ends an answer (its finish words, its end
marker, its errors) and keeps a stream alive (its heartbeats), pinned on
the wire and read back through ``ChatStream``.
"""

from __future__ import annotations

from typing import Any

import pytest
from eventgen import DIALECTS, payloads, read_back, write

from ssestate import (
    Delta,
    Done,
    Encoder,
    Finish,
    Heartbeat,
    LocalProtocolError,
    StreamError,
    ToolCallFragment,
    Truncated,
    Usage,
)

# -- finish words --------------------------------------------------------------------------------------


def finish_written(dialect: str, finish: Finish, *before: Any) -> tuple[Any, str | None, str | None]:
    """The word ``dialect`` writes for ``finish`` and what reads back."""
    body = b"".join(write(dialect, [Delta(0, "", "assistant"), *before, finish, Done()]))
    acc, _ = read_back(dialect, body)
    last = payloads(body)[-1]
    if dialect == "anthropic":
        word = payloads(body)[-2]["delta"]["stop_reason"] if last["type"] == "message_stop" else None
    elif dialect == "openai-responses":
        word = (last["type"], last["response"]["incomplete_details"])
    else:
        word = last["candidates"][0].get("finishReason") if "candidates" in last else last
    choice = acc.choices[0]
    return word, choice.finish_reason, choice.native_finish_reason


CALL = ToolCallFragment(0, 0, "call_1", "f", "{}")


@pytest.mark.parametrize(
    ("finish", "before", "word", "reads"),
    [
        (Finish(0, "stop"), (), "end_turn", "stop"),
        (Finish(0, "tool_calls"), (), "tool_use", "tool_calls"),
        (Finish(0, "stop"), (CALL,), "end_turn", "tool_calls"),
        (Finish(0, "length"), (), "max_tokens", "length"),
        (Finish(0, "length", "model_context_window_exceeded"), (), "model_context_window_exceeded", "length"),
        (Finish(0, "stop", "stop_sequence"), (), "stop_sequence", "stop"),
        (Finish(0, "stop", "max_tokens"), (), "end_turn", "stop"),  # a native word that says otherwise
        (Finish(0, "content_filter", "SAFETY"), (), "refusal", "content_filter"),
        (Finish(0, "pause_turn", "pause_turn"), (), "pause_turn", "pause_turn"),
        (Finish(0, "function_call"), (), "function_call", "function_call"),
    ],
)
def test_anthropic_stop_reasons(finish: Finish, before: tuple[Any, ...], word: str, reads: str) -> None:
    assert finish_written("anthropic", finish, *before) == (word, reads, word)


@pytest.mark.parametrize(
    ("finish", "before", "word", "reads"),
    [
        (Finish(0, "stop"), (), "STOP", "stop"),
        (Finish(0, "tool_calls"), (CALL,), "STOP", "tool_calls"),
        (Finish(0, "length"), (), "MAX_TOKENS", "length"),
        (Finish(0, "content_filter"), (), "SAFETY", "content_filter"),
        (Finish(0, "content_filter", "RECITATION"), (), "RECITATION", "content_filter"),
        (Finish(0, "stop", "SAFETY"), (), "STOP", "stop"),
        (Finish(0, "MALFORMED_FUNCTION_CALL", "MALFORMED_FUNCTION_CALL"), (), "MALFORMED_FUNCTION_CALL", None),
        (Finish(0, "pause_turn", "pause_turn"), (), "pause_turn", "pause_turn"),
    ],
)
def test_gemini_finish_reasons(finish: Finish, before: tuple[Any, ...], word: str, reads: str | None) -> None:
    assert finish_written("gemini", finish, *before) == (word, reads or word, word)


@pytest.mark.parametrize(
    ("finish", "word", "reads", "native"),
    [
        (Finish(0, "stop"), ("response.completed", None), "stop", "completed"),
        (Finish(0, "pause_turn", "pause_turn"), ("response.completed", None), "stop", "completed"),
        (Finish(0, "length"), ("response.incomplete", {"reason": "max_output_tokens"}), "length", "max_output_tokens"),
        (
            Finish(0, "content_filter"),
            ("response.incomplete", {"reason": "content_filter"}),
            "content_filter",
            "content_filter",
        ),
        (Finish(0, "insufficient_system_resource"), ("response.failed", None), "error", "failed"),
    ],
)
def test_responses_terminal_events(finish: Finish, word: Any, reads: str, native: str) -> None:
    assert finish_written("openai-responses", finish) == (word, reads, native)


@pytest.mark.parametrize(("finish", "status"), [("stop", "completed"), ("length", "incomplete"),
                                                 ("content_filter", "incomplete")])  # fmt: skip
def test_a_responses_message_cut_short_ends_incomplete(finish: str, status: str) -> None:
    body = b"".join(write("openai-responses", [Delta(0, "Hi"), Finish(0, finish), Done()]))
    [done] = [p for p in payloads(body) if p["type"] == "response.output_item.done"]
    assert (done["item"]["type"], done["item"]["status"]) == ("message", status)
    assert payloads(body)[-1]["response"]["output"][0]["status"] == status
    # A tool call open when the answer is cut ends as the message does.
    body = b"".join(write("openai-responses", [Delta(0, "Hi"), CALL, Finish(0, finish), Done()]))
    assert [item["status"] for item in payloads(body)[-1]["response"]["output"]] == ["completed", status]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("first", "last"), [("length", "stop"), ("stop", "length"), ("content_filter", "stop")])
def test_a_finish_that_changes_reads_back_as_the_last_one(dialect: str, first: str, last: str) -> None:
    events = [Delta(0, "Hi"), Finish(0, first), Finish(0, last), Done()]
    body = b"".join(write(dialect, events))
    acc, _ = read_back(dialect, body)
    assert acc.choices[0].finish_reason == last
    if dialect == "openai-responses":
        # Every item says what the terminal event says.
        status = "incomplete" if last in ("length", "content_filter") else "completed"
        [done] = [p for p in payloads(body) if p["type"] == "response.output_item.done"]
        assert (done["item"]["status"], payloads(body)[-1]["response"]["output"][0]["status"]) == (status, status)


@pytest.mark.parametrize(
    ("more", "statuses"),
    [
        (Delta(0, "", None, "think"), ["completed", None]),  # a reasoning item: no status of its own
        (CALL, ["completed", "LAST"]),
        (Delta(0, "", None, None, "no"), ["LAST"]),  # a refusal goes on in the same message
    ],
)
@pytest.mark.parametrize("last", ["stop", "length"])
def test_a_responses_item_that_more_output_followed_ended_whole(more: Any, statuses: list[Any], last: str) -> None:
    # Whatever finish stood when the next item began, only the last item
    # takes the status of the finish the answer ended with.
    body = b"".join(write("openai-responses", [Delta(0, "Hi"), Finish(0, "length"), more, Finish(0, last), Done()]))
    want = [("incomplete" if last == "length" else "completed") if s == "LAST" else s for s in statuses]
    assert [item.get("status") for item in payloads(body)[-1]["response"]["output"]] == want


def test_a_responses_answer_that_failed_stays_failed() -> None:
    body = b"".join(write("openai-responses", [Delta(0, "Hi"), Finish(0, "error"), Finish(0, "stop"), Done()]))
    assert payloads(body)[-1]["type"] == "response.failed"
    acc, _ = read_back("openai-responses", body)
    assert (acc.choices[0].finish_reason, acc.outcome) == ("error", "error")


def test_chat_writes_the_finish_reason_as_it_is() -> None:
    assert finish_written("openai-chat", Finish(0, "insufficient_system_resource", "x"))[1:] == (
        "insufficient_system_resource",
        None,
    )


@pytest.mark.parametrize("dialect", ["anthropic", "gemini"])
def test_an_error_finish_is_written_as_the_api_writes_errors(dialect: str) -> None:
    body = b"".join(write(dialect, [Delta(0, "Hi"), Finish(0, "error"), Done()]))
    acc, events = read_back(dialect, body)
    [error] = [e for e in events if type(e) is StreamError]
    assert error.message == "the answer ended with finish reason 'error'"
    assert (acc.choices[0].content, acc.choices[0].finish_reason, acc.outcome) == ("Hi", None, "error")


def test_a_responses_failure_carries_the_error_of_the_stream() -> None:
    events = [Delta(0, "Hi"), StreamError(None, "server_error", "boom", "server_error"), Finish(0, "error")]
    body = b"".join(write("openai-responses", [*events, Finish(0, "stop"), Done()]))
    last = payloads(body)[-1]
    assert last["type"] == "response.failed"  # a later word does not undo that the server gave up
    assert last["response"]["error"] == {"code": "server_error", "message": "boom"}
    acc, _ = read_back("openai-responses", body)
    assert (acc.choices[0].finish_reason, acc.outcome) == ("error", "error")
    body = b"".join(write("openai-responses", [Delta(0, "Hi"), Finish(0, "error"), Done()]))
    assert payloads(body)[-1]["response"]["error"] == {
        "code": "server_error",
        "message": "the server gave up on the answer",
    }


def test_gemini_says_a_block_before_any_answer_as_a_blocked_prompt() -> None:
    for native, written in (("PROHIBITED_CONTENT", "PROHIBITED_CONTENT"), (None, "OTHER"), ("refusal", "OTHER")):
        body = b"".join(write("gemini", [Finish(0, "content_filter", native), Done()]))
        assert payloads(body) == [{"promptFeedback": {"blockReason": written}}]
        acc, _ = read_back("gemini", body)
        assert (acc.choices[0].finish_reason, acc.choices[0].native_finish_reason) == ("content_filter", written)
        assert acc.outcome == "filtered"


# -- the end of the stream ------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_done_before_the_answer_finished_reads_as_cut(dialect: str) -> None:
    acc, _ = read_back(dialect, b"".join(write(dialect, [Delta(0, "Hi"), Usage(1, 1, 2), Done()])))
    assert (acc.choices[0].content, acc.outcome) == ("Hi", "truncated")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_truncated_after_the_finish_reads_as_complete(dialect: str) -> None:
    events = [Delta(0, "Hi"), Finish(0, "stop"), Usage(3, 1, 4), Truncated("partial-event", 5)]
    acc, _ = read_back(dialect, b"".join(write(dialect, events)))
    assert (acc.choices[0].content, acc.choices[0].finish_reason, acc.outcome) == ("Hi", "stop", "complete")
    assert acc.usage is not None
    assert acc.usage.prompt_tokens == 3


@pytest.mark.parametrize(
    ("dialect", "wire"),
    [
        ("openai-chat", [b"data: [DONE]\n\n"]),
        ("openai-responses", ["response.created", "response.in_progress", "response.completed"]),
        ("anthropic", ["message_start", "message_delta", "message_stop"]),
        (
            "gemini",
            [
                {
                    "candidates": [
                        {"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}
                    ]
                }
            ],
        ),
    ],
)
def test_done_before_anything_is_an_empty_finished_answer(dialect: str, wire: list[Any]) -> None:
    [body] = write(dialect, [Done()])
    if dialect == "openai-chat":
        assert [body] == wire
        return
    got = payloads(body)
    assert (got if dialect == "gemini" else [p["type"] for p in got]) == wire
    acc, _ = read_back(dialect, body)
    assert (acc.choices[0].content, acc.choices[0].finish_reason, acc.outcome) == ("", "stop", "complete")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_error_before_any_answer_is_all_that_is_written(dialect: str) -> None:
    written = write(dialect, [Heartbeat("x"), StreamError(429, "rate_limited", "slow down", "rate_limit"), Done()])
    acc, events = read_back(dialect, b"".join(written))
    assert not acc.choices
    assert acc.outcome == "error"
    [error] = [e for e in events if type(e) is StreamError]
    assert error.message == "slow down"
    if dialect == "openai-chat":
        assert written[-1] == b"data: [DONE]\n\n"
    else:
        assert written[-1] == b""


# -- errors and heartbeats --------------------------------------------------------------------------------


ERROR = StreamError(503, "503", "overloaded", "overloaded_error")


@pytest.mark.parametrize(
    ("dialect", "wire", "fields"),
    [
        (
            "openai-chat",
            b'data: {"error":{"message":"overloaded","type":"overloaded_error","param":null,"code":"503"}}\n\n',
            ("503", "overloaded", "overloaded_error"),
        ),
        (
            "openai-responses",
            b'event: error\ndata: {"type":"error","code":"503","error":{"type":"overloaded_error","code":"503",'
            b'"message":"overloaded","param":null},"message":"overloaded","param":null,"sequence_number":0}\n\n',
            ("503", "overloaded", "overloaded_error"),
        ),
        (
            "anthropic",
            b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
            b'"message": "overloaded"}}\n\n',
            (None, "overloaded", "overloaded_error"),
        ),
        (
            "gemini",
            b'data: {"error": {"code": 503,"message": "overloaded","status": "overloaded_error"}}\r\n\r\n',
            ("503", "overloaded", "overloaded_error"),
        ),
    ],
)
def test_each_api_writes_its_own_error_shape(dialect: str, wire: bytes, fields: tuple[Any, ...]) -> None:
    assert write(dialect, [ERROR]) == [wire]
    _, events = read_back(dialect, wire)
    [error] = [e for e in events if type(e) is StreamError]
    assert (error.code, error.message, error.type) == fields


@pytest.mark.parametrize(
    ("error", "code"),
    [(StreamError(None, "429", "m"), 429), (StreamError(None, "rate", "m"), 500), (StreamError(None, "٣", "m"), 500)],
)
def test_gemini_error_codes_are_numbers(error: StreamError, code: int) -> None:
    [body] = write("gemini", [error])
    assert payloads(body) == [{"error": {"code": code, "message": "m"}}]


@pytest.mark.parametrize(
    ("dialect", "wire"),
    [
        ("openai-chat", [b": still here\n\n", b": still here\n\n"]),
        (
            "openai-responses",
            [b": still here\n\n", b'event: keepalive\ndata: {"type":"keepalive","sequence_number":2}\n\n'],
        ),
        ("anthropic", [b'event: ping\ndata: {"type": "ping"}\n\n'] * 2),
        ("gemini", [b"\r\n", b"\r\n"]),
    ],
)
def test_heartbeats(dialect: str, wire: list[bytes]) -> None:
    written = write(dialect, [Heartbeat("still here"), Delta(0, "", "assistant"), Heartbeat("still here")])
    assert [written[0], written[2]] == wire
    _, events = read_back(dialect, b"".join(written))
    assert sum(type(e) is Heartbeat for e in events) == (0 if dialect == "gemini" else 2)


@pytest.mark.parametrize("dialect", ["openai-chat", "openai-responses"])
def test_a_comment_with_a_line_break_is_refused(dialect: str) -> None:
    with pytest.raises(LocalProtocolError, match=r"event #1 \(Heartbeat\).*cannot contain a line break"):
        Encoder(dialect).feed(Heartbeat("a\nb"))


@pytest.mark.parametrize("dialect", ["anthropic", "gemini"])
def test_comment_text_is_not_written_where_keepalives_have_none(dialect: str) -> None:
    assert Encoder(dialect).feed(Heartbeat("a\nb")) in (b"\r\n", b'event: ping\ndata: {"type": "ping"}\n\n')
