"""Queueing webhook events and delivering them: signed POSTs, retried with a growing delay.

An event is queued in the transaction of the change it reports, so it exists exactly when the
change does. A scheduler process delivers it later, outside any lease's transaction: a receiver
that is slow or down delays only its own events, never a lease.

Delivering takes three short steps. A claim marks due events SENDING for one worker, committed at
once (on PostgreSQL with FOR UPDATE SKIP LOCKED, so two schedulers never claim the same event);
the POST runs with no transaction open; the outcome and the attempt are recorded in a transaction
of their own. An event whose claim expired while SENDING belongs to a process that died mid-send:
it is due again, so an event is delivered at least once, and its delivery id lets a receiver
drop a repeat.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
import urllib.error
import urllib.request
import uuid as uuidlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, or_, select
from sqlalchemy.orm import Session

from blazar_lite.db import Database, utcnow
from blazar_lite.exceptions import BadRequest
from blazar_lite.leases.dates import format_date
from blazar_lite.webhooks.models import DELIVERED, FAILED, PENDING, SENDING, WebhookAttempt, WebhookDelivery
from blazar_lite.webhooks.signing import signed_headers

LOG = logging.getLogger(__name__)

# Outcomes of one attempt; DELIVERED and FAILED end the delivery.
RETRY = "RETRY"
MAX_RETRY_DELAY = dt.timedelta(hours=1)
# What is kept of a receiver's answer to a failed attempt, for the event history.
ANSWER_EXCERPT = 500
BATCH = 20
STATUSES = (PENDING, SENDING, DELIVERED, FAILED)
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


@dataclass(frozen=True)
class Receiver:
    """Where a source's events go, and the secret that signs them."""

    url: str
    secret: str


# Finds the receiver of a source (e.g. a deployment's governor) by the source's id; None when the
# source is gone or has no receiver any more.
ReceiverLookup = Callable[[Session, str], Receiver | None]
# POSTs a body with headers within a timeout; returns the status code and the start of the
# answer, or raises OSError when no answer came.
Sender = Callable[[str, bytes, Mapping[str, str], float], tuple[int, str]]


@dataclass(frozen=True)
class DeliveryPolicy:
    """How long a POST may take, how often an event is tried, and the wait before the first
    retry (doubled after each failure, at most an hour)."""

    timeout: float = 5.0
    max_attempts: int = 8
    retry_delay: dt.timedelta = dt.timedelta(seconds=10)

    @property
    def claim_timeout(self) -> dt.timedelta:
        # Longer than any POST may take, so that a claim only expires when its process died.
        return dt.timedelta(seconds=self.timeout + 60)

    def delay(self, attempts: int) -> dt.timedelta:
        """The wait before trying again after `attempts` failed attempts."""
        return min(self.retry_delay * 2 ** max(attempts - 1, 0), MAX_RETRY_DELAY)


@dataclass(frozen=True)
class AttemptView:
    attempt: int
    url: str | None
    started_at: dt.datetime
    duration_ms: int
    status_code: int | None
    error: str
    outcome: str


@dataclass(frozen=True)
class DeliveryView:
    id: str
    event_type: str
    status: str
    payload: dict[str, Any]
    created_at: dt.datetime
    next_attempt_at: dt.datetime | None
    delivered_at: dt.datetime | None
    attempts: list[AttemptView]


@dataclass(frozen=True)
class DeliveryResult:
    delivery_id: str
    attempt: int
    outcome: str
    detail: str = ""


@dataclass(frozen=True)
class _Claim:
    id: str
    source: str
    source_id: str
    event_type: str
    payload: str
    attempt: int


