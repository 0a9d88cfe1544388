"""What ``ssestate inspect`` finds in a captured body: the events, where each
became available, the problems, and why the stream ended as it did.

Theory of operation
-------------------
``analyse`` feeds the body to a lenient ``ChatStream`` one line at a time,
so that each event is stamped with the byte offset at which it became
available.  Beside it an ``EventStreamParser`` fed the same pieces sees
every event-stream event, and a scan of the raw bytes looks for what
parsers tolerate silently: a BOM, lone CRs, unknown fields, invalid UTF-8.
A body that is not an event stream (by status or content type) is handed
to the chat layer whole, as an HTTP client would.

The chat layer reads the API the caller names, or tells it from the first
payload (``dialect="auto"``, the default): Chat Completions, the Responses
API, Anthropic Messages or Gemini; the report names the one it read.  A
stream none of whose events looks like one of them (no ``[DONE]``, no
``choices``, no ``error``, no ``event: error``, no event type of the
Responses API or Anthropic, no Gemini candidates) is a *plain* event
stream: it is reported by its events, and the chat layer's view of it (no
choice ever started) is left out.  Otherwise the chat layer decides the
outcome, and every outcome but "complete" comes with a reason naming the
choices and the cause.  A payload the lenient reader had to skip (not JSON)
is an error: a strict client, ``ssestate chat`` among them, stops there.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import re

from .. import (
    Accumulator,
    ChatEvent,
    ChatStream,
    Done,
    EventStreamParser,
    Finish,
    FramingEvent,
    Sentinel,
    ServerSentEvent,
    StreamError,
    Truncated,
)
from ._common import END_MARKERS, MARKER_WARNED, count_of, error_text, short

__all__ = [
    "Problem",
    "Report",
    "analyse",
    "choices_text",
    "drain_chat",
    "drain_framing",
    "fixed_chunks",
    "random_chunks",
    "refeed",
]

_LINE_END = re.compile(rb"\r\n|\r|\n")
_FIELDS = ("data", "event", "id", "retry")
_ERROR_REASONS = ("error", "insufficient_system_resource")


@dataclasses.dataclass
class Problem:
    severity: str  # "warning" or "error"
    offset: int | None
    message: str


@dataclasses.dataclass
class Report:
    """Everything ``analyse`` found.

    Attributes:
        dialect: the API asked for (``auto`` by default); ``chat.dialect``
            names the one read.
        plain: a plain event stream (no chat-completion payloads).
        timeline: the chat events with the offset where each became available.
        events: the same for what ``EventStreamParser`` handed out
            (streaming bodies only).
        reason: why the outcome is not "complete", or why a complete
            stream still fails a strict client (None when neither).
    """

    status: int
    content_type: str
    streaming: bool
    plain: bool
    timeline: list[tuple[int, ChatEvent]]
    events: list[tuple[int, FramingEvent]]
    problems: list[Problem]
    acc: Accumulator
    chat: ChatStream
    outcome: str
    reason: str | None
    note: str = ""
    dialect: str = "auto"


def choices_text(indexes: list[int]) -> str:
    """ "choice 0", "choices 0 and 2", "choices 0, 1 and 2"."""
    if len(indexes) == 1:
        return f"choice {indexes[0]}"
    *rest, last = indexes
    return f"choices {', '.join(map(str, rest))} and {last}"


def drain_chat(machine: ChatStream) -> list[ChatEvent]:
    events: list[ChatEvent] = []
    while not isinstance(event := machine.next_event(), Sentinel):
        events.append(event)
    return events


def drain_framing(machine: EventStreamParser) -> list[FramingEvent]:
    events: list[FramingEvent] = []
    while not isinstance(event := machine.next_event(), Sentinel):
        events.append(event)
    return events


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


# The payload ``type`` words of the Anthropic Messages stream.
_ANTHROPIC_TYPES = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "ping",
        "error",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)


def _looks_like_chat(event: ServerSentEvent, data: str, parsed: object) -> bool:
    """Whether an event is one of a chat API's (any of the four)."""
    if data == "[DONE]" or event.event == "error":
        return True
    if not isinstance(parsed, dict):
        return False
    kind = parsed.get("object")
    typed = parsed.get("type")
    return (
        any(key in parsed for key in ("choices", "error", "usage", "candidates", "promptFeedback", "usageMetadata"))
        or (isinstance(kind, str) and kind.startswith("chat.completion"))
        or (isinstance(typed, str) and (typed.startswith("response.") or typed in _ANTHROPIC_TYPES))
    )


