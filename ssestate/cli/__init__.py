"""The ``ssestate`` command line: serve, demo, inspect, chat.

Theory of operation
-------------------
Each command is a module of this package with two functions:
``add_parser(subparsers)`` declares its options and ``run(args, out) ->
int`` does the work and returns the exit status.  This module builds the
one ``argparse`` parser from them and dispatches; ``_common`` holds what
they share (colour, output, option types, exit statuses, the words for how
a stream ended).

``main`` turns the things a user can cause (a bad option, a missing file, a
refused connection, Ctrl-C, a closed pipe) into one line on stderr and an
exit status, never a traceback: 0 done, 1 an outcome other than complete
or a failed request, 2 bad usage or unreadable input, 130 interrupted.

The core never imports this package; it imports the core through
``ssestate``'s public names only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from . import chat, demo, inspect, serve
from ._common import EXIT_INTERRUPTED, EXIT_OUTCOME, EXIT_USAGE, ChatFailure, Formatter, Out, Parser, UsageError

__all__ = ["build_parser", "main"]

_COMMANDS: dict[str, Callable[[argparse.Namespace, Out], int]] = {
    "serve": serve.run,
    "demo": demo.run,
    "inspect": inspect.run,
    "chat": chat.run,
}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="ssestate",
        description="Server-Sent Events and OpenAI-style chat streams: a test server, a demo, "
        "a capture inspector and a streaming chat client.",
        epilog="examples:\n  ssestate demo\n  ssestate serve --scenario cjk\n"
        '  curl -sN URL/v1/chat/completions -d \'{"model":"tools"}\' | ssestate inspect -\n'
        '  ssestate chat --base-url http://localhost:11434/v1 --model llama3.2 "Hello"\n\n'
        "Run 'ssestate COMMAND --help' for a command's options.",
        formatter_class=Formatter,
    )
    parser.add_argument("--version", action="version", version=f"ssestate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)
    for module in (serve, demo, inspect, chat):
        module.add_parser(sub)
    return parser


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
    except ChatFailure as exc:
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
