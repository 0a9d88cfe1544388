"""BlockReader: complete lines of an event stream, read into events.

Theory of operation
-------------------
``EventStreamParser`` takes complete lines out of its buffer a batch at a
time and hands each batch here.  ``BlockReader`` keeps what the WHATWG
algorithm keeps between lines: the block still open (a field line was read
and its blank line has not come: its data lines, event type, ``retry``, the
id it set, where it began and the bytes it keeps) and the last-event-ID
buffer.

* CRLF and lone CR become LF first (skipped when the batch holds no CR):
  CR and LF never occur inside a UTF-8 sequence, so this changes no
  character.  A batch of one-line ``data: `` events that all end in CRLF
  (Gemini's) is cut as it is, without that copy.
* **The usual batches** are whole blocks of one shape, read by C-level cuts
  instead of a loop over lines.  Small chunks mostly complete one event at
  a time: a batch of one ``data: `` line (after one ``event: `` line, in a
  stream that names its events) and a blank line is read on its own.
  Larger ones hold several: one-line ``data: `` events (``_plain``:
  cut where a blank line is followed by ``data: ``, every piece is one
  event's data exactly when no piece holds another LF), or ``event: `` and
  ``data: `` lines (``_typed``, the Responses API and Anthropic).  Each
  piece is decoded alone, so a piece without emoji stays a narrow string.
  A batch usually ends inside a block (a chunk ends in the middle of a
  line); what follows the last blank line goes to the line loop, and the
  next batch first ends that block.  The commonest such block of a typed
  stream, an ``event:`` line alone, never comes here: the parser leaves it
  in its buffer (see ``_buffer.py``), and the next batch begins with it.
* Everything else goes through the line loop (``_lines``), which follows
  the WHATWG steps line by line on bytes: a blank line dispatches, ``data``
  lines are appended to the data buffer, a comment is a ``Heartbeat`` at
  once, and ``event``, ``id`` and ``retry`` are read as the spec says.  Data
  is decoded (UTF-8 with replacement) when its event is dispatched.
* A batch whose first line is huge, for a layer that reads data only, is
  read event by event from its bytes (``_huge``): a huge event's data is
  handed out undecoded, the batch itself trimmed in place when the event is
  alone in it.

``max_event_size`` bounds what an unfinished event keeps: the data buffer
(each line's value and its LF), the event type and the id set in the open
block, plus the unterminated line, whatever it is.  Each line is checked as
it was just before its terminator arrived, when it was the unterminated
line: the kept bytes plus the line must fit.  Any later moment holds no
more than that, so the error comes at the same place under every chunking.
A batch that fits the limit whole takes the usual paths unchecked.

Offsets are not tracked per line, which would cost every line: the few
things that need the offset of a line inside a batch (where an open block
began, where an oversized event began) recompute it from the batch's bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from ._events import Heartbeat, ServerSentEvent, _fast

__all__ = ["HUGE", "BlockReader", "UnknownLine", "is_unknown_field", "lines_with_offsets"]

# A layer that reads data only gets the data of an event at least this large
# as its bytes, undecoded (a bytearray), so that it can read it without
# holding its text whole (see _large.py).
HUGE = 32 * 1024
_TERMINATOR = re.compile(rb"\r\n|\r|\n")
# A line ending with a CR: CRLF, or a lone CR (both become one LF).
_CR = re.compile(rb"\r\n?")
# One block of a typed stream: an event line, a data line, a blank line.  A
# block starts the batch or follows a blank line, so a search tries no place
# inside a line and the split stays linear.
_TYPED_BLOCK = re.compile(rb"(?:\A|(?<=\n\n))event: ([^\n]*)\ndata: ([^\n]*)\n\n")
_FIELDS = (b"data", b"event", b"id", b"retry")
_new_event = _fast(ServerSentEvent)
_new_heartbeat = _fast(Heartbeat)


class UnknownLine(NamedTuple):
    """A line whose field name the parser does not know, as ``feed_data``
    hands it on to a layer that asked for such lines: the WHATWG algorithm
    ignores them, but a peer may write unframed text inside a stream (Gemini
    writes an error that way).  ``text`` is the whole line, decoded."""

    text: str


class BlockReader:
    """The WHATWG interpretation of complete lines (see the module docstring).

    Attributes:
        limit: ``max_event_size``.
        unknown_lines: hand on lines of unknown fields (data mode only).
        last_event_id: the id buffer as it stood when the latest blank line
            ended a block.
        retry: the latest valid ``retry`` value seen, else None.
        open: a field line was read since the last blank line.
        start: where the open block began (a stream offset).
        kept: the bytes the open block keeps (data, type, id).
        data, type, type_size, id, id_size, block_retry: the open block's
            data lines, event type, the id buffer, the sizes the limit
            counts, and the ``retry`` its lines set.
    """

    __slots__ = (
        "block_retry",
        "data",
        "id",
        "id_size",
        "kept",
        "last_event_id",
        "limit",
        "open",
        "retry",
        "start",
        "type",
        "type_size",
        "unknown_lines",
    )

    def __init__(self, limit: int, unknown_lines: bool) -> None:
        self.limit = limit
        self.unknown_lines = unknown_lines
        self.last_event_id = ""
        self.retry: int | None = None
        self.data: list[bytes | bytearray] = []
        self.type = ""
        self.type_size = 0
        self.id = ""
        self.id_size = 0
        self.block_retry: int | None = None
        self.open = False
        self.start = 0
        self.kept = 0

    def read(self, lines: bytearray, base: int, out: list[Any], data_only: bool) -> int | None:
        """Interpret ``lines``, a batch of complete lines that starts at
        stream offset ``base``, appending what it dispatches to ``out``
        (``data_only``: see ``EventStreamParser.feed_data``).  Returns the
        offset where an event that outgrew the limit starts, having read
        the lines before it; None when every event fits."""
        size = len(lines)
        # The usual batches, tried before anything else is set up: they open
        # no block of their own and fit the limit whole, so they are read
        # unchecked.  When the cut of a whole batch fails, the general path
        # below does not try it again.
        fits = not self.open and size <= self.limit
        whole = False
        if fits and size < HUGE and 13 not in lines:
            # Whole blocks of one shape from first byte to last.
            whole = lines.endswith(b"\n\n")
            if whole:
                first = lines.find(b"\n")
                if lines.startswith(b"data: "):
                    if first == size - 2:
                        # Small chunks: one data line and a blank line, one event.
                        text = lines[6:-2].decode("utf-8", "replace")
                        self.last_event_id = ident = self.id
                        out.append(text if data_only else _new_event("message", text, ident, None))
                        return None
                    if self._plain(lines, out, data_only):
                        return None
                elif lines.startswith(b"event: "):
                    if lines.find(b"\n", first + 1) == size - 2 and lines.startswith(b"data: ", first + 1):
                        # The same in a stream that names its events: the
                        # event line (held in the buffer until its data line
                        # came), the data line and a blank line.
                        name = lines[7:first]
                        text = lines[first + 7 : -2].decode("utf-8", "replace")
                        self.last_event_id = ident = self.id
                        if data_only and name != b"error":
                            out.append(text)
                        else:
                            out.append(_new_event(name.decode("utf-8", "replace") or "message", text, ident, None))
                        return None
                    if self._typed(lines, out, data_only):
                        return None
        elif (
            fits
            and lines.endswith(b"\r\n\r\n")  # CRLF lines (Gemini's): cut without turning them into LF first
            and lines.startswith(b"data: ")
            and self._plain(lines, out, data_only, crlf=True)
        ):
            return None
        if 13 not in lines:
            lf = lines
        elif len(lines) > 256:  # one regex pass costs more per call than a replace, less per byte than two
            lf = bytearray(_CR.sub(b"\n", lines))
        else:
            lf = lines.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if (
            data_only
            and lf is lines
            and HUGE < len(lf) <= self.limit  # read unchecked: the whole batch fits the limit
            and not self.open
            and lf.find(b"\n", 0, HUGE) < 0  # the first line is huge
            and self._huge(lines, out)
        ):
            return None
        batch = _Batch(lines, base, lf)
        read = 0  # bytes of lf read so far
        if self.open:
            # The block an earlier batch left open ends at the first blank
            # line: its lines go to the line loop, and the batch goes on
            # from there.
            end = 1 if lf[:1] == b"\n" else lf.find(b"\n\n") + 2
            if end == 1 and lf[:1] != b"\n":
                end = len(lf)  # no blank line: all of it belongs to the block
            too_large = self._read_lines(batch, 0, lf if end == len(lf) else lf[:end], out, data_only)
            if too_large is not None or end == len(lf):
                return too_large
            read = end
        if len(lines) <= self.limit:
            # The usual batches: whole blocks of one shape, read unchecked
            # (the whole batch fits the limit).
            end = len(lf) if lf.endswith(b"\n\n") else lf.rfind(b"\n\n") + 2
            if end > read + 1 and not (whole and end == len(lf)):
                head = lf if read == 0 and end == len(lf) else lf[read:end]
                if (head.startswith(b"data: ") and self._plain(head, out, data_only)) or (
                    head.startswith(b"event: ") and self._typed(head, out, data_only)
                ):
                    if end == len(lf):
                        return None
                    read = end
        # What is left starts at a block boundary (the lines after the last
        # blank line are a block still open): blank lines there do nothing,
        # and a run of them is skipped at C speed.
        rest = lf[read:] if read else lf
        if rest[:1] == b"\n":
            stripped = rest.lstrip(b"\n")
            read += len(rest) - len(stripped)
            rest = stripped
        return self._read_lines(batch, read, rest, out, data_only)

    def _read_lines(self, batch: _Batch, read: int, part: bytearray, out: list[Any], data_only: bool) -> int | None:
        """Read ``part`` (complete lines of the batch after the first
        ``read`` bytes of its ``lf``) with the line loop; the start of an event that outgrew the
        limit, if one did."""
        too_large = self._lines(part.split(b"\n"), out, data_only)
        if self.open and self.start < 0:
            # The block opened here, at line -1 - start of part.
            self.start = batch.offset(read, part, -1 - self.start)
        if too_large is None:
            return None
        return self.start if self.open else batch.offset(read, part, too_large)

    def _plain(self, lf: bytearray, out: list[Any], data_only: bool, crlf: bool = False) -> bool:
        """The usual batch: one-line ``data: `` events only, each followed by
        a blank line, every line ending in LF (in CRLF with ``crlf``; without
        it, the batch holds no CR).  Cut where a blank line is followed by
        ``data: ``, every piece is one event's data exactly when no piece
        holds another line terminator.  Returns False, having read nothing,
        for any other batch."""
        if crlf:
            pieces = lf[6:-4].split(b"\r\n\r\ndata: ")
            joined = b"".join(pieces)
            cut = 10 in joined or 13 in joined
        else:
            pieces = lf[6:-2].split(b"\n\ndata: ")
            cut = 10 in b"".join(pieces)
        if cut or (data_only and len(lf) >= HUGE and _has_huge(pieces)):
            return False
        try:  # valid UTF-8, the usual case, is decoded fastest strictly
            texts = list(map(bytearray.decode, pieces))
        except UnicodeDecodeError:
            # Each piece with replacement, as the whole batch would be: a cut
            # before an ASCII byte changes no replacement.
            texts = [piece.decode("utf-8", "replace") for piece in pieces]
        ident = self.last_event_id = self.id
        if data_only:
            out += texts
        else:
            for text in texts:  # a loop: for the few events of a chunk, a comprehension costs more
                out.append(_new_event("message", text, ident, None))
        return True

    def _typed(self, lf: bytearray, out: list[Any], data_only: bool) -> bool:
        """The usual batch of streams that name their events (the Responses
        API, Anthropic): blocks of exactly ``event: X``, ``data: Y`` and a
        blank line.  One C-level split by the block pattern leaves, between
        and after the blocks it found, only empty strings exactly when the
        batch is nothing but such blocks.  Returns False, having read
        nothing, for any other batch."""
        parts = _TYPED_BLOCK.split(lf)
        if any(parts[::3]):
            return False  # something else lies before, between or after the blocks found
        names, datas = parts[1::3], parts[2::3]
        if data_only and (b"error" in names or (len(lf) >= HUGE and _has_huge(datas))):
            return False  # an error event, or a huge payload: the line loop hands them out as they must be
        try:  # valid UTF-8, the usual case, is decoded fastest strictly
            texts = list(map(bytes.decode, datas))
        except UnicodeDecodeError:
            texts = [data.decode("utf-8", "replace") for data in datas]
        ident = self.last_event_id = self.id
        if data_only:
            out += texts
        else:
            kinds = [name.decode("utf-8", "replace") or "message" for name in names]
            out += [_new_event(kind, text, ident, None) for kind, text in zip(kinds, texts, strict=True)]
        return True

    def _huge(self, lf: bytearray, out: list[Any]) -> bool:
        """A batch for ``feed_data`` whose first line is huge (and that holds
        no CR): when it is nothing but one-line ``data: `` events, each
        followed by a blank line, hand out their data without decoding or
        splitting the batch
        (which would mean several copies of each, at up to four bytes a
        character): the bytes of a huge one, the text of the others.  A lone
        huge event is the batch itself, trimmed in place.  Returns False,
        having handed out nothing, for any other batch."""
        size = len(lf)
        items: list[str | bytearray] = []
        start = 0
        with memoryview(lf) as view:
            while start < size:
                end = lf.find(b"\n", start)  # found: a batch ends with a terminator
                if not lf.startswith(b"data: ", start) or end + 1 >= size or lf[end + 1] != 0x0A:
                    return False
                if end - start - 6 < HUGE:  # the data, without its "data: "
                    items.append(str(view[start + 6 : end], "utf-8", "replace"))
                elif start == 0 and end + 2 == size:
                    items.append(lf)  # alone: the batch becomes its data (below)
                else:
                    items.append(bytearray(view[start + 6 : end]))
                start = end + 2
        if items[0] is lf:
            del lf[-2:]
            del lf[:6]
        out += items
        self.last_event_id = self.id
        return True

    def _lines(self, lines: list[bytearray], out: list[Any], data_only: bool) -> int | None:
        """Interpret complete lines (the last item of ``lines`` is the empty
        text after the final LF), the WHATWG way.

        The block state lives in locals for the loop and is written back
        once at the end.  A block that opens here records the index of its
        first line as ``-1 - index`` in ``start``, for ``_read_lines`` to
        turn into an offset.  Returns the index of a line that made an
        event too large, having read the lines before it, else None.
        """
        limit = self.limit
        unknown = data_only and self.unknown_lines
        data = self.data
        is_open = self.open
        etype = self.type
        type_size = self.type_size
        ident = self.id
        id_size = self.id_size
        retry = self.block_retry
        kept = self.kept
        last_id = self.last_event_id
        start = self.start
        lines.pop()
        for k, line in enumerate(lines):
            if kept + len(line) > limit:
                # This line, before its terminator came, made the event too
                # large: what was dispatched before it stands.
                self.open = is_open
                self.start = start
                self.last_event_id = last_id
                return k
            if not line:
                # A blank line: "dispatch the event".
                if is_open:
                    is_open = False
                    last_id = ident
                    if data:
                        out.append(_dispatched(data, etype, ident, retry, data_only))
                        data = []
                    etype = ""
                    type_size = id_size = kept = 0
                    retry = None
            elif line[:5] == b"data:":
                value = line[6:] if line[5:6] == b" " else line[5:]
                data.append(value)
                kept += len(value) + 1
                if not is_open:
                    is_open, start = True, -1 - k
            elif line[0] == 0x3A:  # ":" a comment
                text = line[2:] if line[1:2] == b" " else line[1:]
                out.append(_new_heartbeat(text.decode("utf-8", "replace")))
            else:
                if not is_open:
                    is_open, start = True, -1 - k
                name, colon, value = line.partition(b":")
                if colon and value[:1] == b" ":
                    value = value[1:]
                if name == b"data":  # "data" with no colon: an empty value
                    data.append(value)
                    kept += len(value) + 1
                elif name == b"event":
                    etype = value.decode("utf-8", "replace")
                    kept += len(value) - type_size
                    type_size = len(value)
                elif name == b"id":
                    if 0 not in value:
                        ident = value.decode("utf-8", "replace")
                        kept += len(value) - id_size
                        id_size = len(value)
                elif name == b"retry":
                    if value.isdigit():
                        retry = self._retry_value(value, retry)
                elif unknown:
                    # Any other field name is ignored; feed_data hands the
                    # line on when asked (see UnknownLine).
                    out.append(UnknownLine(line.decode("utf-8", "replace")))
        self.data = data
        self.open = is_open
        self.type = etype
        self.type_size = type_size
        self.id = ident
        self.id_size = id_size
        self.block_retry = retry
        self.kept = kept
        self.last_event_id = last_id
        self.start = start
        return None

    def _retry_value(self, digits: bytes | bytearray, current: int | None) -> int | None:
        """Honour a ``retry`` value, unless int() refuses it as too long
        (past ``sys.get_int_max_str_digits()``): no one can wait that long."""
        try:
            self.retry = value = int(digits)
        except ValueError:
            return current
        return value


def _dispatched(
    data: list[bytes | bytearray], etype: str, ident: str, retry: int | None, data_only: bool
) -> ServerSentEvent | str | bytearray:
    """What a blank line dispatches for a block with data: the event, or for
    ``feed_data`` its data, unless its type is "error" (a huge one as its
    bytes, for the layer above to read without holding its text whole)."""
    raw = data[0] if len(data) == 1 else b"\n".join(data)
    if data_only and etype != "error":
        return bytearray(raw) if len(raw) >= HUGE else raw.decode("utf-8", "replace")
    return _new_event(etype or "message", raw.decode("utf-8", "replace"), ident, retry)


def _has_huge(pieces: list[bytes] | list[bytearray]) -> bool:
    """Whether a piece is the data of a huge event."""
    return max(map(len, pieces)) >= HUGE


def lines_with_offsets(raw: bytes | bytearray, base: int) -> Iterable[tuple[int, bytes | bytearray]]:
    """The lines of ``raw`` (complete lines, any terminators), each with the
    stream offset where it starts (``raw`` starts at ``base``)."""
    at = 0
    for m in _TERMINATOR.finditer(raw):
        yield base + at, raw[at : m.start()]
        at = m.end()


def _line_start(raw: bytes | bytearray, base: int, k: int) -> int:
    """The stream offset where line ``k`` of ``raw`` starts."""
    if k == 0:
        return base
    if 13 not in raw:
        # Every line ends in LF: the start of line k follows the k-th LF.
        end = 0
        for _ in range(k):
            end = raw.index(10, end) + 1
        return base + end
    for n, (start, _) in enumerate(lines_with_offsets(raw, base)):
        if n == k:
            return start
    raise AssertionError(f"no line {k} in a batch of complete lines")  # pragma: no cover - callers pass a line


class _Batch(NamedTuple):
    """A batch of complete lines as read: its bytes, the stream offset
    where they start, and the same lines with LF only (``raw`` itself when
    it holds no CR)."""

    raw: bytearray
    base: int
    lf: bytearray

    def offset(self, read: int, part: bytearray, k: int) -> int:
        """The stream offset of line ``k`` of ``part``, the part of ``lf``
        after its first ``read`` bytes."""
        if self.lf is self.raw:  # no CR: the offsets of lf are those of the stream
            return _line_start(part, self.base + read, k)
        return _line_start(self.raw, self.base, self.lf.count(10, 0, read) + k)


def is_unknown_field(line: bytes | bytearray) -> bool:
    """Whether a line (not blank, not a comment) names no known field."""
    return line.partition(b":")[0] not in _FIELDS
