"""The gateway of README.md ("Translate one API into another"), run as it is
printed: the code block is executed, its ``httpx.stream`` answered in memory
by Anthropic captures sent a few bytes at a time.  What it yields must read
as Chat Completions with the capture's message, and its first bytes must go
out before the upstream body has all arrived: a gateway that buffered would
pass the first check and fail the second.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from eventgen import read_back

ROOT = Path(__file__).parent.parent
APIS = ROOT / "tests" / "captures" / "apis" / "anthropic"


def gateway_source() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Translate one API into another", 1)[1]
    code: list[str] = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.DOTALL)
    assert len(code) == 1
    return code[0]


def run_gateway(monkeypatch: pytest.MonkeyPatch, body: bytes, status: int = 200) -> tuple[list[bytes], list[int]]:
    """Run the README's function on ``body`` (sent in 7-byte pieces); return
    what it yielded and, for each yield, how many pieces had been sent."""
    sent: list[int] = [0]
    requests: list[httpx.Request] = []

    def pieces() -> Iterator[bytes]:
        for at in range(0, len(body), 7):
            sent[0] += 1
            yield body[at : at + 7]

    def answer(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(status, headers={"content-type": "text/event-stream"}, content=pieces())

    def stream(method: str, url: str, **kwargs: Any) -> Any:
        return httpx.Client(transport=httpx.MockTransport(answer)).stream(method, url, **kwargs)

    monkeypatch.setattr(httpx, "stream", stream)
    namespace: dict[str, Any] = {}
    exec(gateway_source(), namespace)
    out, when = [], []
    for data in namespace["chat_completions_from_anthropic"]({"model": "claude", "max_tokens": 64}, "sk-ant"):
        out.append(data)
        when.append(sent[0])
    [request] = requests
    assert json.loads(request.content)["stream"] is True
    assert request.headers["x-api-key"] == "sk-ant"
    return out, when


@pytest.mark.parametrize("name", ["text", "thinking", "parallel-tool-calls", "tool-no-args", "error-overloaded"])
def test_the_readme_gateway_translates_as_the_stream_arrives(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    body = (APIS / f"{name}.sse").read_bytes()
    out, when = run_gateway(monkeypatch, body)
    first = next(n for n, data in enumerate(out) if data)
    assert when[first] < len(body) // 7  # the first bytes went out before the body had all come
    expected = json.loads((APIS / f"{name}.json").read_text())["expected"]
    acc, _ = read_back("openai-chat", b"".join(out))
    choice = acc.choices[0]
    want = expected["choices"]["0"]
    assert (choice.content, choice.reasoning, choice.finish_reason) == (
        want["content"],
        want["reasoning"],
        want["finish_reason"],
    )
    assert [(t.id, t.name, t.parsed_arguments()) for t in choice.tool_calls] == [
        (t["id"], t["name"], json.loads(t["arguments"])) for t in want["tool_calls"]
    ]
    assert acc.outcome == expected["outcome"]


def test_the_readme_gateway_passes_an_http_error_on(monkeypatch: pytest.MonkeyPatch) -> None:
    error = b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
    out, _ = run_gateway(monkeypatch, error, status=401)
    acc, _ = read_back("openai-chat", b"".join(out))
    assert acc.outcome == "error"
    assert acc.error is not None
    assert acc.error.message == "invalid x-api-key"
