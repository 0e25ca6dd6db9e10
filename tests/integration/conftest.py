"""A real blazar-lite server (the `serve` command, as an operator runs it) for tests that drive
real clients. Its database is a scratch PostgreSQL database when BLAZAR_LITE_TEST_PG_URL is set,
else SQLite in a temporary data directory."""

from __future__ import annotations

import contextlib
import functools
import json
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


@contextlib.contextmanager
def serve_process(workdir: Path, env: dict[str, str], config_text: str = "", name: str = "serve",
                  extra_args: tuple[str, ...] = ()) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Run `blazar-lite serve` on a free port with `env` (its database settings included) and a
    config file holding `config_text`; yield its base URL and process once it answers."""
    config = workdir / f"{name}.conf"
    config.write_text(config_text)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with (workdir / f"{name}.log").open("w+b") as log:
        process = subprocess.Popen(
            [_console_script("blazar-lite"), "--config-file", str(config), "serve", "--port", str(port),
             *extra_args],
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
            yield base, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def service_environment(request: pytest.FixtureRequest, workdir: Path) -> Iterator[dict[str, str]]:
    """The environment of a served process with a new, empty database: a scratch PostgreSQL
    database when BLAZAR_LITE_TEST_PG_URL is set, else SQLite in `workdir`/data."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLAZAR_LITE_")}
    env["BLAZAR_LITE_DATA_DIR"] = str(workdir / "data")
    with contextlib.ExitStack() as stack:
        if os.environ.get("BLAZAR_LITE_TEST_PG_URL"):
            server_url = request.getfixturevalue("pg_server_url")
            make = request.getfixturevalue("make_pg_scratch_database")
            env["BLAZAR_LITE_DATABASE_URL"] = stack.enter_context(make(server_url))
        yield env


@pytest.fixture(scope="module")
def live_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start `blazar-lite serve` on a free port with a new, empty database; yield its base URL."""
    workdir = tmp_path_factory.mktemp("live")
    with service_environment(request, workdir) as env, serve_process(workdir, env) as (base, _):
        yield base


def _request_json(base: str, method: str, path: str, body=None, version: str | None = None):  # type: ignore[no-untyped-def]
    headers = {"X-Auth-Token": "admin", "Content-Type": "application/json"}
    if version:
        headers["OpenStack-API-Version"] = f"placement {version}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        raw = response.read()
        return json.loads(raw) if raw else None


@pytest.fixture(scope="module")
def server_json(live_server):  # type: ignore[no-untyped-def]
    """`server_json(method, path, body=None, version=None)`: one JSON request to the live server as admin."""
    return functools.partial(_request_json, live_server)


@pytest.fixture(scope="module")
def blazar(live_server, console_script):  # type: ignore[no-untyped-def]
    """Run the real Blazar client (noauth) against the live server; parse its JSON output."""
    def run(*args: str, parse: bool = True):  # type: ignore[no-untyped-def]
        command = [console_script("blazar"), "--os-auth-type", "none", "--os-endpoint", f"{live_server}/v1", *args]
        if parse:
            command += ["-f", "json"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, f"blazar {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        if not (parse and result.stdout.strip()):
            return result.stdout
        # Create commands print a sentence ("Created a new host:") before the document.
        text = result.stdout
        return json.loads(text[min(i for i in (text.find("{"), text.find("[")) if i >= 0):])
    return run
