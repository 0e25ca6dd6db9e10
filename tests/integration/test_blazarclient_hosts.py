"""The real Blazar client (`blazar host-…`, `blazar allocation-…`) against our /v1/os-hosts,
with each effect checked on the server."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration




@pytest.fixture(scope="module")
def compute_node(server_json):  # type: ignore[no-untyped-def]
    """A compute node already known to Placement, as Nova would have registered it."""
    provider = server_json("POST", "/placement/resource_providers", {"name": "compute-1"}, version="1.39")
    server_json("PUT", f"/placement/resource_providers/{provider['uuid']}/inventories", {
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 65536}, "DISK_GB": {"total": 500}}},
        version="1.39")
    return provider["uuid"]


def _server_host(server_json, host_id: str) -> dict:  # type: ignore[no-untyped-def]
    return server_json("GET", f"/v1/os-hosts/{host_id}")["host"]


def test_host_lifecycle_through_the_blazar_client(blazar, server_json, compute_node):
    created = blazar("host-create", "compute-1", "--extra", "gpu=a100", "--extra", "rack=r1")
    host_id = str(created["id"])
    on_server = _server_host(server_json, host_id)
    assert (on_server["hypervisor_hostname"], on_server["vcpus"], on_server["memory_mb"], on_server["local_gb"]) == (
        "compute-1", 16, 65536, 500)
    assert (on_server["gpu"], on_server["rack"]) == ("a100", "r1")
    reservation_provider = server_json("GET", "/placement/resource_providers?name=blazar_compute-1",
                                 version="1.39")["resource_providers"]
    assert [p["parent_provider_uuid"] for p in reservation_provider] == [compute_node]

    assert [h["hypervisor_hostname"] for h in blazar("host-list")] == ["compute-1"]
    assert blazar("host-show", "compute-1")["rack"] == "r1"
    assert blazar("host-show", host_id)["hypervisor_hostname"] == "compute-1"

    blazar("host-update", "compute-1", "--extra", "rack=r2", parse=False)
    assert _server_host(server_json, host_id)["rack"] == "r2"
    blazar("host-unset", "compute-1", "--extra", "gpu", parse=False)
    assert "gpu" not in _server_host(server_json, host_id)

    allocations = blazar("allocation-list", "host")
    assert [(str(a["resource_id"]), a["reservations"]) for a in allocations] == [(host_id, [])]
    shown = blazar("allocation-show", "host", host_id)
    # The client shows an empty list as an empty string.
    assert (str(shown["resource_id"]), shown["reservations"]) == (host_id, "")

    blazar("host-delete", "compute-1", parse=False)
    assert blazar("host-list") == []
    assert server_json("GET", "/placement/resource_providers?name=blazar_compute-1",
                 version="1.39")["resource_providers"] == []


def test_host_properties_through_the_blazar_client(blazar, server_json):
    provider = server_json("POST", "/placement/resource_providers", {"name": "compute-2"}, version="1.39")
    server_json("PUT", f"/placement/resource_providers/{provider['uuid']}/inventories", {
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}, "DISK_GB": {"total": 100}}},
        version="1.39")
    blazar("host-create", "compute-2", "--extra", "switch=s1")
    assert "switch" in {p["property"] for p in blazar("host-property-list")}
    blazar("host-property-set", "switch", "--private", parse=False)
    # Private properties are hidden from listings unless all=True is asked for.
    assert "switch" not in {p["property"] for p in blazar("host-property-list")}
    properties = server_json("GET", "/v1/os-hosts/properties?detail=True&all=True")["resource_properties"]
    assert {"property": "switch", "private": True, "values": ["s1"]} in properties
    blazar("host-property-set", "switch", "--public", parse=False)
    shown = blazar("host-property-show", "switch")
    assert (shown["property"], shown["private"]) == ("switch", False)
    blazar("host-delete", "compute-2", parse=False)
