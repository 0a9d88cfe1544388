"""``ssestate inspect``: every capture explained, every problem flagged,
every outcome but "complete" given its reason, plain event streams
summarised as such.  Subprocess runs show what a user sees; in-process runs
(``call``) cover the rest of the command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import ANSI, call, no_traceback, run

from ssestate.testing import SCENARIOS, expected_outcome, random_choice, scenario, serve

pytestmark = pytest.mark.network


def _capture(tmp_path: Path, name: str, seed: int = 0) -> tuple[Path, list[str]]:
    """Write a scenario's body to a file; return it and the options that
    describe its response head."""
    script = scenario(name, seed)
    path = tmp_path / f"{name}.txt"
    path.write_bytes(script.body())
    return path, ["--status", str(script.status), "--content-type", script.content_type]


@pytest.mark.parametrize("name", SCENARIOS)
def test_inspect_every_scenario_capture(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> None:
    path, head = _capture(tmp_path, name)
    proc = call(monkeypatch, "inspect", str(path), *head, "--chunk", "1", "--random-chunks", "7")
    no_traceback(proc)
    outcome = expected_outcome(name)
    assert proc.returncode == (0 if outcome == "complete" else 1), proc.stdout
    assert f"\noutcome: {outcome}\n" in proc.stdout
    assert re.search(r"^re-fed in 1-byte chunks: the same \d+ events?$", proc.stdout, re.MULTILINE)
    assert re.search(r"^re-fed in \d+ random chunks \(seed 7\): the same \d+ events?$", proc.stdout, re.MULTILINE)
    assert not ANSI.search(proc.stdout)
    base = random_choice(0) if name == "random" else name
    problems = proc.stdout.partition("\nproblems")[2]
    flags = {
        "no-done": "warning: byte {n}: no [DONE]: the stream just ended",
        "drop-mid-event": "error: byte {n}: truncated: the body ends inside an event",
        "error-503": "error: byte {n}: error HTTP 503: an HTML page: 503 Service Temporarily Unavailable",
        "error-401": "error: byte {n}: error HTTP 401 [invalid_api_key]: Incorrect API key provided",
    }
    if base in flags:
        assert flags[base].format(n=path.stat().st_size) in problems
    elif base in ("text", "cjk", "tools", "parallel-tools", "n2", "length", "reasoning", "crlf"):
        assert "problems: none" in proc.stdout
    reasons = {
        "complete": None,
        "length": "reason: choice 0 stopped at max_tokens (finish_reason length)",
        "truncated": "reason: the body ends inside an event (",
        "error": "reason: error HTTP ",
    }
    reason = reasons[outcome]
    if base == "error-mid-stream":  # a 200 whose stream carries the error
        reason = "reason: error in the stream: The server had an error processing your request."
    if reason is None:
        assert "\nreason: " not in proc.stdout
    else:
        assert proc.stdout.splitlines()[-1].startswith(reason)


def test_inspect_shows_timeline_and_final_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path, head = _capture(tmp_path, "parallel-tools")
    proc = call(monkeypatch, "inspect", str(path), *head)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{path}: {path.stat().st_size} bytes · status 200 · text/event-stream"
    assert lines[-1] == "outcome: complete"
    assert re.search(r"^ +\d+  ToolCallFragment  #0\.0 call_[0-9a-f]+ get_weather \"\"$", proc.stdout, re.MULTILINE)
    assert re.search(r"^ +\d+  ToolCallFragment  #0\.1 call_[0-9a-f]+ get_time \"\"$", proc.stdout, re.MULTILINE)
    assert re.search(rf"^ +{path.stat().st_size}  Done +\[DONE\]$", proc.stdout, re.MULTILINE)
    assert re.search(
        r'^    tool call 0: get_weather \(call_\w+\) \{"city":"東京","days":3\}  ✓ JSON$', proc.stdout, re.M
    )
    assert re.search(r'^    tool call 1: get_time \(call_\w+\) \{"timezone":"Asia/Tokyo"\}  ✓ JSON$', proc.stdout, re.M)


BAD = (
    b'\xef\xbb\xbfdata: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\r\r'  # BOM, lone CRs
    b"data: not json\n\n"
    b'error: {"x":1}\n'
    b'data: {"choices":[{"index":0,"delta":{"content":"\xff"},"finish_reason":"stop"}]}\n\n'  # bad UTF-8
    b"data: [DONE]\n\n"
    b'data: {"choices":[]}\n\n'  # after [DONE]
    b"\xef\xbb\xbfdata: x\n\n"  # a BOM starting a line
)


def test_inspect_flags_every_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    proc = call(monkeypatch, "inspect", "-", "--chunk", "1", stdin=BAD)
    assert proc.returncode == 1  # complete, but a payload had to be skipped
    assert proc.stdout.splitlines()[0] == f"stdin: {len(BAD)} bytes · status 200 · text/event-stream"
    problems = proc.stdout.partition("\nproblems (7)\n")[2].splitlines()[:7]
    assert problems == [
        "  warning: byte 0: the stream starts with a UTF-8 BOM: WHATWG parsers drop it, naive ones read the first "
        "field name as '\\ufeffdata' and lose the first event",
        "  warning: byte 59: 2 lines end in a lone CR: legal, but many clients split lines on LF only",
        "  warning: byte 77: unknown field 'error': SSE parsers ignore the line",
        '  error: byte 77: data is not JSON, skipped here; a strict client (ssestate chat) stops: "not json"',
        "  warning: byte 141: invalid UTF-8 (decoded as U+FFFD)",
        "  warning: byte 208: a stray BOM (U+FEFF) starts a line: that line's field name is not 'data' and the "
        "line is ignored",
        "  warning: byte 208: 1 event after [DONE]: ignored by clients that stop there",
    ]
    assert "re-fed in 1-byte chunks: the same 4 events" in proc.stdout
    assert proc.stdout.splitlines()[-2:] == [
        "outcome: complete",
        "reason: 1 payload had to be skipped: a strict client (ssestate chat) fails on this stream",
    ]
    # ... as it does.
    with serve(speed=float("inf")) as server:
        chat = run("chat", "--base-url", server.base_url, "--model", "m", "hi", "-H", "X-Ssestate-Scenario: text")
    assert chat.returncode == 0


def test_inspect_json_one_object_per_event(monkeypatch: pytest.MonkeyPatch) -> None:
    proc = call(monkeypatch, "inspect", "-", "--json", "--chunk", "3", stdin=BAD)
    assert proc.returncode == 1
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[:4] == [
        {"kind": "Delta", "byte": 61, "choice": 0, "content": "hi", "role": None, "reasoning": None, "refusal": None,
         "logprobs": None},
        {"kind": "Delta", "byte": 172, "choice": 0, "content": "\ufffd", "role": None, "reasoning": None,
         "refusal": None, "logprobs": None},
        {"kind": "Finish", "byte": 172, "choice": 0, "reason": "stop", "native": None},
        {"kind": "Done", "byte": 186, "sentinel": True},
    ]  # fmt: skip
    assert [line["kind"] for line in lines[4:]] == ["problem"] * 7 + ["rechunk", "outcome"]
    assert lines[-2] == {"kind": "rechunk", "chunks": "3-byte chunks", "count": 74, "same": True, "difference": ""}
    assert lines[-1]["outcome"] == "complete"
    assert lines[-1]["reason"].startswith("1 payload had to be skipped")
    assert lines[-1]["stream"] == "chat"
    assert lines[-1]["choices"]["0"]["content"] == "hi\ufffd"


def test_inspect_json_rebuilds_the_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path, head = _capture(tmp_path, "reasoning", seed=3)
    proc = call(monkeypatch, "inspect", str(path), *head, "--json")
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    deltas = [line for line in lines if line["kind"] == "Delta"]
    assert "".join(d["content"] for d in deltas) == 'There are three r\'s in "strawberry".'
    assert "".join(d["reasoning"] or "" for d in deltas).endswith("That makes three.")
    offsets = [line["byte"] for line in lines if line["kind"] not in ("problem", "rechunk", "outcome")]
    assert offsets == sorted(offsets)
    assert lines[-1]["usage"]["completion_tokens"] > 0


def test_inspect_guesses_json_and_html_bodies(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path, _ = _capture(tmp_path, "error-401")
    proc = call(monkeypatch, "inspect", str(path), "--status", "401")
    assert proc.returncode == 1
    assert "note: the body is not an event stream (looks like JSON); read as application/json" in proc.stdout
    assert "error HTTP 401 [invalid_api_key]" in proc.stdout
    downgrade, _ = _capture(tmp_path, "downgrade")
    proc = call(monkeypatch, "inspect", str(downgrade))
    assert proc.returncode == 0
    assert '    There are three r\'s in "strawberry".' in proc.stdout


def test_inspect_empty_body() -> None:
    proc = run("inspect", "-", stdin=b"")
    assert proc.returncode == 1
    assert "error: byte 0: the body is empty" in proc.stdout
    assert proc.stdout.splitlines()[-2:] == [
        "outcome: truncated",
        "reason: the body ended without [DONE] before any choice started",
    ]


# -- reasons ------------------------------------------------------------------------------

CHUNK = b'data: {"id":"c1","model":"m","choices":[%s]}\n\n'


def _choice(index: int, content: str = "hi", finish: str | None = None) -> bytes:
    return json.dumps({"index": index, "delta": {"content": content}, "finish_reason": finish}).encode()


@pytest.mark.parametrize(
    ("body", "outcome", "reason"),
    [
        (CHUNK % _choice(0) + b"data: [DONE]\n\n", "truncated",
         "[DONE] arrived while choice 0 had no finish_reason"),
        (CHUNK % _choice(0) + CHUNK % _choice(2) + CHUNK % _choice(1, finish="stop"), "truncated",
         "the body ended without [DONE] while choices 0 and 2 had no finish_reason"),
        (CHUNK % _choice(0) + b"data: {\"choi", "truncated",
         "the body ends inside an event (12 bytes of it are lost) while choice 0 had no finish_reason"),
        (b"data: {\"choi", "truncated", "the body ends inside an event (12 bytes of it are lost) before any "
         "choice started"),
        (CHUNK % b",".join([_choice(0, finish="length"), _choice(1, finish="stop"), _choice(2, finish="length")]),
         "length", "choices 0 and 2 stopped at max_tokens (finish_reason length)"),
        (CHUNK % _choice(1, finish="content_filter"), "filtered",
         "choice 1 stopped by a content filter (finish_reason content_filter)"),
        (CHUNK % b",".join([_choice(0, finish="stop"), _choice(1, finish="insufficient_system_resource")]),
         "error", "choice 1 finished with insufficient_system_resource"),
        (CHUNK % _choice(0) + b'data: {"error": {"message": "boom", "code": 500}}\n\n', "error",
         "error in the stream [500]: boom"),
    ],
)  # fmt: skip
def test_every_outcome_but_complete_has_a_reason(
    monkeypatch: pytest.MonkeyPatch, body: bytes, outcome: str, reason: str
) -> None:
    result = call(monkeypatch, "inspect", "-", stdin=body)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-2:] == [f"outcome: {outcome}", f"reason: {reason}"]
    assert "problems: none" not in result.stdout or outcome in ("length", "filtered")
    as_json = call(monkeypatch, "inspect", "-", "--json", stdin=body)
    summary = json.loads(as_json.stdout.splitlines()[-1])
    assert (summary["outcome"], summary["reason"]) == (outcome, reason)


def test_a_finish_after_the_end_is_a_warning_only(monkeypatch: pytest.MonkeyPatch) -> None:
    body = CHUNK % _choice(0, finish="stop") + b'data: {"choices":[],"usage":{"prompt_tokens":1'
    result = call(monkeypatch, "inspect", "-", "-q", stdin=body)
    assert result.returncode == 0
    assert (
        "  warning: byte 155: the body ends inside an event (46 bytes of it are lost), after every choice had "
        "finished (only trailing bytes, such as a usage chunk or [DONE], are lost)"
    ) in result.stdout
    assert result.stdout.endswith("outcome: complete\n")


# -- plain event streams -------------------------------------------------------------------------

PLAIN = b'retry: 3000\nevent: update\nid: 7\ndata: hello\n\n: ping\n\ndata: {"a": 1}\ndata: two\n\n'


def test_a_plain_event_stream_is_summarised_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    result = call(monkeypatch, "inspect", "-", "--chunk", "1", "--random-chunks", "3", stdin=PLAIN)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[1] == (
        "a plain event stream (no chat-completion payloads): 2 events (update: 1, message: 1), 1 comment, last id '7'"
    )
    assert re.search(r"^ +45  ServerSentEvent   update id=7 retry=3000 \"hello\"$", result.stdout, re.M)
    assert re.search(r"^ +52  Heartbeat         \"ping\"$", result.stdout, re.M)
    assert "choice" not in result.stdout  # no chat words: no choices, no [DONE]
    assert "problems: none" in result.stdout
    assert "re-fed in 1-byte chunks: the same 3 events" in result.stdout
    assert lines[-1] == "outcome: complete"


def test_a_plain_event_stream_cut_short(monkeypatch: pytest.MonkeyPatch) -> None:
    result = call(monkeypatch, "inspect", "-", "--json", stdin=PLAIN + b"data: unfinished")
    assert result.returncode == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["kind"] for line in lines] == ["ServerSentEvent", "Heartbeat", "ServerSentEvent", "Truncated",
                                                "problem", "outcome"]  # fmt: skip
    assert lines[0] == {"kind": "ServerSentEvent", "byte": 45, "event": "update", "data": "hello", "id": "7",
                        "retry": 3000}  # fmt: skip
    assert lines[-1]["stream"] == "plain"
    assert lines[-1]["events"] == 2
    assert (lines[-1]["outcome"], lines[-1]["reason"]) == ("truncated", "the body ends inside an event (16 bytes "
                                                           "of it are lost)")  # fmt: skip
    quiet = call(monkeypatch, "inspect", "-", "-q", stdin=PLAIN + b"data: unfinished")
    assert "ServerSentEvent" not in quiet.stdout
    assert "a plain event stream" in quiet.stdout


def test_comments_alone_are_not_a_plain_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    result = call(monkeypatch, "inspect", "-", stdin=b": ping\n\n: ping\n\n")
    assert result.returncode == 1
    assert "reason: the body ended without [DONE] before any choice started" in result.stdout


# -- in-process -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["n2", "reasoning", "downgrade", "error-401", "drop-mid-event"])
def test_in_process_text_and_json_agree(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> None:
    path, head = _capture(tmp_path, name, seed=2)
    text = call(monkeypatch, "inspect", str(path), *head, "--chunk", "5", "--random-chunks", "1")
    as_json = call(monkeypatch, "inspect", str(path), *head, "--json")
    summary = json.loads(as_json.stdout.splitlines()[-1])
    assert text.returncode == as_json.returncode == (0 if summary["outcome"] == "complete" else 1)
    assert f"outcome: {summary['outcome']}" in text.stdout
    assert summary["outcome"] == expected_outcome(name, 2)
    assert not ANSI.search(text.stdout)


def test_refusals_and_broken_tool_arguments_are_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    delta = {"refusal": "I can't.", "reasoning_content": "hm", "tool_calls": [
        {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{oops"}}]}  # fmt: skip
    body = CHUNK % json.dumps({"index": 0, "delta": delta, "finish_reason": "stop"}).encode()
    result = call(monkeypatch, "inspect", "-", stdin=body)
    assert "    refusal: I can't." in result.stdout
    assert "    reasoning: hm" in result.stdout
    assert re.search(r"^    tool call 0: f \(c\) \{oops  ✗ not JSON: ", result.stdout, re.M)


def test_a_difference_between_chunkings_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from ssestate.cli import inspect

    def refeed(report: object, chunks: list[bytes]) -> list[object]:
        return ["something else"]

    monkeypatch.setattr(inspect, "refeed", refeed)
    result = call(monkeypatch, "inspect", "-", "--chunk", "2", stdin=CHUNK % _choice(0, finish="stop"))
    assert result.returncode == 1
    assert "re-fed in 2-byte chunks: DIFFERENT events (first difference at event 0: something else instead of" in (
        result.stdout
    )


def test_unreadable_or_unparsable_input(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import sys

    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    assert "stdin is a terminal" in call(monkeypatch, "inspect", "-").stderr
    monkeypatch.setattr(sys, "stdin", None)
    assert call(monkeypatch, "inspect", "-").stderr == "ssestate inspect: error: no standard input to read\n"
    huge = tmp_path / "huge.sse"
    huge.write_bytes(b"data: " + b"x" * (17 * 1024 * 1024))
    result = call(monkeypatch, "inspect", str(huge))
    assert result.returncode == 1
    assert result.stderr.startswith("ssestate inspect: the capture cannot be parsed: ")


# -- the other APIs ------------------------------------------------------------------------------

APIS = Path(__file__).parent / "captures" / "apis"
API_NAMES = {"openai-responses": "OpenAI Responses API", "anthropic": "Anthropic Messages", "gemini": "Gemini"}


@pytest.mark.parametrize("name", sorted(f"{p.parent.name}/{p.stem}" for p in APIS.glob("*/*.sse")))
def test_inspect_tells_the_api_of_every_capture(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    side = json.loads((APIS / f"{name}.json").read_text())
    path = str(APIS / f"{name}.sse")
    head = ["--status", str(side["status"]), "--content-type", side["content_type"]]
    outcome = side["expected"]["outcome"]
    told = call(monkeypatch, "inspect", path, *head, "--dialect", side["dialect"], "--json")
    summary = json.loads(told.stdout.splitlines()[-1])
    assert (summary["dialect"], summary["outcome"]) == (side["dialect"], outcome)
    assert told.returncode == (0 if outcome == "complete" and "error" not in told.stdout else 1)
    detected = call(monkeypatch, "inspect", path, *head, "--random-chunks", "5")
    no_traceback(detected)
    assert f"\noutcome: {outcome}\n" in detected.stdout
    assert re.search(r"^re-fed in \d+ random chunks \(seed 5\): the same \d+ events?$", detected.stdout, re.M)
    if any(e.get("kind") == "Delta" for e in side["events"]):  # an error alone tells no API
        assert f"\nAPI: {API_NAMES[side['dialect']]} (detected)\n" in detected.stdout
        assert "[DONE]" not in detected.stdout  # no Chat Completions words for another API


def test_inspect_names_each_api_end_marker(monkeypatch: pytest.MonkeyPatch) -> None:
    cut = call(monkeypatch, "inspect", str(APIS / "anthropic" / "cut-after-message-delta.sse"))
    assert cut.returncode == 0  # complete: only message_stop was lost
    assert "warning: byte 909: no message_stop: the stream just ended" in cut.stdout
    assert re.search(r"^ +909  Done +\(clean end of stream, no message_stop\)$", cut.stdout, re.M)
    assert re.search(r"^ +\d+  Finish +#0 stop \(end_turn\)$", cut.stdout, re.M)
    gemini = call(monkeypatch, "inspect", str(APIS / "gemini" / "text.sse"))
    assert re.search(r"^ +\d+  Done +\(clean end of stream\)$", gemini.stdout, re.M)
    assert "problems: none" in gemini.stdout  # no marker is what Gemini sends
    responses = call(monkeypatch, "inspect", str(APIS / "openai-responses" / "text.sse"))
    assert re.search(r"^ +\d+  Done +the terminal event$", responses.stdout, re.M)
    told = call(monkeypatch, "inspect", str(APIS / "gemini" / "text.sse"), "--dialect", "anthropic")
    assert "API: Anthropic Messages (as told)" in told.stdout  # what it was told, and what it then read
    assert "outcome: truncated" in told.stdout
