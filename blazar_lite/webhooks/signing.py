"""Signing webhook bodies, and checking a signature as a receiver does.

The signature is an HMAC-SHA256, keyed by the receiver's secret, of `<timestamp>.<body>`, where
the timestamp is the Unix time of the attempt, sent in its own header. Signing the time with the
body lets a receiver refuse a captured request replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Mapping

from blazar_lite.exceptions import BadRequest

SIGNATURE_HEADER = "X-Blazar-Lite-Signature"
TIMESTAMP_HEADER = "X-Blazar-Lite-Timestamp"
EVENT_HEADER = "X-Blazar-Lite-Event"
DELIVERY_HEADER = "X-Blazar-Lite-Delivery"
SCHEME = "sha256="
# How far a receiver's clock and the attempt's timestamp may differ by default.
TOLERANCE_SECONDS = 300


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The value of the signature header for `body` sent at `timestamp`."""
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return SCHEME + mac.hexdigest()


def signed_headers(secret: str, body: bytes, event_type: str, delivery_id: str,
                   timestamp: int | None = None) -> dict[str, str]:
    """Every header of one attempt: content type, event, delivery id, timestamp and signature."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    return {"Content-Type": "application/json", EVENT_HEADER: event_type, DELIVERY_HEADER: delivery_id,
            TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: signature(secret, timestamp, body)}


def verify(secret: str, headers: Mapping[str, str], body: bytes, *, now: float | None = None,
           tolerance: int = TOLERANCE_SECONDS) -> bool:
    """True when `headers` carry a valid signature of `body` under `secret`, made within
    `tolerance` seconds of `now`: what a receiver checks before trusting an event."""
    lowered = {key.lower(): value for key, value in headers.items()}
    given = lowered.get(SIGNATURE_HEADER.lower(), "")
    try:
        timestamp = int(lowered.get(TIMESTAMP_HEADER.lower(), ""))
    except ValueError:
        return False
    now = time.time() if now is None else now
    if abs(now - timestamp) > tolerance:
        return False
    return hmac.compare_digest(given, signature(secret, timestamp, body))


SECRET_LENGTHS = (16, 128)
_URL = re.compile(r"^https?://[^\s/]+")


def read_secret(value: object, field: str) -> str:
    """A signing secret the caller chose, or a new random one when they chose none."""
    if value is None:
        return secrets.token_hex(32)
    shortest, longest = SECRET_LENGTHS
    if not isinstance(value, str) or not shortest <= len(value) <= longest or not value.isprintable() \
            or any(c.isspace() for c in value):
        raise BadRequest(f"Invalid {field}: give {shortest} to {longest} printable characters without spaces, "
                         "or leave it out for a random one.")
    return value


def read_url(value: object, field: str) -> str:
    """A receiver's URL: http:// or https://, with a host."""
    if not isinstance(value, str) or not _URL.match(value) or len(value) > 2048:
        raise BadRequest(f"Invalid {field} {value!r}: give an http:// or https:// URL.")
    return value
