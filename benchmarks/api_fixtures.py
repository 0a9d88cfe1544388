"""Seeded streams of the Responses API, Anthropic Messages and Gemini.

Theory of operation: each generator writes one answer of ``n`` text pieces
(the token mix of ``fixtures.py``: ASCII, CJK, emoji) the way its API writes
it, envelope, key order, padding and line endings included (see
OTHER-APIS.md §0-§3): Responses events with ``event:`` lines, sorted keys,
``obfuscation`` padding and sequence numbers; Anthropic events with their
padded payloads and a ``ping``; Gemini chunks with CRLF, a role, the text
and the usage so far.  The same arguments give byte-identical output.

A ``Fixture``'s payloads are every ``data`` payload, what the ``json.loads``
floor decodes.
"""

from __future__ import annotations

import random

from .fixtures import SEED, Fixture, _alnum, _dumps, _piece

__all__ = ["anthropic_stream", "gemini_stream", "responses_stream"]


def _sse(events: list[tuple[str | None, str]], newline: str = "\n") -> bytes:
    out = []
    for event, data in events:
        head = f"event: {event}{newline}" if event else ""
        out.append(f"{head}data: {data}{newline}{newline}")
    return "".join(out).encode()


def _fixture(name: str, events: list[tuple[str | None, str]], newline: str = "\n") -> Fixture:
    return Fixture(name, _sse(events, newline), tuple(data for _, data in events))


def responses_stream(n_chunks: int = 500, seed: int = SEED) -> Fixture:
    """A Responses API answer: created, in_progress, the message item and its
    part, ``n_chunks`` output_text.delta events, then the .done events and
    response.completed with usage."""
    rng = random.Random(seed)
    resp_id, msg_id = "resp_" + _alnum(rng, 48), "msg_" + _alnum(rng, 48)
    response = {
        "id": resp_id,
        "object": "response",
        "created_at": 1768300000,
        "status": "in_progress",
        "model": "gpt-5",
    }
    seq = iter(range(10**9))
    events: list[tuple[str | None, str]] = []

    def add(kind: str, **fields: object) -> None:
        events.append((kind, _dumps({"type": kind, **dict(sorted({**fields, "sequence_number": next(seq)}.items()))})))

    add("response.created", response=response)
    add("response.in_progress", response=response)
    item = {"id": msg_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
    add("response.output_item.added", item=item, output_index=0)
    add(
        "response.content_part.added",
        content_index=0,
        item_id=msg_id,
        output_index=0,
        part={"type": "output_text", "text": ""},
    )
    text = []
    for _ in range(n_chunks):
        piece = _piece(rng)
        text.append(piece)
        pad = _alnum(rng, rng.randrange(1, 16))
        add(
            "response.output_text.delta",
            content_index=0,
            delta=piece,
            item_id=msg_id,
            logprobs=[],
            obfuscation=pad,
            output_index=0,
        )
    whole = "".join(text)
    add("response.output_text.done", content_index=0, item_id=msg_id, logprobs=[], output_index=0, text=whole)
    add("response.output_item.done", item={**item, "status": "completed"}, output_index=0)
    usage = {"input_tokens": 37, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": n_chunks,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 37 + n_chunks}  # fmt: skip
    add("response.completed", response={**response, "status": "completed", "usage": usage})
    return _fixture("responses", events)


def anthropic_stream(n_chunks: int = 500, seed: int = SEED) -> Fixture:
    """An Anthropic Messages answer: message_start, a text block of
    ``n_chunks`` text_delta events (a ping among them), message_delta with
    the stop reason and usage, message_stop."""
    rng = random.Random(seed)
    message = {"model": "claude-sonnet-4-5", "id": "msg_" + _alnum(rng, 24), "type": "message", "role": "assistant",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                         "output_tokens": 1, "service_tier": "standard"}}  # fmt: skip
    events: list[tuple[str | None, str]] = [("message_start", _dumps({"type": "message_start", "message": message}))]
    events.append(
        (
            "content_block_start",
            _dumps({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )
    )
    events.append(("ping", '{"type": "ping"}'))
    for _ in range(n_chunks):
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": _piece(rng)}}
        events.append(("content_block_delta", _dumps(delta)))
    events.append(("content_block_stop", '{"type":"content_block_stop","index":0          }'))
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": n_chunks},
    }
    events.append(("message_delta", _dumps(end)))
    events.append(("message_stop", '{"type":"message_stop"            }'))
    return _fixture("anthropic", events)


def gemini_stream(n_chunks: int = 500, seed: int = SEED) -> Fixture:
    """A Gemini ``alt=sse`` answer: ``n_chunks`` chunks of one text part each,
    with the usage so far, the last with ``finishReason: STOP``; CRLF."""
    rng = random.Random(seed)
    events: list[tuple[str | None, str]] = []
    for k in range(n_chunks):
        candidate: dict[str, object] = {"content": {"parts": [{"text": _piece(rng)}], "role": "model"}, "index": 0}
        if k == n_chunks - 1:
            candidate["finishReason"] = "STOP"
        usage = {"promptTokenCount": 9, "candidatesTokenCount": k + 1, "totalTokenCount": 10 + k}
        chunk = {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": "gemini-2.5-flash",
            "responseId": "r1",
        }
        events.append((None, json_google(chunk)))
    return _fixture("gemini", events, "\r\n")


def json_google(obj: object) -> str:
    """Gemini's own JSON spacing: ``", "`` and ``": "`` between members."""
    import json

    return json.dumps(obj, ensure_ascii=False)
