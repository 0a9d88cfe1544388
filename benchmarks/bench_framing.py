"""Framing throughput: EventStreamParser + json.loads against the peers and the floors.

Theory of operation: for each stream (the OpenAI chat stream, the stream of
64 KiB events) and each chunk size, one *cell* races every framing pipeline
over the same pre-cut chunks (see ``_contenders`` for how each is driven and
``_harness`` for the interleaving).  Every pipeline decodes every JSON
payload, so all do the same work; the floors show what that work costs
without any framing (``json.loads`` over the pre-split payloads), what
cutting the body at its blank lines costs in one C call
(``bytes.split(b"\\n\\n")``), and what no framer that hands out
``ServerSentEvent`` objects can go below (the event floor: ``json.loads``
plus decoding, building and handing out each event, with the places of the
events given in advance).

Then the linearity runs: one huge line dripped in 64-byte chunks, and one
huge payload in 1-byte chunks, each at two sizes 4x apart, timed in the same
cell.  A parser that rescans its buffer would take 16x as long at 4x the
size; a linear one takes 4x.

Run it through ``python -m benchmarks`` (see ``benchmarks/README.md``), or
alone with ``python -m benchmarks.bench_framing [--quick]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _contenders as c
from ._harness import Cell, Verdict, checklist, interleave, table
from .fixtures import CHUNK_SIZES, Fixture, big_event_stream, big_payload, chat_stream, chunk, huge_line

PEERS = ["httpx-sse", "sseclient-py", "openai-decoder"]
FLOORS = ["json floor", "split floor", "event floor"]
ORDER = ["ssestate", *PEERS, *FLOORS]

# Target of the framing issue: EventStreamParser + json.loads within 1.3x of
# the json.loads floor at 1460-byte chunks, and never slower than the fastest
# peer.
TARGET_VS_JSON = 1.3
TARGET_CHUNK = "1460"


@dataclass(frozen=True)
class Scale:
    """How much work a run does.  Cells whose chunk label is missing are skipped."""

    rounds: int
    min_sample: float
    chat_chunks: dict[str, int]  # chunk label -> content chunks in the chat stream
    big_events: dict[str, int]  # chunk label -> 64 KiB events
    line_sizes: tuple[int, int]  # the huge line, dripped in 64-byte chunks
    payload_sizes: tuple[int, int]  # the huge payload, in 1-byte chunks
    linear_rounds: int


FULL = Scale(
    rounds=11,
    min_sample=0.01,
    chat_chunks={"whole": 2000, "64KiB": 2000, "1460": 2000, "37": 2000, "1": 200},
    big_events={"whole": 32, "64KiB": 32, "1460": 32, "37": 8, "1": 1},
    line_sizes=(1 << 20, 4 << 20),
    payload_sizes=(256 << 10, 1 << 20),
    linear_rounds=3,
)
QUICK = Scale(
    rounds=2,
    min_sample=0.0,
    chat_chunks={"whole": 200, "64KiB": 200, "1460": 200, "37": 200, "1": 20},
    big_events={"whole": 2, "64KiB": 2, "1460": 2, "37": 1},
    line_sizes=(64 << 10, 256 << 10),
    payload_sizes=(16 << 10, 64 << 10),
    linear_rounds=1,
)


def _cell(fx: Fixture, label: str, scale: Scale) -> Cell:
    chunks = chunk(fx.body, CHUNK_SIZES[label])
    runners: dict[str, Callable[[list[bytes]], int]] = {
        "ssestate": c.ssestate_json,
        "httpx-sse": c.httpx_sse_json,
        "sseclient-py": c.sseclient_json,
        "openai-decoder": c.openai_decoder_json,
    }
    contenders: dict[str, Callable[[], int]] = {name: (lambda run=run: run(chunks)) for name, run in runners.items()}
    contenders["json floor"] = c.json_floor(fx.json_payloads)
    contenders["split floor"] = c.split_floor(fx.body)
    contenders["event floor"] = c.event_floor(chunks)
    n_json = len(fx.json_payloads)
    expect = dict.fromkeys([*runners, "json floor", "event floor"], n_json)
    cell = Cell(fx.name, label, len(fx.body), fx.events)
    return interleave(cell, contenders, expect, rounds=scale.rounds, min_sample=scale.min_sample)


def _linear_cell(name: str, bodies: list[bytes], size: int, runners: dict[str, Any], scale: Scale) -> Cell:
    contenders: dict[str, Callable[[], int]] = {}
    for body in bodies:
        chunks = chunk(body, size)
        for peer, run in runners.items():
            contenders[f"{peer}@{len(body)}"] = lambda run=run, chunks=chunks: run(chunks)
    expect = dict.fromkeys(contenders, 1)
    cell = Cell(name, str(size), len(bodies[-1]), 1)
    return interleave(cell, contenders, expect, rounds=scale.linear_rounds, min_sample=0.0, max_run=60.0)


def run(scale: Scale = FULL, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run every framing cell and the linearity runs; return the results."""
    cells: list[Cell] = []
    streams: list[tuple[Callable[[int], Fixture], dict[str, int]]] = [
        (lambda n: chat_stream(n_chunks=n), scale.chat_chunks),
        (lambda n: big_event_stream(n_events=n), scale.big_events),
    ]
    for make, sizes in streams:
        for label in CHUNK_SIZES:
            if label not in sizes:
                continue
            fx = make(sizes[label])
            t0 = time.process_time()
            cells.append(_cell(fx, label, scale))
            spent = time.process_time() - t0
            log(f"framing: {fx.name} stream, {label} chunks ({len(fx.body) / 1e6:.2f} MB): {spent:.1f} s CPU")

    linear: list[dict[str, Any]] = []
    cases = [
        (
            "huge line, 64-byte chunks",
            [huge_line(n, terminated=True) for n in scale.line_sizes],
            64,
            {"ssestate": c.ssestate_events, "httpx-sse": c.httpx_sse_events, "openai-decoder": c.openai_decoder_events},
        ),
        (
            "huge payload, 1-byte chunks",
            [big_payload(n).body for n in scale.payload_sizes],
            1,
            {"ssestate": c.ssestate_events},
        ),
    ]
    for name, bodies, size, runners in cases:
        t0 = time.process_time()
        cell = _linear_cell(name, bodies, size, runners, scale)
        log(f"linearity: {name}: {time.process_time() - t0:.1f} s CPU")
        small, large = (len(b) for b in bodies)
        for peer in runners:
            a, b = f"{peer}@{small}", f"{peer}@{large}"
            linear.append(
                {
                    "case": name,
                    "contender": peer,
                    "small_bytes": small,
                    "large_bytes": large,
                    "small_s": cell.median(a),
                    "large_s": cell.median(b),
                    "time_ratio": cell.ratio(b, a),
                    "size_ratio": large / small,
                }
            )
    return {"cells": cells, "linear": linear}


