"""Script: the plain data a scripted server plays."""

from __future__ import annotations

from ssestate.testing import Script


def test_body_joins_the_bytes_steps_only() -> None:
    script = Script(steps=[b"data: a\n", 0.5, b"\n", "abort"])
    assert script.body() == b"data: a\n\n"


def test_content_type_is_found_by_name_whatever_its_case() -> None:
    script = Script(headers=[("X-Other", "1"), ("content-TYPE", "application/json")])
    assert script.content_type == "application/json"
    assert Script().content_type == "text/event-stream"
    assert Script(headers=[("X-Other", "1")]).content_type == ""
