"""The official SDKs as oracles: a capture's bytes through each vendor's own
streaming code, in memory, and what the SDK hands back to its user.

Each oracle builds a real client of the SDK whose HTTP client is served by a
mock transport that answers every request with the capture's status, content
type and body (nothing leaves the process), calls the streaming method a user
calls, and reports what came back:

* ``openai_chat`` -- openai-python, ``client.chat.completions.stream(...)``:
  iterates the stream and then asks ``get_final_completion()``;
* ``openai_responses`` -- openai-python, ``client.responses.stream(...)``:
  iterates the ``ResponseStream`` and then asks ``get_final_response()``;
* ``anthropic_messages`` -- anthropic-sdk-python, ``client.messages.stream(...)``:
  ``get_final_message()``, or the ``current_message_snapshot`` when the stream
  raised;
* ``gemini_stream`` -- google-genai, ``client.models.generate_content_stream(...)``:
  the SDK has no accumulator, so the oracle joins what the chunks it yields
  carry (text and thought parts, function calls, the last finish reason and
  the last usage with counts), as any caller of that method must.

The result has the shape of a capture's ``expected`` where the SDK has an
answer: ``choices`` (``content``, ``reasoning``, ``refusal``,
``native_finish_reason`` as the SDK reports it, ``tool_calls`` with the
arguments parsed as JSON when they are JSON, since two SDKs only hand out the
parsed object), ``usage`` counted as OTHER-APIS.md §4.5 counts it, and a
``verdict``: ``"error"`` when the SDK raised its API error or handed out an
error event, ``"truncated"`` when it says the response never finished, else
``"finished"``.  ``role`` is left out: every SDK object here is the
assistant's turn by construction.

An exception the SDK did not mean as an API error (a parse failure, an
assertion inside the SDK) is raised as ``SdkCrash`` from the original.

The SDKs are imported inside the oracles, so this module imports without them.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from typing import Any

BASE_URL = "http://sdk-oracle.invalid"


class SdkCrash(RuntimeError):
    """The SDK failed on the bytes with an exception that is not its API error."""


@dataclasses.dataclass
class SdkResult:
    verdict: str
    choices: dict[str, dict[str, Any]] | None
    usage: dict[str, int] | None
    error: str | None = None


def _http_module(sdk_module: str) -> Any:
    """The HTTP library (``httpx2`` or ``httpx``) the SDK's client is built on,
    so the injected client is one it accepts."""
    base = importlib.import_module(sdk_module)
    for name in ("httpx2", "httpx"):
        module = getattr(base, name, None)
        if module is not None:
            return module
    raise RuntimeError(f"{sdk_module} imports neither httpx2 nor httpx")


def _client(http: Any, body: bytes, status: int, content_type: str) -> Any:
    def answer(request: Any) -> Any:
        return http.Response(status, headers={"content-type": content_type}, content=body)

    return http.Client(transport=http.MockTransport(answer))


def arguments_value(text: str) -> Any:
    """Tool arguments as compared with an SDK: the parsed JSON value when the
    text is JSON, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _choice(
    content: str, reasoning: str | None, refusal: str | None, native: str | None, calls: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "content": content,
        "reasoning": reasoning,
        "refusal": refusal,
        "native_finish_reason": native,
        "tool_calls": calls,
    }


def _joined(parts: list[str]) -> str | None:
    return "".join(parts) if parts else None


