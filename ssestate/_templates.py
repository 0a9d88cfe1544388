"""Templates: reading the usual chunk of a stream without parsing it whole.

Theory of operation
-------------------
Within one stream a server writes its usual chunks as the same text around
one string that changes: the text, reasoning or refusal, or a tool call's
arguments fragment (and, on api.openai.com, a random ``obfuscation``
padding string).  So after the chunk reader parses such a chunk, ``learn``
keeps the payload's text before that string (``head``) and after it
(``tail``) as a ``Template``, and ``fit`` reads a later payload made of
``head``, any string literal and ``tail`` by scanning that one literal with
the C string reader.  No object tree is built.

Why a match needs no parse: JSON text is a sequence of tokens, and when the
literal is one of the payload's own tokens, ``head + literal + tail`` is the
same sequence with that one token changed, so it parses to the same chunk
with one string changed.  Whether the literal found is that token, and the
one that becomes the text, is checked once, when the template is learnt: the
payload is parsed with a probe string in its place, and the probe must come
out as the text (the padding probe as the padding).  A literal found inside
another string only changes that string; one found where two strings meet
makes the probe text invalid; a key, or a value that a later duplicate key
overrides, leaves the text as it was: each fails the check.  Chunks with
more to read than the one string are never learnt from: ``x_groq`` or an
error member, logprobs, a finish reason, tool calls beside a text.  One
exception: a top-level member whose value changes from chunk to chunk (a
sequence number, the usage so far of vLLM and Gemini) may follow the
string.  The C scanner reads that value at its place, checked by a probe
value in the same way, and the reader says what event it gives
(``value_event``).  Read alone, the value nests one level less than in
the payload, so a value that may nest more than ``_DEPTH`` levels (it has
more brackets) is left to the parse, which refuses what is nested too
deeply to read.

A template says what to build with the string it reads (``kind``): the
usual ``Delta`` of a content text alone, a ``Delta`` whose other fields are
fixed (a role on every chunk, a reasoning member beside ``"content":
null``), or a tool call's arguments fragment.

``Templates`` holds a stream's templates, newest first, and decides when
to learn: when a usual chunk matched none.  A template that misses the next
usual chunk of its choice is let go (the envelope moves: a timestamp, a
counter), and while the templates learnt go unused, learning waits for four
times as many misses each time, up to 256: a server that changes its
envelope at every chunk costs one learning in 256 chunks.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Any, NamedTuple

from ._events import Delta, ToolCallFragment, _fast

__all__ = [
    "NO_TEMPLATES",
    "Spec",
    "Template",
    "TemplateKind",
    "Templates",
    "learn",
    "scan",
    "text_fields",
    "text_hole",
]

# The C scanner behind json.loads, called directly: (object, end) for the
# value at an index, without json.loads's argument checks and trailing
# whitespace regex (the caller checks what follows the value itself).
scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[attr-defined]
# The C scanner's string reader: (text, end) for the literal whose opening
# quote is just before the index.
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
# The C string writers behind json.dumps (str -> its JSON literal).
_literal_of: Callable[[str], str] = json.encoder.encode_basestring
_ascii_literal_of: Callable[[str], str] = json.encoder.encode_basestring_ascii
_parse = json.JSONDecoder().raw_decode
_new_delta = _fast(Delta)
_new_content = _fast(Delta, "choice", "content")
_new_arguments = _fast(ToolCallFragment, "choice", "index", "arguments")

# At most this many templates per stream (one per choice when n > 1),
# learnt from payloads of at most this many characters; learning waits up
# to _PATIENCE usual chunks.
LIMIT = 4
SIZE = 2048
_PATIENCE = 256
_PROBE = "ssestate probe"
_PROBE_PAD = "ssestate padding probe"
_PROBE_VALUE = {"ssestate probe": [1]}
_PROBE_VALUE_TEXT = json.dumps(_PROBE_VALUE)
# The most levels a varying value read by a template may nest: far below
# the C recursion limit at which the parse refuses JSON on CPython 3.12 and
# later (about 1,500 levels or more, whoever calls).  On 3.10 and 3.11 that
# limit counts the caller's frames, and the scan inside ``fit`` runs one
# frame deeper than the parse, which makes up the level the value lacks.
# A value of at most twice as many characters nests no deeper.
_DEPTH = 200
PAD = "obfuscation"  # OpenAI's random padding: a top-level string no event reads
# The members of a delta that hold text, in the order Delta reads them.
_TEXT = ("content", "reasoning_content", "reasoning", "refusal")

Fields = tuple[str, "str | None", "str | None", "str | None"]  # content, role, reasoning, refusal


class TemplateKind(enum.Enum):
    """What a template builds from the string it reads."""

    CONTENT = "content"  # Delta(choice, content=text): the text alone
    FIELDS = "fields"  # Delta(choice, *fields) with the text in field `slot`
    ARGUMENTS = "arguments"  # ToolCallFragment(choice, tool, arguments=text)


_ARGUMENTS = TemplateKind.ARGUMENTS  # a module global: reading it costs less than the class attribute


class Template(NamedTuple):
    """A usual payload with a hole for its one varying string (see the
    module docstring)."""

    head: str  # the payload up to the opening quote of the string
    tail: str  # the payload after its closing quote (after the padding, the varying value, if any)
    pad: str | None  # between the string and the padding literal, when padded
    before_value: str | None  # from the string (or the padding) to the varying member's value, if one varies
    value_event: Callable[[Any], Any] | None  # the event of that value (None: none), if it gives one
    choice: int
    kind: TemplateKind
    tool: int  # ARGUMENTS: the tool index
    fields: Fields | None  # FIELDS: the Delta's fields, the text going in `slot`
    slot: int
    empty: Delta | ToolCallFragment | None  # what a payload with an empty string gives
    note: list[str] | None  # where the reader keeps the strings it read, if it keeps them
    owner: object  # what the template reads (a choice, an item, a block)


class Spec(NamedTuple):
    """What a reader says of a usual payload it parsed, for a template of it:
    where its varying string is, what event that string makes, and what
    else varies.  ``learn`` checks all of it with a probe parse."""

    path: tuple[str | int, ...]  # the members leading to the varying string
    choice: int
    kind: TemplateKind = TemplateKind.CONTENT
    tool: int = -1
    fields: Fields | None = None
    slot: int = -1
    empty: Delta | ToolCallFragment | None = None  # what an empty string gives
    note: list[str] | None = None  # the reader's list of the strings read, to append each to
    member: str | None = None  # a top-level member whose value varies (a sequence number, the usage)
    # What the reader makes of that value (an event, or None); it must not
    # raise, since the string's event is out by then.
    value_event: Callable[[Any], Any] | None = None
    owner: object = None  # what the template reads; the choice when None


class Templates:
    """A stream's templates and its learning schedule (see the module
    docstring).

    Attributes:
        learnt: the templates, newest first.
    """

    __slots__ = ("_fresh", "_misses", "_wait", "learnt")

    def __init__(self) -> None:
        self.learnt: list[Template] = []
        self._misses = 0  # usual chunks no template read since the last learning
        self._wait = 0  # misses to wait for before learning again
        self._fresh = False  # the newest template has matched no chunk yet

    def fit(self, data: Any, out: list[Any]) -> bool:
        """Read ``data`` by the first template it matches: its event is
        appended to ``out`` and True returned.  Anything else (no template
        matches, a literal that is not valid JSON, data that is not text)
        returns False, having done nothing, and the payload is parsed."""
        for head, tail, pad, before_value, value_event, choice, kind, tool, fields, slot, empty, note, _ in self.learnt:
            try:
                if not data.startswith(head):  # AttributeError / TypeError: not text
                    continue
                value, end = _scanstring(data, len(head))  # ValueError: not a valid string
                if pad is not None:
                    if not data.startswith(pad, end):
                        return False
                    end = _scanstring(data, end + len(pad))[1]
                if before_value is not None:
                    if not data.startswith(before_value, end):
                        return False
                    at = end + len(before_value)
                    member_value, end = scan(data, at)  # StopIteration: not a JSON value
                    if end - at > 2 * _DEPTH and data.count("[", at, end) + data.count("{", at, end) > _DEPTH:
                        return False  # maybe nested too deeply for a parse
            except (AttributeError, TypeError, ValueError, StopIteration, RecursionError):
                return False
            if end + len(tail) != len(data) or not data.endswith(tail):
                return False
            if not value:
                if empty is not None:
                    out.append(empty)
            elif kind is _ARGUMENTS:
                out.append(_new_arguments(choice, tool, value))
            elif fields is None:
                out.append(_new_content(choice, value))
            else:
                text = list(fields)
                text[slot] = value
                out.append(_new_delta(choice, *text, None))
            if note is not None and value:
                note.append(value)
            if value_event is not None:
                event = value_event(member_value)
                if event is not None:
                    out.append(event)
            self._wait = 0  # a template reads chunks: learning may go on at once
            self._fresh = False
            return True
        return False

    def waiting(self) -> bool:
        """Whether learning waits: then a usual chunk counts as a miss
        without being looked at for a text (True)."""
        if self._misses < self._wait and not self._fresh:
            self._misses += 1
            return True
        return False

    def forget(self, owner: object) -> None:
        """Let ``owner``'s templates go: the reader starts what they read
        anew (a block or an item started again at its index), and the list
        they note in is no longer the one it keeps."""
        kept = [template for template in self.learnt if template.owner != owner]
        if len(kept) < len(self.learnt):
            # Still fresh only if the newest template is still there.
            self._fresh = self._fresh and bool(kept) and kept[0] is self.learnt[0]
            self.learnt = kept

    def clear(self) -> None:
        """The stream will read no more chunks: let the templates go."""
        self.learnt = []

    def missed(self, data: str, chunk: dict[str, Any], spec: Spec, value: str) -> None:
        """A usual payload that no template read was parsed (``spec`` says
        where its varying string ``value`` is): let the newest template go
        if it missed the first payload of its owner, and learn this one's
        when learning is due."""
        self._misses += 1
        if self._misses <= self._wait and not self._fresh:
            return
        owner = spec.choice if spec.owner is None else spec.owner
        if self._fresh and self.learnt[0].owner == owner:
            # The newest template missed the first usual payload of its owner
            # after it was learnt: the envelope moves, and it is let go.
            del self.learnt[0]
            self._fresh = False
        if self._misses <= self._wait:
            return
        if not len(value) < len(data) <= SIZE:  # a large payload
            return
        self._misses = 0
        self._wait = min(4 * self._wait + 1, _PATIENCE)
        template = learn(data, chunk, spec, value)
        # Two templates that differ only in where they note and whose they
        # are (the last two fields) read the same payloads: one is enough.
        if template is not None and all(template[:-2] != held[:-2] for held in self.learnt):
            self.learnt.insert(0, template)
            del self.learnt[LIMIT:]
            self._fresh = True


# The templates of a reader that learns none (the auto reader's, which hands
# every chunk on): only ``missed`` adds a template, and such a reader never
# calls it, so one empty instance serves them all.
NO_TEMPLATES = Templates()


def learn(data: str, chunk: dict[str, Any], spec: Spec, value: str) -> Template | None:
    """The template of ``data``, a payload whose varying string is ``value``
    at ``spec.path`` (see the module docstring), or None.  ``chunk`` is its
    parse."""
    if value == _PROBE:
        return None
    at, size = _literal(data, value)
    if at < 0:
        return None
    head = data[: at + 1]
    tail = data[at + size :]
    probe_text = head + _PROBE + '"'
    pad_value = chunk.get(PAD)
    pad = None
    if type(pad_value) is str and pad_value != _PROBE_PAD:
        b, pad_size = _literal(tail, pad_value)
        if b >= 0:
            pad = tail[: b + 1]
            tail = tail[b + pad_size :]
            probe_text += pad + _PROBE_PAD + '"'
    before_value = None
    if spec.member is not None:
        found = _value_in(tail, spec.member, chunk.get(spec.member))
        if found is None:
            return None
        before_value, tail = tail[: found[0]], tail[found[1] :]
        probe_text += before_value + _PROBE_VALUE_TEXT
    probe_text += tail
    try:
        probe, end = _parse(probe_text)
        place: Any = probe
        for step in spec.path:
            place = place[step]
        if end != len(probe_text) or place != _PROBE:
            return None
        if pad is not None and probe[PAD] != _PROBE_PAD:
            return None
        if spec.member is not None and probe[spec.member] != _PROBE_VALUE:
            return None
    except (ValueError, RecursionError, LookupError, TypeError):
        return None
    owner = spec.choice if spec.owner is None else spec.owner
    return Template(
        head,
        tail,
        pad,
        before_value,
        spec.value_event if before_value is not None else None,
        spec.choice,
        spec.kind,
        spec.tool,
        spec.fields,
        spec.slot,
        spec.empty,
        spec.note,
        owner,
    )


def _value_in(tail: str, member: str, value: object) -> tuple[int, int] | None:
    """Where ``value``, the value of the top-level member ``member``, is
    written in ``tail`` after the last ``"member":``: (start, end), or None."""
    for key in (f'"{member}":', f'"{member}": '):
        at = tail.rfind(key)
        if at < 0:
            continue
        start = at + len(key)
        try:
            found, end = scan(tail, start)
        except (StopIteration, ValueError, RecursionError):
            continue  # not a value there (a space after the colon, for one): the other spelling may be
        if type(found) is type(value) and found == value:
            return start, end
    return None


def text_fields(delta: dict[str, Any]) -> Fields:
    """A delta's content, role, reasoning and refusal as ``Delta`` holds them:
    empty strings and other types count as absent (content "", the others
    None); reasoning is ``reasoning_content``, else ``reasoning``."""
    content = delta.get("content")
    if type(content) is not str:
        content = ""
    role = delta.get("role")
    if type(role) is not str or not role:
        role = None
    reasoning = delta.get("reasoning_content")
    if type(reasoning) is not str or not reasoning:
        reasoning = delta.get("reasoning")
        if type(reasoning) is not str or not reasoning:
            reasoning = None
    refusal = delta.get("refusal")
    if type(refusal) is not str or not refusal:
        refusal = None
    return content, role, reasoning, refusal


def text_hole(choice: object) -> tuple[int, str, str] | None:
    """``(index, member, text)`` when ``choice``, the only one of its chunk,
    has an index and a delta with exactly one non-empty text member, no tool
    calls and no finish: the text is all a template of the chunk would read.
    Else None."""
    if type(choice) is not dict or choice.get("finish_reason"):
        return None
    i = choice.get("index")
    delta = choice.get("delta")
    if type(i) is not int or type(delta) is not dict or delta.get("tool_calls"):
        return None
    found = None
    for member in _TEXT:
        text = delta.get(member)
        if type(text) is str and text:
            if found is not None:
                return None
            found = (i, member, text)
    return found


def _literal(text: str, value: str) -> tuple[int, int]:
    """Where the last string literal of ``value`` in ``text`` starts, written
    as JSON with or without escapes of non-ASCII characters, and its length;
    (-1, 0) when neither is there."""
    for literal in dict.fromkeys((_literal_of(value), _ascii_literal_of(value))):
        at = text.rfind(literal)
        if at >= 0:
            return at, len(literal)
    return -1, 0
