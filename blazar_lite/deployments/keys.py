"""A deployment's keys: public certificates a governor signs with, each with a role.

A certificate is given in PEM; its SHA-256 fingerprint (of the DER form) identifies it. Only RSA
keys and EC keys on P-256 are taken, the ones RS256 and ES256 tokens are signed with.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding
from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.deployments import service
from blazar_lite.deployments.models import DeploymentKey
from blazar_lite.exceptions import BadRequest, Conflict, NotFound
from blazar_lite.instances import requests as instance_requests

ADMIN, READ_ONLY = "admin", "read-only"
ROLES = (ADMIN, READ_ONLY)
FIELDS = frozenset({"name", "description", "role", "certificate"})


@dataclass(frozen=True)
class KeyView:
    id: str
    name: str
    deployment: str
    description: str
    role: str
    fingerprint: str
    certificate: str
    created_at: dt.datetime


def read_certificate(value: object) -> tuple[str, str]:
    """(PEM text, fingerprint) of a certificate a governor may sign with; 400 otherwise."""
    if not isinstance(value, str) or "-----BEGIN CERTIFICATE-----" not in value:
        raise BadRequest("Invalid certificate: give a public certificate in PEM (-----BEGIN CERTIFICATE-----).")
    try:
        certificate = x509.load_pem_x509_certificate(value.encode())
    except ValueError as exc:
        raise BadRequest(f"Invalid certificate: it cannot be read as PEM ({exc}).") from None
    key = certificate.public_key()
    if not isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey) or (
            isinstance(key, ec.EllipticCurvePublicKey) and not isinstance(key.curve, ec.SECP256R1)):
        raise BadRequest("Invalid certificate: its key must be RSA (for RS256) or EC on P-256 (for ES256).")
    return certificate.public_bytes(Encoding.PEM).decode(), certificate.fingerprint(hashes.SHA256()).hex()


def _view(row: DeploymentKey, deployment: str) -> KeyView:
    return KeyView(row.id, row.name, deployment, row.description, row.role, row.fingerprint, row.certificate,
                   row.created_at)


def _key(session: Session, deployment_id: str, deployment: str, name: str) -> DeploymentKey:
    row = session.scalar(select(DeploymentKey).where(DeploymentKey.deployment_id == deployment_id,
                                                     DeploymentKey.name == name))
    if row is None:
        raise NotFound(f"Key {name} not found in deployment {deployment}.")
    return row


def list_keys(session: Session, project_id: str, deployment: str) -> list[KeyView]:
    owner = service.find_deployment(session, project_id, deployment)
    rows = session.scalars(select(DeploymentKey).where(DeploymentKey.deployment_id == owner.id)
                           .order_by(DeploymentKey.name))
    return [_view(row, owner.name) for row in rows]


def get_key(session: Session, project_id: str, deployment: str, name: str) -> KeyView:
    owner = service.find_deployment(session, project_id, deployment)
    return _view(_key(session, owner.id, owner.name, name), owner.name)


def create_key(session: Session, project_id: str, deployment: str, body: object) -> KeyView:
    data = instance_requests.read_object(body, FIELDS, "a key")
    name = service.read_name(data.get("name"), "key")
    role = data.get("role")
    if role not in ROLES:
        raise BadRequest(f"Invalid role {role!r}: give {ADMIN} (may scale) or {READ_ONLY} (may only read).")
    # As before: any empty value (0, [], "") stands for no description.
    description = service.read_description(data.get("description") or None)
    pem, fingerprint = read_certificate(data.get("certificate"))
    owner = service.find_deployment(session, project_id, deployment, lock=True)
    for field, value in (("name", name), ("fingerprint", fingerprint)):
        clash = session.scalar(select(DeploymentKey.name).where(DeploymentKey.deployment_id == owner.id,
                                                                getattr(DeploymentKey, field) == value))
        if clash is not None:
            raise Conflict(f"Deployment {deployment} already has a key with this {field} ({clash}).")
    row = DeploymentKey(id=str(uuidlib.uuid4()), deployment_id=owner.id, name=name, description=description,
                        role=role, fingerprint=fingerprint, certificate=pem)
    session.add(row)
    session.flush()
    return _view(row, owner.name)


def rename_key(session: Session, project_id: str, deployment: str, name: str, body: object) -> KeyView:
    data = instance_requests.read_object(body, frozenset({"name"}), "a rename")
    new_name = service.read_name(data.get("name"), "key")
    owner = service.find_deployment(session, project_id, deployment, lock=True)
    row = _key(session, owner.id, owner.name, name)
    if new_name != name and session.scalar(select(DeploymentKey.id).where(DeploymentKey.deployment_id == owner.id,
                                                                          DeploymentKey.name == new_name)):
        raise Conflict(f"Deployment {deployment} already has a key named {new_name}; choose another name.")
    row.name = new_name
    session.flush()
    return _view(row, owner.name)


def delete_key(session: Session, project_id: str, deployment: str, name: str) -> None:
    """Revoke a key: from this commit on it is not accepted."""
    owner = service.find_deployment(session, project_id, deployment, lock=True)
    session.delete(_key(session, owner.id, owner.name, name))
    session.flush()
