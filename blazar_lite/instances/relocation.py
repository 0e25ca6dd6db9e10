"""Moving work off a host: evacuation (an admin asks; reason `evacuation`) and a host going down
(reason `relocation`), which also re-books the future reservations that held it.

Forthcoming instances move first: they are only promises, and moving them first keeps room for
the real ones behind them. An instance that finds no other node stays where it is; its lease (if
it is in one) is flagged `degraded` with the reason. Every move and every failure is recorded in
`relocations`, which admins read.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.allocators.snapshot import EVACUATION, RELOCATION
from blazar_lite.deployments import events as governor_events
from blazar_lite.exceptions import Conflict, NotEnoughResources, NotFound
from blazar_lite.hosts.models import Host
from blazar_lite.instances import service, usage
from blazar_lite.instances.models import Instance, Relocation
from blazar_lite.leases import enforcement, history, update
from blazar_lite.leases.models import ACTIVE, PENDING, Lease, Reservation, ReservationBooking
from blazar_lite.leases.service import DEFAULT_RULES, LeaseRules
from blazar_lite.placement.backend import EmbeddedPlacement, PlacementBackend


@dataclass(frozen=True)
class RelocationView:
    id: int
    host: str
    reason: str
    subject_type: str
    subject_id: str
    lease_id: str | None
    from_node: str
    to_node: str | None
    moved: bool
    message: str
    created_at: dt.datetime


def _host(session: Session, host_id: int) -> Host:
    host = session.scalar(select(Host).where(Host.id == host_id).with_for_update())
    if host is None:
        raise NotFound(f"Host {host_id} not found.")
    return host


def _lease_of(session: Session, reservation_id: str | None) -> Lease | None:
    if reservation_id is None:
        return None
    return session.scalar(select(Lease).join(Reservation, Reservation.lease_id == Lease.id)
                          .where(Reservation.id == reservation_id).with_for_update())


def _degrade(session: Session, lease: Lease, why: str) -> None:
    lease.degraded = True
    lease.status_reason = why
    history.record(session, lease, history.DEGRADED, why)


def _record(session: Session, **fields: object) -> Relocation:
    row = Relocation(**fields)
    session.add(row)
    session.flush()
    return row


def _move_instances(session: Session, host: Host, reason: str, allocator: service.AllocatorConfig,
                    placement: PlacementBackend) -> list[Relocation]:
    instances = session.scalars(select(Instance).where(Instance.node_provider_uuid == host.resource_provider_uuid)
                                .order_by(Instance.forthcoming.desc(), Instance.created_at, Instance.uuid)
                                .with_for_update()).all()
    records = []
    moves = []
    for instance in instances:
        place = service.place_of(session, instance)
        lease = _lease_of(session, instance.reservation_id)
        resources = service.resources_of(instance)
        try:
            with session.begin_nested():
                service.place_instance(session, placement, instance, place, resources, allocator, reason=reason,
                              avoid=frozenset({host.hypervisor_hostname}))
        except (NotEnoughResources, Conflict) as exc:
            message = f"instance {instance.uuid} could not leave {host.hypervisor_hostname}: {exc.message}"
            if lease is not None:
                _degrade(session, lease, message)
            records.append(_record(session, host=host.hypervisor_hostname, reason=reason, subject_type="instance",
                                   subject_id=instance.uuid, lease_id=lease.id if lease else None,
                                   from_node=host.hypervisor_hostname, to_node=None, moved=False, message=message))
            moves.append(governor_events.Move(instance.uuid, False, None, message))
            continue
        records.append(_record(session, host=host.hypervisor_hostname, reason=reason, subject_type="instance",
                               subject_id=instance.uuid, lease_id=lease.id if lease else None,
                               from_node=host.hypervisor_hostname, to_node=instance.node, moved=True,
                               message=f"instance {instance.uuid} moved to {instance.node}"))
        moves.append(governor_events.Move(instance.uuid, True, instance.node, records[-1].message))
        usage.track(session, instance)
    # A governor whose instances were on the host hears what became of them.
    governor_events.instances_moved(session, host.hypervisor_hostname, reason, moves)
    return records


def evacuate_host(session: Session, host_id: int, *, allocator: service.AllocatorConfig | None = None,
                  placement: PlacementBackend | None = None) -> list[RelocationView]:
    """Move every instance off the host (forthcoming ones first); what moved and what could not."""
    placement = placement or EmbeddedPlacement(session)
    host = _host(session, host_id)
    return [_view(row) for row in _move_instances(session, host, EVACUATION, allocator or service.AllocatorConfig(),
                                                  placement)]


def _rebook(session: Session, host: Host, placement: PlacementBackend, rules: LeaseRules) -> list[Relocation]:
    """Re-book, elsewhere, the reservations of pending leases that hold the host; flag active
    leases that lose it (an active lease never moves) as degraded."""
    rows = session.execute(select(Reservation.id, Reservation.lease_id, Lease.status)
                           .join(ReservationBooking, ReservationBooking.reservation_id == Reservation.id)
                           .join(Lease, Lease.id == Reservation.lease_id)
                           .where(ReservationBooking.host_id == host.id, Lease.status.in_([PENDING, ACTIVE]))
                           .order_by(Lease.start_date, Reservation.id)).all()
    by_lease: dict[str, list[str]] = {}
    status: dict[str, str] = {}
    for reservation_id, lease_id, lease_status in rows:
        by_lease.setdefault(lease_id, []).append(reservation_id)
        status[lease_id] = lease_status
    records = []
    name = host.hypervisor_hostname
    for lease_id, reservation_ids in by_lease.items():
        def record(moved: bool, message: str, reservation_id: str, to_node: str | None = None,
                   lease_id: str = lease_id) -> None:
            records.append(_record(session, host=name, reason=RELOCATION, subject_type="reservation",
                                   subject_id=reservation_id, lease_id=lease_id, from_node=name, to_node=to_node,
                                   moved=moved, message=message))

        if status[lease_id] == ACTIVE:
            lease = session.get(Lease, lease_id)
            assert lease is not None
            message = (f"host {name} went down while lease {lease_id} was active: reservation(s) "
                       f"{', '.join(reservation_ids)} lost what they held there")
            _degrade(session, lease, message)
            for reservation_id in reservation_ids:
                record(False, message, reservation_id)
            continue
        try:
            with session.begin_nested():
                # Moving a lease off a failed host is the service's doing: no quota may refuse it.
                update.update_lease(session, lease_id, {"reservations": [{"id": r} for r in reservation_ids]},
                                    placement=placement, rules=dataclasses.replace(rules, usage=enforcement.NO_LIMITS))
        except (NotEnoughResources, Conflict) as exc:
            lease = session.get(Lease, lease_id)
            assert lease is not None
            message = f"lease {lease_id} could not leave host {name}, which went down: {exc.message}"
            _degrade(session, lease, message)
            for reservation_id in reservation_ids:
                record(False, message, reservation_id)
            continue
        for reservation_id in reservation_ids:
            hosts = session.scalars(select(Host.hypervisor_hostname)
                                    .join(ReservationBooking, ReservationBooking.host_id == Host.id)
                                    .where(ReservationBooking.reservation_id == reservation_id)
                                    .order_by(Host.hypervisor_hostname)).all()
            record(True, f"reservation {reservation_id} re-booked on {', '.join(hosts)}", reservation_id,
                   ", ".join(hosts))
    return records


def host_went_down(session: Session, host_id: int, *, allocator: service.AllocatorConfig | None = None,
                   placement: PlacementBackend | None = None,
                   rules: LeaseRules = DEFAULT_RULES) -> list[RelocationView]:
    """After a host was marked down: move its instances (reason relocation) and re-book the
    future reservations that held it; what moved and what could not."""
    placement = placement or EmbeddedPlacement(session)
    host = _host(session, host_id)
    records = _move_instances(session, host, RELOCATION, allocator or service.AllocatorConfig(), placement)
    records += _rebook(session, host, placement, rules)
    return [_view(row) for row in records]


def _view(row: Relocation) -> RelocationView:
    return RelocationView(row.id, row.host, row.reason, row.subject_type, row.subject_id, row.lease_id,
                          row.from_node, row.to_node, row.moved, row.message, row.created_at)


def list_relocations(session: Session, *, host: str | None = None, lease_id: str | None = None,
                     limit: int = 1000) -> Sequence[RelocationView]:
    """The most recent relocations first, optionally of one host or one lease."""
    stmt = select(Relocation).order_by(Relocation.id.desc()).limit(limit)
    if host is not None:
        stmt = stmt.where(Relocation.host == host)
    if lease_id is not None:
        stmt = stmt.where(Relocation.lease_id == lease_id)
    return [_view(row) for row in session.scalars(stmt)]
