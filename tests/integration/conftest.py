"""A real blazar-lite server (the `serve` command) for tests that drive real clients."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _bin(name: str) -> str:
    """A console script installed beside the running interpreter (the test environment's)."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


@pytest.fixture(scope="session")
def console_script():  # type: ignore[no-untyped-def]
    return _bin


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start `blazar-lite serve` on a free port with a fresh SQLite file; yield its base URL."""
    data_dir = tmp_path_factory.mktemp("live")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLAZAR_LITE_")}
    env["BLAZAR_LITE_DATA_DIR"] = str(data_dir)
    log = open(data_dir / "server.log", "wb")  # noqa: SIM115 - closed after the server stops
    process = subprocess.Popen([_bin("blazar-lite"), "serve", "--port", str(port)], env=env,
                               stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(base + "/placement/", timeout=1).read()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                log.close()
                pytest.fail(f"blazar-lite serve did not start:\n{(data_dir / 'server.log').read_text()}")
            time.sleep(0.2)
    yield base
    process.terminate()
    process.wait(timeout=15)
    log.close()
