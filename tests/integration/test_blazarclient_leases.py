"""The real Blazar client (`blazar lease-…`) against our /v1/leases: all three reservation types,
listing, showing, updating with the client's own date arithmetic, and deleting — each effect
checked on the server."""

from __future__ import annotations

import datetime as dt

import pytest

pytestmark = pytest.mark.integration

SERVER_DATE = "%Y-%m-%dT%H:%M:%S.%f"




@pytest.fixture(scope="module")
def cluster(server_json, blazar):  # type: ignore[no-untyped-def]
    """Two hosts known to Placement and registered for reservations, and a flavor."""
    for name in ("compute-a", "compute-b"):
        provider = server_json("POST", "/placement/resource_providers", {"name": name}, version="1.39")
        server_json("PUT", f"/placement/resource_providers/{provider['uuid']}/inventories", {
            "resource_provider_generation": 0,
            "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 16384}, "DISK_GB": {"total": 200}}},
            version="1.39")
        blazar("host-create", name)
    flavor = server_json("POST", "/v1/flavors",
                   {"flavor": {"name": "m1.small", "vcpus": 1, "ram": 2048, "disk": 20}})["flavor"]
    return flavor["id"]


def _window(days_ahead: int) -> tuple[str, str]:
    start = (dt.datetime.now(dt.UTC) + dt.timedelta(days=days_ahead)).replace(second=0, microsecond=0)
    return start.strftime("%Y-%m-%d %H:%M"), (start + dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M")


def _server_lease(server_json, lease_id: str) -> dict:  # type: ignore[no-untyped-def]
    return server_json("GET", f"/v1/leases/{lease_id}")["lease"]


def _date(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, SERVER_DATE)


def test_three_reservation_types_list_show_and_delete(blazar, server_json, cluster):
    start, end = _window(2)
    physical = blazar("lease-create", "--start-date", start, "--end-date", end, "--physical-reservation",
                      "min=1,max=1,hypervisor_properties=,resource_properties=", "lease-physical")
    instances = blazar("lease-create", "--start-date", start, "--end-date", end, "--reservation",
                       "resource_type=virtual:instance,vcpus=2,memory_mb=2048,disk_gb=20,amount=3,affinity=None",
                       "lease-instances")
    flavored = blazar("lease-create", "--start-date", start, "--end-date", end, "--reservation",
                      f"resource_type=flavor:instance,flavor_id={cluster},amount=2,affinity=None", "lease-flavor")
    for created, kind in ((physical, "physical:host"), (instances, "virtual:instance"), (flavored, "flavor:instance")):
        on_server = _server_lease(server_json, created["id"])
        assert on_server["status"] == "PENDING"
        assert [r["resource_type"] for r in on_server["reservations"]] == [kind]
    assert {lease["name"] for lease in blazar("lease-list")} == {"lease-physical", "lease-instances", "lease-flavor"}
    assert blazar("lease-show", "lease-instances")["id"] == instances["id"]
    booked = {r["lease_id"] for a in blazar("allocation-list", "host") for r in a["reservations"]}
    assert booked == {physical["id"], instances["id"], flavored["id"]}
    for lease in (physical, instances, flavored):
        blazar("lease-delete", lease["id"], parse=False)
    assert blazar("lease-list") == []


def test_update_with_the_clients_date_arithmetic(blazar, server_json, cluster):
    start, end = _window(5)
    lease = blazar("lease-create", "--start-date", start, "--end-date", end, "--physical-reservation",
                   "min=1,max=1,hypervisor_properties=,resource_properties=", "lease-to-update")
    before = _server_lease(server_json, lease["id"])

    blazar("lease-update", "--prolong-for", "1d", lease["id"], parse=False)
    prolonged = _server_lease(server_json, lease["id"])
    assert _date(prolonged["end_date"]) - _date(before["end_date"]) == dt.timedelta(days=1)

    blazar("lease-update", "--reduce-by", "12h", lease["id"], parse=False)
    reduced = _server_lease(server_json, lease["id"])
    assert _date(prolonged["end_date"]) - _date(reduced["end_date"]) == dt.timedelta(hours=12)

    blazar("lease-update", "--defer-by", "1h", lease["id"], parse=False)
    deferred = _server_lease(server_json, lease["id"])
    assert _date(deferred["start_date"]) - _date(before["start_date"]) == dt.timedelta(hours=1)

    blazar("lease-update", "--name", "lease-renamed", lease["id"], parse=False)
    assert _server_lease(server_json, lease["id"])["name"] == "lease-renamed"
    blazar("lease-delete", lease["id"], parse=False)
