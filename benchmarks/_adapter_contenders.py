"""The clients the adapter benchmark races over real loopback HTTP.

Theory of operation
-------------------
A ``Contender`` reads one whole stream from the loopback server
(``_loopback.py``) and returns a count, so that nobody wins by skipping
work: body bytes for a raw transport, events for ssestate, decoded JSON
payloads for the peers.  Each is written the way its users write it, with
one client (``session``) made before timing starts and kept for every
stream of the cell, as a program keeps its client:

* ``raw``: the transport alone, reading the body to its end and discarding
  it (``HTTPResponse.read1``, ``iter_raw``/``aiter_raw``, h11 over a trio
  stream).  What no client on that transport can go below.
* ``hand-fed``: the same loop with ``ChatStream.feed(chunk)`` per chunk,
  the events counted (``for ev in stream.feed(data)``).
* ``adapter``: ``ssestate.adapters.sync.stream_chat``,
  ``adapters.httpx.stream_chat`` / ``astream_chat``,
  ``adapters.trio.stream_chat``, iterated to the end.
* ``httpx-sse``: ``connect_sse`` / ``aconnect_sse``, ``json.loads`` of each
  event's data, leaving the loop at ``[DONE]``.
* ``naive``: ``iter_lines`` / ``aiter_lines``, lines that start with
  ``data: `` given to ``json.loads``, leaving the loop at ``[DONE]``: the
  client people write in a few lines.
* ``sdk``: the official ``openai`` SDK, ``client.chat.completions.create(...,
  stream=True)`` iterated to its end (it builds a ``ChatCompletionChunk``
  per payload).

Every contender comes in the flavour of its cell: blocking (``sync``), or
async (``async``: awaited under asyncio or trio).  The stdlib and trio
transports open a connection per stream (that is how their adapters work);
the httpx clients and the SDK are made with their libraries' defaults
(httpx keeps up to 20 idle connections, the SDK 100), as users make them.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
from collections.abc import Callable
from typing import Any

from ssestate import ChatStream, Done

__all__ = ["PAYLOAD", "Contender", "Target", "async_contenders", "sync_contenders"]

PAYLOAD_MESSAGES = [{"role": "user", "content": "Tell me a long story."}]
PAYLOAD: dict[str, Any] = {"messages": PAYLOAD_MESSAGES}


@dataclasses.dataclass(frozen=True)
class Target:
    """Where the server is and which body to ask for."""

    host: str
    port: int
    model: str

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def url(self) -> str:
        return self.base_url + "/chat/completions"

    @property
    def payload(self) -> dict[str, Any]:
        return {"model": self.model, **PAYLOAD}

    @property
    def body(self) -> bytes:
        """The request body the raw transports send (what the adapters send)."""
        return json.dumps({**self.payload, "stream": True}).encode()


@dataclasses.dataclass
class Contender:
    """One client.

    Attributes:
        name: its row label.
        kind: ``raw``, ``hand-fed``, ``adapter``, ``httpx-sse``, ``naive``
            or ``sdk``.
        transport: what carries the bytes (``http.client``, ``httpx``,
            ``trio+h11``, ``httpx2``), to pair an adapter with the raw and
            hand-fed loops on its own transport.
        unit: what ``one`` counts: ``bytes``, ``events`` or ``payloads``.
        open: makes the session for the server of a ``Target`` (sync, or
            awaited in async cells).
        one: reads one stream with the session; returns the count.
        close: closes the session.
    """

    name: str
    kind: str
    transport: str
    unit: str
    open: Callable[[Target], Any]
    one: Callable[[Any, Target], Any]
    close: Callable[[Any], Any]


def _none(_: Target) -> None:
    return None


def _ignore(_: Any) -> None:
    return None


# -- blocking ---------------------------------------------------------------------------


def _stdlib_response(target: Target) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection(target.host, target.port)
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    conn.request("POST", "/v1/chat/completions", target.body, headers)
    return conn, conn.getresponse()


def _stdlib_raw(_: Any, target: Target) -> int:
    conn, response = _stdlib_response(target)
    n = 0
    while data := response.read1(65536):
        n += len(data)
    conn.close()
    return n


def _stdlib_fed(_: Any, target: Target) -> int:
    conn, response = _stdlib_response(target)
    stream = ChatStream(response.status, response.getheader("content-type", ""))
    n = 0
    while data := response.read1(65536):
        for _event in stream.feed(data):
            n += 1
    conn.close()
    return n


def _stdlib_adapter(_: Any, target: Target) -> int:
    from ssestate.adapters import sync

    n = 0
    with sync.stream_chat(target.base_url, target.payload) as call:
        for _event in call:
            n += 1
    return n


def _httpx_client(_: Target) -> Any:
    import httpx

    return httpx.Client(timeout=60)


def _httpx_raw(client: Any, target: Target) -> int:
    n = 0
    with client.stream("POST", target.url, content=target.body, headers={"Content-Type": "application/json"}) as r:
        for data in r.iter_raw():
            n += len(data)
    return n


def _httpx_fed(client: Any, target: Target) -> int:
    n = 0
    with client.stream("POST", target.url, content=target.body, headers={"Content-Type": "application/json"}) as r:
        stream = ChatStream(r.status_code, r.headers.get("content-type", ""))
        for data in r.iter_raw():
            for _event in stream.feed(data):
                n += 1
    return n


def _httpx_adapter(client: Any, target: Target) -> int:
    from ssestate.adapters import httpx as sse_httpx

    n = 0
    with sse_httpx.stream_chat(client, target.base_url, target.payload) as call:
        for _event in call:
            n += 1
    return n


def _httpx_sse(client: Any, target: Target) -> int:
    from httpx_sse import connect_sse

    n = 0
    with connect_sse(client, "POST", target.url, json={**target.payload, "stream": True}) as source:
        for sse in source.iter_sse():
            if sse.data == "[DONE]":
                break
            json.loads(sse.data)
            n += 1
    return n


def _naive(client: Any, target: Target) -> int:
    n = 0
    with client.stream("POST", target.url, json={**target.payload, "stream": True}) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                data = line[6:]
                if data == "[DONE]":
                    break
                json.loads(data)
                n += 1
    return n


def _sdk_client(target: Target) -> Any:
    import openai

    return openai.OpenAI(base_url=target.base_url, api_key="sk-benchmark", max_retries=0)


def _sdk(client: Any, target: Target) -> int:
    n = 0
    stream = client.chat.completions.create(model=target.model, messages=PAYLOAD_MESSAGES, stream=True)
    for _chunk in stream:
        n += 1
    return n


def _close(session: Any) -> None:
    session.close()


def sync_contenders() -> list[Contender]:
    """The blocking clients (the stdlib and httpx adapters' cell)."""
    return [
        Contender("http.client raw", "raw", "http.client", "bytes", _none, _stdlib_raw, _ignore),
        Contender("http.client + ChatStream", "hand-fed", "http.client", "events", _none, _stdlib_fed, _ignore),
        Contender("sync.stream_chat", "adapter", "http.client", "events", _none, _stdlib_adapter, _ignore),
        Contender("httpx raw", "raw", "httpx", "bytes", _httpx_client, _httpx_raw, _close),
        Contender("httpx + ChatStream", "hand-fed", "httpx", "events", _httpx_client, _httpx_fed, _close),
        Contender("httpx.stream_chat", "adapter", "httpx", "events", _httpx_client, _httpx_adapter, _close),
        Contender("httpx-sse", "httpx-sse", "httpx", "payloads", _httpx_client, _httpx_sse, _close),
        Contender("naive (iter_lines)", "naive", "httpx", "payloads", _httpx_client, _naive, _close),
        Contender("openai SDK", "sdk", "httpx2", "payloads", _sdk_client, _sdk, _close),
    ]


# -- async ------------------------------------------------------------------------------


async def _async_httpx_client(_: Target) -> Any:
    import httpx

    return httpx.AsyncClient(timeout=60)


async def _aclose(session: Any) -> None:
    await session.aclose()


async def _anone(_: Target) -> None:
    return None


async def _aignore(_: Any) -> None:
    return None


async def _ahttpx_raw(client: Any, target: Target) -> int:
    n = 0
    headers = {"Content-Type": "application/json"}
    async with client.stream("POST", target.url, content=target.body, headers=headers) as r:
        async for data in r.aiter_raw():
            n += len(data)
    return n


async def _ahttpx_fed(client: Any, target: Target) -> int:
    n = 0
    headers = {"Content-Type": "application/json"}
    async with client.stream("POST", target.url, content=target.body, headers=headers) as r:
        stream = ChatStream(r.status_code, r.headers.get("content-type", ""))
        async for data in r.aiter_raw():
            for _event in stream.feed(data):
                n += 1
    return n


async def _ahttpx_adapter(client: Any, target: Target) -> int:
    from ssestate.adapters import httpx as sse_httpx

    n = 0
    async with sse_httpx.astream_chat(client, target.base_url, target.payload) as call:
        async for _event in call:
            n += 1
    return n


async def _ahttpx_sse(client: Any, target: Target) -> int:
    from httpx_sse import aconnect_sse

    n = 0
    async with aconnect_sse(client, "POST", target.url, json={**target.payload, "stream": True}) as source:
        async for sse in source.aiter_sse():
            if sse.data == "[DONE]":
                break
            json.loads(sse.data)
            n += 1
    return n


async def _anaive(client: Any, target: Target) -> int:
    n = 0
    async with client.stream("POST", target.url, json={**target.payload, "stream": True}) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                data = line[6:]
                if data == "[DONE]":
                    break
                json.loads(data)
                n += 1
    return n


async def _async_sdk_client(target: Target) -> Any:
    import openai

    return openai.AsyncOpenAI(base_url=target.base_url, api_key="sk-benchmark", max_retries=0)


async def _asdk_close(client: Any) -> None:
    await client.close()


async def _asdk(client: Any, target: Target) -> int:
    n = 0
    stream = await client.chat.completions.create(model=target.model, messages=PAYLOAD_MESSAGES, stream=True)
    async for _chunk in stream:
        n += 1
    return n


async def _h11_exchange(target: Target, on_data: Callable[[bytes], int]) -> int:
    """One request over a fresh trio TCP stream with h11; ``on_data`` gets
    every piece of the body; returns the sum of what it returned."""
    import h11
    import trio  # type: ignore[import-untyped, unused-ignore]

    stream = await trio.open_tcp_stream(target.host, target.port)
    try:
        conn = h11.Connection(our_role=h11.CLIENT)
        body = target.body
        head = [
            ("Host", f"{target.host}:{target.port}"),
            ("Content-Type", "application/json"),
            ("Accept", "text/event-stream"),
            ("Content-Length", str(len(body))),
        ]
        request = h11.Request(method="POST", target="/v1/chat/completions", headers=head)
        out = b"".join(conn.send(m) or b"" for m in (request, h11.Data(data=body), h11.EndOfMessage()))
        await stream.send_all(out)
        n = 0
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif type(event) is h11.Data:
                n += on_data(event.data)
            elif type(event) is h11.EndOfMessage:
                return n
            elif type(event) is not h11.Response:
                raise RuntimeError(f"unexpected {event!r}")
    finally:
        await trio.aclose_forcefully(stream)


async def _trio_raw(_: Any, target: Target) -> int:
    return await _h11_exchange(target, len)


async def _trio_fed(_: Any, target: Target) -> int:
    stream = ChatStream(200, "text/event-stream")
    done = False

    def on_data(data: bytes) -> int:
        nonlocal done
        if done:
            return 0
        events = stream.feed(data)
        done = bool(events) and type(events[-1]) is Done
        return len(events)

    return await _h11_exchange(target, on_data)


async def _trio_adapter(_: Any, target: Target) -> int:
    from ssestate.adapters import trio as sse_trio

    n = 0
    async with sse_trio.stream_chat(target.base_url, target.payload) as call:
        async for _event in call:
            n += 1
    return n


def async_contenders(backend: str) -> list[Contender]:
    """The async clients; under trio the trio adapter and its h11 loops too."""
    own: list[Contender] = []
    if backend == "trio":
        own = [
            Contender("trio+h11 raw", "raw", "trio+h11", "bytes", _anone, _trio_raw, _aignore),
            Contender("trio+h11 + ChatStream", "hand-fed", "trio+h11", "events", _anone, _trio_fed, _aignore),
            Contender("trio.stream_chat", "adapter", "trio+h11", "events", _anone, _trio_adapter, _aignore),
        ]
    return [
        *own,
        Contender("httpx raw", "raw", "httpx", "bytes", _async_httpx_client, _ahttpx_raw, _aclose),
        Contender("httpx + ChatStream", "hand-fed", "httpx", "events", _async_httpx_client, _ahttpx_fed, _aclose),
        Contender("httpx.astream_chat", "adapter", "httpx", "events", _async_httpx_client, _ahttpx_adapter, _aclose),
        Contender("httpx-sse", "httpx-sse", "httpx", "payloads", _async_httpx_client, _ahttpx_sse, _aclose),
        Contender("naive (aiter_lines)", "naive", "httpx", "payloads", _async_httpx_client, _anaive, _aclose),
        Contender("openai SDK", "sdk", "httpx2", "payloads", _async_sdk_client, _asdk, _asdk_close),
    ]
