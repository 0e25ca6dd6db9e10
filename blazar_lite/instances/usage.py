"""How much of its reserved capacity a lease uses: spans of slot use written as instances start,
stop, move and go, and the report of slot-hours (or host-hours) reserved against used.

An instance uses its reservation while it is real (not forthcoming) and ACTIVE. Every change of
an instance in a reservation calls `track`, which closes the instance's open span when that no
longer holds (or the instance moved to another node) and opens one when it does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from blazar_lite.db import utcnow
from blazar_lite.instances.models import ACTIVE, Instance, SlotUse
from blazar_lite.leases.dates import as_utc
from blazar_lite.leases.models import PHYSICAL_HOST, Lease, Reservation, ReservationBooking

HOUR = dt.timedelta(hours=1)


def _using(instance: Instance) -> bool:
    return instance.reservation_id is not None and not instance.forthcoming and instance.status == ACTIVE


def track(session: Session, instance: Instance, *, gone: bool = False, new: bool = False) -> None:
    """Bring the instance's span of use in line with what it is now (`gone`: being deleted;
    `new`: just created, so it has no span yet)."""
    if instance.reservation_id is None and new:
        return
    now = utcnow()
    using = _using(instance) and not gone
    current = None if new else session.scalar(select(SlotUse).where(SlotUse.instance_uuid == instance.uuid,
                                                                      SlotUse.ended_at.is_(None)))
    if current is not None and (not using or current.node != instance.node
                                or current.reservation_id != instance.reservation_id):
        current.ended_at = now
        current = None
    if using and current is None:
        lease_id = session.scalar(select(Reservation.lease_id).where(Reservation.id == instance.reservation_id))
        session.add(SlotUse(reservation_id=instance.reservation_id, lease_id=lease_id, instance_uuid=instance.uuid,
                            node=instance.node, started_at=now))


@dataclass(frozen=True)
class ReservationUsage:
    reservation_id: str
    resource_type: str
    # Slots (instance reservations) or hosts (host reservations) reserved.
    capacity: int
    reserved_hours: float
    used_hours: float
    in_use_now: int

    @property
    def used_fraction(self) -> float:
        return round(self.used_hours / self.reserved_hours, 4) if self.reserved_hours else 0.0


def _clipped(spans: Iterable[SlotUse], start: dt.datetime, end: dt.datetime, now: dt.datetime) -> list[tuple]:
    clipped = []
    for span in spans:
        begin = max(as_utc(span.started_at), start)
        finish = min(as_utc(span.ended_at) if span.ended_at is not None else now, end)
        if finish > begin:
            clipped.append((begin, finish))
    return clipped


def _union_hours(intervals: list[tuple]) -> float:
    """Hours covered by at least one of the intervals."""
    total = dt.timedelta(0)
    reach = None
    for begin, finish in sorted(intervals):
        if reach is None or begin > reach:
            total += finish - begin
            reach = finish
        elif finish > reach:
            total += finish - reach
            reach = finish
    return total / HOUR


def lease_usage(session: Session, lease: Lease, now: dt.datetime | None = None) -> list[ReservationUsage]:
    """Per reservation: capacity-hours reserved from the lease's start until now (or its end),
    and capacity-hours used by running instances in that time. A host reservation counts a host
    as used while any instance of the reservation runs on it."""
    now = now or utcnow()
    start, end = as_utc(lease.start_date), min(as_utc(lease.end_date), now)
    elapsed = max((end - start) / HOUR, 0.0)
    reservations = session.scalars(select(Reservation).where(Reservation.lease_id == lease.id)
                                   .order_by(Reservation.created_at, Reservation.id)).all()
    hosts = dict(session.execute(select(ReservationBooking.reservation_id, func.count())
                                 .where(ReservationBooking.lease_id == lease.id)
                                 .group_by(ReservationBooking.reservation_id)).all())
    spans = session.scalars(select(SlotUse).where(SlotUse.lease_id == lease.id,
                                                  or_(SlotUse.ended_at.is_(None), SlotUse.ended_at > start))).all()
    report = []
    for reservation in reservations:
        mine = [span for span in spans if span.reservation_id == reservation.id]
        if reservation.resource_type == PHYSICAL_HOST:
            capacity = hosts.get(reservation.id, 0)
            used = sum(_union_hours(_clipped([s for s in mine if s.node == node], start, end, now))
                       for node in {span.node for span in mine})
            running = len({span.node for span in mine if span.ended_at is None})
        else:
            capacity = reservation.amount or 0
            used = sum((finish - begin) / HOUR for begin, finish in _clipped(mine, start, end, now))
            running = sum(1 for span in mine if span.ended_at is None)
        report.append(ReservationUsage(reservation.id, reservation.resource_type, capacity,
                                       round(capacity * elapsed, 4), round(used, 4), running))
    return report


def idle_since(session: Session, lease: Lease) -> dt.datetime | None:
    """Since when the lease has had no running instance in its reservations: its start, or the
    end of its last use; None while an instance uses it."""
    if session.scalar(select(func.count()).where(SlotUse.lease_id == lease.id, SlotUse.ended_at.is_(None))):
        return None
    last = session.scalar(select(func.max(SlotUse.ended_at)).where(SlotUse.lease_id == lease.id))
    return max(as_utc(lease.start_date), as_utc(last)) if last is not None else as_utc(lease.start_date)
