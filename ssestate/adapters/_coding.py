"""Content codings the adapters undo themselves.

Every request asks for ``Accept-Encoding: identity``, and nearly every
server answers so.  One that compresses anyway must not have its answer
fed to ``ChatStream`` as compressed bytes: the events would be lost and the
stream would seem cut inside an event.  httpx decodes the content itself;
``http.client`` and h11 do not, so the stdlib and trio adapters pass each
piece of the body through an ``Inflater`` when the response names a
coding.  gzip and deflate (with a zlib header or without, as servers write
it both ways) are read; any other coding is refused with a
``RemoteProtocolError`` before a byte of the body is fed.
"""

from __future__ import annotations

import zlib

from .._util import RemoteProtocolError

__all__ = ["Inflater", "inflater_for"]

_GZIP = 16 + zlib.MAX_WBITS  # a gzip header and trailer
_ZLIB = zlib.MAX_WBITS  # a zlib header: what "deflate" is meant to be
_RAW = -zlib.MAX_WBITS  # bare deflate: what some servers send as "deflate"


def inflater_for(content_encoding: str | None) -> Inflater | None:
    """The ``Inflater`` for a response's ``Content-Encoding``, or None when
    the body needs none.

    Raises:
        RemoteProtocolError: a coding the adapters do not read.
    """
    coding = (content_encoding or "").strip().lower()
    if coding in ("", "identity"):
        return None
    if coding not in ("gzip", "x-gzip", "deflate"):
        raise RemoteProtocolError(
            f"the body is sent with Content-Encoding: {content_encoding}, which ssestate does not decode "
            "(the request asked for identity)"
        )
    return Inflater(coding)


class Inflater:
    """Undoes one response's gzip or deflate coding, a piece at a time."""

    __slots__ = ("_coding", "_started", "_zlib")

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._zlib = zlib.decompressobj(_ZLIB if coding == "deflate" else _GZIP)
        self._started = False

    def decode(self, data: bytes) -> bytes:
        """The content bytes that ``data`` completes (often none at first:
        a gzip header carries no content).

        Raises:
            RemoteProtocolError: the bytes are not of the coding named.
        """
        try:
            if not self._started and self._coding == "deflate":
                self._started = True
                try:
                    return self._zlib.decompress(data)
                except zlib.error:
                    self._zlib = zlib.decompressobj(_RAW)
            return self._zlib.decompress(data)
        except zlib.error as exc:
            raise RemoteProtocolError(f"the body is not valid {self._coding} ({exc})") from None

    def end(self) -> bytes:
        """The body ended: what the decoder still held (``b""`` when called
        again)."""
        try:
            return self._zlib.flush()
        except zlib.error as exc:  # pragma: no cover - flush raises only on a broken stream, caught by decode
            raise RemoteProtocolError(f"the body is not valid {self._coding} ({exc})") from None
