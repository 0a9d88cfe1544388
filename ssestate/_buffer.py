"""ReceiveBuffer: the bytes of an event stream that arrived and were not read yet.

Theory of operation
-------------------
The buffer is a ``bytearray`` (a subclass, so that appending a chunk is
bytearray's own C-level ``+=``) that also knows where it is in the stream.
The parser appends every chunk and, when a chunk brings a line terminator,
takes out every complete line at once with ``extract_lines``: everything
up to and including the **last** terminator.  What stays behind is one
unterminated line, at most about one chunk long.

* Taking out a prefix is ``del buf[:n]``, which CPython does by moving the
  start of the live bytes (no copy); the dead prefix is given back when a
  later append reallocates, which moves only live bytes.  Reading a stream
  in small pieces therefore stays linear.
* The scan memo ``scanned`` counts the bytes at the start known to hold no
  terminator (what stayed behind after the last extraction), so a search
  looks only at the bytes that arrived since: a long line that arrives in a
  million pieces is never scanned twice.
* The three WHATWG line endings are CRLF, LF and a lone CR.  A CR that
  ends the buffer when lines are taken out ends its line *now* (an event
  must not wait for the next chunk to learn whether an LF follows); the
  buffer remembers it (``skip_lf``) and swallows one LF that starts the
  next bytes, so CRLF split across chunks is still one terminator.
* A last line that is an ``event: `` line opening a block (it follows a
  blank line, or the caller says its block is closed) stays in the buffer
  (``held``) when the caller allows a line that long: it sets nothing
  anyone can see, and a stream that names its events then hands the parser
  whole blocks, the event line with its data line, however the chunks cut
  them.  The parser counts the line's prefix and LF (``HELD_EXTRA``) out of
  the event size limit.
* A chunk handed to ``extract_lines`` while the buffer is empty, that ends
  with a blank line (one event per chunk, the usual shape of a live
  stream), is the batch itself: it is never appended.
* One U+FEFF (byte order mark, ``EF BB BF``) at the very start of the
  stream is dropped, no other.  Until three bytes are known (or the stream
  ended) the buffer cannot tell a BOM from a line that starts with the same
  bytes, so ``start`` decides only then.

``offset`` is the stream offset of the buffer's first byte: every error
message and ``Truncated.pending`` is computed from it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HELD_EXTRA", "ReceiveBuffer"]

BOM = b"\xef\xbb\xbf"
# What a held line holds beyond the event type: "event: " and its LF.
HELD_EXTRA = 8
# How a chunk that is a batch as it came ends: LF or CRLF lines, the last blank.
_BLANK_ENDS = (b"\n\n", b"\r\n\r\n")
# A longer line is not held: the next extraction would scan it again.
_HOLD_MOST = 1024


class ReceiveBuffer(bytearray):
    """Bytes received and not yet read, with their place in the stream.

    Attributes:
        offset: stream offset of the buffer's first byte.
        scanned: bytes at the start known to hold no line terminator.
        held: the buffer starts with a complete ``event:`` line that the
            last extraction left in it (set by every extraction).
        skip_lf: the last extraction ended on a CR at the end of the
            buffer; one LF that starts the next bytes belongs to it.
        started: the byte order mark has been looked for.
    """

    __slots__ = ("held", "offset", "scanned", "skip_lf", "started")

    def __init__(self) -> None:
        super().__init__()
        self.offset = 0
        self.scanned = 0
        self.skip_lf = False
        self.started = False
        self.held = False

    def __copy__(self) -> ReceiveBuffer:
        twin = ReceiveBuffer()
        twin += self
        # Not ``held``: every extraction sets it before anyone reads it.
        twin.offset, twin.scanned, twin.skip_lf, twin.started = self.offset, self.scanned, self.skip_lf, self.started
        return twin

    def __deepcopy__(self, memo: dict[int, object]) -> ReceiveBuffer:
        return self.__copy__()  # bytes and numbers: nothing deeper to copy

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        # bytearray's own would call ReceiveBuffer(bytes), which __init__ refuses.
        # Not ``held``: every extraction sets it before anyone reads it.
        return _rebuilt, (bytes(self), self.offset, self.scanned, self.skip_lf, self.started)

    def start(self, ended: bool = False) -> None:
        """Drop a byte order mark that starts the stream, once its first three
        bytes are known or the stream ``ended``."""
        if self.started or not (len(self) >= 3 or ended or not BOM.startswith(self)):
            return
        self.started = True
        if self.startswith(BOM):
            del self[:3]
            self.offset += 3
            self.scanned = max(0, self.scanned - 3)

    def extract_lines(self, hold: int = 0, closed: bool = True, data: bytes = b"") -> bytearray | None:
        """Append ``data``, then remove and return every complete line at the
        start of the buffer, terminators included (a ``bytearray`` that ends
        in CR or LF), or None when no line is complete.  A last line of at
        most ``hold`` bytes (0 holds none) that opens a block with
        ``event: `` stays: one that follows a blank line, or the first line
        when the caller's block is ``closed``."""
        if data:
            if not self and self.started and not self.skip_lf and data.endswith(_BLANK_ENDS):
                # Whole lines into an empty buffer, the last one blank: all of
                # them come out and none stays, so the chunk is never appended.
                self.offset += len(data)
                self.held = False
                return bytearray(data)
            self += data
        if self.skip_lf and self:
            self.skip_lf = False
            if self[0] == 0x0A:
                del self[0]
                self.offset += 1
                self.scanned = max(0, self.scanned - 1)
        if not self.started:
            self.start()
        scanned = self.scanned
        end = self.rfind(b"\n", scanned) + 1
        # A CR after the last LF ends a line too (CRLF's CR comes before it).
        cr = self.rfind(b"\r", end or scanned) + 1
        if cr:
            end = cr
        held = False
        if hold and end > 1 and not cr and self[end - 2] != 0x0A:  # the last line is not blank
            start = self.rfind(b"\n", 0, end - 1) + 1
            held = (
                self.startswith(b"event: ", start)
                # A block opens: the line before is blank (the buffer always
                # starts a line, so a lone LF before it is one), or there is
                # none and the caller's block is closed.
                and (start == 1 or (closed if start == 0 else self[start - 2] == 0x0A))
                and end - start <= min(hold, _HOLD_MOST)
                and self.find(b"\r", start, end) < 0
            )
            if held:
                end = start
        self.held = held
        # A held line has its terminator: the next search looks at it again.
        if not end:
            self.scanned = 0 if held else len(self)
            return None
        lines = self[:end]
        del self[:end]
        self.offset += end
        self.scanned = 0 if held else len(self)
        self.skip_lf = lines[-1] == 0x0D and not self
        return lines


def _rebuilt(data: bytes, offset: int, scanned: int, skip_lf: bool, started: bool) -> ReceiveBuffer:
    """A pickled ``ReceiveBuffer``, loaded."""
    buf = ReceiveBuffer()
    buf += data
    buf.offset, buf.scanned, buf.skip_lf, buf.started = offset, scanned, skip_lf, started
    return buf
