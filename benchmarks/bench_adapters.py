"""What the adapters cost over real loopback HTTP, against what users pick instead.

``python -m benchmarks.bench_adapters [--rounds N] [--quick] [--only CELL] [--out PATH]``

Theory of operation
-------------------
A server process of its own (``_loopback.py``) plays pre-encoded chat
streams over HTTP/1.1, written 1,460 bytes at a time; this process only
reads.  The clock is this process's CPU time (``time.process_time``, every
thread included), so the server's work and the time spent waiting for bytes
never count.

A *cell* is one flavour (``sync``: blocking clients; ``asyncio`` and
``trio``: async clients under that event loop), one mode and one stream:

* ``sequential``: streams of 2,000 events (``chat-2000``: the chat stream,
  about 270 bytes an event; ``tool-190``: two parallel tool calls in about
  2,000 fragments), one after another over one client;
* ``paced``: the same streams one after another, paced by the server
  (0.3 ms between two writes) so that each piece arrives alone and each
  read of the socket returns one; this mode shows what a client spends
  per read, as on a stream from a model that is generating (wakeups
  included, which cost every client alike);
* ``concurrent``: 100 streams of about 200 events (``chat-200``,
  ``tool-19``) at once over one client: 100 threads for the blocking
  clients, 100 tasks for the async ones.

Each contender (``_adapter_contenders.py``) makes its client once, reads one
stream untimed (its count must be right: nobody wins by skipping work),
then takes one sample per round, the order rotating from round to round.
In ``sequential`` and ``paced`` a sample is as many streams as last 0.1 s
of CPU (at most 20), in ``concurrent`` one batch of 100.  ``gc.collect()`` runs before each
sample, outside the timed region.  A ratio is the median over rounds of
``time(a) / time(b)`` per stream within the same round (paired, so a busy
round slows both sides).

Connections per stream are counted by the server: connections it accepted
while a contender's client lived, over the streams that client read.  A
client that reuses its connections comes close to 0 (one connection, or
one per concurrent stream, for the whole cell); one that opens a
connection per stream shows 1.00.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ssestate import ChatStream, Done

from . import _loopback
from ._adapter_contenders import Contender, Target, async_contenders, sync_contenders
from ._harness import table

CONCURRENCY = 100
MIN_SAMPLE = 0.1  # seconds of CPU a sequential sample lasts at least
MAX_STREAMS = 20  # streams in a sequential sample at most
STREAMS = {
    "sequential": {"chat": "chat-2000", "tool": "tool-190"},
    "paced": {"chat": "chat-2000-paced", "tool": "tool-190-paced"},
    "concurrent": {"chat": "chat-200", "tool": "tool-19"},
}
PEERS = ("httpx-sse", "naive", "sdk")
HAND_FED_TARGET = 1.15  # an adapter within this much of the loop a caller would write by hand
RESULTS = Path(__file__).parent / "results" / "adapters.json"
clock = time.process_time


class Server:
    """The loopback server process (see ``_loopback.py``)."""

    def __init__(self) -> None:
        models = sorted({m for by_stream in STREAMS.values() for m in by_stream.values()})
        command = [sys.executable, "-m", "benchmarks._loopback", "--streams", *models]
        cwd = Path(__file__).parent.parent
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=cwd)
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())

    def connections(self) -> int:
        """Connections accepted so far."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("count\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline().split()[0])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


