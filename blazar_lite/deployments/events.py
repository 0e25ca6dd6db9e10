"""Events for a deployment's governor, queued for its webhook (`governor_webhook_url`):

- `scale-down-request`: a lease whose reservations a shape uses reaches before_end_lease; its
  instances there go when the lease ends, so the governor should move or shed them now.
- `capacity-offer`: a reservation a shape uses has unused slots: when its lease starts, and when
  a shape's template comes to name an active reservation.
- `evacuation`: a host was evacuated or went down while it held instances of the deployment;
  which moved where, and which could not.

Each is queued in the transaction of the change it reports, and delivered by the scheduler (see
blazar_lite/webhooks/delivery.py). A deployment without a webhook URL gets none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.deployments.models import Deployment, Shape
from blazar_lite.instances import service as instances
from blazar_lite.instances.models import Instance
from blazar_lite.leases.dates import describe_date, format_date
from blazar_lite.leases.models import Lease, Reservation
from blazar_lite.webhooks import delivery

SOURCE = "deployment"
SCALE_DOWN_REQUEST = "scale-down-request"
CAPACITY_OFFER = "capacity-offer"
EVACUATION = "evacuation"
EVENT_TYPES = (SCALE_DOWN_REQUEST, CAPACITY_OFFER, EVACUATION)


@dataclass(frozen=True)
class Move:
    """What became of one instance when its host was evacuated or went down."""

    instance_uuid: str
    moved: bool
    to_host: str | None
    message: str


def receiver(session: Session, deployment_id: str) -> delivery.Receiver | None:
    """The governor's webhook of the deployment, as it is now (None: deleted, or no URL)."""
    row = session.get(Deployment, deployment_id)
    if row is None or not row.governor_webhook_url:
        return None
    return delivery.Receiver(row.governor_webhook_url, row.governor_webhook_secret)


def _queue(session: Session, deployment: Deployment, event_type: str, fields: dict[str, Any]) -> None:
    if not deployment.governor_webhook_url:
        return
    delivery.enqueue(session, source=SOURCE, source_id=deployment.id, project_id=deployment.project_id,
                     event_type=event_type,
                     fields={"deployment": deployment.name, "deployment_id": deployment.id, **fields})


def _template_reservation(shape: Shape) -> str | None:
    value = json.loads(shape.instance_template or "{}").get("reservation_id")
    return value if isinstance(value, str) else None


def _shapes_using(session: Session, project_id: str, reservation_ids: Sequence[str]
                  ) -> list[tuple[Deployment, Shape, list[str]]]:
    """The shapes of the project's deployments with a webhook that use any of the reservations
    (their template names it, or they have instances in it), with the reservations each uses."""
    if not reservation_ids:
        return []
    wanted = set(reservation_ids)
    found = session.execute(select(Deployment, Shape).join(Shape, Shape.deployment_id == Deployment.id)
                            .where(Deployment.project_id == project_id, Deployment.governor_webhook_url.is_not(None))
                            .order_by(Deployment.name, Shape.name)).all()
    if not found:
        return []
    occupied: dict[str, set[str]] = {}
    for shape_id, reservation_id in session.execute(
            select(Instance.shape_id, Instance.reservation_id).distinct()
            .where(Instance.shape_id.in_([shape.id for _, shape in found]), Instance.reservation_id.in_(wanted))):
        occupied.setdefault(shape_id, set()).add(reservation_id)
    using = []
    for deployment, shape in found:
        used = set(occupied.get(shape.id, ()))
        named = _template_reservation(shape)
        if named in wanted:
            used.add(named)
        if used:
            using.append((deployment, shape, sorted(used)))
    return using


def _lease_and_reservations(session: Session, lease_id: str) -> tuple[Lease | None, list[str]]:
    lease = session.get(Lease, lease_id)
    if lease is None:
        return None, []
    return lease, list(session.scalars(select(Reservation.id).where(Reservation.lease_id == lease_id)
                                       .order_by(Reservation.id)))


