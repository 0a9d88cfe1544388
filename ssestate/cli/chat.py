"""``ssestate chat``: stream one answer from a real endpoint.

Theory of operation
-------------------
One request through the standard-library adapter (``ssestate.adapters.
sync``), with idle timeouts and retries before any output, in the shape of
the API ``--dialect`` names (Chat Completions by default, the Responses
API, Anthropic Messages or Gemini: ``request_body`` writes the prompt, the
system message and the limits where each API takes them; the adapter adds
the path, the auth header and the streaming options).  The answer goes
to stdout as it arrives; reasoning, refusals and tool calls go to stderr,
so that ``ssestate chat ... > answer.txt`` keeps only the answer.  With
several choices (n>1) the first one seen is shown live and each other one
follows under its own header when the stream is over.  Ctrl-C leaves the
``with`` block, which closes the connection (exit status 130); a failed
request is one line on stderr (exit status 1), as is any outcome other than
complete.  ``--stats`` prints its line before that last line, on every one
of these paths.
"""

from __future__ import annotations

import argparse
import http.client
import os
import sys

from .. import Accumulator, Delta, Heartbeat, ProtocolError, RetryPolicy, StreamTimeout, ToolCallFragment
from ..adapters import sync
from ._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTCOME,
    ChatFailure,
    Formatter,
    Out,
    SubParsers,
    UsageError,
    count,
    describe_outcome,
    positive_float,
    positive_int,
    request_body,
    stats_line,
)

__all__ = ["add_parser", "run"]

# The environment variable each API's own SDK reads the key from.
KEY_VARIABLES = {
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
}


def add_parser(sub: SubParsers) -> None:
    chat = sub.add_parser(
        "chat",
        help="stream a chat completion from a real endpoint",
        description="Send one prompt to an OpenAI-compatible endpoint, or to the Responses API, Anthropic "
        "Messages or Gemini (--dialect), and print the answer as it streams.  The API key comes from "
        "$OPENAI_API_KEY ($ANTHROPIC_API_KEY for anthropic, $GEMINI_API_KEY for gemini), or the variable "
        "--api-key-env names; without one no key is sent.  Reasoning and tool calls go to stderr, the "
        "answer to stdout.  "
        "Ctrl-C cancels at once and closes the connection (exit status 130).",
        epilog="example:\n  OPENAI_API_KEY=sk-... ssestate chat --base-url https://api.openai.com/v1 "
        '--model gpt-4o-mini "Hi"\n  ssestate chat --base-url http://127.0.0.1:8000/v1 --model cjk "Hello" --stats'
        '\n  ssestate chat --dialect anthropic --base-url https://api.anthropic.com/v1 --model claude-sonnet-4-5 "Hi"'
        "\n  ssestate chat --dialect gemini --base-url https://generativelanguage.googleapis.com/v1beta "
        '--model gemini-2.5-flash "Hi"',
        formatter_class=Formatter,
    )
    chat.add_argument("prompt", help="the user message (- reads it from stdin)")
    chat.add_argument("--base-url", required=True, metavar="URL", help="e.g. https://api.openai.com/v1")
    chat.add_argument("--model", required=True, metavar="M", help="model name")
    chat.add_argument(
        "--dialect",
        choices=list(KEY_VARIABLES),
        default="openai-chat",
        help="the API of the endpoint (default: openai-chat)",
    )
    chat.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="read the API key from $NAME (default: the dialect's usual variable, OPENAI_API_KEY for the OpenAI APIs)",
    )
    chat.add_argument("--system", metavar="TEXT", help="a system message")
    chat.add_argument(
        "--max-tokens",
        type=positive_int,
        metavar="N",
        help="the answer's token limit: max_tokens, max_output_tokens (at least 16) or "
        "generationConfig.maxOutputTokens, as the API names it (anthropic needs one: default 1024)",
    )
    chat.add_argument("--temperature", type=float, metavar="T", help="temperature")
    chat.add_argument(
        "--timeout", type=positive_float, default=60.0, metavar="S", help="first-byte and idle timeout (default: 60)"
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
        type=count,
        default=2,
        metavar="N",
        help="retry 429/5xx answers and failed connections up to N times, before any output (default: 2)",
    )
    chat.add_argument("--stats", action="store_true", help="print timing to stderr at the end")


