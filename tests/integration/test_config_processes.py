"""A scriptlet set through one `blazar-lite serve` process is used by another serving the same
database, without a restart, once its config refresh interval has passed."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid

import pytest

from tests.integration.conftest import serve_process, service_environment

pytestmark = pytest.mark.integration

PICK_B = "def instance_placement(request, candidate_members):\n    set_target(\"b\")\n"
# Far longer than the 1 s refresh interval the processes run with: waiting this long means the
# change was never picked up.
GIVE_UP_AFTER = 30.0


def call(base: str, method: str, path: str, body: object = None, placement: bool = False) -> object:
    headers = {"X-Auth-Token": "admin", "Content-Type": "application/json"}
    if placement:
        headers["OpenStack-API-Version"] = "placement 1.39"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        raw = response.read()
        return json.loads(raw) if raw else None


def test_a_second_process_uses_a_new_scriptlet_without_restart(request, tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = "[instances]\nconfig_refresh_seconds = 1\n"
    with service_environment(request, tmp_path) as env:
        with serve_process(tmp_path, env, config, "first", ("--no-scheduler",)) as (first, _), \
                serve_process(tmp_path, env, config, "second", ("--no-scheduler",)) as (second, process):
            for name in ("a", "b"):
                uuid_ = str(uuid.uuid4())
                call(first, "POST", "/placement/resource_providers", {"name": name, "uuid": uuid_}, placement=True)
                call(first, "PUT", f"/placement/resource_providers/{uuid_}/inventories",
                     {"resource_provider_generation": 0,
                      "inventories": {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 65536}}}, placement=True)

            def place(name: str) -> str:
                body = {"name": name, "vcpus": 1, "memory_mb": 256}
                return call(second, "POST", "/v1/instances", body)["instance"]["host"]  # type: ignore[index]

            # Without a scriptlet, fewest-instances alternates between the nodes.
            assert sorted([place("before-1"), place("before-2")]) == ["a", "b"]
            call(first, "PUT", "/v1/config", {"config": {"instances.placement.scriptlet": PICK_B}})

            hosts: list[str] = []
            deadline = time.monotonic() + GIVE_UP_AFTER
            while not hosts[-3:] == ["b", "b", "b"] and time.monotonic() < deadline:
                hosts.append(place(f"after-{len(hosts)}"))
                time.sleep(0.2)
            assert hosts[-3:] == ["b", "b", "b"], f"the second process kept placing without the scriptlet: {hosts}"
            assert process.poll() is None, "the second process was not restarted"
