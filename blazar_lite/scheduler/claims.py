"""Claiming due lease events, so that several scheduler processes share them without running
one twice.

A claim marks the event IN_PROGRESS for one worker until `claimed_until`, and commits at once.
On PostgreSQL the due rows are read with SELECT … FOR UPDATE SKIP LOCKED: two workers claiming
at the same moment each take rows the other has not locked, and neither waits. On SQLite every
write transaction begins with BEGIN IMMEDIATE, which already makes claiming exclusive.

An event whose claim expired while IN_PROGRESS belongs to a process that died mid-run: it is
due again. So, at once, is an event whose holder is known to have died (scheduler.liveness).
An UNDONE event with `claimed_until` in the future is waiting to be retried after a transient
failure: it is not due before then.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import uuid as uuidlib
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import and_, case, exists, func, or_, select
from sqlalchemy.orm import Session, aliased

from blazar_lite.db import Database
from blazar_lite.leases.models import BEFORE_END_LEASE, END_LEASE, IN_PROGRESS, START_LEASE, UNDONE, Event
from blazar_lite.scheduler.liveness import Liveness

LOG = logging.getLogger(__name__)

# Ends before starts, so that back-to-back leases on one host hand it over cleanly.
EVENT_ORDER = (BEFORE_END_LEASE, END_LEASE, START_LEASE)


@dataclass(frozen=True)
class Claim:
    """An event this worker holds until `claimed_until`; `attempts` counts this one."""

    event_id: str
    lease_id: str
    event_type: str
    time: dt.datetime
    attempts: int
    claimed_until: dt.datetime


def worker_identity() -> str:
    """host:pid:random — unique per scheduler instance, and says where it runs."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuidlib.uuid4().hex[:8]}"


def _due(now: dt.datetime, dead: Collection[str] = (), worker_id: str | None = None):  # type: ignore[no-untyped-def]
    waiting = and_(Event.status == UNDONE, Event.time <= now,
                   or_(Event.claimed_until.is_(None), Event.claimed_until <= now))
    abandoned = and_(Event.status == IN_PROGRESS, Event.claimed_until <= now)
    if worker_id is not None:
        # A worker runs one pass at a time: its own claims still IN_PROGRESS when a pass begins
        # are left from a pass that failed before recording how they went (the database went
        # away mid-pass). Waiting for them to expire would hold those leases for the claim timeout.
        abandoned = or_(abandoned, and_(Event.status == IN_PROGRESS, Event.claimed_by == worker_id))
    if dead:
        abandoned = or_(abandoned, and_(Event.status == IN_PROGRESS, Event.claimed_by.in_(sorted(dead))))
    # A lease's end (and the warning before it) never overtakes its start, even when a scheduler
    # that was down finds both due in one pass.
    start = aliased(Event)
    blocked = exists().where(start.lease_id == Event.lease_id, start.event_type == START_LEASE,
                             Event.event_type != START_LEASE, start.status.in_((UNDONE, IN_PROGRESS)))
    return and_(or_(waiting, abandoned), ~blocked)


def claim_due_events(database: Database, worker_id: str, now: dt.datetime, claim_timeout: dt.timedelta,
                     limit: int = 20, liveness: Liveness | None = None) -> list[Claim]:
    """Claim up to `limit` events due at `now`, in the order before_end, end, start (then by time),
    for `worker_id` until now + claim_timeout; with `liveness`, also the events other schedulers
    claimed and died holding. Committed before returning."""
    with database.transaction() as session:
        dead = liveness.dead(_holders(session, worker_id, now)) if liveness is not None else set()
        if dead:
            LOG.info("taking over the claims of stopped schedulers %s", ", ".join(sorted(dead)))
        return _claim(session, worker_id, now, claim_timeout, limit, dead)


def _holders(session: Session, worker_id: str, now: dt.datetime) -> list[str]:
    """The other workers holding claims that have not expired."""
    return list(session.scalars(select(Event.claimed_by).distinct().where(
        Event.status == IN_PROGRESS, Event.claimed_until > now, Event.claimed_by != worker_id)))


def _claim(session: Session, worker_id: str, now: dt.datetime, claim_timeout: dt.timedelta,
           limit: int, dead: Collection[str] = ()) -> list[Claim]:
    order = case({name: rank for rank, name in enumerate(EVENT_ORDER)}, value=Event.event_type,
                 else_=len(EVENT_ORDER))
    stmt = select(Event).where(_due(now, dead, worker_id)).order_by(order, Event.time, Event.id).limit(limit)
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True, of=Event)
    claims = []
    until = now + claim_timeout
    for event in session.scalars(stmt):
        event.status = IN_PROGRESS
        event.claimed_by = worker_id
        event.claimed_until = until
        event.attempts = (event.attempts or 0) + 1
        claims.append(Claim(event.id, event.lease_id, event.event_type, event.time, event.attempts, until))
    session.flush()
    return claims


def next_due_time(database: Database, now: dt.datetime, before: dt.datetime) -> dt.datetime | None:
    """The earliest time after `now` and before `before` at which an event that has not run falls
    due (None when there is none); events waiting for a retry are left to the regular passes."""
    with database.read() as session:
        return session.scalar(select(func.min(Event.time))
                              .where(Event.status == UNDONE, Event.time > now, Event.time < before))


def held(session: Session, claims: list[Claim], worker_id: str) -> set[str]:
    """The ids of those claimed events that `worker_id` still holds, locked, in one statement."""
    # In id order, so that two transactions locking several events queue rather than deadlock.
    events = session.scalars(select(Event).where(Event.id.in_([claim.event_id for claim in claims]))
                             .order_by(Event.id).with_for_update())
    return {event.id for event in events if event.status == IN_PROGRESS and event.claimed_by == worker_id}


def holds(session: Session, claim: Claim, worker_id: str) -> Event | None:
    """The claimed event, locked, when `worker_id` still holds it; None when another worker took
    it over (our claim expired) or it was deleted with its lease."""
    # The event first, then (in the lifecycle) its lease: the order a lease update locks them in.
    event = session.scalar(select(Event).where(Event.id == claim.event_id).with_for_update())
    if event is None or event.status != IN_PROGRESS or event.claimed_by != worker_id:
        return None
    return event
