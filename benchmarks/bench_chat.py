"""The chat layer: ChatStream end to end against the peers, the floor and the SDK.

Theory of operation: for each chat-shaped stream (one answer, two parallel
tool calls, ``n=2``) and each chunk size, one *cell* races

* ``ChatStream``: bytes in, every typed event built and handed out, as
  callers write the loop: ``next_event`` bound once to a local, and
  ``feed`` (``ChatStream feed``);
* the peers' framing + ``json.loads`` (httpx-sse, sseclient-py, the openai
  SDK's SSE decoder), which decode the same JSON but build no events;
* ``openai.Stream`` as the SDK hands it to users, which builds one
  ``ChatCompletionChunk`` per payload;
* the ``json.loads`` floor over the pre-split payloads;
* ``ChatStream`` over the same stream with its ``created`` time moving on at
  every chunk (``moving_envelope``): it then parses every payload, which
  shows what reading a chunk costs when no template matches.

``ChatStream`` must produce the same number of events under every chunking
(checked against its whole-body run), the others must decode every payload.

Then memory, with ``tracemalloc``: the peak while ``ChatStream`` (and, for
reference, the bare ``EventStreamParser``) reads the stream of 64 KiB events
in 1460-byte chunks, events dropped as they come; and the size of an idle
``ChatStream``, measured as the traced memory of 10,000 fresh instances
(parser included) divided by 10,000, the list that holds them subtracted.

Run it through ``python -m benchmarks`` (see ``benchmarks/README.md``), or
alone with ``python -m benchmarks.bench_chat [--quick]``.
"""

from __future__ import annotations

import functools
import gc
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ssestate import ChatStream, EventStreamParser

from . import _contenders as c
from ._harness import Cell, Verdict, checklist, interleave, table
from .fixtures import (
    CHUNK_SIZES,
    Fixture,
    big_event_stream,
    chat_stream,
    chunk,
    moving_envelope,
    n2_stream,
    tool_call_stream,
)

PEERS = ["httpx-sse", "sseclient-py", "openai-decoder", "openai-Stream"]
MOVING = "ChatStream, moving envelope"
OURS = ["ChatStream", "ChatStream feed"]
ORDER = [*OURS, MOVING, *PEERS, "json floor"]

# Targets: ChatStream within 0.85x of the json floor on chat, tool and n2,
# at 1460-byte chunks and on whole bodies; never slower than the fastest
# peer at every chunk size but 1 byte, where only feed() must be.
TARGET_VS_JSON = 0.85
TARGET_CHUNKS = ("whole", "1460")
PEER_CHUNKS = ("whole", "64KiB", "1460", "event", "37")
TARGET_PEAK_X = 4.0  # peak memory / largest event
TARGET_IDLE = 1024  # bytes per idle ChatStream
IDLE_COUNT = 10_000


@dataclass(frozen=True)
class Scale:
    rounds: int
    min_sample: float
    sizes: dict[str, float]  # chunk label -> fraction of the full-size streams
    chat_chunks: int
    tool_items: int
    n2_chunks: int
    memory_events: int


FULL = Scale(
    rounds=11,
    min_sample=0.01,
    sizes={"whole": 1.0, "64KiB": 1.0, "1460": 1.0, "event": 1.0, "37": 1.0, "1": 0.1},
    chat_chunks=500,
    tool_items=20,
    n2_chunks=250,
    memory_events=16,
)
QUICK = Scale(
    rounds=2,
    min_sample=0.0,
    sizes={"whole": 1.0, "64KiB": 1.0, "1460": 1.0, "event": 1.0, "37": 1.0, "1": 0.2},
    chat_chunks=60,
    tool_items=3,
    n2_chunks=30,
    memory_events=3,
)


def _fixtures(scale: Scale, fraction: float) -> list[Fixture]:
    return [
        chat_stream(n_chunks=max(1, int(scale.chat_chunks * fraction))),
        tool_call_stream(n_items=max(1, int(scale.tool_items * fraction))),
        n2_stream(n_chunks=max(1, int(scale.n2_chunks * fraction))),
    ]


