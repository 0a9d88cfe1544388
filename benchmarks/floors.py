"""The speed targets' cells against the json floor, on any Python, without the peers.

Theory of operation: the cells the speed targets are set on (the chat, tool
and n2 streams in 1460-byte chunks and whole) with only ssestate's own
contenders: ``EventStreamParser`` + ``json.loads`` and ``ChatStream``, each
with ``next_event`` bound once and with ``feed``, beside the json floor (see
``_contenders``), timed by the same harness (interleaved rounds, paired
ratios).  It needs nothing but ssestate, so it runs on every Python the
package supports, where the peers may not be installed.  It prints one line
per cell: each contender's time over the json floor's.

Run it with ``python -m benchmarks.floors [--rounds N]``.
"""

from __future__ import annotations

import argparse
import functools
import platform
from collections.abc import Callable

from . import _contenders as c
from ._harness import Cell, interleave
from .fixtures import CHUNK_SIZES, Fixture, chat_stream, chunk, n2_stream, tool_call_stream

RUNNERS: dict[str, Callable[[list[bytes]], int]] = {
    "ssestate": c.ssestate_json,
    "ssestate feed": c.ssestate_feed_json,
    "ChatStream": c.chatstream,
    "ChatStream feed": c.chatstream_feed,
}


def measure(fx: Fixture, label: str, rounds: int = 11) -> dict[str, float]:
    """Time over the json floor's, per contender (paired, median of rounds)."""
    chunks = chunk(fx.body, CHUNK_SIZES[label])
    contenders: dict[str, Callable[[], int]] = {name: functools.partial(run, chunks) for name, run in RUNNERS.items()}
    contenders["json floor"] = c.json_floor(fx.json_payloads)
    n = len(fx.json_payloads)
    events = c.chatstream([fx.body])
    expect = {"ssestate": n, "ssestate feed": n, "json floor": n, "ChatStream": events, "ChatStream feed": events}
    cell = interleave(Cell(fx.name, label, len(fx.body), fx.events), contenders, expect, rounds=rounds, min_sample=0.01)
    return {name: cell.ratio(name, "json floor") for name in RUNNERS}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.floors", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=11, help="rounds of each cell (default 11)")
    args = parser.parse_args(argv)
    print(f"{platform.python_implementation()} {platform.python_version()} (time / json floor)")
    for fx in (chat_stream(n_chunks=500), tool_call_stream(n_items=20), n2_stream(n_chunks=250)):
        for label in ("whole", "1460"):
            r = measure(fx, label, args.rounds)
            print(f"{fx.name:>5} @ {label:>5}: " + ", ".join(f"{name} {ratio:.2f}" for name, ratio in r.items()))


if __name__ == "__main__":
    main()
