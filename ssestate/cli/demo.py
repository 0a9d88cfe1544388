"""``ssestate demo``: a tour of difficult streams, offline.

Theory of operation
-------------------
The demo starts the scripted server in-process on loopback and reads a few
scenarios through the standard-library adapter: by default six in OpenAI
Chat Completions, then one stream of each other API (the Responses API,
Anthropic Messages, Gemini), each asked for and read as that API.  For each one a reader
thread owns the connection and passes every event (then how the call ended)
through a queue; the main thread feeds an ``Accumulator`` and types the
text out through a ``Pacer`` at ``--rate`` characters a second (times
``--speed``), ticking every 50 ms so that the display keeps moving while
the network is silent and catches up after a burst at that rate, not
faster.  Only the first
choice seen is typed out live; tool calls are shown as they stream (name,
then the raw argument fragments) and parsed at the end.  Each scenario ends
with how the stream ended, its timing, and a check against the outcome the
scenario is known to have.
"""

from __future__ import annotations

import argparse
import json
import queue
import threading
import time
from typing import Any

from .. import Accumulator, Delta, Heartbeat, Pacer, ToolCallFragment
from ..adapters import sync
from ..testing import BASE_PATHS, DESCRIPTIONS, REFUSED, ScenarioHandler, ScriptServer, expected_outcome
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
    describe_outcome,
    positive_float,
    request_body,
    stats_line,
)
from .serve import scenario_name

__all__ = ["DEMO_SCENARIOS", "DEMO_TOUR", "add_parser", "run"]

DEMO_SCENARIOS = ("text", "tools", "cjk", "length", "drop-mid-event", "error-503")
# The default tour: the scenarios above in Chat Completions, then one stream
# in each other API, (API, scenario) each.
DEMO_TOUR = (
    *(("openai-chat", name) for name in DEMO_SCENARIOS),
    ("openai-responses", "reasoning"),
    ("anthropic", "parallel-tools"),
    ("gemini", "cjk"),
)
# Longer than any scenario's text takes at the slowest rate worth typing at.
_MAX_LAG = 600.0
_DEMO_PROMPTS = {
    "tools": "What's the weather in São Paulo?",
    "parallel-tools": "Weather and local time in Tokyo, please.",
    "cjk": "Say something in a few languages.",
    "reasoning": "How many r's are in strawberry?",
}


def add_parser(sub: SubParsers) -> None:
    demo = sub.add_parser(
        "demo",
        help="watch a few difficult streams parsed and displayed, offline",
        description="Start the test server in-process, read a few scenarios through the standard-library "
        "adapter and show what a user should see: text typed out at a steady pace although the network "
        "delivered it in bursts, tool calls live (name and raw arguments, parsed only at the end), how "
        "each stream ended and its timing.  Needs no network and no API key.",
        epilog="example:\n  ssestate demo\n  ssestate demo --scenario reasoning --scenario n2 --speed 2"
        "\n  ssestate demo --dialect anthropic --scenario tools",
        formatter_class=Formatter,
    )
    demo.add_argument(
        "--scenario",
        type=scenario_name,
        action="append",
        metavar="NAME",
        help="play this scenario (repeatable; default: a tour of "
        f"{' '.join(DEMO_SCENARIOS)} in Chat Completions, then one stream of each other API)",
    )
    demo.add_argument(
        "--dialect",
        choices=list(API_NAMES),
        metavar="API",
        help="ask for and read the scenarios in this API: " + ", ".join(API_NAMES) + " "
        f"(default: openai-chat; alone, it plays {' '.join(DEMO_SCENARIOS)} in that API)",
    )
    demo.add_argument("--seed", type=int, default=0, metavar="N", help="seed for every scenario (default: 0)")
    demo.add_argument("--speed", type=positive_float, default=1.0, metavar="X", help="play X times faster (default: 1)")
    demo.add_argument(
        "--rate", type=positive_float, default=60.0, help="typing rate in characters/second (default: 60)"
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


def _read_call(
    url: str, payload: dict[str, Any], dialect: str, speed: float, inbox: queue.Queue[tuple[str, Any]]
) -> None:
    """Reader thread: stream one call, pass everything to ``inbox``."""
    try:
        call = sync.stream_chat(
            url,
            payload,
            api_key="ssestate-demo",
            retry=None,
            first_byte_timeout=10.0 / speed + 5,
            idle_timeout=10.0,
            dialect=dialect,
        )
        with call:
            for event in call:
                inbox.put(("event", event))
        inbox.put(("end", call))
    except Exception as exc:
        inbox.put(("fail", exc))


def _demo_one(out: Out, origin: str, dialect: str, name: str, *, seed: int, speed: float, rate: float) -> bool:
    p = out.paint
    out.line()
    out.line(p(f"▶ {name}", "bold") + p(f" · {API_NAMES[dialect]} — {DESCRIPTIONS[name]}", "dim"))
    payload = request_body(dialect, name, _DEMO_PROMPTS.get(name, "Tell me about server-sent events."))
    url = origin + BASE_PATHS[dialect]
    inbox: queue.Queue[tuple[str, Any]] = queue.Queue()
    reader = threading.Thread(
        target=_read_call, args=(url, payload, dialect, speed, inbox), name=f"demo-{name}", daemon=True
    )
    reader.start()
    # The text is typed at ``rate`` (times ``speed``) however far the display
    # falls behind the network: the lag bound is only a backstop.
    screen = _Screen(out, rate * speed, _MAX_LAG)
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
            parsed, problem = arguments_of(call)
            if problem is None:
                out.line(p(f"  parsed {call.name}: {json.dumps(parsed, ensure_ascii=False)}", "cyan"))
            else:
                out.line(p(f"  {call.name}: arguments are not JSON ({problem})", "yellow"))
    text, colour = describe_outcome(acc, dialect)
    expected = expected_outcome(name, seed, max_tokens=payload.get("max_tokens"), dialect=dialect)
    out.line("  " + p(text, colour))
    out.line("  " + p(stats_line(item.stats, heartbeats), "dim"))
    if acc.outcome != expected:
        out.line(p(f"  ✗ expected the outcome {expected!r}, got {acc.outcome!r}", "red"))
        return False
    return True


def run(args: argparse.Namespace, out: Out) -> int:
    if args.scenario or args.dialect:
        dialect = args.dialect or "openai-chat"
        refused = REFUSED.get(dialect, {})
        for name in args.scenario or ():
            if name in refused:
                raise UsageError(f"{API_NAMES[dialect]} cannot play {name}: {refused[name]}")
        tour = [(dialect, name) for name in args.scenario or DEMO_SCENARIOS]
    else:
        tour = list(DEMO_TOUR)
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
            p("ssestate demo", "bold")
            + f": a loopback server at {server.origin} streams {count_of(len(tour), 'scenario')}; "
            "each is read with ssestate.adapters.sync and typed out at a steady pace"
        )
        ok = [
            _demo_one(out, server.origin, dialect, name, seed=args.seed, speed=args.speed, rate=args.rate)
            for dialect, name in tour
        ]
    out.line()
    out.line(
        f"{count_of(len(tour), 'scenario')} in {time.monotonic() - start:.1f} s.  "
        "Try them with any client: ssestate serve --scenario random"
    )
    return EXIT_OK if all(ok) else EXIT_OUTCOME
