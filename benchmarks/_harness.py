"""Interleaved timing, medians and paired ratios.

Theory of operation: a *cell* is one comparison (a stream cut at one chunk
size) between several contenders.  Each contender is a zero-argument
function that processes the whole stream once and returns a count.

1. Warm-up and calibration: every contender runs once; its count must equal
   the expected count (so nobody wins by skipping work), and its time sets
   how many back-to-back runs make up one *sample* (enough to last
   ``min_sample`` seconds, so that short runs are not timer noise).
2. Rounds: in each round every contender takes one sample, in an order that
   rotates from round to round (round-robin), so slow drifts of a shared,
   noisy machine hit every contender alike.  ``gc.collect()`` runs before
   each sample, outside the timed region; the collector stays on while
   timing, as it is in real programs.  Before a cell starts, everything
   alive (imported libraries, fixtures, chunk lists) is moved out of the
   collector's reach with ``gc.freeze()``: otherwise every collection would
   walk the openai SDK's many long-lived objects, which costs every
   contender alike but adds noise and minutes.
3. Results: the median sample time per contender; and ratios as the median,
   over rounds, of ``time(a) / time(b)`` within the same round (paired, so a
   busy round slows both sides of the ratio).

A contender whose warm-up run alone takes longer than ``max_run`` is not
repeated: its one run is its only sample, and the cell records that.

The clock is the process's CPU time (``time.process_time``), not the wall
clock: every contender is single-threaded and never waits, and on a shared
machine the wall clock also counts the time other programs held the CPU,
which swamps differences of a few percent.  ``CLOCKS`` lets a caller choose
the wall clock (``time.perf_counter``) instead.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
clock = CLOCKS["cpu"]


def use_clock(name: str) -> None:
    """Time with ``"cpu"`` (process CPU time, the default) or ``"wall"``."""
    global clock  # noqa: PLW0603
    clock = CLOCKS[name]


@dataclass
class Cell:
    """The samples of one comparison and the size of the work."""

    stream: str
    chunk: str
    nbytes: int
    events: int
    samples: dict[str, list[float]] = field(default_factory=dict)
    single_run: list[str] = field(default_factory=list)

    def median(self, name: str) -> float:
        return statistics.median(self.samples[name])

    def ratio(self, a: str, b: str) -> float:
        """Median over rounds of time(a) / time(b), paired within each round."""
        sa, sb = self.samples[a], self.samples[b]
        if len(sa) == len(sb):
            return statistics.median(x / y for x, y in zip(sa, sb, strict=True))
        return self.median(a) / self.median(b)

    def best_ratio(self, a: str, b: str) -> float:
        """min time(a) / min time(b): the ratio when neither was disturbed."""
        return min(self.samples[a]) / min(self.samples[b])

    def mb_per_s(self, name: str) -> float:
        return self.nbytes / self.median(name) / 1e6

    def events_per_s(self, name: str) -> float:
        return self.events / self.median(name)

    def fastest(self, names: list[str]) -> str:
        return min(names, key=self.median)

    def as_dict(self) -> dict[str, object]:
        return {
            "stream": self.stream,
            "chunk": self.chunk,
            "bytes": self.nbytes,
            "events": self.events,
            "median_s": {n: self.median(n) for n in self.samples},
            "mb_per_s": {n: self.mb_per_s(n) for n in self.samples},
            "events_per_s": {n: self.events_per_s(n) for n in self.samples},
            "samples_s": self.samples,
            "single_run": self.single_run,
        }


def interleave(
    cell: Cell,
    contenders: dict[str, Callable[[], int]],
    expect: dict[str, int],
    *,
    rounds: int,
    min_sample: float,
    max_run: float = 3.0,
) -> Cell:
    """Time ``contenders`` round-robin into ``cell`` (see the module docstring)."""
    loops: dict[str, int] = {}
    gc.collect()
    gc.freeze()
    try:
        for name, fn in contenders.items():
            gc.collect()
            t0 = clock()
            got = fn()
            dt = clock() - t0
            if name in expect and got != expect[name]:
                raise AssertionError(f"{cell.stream}/{cell.chunk}: {name} returned {got}, expected {expect[name]}")
            if dt > max_run:
                cell.samples[name] = [dt]
                cell.single_run.append(name)
            else:
                loops[name] = max(1, math.ceil(min_sample / dt)) if dt > 0 else 1000
                cell.samples[name] = []
        names = list(loops)
        for r in range(rounds):
            k = r % len(names) if names else 0
            for name in names[k:] + names[:k]:
                fn = contenders[name]
                n = loops[name]
                gc.collect()
                t0 = clock()
                for _ in range(n):
                    fn()
                cell.samples[name].append((clock() - t0) / n)
    finally:
        gc.unfreeze()
    return cell


def table(headers: list[str], rows: list[list[str]], left: int = 2) -> str:
    """A GitHub-flavoured Markdown table (also readable as plain text).

    The first ``left`` columns are labels (left-aligned), the rest numbers.
    """
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        padded = [c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "| " + " | ".join(padded) + " |"

    sep = "|" + "|".join("-" * (w + 2) if i < left else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in rows)])


Verdict = tuple[str, float, "float | None", bool]  # what, median value, best-of-rounds value, met


def checklist(verdicts: list[Verdict]) -> tuple[list[str], list[dict[str, object]]]:
    """Markdown checklist lines and JSON records for target verdicts."""
    lines = []
    for what, value, best, ok in verdicts:
        extra = f" (best of rounds: {best:.2f})" if best is not None else ""
        lines.append(f"- [{'x' if ok else ' '}] {what}: {value:.2f}{extra}")
    records: list[dict[str, object]] = [
        {"target": w, "value": v, "best_of_rounds": b, "met": ok} for w, v, b, ok in verdicts
    ]
    return lines, records
