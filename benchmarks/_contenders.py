"""The pipelines the benchmarks race, each driven the way its library drives itself.

Theory of operation: every contender is a function of a list of byte chunks
(pre-cut, shared by all contenders of a measurement) that runs one whole
stream and returns a count, which the harness checks so that no contender can
win by skipping work.  Framing contenders return the number of JSON payloads
they decoded; chat-layer contenders return the number of objects they handed
to the caller.

Peers are imported lazily, so ``ssestate``'s own contenders run without them.

* ``ssestate``: ``EventStreamParser`` fed chunk by chunk, drained after each
  chunk with ``next_event`` bound once to a local (as a hot loop is written),
  ``json.loads`` on every data payload but ``[DONE]``.  ``ssestate feed``:
  the same with ``for event in parser.feed(chunk)``.
* ``httpx-sse``: ``httpx_sse.EventSource(response).iter_sse()`` over a
  stand-in response whose ``iter_text()`` is httpx's own (httpx's
  ``TextDecoder`` + ``TextChunker``, as ``httpx.Response.iter_text`` runs
  them), so the library's own ``_iter_sse_lines`` / ``SSELineDecoder`` split
  the lines and its ``SSEDecoder`` interprets them.  Nothing of httpx's
  transport is in the loop (nor is it for ssestate).
* ``sseclient-py``: ``SSEClient(iter(chunks)).events()``.
* ``openai-decoder``: ``openai._streaming.SSEDecoder().iter_bytes(iter(chunks))``
  (the SDK's byte-level line splitter plus its SSE decoder), stopping at
  ``[DONE]`` as ``openai.Stream`` does, ``json.loads`` on each payload.
* ``openai-Stream``: the SDK's ``openai.Stream`` as ``client.chat.completions
  .create(stream=True)`` returns it: over an ``httpx2.Response`` whose body
  iterates the chunks, ``cast_to=ChatCompletionChunk``; every chunk object is
  built.  The client is never asked to connect.
* ``ChatStream``: ``ssestate.ChatStream`` fed chunk by chunk, every event
  drained (and so built) after each chunk, ``next_event`` bound once;
  ``ChatStream feed``: the same with ``feed(chunk)``.
* the json floor: ``json.loads`` over the pre-split, already decoded
  payloads, the work no reader can skip.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from ssestate import CLOSED, NEED_DATA, ChatStream, EventStreamParser, ServerSentEvent

from .fixtures import DONE

Runner = Callable[[list[bytes]], int]


# -- ssestate --------------------------------------------------------------------


def ssestate_json(chunks: list[bytes]) -> int:
    parser = EventStreamParser()
    receive, next_event = parser.receive_data, parser.next_event  # bound once, as a hot loop does
    n = 0
    for chunk in chunks:
        receive(chunk)
        while (event := next_event()) is not NEED_DATA:
            if type(event) is ServerSentEvent and event.data != DONE:
                json.loads(event.data)
                n += 1
    receive(b"")
    while (event := next_event()) is not CLOSED:
        if type(event) is ServerSentEvent and event.data != DONE:
            json.loads(event.data)
            n += 1
    return n


def ssestate_feed_json(chunks: list[bytes]) -> int:
    feed = EventStreamParser().feed
    n = 0
    for chunk in [*chunks, b""]:
        for event in feed(chunk):
            if type(event) is ServerSentEvent and event.data != DONE:
                json.loads(event.data)
                n += 1
    return n


def chatstream(chunks: list[bytes], dialect: str = "openai-chat") -> int:
    stream = ChatStream(dialect=dialect)
    receive, next_event = stream.receive_data, stream.next_event
    n = 0
    for chunk in chunks:
        receive(chunk)
        while next_event() is not NEED_DATA:
            n += 1
    receive(b"")
    while next_event() is not CLOSED:
        n += 1
    return n


def chatstream_feed(chunks: list[bytes], dialect: str = "openai-chat") -> int:
    feed = ChatStream(dialect=dialect).feed
    n = 0
    for chunk in [*chunks, b""]:
        n += len(feed(chunk))
    return n


# -- floors ------------------------------------------------------------------------


def json_floor(payloads: tuple[str, ...]) -> Callable[[], int]:
    def floor() -> int:
        loads = json.loads
        for p in payloads:
            loads(p)
        return len(payloads)

    return floor


# -- httpx-sse --------------------------------------------------------------------


class _TextResponse:
    """The two members ``httpx_sse.EventSource`` reads from an ``httpx.Response``.

    ``iter_text`` repeats ``httpx.Response.iter_text``: httpx's incremental
    UTF-8 ``TextDecoder`` then its ``TextChunker`` (no re-chunking), over the
    chunks as the transport would hand them out.
    """

    def __init__(self, chunks: list[bytes]) -> None:
        self.headers = {"content-type": "text/event-stream"}
        self._chunks = chunks

    def iter_text(self) -> Iterator[str]:
        from httpx._decoders import TextChunker, TextDecoder

        decoder = TextDecoder(encoding="utf-8")
        chunker = TextChunker()
        for raw in self._chunks:
            yield from chunker.decode(decoder.decode(raw))
        yield from chunker.decode(decoder.flush())
        yield from chunker.flush()


def httpx_sse_json(chunks: list[bytes]) -> int:
    from httpx_sse import EventSource

    n = 0
    for sse in EventSource(_TextResponse(chunks)).iter_sse():  # type: ignore[arg-type]
        if sse.data != DONE:
            json.loads(sse.data)
            n += 1
    return n


# -- sseclient-py -------------------------------------------------------------------


def sseclient_json(chunks: list[bytes]) -> int:
    from sseclient import SSEClient

    n = 0
    for event in SSEClient(iter(chunks)).events():
        if event.data != DONE:
            json.loads(event.data)
            n += 1
    return n


# -- openai ---------------------------------------------------------------------------


def openai_decoder_json(chunks: list[bytes]) -> int:
    from openai._streaming import SSEDecoder

    n = 0
    for sse in SSEDecoder().iter_bytes(iter(chunks)):
        if sse.data.startswith(DONE):
            break
        json.loads(sse.data)
        n += 1
    return n


def openai_stream_factory() -> Runner:
    """``openai.Stream[ChatCompletionChunk]`` over an in-memory response."""
    import openai
    import openai._streaming
    from openai.types.chat import ChatCompletionChunk

    # Recent SDKs build on ``httpx2``, older ones on ``httpx``: use whichever
    # module the SDK's streaming code was written against.
    http: Any = getattr(openai._streaming, "httpx2", None) or getattr(openai._streaming, "httpx")  # noqa: B009

    client = openai.OpenAI(api_key="sk-benchmark", base_url="http://127.0.0.1:9/v1", max_retries=0)
    request = http.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    headers = {"content-type": "text/event-stream"}

    def openai_stream(chunks: list[bytes]) -> int:
        response = http.Response(200, headers=headers, content=iter(chunks), request=request)
        stream: Any = openai.Stream(cast_to=ChatCompletionChunk, response=response, client=client)
        n = 0
        for _ in stream:
            n += 1
        return n

    return openai_stream


def versions() -> dict[str, str]:
    """Installed versions of ssestate and of every peer."""
    from importlib import metadata

    import ssestate

    out = {"ssestate": ssestate.__version__}
    for dist in ("httpx-sse", "sseclient-py", "openai", "anthropic", "google-genai", "httpx", "httpx2"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "missing"
    return out


# -- framing only (no JSON), for the linearity runs ------------------------------------


def ssestate_events(chunks: list[bytes]) -> int:
    parser = EventStreamParser()
    n = 0
    for chunk in chunks:
        parser.receive_data(chunk)
        while parser.next_event() is not NEED_DATA:
            n += 1
    parser.receive_data(b"")
    while parser.next_event() is not CLOSED:
        n += 1
    return n


def httpx_sse_events(chunks: list[bytes]) -> int:
    from httpx_sse import EventSource

    source: Any = EventSource(_TextResponse(chunks))  # type: ignore[arg-type]
    return sum(1 for _ in source.iter_sse())


def openai_decoder_events(chunks: list[bytes]) -> int:
    from openai._streaming import SSEDecoder

    return sum(1 for _ in SSEDecoder().iter_bytes(iter(chunks)))
