"""Captures of the OpenAI Responses API, Anthropic Messages and Gemini streams,
checked against themselves before any reader of those formats exists.

``tests/captures/apis/<dialect>/<scenario>.sse`` holds the raw HTTP body of
one response as that API writes it (event lines, key order, padding, line
endings, sequence numbers).  Beside it, ``<scenario>.json`` says:

* ``dialect`` -- ``"openai-responses"``, ``"anthropic"`` or ``"gemini"``
  (the directory's name), the value to pass as ``ChatStream(dialect=...)``;
* ``source`` -- which facts of OTHER-APIS.md the capture reproduces;
* ``status`` and ``content_type`` -- the HTTP response head;
* ``metadata`` -- ``response_id``, ``model``, ``created``,
  ``system_fingerprint`` once the body has been read;
* ``events`` -- every event ``ChatStream(dialect=...)`` must hand out, in
  order, up to ``CLOSED``, in the form of ``test_dialects.py`` (``"event"``
  names the class, the other members are all of its fields; ``Finish``
  carries ``native``);
* ``raises`` -- null, or ``"RemoteProtocolError"`` when the machine must
  raise after those events;
* ``expected`` -- what ``Accumulator`` must end with: ``choices`` keyed by
  the choice index as a string, each with ``content``, ``reasoning``,
  ``refusal``, ``role``, ``finish_reason``, ``native_finish_reason`` and
  ``tool_calls`` (``id``, ``name``, ``arguments``); ``usage``
  (``prompt_tokens``, ``completion_tokens``, ``total_tokens``) or null; and
  ``outcome`` (SPEC §4).

Where OTHER-APIS.md §4 leaves a mapping open, the captures follow the
choices README.md lists under "Other APIs".

Each capture is checked three ways, so that a slip in any one place shows:

1. the bytes: they frame cleanly with ``EventStreamParser`` under every
   chunking, every ``data`` payload is JSON, and the API's own habits are
   there (event names equal ``data.type``, consecutive sequence numbers,
   Gemini's CRLF ...);
2. the events against the contract: each ``Finish`` maps its native word as
   OTHER-APIS.md §4.4 says, each ``Usage`` adds up its ``raw`` object as
   §4.5 says, end markers, keep-alives and errors are counted on the wire;
3. the events against ``expected``, and ``expected`` against the wire: the
   message the events assemble to (SPEC §4 rules) and the outcome they lead
   to are ``expected``, and the text, tool calls, usage and finish word read
   straight from the wire payloads are ``expected`` too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers import chunkings, feed_all

from ssestate import CLOSED, EventStreamParser, Heartbeat, ServerSentEvent, Truncated

APIS = Path(__file__).parent / "captures" / "apis"
DIALECTS = ("openai-responses", "anthropic", "gemini")
NAMES = sorted(f"{p.parent.name}/{p.stem}" for d in DIALECTS for p in (APIS / d).glob("*.sse"))

# The public fields of each event class (SPEC §3, and Continuation, which
# carries what the next request must send back), in the order of the table.
FIELDS: dict[str, tuple[str, ...]] = {
    "Delta": ("choice", "content", "role", "reasoning", "refusal", "logprobs"),
    "ToolCallFragment": ("choice", "index", "id", "name", "arguments"),
    "Finish": ("choice", "reason", "native"),
    "Usage": ("prompt_tokens", "completion_tokens", "total_tokens", "raw"),
    "Done": ("sentinel",),
    "Heartbeat": ("comment",),
    "Truncated": ("reason", "pending"),
    "StreamError": ("status", "code", "message", "type", "body"),
    "Continuation": ("choice", "kind", "data", "index"),
}
SIDECAR_KEYS = {"dialect", "source", "status", "content_type", "metadata", "events", "raises", "expected"}
CHOICE_KEYS = {"content", "reasoning", "refusal", "role", "finish_reason", "native_finish_reason", "tool_calls"}
METADATA_KEYS = {"response_id", "model", "created", "system_fingerprint"}
OUTCOMES = {"error", "in-progress", "truncated", "length", "filtered", "complete"}

# OTHER-APIS.md §4.4: native finish words that are not a normal end.
NATIVE_TO_REASON: dict[str, dict[str, str]] = {
    "openai-responses": {"max_output_tokens": "length", "content_filter": "content_filter", "failed": "error"},
    "anthropic": {
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "refusal": "content_filter",
        "tool_use": "tool_calls",
    },
    "gemini": {
        "MAX_TOKENS": "length",
        **dict.fromkeys(
            (
                "SAFETY",
                "RECITATION",
                "BLOCKLIST",
                "PROHIBITED_CONTENT",
                "SPII",
                "IMAGE_SAFETY",
                "IMAGE_PROHIBITED_CONTENT",
                "IMAGE_RECITATION",
            ),
            "content_filter",
        ),
    },
}
# A normal end becomes tool_calls when the choice made tool calls, else stop.
NORMAL_END = {"openai-responses": {"completed"}, "anthropic": {"end_turn", "stop_sequence"}, "gemini": {"STOP"}}
GEMINI_BLOCK_REASONS = {
    "SAFETY",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "IMAGE_SAFETY",
    "MODEL_ARMOR",
    "JAILBREAK",
}
ERROR_REASONS = {"error", "insufficient_system_resource"}


def load(name: str) -> tuple[bytes, dict[str, Any]]:
    path = APIS / name
    body = path.with_suffix(".sse").read_bytes()
    side = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    return body, side


def frame(chunks: Iterable[bytes]) -> list[Any]:
    """What the framing layer hands out for ``chunks`` then end of stream."""
    events = feed_all(EventStreamParser(), list(chunks))
    assert events[-1] is CLOSED
    return events[:-1]


def sse_events(body: bytes) -> list[ServerSentEvent]:
    return [e for e in frame([body] if body else []) if isinstance(e, ServerSentEvent)]


def payloads(body: bytes) -> list[dict[str, Any]]:
    """The JSON payload of every dispatched event, ``[DONE]`` left out."""
    return [json.loads(sse.data) for sse in sse_events(body) if sse.data.strip() != "[DONE]"]


def raw_lines(body: bytes) -> str:
    """The text of the lines that are not SSE fields of their own (Gemini's
    raw JSON errors): neither ``data``, ``event``, a comment nor blank."""
    lines = body.decode().replace("\r\n", "\n").split("\n")
    return "\n".join(line for line in lines if line and not line.startswith(("data:", "event:", ":")))


def choice_key(entry: Mapping[str, Any]) -> str:
    return str(entry["choice"])


# --- 0. the files --------------------------------------------------------------------------------


def test_every_capture_has_a_sidecar_and_back() -> None:
    for dialect in DIALECTS:
        sse = {p.stem for p in (APIS / dialect).glob("*.sse")}
        sidecars = {p.stem for p in (APIS / dialect).glob("*.json")}
        assert sse == sidecars, dialect
        assert len(sse) >= 12, f"{dialect}: only {len(sse)} captures"
    assert {p.name for p in APIS.iterdir() if p.is_dir()} == set(DIALECTS)


def test_the_readme_lists_the_choices_of_each_api() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Other APIs", 1)[1].split("\n## ", 1)[0]
    text = section.split("Where the mapping leaves a choice open", 1)[1]
    choices = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(choices) >= 10
    for line in choices:
        assert line.startswith(('- `"auto"`:', "- All three:", "- Responses:", "- Anthropic:", "- Gemini:")), line


@pytest.mark.parametrize("name", NAMES)
def test_sidecar_is_well_formed(name: str) -> None:
    _, side = load(name)
    assert set(side) == SIDECAR_KEYS
    assert side["dialect"] == name.split("/")[0]
    assert side["source"].startswith("OTHER-APIS.md §")
    assert isinstance(side["status"], int)
    assert isinstance(side["content_type"], str)
    assert side["content_type"].startswith("text/event-stream")
    assert set(side["metadata"]) == METADATA_KEYS
    assert side["raises"] in (None, "RemoteProtocolError")
    assert side["events"], "a capture hands out at least one event"
    for entry in side["events"]:
        kind = entry["event"]
        assert kind in FIELDS, kind
        assert list(entry)[1:] == list(FIELDS[kind]), entry
    expected = side["expected"]
    assert set(expected) == {"choices", "usage", "outcome"}
    assert expected["outcome"] in OUTCOMES
    for key, choice in expected["choices"].items():
        assert key == str(int(key))
        assert set(choice) == CHOICE_KEYS
        assert isinstance(choice["content"], str)
        for call in choice["tool_calls"]:
            assert set(call) == {"id", "name", "arguments"}
            assert isinstance(call["name"], str)
            assert isinstance(call["arguments"], str)
    if expected["usage"] is not None:
        assert set(expected["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


# --- 1. the bytes --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_frames_cleanly_under_every_chunking(name: str) -> None:
    body, side = load(name)
    whole = frame([body])
    for how, chunks in chunkings(body):
        assert frame(chunks) == whole, how
    # the framing layer sees an unfinished event exactly where the sidecar says so
    framed_cut = [(e.reason, e.pending) for e in whole if isinstance(e, Truncated)]
    listed_cut = [(e["reason"], e["pending"]) for e in side["events"] if e["event"] == "Truncated"]
    assert framed_cut == [c for c in listed_cut if c[0] == "partial-event"]
    # comment lines are not how these APIs keep a connection alive
    assert not any(isinstance(e, Heartbeat) for e in whole)


@pytest.mark.parametrize("name", NAMES)
def test_every_data_payload_is_a_json_object(name: str) -> None:
    body, _ = load(name)
    events = sse_events(body)
    assert events or raw_lines(body)
    for sse in events:
        if sse.data.strip() == "[DONE]":
            continue
        assert isinstance(json.loads(sse.data), dict), sse.data[:80]
    extra = raw_lines(body)
    if extra:
        assert isinstance(json.loads(extra), dict)


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("openai-responses/")])
def test_responses_bytes(name: str) -> None:
    body, _ = load(name)
    assert b"\r" not in body
    events = sse_events(body)
    named = any(sse.event != "message" for sse in events)
    numbers = []
    for sse in events:
        if sse.data.strip() == "[DONE]":
            assert not named, "only a gateway that drops event lines adds [DONE]"
            continue
        obj = json.loads(sse.data)
        keys = list(obj)
        assert keys[0] == "type"
        if named:
            assert sse.event == obj["type"]
        if obj["type"] != "error":
            # the error event keeps the key order it was captured with
            assert keys[1:] == sorted(keys[1:]), keys
        numbers.append(obj["sequence_number"])
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert numbers[0] == 0


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("anthropic/")])
def test_anthropic_bytes(name: str) -> None:
    body, _ = load(name)
    assert b"\r" not in body
    events = sse_events(body)
    named = any(sse.event != "message" for sse in events)
    for sse in events:
        if sse.data.strip() == "[DONE]":
            assert not named
            continue
        obj = json.loads(sse.data)
        if named:
            assert sse.event == obj["type"]
        if obj["type"] in ("ping", "error"):
            assert sse.data.startswith('{"type": "'), "ping and error use Python spacing"


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("gemini/")])
def test_gemini_bytes(name: str) -> None:
    body, _ = load(name)
    lines = body.split(b"\n")
    assert lines[-1] == b"", "the body ends with a line end"
    for line in lines[:-1]:
        assert line, "no LF-only blank line"
        if line.startswith(b"data:") or line == b"\r":
            assert line.endswith(b"\r"), line[:60]
        else:
            # raw JSON error lines are the only other lines (their line ends are not known; LF here)
            assert not line.endswith(b"\r"), line
    assert b"event:" not in body and b"[DONE]" not in body
    for sse in sse_events(body):
        assert sse.event == "message"


def test_captures_keep_the_habits_they_are_named_for() -> None:
    body, _ = load("openai-responses/text")
    assert b'"obfuscation":"' in body and "«Ça".encode() in body
    body, _ = load("openai-responses/gateway-no-event-lines-done")
    assert b"event:" not in body and body.endswith(b"data: [DONE]\n\n")
    body, _ = load("openai-responses/error-nested")
    assert b'data: {"type":"error","sequence_number":' in body and b'"error":{"type":"server_error"' in body
    body, _ = load("openai-responses/tool-args-in-done-only")
    assert b"function_call_arguments.delta" not in body and b"function_call_arguments.done" in body
    body, _ = load("anthropic/text")
    assert b'"usage":{' in body and b"}             }\n" in body and b'data: {"type": "ping"}\n' in body
    body, _ = load("anthropic/tool-no-args")
    assert body.count(b'"partial_json":""') == 1
    body, _ = load("anthropic/gateway-no-event-lines")
    assert b"event:" not in body and body.endswith(b"data: [DONE]\n\n")
    body, _ = load("gemini/data-without-space")
    assert b"data: " not in body and body.startswith(b'data:{"candidates":[')
    body, _ = load("gemini/text")
    assert body.startswith(b'data: {"candidates": [{"content": {"parts": [{"text": "')
    body, _ = load("gemini/error-after-stop-raw-json")
    assert b'"finishReason": "STOP"}],' in body and b'\r\n\r\n{\n  "error": {\n    "code": 503,\n' in body
    assert body.endswith(b'"status": "UNAVAILABLE"\n  }\n}\n')
    for name in ("gemini/usage-without-counts", "gemini/function-call-no-args", "gemini/error-after-stop-raw-json"):
        assert all("index" not in c for p in payloads(load(name)[0]) for c in p.get("candidates", [])), name


OPAQUE_KEYS = {"encrypted_content", "signature", "data", "thoughtSignature", "encrypted_index"}


def opaque_values(obj: Any) -> Iterable[tuple[str, str]]:
    """Every non-empty string under a key that holds opaque continuation data."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in OPAQUE_KEYS and isinstance(value, str) and value:
                yield key, value
            else:
                yield from opaque_values(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from opaque_values(value)


@pytest.mark.parametrize("name", NAMES)
def test_opaque_continuation_data_is_base64(name: str) -> None:
    """Signatures and ciphertexts must survive an SDK that decodes them
    (google-genai validates thoughtSignature as base64)."""
    body, _ = load(name)
    for key, value in opaque_values(payloads(body)):
        alphabet = "-_" if key == "encrypted_content" else "+/"
        assert base64.b64decode(value, altchars=alphabet.encode(), validate=True), (key, value[:20])


# --- 2. the events against the contract ----------------------------------------------------------


def mapped(dialect: str, native: str, made_calls: bool) -> str:
    if native in NORMAL_END[dialect]:
        return "tool_calls" if made_calls else "stop"
    return NATIVE_TO_REASON[dialect].get(native, native)


def usage_counts(dialect: str, raw: Mapping[str, Any]) -> tuple[int, int, int]:
    """OTHER-APIS.md §4.5: (prompt, completion, total) of a native usage object."""
    if dialect == "openai-responses":
        return raw["input_tokens"], raw["output_tokens"], raw["total_tokens"]
    if dialect == "anthropic":
        prompt = (
            raw.get("input_tokens", 0)
            + raw.get("cache_creation_input_tokens", 0)
            + raw.get("cache_read_input_tokens", 0)
        )
        return prompt, raw["output_tokens"], prompt + raw["output_tokens"]
    completion = raw.get("candidatesTokenCount", 0) + raw.get("thoughtsTokenCount", 0)
    return raw.get("promptTokenCount", 0), completion, raw.get("totalTokenCount", 0)


@pytest.mark.parametrize("name", NAMES)
def test_finish_words_follow_the_mapping(name: str) -> None:
    _, side = load(name)
    dialect = side["dialect"]
    calls: set[str] = set()
    deltas: set[str] = set()
    for entry in side["events"]:
        if entry["event"] == "ToolCallFragment":
            calls.add(choice_key(entry))
        elif entry["event"] == "Delta":
            deltas.add(choice_key(entry))
        elif entry["event"] == "Finish":
            native = entry["native"]
            # the server's own word is kept for every Finish of these formats (README, Other APIs)
            assert isinstance(native, str) and native
            if dialect == "gemini" and choice_key(entry) not in deltas and native in GEMINI_BLOCK_REASONS:
                assert entry["reason"] == "content_filter", entry  # a blocked prompt
            else:
                assert entry["reason"] == mapped(dialect, native, choice_key(entry) in calls), entry


@pytest.mark.parametrize("name", NAMES)
def test_usage_events_add_up_their_raw_object(name: str) -> None:
    _, side = load(name)
    for entry in side["events"]:
        if entry["event"] == "Usage":
            counts = (entry["prompt_tokens"], entry["completion_tokens"], entry["total_tokens"])
            assert counts == usage_counts(side["dialect"], entry["raw"]), entry


@pytest.mark.parametrize("name", NAMES)
def test_end_markers_keepalives_and_errors_are_counted_on_the_wire(name: str) -> None:
    body, side = load(name)
    dialect = side["dialect"]
    kinds = [e["event"] for e in side["events"]]
    wire = payloads(body)
    types = [p.get("type") for p in wire]

    if side["raises"] is None:
        assert kinds[-1] in ("Done", "Truncated")
    assert kinds.count("Done") + kinds.count("Truncated") == 1

    if dialect == "openai-responses":
        marker = any(t in ("response.completed", "response.incomplete", "response.failed") for t in types)
        keepalives = types.count("keepalive")
        errors = types.count("error") + types.count("response.failed")
        comment = "keepalive"
    elif dialect == "anthropic":
        marker = "message_stop" in types
        keepalives = types.count("ping")
        errors = types.count("error")
        comment = "ping"
    else:
        marker = False
        keepalives = 0
        errors = sum(1 for p in wire if p.get("error")) + (1 if raw_lines(body) else 0)
        comment = ""
    assert ({"event": "Done", "sentinel": True} in side["events"]) == marker
    beats = [e for e in side["events"] if e["event"] == "Heartbeat"]
    assert len(beats) == keepalives
    assert all(e["comment"] == comment for e in beats)
    assert kinds.count("StreamError") == errors
    for entry in side["events"]:
        if entry["event"] == "StreamError":
            assert entry["status"] is None, "an error inside a 200 stream has no HTTP status"
            assert entry["code"] is None or isinstance(entry["code"], str)
            assert entry["message"]
            assert isinstance(entry["body"], dict)


# --- 3. the events against expected, and expected against the wire ------------------------------


def assemble(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Fold the listed events as SPEC §4 tells ``Accumulator`` to."""
    choices: dict[str, dict[str, Any]] = {}
    calls: dict[str, dict[int, dict[str, Any]]] = {}
    usage = None

    def slot(key: str) -> dict[str, Any]:
        if key not in choices:
            choices[key] = {
                "content": "",
                "reasoning": None,
                "refusal": None,
                "role": None,
                "finish_reason": None,
                "native_finish_reason": None,
                "tool_calls": [],
            }
            calls[key] = {}
        return choices[key]

    for e in events:
        kind = e["event"]
        if kind == "Delta":
            c = slot(choice_key(e))
            if e["role"] is not None:
                c["role"] = e["role"]
            c["content"] += e["content"]
            for field in ("reasoning", "refusal"):
                if e[field] is not None:
                    c[field] = (c[field] or "") + e[field]
        elif kind == "ToolCallFragment":
            slot(choice_key(e))
            call = calls[choice_key(e)].setdefault(e["index"], {"id": None, "name": "", "arguments": ""})
            if e["id"] and call["id"] is None:
                call["id"] = e["id"]
            if e["name"] and e["name"] != call["name"]:
                call["name"] += e["name"]
            call["arguments"] += e["arguments"]
        elif kind == "Finish":
            c = slot(choice_key(e))
            c["finish_reason"], c["native_finish_reason"] = e["reason"], e["native"]
        elif kind == "Usage":
            usage = {k: e[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    for key, c in choices.items():
        c["tool_calls"] = [calls[key][i] for i in sorted(calls[key])]
    return {"choices": choices, "usage": usage}


def outcome(events: list[dict[str, Any]]) -> str:
    """SPEC §4 ``acc.outcome``, computed from the listed events."""
    started: set[str] = set()
    finished: dict[str, str] = {}
    failed = False
    end: dict[str, Any] | None = None
    cut = False
    for e in events:
        kind = e["event"]
        if kind in ("Delta", "ToolCallFragment", "Finish"):
            started.add(choice_key(e))
        if kind == "Finish":
            finished[choice_key(e)] = e["reason"]
            failed = failed or e["reason"] in ERROR_REASONS
        elif kind == "StreamError":
            failed = True
        elif kind in ("Done", "Truncated") and end is None:
            end = e
            unfinished = bool(started - set(finished))
            cut = unfinished or (kind == "Truncated" and (not started or e["reason"] == "eof-before-done"))
    if failed:
        return "error"
    if end is None:
        return "in-progress"
    if cut:
        return "truncated"
    if "length" in finished.values():
        return "length"
    if "content_filter" in finished.values():
        return "filtered"
    return "complete"


@pytest.mark.parametrize("name", NAMES)
def test_events_assemble_to_expected(name: str) -> None:
    _, side = load(name)
    got = assemble(side["events"])
    assert got["choices"] == side["expected"]["choices"]
    assert got["usage"] == side["expected"]["usage"]
    assert outcome(side["events"]) == side["expected"]["outcome"]


def wire_view(dialect: str, body: bytes) -> dict[str, Any]:
    """Text, tool calls, finish word, usage and metadata read straight from
    the wire payloads, without going through the listed events."""
    choices: dict[str, dict[str, Any]] = {}
    view: dict[str, Any] = {"choices": choices, "usage": None, "metadata": None}

    def slot(key: str) -> dict[str, Any]:
        return choices.setdefault(key, {"content": "", "reasoning": None, "refusal": None, "native": None, "tools": []})

    def add(c: dict[str, Any], field: str, text: str) -> None:
        c[field] = (c[field] or "") + text

    wire = payloads(body)
    if dialect == "openai-responses":
        args: dict[str, str] = {}
        for p in wire:
            kind = p["type"]
            if kind.startswith("response.") and "response" in p and view["metadata"] is None:
                r = p["response"]
                view["metadata"] = {"response_id": r["id"], "model": r["model"], "created": r["created_at"]}
                slot("0")
            if kind == "response.output_text.delta":
                add(slot("0"), "content", p["delta"])
            elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                add(slot("0"), "reasoning", p["delta"])
            elif kind == "response.refusal.delta":
                add(slot("0"), "refusal", p["delta"])
            elif kind == "response.output_item.added" and p["item"]["type"] == "function_call":
                slot("0")["tools"].append([p["item"]["call_id"], p["item"]["name"], p["item"]["id"]])
            elif kind == "response.function_call_arguments.done":
                args[p["item_id"]] = p["arguments"]
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                r = p["response"]
                details = r.get("incomplete_details") or {}
                slot("0")["native"] = details.get("reason") or r["status"]
                view["usage"] = r["usage"] or view["usage"]
        for tool in view["choices"].get("0", {}).get("tools", []):
            tool[2] = args[tool[2]]
    elif dialect == "anthropic":
        blocks: dict[int, dict[str, Any]] = {}
        merged: dict[str, Any] = {}
        for p in wire:
            kind = p["type"]
            if kind == "message_start":
                m = p["message"]
                view["metadata"] = {"response_id": m["id"], "model": m["model"], "created": None}
                merged = dict(m["usage"])
                view["usage"] = merged
                slot("0")
            elif kind == "content_block_start":
                blocks[p["index"]] = {"block": p["content_block"], "json": ""}
            elif kind == "content_block_delta":
                d = p["delta"]
                if d["type"] == "text_delta":
                    add(slot("0"), "content", d["text"])
                elif d["type"] == "thinking_delta":
                    add(slot("0"), "reasoning", d["thinking"])
                elif d["type"] == "input_json_delta":
                    blocks[p["index"]]["json"] += d["partial_json"]
            elif kind == "message_delta":
                merged.update(p["usage"])
                if p["delta"].get("stop_reason"):
                    slot("0")["native"] = p["delta"]["stop_reason"]
        for _, info in sorted(blocks.items()):
            block = info["block"]
            if block["type"] == "tool_use":
                arguments = info["json"] or json.dumps(block["input"], separators=(",", ":"))
                slot("0")["tools"].append([block["id"], block["name"], arguments])
    else:
        for p in wire:
            if view["metadata"] is None:
                view["metadata"] = {"response_id": p.get("responseId"), "model": p.get("modelVersion"), "created": None}
            for pos, cand in enumerate(p.get("candidates") or []):
                c = slot(str(cand.get("index", pos)))
                for part in (cand.get("content") or {}).get("parts") or []:
                    if "functionCall" in part:
                        fc = part["functionCall"]
                        c["tools"].append([fc.get("id"), fc["name"], json.dumps(fc.get("args") or {})])
                    elif part.get("text"):
                        add(c, "reasoning" if part.get("thought") else "content", part["text"])
                if cand.get("finishReason"):
                    c["native"] = cand["finishReason"]
            if not p.get("candidates") and (p.get("promptFeedback") or {}).get("blockReason"):
                slot("0")["native"] = p["promptFeedback"]["blockReason"]
            counts = p.get("usageMetadata") or {}
            if any(k.endswith("TokenCount") for k in counts):
                view["usage"] = counts
    if view["usage"] is not None:
        prompt, completion, total = usage_counts(dialect, view["usage"])
        view["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
    return view


def same_arguments(a: str, b: str) -> bool:
    """Equal as JSON when both parse (the serialisation of a whole Gemini
    ``args`` object is ssestate's), else equal as text."""
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a == b


@pytest.mark.parametrize("name", NAMES)
def test_expected_agrees_with_the_wire(name: str) -> None:
    body, side = load(name)
    view = wire_view(side["dialect"], body)
    expected = side["expected"]
    assert set(view["choices"]) == set(expected["choices"])
    for key, want in expected["choices"].items():
        got = view["choices"][key]
        assert (got["content"], got["reasoning"], got["refusal"]) == (
            want["content"],
            want["reasoning"],
            want["refusal"],
        )
        assert got["native"] == want["native_finish_reason"]
        assert len(got["tools"]) == len(want["tool_calls"])
        for (call_id, tool_name, arguments), call in zip(got["tools"], want["tool_calls"], strict=True):
            assert (call_id, tool_name) == (call["id"], call["name"])
            assert same_arguments(arguments, call["arguments"]), (arguments, call["arguments"])
    assert view["usage"] == expected["usage"]
    if view["metadata"] is not None:
        assert view["metadata"] == {k: side["metadata"][k] for k in ("response_id", "model", "created")}
    else:
        assert set(side["metadata"].values()) == {None}
    assert side["metadata"]["system_fingerprint"] is None
