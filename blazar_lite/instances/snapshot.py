"""Reading the nodes an instance may land on into an allocator Snapshot, in a few statements.

Where an instance may go depends on what it is created in:
- an instance reservation (virtual:instance, flavor:instance): the hosts the reservation booked,
  each with the reservation's slots there (inventory of its class on the host's reservation
  provider) and the host's own VCPU / MEMORY_MB / DISK_GB;
- a physical:host reservation: the hosts the reservation holds;
- nothing (on demand): compute nodes outside the freepool and outside every reservation's
  aggregate — reservable capacity is never used by unreserved work.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.allocators.snapshot import UP, InstanceOnNode, Node, Snapshot
from blazar_lite.hosts.models import ExtraCapability, Host, HostAggregate
from blazar_lite.hosts.service import FREEPOOL_AGGREGATE_UUID
from blazar_lite.instances.models import Instance
from blazar_lite.leases.models import PHYSICAL_HOST, Reservation, ReservationBooking
from blazar_lite.placement.backend import PlacementBackend

HOST_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")


@dataclass(frozen=True)
class NodeRow:
    name: str
    provider_uuid: str
    host_id: int | None = None
    status: str = UP
    # The host's reservation provider and the reservation's slots booked there (instance reservations).
    reservation_provider_uuid: str | None = None
    # {class: (capacity, used)} of the node, when it was read with the node.
    room: dict[str, tuple[int, int]] | None = None


def _hosts_of(session: Session, reservation: Reservation) -> list[NodeRow]:
    rows = session.execute(select(Host).join(ReservationBooking, ReservationBooking.host_id == Host.id)
                           .where(ReservationBooking.reservation_id == reservation.id)
                           .order_by(Host.hypervisor_hostname)).scalars().all()
    instance_reservation = reservation.resource_type != PHYSICAL_HOST
    return [NodeRow(host.hypervisor_hostname, host.resource_provider_uuid, host.id, host.status,
                    host.reservation_provider_uuid if instance_reservation else None) for host in rows]


def _on_demand(session: Session, placement: PlacementBackend) -> list[NodeRow]:
    owned = list(session.scalars(select(HostAggregate.uuid)))
    found = placement.compute_nodes_outside([FREEPOOL_AGGREGATE_UUID, *owned])
    # Plain tuples of every host: cheaper than asking for a thousand provider uuids by value.
    hosts = {uuid: (host_id, status) for uuid, host_id, status in session.execute(
        select(Host.resource_provider_uuid, Host.id, Host.status))} if found else {}
    return [NodeRow(name, uuid, *hosts.get(uuid, (None, UP)), room=room) for uuid, name, room in found]


def node_rows(session: Session, placement: PlacementBackend, reservation: Reservation | None) -> list[NodeRow]:
    """The nodes an instance created in `reservation` (None: on demand) may land on."""
    return _on_demand(session, placement) if reservation is None else _hosts_of(session, reservation)


def roomiest_on_demand_rows(session: Session, placement: PlacementBackend, needed: Mapping[str, int],
                            limit: int) -> list[NodeRow]:
    """At most `limit` on-demand nodes with room for `needed` now, ranked as fewest-instances
    ranks them (fewest consumers, most free memory, name)."""
    owned = list(session.scalars(select(HostAggregate.uuid)))
    found = placement.roomiest_compute_nodes_outside([FREEPOOL_AGGREGATE_UUID, *owned], needed, limit)
    uuids = [uuid for uuid, _, _ in found]
    hosts = {uuid: (host_id, status) for uuid, host_id, status in session.execute(
        select(Host.resource_provider_uuid, Host.id, Host.status).where(Host.resource_provider_uuid.in_(uuids)))
             } if uuids else {}
    return [NodeRow(name, uuid, *hosts.get(uuid, (None, UP))) for uuid, name, _ in found]

def _instances_on(session: Session, provider_uuids: Sequence[str]) -> dict[str, list[InstanceOnNode]]:
    found: dict[str, list[InstanceOnNode]] = {}
    if provider_uuids:
        for row in session.scalars(select(Instance).where(Instance.node_provider_uuid.in_(provider_uuids))
                                   .order_by(Instance.created_at, Instance.uuid)):
            resources = {rc: amount for rc, amount in zip(HOST_CLASSES, (row.vcpus, row.memory_mb, row.disk_gb),
                                                          strict=True) if amount}
            found.setdefault(row.node_provider_uuid or "", []).append(InstanceOnNode(
                row.uuid, row.name, row.project_id, resources, row.forthcoming, row.reservation_id))
    return found


def read_snapshot(session: Session, placement: PlacementBackend, rows: Iterable[NodeRow], *,
                  resource_class: str | None = None, with_instances: bool = False,
                  with_details: bool = False) -> Snapshot:
    """The Snapshot of `rows`: capacity and usage now (forthcoming instances included, since they
    hold allocations), instance counts, and the reservation's slots per node when
    `resource_class` names an instance reservation's class. `with_instances` lists the
    instances on each node, `with_details` adds aggregates and extra capabilities."""
    rows = list(rows)
    uuids = [row.provider_uuid for row in rows]
    slot_providers = [row.reservation_provider_uuid for row in rows if row.reservation_provider_uuid]
    unread = [row.provider_uuid for row in rows if row.room is None] + slot_providers
    room = placement.room(unread) if unread else {}
    room.update({row.provider_uuid: row.room for row in rows if row.room is not None})
    # Consumers, as Placement counts them: the node's instances, real and forthcoming.
    counts = placement.consumer_counts(uuids)
    instances = _instances_on(session, uuids) if with_instances else {}
    capabilities: dict[int, dict[str, str]] = {}
    labels = placement.labels(uuids) if with_details else {}
    if with_details:
        host_ids = [row.host_id for row in rows if row.host_id is not None]
        for host_id, name, value in session.execute(
                select(ExtraCapability.host_id, ExtraCapability.name, ExtraCapability.value)
                .where(ExtraCapability.host_id.in_(host_ids))):
            capabilities.setdefault(host_id, {})[name] = value
    nodes = []
    for row in rows:
        node_room = room.get(row.provider_uuid, {})
        slots = None
        if resource_class is not None and row.reservation_provider_uuid:
            slots = room.get(row.reservation_provider_uuid, {}).get(resource_class, (0, 0))
        nodes.append(Node(
            name=row.name, provider_uuid=row.provider_uuid, status=row.status, host_id=row.host_id,
            capacity={rc: cap for rc, (cap, _) in node_room.items()},
            used={rc: used for rc, (_, used) in node_room.items()},
            instance_count=counts.get(row.provider_uuid, 0),
            instances=tuple(instances.get(row.provider_uuid, ())),
            aggregates=frozenset(labels.get(row.provider_uuid, ((), ()))[0]),
            traits=frozenset(labels.get(row.provider_uuid, ((), ()))[1]),
            capabilities=capabilities.get(row.host_id, {}) if row.host_id is not None else {},
            reservation_slots=slots))
    return Snapshot(tuple(nodes))
