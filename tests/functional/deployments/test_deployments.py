"""/v1/deployments: deployments and shapes, their validation, and launching and deleting a
shape's instances within its scaling bounds."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from blazar_lite.db import Database
from tests.conftest import PlacementClient
from tests.functional.instances.test_instances import MEMBER, OTHER, compute_node, slots, started_lease
from tests.functional.leases.test_leases import blazar_error

TEMPLATE = {"vcpus": 1, "memory_mb": 512, "disk_gb": 5}
ADMIN = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "admin"}


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.get_json()
    return response.get_json()


def deployment(client: FlaskClient, name: str = "shop", **fields: Any) -> dict:
    return ok(client.post("/v1/deployments", json={"name": name, **fields}, headers=MEMBER), 201)["deployment"]


def shape(client: FlaskClient, name: str = "web", minimum: int = 0, maximum: int = 3,
          template: dict | None = None, deployment_name: str = "shop") -> dict:
    body = {"name": name, "instance_template": template or TEMPLATE, "scaling_minimum": minimum,
            "scaling_maximum": maximum}
    return ok(client.post(f"/v1/deployments/{deployment_name}/shapes", json=body, headers=MEMBER), 201)["shape"]


def launch(client: FlaskClient, name: str, shape_name: str = "web") -> Any:
    return client.post(f"/v1/deployments/shop/shapes/{shape_name}/instances/{name}", headers=MEMBER)


def test_a_deployment_is_created_shown_listed_replaced_patched_renamed_and_deleted(client: FlaskClient) -> None:
    created = deployment(client, description="the shop", config={"user.tier": "gold"})
    assert (created["name"], created["project_id"], created["description"], created["config"]) == (
        "shop", "p1", "the shop", {"user.tier": "gold"})
    assert ok(client.get("/v1/deployments/shop", headers=MEMBER))["deployment"]["id"] == created["id"]
    assert [d["name"] for d in ok(client.get("/v1/deployments", headers=MEMBER))["deployments"]] == ["shop"]

    patched = ok(client.patch("/v1/deployments/shop", json={"config": {"user.region": "eu", "user.tier": ""}},
                              headers=MEMBER))["deployment"]
    assert patched["config"] == {"user.region": "eu"} and patched["description"] == "the shop"
    replaced = ok(client.put("/v1/deployments/shop", json={"config": {"a": "b"}}, headers=MEMBER))["deployment"]
    assert (replaced["description"], replaced["config"]) == ("", {"a": "b"})

    renamed = ok(client.post("/v1/deployments/shop", json={"name": "store"}, headers=MEMBER))["deployment"]
    assert renamed["name"] == "store" and renamed["id"] == created["id"]
    assert client.get("/v1/deployments/shop", headers=MEMBER).status_code == 404
    assert client.delete("/v1/deployments/store", headers=MEMBER).status_code == 204
    assert ok(client.get("/v1/deployments", headers=MEMBER))["deployments"] == []


def test_deployments_are_private_to_their_project(client: FlaskClient) -> None:
    deployment(client)
    assert client.get("/v1/deployments/shop", headers=OTHER).status_code == 404
    assert ok(client.get("/v1/deployments", headers=OTHER))["deployments"] == []
    assert client.get("/v1/deployments?project_id=p1", headers=OTHER).status_code == 403
    assert ok(client.get("/v1/deployments?project_id=p1", headers=ADMIN | {"X-Project-Id": "admin"}))[
        "deployments"][0]["name"] == "shop"
    # The same name in another project is another deployment.
    ok(client.post("/v1/deployments", json={"name": "shop"}, headers=OTHER), 201)


@pytest.mark.parametrize(("body", "problem"), [
    ({"name": "bad name"}, "Invalid deployment name"),
    ({"name": "shop", "config": {"a": 1}}, "Invalid config"),
    ({"name": "shop", "governor_webhook_url": "ftp://x"}, "Invalid governor_webhook_url"),
    ({"name": "shop", "colour": "red"}, "Unknown field colour"),
])
def test_bad_deployment_bodies_are_400s(client: FlaskClient, body: dict, problem: str) -> None:
    assert problem in blazar_error(client.post("/v1/deployments", json=body, headers=MEMBER), 400)


def test_a_duplicate_deployment_name_is_a_409(client: FlaskClient) -> None:
    deployment(client)
    assert "already exists" in blazar_error(client.post("/v1/deployments", json={"name": "shop"}, headers=MEMBER), 409)


def test_shapes_are_created_changed_renamed_and_deleted(client: FlaskClient) -> None:
    deployment(client)
    created = shape(client, minimum=1, maximum=4)
    assert (created["deployment"], created["scaling_minimum"], created["scaling_maximum"],
            created["scaling_current"], created["instance_template"]) == ("shop", 1, 4, 0, TEMPLATE)
    patched = ok(client.patch("/v1/deployments/shop/shapes/web", json={"scaling_maximum": 6, "config": {"k": "v"}},
                              headers=MEMBER))["shape"]
    assert (patched["scaling_minimum"], patched["scaling_maximum"], patched["config"]) == (1, 6, {"k": "v"})
    replaced = ok(client.put("/v1/deployments/shop/shapes/web", json={
        "instance_template": {"vcpus": 2, "memory_mb": 1024}, "scaling_minimum": 0, "scaling_maximum": 2},
        headers=MEMBER))["shape"]
    assert (replaced["config"], replaced["scaling_maximum"], replaced["instance_template"]) == (
        {}, 2, {"vcpus": 2, "memory_mb": 1024})
    assert ok(client.post("/v1/deployments/shop/shapes/web", json={"name": "front"}, headers=MEMBER))[
        "shape"]["name"] == "front"
    assert [s["name"] for s in ok(client.get("/v1/deployments/shop/shapes", headers=MEMBER))["shapes"]] == ["front"]
    assert client.delete("/v1/deployments/shop/shapes/front", headers=MEMBER).status_code == 204
    assert client.get("/v1/deployments/shop/shapes/front", headers=MEMBER).status_code == 404


@pytest.mark.parametrize(("fields", "problem"), [
    ({"scaling_minimum": 0, "scaling_maximum": 0}, "cannot both be 0"),
    ({"scaling_minimum": 3, "scaling_maximum": 2}, "scaling_minimum (3) is greater than scaling_maximum (2)"),
    ({"scaling_minimum": -1, "scaling_maximum": 2}, "Invalid scaling_minimum"),
    ({"scaling_minimum": 0, "scaling_maximum": "2"}, "Invalid scaling_maximum"),
    ({"scaling_minimum": 0, "scaling_maximum": 2, "instance_template": {"name": "x", "vcpus": 1}},
     "Unknown field name in instance_template"),
    ({"scaling_minimum": 0, "scaling_maximum": 2, "instance_template": {"vcpus": 0, "memory_mb": 1}}, "vcpus"),
    ({"scaling_minimum": 0, "scaling_maximum": 2, "instance_template": {}}, "instance_template needs a size"),
])
def test_bad_shapes_are_400s(client: FlaskClient, fields: dict, problem: str) -> None:
    deployment(client)
    body = {"name": "web", "instance_template": TEMPLATE, **fields}
    assert problem in blazar_error(client.post("/v1/deployments/shop/shapes", json=body, headers=MEMBER), 400)
    assert ok(client.get("/v1/deployments/shop/shapes", headers=MEMBER))["shapes"] == []


def test_launching_stops_at_scaling_maximum_and_deleting_at_scaling_minimum(
        client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    deployment(client)
    shape(client, minimum=1, maximum=2)
    first = ok(launch(client, "web-1"), 201)["instance"]
    assert (first["name"], first["host"], first["vcpus"]) == ("web-1", "a", 1)
    ok(launch(client, "web-2"), 201)
    message = blazar_error(launch(client, "web-3"), 409)
    assert "at its scaling_maximum of 2" in message
    assert ok(client.get("/v1/deployments/shop/shapes/web", headers=MEMBER))["shape"]["scaling_current"] == 2
    listed = ok(client.get("/v1/deployments/shop/shapes/web/instances", headers=MEMBER))["instances"]
    assert [i["name"] for i in listed] == ["web-1", "web-2"]

    assert client.delete("/v1/deployments/shop/shapes/web/instances/web-2", headers=MEMBER).status_code == 204
    assert "at its scaling_minimum of 1" in blazar_error(
        client.delete("/v1/deployments/shop/shapes/web/instances/web-1", headers=MEMBER), 409)
    # Through /v1/instances too; an admin may force it.
    assert "scaling_minimum" in blazar_error(client.delete("/v1/instances/web-1", headers=MEMBER), 409)
    assert client.delete("/v1/instances/web-1?force=true", headers=MEMBER).status_code == 403
    assert client.delete("/v1/instances/web-1?force=true", headers=ADMIN).status_code == 204
    usages = placement.get(f"/resource_providers/{node}/usages").get_json()["usages"]
    assert set(usages.values()) == {0}


def test_a_new_template_applies_to_new_instances_only(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    deployment(client)
    shape(client)
    ok(launch(client, "web-1"), 201)
    ok(client.patch("/v1/deployments/shop/shapes/web", json={"instance_template": {"vcpus": 2, "memory_mb": 1024}},
                    headers=MEMBER))
    ok(launch(client, "web-2"), 201)
    sizes = {i["name"]: i["vcpus"] for i in ok(client.get("/v1/deployments/shop/shapes/web/instances",
                                                          headers=MEMBER))["instances"]}
    assert sizes == {"web-1": 1, "web-2": 2}


def test_lowering_scaling_maximum_below_the_instances_there_is_a_409(
        client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    deployment(client)
    shape(client, maximum=3)
    for name in ("web-1", "web-2"):
        ok(launch(client, name), 201)
    message = blazar_error(client.patch("/v1/deployments/shop/shapes/web", json={"scaling_maximum": 1},
                                        headers=MEMBER), 409)
    assert "has 2 instances, more than the new scaling_maximum of 1; delete 1 first" in message


def test_deleting_a_shape_or_deployment_with_instances_needs_force(
        client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    deployment(client)
    shape(client, name="web")
    shape(client, name="db", template={"vcpus": 2, "memory_mb": 1024})
    ok(launch(client, "web-1"), 201)
    ok(launch(client, "db-1", "db"), 201)
    assert "still has 1 instance(s)" in blazar_error(client.delete("/v1/deployments/shop/shapes/web",
                                                                   headers=MEMBER), 409)
    assert client.delete("/v1/deployments/shop/shapes/web?force=true", headers=MEMBER).status_code == 204
    assert client.get("/v1/instances/web-1", headers=MEMBER).status_code == 404
    assert "still has 1 instance(s)" in blazar_error(client.delete("/v1/deployments/shop", headers=MEMBER), 409)
    assert client.delete("/v1/deployments/shop?force=true", headers=MEMBER).status_code == 204
    assert client.get("/v1/instances", headers=MEMBER).get_json()["instances"] == []
    assert set(placement.get(f"/resource_providers/{node}/usages").get_json()["usages"].values()) == {0}


def test_a_template_with_a_reservation_places_instances_in_its_slots(
        client: FlaskClient, database: Database) -> None:
    from tests.functional.scheduler.test_scheduler import register

    register(client, "compute-1")
    lease = started_lease(client, database, [slots(2)])
    [reservation] = lease["reservations"]
    deployment(client)
    shape(client, maximum=5, template={"reservation_id": reservation["id"]})
    placed = [ok(launch(client, f"web-{n}"), 201)["instance"] for n in range(2)]
    assert {(i["host"], i["reservation_id"], i["vcpus"]) for i in placed} == {("compute-1", reservation["id"], 2)}
    refused = launch(client, "web-2")
    assert refused.status_code == 409
    error = refused.get_json()
    assert "0 of its 2 slots are left" in error["error_message"]
    assert (error["error_name"], error["slots_left"], error["slots"]) == ("NotEnoughResourcesAvailable", 0, 2)
    # A slot freed is a slot the shape may take again.
    assert client.delete("/v1/deployments/shop/shapes/web/instances/web-0", headers=MEMBER).status_code == 204
    assert ok(launch(client, "web-2"), 201)["instance"]["reservation_id"] == reservation["id"]


def test_a_scale_up_that_cannot_be_placed_says_how_many_slots_the_reservation_has_left(
        client: FlaskClient, database: Database) -> None:
    from tests.functional.scheduler.test_scheduler import register

    host = register(client, "compute-1")
    lease = started_lease(client, database, [slots(2)])
    [reservation] = lease["reservations"]
    deployment(client)
    shape(client, maximum=5, template={"reservation_id": reservation["id"]})
    assert client.put(f"/v1/os-hosts/{host['id']}", json={"status": "down"}).status_code == 200
    refused = launch(client, "web-0")
    assert refused.status_code == 409
    error = refused.get_json()
    assert error["error_message"].endswith(f"Reservation {reservation['id']} has 2 of its 2 slots left.")
    assert (error["slots_left"], error["slots"]) == (2, 2)


def test_a_scale_up_asks_the_scriptlet_with_the_deployment_and_shape(
        client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    compute_node(placement, "b")
    script = ('def instance_placement(request, candidate_members):\n'
              '    if request.deployment == "shop" and request.shape == "web" and request.reason == "new":\n'
              '        set_target("b")\n')
    ok(client.put("/v1/config", json={"config": {"instances.placement.scriptlet": script}}))
    deployment(client)
    shape(client)
    assert [ok(launch(client, f"web-{n}"), 201)["instance"]["host"] for n in range(2)] == ["b", "b"]
    # An instance outside any deployment is left to the allocator.
    plain = ok(client.post("/v1/instances", json={"name": "other", **TEMPLATE}, headers=MEMBER), 201)["instance"]
    assert plain["host"] == "a"
