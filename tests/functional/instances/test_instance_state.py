"""PUT /v1/instances/<ref>/state: starting and stopping a real instance, which keeps its room on
its node while stopped."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from tests.conftest import PlacementClient
from tests.functional.instances.test_instances import MEMBER, OTHER, compute_node, create
from tests.functional.leases.test_leases import blazar_error


def change(client: FlaskClient, ref: str, action: object, headers: dict | None = None):  # type: ignore[no-untyped-def]
    return client.put(f"/v1/instances/{ref}/state", json={"action": action}, headers=headers or MEMBER)


def test_an_instance_stops_and_starts_again_keeping_its_room(client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    create(client, {"name": "vm", "vcpus": 2, "memory_mb": 512})
    stopped = change(client, "vm", "stop")
    assert stopped.status_code == 200 and stopped.get_json()["instance"]["status"] == "STOPPED"
    assert client.get("/v1/instances/vm", headers=MEMBER).get_json()["instance"]["status"] == "STOPPED"
    assert placement.get(f"/resource_providers/{node}/usages").get_json()["usages"]["VCPU"] == 2
    started = change(client, "vm", "start")
    assert started.status_code == 200 and started.get_json()["instance"]["status"] == "ACTIVE"


def test_asking_for_the_state_an_instance_is_in_changes_nothing(client: FlaskClient,
                                                                placement: PlacementClient) -> None:
    compute_node(placement, "a")
    create(client, {"name": "vm", "vcpus": 1, "memory_mb": 512})
    assert change(client, "vm", "start").get_json()["instance"]["status"] == "ACTIVE"
    change(client, "vm", "stop")
    assert change(client, "vm", "stop").get_json()["instance"]["status"] == "STOPPED"


def test_a_forthcoming_instance_cannot_start_until_committed(client: FlaskClient) -> None:
    paper = create(client, {"forthcoming": True})
    assert "commit it first" in blazar_error(change(client, paper["id"], "start"), 409)
    assert client.get(f"/v1/instances/{paper['id']}", headers=MEMBER).get_json()["instance"]["status"] == "FORTHCOMING"


@pytest.mark.parametrize(("body", "problem"), [
    ({"action": "reboot"}, "Invalid action 'reboot'"),
    ({"action": None}, "Invalid action None"),
    ({}, "Invalid action None"),
    ({"action": "stop", "force": True}, "Unknown field force"),
])
def test_a_bad_state_change_is_a_400_that_changes_nothing(client: FlaskClient, placement: PlacementClient,
                                                          body: dict, problem: str) -> None:
    compute_node(placement, "a")
    create(client, {"name": "vm", "vcpus": 1, "memory_mb": 512})
    assert problem in blazar_error(client.put("/v1/instances/vm/state", json=body, headers=MEMBER), 400)
    assert client.get("/v1/instances/vm", headers=MEMBER).get_json()["instance"]["status"] == "ACTIVE"


def test_another_projects_instance_cannot_be_stopped(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    create(client, {"name": "vm", "vcpus": 1, "memory_mb": 512})
    assert change(client, "vm", "stop", headers=OTHER).status_code == 404
    assert client.get("/v1/instances/vm", headers=MEMBER).get_json()["instance"]["status"] == "ACTIVE"
