"""``ssestate serve``: the scripted test server on loopback, in the foreground.

Theory of operation
-------------------
``ssestate.testing.ScenarioHandler`` turns each request into a ``Script``
(the answer of the API whose path it came to, played as the scenario
picked by header, model name or the default, with its seed and speed) and
``ScriptServer`` plays it; the banner lists those paths.  The server runs
in the calling thread until Ctrl-C or SIGTERM; a daemon thread waits on the
server's response records and logs how each response ended (complete,
aborted, disconnected), so a user watching the log sees when a client hung
up.
"""

from __future__ import annotations

import argparse
import ipaddress
import signal
import threading

from ..testing import DESCRIPTIONS, PATHS, SCENARIOS, ScenarioHandler, ScriptServer
from ._common import EXIT_OK, Formatter, Out, SubParsers, UsageError, port, positive_float

__all__ = ["add_parser", "run", "scenario_list", "scenario_name"]


def _loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host.lower() == "localhost"


def scenario_name(text: str) -> str:
    if text not in SCENARIOS:
        raise argparse.ArgumentTypeError(f"unknown scenario {text!r}; choose one of: {', '.join(SCENARIOS)}")
    return text


def scenario_list() -> str:
    width = max(map(len, SCENARIOS))
    return "\n".join(f"  {name:<{width}}  {DESCRIPTIONS[name]}" for name in SCENARIOS)


def add_parser(sub: SubParsers) -> None:
    serve = sub.add_parser(
        "serve",
        help="a test server (OpenAI, Anthropic, Gemini) that streams difficult responses",
        description="Serve OpenAI Chat Completions (POST /v1/chat/completions), the Responses API "
        "(POST /v1/responses), Anthropic Messages (POST /v1/messages) and Gemini "
        "(POST /v1beta/models/{model}:streamGenerateContent?alt=sse, :generateContent) on loopback with "
        "scripted, difficult but realistic streams: bursts, silences with keep-alives, writes cut inside "
        "UTF-8 characters and CRLF pairs, dropped connections, error heads, each API's own errors.  Point any "
        "client at it.\n\n"
        "Where a scenario intends no fault the server is the API it was asked at: it streams only when the "
        'request says "stream": true (Gemini: :streamGenerateContent), else it answers with the whole answer; '
        "sends Chat Completions' usage chunk only with stream_options.include_usage, stops a choice at the "
        "token limit (max_tokens, max_output_tokens, maxOutputTokens) with the API's length reason, counts the "
        "prompt's tokens from the prompt alone, and answers other paths with the API's 404.\n\n"
        'The scenario is chosen per request: the X-Ssestate-Scenario header, else a "model" naming a '
        'scenario ("cjk" or "ssestate-cjk"), else --scenario; the X-Ssestate-Speed header overrides '
        "--speed.  The seed is the request's integer "
        '"seed" field, else --seed plus the number of requests served before (so "random" varies).  '
        "GET /v1/models lists the scenarios.\n\nscenarios:\n" + scenario_list(),
        epilog="example:\n  ssestate serve --port 8000 --scenario random --seed 7\n"
        "  curl -N http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\\n"
        '       -d \'{"model":"crlf","messages":[{"role":"user","content":"hi"}],"stream":true}\'',
        formatter_class=Formatter,
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=port, default=0, help="port to bind (default: 0, any free port)")
    serve.add_argument(
        "--scenario", type=scenario_name, default="text", metavar="NAME", help="default scenario (default: text)"
    )
    serve.add_argument("--seed", type=int, default=0, metavar="N", help="base seed (default: 0)")
    serve.add_argument(
        "--speed", type=positive_float, default=1.0, metavar="X", help="divide every pause by X (default: 1)"
    )
    serve.add_argument("-q", "--quiet", action="store_true", help="do not log requests")


def run(args: argparse.Namespace, out: Out) -> int:
    p = out.paint
    log = None if args.quiet else (lambda text: out.line(p(text, "dim")))
    handler = ScenarioHandler(args.scenario, args.seed, args.speed, log)
    if not _loopback(args.host):
        out.err(
            f"ssestate serve: warning: --host {args.host} is not a loopback address: anyone who can reach this "
            "machine can use the test server"
        )
    try:
        server = ScriptServer(handler, host=args.host, port=args.port)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
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

    # SIGTERM is Ctrl-C from now on, before the banner tells anyone the server
    # is there, so that a stop never kills it without closing its sockets.
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        url = server.url
        out.line(
            f"{p('ssestate serve', 'bold')}: listening on {p(url, 'cyan')}  "
            f"(scenario {args.scenario}, seed {args.seed}, speed {args.speed:g})"
        )
        out.line(
            f"  try: curl -N {url}/chat/completions -H 'Content-Type: application/json' "
            f'-d \'{{"model":"{args.scenario}","messages":[{{"role":"user","content":"hi"}}],"stream":true}}\''
        )
        out.line(
            '  a request picks its scenario with "model": "<name>" (ssestate serve --help lists them); Ctrl-C stops'
        )
        width = max(len(path) for path, _ in PATHS)
        out.line("  answers:")
        for path, api in PATHS:
            out.line(f"    {path:<{width}}  {p(api, 'dim')}")
        if not args.quiet:
            threading.Thread(target=report, name="serve-log", daemon=True).start()
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        signal.signal(signal.SIGTERM, previous)
        server.close()
    out.line("ssestate serve: stopped")
    return EXIT_OK
