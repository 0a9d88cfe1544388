"""``ssestate inspect``: explain a captured response body and flag its problems.

Theory of operation
-------------------
``_analysis.analyse`` does the reading (see there); this module prints what
it found: a timeline of events with the byte offset where each became
available, the final message of each choice (or, for a plain event stream,
a summary of its events), the problems, the outcome and, for any outcome
but "complete", the reason.  ``--json`` prints the same as one JSON object
per line.

``--chunk`` and ``--random-chunks`` re-feed the body in adversarial pieces
(fixed sizes; random sizes with cuts inside CRLFs and UTF-8 characters) and
compare the events with the line-by-line reference: a difference would be a
bug in ssestate.  The exit status is 0 only for a complete outcome with no
error among the problems.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from collections import Counter
from typing import Any, cast

from .. import (
    ChatEvent,
    Continuation,
    Delta,
    Done,
    Finish,
    FramingEvent,
    Heartbeat,
    ProtocolError,
    ServerSentEvent,
    ToolCallFragment,
    Truncated,
    Usage,
)
from .._dialects import DIALECTS
from ._analysis import Report, analyse, fixed_chunks, random_chunks, refeed
from ._common import (
    API_NAMES,
    EXIT_OK,
    EXIT_OUTCOME,
    Formatter,
    Out,
    SubParsers,
    UsageError,
    arguments_of,
    count_of,
    positive_int,
    short,
)
from ._common import (
    status as http_status,
)

__all__ = ["add_parser", "run"]


def add_parser(sub: SubParsers) -> None:
    inspect = sub.add_parser(
        "inspect",
        help="explain a captured stream body and flag its problems",
        description="Read a captured response body (a file, or - for stdin) of OpenAI Chat Completions, the "
        "Responses API, Anthropic Messages or Gemini (told from the first payload, or --dialect), say "
        "which, print a timeline of the chat "
        "events with the byte offset where each became available, the final message and every problem "
        "found: no end marker, a truncated stream, non-JSON data, a stray BOM, lone-CR line endings, "
        "unknown fields, invalid UTF-8, events after [DONE], errors; every outcome but complete "
        "comes with its reason.  A plain event stream (no chat-completion payloads) is summarised "
        "by its events.\n\n"
        "exit status: 0 when the outcome is complete and no error was found (warnings do not change "
        "it), 1 otherwise, 2 for bad usage or unreadable input.",
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
    inspect.add_argument(
        "--dialect",
        choices=DIALECTS,  # the core's list: "auto" and the four APIs
        default="auto",
        help="the API the capture comes from (default: auto, told from the first payload)",
    )
    inspect.add_argument("-q", "--quiet", action="store_true", help="print only problems and the outcome")


# How the timeline names the end marker of each API (Gemini has none).
_MARKER_NAMES = {"openai-chat": "[DONE]", "anthropic": "message_stop", "openai-responses": "the terminal event"}


def _describe_event(ev: ChatEvent, dialect: str = "openai-chat") -> tuple[str, str, str]:
    """(kind, detail, colour) of one event for the timeline of a stream of
    ``dialect``."""
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
        native = f" ({ev.native})" if ev.native is not None and ev.native != ev.reason else ""
        return "Finish", f"#{ev.choice} {ev.reason}{native}", "blue"
    if isinstance(ev, Usage):
        return "Usage", f"prompt {ev.prompt_tokens} + completion {ev.completion_tokens} = {ev.total_tokens}", "blue"
    if isinstance(ev, Done):
        marker = _MARKER_NAMES.get(dialect)
        if ev.sentinel:
            return "Done", marker or "end marker", "green"
        return "Done", f"(clean end of stream, no {marker})" if marker else "(clean end of stream)", "green"
    if isinstance(ev, Heartbeat):
        return "Heartbeat", short(ev.comment), "dim"
    if isinstance(ev, Truncated):
        return "Truncated", f"{ev.reason}, {count_of(ev.pending, 'byte')} pending", "red"
    if isinstance(ev, Continuation):
        return "Continuation", f"#{ev.choice} {ev.kind}", "dim"
    return "StreamError", f"status={ev.status} code={ev.code} type={ev.type} {short(ev.message, 80)}", "red"


def _describe_sse(ev: FramingEvent) -> tuple[str, str, str]:
    """(kind, detail, colour) of one event of a plain event stream."""
    if isinstance(ev, ServerSentEvent):
        extra = "".join(f" {k}={v}" for k, v in (("id", ev.id), ("retry", ev.retry)) if v not in ("", None))
        return "ServerSentEvent", f"{ev.event}{extra} {short(ev.data)}", ""
    if isinstance(ev, Heartbeat):
        return "Heartbeat", short(ev.comment), "dim"
    return "Truncated", f"{ev.reason}, {count_of(ev.pending, 'byte')} pending", "red"


def _event_json(offset: int, ev: object) -> dict[str, Any]:
    fields = {f.name: getattr(ev, f.name) for f in dataclasses.fields(cast(Any, ev))}
    if isinstance(ev, Usage):
        fields["raw"] = dict(ev.raw)
    return {"kind": type(ev).__name__, "byte": offset, **fields}


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


Results = list[tuple[str, int, bool, str]]


def run(args: argparse.Namespace, out: Out) -> int:
    body, label = _read_input(args.file)
    try:
        report = analyse(body, args.status, args.content_type, args.dialect)
    except ProtocolError as exc:
        out.err(f"ssestate inspect: the capture cannot be parsed: {exc}")
        return EXIT_OUTCOME
    reference = _reference(report)
    rechunks: list[tuple[str, list[bytes]]] = []
    if args.chunk:
        rechunks.append((f"{args.chunk}-byte chunks", fixed_chunks(body, args.chunk)))
    if args.random_chunks is not None:
        chunks = random_chunks(body, args.random_chunks)
        rechunks.append((f"{count_of(len(chunks), 'random chunk')} (seed {args.random_chunks})", chunks))
    results: Results = []
    for what, chunks in rechunks:
        events = refeed(report, chunks)
        same = events == reference
        diff = ""
        if not same:
            pairs = itertools.zip_longest(events, reference)
            k, (mine, theirs) = next((i, ab) for i, ab in enumerate(pairs) if ab[0] != ab[1])
            diff = f"first difference at event {k}: {mine} instead of {theirs}"
        results.append((what, len(chunks), same, diff))
    failed = report.outcome != "complete" or any(pr.severity == "error" for pr in report.problems)
    if args.json:
        _inspect_json(out, report, results)
    else:
        _inspect_text(out, args, label=label, body=body, report=report, results=results)
    return EXIT_OUTCOME if failed or not all(same for _, _, same, _ in results) else EXIT_OK


def _reference(report: Report) -> list[object]:
    if report.plain:
        return [ev for _, ev in report.events]
    return [ev for _, ev in report.timeline]


def _inspect_json(out: Out, report: Report, results: Results) -> None:
    timeline: list[tuple[int, object]] = [*report.events] if report.plain else [*report.timeline]
    lines = [_event_json(offset, ev) for offset, ev in timeline]
    lines += [
        {"kind": "problem", "severity": pr.severity, "byte": pr.offset, "message": pr.message} for pr in report.problems
    ]
    lines += [
        {"kind": "rechunk", "chunks": what, "count": n, "same": same, "difference": diff}
        for what, n, same, diff in results
    ]
    summary: dict[str, Any] = {
        "kind": "outcome",
        "outcome": report.outcome,
        "reason": report.reason,
        "stream": "plain" if report.plain else "chat",
        "dialect": None if report.plain else report.chat.dialect,
        "status": report.status,
        "content_type": report.content_type,
    }
    if report.plain:
        summary["events"] = sum(isinstance(ev, ServerSentEvent) for _, ev in report.events)
    else:
        acc = report.acc
        summary["id"] = report.chat.response_id
        summary["model"] = report.chat.model
        summary["choices"] = {
            str(i): {**acc.message(i), "finish_reason": c.finish_reason, "reasoning": c.reasoning}
            for i, c in acc.choices.items()
        }
        summary["usage"] = dict(acc.usage.raw) if acc.usage is not None else None
    lines.append(summary)
    out.write("".join(json.dumps(line, ensure_ascii=False, default=str) + "\n" for line in lines))


def _timeline(out: Out, rows: list[tuple[int, tuple[str, str, str]]]) -> None:
    p = out.paint
    out.line()
    out.line(p(f"{'byte':>8}  {'event':<16}  detail", "dim"))
    for offset, (kind, detail, colour) in rows:
        out.line(f"{offset:>8}  {p(f'{kind:<16}', colour) if colour else f'{kind:<16}'}  {detail}")
    out.line()


def _final_message(out: Out, report: Report) -> None:
    p = out.paint
    acc = report.acc
    chat = report.chat
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


def _plain_summary(report: Report) -> str:
    sse = [ev for _, ev in report.events if isinstance(ev, ServerSentEvent)]
    comments = sum(isinstance(ev, Heartbeat) for _, ev in report.events)
    kinds = Counter(ev.event for ev in sse)
    text = f"a plain event stream (no chat-completion payloads): {count_of(len(sse), 'event')}"
    text += " (" + ", ".join(f"{name}: {n}" for name, n in kinds.items()) + ")"
    if comments:
        text += f", {count_of(comments, 'comment')}"
    if sse[-1].id:
        text += f", last id {sse[-1].id!r}"
    return text


def _inspect_text(
    out: Out, args: argparse.Namespace, *, label: str, body: bytes, report: Report, results: Results
) -> None:
    p = out.paint
    out.line(p(f"{label}: {count_of(len(body), 'byte')} · status {report.status} · {report.content_type}", "bold"))
    if report.note:
        out.line(p(f"note: {report.note}", "yellow"))
    if report.plain:
        out.line(_plain_summary(report))
    else:
        name = API_NAMES.get(report.chat.dialect)
        how = "detected" if report.dialect == "auto" else "as told"
        out.line(f"API: {name} ({how})" if name else "API: not told (no payload names one)")
    if not args.quiet:
        if report.plain:
            _timeline(out, [(offset, _describe_sse(ev)) for offset, ev in report.events])
        else:
            dialect = report.chat.dialect
            _timeline(out, [(offset, _describe_event(ev, dialect)) for offset, ev in report.timeline])
            _final_message(out, report)
    if report.problems:
        out.line(p(f"problems ({len(report.problems)})", "bold"))
        for pr in report.problems:
            where = f"byte {pr.offset}: " if pr.offset is not None else ""
            out.line("  " + p(f"{pr.severity}: ", "red" if pr.severity == "error" else "yellow") + where + pr.message)
    else:
        out.line(p("problems: none", "green"))
    count = len(_reference(report))
    for what, _, same, diff in results:
        if same:
            out.line(p(f"re-fed in {what}: the same {count_of(count, 'event')}", "green"))
        else:
            out.line(p(f"re-fed in {what}: DIFFERENT events ({diff}) — a bug in ssestate, please report it", "red"))
    colour = "green" if report.outcome == "complete" else "red"
    out.line(p("outcome: ", "bold") + p(report.outcome, colour, "bold"))
    if report.reason is not None:
        out.line(p("reason: ", "bold") + report.reason)
