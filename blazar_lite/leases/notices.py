"""Before-end notices: a lease may ask to be told several times that its end is near (e.g. 24 h
and 1 h before), besides its one before_end_lease event.

Each notice is a `lease.before_end` entry in the lease's history (so the project's webhooks get
it) with the offset in its detail. The scheduler sends the notices that are due on each pass; a
notice's row in `lease_notices` is written in the same transaction, keyed by lease and offset, so
no notice is sent twice, even by two schedulers at once. Moving a lease's end later makes the
notices whose time is still ahead due again.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blazar_lite.db import Database
from blazar_lite.exceptions import BadRequest
from blazar_lite.leases import history
from blazar_lite.leases.dates import as_utc, describe_date
from blazar_lite.leases.models import ACTIVE, Lease, LeaseNotice

LOG = logging.getLogger(__name__)

FIELD = "before_end_notifications"
MAX_NOTICES = 10
_OFFSET = re.compile(r"^\s*(\d+)\s*([mhd])\s*$")
_UNIT_MINUTES = {"m": 1, "h": 60, "d": 1440}


def parse_offsets(value: object) -> list[int]:
    """Minutes before the end, largest first, from a list of "90m", "24h", "2d" or whole
    minutes; a 400 naming the bad item otherwise."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_NOTICES:
        raise BadRequest(f'Invalid {FIELD}: give a list of at most {MAX_NOTICES} offsets such as ["24h", "1h"].')
    minutes = set()
    for item in value:
        match = _OFFSET.match(item) if isinstance(item, str) else None
        if isinstance(item, int) and not isinstance(item, bool):
            amount = item
        elif match is not None:
            amount = int(match.group(1)) * _UNIT_MINUTES[match.group(2)]
        else:
            raise BadRequest(f"Invalid {FIELD} item {item!r}: give minutes, or a number with m, h or d (\"90m\", "
                             "\"24h\", \"2d\").")
        if not 0 < amount <= 366 * 1440:
            raise BadRequest(f"Invalid {FIELD} item {item!r}: give an offset from 1 minute to 366 days.")
        minutes.add(amount)
    return sorted(minutes, reverse=True)


def describe_offset(minutes: int) -> str:
    if minutes % 1440 == 0:
        return f"{minutes // 1440}d"
    if minutes % 60 == 0:
        return f"{minutes // 60}h"
    return f"{minutes}m"


def stored(offsets: list[int]) -> str | None:
    return json.dumps(offsets) if offsets else None


def offsets_of(lease: Lease) -> list[int]:
    return json.loads(lease.before_end_notices) if lease.before_end_notices else []


def end_moved(session: Session, lease: Lease, now: dt.datetime) -> None:
    """After the lease's end moved: forget the notices sent whose time is now ahead again, so
    they are sent for the new end."""
    ahead = [m for m in offsets_of(lease) if as_utc(lease.end_date) - dt.timedelta(minutes=m) > now]
    if ahead:
        session.execute(delete(LeaseNotice).where(LeaseNotice.lease_id == lease.id,
                                                  LeaseNotice.minutes_before_end.in_(ahead)))


def _due(session: Session, now: dt.datetime) -> list[tuple[str, int]]:
    leases = session.execute(select(Lease.id, Lease.end_date, Lease.before_end_notices)
                             .where(Lease.status == ACTIVE, Lease.before_end_notices.is_not(None),
                                    Lease.end_date > now)).all()
    if not leases:
        return []
    sent = set(session.execute(select(LeaseNotice.lease_id, LeaseNotice.minutes_before_end)
                               .where(LeaseNotice.lease_id.in_([row.id for row in leases]))).all())
    return [(row.id, minutes) for row in leases for minutes in json.loads(row.before_end_notices)
            if as_utc(row.end_date) - dt.timedelta(minutes=minutes) <= now and (row.id, minutes) not in sent]


def send_due(database: Database, now: dt.datetime) -> int:
    """Send every notice due at `now` for the active leases; how many were sent by this call."""
    with database.read() as session:
        due = _due(session, now)
    sent = 0
    for lease_id, minutes in due:
        try:
            with database.transaction() as session:
                lease = session.get(Lease, lease_id)
                if lease is None or lease.status != ACTIVE:
                    continue
                session.add(LeaseNotice(lease_id=lease_id, minutes_before_end=minutes, sent_at=now))
                session.flush()
                history.record(session, lease, history.BEFORE_END,
                               f"Lease {lease.name} ends at {describe_date(lease.end_date)} (the notice "
                               f"{describe_offset(minutes)} before its end).",
                               {"notice": describe_offset(minutes), "minutes_before_end": minutes})
            sent += 1
        except IntegrityError:
            LOG.debug("notice %s of lease %s was sent by another scheduler", minutes, lease_id)
    return sent
