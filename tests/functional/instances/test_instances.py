"""/v1/instances: on demand (outside the freepool), inside instance and host reservations, the
allocations each holds in Placement, and the 4xx answers for what cannot be done."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from blazar_lite.app import create_app
from blazar_lite.db import Database
from blazar_lite.scheduler.runner import run_due_events
from tests.conftest import PlacementClient
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import LENGTH, SECOND, START, create_lease, moment, physical, register

MEMBER = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "member"}
OTHER = {"X-Project-Id": "p2", "X-User-Id": "u2", "X-Roles": "member"}
EXAMPLES = Path(__file__).resolve().parents[3] / "etc" / "iallocators"


def compute_node(placement: PlacementClient, name: str, vcpus: int = 16, memory_mb: int = 32768,
                 disk_gb: int = 500) -> str:
    """An on-demand compute node: a root provider that is not a registered host."""
    return placement.provider(name, {"VCPU": vcpus, "MEMORY_MB": memory_mb, "DISK_GB": disk_gb})


def create(client: FlaskClient, body: dict, headers: dict | None = None) -> dict:
    response = client.post("/v1/instances", json=body, headers=headers or MEMBER)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["instance"]


def slots(amount: int, affinity: object = None, vcpus: int = 2) -> dict:
    return {"resource_type": "virtual:instance", "amount": amount, "vcpus": vcpus, "memory_mb": 1024,
            "disk_gb": 10, "affinity": affinity}


def started_lease(client: FlaskClient, database: Database, reservations: list[dict]) -> dict:
    start = moment(START)
    lease = create_lease(client, "l1", reservations, start, start + LENGTH)
    run_due_events(database, now=start + SECOND)
    response = client.get(f"/v1/leases/{lease['id']}")
    assert response.get_json()["lease"]["status"] == "ACTIVE"
    return response.get_json()["lease"]


# On demand.

def test_an_on_demand_instance_lands_on_a_compute_node_outside_the_freepool(
        client: FlaskClient, placement: PlacementClient) -> None:
    register(client, "compute-1")
    node = compute_node(placement, "ondemand-1")
    instance = create(client, {"name": "web", "vcpus": 2, "memory_mb": 2048, "disk_gb": 20})
    assert instance["host"] == "ondemand-1"
    assert (instance["status"], instance["forthcoming"], instance["project_id"]) == ("ACTIVE", False, "p1")
    assert placement.held(instance["id"]) == {node: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}}


def test_an_on_demand_instance_never_lands_on_a_host_in_the_freepool(client: FlaskClient) -> None:
    register(client, "compute-1")
    response = client.post("/v1/instances", json={"name": "web", "vcpus": 1, "memory_mb": 512}, headers=MEMBER)
    assert "no candidate nodes" in blazar_error(response, 409)


def test_the_default_allocator_puts_an_instance_on_the_node_with_fewest_instances(
        client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    compute_node(placement, "b")
    hosts = [create(client, {"name": f"i{n}", "vcpus": 1, "memory_mb": 512})["host"] for n in range(4)]
    assert sorted(hosts) == ["a", "a", "b", "b"]


def test_a_full_node_is_skipped_and_a_full_cluster_is_a_409_naming_what_is_short(
        client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "small", vcpus=2)
    create(client, {"name": "first", "vcpus": 2, "memory_mb": 512})
    message = blazar_error(client.post("/v1/instances", json={"name": "second", "vcpus": 1, "memory_mb": 512},
                                       headers=MEMBER), 409)
    assert "small: 1 vCPU asked, 0 free" in message


def test_deleting_an_instance_gives_back_its_allocation(client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a", vcpus=2)
    instance = create(client, {"name": "web", "vcpus": 2, "memory_mb": 512})
    assert client.delete("/v1/instances/web", headers=MEMBER).status_code == 204
    assert placement.held(instance["id"]) == {}
    assert placement.get(f"/resource_providers/{node}/usages").get_json()["usages"]["VCPU"] == 0
    assert client.get(f"/v1/instances/{instance['id']}", headers=MEMBER).status_code == 404


def test_a_flavor_gives_the_instance_its_size(client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    body = {"flavor": {"name": "m1", "vcpus": 4, "ram": 4096, "disk": 40}}
    flavor = client.post("/v1/flavors", json=body).get_json()["flavor"]
    instance = create(client, {"name": "web", "flavor_id": flavor["id"]})
    assert (instance["vcpus"], instance["memory_mb"], instance["disk_gb"], instance["flavor_id"]) == (
        4, 4096, 40, flavor["id"])
    assert placement.held(instance["id"]) == {node: {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 40}}


def test_an_admin_may_choose_the_node(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    compute_node(placement, "b")
    admin = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "admin"}
    assert create(client, {"name": "x", "vcpus": 1, "memory_mb": 1, "host": "b"}, admin)["host"] == "b"
    assert "not part of on-demand capacity" in blazar_error(
        client.post("/v1/instances", json={"name": "y", "vcpus": 1, "memory_mb": 1, "host": "nowhere"},
                    headers=admin), 409)
    assert "Only admins" in blazar_error(
        client.post("/v1/instances", json={"name": "z", "vcpus": 1, "memory_mb": 1, "host": "a"}, headers=MEMBER),
        403)


# Listing and isolation.

def test_projects_see_only_their_own_instances(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    mine = create(client, {"name": "web", "vcpus": 1, "memory_mb": 1})
    theirs = create(client, {"name": "web", "vcpus": 1, "memory_mb": 1}, OTHER)
    listed = client.get("/v1/instances", headers=MEMBER).get_json()["instances"]
    assert [i["id"] for i in listed] == [mine["id"]]
    assert client.get(f"/v1/instances/{theirs['id']}", headers=MEMBER).status_code == 404
    assert client.delete(f"/v1/instances/{theirs['id']}", headers=MEMBER).status_code == 404
    everyone = client.get("/v1/instances", headers={"X-Roles": "admin"}).get_json()["instances"]
    assert {i["id"] for i in everyone} == {mine["id"], theirs["id"]}


def test_names_are_unique_within_a_project(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    create(client, {"name": "web", "vcpus": 1, "memory_mb": 1})
    message = blazar_error(client.post("/v1/instances", json={"name": "web", "vcpus": 1, "memory_mb": 1},
                                       headers=MEMBER), 409)
    assert "already exists" in message


@pytest.mark.parametrize(("body", "words"), [
    ({"vcpus": 1, "memory_mb": 1}, "Missing name"),
    ({"name": "x"}, "needs its size"),
    ({"name": "x", "vcpus": 0, "memory_mb": 1}, "Invalid vcpus"),
    ({"name": "x", "vcpus": "2", "memory_mb": 1}, "Invalid vcpus"),
    ({"name": "x", "vcpus": 1, "memory_mb": 1, "colour": "red"}, "Unknown field colour"),
    ({"name": "x", "vcpus": 1, "memory_mb": 1, "flavor_id": "6f4f5c52-8b0a-4a59-9d6e-0e3b1c2f5a10"}, "not both"),
    ({"name": "6f4f5c52-8b0a-4a59-9d6e-0e3b1c2f5a10", "vcpus": 1, "memory_mb": 1}, "must not look like"),
    ({"name": "x", "vcpus": 1, "memory_mb": 1, "reservation_id": "r1"}, "not a UUID"),
    ({"name": "x", "vcpus": 1, "memory_mb": 1, "forthcoming": "yes"}, "Invalid forthcoming"),
    ({"name": " x", "vcpus": 1, "memory_mb": 1}, "spaces"),
    ({"name": "a/b", "vcpus": 1, "memory_mb": 1}, "in a URL"),
    ({"name": "..", "vcpus": 1, "memory_mb": 1}, "in a URL"),
])
def test_a_bad_create_is_a_400_that_names_the_field(client: FlaskClient, placement: PlacementClient, body: dict,
                                                    words: str) -> None:
    compute_node(placement, "a")
    assert words in blazar_error(client.post("/v1/instances", json=body, headers=MEMBER), 400)
    assert client.get("/v1/instances", headers=MEMBER).get_json()["instances"] == []


# Inside reservations.

def test_an_instance_in_a_reservation_takes_a_slot_and_the_hosts_resources(
        client: FlaskClient, database: Database, placement: PlacementClient) -> None:
    host = register(client, "compute-1")
    lease = started_lease(client, database, [slots(2)])
    [reservation] = lease["reservations"]
    instance = create(client, {"name": "vm", "reservation_id": reservation["id"]})
    assert (instance["host"], instance["reservation_id"], instance["lease_id"]) == (
        "compute-1", reservation["id"], lease["id"])
    # With no size given, it takes the slot's.
    assert (instance["vcpus"], instance["memory_mb"], instance["disk_gb"]) == (2, 1024, 10)
    assert placement.held(instance["id"]) == {
        host["resource_provider_uuid"]: {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10},
        host["reservation_provider_uuid"]: {reservation["resource_class"]: 1}}


def test_the_reservation_flavor_places_the_instance_in_its_reservation(
        client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    [reservation] = started_lease(client, database, [slots(1)])["reservations"]
    instance = create(client, {"name": "vm", "flavor_id": reservation["flavor_id"]})
    assert instance["reservation_id"] == reservation["id"]


def test_a_reservation_gives_no_more_instances_than_its_slots(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    register(client, "compute-2")
    [reservation] = started_lease(client, database, [slots(2, affinity=False)])["reservations"]
    hosts = {create(client, {"name": f"vm{n}", "reservation_id": reservation["id"]})["host"] for n in range(2)}
    assert hosts == {"compute-1", "compute-2"}  # anti-affinity: one per host
    message = blazar_error(client.post("/v1/instances", json={"name": "vm3", "reservation_id": reservation["id"]},
                                       headers=MEMBER), 409)
    assert "slot" in message and reservation["id"] in message


def test_an_instance_larger_than_the_slot_is_refused(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    [reservation] = started_lease(client, database, [slots(1)])["reservations"]
    body = {"name": "vm", "reservation_id": reservation["id"], "vcpus": 4, "memory_mb": 1024}
    assert "larger than a slot" in blazar_error(client.post("/v1/instances", json=body, headers=MEMBER), 400)


def test_an_instance_in_a_host_reservation_lands_on_one_of_its_hosts(
        client: FlaskClient, database: Database, placement: PlacementClient) -> None:
    register(client, "compute-1")
    register(client, "compute-2")
    lease = started_lease(client, database, [physical(1)])
    [reservation] = lease["reservations"]
    held = client.get("/v1/os-hosts/aggregates?project_id=p1", headers={"X-Roles": "admin"}).get_json()
    [aggregate] = held["aggregates"]
    [held_host] = aggregate["hosts"]
    instance = create(client, {"name": "vm", "reservation_id": reservation["id"], "vcpus": 4, "memory_mb": 4096})
    host = client.get(f"/v1/os-hosts/{held_host}").get_json()["host"]
    assert instance["host"] == host["hypervisor_hostname"]
    assert placement.held(instance["id"]) == {host["resource_provider_uuid"]: {"VCPU": 4, "MEMORY_MB": 4096}}


def test_a_pending_reservation_takes_no_instance_and_says_when_it_starts(client: FlaskClient) -> None:
    register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "l1", [slots(1)], start, start + LENGTH)
    body = {"name": "vm", "reservation_id": lease["reservations"][0]["id"]}
    assert "has not started" in blazar_error(client.post("/v1/instances", json=body, headers=MEMBER), 409)


def test_another_projects_reservation_is_not_found(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    [reservation] = started_lease(client, database, [slots(1)])["reservations"]
    body = {"name": "vm", "reservation_id": reservation["id"]}
    assert "not found in your project" in blazar_error(client.post("/v1/instances", json=body, headers=OTHER), 404)


def test_the_end_of_a_lease_removes_its_instances(client: FlaskClient, database: Database,
                                                  placement: PlacementClient) -> None:
    register(client, "compute-1")
    lease = started_lease(client, database, [slots(2)])
    [reservation] = lease["reservations"]
    real = create(client, {"name": "vm", "reservation_id": reservation["id"]})
    paper = create(client, {"forthcoming": True, "reservation_id": reservation["id"]})
    end = dt.datetime.strptime(lease["end_date"], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=dt.UTC)
    run_due_events(database, now=end + SECOND)
    assert client.get(f"/v1/leases/{lease['id']}").get_json()["lease"]["status"] == "TERMINATED"
    assert client.get("/v1/instances", headers=MEMBER).get_json()["instances"] == []
    assert placement.held(real["id"]) == {} and placement.held(paper["id"]) == {}


def test_deleting_an_active_lease_removes_its_instances(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease = started_lease(client, database, [slots(1)])
    create(client, {"name": "vm", "reservation_id": lease["reservations"][0]["id"]})
    assert client.delete(f"/v1/leases/{lease['id']}", headers=MEMBER).status_code == 204
    assert client.get("/v1/instances", headers=MEMBER).get_json()["instances"] == []


# External allocators.

def iallocator_client(settings, database, program: str, search_path: str) -> FlaskClient:  # type: ignore[no-untyped-def]
    changed = dataclasses.replace(settings, instances_allocator=f"iallocator:{program}",
                                  instances_iallocator_search_path=search_path)
    return create_app(changed, database).test_client()


def test_an_iallocator_program_chooses_the_node(settings, database: Database, placement: PlacementClient) -> None:  # type: ignore[no-untyped-def]
    client = iallocator_client(settings, database, "most-free-memory", str(EXAMPLES))
    compute_node(PlacementClient(client), "small", memory_mb=4096)
    compute_node(PlacementClient(client), "big", memory_mb=65536)
    admin = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "admin"}
    create(client, {"name": "first", "vcpus": 1, "memory_mb": 1024, "host": "big"}, admin)
    # fewest-instances would pick "small" now; the program picks the node with the most free memory.
    assert create(client, {"name": "vm", "vcpus": 1, "memory_mb": 1024})["host"] == "big"


def test_a_failing_iallocator_is_a_409_quoting_it_and_creates_nothing(settings, database: Database,  # type: ignore[no-untyped-def]
                                                                      tmp_path) -> None:
    program = tmp_path / "broken"
    program.write_text("#!/bin/sh\necho 'cannot read the cluster' >&2\nexit 3\n")
    program.chmod(0o755)
    client = iallocator_client(settings, database, "broken", str(tmp_path))
    compute_node(PlacementClient(client), "a")
    message = blazar_error(client.post("/v1/instances", json={"name": "vm", "vcpus": 1, "memory_mb": 1},
                                       headers=MEMBER), 409)
    assert "broken" in message and "cannot read the cluster" in message
    assert client.get("/v1/instances", headers=MEMBER).get_json()["instances"] == []


def test_an_ended_reservation_takes_no_instance_and_says_so(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease = started_lease(client, database, [slots(1)])
    end = dt.datetime.strptime(lease["end_date"], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=dt.UTC)
    run_due_events(database, now=end + SECOND)
    body = {"name": "vm", "reservation_id": lease["reservations"][0]["id"]}
    assert "is TERMINATED" in blazar_error(client.post("/v1/instances", json=body, headers=MEMBER), 409)
