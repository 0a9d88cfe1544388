"""SPEC §6.2 for the chat layer, in every dialect: no event waits for later bytes.

At every point where an event of the body ends (a blank line), the events a
``ChatStream`` has handed out must be all it will ever make of those bytes:
ending the body there adds only what the end itself means (``Done`` for a
format without an end marker, ``Truncated`` for a body cut short), never an
event that the bytes already held.  Checked with the machine fed the whole
prefix at once and byte by byte, over generated chat streams (well formed
and damaged) and over the captured payloads of the other APIs with odd
values.
"""

from __future__ import annotations

import re
from typing import Any

from helpers import until_error
from hypothesis import given
from hypothesis import strategies as st
from test_api_readers import odd_streams

from ssestate import CLOSED, NEED_DATA, ChatStream, Done, ProtocolError, Truncated
from ssestate.testing.strategies import chat_streams, mutated_streams

_BLANK_LINE = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def handed_out(stream: ChatStream, chunks: list[bytes]) -> tuple[list[Any], bool]:
    """The events ``stream`` hands out for ``chunks``, the body not ended;
    whether it raised."""
    events: list[Any] = []
    try:
        for chunk in chunks:
            stream.receive_data(chunk)
            while (event := stream.next_event()) is not NEED_DATA:
                assert event is not CLOSED
                events.append(event)
    except ProtocolError:
        return events, True
    return events, False


bodies = st.one_of(
    chat_streams(max_choices=2).map(lambda case: ("openai-chat", case.body)),
    mutated_streams(max_choices=2).map(lambda body: ("openai-chat", body)),
    odd_streams(),
    odd_streams().map(lambda case: ("auto", case[1])),
)


@given(case=bodies, one_byte=st.booleans())
def test_no_event_waits_for_later_bytes(case: tuple[str, bytes], one_byte: bool) -> None:
    dialect, body = case
    for end in [m.end() for m in _BLANK_LINE.finditer(body)][:12]:
        prefix = body[:end]
        chunks = [prefix[i : i + 1] for i in range(len(prefix))] if one_byte else [prefix]
        now, raised = handed_out(ChatStream(dialect=dialect), chunks)
        ended, _ = until_error(ChatStream(dialect=dialect), [prefix])
        assert ended[: len(now)] == now
        if raised:
            return  # the error came with these bytes; nothing follows it
        later = [event for event in ended[len(now) :] if event is not CLOSED]
        assert all(type(event) in (Done, Truncated) for event in later), (end, later)
