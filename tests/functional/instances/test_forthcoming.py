"""Forthcoming instances: on paper, every field optional; the resources they name are held as if
real, so committing a fully specified one never fails for lack of room. Commit, modify and
rename, by uuid or by name."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from blazar_lite.db import Database
from tests.conftest import PlacementClient
from tests.functional.instances.test_instances import MEMBER, compute_node, create, slots, started_lease
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import register


def test_a_forthcoming_instance_may_name_nothing_and_holds_nothing(
        client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    paper = create(client, {"forthcoming": True})
    assert (paper["forthcoming"], paper["status"], paper["host"], paper["name"]) == (True, "FORTHCOMING", None, None)
    assert placement.held(paper["id"]) == {}
    assert client.get(f"/v1/instances/{paper['id']}", headers=MEMBER).get_json()["instance"] == paper


def test_the_resources_a_forthcoming_instance_names_are_held_as_if_real(
        client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a", vcpus=4)
    paper = create(client, {"forthcoming": True, "vcpus": 3})
    assert paper["host"] == "a"
    assert placement.held(paper["id"]) == {node: {"VCPU": 3}}
    # What it holds counts for everyone else.
    message = blazar_error(client.post("/v1/instances", json={"name": "real", "vcpus": 2, "memory_mb": 1},
                                       headers=MEMBER), 409)
    assert "2 vCPU asked, 1 free" in message


def test_committing_a_fully_specified_forthcoming_instance_keeps_its_node_and_allocation(
        client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a", vcpus=2)
    paper = create(client, {"forthcoming": True, "name": "db", "vcpus": 2, "memory_mb": 1024})
    response = client.post("/v1/instances/db/create", headers=MEMBER)
    assert response.status_code == 200, response.get_json()
    real = response.get_json()["instance"]
    assert (real["id"], real["forthcoming"], real["status"], real["host"]) == (paper["id"], False, "ACTIVE", "a")
    assert placement.held(real["id"]) == {node: {"VCPU": 2, "MEMORY_MB": 1024}}


def test_a_commit_may_complete_the_name_and_size(client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    paper = create(client, {"forthcoming": True, "vcpus": 2})
    response = client.post(f"/v1/instances/{paper['id']}/create", json={"name": "web", "memory_mb": 512},
                           headers=MEMBER)
    assert response.status_code == 200, response.get_json()
    real = response.get_json()["instance"]
    assert (real["name"], real["vcpus"], real["memory_mb"]) == ("web", 2, 512)
    assert placement.held(real["id"]) == {node: {"VCPU": 2, "MEMORY_MB": 512}}


@pytest.mark.parametrize(("body", "words"), [
    (None, "needs its size"),
    ({"vcpus": 1, "memory_mb": 1}, "has no name"),
])
def test_committing_an_incomplete_forthcoming_instance_is_a_400_and_changes_nothing(
        client: FlaskClient, placement: PlacementClient, body: dict | None, words: str) -> None:
    compute_node(placement, "a")
    paper = create(client, {"forthcoming": True})
    response = client.post(f"/v1/instances/{paper['id']}/create", json=body, headers=MEMBER)
    assert words in blazar_error(response, 400)
    assert client.get(f"/v1/instances/{paper['id']}", headers=MEMBER).get_json()["instance"] == paper
    assert placement.held(paper["id"]) == {}


def test_committing_a_real_instance_is_a_409(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    create(client, {"name": "web", "vcpus": 1, "memory_mb": 1})
    assert "real already" in blazar_error(client.post("/v1/instances/web/create", headers=MEMBER), 409)


def test_modify_resizes_in_place_or_says_the_node_lacks_room(client: FlaskClient,
                                                             placement: PlacementClient) -> None:
    node = compute_node(placement, "a", vcpus=4)
    paper = create(client, {"forthcoming": True, "name": "p", "vcpus": 1, "memory_mb": 1})
    response = client.put("/v1/instances/p/modify", json={"vcpus": 4}, headers=MEMBER)
    assert response.status_code == 200, response.get_json()
    assert placement.held(paper["id"]) == {node: {"VCPU": 4, "MEMORY_MB": 1}}
    message = blazar_error(client.put("/v1/instances/p/modify", json={"vcpus": 5}, headers=MEMBER), 409)
    assert "Node a has no room" in message
    assert placement.held(paper["id"]) == {node: {"VCPU": 4, "MEMORY_MB": 1}}
    assert "Nothing to modify" in blazar_error(client.put("/v1/instances/p/modify", json={}, headers=MEMBER), 400)


def test_rename_by_uuid_and_by_name(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    paper = create(client, {"forthcoming": True})
    response = client.put(f"/v1/instances/{paper['id']}/rename", json={"new_name": "one"}, headers=MEMBER)
    assert response.get_json()["instance"]["name"] == "one"
    response = client.put("/v1/instances/one/rename", json={"name": "two"}, headers=MEMBER)
    assert response.get_json()["instance"]["name"] == "two"
    create(client, {"name": "taken", "vcpus": 1, "memory_mb": 1})
    assert "already exists" in blazar_error(
        client.put("/v1/instances/two/rename", json={"new_name": "taken"}, headers=MEMBER), 409)
    assert "once" in blazar_error(client.put("/v1/instances/two/rename", json={}, headers=MEMBER), 400)


def test_a_forthcoming_instance_in_a_reservation_holds_a_slot_of_it(
        client: FlaskClient, database: Database, placement: PlacementClient) -> None:
    host = register(client, "compute-1")
    [reservation] = started_lease(client, database, [slots(1)])["reservations"]
    paper = create(client, {"forthcoming": True, "reservation_id": reservation["id"]})
    assert placement.held(paper["id"])[host["reservation_provider_uuid"]] == {reservation["resource_class"]: 1}
    message = blazar_error(client.post("/v1/instances", json={"name": "vm", "reservation_id": reservation["id"]},
                                       headers=MEMBER), 409)
    assert "all in use" in message
    response = client.post(f"/v1/instances/{paper['id']}/create", json={"name": "vm"}, headers=MEMBER)
    assert response.status_code == 200, response.get_json()
