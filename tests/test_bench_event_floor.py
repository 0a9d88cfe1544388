"""The event floor of the framing benchmark does the work it claims, and no less.

The floor stands for what no framer can skip: it must decode every event's
data and hand each one out as a ``ServerSentEvent`` once the chunk that
completes it has arrived.  These tests check that ``completed_events`` cuts
out exactly the events' data bytes and gives each one to the chunk that
brings its last byte, and that the floor's loop decodes every JSON payload.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import _contenders as c
from benchmarks import fixtures as fx
from ssestate import NEED_DATA, EventStreamParser, ServerSentEvent

FIXTURES = [fx.chat_stream(n_chunks=120), fx.n2_stream(n_chunks=60), fx.tool_call_stream(n_items=8)]
SHORT = fx.chat_stream(n_chunks=12)


def completed_by_parser(chunks: list[bytes]) -> list[list[str]]:
    """For each chunk, the data of the events the parser hands out after it."""
    parser = EventStreamParser()
    groups = []
    for piece in chunks:
        parser.receive_data(piece)
        group = []
        while (event := parser.next_event()) is not NEED_DATA:
            assert type(event) is ServerSentEvent
            group.append(event.data)
        groups.append(group)
    return groups


@pytest.mark.parametrize("label", list(fx.CHUNK_SIZES))
@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_groups_are_what_the_parser_completes_per_chunk(fixture: fx.Fixture, label: str) -> None:
    chunks = fx.chunk(fixture.body, fx.CHUNK_SIZES[label])
    groups = c.completed_events(chunks)
    assert len(groups) == len(chunks)
    decoded = [[data.decode() for data in group] for group in groups]
    assert decoded == completed_by_parser(chunks)
    assert [data for group in decoded for data in group] == list(fixture.payloads)


@given(st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=40))
def test_each_event_goes_to_the_chunk_that_brings_its_last_byte(sizes: list[int]) -> None:
    body = SHORT.body
    chunks, at = [], 0
    for size in sizes:
        chunks.append(body[at : at + size])
        at += size
    chunks.append(body[at:])  # the rest, maybe empty
    groups = c.completed_events(chunks)
    received = b""
    done = 0
    for piece, group in zip(chunks, groups, strict=True):
        received += piece
        ends = received.count(b"\n\n")  # blank lines in: events complete
        assert done + len(group) == ends
        done = ends
    assert b"".join(b"data: " + data + b"\n\n" for group in groups for data in group) == body


def test_floor_decodes_every_json_payload() -> None:
    fixture = fx.chat_stream(n_chunks=50)
    for label in fx.CHUNK_SIZES:
        floor = c.event_floor(fx.chunk(fixture.body, fx.CHUNK_SIZES[label]))
        assert floor() == len(fixture.json_payloads) == 53


@pytest.mark.parametrize(
    "body",
    [
        b"data: a\ndata: b\n\n",  # two data lines in one event
        b": ping\n\ndata: {}\n\n",  # a comment block
        b"event: x\ndata: {}\n\n",  # another field
        b"data: {}\n\ndata: {}\n",  # ends without its blank line
    ],
)
def test_floor_refuses_a_body_it_cannot_stand_for(body: bytes) -> None:
    with pytest.raises(ValueError, match="event floor"):
        c.completed_events([body])


def test_floor_events_are_the_parsers_own() -> None:
    source = c._GivenEvents()
    source.receive([json.dumps({"a": "流"}, ensure_ascii=False).encode()])
    event = source.next_event()
    assert event == ServerSentEvent("message", '{"a": "流"}', "", None)
    assert type(event) is ServerSentEvent
    assert source.next_event() is NEED_DATA


def test_floors_script_measures_every_contender(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import floors

    ratios = floors.measure(rounds=1, n_chunks=20)
    assert set(ratios) == {"ssestate", "event floor", "split floor"}
    assert all(r > 0 for r in ratios.values())
    floors.main(["--rounds", "1"])
    assert "event floor" in capsys.readouterr().out
