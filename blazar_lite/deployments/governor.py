"""Authenticating a deployment's governor: `Authorization: Bearer <JWT>`.

The token is signed with the private key of one of the deployment's keys (RS256 or ES256), names
that key in its `kid` header, names the deployment in `aud` and carries a short `exp`. It is
checked against the key's certificate as stored now, so a revoked key stops working with the
next request. The governor then acts in the deployment's project: a key of role `admin` may
scale, a `read-only` key may only read.
"""

from __future__ import annotations

import datetime as dt

import jwt
from cryptography import x509
from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.auth.context import RequestContext
from blazar_lite.deployments.keys import ADMIN
from blazar_lite.deployments.models import Deployment, DeploymentKey
from blazar_lite.exceptions import Forbidden, Unauthorized

ALGORITHMS = ("RS256", "ES256")
# A governor signs a fresh token for each call or so; one that lives longer is refused, so a
# leaked token is of little use.
MAX_LIFETIME = dt.timedelta(hours=1)
# Clocks of the governor and the service may differ a little.
LEEWAY = dt.timedelta(seconds=30)
BEARER = "bearer "


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, else None."""
    if authorization and authorization[:len(BEARER)].lower() == BEARER:
        return authorization[len(BEARER):].strip() or None
    return None


def authenticate(session: Session, token: str, deployment: str, *, writes: bool,
                 request_id: str = "") -> RequestContext:
    """The context a governor's call runs in; 401 for a token that does not check out, 403 for
    a key that may not do this (another deployment's, or read-only for a write)."""
    try:
        header = jwt.get_unverified_header(token)
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError as exc:
        raise Unauthorized(f"The bearer token is not a JWT: {exc}.") from None
    kid, algorithm = header.get("kid"), header.get("alg")
    if algorithm not in ALGORITHMS:
        raise Unauthorized(f"The token is signed with {algorithm!r}; sign it with RS256 or ES256.")
    if not isinstance(kid, str) or not kid:
        raise Unauthorized("The token's header has no kid: name the deployment key that signed it.")
    audience = claims.get("aud")
    if audience != deployment:
        raise Forbidden(f"The token is for deployment {audience!r}, not {deployment}; a key works only for its "
                        "own deployment.")
    rows = session.execute(select(DeploymentKey, Deployment.project_id)
                           .join(Deployment, Deployment.id == DeploymentKey.deployment_id)
                           .where(Deployment.name == deployment, DeploymentKey.name == kid)).all()
    for key, project_id in rows:
        public_key = x509.load_pem_x509_certificate(key.certificate.encode()).public_key()
        try:
            verified = jwt.decode(token, public_key, algorithms=[algorithm], audience=deployment,  # type: ignore[arg-type]
                                  leeway=LEEWAY, options={"require": ["exp", "aud"]})
        except jwt.ExpiredSignatureError:
            raise Unauthorized("The token has expired; sign a new one.") from None
        except jwt.MissingRequiredClaimError as exc:
            raise Unauthorized(f"The token lacks the {exc.claim} claim.") from None
        except jwt.InvalidSignatureError:
            continue
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"The token was refused: {exc}.") from None
        expires = dt.datetime.fromtimestamp(verified["exp"], dt.UTC)
        if expires - dt.datetime.now(dt.UTC) > MAX_LIFETIME + LEEWAY:
            raise Unauthorized(f"The token lives too long: exp may be at most {MAX_LIFETIME} ahead.")
        if writes and key.role != ADMIN:
            raise Forbidden(f"Key {kid} is read-only: it may list the deployment's instances, not change them.")
        role = "member" if key.role == ADMIN else "reader"
        return RequestContext(user_id=f"governor:{kid}", project_id=project_id, roles=frozenset({role}),
                              request_id=request_id)
    if _signed_by_another_deployment(session, token, algorithm, kid, deployment):
        raise Forbidden(f"The token is signed by a key of another deployment; key {kid} cannot act on {deployment}.")
    raise Unauthorized(f"No key {kid} of deployment {deployment} verifies the token's signature (unknown or "
                       "revoked key, or the wrong private key).")


def _signed_by_another_deployment(session: Session, token: str, algorithm: str, kid: str, deployment: str) -> bool:
    certificates = session.scalars(select(DeploymentKey.certificate)
                                   .join(Deployment, Deployment.id == DeploymentKey.deployment_id)
                                   .where(Deployment.name != deployment, DeploymentKey.name == kid))
    for certificate in certificates:
        public_key = x509.load_pem_x509_certificate(certificate.encode()).public_key()
        try:
            jwt.decode(token, public_key, algorithms=[algorithm],  # type: ignore[arg-type]
                       options={"verify_aud": False, "verify_exp": False})
        except jwt.PyJWTError:
            continue
        return True
    return False
