"""The governor API with a key's signed token: roles enforced, tokens checked (signature,
audience, expiry, lifetime, algorithm), other deployments' keys refused, revocation at once."""

from __future__ import annotations

import datetime as dt
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from flask.testing import FlaskClient

from tests.conftest import PlacementClient
from tests.functional.deployments.test_deployments import deployment, ok, shape
from tests.functional.deployments.test_keys import add_key, certificate
from tests.functional.instances.test_instances import MEMBER, compute_node
from tests.functional.leases.test_leases import blazar_error
from tests.functional.test_keystone_auth import KEYSTONE

WEB = "/v1/deployments/shop/shapes/web/instances"


def token(key: Any, kid: str, audience: str | None = "shop", algorithm: str = "ES256",
          lifetime: dt.timedelta | None = dt.timedelta(minutes=5)) -> str:
    claims: dict[str, Any] = {"sub": "governor"}
    if audience is not None:
        claims["aud"] = audience
    if lifetime is not None:
        claims["exp"] = dt.datetime.now(dt.UTC) + lifetime
    return jwt.encode(claims, key, algorithm=algorithm, headers={"kid": kid})


def bearer(value: str) -> dict[str, str]:
    # No X-Project-Id or roles: the token alone says who calls.
    return {"Authorization": f"Bearer {value}"}


@pytest.fixture
def governed(client: FlaskClient, placement: PlacementClient) -> dict[str, Any]:
    compute_node(placement, "a")
    deployment(client)
    shape(client, maximum=2)
    admin_key = ec.generate_private_key(ec.SECP256R1())
    reader_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ok(add_key(client, "gov", certificate(admin_key)[0]), 201)
    ok(add_key(client, "reader", certificate(reader_key)[0], role="read-only"), 201)
    return {"admin": admin_key, "reader": reader_key}


def test_an_admin_key_scales_the_shape_in_the_deployments_project(client: FlaskClient, governed: dict) -> None:
    launched = ok(client.post(f"{WEB}/web-1", headers=bearer(token(governed["admin"], "gov"))), 201)["instance"]
    assert (launched["project_id"], launched["user_id"], launched["host"]) == ("p1", "governor:gov", "a")
    listed = ok(client.get(WEB, headers=bearer(token(governed["admin"], "gov"))))["instances"]
    assert [i["name"] for i in listed] == ["web-1"]
    assert client.delete(f"{WEB}/web-1", headers=bearer(token(governed["admin"], "gov"))).status_code == 204


def test_a_read_only_key_may_only_read(client: FlaskClient, governed: dict) -> None:
    reader = bearer(token(governed["reader"], "reader", algorithm="RS256"))
    assert ok(client.get(WEB, headers=reader))["instances"] == []
    assert "read-only" in blazar_error(client.post(f"{WEB}/web-1", headers=reader), 403)
    ok(client.post(f"{WEB}/web-1", headers=MEMBER), 201)
    assert "read-only" in blazar_error(client.delete(f"{WEB}/web-1", headers=reader), 403)


def test_a_governor_stops_and_starts_a_shapes_instance(client: FlaskClient, governed: dict) -> None:
    signed = bearer(token(governed["admin"], "gov"))
    ok(client.post(f"{WEB}/web-1", headers=signed), 201)
    stopped = ok(client.put(f"{WEB}/web-1/state", json={"action": "stop"}, headers=signed))["instance"]
    assert (stopped["name"], stopped["status"]) == ("web-1", "STOPPED")
    assert [i["status"] for i in ok(client.get(WEB, headers=signed))["instances"]] == ["STOPPED"]
    assert ok(client.put(f"{WEB}/web-1/state", json={"action": "start"}, headers=signed))["instance"]["status"] == \
        "ACTIVE"


def test_a_read_only_key_may_not_change_state(client: FlaskClient, governed: dict) -> None:
    ok(client.post(f"{WEB}/web-1", headers=MEMBER), 201)
    reader = bearer(token(governed["reader"], "reader", algorithm="RS256"))
    assert "read-only" in blazar_error(client.put(f"{WEB}/web-1/state", json={"action": "stop"}, headers=reader), 403)
    assert [i["status"] for i in ok(client.get(WEB, headers=MEMBER))["instances"]] == ["ACTIVE"]


