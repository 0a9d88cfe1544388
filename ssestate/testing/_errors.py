"""Each API's own words for failure: error bodies, status words, and the
error a stream carries when it fails half-way.

Theory of operation
-------------------
The four APIs refuse and fail in four shapes, and a client that reads one
shape where another comes loses the message (or crashes).  Every error the
test server writes is built here, from the API, the HTTP status and the
message, so that a refusal of a bad request, a scenario's bad key or
overload, and an unknown path all look the way that API writes them:

* OpenAI (Chat Completions and the Responses API):
  ``{"error": {"message", "type", "param", "code"}}``, pretty-printed;
* Anthropic: ``{"type": "error", "error": {"type", "message"},
  "request_id"}`` with the error type named by the status
  (``invalid_request_error``, ``authentication_error``, ...,
  ``overloaded_error`` for 529), compact;
* Gemini: ``{"error": {"code", "message", "status"[, "details"]}}`` with
  Google's status word (``INVALID_ARGUMENT``, ``UNAVAILABLE``...),
  pretty-printed with two spaces.

``mid_stream`` gives the error that ends a stream half-way, as each API
sends it after a 200: a ``data:`` payload with an ``error`` member (Chat
Completions), an ``error`` event (the Responses API and Anthropic; written by
their ``Encoder``, which numbers it), or, for Gemini, the error object as
raw pretty-printed JSON lines without ``data:``, which an event-stream
parser that follows the WHATWG rules never sees.
"""

from __future__ import annotations

import json
from typing import Any

from .. import StreamError
from ._script import Script, Step

__all__ = ["GEMINI_STATUS", "bad_key", "error_body", "error_script", "mid_stream", "overloaded", "server_error"]

_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
#: Google's status word for each HTTP status (google.rpc.Code).
GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_OVERLOADED = {
    "openai": "The engine is currently overloaded, please try again later.",
    "anthropic": "Overloaded",
    "gemini": "The model is overloaded. Please try again later.",
}
_SERVER_ERROR = (
    "The server had an error processing your request. Sorry about that! You can retry your request, or contact us "
    "through our help center at help.openai.com if you keep seeing this error."
)


def _family(dialect: str) -> str:
    return "openai" if dialect.startswith("openai") else dialect


def error_body(
    dialect: str,
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    kind: str | None = None,
    request_id: str = "req_ssestate",
    details: list[Any] | None = None,
) -> dict[str, Any]:
    """The JSON error body of ``dialect`` for an HTTP ``status``.

    ``kind`` is the OpenAI error ``type`` (default ``invalid_request_error``)
    or the Anthropic error type (default: the one of the status)."""
    family = _family(dialect)
    if family == "anthropic":
        error = {"type": kind or _ANTHROPIC_TYPES.get(status, "api_error"), "message": message}
        return {"type": "error", "error": error, "request_id": request_id}
    if family == "gemini":
        body: dict[str, Any] = {"code": status, "message": message, "status": GEMINI_STATUS.get(status, "UNKNOWN")}
        if details is not None:
            body["details"] = details
        return {"error": body}
    return {"error": {"message": message, "type": kind or "invalid_request_error", "param": param, "code": code}}


def _dumps(dialect: str, body: object) -> bytes:
    if _family(dialect) == "anthropic":
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    return (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode()


def error_script(
    dialect: str,
    status: int,
    message: str,
    *,
    lead: list[Step] | None = None,
    headers: list[tuple[str, str]] | None = None,
    **fields: Any,
) -> Script:
    """A whole error response of ``dialect``: the head and the JSON body
    (after the ``lead`` steps, pauses, when given)."""
    body = _dumps(dialect, error_body(dialect, status, message, **fields))
    content_type = "application/json; charset=UTF-8" if _family(dialect) == "gemini" else "application/json"
    head = [("Content-Type", content_type), *(headers or [])]
    if _family(dialect) == "anthropic" and "request_id" in fields:
        head.append(("request-id", fields["request_id"]))  # the header repeats the body's id
    return Script(status, head, [*(lead or []), body], chunked=False, outcome="error")


def bad_key(dialect: str, request_id: str, lead: list[Step]) -> Script:
    """What each API answers a request with a bad API key: 401 from OpenAI
    and Anthropic, 400 ``API_KEY_INVALID`` from Gemini (Google's word for a
    key it does not know)."""
    family = _family(dialect)
    if family == "anthropic":
        return error_script(dialect, 401, "invalid x-api-key", lead=lead, request_id=request_id)
    if family == "gemini":
        message = "API key not valid. Please pass a valid API key."
        details = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
            {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US", "message": message},
        ]
        return error_script(dialect, 400, message, lead=lead, details=details)
    message = (
        "Incorrect API key provided: sk-test. You can find your API key at "
        "https://platform.openai.com/account/api-keys."
    )
    script = error_script(
        dialect, 401, message, lead=lead, code="invalid_api_key", headers=[("X-Request-Id", request_id)]
    )
    script.headers[0] = ("Content-Type", "application/json; charset=utf-8")
    return script


def overloaded(dialect: str, request_id: str, lead: list[Step]) -> Script:
    """What each API answers when it is overloaded, before any stream: 529
    ``overloaded_error`` (Anthropic), 503 ``UNAVAILABLE`` (Gemini), 503
    ``server_error`` (OpenAI)."""
    family = _family(dialect)
    message = _OVERLOADED[family]
    if family == "anthropic":
        return error_script(dialect, 529, message, lead=lead, request_id=request_id)
    if family == "gemini":
        return error_script(dialect, 503, message, lead=lead)
    return error_script(dialect, 503, message, lead=lead, kind="server_error", headers=[("X-Request-Id", request_id)])


def server_error(dialect: str, request_id: str, lead: list[Step]) -> Script:
    """What a request that asked for no stream gets where a stream would have
    failed half-way: the API's 5xx (OpenAI's 500 ``server_error``; for
    Anthropic and Gemini the overload their streams report)."""
    if _family(dialect) == "openai":
        headers = [("X-Request-Id", request_id)]
        return error_script(dialect, 500, _SERVER_ERROR, lead=lead, kind="server_error", headers=headers)
    return overloaded(dialect, request_id, lead)


def mid_stream(dialect: str) -> StreamError | bytes:
    """The error that ends a stream of ``dialect`` half-way: an event for the
    API's ``Encoder`` to write, or (Gemini) the raw bytes."""
    family = _family(dialect)
    if family == "anthropic":
        return StreamError(None, None, _OVERLOADED["anthropic"], "overloaded_error")
    if family == "gemini":
        body = error_body(dialect, 503, _OVERLOADED["gemini"])
        return json.dumps(body, indent=2).encode() + b"\n"
    # Chat Completions sends code null; the Responses API names the code too.
    code = "server_error" if dialect == "openai-responses" else None
    return StreamError(None, code, _SERVER_ERROR, "server_error")
