"""The request every adapter sends, built once and ready for any HTTP client.

Theory of operation
-------------------
``build_request`` turns ``(base_url, payload, api_key, headers, dialect)``
into a ``ChatRequest``: the API's path under ``base_url`` and what its body
and headers need to stream (``_apis.py`` holds that, per API; for
``"openai-chat"``, ``POST {base_url}/chat/completions`` with ``"stream":
true`` and ``stream_options.include_usage`` unless the caller set
``stream_options``), ``Content-Type: application/json``, ``Accept:
text/event-stream``, ``Accept-Encoding: identity`` (the body must reach the
parser as the server wrote it, never compressed) and the key in the API's
header when one is given; caller headers replace defaults of the same name.

Everything a request can get wrong (an unknown dialect, a URL that is not
http(s), a payload that is not JSON, a Gemini payload without a model) is
raised here, before any connection is made, so every adapter fails alike
and at once.  The ``ChatRequest`` holds the parts each kind of client wants
(a URL for httpx; scheme, host, port and target for ``http.client`` and
h11), so no adapter parses the URL again.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any, Union
from urllib.parse import urlsplit

from ._apis import api_request

__all__ = ["ChatRequest", "HeaderInput", "build_request", "header_pairs"]

HeaderInput = Union[Mapping[str, str], Iterable[tuple[str, str]]]

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclasses.dataclass(frozen=True)
class ChatRequest:
    """A streaming request to one of the APIs, ready for any HTTP client.

    Attributes:
        method: always "POST".
        url: the full URL (e.g. ``{base_url}/chat/completions``).
        scheme: "http" or "https".
        host: host name or address (IPv6 without brackets).
        port: TCP port (the scheme's default when the URL has none).
        target: the request target: path plus ``?query`` if any.
        headers: ``(name, value)`` pairs, ``Host`` and ``Content-Length``
            excluded (every HTTP client adds those itself; with h11 add
            ``("Host", request.authority)`` and the length).
        body: the JSON body.
    """

    method: str
    url: str
    scheme: str
    host: str
    port: int
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    @property
    def authority(self) -> str:
        """The ``Host`` header value: host, plus ``:port`` when not default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if _DEFAULT_PORTS[self.scheme] == self.port else f"{host}:{self.port}"


def header_pairs(headers: HeaderInput | None) -> list[tuple[str, str]]:
    """Headers as a list of ``(name, value)`` pairs, in order."""
    if headers is None:
        return []
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(str(name), str(value)) for name, value in items]


def build_request(
    base_url: str,
    payload: Mapping[str, Any],
    api_key: str | None = None,
    headers: HeaderInput | None = None,
    dialect: str = "openai-chat",
) -> ChatRequest:
    """Build the streaming request of ``dialect``'s API (SPEC §7).

    Args:
        base_url: e.g. "https://api.openai.com/v1" (a trailing slash is fine).
        payload: the request body (model, messages, ...); not modified.
        api_key: sent in the API's header (``Authorization: Bearer``,
            ``x-api-key``, ``x-goog-api-key``) when given.
        headers: extra headers; they replace defaults of the same name.
        dialect: "openai-chat", "openai-responses", "anthropic", "gemini",
            or "auto" (the "openai-chat" request); see ``_apis.py``.

    Raises:
        ValueError: an unknown dialect; the URL is not http(s) with a host;
            the payload cannot be encoded as JSON, or (Gemini) names no
            model.
    """
    parts = urlsplit(base_url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"base_url must be an http:// or https:// URL with a host, got {base_url!r}")
    port = parts.port or _DEFAULT_PORTS[scheme]  # raises ValueError for a bad port
    suffix, api_query, body, defaults = api_request(dialect, payload, api_key)
    path = parts.path.rstrip("/") + suffix
    query = "&".join(q for q in (api_query, parts.query) if q)
    target = f"{path}?{query}" if query else path
    url = f"{scheme}://{parts.netloc}{target}"
    try:
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"payload cannot be sent as JSON: {exc}") from exc

    extra = header_pairs(headers)
    replaced = {name.lower() for name, _ in extra}
    defaults = [
        ("Content-Type", "application/json"),
        ("Accept", "text/event-stream"),
        ("Accept-Encoding", "identity"),
        *defaults,
    ]
    pairs = [(n, v) for n, v in defaults if n.lower() not in replaced] + extra
    return ChatRequest("POST", url, scheme, parts.hostname, port, target, tuple(pairs), data)