def run(args: argparse.Namespace, out: Out) -> int:
    env = args.api_key_env or KEY_VARIABLES[args.dialect]
    key = os.environ.get(env) or None
    if args.api_key_env and key is None:
        raise UsageError(f"the environment variable {env} is not set or empty")
    prompt = args.prompt
    if prompt == "-":
        prompt = sys.stdin.read() if sys.stdin is not None else ""
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    if args.dialect == "gemini" and not args.model.removeprefix("models/").strip():
        raise UsageError("--model must name a Gemini model, e.g. gemini-2.5-flash")
    payload = request_body(
        args.dialect, args.model, prompt, system=args.system, max_tokens=args.max_tokens, temperature=args.temperature
    )
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
            dialect=args.dialect,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    acc = Accumulator()
    screen = _Screen(out)
    heartbeats = 0

    def stats() -> None:
        if args.stats:
            out.err(out.paint_err(stats_line(call.stats, heartbeats), "dim"))

    try:
        with call:
            for ev in call:
                acc.feed(ev)
                screen.show(ev)
                heartbeats += isinstance(ev, Heartbeat)
    except KeyboardInterrupt:
        screen.end_lines()
        stats()
        out.err("ssestate chat: cancelled; connection closed")
        return EXIT_INTERRUPTED
    except (OSError, http.client.HTTPException, ProtocolError) as exc:  # timeouts are OSErrors
        screen.end_lines()
        stats()
        raise ChatFailure(_failure_text(exc, args.base_url)) from None
    screen.others(acc)
    stats()
    if acc.outcome != "complete":
        text, _ = describe_outcome(acc, args.dialect)
        out.err(f"ssestate chat: {text.lstrip('✓✗✂? ')}")
        return EXIT_OUTCOME
    return EXIT_OK


class _Screen:
    """The answer on stdout, reasoning, refusals and tool calls on stderr;
    the first choice seen live, the others (n>1) each under its own header
    once the stream is over, so that two answers never share a line.  Each
    stream's "at the start of a line" state is tracked, so that switching
    between them never glues two texts together."""

    def __init__(self, out: Out) -> None:
        self.out = out
        self.pe = out.paint_err
        self.at_start = {"out": True, "err": True}
        self.live: int | None = None
        self.open_call = False

    def to_out(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.at_start["out"] = text.endswith("\n")

    def to_err(self, text: str) -> None:
        if text:
            self.out.stderr.write(text)
            self.out.stderr.flush()
            self.at_start["err"] = text.endswith("\n")

    def show(self, ev: object) -> None:
        if not isinstance(ev, (Delta, ToolCallFragment)):
            return
        if self.live is None:
            self.live = ev.choice
        if ev.choice != self.live:
            return  # shown whole at the end
        pe = self.pe
        if isinstance(ev, Delta):
            self.to_err(pe(ev.reasoning or "", "dim"))
            if ev.content:
                if not self.at_start["err"]:
                    self.to_err("\n")
                self.to_out(ev.content)
            self.to_err(pe(ev.refusal or "", "yellow"))
            return
        if ev.name or ev.id:
            self.close_call()
            if not self.at_start["err"] or not self.at_start["out"]:
                self.to_err("\n")
            self.to_err(pe(f"⚙ {ev.name or '?'}(", "cyan"))
            self.open_call = True
        self.to_err(pe(ev.arguments, "cyan"))

    def close_call(self) -> None:
        if self.open_call:
            self.to_err(self.pe(")", "cyan"))
            self.open_call = False

    def end_lines(self) -> None:
        """End whatever line either stream is in the middle of."""
        self.close_call()
        if not self.at_start["err"]:
            self.to_err("\n")
        if not self.at_start["out"]:
            self.to_out("\n")

    def others(self, acc: Accumulator) -> None:
        """After the stream: every choice that was not shown live."""
        self.end_lines()
        pe = self.pe
        for index, choice in sorted(acc.choices.items()):
            if index == self.live:
                continue
            self.to_out(f"── choice {index} ──\n")
            if choice.reasoning:
                self.to_err(pe(choice.reasoning, "dim") + "\n")
            if choice.content:
                self.to_out(choice.content + ("" if choice.content.endswith("\n") else "\n"))
            if choice.refusal:
                self.to_err(pe(choice.refusal, "yellow") + "\n")
            for call in choice.tool_calls:
                self.to_err(pe(f"⚙ {call.name or '?'}({call.arguments})", "cyan") + "\n")


def _failure_text(exc: BaseException, url: str) -> str:
    """One line for a failed request."""
    if isinstance(exc, StreamTimeout):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot reach {url}: {exc.strerror}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
