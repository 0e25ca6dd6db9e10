"""`blazar-lite serve` as an operator runs it, driven by the OpenStack client's Placement plugin
(osc-placement). The database is a scratch PostgreSQL database when BLAZAR_LITE_TEST_PG_URL is
set, else SQLite in a temporary data directory."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
STARTUP_SECONDS = 60


def executable(name: str) -> str:
    found = BIN / name
    if found.exists():
        return str(found)
    on_path = shutil.which(name)
    if on_path is None:
        pytest.fail(f"{name} is not installed; install the test and integration extras", pytrace=False)
    return on_path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(port: int, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            make_pg_scratch_database) -> Iterator[int]:  # type: ignore[no-untyped-def]
    """The port of a running `blazar-lite serve` with a new, empty database."""
    workdir = tmp_path_factory.mktemp("service")
    config = workdir / "blazar-lite.conf"
    config.write_text("")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLAZAR_LITE_")}
    env.update(BLAZAR_LITE_DATA_DIR=str(workdir / "data"), BLAZAR_LITE_API_PORT=str(port))
    with contextlib.ExitStack() as stack:
        if os.environ.get("BLAZAR_LITE_TEST_PG_URL"):
            server_url = request.getfixturevalue("pg_server_url")
            env["BLAZAR_LITE_DATABASE_URL"] = stack.enter_context(make_pg_scratch_database(server_url))
        log = stack.enter_context((workdir / "serve.log").open("w+b"))
        process = subprocess.Popen([executable("blazar-lite"), "--config-file", str(config), "serve"],
                                   env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    pytest.fail(f"blazar-lite serve exited with {process.returncode}:\n"
                                f"{log.read().decode(errors='replace')}", pytrace=False)
                with contextlib.suppress(OSError):
                    if get(port, "/versions")[0] == 300:
                        break
                if time.monotonic() > deadline:
                    pytest.fail(f"blazar-lite serve did not answer within {STARTUP_SECONDS}s", pytrace=False)
                time.sleep(0.2)
            yield port
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def openstack(port: int, *args: str) -> subprocess.CompletedProcess[str]:
    command = [executable("openstack"), "--os-auth-type", "none",
               "--os-endpoint", f"http://127.0.0.1:{port}/placement",
               "--os-placement-api-version", "1.39", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_served_version_discovery_answers_300(service: int) -> None:
    status, body = get(service, "/versions")
    assert status == 300
    assert json.loads(body)["versions"][0]["id"] == "v1.0"


def test_served_placement_root_offers_microversions_up_to_1_39(service: int) -> None:
    status, body = get(service, "/placement/")
    assert status == 200
    assert json.loads(body)["versions"][0]["max_version"] == "1.39"


def test_osc_placement_creates_and_lists_a_resource_provider(service: int) -> None:
    name = f"compute-{uuid.uuid4().hex[:8]}"
    created = openstack(service, "resource", "provider", "create", name, "-f", "json")
    assert created.returncode == 0, created.stderr
    provider = json.loads(created.stdout)
    assert provider["name"] == name
    assert provider["root_provider_uuid"] == provider["uuid"]

    listed = openstack(service, "resource", "provider", "list", "-f", "json")
    assert listed.returncode == 0, listed.stderr
    assert {"uuid": provider["uuid"], "name": name} in [{"uuid": p["uuid"], "name": p["name"]}
                                                        for p in json.loads(listed.stdout)]


def test_osc_placement_reports_a_missing_provider_as_not_found(service: int) -> None:
    missing = openstack(service, "resource", "provider", "show", str(uuid.uuid4()))
    assert missing.returncode != 0
    assert "HTTP 404" in missing.stderr
