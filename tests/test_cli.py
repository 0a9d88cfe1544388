"""The command line, driven as a user drives it: ``python -m ssestate ...``
in a subprocess, with real loopback servers."""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssestate import Accumulator, ChatStream, Sentinel
from ssestate.testing import SCENARIOS, Script, expected_outcome, random_choice, scenario

pytestmark = pytest.mark.network

ANSI = re.compile(r"\x1b\[")
TIMEOUT = 60  # seconds a command may take before the test gives up on it


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "OPENAI_API_KEY")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


def run(*args: str, stdin: bytes | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "ssestate", *args],
        input=stdin,
        capture_output=True,
        env=_env(**env),
        timeout=TIMEOUT,
        check=False,
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    )


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout, proc.stdout


# -- help and usage ------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["serve"], ["demo"], ["inspect"], ["chat"]])
def test_help_on_every_command_has_an_example(command: list[str]) -> None:
    proc = run(*command, "--help")
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"usage: ssestate {' '.join(command)}".rstrip() + " ")
    assert re.search(r"^examples?:$", proc.stdout, re.MULTILINE)
    assert "  ssestate " in proc.stdout
    assert proc.stderr == ""


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0
    assert re.fullmatch(r"ssestate \d+\.\d+\.\d+\n", proc.stdout)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["inspect"], "the following arguments are required: FILE"),
        (["inspect", "x", "--chunk", "0"], "--chunk: must be at least 1, got '0'"),
        (["inspect", "x", "--status", "42"], "--status: an HTTP status is 100-599, got '42'"),
        (["serve", "--scenario", "nope"], "unknown scenario 'nope'; choose one of: text, cjk"),
        (["serve", "--speed", "0"], "--speed: must be a positive number, got '0'"),
        (["serve", "--port", "70000"], "--port: a port is 0-65535, got '70000'"),
        (["demo", "--speed", "fast"], "--speed: not a number: 'fast'"),
        (["chat", "hello"], "the following arguments are required: --base-url, --model"),
        (
            ["chat", "hi", "--base-url", "u", "--model", "m", "--retries", "-1"],
            "--retries: must be 0 or more, got '-1'",
        ),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    proc = run(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr
    assert proc.stderr.startswith("ssestate")
    assert "--help" in proc.stderr


def test_unreadable_input_is_exit_2(tmp_path: Path) -> None:
    missing = run("inspect", str(tmp_path / "missing.txt"))
    assert missing.returncode == 2
    assert (
        missing.stderr
        == f"ssestate inspect: error: cannot read {tmp_path / 'missing.txt'}: No such file or directory\n"
    )
    directory = run("inspect", str(tmp_path))
    assert directory.returncode == 2
    assert directory.stderr.startswith(f"ssestate inspect: error: cannot read {tmp_path}: ")
    assert directory.stderr.count("\n") == 1
    _no_traceback(directory)


# -- inspect ---------------------------------------------------------------------------


def _capture(tmp_path: Path, name: str, seed: int = 0) -> tuple[Path, list[str]]:
    """Write a scenario's body to a file; return it and the options that
    describe its response head."""
    script = scenario(name, seed)
    path = tmp_path / f"{name}.txt"
    path.write_bytes(script.body())
    return path, ["--status", str(script.status), "--content-type", script.content_type]


@pytest.mark.parametrize("name", SCENARIOS)
def test_inspect_every_scenario_capture(tmp_path: Path, name: str) -> None:
    path, head = _capture(tmp_path, name)
    proc = run("inspect", str(path), *head, "--chunk", "1", "--random-chunks", "7")
    _no_traceback(proc)
    outcome = expected_outcome(name)
    assert proc.returncode == (0 if outcome == "complete" else 1), proc.stdout
    assert proc.stdout.rstrip().endswith(f"outcome: {outcome}")
    assert re.search(r"^re-fed in 1-byte chunks: the same \d+ events$", proc.stdout, re.MULTILINE)
    assert re.search(r"^re-fed in \d+ random chunks \(seed 7\): the same \d+ events$", proc.stdout, re.MULTILINE)
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


def test_inspect_shows_timeline_and_final_message(tmp_path: Path) -> None:
    path, head = _capture(tmp_path, "parallel-tools")
    proc = run("inspect", str(path), *head)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{path}: {path.stat().st_size} bytes · status 200 · text/event-stream"
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


def test_inspect_flags_every_problem() -> None:
    proc = run("inspect", "-", "--chunk", "1", stdin=BAD)
    assert proc.returncode == 0  # complete: warnings do not change the exit status
    assert proc.stdout.splitlines()[0] == f"stdin: {len(BAD)} bytes · status 200 · text/event-stream"
    problems = proc.stdout.partition("\nproblems (7)\n")[2].splitlines()[:7]
    assert problems == [
        "  warning: byte 0: the stream starts with a UTF-8 BOM: WHATWG parsers drop it, naive ones read the first "
        "field name as '\\ufeffdata' and lose the first event",
        "  warning: byte 59: 2 lines end in a lone CR: legal, but many clients split lines on LF only",
        "  warning: byte 77: unknown field 'error': SSE parsers ignore the line",
        '  warning: byte 77: data is not JSON, skipped: "not json"',
        "  warning: byte 141: invalid UTF-8 (decoded as U+FFFD)",
        "  warning: byte 208: a stray BOM (U+FEFF) starts a line: that line's field name is not 'data' and the "
        "line is ignored",
        "  warning: byte 208: 1 event after [DONE]: ignored by clients that stop there",
    ]
    assert "re-fed in 1-byte chunks: the same 4 events" in proc.stdout


def test_inspect_json_one_object_per_event() -> None:
    proc = run("inspect", "-", "--json", "--chunk", "3", stdin=BAD)
    assert proc.returncode == 0
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[:4] == [
        {"kind": "Delta", "byte": 61, "choice": 0, "content": "hi", "role": None, "reasoning": None, "refusal": None,
         "logprobs": None},
        {"kind": "Delta", "byte": 172, "choice": 0, "content": "\ufffd", "role": None, "reasoning": None,
         "refusal": None, "logprobs": None},
        {"kind": "Finish", "byte": 172, "choice": 0, "reason": "stop"},
        {"kind": "Done", "byte": 186, "sentinel": True},
    ]  # fmt: skip
    assert [line["kind"] for line in lines[4:]] == ["problem"] * 7 + ["rechunk", "outcome"]
    assert lines[-2] == {"kind": "rechunk", "chunks": "3-byte chunks", "count": 74, "same": True, "difference": ""}
    assert lines[-1]["outcome"] == "complete"
    assert lines[-1]["choices"]["0"]["content"] == "hi\ufffd"


def test_inspect_json_rebuilds_the_message(tmp_path: Path) -> None:
    path, head = _capture(tmp_path, "reasoning", seed=3)
    proc = run("inspect", str(path), *head, "--json")
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    deltas = [line for line in lines if line["kind"] == "Delta"]
    assert "".join(d["content"] for d in deltas) == 'There are three r\'s in "strawberry".'
    assert "".join(d["reasoning"] or "" for d in deltas).endswith("That makes three.")
    offsets = [line["byte"] for line in lines if line["kind"] not in ("problem", "rechunk", "outcome")]
    assert offsets == sorted(offsets)
    assert lines[-1]["usage"]["completion_tokens"] > 0


def test_inspect_guesses_json_and_html_bodies(tmp_path: Path) -> None:
    path, _ = _capture(tmp_path, "error-401")
    proc = run("inspect", str(path), "--status", "401")
    assert proc.returncode == 1
    assert "note: the body is not an event stream (looks like JSON); read as application/json" in proc.stdout
    assert "error HTTP 401 [invalid_api_key]" in proc.stdout
    downgrade, _ = _capture(tmp_path, "downgrade")
    proc = run("inspect", str(downgrade))
    assert proc.returncode == 0
    assert '    There are three r\'s in "strawberry".' in proc.stdout


def test_inspect_empty_body() -> None:
    proc = run("inspect", "-", stdin=b"")
    assert proc.returncode == 1
    assert "error: byte 0: the body is empty" in proc.stdout
    assert proc.stdout.rstrip().endswith("outcome: truncated")


# -- colour ------------------------------------------------------------------------------


def _run_on_tty(*args: str, **env: str) -> str:
    """Run with stdout and stderr on a pseudo-terminal; return what it showed."""
    pty = pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssestate", *args], stdout=follower, stderr=follower, env=_env(**env)
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(TIMEOUT)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_colour_only_on_a_terminal_and_never_with_no_color(tmp_path: Path) -> None:
    path, head = _capture(tmp_path, "length")
    assert ANSI.search(_run_on_tty("inspect", str(path), *head))
    assert not ANSI.search(_run_on_tty("inspect", str(path), *head, NO_COLOR="1"))
    assert not ANSI.search(_run_on_tty("inspect", str(path), *head, TERM="dumb"))
    piped = run("inspect", str(path), *head)
    assert "outcome: length" in piped.stdout
    assert not ANSI.search(piped.stdout + piped.stderr)


# -- demo ----------------------------------------------------------------------------------


def test_demo_runs_offline_and_shows_what_a_user_should_see() -> None:
    proc = run("demo", "--speed", "8", OPENAI_API_KEY="")
    _no_traceback(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert not ANSI.search(out)
    for name in ("text", "tools", "cjk", "length", "drop-mid-event", "error-503"):
        assert f"\n▶ {name} — " in out
    assert 'Server-sent events look simple: a line that starts with "data:"' in out
    assert "流式传输会把回答一点一点地送过来" in out
    assert '⚙ get_weather({"city":"São Paulo","unit":"celsius","note":"quote \\" and ° sign"})' in out
    assert '  parsed get_weather: {"city": "São Paulo", "unit": "celsius", "note": "quote \\" and ° sign"}' in out
    assert "  ✓ complete (finish_reason stop)" in out
    assert "  ✓ complete (finish_reason tool_calls)" in out
    assert "  ✂ cut by max_tokens (finish_reason length)" in out
    assert re.search(r"  ✗ truncated: the connection closed mid-event \(\d+ bytes of it lost\)", out)
    assert "  ✗ error HTTP 503: an HTML page: 503 Service Temporarily Unavailable" in out
    stats = re.findall(r"^  TTFB (.+?) · TTFT (.+?) · gaps p50 (.+?), p95 (.+?), max (.+?) · total", out, re.M)
    assert len(stats) == 6
    assert all(ttfb != "-" for ttfb, *_ in stats)
    assert out.rstrip().endswith("Try them with any client: ssestate serve --scenario random")


def test_demo_picks_scenarios() -> None:
    proc = run("demo", "--scenario", "reasoning", "--scenario", "n2", "--speed", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "\n▶ reasoning — " in proc.stdout
    assert "\n▶ n2 — " in proc.stdout
    assert "▶ text" not in proc.stdout
    assert "That makes three." in proc.stdout  # the reasoning, typed out too
    assert "There are three r's" in proc.stdout
    # n=2: the first choice is typed out, the other shown whole at the end.
    assert "\nBonjour ! Je peux vous aider.\n" in proc.stdout
    assert "\n  choice 1 (not typed out above): Hello! How can I help you today?" in proc.stdout


# -- serve -----------------------------------------------------------------------------------


class Served:
    """A running ``ssestate serve`` and the lines it has printed."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ssestate", "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
            text=True,
            encoding="utf-8",
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        first = self.next_line()
        match = re.search(r"listening on (http://127\.0\.0\.1:(\d+)/v1)", first)
        assert match, first
        self.url, self.port = match.group(1), int(match.group(2))
        self.banner = [first, self.next_line(), self.next_line()]

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_line(self, timeout: float = 30) -> str:
        return self.lines.get(timeout=timeout)

    def wait_for_line(self, pattern: str, timeout: float = 30) -> str:
        while True:
            line = self.next_line(timeout)
            if re.search(pattern, line):
                return line

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(TIMEOUT)
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    server = Served("--speed", "25", "--seed", "100")
    yield server
    code, err = server.stop()
    assert code == 0
    assert err == ""


def _post(served: Served, body: object, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request(
        "POST", "/v1/chat/completions", body=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    return conn.getresponse()


def test_serve_banner_has_url_and_a_curl_hint(served: Served) -> None:
    assert served.banner[1].startswith(f"  try: curl -N {served.url}/chat/completions ")
    assert "Ctrl-C stops" in served.banner[2]


@pytest.mark.parametrize("name", ["crlf", "cjk", "no-done", "error-401", "downgrade"])
def test_serve_with_plain_http_client(served: Served, name: str) -> None:
    response = _post(served, {"model": name, "seed": 5, "messages": [], "stream": True})
    expected = scenario(name, 5, include_usage=False)
    assert response.status == expected.status
    assert response.getheader("Content-Type") == expected.content_type
    assert response.getheader("X-Ssestate-Scenario") == name
    assert response.read() == expected.body()  # every byte, as the scenario wrote it


def test_serve_picks_by_header_and_reports_mistakes(served: Served) -> None:
    response = _post(served, {"model": "gpt-4o", "seed": 2, "stream": True}, {"X-Ssestate-Scenario": "random"})
    assert response.getheader("X-Ssestate-Scenario") == f"random/{random_choice(2)}"
    response.close()
    unknown_model = _post(served, {"model": "gpt-4o", "seed": 2, "stream": True})
    assert unknown_model.getheader("X-Ssestate-Scenario") == "text"  # the --scenario default
    assert unknown_model.read() == scenario("text", 2, include_usage=False).body()
    bad = _post(served, {"model": "text"}, {"X-Ssestate-Scenario": "nope"})
    assert bad.status == 400
    assert "unknown scenario 'nope'" in json.loads(bad.read())["error"]["message"]
    slow = _post(served, {"model": "text"}, {"X-Ssestate-Speed": "-1"})
    assert slow.status == 400
    assert json.loads(slow.read())["error"]["message"] == "X-Ssestate-Speed must be a positive number, got '-1'"
    not_json = _post(served, b"{nope")
    assert not_json.status == 400
    assert json.loads(not_json.read())["error"]["message"].startswith("We could not parse the JSON body")


def test_serve_lists_scenarios_as_models(served: Served) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    conn.request("GET", "/v1/models")
    models = json.loads(conn.getresponse().read())
    assert [m["id"] for m in models["data"]] == list(SCENARIOS)
    conn.request("GET", "/somewhere")
    missing = conn.getresponse()
    assert missing.status == 404
    assert json.loads(missing.read())["error"]["message"] == "Invalid URL (GET /somewhere)"


@pytest.mark.parametrize("name", ["text", "tools", "n2", "drop-mid-event", "error-503", "downgrade", "crlf"])
def test_serve_consumed_by_the_httpx_adapter(served: Served, name: str) -> None:
    httpx = pytest.importorskip("httpx")
    adapter = pytest.importorskip(
        "ssestate.adapters.httpx", reason="the httpx adapter (ssestate.adapters.httpx) is not there yet"
    )
    acc = Accumulator()
    with (
        httpx.Client(timeout=30) as client,
        adapter.stream_chat(client, served.url, {"model": name, "seed": 9, "messages": []}, retry=None) as call,
    ):
        for event in call:
            acc.feed(event)
    assert acc.outcome == expected_outcome(name, 9)


def test_serve_consumed_by_the_official_openai_client(served: Served) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=served.url, api_key="sk-dummy", max_retries=0)
    stream = client.chat.completions.create(model="cjk", messages=[{"role": "user", "content": "hi"}], stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == _accumulate(scenario("cjk", 0)).choices[0].content
    with pytest.raises(openai.AuthenticationError, match="Error code: 401 - Incorrect API key provided") as info:
        client.chat.completions.create(model="error-401", messages=[], stream=True)
    assert info.value.code == "invalid_api_key"


@pytest.mark.parametrize("name", ["text", "parallel-tools", "drop-mid-event", "error-401"])
def test_serve_consumed_by_the_stdlib_adapter(served: Served, name: str) -> None:
    from ssestate.adapters import sync

    acc = Accumulator()
    with sync.stream_chat(served.url, {"model": name, "seed": 9, "messages": []}, retry=None) as call:
        for event in call:
            acc.feed(event)
    assert acc.outcome == expected_outcome(name, 9)
    if name == "parallel-tools":
        assert [c.name for c in acc.choices[0].tool_calls] == ["get_weather", "get_time"]


def test_serve_logs_requests_and_how_they_ended(served: Served) -> None:
    response = _post(served, {"model": "drop-mid-event", "seed": 4, "stream": True})
    with pytest.raises(http.client.IncompleteRead):
        response.read()
    served.wait_for_line(r"^#\d+ POST /v1/chat/completions -> drop-mid-event seed 4$")
    served.wait_for_line(r"^#\d+ drop-mid-event seed 4 ended aborted at step \d+$")


def test_serve_refuses_a_busy_port(served: Served) -> None:
    proc = run("serve", "--port", str(served.port))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"ssestate serve: error: cannot listen on 127.0.0.1:{served.port}: ")
    assert proc.stderr.count("\n") == 1


# -- chat ----------------------------------------------------------------------------------------


def test_chat_prints_the_answer_as_it_streams(served: Served) -> None:
    proc = run("chat", "--base-url", served.url, "--model", "cjk", "hello", OPENAI_API_KEY="sk-dummy")
    assert proc.returncode == 0, proc.stderr
    # The chat request names no seed: whatever the server picked, the text is the same.
    assert proc.stdout == _accumulate(scenario("cjk", 0)).choices[0].content + "\n"
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
    _no_traceback(proc)
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
    _no_traceback(proc)
    assert proc.returncode == 1
    assert proc.stderr == f"ssestate chat: cannot reach http://127.0.0.1:{port}/v1: Connection refused\n"
    assert proc.stderr.count("\n") == 1


def test_chat_first_byte_timeout_is_one_line(served: Served) -> None:
    proc = run(
        "chat", "--base-url", served.url, "--model", "slow-first-byte", "hi",
        "-H", "X-Ssestate-Speed: 0.5", "--timeout", "0.5", "--retries", "0",
    )  # fmt: skip
    _no_traceback(proc)
    assert proc.returncode == 1
    assert re.fullmatch(r"ssestate chat: first-byte timeout: .+ \(limit 0\.5 s\)\n", proc.stderr), proc.stderr


def test_chat_ctrl_c_cancels_and_closes_the_connection(served: Served) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssestate", "chat", "--base-url", served.url, "--model", "slow-first-byte", "hi",
         "-H", "X-Ssestate-Speed: 0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(OPENAI_API_KEY="sk-dummy"),
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


def _accumulate(script: Script) -> Accumulator:
    stream = ChatStream(script.status, script.content_type)
    stream.receive_data(script.body())
    stream.receive_data(b"")
    acc = Accumulator()
    while not isinstance(event := stream.next_event(), Sentinel):
        acc.feed(event)
    return acc
