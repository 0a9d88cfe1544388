"""``ssestate serve``: the test server in the foreground, as a user runs it
(a subprocess, its log read line by line) and in-process."""

from __future__ import annotations

import _thread
import http.client
import json
import signal
import threading
import time
from collections.abc import Iterator

import pytest
from cli_helpers import TIMEOUT, Served, accumulate, call, run, serving

from ssestate import Accumulator
from ssestate.testing import PATHS, SCENARIOS, expected_outcome, random_choice, scenario

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    with serving("--speed", "25", "--seed", "100") as server:
        yield server


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


def test_serve_banner_lists_the_paths_it_answers() -> None:
    with serving("--quiet", "--speed", "1000") as served:
        assert served.next_line() == "  answers:"
        lines = [served.next_line() for _ in PATHS]
        _every_path_answers(served)
    assert [line.split()[:2] for line in lines] == [
        ["POST", "/v1/chat/completions"],
        ["POST", "/v1/responses"],
        ["POST", "/v1/messages"],
        ["POST", "/v1beta/models/{model}:streamGenerateContent?alt=sse"],
        ["GET", "/v1/models,"],
    ]
    assert lines[2].endswith("Anthropic Messages")


def _every_path_answers(served: Served) -> None:
    for path, api in PATHS:
        method, _, where = path.partition(" ")
        where = where.split(",")[0].replace("{model}", "text").strip()
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
        conn.request(method, where, body=b'{"max_tokens": 5}' if method == "POST" else None)
        response = conn.getresponse()
        response.read()
        assert response.status == 200, (path, api)


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
    assert text == accumulate(scenario("cjk", 0)).choices[0].content
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


def test_serve_answers_a_request_that_asks_no_stream(served: Served) -> None:
    response = _post(served, {"model": "n2", "seed": 3, "messages": [{"role": "user", "content": "hi"}]})
    assert response.getheader("Content-Type") == "application/json"
    completion = json.loads(response.read())
    assert [c["message"]["content"] for c in completion["choices"]] == [
        "Bonjour ! Je peux vous aider.",
        "Hello! How can I help you today? Ask me anything about streams.",
    ]
    served.wait_for_line(r"^#\d+ POST /v1/chat/completions -> n2 seed 3 \(not streamed\)$")


def test_serve_warns_when_it_listens_beyond_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    from ssestate.cli import serve

    def no_bind(*args: object, **kwargs: object) -> object:  # the warning comes first; nothing is exposed here
        raise OSError(98, "Address already in use")

    monkeypatch.setattr(serve, "ScriptServer", no_bind)
    result = call(monkeypatch, "serve", "--host", "0.0.0.0", "--port", "8000")
    assert result.returncode == 2
    assert result.stderr == (
        "ssestate serve: warning: --host 0.0.0.0 is not a loopback address: anyone who can reach this machine "
        "can use the test server\n"
        "ssestate serve: error: cannot listen on 0.0.0.0:8000: Address already in use\n"
    )
    for host in ("localhost", "LOCALHOST", "127.0.0.2", "::1"):
        assert "warning" not in call(monkeypatch, "serve", "--host", host).stderr
    assert "warning" in call(monkeypatch, "serve", "--host", "example.com").stderr


def test_serve_in_process_until_interrupted(monkeypatch: pytest.MonkeyPatch) -> None:
    from ssestate.cli import serve
    from ssestate.testing import ScriptServer

    started: list[ScriptServer] = []

    class Recorded(ScriptServer):
        def serve_forever(self) -> None:
            started.append(self)
            super().serve_forever()

    def client() -> None:
        # One request once the server runs, then Ctrl-C as SIGINT would.
        try:
            for _ in range(200):
                if started:
                    conn = http.client.HTTPConnection(started[0].host, started[0].port, timeout=30)
                    conn.request("POST", "/v1/chat/completions", body=b'{"model": "no-done", "stream": true}')
                    conn.getresponse().read()
                    conn.close()
                    started[0].wait_for(1)
                    time.sleep(0.5)  # for the log line that says how it ended
                    break
                time.sleep(0.05)
        finally:
            _thread.interrupt_main()

    monkeypatch.setattr(serve, "ScriptServer", Recorded)
    threading.Thread(target=client, daemon=True).start()
    result = call(monkeypatch, "serve", "--seed", "3", "--scenario", "cjk", "--speed", "100")
    assert result.returncode == 0
    assert "ssestate serve: listening on http://127.0.0.1:" in result.stdout
    assert "(scenario cjk, seed 3, speed 100)" in result.stdout
    assert "#0 POST /v1/chat/completions -> no-done seed 3\n" in result.stdout
    assert "#0 no-done seed 3 ended complete at step " in result.stdout
    assert result.stdout.endswith("ssestate serve: stopped\n")


def test_serve_stops_on_sigterm() -> None:
    server = Served("--quiet")
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(TIMEOUT) == 0
    assert server.wait_for_line("^ssestate serve") == "ssestate serve: stopped"