def _usage(prompt: int, completion: int, total: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


# --- OpenAI Chat Completions -----------------------------------------------------------------------


def openai_chat(body: bytes, status: int = 200, content_type: str = "text/event-stream") -> SdkResult:
    """What openai-python's chat streaming helper assembles; Chat Completions
    has no native finish word, so ``native_finish_reason`` is the SDK's
    ``finish_reason``, and the SDK's message has no reasoning."""
    openai = importlib.import_module("openai")
    client = openai.OpenAI(
        api_key="sk-oracle",
        base_url=f"{BASE_URL}/v1",
        max_retries=0,
        http_client=_client(_http_module("openai._base_client"), body, status, content_type),
    )
    try:
        with client.chat.completions.stream(model="oracle", messages=[{"role": "user", "content": "oracle"}]) as stream:
            for _ in stream:
                pass
            final = stream.get_final_completion()
    except openai.APIError as exc:
        return SdkResult("error", None, None, str(exc))
    except Exception as exc:
        raise SdkCrash(f"{type(exc).__name__}: {exc}") from exc
    choices = {}
    for c in final.choices:
        calls = [
            {"id": t.id, "name": t.function.name, "arguments": arguments_value(t.function.arguments)}
            for t in c.message.tool_calls or []
        ]
        choices[str(c.index)] = _choice(c.message.content or "", None, c.message.refusal, c.finish_reason, calls)
    usage = final.usage
    counts = None if usage is None else _usage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    verdict = "finished" if choices and all(c.finish_reason for c in final.choices) else "truncated"
    return SdkResult(verdict, choices, counts)


# --- OpenAI Responses ------------------------------------------------------------------------------


def _responses_choice(response: Any) -> dict[str, Any]:
    content: list[str] = []
    refusal: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                if part.type == "output_text":
                    content.append(part.text)
                elif part.type == "refusal":
                    refusal.append(part.refusal)
        elif item.type == "reasoning":
            reasoning.extend(s.text for s in item.summary)
            reasoning.extend(c.text for c in item.content or [])
        elif item.type == "function_call":
            calls.append({"id": item.call_id, "name": item.name, "arguments": arguments_value(item.arguments)})
    details = response.incomplete_details
    native = details.reason if details is not None and details.reason else response.status
    return _choice("".join(content), _joined(reasoning), _joined(refusal), native, calls)


def openai_responses(body: bytes, status: int = 200, content_type: str = "text/event-stream") -> SdkResult:
    openai = importlib.import_module("openai")
    client = openai.OpenAI(
        api_key="sk-oracle",
        base_url=f"{BASE_URL}/v1",
        max_retries=0,
        http_client=_client(_http_module("openai._base_client"), body, status, content_type),
    )
    error = None
    try:
        with client.responses.stream(model="oracle", input="oracle") as stream:
            for event in stream:
                if event.type == "error":
                    error = event.message or "error event"
                elif event.type == "response.failed" and error is None:
                    failure = event.response.error
                    error = failure.message if failure is not None else "response.failed"
            if error is not None:
                return SdkResult("error", None, None, error)
            try:
                final = stream.get_final_response()
            except RuntimeError as exc:
                # "Didn't receive a `response.completed` event.": the SDK's only
                # word for a stream that ended without its completion
                return SdkResult("truncated", None, None, str(exc))
    except openai.APIError as exc:
        return SdkResult("error", None, None, str(exc))
    except Exception as exc:
        raise SdkCrash(f"{type(exc).__name__}: {exc}") from exc
    usage = final.usage
    counts = None if usage is None else _usage(usage.input_tokens, usage.output_tokens, usage.total_tokens)
    return SdkResult("finished", {"0": _responses_choice(final)}, counts)


# --- Anthropic Messages ----------------------------------------------------------------------------


def _anthropic_choice(message: Any) -> dict[str, Any]:
    content: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            content.append(block.text)
        elif block.type == "thinking":
            reasoning.append(block.thinking)
        elif block.type == "tool_use":
            calls.append({"id": block.id, "name": block.name, "arguments": block.input})
    return _choice("".join(content), _joined(reasoning), None, message.stop_reason, calls)


def _anthropic_usage(message: Any) -> dict[str, int]:
    u = message.usage
    prompt = (u.input_tokens or 0) + (u.cache_creation_input_tokens or 0) + (u.cache_read_input_tokens or 0)
    return _usage(prompt, u.output_tokens, prompt + u.output_tokens)


def anthropic_messages(body: bytes, status: int = 200, content_type: str = "text/event-stream") -> SdkResult:
    anthropic = importlib.import_module("anthropic")
    client = anthropic.Anthropic(
        api_key="sk-ant-oracle",
        base_url=BASE_URL,
        max_retries=0,
        http_client=_client(_http_module("anthropic._base_client"), body, status, content_type),
    )
    request = {"model": "oracle", "max_tokens": 1024, "messages": [{"role": "user", "content": "oracle"}]}
    stream = None
    try:
        with client.messages.stream(**request) as stream:
            message = stream.get_final_message()
    except anthropic.APIError as exc:
        snapshot = None
        if stream is not None:
            try:
                snapshot = stream.current_message_snapshot
            except AssertionError:
                snapshot = None  # the error came before message_start
        if snapshot is None:
            return SdkResult("error", None, None, str(exc))
        return SdkResult("error", {"0": _anthropic_choice(snapshot)}, _anthropic_usage(snapshot), str(exc))
    except Exception as exc:
        raise SdkCrash(f"{type(exc).__name__}: {exc}") from exc
    verdict = "finished" if message.stop_reason is not None else "truncated"
    return SdkResult(verdict, {"0": _anthropic_choice(message)}, _anthropic_usage(message))


# --- Gemini ----------------------------------------------------------------------------------------


def _enum_word(value: Any) -> str:
    return str(getattr(value, "value", value))


_GEMINI_COUNTS = (
    "prompt_token_count",
    "candidates_token_count",
    "thoughts_token_count",
    "tool_use_prompt_token_count",
    "cached_content_token_count",
    "total_token_count",
)


def gemini_stream(body: bytes, status: int = 200, content_type: str = "text/event-stream") -> SdkResult:
    genai = importlib.import_module("google.genai")
    errors = importlib.import_module("google.genai.errors")
    types = importlib.import_module("google.genai.types")
    client = genai.Client(
        api_key="oracle",
        http_options=types.HttpOptions(
            base_url=BASE_URL,
            httpx_client=_client(_http_module("google.genai._api_client"), body, status, content_type),
            retry_options=types.HttpRetryOptions(attempts=1),
        ),
    )
    parts: dict[str, dict[str, Any]] = {}
    usage: dict[str, int] | None = None
    error = None

    def slot(key: str) -> dict[str, Any]:
        return parts.setdefault(key, {"content": [], "reasoning": [], "native": None, "calls": []})

    try:
        for chunk in client.models.generate_content_stream(model="oracle", contents="oracle"):
            for position, candidate in enumerate(chunk.candidates or []):
                c = slot(str(candidate.index if candidate.index is not None else position))
                for part in (candidate.content.parts if candidate.content else None) or []:
                    if part.function_call is not None:
                        call = part.function_call
                        c["calls"].append({"id": call.id, "name": call.name, "arguments": call.args or {}})
                    elif part.text:
                        c["reasoning" if part.thought else "content"].append(part.text)
                if candidate.finish_reason is not None:
                    c["native"] = _enum_word(candidate.finish_reason)
            feedback = chunk.prompt_feedback
            if not chunk.candidates and feedback is not None and feedback.block_reason is not None:
                slot("0")["native"] = _enum_word(feedback.block_reason)
            meta = chunk.usage_metadata
            # a usageMetadata that holds no count (Vertex's {"trafficType": ...}) is not a usage report
            if meta is not None and any(getattr(meta, field) is not None for field in _GEMINI_COUNTS):
                completion = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
                usage = _usage(meta.prompt_token_count or 0, completion, meta.total_token_count or 0)
    except errors.APIError as exc:
        error = str(exc)
    except Exception as exc:
        raise SdkCrash(f"{type(exc).__name__}: {exc}") from exc
    choices = {
        key: _choice("".join(c["content"]), _joined(c["reasoning"]), None, c["native"], c["calls"])
        for key, c in parts.items()
    }
    if error is not None:
        verdict = "error"
    elif choices and all(c["native_finish_reason"] is not None for c in choices.values()):
        verdict = "finished"
    else:
        verdict = "truncated"
    return SdkResult(verdict, choices, usage, error)


ORACLES = {"openai-responses": openai_responses, "anthropic": anthropic_messages, "gemini": gemini_stream}
SDK_MODULES = {"openai-responses": "openai", "anthropic": "anthropic", "gemini": "google.genai"}
# Every API's oracle, Chat Completions included (the API captures have no Chat Completions directory).
ALL_ORACLES = {"openai-chat": openai_chat, **ORACLES}
ALL_SDK_MODULES = {"openai-chat": "openai", **SDK_MODULES}
