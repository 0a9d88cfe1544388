"""Captured chat streams of real servers, replayed through ``ChatStream``.

``tests/captures/<server>-<scenario>.sse`` holds the raw HTTP body of one
response exactly as that server writes it (key order, spacing, line endings,
comments, first-chunk / finish / usage / ``[DONE]`` habits, error shapes), as
described in DIALECTS.md.  Beside it, ``<server>-<scenario>.json`` says:

* ``source`` -- which DIALECTS.md facts the capture reproduces;
* ``status`` and ``content_type`` -- the HTTP response head;
* ``events`` -- every event ``ChatStream(strict=True)`` must hand out, in
  order, up to ``CLOSED`` (each a JSON object: ``"event"`` names the class,
  the other members are its fields, all of them);
* ``raises`` -- ``"RemoteProtocolError"`` when the strict machine must raise
  after those events, else null;
* ``lenient_events`` -- what ``strict=False`` hands out instead, when that
  differs (otherwise the same list);
* ``metadata`` -- ``response_id``, ``model``, ``created``,
  ``system_fingerprint`` once the body has been read.

Every capture is fed under every chunking of ``helpers.chunkings`` and must
give exactly the same events every time.

Where SPEC §3 is silent the expectations assume the following (the same list
is in ``test_chat.py``; its rows and those of ``test_chat_errors.py`` pin
each one with a minimal case):

* A tool fragment that carries ``index`` keeps it, whatever its ``id``: the
  "a different id starts a new call" rule of SPEC §3 is read as part of the
  rule for fragments *without* ``index`` (``sglang-old-tool-ids``).
* ``type`` of a ``StreamError`` is the wire string as sent (LiteLLM's literal
  ``"None"`` stays ``"None"``); only ``code`` is normalised.
* An error body that is not an error object (HTML, an empty body) gives a
  ``StreamError`` whose ``body`` is the body's text and whose ``message``
  says ``HTTP <status> (<content type>): <the text's repr, cut after 120
  characters>`` or ``... : an empty body`` (the format ChatStream chose).
* A choice that only carries ``role`` still yields a ``Delta`` (content ""),
  also when the server repeats the role on every chunk (old Ollama,
  OpenRouter, DashScope, Together), as SPEC §3 says.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import chunkings, collect, feed_all

from ssestate import (
    CLOSED,
    NEED_DATA,
    ChatStream,
    Delta,
    Done,
    Finish,
    Heartbeat,
    StreamError,
    ToolCallFragment,
    Truncated,
    Usage,
)

CAPTURES = Path(__file__).parent / "captures"
NAMES = sorted(p.stem for p in CAPTURES.glob("*.sse"))
EVENT_CLASSES: dict[str, Any] = {
    cls.__name__: cls for cls in (Delta, ToolCallFragment, Finish, Usage, Done, Heartbeat, Truncated, StreamError)
}
METADATA = ("response_id", "model", "created", "system_fingerprint")


def decode_event(obj: dict[str, Any]) -> object:
    """Build the event a sidecar entry describes (all fields are given)."""
    fields = dict(obj)
    cls = EVENT_CLASSES[fields.pop("event")]
    return cls(**fields)


def load(name: str) -> tuple[bytes, dict[str, Any]]:
    body = (CAPTURES / f"{name}.sse").read_bytes()
    side = json.loads((CAPTURES / f"{name}.json").read_text(encoding="utf-8"))
    return body, side


def new_stream(side: dict[str, Any], strict: bool) -> ChatStream:
    return ChatStream(status_code=side["status"], content_type=side["content_type"], strict=strict)


def expected(side: dict[str, Any], strict: bool) -> tuple[list[object], str | None]:
    if strict:
        return [decode_event(e) for e in side["events"]], side["raises"]
    return [decode_event(e) for e in side.get("lenient_events", side["events"])], None


# --- the captures themselves ---------------------------------------------------------------


def test_every_capture_has_a_sidecar_and_back() -> None:
    sse = {p.stem for p in CAPTURES.glob("*.sse")}
    sidecars = {p.stem for p in CAPTURES.glob("*.json")}
    assert sse == sidecars
    assert len(sse) >= 50


@pytest.mark.parametrize("name", NAMES)
def test_sidecar_is_well_formed(name: str) -> None:
    _, side = load(name)
    assert set(side) <= {"source", "status", "content_type", "metadata", "events", "raises", "lenient_events"}
    assert side["source"].startswith("DIALECTS.md §")
    assert isinstance(side["status"], int)
    assert set(side["metadata"]) == set(METADATA)
    assert side["raises"] in (None, "RemoteProtocolError")
    assert ("lenient_events" in side) == (side["raises"] is not None)
    for entry in side["events"] + side.get("lenient_events", []):
        assert set(entry) - {"event"} == {f.name for f in dataclasses.fields(EVENT_CLASSES[entry["event"]])}


def _chunk_payloads(body: bytes) -> list[dict[str, Any]]:
    lines = body.decode().replace("\r\n", "\n").split("\n")
    return [json.loads(line[5:]) for line in lines if line.startswith("data:") and line[5:].strip() != "[DONE]"]


def key_orders(text: str) -> list[list[str]]:
    """The key order of every JSON object in ``text``."""
    orders: list[list[str]] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        orders.append([key for key, _ in pairs])
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)
    return orders


def test_captures_keep_their_dialects_bytes() -> None:
    """Spot checks that the files really have the habits they are named for."""
    gemini, _ = load("gemini-tool-calls")
    assert gemini.count(b"\n") == gemini.count(b"\r\n") > 0
    dashscope, _ = load("dashscope-no-space")
    assert b"data: " not in dashscope and dashscope.endswith(b"data:[DONE]\n\n")
    for name in ("azure-filter-first", "azure-content-filter", "azure-async-filter"):
        body, _ = load(name)
        for line in body.decode().split("\n"):
            if line.startswith("data: {"):
                assert all(keys == sorted(keys) for keys in key_orders(line[6:])), line
        assert _chunk_payloads(body)[0]["id"] == "" and _chunk_payloads(body)[0]["created"] == 0
    ollama, _ = load("ollama-tool-call")
    assert b"\\u003c" in ollama and b"\\u0026" in ollama and b"<" not in ollama and b"&" not in ollama
    llama, _ = load("llamacpp-text")
    assert b":\n\n" in llama and b'{"choices":[{"finish_reason":null,"index":0,"delta":' in llama
    old, _ = load("llamacpp-old-error-field")
    assert b"\nerror: {" in old
    for name in ("openai-midstream-error", "vllm-midstream-error", "litellm-midstream-error"):
        body, _ = load(name)
        assert b'data: {"error": {"' in body  # Python json.dumps spacing
    hermes = _chunk_payloads(load("vllm-hermes-tool-call")[0])
    first_call = next(p for p in hermes if p["choices"][0]["delta"].get("tool_calls"))
    assert "arguments" not in first_call["choices"][0]["delta"]["tool_calls"][0]["function"]
    gem = _chunk_payloads(gemini)
    assert all("index" not in call for p in gem for call in p["choices"][0]["delta"].get("tool_calls", []))
    for name in ("openai-http-400", "openai-http-429"):
        body, side = load(name)
        assert body.startswith(b'{\n  "error": {\n    "message": ') and side["status"] >= 400


# --- replaying them --------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_capture_strict_under_every_chunking(name: str) -> None:
    body, side = load(name)
    want, raises = expected(side, strict=True)
    for how, chunks in chunkings(body):
        got, error = collect(new_stream(side, strict=True), chunks)
        assert got == want, how
        if raises is None:
            assert error is None, f"{how}: {error}"
        else:
            assert type(error).__name__ == raises, how


@pytest.mark.parametrize("name", NAMES)
def test_capture_lenient(name: str) -> None:
    body, side = load(name)
    want, _ = expected(side, strict=False)
    for how, chunks in chunkings(body):
        if how.startswith(("whole", "bytewise", "random", "utf8-all", "crlf-all")):
            got, error = collect(new_stream(side, strict=False), chunks)
            assert error is None, f"{how}: {error}"
            assert got == want, how


@pytest.mark.parametrize("name", [n for n in NAMES if load(n)[1]["raises"] is None])
def test_capture_keeps_the_sentinel_contract(name: str) -> None:
    body, side = load(name)
    want, _ = expected(side, strict=True)
    assert feed_all(new_stream(side, strict=True), [body] if body else []) == [*want, CLOSED]


@pytest.mark.parametrize("name", NAMES)
def test_capture_metadata(name: str) -> None:
    body, side = load(name)
    for chunks in ([body] if body else [], [body[i : i + 1] for i in range(len(body))]):
        stream = new_stream(side, strict=False)
        collect(stream, chunks)
        assert {attr: getattr(stream, attr) for attr in METADATA} == side["metadata"]


@pytest.mark.parametrize("name", [n for n in NAMES if {"event": "Done", "sentinel": True} in load(n)[1]["events"]])
def test_done_is_handed_out_before_end_of_stream(name: str) -> None:
    """``[DONE]`` ends the stream at once: a connection that stays open
    afterwards must not hold back ``Done`` or any event before it."""
    body, side = load(name)
    want, _ = expected(side, strict=True)
    for how, chunks in chunkings(body):
        if how in ("whole", "bytewise", "random-16"):
            stream = new_stream(side, strict=True)
            got = feed_all(stream, chunks, eof=False)
            assert got == want, how
            assert stream.next_event() is NEED_DATA
            stream.receive_data(b"")
            assert stream.next_event() is CLOSED
            assert stream.next_event() is CLOSED


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in NAMES
        if load(n)[1]["status"] // 100 != 2 or not load(n)[1]["content_type"].lower().startswith("text/event-stream")
    ],
)
def test_bodies_that_are_not_streams_wait_for_end_of_stream(name: str) -> None:
    body, side = load(name)
    want, _ = expected(side, strict=True)
    stream = new_stream(side, strict=True)
    if body:
        assert feed_all(stream, [body], eof=False) == []
    assert feed_all(stream, []) == [*want, CLOSED]
