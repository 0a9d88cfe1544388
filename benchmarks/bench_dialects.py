"""The other APIs: ChatStream on Responses, Anthropic and Gemini streams.

Theory of operation: for each API's seeded stream (``api_fixtures.py``: one
answer of 500 text deltas, written as that API writes it) whole and in
1460-byte chunks, one *cell* races

* ``ChatStream`` with that API's dialect, bytes in and every typed event out,
  as callers write the loop: ``next_event`` bound once, and ``feed``;
* the ``json.loads`` floor over the stream's pre-split payloads;
* the API's official SDK over the same chunks, as it hands the stream to its
  users: openai-python's ``openai.Stream`` of ``ResponseStreamEvent``,
  anthropic-sdk-python's ``anthropic.Stream`` of ``RawMessageStreamEvent``
  (each builds one typed object per event), and google-genai's
  ``generate_content_stream`` served by an in-memory transport (one
  ``GenerateContentResponse`` per chunk; its request is built in the timed
  run too, a constant well under the 500 chunks).

An SDK that is not installed is left out of its cell.  The target: each
``ChatStream`` contender at most ``TARGET_VS_JSON`` times the floor at
1460-byte chunks.

Run it through ``python -m benchmarks --only dialects``, or alone with
``python -m benchmarks.bench_dialects [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import time
from collections.abc import Callable
from typing import Any

from . import _contenders as c
from ._harness import Cell, Verdict, checklist, interleave, table
from .api_fixtures import anthropic_stream, gemini_stream, responses_stream
from .fixtures import CHUNK_SIZES, Fixture, chunk

TARGET_VS_JSON = 1.0
LABELS = ("whole", "1460", "event")
OURS = ["ChatStream", "ChatStream feed"]
STREAMS: dict[str, Callable[[int], Fixture]] = {
    "openai-responses": responses_stream,
    "anthropic": anthropic_stream,
    "gemini": gemini_stream,
}
Runner = Callable[[list[bytes]], int]


# -- the official SDKs --------------------------------------------------------------


def _sdk_stream(package: str, cast_to: str, url: str) -> Runner | None:
    """``{package}.Stream`` of ``cast_to`` over an in-memory response."""
    if importlib.util.find_spec(package) is None:
        return None
    sdk: Any = importlib.import_module(package)
    streaming: Any = importlib.import_module(f"{package}._streaming")
    module, _, name = cast_to.rpartition(".")
    event_type = getattr(importlib.import_module(module), name)
    http: Any = getattr(streaming, "httpx2", None) or streaming.httpx
    client_class = sdk.OpenAI if package == "openai" else sdk.Anthropic
    client = client_class(api_key="benchmark", base_url="http://127.0.0.1:9", max_retries=0)
    request = http.Request("POST", url)
    headers = {"content-type": "text/event-stream"}

    def run(chunks: list[bytes]) -> int:
        response = http.Response(200, headers=headers, content=iter(chunks), request=request)
        return sum(1 for _ in sdk.Stream(cast_to=event_type, response=response, client=client))

    return run


def _gemini_sdk() -> Runner | None:
    """google-genai's ``generate_content_stream`` over an in-memory transport."""
    if importlib.util.find_spec("google") is None or importlib.util.find_spec("google.genai") is None:
        return None
    genai: Any = importlib.import_module("google.genai")
    types: Any = importlib.import_module("google.genai.types")
    api_client: Any = importlib.import_module("google.genai._api_client")
    http: Any = getattr(api_client, "httpx2", None) or api_client.httpx
    given: list[list[bytes]] = [[]]

    def answer(request: Any) -> Any:
        return http.Response(200, headers={"content-type": "text/event-stream"}, content=iter(given[0]))

    options = types.HttpOptions(
        base_url="http://127.0.0.1:9",
        httpx_client=http.Client(transport=http.MockTransport(answer)),
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    client = genai.Client(api_key="benchmark", http_options=options)

    def run(chunks: list[bytes]) -> int:
        given[0] = chunks
        return sum(1 for _ in client.models.generate_content_stream(model="benchmark", contents="benchmark"))

    return run


def sdks() -> dict[str, Runner | None]:
    return {
        "openai-responses": _sdk_stream(
            "openai", "openai.types.responses.ResponseStreamEvent", "http://127.0.0.1:9/v1/responses"
        ),
        "anthropic": _sdk_stream(
            "anthropic", "anthropic.types.RawMessageStreamEvent", "http://127.0.0.1:9/v1/messages"
        ),
        "gemini": _gemini_sdk(),
    }


# -- cells ----------------------------------------------------------------------------


def run(rounds: int = 11, n_chunks: int = 500, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every dialect cell."""
    official = sdks()
    cells: list[Cell] = []
    for dialect, make in STREAMS.items():
        fx = make(n_chunks)
        events = c.chatstream([fx.body], dialect)
        for label in LABELS:
            t0 = time.process_time()
            chunks = chunk(fx.body, CHUNK_SIZES[label])
            contenders: dict[str, Callable[[], int]] = {
                "ChatStream": functools.partial(c.chatstream, chunks, dialect),
                "ChatStream feed": functools.partial(c.chatstream_feed, chunks, dialect),
                "json floor": c.json_floor(fx.json_payloads),
            }
            sdk = official[dialect]
            if sdk is not None:
                contenders["SDK"] = functools.partial(sdk, chunks)
            expect = {"ChatStream": events, "ChatStream feed": events, "json floor": len(fx.json_payloads)}
            cell = Cell(dialect, label, len(fx.body), events)
            cells.append(interleave(cell, contenders, expect, rounds=rounds, min_sample=0.02))
            log(f"dialects: {dialect}, {label} chunks: {time.process_time() - t0:.1f} s CPU")
    return {"cells": cells}


def report(results: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The printed table and the JSON-ready summary of a ``run``."""
    rows: list[list[str]] = []
    out: list[dict[str, Any]] = []
    verdicts: list[Verdict] = []
    for cell in results["cells"]:
        has_sdk = "SDK" in cell.samples
        vs_json = {name: cell.ratio(name, "json floor") for name in OURS}
        vs_sdk = {name: cell.ratio(name, "SDK") if has_sdk else None for name in OURS}
        d = cell.as_dict()
        d.update(vs_json=vs_json, vs_sdk=vs_sdk)
        out.append(d)
        rows.append(
            [
                cell.stream,
                cell.chunk,
                *(f"{vs_json[name]:.2f}" for name in OURS),
                *(f"{v:.2f}" if (v := vs_sdk[name]) is not None else "-" for name in OURS),
                f"{cell.ratio('SDK', 'json floor'):.1f}" if has_sdk else "-",
            ]
        )
        if cell.chunk == "1460":
            verdicts += [
                (
                    f"{cell.stream} @ 1460: {name} <= {TARGET_VS_JSON}x json floor",
                    vs_json[name],
                    cell.best_ratio(name, "json floor"),
                    vs_json[name] <= TARGET_VS_JSON,
                )
                for name in OURS
            ]
    headers = ["stream", "chunk", *(f"{n}/json" for n in OURS), *(f"{n}/SDK" for n in OURS), "SDK/json"]
    lines, records = checklist(verdicts)
    text = "\n".join(["### The other APIs (time ratios, lower is faster)", "", table(headers, rows), "", *lines, ""])
    return text, {"cells": out, "targets": records}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_dialects", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (noisy numbers)")
    args = parser.parse_args(argv)
    results = run(rounds=2 if args.quick else 11, n_chunks=100 if args.quick else 500)
    print(report(results)[0])


if __name__ == "__main__":
    main()
