"""/v1/deployments/<d>/keys: governor keys as certificates with a role."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID
from flask.testing import FlaskClient

from tests.functional.deployments.test_deployments import deployment, ok
from tests.functional.instances.test_instances import MEMBER, OTHER
from tests.functional.leases.test_leases import blazar_error


def certificate(key: Any, name: str = "governor") -> tuple[str, str]:
    """(PEM, SHA-256 fingerprint in hex) of a self-signed certificate for `key`."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30)).sign(key, hashes.SHA256()))
    return cert.public_bytes(Encoding.PEM).decode(), cert.fingerprint(hashes.SHA256()).hex()


def ec_key() -> Any:
    return ec.generate_private_key(ec.SECP256R1())


def add_key(client: FlaskClient, name: str, pem: str, role: str = "admin", headers: dict | None = None) -> Any:
    return client.post("/v1/deployments/shop/keys", json={"name": name, "role": role, "certificate": pem,
                                                          "description": "the governor"},
                       headers=headers or MEMBER)


def test_keys_are_added_listed_shown_renamed_and_revoked(client: FlaskClient) -> None:
    deployment(client)
    pem, fingerprint = certificate(ec_key())
    created = ok(add_key(client, "gov", pem), 201)["key"]
    assert (created["name"], created["role"], created["fingerprint"], created["deployment"]) == (
        "gov", "admin", fingerprint, "shop")
    rsa_pem, _ = certificate(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    ok(add_key(client, "reader", rsa_pem, role="read-only"), 201)
    assert [k["name"] for k in ok(client.get("/v1/deployments/shop/keys", headers=MEMBER))["keys"]] == ["gov",
                                                                                                        "reader"]
    assert ok(client.get("/v1/deployments/shop/keys/gov", headers=MEMBER))["key"]["certificate"] == pem
    assert ok(client.post("/v1/deployments/shop/keys/gov", json={"name": "gov-2"}, headers=MEMBER))[
        "key"]["fingerprint"] == fingerprint
    assert client.delete("/v1/deployments/shop/keys/gov-2", headers=MEMBER).status_code == 204
    assert client.get("/v1/deployments/shop/keys/gov-2", headers=MEMBER).status_code == 404


@pytest.mark.parametrize(("fields", "problem"), [
    ({"role": "owner"}, "Invalid role 'owner'"),
    ({"certificate": "not a certificate"}, "give a public certificate in PEM"),
    ({"certificate": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}, "cannot be read as PEM"),
    ({"name": "has space"}, "Invalid key name"),
])
def test_bad_keys_are_400s(client: FlaskClient, fields: dict, problem: str) -> None:
    deployment(client)
    pem, _ = certificate(ec_key())
    body = {"name": "gov", "role": "admin", "certificate": pem, **fields}
    assert problem in blazar_error(client.post("/v1/deployments/shop/keys", json=body, headers=MEMBER), 400)
    assert ok(client.get("/v1/deployments/shop/keys", headers=MEMBER))["keys"] == []


def test_an_ec_key_off_p256_is_refused(client: FlaskClient) -> None:
    deployment(client)
    pem, _ = certificate(ec.generate_private_key(ec.SECP384R1()))
    assert "EC on P-256" in blazar_error(add_key(client, "gov", pem), 400)


def test_a_certificate_or_name_used_twice_in_a_deployment_is_a_409(client: FlaskClient) -> None:
    deployment(client)
    pem, _ = certificate(ec_key())
    ok(add_key(client, "gov", pem), 201)
    assert "already has a key with this fingerprint (gov)" in blazar_error(add_key(client, "other", pem), 409)
    other, _ = certificate(ec_key())
    assert "already has a key with this name (gov)" in blazar_error(add_key(client, "gov", other), 409)


def test_another_projects_members_cannot_see_or_add_keys(client: FlaskClient) -> None:
    deployment(client)
    pem, _ = certificate(ec_key())
    ok(add_key(client, "gov", pem), 201)
    assert client.get("/v1/deployments/shop/keys", headers=OTHER).status_code == 404
    assert add_key(client, "mine", certificate(ec_key())[0], headers=OTHER).status_code == 404


def test_keys_go_with_their_deployment(client: FlaskClient, database) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import func, select

    from blazar_lite.deployments.models import DeploymentKey

    deployment(client)
    ok(add_key(client, "gov", certificate(ec_key())[0]), 201)
    assert client.delete("/v1/deployments/shop", headers=MEMBER).status_code == 204
    with database.read() as session:
        assert session.scalar(select(func.count()).select_from(DeploymentKey)) == 0
