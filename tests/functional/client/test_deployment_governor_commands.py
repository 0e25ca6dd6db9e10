"""`blazar-lite deployment shape instance …` with the caller's own credentials and as a governor
(a key file signing each request), `blazar-lite deployment key …`, and `key generate`, against a
served app without authentication (an admin of project "admin")."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)
from flask.testing import FlaskClient

from blazar_lite.client.commands.shape_instances import GOVERNOR_KEY_ENV, GOVERNOR_KEY_NAME_ENV
from blazar_lite.db import Database
from tests.conftest import PlacementClient
from tests.functional.client.conftest import Cli
from tests.functional.client.test_instance_commands import started_reservation, usage_error
from tests.functional.instances.test_instances import compute_node

INSTANCE = ("deployment", "shape", "instance")


@pytest.fixture
def shop(cli: Any, placement: PlacementClient) -> None:
    """A node with room, and deployment shop with shape web of 1 to 2 instances of 1 vCPU."""
    compute_node(placement, "a")
    cli.json("deployment", "create", "shop")
    cli.json("deployment", "shape", "create", "shop", "web", "--vcpus", "1", "--memory-mb", "512", "--min", "1",
             "--max", "2")


@pytest.fixture
def offline() -> Cli:
    """For the commands that contact no service (no --os-endpoint)."""
    return Cli(None)


def generate(offline: Any, tmp_path: Path, name: str, *args: str) -> tuple[Path, str]:
    """A key pair made by `key generate`: (its private key file, its certificate PEM)."""
    key_file = tmp_path / f"{name}.key"
    return key_file, offline.ok("deployment", "key", "generate", "--out", str(key_file), *args)


def add_key(cli: Any, tmp_path: Path, name: str, role: str = "admin", *args: str) -> Path:
    """A key of deployment shop made by `key generate` and registered by `key create`; its file."""
    key_file, certificate = generate(Cli(None), tmp_path, name, *args)
    result = cli.run("deployment", "key", "create", "shop", name, "--role", role, "--certificate", "-", "-f", "json",
                     input=certificate)
    assert result.exit_code == 0, result.stderr
    return key_file


def as_governor(key_file: Path, name: str) -> tuple[str, ...]:
    return ("--governor-key", str(key_file), "--key-name", name)


# With the caller's own credentials

def test_instance_launch_list_stop_start_and_delete(cli: Any, client: FlaskClient, shop: None) -> None:
    launched = cli.json(*INSTANCE, "launch", "shop", "web", "web-1")
    assert (launched["name"], launched["host"], launched["vcpus"], launched["status"]) == ("web-1", "a", 1, "ACTIVE")
    cli.json(*INSTANCE, "launch", "shop", "web", "web-2")
    assert [row["name"] for row in cli.rows(cli.ok(*INSTANCE, "list", "shop", "web"))] == ["web-1", "web-2"]
    assert cli.json(*INSTANCE, "stop", "shop", "web", "web-1")["status"] == "STOPPED"
    assert cli.json(*INSTANCE, "start", "shop", "web", "web-1")["status"] == "ACTIVE"
    assert cli.ok(*INSTANCE, "delete", "shop", "web", "web-2") == "Deleted instance web-2 of shape web.\n"
    assert [i["name"] for i in client.get("/v1/instances").get_json()["instances"]] == ["web-1"]


def test_launch_at_the_maximum_and_delete_at_the_minimum_exit_1_with_the_server_message(cli: Any, shop: None) -> None:
    cli.json(*INSTANCE, "launch", "shop", "web", "web-1")
    cli.json(*INSTANCE, "launch", "shop", "web", "web-2")
    assert cli.fails(*INSTANCE, "launch", "shop", "web", "web-3") == (
        "Shape web of deployment shop is at its scaling_maximum of 2 instances; raise it, or delete an instance "
        "first. (HTTP 409)")
    cli.ok(*INSTANCE, "delete", "shop", "web", "web-2")
    assert cli.fails(*INSTANCE, "delete", "shop", "web", "web-1") == (
        "Shape web of deployment shop is at its scaling_minimum of 1 instances; lower the minimum first to delete one. "
        "(HTTP 409)")


def test_launch_in_a_full_reservation_says_how_many_slots_are_left(cli: Any, client: FlaskClient,
                                                                   database: Database) -> None:
    _host, reservation = started_reservation(cli, client, database)
    cli.json("deployment", "create", "shop")
    cli.json("deployment", "shape", "create", "shop", "web", "--reservation", reservation["id"], "--min", "0",
             "--max", "3")
    assert cli.json(*INSTANCE, "launch", "shop", "web", "web-1")["reservation_id"] == reservation["id"]
    assert cli.fails(*INSTANCE, "launch", "shop", "web", "web-2") == (
        f"Shape web of deployment shop cannot grow inside reservation {reservation['id']}: 0 of its 1 slots are "
        "left. Delete an instance of the reservation, or point the template at another reservation. (HTTP 409)")


# Keys

def test_key_create_list_show_rename_and_delete(cli: Any, offline: Any, client: FlaskClient, tmp_path: Path,
                                                shop: None) -> None:
    _key_file, certificate = generate(offline, tmp_path, "gov")
    pem = tmp_path / "gov.pem"
    pem.write_text(certificate)
    created = cli.json("deployment", "key", "create", "shop", "gov", "--role", "admin", "--certificate", str(pem),
                       "--description", "autoscaler")
    assert (created["role"], created["description"], created["certificate"]) == ("admin", "autoscaler", certificate)
    assert created["fingerprint"] == x509.load_pem_x509_certificate(certificate.encode()).fingerprint(
        hashes.SHA256()).hex()
    assert cli.rows(cli.ok("deployment", "key", "list", "shop")) == [
        {"name": "gov", "role": "admin", "fingerprint": created["fingerprint"], "description": "autoscaler",
         "created_at": created["created_at"]}]
    shown = cli.fields(cli.ok("deployment", "key", "show", "shop", "gov"))
    assert shown["fingerprint"] == created["fingerprint"] and "certificate" not in shown
    assert cli.json("deployment", "key", "show", "shop", "gov") == created
    assert cli.json("deployment", "key", "rename", "shop", "gov", "scaler")["id"] == created["id"]
    assert cli.ok("deployment", "key", "delete", "shop", "scaler") == "Revoked key scaler of deployment shop.\n"
    assert client.get("/v1/deployments/shop/keys").get_json()["keys"] == []


def test_key_create_of_a_certificate_the_service_refuses_exits_1_with_its_message(cli: Any, tmp_path: Path,
                                                                                   shop: None) -> None:
    pem = tmp_path / "not.pem"
    pem.write_text("not a certificate")
    assert cli.fails("deployment", "key", "create", "shop", "gov", "--role", "admin", "--certificate", str(pem)) == (
        "Invalid certificate: give a public certificate in PEM (-----BEGIN CERTIFICATE-----). (HTTP 400)")
    assert "'owner' is not one of 'admin', 'read-only'" in usage_error(
        cli, "deployment", "key", "create", "shop", "gov", "--role", "owner", "--certificate", str(pem))


@pytest.mark.parametrize(("key_type", "key_class"), [("ec", ec.EllipticCurvePrivateKey),
                                                     ("rsa", rsa.RSAPrivateKey)])
def test_key_generate_writes_a_private_key_only_its_owner_reads(offline: Any, tmp_path: Path, key_type: str,
                                                               key_class: type) -> None:
    key_file, certificate = generate(offline, tmp_path, "gov", "--type", key_type)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    private_key = load_pem_private_key(key_file.read_bytes(), password=None)
    assert isinstance(private_key, key_class)
    public = x509.load_pem_x509_certificate(certificate.encode()).public_key()
    assert public.public_numbers() == private_key.public_key().public_numbers()  # type: ignore[union-attr]


def test_key_generate_never_overwrites_a_file_and_may_write_the_certificate(offline: Any, tmp_path: Path) -> None:
    key_file = tmp_path / "gov.key"
    key_file.write_text("the key a governor signs with")
    assert offline.fails("deployment", "key", "generate", "--out", str(key_file)) == (
        f"{key_file} already exists; choose another --out (a private key is never overwritten).")
    assert key_file.read_text() == "the key a governor signs with"
    new_key, certificate = tmp_path / "new.key", tmp_path / "new.crt"
    assert offline.ok("deployment", "key", "generate", "--out", str(new_key), "--certificate-out",
                      str(certificate)) == (
        f"Wrote the private key to {new_key} and its certificate to {certificate}.\n")
    assert certificate.read_text().startswith("-----BEGIN CERTIFICATE-----\n")


# As a governor

def test_a_governor_with_an_admin_key_scales_the_shape(cli: Any, client: FlaskClient, tmp_path: Path,
                                                       shop: None) -> None:
    governor = as_governor(add_key(cli, tmp_path, "gov"), "gov")
    launched = cli.json(*INSTANCE, "launch", "shop", "web", "web-1", *governor)
    assert (launched["user_id"], launched["project_id"]) == ("governor:gov", "admin")
    assert [i["name"] for i in cli.json(*INSTANCE, "list", "shop", "web", *governor)] == ["web-1"]
    assert cli.json(*INSTANCE, "stop", "shop", "web", "web-1", *governor)["status"] == "STOPPED"
    assert cli.json(*INSTANCE, "start", "shop", "web", "web-1", *governor)["status"] == "ACTIVE"
    cli.json(*INSTANCE, "launch", "shop", "web", "web-2", *governor)
    assert cli.fails(*INSTANCE, "launch", "shop", "web", "web-3", *governor).startswith(
        "Shape web of deployment shop is at its scaling_maximum of 2 instances")
    cli.ok(*INSTANCE, "delete", "shop", "web", "web-2", *governor)
    assert [i["name"] for i in client.get("/v1/instances").get_json()["instances"]] == ["web-1"]


def test_a_governor_with_an_rsa_key_signs_rs256(cli: Any, tmp_path: Path, shop: None) -> None:
    governor = as_governor(add_key(cli, tmp_path, "gov", "admin", "--type", "rsa"), "gov")
    assert cli.json(*INSTANCE, "launch", "shop", "web", "web-1", *governor)["user_id"] == "governor:gov"


def test_a_governor_key_may_come_from_the_environment(cli: Any, tmp_path: Path, shop: None) -> None:
    key_file = add_key(cli, tmp_path, "gov")
    environment = {GOVERNOR_KEY_ENV: str(key_file), GOVERNOR_KEY_NAME_ENV: "gov"}
    assert cli.json(*INSTANCE, "launch", "shop", "web", "web-1", env=environment)["user_id"] == "governor:gov"


def test_a_read_only_key_lists_but_gets_the_403_message_for_a_launch(cli: Any, tmp_path: Path, shop: None) -> None:
    governor = as_governor(add_key(cli, tmp_path, "reader", "read-only"), "reader")
    assert cli.json(*INSTANCE, "list", "shop", "web", *governor) == []
    assert cli.fails(*INSTANCE, "launch", "shop", "web", "web-1", *governor) == (
        "Key reader is read-only: it may list the deployment's instances, not change them. (HTTP 403)")


def test_a_revoked_or_misnamed_key_gets_the_401_message(cli: Any, tmp_path: Path, shop: None) -> None:
    key_file = add_key(cli, tmp_path, "gov")
    assert cli.fails(*INSTANCE, "list", "shop", "web", *as_governor(key_file, "other")) == (
        "No key other of deployment shop verifies the token's signature (unknown or revoked key, or the wrong "
        "private key). (HTTP 401)")
    cli.ok("deployment", "key", "delete", "shop", "gov")
    assert "No key gov of deployment shop verifies" in cli.fails(*INSTANCE, "list", "shop", "web",
                                                                 *as_governor(key_file, "gov"))


def test_a_governor_key_file_that_cannot_be_used_is_a_clean_error(cli: Any, tmp_path: Path, shop: None) -> None:
    missing = tmp_path / "missing.key"
    assert cli.fails(*INSTANCE, "list", "shop", "web", *as_governor(missing, "gov")) == (
        f"Cannot read the governor key {missing}: No such file or directory.")
    not_a_key = tmp_path / "not.key"
    not_a_key.write_text("hello")
    assert cli.fails(*INSTANCE, "list", "shop", "web", *as_governor(not_a_key, "gov")) == (
        f"The governor key {not_a_key} is not a PEM private key.")
    encrypted = tmp_path / "encrypted.key"
    encrypted.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(b"secret")))
    assert cli.fails(*INSTANCE, "list", "shop", "web", *as_governor(encrypted, "gov")) == (
        f"The governor key {encrypted} is encrypted; give it unencrypted.")
    ed = tmp_path / "ed25519.key"
    ed.write_bytes(ed25519.Ed25519PrivateKey.generate().private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    assert cli.fails(*INSTANCE, "list", "shop", "web", *as_governor(ed, "gov")) == (
        f"The governor key {ed} is Ed25519; a governor key must be RSA (RS256) or EC on P-256 (ES256).")


def test_a_governor_key_without_its_name_is_a_usage_error(cli: Any, tmp_path: Path, shop: None) -> None:
    key_file = add_key(cli, tmp_path, "gov")
    assert "--governor-key and --key-name go together" in usage_error(
        cli, *INSTANCE, "list", "shop", "web", "--governor-key", str(key_file))
    assert "--governor-key and --key-name go together" in usage_error(
        cli, *INSTANCE, "list", "shop", "web", "--key-name", "gov")


def test_a_governor_without_an_endpoint_is_not_sent_to_keystones_catalog(offline: Any, tmp_path: Path) -> None:
    key_file, _certificate = generate(offline, tmp_path, "gov")
    assert "give its URL with --os-endpoint" in usage_error(
        offline, *INSTANCE, "list", "shop", "web", *as_governor(key_file, "gov"), "--os-auth-url",
        "http://keystone.invalid:5000/v3")
