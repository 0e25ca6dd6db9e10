"""A project's webhooks (/v1/webhooks): where its lease events are POSTed, signed with the
webhook's secret, filtered to the events it asks for."""

from __future__ import annotations

import datetime as dt
import json
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest, NotFound
from blazar_lite.instances.requests import read_object
from blazar_lite.webhooks import delivery
from blazar_lite.webhooks.models import Subscription
from blazar_lite.webhooks.signing import read_secret, read_url

SOURCE = "webhook"
# Every event of a lease's life that a webhook may ask for.
LEASE_EVENTS = ("lease.created", "lease.updated", "lease.deleted", "lease.started", "lease.before_end",
                "lease.ended", "lease.error", "lease.degraded", "lease.idle")
FIELDS = frozenset({"url", "secret", "events", "description"})
MAX_PER_PROJECT = 20


@dataclass(frozen=True)
class SubscriptionView:
    id: str
    project_id: str
    url: str
    secret: str
    events: list[str]
    description: str
    created_at: dt.datetime
    updated_at: dt.datetime | None


def _events(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadRequest(f"Invalid events: give a list of event names ({', '.join(LEASE_EVENTS)}), or leave it out "
                         "for all of them.")
    unknown = sorted(set(value) - set(LEASE_EVENTS))
    if unknown:
        raise BadRequest(f"Unknown event {', '.join(unknown)}: the events are {', '.join(LEASE_EVENTS)}.")
    return sorted(set(value), key=LEASE_EVENTS.index)


def _description(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > 1024:
        raise BadRequest("Invalid description: give a string of at most 1024 characters.")
    return value


def _view(row: Subscription) -> SubscriptionView:
    return SubscriptionView(row.id, row.project_id, row.url, row.secret, json.loads(row.events), row.description,
                            row.created_at, row.updated_at)


def _find(session: Session, project_id: str | None, subscription_id: str, *, lock: bool = False) -> Subscription:
    """The webhook, when it belongs to `project_id` (None: any project, for admins); else 404."""
    stmt = select(Subscription).where(Subscription.id == subscription_id)
    if project_id is not None:
        stmt = stmt.where(Subscription.project_id == project_id)
    row = session.scalar(stmt.with_for_update() if lock else stmt)
    if row is None:
        raise NotFound(f"Webhook {subscription_id} not found.")
    return row


def list_subscriptions(session: Session, project_id: str | None) -> list[SubscriptionView]:
    stmt = select(Subscription).order_by(Subscription.project_id, Subscription.created_at, Subscription.id)
    if project_id is not None:
        stmt = stmt.where(Subscription.project_id == project_id)
    return [_view(row) for row in session.scalars(stmt)]


def get_subscription(session: Session, project_id: str | None, subscription_id: str) -> SubscriptionView:
    return _view(_find(session, project_id, subscription_id))


def create_subscription(session: Session, project_id: str, body: object) -> SubscriptionView:
    data = read_object(body, FIELDS, "a webhook")
    row = Subscription(id=str(uuidlib.uuid4()), project_id=project_id, url=read_url(data.get("url"), "url"),
                       secret=read_secret(data.get("secret"), "secret"), events=json.dumps(_events(data.get("events"))),
                       description=_description(data.get("description")))
    count = session.scalar(select(func.count()).select_from(Subscription)
                           .where(Subscription.project_id == project_id)) or 0
    if count >= MAX_PER_PROJECT:
        raise BadRequest(f"Project {project_id} has {count} webhooks, the most it may have; delete one first.")
    session.add(row)
    session.flush()
    return _view(row)


def update_subscription(session: Session, project_id: str | None, subscription_id: str,
                        body: object) -> SubscriptionView:
    """PATCH: the fields given change."""
    data = read_object(body, FIELDS, "a webhook update")
    row = _find(session, project_id, subscription_id, lock=True)
    if "url" in data:
        row.url = read_url(data["url"], "url")
    if "secret" in data:
        row.secret = read_secret(data["secret"], "secret")
    if "events" in data:
        row.events = json.dumps(_events(data["events"]))
    if "description" in data:
        row.description = _description(data["description"])
    session.flush()
    return _view(row)


def delete_subscription(session: Session, project_id: str | None, subscription_id: str) -> None:
    row = _find(session, project_id, subscription_id, lock=True)
    delivery.forget(session, SOURCE, row.id)
    session.delete(row)
    session.flush()


def deliveries(session: Session, project_id: str | None, subscription_id: str,
               filters: Mapping[str, str]) -> list[delivery.DeliveryView]:
    """The webhook's events, newest first, with every attempt; filtered as `delivery.read_filters` says."""
    row = _find(session, project_id, subscription_id)
    return delivery.list_deliveries(session, SOURCE, row.id, *delivery.read_filters(filters, LEASE_EVENTS))


def receiver(session: Session, subscription_id: str) -> delivery.Receiver | None:
    row = session.get(Subscription, subscription_id)
    return delivery.Receiver(row.url, row.secret) if row is not None else None


def notify(session: Session, project_id: str, event: str, fields: Mapping[str, Any]) -> None:
    """Queue `event` for every webhook of the project that asks for it, in the caller's
    transaction."""
    for row in session.scalars(select(Subscription).where(Subscription.project_id == project_id)
                               .order_by(Subscription.id)):
        wanted = json.loads(row.events)
        if not wanted or event in wanted:
            delivery.enqueue(session, source=SOURCE, source_id=row.id, project_id=project_id, event_type=event,
                             fields=fields)
