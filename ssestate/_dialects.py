"""The streaming APIs ssestate reads, and telling them apart.

Theory of operation
-------------------
``READERS`` maps each dialect name of SPEC §3b to its reader.  With
``dialect="auto"`` a ``ChatStream`` starts with an ``AutoReader``, which
decides on the first payload that is a JSON object and not an error:

* a ``type`` starting ``response.`` (or ``keepalive``): the Responses API;
* a ``type`` of the Messages stream (``message_start``, ``ping``,
  ``content_block_*``, ...): Anthropic;
* ``candidates``, ``promptFeedback`` or ``usageMetadata``: Gemini;
* anything else (``choices``, even beside an ``error``): Chat Completions.

Until then, an error payload (every API's error has a non-empty ``error``
member) is read the way Chat Completions reads one, a flat ``{"type":
"error", "code": ..., "message": ...}`` (the documented Responses error,
with or without ``event: error``) the way the Responses API reads it, and
raw JSON error lines the way Gemini writes them; none needs to know the API.  Once it has
decided, the auto reader hands the rest of the batch to the reader of that
API (carrying over what it noted), and ``ChatStream`` keeps that reader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._anthropic import AnthropicReader
from ._chunks import ChunkReader
from ._gemini import GeminiReader, RawJson
from ._reader import Reader, flat_error
from ._responses import ResponsesReader
from ._state import Input
from ._util import RemoteProtocolError

__all__ = ["APIS", "DIALECTS", "READERS", "AutoReader", "detect"]

READERS: dict[str, type[Reader]] = {
    "openai-chat": ChunkReader,
    "openai-responses": ResponsesReader,
    "anthropic": AnthropicReader,
    "gemini": GeminiReader,
}
APIS = tuple(READERS)  # the four APIs, in the order the docs name them
DIALECTS = ("auto", *APIS)
_ANTHROPIC = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)


def detect(payload: dict[str, Any]) -> str | None:
    """The dialect a JSON payload belongs to, or None when it cannot say
    (an error, which every API writes alike)."""
    kind = payload.get("type")
    if type(kind) is str:
        if kind.startswith("response.") or kind == "keepalive":
            return "openai-responses"
        if kind in _ANTHROPIC:
            return "anthropic"
    if "candidates" in payload or "promptFeedback" in payload or "usageMetadata" in payload:
        return "gemini"
    if "choices" not in payload and (kind == "error" or payload.get("error")):
        return None
    return "openai-chat"


class AutoReader(Reader):
    """The reader of ``dialect="auto"`` until it has decided (see the module
    docstring).

    Attributes:
        decided: the reader of the API found, once one is.
    """

    dialect = "auto"
    learns = False  # the reader of the API found learns, once there is one

    __slots__ = ("_errors", "_raw", "decided")

    def __init__(self, strict: bool, locate: Callable[[int], int], limit: int) -> None:
        super().__init__(strict, locate, limit)
        self.decided: Reader | None = None
        # Made when first needed: most streams name their API at once.
        self._errors: ChunkReader | None = None  # reads error payloads before the API is known
        self._raw: RawJson | None = None  # reads raw JSON lines before the API is known

    def read(self, items: list[Any], out: list[Any], first: int = 0) -> Input | RemoteProtocolError | None:
        for n, item in enumerate(items, first):
            if self.decided is not None:
                return self.decided.read(items[n - first :], out, n)
            stop = Reader.read(self, [item], out, n)
            if stop is not None:
                return stop
        return None

    def _chunk(self, data: str, chunk: dict[str, Any], out: list[Any]) -> Input | None:
        # Reached only while undecided: read() hands the rest to the reader found.
        dialect = detect(chunk)
        if dialect is None:
            if not chunk.get("error"):  # {"type": "error"} without an error member: see detect
                out.append(flat_error(chunk))
                return None
            if self._errors is None:
                self._errors = ChunkReader(self.strict, self.locate, self.limit)
                self._errors.finish = self.finish
            return self._errors._chunk(data, chunk, out)
        self.decided = reader = self._become(dialect)
        return reader._chunk(data, chunk, out)

    def _become(self, dialect: str) -> Reader:
        reader = READERS[dialect](self.strict, self.locate, self.limit)
        reader.truncated = self.truncated
        reader.finish.update(self.finish)
        for name in ("response_id", "model", "created", "system_fingerprint"):
            setattr(reader, name, getattr(self, name) or getattr(self._errors, name, None))
        return reader

    def _line(self, text: str, n: int, out: list[Any]) -> Input | None:
        if self._raw is None:
            self._raw = RawJson(self.limit)
        error = self._raw.error(text)
        if error is not None:
            out.append(error)
        return None

    def read_whole(self, body: object, out: list[Any]) -> bool:
        first = body[0] if type(body) is list and body else body
        dialect = detect(first) if type(first) is dict else None
        if dialect is None:
            return False
        if type(body) is dict and body.get("object") == "response":
            dialect = "openai-responses"
        elif type(body) is dict and body.get("type") == "message":
            dialect = "anthropic"
        self.decided = reader = self._become(dialect)
        return reader.read_whole(body, out)