def _cell(fx: Fixture, label: str, scale: Scale, sdk: c.Runner) -> Cell:
    chunks = chunk(fx.body, CHUNK_SIZES[label])
    runners: dict[str, c.Runner] = {
        "ChatStream": c.chatstream,
        "ChatStream feed": c.chatstream_feed,
        "httpx-sse": c.httpx_sse_json,
        "sseclient-py": c.sseclient_json,
        "openai-decoder": c.openai_decoder_json,
        "openai-Stream": sdk,
    }
    n_json = len(fx.json_payloads)
    expect = dict.fromkeys([*runners, "json floor"], n_json)
    expect["ChatStream"] = expect["ChatStream feed"] = c.chatstream([fx.body])  # the events of the whole body
    contenders: dict[str, Callable[[], int]] = {name: functools.partial(run, chunks) for name, run in runners.items()}
    contenders["json floor"] = c.json_floor(fx.json_payloads)
    moved = chunk(moving_envelope(fx).body, CHUNK_SIZES[label])
    contenders[MOVING] = lambda: c.chatstream(moved)
    expect[MOVING] = expect["ChatStream"]
    cell = Cell(fx.name, label, len(fx.body), fx.events)
    return interleave(cell, contenders, expect, rounds=scale.rounds, min_sample=scale.min_sample)


def _drain(machine: Any, chunks: list[bytes]) -> None:
    from ssestate import CLOSED, NEED_DATA

    for piece in chunks:
        machine.receive_data(piece)
        while machine.next_event() is not NEED_DATA:
            pass
    machine.receive_data(b"")
    while machine.next_event() is not CLOSED:
        pass


def _peak(make: Callable[[], Any], chunks: list[bytes]) -> int:
    """Peak traced memory (bytes) above the baseline while reading ``chunks``."""
    gc.collect()
    tracemalloc.start()
    try:
        machine = make()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        _drain(machine, chunks)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def _idle(make: Callable[[], Any], count: int = IDLE_COUNT) -> float:
    """Traced bytes per idle instance, the holding list subtracted."""
    gc.collect()
    tracemalloc.start()
    try:
        holder: list[Any] = [None] * count
        before = tracemalloc.get_traced_memory()[0]
        for i in range(count):
            holder[i] = make()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del holder
    return (after - before) / count


class _MinimalReader:
    """The least a Python reader of these streams can hold at its peak.

    It keeps the receive buffer, cuts an event at the first blank line,
    decodes its payload (no ``data: `` prefix, no copy of the event first)
    and hands out the JSON value: no framing rules, no event objects.  Its
    peak is the floor under the memory of any reader that gives the caller
    decoded JSON.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan = 0
        self._eof = False

    def receive_data(self, data: bytes) -> None:
        if data:
            self._buf += data
        else:
            self._eof = True

    def next_event(self) -> object:
        from ssestate import CLOSED, NEED_DATA

        buf = self._buf
        end = buf.find(b"\n\n", self._scan)
        if end < 0:
            self._scan = max(0, len(buf) - 1)
            return CLOSED if self._eof else NEED_DATA
        with memoryview(buf) as view:
            payload = str(view[len(b"data: ") : end], "utf-8")
        del buf[: end + 2]
        self._scan = 0
        return json.loads(payload)


def memory(scale: Scale) -> dict[str, Any]:
    """Peak memory on the 64 KiB-event streams, and idle sizes."""
    streams = []
    for ascii_only in (False, True):
        fx = big_event_stream(n_events=scale.memory_events, ascii_only=ascii_only)
        chunks = chunk(fx.body, 1460)
        streams.append(
            {
                "stream": fx.name,
                "events": fx.events,
                "largest_event": fx.largest_event,
                "peak": {
                    "ChatStream": _peak(ChatStream, chunks),
                    "EventStreamParser": _peak(EventStreamParser, chunks),
                    "minimal reader": _peak(_MinimalReader, chunks),
                },
            }
        )
    return {
        "chunk": 1460,
        "streams": streams,
        "idle": {"ChatStream": _idle(ChatStream), "EventStreamParser": _idle(EventStreamParser)},
        "idle_count": IDLE_COUNT,
    }


def run(scale: Scale = FULL, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run every chat-layer cell and the memory measurements."""
    sdk = c.openai_stream_factory()
    cells: list[Cell] = []
    for label in CHUNK_SIZES:
        if label not in scale.sizes:
            continue
        for fx in _fixtures(scale, scale.sizes[label]):
            t0 = time.process_time()
            cells.append(_cell(fx, label, scale, sdk))
            spent = time.process_time() - t0
            log(f"chat: {fx.name} stream, {label} chunks ({len(fx.body) / 1e3:.0f} kB): {spent:.1f} s CPU")
    t0 = time.process_time()
    mem = memory(scale)
    log(f"chat: memory: {time.process_time() - t0:.1f} s CPU")
    return {"cells": cells, "memory": mem}


