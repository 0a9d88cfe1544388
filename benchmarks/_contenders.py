"""The pipelines the benchmarks race, each driven the way its library drives itself.

Theory of operation: every contender is a function of a list of byte chunks
(pre-cut, shared by all contenders of a measurement) that runs one whole
stream and returns a count, which the harness checks so that no contender can
win by skipping work.  Framing contenders return the number of JSON payloads
they decoded; chat-layer contenders return the number of objects they handed
to the caller.

Peers are imported lazily, so ``ssestate``'s own contenders run without them.

* ``ssestate``: ``EventStreamParser`` fed chunk by chunk, drained after each
  chunk, ``json.loads`` on every data payload but ``[DONE]``.
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
  drained (and so built) after each chunk.
* floors: ``json.loads`` over the pre-split, already decoded payloads;
  ``bytes.split(b"\\n\\n")`` over the whole body; and the *event floor*:
  the caller's loop of ``ssestate`` (the same ``next_event`` calls, type test
  and ``json.loads``) over events whose places in the stream are given in
  advance, so that what it times beyond ``json.loads`` is only what no
  framer can skip: decoding each event's bytes, building its
  ``ServerSentEvent`` (as the parser builds them) and handing it out
  by a method call, as each chunk completes it.  Nothing is searched,
  buffered or checked, and chunks that complete no event are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from ssestate import CLOSED, NEED_DATA, ChatStream, EventStreamParser, ServerSentEvent
from ssestate._events import _messages

from .fixtures import DONE

Runner = Callable[[list[bytes]], int]


# -- ssestate --------------------------------------------------------------------


def ssestate_json(chunks: list[bytes]) -> int:
    parser = EventStreamParser()
    n = 0
    for chunk in chunks:
        parser.receive_data(chunk)
        while (event := parser.next_event()) is not NEED_DATA:
            if type(event) is ServerSentEvent and event.data != DONE:
                json.loads(event.data)
                n += 1
    parser.receive_data(b"")
    while (event := parser.next_event()) is not CLOSED:
        if type(event) is ServerSentEvent and event.data != DONE:
            json.loads(event.data)
            n += 1
    return n


def chatstream(chunks: list[bytes]) -> int:
    stream = ChatStream()
    n = 0
    for chunk in chunks:
        stream.receive_data(chunk)
        while stream.next_event() is not NEED_DATA:
            n += 1
    stream.receive_data(b"")
    while stream.next_event() is not CLOSED:
        n += 1
    return n


# -- floors ------------------------------------------------------------------------


def json_floor(payloads: tuple[str, ...]) -> Callable[[], int]:
    def floor() -> int:
        loads = json.loads
        for p in payloads:
            loads(p)
        return len(payloads)

    return floor


def split_floor(body: bytes) -> Callable[[], int]:
    def floor() -> int:
        return len(body.split(b"\n\n"))

    return floor


def completed_events(chunks: list[bytes]) -> list[list[bytes]]:
    """For each chunk, the data (undecoded) of the events whose last byte it
    brings.  The body must be made of one-line ``data: `` events only, each
    followed by a blank line (every chat fixture is)."""
    groups: list[list[bytes]] = []
    tail = b""
    for piece in chunks:
        tail += piece
        blocks = tail.split(b"\n\n")
        tail = blocks.pop()
        if not all(b.startswith(b"data: ") and b"\n" not in b for b in blocks):
            raise ValueError("the event floor needs a body of one-line data events")
        groups.append([b[6:] for b in blocks])
    if tail:
        raise ValueError("the event floor needs a body that ends with a blank line")
    return groups


class _GivenEvents:
    """Hands out, one per ``next_event`` call, the events of each group it
    receives: decoded and built as ``EventStreamParser`` builds them."""

    __slots__ = ("_queue",)

    def __init__(self) -> None:
        self._queue: Iterator[ServerSentEvent] = iter(())

    def receive(self, group: list[bytes]) -> None:
        events: list[ServerSentEvent] = []
        _messages(events, list(map(bytes.decode, group)), "")
        self._queue = iter(events)

    def next_event(self) -> ServerSentEvent | object:
        for event in self._queue:
            return event
        return NEED_DATA


def event_floor(chunks: list[bytes]) -> Callable[[], int]:
    # Chunks that complete no event cost a framer at least one call; the
    # floor skips them altogether.
    groups = [group for group in completed_events(chunks) if group]

    def floor() -> int:
        # The caller's loop of ssestate_json, written out again so that the
        # two pay the same per event (a shared helper would add a call).
        source = _GivenEvents()
        n = 0
        for group in groups:
            source.receive(group)
            while (event := source.next_event()) is not NEED_DATA:
                if type(event) is ServerSentEvent and event.data != DONE:
                    json.loads(event.data)
                    n += 1
        return n

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
    http: Any = getattr(openai._streaming, "httpx2", None) or openai._streaming.httpx

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
    for dist in ("httpx-sse", "sseclient-py", "openai", "httpx", "httpx2"):
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

    return sum(1 for _ in EventSource(_TextResponse(chunks)).iter_sse())  # type: ignore[arg-type]


def openai_decoder_events(chunks: list[bytes]) -> int:
    from openai._streaming import SSEDecoder

    return sum(1 for _ in SSEDecoder().iter_bytes(iter(chunks)))
