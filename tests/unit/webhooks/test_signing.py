"""Webhook signatures: an HMAC-SHA256 of `<timestamp>.<body>` under the receiver's secret, and
the check a receiver makes; and the growing wait between delivery attempts."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac

from blazar_lite.webhooks.delivery import MAX_RETRY_DELAY, DeliveryPolicy
from blazar_lite.webhooks.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, signature, signed_headers, verify

BODY = b'{"type": "capacity-offer"}'


def test_the_signature_is_an_hmac_of_the_timestamp_and_the_body() -> None:
    expected = hmac.new(b"s3cret-s3cret-16", b"1700000000." + BODY, hashlib.sha256).hexdigest()
    assert signature("s3cret-s3cret-16", 1700000000, BODY) == "sha256=" + expected


def test_a_receiver_accepts_what_was_signed_with_its_secret() -> None:
    headers = signed_headers("s3cret-s3cret-16", BODY, "capacity-offer", "d1", timestamp=1700000000)
    assert headers["X-Blazar-Lite-Event"] == "capacity-offer" and headers["X-Blazar-Lite-Delivery"] == "d1"
    assert verify("s3cret-s3cret-16", headers, BODY, now=1700000010)
    # Header names are case-insensitive in HTTP.
    assert verify("s3cret-s3cret-16", {k.lower(): v for k, v in headers.items()}, BODY, now=1700000010)


def test_a_receiver_refuses_another_secret_a_changed_body_or_an_old_timestamp() -> None:
    headers = signed_headers("s3cret-s3cret-16", BODY, "capacity-offer", "d1", timestamp=1700000000)
    assert not verify("another-secret-16", headers, BODY, now=1700000000)
    assert not verify("s3cret-s3cret-16", headers, BODY + b" ", now=1700000000)
    assert not verify("s3cret-s3cret-16", headers, BODY, now=1700000000 + 301)
    assert not verify("s3cret-s3cret-16", {**headers, TIMESTAMP_HEADER: "1700000001"}, BODY, now=1700000000)
    assert not verify("s3cret-s3cret-16", {**headers, TIMESTAMP_HEADER: "soon"}, BODY, now=1700000000)
    assert not verify("s3cret-s3cret-16", {k: v for k, v in headers.items() if k != SIGNATURE_HEADER}, BODY,
                      now=1700000000)


def test_the_wait_between_attempts_doubles_up_to_an_hour() -> None:
    policy = DeliveryPolicy(retry_delay=dt.timedelta(seconds=10))
    assert [policy.delay(n).total_seconds() for n in (1, 2, 3, 4)] == [10, 20, 40, 80]
    assert policy.delay(30) == MAX_RETRY_DELAY