def enqueue(session: Session, *, source: str, source_id: str, project_id: str, event_type: str,
            fields: Mapping[str, Any], now: dt.datetime | None = None) -> str:
    """Queue an event for the receiver of (`source`, `source_id`), in the caller's transaction.
    The body is {"id", "type", "created_at", "project_id", **fields}; returns its id."""
    now = now or utcnow()
    delivery_id = str(uuidlib.uuid4())
    body = {"id": delivery_id, "type": event_type, "created_at": format_date(now), "project_id": project_id,
            **fields}
    session.add(WebhookDelivery(id=delivery_id, source=source, source_id=source_id, project_id=project_id,
                                event_type=event_type, payload=json.dumps(body, sort_keys=True), status=PENDING,
                                attempts=0, next_attempt_at=now, created_at=now))
    session.flush()
    return delivery_id


def _due(now: dt.datetime):  # type: ignore[no-untyped-def]
    return or_(and_(WebhookDelivery.status == PENDING, WebhookDelivery.next_attempt_at <= now),
               and_(WebhookDelivery.status == SENDING, WebhookDelivery.claimed_until <= now))


def _claim(database: Database, worker_id: str, now: dt.datetime, policy: DeliveryPolicy, limit: int) -> list[_Claim]:
    with database.transaction() as session:
        stmt = select(WebhookDelivery).where(_due(now)).order_by(WebhookDelivery.next_attempt_at,
                                                                  WebhookDelivery.id).limit(limit)
        if session.get_bind().dialect.name == "postgresql":
            stmt = stmt.with_for_update(skip_locked=True)
        claims = []
        for row in session.scalars(stmt):
            row.status = SENDING
            row.claimed_by = worker_id
            row.claimed_until = now + policy.claim_timeout
            row.attempts += 1
            claims.append(_Claim(row.id, row.source, row.source_id, row.event_type, row.payload, row.attempts))
        return claims


def http_post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> tuple[int, str]:
    """POST with the standard library; redirects are not followed (a 3xx is a failed attempt),
    since following one would send the signed event somewhere its owner did not name."""
    opener = urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with opener.open(request, timeout=timeout) as answer:
            return answer.status, answer.read(ANSWER_EXCERPT).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read(ANSWER_EXCERPT).decode("utf-8", "replace")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _post(claim: _Claim, receiver: Receiver, send: Sender, timeout: float) -> tuple[int | None, str]:
    body = claim.payload.encode()
    headers = signed_headers(receiver.secret, body, claim.event_type, claim.id)
    try:
        status, answer = send(receiver.url, body, headers, timeout)
    except (OSError, ValueError) as exc:
        # URLError, timeouts and refused connections are OSErrors; a URL urllib cannot use, ValueError.
        reason = getattr(exc, "reason", None) or exc
        return None, f"{type(exc).__name__}: {reason}"
    if 200 <= status < 300:
        return status, ""
    return status, f"HTTP {status}: {answer.strip()}"[:ANSWER_EXCERPT]


def _attempt(database: Database, claim: _Claim, worker_id: str, lookups: Mapping[str, ReceiverLookup],
             send: Sender, policy: DeliveryPolicy, now: dt.datetime) -> DeliveryResult:
    with database.read() as session:
        lookup = lookups.get(claim.source)
        receiver = lookup(session, claim.source_id) if lookup is not None else None
    started = utcnow()
    clock = time.monotonic()
    if receiver is None:
        status, error = None, f"no receiver: the {claim.source} is gone or has no webhook URL any more"
        outcome = FAILED
    else:
        status, error = _post(claim, receiver, send, policy.timeout)
        outcome = DELIVERED if not error else (FAILED if claim.attempt >= policy.max_attempts else RETRY)
    duration_ms = int((time.monotonic() - clock) * 1000)
    with database.transaction() as session:
        session.add(WebhookAttempt(delivery_id=claim.id, attempt=claim.attempt, url=receiver.url if receiver else None,
                                   started_at=started, duration_ms=duration_ms, status_code=status, error=error,
                                   outcome=outcome))
        row = session.get(WebhookDelivery, claim.id, with_for_update=True)
        if row is None or row.status != SENDING or row.claimed_by != worker_id:
            # Our claim expired and another scheduler took the event over: it records its own outcome.
            return DeliveryResult(claim.id, claim.attempt, "lost", error)
        row.claimed_by, row.claimed_until = None, None
        if outcome == RETRY:
            row.status = PENDING
            row.next_attempt_at = now + policy.delay(claim.attempt)
        else:
            row.status = outcome
            if outcome == DELIVERED:
                row.delivered_at = utcnow()
    if outcome != DELIVERED:
        LOG.warning("webhook event %s (%s) attempt %d: %s; %s", claim.id, claim.event_type, claim.attempt, error,
                    "will retry" if outcome == RETRY else "giving up")
    return DeliveryResult(claim.id, claim.attempt, outcome, error)


