"""Evacuating a host and marking it down: instances move (forthcoming ones first), future
reservations are re-booked elsewhere, what cannot move flags its lease degraded, and admins read
what moved where."""

from __future__ import annotations

from flask.testing import FlaskClient

from blazar_lite.db import Database
from tests.conftest import PlacementClient
from tests.functional.instances.test_instances import MEMBER, create, slots, started_lease
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import LENGTH, START, create_lease, moment, physical, register

ADMIN = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "admin"}


def evacuate(client: FlaskClient, host: dict) -> list[dict]:
    response = client.post(f"/v1/os-hosts/{host['id']}/evacuate")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["relocations"]


def lease_of(client: FlaskClient, lease_id: str) -> dict:
    return client.get(f"/v1/leases/{lease_id}").get_json()["lease"]


def test_evacuating_a_host_moves_its_instance_to_a_free_slot_of_its_reservation(
        client: FlaskClient, database: Database, placement: PlacementClient) -> None:
    first, second = register(client, "compute-1"), register(client, "compute-2")
    lease = started_lease(client, database, [slots(2, affinity=False)])
    [reservation] = lease["reservations"]
    vm = create(client, {"name": "vm", "reservation_id": reservation["id"], "host": "compute-1"}, ADMIN)
    assert vm["host"] == "compute-1"

    [moved] = evacuate(client, first)
    assert (moved["subject_id"], moved["from_node"], moved["to_node"], moved["moved"], moved["reason"]) == (
        vm["id"], "compute-1", "compute-2", True, "evacuation")
    assert client.get("/v1/instances/vm", headers=MEMBER).get_json()["instance"]["host"] == "compute-2"
    assert placement.held(vm["id"]) == {
        second["resource_provider_uuid"]: {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10},
        second["reservation_provider_uuid"]: {reservation["resource_class"]: 1}}
    assert lease_of(client, lease["id"])["degraded"] is False


def test_forthcoming_instances_move_first_and_an_instance_left_behind_degrades_its_lease(
        client: FlaskClient, database: Database) -> None:
    # 4-vCPU slots on 8-vCPU hosts: three slots land two on compute-1 and one on compute-2.
    first = register(client, "compute-1")
    register(client, "compute-2")
    lease = started_lease(client, database, [slots(3, vcpus=4)])
    [reservation] = lease["reservations"]
    real = create(client, {"name": "real", "reservation_id": reservation["id"], "host": "compute-1"}, ADMIN)
    paper = create(client, {"forthcoming": True, "reservation_id": reservation["id"], "host": "compute-1"}, ADMIN)

    moves = evacuate(client, first)
    assert [(m["subject_id"], m["moved"], m["to_node"]) for m in moves] == [
        (paper["id"], True, "compute-2"), (real["id"], False, None)]
    assert "could not leave compute-1" in moves[1]["message"]
    after = lease_of(client, lease["id"])
    assert after["degraded"] is True and real["id"] in after["status_reason"]
    assert client.get("/v1/instances/real", headers=MEMBER).get_json()["instance"]["host"] == "compute-1"


def test_a_host_going_down_rebooks_a_pending_reservation_on_another_host(client: FlaskClient) -> None:
    first = register(client, "compute-1")
    register(client, "compute-2")
    start = moment(START)
    lease = create_lease(client, "l1", [physical(1)], start, start + LENGTH)
    [booked] = [a for a in client.get("/v1/os-hosts/allocations").get_json()["allocations"] if a["reservations"]]
    assert booked["resource_id"] == first["id"]

    response = client.put(f"/v1/os-hosts/{first['id']}", json={"status": "down"})
    assert response.status_code == 200, response.get_json()
    [now_booked] = [a for a in client.get("/v1/os-hosts/allocations").get_json()["allocations"] if a["reservations"]]
    assert now_booked["resource_id"] != first["id"]
    [record] = client.get("/v1/os-hosts/relocations?host=compute-1").get_json()["relocations"]
    assert (record["subject_type"], record["moved"], record["to_node"], record["reason"]) == (
        "reservation", True, "compute-2", "relocation")
    assert lease_of(client, lease["id"])["degraded"] is False


def test_a_pending_lease_with_nowhere_to_go_is_flagged_degraded_with_the_reason(client: FlaskClient) -> None:
    host = register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "l1", [physical(1)], start, start + LENGTH)
    assert client.put(f"/v1/os-hosts/{host['id']}", json={"status": "down"}).status_code == 200
    after = lease_of(client, lease["id"])
    assert after["degraded"] is True
    assert "could not leave host compute-1" in after["status_reason"]
    [record] = client.get(f"/v1/os-hosts/relocations?lease_id={lease['id']}").get_json()["relocations"]
    assert record["moved"] is False


def test_an_active_lease_that_loses_a_host_is_flagged_degraded(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease = started_lease(client, database, [physical(1)])
    [held] = [a for a in client.get("/v1/os-hosts/allocations").get_json()["allocations"] if a["reservations"]]
    assert client.put(f"/v1/os-hosts/{held['resource_id']}", json={"status": "down"}).status_code == 200
    after = lease_of(client, lease["id"])
    assert (after["status"], after["degraded"]) == ("ACTIVE", True)
    assert "went down while lease" in after["status_reason"]


def test_marking_a_host_down_twice_relocates_once(client: FlaskClient) -> None:
    host = register(client, "compute-1")
    start = moment(START)
    create_lease(client, "l1", [physical(1)], start, start + LENGTH)
    client.put(f"/v1/os-hosts/{host['id']}", json={"status": "down"})
    client.put(f"/v1/os-hosts/{host['id']}", json={"status": "down"})
    assert len(client.get("/v1/os-hosts/relocations").get_json()["relocations"]) == 1


def test_members_may_not_evacuate_or_read_relocations(client: FlaskClient) -> None:
    host = register(client, "compute-1")
    assert "hosts:evacuate" in blazar_error(client.post(f"/v1/os-hosts/{host['id']}/evacuate", headers=MEMBER), 403)
    assert "hosts:get_relocations" in blazar_error(client.get("/v1/os-hosts/relocations", headers=MEMBER), 403)
    assert "Unknown query parameter" in blazar_error(client.get("/v1/os-hosts/relocations?when=now"), 400)
