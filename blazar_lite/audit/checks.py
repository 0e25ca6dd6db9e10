"""`blazar-lite check`: what must hold in a live database, each rule read in plain SQL.

- No host is over capacity at any instant: the bookings of the leases that have not ended fit
  each host's vCPUs, memory and disk at every moment, and a whole-host booking shares its time
  with no other booking.
- Placement's counters match its allocations: each inventory's `used` is the sum of the
  allocations against it, each provider's `consumers` counts the consumers holding allocations
  there, and no inventory is allocated past its capacity.
- Every active instance reservation has its inventory (its class on the reservation providers of
  its hosts), and no ended one has any left.
- No event ran twice: a lease has at most one start and one end event, and its history records
  at most one start and one end.
- No lease sits in a transitional state (STARTING, TERMINATING) longer than the claim timeout.

Each rule is a function of a session that returns the violations it finds; `run` gathers them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blazar_lite.hosts.models import Host
from blazar_lite.leases.dates import as_utc, describe_date
from blazar_lite.leases.models import (
    ACTIVE,
    END_LEASE,
    PHYSICAL_HOST,
    START_LEASE,
    STARTING,
    TERMINATED,
    TERMINATING,
    Event,
    Lease,
    LeaseHistory,
    Reservation,
    ReservationBooking,
)
from blazar_lite.placement.models import Allocation, Inventory, ResourceClass, ResourceProvider


@dataclass(frozen=True)
class Violation:
    rule: str
    subject: str
    message: str


def hosts_within_capacity(session: Session, now: dt.datetime) -> list[Violation]:
    """The bookings of leases that have not ended fit every host at every instant."""
    hosts = {row.id: row for row in session.execute(select(Host.id, Host.hypervisor_hostname, Host.vcpus,
                                                           Host.memory_mb, Host.local_gb))}
    bookings = session.execute(
        select(ReservationBooking.host_id, ReservationBooking.start_date, ReservationBooking.end_date,
               ReservationBooking.vcpus, ReservationBooking.memory_mb, ReservationBooking.disk_gb,
               ReservationBooking.exclusive)
        .join(Lease, Lease.id == ReservationBooking.lease_id)
        .where(Lease.status != TERMINATED, ReservationBooking.end_date > now)).all()
    by_host: dict[int, list] = {}
    for booking in bookings:
        by_host.setdefault(booking.host_id, []).append(booking)
    found = []
    for host_id, held in sorted(by_host.items()):
        host = hosts[host_id]
        capacity = {"vcpus": host.vcpus, "memory_mb": host.memory_mb, "disk_gb": host.local_gb}
        # Sweep the starts and ends; ends first at one instant, since windows are half-open.
        events = sorted([(as_utc(b.start_date), 1, b) for b in held] + [(as_utc(b.end_date), 0, b) for b in held],
                        key=lambda event: (event[0], event[1]))
        use = {"vcpus": 0, "memory_mb": 0, "disk_gb": 0}
        running = whole = 0
        for moment, starts, booking in events:
            sign = 1 if starts else -1
            running += sign
            whole += sign if booking.exclusive else 0
            for name in use:
                use[name] += sign * getattr(booking, name)
            if not starts:
                continue
            over = [f"{name} {use[name]} > {capacity[name]}" for name in use if use[name] > capacity[name]]
            if whole and running > 1:
                over.append(f"a whole-host booking shares the host with {running - 1} other(s)")
            if over:
                found.append(Violation("host_capacity", host.hypervisor_hostname,
                                       f"host {host.hypervisor_hostname} is over capacity at "
                                       f"{describe_date(moment)}: {', '.join(over)}"))
                break
    return found


def placement_counters(session: Session, now: dt.datetime) -> list[Violation]:
    """Inventories' `used` and providers' `consumers` equal what the allocations say, and no
    inventory is allocated past (total − reserved) × allocation_ratio."""
    sums = {(row.resource_provider_id, row.resource_class_id): row.used for row in session.execute(
        select(Allocation.resource_provider_id, Allocation.resource_class_id, func.sum(Allocation.used).label("used"))
        .group_by(Allocation.resource_provider_id, Allocation.resource_class_id))}
    consumers = dict(session.execute(select(Allocation.resource_provider_id,
                                            func.count(func.distinct(Allocation.consumer_id)))
                                     .group_by(Allocation.resource_provider_id)).all())
    names = dict(session.execute(select(ResourceClass.id, ResourceClass.name)).all())
    providers = {row.id: row for row in session.execute(select(ResourceProvider.id, ResourceProvider.name,
                                                               ResourceProvider.consumers))}
    found = []
    inventories = session.execute(select(Inventory.resource_provider_id, Inventory.resource_class_id, Inventory.total,
                                         Inventory.reserved, Inventory.allocation_ratio, Inventory.used)).all()
    for inventory in inventories:
        key = (inventory.resource_provider_id, inventory.resource_class_id)
        provider, rc = providers[inventory.resource_provider_id].name, names[inventory.resource_class_id]
        allocated = int(sums.pop(key, 0) or 0)
        if inventory.used != allocated:
            found.append(Violation("usage_counter", f"{provider}/{rc}",
                                   f"inventory {rc} of {provider} counts {inventory.used} used, its allocations "
                                   f"sum to {allocated}"))
        capacity = (inventory.total - inventory.reserved) * inventory.allocation_ratio
        if allocated > capacity:
            found.append(Violation("allocation_capacity", f"{provider}/{rc}",
                                   f"{provider} has {allocated} {rc} allocated, more than its capacity of "
                                   f"{capacity:g}"))
    for (provider_id, class_id), allocated in sorted(sums.items()):
        found.append(Violation("allocation_without_inventory", f"{providers[provider_id].name}/{names[class_id]}",
                               f"{allocated} {names[class_id]} allocated on {providers[provider_id].name}, which "
                               "has no such inventory"))
    for provider_id, row in sorted(providers.items()):
        if row.consumers != consumers.get(provider_id, 0):
            found.append(Violation("consumer_counter", row.name,
                                   f"provider {row.name} counts {row.consumers} consumers, its allocations belong to "
                                   f"{consumers.get(provider_id, 0)}"))
    return found


def reservation_inventory(session: Session, now: dt.datetime) -> list[Violation]:
    """An active instance reservation offers its class on its hosts; an ended one offers none."""
    totals = dict(session.execute(select(ResourceClass.name, func.sum(Inventory.total))
                                  .join(Inventory, Inventory.resource_class_id == ResourceClass.id)
                                  .group_by(ResourceClass.name)).all())
    rows = session.execute(select(Reservation.id, Reservation.resource_class, Lease.id.label("lease_id"), Lease.status,
                                  Lease.degraded)
                           .join(Lease, Lease.id == Reservation.lease_id)
                           .where(Reservation.resource_type != PHYSICAL_HOST,
                                  Lease.status.in_((ACTIVE, TERMINATED)))).all()
    booked = dict(session.execute(select(ReservationBooking.reservation_id, func.sum(ReservationBooking.slots))
                                  .group_by(ReservationBooking.reservation_id)).all())
    found = []
    for row in rows:
        offered = int(totals.get(row.resource_class, 0) or 0)
        if row.status == TERMINATED and offered:
            found.append(Violation("ended_reservation_inventory", row.id,
                                   f"reservation {row.id} of ended lease {row.lease_id} still offers {offered} "
                                   f"{row.resource_class}"))
        # A degraded lease lost a host on purpose; its missing slots are reported on the lease.
        elif row.status == ACTIVE and not row.degraded and offered != int(booked.get(row.id, 0) or 0):
            found.append(Violation("active_reservation_inventory", row.id,
                                   f"reservation {row.id} of active lease {row.lease_id} offers {offered} slots of "
                                   f"{row.resource_class}; it booked {int(booked.get(row.id, 0) or 0)}"))
    return found


def events_once(session: Session, now: dt.datetime) -> list[Violation]:
    """A lease has one start and one end event, and its history one start and one end."""
    found = []
    for lease_id, event_type, count in session.execute(
            select(Event.lease_id, Event.event_type, func.count()).where(Event.event_type.in_((START_LEASE, END_LEASE)))
            .group_by(Event.lease_id, Event.event_type).having(func.count() > 1)):
        found.append(Violation("event_twice", lease_id, f"lease {lease_id} has {count} {event_type} events"))
    for lease_id, event, count in session.execute(
            select(LeaseHistory.lease_id, LeaseHistory.event, func.count())
            .where(LeaseHistory.event.in_(("lease.started", "lease.ended")))
            .group_by(LeaseHistory.lease_id, LeaseHistory.event).having(func.count() > 1)):
        found.append(Violation("ran_twice", lease_id, f"lease {lease_id} records {event} {count} times"))
    return found


def stuck_leases(session: Session, now: dt.datetime, claim_timeout: dt.timedelta) -> list[Violation]:
    """No lease is STARTING or TERMINATING for longer than the claim timeout."""
    found = []
    for lease_id, status, since in session.execute(
            select(Lease.id, Lease.status, func.coalesce(Lease.updated_at, Lease.created_at))
            .where(Lease.status.in_((STARTING, TERMINATING)))):
        if now - as_utc(since) > claim_timeout:
            found.append(Violation("stuck_transition", lease_id,
                                   f"lease {lease_id} has been {status} since {describe_date(since)}, longer than the "
                                   f"claim timeout of {int(claim_timeout.total_seconds())} s"))
    return found


RULES: tuple[Callable[[Session, dt.datetime], list[Violation]], ...] = (
    hosts_within_capacity, placement_counters, reservation_inventory, events_once)


def run(session: Session, now: dt.datetime, claim_timeout: dt.timedelta) -> list[Violation]:
    """Every violation found, rule by rule."""
    found = [violation for rule in RULES for violation in rule(session, now)]
    return found + stuck_leases(session, now, claim_timeout)
