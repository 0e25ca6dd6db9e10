"""A governor's side of the governor API: its key, the tokens it signs, and a client that sends
them instead of a Keystone token.

A governor holds the private key of one of a deployment's keys. Each request carries a fresh
JWT signed with it (RS256 for an RSA key, ES256 for an EC key on P-256), naming the key in its
`kid` header and the deployment in `aud`, and living a few minutes: the service refuses tokens
that live longer than an hour, and a short life makes a leaked token of little use.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)
from cryptography.x509.oid import NameOID
from keystoneauth1 import plugin as ks_plugin
from keystoneauth1 import session as ks_session

from blazar_lite.client.deployments import ShapeInstancesClient
from blazar_lite.client.http import DEFAULT_ENDPOINT, ClientError, V1Client

TOKEN_LIFETIME = dt.timedelta(minutes=5)
KEY_TYPES = ("ec", "rsa")
RSA_BITS = 3072
# Keys a PEM file may hold that no token algorithm of the service's takes, by what to call them.
_OTHER_KEYS = ((ed25519.Ed25519PrivateKey, "Ed25519"), (ed448.Ed448PrivateKey, "Ed448"), (dsa.DSAPrivateKey, "DSA"))


@dataclass(frozen=True)
class GovernorKey:
    """A deployment key's private half, under the key's name in the deployment."""

    name: str
    private_key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
    algorithm: str

    def token(self, deployment: str, lifetime: dt.timedelta = TOKEN_LIFETIME) -> str:
        """A token for calls on `deployment`, valid for `lifetime` from now."""
        now = dt.datetime.now(dt.UTC)
        claims = {"aud": deployment, "iat": now, "exp": now + lifetime}
        return jwt.encode(claims, self.private_key, algorithm=self.algorithm, headers={"kid": self.name})


def algorithm_for(private_key: Any, source: str = "") -> str:
    """RS256 for an RSA key, ES256 for an EC key on P-256; ClientError for any other key, which
    the service would not take (`source`, the key's file, names it in the message)."""
    if isinstance(private_key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(private_key, ec.EllipticCurvePrivateKey) and isinstance(private_key.curve, ec.SECP256R1):
        return "ES256"
    if isinstance(private_key, ec.EllipticCurvePrivateKey):
        kind = f"EC on {private_key.curve.name}"
    else:
        kind = next((name for types, name in _OTHER_KEYS if isinstance(private_key, types)), "of another type")
    named = f"The governor key {source}" if source else "The governor key"
    raise ClientError(None, f"{named} is {kind}; a governor key must be RSA (RS256) or EC on P-256 (ES256).")


def load_governor_key(path: str, name: str) -> GovernorKey:
    """The unencrypted PEM private key in the file `path`, as the deployment key `name`;
    ClientError when the file cannot be read or holds no usable key."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ClientError(None, f"Cannot read the governor key {path}: {exc.strerror or exc}.") from None
    try:
        private_key = load_pem_private_key(data, password=None)
    except TypeError:
        # A governor signs unattended, so there is no one to ask for a passphrase.
        raise ClientError(None, f"The governor key {path} is encrypted; give it unencrypted.") from None
    except ValueError:
        raise ClientError(None, f"The governor key {path} is not a PEM private key.") from None
    return GovernorKey(name, private_key, algorithm_for(private_key, path))  # type: ignore[arg-type]


class GovernorAuth(ks_plugin.FixedEndpointPlugin):
    """keystoneauth1 auth that signs a fresh token for each request instead of sending a
    Keystone token: the service takes a governor's token without asking Keystone."""

    def __init__(self, key: GovernorKey, deployment: str, endpoint: str) -> None:
        super().__init__(endpoint)
        self.key = key
        self.deployment = deployment

    def get_headers(self, session: ks_session.Session, **kwargs: Any) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key.token(self.deployment)}"}


class GovernorClient:
    """The governor API of one deployment, as the holder of one of its keys: `shape_instances`
    lists, launches, deletes, starts and stops the deployment's shapes' instances."""

    def __init__(self, key: GovernorKey, deployment: str, endpoint: str | None = None, *,
                 timeout: float = 30.0) -> None:
        url = endpoint or DEFAULT_ENDPOINT
        session = ks_session.Session(auth=GovernorAuth(key, deployment, url), timeout=timeout,
                                     app_name="blazar-lite")
        self.api = V1Client(session, {"endpoint_override": url})
        self.shape_instances = ShapeInstancesClient(self.api)


def generate_private_key(key_type: str = "ec") -> rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey:
    """A new private key a governor can sign with: EC on P-256 (ES256), or RSA (RS256)."""
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    if key_type == "ec":
        return ec.generate_private_key(ec.SECP256R1())
    raise ValueError(f"key type {key_type!r} is not one of {', '.join(KEY_TYPES)}")


def private_key_pem(private_key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> bytes:
    """The key as unencrypted PKCS#8 PEM, as load_governor_key reads it."""
    return private_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())


def self_signed_certificate(private_key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, common_name: str,
                            days: int = 365) -> str:
    """A PEM certificate of the key's public half, signed by the key itself, for a deployment
    key's `certificate`: the service trusts the key because a member registered it, not
    because of who signed it."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    certificate = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                   .public_key(private_key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
                   .sign(private_key, hashes.SHA256()))
    return certificate.public_bytes(Encoding.PEM).decode()
