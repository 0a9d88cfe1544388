"""GeminiWriter: chat events as a Gemini ``streamGenerateContent?alt=sse`` stream.

Theory of operation
-------------------
Every event Gemini writes is a whole ``GenerateContentResponse`` (``data:``
lines, CRLF, Google's ``": "`` spacing); there is no end marker, and the
answer ends when the body does.  Each chat event becomes one such payload,
with one candidate (its ``index`` always written), the model and response
id when the ``Encoder`` was given them:

* text is a part (``thought: true`` for reasoning; refusal text is plain
  text: the API has none of its own); a candidate's first payload gives its
  role, so a ``Delta`` with only a role writes an empty text part when the
  candidate is new and nothing otherwise;
* a function call is ONE part with its whole ``args`` object, so the writer
  keeps a call's fragments until the call is complete: until another call,
  text, a ``Finish`` or ``Done`` of its candidate.  Its arguments must then
  be a JSON object (``""`` is ``{}``); a call cut by the token limit
  (``Finish`` ``length``), by an error finish or by the end of the stream
  (``Truncated``) that is not one is left out, any other is refused, and so is a fragment of a call
  already written.  A ``thought_signature`` ``Continuation`` of the held
  call goes on its part; any other goes on an empty text part;
* ``Finish`` is a payload with the candidate's ``finishReason`` (and the
  held call); a ``content_filter`` finish of candidate 0 before it said
  anything is the blocked prompt (``promptFeedback.blockReason``); an error
  finish (``error``, ``insufficient_system_resource``) is written as Gemini
  writes errors, a payload whose only member is ``error``, as is a
  ``StreamError``;
* ``Usage`` is a payload with only ``usageMetadata``.

``Done`` writes the held calls and no marker; ``Done`` before anything
started writes an empty, finished candidate.  A ``Heartbeat`` is a blank
line: the API has no keep-alive, and its SDK reads every line that is not
``data:`` as JSON, which a comment is not.
"""

from __future__ import annotations

import json
from typing import Any

from ._events import Continuation, Delta, Done, Finish, Heartbeat, StreamError, ToolCallFragment, Truncated, Usage
from ._gemini import finish_reason
from ._writer import ERROR_REASONS, Call, Refused, Writer, dumps, json_text, native_or, sse, usage_object

__all__ = ["GeminiWriter"]

