"""The real Blazar client (`blazar host-…`, `blazar allocation-…`) against our /v1/os-hosts,
with each effect checked on the server."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import pytest

pytestmark = pytest.mark.integration


def _http(live_server: str, method: str, path: str, body=None, version: str | None = None):  # type: ignore[no-untyped-def]
    headers = {"X-Auth-Token": "admin", "Content-Type": "application/json"}
    if version:
        headers["OpenStack-API-Version"] = f"placement {version}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(live_server + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        raw = response.read()
        return json.loads(raw) if raw else None


@pytest.fixture(scope="module")
def blazar(live_server, console_script):  # type: ignore[no-untyped-def]
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


@pytest.fixture(scope="module")
def compute_node(live_server):  # type: ignore[no-untyped-def]
    """A compute node already known to Placement, as Nova would have registered it."""
    provider = _http(live_server, "POST", "/placement/resource_providers", {"name": "compute-1"}, version="1.39")
    _http(live_server, "PUT", f"/placement/resource_providers/{provider['uuid']}/inventories", {
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 65536}, "DISK_GB": {"total": 500}}},
        version="1.39")
    return provider["uuid"]


def _server_host(live_server: str, host_id: str) -> dict:
    return _http(live_server, "GET", f"/v1/os-hosts/{host_id}")["host"]


def test_host_lifecycle_through_the_blazar_client(blazar, live_server, compute_node):
    created = blazar("host-create", "compute-1", "--extra", "gpu=a100", "--extra", "rack=r1")
    host_id = str(created["id"])
    on_server = _server_host(live_server, host_id)
    assert (on_server["hypervisor_hostname"], on_server["vcpus"], on_server["memory_mb"], on_server["local_gb"]) == (
        "compute-1", 16, 65536, 500)
    assert (on_server["gpu"], on_server["rack"]) == ("a100", "r1")
    reservation_provider = _http(live_server, "GET", "/placement/resource_providers?name=blazar_compute-1",
                                 version="1.39")["resource_providers"]
    assert [p["parent_provider_uuid"] for p in reservation_provider] == [compute_node]

    assert [h["hypervisor_hostname"] for h in blazar("host-list")] == ["compute-1"]
    assert blazar("host-show", "compute-1")["rack"] == "r1"
    assert blazar("host-show", host_id)["hypervisor_hostname"] == "compute-1"

    blazar("host-update", "compute-1", "--extra", "rack=r2", parse=False)
    assert _server_host(live_server, host_id)["rack"] == "r2"
    blazar("host-unset", "compute-1", "--extra", "gpu", parse=False)
    assert "gpu" not in _server_host(live_server, host_id)

    allocations = blazar("allocation-list", "host")
    assert [(str(a["resource_id"]), a["reservations"]) for a in allocations] == [(host_id, [])]
    shown = blazar("allocation-show", "host", host_id)
    # The client shows an empty list as an empty string.
    assert (str(shown["resource_id"]), shown["reservations"]) == (host_id, "")

    blazar("host-delete", "compute-1", parse=False)
    assert blazar("host-list") == []
    assert _http(live_server, "GET", "/placement/resource_providers?name=blazar_compute-1",
                 version="1.39")["resource_providers"] == []


def test_host_properties_through_the_blazar_client(blazar, live_server):
    provider = _http(live_server, "POST", "/placement/resource_providers", {"name": "compute-2"}, version="1.39")
    _http(live_server, "PUT", f"/placement/resource_providers/{provider['uuid']}/inventories", {
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}, "DISK_GB": {"total": 100}}},
        version="1.39")
    blazar("host-create", "compute-2", "--extra", "switch=s1")
    assert "switch" in {p["property"] for p in blazar("host-property-list")}
    blazar("host-property-set", "switch", "--private", parse=False)
    # Private properties are hidden from listings unless all=True is asked for.
    assert "switch" not in {p["property"] for p in blazar("host-property-list")}
    properties = _http(live_server, "GET", "/v1/os-hosts/properties?detail=True&all=True")["resource_properties"]
    assert {"property": "switch", "private": True, "values": ["s1"]} in properties
    blazar("host-property-set", "switch", "--public", parse=False)
    shown = blazar("host-property-show", "switch")
    assert (shown["property"], shown["private"]) == ("switch", False)
    blazar("host-delete", "compute-2", parse=False)
