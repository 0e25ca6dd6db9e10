"""What a lease's events do: start it, warn before its end, end it.

Starting and ending each take two steps, each in a transaction of its own: `mark_*` moves the
lease into its transitional state (STARTING, TERMINATING) so that updates and deletes see the
event at work and answer 409, then `start_lease` / `end_lease` make Placement match the
reservations and settle the lease (ACTIVE, TERMINATED). Both steps compute the state they want
from the lease's bookings rather than toggling what they find, so running either again after a
crash, or twice, leaves the same result.
"""

from __future__ import annotations

import logging
import uuid as uuidlib
from collections.abc import Iterable, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.exceptions import Conflict, NotFound, ServiceError
from blazar_lite.flavors import service as flavors
from blazar_lite.hosts.aggregates import disown_aggregate, own_aggregate
from blazar_lite.hosts.models import Host
from blazar_lite.hosts.service import FREEPOOL_AGGREGATE_UUID
from blazar_lite.instances.removal import remove_reservation_instances
from blazar_lite.leases.models import (
    ACTIVE,
    CREATING,
    DELETING,
    ERROR,
    PENDING,
    PHYSICAL_HOST,
    STARTING,
    TERMINATED,
    TERMINATING,
    UPDATING,
    Lease,
    Reservation,
    ReservationBooking,
)
from blazar_lite.placement.backend import EmbeddedPlacement, PlacementBackend

LOG = logging.getLogger(__name__)

# A user's request holds the lease in these states for a moment; the event waits for it to finish.
BUSY = (CREATING, UPDATING, DELETING)
# Reservation states, as Blazar shows them.
RESERVATION_PENDING = "pending"
RESERVATION_ACTIVE = "active"
RESERVATION_DELETED = "deleted"


class LeaseBusy(ServiceError):
    """The lease is being created, updated or deleted right now: try the event again later."""

    status = 409
    name = "LeaseBusy"


class LeaseGone(ServiceError):
    """The lease of an event no longer exists (deleted since the event was claimed)."""

    status = 404
    name = "NotFound"


