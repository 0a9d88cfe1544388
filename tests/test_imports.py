"""Import hygiene and the public namespace.

``import ssestate`` (and ``import ssestate.adapters``, the package the
adapter modules live in) must load nothing outside the standard library:
checked in a fresh interpreter, against ``sys.stdlib_module_names``.  Every
name SPEC §1-§5 makes public must be importable from ``ssestate`` itself.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ssestate

ROOT = Path(__file__).resolve().parent.parent

# Runs in a fresh interpreter.  Modules loaded before the import (site, .pth
# hooks of the environment) are not ssestate's doing, so only the modules
# the import adds are judged.
PROBE = """
import importlib, importlib.util, json, sys
before = set(sys.modules)
targets = ["ssestate", *sys.argv[1:]]
for name in targets:
    importlib.import_module(name)
for name in ("ssestate.adapters", "ssestate.adapters.sync"):
    if importlib.util.find_spec(name) is not None:
        importlib.import_module(name)
        targets.append(name)
added = sorted(set(sys.modules) - before)
foreign = [m for m in added if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "ssestate"]
print(json.dumps({"targets": targets, "added": added, "foreign": foreign}))
"""


def probe(*extra: str) -> dict[str, list[str]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, list[str]] = json.loads(result.stdout)
    return report


def test_importing_loads_only_the_standard_library() -> None:
    report = probe()
    assert "ssestate._framing" in report["added"]  # the probe really imported it
    assert report["foreign"] == [], f"importing {report['targets']} loaded {report['foreign']}"
    # The core never imports the command line (it imports the core, not the reverse).
    assert [m for m in report["added"] if m.startswith("ssestate.cli")] == []


def test_importing_loads_no_part_of_the_testing_kit() -> None:
    added = probe()["added"]
    assert "ssestate.testing" not in added
    assert [m for m in added if m.startswith("ssestate.testing.")] == []


def test_the_test_server_and_the_command_line_are_stdlib_only() -> None:
    # ``ssestate serve`` must work without the testing extra: only the
    # strategies (hypothesis) and the pytest plugin need it.
    report = probe("ssestate.testing", "ssestate.cli")
    assert "ssestate.testing._server" in report["added"]
    assert "ssestate.testing.strategies" not in report["added"]
    assert report["foreign"] == [], f"importing {report['targets']} loaded {report['foreign']}"


def test_the_command_line_uses_public_names_only() -> None:
    # The CLI and the testing kit import the core through ``ssestate``'s
    # public names, never a private module of the core.
    import ast

    core = {"_accumulate", "_chat", "_encode", "_events", "_framing", "_large", "_retry", "_util", "_pacer", "_stats"}
    for package in ("cli", "testing"):
        for path in sorted((ROOT / "ssestate" / package).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 2:
                    assert node.module is None or node.module.split(".")[0] not in core, f"{path.name}: {node.module}"


def test_the_probe_notices_a_foreign_module() -> None:
    assert "pytest" in probe("pytest")["foreign"]


# SPEC §1-§5, name by name.
SPEC_NAMES = [
    # §1
    "NEED_DATA",
    "CLOSED",
    "ProtocolError",
    "RemoteProtocolError",
    "LocalProtocolError",
    # §2
    "EventStreamParser",
    "ServerSentEvent",
    # §3
    "ChatStream",
    "Delta",
    "ToolCallFragment",
    "Finish",
    "Usage",
    "Done",
    "Heartbeat",
    "Truncated",
    "StreamError",
    # §4
    "Accumulator",
    # §5
    "encode",
]


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_spec_name_is_public(name: str) -> None:
    assert hasattr(ssestate, name), f"ssestate.{name} is missing"
    assert name in ssestate.__all__


def test_every_name_in_all_exists() -> None:
    missing = [name for name in ssestate.__all__ if not hasattr(ssestate, name)]
    assert missing == []
    assert len(set(ssestate.__all__)) == len(ssestate.__all__)


def test_version() -> None:
    assert isinstance(ssestate.__version__, str)
    assert ssestate.__version__.count(".") >= 2


# SPEC §2-§3: field names and order, since outside code may build events
# positionally.
EVENT_FIELDS = {
    "ServerSentEvent": ["event", "data", "id", "retry"],
    "Heartbeat": ["comment"],
    "Truncated": ["reason", "pending"],
    "Delta": ["choice", "content", "role", "reasoning", "refusal", "logprobs"],
    "ToolCallFragment": ["choice", "index", "id", "name", "arguments"],
    "Finish": ["choice", "reason", "native"],
    "Usage": ["prompt_tokens", "completion_tokens", "total_tokens", "raw"],
    "Done": ["sentinel"],
    "StreamError": ["status", "code", "message", "type", "body"],
}


@pytest.mark.parametrize(("name", "fields"), EVENT_FIELDS.items(), ids=list(EVENT_FIELDS))
def test_event_fields_in_spec_order(name: str, fields: list[str]) -> None:
    cls = getattr(ssestate, name)
    assert [f.name for f in dataclasses.fields(cls)] == fields
    params = cls.__dataclass_params__
    assert params.frozen
    assert params.eq
    assert "__slots__" in cls.__dict__
