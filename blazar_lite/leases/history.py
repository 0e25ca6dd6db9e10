"""A lease's history: every create, update, delete and scheduler event (start, before_end, end,
errors, degradation) appended in the transaction that did it, and sent to the project's webhooks
that ask for it."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.db import utcnow
from blazar_lite.exceptions import NotFound
from blazar_lite.leases.dates import format_date
from blazar_lite.leases.models import Lease, LeaseHistory
from blazar_lite.webhooks import subscriptions

CREATED, UPDATED, DELETED, STARTED, BEFORE_END, ENDED, ERROR, DEGRADED, IDLE = subscriptions.LEASE_EVENTS


@dataclass(frozen=True)
class HistoryEntry:
    event: str
    status: str
    message: str
    detail: dict[str, Any]
    at: dt.datetime


def lease_fields(lease: Lease) -> dict[str, Any]:
    """The lease as events about it show it to receivers outside the service."""
    return {"id": lease.id, "name": lease.name, "status": lease.status, "start_date": format_date(lease.start_date),
            "end_date": format_date(lease.end_date), "degraded": bool(lease.degraded)}


def record(session: Session, lease: Lease, event: str, message: str, detail: Mapping[str, Any] | None = None) -> None:
    """Append `event` to the lease's history and queue it for the project's webhooks."""
    detail = dict(detail or {})
    at = utcnow()
    session.add(LeaseHistory(lease_id=lease.id, project_id=lease.project_id, event=event, status=lease.status,
                             message=message, detail=json.dumps(detail, sort_keys=True), at=at))
    subscriptions.notify(session, lease.project_id, event,
                         {"lease": lease_fields(lease), "message": message, "detail": detail})


def lease_history(session: Session, lease_id: str, project_id: str | None) -> list[HistoryEntry]:
    """The lease's history, oldest first, also once the lease is deleted; 404 when the lease
    never existed or belongs to another project than `project_id` (None: any, for admins)."""
    rows = session.scalars(select(LeaseHistory).where(LeaseHistory.lease_id == lease_id)
                           .order_by(LeaseHistory.id)).all()
    owner = session.scalar(select(Lease.project_id).where(Lease.id == lease_id))
    owner = owner if owner is not None else (rows[0].project_id if rows else None)
    if owner is None or (project_id is not None and owner != project_id):
        raise NotFound(f"Lease {lease_id} not found.")
    return [HistoryEntry(row.event, row.status, row.message, json.loads(row.detail), row.at) for row in rows]