def _size(n: int) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def report(results: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The printed tables and the JSON-ready summary of a ``run``."""
    cells: list[Cell] = results["cells"]
    rows = []
    out_cells = []
    verdicts: list[Verdict] = []
    bounds: list[str] = []
    for cell in cells:
        fastest = cell.fastest(PEERS)
        vs_json = cell.ratio("ssestate", "json floor")
        vs_peer = cell.ratio("ssestate", fastest)
        peer_vs_json = cell.ratio(fastest, "json floor")
        bound_vs_json = cell.ratio("event floor", "json floor")
        rows.append(
            [
                cell.stream,
                cell.chunk,
                *(f"{cell.mb_per_s(n):.1f}" for n in ORDER),
                f"{cell.events_per_s('ssestate') / 1000:.1f}k",
                f"{vs_json:.2f}",
                f"{bound_vs_json:.2f}",
                f"{peer_vs_json:.2f} {fastest}",
                f"{vs_peer:.2f}",
            ]
        )
        d = cell.as_dict()
        d.update(
            ssestate_vs_json=vs_json,
            event_floor_vs_json=bound_vs_json,
            fastest_peer=fastest,
            fastest_peer_vs_json=peer_vs_json,
            ssestate_vs_fastest_peer=vs_peer,
        )
        out_cells.append(d)
        if cell.chunk == TARGET_CHUNK:
            bounds.append(
                f"- {cell.stream} @ {cell.chunk}: event floor {bound_vs_json:.2f}x json floor "
                f"(best of rounds: {cell.best_ratio('event floor', 'json floor'):.2f}); "
                f"ssestate+json {vs_json:.2f}x"
            )
            verdicts.append(
                (
                    f"{cell.stream} @ {cell.chunk}: ssestate+json <= {TARGET_VS_JSON}x json floor",
                    vs_json,
                    cell.best_ratio("ssestate", "json floor"),
                    vs_json <= TARGET_VS_JSON,
                )
            )
        verdicts.append(
            (
                f"{cell.stream} @ {cell.chunk}: not slower than fastest peer ({fastest})",
                vs_peer,
                cell.best_ratio("ssestate", fastest),
                vs_peer <= 1.0,
            )
        )
    headers = [
        "stream",
        "chunk",
        *(f"{n} MB/s" for n in ORDER),
        "ssestate ev/s",
        "ssestate/json",
        "event floor/json",
        "fastest peer/json",
        "ssestate/peer",
    ]
    text = ["### Framing: MB/s (median), ratios = time / time (paired per round, median)", "", table(headers, rows), ""]
    single = [f"{cell.stream}@{cell.chunk}: {', '.join(cell.single_run)}" for cell in cells if cell.single_run]
    if single:
        text += ["Single run (too slow to repeat): " + "; ".join(single), ""]

    lrows = [
        [
            r["case"],
            r["contender"],
            _size(r["small_bytes"]),
            _size(r["large_bytes"]),
            f"{r['small_s'] * 1000:.1f}",
            f"{r['large_s'] * 1000:.1f}",
            f"{r['time_ratio']:.2f}x",
            f"{r['size_ratio']:.0f}x",
        ]
        for r in results["linear"]
    ]
    text += [
        "### Linearity (time ratio should track the size ratio, not its square)",
        "",
        table(
            ["case", "contender", "small", "large", "small ms", "large ms", "time ratio", "size ratio"], lrows, left=2
        ),
        "",
    ]
    for r in results["linear"]:
        if r["contender"] == "ssestate":
            verdicts.append(
                (
                    f"linear: {r['case']} ({r['size_ratio']:.0f}x size)",
                    r["time_ratio"],
                    None,
                    r["time_ratio"] < 1.5 * r["size_ratio"],
                )
            )
    text += [
        "### Framing targets",
        "",
        *checklist(verdicts)[0],
        "",
        "The event floor is json.loads plus only what a framer that hands out ServerSentEvent",
        "objects cannot skip (decoding, building and handing out each event, with the places",
        "of the events given): no such framer can go below it at the target chunk size.",
        "",
        *bounds,
        "",
    ]
    summary = {
        "cells": out_cells,
        "linear": results["linear"],
        "targets": checklist(verdicts)[1],
    }
    return "\n".join(text), summary


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    scale = QUICK if "--quick" in args else FULL
    text, _ = report(run(scale, log=lambda s: print(s, file=sys.stderr)))
    print(text)


if __name__ == "__main__":
    main()