def _cut_text(truncated: Truncated, dialect: str = "openai-chat") -> str:
    if truncated.reason == "partial-event":
        lost = count_of(truncated.pending, "byte")
        return f"the body ends inside an event ({lost} of it {'is' if truncated.pending == 1 else 'are'} lost)"
    marker = END_MARKERS.get(dialect)
    return f"the body ended without {marker}" if marker else "the body ended"


def _ending(acc: Accumulator, timeline: list[tuple[int, ChatEvent]], dialect: str) -> Problem | None:
    """The problem with how a chat stream of ``dialect`` ended, naming the
    unfinished choices."""
    marker = END_MARKERS.get(dialect, "the end marker")
    unfinished = sorted(i for i, c in acc.choices.items() if c.finish_reason is None)
    for offset, ev in timeline:
        if isinstance(ev, Truncated):
            if not acc.choices:
                return Problem("error", offset, f"truncated: {_cut_text(ev, dialect)} before any choice started")
            if unfinished:
                cut = _cut_text(ev, dialect)
                return Problem(
                    "error", offset, f"truncated: {cut} while {choices_text(unfinished)} had no finish_reason"
                )
            return Problem(
                "warning",
                offset,
                f"{_cut_text(ev, dialect)}, after every choice had finished (only trailing bytes, such as a usage "
                f"chunk or {marker}, are lost)",
            )
        if isinstance(ev, Done) and unfinished:
            return Problem(
                "error", offset, f"truncated: {marker} arrived while {choices_text(unfinished)} had no finish_reason"
            )
    return None


def _reason(acc: Accumulator, ending: Problem | None) -> str | None:
    """Why a chat stream's outcome is not "complete", naming the choices."""
    outcome = acc.outcome
    by_reason: dict[str, list[int]] = {}
    for index, choice in sorted(acc.choices.items()):
        if choice.finish_reason is not None:
            by_reason.setdefault(choice.finish_reason, []).append(index)
    if outcome == "error":
        if acc.error is not None:
            return error_text(acc.error)
        word = next(r for r in _ERROR_REASONS if r in by_reason)
        return f"{choices_text(by_reason[word])} finished with {word}"
    if outcome == "truncated":
        assert ending is not None
        return ending.message.removeprefix("truncated: ")
    if outcome == "length":
        return f"{choices_text(by_reason['length'])} stopped at max_tokens (finish_reason length)"
    if outcome == "filtered":
        return f"{choices_text(by_reason['content_filter'])} stopped by a content filter (finish_reason content_filter)"
    return None


