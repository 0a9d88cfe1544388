"""``ssestate inspect``: explain a captured response body and flag its problems.

Theory of operation
-------------------
``analyse`` feeds the body to a lenient ``ChatStream`` one line at a time,
so that each event is stamped with the byte offset at which it became
available.  Beside it, an ``EventStreamParser`` fed the same pieces and a
scan of the raw bytes look for what the chat layer tolerates silently: a
missing ``[DONE]``, data that is not JSON, a BOM, lone CRs, unknown fields,
invalid UTF-8, events after ``[DONE]``.  A body that is not an event stream
(by status or content type) is handed to the chat layer whole, as an HTTP
client would.

``--chunk`` and ``--random-chunks`` re-feed the body in adversarial pieces
(fixed sizes; random sizes with cuts inside CRLFs and UTF-8 characters) and
compare the events with the line-by-line reference: a difference would be a
bug in ssestate.  The exit status is 0 only for a complete outcome.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import random
import re
import sys
from typing import Any, cast

from .. import (
    Accumulator,
    ChatEvent,
    ChatStream,
    Delta,
    Done,
    EventStreamParser,
    Finish,
    Heartbeat,
    ProtocolError,
    Sentinel,
    ServerSentEvent,
    StreamError,
    ToolCallFragment,
    Truncated,
    Usage,
)
from ._common import (
    EXIT_OK,
    EXIT_OUTCOME,
    Formatter,
    Out,
    SubParsers,
    UsageError,
    arguments_of,
    count_of,
    error_text,
    positive_int,
    short,
)
from ._common import (
    status as http_status,
)

__all__ = ["Problem", "Report", "add_parser", "analyse", "run"]


def add_parser(sub: SubParsers) -> None:
    inspect = sub.add_parser(
        "inspect",
        help="explain a captured stream body and flag its problems",
        description="Read a captured response body (a file, or - for stdin), print a timeline of the chat "
        "events with the byte offset where each became available, the final message and every problem "
        "found: no [DONE], a truncated stream, non-JSON data, a stray BOM, lone-CR line endings, "
        "unknown fields, invalid UTF-8, events after [DONE], errors.\n\n"
        "exit status: 0 when the outcome is complete (warnings do not change it), 1 for any other "
        "outcome, 2 for bad usage or unreadable input.",
        epilog="examples:\n  curl -sN $URL/chat/completions -H 'Content-Type: application/json' -d @req.json"
        " | ssestate inspect -\n  ssestate inspect capture.txt --chunk 1 --random-chunks 42\n"
        "  ssestate inspect error.json --status 429 --content-type application/json\n"
        "  ssestate inspect capture.txt --json | jq -c 'select(.kind == \"Delta\")'",
        formatter_class=Formatter,
    )
    inspect.add_argument("file", metavar="FILE", help="the captured body, or - to read stdin")
    inspect.add_argument("--json", action="store_true", help="print one JSON object per line (events, then a summary)")
    inspect.add_argument(
        "--chunk", type=positive_int, metavar="N", help="also re-feed the body in N-byte chunks and compare"
    )
    inspect.add_argument(
        "--random-chunks",
        type=int,
        metavar="SEED",
        help="also re-feed it in random chunks (cut inside CRLFs and UTF-8 characters) and compare",
    )
    inspect.add_argument("--status", type=http_status, default=200, help="HTTP status of the capture (default: 200)")
    inspect.add_argument(
        "--content-type",
        metavar="TYPE",
        help="Content-Type of the capture (default: text/event-stream, or JSON/HTML when the body looks so)",
    )
    inspect.add_argument("-q", "--quiet", action="store_true", help="print only problems and the outcome")

@dataclasses.dataclass
class Problem:
    severity: str  # "warning" or "error"
    offset: int | None
    message: str


@dataclasses.dataclass
class Report:
    status: int
    content_type: str
    streaming: bool
    timeline: list[tuple[int, ChatEvent]]
    problems: list[Problem]
    acc: Accumulator
    chat: ChatStream
    note: str = ""


_LINE_END = re.compile(rb"\r\n|\r|\n")
_FIELDS = ("data", "event", "id", "retry")


def _events_of(machine: ChatStream, acc: Accumulator | None = None) -> list[ChatEvent]:
    events: list[ChatEvent] = []
    while True:
        ev = machine.next_event()
        if isinstance(ev, Sentinel):
            return events
        events.append(ev)
        if acc is not None:
            acc.feed(ev)


def _guess_content_type(body: bytes) -> tuple[str, str]:
    head = body.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head in (b"{", b"["):
        return "application/json", "looks like JSON"
    if head == b"<":
        return "text/html", "looks like HTML"
    return "text/event-stream", ""


def _scan_bytes(body: bytes, problems: list[Problem]) -> None:
    """Problems visible in the raw bytes of an event stream."""
    if body.startswith(b"\xef\xbb\xbf"):
        problems.append(
            Problem(
                "warning",
                0,
                "the stream starts with a UTF-8 BOM: WHATWG parsers drop it, naive ones "
                "read the first field name as '\\ufeffdata' and lose the first event",
            )
        )
    pos = body.find(b"\xef\xbb\xbf", 1)
    while pos != -1:
        at_line_start = body[pos - 1 : pos] in (b"\n", b"\r")
        what = (
            "starts a line: that line's field name is not 'data' and the line is ignored"
            if at_line_start
            else "inside a line is kept as text"
        )
        problems.append(Problem("warning", pos, f"a stray BOM (U+FEFF) {what}"))
        pos = body.find(b"\xef\xbb\xbf", pos + 3)
    lone = [m.start() for m in re.finditer(rb"\r(?!\n)", body)]
    if lone:
        problems.append(
            Problem(
                "warning",
                lone[0],
                f"{count_of(len(lone), 'line')} {'ends' if len(lone) == 1 else 'end'} in a lone CR: legal, "
                "but many clients split lines on LF only",
            )
        )
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem("warning", exc.start, "invalid UTF-8 (decoded as U+FFFD)"))
    unknown: dict[str, int] = {}
    start = 0
    for m in itertools.chain(_LINE_END.finditer(body), [None]):
        end = len(body) if m is None else m.start()
        line = body[start:end]
        if line and not line.startswith(b":"):
            name = line.partition(b":")[0].decode("utf-8", "replace").lstrip("\ufeff")
            if name not in _FIELDS:
                unknown.setdefault(name, start)
        start = len(body) if m is None else m.end()
    for name, at in unknown.items():
        problems.append(Problem("warning", at, f"unknown field {name[:40]!r}: SSE parsers ignore the line"))


def analyse(body: bytes, status: int, content_type: str | None) -> Report:
    """Feed ``body`` line by line and collect the timeline and problems."""
    note = ""
    if content_type is None:
        content_type, why = _guess_content_type(body)
        if why:
            note = f"the body is not an event stream ({why}); read as {content_type} (--content-type overrides"
            note += ", --status gives the real status)" if status == 200 else ")"
    chat = ChatStream(status, content_type, strict=False)
    acc = Accumulator()
    problems: list[Problem] = []
    timeline: list[tuple[int, ChatEvent]] = []
    streaming = 200 <= status < 300 and content_type.partition(";")[0].strip().lower() == "text/event-stream"
    if not body:
        problems.append(Problem("error", 0, "the body is empty"))
    if not streaming:
        chat.receive_data(body)
        chat.receive_data(b"")
        timeline = [(len(body), ev) for ev in _events_of(chat, acc)]
    else:
        _scan_bytes(body, problems)
        framing = EventStreamParser()
        cuts = [m.end() for m in _LINE_END.finditer(body)]
        if not cuts or cuts[-1] != len(body):
            cuts.append(len(body))
        done_at: int | None = None
        after_done: list[int] = []
        start = 0
        for end in [*cuts, None]:
            piece = body[start:end] if end is not None else b""
            if end is not None and not piece:
                continue
            chat.receive_data(piece)
            framing.receive_data(piece)
            offset = end if end is not None else len(body)
            start = offset
            while True:
                fev = framing.next_event()
                if isinstance(fev, Sentinel):
                    break
                if not isinstance(fev, ServerSentEvent):
                    continue  # comments and Truncated: the chat layer reports them
                if done_at is not None:
                    after_done.append(offset)
                    continue
                data = fev.data.strip(" \t\r\n")
                if data == "[DONE]":
                    done_at = offset
                elif data and fev.event != "error":
                    try:
                        parsed = json.loads(data)
                    except ValueError:
                        problems.append(
                            Problem("warning", offset, f"data is not JSON, skipped: {short(fev.data, 50)}")
                        )
                    else:
                        if not isinstance(parsed, dict):
                            problems.append(
                                Problem("warning", offset, f"data is JSON but not an object: {short(fev.data, 50)}")
                            )
            timeline += [(offset, ev) for ev in _events_of(chat, acc)]
        if done_at is None and body:
            if acc.outcome == "complete":
                problems.append(
                    Problem(
                        "warning",
                        len(body),
                        "no [DONE]: the stream just ended (every choice had finished, so the answer is complete)",
                    )
                )
            else:
                problems.append(Problem("error", len(body), "no [DONE]"))
        if after_done:
            problems.append(
                Problem(
                    "warning",
                    after_done[0],
                    f"{count_of(len(after_done), 'event')} after [DONE]: ignored by clients that stop there",
                )
            )
    for offset, ev in timeline:
        if isinstance(ev, Truncated):
            if ev.reason == "partial-event":
                msg = f"truncated: the body ends inside an event ({ev.pending} bytes of it are lost)"
            else:
                msg = "truncated: the body ended while a choice was unfinished"
            problems.append(Problem("error", offset, msg))
        elif isinstance(ev, StreamError):
            problems.append(Problem("error", offset, error_text(ev)))
    problems.sort(key=lambda pr: pr.offset if pr.offset is not None else len(body))
    return Report(status, content_type, streaming, timeline, problems, acc, chat, note)


def _describe_event(ev: ChatEvent) -> tuple[str, str, str]:
    """(kind, detail, colour) of one event for the timeline."""
    if isinstance(ev, Delta):
        parts = []
        if ev.role:
            parts.append(f"role={ev.role}")
        if ev.content:
            parts.append(short(ev.content))
        if ev.reasoning:
            parts.append("reasoning " + short(ev.reasoning))
        if ev.refusal:
            parts.append("refusal " + short(ev.refusal))
        return "Delta", f"#{ev.choice} " + " ".join(parts), ""
    if isinstance(ev, ToolCallFragment):
        head = " ".join(x for x in (ev.id, ev.name) if x)
        return "ToolCallFragment", f"#{ev.choice}.{ev.index} {head + ' ' if head else ''}{short(ev.arguments)}", "cyan"
    if isinstance(ev, Finish):
        return "Finish", f"#{ev.choice} {ev.reason}", "blue"
    if isinstance(ev, Usage):
        return "Usage", f"prompt {ev.prompt_tokens} + completion {ev.completion_tokens} = {ev.total_tokens}", "blue"
    if isinstance(ev, Done):
        return "Done", "[DONE]" if ev.sentinel else "(clean end of stream, no [DONE])", "green"
    if isinstance(ev, Heartbeat):
        return "Heartbeat", short(ev.comment), "dim"
    if isinstance(ev, Truncated):
        return "Truncated", f"{ev.reason}, {ev.pending} bytes pending", "red"
    return "StreamError", f"status={ev.status} code={ev.code} type={ev.type} {short(ev.message, 80)}", "red"


def _event_json(offset: int, ev: ChatEvent) -> dict[str, Any]:
    fields = {f.name: getattr(ev, f.name) for f in dataclasses.fields(cast(Any, ev))}
    if isinstance(ev, Usage):
        fields["raw"] = dict(ev.raw)
    return {"kind": type(ev).__name__, "byte": offset, **fields}


def _fixed_chunks(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def _random_chunks(body: bytes, seed: int) -> list[bytes]:
    """Random sizes (1-64 bytes), plus half of all cuts inside a CRLF or a
    UTF-8 character."""
    rng = random.Random(seed)
    cuts = set()
    pos = 0
    while pos < len(body):
        pos += rng.randint(1, 64)
        cuts.add(pos)
    for m in re.finditer(rb"\r\n|[\x80-\xbf]", body):
        if rng.random() < 0.5:
            cuts.add(m.start() + (1 if m.group() == b"\r\n" else 0))
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(body)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


def _refeed(body: bytes, status: int, content_type: str, chunks: list[bytes]) -> list[ChatEvent]:
    chat = ChatStream(status, content_type, strict=False)
    events: list[ChatEvent] = []
    for chunk in chunks:
        chat.receive_data(chunk)
        events += _events_of(chat)
    chat.receive_data(b"")
    return events + _events_of(chat)


def _read_input(name: str) -> tuple[bytes, str]:
    if name == "-":
        if sys.stdin is None:
            raise UsageError("no standard input to read")
        if sys.stdin.isatty():
            raise UsageError(
                "stdin is a terminal; pipe a capture in (curl -sN ... | ssestate inspect -) or name a file"
            )
        return sys.stdin.buffer.read(), "stdin"
    try:
        with open(name, "rb") as f:
            return f.read(), name
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace, out: Out) -> int:
    body, label = _read_input(args.file)
    try:
        report = analyse(body, args.status, args.content_type)
    except ProtocolError as exc:
        out.err(f"ssestate inspect: the capture cannot be parsed: {exc}")
        return EXIT_OUTCOME
    reference = [ev for _, ev in report.timeline]
    rechunks: list[tuple[str, list[bytes]]] = []
    if args.chunk:
        rechunks.append((f"{args.chunk}-byte chunks", _fixed_chunks(body, args.chunk)))
    if args.random_chunks is not None:
        chunks = _random_chunks(body, args.random_chunks)
        rechunks.append((f"{len(chunks)} random chunks (seed {args.random_chunks})", chunks))
    results: list[tuple[str, int, bool, str]] = []
    for what, chunks in rechunks:
        events = _refeed(body, report.status, report.content_type, chunks)
        same = events == reference
        diff = ""
        if not same:
            pairs = itertools.zip_longest(events, reference)
            k, (mine, theirs) = next((i, ab) for i, ab in enumerate(pairs) if ab[0] != ab[1])
            diff = f"first difference at event {k}: {mine} instead of {theirs}"
        results.append((what, len(chunks), same, diff))
    acc = report.acc
    status = EXIT_OK if acc.outcome == "complete" else EXIT_OUTCOME
    if not all(same for _, _, same, _ in results):
        status = EXIT_OUTCOME
    if args.json:
        _inspect_json(out, report, results)
    else:
        _inspect_text(out, args, label=label, body=body, report=report, results=results)
    return status


def _inspect_json(out: Out, report: Report, results: list[tuple[str, int, bool, str]]) -> None:
    lines = [_event_json(offset, ev) for offset, ev in report.timeline]
    lines += [
        {"kind": "problem", "severity": pr.severity, "byte": pr.offset, "message": pr.message} for pr in report.problems
    ]
    lines += [
        {"kind": "rechunk", "chunks": what, "count": n, "same": same, "difference": diff}
        for what, n, same, diff in results
    ]
    acc = report.acc
    chat = report.chat
    lines.append(
        {
            "kind": "outcome",
            "outcome": acc.outcome,
            "status": report.status,
            "content_type": report.content_type,
            "id": chat.response_id,
            "model": chat.model,
            "choices": {
                str(i): {**acc.message(i), "finish_reason": c.finish_reason, "reasoning": c.reasoning}
                for i, c in acc.choices.items()
            },
            "usage": dict(acc.usage.raw) if acc.usage is not None else None,
        }
    )
    out.write("".join(json.dumps(line, ensure_ascii=False, default=str) + "\n" for line in lines))


def _inspect_text(
    out: Out,
    args: argparse.Namespace,
    *,
    label: str,
    body: bytes,
    report: Report,
    results: list[tuple[str, int, bool, str]],
) -> None:
    p = out.paint
    acc = report.acc
    chat = report.chat
    out.line(p(f"{label}: {len(body)} bytes · status {report.status} · {report.content_type}", "bold"))
    if report.note:
        out.line(p(f"note: {report.note}", "yellow"))
    if not args.quiet:
        out.line()
        out.line(p(f"{'byte':>8}  {'event':<16}  detail", "dim"))
        for offset, ev in report.timeline:
            kind, detail, colour = _describe_event(ev)
            out.line(f"{offset:>8}  {p(f'{kind:<16}', colour) if colour else f'{kind:<16}'}  {detail}")
        out.line()
        meta = " · ".join(f"{k} {v}" for k, v in (("id", chat.response_id), ("model", chat.model)) if v)
        out.line(p("final message", "bold") + (p(f"  ({meta})", "dim") if meta else ""))
        if not acc.choices:
            out.line("  (no choices)")
        for index, choice in acc.choices.items():
            out.line(f"  choice {index} · {choice.role or 'assistant'} · finish_reason {choice.finish_reason or '-'}")
            if choice.reasoning:
                out.line(p("    reasoning: " + choice.reasoning.replace("\n", "\n    "), "dim"))
            if choice.content:
                out.line("    " + choice.content.replace("\r\n", "\n").replace("\n", "\n    "))
            if choice.refusal:
                out.line(p("    refusal: " + choice.refusal, "yellow"))
            for call in choice.tool_calls:
                problem = arguments_of(call)[1]
                verdict = p("✓ JSON", "green") if problem is None else p(f"✗ not JSON: {problem}", "red")
                out.line(f"    tool call {call.index}: {call.name} ({call.id}) {call.arguments}  {verdict}")
        if acc.usage is not None:
            u = acc.usage
            out.line(f"  usage: prompt {u.prompt_tokens}, completion {u.completion_tokens}, total {u.total_tokens}")
        out.line()
    if report.problems:
        out.line(p(f"problems ({len(report.problems)})", "bold"))
        for pr in report.problems:
            where = f"byte {pr.offset}: " if pr.offset is not None else ""
            out.line("  " + p(f"{pr.severity}: ", "red" if pr.severity == "error" else "yellow") + where + pr.message)
    else:
        out.line(p("problems: none", "green"))
    for what, _, same, diff in results:
        if same:
            out.line(p(f"re-fed in {what}: the same {len(report.timeline)} events", "green"))
        else:
            out.line(p(f"re-fed in {what}: DIFFERENT events ({diff}) — a bug in ssestate, please report it", "red"))
    colour = "green" if acc.outcome == "complete" else "red"
    out.line(p("outcome: ", "bold") + p(acc.outcome, colour, "bold"))
