"""A real blazar-lite server (the `serve` command, as an operator runs it) for tests that drive
real clients. Its database is a scratch PostgreSQL database when BLAZAR_LITE_TEST_PG_URL is set,
else SQLite in a temporary data directory."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

STARTUP_SECONDS = 60


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _console_script(name: str) -> str:
    """A console script of the test environment (beside its interpreter), else from PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    on_path = shutil.which(name)
    if on_path is None:
        pytest.fail(f"{name} is not installed; install the test and integration extras", pytrace=False)
    return on_path


@pytest.fixture(scope="session")
def console_script():  # type: ignore[no-untyped-def]
    return _console_script


@pytest.fixture(scope="module")
def live_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                make_pg_scratch_database) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """Start `blazar-lite serve` on a free port with a new, empty database; yield its base URL."""
    workdir = tmp_path_factory.mktemp("live")
    config = workdir / "blazar-lite.conf"
    config.write_text("")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLAZAR_LITE_")}
    env["BLAZAR_LITE_DATA_DIR"] = str(workdir / "data")
    base = f"http://127.0.0.1:{port}"
    with contextlib.ExitStack() as stack:
        if os.environ.get("BLAZAR_LITE_TEST_PG_URL"):
            server_url = request.getfixturevalue("pg_server_url")
            env["BLAZAR_LITE_DATABASE_URL"] = stack.enter_context(make_pg_scratch_database(server_url))
        log = stack.enter_context((workdir / "serve.log").open("w+b"))
        process = subprocess.Popen(
            [_console_script("blazar-lite"), "--config-file", str(config), "serve", "--port", str(port)],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    pytest.fail(f"blazar-lite serve exited with {process.returncode}:\n"
                                f"{log.read().decode(errors='replace')}", pytrace=False)
                with contextlib.suppress(OSError):
                    urllib.request.urlopen(base + "/placement/", timeout=1).read()
                    break
                if time.monotonic() > deadline:
                    pytest.fail(f"blazar-lite serve did not answer within {STARTUP_SECONDS}s", pytrace=False)
                time.sleep(0.2)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
