"""Every API capture read by the vendor's official SDK (``sdk_oracles``),
compared with the capture's ``expected``.

Where the SDK reads the bytes as the capture says, this is a second,
independent witness that ``expected`` is what those bytes mean: the text,
reasoning, refusal, tool calls (compared as JSON values, since two SDKs hand
out only parsed arguments), the server's finish word and the usage must be
equal, and the SDK's verdict (error / never finished / finished) must match
the capture's outcome.  An SDK that hands back no message (openai-python
after an error or without ``response.completed``) is held to its verdict
alone.

Where the SDK is known to get the capture wrong, the case is marked
``xfail(strict=True)`` with the failure and where it comes from, so the run
fails the day the SDK is fixed; ``test_known_failure_still_shows_its_symptom``
then pins the exact symptom, so a different failure cannot pass for the known
one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sdk_oracles import ORACLES, SDK_MODULES, SdkCrash, SdkResult, arguments_value

APIS = Path(__file__).parent / "captures" / "apis"
NAMES = sorted(f"{p.parent.name}/{p.stem}" for p in APIS.glob("*/*.sse"))

# What the SDK's verdict must be for each outcome of SPEC §4.
VERDICT = {
    "error": "error",
    "truncated": "truncated",
    "in-progress": "truncated",
    "length": "finished",
    "filtered": "finished",
    "complete": "finished",
}

INCOMPLETE = (
    "openai-python ResponseStream.get_final_response() raises RuntimeError(\"Didn't receive a "
    '`response.completed` event.") on a response that ends with response.incomplete, so a cut by '
    "max_output_tokens or the content filter reads as a stream that never finished "
    "(src/openai/lib/streaming/responses/_responses.py; openai-python PR #3538 open)"
)

# name -> (what the comparison test raises, the SDK's known failure)
KNOWN_FAILURES: dict[str, tuple[type[BaseException], str]] = {
    "openai-responses/max-output-tokens": (AssertionError, INCOMPLETE),
    "openai-responses/content-filter": (AssertionError, INCOMPLETE),
    "anthropic/gateway-no-event-lines": (
        SdkCrash,
        "anthropic-sdk-python Stream.__stream__ skips every SSE event that has no event: line "
        "(`if sse.event is None: continue`, src/anthropic/_streaming.py), so a gateway's data-only stream "
        "yields nothing and MessageStream.get_final_message() fails its assertion that a message snapshot "
        "exists",
    ),
    "anthropic/max-tokens-mid-tool": (
        AssertionError,
        "anthropic-sdk-python parses tool input with jiter's partial_mode=True "
        "(src/anthropic/lib/streaming/_messages.py, accumulate_event), which drops a string cut by "
        'max_tokens: the tool_use block\'s input keeps "path" and silently loses "content" instead of '
        "exposing the raw, unparseable arguments (OTHER-APIS.md §5.11)",
    ),
    "gemini/data-without-space": (
        SdkCrash,
        "google-genai's _iter_response_stream strips only 'data: ' with its space, so 'data:{...}' is "
        "buffered as a raw JSON line and json.loads fails with UnknownApiResponseError "
        "(google/genai/_api_client.py; googleapis/python-genai PR #2584, still failing in 3.6.1)",
    ),
}


def load(name: str) -> tuple[bytes, dict[str, Any]]:
    path = APIS / name
    side = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    return path.with_suffix(".sse").read_bytes(), side


def read_with_sdk(name: str) -> tuple[SdkResult, dict[str, Any]]:
    body, side = load(name)
    pytest.importorskip(SDK_MODULES[side["dialect"]])
    return ORACLES[side["dialect"]](body, side["status"], side["content_type"]), side


def as_the_sdk_reports(choices: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``expected`` choices in the oracle's shape: no role, tool arguments as
    JSON values when they are JSON."""
    return {
        key: {
            "content": c["content"],
            "reasoning": c["reasoning"],
            "refusal": c["refusal"],
            "native_finish_reason": c["native_finish_reason"],
            "tool_calls": [
                {"id": t["id"], "name": t["name"], "arguments": arguments_value(t["arguments"])}
                for t in c["tool_calls"]
            ],
        }
        for key, c in choices.items()
    }