_FINISH_WORDS = frozenset(
    {
        "STOP",
        "MAX_TOKENS",
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "OTHER",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "MALFORMED_FUNCTION_CALL",
        "IMAGE_SAFETY",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "IMAGE_PROHIBITED_CONTENT",
        "NO_IMAGE",
        "IMAGE_RECITATION",
        "IMAGE_OTHER",
        "FINISH_REASON_UNSPECIFIED",
    }
)
_BLOCK_REASONS = frozenset(
    {"SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "IMAGE_SAFETY", "MODEL_ARMOR", "JAILBREAK"}
)
_WORDS = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"}
_BLANK = b"\r\n"


class GeminiWriter(Writer):
    """Write a Gemini ``streamGenerateContent?alt=sse`` stream (see the
    module docstring)."""

    dialect = "gemini"

    def __init__(self, model: str | None, response_id: str | None, created: int | None) -> None:
        super().__init__(model, response_id, created)
        self._seen: set[int] = set()  # candidates written
        self._held: dict[int, Call] = {}  # candidate -> the call being collected
        self._signatures: dict[int, str] = {}  # candidate -> the thought signature of its held call
        self._written: dict[int, set[int]] = {}  # candidate -> wire indexes of its calls written
        self._calls: set[int] = set()  # candidates that made a call

    # -- payloads ----------------------------------------------------------------------------------

    def _payload(self, payload: dict[str, Any]) -> bytes:
        if self.model:
            payload["modelVersion"] = self.model
        if self.response_id:
            payload["responseId"] = self.response_id
        return sse(dumps(payload, (",", ": ")), newline="\r\n")

    def _candidate(self, choice: int, parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
        self._seen.add(choice)
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate["index"] = choice
        return self._payload({"candidates": [candidate]})

    @staticmethod
    def _error(code: int, message: str, status: str | None) -> bytes:
        # Only the error member, first: that is how the SDK tells an error payload.
        error: dict[str, Any] = {"code": code, "message": message}
        if status:
            error["status"] = status
        return sse(dumps({"error": error}, (",", ": ")), newline="\r\n")

    # -- held calls -----------------------------------------------------------------------------------

    def _part(self, choice: int, strict: bool) -> list[dict[str, Any]]:
        """The part of ``choice``'s held call ([] when none, or when it is
        left out); refused when ``strict`` and its arguments are not a JSON
        object.  Changes nothing (see ``_wrote``)."""
        call = self._held.get(choice)
        if call is None:
            return []
        text = "".join(call.arguments)
        args: Any = {}
        if text:
            try:
                args = json.loads(text)
                dumps(args)  # json.loads takes NaN, which no JSON writer may write
            except (ValueError, RecursionError):
                args = None
        if type(args) is not dict:
            if not strict:
                return []
            raise Refused(
                f"tool call {call.index} of choice {choice} has arguments that are not a JSON object "
                f"({text[:80]!r}); Gemini writes a call's args as an object"
            )
        function: dict[str, Any] = {"name": "".join(call.name), "args": args}
        if call.id is not None:
            function["id"] = call.id
        part: dict[str, Any] = {"functionCall": function}
        if choice in self._signatures:
            part["thoughtSignature"] = self._signatures[choice]
        return [part]

    def _wrote(self, choice: int, parts: list[dict[str, Any]]) -> None:
        """Forget ``choice``'s held call: written as ``parts``, or left out."""
        call = self._held.pop(choice, None)
        self._signatures.pop(choice, None)
        if call is not None:
            self._written.setdefault(choice, set()).add(call.index)
            if parts:
                self._calls.add(choice)

    # -- events ---------------------------------------------------------------------------------------

    def delta(self, event: Delta) -> bytes:
        i = event.choice
        texts = []
        if event.reasoning:
            texts.append({"text": event.reasoning, "thought": True})
        if event.content:
            texts.append({"text": event.content})
        if event.refusal:
            texts.append({"text": event.refusal})
        if not texts:
            if i in self._seen:
                return b""  # a role alone: every payload of the candidate says it
            return self._candidate(i, [{"text": ""}])
        parts = self._part(i, strict=True)  # text ends a call
        self._wrote(i, parts)
        return self._candidate(i, parts + texts)

    def fragment(self, event: ToolCallFragment) -> bytes:
        i, held = event.choice, self._held.get(event.choice)
        out = b""
        if held is None or held.index != event.index:
            if event.index in self._written.get(i, ()):
                raise Refused(
                    f"tool call {event.index} of choice {i} was written whole already; Gemini writes a call as one part"
                )
            if held is not None:  # another call: the held one is complete
                parts = self._part(i, strict=True)
                self._wrote(i, parts)
                out = self._candidate(i, parts)
            held = self._held[i] = Call(event.index)
        held.take(event.id, event.name)
        if event.arguments:
            held.arguments.append(event.arguments)
        return out

    def finish(self, event: Finish) -> bytes:
        i, reason = event.choice, event.reason
        # A call the answer ended inside (the token limit, the server giving up) may be cut.
        parts = self._part(i, strict=reason != "length" and reason not in ERROR_REASONS)
        self._wrote(i, parts)
        if reason in ERROR_REASONS:
            out = self._candidate(i, parts or [{"text": ""}]) if parts or i not in self._seen else b""
            self.errored = True
            return out + self._error(500, f"the answer ended with finish reason {reason!r}", "INTERNAL")
        if i == 0 and reason == "content_filter" and not parts and i not in self._seen:
            native = event.native if event.native in _BLOCK_REASONS else "OTHER"
            self._seen.add(0)  # the reader starts choice 0 with the block: it gives no role later
            return self._payload({"promptFeedback": {"blockReason": native}})
        made_calls = i in self._calls
        word = native_or(
            event.native, reason, _FINISH_WORDS, lambda n: finish_reason(n, made_calls), _WORDS.get(reason, reason)
        )
        return self._candidate(i, parts or [{"text": ""}], word)

    def usage(self, event: Usage) -> bytes:
        return self._payload({"usageMetadata": usage_object(self.dialect, event)})

    def done(self, event: Done) -> bytes:
        written = {i: self._part(i, strict=True) for i in self._held}  # every call checked before any is written
        out = b""
        for i, parts in written.items():
            self._wrote(i, parts)
            out += self._candidate(i, parts)
        if not self._seen and not self.errored:
            out += self._candidate(0, [{"text": ""}], "STOP")  # an empty answer, finished
        return out

    def truncated(self, event: Truncated) -> bytes:
        # The stream ends here: what the held calls leave behind matters no more.
        parts = {i: self._part(i, strict=False) for i in self._held}
        return b"".join(self._candidate(i, found) for i, found in parts.items() if found)

    def heartbeat(self, event: Heartbeat) -> bytes:
        return _BLANK

    def error(self, event: StreamError) -> bytes:
        self.errored = True
        if event.status is not None:
            code = event.status
        elif event.code is not None and event.code.isdigit() and event.code.isascii():
            code = int(event.code)
        else:
            code = 500
        return self._error(code, event.message, event.type)

    def continuation(self, event: Continuation) -> bytes:
        if event.kind != "thought_signature":
            return b""  # another API's data: Gemini has no place for it
        if type(event.data) is not str or not event.data:
            raise Refused(
                f"the data of a 'thought_signature' Continuation must be a non-empty string, not {event.data!r}"
            )
        json_text(event.data, "the data of a 'thought_signature' Continuation")
        held = self._held.get(event.choice)
        if held is not None and event.index == held.index:
            self._signatures[event.choice] = event.data
            return b""
        return self._candidate(event.choice, [{"text": "", "thoughtSignature": event.data}])
