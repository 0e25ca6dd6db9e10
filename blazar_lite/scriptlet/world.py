"""What a scriptlet may ask about while it decides one placement, read in the request's
transaction and only when asked.

Nodes are those of the request's snapshot (the nodes it could see), described from what the
snapshot already read: status, capacity, usage, aggregates, traits and a host's extra
capabilities. Instances, projects and reservations are read from the database on demand.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blazar_lite.allocators.snapshot import Node, Snapshot
from blazar_lite.db.base import utcnow
from blazar_lite.exceptions import BadRequest
from blazar_lite.hosts.aggregates import FREEPOOL_NAME
from blazar_lite.hosts.models import Host, HostAggregate
from blazar_lite.hosts.service import FREEPOOL_AGGREGATE_UUID
from blazar_lite.instances.models import Instance
from blazar_lite.leases.models import ACTIVE, PENDING, PHYSICAL_HOST, STARTING, Lease, Reservation, ReservationBooking
from blazar_lite.placement.backend import PlacementBackend
from blazar_lite.scriptlet.runtime import Member

HOST_CLASSES = {"vcpus": "VCPU", "memory_mb": "MEMORY_MB", "disk_gb": "DISK_GB"}
LIVE_LEASES = (PENDING, STARTING, ACTIVE)


def group_names(session: Session) -> dict[str, str]:
    """Aggregate uuid -> the name the scriptlet sees as a group (freepool, reservation_<id>, ...)."""
    names = {FREEPOOL_AGGREGATE_UUID: FREEPOOL_NAME}
    names.update(session.execute(select(HostAggregate.uuid, HostAggregate.name)).all())
    return names


def member_of(node: Node, groups: Mapping[str, str]) -> Member:
    """The scriptlet's view of a node. Extra capabilities are its config; `architecture`,
    `failure_domain` and `description` come from capabilities of those names when a host has them."""
    config = {key: str(value) for key, value in node.capabilities.items()}
    return Member(server_name=node.name, status=node.status,
                  architecture=config.get("architecture", "x86_64"),
                  groups=tuple(sorted(groups.get(uuid, uuid) for uuid in node.aggregates)),
                  traits=tuple(sorted(node.traits)), config=tuple(sorted(config.items())),
                  failure_domain=config.get("failure_domain", "default"),
                  description=config.get("description", ""))


def _when(value: str | None, what: str) -> dt.datetime | None:
    if value is None or value == "":
        return None
    try:
        moment = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"get_reservations: {what} {value!r} is not an ISO 8601 date "
                         "(like 2026-12-01T08:00:00Z).") from None
    # A date without a zone is UTC, as every date of the API is.
    return moment.astimezone(dt.UTC) if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class DatabaseWorld:
    """The World of one placement (see runtime.World)."""

    # The snapshot's own reading of a node is used where it has one; reserved_capacity reads
    # the hosts a request could not use (a reservation's, for an on-demand request) itself.

    def __init__(self, session: Session, placement: PlacementBackend, snapshot: Snapshot,
                 members: Mapping[str, Member], now: dt.datetime | None = None) -> None:
        self.session = session
        self.placement = placement
        self.snapshot = snapshot
        self.members = members
        self.now = now or utcnow()

    def _node(self, name: str, function: str) -> Node:
        node = self.snapshot.node(name) if isinstance(name, str) else None
        if node is None:
            raise BadRequest(f"{function}({name!r}): no such cluster member among the nodes this request could use.")
        return node

    def member_resources(self, name: str) -> dict[str, Any]:
        node = self._node(name, "get_cluster_member_resources")
        capacity = dict(node.capacity)
        return {"capacity": capacity, "cpu_cores": capacity.get("VCPU", 0),
                "memory_size": capacity.get("MEMORY_MB", 0) * 1024 * 1024,
                "root_disk_size": capacity.get("DISK_GB", 0) * 1024 * 1024 * 1024}

    def member_state(self, name: str) -> dict[str, Any]:
        node = self._node(name, "get_cluster_member_state")
        return {"status": node.status, "instance_count": node.instance_count, "usage": dict(node.used),
                "free": {rc: node.free(rc) for rc in node.capacity}, "capacity": dict(node.capacity)}

    def _instance_filters(self, location: str | None, project: str | None) -> Any:
        where = []
        if location:
            where.append(Instance.node == location)
        if project:
            where.append(Instance.project_id == project)
        return where

    def instances(self, location: str | None, project: str | None) -> list[dict[str, Any]]:
        rows = self.session.scalars(select(Instance).where(*self._instance_filters(location, project))
                                    .order_by(Instance.created_at, Instance.uuid))
        return [{"name": row.name, "uuid": row.uuid, "project": row.project_id, "location": row.node,
                 "status": row.status, "forthcoming": row.forthcoming, "reservation_id": row.reservation_id,
                 "resources": {rc: getattr(row, column) or 0 for column, rc in HOST_CLASSES.items()}}
                for row in rows]

    def instances_count(self, location: str | None, project: str | None) -> int:
        return int(self.session.scalar(select(func.count()).select_from(Instance)
                                       .where(*self._instance_filters(location, project))) or 0)

    def cluster_members(self, group: str | None) -> list[dict[str, Any]]:
        return [member.as_dict() for member in self.members.values() if not group or group in member.groups]

    def project(self, name: str) -> dict[str, Any]:
        leases = self.session.scalar(select(func.count()).select_from(Lease)
                                     .where(Lease.project_id == name, Lease.status.in_(LIVE_LEASES))) or 0
        return {"name": name, "instances": self.instances_count(None, name), "leases": int(leases), "config": {}}

    def _bookings(self, member: str, start: dt.datetime | None, end: dt.datetime | None) -> list[Any]:
        where = [Host.hypervisor_hostname == member, Lease.status.in_(LIVE_LEASES)]
        if start is not None:
            where.append(Lease.end_date > start)
        if end is not None:
            where.append(Lease.start_date < end)
        return self.session.execute(
            select(Lease, Reservation, ReservationBooking.slots, Host.resource_provider_uuid)
            .join(Reservation, Reservation.lease_id == Lease.id)
            .join(ReservationBooking, ReservationBooking.reservation_id == Reservation.id)
            .join(Host, Host.id == ReservationBooking.host_id)
            .where(*where).order_by(Lease.start_date, Reservation.id)).all()

    def _used_slots(self, member: str, reservation_ids: list[str]) -> dict[str, int]:
        if not reservation_ids:
            return {}
        return dict(self.session.execute(
            select(Instance.reservation_id, func.count())
            .where(Instance.node == member, Instance.reservation_id.in_(reservation_ids))
            .group_by(Instance.reservation_id)).all())

    def _is_host(self, name: str, function: str) -> bool:
        """Whether `name` is a registered host (which reservations book); an on-demand node
        the request could use is not, and has none. Any other name is an error."""
        if isinstance(name, str) and self.session.scalar(
                select(Host.id).where(Host.hypervisor_hostname == name)) is not None:
            return True
        if isinstance(name, str) and name in self.members:
            return False
        raise BadRequest(f"{function}({name!r}): no host or candidate node of that name.")

    def reservations(self, member: str, start: str | None, end: str | None) -> list[dict[str, Any]]:
        if not self._is_host(member, "get_reservations"):
            return []
        rows = self._bookings(member, _when(start, "start"), _when(end, "end"))
        used = self._used_slots(member, [reservation.id for _, reservation, _, _ in rows])
        found = []
        for lease, reservation, slots, _ in rows:
            whole_host = reservation.resource_type == PHYSICAL_HOST
            resources = {} if whole_host else {rc: getattr(reservation, column) or 0
                                               for column, rc in HOST_CLASSES.items()}
            taken = used.get(reservation.id, 0)
            found.append({"reservation_id": reservation.id, "lease_id": lease.id, "lease_name": lease.name,
                          "project": lease.project_id, "resource_type": reservation.resource_type,
                          "status": lease.status, "start": _iso(lease.start_date), "end": _iso(lease.end_date),
                          "active": lease.status == ACTIVE, "slots": slots, "resources": resources,
                          "used": taken, "free": max(slots - taken, 0) if not whole_host else 0})
        return found

    def reserved_capacity(self, member: str) -> dict[str, int]:
        """Reserved but unused right now, per class: the free slots of each active instance
        reservation on the host times the slot's size, and for an active physical:host
        reservation whatever of the host is not in use."""
        reserved: dict[str, int] = {}
        if not self._is_host(member, "get_reserved_capacity"):
            return reserved
        # An ACTIVE lease is the one holding the host now (the scheduler started it, and has not ended it).
        rows = [row for row in self._bookings(member, None, None) if row[0].status == ACTIVE]
        used = self._used_slots(member, [reservation.id for _, reservation, _, _ in rows])
        for _, reservation, slots, provider_uuid in rows:
            if reservation.resource_type == PHYSICAL_HOST:
                # The snapshot has the host when the request could use it; else read it.
                room = self.placement.room([provider_uuid]).get(provider_uuid, {})
                for rc, (capacity, in_use) in room.items():
                    reserved[rc] = reserved.get(rc, 0) + max(capacity - in_use, 0)
                continue
            free = max(slots - used.get(reservation.id, 0), 0)
            for column, rc in HOST_CLASSES.items():
                amount = (getattr(reservation, column) or 0) * free
                if amount:
                    reserved[rc] = reserved.get(rc, 0) + amount
        return reserved
