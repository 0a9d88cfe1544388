"""The ``ssestate`` command line: serve, demo, inspect, chat.

Theory of operation
-------------------
Each command is a function ``_cmd_<name>(args, out) -> int`` (the exit
status) behind one ``argparse`` parser.  ``main`` turns the things a user can
cause (a bad option, a missing file, a refused connection, Ctrl-C, a closed
pipe) into one line on stderr and an exit status, never a traceback.

* ``serve`` plays ``ssestate._scenarios`` through ``ssestate._server``'s
  ``ScriptServer``; the scenario is chosen per request.
* ``demo`` runs a server in-process and reads a few scenarios through the
  standard-library adapter; a reader thread owns the connection and passes
  events through a queue, while the main thread types the text out through a
  ``Pacer`` at a steady rate.
* ``inspect`` feeds a captured body to a ``ChatStream`` one line at a time,
  beside an ``EventStreamParser`` and a byte scanner that look for what the
  chat layer tolerates silently (a missing ``[DONE]``, non-JSON data, a BOM,
  lone CRs, events after ``[DONE]``), and can re-feed the capture in
  adversarial chunks to show that the events do not depend on the cuts.
* ``chat`` streams from a real endpoint and prints text as it arrives.

Colour is used only when the stream is a terminal, ``NO_COLOR`` is unset or
empty and ``TERM`` is not ``dumb``.
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import itertools
import json
import os
import queue
import random
import re
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any, ClassVar, NoReturn, cast

from . import __version__
from ._accumulate import Accumulator, ToolArgumentsError, ToolCall
from ._chat import ChatStream
from ._events import (
    ChatEvent,
    Continuation,
    Delta,
    Done,
    Finish,
    Heartbeat,
    ServerSentEvent,
    StreamError,
    ToolCallFragment,
    Truncated,
    Usage,
)
from ._framing import EventStreamParser
from ._pacer import Pacer
from ._retry import RetryPolicy, StreamTimeout
from ._scenarios import DESCRIPTIONS, SCENARIOS, expected_outcome, random_choice, scenario
from ._script import Script
from ._server import ScriptRequest, ScriptServer
from ._util import ProtocolError, Sentinel
from .adapters import sync

__all__ = ["main"]

EXIT_OK, EXIT_OUTCOME, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

DEMO_SCENARIOS = ("text", "tools", "cjk", "length", "drop-mid-event", "error-503")
_DEMO_PROMPTS = {
    "tools": "What's the weather in São Paulo?",
    "parallel-tools": "Weather and local time in Tokyo, please.",
    "cjk": "Say something in a few languages.",
    "reasoning": "How many r's are in strawberry?",
}


class UsageError(Exception):
    """A mistake on the command line or in the input: exit status 2."""


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


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s"


def _count_of(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def _short(text: str, limit: int = 60) -> str:
    r = json.dumps(text, ensure_ascii=False)
    return r if len(r) <= limit else r[: limit - 2] + '…"'


# -- argument parsing ------------------------------------------------------------


class _Formatter(argparse.RawDescriptionHelpFormatter):
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


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (plus a pointer to
    ``--help``) and exit with status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text!r}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535, got {text!r}")
    return value


def _status(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an HTTP status: {text!r}") from None
    if not 100 <= value <= 599:
        raise argparse.ArgumentTypeError(f"an HTTP status is 100-599, got {text!r}")
    return value


def _scenario_name(text: str) -> str:
    if text not in SCENARIOS:
        raise argparse.ArgumentTypeError(f"unknown scenario {text!r}; choose one of: {', '.join(SCENARIOS)}")
    return text


def _scenario_list() -> str:
    width = max(map(len, SCENARIOS))
    return "\n".join(f"  {name:<{width}}  {DESCRIPTIONS[name]}" for name in SCENARIOS)


def build_parser() -> argparse.ArgumentParser:
    raw = _Formatter
    parser = _Parser(
        prog="ssestate",
        description="Server-Sent Events and OpenAI-style chat streams: a test server, a demo, "
        "a capture inspector and a streaming chat client.",
        epilog="examples:\n  ssestate demo\n  ssestate serve --scenario cjk\n"
        '  curl -sN URL/v1/chat/completions -d \'{"model":"tools"}\' | ssestate inspect -\n'
        '  ssestate chat --base-url http://localhost:11434/v1 --model llama3.2 "Hello"\n\n'
        "Run 'ssestate COMMAND --help' for a command's options.",
        formatter_class=raw,
    )
    parser.add_argument("--version", action="version", version=f"ssestate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    serve = sub.add_parser(
        "serve",
        help="an OpenAI-compatible test server that streams difficult responses",
        description="Serve POST /v1/chat/completions on loopback with scripted, difficult but realistic "
        "streams: bursts, silences with keep-alive comments, writes cut inside UTF-8 characters and "
        "CRLF pairs, dropped connections, error heads.  Point any client at it.\n\n"
        'The scenario is chosen per request: the X-Ssestate-Scenario header, else a "model" naming a '
        'scenario ("cjk" or "ssestate-cjk"), else --scenario; the X-Ssestate-Speed header overrides '
        "--speed.  The seed is the request's integer "
        '"seed" field, else --seed plus the number of requests served before (so "random" varies).  '
        "GET /v1/models lists the scenarios.\n\nscenarios:\n" + _scenario_list(),
        epilog="example:\n  ssestate serve --port 8000 --scenario random --seed 7\n"
        "  curl -N http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\\n"
        '       -d \'{"model":"crlf","messages":[{"role":"user","content":"hi"}],"stream":true}\'',
        formatter_class=raw,
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=0, help="port to bind (default: 0, any free port)")
    serve.add_argument(
        "--scenario", type=_scenario_name, default="text", metavar="NAME", help="default scenario (default: text)"
    )
    serve.add_argument("--seed", type=int, default=0, metavar="N", help="base seed (default: 0)")
    serve.add_argument(
        "--speed", type=_positive_float, default=1.0, metavar="X", help="divide every pause by X (default: 1)"
    )
    serve.add_argument("-q", "--quiet", action="store_true", help="do not log requests")

    demo = sub.add_parser(
        "demo",
        help="watch a few difficult streams parsed and displayed, offline",
        description="Start the test server in-process, read a few scenarios through the standard-library "
        "adapter and show what a user should see: text typed out at a steady pace although the network "
        "delivered it in bursts, tool calls live (name and raw arguments, parsed only at the end), how "
        "each stream ended and its timing.  Needs no network and no API key.",
        epilog="example:\n  ssestate demo\n  ssestate demo --scenario reasoning --scenario n2 --speed 2",
        formatter_class=raw,
    )
    demo.add_argument(
        "--scenario",
        type=_scenario_name,
        action="append",
        metavar="NAME",
        help=f"play this scenario (repeatable; default: {' '.join(DEMO_SCENARIOS)})",
    )
    demo.add_argument("--seed", type=int, default=0, metavar="N", help="seed for every scenario (default: 0)")
    demo.add_argument(
        "--speed", type=_positive_float, default=1.0, metavar="X", help="play X times faster (default: 1)"
    )
    demo.add_argument(
        "--rate", type=_positive_float, default=60.0, help="typing rate in characters/second (default: 60)"
    )

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
        formatter_class=raw,
    )
    inspect.add_argument("file", metavar="FILE", help="the captured body, or - to read stdin")
    inspect.add_argument("--json", action="store_true", help="print one JSON object per line (events, then a summary)")
    inspect.add_argument(
        "--chunk", type=_positive_int, metavar="N", help="also re-feed the body in N-byte chunks and compare"
    )
    inspect.add_argument(
        "--random-chunks",
        type=int,
        metavar="SEED",
        help="also re-feed it in random chunks (cut inside CRLFs and UTF-8 characters) and compare",
    )
    inspect.add_argument("--status", type=_status, default=200, help="HTTP status of the capture (default: 200)")
    inspect.add_argument(
        "--content-type",
        metavar="TYPE",
        help="Content-Type of the capture (default: text/event-stream, or JSON/HTML when the body looks so)",
    )
    inspect.add_argument("-q", "--quiet", action="store_true", help="print only problems and the outcome")

    chat = sub.add_parser(
        "chat",
        help="stream a chat completion from a real endpoint",
        description="Send one prompt to an OpenAI-compatible endpoint and print the answer as it streams. "
        "The API key comes from $OPENAI_API_KEY (or the variable --api-key-env names); without one no "
        "Authorization header is sent.  Reasoning and tool calls go to stderr, the answer to stdout.  "
        "Ctrl-C cancels at once and closes the connection (exit status 130).",
        epilog="example:\n  OPENAI_API_KEY=sk-... ssestate chat --base-url https://api.openai.com/v1 "
        '--model gpt-4o-mini "Hi"\n  ssestate chat --base-url http://127.0.0.1:8000/v1 --model cjk "Hello" --stats',
        formatter_class=raw,
    )
    chat.add_argument("prompt", help="the user message (- reads it from stdin)")
    chat.add_argument("--base-url", required=True, metavar="URL", help="e.g. https://api.openai.com/v1")
    chat.add_argument("--model", required=True, metavar="M", help="model name")
    chat.add_argument("--api-key-env", metavar="NAME", help="read the API key from $NAME (default: OPENAI_API_KEY)")
    chat.add_argument("--system", metavar="TEXT", help="a system message")
    chat.add_argument("--max-tokens", type=_positive_int, metavar="N", help="max_tokens")
    chat.add_argument("--temperature", type=float, metavar="T", help="temperature")
    chat.add_argument(
        "--timeout", type=_positive_float, default=60.0, metavar="S", help="first-byte and idle timeout (default: 60)"
    )
    chat.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an extra request header (repeatable)",
    )
    chat.add_argument(
        "--retries",
        type=_count,
        default=2,
        metavar="N",
        help="retry 429/5xx answers and failed connections up to N times, before any output (default: 2)",
    )
    chat.add_argument("--stats", action="store_true", help="print timing to stderr at the end")
    return parser


# -- serve ------------------------------------------------------------------------


def _json_script(status: int, body: object) -> Script:
    data = (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode()
    return Script(status, [("Content-Type", "application/json")], [data], chunked=False)


def _error_script(status: int, message: str, code: str) -> Script:
    return _json_script(
        status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
    )


class ScenarioHandler:
    """Choose and build the scenario of each request (see ``serve --help``)."""

    def __init__(self, default: str, seed: int, speed: float, log: Callable[[str], None] | None = None) -> None:
        self.default = default
        self.seed = seed
        self.speed = speed
        self.log = log
        self.chosen: dict[int, str] = {}  # request number -> "name seed N", for the log

    def pick(self, request: ScriptRequest) -> tuple[str, int, float]:
        """(scenario, seed, speed) for ``request``; ``UsageError`` when a
        header asks for something that does not exist."""
        body = request.json if isinstance(request.json, dict) else {}
        name = request.header("X-Ssestate-Scenario")
        if name is not None:
            name = name.strip()
            if name not in SCENARIOS:
                raise UsageError(
                    f"unknown scenario {name!r} in X-Ssestate-Scenario; choose one of: {', '.join(SCENARIOS)}"
                )
        else:
            model = body.get("model")
            if isinstance(model, str) and model.removeprefix("ssestate-") in SCENARIOS:
                name = model.removeprefix("ssestate-")
            else:
                name = self.default
        seed = body.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool):
            seed = self.seed + request.attempt
        speed = self.speed
        text = request.header("X-Ssestate-Speed")
        if text is not None:
            try:
                speed = _positive_float(text.strip())
            except argparse.ArgumentTypeError as exc:
                raise UsageError(f"X-Ssestate-Speed {exc}") from None
        return name, seed, speed

    def __call__(self, request: ScriptRequest) -> Script:
        path = request.path.partition("?")[0].rstrip("/")
        what = f"#{request.attempt} {request.method} {request.path}"
        if request.method == "GET" and path.endswith("/models"):
            self._log(f"{what} -> model list")
            models = [{"id": name, "object": "model", "created": 0, "owned_by": "ssestate"} for name in SCENARIOS]
            return _json_script(200, {"object": "list", "data": models})
        if request.method != "POST" or not path.endswith("/chat/completions"):
            self._log(f"{what} -> 404")
            return _error_script(
                404,
                f"ssestate serve answers POST /v1/chat/completions and GET /v1/models, not {request.method} {path}",
                "not_found",
            )
        if not isinstance(request.json, dict):
            self._log(f"{what} -> 400 (body is not a JSON object)")
            return _error_script(400, "the request body must be a JSON object", "invalid_json")
        try:
            name, seed, speed = self.pick(request)
        except UsageError as exc:
            self._log(f"{what} -> 400 ({exc})")
            return _error_script(400, str(exc), "bad_scenario_header")
        label = f"{name} seed {seed}" + (f" speed {speed:g}" if speed != self.speed else "")
        if name == "random":
            label += f" ({random_choice(seed)})"
        if self.log is not None:
            self.chosen[request.attempt] = label  # for the line that reports how it ended
        self._log(f"{what} -> {label}")
        return scenario(name, seed, speed)

    def _log(self, text: str) -> None:
        if self.log is not None:
            self.log(text)


def _cmd_serve(args: argparse.Namespace, out: Out) -> int:
    p = out.paint
    log = None if args.quiet else (lambda text: out.line(p(text, "dim")))
    handler = ScenarioHandler(args.scenario, args.seed, args.speed, log)
    try:
        server = ScriptServer(handler, host=args.host, port=args.port)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    url = server.url
    out.line(
        f"{p('ssestate serve', 'bold')}: listening on {p(url, 'cyan')}  "
        f"(scenario {args.scenario}, seed {args.seed}, speed {args.speed:g})"
    )
    out.line(
        f"  try: curl -N {url}/chat/completions -H 'Content-Type: application/json' "
        f'-d \'{{"model":"{args.scenario}","messages":[{{"role":"user","content":"hi"}}],"stream":true}}\''
    )
    out.line('  a request picks its scenario with "model": "<name>" (ssestate serve --help lists them); Ctrl-C stops')

    stop = threading.Event()

    def report() -> None:
        seen = 0
        while not stop.is_set():
            records = server.wait_for(seen + 1, timeout=0.2)
            for record in records[seen:]:
                detail = f": {record.detail}" if record.detail and record.outcome != "complete" else ""
                label = handler.chosen.pop(record.attempt, "")
                out.line(p(f"#{record.attempt} {label} ended {record.outcome} at step {record.step}{detail}", "dim"))
            seen = len(records)

    def terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if not args.quiet:
        threading.Thread(target=report, name="serve-log", daemon=True).start()
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        signal.signal(signal.SIGTERM, previous)
        server.close()
    out.line("ssestate serve: stopped")
    return EXIT_OK


# -- demo -------------------------------------------------------------------------


def _describe_outcome(acc: Accumulator) -> tuple[str, str]:
    """(text, colour) for how a stream ended."""
    outcome = acc.outcome
    reasons = sorted({c.finish_reason for c in acc.choices.values() if c.finish_reason})
    if outcome == "complete":
        sentinel = "" if acc.done is None or acc.done.sentinel else ", no [DONE]"
        return f"✓ complete (finish_reason {', '.join(reasons) or '-'}{sentinel})", "green"
    if outcome == "length":
        return "✂ cut by max_tokens (finish_reason length)", "yellow"
    if outcome == "filtered":
        return "✂ filtered (finish_reason content_filter)", "yellow"
    if outcome == "truncated":
        t = acc.truncated
        if t is not None and t.reason == "partial-event":
            return f"✗ truncated: the connection closed mid-event ({t.pending} bytes of it lost)", "red"
        return "✗ truncated: the stream ended before every choice finished", "red"
    if outcome == "error":
        e = acc.error
        if e is None:
            return f"✗ error: a choice finished with {', '.join(reasons)}", "red"
        return f"✗ {_error_text(e)}", "red"
    return f"? {outcome}", "yellow"  # pragma: no cover - a finished stream is never in progress


_TITLE = re.compile(r"<title>\s*(.*?)\s*</title>", re.IGNORECASE | re.DOTALL)


def _error_text(e: StreamError) -> str:
    """One line for a ``StreamError``: where, code, and the message (an
    HTML page's title rather than its markup)."""
    where = f"error HTTP {e.status}" if e.status is not None else "error in the stream"
    code = f" [{e.code}]" if e.code else ""
    message = e.message.strip()
    if isinstance(e.body, str) and (title := _TITLE.search(e.body)):
        message = f"an HTML page: {title.group(1)}"
    first = message.splitlines()[0] if message else "(no message)"
    return f"{where}{code}: {first[:120]}"


def _arguments(call: ToolCall) -> tuple[Any, str | None]:
    """A tool call's parsed arguments, or why they are not JSON."""
    try:
        return call.parsed_arguments(), None
    except ToolArgumentsError as exc:
        return None, exc.msg


def _stats_line(stats: Any, heartbeats: int) -> str:
    return (
        f"TTFB {_seconds(stats.ttfb)} · TTFT {_seconds(stats.ttft)} · "
        f"gaps p50 {_seconds(stats.gaps_p50)}, p95 {_seconds(stats.gaps_p95)}, max {_seconds(stats.gaps_max)} · "
        f"total {_seconds(stats.total)} · {_count_of(stats.events, 'event')}, {_size(stats.bytes)}"
        + (f", {_count_of(heartbeats, 'keep-alive comment')}" if heartbeats else "")
    )


class _Screen:
    """What the demo writes: one choice's text typed out through a pacer,
    tool calls live, styles switched only when they change."""

    def __init__(self, out: Out, rate: float, max_lag: float) -> None:
        self.out = out
        self.pacer = Pacer(rate, max_lag)
        self.style: tuple[str, ...] = ()  # style of the text in the pacer
        self.active: tuple[str, ...] = ()  # style the terminal is in
        self.at_line_start = True
        self.open_call = False
        self.live: int | None = None  # the choice shown live (the first seen)

    def shows(self, choice: int) -> bool:
        if self.live is None:
            self.live = choice
        return choice == self.live

    def write(self, text: str, *style: str) -> None:
        if not text:
            return
        paint = self.out.paint
        prefix = ""
        if style != self.active:
            prefix = (paint.reset() if self.active else "") + paint.start(*style)
            self.active = style
        self.out.write(prefix + text)
        self.at_line_start = text.endswith("\n")

    def newline(self) -> None:
        if not self.at_line_start:
            self.write("\n")

    def text(self, text: str, style: tuple[str, ...], now: float) -> None:
        if style != self.style:
            self.write(self.pacer.drain(), *self.style)
            self.close_call()
            if self.style or style:
                self.newline()
            self.style = style
        self.pacer.push(text, now)

    def tick(self, now: float) -> None:
        self.write(self.pacer.take(now), *self.style)

    def tool(self, fragment: ToolCallFragment) -> None:
        self.write(self.pacer.drain(), *self.style)
        if fragment.name or fragment.id:
            self.close_call()
            self.newline()
            self.write(f"⚙ {fragment.name or '?'}(", "cyan", "bold")
            self.open_call = True
        self.write(fragment.arguments, "cyan")

    def close_call(self) -> None:
        if self.open_call:
            self.write(")", "cyan", "bold")
            self.open_call = False

    def finish(self) -> None:
        self.pacer.close()
        self.write(self.pacer.take(0.0), *self.style)
        self.close_call()
        if self.active:
            self.out.write(self.out.paint.reset())
            self.active = ()
        self.newline()


def _read_call(url: str, payload: dict[str, Any], speed: float, inbox: queue.Queue[tuple[str, Any]]) -> None:
    """Reader thread: stream one call, pass everything to ``inbox``."""
    try:
        call = sync.stream_chat(
            url, payload, api_key="ssestate-demo", retry=None, first_byte_timeout=10.0 / speed + 5, idle_timeout=10.0
        )
        with call:
            for event in call:
                inbox.put(("event", event))
        inbox.put(("end", call))
    except Exception as exc:
        inbox.put(("fail", exc))


def _demo_one(out: Out, url: str, name: str, *, seed: int, speed: float, rate: float) -> bool:
    p = out.paint
    out.line()
    out.line(p(f"▶ {name}", "bold") + p(f" — {DESCRIPTIONS[name]}", "dim"))
    payload = {
        "model": name,
        "messages": [{"role": "user", "content": _DEMO_PROMPTS.get(name, "Tell me about server-sent events.")}],
        "seed": seed,
    }
    inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
    threading.Thread(target=_read_call, args=(url, payload, speed, inbox), name=f"demo-{name}", daemon=True).start()
    screen = _Screen(out, rate * speed, 0.8 / speed)
    acc = Accumulator()
    heartbeats = 0
    ended: tuple[str, Any] | None = None
    clock = time.monotonic
    while True:
        wait = screen.pacer.wait(clock())
        if ended is not None:
            if wait is None:
                break
            time.sleep(min(wait, 0.05))
            screen.tick(clock())
            continue
        try:
            kind, item = inbox.get(timeout=min(0.05, wait) if wait is not None else 0.05)
        except queue.Empty:
            screen.tick(clock())
            continue
        if kind != "event":
            ended = (kind, item)
            continue
        acc.feed(item)
        now = clock()
        if isinstance(item, Delta) and screen.shows(item.choice):
            if item.reasoning:
                screen.text(item.reasoning, ("dim",), now)
            if item.content:
                screen.text(item.content, (), now)
        elif isinstance(item, ToolCallFragment) and screen.shows(item.choice):
            screen.tool(item)
        elif isinstance(item, Heartbeat):
            heartbeats += 1
        screen.tick(now)
    screen.finish()
    kind, item = ended
    if kind == "fail":
        out.line(p(f"  ✗ {type(item).__name__}: {item}", "red"))
        return False
    for index, choice in acc.choices.items():
        if index != screen.live and choice.content:
            out.line(p(f"  choice {index} (not typed out above): ", "bold") + choice.content)
        for call in choice.tool_calls:
            parsed, problem = _arguments(call)
            if problem is None:
                out.line(p(f"  parsed {call.name}: {json.dumps(parsed, ensure_ascii=False)}", "cyan"))
            else:
                out.line(p(f"  {call.name}: arguments are not JSON ({problem})", "yellow"))
    text, colour = _describe_outcome(acc)
    expected = expected_outcome(name, seed)
    out.line("  " + p(text, colour))
    out.line("  " + p(_stats_line(item.stats, heartbeats), "dim"))
    if acc.outcome != expected:
        out.line(p(f"  ✗ expected the outcome {expected!r}, got {acc.outcome!r}", "red"))
        return False
    return True


def _cmd_demo(args: argparse.Namespace, out: Out) -> int:
    names = args.scenario or list(DEMO_SCENARIOS)
    p = out.paint
    start = time.monotonic()
    handler = ScenarioHandler("text", args.seed, args.speed)
    try:
        server = ScriptServer(handler)
    except OSError as exc:
        out.err(f"ssestate demo: cannot start the loopback server: {exc.strerror or exc}")
        return EXIT_OUTCOME
    with server:
        out.line(
            p("ssestate demo", "bold") + f": a loopback server at {server.url} streams {len(names)} scenarios; "
            "each is read with ssestate.adapters.sync and typed out at a steady pace"
        )
        ok = [_demo_one(out, server.url, name, seed=args.seed, speed=args.speed, rate=args.rate) for name in names]
    out.line()
    out.line(
        f"{len(names)} scenarios in {time.monotonic() - start:.1f} s.  "
        "Try them with any client: ssestate serve --scenario random"
    )
    return EXIT_OK if all(ok) else EXIT_OUTCOME


# -- inspect ----------------------------------------------------------------------


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
                f"{_count_of(len(lone), 'line')} {'ends' if len(lone) == 1 else 'end'} in a lone CR: legal, "
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
                            Problem("warning", offset, f"data is not JSON, skipped: {_short(fev.data, 50)}")
                        )
                    else:
                        if not isinstance(parsed, dict):
                            problems.append(
                                Problem("warning", offset, f"data is JSON but not an object: {_short(fev.data, 50)}")
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
                    f"{_count_of(len(after_done), 'event')} after [DONE]: ignored by clients that stop there",
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
            problems.append(Problem("error", offset, _error_text(ev)))
    problems.sort(key=lambda pr: pr.offset if pr.offset is not None else len(body))
    return Report(status, content_type, streaming, timeline, problems, acc, chat, note)


def _describe_event(ev: ChatEvent) -> tuple[str, str, str]:
    """(kind, detail, colour) of one event for the timeline."""
    if isinstance(ev, Delta):
        parts = []
        if ev.role:
            parts.append(f"role={ev.role}")
        if ev.content:
            parts.append(_short(ev.content))
        if ev.reasoning:
            parts.append("reasoning " + _short(ev.reasoning))
        if ev.refusal:
            parts.append("refusal " + _short(ev.refusal))
        return "Delta", f"#{ev.choice} " + " ".join(parts), ""
    if isinstance(ev, ToolCallFragment):
        head = " ".join(x for x in (ev.id, ev.name) if x)
        return "ToolCallFragment", f"#{ev.choice}.{ev.index} {head + ' ' if head else ''}{_short(ev.arguments)}", "cyan"
    if isinstance(ev, Finish):
        return "Finish", f"#{ev.choice} {ev.reason}", "blue"
    if isinstance(ev, Usage):
        return "Usage", f"prompt {ev.prompt_tokens} + completion {ev.completion_tokens} = {ev.total_tokens}", "blue"
    if isinstance(ev, Done):
        return "Done", "[DONE]" if ev.sentinel else "(clean end of stream, no [DONE])", "green"
    if isinstance(ev, Heartbeat):
        return "Heartbeat", _short(ev.comment), "dim"
    if isinstance(ev, Truncated):
        return "Truncated", f"{ev.reason}, {ev.pending} bytes pending", "red"
    if isinstance(ev, Continuation):
        return "Continuation", f"#{ev.choice} {ev.kind}", "dim"
    return "StreamError", f"status={ev.status} code={ev.code} type={ev.type} {_short(ev.message, 80)}", "red"


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


def _cmd_inspect(args: argparse.Namespace, out: Out) -> int:
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
                problem = _arguments(call)[1]
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


# -- chat -------------------------------------------------------------------------


def _cmd_chat(args: argparse.Namespace, out: Out) -> int:
    env = args.api_key_env or "OPENAI_API_KEY"
    key = os.environ.get(env) or None
    if args.api_key_env and key is None:
        raise UsageError(f"the environment variable {env} is not set or empty")
    prompt = args.prompt
    if prompt == "-":
        prompt = sys.stdin.read() if sys.stdin is not None else ""
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    messages = [{"role": "user", "content": prompt}]
    if args.system:
        messages.insert(0, {"role": "system", "content": args.system})
    payload: dict[str, Any] = {"model": args.model, "messages": messages}
    if args.max_tokens is not None:
        payload["max_tokens"] = args.max_tokens
    if args.temperature is not None:
        payload["temperature"] = args.temperature
    headers = []
    for item in args.header:
        name, colon, value = item.partition(":")
        if not colon or not name.strip():
            raise UsageError(f"a header is 'Name: value', got {item!r}")
        headers.append((name.strip(), value.strip()))
    try:
        call = sync.stream_chat(
            args.base_url,
            payload,
            api_key=key,
            headers=headers,
            first_byte_timeout=args.timeout,
            idle_timeout=args.timeout,
            retry=RetryPolicy(max_retries=args.retries) if args.retries > 0 else None,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    pe = out.paint_err
    acc = Accumulator()
    column = {"out": True, "err": True}  # at the start of a line

    def to_out(text: str) -> None:
        out.write(text)
        column["out"] = text.endswith("\n")

    def to_err(text: str) -> None:
        out.stderr.write(text)
        out.stderr.flush()
        column["err"] = text.endswith("\n")

    open_call = False
    try:
        with call:
            for ev in call:
                acc.feed(ev)
                if isinstance(ev, Delta):
                    if ev.reasoning:
                        to_err(pe(ev.reasoning, "dim"))
                    if ev.content:
                        if not column["err"]:
                            to_err("\n")
                        to_out(ev.content)
                    if ev.refusal:
                        to_err(pe(ev.refusal, "yellow"))
                elif isinstance(ev, ToolCallFragment):
                    if ev.name or ev.id:
                        if open_call:
                            to_err(pe(")", "cyan"))
                        if not column["err"] or not column["out"]:
                            to_err("\n")
                        to_err(pe(f"⚙ {ev.name or '?'}(", "cyan"))
                        open_call = True
                    to_err(pe(ev.arguments, "cyan"))
    except KeyboardInterrupt:
        if not column["out"]:
            to_out("\n")
        out.err("ssestate chat: cancelled; connection closed")
        return EXIT_INTERRUPTED
    except (OSError, http.client.HTTPException, ProtocolError) as exc:  # timeouts are OSErrors
        if not column["out"]:
            to_out("\n")
        raise _ChatFailure(_failure_text(exc, args.base_url)) from None
    if open_call:
        to_err(pe(")", "cyan") + "\n")
    if not column["out"]:
        to_out("\n")
    if args.stats:
        out.err(pe(_stats_line(call.stats, 0), "dim"))
    if acc.outcome != "complete":
        text, _ = _describe_outcome(acc)
        out.err(f"ssestate chat: {text.lstrip('✓✗✂? ')}")
        return EXIT_OUTCOME
    return EXIT_OK


def _failure_text(exc: BaseException, url: str) -> str:
    """One line for a failed request."""
    if isinstance(exc, StreamTimeout):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot reach {url}: {exc.strerror}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _ChatFailure(Exception):
    """The request failed (connection, timeout): exit status 1."""


# -- entry point ---------------------------------------------------------------------

_COMMANDS: dict[str, Callable[[argparse.Namespace, Out], int]] = {
    "serve": _cmd_serve,
    "demo": _cmd_demo,
    "inspect": _cmd_inspect,
    "chat": _cmd_chat,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Out(sys.stdout, sys.stderr)
    prog = f"ssestate {args.command}"
    try:
        return _COMMANDS[args.command](args, out)
    except UsageError as exc:
        out.err(f"{prog}: error: {exc}")
        return EXIT_USAGE
    except _ChatFailure as exc:
        out.err(f"{prog}: {exc}")
        return EXIT_OUTCOME
    except KeyboardInterrupt:
        out.err(f"{prog}: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, without a second
        # error when Python flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OUTCOME
