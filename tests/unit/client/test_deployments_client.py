"""The deployment clients without a server: the requests each call makes; and a governor's
tokens, checked as the service checks them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from blazar_lite.client import DeploymentKeysClient, DeploymentsClient, ShapeInstancesClient, ShapesClient
from blazar_lite.client.governor import GovernorAuth, GovernorKey, algorithm_for
from blazar_lite.client.http import ClientError
from tests.unit.client.test_client import RecordingApi

TEMPLATE = {"vcpus": 1, "memory_mb": 512}


def test_a_deployment_update_sends_only_what_is_given_and_admins_name_the_project() -> None:
    api = RecordingApi({("PATCH", "/deployments/shop?project_id=p+2"): {"deployment": {}}})
    DeploymentsClient(api).update("shop", config={"tier": ""}, project_id="p 2")  # type: ignore[arg-type]
    assert api.requests == [("PATCH", "/deployments/shop?project_id=p+2", {"config": {"tier": ""}})]


def test_a_deployment_is_created_replaced_renamed_and_force_deleted() -> None:
    api = RecordingApi({("POST", "/deployments"): {"deployment": {}}, ("PUT", "/deployments/shop"): {"deployment": {}},
                        ("POST", "/deployments/shop"): {"deployment": {}}})
    deployments = DeploymentsClient(api)  # type: ignore[arg-type]
    deployments.create("shop", description="d", governor_webhook_url="http://gov/hook")
    deployments.replace("shop", config={"a": "b"})
    deployments.rename("shop", "store")
    deployments.delete("store", force=True)
    deployments.delete("store")
    assert api.requests == [
        ("POST", "/deployments", {"name": "shop", "description": "d", "governor_webhook_url": "http://gov/hook"}),
        ("PUT", "/deployments/shop", {"config": {"a": "b"}}),
        ("POST", "/deployments/shop", {"name": "store"}),
        ("DELETE", "/deployments/store?force=true", None),
        ("DELETE", "/deployments/store", None)]


def test_shape_paths_quote_the_names() -> None:
    api = RecordingApi({("POST", "/deployments/a%2Fb/shapes"): {"shape": {}},
                        ("PATCH", "/deployments/a%2Fb/shapes/web%201"): {"shape": {}}})
    shapes = ShapesClient(api)  # type: ignore[arg-type]
    shapes.create("a/b", "web 1", instance_template=TEMPLATE, scaling_minimum=0, scaling_maximum=2)
    shapes.update("a/b", "web 1", scaling_maximum=4, description=None)
    shapes.delete("a/b", "web 1", force=True)
    assert api.requests == [
        ("POST", "/deployments/a%2Fb/shapes", {"name": "web 1", "instance_template": TEMPLATE, "scaling_minimum": 0,
                                               "scaling_maximum": 2}),
        ("PATCH", "/deployments/a%2Fb/shapes/web%201", {"scaling_maximum": 4}),
        ("DELETE", "/deployments/a%2Fb/shapes/web%201?force=true", None)]


def test_a_shapes_instances_are_launched_stopped_started_and_deleted() -> None:
    path = "/deployments/shop/shapes/web/instances/web-1"
    api = RecordingApi({("POST", path): {"instance": {"name": "web-1"}}, ("PUT", f"{path}/state"): {"instance": {}}})
    instances = ShapeInstancesClient(api)  # type: ignore[arg-type]
    assert instances.launch("shop", "web", "web-1") == {"name": "web-1"}
    instances.stop("shop", "web", "web-1")
    instances.start("shop", "web", "web-1")
    instances.delete("shop", "web", "web-1")
    assert api.requests == [("POST", path, None), ("PUT", f"{path}/state", {"action": "stop"}),
                            ("PUT", f"{path}/state", {"action": "start"}), ("DELETE", path, None)]


def test_a_key_is_created_with_its_certificate_and_role() -> None:
    api = RecordingApi({("POST", "/deployments/shop/keys?project_id=p2"): {"key": {"name": "gov"}}})
    keys = DeploymentKeysClient(api)  # type: ignore[arg-type]
    keys.create("shop", "gov", certificate="PEM", role="read-only", project_id="p2")
    keys.delete("shop", "gov")
    assert api.requests == [("POST", "/deployments/shop/keys?project_id=p2",
                             {"name": "gov", "certificate": "PEM", "role": "read-only"}),
                            ("DELETE", "/deployments/shop/keys/gov", None)]


@pytest.mark.parametrize(("private_key", "algorithm"), [
    (ec.generate_private_key(ec.SECP256R1()), "ES256"),
    (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256"),
])
def test_a_governor_token_names_its_key_and_deployment_and_lives_five_minutes(private_key: Any,
                                                                              algorithm: str) -> None:
    key = GovernorKey("gov", private_key, algorithm_for(private_key))
    token = key.token("shop")
    assert jwt.get_unverified_header(token) == {"alg": algorithm, "kid": "gov", "typ": "JWT"}
    claims = jwt.decode(token, private_key.public_key(), algorithms=[algorithm], audience="shop",
                        options={"require": ["exp", "aud"]})
    lifetime = dt.datetime.fromtimestamp(claims["exp"], dt.UTC) - dt.datetime.now(dt.UTC)
    assert dt.timedelta(minutes=4) < lifetime <= dt.timedelta(minutes=5)


@pytest.mark.parametrize(("private_key", "kind"), [
    (ec.generate_private_key(ec.SECP384R1()), "EC on secp384r1"),
    (ed25519.Ed25519PrivateKey.generate(), "Ed25519"),
])
def test_keys_the_service_cannot_verify_are_refused_before_signing(private_key: Any, kind: str) -> None:
    with pytest.raises(ClientError) as raised:
        algorithm_for(private_key, "gov.key")
    assert raised.value.message == (f"The governor key gov.key is {kind}; a governor key must be RSA (RS256) or EC "
                                    "on P-256 (ES256).")


def test_the_governor_auth_sends_a_bearer_token_instead_of_a_keystone_token() -> None:
    private_key = ec.generate_private_key(ec.SECP256R1())
    auth = GovernorAuth(GovernorKey("gov", private_key, "ES256"), "shop", "http://h:1234/v1")
    headers = auth.get_headers(None)  # type: ignore[arg-type]
    assert list(headers) == ["Authorization"]
    scheme, token = headers["Authorization"].split(" ")
    assert scheme == "Bearer"
    assert jwt.decode(token, private_key.public_key(), algorithms=["ES256"], audience="shop")["aud"] == "shop"
    assert auth.get_endpoint(None) == "http://h:1234/v1"  # type: ignore[arg-type]
