"""The idle-lease policy: an active lease that goes `[leases] idle_warning_minutes` with no
running instance in its reservations is warned (a `lease.idle` history entry, sent to the
project's webhooks); one still idle after `idle_end_minutes`, and warned, is ended early: its
end moves to now and the scheduler's end runs as for any lease.

Idleness starts at the lease's start, or at the end of its last use (see instances/usage.py).
Each warning and each early end re-checks the lease under its lock, so two schedulers never warn
twice for one idle spell, or end a lease that came back to use meanwhile.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from sqlalchemy import exists, select, update
from sqlalchemy.orm import Session

from blazar_lite.db import Database
from blazar_lite.instances import usage
from blazar_lite.instances.models import SlotUse
from blazar_lite.leases import history
from blazar_lite.leases.dates import as_utc
from blazar_lite.leases.models import ACTIVE, BEFORE_END_LEASE, END_LEASE, UNDONE, Event, Lease, ReservationBooking
from blazar_lite.settings import Settings

LOG = logging.getLogger(__name__)

WARNED = "warned"
ENDED = "ended"


@dataclass(frozen=True)
class IdleRules:
    warn_after: dt.timedelta | None = None
    end_after: dt.timedelta | None = None

    @property
    def active(self) -> bool:
        return self.warn_after is not None or self.end_after is not None


def idle_rules(settings: Settings) -> IdleRules:
    """The `[leases] idle_*_minutes` settings as rules (0: not applied)."""
    def minutes(value: int) -> dt.timedelta | None:
        return dt.timedelta(minutes=value) if value else None

    return IdleRules(minutes(settings.leases_idle_warning_minutes), minutes(settings.leases_idle_end_minutes))


def _minutes(delta: dt.timedelta) -> int:
    return int(delta.total_seconds() // 60)


def _warn(session: Session, lease: Lease, since: dt.datetime, now: dt.datetime) -> bool:
    if lease.idle_warned_at is not None and as_utc(lease.idle_warned_at) >= since:
        return False
    lease.idle_warned_at = now
    history.record(session, lease, history.IDLE,
                   f"Lease {lease.name} has had no running instance for {_minutes(now - since)} minutes; it may be "
                   "ended early if it stays idle.", {"idle_since": since.isoformat(), "action": "warn"})
    return True


def _end(session: Session, lease: Lease, since: dt.datetime, now: dt.datetime) -> bool:
    if lease.idle_warned_at is None or as_utc(lease.idle_warned_at) < since:
        return False  # a lease is always warned before it is ended
    for event in session.scalars(select(Event).where(Event.lease_id == lease.id, Event.status == UNDONE,
                                                     Event.event_type.in_((BEFORE_END_LEASE, END_LEASE)))):
        event.time = now
    lease.end_date = now
    # The bookings' copies of the dates follow the lease's, as every writer of bookings keeps them.
    session.execute(update(ReservationBooking).where(ReservationBooking.lease_id == lease.id).values(end_date=now))
    history.record(session, lease, history.IDLE,
                   f"Lease {lease.name} was idle for {_minutes(now - since)} minutes and is ended early.",
                   {"idle_since": since.isoformat(), "action": "end"})
    return True


def _candidates(session: Session, rules: IdleRules, now: dt.datetime) -> list[str]:
    """Active leases idle for at least the shorter threshold, read in one statement: started
    that long ago, no instance running in them, none stopped since."""
    shortest = min(t for t in (rules.warn_after, rules.end_after) if t is not None)
    cutoff = now - shortest
    running = exists().where(SlotUse.lease_id == Lease.id, SlotUse.ended_at.is_(None))
    recent = exists().where(SlotUse.lease_id == Lease.id, SlotUse.ended_at > cutoff)
    return list(session.scalars(select(Lease.id).where(Lease.status == ACTIVE, Lease.end_date > now,
                                                       Lease.start_date <= cutoff, ~running, ~recent)
                                .order_by(Lease.id)))


def apply(database: Database, rules: IdleRules, now: dt.datetime) -> list[tuple[str, str]]:
    """Warn and end the idle active leases at `now`: (lease id, warned or ended) for each."""
    if not rules.active:
        return []
    # Without a warning period, the warning comes when the end is due, and the end a pass later.
    warn_after = rules.warn_after or rules.end_after
    with database.read() as session:
        lease_ids = _candidates(session, rules, now)
    done = []
    for lease_id in lease_ids:
        with database.transaction() as session:
            # Events before the lease: the order every lease writer locks them in.
            list(session.scalars(select(Event.id).where(Event.lease_id == lease_id).order_by(Event.id)
                                 .with_for_update()))
            lease = session.scalar(select(Lease).where(Lease.id == lease_id).with_for_update())
            if lease is None or lease.status != ACTIVE or as_utc(lease.end_date) <= now:
                continue
            since = usage.idle_since(session, lease)
            if since is None:
                continue
            idle = now - since
            if rules.end_after is not None and idle >= rules.end_after and _end(session, lease, since, now):
                done.append((lease_id, ENDED))
            elif warn_after is not None and idle >= warn_after and _warn(session, lease, since, now):
                done.append((lease_id, WARNED))
    for lease_id, action in done:
        LOG.info("idle lease %s %s", lease_id, action)
    return done