def report(results: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The printed tables and the JSON-ready summary of a ``run``."""
    cells: list[Cell] = sorted(results["cells"], key=lambda x: (x.stream, list(CHUNK_SIZES).index(x.chunk)))
    rows: list[list[str]] = []
    out_cells: list[dict[str, Any]] = []
    verdicts: list[Verdict] = []
    for cell in cells:
        fastest = cell.fastest(PEERS)
        ratios = {name: (cell.ratio(name, "json floor"), cell.ratio(name, fastest)) for name in OURS}
        moving_vs_json = cell.ratio(MOVING, "json floor")
        sdk = cell.ratio("openai-Stream", "ChatStream")
        d = cell.as_dict()
        d.update(
            chatstream_vs_json=ratios["ChatStream"][0],
            chatstream_feed_vs_json=ratios["ChatStream feed"][0],
            moving_envelope_vs_json=moving_vs_json,
            fastest_peer=fastest,
            chatstream_vs_fastest_peer=ratios["ChatStream"][1],
            chatstream_feed_vs_fastest_peer=ratios["ChatStream feed"][1],
            sdk_stream_vs_chatstream=sdk,
        )
        for name in OURS:
            vs_json, vs_peer = ratios[name]
            if cell.chunk in TARGET_CHUNKS:
                verdicts.append(
                    (
                        f"{cell.stream} @ {cell.chunk}: {name} <= {TARGET_VS_JSON}x json floor",
                        vs_json,
                        cell.best_ratio(name, "json floor"),
                        vs_json <= TARGET_VS_JSON,
                    )
                )
            if cell.chunk in PEER_CHUNKS or name == "ChatStream feed":
                verdicts.append(
                    (
                        f"{cell.stream} @ {cell.chunk}: {name} not slower than fastest peer ({fastest})",
                        vs_peer,
                        cell.best_ratio(name, fastest),
                        vs_peer <= 1.0,
                    )
                )
        rows.append(
            [
                cell.stream,
                cell.chunk,
                *(f"{cell.mb_per_s(n):.1f}" for n in ORDER),
                *(f"{ratios[n][0]:.2f}" for n in OURS),
                f"{moving_vs_json:.2f}",
                f"{cell.ratio(fastest, 'json floor'):.2f} {fastest}",
                *(f"{ratios[n][1]:.2f}" for n in OURS),
                f"{sdk:.1f}x",
            ]
        )
        out_cells.append(d)
    headers = [
        "stream",
        "chunk",
        *(f"{n} MB/s" for n in ORDER),
        *(f"{n}/json" for n in OURS),
        "moving/json",
        "fastest peer/json",
        *(f"{n}/peer" for n in OURS),
        "SDK Stream/ChatStream",
    ]
    text = [
        "### Chat layer: MB/s (median), ratios = time / time (paired per round, median)",
        "",
        table(headers, rows),
        "",
    ]
    single = [f"{cell.stream}@{cell.chunk}: {', '.join(cell.single_run)}" for cell in cells if cell.single_run]
    if single:
        text += ["Single run (too slow to repeat): " + "; ".join(single), ""]

    mem = results["memory"]
    mrows = []
    for entry in mem["streams"]:
        big = entry["largest_event"]
        for machine, peak in entry["peak"].items():
            mrows.append(
                [
                    f"{entry['stream']} ({entry['events']} events)",
                    machine,
                    f"{peak / 1024:.0f} KiB",
                    f"{peak / big:.2f}x",
                ]
            )
        if entry["stream"] == "64KiB":  # the stream the target is set on
            peak_x = entry["peak"]["ChatStream"] / big
            verdicts.append(
                (f"peak memory <= {TARGET_PEAK_X:g}x largest event ({big} B)", peak_x, None, peak_x <= TARGET_PEAK_X)
            )
    idle = mem["idle"]
    verdicts.append(
        (f"idle ChatStream <= {TARGET_IDLE} B", idle["ChatStream"], None, idle["ChatStream"] <= TARGET_IDLE)
    )
    text += [
        f"### Memory: peak while reading 64 KiB events in {mem['chunk']}-byte chunks (tracemalloc)",
        "",
        table(["stream", "reader", "peak", "peak / largest event"], mrows),
        "",
        f"Idle instance (traced memory of {mem['idle_count']:,} fresh instances / {mem['idle_count']:,}): "
        + ", ".join(f"{k} {v:.0f} B" for k, v in idle.items()),
        "",
    ]
    text += [
        "### Chat-layer targets",
        "",
        *checklist(verdicts)[0],
        "",
    ]
    summary = {
        "cells": out_cells,
        "memory": mem,
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
