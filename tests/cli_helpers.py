"""What the command-line tests share: running ``python -m ssestate`` as a
user does (a subprocess, a pseudo-terminal), a running ``ssestate serve``
with the lines it printed, and running ``ssestate.cli.main`` in-process."""

from __future__ import annotations

import io
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import pytest

from ssestate import Accumulator, ChatStream, Sentinel
from ssestate.cli import main
from ssestate.testing import Script

ANSI = re.compile(r"\x1b\[")
TIMEOUT = 60  # seconds a command may take before the test gives up on it


def env_for(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "OPENAI_API_KEY")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


def run(*args: str, stdin: bytes | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "ssestate", *args],
        input=stdin,
        capture_output=True,
        env=env_for(**env),
        timeout=TIMEOUT,
        check=False,
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    )


class Output(Protocol):
    """What a command printed: a subprocess's or an in-process run's."""

    returncode: int
    stdout: str
    stderr: str


def no_traceback(proc: Output) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout, proc.stdout


class Captured:
    """What ``ssestate.cli.main`` returned and wrote, run in-process."""

    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.returncode = code
        self.stdout = stdout
        self.stderr = stderr


class _Terminal(io.TextIOWrapper):
    """A text stream like sys.stdout (it can be reconfigured), kept in memory;
    ``tty`` makes it claim to be a terminal."""

    def __init__(self, tty: bool = False) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8")
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def text(self) -> str:
        self.flush()
        buffer = self.buffer
        assert isinstance(buffer, io.BytesIO)
        return buffer.getvalue().decode("utf-8")


def call(
    monkeypatch: pytest.MonkeyPatch, *args: str, stdin: bytes | None = None, tty: bool = False, **env: str
) -> Captured:
    """Run ``main(args)`` in this process (so that coverage sees it), with
    stdout and stderr captured (on a pretend terminal with ``tty``) and,
    when given, ``stdin``."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):  # only the keys a test gives
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out, err = _Terminal(tty), _Terminal(tty)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse: --help, --version, bad usage
        code = int(exc.code or 0)
    return Captured(code, out.text(), err.text())


def run_on_tty(*args: str, **env: str) -> str:
    """Run with stdout and stderr on a pseudo-terminal; return what it showed."""
    pty = pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssestate", *args], stdout=follower, stderr=follower, env=env_for(**env)
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(TIMEOUT)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


class Served:
    """A running ``ssestate serve`` and the lines it has printed."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ssestate", "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env_for(),
            text=True,
            encoding="utf-8",
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        first = self.next_line()
        match = re.search(r"listening on (http://\S+:(\d+)/v1)", first)
        assert match, first
        self.url, self.port = match.group(1), int(match.group(2))
        self.banner = [first, self.next_line(), self.next_line()]

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_line(self, timeout: float = 30) -> str:
        return self.lines.get(timeout=timeout)

    def wait_for_line(self, pattern: str, timeout: float = 30) -> str:
        while True:
            line = self.next_line(timeout)
            if re.search(pattern, line):
                return line

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(TIMEOUT)
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read()


@contextmanager
def serving(*args: str) -> Iterator[Served]:
    """``ssestate serve ARGS`` while the block runs; it must stop cleanly."""
    server = Served(*args)
    try:
        yield server
    finally:
        code, err = server.stop()
        assert code == 0
        assert err == ""


def accumulate(script: Script) -> Accumulator:
    stream = ChatStream(script.status, script.content_type)
    stream.receive_data(script.body())
    stream.receive_data(b"")
    acc = Accumulator()
    while not isinstance(event := stream.next_event(), Sentinel):
        acc.feed(event)
    return acc