def test_the_state_of_an_instance_outside_the_shape_is_not_found(client: FlaskClient, governed: dict) -> None:
    ok(client.post("/v1/instances", json={"name": "loner", "vcpus": 1, "memory_mb": 512}, headers=MEMBER), 201)
    signed = bearer(token(governed["admin"], "gov"))
    assert "not an instance of shape web" in blazar_error(
        client.put(f"{WEB}/loner/state", json={"action": "stop"}, headers=signed), 404)


def test_another_deployments_key_is_refused(client: FlaskClient, governed: dict) -> None:
    ok(client.post("/v1/deployments", json={"name": "other"}, headers=MEMBER), 201)
    other_key = ec.generate_private_key(ec.SECP256R1())
    ok(client.post("/v1/deployments/other/keys", json={"name": "gov-other", "role": "admin",
                                                       "certificate": certificate(other_key)[0]}, headers=MEMBER), 201)
    # Its own audience, or this deployment's: either way a 403.
    assert "for deployment 'other'" in blazar_error(
        client.post(f"{WEB}/web-1", headers=bearer(token(other_key, "gov-other", audience="other"))), 403)
    assert "another deployment" in blazar_error(
        client.post(f"{WEB}/web-1", headers=bearer(token(other_key, "gov-other"))), 403)
    assert ok(client.get(WEB, headers=MEMBER))["instances"] == []


def test_a_revoked_key_stops_working_at_once(client: FlaskClient, governed: dict) -> None:
    signed = bearer(token(governed["admin"], "gov"))
    ok(client.post(f"{WEB}/web-1", headers=signed), 201)
    assert client.delete("/v1/deployments/shop/keys/gov", headers=MEMBER).status_code == 204
    assert "unknown or revoked" in blazar_error(client.post(f"{WEB}/web-2", headers=signed), 401)


@pytest.mark.parametrize(("make", "problem"), [
    (lambda keys: token(keys["admin"], "gov", lifetime=-dt.timedelta(minutes=5)), "expired"),
    (lambda keys: token(keys["admin"], "gov", lifetime=None), "lacks the exp claim"),
    (lambda keys: token(keys["admin"], "gov", lifetime=dt.timedelta(days=2)), "lives too long"),
    (lambda keys: token(keys["admin"], "nobody"), "No key nobody"),
    (lambda keys: token(ec.generate_private_key(ec.SECP256R1()), "gov"), "wrong private key"),
    (lambda keys: jwt.encode({"aud": "shop", "exp": dt.datetime.now(dt.UTC) + dt.timedelta(minutes=5)},
                             "a shared secret of at least thirty-two bytes", algorithm="HS256",
                             headers={"kid": "gov"}), "sign it with RS256 or ES256"),
    (lambda keys: "not-a-jwt", "not a JWT"),
])
def test_bad_tokens_are_401s_and_change_nothing(client: FlaskClient, governed: dict, make: Any, problem: str) -> None:
    assert problem in blazar_error(client.post(f"{WEB}/web-1", headers=bearer(make(governed))), 401)
    assert ok(client.get(WEB, headers=MEMBER))["instances"] == []


def test_a_token_without_audience_is_refused(client: FlaskClient, governed: dict) -> None:
    assert "for deployment None" in blazar_error(
        client.post(f"{WEB}/web-1", headers=bearer(token(governed["admin"], "gov", audience=None))), 403)


def test_scaling_limits_hold_for_governors_too(client: FlaskClient, governed: dict) -> None:
    for name in ("web-1", "web-2"):
        ok(client.post(f"{WEB}/{name}", headers=bearer(token(governed["admin"], "gov"))), 201)
    assert "scaling_maximum of 2" in blazar_error(
        client.post(f"{WEB}/web-3", headers=bearer(token(governed["admin"], "gov"))), 409)


def test_with_keystone_a_governor_needs_only_its_token(settings, database, governed: dict) -> None:  # type: ignore[no-untyped-def]
    """Keystone guards every other route; a governor's call carries no Keystone token."""
    from blazar_lite.app import create_app

    keystone = settings.replace(auth_strategy="keystone", keystone_authtoken={"www_authenticate_uri": KEYSTONE})
    governor_client = create_app(keystone, database).test_client()
    assert governor_client.get(WEB).status_code == 401
    launched = governor_client.post(f"{WEB}/web-1", headers=bearer(token(governed["admin"], "gov")))
    assert ok(launched, 201)["instance"]["project_id"] == "p1"
    assert "unknown or revoked" in blazar_error(
        governor_client.post(f"{WEB}/web-2", headers=bearer(token(governed["admin"], "nobody"))), 401)