@dataclasses.dataclass
class Cell:
    """The samples of one flavour, mode and stream."""

    flavour: str
    mode: str
    stream: str
    model: str
    contenders: dict[str, Contender]
    samples: dict[str, list[float]] = dataclasses.field(default_factory=dict)  # CPU seconds per stream
    streams: dict[str, int] = dataclasses.field(default_factory=dict)  # streams read, warm-up included
    connections: dict[str, int] = dataclasses.field(default_factory=dict)

    def ms(self, name: str) -> float:
        return statistics.median(self.samples[name]) * 1000

    def ratio(self, a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(self.samples[a], self.samples[b], strict=True))

    def per_stream(self, name: str) -> float:
        return self.connections[name] / self.streams[name]

    def find(self, kind: str, transport: str | None = None) -> str | None:
        for name, c in self.contenders.items():
            if c.kind == kind and (transport is None or c.transport == transport):
                return name
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "flavour": self.flavour,
            "mode": self.mode,
            "stream": self.stream,
            "model": self.model,
            "median_ms_per_stream": {n: self.ms(n) for n in self.samples},
            "samples_s_per_stream": self.samples,
            "connections_per_stream": {n: self.per_stream(n) for n in self.samples},
        }


def _expected(model: str) -> dict[str, int]:
    """What each unit of count must come to on ``model``'s body."""
    body = _loopback.body(model)
    stream = ChatStream()
    events = stream.feed(body)
    events += stream.feed(b"")
    done = next(i for i, e in enumerate(events) if type(e) is Done)
    payloads = sum(1 for line in body.split(b"\n") if line.startswith(b"data: ") and line != b"data: [DONE]")
    return {"bytes": len(body), "events": done + 1, "payloads": payloads}


class _Sample:
    """Times one sample and counts the server's connections around it."""

    def __init__(self, cell: Cell, server: Server, name: str, expected: dict[str, int]) -> None:
        self.cell, self.server, self.name, self.expected = cell, server, name, expected

    def __enter__(self) -> _Sample:
        gc.collect()
        self.before = self.server.connections()
        self.t0 = clock()
        return self

    def done(self, counts: list[int], *, timed: bool = True) -> None:
        elapsed = clock() - self.t0
        cell, name = self.cell, self.name
        unit = cell.contenders[name].unit
        if any(n != self.expected[unit] for n in counts):
            wanted = self.expected[unit]
            raise AssertionError(f"{cell.flavour}/{cell.model}: {name} counted {counts[:3]}, expected {wanted}")
        cell.connections[name] = cell.connections.get(name, 0) + self.server.connections() - self.before
        cell.streams[name] = cell.streams.get(name, 0) + len(counts)
        if timed:
            cell.samples.setdefault(name, []).append(elapsed / len(counts))
        else:
            self.elapsed = elapsed

    def __exit__(self, *exc: object) -> None:
        return None


def _order(names: list[str], r: int) -> list[str]:
    k = r % len(names)
    return names[k:] + names[:k]


def _streams(cell: Cell, warmup: float) -> int:
    if cell.mode == "concurrent":
        return CONCURRENCY
    return min(MAX_STREAMS, max(1, math.ceil(MIN_SAMPLE / max(warmup, 1e-6))))


def run_sync(cell: Cell, server: Server, rounds: int) -> Cell:
    """Time a cell of blocking clients (threads for concurrency)."""
    target = Target("127.0.0.1", server.port, cell.model)
    expected = _expected(cell.model)
    sessions: dict[str, Any] = {}
    pool = ThreadPoolExecutor(CONCURRENCY) if cell.mode == "concurrent" else None
    streams: dict[str, int] = {}
    gc.collect()
    gc.freeze()
    try:
        for name, c in cell.contenders.items():
            with _Sample(cell, server, name, expected) as sample:
                sessions[name] = c.open(target)
                sample.done([c.one(sessions[name], target)], timed=False)
            streams[name] = _streams(cell, sample.elapsed)
        for r in range(rounds):
            for name in _order(list(cell.contenders), r):
                c, session, n = cell.contenders[name], sessions[name], streams[name]
                with _Sample(cell, server, name, expected) as sample:
                    if pool is not None:
                        counts = list(pool.map(lambda _: c.one(session, target), range(n)))  # noqa: B023
                    else:
                        counts = [c.one(session, target) for _ in range(n)]
                    sample.done(counts)
    finally:
        for name, session in sessions.items():
            cell.contenders[name].close(session)
        gc.unfreeze()
        if pool is not None:
            pool.shutdown()
    return cell


