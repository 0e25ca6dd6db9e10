"""Removing the instances of reservations that end: a lease's end (or delete) takes them first,
so that its reservation inventory can go."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.instances import usage
from blazar_lite.instances.models import Instance
from blazar_lite.placement.backend import PlacementBackend


def remove_reservation_instances(session: Session, placement: PlacementBackend,
                                 reservation_ids: Sequence[str]) -> list[str]:
    """Delete every instance (real and forthcoming) created in these reservations, with its
    allocations; the uuids removed."""
    if not reservation_ids:
        return []
    instances = session.scalars(select(Instance).where(Instance.reservation_id.in_(list(reservation_ids)))
                                .order_by(Instance.uuid).with_for_update()).all()
    for instance in instances:
        placement.release(instance.uuid)
        usage.track(session, instance, gone=True)
        session.delete(instance)
    session.flush()
    return [instance.uuid for instance in instances]
