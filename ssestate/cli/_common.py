"""What every ``ssestate`` command shares: exit statuses, errors, colour,
output, option types and the one-line descriptions of how a stream ended.

Theory of operation
-------------------
A command writes through an ``Out``: stdout and stderr, each with its own
colour decision (``Paint``), behind one lock so that a reader thread and
the main thread never interleave half lines.  Colour is used only when the
stream is a terminal, ``NO_COLOR`` is unset or empty and ``TERM`` is not
``dumb``.

Anything a user can get wrong on the command line or in the input raises
``UsageError`` (exit status 2); ``ChatFailure`` is a request that failed
(exit status 1).  ``ssestate.cli.main`` turns both into one line on stderr.
The option types here raise ``argparse.ArgumentTypeError`` so that argparse
words the message ("--speed: must be a positive number, got '0'").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import textwrap
import threading
from typing import IO, Any, ClassVar, NoReturn, TypeAlias

from .. import Accumulator, StreamError, StreamStats, ToolArgumentsError, ToolCall

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OUTCOME",
    "EXIT_USAGE",
    "END_MARKERS",
    "MARKER_WARNED",
    "API_NAMES",
    "ChatFailure",
    "Formatter",
    "Out",
    "Paint",
    "Parser",
    "SubParsers",
    "UsageError",
    "arguments_of",
    "count",
    "count_of",
    "describe_outcome",
    "error_text",
    "port",
    "positive_float",
    "positive_int",
    "request_body",
    "seconds",
    "short",
    "size",
    "stats_line",
    "status",
]

EXIT_OK, EXIT_OUTCOME, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

#: What ``add_subparsers`` returns, handed to each command's ``add_parser``
#: (a string: the class is generic only to type checkers).
SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class UsageError(Exception):
    """A mistake on the command line or in the input: exit status 2."""


class ChatFailure(Exception):
    """The request failed (connection, timeout): exit status 1."""


# -- terminal output -------------------------------------------------------------


class Paint:
    """ANSI styles, or plain text when colour is off."""

    _CODES: ClassVar[dict[str, str]] = {
        "bold": "1",
        "dim": "2",
        "red": "31",
        "green": "32",
        "yellow": "33",
        "blue": "34",
        "cyan": "36",
    }

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: IO[str]) -> Paint:
        isatty = getattr(stream, "isatty", None)
        tty = bool(isatty and isatty())
        return cls(tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb")

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        return f"{self.start(*styles)}{text}\x1b[0m"

    def start(self, *styles: str) -> str:
        """The escape that switches to ``styles`` ("" when colour is off)."""
        if not self.enabled or not styles:
            return ""
        return f"\x1b[{';'.join(self._CODES[s] for s in styles)}m"

    def reset(self) -> str:
        return "\x1b[0m" if self.enabled else ""


class Out:
    """stdout and stderr with their own colour decisions."""

    def __init__(self, stdout: IO[str], stderr: IO[str]) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.paint = Paint.for_stream(stdout)
        self.paint_err = Paint.for_stream(stderr)
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self._lock:
            self.stdout.write(text)
            self.stdout.flush()

    def line(self, text: str = "") -> None:
        self.write(text + "\n")

    def err(self, text: str) -> None:
        with self._lock:
            self.stderr.write(text + "\n")
            self.stderr.flush()


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s"


def count_of(n: int, noun: str) -> str:
    """``1 event``, ``2 events``: English plurals for the nouns used here."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def short(text: str, limit: int = 60) -> str:
    r = json.dumps(text, ensure_ascii=False)
    return r if len(r) <= limit else r[: limit - 2] + '…"'


# -- a request in the shape of each API ---------------------------------------------

API_NAMES = {
    "openai-chat": "OpenAI Chat Completions",
    "openai-responses": "OpenAI Responses API",
    "anthropic": "Anthropic Messages",
    "gemini": "Gemini",
}

ANTHROPIC_MAX_TOKENS = 1024  # the Messages API refuses a request without max_tokens


