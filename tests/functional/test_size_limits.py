"""Oversized requests are refused before any work: bodies over [api] max_body_bytes with a 413,
overlong fields and lists with a 400 that names the field and the limit; nothing is stored."""

from __future__ import annotations

from flask.testing import FlaskClient

HOST = {"name": "compute-1", "vcpus": 8, "memory_mb": 16384, "local_gb": 100}
PHYSICAL = {"resource_type": "physical:host", "min": 1, "max": 1, "hypervisor_properties": "",
            "resource_properties": ""}


def refused(response, status: int = 400) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.get_json()
    return response.get_json()["error_message"]


def test_a_body_over_the_limit_is_refused_with_413_and_the_limit(client: FlaskClient) -> None:
    message = refused(client.post("/v1/leases", data=b"x" * 1048577, content_type="application/json"), 413)
    assert message == "The request body is larger than the limit of 1048576 bytes."


def test_a_lease_with_more_reservations_than_the_limit_is_refused_naming_the_field(client: FlaskClient) -> None:
    assert client.post("/v1/os-hosts", json=HOST).status_code == 201
    body = {"name": "big", "start_date": "2031-01-01 00:00", "end_date": "2031-01-02 00:00",
            "reservations": [PHYSICAL] * 101}
    message = refused(client.post("/v1/leases", json=body))
    assert message == "Invalid input for field 'reservations': 101 reservations, at most 100 are allowed in one lease."
    assert client.get("/v1/leases").get_json()["leases"] == []


def test_an_overlong_extra_capability_value_is_refused_naming_it(client: FlaskClient) -> None:
    message = refused(client.post("/v1/os-hosts", json={**HOST, "gpu": "a" * 256}))
    assert message == ("Invalid input for field 'gpu': 256 characters, at most 255 are allowed in an extra "
                       "capability's value.")
    assert client.get("/v1/os-hosts").get_json()["hosts"] == []


def test_an_overlong_extra_capability_value_is_refused_on_update(client: FlaskClient) -> None:
    host_id = client.post("/v1/os-hosts", json=HOST).get_json()["host"]["id"]
    assert "at most 255 are allowed" in refused(client.put(f"/v1/os-hosts/{host_id}", json={"gpu": "a" * 256}))
    assert "gpu" not in client.get(f"/v1/os-hosts/{host_id}").get_json()["host"]


def test_more_extra_capabilities_than_the_limit_are_refused(client: FlaskClient) -> None:
    capabilities = {f"cap{i}": "1" for i in range(101)}
    assert refused(client.post("/v1/os-hosts", json={**HOST, **capabilities})) == (
        "Too many extra capabilities: 101, at most 100 may be set in one request.")


def test_an_overlong_deployment_description_is_refused_with_the_limit(client: FlaskClient) -> None:
    message = refused(client.post("/v1/deployments", json={"name": "shop", "description": "d" * 1025}))
    assert message == "Invalid description: give a string of at most 1024 characters."
    assert client.get("/v1/deployments").get_json()["deployments"] == []


def test_deployment_config_limits_name_the_key_count_key_and_value(client: FlaskClient) -> None:
    too_many = {f"user.k{i}": "v" for i in range(101)}
    assert refused(client.post("/v1/deployments", json={"name": "a", "config": too_many})) == (
        "Invalid config: 101 keys, at most 100 are allowed.")
    assert "has 256 characters, at most 255 are allowed" in refused(
        client.post("/v1/deployments", json={"name": "b", "config": {"k" * 256: "v"}}))
    assert refused(client.post("/v1/deployments", json={"name": "c", "config": {"user.k": "v" * 4097}})) == (
        "Invalid config: the value of 'user.k' has 4097 characters, at most 4096 are allowed.")


def test_a_config_patch_cannot_grow_past_the_key_limit(client: FlaskClient) -> None:
    first = {f"user.a{i}": "v" for i in range(60)}
    assert client.post("/v1/deployments", json={"name": "shop", "config": first}).status_code == 201
    more = {f"user.b{i}": "v" for i in range(60)}
    assert refused(client.patch("/v1/deployments/shop", json={"config": more})) == (
        "Invalid config: 120 keys once merged, at most 100 are allowed.")
    assert client.get("/v1/deployments/shop").get_json()["deployment"]["config"] == first
