"""Host aggregates and their owners: the freepool (no owner) and, while a physical:host
reservation is active, the reservation's aggregate, owned by its lease's project.

Membership lives in Placement (the hosts' root providers are members of the aggregate); this
module keeps who owns each reservation aggregate, so that a scheduler can send a project's work
to its hosts and keep everyone else's off them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from blazar_lite.hosts.models import Host, HostAggregate
from blazar_lite.hosts.service import FREEPOOL_AGGREGATE_UUID
from blazar_lite.placement.backend import EmbeddedPlacement, PlacementBackend

FREEPOOL_NAME = "freepool"


@dataclass(frozen=True)
class AggregateView:
    uuid: str
    name: str
    project_id: str | None
    reservation_id: str | None
    lease_id: str | None
    hosts: list[int]
    created_at: dt.datetime | None


def reservation_aggregate_name(reservation_id: str) -> str:
    return f"reservation:{reservation_id}"


def own_aggregate(session: Session, uuid: str, *, reservation_id: str, lease_id: str, project_id: str) -> None:
    """Record that `project_id` owns the aggregate of this reservation (idempotent: starting a
    lease again after a crash finds the row there)."""
    row = session.get(HostAggregate, uuid)
    if row is None:
        session.add(HostAggregate(uuid=uuid, name=reservation_aggregate_name(reservation_id), project_id=project_id,
                                  reservation_id=reservation_id, lease_id=lease_id))
    else:
        row.project_id = project_id
    session.flush()


def disown_aggregate(session: Session, uuid: str) -> None:
    """Forget the owner of a reservation aggregate that no longer holds hosts."""
    session.execute(delete(HostAggregate).where(HostAggregate.uuid == uuid))


def list_aggregates(session: Session, *, project_id: str | None = None,
                    placement: PlacementBackend | None = None) -> list[AggregateView]:
    """The freepool and every owned reservation aggregate (or only `project_id`'s), each with the
    ids of the hosts in it."""
    placement = placement or EmbeddedPlacement(session)
    stmt = select(HostAggregate).order_by(HostAggregate.created_at, HostAggregate.uuid)
    if project_id is not None:
        stmt = stmt.where(HostAggregate.project_id == project_id)
    owned: Sequence[HostAggregate] = session.scalars(stmt).all()
    uuids = ([FREEPOOL_AGGREGATE_UUID] if project_id is None else []) + [row.uuid for row in owned]
    members = placement.aggregate_members(uuids)
    providers = {provider for found in members.values() for provider in found}
    host_of = dict(session.execute(select(Host.resource_provider_uuid, Host.id)
                                   .where(Host.resource_provider_uuid.in_(providers))).all()) \
        if providers else {}

    def hosts(uuid: str) -> list[int]:
        return sorted(host_of[provider] for provider in members[uuid] if provider in host_of)

    views = [AggregateView(row.uuid, row.name, row.project_id, row.reservation_id, row.lease_id, hosts(row.uuid),
                           row.created_at) for row in owned]
    if project_id is None:
        views.insert(0, AggregateView(FREEPOOL_AGGREGATE_UUID, FREEPOOL_NAME, None, None, None,
                                      hosts(FREEPOOL_AGGREGATE_UUID), None))
    return views
