"""``ssestate demo``: the offline tour, as a user runs it and in-process."""

from __future__ import annotations

import re
import time

import pytest
from cli_helpers import ANSI, call, no_traceback, run

pytestmark = pytest.mark.network


def test_demo_runs_offline_and_shows_what_a_user_should_see() -> None:
    proc = run("demo", "--speed", "8", OPENAI_API_KEY="")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert not ANSI.search(out)
    for name in ("text", "tools", "cjk", "length", "drop-mid-event", "error-503"):
        assert f"\n▶ {name} · OpenAI Chat Completions — " in out
    # Then one stream of each other API, asked for and read as that API.
    assert "\n▶ reasoning · OpenAI Responses API — " in out
    assert "\n▶ parallel-tools · Anthropic Messages — " in out
    assert "\n▶ cjk · Gemini — " in out
    assert '\nThere are three r\'s in "strawberry".\n' in out
    assert '\n⚙ get_weather({"city":"東京","days":3})\n⚙ get_time({"timezone":"Asia/Tokyo"})\n' in out
    assert out.count("流式传输会把回答一点一点地送过来") == 2
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
    assert len(stats) == 9
    assert all(ttfb != "-" for ttfb, *_ in stats)
    assert out.rstrip().endswith("Try them with any client: ssestate serve --scenario random")


def test_demo_picks_scenarios() -> None:
    proc = run("demo", "--scenario", "reasoning", "--scenario", "n2", "--speed", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "\n▶ reasoning · OpenAI Chat Completions — " in proc.stdout
    assert "\n▶ n2 · OpenAI Chat Completions — " in proc.stdout
    assert "▶ text" not in proc.stdout
    assert "That makes three." in proc.stdout  # the reasoning, typed out too
    assert "There are three r's" in proc.stdout
    # n=2: the first choice is typed out, the other shown whole at the end.
    assert "\nBonjour ! Je peux vous aider.\n" in proc.stdout
    assert "\n  choice 1 (not typed out above): Hello! How can I help you today?" in proc.stdout


def test_demo_plays_scenarios_in_the_api_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    one = call(monkeypatch, "demo", "--dialect", "gemini", "--scenario", "tools", "--speed", "20")
    assert one.returncode == 0, one.stderr
    assert "\n▶ tools · Gemini — " in one.stdout
    parsed = '  parsed get_weather: {"city": "São Paulo", "unit": "celsius", "note": "quote \\" and ° sign"}'
    assert parsed in one.stdout
    assert "streams 1 scenario;" in one.stdout
    # --dialect alone: the usual six, in that API, each ending as it should.
    six = call(monkeypatch, "demo", "--dialect", "anthropic", "--speed", "20")
    assert six.returncode == 0, six.stdout
    assert six.stdout.count(" · Anthropic Messages — ") == 6
    assert "  ✂ cut by max_tokens (finish_reason length)" in six.stdout
    refused = call(monkeypatch, "demo", "--dialect", "openai-responses", "--scenario", "n2")
    assert refused.returncode == 2
    assert refused.stderr.startswith("ssestate demo: error: OpenAI Responses API cannot play n2: it streams two")


def test_demo_types_at_the_rate_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    def took(rate: str) -> float:
        start = time.monotonic()
        result = call(monkeypatch, "demo", "--scenario", "cjk", "--speed", "8", "--rate", rate)
        assert result.returncode == 0
        assert result.stdout.rstrip().endswith("Try them with any client: ssestate serve --scenario random")
        assert "streams 1 scenario;" in result.stdout
        assert "\n1 scenario in " in result.stdout
        return time.monotonic() - start

    # About 110 characters: at 5 x 8 a second that takes 2.7 s, at 60 x 8 a quarter of a second.
    slow, fast = took("5"), took("60")
    assert slow > 2.2
    assert fast < slow / 3


def test_demo_in_process_shows_every_kind_of_ending(monkeypatch: pytest.MonkeyPatch) -> None:
    names = ["reasoning", "n2", "error-401", "heartbeat-silence", "no-done"]
    result = call(monkeypatch, "demo", "--speed", "20", "--rate", "2000", *[f"--scenario={n}" for n in names])
    assert result.returncode == 0, result.stdout
    assert "✗ error HTTP 401 [invalid_api_key]: Incorrect API key provided" in result.stdout
    assert " keep-alives" in result.stdout
    assert "✓ complete (finish_reason stop, no [DONE])" in result.stdout
    assert not ANSI.search(result.stdout)


def test_demo_reports_a_scenario_that_does_not_end_as_expected(monkeypatch: pytest.MonkeyPatch) -> None:
    from ssestate.cli import demo

    monkeypatch.setattr(demo, "expected_outcome", lambda name, seed, **options: "length")
    result = call(monkeypatch, "demo", "--speed", "50", "--scenario", "text")
    assert result.returncode == 1
    assert "  ✗ expected the outcome 'length', got 'complete'" in result.stdout


def test_demo_reports_a_failed_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from ssestate.adapters import sync

    def refuse(*args: object, **kwargs: object) -> object:
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(sync, "stream_chat", refuse)
    result = call(monkeypatch, "demo", "--speed", "50", "--scenario", "text")
    assert result.returncode == 1
    assert "  ✗ ConnectionRefusedError: [Errno 111] Connection refused" in result.stdout


def test_demo_shows_tool_calls_and_other_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    result = call(monkeypatch, "demo", "--speed", "50", "--rate", "5000", "--scenario=parallel-tools", "--scenario=n2")
    assert result.returncode == 0
    assert '⚙ get_weather({"city":"東京","days":3})\n⚙ get_time({"timezone":"Asia/Tokyo"})\n' in result.stdout
    assert '  parsed get_time: {"timezone": "Asia/Tokyo"}' in result.stdout
    assert "  choice 1 (not typed out above): Hello! How can I help you today?" in result.stdout


def test_demo_without_a_loopback_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from ssestate.cli import demo

    def no_server(*args: object, **kwargs: object) -> object:
        raise OSError(99, "Cannot assign requested address")

    monkeypatch.setattr(demo, "ScriptServer", no_server)
    result = call(monkeypatch, "demo")
    assert (result.returncode, result.stderr) == (
        1,
        "ssestate demo: cannot start the loopback server: Cannot assign requested address\n",
    )
