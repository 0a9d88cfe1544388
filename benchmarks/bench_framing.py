"""Framing throughput: EventStreamParser + json.loads against the peers and the floors.

Theory of operation: for each stream (the OpenAI chat stream, the stream of
64 KiB events) and each chunk size, one *cell* races every framing pipeline
over the same pre-cut chunks (see ``_contenders`` for how each is driven and
``_harness`` for the interleaving).  Every pipeline decodes every JSON
payload, so all do the same work; the json floor shows what that work costs
without any framing (``json.loads`` over the pre-split payloads).  ssestate
runs twice, as callers write the loop: ``next_event`` bound once to a local,
and ``feed``.

Then the linearity runs: one huge line dripped in 64-byte chunks, and one
huge payload in 1-byte chunks, each at two sizes 4x apart, timed in the same
cell.  A parser that rescans its buffer would take 16x as long at 4x the
size; a linear one takes 4x.

Run it through ``python -m benchmarks`` (see ``benchmarks/README.md``), or
alone with ``python -m benchmarks.bench_framing [--quick]``.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _contenders as c
from ._harness import Cell, Verdict, checklist, interleave, table
from .fixtures import CHUNK_SIZES, Fixture, big_event_stream, big_payload, chat_stream, chunk, huge_line

PEERS = ["httpx-sse", "sseclient-py", "openai-decoder"]
OURS = ["ssestate", "ssestate feed"]
ORDER = [*OURS, *PEERS, "json floor"]

# Targets: EventStreamParser + json.loads within 1.55x of the json.loads
# floor at 1460-byte chunks; never slower than the fastest peer at every
# chunk size but 1 byte, where only feed() must be.
TARGET_VS_JSON = 1.55
TARGET_CHUNK = "1460"
PEER_CHUNKS = ("whole", "64KiB", "1460", "event", "37")


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
    chat_chunks={"whole": 2000, "64KiB": 2000, "1460": 2000, "event": 2000, "37": 2000, "1": 200},
    big_events={"whole": 32, "64KiB": 32, "1460": 32, "37": 8, "1": 1},
    line_sizes=(1 << 20, 4 << 20),
    payload_sizes=(256 << 10, 1 << 20),
    linear_rounds=3,
)
QUICK = Scale(
    rounds=2,
    min_sample=0.0,
    chat_chunks={"whole": 200, "64KiB": 200, "1460": 200, "event": 200, "37": 200, "1": 20},
    big_events={"whole": 2, "64KiB": 2, "1460": 2, "37": 1},
    line_sizes=(64 << 10, 256 << 10),
    payload_sizes=(16 << 10, 64 << 10),
    linear_rounds=1,
)


def _cell(fx: Fixture, label: str, scale: Scale) -> Cell:
    chunks = chunk(fx.body, CHUNK_SIZES[label])
    runners: dict[str, Callable[[list[bytes]], int]] = {
        "ssestate": c.ssestate_json,
        "ssestate feed": c.ssestate_feed_json,
        "httpx-sse": c.httpx_sse_json,
        "sseclient-py": c.sseclient_json,
        "openai-decoder": c.openai_decoder_json,
    }
    contenders: dict[str, Callable[[], int]] = {name: functools.partial(run, chunks) for name, run in runners.items()}
    contenders["json floor"] = c.json_floor(fx.json_payloads)
    expect = dict.fromkeys([*runners, "json floor"], len(fx.json_payloads))
    cell = Cell(fx.name, label, len(fx.body), fx.events)
    return interleave(cell, contenders, expect, rounds=scale.rounds, min_sample=scale.min_sample)


def _linear_cell(name: str, bodies: list[bytes], size: int, runners: dict[str, Any], scale: Scale) -> Cell:
    contenders: dict[str, Callable[[], int]] = {}
    for body in bodies:
        chunks = chunk(body, size)
        for peer, run in runners.items():
            contenders[f"{peer}@{len(body)}"] = functools.partial(run, chunks)
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
    for cell in cells:
        fastest = cell.fastest(PEERS)
        peer_vs_json = cell.ratio(fastest, "json floor")
        ratios = {name: (cell.ratio(name, "json floor"), cell.ratio(name, fastest)) for name in OURS}
        rows.append(
            [
                cell.stream,
                cell.chunk,
                *(f"{cell.mb_per_s(n):.1f}" for n in ORDER),
                *(f"{ratios[n][0]:.2f}" for n in OURS),
                f"{peer_vs_json:.2f} {fastest}",
                *(f"{ratios[n][1]:.2f}" for n in OURS),
            ]
        )
        d = cell.as_dict()
        d.update(
            ssestate_vs_json=ratios["ssestate"][0],
            ssestate_feed_vs_json=ratios["ssestate feed"][0],
            fastest_peer=fastest,
            fastest_peer_vs_json=peer_vs_json,
            ssestate_vs_fastest_peer=ratios["ssestate"][1],
            ssestate_feed_vs_fastest_peer=ratios["ssestate feed"][1],
        )
        out_cells.append(d)
        for name in OURS:
            vs_json, vs_peer = ratios[name]
            if cell.chunk == TARGET_CHUNK and cell.stream == "chat":
                verdicts.append(
                    (
                        f"{cell.stream} @ {cell.chunk}: {name}+json <= {TARGET_VS_JSON}x json floor",
                        vs_json,
                        cell.best_ratio(name, "json floor"),
                        vs_json <= TARGET_VS_JSON,
                    )
                )
            if cell.chunk in PEER_CHUNKS or name == "ssestate feed":
                verdicts.append(
                    (
                        f"{cell.stream} @ {cell.chunk}: {name} not slower than fastest peer ({fastest})",
                        vs_peer,
                        cell.best_ratio(name, fastest),
                        vs_peer <= 1.0,
                    )
                )
    headers = [
        "stream",
        "chunk",
        *(f"{n} MB/s" for n in ORDER),
        *(f"{n}/json" for n in OURS),
        "fastest peer/json",
        *(f"{n}/peer" for n in OURS),
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
