"""Scripts: what a scripted loopback server writes, step by step.

Theory of operation: a ``Script`` is plain data, built by scenario code and
played by ``ssestate.testing.ScriptServer``.  It is the response head (status, headers)
and a list of steps: ``bytes`` are written as one transfer chunk and
flushed at once, a ``float`` is a pause in seconds, ``"abort"`` closes the
socket without ending the body (a connection that dies mid-stream), and
``"hold"`` keeps the connection open without ending the body until the
client goes away.  Keeping it data lets tests, ``ssestate serve`` and
``ssestate demo`` share every scenario, and lets a capture of a scenario
(the concatenated bytes) be fed to the parsers without any network.  A
script may also say what a correct client concludes from it (``outcome``),
so that a test can check a client against the server's own word.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, Union

__all__ = ["Script", "Step"]

Step = Union[bytes, float, Literal["abort", "hold"]]


@dataclasses.dataclass
class Script:
    """A response to play: head, then steps (see the module docstring).

    Attributes:
        status: HTTP status code.
        headers: response headers, in order.
        steps: what to write and when.
        chunked: send the body with chunked transfer encoding (one HTTP
            chunk per ``bytes`` step); False sends ``Content-Length`` (unless
            the headers set it) and writes the steps as they are.
        outcome: the ``Accumulator.outcome`` a correct client reaches on
            this response, when the script knows it.
    """

    status: int = 200
    headers: list[tuple[str, str]] = dataclasses.field(
        default_factory=lambda: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
    )
    steps: list[Step] = dataclasses.field(default_factory=list)
    chunked: bool = True
    outcome: str | None = None

    def body(self) -> bytes:
        """The bytes a client receives, pauses and aborts aside."""
        return b"".join(s for s in self.steps if isinstance(s, bytes))

    @property
    def content_type(self) -> str:
        for name, value in self.headers:
            if name.lower() == "content-type":
                return value
        return ""