def request_body(
    dialect: str,
    model: str,
    prompt: str,
    *,
    system: str | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> dict[str, Any]:
    """The body of a one-prompt request to the API of ``dialect``, with the
    system message and limits where that API takes them (the adapter adds
    what makes it stream, and takes Gemini's model into the path)."""
    payload: dict[str, Any] = {"model": model}
    if dialect == "gemini":
        payload["contents"] = [{"role": "user", "parts": [{"text": prompt}]}]
        if system:
            payload["systemInstruction"] = {"parts": [{"text": system}]}
        config: dict[str, Any] = {}
        if max_tokens is not None:
            config["maxOutputTokens"] = max_tokens
        if temperature is not None:
            config["temperature"] = temperature
        if config:
            payload["generationConfig"] = config
        return payload
    if dialect == "openai-responses":
        payload["input"] = prompt
        if system:
            payload["instructions"] = system
        if max_tokens is not None:
            payload["max_output_tokens"] = max_tokens
    elif dialect == "anthropic":
        payload["messages"] = [{"role": "user", "content": prompt}]
        if system:
            payload["system"] = system
        payload["max_tokens"] = max_tokens if max_tokens is not None else ANTHROPIC_MAX_TOKENS
    else:
        payload["messages"] = [{"role": "user", "content": prompt}]
        if system:
            payload["messages"].insert(0, {"role": "system", "content": system})
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
    if temperature is not None:
        payload["temperature"] = temperature
    return payload


# -- how a stream ended ------------------------------------------------------------


# The end marker of each API, as messages name it (Gemini has none).
END_MARKERS = {
    "openai-chat": "[DONE]",
    "anthropic": "message_stop",
    "openai-responses": "a terminal response event",
    "auto": "[DONE]",  # no payload told the API: Chat Completions, the default
}
# The APIs whose stream may be complete without its end marker, which then
# deserves a word (the Responses API cannot end complete without it).
MARKER_WARNED = ("openai-chat", "anthropic")


def describe_outcome(acc: Accumulator, dialect: str = "openai-chat") -> tuple[str, str]:
    """(text, colour) for how a stream of ``dialect`` ended."""
    outcome = acc.outcome
    reasons = sorted({c.finish_reason for c in acc.choices.values() if c.finish_reason})
    if outcome == "complete":
        unmarked = dialect in MARKER_WARNED and acc.done is not None and not acc.done.sentinel
        sentinel = f", no {END_MARKERS[dialect]}" if unmarked else ""
        return f"✓ complete (finish_reason {', '.join(reasons) or '-'}{sentinel})", "green"
    if outcome == "length":
        return "✂ cut by max_tokens (finish_reason length)", "yellow"
    if outcome == "filtered":
        return "✂ filtered (finish_reason content_filter)", "yellow"
    if outcome == "truncated":
        t = acc.truncated
        if t is not None and t.reason == "partial-event":
            return f"✗ truncated: the connection closed mid-event ({count_of(t.pending, 'byte')} of it lost)", "red"
        return "✗ truncated: the stream ended before every choice finished", "red"
    if outcome == "error":
        e = acc.error
        if e is None:
            return f"✗ error: a choice finished with {', '.join(reasons)}", "red"
        return f"✗ {error_text(e)}", "red"
    return f"? {outcome}", "yellow"  # pragma: no cover - a finished stream is never in progress


_TITLE = re.compile(r"<title>\s*(.*?)\s*</title>", re.IGNORECASE | re.DOTALL)


def error_text(e: StreamError) -> str:
    """One line for a ``StreamError``: where, code, and the message (an
    HTML page's title rather than its markup)."""
    where = f"error HTTP {e.status}" if e.status is not None else "error in the stream"
    code = f" [{e.code}]" if e.code else ""
    message = e.message.strip()
    if isinstance(e.body, str) and (title := _TITLE.search(e.body)):
        message = f"an HTML page: {title.group(1)}"
    first = message.splitlines()[0] if message else "(no message)"
    return f"{where}{code}: {first[:120]}"


def arguments_of(call: ToolCall) -> tuple[Any, str | None]:
    """A tool call's parsed arguments, or why they are not JSON."""
    try:
        return call.parsed_arguments(), None
    except ToolArgumentsError as exc:
        return None, exc.msg


def stats_line(stats: StreamStats, heartbeats: int) -> str:
    return (
        f"TTFB {seconds(stats.ttfb)} · TTFT {seconds(stats.ttft)} · "
        f"gaps p50 {seconds(stats.gaps_p50)}, p95 {seconds(stats.gaps_p95)}, max {seconds(stats.gaps_max)} · "
        f"total {seconds(stats.total)} · {count_of(stats.events, 'event')}, {size(stats.bytes)}"
        + (f", {count_of(heartbeats, 'keep-alive')}" if heartbeats else "")
    )


# -- argument parsing ------------------------------------------------------------


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Wrap prose paragraphs to the terminal; keep paragraphs with indented
    lines (examples, lists) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for para in text.split("\n\n"):
            if any(line.startswith(" ") for line in para.splitlines()):
                paragraphs.append("\n".join(indent + line for line in para.splitlines()))
            else:
                paragraphs.append(
                    textwrap.fill(" ".join(para.split()), width, initial_indent=indent, subsequent_indent=indent)
                )
        return "\n\n".join(paragraphs)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (plus a pointer to
    ``--help``) and exit with status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text!r}")
    return value


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535, got {text!r}")
    return value


def status(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an HTTP status: {text!r}") from None
    if not 100 <= value <= 599:
        raise argparse.ArgumentTypeError(f"an HTTP status is 100-599, got {text!r}")
    return value