def lease_ending(session: Session, lease_id: str) -> None:
    """At before_end_lease: ask each shape that uses the lease to scale down, naming its
    instances that go when the lease ends."""
    lease, reservation_ids = _lease_and_reservations(session, lease_id)
    if lease is None:
        return
    for deployment, shape, used in _shapes_using(session, lease.project_id, reservation_ids):
        names = list(session.scalars(select(Instance.name).where(Instance.shape_id == shape.id,
                                                                 Instance.reservation_id.in_(used))
                                     .order_by(Instance.name)))
        _queue(session, deployment, SCALE_DOWN_REQUEST, {
            "shape": shape.name, "lease_id": lease.id, "reservation_ids": used,
            "end_date": format_date(lease.end_date), "instances": names,
            "message": (f"Lease {lease.id} ends at {describe_date(lease.end_date)}: the {len(names)} instance(s) "
                        f"of shape {shape.name} in its reservations are deleted then. Scale down, or move them "
                        "elsewhere, before.")})


def _offer(session: Session, deployment: Deployment, shape: Shape, lease: Lease, reservation_id: str) -> None:
    slots = instances.reservation_slots(session, reservation_id)
    if slots is None or slots[0] == 0:
        return
    left, total = slots
    _queue(session, deployment, CAPACITY_OFFER, {
        "shape": shape.name, "lease_id": lease.id, "reservation_id": reservation_id, "slots_left": left,
        "slots": total, "end_date": format_date(lease.end_date),
        "message": (f"Reservation {reservation_id} has {left} of its {total} slots unused until "
                    f"{describe_date(lease.end_date)}; shape {shape.name} may scale up into them.")})


def lease_started(session: Session, lease_id: str) -> None:
    """After start_lease: offer each shape that uses the lease's reservations their unused slots."""
    lease, reservation_ids = _lease_and_reservations(session, lease_id)
    if lease is None:
        return
    for deployment, shape, used in _shapes_using(session, lease.project_id, reservation_ids):
        for reservation_id in used:
            _offer(session, deployment, shape, lease, reservation_id)


def shape_template_set(session: Session, deployment: Deployment, shape: Shape) -> None:
    """After a shape was created or its template changed: offer the unused slots of the active
    reservation its template names, if any."""
    reservation_id = _template_reservation(shape)
    reservation = session.get(Reservation, reservation_id) if reservation_id else None
    lease = session.get(Lease, reservation.lease_id) if reservation is not None else None
    if lease is not None and lease.project_id == deployment.project_id:
        _offer(session, deployment, shape, lease, reservation.id)


def instances_moved(session: Session, host: str, reason: str, moves: Iterable[Move]) -> None:
    """After an evacuation (or a host going down): tell each deployment whose instances were on
    the host what became of them, in one event per deployment."""
    by_uuid = {move.instance_uuid: move for move in moves}
    if not by_uuid:
        return
    found = session.execute(select(Instance.uuid, Instance.name, Shape.name, Deployment)
                            .join(Shape, Shape.id == Instance.shape_id)
                            .join(Deployment, Deployment.id == Shape.deployment_id)
                            .where(Instance.uuid.in_(list(by_uuid)), Deployment.governor_webhook_url.is_not(None))
                            .order_by(Deployment.id, Instance.name)).all()
    touched: dict[str, tuple[Deployment, list[dict[str, Any]]]] = {}
    for uuid, name, shape_name, deployment in found:
        move = by_uuid[uuid]
        touched.setdefault(deployment.id, (deployment, []))[1].append(
            {"name": name, "id": uuid, "shape": shape_name, "moved": move.moved, "to_host": move.to_host,
             "message": move.message})
    for deployment, moved in touched.values():
        stayed = sum(1 for entry in moved if not entry["moved"])
        _queue(session, deployment, EVACUATION, {
            "host": host, "reason": reason, "instances": moved,
            "message": (f"Host {host} was emptied ({reason}): {len(moved) - stayed} instance(s) of the deployment "
                        f"moved, {stayed} could not.")})


def list_events(session: Session, deployment: Deployment, filters: Mapping[str, str]) -> list[delivery.DeliveryView]:
    """The deployment's events, newest first, with every delivery attempt; filtered as
    `delivery.read_filters` says."""
    return delivery.list_deliveries(session, SOURCE, deployment.id, *delivery.read_filters(filters, EVENT_TYPES))


def forget(session: Session, deployment: Deployment) -> None:
    delivery.forget(session, SOURCE, deployment.id)