def deliver_due(database: Database, lookups: Mapping[str, ReceiverLookup], *, worker_id: str,
                policy: DeliveryPolicy = DeliveryPolicy(), send: Sender = http_post,
                now: dt.datetime | None = None) -> list[DeliveryResult]:
    """One delivery pass: claim the events due at `now` (default: the current time) a batch at a
    time, and POST each to its receiver, until none is due. What happened to each attempt."""
    results: list[DeliveryResult] = []
    while True:
        moment = now or utcnow()
        claims = _claim(database, worker_id, moment, policy, BATCH)
        if not claims:
            return results
        for claim in claims:
            results.append(_attempt(database, claim, worker_id, lookups, send, policy, moment))


def read_filters(filters: Mapping[str, str], event_types: tuple[str, ...]) -> tuple[str | None, str | None, int]:
    """(status, type, limit) from the query of an event history, each checked: status one of
    the delivery statuses, type one of `event_types`, limit 1 to MAX_LIMIT (default 100)."""
    status, event_type = filters.get("status"), filters.get("type")
    if status is not None and status not in STATUSES:
        raise BadRequest(f"Invalid status {status!r}: give one of {', '.join(STATUSES)}.")
    if event_type is not None and event_type not in event_types:
        raise BadRequest(f"Invalid type {event_type!r}: give one of {', '.join(event_types)}.")
    text = filters.get("limit", str(DEFAULT_LIMIT))
    if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise BadRequest(f"Invalid limit {text!r}: give a whole number from 1 to {MAX_LIMIT}.")
    return status, event_type, int(text)


def list_deliveries(session: Session, source: str, source_id: str, status: str | None = None,
                    event_type: str | None = None, limit: int = DEFAULT_LIMIT) -> list[DeliveryView]:
    """A source's events, newest first, each with every attempt made to deliver it."""
    stmt = select(WebhookDelivery).where(WebhookDelivery.source == source, WebhookDelivery.source_id == source_id)
    if status is not None:
        stmt = stmt.where(WebhookDelivery.status == status)
    if event_type is not None:
        stmt = stmt.where(WebhookDelivery.event_type == event_type)
    rows = session.scalars(stmt.order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id).limit(limit)).all()
    attempts: dict[str, list[AttemptView]] = {row.id: [] for row in rows}
    if rows:
        for a in session.scalars(select(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(list(attempts)))
                                 .order_by(WebhookAttempt.delivery_id, WebhookAttempt.attempt, WebhookAttempt.id)):
            attempts[a.delivery_id].append(AttemptView(a.attempt, a.url, a.started_at, a.duration_ms, a.status_code,
                                                       a.error, a.outcome))
    return [DeliveryView(row.id, row.event_type, row.status, json.loads(row.payload), row.created_at,
                         row.next_attempt_at if row.status in (PENDING, SENDING) else None, row.delivered_at,
                         attempts[row.id]) for row in rows]


def forget(session: Session, source: str, source_id: str) -> None:
    """Drop a source's events and their attempts (when the source itself is deleted)."""
    ids = select(WebhookDelivery.id).where(WebhookDelivery.source == source, WebhookDelivery.source_id == source_id)
    session.execute(delete(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(ids)))
    session.execute(delete(WebhookDelivery).where(WebhookDelivery.source == source,
                                                  WebhookDelivery.source_id == source_id))