def run_async(cell: Cell, server: Server, rounds: int, backend: str) -> Cell:
    """Time a cell of async clients under ``backend`` (tasks for concurrency)."""
    import anyio

    target = Target("127.0.0.1", server.port, cell.model)
    expected = _expected(cell.model)

    async def many(one: Callable[[Any, Target], Awaitable[int]], session: Any, n: int) -> list[int]:
        counts: list[int] = []

        async def task() -> None:
            counts.append(await one(session, target))

        async with anyio.create_task_group() as group:
            for _ in range(n):
                group.start_soon(task)
        return counts

    async def main() -> None:
        sessions: dict[str, Any] = {}
        streams: dict[str, int] = {}
        gc.collect()
        gc.freeze()
        try:
            for name, c in cell.contenders.items():
                with _Sample(cell, server, name, expected) as sample:
                    sessions[name] = await c.open(target)
                    sample.done([await c.one(sessions[name], target)], timed=False)
                streams[name] = _streams(cell, sample.elapsed)
            for r in range(rounds):
                for name in _order(list(cell.contenders), r):
                    c, session, n = cell.contenders[name], sessions[name], streams[name]
                    with _Sample(cell, server, name, expected) as sample:
                        if cell.mode == "concurrent":
                            counts = await many(c.one, session, n)
                        else:
                            counts = [await c.one(session, target) for _ in range(n)]
                        sample.done(counts)
        finally:
            for name, session in sessions.items():
                await cell.contenders[name].close(session)
            gc.unfreeze()

    anyio.run(main, backend=backend)
    return cell


# -- the report -------------------------------------------------------------------------

FLAVOURS: dict[str, Callable[[], list[Contender]]] = {
    "sync": sync_contenders,
    "asyncio": lambda: async_contenders("asyncio"),
    "trio": lambda: async_contenders("trio"),
}


def run_cell(flavour: str, mode: str, stream: str, server: Server, rounds: int) -> Cell:
    contenders = {c.name: c for c in FLAVOURS[flavour]()}
    cell = Cell(flavour, mode, stream, STREAMS[mode][stream], contenders)
    print(f"{flavour}, {mode}, {cell.model} ...", file=sys.stderr, flush=True)
    if flavour == "sync":
        return run_sync(cell, server, rounds)
    return run_async(cell, server, rounds, flavour)


def _label(cell: Cell, adapter: str) -> str:
    if cell.flavour == "sync":
        return adapter
    return f"{adapter} ({cell.flavour})"


def records(cells: list[Cell]) -> list[dict[str, Any]]:
    """One record per adapter and cell: its CPU per stream, its ratios to the
    others (paired medians) and its connections per stream."""
    out: list[dict[str, Any]] = []
    for cell in cells:
        for name, c in cell.contenders.items():
            if c.kind != "adapter":
                continue
            raw, fed = cell.find("raw", c.transport), cell.find("hand-fed", c.transport)
            assert raw is not None and fed is not None
            ratios = {"raw": cell.ratio(name, raw), "hand-fed": cell.ratio(name, fed)}
            for kind in PEERS:
                peer = cell.find(kind)
                if peer is not None:
                    ratios[kind] = cell.ratio(name, peer)
            out.append(
                {
                    "adapter": _label(cell, name),
                    "mode": cell.mode,
                    "stream": cell.stream,
                    "ms": cell.ms(name),
                    "ratios": ratios,
                    "connections_per_stream": cell.per_stream(name),
                    "hand_fed_over_raw": cell.ratio(fed, raw),
                }
            )
    return out