def analyse(body: bytes, status: int, content_type: str | None, dialect: str = "auto") -> Report:
    """Feed ``body`` line by line, read as ``dialect`` (see ``ChatStream``),
    and collect the timeline and problems."""
    note = ""
    if content_type is None:
        content_type, why = _guess_content_type(body)
        if why:
            note = f"the body is not an event stream ({why}); read as {content_type} (--content-type overrides"
            note += ", --status gives the real status)" if status == 200 else ")"
    chat = ChatStream(status, content_type, strict=False, dialect=dialect)
    acc = Accumulator()
    problems: list[Problem] = []
    skipped: list[Problem] = []  # payloads a strict reader refuses: chat streams only
    timeline: list[tuple[int, ChatEvent]] = []
    events: list[tuple[int, FramingEvent]] = []
    streaming = 200 <= status < 300 and content_type.partition(";")[0].strip().lower() == "text/event-stream"
    chat_like = False
    done_at: int | None = None
    after_done: list[int] = []
    if not body:
        problems.append(Problem("error", 0, "the body is empty"))
    if not streaming:
        chat.receive_data(body)
        chat.receive_data(b"")
        timeline = [(len(body), ev) for ev in drain_chat(chat)]
    else:
        _scan_bytes(body, problems)
        framing = EventStreamParser()
        cuts = [m.end() for m in _LINE_END.finditer(body)]
        if not cuts or cuts[-1] != len(body):
            cuts.append(len(body))
        start = 0
        for end in [*cuts, None]:
            piece = body[start:end] if end is not None else b""
            if end is not None and not piece:
                continue
            chat.receive_data(piece)
            framing.receive_data(piece)
            offset = end if end is not None else len(body)
            start = offset
            for fev in drain_framing(framing):
                events.append((offset, fev))
                if not isinstance(fev, ServerSentEvent):
                    continue  # comments and Truncated: the chat layer reports them
                if done_at is not None:
                    after_done.append(offset)
                    continue
                data = fev.data.strip(" \t\r\n")
                try:
                    parsed = json.loads(data) if data and data != "[DONE]" else None
                except ValueError:
                    parsed = ValueError
                chat_like = chat_like or _looks_like_chat(fev, data, parsed)
                if data == "[DONE]":
                    done_at = offset
                elif data and fev.event != "error" and parsed is ValueError:
                    skipped.append(
                        Problem(
                            "error",
                            offset,
                            f"data is not JSON, skipped here; a strict client (ssestate chat) stops: "
                            f"{short(fev.data, 50)}",
                        )
                    )
            timeline += [(offset, ev) for ev in drain_chat(chat)]
    for _, ev in timeline:
        acc.feed(ev)
    plain = streaming and not chat_like and any(isinstance(ev, ServerSentEvent) for _, ev in events)
    if plain:
        cut = next((ev for _, ev in events if isinstance(ev, Truncated)), None)
        if cut is not None:
            problems.append(Problem("error", len(body), f"truncated: {_cut_text(cut)}"))
        outcome = "complete" if cut is None else "truncated"
        reason = None if cut is None else _cut_text(cut)
    else:
        problems += skipped
        marker = END_MARKERS.get(chat.dialect)
        ended = done_at is not None or any(isinstance(ev, Done) and ev.sentinel for _, ev in timeline)
        if streaming and chat.dialect in MARKER_WARNED and not ended and body and acc.outcome == "complete":
            problems.append(
                Problem(
                    "warning",
                    len(body),
                    f"no {marker}: the stream just ended (every choice had finished, so the answer is complete)",
                )
            )
        if after_done:
            problems.append(
                Problem(
                    "warning",
                    after_done[0],
                    f"{count_of(len(after_done), 'event')} after [DONE]: ignored by clients that stop there",
                )
            )
        ending = _ending(acc, timeline, chat.dialect)
        if ending is not None:
            problems.append(ending)
        for offset, ev in timeline:
            if isinstance(ev, StreamError):
                problems.append(Problem("error", offset, error_text(ev)))
            elif isinstance(ev, Finish) and ev.reason in _ERROR_REASONS:
                problems.append(Problem("error", offset, f"choice {ev.choice} finished with {ev.reason}"))
        outcome = acc.outcome
        reason = _reason(acc, ending)
        if reason is None and skipped:
            reason = (
                f"{count_of(len(skipped), 'payload')} had to be skipped: a strict client (ssestate chat) "
                "fails on this stream"
            )
    problems.sort(key=lambda pr: pr.offset if pr.offset is not None else len(body))
    return Report(
        status, content_type, streaming, plain, timeline, events, problems, acc, chat, outcome, reason, note, dialect
    )


def fixed_chunks(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def random_chunks(body: bytes, seed: int) -> list[bytes]:
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


def refeed(report: Report, chunks: list[bytes]) -> list[object]:
    """The events of the machine the report is about (the chat layer, or the
    event-stream parser for a plain stream), fed ``chunks``."""
    events: list[object] = []
    if report.plain:
        parser = EventStreamParser()
        for chunk in chunks:
            parser.receive_data(chunk)
            events += drain_framing(parser)
        parser.receive_data(b"")
        return events + drain_framing(parser)
    chat = ChatStream(report.status, report.content_type, strict=False, dialect=report.dialect)
    for chunk in chunks:
        chat.receive_data(chunk)
        events += drain_chat(chat)
    chat.receive_data(b"")
    return events + drain_chat(chat)
