"""Tables of webhook deliveries (one per event for a receiver) and of every attempt to send one."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from blazar_lite.db.base import Base, UTCDateTime, utcnow

# A delivery waits (PENDING) until a scheduler claims it (SENDING); it ends DELIVERED when the
# receiver answered 2xx, or FAILED when every attempt failed or the receiver is gone.
PENDING = "PENDING"
SENDING = "SENDING"
DELIVERED = "DELIVERED"
FAILED = "FAILED"


class WebhookDelivery(Base):
    """An event to POST to the receiver of its source (a deployment's governor). The receiver's
    URL and secret are looked up from the source at each attempt, so a changed URL or rotated
    secret applies to the events still waiting."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
                      Index("ix_webhook_deliveries_source", "source", "source_id", "created_at"))
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    # What the event is about, and whose receiver gets it: ("deployment", deployment id).
    source: Mapped[str] = mapped_column(String(16))
    source_id: Mapped[str] = mapped_column(String(36))
    project_id: Mapped[str] = mapped_column(String(255))
    event_type: Mapped[str] = mapped_column(String(32))
    # The JSON body sent, byte for byte the same at every attempt (its signature is not).
    payload: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default=PENDING)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    claimed_by: Mapped[str | None] = mapped_column(String(255))
    claimed_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)


class WebhookAttempt(Base):
    """One POST of a delivery and how it went: the receiver's status code, or why none came."""

    __tablename__ = "webhook_attempts"
    __table_args__ = {"sqlite_autoincrement": True}
    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[str] = mapped_column(ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    url: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    duration_ms: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer)
    # Empty when the receiver answered 2xx; else the error or the start of the receiver's answer.
    error: Mapped[str] = mapped_column(Text, default="")
    outcome: Mapped[str] = mapped_column(String(16))


class Subscription(Base):
    """A project's webhook: where its lease events go, the secret that signs them, and which
    events it wants (all of them when `events` is empty)."""

    __tablename__ = "webhook_subscriptions"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    url: Mapped[str] = mapped_column(Text)
    secret: Mapped[str] = mapped_column(String(128))
    # A JSON list of event names.
    events: Mapped[str] = mapped_column(Text, default="[]")
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)
