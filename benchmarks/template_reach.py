"""How many of the chunks real servers send ChatStream reads from a template.

Theory of operation: for every captured 200 ``text/event-stream`` body under
``tests/captures`` (one per server dialect of DIALECTS.md), each chunk that
carries exactly one varying string (one text member of its one choice's
delta, or one tool call's arguments) is followed by 20 copies of itself with
that string changed (the rest of the payload byte for byte the same, as a
server writes the chunks of one answer).  The extended body is read by one
``ChatStream`` (lenient, so that a capture's deliberate error does not stop
it), and every payload it read from a template instead of parsing it is
counted.  A capture without such a chunk is listed as such.

Run it with ``python -m benchmarks.template_reach``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ssestate._templates as templates
from ssestate import CLOSED, ChatStream, EventStreamParser, ProtocolError, ServerSentEvent

CAPTURES = Path(__file__).resolve().parent.parent / "tests" / "captures"
COPIES = 20
TEXT = ("content", "reasoning_content", "reasoning", "refusal")  # the members of a delta that hold text


def _varying(payload: str) -> str | None:
    """The one varying string of a chunk, if it has exactly one.  The rule is
    stated here on its own, not taken from ``_templates.text_hole``: the count of
    chunks a template could read must not be defined by the code it
    measures (a finished chunk counts here, and ChatStream parses it)."""
    try:
        chunk: Any = json.loads(payload)
    except ValueError:
        return None
    choices = chunk.get("choices") if type(chunk) is dict else None
    if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
        return None
    delta = choices[0].get("delta")
    if type(delta) is not dict:
        return None
    found = [v for k, v in delta.items() if k in TEXT and type(v) is str and v]
    calls = delta.get("tool_calls")
    if type(calls) is list and len(calls) == 1 and type(calls[0]) is dict and type(calls[0].get("function")) is dict:
        args = calls[0]["function"].get("arguments")
        if type(args) is str and args:
            found.append(args)
    return found[0] if len(found) == 1 else None


def _copies(payload: str) -> list[str]:
    """``COPIES`` copies of ``payload`` with its varying string changed, written
    as the payload writes it; none when that string is not found exactly once."""
    value = _varying(payload)
    if value is None:
        return []
    for ascii_only in (False, True):
        literal = json.dumps(value, ensure_ascii=ascii_only)
        if payload.count(literal) == 1:
            changed = (json.dumps(f"{value} {n}", ensure_ascii=ascii_only) for n in range(COPIES))
            return [payload.replace(literal, text) for text in changed]
    return []


def reach(path: Path) -> tuple[int, int]:
    """(payloads read from a template, chunks with one varying string) for
    the capture at ``path``, extended."""
    parser = EventStreamParser()
    parser.receive_data(path.read_bytes())
    parser.receive_data(b"")
    payloads: list[str] = []
    readable = 0
    while (event := parser.next_event()) is not CLOSED:
        if type(event) is ServerSentEvent:
            copies = _copies(event.data)
            payloads += [event.data, *copies]
            readable += len(copies) + bool(copies)
    read = 0
    fit = templates.Templates.fit

    def counting(self: templates.Templates, data: Any, out: list[Any]) -> bool:
        nonlocal read
        hit = fit(self, data, out)
        read += hit
        return hit

    stream = ChatStream(strict=False)
    templates.Templates.fit = counting  # type: ignore[method-assign]
    try:
        stream.receive_data("".join(f"data: {p}\n\n" for p in payloads).encode())
        stream.receive_data(b"")
        while stream.next_event() is not CLOSED:
            pass
    except ProtocolError:
        pass
    finally:
        templates.Templates.fit = fit  # type: ignore[method-assign]
    return read, readable


def main() -> None:
    total_read = total = 0
    for path in sorted(CAPTURES.glob("*.sse")):
        head = json.loads(path.with_suffix(".json").read_text())
        if head.get("status", 200) != 200 or "event-stream" not in head.get("content_type", "text/event-stream"):
            continue
        read, readable = reach(path)
        total_read += read
        total += readable
        print(f"{path.stem:36s} " + (f"{read:4d} / {readable:4d}" if readable else "no chunk with one varying string"))
    print(f"{'all':36s} {total_read:4d} / {total:4d} ({total_read / total:.0%})")


if __name__ == "__main__":
    main()
