"""ssestate: a sans-IO parser for Server-Sent Events and OpenAI-style
chat-completion streams.

Every public name is re-exported here from the private modules; import from
``ssestate`` only.  Importing it loads nothing outside the standard library.
"""

from ._accumulate import Accumulator, Choice, Outcome, ToolArgumentsError, ToolCall
from ._chat import ChatStream
from ._encode import DONE_BYTES, encode, encode_chunk
from ._encoders import Encoder
from ._events import (
    ChatEvent,
    Continuation,
    Delta,
    Done,
    Finish,
    Heartbeat,
    ServerSentEvent,
    StreamError,
    ToolCallFragment,
    Truncated,
    Usage,
)
from ._framing import DEFAULT_MAX_EVENT_SIZE, EventStreamParser, FramingEvent
from ._pacer import Pacer
from ._retry import RetryPolicy, StreamTimeout
from ._state import ChatState, ParserState
from ._stats import StreamStats
from ._util import CLOSED, NEED_DATA, LocalProtocolError, ProtocolError, RemoteProtocolError, Sentinel

__version__ = "0.1.0"

__all__ = (
    "CLOSED",
    "DEFAULT_MAX_EVENT_SIZE",
    "DONE_BYTES",
    "NEED_DATA",
    "Accumulator",
    "ChatEvent",
    "ChatState",
    "ChatStream",
    "Choice",
    "Continuation",
    "Delta",
    "Done",
    "Encoder",
    "EventStreamParser",
    "Finish",
    "FramingEvent",
    "Heartbeat",
    "LocalProtocolError",
    "Outcome",
    "Pacer",
    "ParserState",
    "ProtocolError",
    "RemoteProtocolError",
    "RetryPolicy",
    "Sentinel",
    "ServerSentEvent",
    "StreamError",
    "StreamStats",
    "StreamTimeout",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallFragment",
    "Truncated",
    "Usage",
    "encode",
    "encode_chunk",
)
