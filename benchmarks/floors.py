"""The framing target against the floors, on any Python, without the peers.

Theory of operation: one cell of the framing benchmark (the chat stream in
1460-byte chunks, the size of the framing target) with only ssestate's own
contenders: ``EventStreamParser`` + ``json.loads``, the json floor, the event
floor and the split floor (see ``_contenders``), timed by the same harness
(interleaved rounds, paired ratios).  It needs nothing but ssestate, so it
runs on every Python the package supports, where the peers may not be
installed.  It prints one line: each contender's time over the json floor's,
and the event floor plus the split floor, the least a framer that hands out
``ServerSentEvent`` objects could take if it found the events as cheaply as
one ``bytes.split`` of the body and did nothing else.

Run it with ``python -m benchmarks.floors [--rounds N]``.
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Callable

from . import _contenders as c
from ._harness import Cell, interleave
from .fixtures import CHUNK_SIZES, chat_stream, chunk

LABEL = "1460"


def measure(rounds: int = 11, n_chunks: int = 2000) -> dict[str, float]:
    """Time over the json floor's, per contender (paired, median of rounds)."""
    fx = chat_stream(n_chunks=n_chunks)
    chunks = chunk(fx.body, CHUNK_SIZES[LABEL])
    contenders: dict[str, Callable[[], int]] = {
        "ssestate": lambda: c.ssestate_json(chunks),
        "json floor": c.json_floor(fx.json_payloads),
        "event floor": c.event_floor(chunks),
        "split floor": c.split_floor(fx.body),
    }
    n = len(fx.json_payloads)
    expect = {"ssestate": n, "json floor": n, "event floor": n}
    cell = interleave(Cell(fx.name, LABEL, len(fx.body), fx.events), contenders, expect, rounds=rounds, min_sample=0.01)
    return {name: cell.ratio(name, "json floor") for name in ("ssestate", "event floor", "split floor")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.floors", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=11, help="rounds of the cell (default 11)")
    args = parser.parse_args(argv)
    r = measure(args.rounds)
    print(
        f"{platform.python_implementation()} {platform.python_version()}, chat stream @ {LABEL} "
        f"(time / json floor): ssestate+json {r['ssestate']:.2f}, event floor {r['event floor']:.2f}, "
        f"split floor {r['split floor']:.3f}, event + split floors {r['event floor'] + r['split floor']:.2f}"
    )


if __name__ == "__main__":
    main()
