"""The adapters behind a real nginx reverse proxy.

The test starts nginx itself, with a configuration written to a temporary
directory (pid file, logs and temp paths there too; ``daemon off``; run as
the current user), in front of the stdlib ``ScriptServer``.  Three
locations proxy to it with ``proxy_http_version 1.1``:

* ``/buffered/``: ``proxy_buffering on`` (nginx's default);
* ``/unbuffered/``: ``proxy_buffering off``;
* ``/accel/``: ``proxy_buffering on``, but the upstream answers with
  ``X-Accel-Buffering: no``, which turns buffering off for that response.

Events must arrive unchanged through every location, with every adapter,
whatever nginx does to the chunking.  The timing differs, and the stream
stats show it.  With buffering on, nginx holds a small paced response whose
upstream sent a ``Content-Length`` until the upstream has finished: its
first byte cannot arrive before the upstream's last pause ended, and
everything comes in one burst; without buffering the bytes come as they are
written.  (An upstream that answers with chunked framing is passed on chunk
by chunk by nginx 1.22 even with buffering on; the stats test prints that
case without asserting it.)  The tests skip, saying why, where nginx is not
installed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from adapter_scenarios import (
    FINISH,
    HELLO,
    PAYLOAD,
    ServerFactory,
    delta,
    long_stream,
    reference,
    run,
    running_servers,
)

from ssestate import DONE_BYTES, Delta, StreamStats, StreamTimeout
from ssestate.adapters import sync
from ssestate.testing import Script, Step, scenario

pytestmark = [pytest.mark.network, pytest.mark.nginx]


def nginx_binary() -> str | None:
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


CONFIG = """\
daemon off;
master_process off;
{user}
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log info;
events {{ worker_connections 64; }}
http {{
    access_log {root}/access.log;
    client_body_temp_path {root}/client_body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location /buffered/ {{
            proxy_pass http://127.0.0.1:{upstream}/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering on;
        }}
        location /accel/ {{
            proxy_pass http://127.0.0.1:{upstream}/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering on;
        }}
        location /unbuffered/ {{
            proxy_pass http://127.0.0.1:{upstream}/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}
}}
"""


@contextlib.contextmanager
def nginx_proxy(root: Path, upstream: int) -> Iterator[str]:
    """Run nginx in front of 127.0.0.1:``upstream``; yields its origin."""
    binary = nginx_binary()
    if binary is None:
        pytest.skip("nginx is not installed (neither on PATH nor /usr/sbin/nginx)")
    port = free_port()
    user = "user root;" if os.geteuid() == 0 else ""  # a non-root nginx runs as its caller
    (root / "nginx.conf").write_text(CONFIG.format(user=user, root=root, port=port, upstream=upstream))
    log = root / "error.log"
    with open(root / "stderr.log", "wb") as stderr:
        process = subprocess.Popen(
            [binary, "-p", str(root), "-c", str(root / "nginx.conf"), "-e", str(log)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 10.0
        while True:
            if process.poll() is not None:
                text = (root / "stderr.log").read_text(errors="replace")
                if log.exists():
                    text += log.read_text(errors="replace")
                pytest.fail(f"nginx exited with status {process.returncode}:\n{text}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            assert time.monotonic() < deadline, "nginx did not start listening within 10 s"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:  # pragma: no cover - nginx ignores SIGTERM
            process.kill()
            process.wait()


@pytest.fixture
def server_factory() -> Iterator[ServerFactory]:
    yield from running_servers()


LOCATIONS = ("buffered", "unbuffered", "accel")
ADAPTER_NAMES = ("sync", "httpx", "httpx-asyncio", "trio")


def accel(script: Script) -> Script:
    """The same response, with ``X-Accel-Buffering: no``."""
    return Script(script.status, [*script.headers, ("X-Accel-Buffering", "no")], script.steps, script.chunked)


def sized(script: Script) -> Script:
    """The same response with a ``Content-Length`` instead of chunked
    framing (the writes and pauses stay as they are)."""
    return Script(script.status, script.headers, script.steps, chunked=False)


@pytest.mark.parametrize("location", LOCATIONS)
def test_events_arrive_unchanged_through_nginx(location: str, server_factory: ServerFactory, tmp_path: Path) -> None:
    scripts = [
        Script(steps=HELLO),
        *(scenario(name, seed=7, speed=20.0) for name in ("cjk", "tools", "error-401")),
        sized(scenario("crlf", seed=7, speed=20.0)),
    ]
    if location == "accel":
        scripts = [accel(s) for s in scripts]
    # Each adapter sends one request per script, in order.
    server = server_factory(*[s for s in scripts for _ in ADAPTER_NAMES])
    with nginx_proxy(tmp_path, server.port) as origin:
        for script in scripts:
            expected = reference(script.body(), script.status, script.content_type)
            for adapter in ADAPTER_NAMES:
                result = run(adapter, f"{origin}/{location}/v1", retry=None)
                assert result.error is None, (adapter, script.headers, result.error)
                assert result.events == expected, (adapter, script.headers)
                assert result.status_code == script.status
    assert len(server.requests) == len(scripts) * len(ADAPTER_NAMES)


def paced(count: int = 8, pause: float = 0.1) -> Script:
    """``count`` content chunks ``pause`` seconds apart (under 1 KiB in all:
    far below nginx's proxy buffers), sent with a ``Content-Length``."""
    steps: list[Step] = []
    for i in range(count):
        steps += [delta(f"token{i} ", "assistant" if i == 0 else None), pause]
    return Script(steps=[*steps[:-1], FINISH, DONE_BYTES], chunked=False)


def stats_through(url: str) -> StreamStats:
    with sync.stream_chat(url, PAYLOAD, retry=None) as call:
        events = list(call)
    assert [e.content for e in events if isinstance(e, Delta)] == [f"token{i} " for i in range(8)]
    return call.stats


def test_buffering_shows_in_the_stats(server_factory: ServerFactory, tmp_path: Path) -> None:
    pause = 0.1
    upstream_pauses = 7 * pause  # the upstream's last write comes this long after its first
    script = paced(8, pause)
    chunked = Script(script.status, script.headers, script.steps, chunked=True)
    server = server_factory(script, script, accel(script), chunked)
    with nginx_proxy(tmp_path, server.port) as origin:
        buffered = stats_through(f"{origin}/buffered/v1")
        unbuffered = stats_through(f"{origin}/unbuffered/v1")
        accelerated = stats_through(f"{origin}/accel/v1")
        # Recorded, not asserted: how nginx treats a chunked upstream.
        chunked_buffered = stats_through(f"{origin}/buffered/v1")
    print(
        f"\nContent-Length upstream, proxy_buffering on:  {buffered}"
        f"\nContent-Length upstream, proxy_buffering off: {unbuffered}"
        f"\nContent-Length upstream, X-Accel-Buffering: no: {accelerated}"
        f"\nchunked upstream, proxy_buffering on:  {chunked_buffered}"
    )
    assert buffered.bytes == unbuffered.bytes == accelerated.bytes == len(script.body())
    assert buffered.ttfb is not None
    # Buffered, nginx holds the whole (small) body until the upstream has
    # written its last byte: the first byte cannot come before every pause
    # has passed, and then everything comes in one burst.
    assert buffered.ttfb >= upstream_pauses
    # Unbuffered, the first bytes come long before the upstream is done,
    # and the pauses survive as gaps between arrivals.
    for stats in (unbuffered, accelerated):
        assert stats.ttfb is not None
        assert stats.ttfb < buffered.ttfb
        assert stats.gaps_max is not None
        assert stats.gaps_max >= pause / 2
        assert stats.gaps_max > (buffered.gaps_max or 0.0)


@pytest.mark.parametrize("location", ["buffered", "unbuffered"])
def test_a_client_that_leaves_stops_the_upstream(location: str, server_factory: ServerFactory, tmp_path: Path) -> None:
    steps = long_stream(count=40, pause=0.1).steps
    server = server_factory(Script(steps=steps, chunked=False))
    with nginx_proxy(tmp_path, server.port) as origin:
        url = f"{origin}/{location}/v1"
        if location == "unbuffered":
            with sync.stream_chat(url, PAYLOAD, retry=None) as call:
                assert next(call) == Delta(0, "t0 ")
        else:
            # Buffered, nothing reaches the client until the upstream is done:
            # its first-byte timeout fires while the upstream is still writing.
            call = sync.stream_chat(url, PAYLOAD, first_byte_timeout=0.5, retry=None)
            with call, pytest.raises(StreamTimeout):
                next(call)
        record = server.record_for(0)
    assert record is not None
    assert record.outcome == "disconnected", record
    assert record.step < 40, record  # nginx hung up on the upstream long before its 4 s script ended