def reservation_aggregate_uuid(reservation_id: str) -> str:
    """The aggregate that holds the hosts of a physical:host reservation while its lease is
    active; derived from the reservation id so that every process finds it without a lookup."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"urn:blazar-lite:aggregate:reservation:{reservation_id}"))


def _lease(session: Session, lease_id: str) -> Lease:
    # Locked so that an update or delete of the lease waits for the event's transaction (PostgreSQL).
    lease = session.scalar(select(Lease).where(Lease.id == lease_id).with_for_update())
    if lease is None:
        raise LeaseGone(f"Lease {lease_id} no longer exists.")
    return lease


def lock_hosts(session: Session, lease_id: str) -> None:
    """Lock the rows of the hosts the lease books, in id order (PostgreSQL).

    Changing a provider's inventory or aggregates means reading them and writing the merged
    result; without the lock, two events on one host could each write what they read and lose
    the other's change. Lease creation locks host rows in the same order, so they queue rather
    than deadlock.
    """
    booked = (select(ReservationBooking.host_id)
              .join(Reservation, Reservation.id == ReservationBooking.reservation_id)
              .where(Reservation.lease_id == lease_id))
    session.execute(select(Host.id).where(Host.id.in_(booked)).order_by(Host.id).with_for_update())


def _check_not_busy(lease: Lease, event: str) -> None:
    if lease.status in BUSY:
        raise LeaseBusy(f"Lease {lease.id} is {lease.status}; {event} waits for that to finish.")


def _reservations(session: Session, lease_id: str) -> list[Reservation]:
    return list(session.scalars(select(Reservation).where(Reservation.lease_id == lease_id)
                                .order_by(Reservation.id)))


def _booked_hosts(session: Session, reservation_id: str) -> list[tuple[Host, int]]:
    """The hosts a reservation books, with its slots on each, in host id order."""
    rows = session.execute(select(Host, ReservationBooking.slots)
                           .join(ReservationBooking, ReservationBooking.host_id == Host.id)
                           .where(ReservationBooking.reservation_id == reservation_id)
                           .order_by(Host.id))
    return [(host, slots) for host, slots in rows]


def _lock_booked_hosts(session: Session, lease_id: str) -> dict[str, list[tuple[Host, int]]]:
    """What `lock_hosts` locks, in the same order, read with what each reservation books there:
    {reservation id: [(host, slots)] in host id order}, in one statement."""
    rows = session.execute(select(Host, ReservationBooking.slots, ReservationBooking.reservation_id)
                           .join(ReservationBooking, ReservationBooking.host_id == Host.id)
                           .join(Reservation, Reservation.id == ReservationBooking.reservation_id)
                           .where(Reservation.lease_id == lease_id)
                           .order_by(Host.id)
                           .with_for_update(of=Host))
    booked: dict[str, list[tuple[Host, int]]] = {}
    for host, slots, reservation_id in rows:
        booked.setdefault(reservation_id, []).append((host, slots))
    return booked


# Start.

def mark_starting(session: Session, lease_id: str) -> bool:
    """Move the lease to STARTING; False when there is nothing to start (the lease is already
    ACTIVE, or is ending or ended). LeaseBusy while a user request holds the lease."""
    lease = _lease(session, lease_id)
    _check_not_busy(lease, "its start")
    if lease.status in (PENDING, ERROR):
        lease.status = STARTING
        lease.status_reason = None
        session.flush()
    return lease.status == STARTING


def start_lease(session: Session, lease_id: str, placement: PlacementBackend | None = None) -> bool:
    """Give the lease's project its reserved capacity and make the lease ACTIVE: instance
    reservations get inventory of their class on each booked host's reservation provider (total
    = slots on that host) and flavor access for the project; physical:host reservations move
    their hosts from the freepool into the reservation's aggregate. False (and nothing changed)
    when the lease is ending or ended."""
    placement = placement or EmbeddedPlacement(session)
    lease = _lease(session, lease_id)
    _check_not_busy(lease, "its start")
    if lease.status in (TERMINATING, TERMINATED):
        return False
    booked = _lock_booked_hosts(session, lease.id)
    for reservation in _reservations(session, lease.id):
        hosts = booked.get(reservation.id, [])
        if reservation.resource_type == PHYSICAL_HOST:
            _hosts_into_reservation(session, placement, reservation, hosts, lease)
        else:
            _inventory_for_reservation(session, placement, reservation, hosts, lease.project_id)
        reservation.status = RESERVATION_ACTIVE
    lease.status = ACTIVE
    lease.status_reason = None
    session.flush()
    return True


def _hosts_into_reservation(session: Session, placement: PlacementBackend, reservation: Reservation,
                            booked: list[tuple[Host, int]], lease: Lease) -> None:
    aggregate = reservation_aggregate_uuid(reservation.id)
    own_aggregate(session, aggregate, reservation_id=reservation.id, lease_id=lease.id, project_id=lease.project_id)
    for host, _slots in booked:
        current = placement.aggregates(host.resource_provider_uuid)
        wanted = [a for a in current if a != FREEPOOL_AGGREGATE_UUID]
        if aggregate not in wanted:
            wanted.append(aggregate)
        if sorted(wanted) != sorted(current):
            placement.set_aggregates(host.resource_provider_uuid, wanted)


def _inventory_for_reservation(session: Session, placement: PlacementBackend, reservation: Reservation,
                               booked: list[tuple[Host, int]], project_id: str) -> None:
    resource_class = reservation.resource_class
    if not resource_class:
        raise Conflict(f"Reservation {reservation.id} has no resource class; it cannot be started.")
    for host, slots in booked:
        if not host.reservation_provider_uuid:
            raise Conflict(f"Host {host.hypervisor_hostname} has no reservation provider.")
        set_reservation_inventory(placement, host.reservation_provider_uuid, resource_class, slots)
    if reservation.reservation_flavor_id:
        flavors.grant_access(session, reservation.reservation_flavor_id, project_id)


def set_reservation_inventory(placement: PlacementBackend, provider_uuid: str, resource_class: str,
                              slots: int) -> None:
    """Make a host's reservation provider offer `slots` units of a reservation's class (none at 0),
    keeping the inventory of the other reservations it carries; nothing is written when it offers
    that already. Conflict when instances use more than `slots`. The caller holds the host's row
    locked: the class's inventory is read, then written."""
    current = placement.class_inventory(provider_uuid, resource_class)
    if slots < current.used:
        raise Conflict(f"{current.used} instances use {resource_class} on reservation provider {provider_uuid}, "
                       f"more than the {slots} slots asked for; delete instances first or keep more slots.")
    if slots == 0:
        if current.inventory is not None:
            placement.set_class_inventory(current, None)
        return
    # One unit per instance, and never more than the reservation's slots on this host.
    wanted = {"total": slots, "reserved": 0, "min_unit": 1, "max_unit": slots, "step_size": 1,
              "allocation_ratio": 1.0}
    if current.inventory == wanted:
        return
    if current.resource_class_id is None:
        # Lease creation made the class; one deleted by hand since is made again rather than failing the start.
        placement.ensure_resource_class(resource_class)
        current = placement.class_inventory(provider_uuid, resource_class)
    placement.set_class_inventory(current, wanted)


# Before the end.

def before_end_lease(session: Session, lease_id: str) -> None:
    """Note that the lease's end is near. Nothing else is done yet: the before_end actions of
    physical:host reservations (snapshot) and user notifications hang off this event."""
    lease = _lease(session, lease_id)
    LOG.info("lease %s (%s) ends at %s", lease.id, lease.status, lease.end_date.isoformat())


# End.

def mark_terminating(session: Session, lease_id: str) -> bool:
    """Move the lease to TERMINATING; False when it is TERMINATED already. LeaseBusy while a
    user request holds the lease."""
    lease = _lease(session, lease_id)
    _check_not_busy(lease, "its end")
    if lease.status != TERMINATED:
        lease.status = TERMINATING
        session.flush()
    return lease.status == TERMINATING


