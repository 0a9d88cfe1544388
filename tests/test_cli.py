"""The command line as a whole, driven as a user drives it (``python -m
ssestate ...`` in a subprocess or on a pseudo-terminal) and in-process
through ``ssestate.cli.main``: help, usage errors, colour, and the things a
user can cause (a closed pipe, Ctrl-C) ending in one line and an exit
status, never a traceback.  Each command has its own file beside this one."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import ANSI, TIMEOUT, call, env_for, no_traceback, run, run_on_tty

from ssestate.testing import scenario, serve

pytestmark = pytest.mark.network


# -- help and usage ------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["serve"], ["demo"], ["inspect"], ["chat"]])
def test_help_on_every_command_has_an_example(command: list[str]) -> None:
    proc = run(*command, "--help")
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"usage: ssestate {' '.join(command)}".rstrip() + " ")
    assert re.search(r"^examples?:$", proc.stdout, re.MULTILINE)
    assert "  ssestate " in proc.stdout
    assert proc.stderr == ""


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0
    assert re.fullmatch(r"ssestate \d+\.\d+\.\d+\n", proc.stdout)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["inspect"], "the following arguments are required: FILE"),
        (["inspect", "x", "--chunk", "0"], "--chunk: must be at least 1, got '0'"),
        (["inspect", "x", "--status", "42"], "--status: an HTTP status is 100-599, got '42'"),
        (["serve", "--scenario", "nope"], "unknown scenario 'nope'; choose one of: text, cjk"),
        (["serve", "--speed", "0"], "--speed: must be a positive number, got '0'"),
        (["serve", "--port", "70000"], "--port: a port is 0-65535, got '70000'"),
        (["demo", "--speed", "fast"], "--speed: not a number: 'fast'"),
        (["chat", "hello"], "the following arguments are required: --base-url, --model"),
        (
            ["chat", "hi", "--base-url", "u", "--model", "m", "--retries", "-1"],
            "--retries: must be 0 or more, got '-1'",
        ),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    proc = run(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr
    assert proc.stderr.startswith("ssestate")
    assert "--help" in proc.stderr


def test_unreadable_input_is_exit_2(tmp_path: Path) -> None:
    missing = run("inspect", str(tmp_path / "missing.txt"))
    assert missing.returncode == 2
    assert (
        missing.stderr
        == f"ssestate inspect: error: cannot read {tmp_path / 'missing.txt'}: No such file or directory\n"
    )
    directory = run("inspect", str(tmp_path))
    assert directory.returncode == 2
    assert directory.stderr.startswith(f"ssestate inspect: error: cannot read {tmp_path}: ")
    assert directory.stderr.count("\n") == 1
    no_traceback(directory)


def test_help_and_usage_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert call(monkeypatch, "--version").returncode == 0
    helped = call(monkeypatch, "serve", "--help")
    assert helped.returncode == 0
    assert re.search(r"^  text +plain answer in bursts", helped.stdout, re.M)  # the scenario list, as written
    usage = call(monkeypatch, "inspect", "x", "--chunk", "0")
    assert usage.returncode == 2
    assert "--chunk: must be at least 1, got '0'" in usage.stderr
    for args, message in [
        (["serve", "--speed", "fast"], "--speed: not a number: 'fast'"),
        (["serve", "--speed", "-2"], "--speed: must be a positive number, got '-2'"),
        (["serve", "--port", "70000"], "--port: a port is 0-65535, got '70000'"),
        (["inspect", "x", "--status", "42"], "--status: an HTTP status is 100-599, got '42'"),
        (["chat", "p", "--base-url", "u", "--model", "m", "--retries", "-1"], "--retries: must be 0 or more, got '-1'"),
        (["serve", "--port", "x"], "--port: not a port number: 'x'"),
        (["inspect", "x", "--status", "x"], "--status: not an HTTP status: 'x'"),
        (["inspect", "x", "--chunk", "x"], "--chunk: not an integer: 'x'"),
        (["chat", "p", "--base-url", "u", "--model", "m", "--retries", "x"], "--retries: not an integer: 'x'"),
    ]:
        assert message in call(monkeypatch, *args).stderr


# -- colour ------------------------------------------------------------------------------


def _capture(tmp_path: Path, name: str) -> tuple[Path, list[str]]:
    script = scenario(name, 0)
    path = tmp_path / f"{name}.txt"
    path.write_bytes(script.body())
    return path, ["--status", str(script.status), "--content-type", script.content_type]


def test_colour_only_on_a_terminal_and_never_with_no_color(tmp_path: Path) -> None:
    path, head = _capture(tmp_path, "length")
    assert ANSI.search(run_on_tty("inspect", str(path), *head))
    assert not ANSI.search(run_on_tty("inspect", str(path), *head, NO_COLOR="1"))
    assert not ANSI.search(run_on_tty("inspect", str(path), *head, TERM="dumb"))
    piped = run("inspect", str(path), *head)
    assert "outcome: length" in piped.stdout
    assert not ANSI.search(piped.stdout + piped.stderr)


# -- what a user can cause ---------------------------------------------------------------------


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    path = tmp_path / "long.sse"  # a timeline longer than a pipe holds
    path.write_bytes(b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n' * 5000)
    reader = subprocess.Popen(
        [sys.executable, "-m", "ssestate", "inspect", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(),
    )
    assert reader.stdout is not None
    reader.stdout.read(10)
    reader.stdout.close()  # as `| head -c 10` does
    _, err = reader.communicate(timeout=TIMEOUT)
    assert reader.returncode == 1
    assert err == b""


def test_ctrl_c_anywhere_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from ssestate.cli import inspect

    def interrupted(*args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(inspect, "analyse", interrupted)
    result = call(monkeypatch, "inspect", "-", stdin=b"data: x\n\n")
    assert (result.returncode, result.stderr) == (130, "ssestate inspect: interrupted\n")


def test_colour_in_process_on_a_pretend_terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path, head = _capture(tmp_path, "length")
    coloured = call(monkeypatch, "inspect", str(path), *head, tty=True)
    assert "\x1b[1mtests" not in coloured.stdout  # the label is the path
    assert "\x1b[1m\x1b[0m" not in coloured.stdout  # empty text is never painted
    assert re.search(r"\x1b\[1moutcome: \x1b\[0m\x1b\[31;1mlength\x1b\[0m", coloured.stdout)
    plain = call(monkeypatch, "inspect", str(path), *head, tty=True, NO_COLOR="1")
    assert not ANSI.search(plain.stdout)
    with serve(speed=float("inf")) as server:
        tools = call(monkeypatch, "chat", "--base-url", server.base_url, "--model", "tools", "w?", tty=True)
        demo = call(monkeypatch, "demo", "--scenario", "reasoning", "--speed", "50", "--rate", "5000", tty=True)
    assert tools.stderr.startswith("\x1b[36m⚙ get_weather(\x1b[0m")
    assert "\x1b[2m" in demo.stdout  # the reasoning, dim
    assert demo.stdout.count("\x1b[0m") >= demo.stdout.count("\x1b[2m")


def test_a_closed_pipe_in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from ssestate.cli import main

    with open(tmp_path / "sink", "w") as sink:

        class Closed(io.StringIO):
            def write(self, text: str) -> int:
                raise BrokenPipeError

            def fileno(self) -> int:
                return sink.fileno()

        monkeypatch.setattr(sys, "stdout", Closed())
        assert main(["inspect", str(_capture(tmp_path, "text")[0])]) == 1


def test_python_dash_m_ssestate_in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # What ``python -m ssestate`` runs, in this process: the module as __main__.
    import ssestate.__main__ as entry

    path = Path(entry.__file__)
    monkeypatch.setattr(sys, "argv", ["ssestate", "--version"])
    with pytest.raises(SystemExit) as exited:
        exec(compile(path.read_text(), str(path), "exec"), {"__name__": "__main__", "__package__": "ssestate"})
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("ssestate ")
