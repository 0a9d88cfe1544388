"""``ssestate chat``: stream one answer from a real endpoint.

Theory of operation
-------------------
One request through the standard-library adapter (``ssestate.adapters.
sync``), with idle timeouts and retries before any output.  The answer goes
to stdout as it arrives; reasoning, refusals and tool calls go to stderr,
so that ``ssestate chat ... > answer.txt`` keeps only the answer.  Each
stream's "at the start of a line" state is tracked so that switching between
them never glues two texts together.  Ctrl-C leaves the ``with`` block,
which closes the connection (exit status 130); a failed request is one line
on stderr (exit status 1), as is any outcome other than complete.
"""

from __future__ import annotations

import argparse
import http.client
import os
import sys
from typing import Any

from .. import Accumulator, Delta, ProtocolError, RetryPolicy, StreamTimeout, ToolCallFragment
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
    stats_line,
)

__all__ = ["add_parser", "run"]


def add_parser(sub: SubParsers) -> None:
    chat = sub.add_parser(
        "chat",
        help="stream a chat completion from a real endpoint",
        description="Send one prompt to an OpenAI-compatible endpoint and print the answer as it streams. "
        "The API key comes from $OPENAI_API_KEY (or the variable --api-key-env names); without one no "
        "Authorization header is sent.  Reasoning and tool calls go to stderr, the answer to stdout.  "
        "Ctrl-C cancels at once and closes the connection (exit status 130).",
        epilog="example:\n  OPENAI_API_KEY=sk-... ssestate chat --base-url https://api.openai.com/v1 "
        '--model gpt-4o-mini "Hi"\n  ssestate chat --base-url http://127.0.0.1:8000/v1 --model cjk "Hello" --stats',
        formatter_class=Formatter,
    )
    chat.add_argument("prompt", help="the user message (- reads it from stdin)")
    chat.add_argument("--base-url", required=True, metavar="URL", help="e.g. https://api.openai.com/v1")
    chat.add_argument("--model", required=True, metavar="M", help="model name")
    chat.add_argument("--api-key-env", metavar="NAME", help="read the API key from $NAME (default: OPENAI_API_KEY)")
    chat.add_argument("--system", metavar="TEXT", help="a system message")
    chat.add_argument("--max-tokens", type=positive_int, metavar="N", help="max_tokens")
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
        raise ChatFailure(_failure_text(exc, args.base_url)) from None
    if open_call:
        to_err(pe(")", "cyan") + "\n")
    if not column["out"]:
        to_out("\n")
    if args.stats:
        out.err(pe(stats_line(call.stats, 0), "dim"))
    if acc.outcome != "complete":
        text, _ = describe_outcome(acc)
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
