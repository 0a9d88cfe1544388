"""Reading one large chat chunk from its bytes, without holding its text whole.

Theory of operation
-------------------
A ``data`` payload is normally decoded whole and handed to the C JSON
scanner.  For a payload of tens of KiB that costs memory: CPython's UTF-8
decoder sizes its output at the widest character seen so far times the
number of *input bytes* (so one emoji makes it four bytes per byte), the
decoded text then lives beside the strings parsed out of it, and the bytes
are still held.  Nearly all of such a payload is one or two string values
(the content, a tool call's arguments), so ``read_large`` reads those
from the bytes and decodes only the rest the usual way:

1. ``_long_literals`` has the C string scanner read the payload's Latin-1
   decoding (one byte a character, so offsets are byte offsets): from
   outside a string, each quote opens one, and the scanner both checks it
   (escapes and control characters are ASCII) and finds where it ends.
2. In a copy of the payload, the *skeleton*, each literal longer than
   ``_LONG`` bytes is replaced by a numbered marker.  The skeleton (a few
   hundred bytes) is decoded and scanned, and every marker must turn up as
   a value.
3. Only then is anything consumed: each long literal is decoded about
   ``_STEP`` bytes at a time, cut only between characters and between
   escapes (``_cut``), the pieces appended to one string that CPython
   grows in place, and the bytes read are deleted from the front of the
   buffer, which gives its memory back as it shrinks.  The string takes
   its marker's place.

The result equals ``json.loads`` of the payload decoded with replacement:
cutting before a byte that does not continue a UTF-8 sequence changes no
replacement, and no escape (nor a surrogate pair of escapes) is cut.  When
anything is unusual (a short literal holds the escape ``\\u0000`` and
could be mistaken for a marker; a literal is not a valid JSON string; the
skeleton is not one JSON object; a marker is missing, as a key or as the
value of a duplicate key; no literal is long) ``read_large`` returns None
with the buffer untouched, and the caller decodes the payload whole.

Peak memory is then the buffer (shrinking as it is read) plus the string
being built plus one piece: about one copy of the large value (step 1
holds a one-byte-a-character copy of the payload, before any of it).  Two
exceptions: CPython widening a string it grows in place (the first emoji
after a long run of narrower text) copies what was built so far once; and
text so dense in escapes that no piece can be cut is decoded in one go,
which for such text (mostly ``\\uXXXX``) yields far fewer characters
than bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]  # the C scanner's string reader
from typing import Any, cast

__all__ = ["read_large"]

# A marker's text starts with a NUL, which JSON text can spell only as this
# escape: a payload without it cannot hold a string that looks like a marker.
_NUL = b"\\u0000"
_LONG = 4096  # literals longer than this are read from the bytes
_STEP = 4096  # bytes of a long literal decoded at a time


def read_large(raw: bytearray, scan: Callable[[str, int], tuple[Any, int]]) -> dict[str, Any] | None:
    """The JSON object in ``raw`` (a whole ``data`` payload, UTF-8), read
    with its long strings decoded from the bytes; None when it must be
    decoded the usual way (``raw`` is then untouched).  ``raw`` is consumed
    otherwise.  ``scan`` is the JSON scanner for the skeleton."""
    spans = _long_literals(raw)
    if not spans:
        return None
    parts: list[bytes | bytearray] = []
    at = 0
    for k, (a, b, _) in enumerate(spans):
        parts.append(raw[at:a])
        parts.append(b'"\\u0000ssestate:%d"' % k)
        at = b
    parts.append(raw[at:])
    if any(_NUL in part for part in parts[::2]):
        return None
    skeleton = b"".join(parts).decode("utf-8", "replace")
    try:
        chunk, end = scan(skeleton, 0)
    except (StopIteration, ValueError, RecursionError):
        return None
    if end != len(skeleton) or type(chunk) is not dict:
        return None
    places = _places(chunk, len(spans))
    if places is None:
        return None
    gone = 0  # bytes deleted from the front of raw so far
    for (a, b, value), (holder, key) in zip(spans, places, strict=True):
        if value is None:
            value = _decode(raw, a + 1 - gone, b - 1 - gone)
        else:
            del raw[: b - 1 - gone]
        holder[key] = value
        gone = b - 1  # deleted up to the literal's closing quote
    raw.clear()
    return chunk


def _long_literals(raw: bytearray) -> list[tuple[int, int, str | None]] | None:
    """The spans of the string literals in ``raw`` longer than ``_LONG``
    (with the value when it is ASCII), or None when a literal is not a
    valid JSON string.  The C string scanner reads the payload's Latin-1
    decoding (a copy at one byte a character, whose offsets are the byte
    offsets): escapes and control characters are ASCII, and every other
    byte is a character it accepts, so it checks each literal and finds its
    end.  Scanning from outside a string, a quote opens one; the loop is
    over literals, not bytes."""
    text = raw.decode("latin-1")
    find = text.find
    spans = []
    at = 0
    while (a := find('"', at)) >= 0:
        try:
            value, at = scanstring(text, a + 1)
        except ValueError:
            return None
        if at - a > _LONG:
            # An ASCII value came from ASCII bytes (any other byte stays a
            # character from U+0080 up), whose Latin-1 and UTF-8 decodings
            # agree: it is the value, and needs no second reading.
            spans.append((a, at, value if value.isascii() else None))
    return spans


def _places(chunk: dict[str, Any], count: int) -> list[tuple[Any, Any]] | None:
    """Where each marker sits, by its number: (container, key or index)
    pairs; None unless every one of the ``count`` markers is a value.  (The
    skeleton spells each marker once, so none can be found twice; one can
    be missing, as a key or as the value of a duplicate key.)"""
    places: list[tuple[Any, Any] | None] = [None] * count
    found = 0
    todo: list[Any] = [chunk]
    while todo:
        node = todo.pop()
        pairs = node.items() if type(node) is dict else enumerate(node)
        for key, value in pairs:
            kind = type(value)
            if kind is str:
                if value[:10] == "\x00ssestate:":
                    places[int(value[10:])] = (node, key)
                    found += 1
            elif kind is dict or kind is list:
                todo.append(value)
    if found != count:
        return None
    return cast("list[tuple[Any, Any]]", places)  # every place is set: found == count


def _decode(raw: bytearray, start: int, stop: int) -> str:
    """The JSON string whose escaped UTF-8 text is ``raw[start:stop]``
    (valid: see ``_long_literals``), decoded in pieces (see ``_cut``); each
    piece is deleted from ``raw`` once read, with all bytes before it."""
    text = ""
    while start < stop:
        cut = _cut(raw, start, stop)
        piece = raw[start:cut].decode("utf-8", "replace")
        if "\\" in piece:
            piece = scanstring(piece + '"', 0)[0]
        text += piece  # grown in place: this local is its only reference
        del raw[:cut]
        stop -= cut
        start = 0
    return text


def _cut(raw: bytearray, start: int, stop: int) -> int:
    """Where the piece that begins at ``start`` may end: about ``_STEP``
    bytes on, before a byte that starts a character (not a UTF-8
    continuation byte), with no backslash in the six bytes before it (so no
    escape, and no surrogate pair of escapes, is cut).  Text too dense in
    escapes for that gives one piece to ``stop``; it is then mostly ASCII
    escapes, which decode to far fewer characters than bytes."""
    cut = start + _STEP
    if cut >= stop:
        return stop
    while cut > start and 0x80 <= raw[cut] < 0xC0:
        cut -= 1
    while cut > start and (j := raw.rfind(b"\\", max(start, cut - 6), cut)) >= 0:
        cut = j
    return cut if cut > start else stop


# CPython 3.11 and later append to a string in place (when nothing else
# holds it) only once the interpreter has specialized the ``+=`` in
# _decode, which takes it a few runs, and never while a trace function
# (a debugger, coverage) is set; otherwise every piece copies the string
# built so far.  A few runs on a tiny literal at import make even the first
# large payload of a process grow its string in place.
for _ in range(16):
    _decode(bytearray(b"a" * (_STEP + 1)), 0, _STEP + 1)
