"""Usage enforcement: the operator's limits on leases, and an external policy service.

The limits (`[enforcement]` settings): a maximum lease duration; at most so many hosts and
instance slots per lease, and per project at any instant; and an extension window (a lease's end
may move later only within so many hours of it). Projects listed as exempt are held to none of
them. They are checked on the lease as written, inside the create's or update's transaction, so
a refusal rolls everything back; the per-project limits lock the project first, so two requests
of one project are counted one after the other.

The external service is asked before that transaction opens (a slow answer never holds a lock):
POST <url>/check-create and <url>/check-update with the lease; 2xx allows, 403 denies with its
`message`; no answer, or any other status, follows `external_service_failure` (deny: 503; allow).
When a lease ends, <url>/on-end is told through the webhook queue, so the end never waits for it.
Requests are signed as webhooks are when a secret is set.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from blazar_lite.exceptions import Forbidden, ServiceUnavailable
from blazar_lite.leases import history
from blazar_lite.leases.dates import as_utc, describe_date
from blazar_lite.leases.models import TERMINATED, Lease, ReservationBooking
from blazar_lite.settings import Settings
from blazar_lite.webhooks import delivery
from blazar_lite.webhooks.signing import signed_headers

LOG = logging.getLogger(__name__)

SOURCE = "enforcement"
ON_END = "on-end"
DENY, ALLOW = "deny", "allow"


@dataclass(frozen=True)
class UsageRules:
    """The operator's limits; None (or empty) means no such limit."""

    max_lease_duration: dt.timedelta | None = None
    exempt_projects: frozenset[str] = field(default_factory=frozenset)
    max_hosts_per_lease: int | None = None
    max_slots_per_lease: int | None = None
    max_hosts_per_project: int | None = None
    max_slots_per_project: int | None = None
    extension_window: dt.timedelta | None = None
    external_service_url: str | None = None
    external_service_timeout: float = 5.0
    external_service_failure: str = DENY
    external_service_secret: str | None = None

    @property
    def limits_projects(self) -> bool:
        return self.max_hosts_per_project is not None or self.max_slots_per_project is not None


NO_LIMITS = UsageRules()


def usage_rules(settings: Settings) -> UsageRules:
    """The `[enforcement]` settings as rules (a 0 or empty setting: no such limit)."""
    def limit(value: int) -> int | None:
        return value or None

    return UsageRules(
        max_lease_duration=dt.timedelta(minutes=settings.enforcement_max_lease_duration)
        if settings.enforcement_max_lease_duration else None,
        exempt_projects=frozenset(p.strip() for p in settings.enforcement_exempt_projects.split(",") if p.strip()),
        max_hosts_per_lease=limit(settings.enforcement_max_hosts_per_lease),
        max_slots_per_lease=limit(settings.enforcement_max_slots_per_lease),
        max_hosts_per_project=limit(settings.enforcement_max_hosts_per_project),
        max_slots_per_project=limit(settings.enforcement_max_slots_per_project),
        extension_window=dt.timedelta(hours=settings.enforcement_extension_window)
        if settings.enforcement_extension_window else None,
        external_service_url=settings.enforcement_external_service_url or None,
        external_service_timeout=float(settings.enforcement_external_service_timeout),
        external_service_failure=settings.enforcement_external_service_failure,
        external_service_secret=settings.enforcement_external_service_secret or None)


def _refuse(rule: str, message: str) -> Forbidden:
    return Forbidden(f"{message} (rule: {rule}).", rule=rule)