def end_lease(session: Session, lease_id: str, placement: PlacementBackend | None = None) -> None:
    """Take the reserved capacity back and make the lease TERMINATED: the inventory of each
    instance reservation's class, the class and the reservation flavor go; hosts of physical:host
    reservations leave the reservation's aggregate and return to the freepool. Anything already
    gone is skipped, so ending twice is harmless."""
    placement = placement or EmbeddedPlacement(session)
    lease = _lease(session, lease_id)
    _check_not_busy(lease, "its end")
    lock_hosts(session, lease.id)
    release_reservations(session, _reservations(session, lease.id), placement)
    lease.status = TERMINATED
    session.flush()


def release_reservations(session: Session, reservations: Iterable[Reservation],
                         placement: PlacementBackend | None = None) -> None:
    """Remove the reservations' instances, undo what starting the reservations did, and delete
    their classes and flavors; the reservations end up `deleted`. Safe on reservations that
    never started. The caller holds the lease's row and its hosts' rows locked."""
    placement = placement or EmbeddedPlacement(session)
    reservations = list(reservations)
    # Instances first: a reservation's inventory cannot go while instances use it.
    removed = remove_reservation_instances(session, placement, [r.id for r in reservations])
    if removed:
        LOG.info("removed %d instances of ending reservations %s", len(removed),
                 ", ".join(r.id for r in reservations))
    for reservation in reservations:
        if reservation.resource_type == PHYSICAL_HOST:
            _hosts_out_of_reservation(session, placement, reservation)
        else:
            _remove_reservation_inventory(session, placement, reservation)
        reservation.status = RESERVATION_DELETED
    session.flush()


def _hosts_out_of_reservation(session: Session, placement: PlacementBackend, reservation: Reservation) -> None:
    aggregate = reservation_aggregate_uuid(reservation.id)
    for host, _slots in _booked_hosts(session, reservation.id):
        current = placement.aggregates(host.resource_provider_uuid)
        wanted = [a for a in current if a != aggregate]
        # A back-to-back lease may have taken the host already: then it stays out of the freepool.
        if not set(wanted) & _other_reservation_aggregates(session, host.id, reservation.id) \
                and FREEPOOL_AGGREGATE_UUID not in wanted:
            wanted.append(FREEPOOL_AGGREGATE_UUID)
        if sorted(wanted) != sorted(current):
            placement.set_aggregates(host.resource_provider_uuid, wanted)
    disown_aggregate(session, aggregate)


def _other_reservation_aggregates(session: Session, host_id: int, reservation_id: str) -> set[str]:
    others = session.scalars(select(Reservation.id)
                             .join(ReservationBooking, ReservationBooking.reservation_id == Reservation.id)
                             .where(ReservationBooking.host_id == host_id, Reservation.id != reservation_id,
                                    Reservation.resource_type == PHYSICAL_HOST))
    return {reservation_aggregate_uuid(other) for other in others}


def _remove_reservation_inventory(session: Session, placement: PlacementBackend, reservation: Reservation) -> None:
    resource_class = reservation.resource_class
    if resource_class:
        for host, _slots in _booked_hosts(session, reservation.id):
            if host.reservation_provider_uuid:
                set_reservation_inventory(placement, host.reservation_provider_uuid, resource_class, 0)
    if reservation.reservation_flavor_id:
        try:
            flavors.delete_flavor(session, reservation.reservation_flavor_id)
        except NotFound:
            pass
    if resource_class:
        try:
            placement.delete_resource_class(resource_class)
        except NotFound:
            pass


def move_active_hosts(session: Session, placement: PlacementBackend, lease: Lease, reservation: Reservation,
                      added: Sequence[int], released: Sequence[int]) -> None:
    """For an update of an ACTIVE physical:host reservation: `added` hosts leave the freepool for
    the reservation's aggregate, `released` ones go back to the freepool. Locks those hosts' rows
    (in id order) for the read-then-write of their aggregates."""
    aggregate = reservation_aggregate_uuid(reservation.id)
    ids = sorted({*added, *released})
    hosts = {host.id: host for host in session.scalars(select(Host).where(Host.id.in_(ids)).order_by(Host.id)
                                                       .with_for_update())}
    for host_id in added:
        current = placement.aggregates(hosts[host_id].resource_provider_uuid)
        wanted = [a for a in current if a != FREEPOOL_AGGREGATE_UUID] + ([] if aggregate in current else [aggregate])
        if sorted(wanted) != sorted(current):
            placement.set_aggregates(hosts[host_id].resource_provider_uuid, wanted)
    for host_id in released:
        current = placement.aggregates(hosts[host_id].resource_provider_uuid)
        wanted = [a for a in current if a != aggregate]
        if FREEPOOL_AGGREGATE_UUID not in wanted:
            wanted.append(FREEPOOL_AGGREGATE_UUID)
        if sorted(wanted) != sorted(current):
            placement.set_aggregates(hosts[host_id].resource_provider_uuid, wanted)