def rows(recs: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """One row per adapter and mode; each cell holds the streams' values
    side by side (``chat / tool``)."""
    headers = ["adapter", "mode", "ms/stream", "÷ raw", "÷ hand-fed", "÷ httpx-sse", "÷ naive", "÷ SDK", "conns/stream"]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    adapters = list(dict.fromkeys(rec["adapter"] for rec in recs))
    modes = list(STREAMS)
    for rec in sorted(recs, key=lambda r: (adapters.index(r["adapter"]), modes.index(r["mode"]))):
        groups.setdefault((rec["adapter"], rec["mode"]), []).append(rec)

    def joined(values: list[float | None]) -> str:
        return " / ".join("-" if v is None else f"{v:.2f}" for v in values)

    body = []
    for (adapter, mode), group in groups.items():
        cells = [joined([r["ms"] for r in group])]
        cells += [joined([r["ratios"].get(k) for r in group]) for k in ("raw", "hand-fed", *PEERS)]
        cells.append(joined([r["connections_per_stream"] for r in group]))
        body.append([adapter, mode, *cells])
    return headers, body


def connection_rows(cells: list[Cell]) -> tuple[list[str], list[list[str]]]:
    """Connections per stream of every contender, per flavour and mode (chat stream)."""
    names: list[str] = []
    for cell in cells:
        names += [n for n in cell.contenders if n not in names]
    headers = ["contender", *(f"{c.flavour} {c.mode}" for c in cells if c.stream == "chat")]
    body = [
        [name, *(f"{c.per_stream(name):.2f}" if name in c.samples else "-" for c in cells if c.stream == "chat")]
        for name in names
    ]
    return headers, body


def targets(records: list[dict[str, Any]]) -> list[str]:
    """The issue's targets, as a checklist (reported, never asserted)."""
    lines = []
    for rec in records:
        what = f"{rec['adapter']}, {rec['mode']}, {rec['stream']}"
        ratios = rec["ratios"]
        fed = ratios["hand-fed"]
        lines.append(f"- [{'x' if fed <= HAND_FED_TARGET else ' '}] {what}: {fed:.2f}x hand-fed (<= {HAND_FED_TARGET})")
        for kind in ("httpx-sse", "naive"):
            if kind in ratios:
                ok = ratios[kind] < 1.0
                lines.append(f"- [{'x' if ok else ' '}] {what}: {ratios[kind]:.2f}x {kind} (< 1)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_adapters", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="samples per contender and cell (default 5)")
    parser.add_argument("--quick", action="store_true", help="one round (noisy numbers), not written to adapters.json")
    parser.add_argument("--only", choices=list(FLAVOURS), action="append", help="run only these flavours")
    parser.add_argument("--mode", choices=list(STREAMS), action="append", help="run only these modes")
    parser.add_argument("--stream", choices=["chat", "tool"], action="append", help="run only these streams")
    parser.add_argument("--out", type=Path, default=None, help=f"JSON results (default {RESULTS})")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    started = time.perf_counter()
    server = Server()
    cells: list[Cell] = []
    try:
        for flavour in args.only or list(FLAVOURS):
            for mode in args.mode or list(STREAMS):
                for stream in args.stream or ["chat", "tool"]:
                    cells.append(run_cell(flavour, mode, stream, server, rounds))
    finally:
        server.close()
    recs = records(cells)
    elapsed = time.perf_counter() - started
    streams = " / ".join(args.stream or ["chat", "tool"])
    print(f"adapter benchmark: CPython {sys.version.split()[0]}, {rounds} rounds, {elapsed:.0f} s")
    print(f"client CPU per stream (median) and paired ratios (median over rounds), {streams}\n")
    print(table(*rows(recs), left=2))
    print("\nconnections per stream, chat stream\n")
    print(table(*connection_rows(cells), left=1))
    print()
    print("\n".join(targets(recs)))
    out = args.out or (None if args.quick else RESULTS)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        cell_data = [c.as_dict() for c in cells]
        data = {"python": sys.version.split()[0], "rounds": rounds, "rows": recs, "cells": cell_data}
        out.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