def _span(delta: dt.timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    days, rest = divmod(minutes, 1440)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    return " ".join(part for part in parts if part) or "0 min"


def _lock_project(session: Session, project_id: str) -> None:
    """Serialise the limit checks of one project's requests. SQLite writes one transaction at a
    time already; PostgreSQL takes a transaction-scoped advisory lock on the project's name."""
    if session.get_bind().dialect.name != "postgresql":
        return
    key = int.from_bytes(hashlib.sha256(f"blazar-lite:project:{project_id}".encode()).digest()[:8], "big", signed=True)
    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def _held(rows: Iterable[Any]) -> tuple[int, int]:
    rows = list(rows)
    hosts = sum(1 for row in rows if row.exclusive)
    slots = sum(row.slots for row in rows if not row.exclusive)
    return hosts, slots


Moment = dt.datetime | None


def _peak(rows: list[Any], start: dt.datetime, end: dt.datetime) -> tuple[int, int, Moment, Moment]:
    """The most hosts and the most slots the bookings hold at one instant of [start, end), and
    the first instant of each."""
    moments = sorted({as_utc(start), *(as_utc(r.start_date) for r in rows if start < as_utc(r.start_date) < end)})
    best_hosts = best_slots = 0
    at_hosts = at_slots = None
    for moment in moments:
        hosts, slots = _held(r for r in rows if as_utc(r.start_date) <= moment < as_utc(r.end_date))
        if hosts > best_hosts:
            best_hosts, at_hosts = hosts, moment
        if slots > best_slots:
            best_slots, at_slots = slots, moment
    return best_hosts, best_slots, at_hosts, at_slots


def check_lease(session: Session, rules: UsageRules, lease: Lease, *, previous_end: dt.datetime | None = None,
                now: dt.datetime) -> None:
    """403 naming the broken rule when the lease, as written in this transaction, breaks a limit.
    `previous_end`: the end before an update, for the extension window."""
    if lease.project_id in rules.exempt_projects:
        return
    start, end = as_utc(lease.start_date), as_utc(lease.end_date)
    if rules.max_lease_duration is not None and end - start > rules.max_lease_duration:
        raise _refuse("max_lease_duration", f"The lease lasts {_span(end - start)}, longer than the "
                      f"{_span(rules.max_lease_duration)} a lease may last; shorten it")
    if rules.extension_window is not None and previous_end is not None and end > as_utc(previous_end):
        opens = as_utc(previous_end) - rules.extension_window
        if now < opens:
            raise _refuse("extension_window", "A lease may be extended only in the last "
                          f"{_span(rules.extension_window)} before its end; this one ends at "
                          f"{describe_date(previous_end)}, so extend it from {describe_date(opens)}")
    if rules.max_hosts_per_lease is not None or rules.max_slots_per_lease is not None:
        _check_lease_size(session, rules, lease)
    if rules.limits_projects:
        _check_project(session, rules, lease.project_id, start, end)


def _check_lease_size(session: Session, rules: UsageRules, lease: Lease) -> None:
    session.flush()
    hosts, slots = _held(session.execute(select(ReservationBooking.slots, ReservationBooking.exclusive)
                                         .where(ReservationBooking.lease_id == lease.id)).all())
    if rules.max_hosts_per_lease is not None and hosts > rules.max_hosts_per_lease:
        raise _refuse("max_hosts_per_lease", f"The lease holds {hosts} hosts, more than the "
                      f"{rules.max_hosts_per_lease} a lease may hold")
    if rules.max_slots_per_lease is not None and slots > rules.max_slots_per_lease:
        raise _refuse("max_slots_per_lease", f"The lease holds {slots} instance slots, more than the "
                      f"{rules.max_slots_per_lease} a lease may hold")


def _check_project(session: Session, rules: UsageRules, project_id: str, start: dt.datetime,
                   end: dt.datetime) -> None:
    _lock_project(session, project_id)
    session.flush()
    rows = session.execute(
        select(ReservationBooking.slots, ReservationBooking.exclusive, ReservationBooking.start_date,
               ReservationBooking.end_date)
        .join(Lease, Lease.id == ReservationBooking.lease_id)
        .where(Lease.project_id == project_id, Lease.status != TERMINATED,
               ReservationBooking.end_date > start, ReservationBooking.start_date < end)).all()
    hosts, slots, at_hosts, at_slots = _peak(list(rows), start, end)
    if rules.max_hosts_per_project is not None and hosts > rules.max_hosts_per_project:
        assert at_hosts is not None
        raise _refuse("max_hosts_per_project", f"Project {project_id} would hold {hosts} hosts at "
                      f"{describe_date(at_hosts)}, more than the {rules.max_hosts_per_project} a project may hold "
                      "at once; shrink or move the lease, or end another first")
    if rules.max_slots_per_project is not None and slots > rules.max_slots_per_project:
        assert at_slots is not None
        raise _refuse("max_slots_per_project", f"Project {project_id} would hold {slots} instance slots at "
                      f"{describe_date(at_slots)}, more than the {rules.max_slots_per_project} a project may hold "
                      "at once; shrink or move the lease, or end another first")


# The external policy service.

def ask(rules: UsageRules, action: str, payload: Mapping[str, Any],
        send: delivery.Sender = delivery.http_post) -> None:
    """Ask the external service whether `action` (check-create, check-update) may go ahead:
    returns when it allows, raises 403 with its message when it denies, and when it cannot be
    asked follows the failure mode (deny: 503; allow: a warning in the log)."""
    if not rules.external_service_url:
        return
    url = f"{rules.external_service_url.rstrip('/')}/{action}"
    body = json.dumps(payload, sort_keys=True, default=str).encode()
    headers = (signed_headers(rules.external_service_secret, body, action, str(uuidlib.uuid4()))
               if rules.external_service_secret else {"Content-Type": "application/json"})
    try:
        status, answer = send(url, body, headers, rules.external_service_timeout)
    except (OSError, ValueError) as exc:
        status, answer = None, str(getattr(exc, "reason", None) or exc)
    if status is not None and 200 <= status < 300:
        return
    if status == 403:
        raise _refuse("external_service", f"The lease policy service refused: {_message(answer)}")
    problem = f"answered {status}" if status is not None else f"did not answer ({answer})"
    if rules.external_service_failure == ALLOW:
        LOG.warning("lease policy service %s %s; allowing %s as configured", url, problem, action)
        return
    raise ServiceUnavailable(f"The lease policy service {problem}, and leases are refused until it answers; "
                             "retry later.")


def _message(answer: str) -> str:
    try:
        message = json.loads(answer).get("message")
    except (ValueError, AttributeError):
        message = None
    return message if isinstance(message, str) and message else "no reason given"


def lease_payload(lease: Mapping[str, Any], user_id: str, project_id: str) -> dict[str, Any]:
    """What the service is sent: who asks, and the lease as the request (or the service) says."""
    return {"context": {"user_id": user_id, "project_id": project_id}, "lease": dict(lease)}


def queue_on_end(session: Session, rules: UsageRules, lease: Lease) -> None:
    """Tell the external service that the lease ended, through the webhook queue."""
    if not rules.external_service_url:
        return
    delivery.enqueue(session, source=SOURCE, source_id=ON_END, project_id=lease.project_id, event_type=ON_END,
                     fields={"context": {"user_id": lease.user_id, "project_id": lease.project_id},
                             "lease": history.lease_fields(lease)})


def on_end_receiver(rules: UsageRules) -> delivery.ReceiverLookup:
    """Where on-end notices go: <url>/on-end, signed with the service's secret (if any)."""
    def lookup(_session: Session, _source_id: str) -> delivery.Receiver | None:
        if not rules.external_service_url:
            return None
        return delivery.Receiver(f"{rules.external_service_url.rstrip('/')}/{ON_END}",
                                 rules.external_service_secret or "")
    return lookup
