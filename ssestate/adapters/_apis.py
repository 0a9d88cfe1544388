"""How each streaming API wants its request, and what its errors mean to a retry.

Theory of operation
-------------------
The adapters are one loop for four APIs (SPEC §3b, §7).  What differs
between the APIs before the first byte of the answer is small, and all of
it is here, as data (``REQUESTS``) and two functions, so that no adapter
holds a copy of it:

* where the request goes: ``{base_url}`` plus the API's path (Gemini's path
  names the model, taken out of the body, and streams SSE only with
  ``?alt=sse``);
* what the body needs added to stream: ``"stream": true`` for Chat
  Completions, the Responses API and Anthropic (Gemini's streaming is its
  path; a ``stream`` member would be an unknown field to it), and for Chat
  Completions also ``stream_options.include_usage`` (the other three send
  their usage unasked);
* which header carries the key (``Authorization: Bearer`` for OpenAI,
  ``x-api-key`` for Anthropic, ``x-goog-api-key`` for Gemini) and which
  other headers the API demands (Anthropic's ``anthropic-version``).

``"auto"`` cannot pick a request shape: it knows the API only once the
answer is read.  An adapter given ``"auto"`` sends the Chat Completions
request (the shape the OpenAI-compatible servers and gateways share) and
reads the answer in whatever format it comes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

__all__ = ["ANTHROPIC_VERSION", "DIALECTS", "REQUESTS", "ApiRequest", "api_request"]

# The version of the Messages API whose stream the anthropic reader knows
# (``event: message_start`` ... ``message_stop``); still the current one.
ANTHROPIC_VERSION = "2023-06-01"


@dataclasses.dataclass(frozen=True)
class ApiRequest:
    """What one API asks of a streaming request.

    Attributes:
        path: appended to the base URL's path; ``{model}`` is replaced by
            the model, which then leaves the body.
        query: added to the URL's query ("" for none).
        stream: add ``"stream": true`` to the body.
        include_usage: add ``stream_options: {"include_usage": true}``
            unless the caller set ``stream_options``.
        key_header: the header that carries ``api_key``.
        bearer: write the key as ``Bearer <key>``.
        headers: further headers the API demands (the caller's win).
    """

    path: str
    query: str = ""
    stream: bool = True
    include_usage: bool = False
    key_header: str = "Authorization"
    bearer: bool = True
    headers: tuple[tuple[str, str], ...] = ()


REQUESTS: dict[str, ApiRequest] = {
    "openai-chat": ApiRequest("/chat/completions", include_usage=True),
    "openai-responses": ApiRequest("/responses"),
    "anthropic": ApiRequest(
        "/messages", key_header="x-api-key", bearer=False, headers=(("anthropic-version", ANTHROPIC_VERSION),)
    ),
    "gemini": ApiRequest(
        "/models/{model}:streamGenerateContent",
        query="alt=sse",
        stream=False,
        key_header="x-goog-api-key",
        bearer=False,
    ),
}
# "auto" reads any answer; it is asked for the way OpenAI-compatible servers take it.
DIALECTS = (*REQUESTS, "auto")


def api_request(
    dialect: str, payload: Mapping[str, Any], api_key: str | None
) -> tuple[str, str, dict[str, Any], list[tuple[str, str]]]:
    """The API's part of a request: ``(path, query, body, headers)``.

    ``path`` is to be appended to the base URL's path, ``query`` joined to
    its query; ``body`` is a new dict (``payload`` is not modified);
    ``headers`` are the API's defaults, key included when given.

    Raises:
        ValueError: an unknown dialect; for Gemini, a payload without a
            model name.
    """
    api = REQUESTS.get("openai-chat" if dialect == "auto" else dialect)
    if api is None:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}; got {dialect!r}")
    body = dict(payload)
    path = api.path
    if "{model}" in path:
        model = body.pop("model", None)
        if not isinstance(model, str) or not model.removeprefix("models/"):
            raise ValueError(
                f"dialect {dialect!r} needs payload['model'], a model name (it goes in the URL path); got {model!r}"
            )
        # The API's own resource name is "models/<name>"; either spelling
        # is accepted.  The name is one path segment: nothing in it may
        # change the path or start a query.
        path = path.replace("{model}", quote(model.removeprefix("models/"), safe=""))
    if api.stream:
        body["stream"] = True
    if api.include_usage and "stream_options" not in body:
        body["stream_options"] = {"include_usage": True}
    headers = list(api.headers)
    if api_key is not None:
        headers.append((api.key_header, f"Bearer {api_key}" if api.bearer else api_key))
    return path, api.query, body, headers