def _case(name: str) -> Any:
    if name in KNOWN_FAILURES:
        raises, reason = KNOWN_FAILURES[name]
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, raises=raises, reason=reason))
    return name


@pytest.mark.parametrize("name", [_case(n) for n in NAMES])
def test_sdk_reads_the_capture_as_expected(name: str) -> None:
    result, side = read_with_sdk(name)
    expected = side["expected"]
    assert result.verdict == VERDICT[expected["outcome"]], result.error
    if result.choices is not None:
        assert result.choices == as_the_sdk_reports(expected["choices"])
        assert result.usage == expected["usage"]


@pytest.mark.parametrize("dialect", sorted(ORACLES))
def test_every_sdk_hands_back_messages_to_compare(dialect: str) -> None:
    """The comparison above is not held to verdicts alone: each SDK returns a
    message for most of its captures."""
    names = [n for n in NAMES if n.startswith(f"{dialect}/") and n not in KNOWN_FAILURES]
    compared = [n for n in names if read_with_sdk(n)[0].choices is not None]
    assert len(compared) >= len(names) // 2, compared


def _incomplete(result: Callable[[], SdkResult]) -> None:
    got = result()
    assert (got.verdict, got.choices, got.error) == ("truncated", None, "Didn't receive a `response.completed` event.")


def _no_snapshot(result: Callable[[], SdkResult]) -> None:
    with pytest.raises(SdkCrash, match=r"^AssertionError"):
        result()


def _cut_string_dropped(result: Callable[[], SdkResult]) -> None:
    got = result()
    assert got.choices is not None
    assert got.choices["0"]["tool_calls"][0]["arguments"] == {"path": "/etc/hosts.d/10-lab.conf"}


def _data_without_space(result: Callable[[], SdkResult]) -> None:
    with pytest.raises(
        SdkCrash, match=r"^UnknownApiResponseError: Failed to parse response as JSON\. Raw response: data:\{"
    ):
        result()


SYMPTOMS: dict[str, Callable[[Callable[[], SdkResult]], None]] = {
    "openai-responses/max-output-tokens": _incomplete,
    "openai-responses/content-filter": _incomplete,
    "anthropic/gateway-no-event-lines": _no_snapshot,
    "anthropic/max-tokens-mid-tool": _cut_string_dropped,
    "gemini/data-without-space": _data_without_space,
}


def test_every_known_failure_has_its_symptom() -> None:
    assert set(SYMPTOMS) == set(KNOWN_FAILURES)
    assert set(KNOWN_FAILURES) <= set(NAMES)


@pytest.mark.parametrize("name", sorted(SYMPTOMS))
def test_known_failure_still_shows_its_symptom(name: str) -> None:
    body, side = load(name)
    pytest.importorskip(SDK_MODULES[side["dialect"]])
    oracle = ORACLES[side["dialect"]]
    SYMPTOMS[name](lambda: oracle(body, side["status"], side["content_type"]))


@pytest.mark.parametrize("name", [n for n in NAMES if n not in KNOWN_FAILURES])
def test_chatstream_agrees_with_the_sdk(name: str) -> None:
    """The differential: ChatStream and Accumulator against the vendor's SDK
    on the same bytes (where the SDK is right; its known failures are pinned
    above, and there ChatStream reads what ``expected`` says)."""
    from ssestate import Accumulator, ChatStream

    result, side = read_with_sdk(name)
    body, _ = load(name)
    acc = Accumulator()
    stream = ChatStream(side["status"], side["content_type"], dialect=side["dialect"])
    for event in stream.feed(body) + stream.feed(b""):
        acc.feed(event)
    assert VERDICT[acc.outcome] == result.verdict
    if result.choices is not None:
        ours = {
            str(i): {
                "content": c.content,
                "reasoning": c.reasoning,
                "refusal": c.refusal,
                "native_finish_reason": c.native_finish_reason,
                "tool_calls": [
                    {"id": t.id, "name": t.name, "arguments": arguments_value(t.arguments)} for t in c.tool_calls
                ],
            }
            for i, c in acc.choices.items()
        }
        assert ours == result.choices
        usage = acc.usage
        assert result.usage == (
            None
            if usage is None
            else {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.total_tokens,
            }
        )
