"""One command for every benchmark: ``python -m benchmarks`` (or ``python -m benchmarks.run``).

Runs the framing benchmark, the chat-layer benchmark and the benchmark of
the other APIs' dialects, prints their tables
and target checklists, and writes every sample, median and ratio as JSON to
``benchmarks/results/latest.json`` (``--quick``: a smoke run of a few
seconds, written to ``benchmarks/results/quick.tmp`` so that it never
replaces the committed full results).

Options: ``--quick``; ``--only framing|chat|dialects``; ``--rounds N`` (default 11);
``--out PATH``; ``--update-readme`` (copy the printed report into
``benchmarks/README.md``, between its ``latest-results`` markers).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import _contenders, bench_chat, bench_dialects, bench_framing

RESULTS = Path(__file__).parent / "results"
README = Path(__file__).parent / "README.md"
BEGIN, END = "<!-- latest-results -->", "<!-- /latest-results -->"


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, check=True, cwd=Path(__file__).parent)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _machine() -> dict[str, Any]:
    dirty = _git("status", "--porcelain", "--", "ssestate")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "commit": _git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty and dirty != "unknown" else ""),
        "versions": _contenders.versions(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds (noisy numbers)")
    parser.add_argument("--only", choices=["framing", "chat", "dialects"], help="run one of the benchmarks")
    parser.add_argument("--rounds", type=int, help="rounds per cell (default: 11, --quick: 2)")
    parser.add_argument("--out", type=Path, help="where to write the JSON results")
    parser.add_argument("--update-readme", action="store_true", help="copy the report into benchmarks/README.md")
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    started = time.perf_counter()
    machine = _machine()
    results: dict[str, Any] = {"machine": machine, "quick": args.quick}
    texts = []
    if args.only in (None, "framing"):
        fscale = bench_framing.QUICK if args.quick else bench_framing.FULL
        if args.rounds:
            fscale = dataclasses.replace(fscale, rounds=args.rounds)
        t0 = time.perf_counter()
        text, results["framing"] = bench_framing.report(bench_framing.run(fscale, log=log))
        results["framing"]["elapsed_s"] = round(time.perf_counter() - t0, 1)
        texts.append(text)
    if args.only in (None, "chat"):
        cscale = bench_chat.QUICK if args.quick else bench_chat.FULL
        if args.rounds:
            cscale = dataclasses.replace(cscale, rounds=args.rounds)
        t0 = time.perf_counter()
        text, results["chat"] = bench_chat.report(bench_chat.run(cscale, log=log))
        results["chat"]["elapsed_s"] = round(time.perf_counter() - t0, 1)
        texts.append(text)
    if args.only in (None, "dialects"):
        t0 = time.perf_counter()
        rounds = args.rounds or (2 if args.quick else 11)
        dialect_results = bench_dialects.run(rounds=rounds, n_chunks=100 if args.quick else 500, log=log)
        text, results["dialects"] = bench_dialects.report(dialect_results)
        results["dialects"]["elapsed_s"] = round(time.perf_counter() - t0, 1)
        texts.append(text)
    machine["elapsed_s"] = round(time.perf_counter() - started, 1)
    machine["loadavg_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None

    head = (
        f"ssestate benchmarks: CPython {machine['python']} on {machine['platform']}, {machine['cpus']} CPUs, "
        f"commit {machine['commit']}, {machine['date']}, {machine['elapsed_s']} s"
        + (" (QUICK: smoke run, numbers are noise)" if args.quick else "")
    )
    peers = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    report = "\n".join([head, f"versions: {peers}", "", *texts])
    results["report_markdown"] = report
    print(report)

    out = args.out or RESULTS / ("quick.tmp" if args.quick else "latest.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=_jsonable) + "\n")
    log(f"results written to {out}")
    if args.update_readme:
        _update_readme(report, out)
        log(f"report copied into {README}")
    return 0


def _update_readme(report: str, out: Path) -> None:
    text = README.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    try:
        where = out.resolve().relative_to(README.parent.parent.resolve())
    except ValueError:
        where = out
    block = f"{BEGIN}\nFrom `python -m benchmarks` (JSON: `{where}`):\n\n{report.rstrip()}\n{END}"
    README.write_text(head + block + tail)


def _jsonable(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


if __name__ == "__main__":
    raise SystemExit(main())
