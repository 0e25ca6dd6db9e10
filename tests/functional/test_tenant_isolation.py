"""Tenant isolation: project A neither sees nor changes project B's leases, instances,
deployments (shapes, keys, events) and webhooks; every such attempt is a 404, as if the object did
not exist, and list views show only the caller's own. A governor key acts only on its own
deployment. Admins see across projects where the API says so."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from flask.testing import FlaskClient

from tests.conftest import PlacementClient
from tests.functional.deployments.test_governor import bearer, token
from tests.functional.deployments.test_keys import certificate
from tests.functional.instances.test_instances import compute_node

A = {"X-Project-Id": "project-a", "X-User-Id": "user-a", "X-Roles": "member"}
B = {"X-Project-Id": "project-b", "X-User-Id": "user-b", "X-Roles": "member"}
ADMIN = {"X-Project-Id": "project-admin", "X-User-Id": "admin", "X-Roles": "admin"}
TEMPLATE = {"vcpus": 1, "memory_mb": 512, "disk_gb": 5}


def made(response, status: int = 201) -> Any:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.get_json()
    return response.get_json()


@pytest.fixture
def world(client: FlaskClient, placement: PlacementClient) -> dict[str, Any]:
    """Project B's objects of every kind (a lease, an instance, a deployment with a shape, a key
    and events, a webhook), and the keys of deployments of the same name in A and B."""
    compute_node(placement, "node-1")
    made(client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 8, "memory_mb": 16384, "local_gb": 100},
                     headers=ADMIN))
    lease = made(client.post("/v1/leases", headers=B, json={
        "name": "b-lease", "start_date": "2031-01-01 00:00", "end_date": "2031-01-02 00:00",
        "reservations": [{"resource_type": "physical:host", "min": 1, "max": 1, "hypervisor_properties": "",
                          "resource_properties": ""}]}))["lease"]
    instance = made(client.post("/v1/instances", json={"name": "b-vm", "vcpus": 1, "memory_mb": 512},
                                headers=B))["instance"]
    keys = {}
    for project, headers in (("a", A), ("b", B)):
        made(client.post("/v1/deployments", json={"name": "shop"}, headers=headers))
        made(client.post("/v1/deployments/shop/shapes", json={"name": "web", "instance_template": TEMPLATE,
                                                               "scaling_minimum": 0, "scaling_maximum": 2},
                         headers=headers))
        keys[project] = ec.generate_private_key(ec.SECP256R1())
        made(client.post("/v1/deployments/shop/keys", headers=headers, json={
            "name": f"gov-{project}", "role": "admin", "certificate": certificate(keys[project])[0]}))
    made(client.post("/v1/deployments", json={"name": "b-only"}, headers=B))
    webhook = made(client.post("/v1/webhooks", json={"url": "http://127.0.0.1:9/b", "secret": "b-secret-0123456789"},
                               headers=B))["webhook"]
    return {"lease": lease, "instance": instance, "webhook": webhook, "keys": keys}


def _not_found(response) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 404, (response.status_code, response.get_json())
    assert response.get_json()["error_code"] == 404


def test_another_projects_lease_is_not_found_for_any_operation(client: FlaskClient, world: dict) -> None:
    lease_id = world["lease"]["id"]
    for method, path, body in (("GET", f"/v1/leases/{lease_id}", None),
                               ("PUT", f"/v1/leases/{lease_id}", {"name": "taken"}),
                               ("DELETE", f"/v1/leases/{lease_id}", None),
                               ("GET", f"/v1/leases/{lease_id}/history", None),
                               ("GET", f"/v1/leases/{lease_id}/usage", None),
                               ("GET", "/v1/leases/b-lease", None)):
        _not_found(client.open(path, method=method, json=body, headers=A))
    assert made(client.get(f"/v1/leases/{lease_id}", headers=B), 200)["lease"]["name"] == "b-lease"


def test_lease_lists_show_only_the_callers_leases(client: FlaskClient, world: dict) -> None:
    assert made(client.get("/v1/leases", headers=A), 200)["leases"] == []
    assert [lease["id"] for lease in made(client.get("/v1/leases", headers=B), 200)["leases"]] == [world["lease"]["id"]]


def test_an_admin_sees_and_lists_every_projects_leases(client: FlaskClient, world: dict) -> None:
    lease_id = world["lease"]["id"]
    assert made(client.get(f"/v1/leases/{lease_id}", headers=ADMIN), 200)["lease"]["project_id"] == "project-b"
    every = made(client.get("/v1/leases", headers=ADMIN), 200)["leases"]
    assert [lease["id"] for lease in every] == [lease_id]
    one = made(client.get("/v1/leases", query_string={"project_id": "project-a"}, headers=ADMIN), 200)["leases"]
    assert one == []


def test_a_member_cannot_list_another_projects_leases_by_naming_it(client: FlaskClient, world: dict) -> None:
    response = client.get("/v1/leases", query_string={"project_id": "project-b"}, headers=A)
    assert response.status_code == 403 or made(response, 200)["leases"] == []


def test_another_projects_instance_is_not_found_for_any_operation(client: FlaskClient, world: dict) -> None:
    ref = world["instance"]["id"]
    for method, path, body in (("GET", f"/v1/instances/{ref}", None),
                               ("GET", "/v1/instances/b-vm", None),
                               ("PUT", f"/v1/instances/{ref}/rename", {"name": "taken"}),
                               ("PUT", f"/v1/instances/{ref}/state", {"action": "stop"}),
                               ("PUT", f"/v1/instances/{ref}/modify", {"vcpus": 2}),
                               ("DELETE", f"/v1/instances/{ref}", None)):
        _not_found(client.open(path, method=method, json=body, headers=A))
    assert made(client.get("/v1/instances", headers=A), 200)["instances"] == []
    assert made(client.get(f"/v1/instances/{ref}", headers=B), 200)["instance"]["name"] == "b-vm"


def test_another_projects_deployment_shapes_keys_and_events_are_not_found(client: FlaskClient, world: dict) -> None:
    base = "/v1/deployments/b-only"
    for method, path, body in (("GET", base, None), ("PUT", base, {"description": "x"}),
                               ("PATCH", base, {"description": "x"}), ("POST", base, {"name": "mine"}),
                               ("DELETE", base, None), ("GET", f"{base}/shapes", None),
                               ("POST", f"{base}/shapes", {"name": "s", "instance_template": TEMPLATE,
                                                           "scaling_minimum": 0, "scaling_maximum": 1}),
                               ("GET", f"{base}/events", None), ("GET", f"{base}/keys", None),
                               ("GET", f"{base}/shapes/web/instances", None)):
        _not_found(client.open(path, method=method, json=body, headers=A))
    assert [d["name"] for d in made(client.get("/v1/deployments", headers=A), 200)["deployments"]] == ["shop"]


def test_a_deployment_of_the_same_name_is_each_projects_own(client: FlaskClient, world: dict) -> None:
    made(client.patch("/v1/deployments/shop", json={"description": "a's"}, headers=A), 200)
    assert made(client.get("/v1/deployments/shop", headers=B), 200)["deployment"]["description"] == ""
    assert [k["name"] for k in made(client.get("/v1/deployments/shop/keys", headers=A), 200)["keys"]] == ["gov-a"]
    made(client.patch("/v1/deployments/shop/shapes/web", json={"scaling_maximum": 1}, headers=A), 200)
    assert made(client.get("/v1/deployments/shop/shapes/web", headers=B), 200)["shape"]["scaling_maximum"] == 2
    _not_found(client.get("/v1/deployments/shop/keys/gov-b", headers=A))
    _not_found(client.delete("/v1/deployments/shop/keys/gov-b", headers=A))
    made(client.get("/v1/deployments/shop/keys/gov-b", headers=B), 200)


def test_a_governor_key_acts_only_on_its_own_deployment(client: FlaskClient, world: dict) -> None:
    web = "/v1/deployments/shop/shapes/web/instances"
    # B's key, even with the audience of the deployment name A's shares, scales B's deployment only.
    launched = made(client.post(f"{web}/gov-vm", headers=bearer(token(world["keys"]["b"], "gov-b"))))["instance"]
    assert launched["project_id"] == "project-b"
    assert made(client.get(web, headers=A), 200)["instances"] == []
    # A's name for a key B holds is not a key of A's deployment.
    response = client.post(f"{web}/vm-2", headers=bearer(token(world["keys"]["b"], "gov-a")))
    assert response.status_code in (401, 403), response.get_json()
    assert made(client.get(web, headers=A), 200)["instances"] == []


def test_another_projects_webhook_and_its_events_are_not_found(client: FlaskClient, world: dict) -> None:
    webhook_id = world["webhook"]["id"]
    for method, path, body in (("GET", f"/v1/webhooks/{webhook_id}", None),
                               ("PATCH", f"/v1/webhooks/{webhook_id}", {"description": "x"}),
                               ("DELETE", f"/v1/webhooks/{webhook_id}", None),
                               ("GET", f"/v1/webhooks/{webhook_id}/events", None)):
        _not_found(client.open(path, method=method, json=body, headers=A))
    assert made(client.get("/v1/webhooks", headers=A), 200)["webhooks"] == []
    assert made(client.get(f"/v1/webhooks/{webhook_id}", headers=B), 200)["webhook"]["id"] == webhook_id
