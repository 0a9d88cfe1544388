"""The events the machines hand out.

Theory of operation: every event is a frozen, slotted dataclass compared by
value, with its fields in the order SPEC §2/§3 lists them, so outside code
may build them positionally.  Fields that may hold a mapping or a list
(``Usage.raw``, ``StreamError.body``, ``Delta.logprobs``) are left out of the
hash, so every event stays hashable whatever the server sent.

The machines build thousands of events a second, and a frozen dataclass's
generated ``__init__`` pays one ``object.__setattr__`` call per field.  So
the machines build events through a private twin of each class
(``_fast(cls)``): a subclass that adds no slots and keeps ``object``'s own
attribute setting, whose ``__init__`` stores the fields directly and then
turns the instance into the public class (``__class__`` assignment, which a
subclass of identical layout passes at once).  What comes out is a genuine,
frozen instance of the public class; only its construction is cheaper: a
third of the time of the generated ``__init__``, which for the commonest
events would otherwise cost a tenth of parsing their JSON.  Don't subclass
the events: equality compares exact classes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = [
    "ChatEvent",
    "Continuation",
    "Delta",
    "Done",
    "Finish",
    "Heartbeat",
    "ServerSentEvent",
    "StreamError",
    "ToolCallFragment",
    "Truncated",
    "Usage",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event-stream event (WHATWG "dispatch the event").

    Attributes:
        event: the event type; "message" when the block set none.
        data: the data buffer, lines joined with LF.
        id: the last-event-ID buffer at dispatch; "" when never set.
        retry: the reconnection time a ``retry`` field set in this block.
    """

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Heartbeat:
    """A comment line (``: ping``): the text after the colon."""

    comment: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Truncated:
    """The stream ended before it was complete.

    ``reason`` is "partial-event" (``pending`` bytes of an unfinished event
    were lost) or "eof-before-done" (a choice never finished, no ``[DONE]``).
    """

    reason: str
    pending: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Delta:
    """Text for one choice: role, content, reasoning or refusal."""

    choice: int
    content: str = ""
    role: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    logprobs: object | None = dataclasses.field(default=None, hash=False)


@dataclasses.dataclass(frozen=True, slots=True)
class ToolCallFragment:
    """One ``tool_calls[]`` entry of one chunk; ``arguments`` is raw text."""

    choice: int
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Finish:
    """A choice's ``finish_reason`` became (or changed to) ``reason``.

    ``native`` is the server's own word when ``reason`` was mapped onto
    OpenAI's vocabulary from another API's, else None.
    """

    choice: int
    reason: str
    native: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Usage:
    """Token counts; ``raw`` is the ``usage`` object as the server sent it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    raw: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)


@dataclasses.dataclass(frozen=True, slots=True)
class Done:
    """The stream is complete: ``[DONE]`` (sentinel=True) or a clean end."""

    sentinel: bool = True


@dataclasses.dataclass(frozen=True, slots=True)
class StreamError:
    """An error the server reported, before or inside the stream."""

    status: int | None = None
    code: str | None = None
    message: str = ""
    type: str | None = None
    body: object = dataclasses.field(default=None, hash=False)


@dataclasses.dataclass(frozen=True, slots=True)
class Continuation:
    """Opaque data of a choice that its API wants back in the next request,
    so that the assembled message can be sent again: an Anthropic thinking
    block with its signature, redacted thinking, a Gemini thought signature,
    a Responses reasoning item with its encrypted content.

    ``kind`` names it ("thinking", "redacted_thinking", "thought_signature",
    "reasoning_item"), ``data`` is what the wire sent (kept whole), and
    ``index`` is the block, output item or tool call it belongs to.
    """

    choice: int
    kind: str
    data: object = dataclasses.field(default=None, hash=False)
    index: int | None = None


ChatEvent = Delta | ToolCallFragment | Finish | Usage | Done | Heartbeat | Truncated | StreamError | Continuation

_T = TypeVar("_T")


def _fast(cls: type[_T], *given: str) -> Callable[..., _T]:
    """Return a positional constructor for ``cls`` that skips the frozen
    ``__setattr__`` round trips (see the module docstring).  With field
    names ``given``, it takes only those, and the other fields are None."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    params = list(given) or names
    body = "".join(f"    self.{n} = {n if n in params else None}\n" for n in names)
    src = f"def __init__(self, {', '.join(params)}):\n{body}    self.__class__ = cls\n"
    namespace: dict[str, Any] = {"cls": cls}
    exec(src, namespace)  # noqa: S102 - fixed source built from field names
    # object's __setattr__ and __delattr__ both (they share one type slot),
    # so that the stores are plain slot writes, not the frozen class's refusal.
    members = {
        "__slots__": (),
        "__init__": namespace["__init__"],
        "__setattr__": object.__setattr__,
        "__delattr__": object.__delattr__,
    }
    return type("_fast_" + cls.__name__, (cls,), members)
