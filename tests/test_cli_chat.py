"""``ssestate chat``: one answer from an endpoint, as it streams.  Against
``ssestate serve`` in a subprocess (its log shows what the server saw) and,
in-process, against ``ssestate.testing.serve``."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import TIMEOUT, Served, accumulate, call, env_for, no_traceback, run, serving

from ssestate.testing import scenario, serve

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with serving("--speed", "25", "--seed", "100") as server:
        yield server


def test_chat_prints_the_answer_as_it_streams(served: Served) -> None:
    proc = run("chat", "--base-url", served.url, "--model", "cjk", "hello", OPENAI_API_KEY="sk-dummy")
    assert proc.returncode == 0, proc.stderr
    # The chat request names no seed: whatever the server picked, the text is the same.
    assert proc.stdout == accumulate(scenario("cjk", 0)).choices[0].content + "\n"
    assert proc.stderr == ""
    served.wait_for_line(r"^#\d+ POST /v1/chat/completions -> cjk seed \d+$")


def test_chat_tool_calls_and_reasoning_go_to_stderr(served: Served) -> None:
    tools = run("chat", "--base-url", served.url, "--model", "tools", "weather?")
    assert tools.returncode == 0
    assert tools.stdout == ""
    assert tools.stderr == '⚙ get_weather({"city":"São Paulo","unit":"celsius","note":"quote \\" and ° sign"})\n'
    reasoning = run("chat", "--base-url", served.url, "--model", "reasoning", "r?", "--stats")
    assert reasoning.returncode == 0
    assert reasoning.stdout == 'There are three r\'s in "strawberry".\n'
    assert reasoning.stderr.startswith("The user asks how many r's")
    assert re.search(r"\nTTFB .+ · TTFT .+ · gaps p50 .+ · total .+ events, .+\n$", reasoning.stderr)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("length", "ssestate chat: cut by max_tokens (finish_reason length)\n"),
        ("error-401", "ssestate chat: error HTTP 401 [invalid_api_key]: Incorrect API key provided: sk-test."),
        ("drop-mid-event", "ssestate chat: truncated: the connection closed mid-event ("),
    ],
)
def test_chat_outcomes_other_than_complete_exit_1(served: Served, name: str, message: str) -> None:
    proc = run("chat", "--base-url", served.url, "--model", name, "hi", "-H", "X-Ssestate-Speed: 1000")
    no_traceback(proc)
    assert proc.returncode == 1
    assert proc.stderr.startswith(message)
    assert proc.stderr.count("\n") == 1


def test_chat_usage_errors(served: Served) -> None:
    missing = run("chat", "--base-url", served.url, "--model", "text", "hi", "--api-key-env", "SSESTATE_NO_SUCH_KEY")
    assert (missing.returncode, missing.stderr) == (
        2,
        "ssestate chat: error: the environment variable SSESTATE_NO_SUCH_KEY is not set or empty\n",
    )
    bad_url = run("chat", "--base-url", "ftp://example.com", "--model", "text", "hi")
    assert bad_url.returncode == 2
    assert bad_url.stderr.startswith("ssestate chat: error: base_url must be an http:// or https:// URL")
    bad_header = run("chat", "--base-url", served.url, "--model", "text", "hi", "-H", "nocolon")
    assert bad_header.returncode == 2
    assert bad_header.stderr == "ssestate chat: error: a header is 'Name: value', got 'nocolon'\n"


def test_chat_connection_refused_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run("chat", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m", "hi", "--retries", "0")
    no_traceback(proc)
    assert proc.returncode == 1
    assert proc.stderr == f"ssestate chat: cannot reach http://127.0.0.1:{port}/v1: Connection refused\n"
    assert proc.stderr.count("\n") == 1


def test_chat_first_byte_timeout_is_one_line(served: Served) -> None:
    proc = run(
        "chat", "--base-url", served.url, "--model", "slow-first-byte", "hi",
        "-H", "X-Ssestate-Speed: 0.5", "--timeout", "0.5", "--retries", "0",
    )  # fmt: skip
    no_traceback(proc)
    assert proc.returncode == 1
    assert re.fullmatch(r"ssestate chat: first-byte timeout: .+ \(limit 0\.5 s\)\n", proc.stderr), proc.stderr


def test_chat_ctrl_c_cancels_and_closes_the_connection(served: Served) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssestate", "chat", "--base-url", served.url, "--model", "slow-first-byte", "hi",
         "-H", "X-Ssestate-Speed: 0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(OPENAI_API_KEY="sk-dummy"),
    )  # fmt: skip
    # The first byte is 50 s away: wait until the server has the request.
    line = served.wait_for_line(r"^#\d+ POST /v1/chat/completions -> slow-first-byte seed \d+ speed 0.05$")
    attempt = line.split()[0]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130
    assert err.decode() == "ssestate chat: cancelled; connection closed\n"
    assert out == b""
    # The server saw the client go away during the first pause (step 0),
    # long before the script would have written anything.
    served.wait_for_line(rf"^{attempt} slow-first-byte seed \d+ speed 0.05 ended disconnected at step 0: ")


def test_chat_shows_each_choice_apart(served: Served) -> None:
    proc = run("chat", "--base-url", served.url, "--model", "n2", "hi")
    assert proc.returncode == 0
    assert proc.stdout == (
        "Bonjour ! Je peux vous aider.\n"
        "── choice 1 ──\n"
        "Hello! How can I help you today? Ask me anything about streams.\n"
    )


STATS = re.compile(r"^TTFB .+ · TTFT .+ · gaps p50 .+ · total .+ events?, .+$", re.M)


@pytest.mark.parametrize(
    ("args", "code", "last"),
    [
        (["--model", "text"], 0, None),
        (["--model", "length"], 1, "ssestate chat: cut by max_tokens (finish_reason length)"),
        (["--model", "drop-mid-event"], 1, "ssestate chat: truncated: the connection closed mid-event ("),
        (["--model", "slow-first-byte", "--timeout", "0.3", "-H", "X-Ssestate-Speed: 1"], 1,
         "ssestate chat: first-byte timeout: "),
        (["--model", "text", "-H", "X-Ssestate-Scenario: nope"], 1, "ssestate chat: error HTTP 400 [unknown_scenario]"),
    ],
)  # fmt: skip
def test_stats_on_every_exit_path(monkeypatch: pytest.MonkeyPatch, args: list[str], code: int, last: str) -> None:
    with serve(speed=50) as server:
        result = call(monkeypatch, "chat", "--base-url", server.base_url, "hi", "--stats", "--retries", "0", *args)
    assert result.returncode == code, result.stderr
    lines = result.stderr.splitlines()
    if last is None:
        assert STATS.match(lines[-1]), result.stderr
    else:
        assert STATS.match(lines[-2]), result.stderr
        assert lines[-1].startswith(last)


def test_stats_when_the_stream_breaks_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    from ssestate.testing import Script, ScriptServer

    def not_json(request: object) -> Script:
        return Script(steps=[b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n', b"data: nope\n\n"])

    with ScriptServer(not_json) as server:
        result = call(monkeypatch, "chat", "--base-url", server.url, "--model", "m", "hi", "--stats")
    assert result.returncode == 1
    assert result.stdout == "hi\n"
    lines = result.stderr.splitlines()
    assert STATS.match(lines[-2]), result.stderr
    assert lines[-1].startswith("ssestate chat: RemoteProtocolError: ")


def test_stats_on_ctrl_c(monkeypatch: pytest.MonkeyPatch) -> None:
    from ssestate.cli import chat

    def interrupted(self: object, event: object) -> None:  # Ctrl-C while the answer streams
        raise KeyboardInterrupt

    monkeypatch.setattr(chat._Screen, "show", interrupted)
    with serve(speed=50) as server:
        result = call(monkeypatch, "chat", "--base-url", server.base_url, "--model", "text", "hi", "--stats")
    assert result.returncode == 130
    lines = result.stderr.splitlines()
    assert STATS.match(lines[-2])
    assert lines[-1] == "ssestate chat: cancelled; connection closed"


def test_chat_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(speed=50) as server:
        url = server.base_url
        tools = call(monkeypatch, "chat", "--base-url", url, "--model", "parallel-tools", "w?", "--max-tokens", "100")
        assert tools.returncode == 0
        assert tools.stderr == '⚙ get_weather({"city":"東京","days":3})⚙ get_time({"timezone":"Asia/Tokyo"})\n'.replace(
            ")⚙", ")\n⚙"
        )
        reasoning = call(monkeypatch, "chat", "--base-url", url, "--model", "reasoning", "r?", "--system", "Be brief.")
        assert reasoning.stdout == 'There are three r\'s in "strawberry".\n'
        assert reasoning.stderr.endswith("That makes three.\n")
        n2 = call(monkeypatch, "chat", "--base-url", url, "--model", "n2", "-", "--temperature", "0.5",
                  stdin=b"hi")  # fmt: skip
        assert n2.stdout.splitlines()[1] == "── choice 1 ──"
        short = call(monkeypatch, "chat", "--base-url", url, "--model", "n2", "hi", "--max-tokens", "2")
        assert short.returncode == 1
        assert short.stderr == "ssestate chat: cut by max_tokens (finish_reason length)\n"
        assert call(monkeypatch, "chat", "--base-url", url, "--model", "m", " ").stderr == (
            "ssestate chat: error: the prompt is empty\n"
        )
        keyed = call(monkeypatch, "chat", "--base-url", url, "--model", "cjk", "hi", "--api-key-env", "MY_KEY",
                     MY_KEY="sk-x")  # fmt: skip
        assert keyed.returncode == 0
    assert server.requests[-1].header("Authorization") == "Bearer sk-x"


def test_other_choices_show_reasoning_refusals_and_tool_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    from ssestate.testing import Script, ScriptServer

    chunks = [
        {"index": 0, "delta": {"content": "zero"}, "finish_reason": "stop"},
        {"index": 1, "delta": {"reasoning_content": "think", "refusal": "no", "tool_calls": [
            {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]}, "finish_reason": "stop"},
        {"index": 0, "delta": {"refusal": "live refusal"}},
    ]  # fmt: skip
    body = b"".join(b"data: " + json.dumps({"choices": [c]}).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    with ScriptServer(lambda request: Script(steps=[body])) as server:
        result = call(monkeypatch, "chat", "--base-url", server.url, "--model", "m", "hi")
    assert result.returncode == 0
    assert result.stdout == "zero\n── choice 1 ──\n"
    assert result.stderr == "live refusal\nthink\nno\n⚙ f({})\n"


@pytest.mark.parametrize(
    ("finish", "message"),
    [
        ("content_filter", "ssestate chat: filtered (finish_reason content_filter)\n"),
        ("insufficient_system_resource",
         "ssestate chat: error: a choice finished with insufficient_system_resource\n"),
        (None, "ssestate chat: truncated: the stream ended before every choice finished\n"),
    ],
)  # fmt: skip
def test_each_outcome_in_one_line(monkeypatch: pytest.MonkeyPatch, finish: str | None, message: str) -> None:
    from ssestate.testing import Script, ScriptServer

    chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": finish}]}
    body = b"data: " + json.dumps(chunk).encode() + b"\n\n"
    with ScriptServer(lambda request: Script(steps=[body])) as server:
        result = call(monkeypatch, "chat", "--base-url", server.url, "--model", "m", "hi")
    assert (result.returncode, result.stdout, result.stderr) == (1, "hi\n", message)


def test_bad_urls_and_empty_stdin_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for model in ("", "models/"):
        nameless = call(monkeypatch, "chat", "--dialect", "gemini", "--base-url", "http://x", "--model", model, "hi")
        assert (nameless.returncode, nameless.stderr) == (
            2,
            "ssestate chat: error: --model must name a Gemini model, e.g. gemini-2.5-flash\n",
        )
    bad = call(monkeypatch, "chat", "--base-url", "ftp://x", "--model", "m", "hi")
    assert bad.returncode == 2
    assert bad.stderr.startswith("ssestate chat: error: base_url must be an http:// or https:// URL")
    monkeypatch.setattr(sys, "stdin", None)
    assert call(monkeypatch, "chat", "--base-url", "http://x", "--model", "m", "-").stderr == (
        "ssestate chat: error: the prompt is empty\n"
    )


# Each API: the request the CLI writes (path, key header, body) and the answer it prints.
_REQUESTS = {
    "openai-chat": ("/v1/chat/completions", "Authorization", "Bearer k", {
        "model": "m", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}],
        "max_tokens": 64, "temperature": 0.5, "stream": True, "stream_options": {"include_usage": True}}),
    "openai-responses": ("/v1/responses", "Authorization", "Bearer k", {
        "model": "m", "input": "hi", "instructions": "S", "max_output_tokens": 64, "temperature": 0.5,
        "stream": True}),
    "anthropic": ("/v1/messages", "x-api-key", "k", {
        "model": "m", "messages": [{"role": "user", "content": "hi"}], "system": "S", "max_tokens": 64,
        "temperature": 0.5, "stream": True}),
    "gemini": ("/v1/models/m:streamGenerateContent?alt=sse", "x-goog-api-key", "k", {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}], "systemInstruction": {"parts": [{"text": "S"}]},
        "generationConfig": {"maxOutputTokens": 64, "temperature": 0.5}}),
}  # fmt: skip
_KEYS = {"openai-chat": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
         "gemini": "GEMINI_API_KEY"}  # fmt: skip


@pytest.mark.parametrize("dialect", list(_REQUESTS))
def test_chat_speaks_each_api(monkeypatch: pytest.MonkeyPatch, dialect: str) -> None:
    from ssestate import ChatEvent, Delta, Done, Encoder, Finish, Usage
    from ssestate.testing import Script, ScriptServer

    def answer(request: object) -> Script:
        encoder = Encoder(dialect, model="m")
        events: list[ChatEvent] = [Delta(0, "Hel"), Delta(0, "lo"), Finish(0, "stop"), Usage(3, 2, 5),
                  Done(sentinel=True)]  # fmt: skip
        return Script(steps=[b"".join(encoder.feed(event) for event in events)])

    with ScriptServer(answer) as server:
        key = {_KEYS[dialect]: "k"}  # the variable each API's SDK reads
        args = ["--base-url", server.url, "--model", "m", "hi", "--system", "S", "--max-tokens", "64"]
        result = call(monkeypatch, "chat", "--dialect", dialect, *args, "--temperature", "0.5", **key)  # type: ignore[arg-type]
        unkeyed = call(monkeypatch, "chat", "--dialect", dialect, "--base-url", server.url, "--model", "m", "hi")
    assert (result.returncode, result.stdout, result.stderr) == (0, "Hello\n", "")
    path, header, value, body = _REQUESTS[dialect]
    keyed, bare = server.requests
    assert (keyed.method, keyed.path, keyed.header(header), keyed.json) == ("POST", path, value, body)
    assert unkeyed.returncode == 0
    assert bare.header("Authorization") is None and bare.header(header) is None
    if dialect == "anthropic":  # the Messages API refuses a request without max_tokens
        assert bare.json["max_tokens"] == 1024
    else:
        assert "max_tokens" not in json.dumps(bare.json)
