"""Tables of leases, their reservations, the hosts each reservation books, and lease events."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from blazar_lite.db.base import Base, UTCDateTime, utcnow

MAX_NAME = 80

# Lease states, as Blazar names them.
PENDING = "PENDING"
STARTING = "STARTING"
ACTIVE = "ACTIVE"
TERMINATING = "TERMINATING"
TERMINATED = "TERMINATED"
ERROR = "ERROR"
CREATING = "CREATING"
UPDATING = "UPDATING"
DELETING = "DELETING"

# Reservation types.
PHYSICAL_HOST = "physical:host"
VIRTUAL_INSTANCE = "virtual:instance"
FLAVOR_INSTANCE = "flavor:instance"
RESOURCE_TYPES = (PHYSICAL_HOST, VIRTUAL_INSTANCE, FLAVOR_INSTANCE)

# Event types and states.
START_LEASE = "start_lease"
BEFORE_END_LEASE = "before_end_lease"
END_LEASE = "end_lease"
UNDONE = "UNDONE"
IN_PROGRESS = "IN_PROGRESS"
DONE = "DONE"
EVENT_ERROR = "ERROR"


class Lease(Base):
    """A window [start_date, end_date) in which a project holds its reservations."""

    __tablename__ = "leases"
    # Blazar refuses a second lease of the same name; per project, so projects never collide.
    # ix_leases_window answers "the leases overlapping a window" (end_date > start and
    # start_date < end) by a range scan. Availability checks leave out the bookings of terminated
    # leases that end after the window opens: ix_leases_status_end finds those few in a long
    # history of terminated leases.
    __table_args__ = (UniqueConstraint("project_id", "name"), Index("ix_leases_window", "end_date", "start_date"),
                      Index("ix_leases_status_end", "status", "end_date"))
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME))
    user_id: Mapped[str] = mapped_column(String(255))
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    start_date: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    end_date: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    before_end_date: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    status: Mapped[str] = mapped_column(String(16), default=PENDING)
    status_reason: Mapped[str | None] = mapped_column(Text)
    degraded: Mapped[bool] = mapped_column(Boolean, default=False)
    # Minutes before the end at which the project is told the lease is ending (a JSON list,
    # largest first), besides before_end_lease; see leases/notices.py.
    before_end_notices: Mapped[str | None] = mapped_column(Text)
    # When the idle-lease policy last warned that the lease is idle (see leases/idle.py).
    idle_warned_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)


class Reservation(Base):
    """One reservation of a lease; the columns of other types than its own stay null."""

    __tablename__ = "reservations"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    lease_id: Mapped[str] = mapped_column(ForeignKey("leases.id", ondelete="CASCADE"), index=True)
    resource_type: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    missing_resources: Mapped[bool] = mapped_column(Boolean, default=False)
    resources_changed: Mapped[bool] = mapped_column(Boolean, default=False)
    # physical:host
    min: Mapped[int | None] = mapped_column(Integer)
    max: Mapped[int | None] = mapped_column(Integer)
    hypervisor_properties: Mapped[str | None] = mapped_column(Text)
    before_end: Mapped[str | None] = mapped_column(String(16))
    # physical:host and instances
    resource_properties: Mapped[str | None] = mapped_column(Text)
    # virtual:instance and flavor:instance (whose sizes are copied from its flavor)
    vcpus: Mapped[int | None] = mapped_column(Integer)
    memory_mb: Mapped[int | None] = mapped_column(Integer)
    disk_gb: Mapped[int | None] = mapped_column(Integer)
    amount: Mapped[int | None] = mapped_column(Integer)
    # None is a policy of its own (anywhere), not a missing value.
    affinity: Mapped[bool | None] = mapped_column(Boolean)
    flavor_id: Mapped[str | None] = mapped_column(String(36))
    resource_class: Mapped[str | None] = mapped_column(String(255))
    reservation_flavor_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)


class ReservationBooking(Base):
    """Capacity a reservation holds on one host over its lease's window: `slots` instance slots,
    or the whole host for physical:host (slots 1).

    Each row also carries a copy of everything an availability check reads of it: its lease, the
    lease's window, what it holds (slots × the reservation's sizes, or the whole host:
    `exclusive`, amounts 0). Every check reads thousands of bookings, and one narrow table with
    a window index answers that far faster than a join through reservations and leases. The
    writers of bookings (lease create and update) keep the copy in step with the lease's dates
    and the reservation's sizes.
    """

    __tablename__ = "reservation_bookings"
    __table_args__ = (UniqueConstraint("reservation_id", "host_id"),
                      Index("ix_reservation_bookings_window", "end_date", "start_date"))
    id: Mapped[int] = mapped_column(primary_key=True)
    reservation_id: Mapped[str] = mapped_column(ForeignKey("reservations.id", ondelete="CASCADE"))
    # A host can only be deleted once no current or future reservation holds it; its past
    # bookings go with it.
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"), index=True)
    slots: Mapped[int] = mapped_column(Integer)
    lease_id: Mapped[str] = mapped_column(ForeignKey("leases.id", ondelete="CASCADE"), index=True)
    start_date: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    end_date: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    vcpus: Mapped[int] = mapped_column(Integer)
    memory_mb: Mapped[int] = mapped_column(Integer)
    disk_gb: Mapped[int] = mapped_column(Integer)
    exclusive: Mapped[bool] = mapped_column(Boolean)


class Event(Base):
    """Something the scheduler does to a lease at `time`; the claim columns let several scheduler
    processes share the work without running an event twice."""

    __tablename__ = "lease_events"
    __table_args__ = (Index("ix_lease_events_status_time", "status", "time"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    lease_id: Mapped[str] = mapped_column(ForeignKey("leases.id", ondelete="CASCADE"), index=True)
    event_type: Mapped[str] = mapped_column(String(32))
    time: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    status: Mapped[str] = mapped_column(String(16), default=UNDONE)
    claimed_by: Mapped[str | None] = mapped_column(String(255))
    claimed_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)


class LeaseHistory(Base):
    """What happened to a lease: created, updated, deleted, each scheduler event, errors and
    degradation, in order. Kept after the lease is deleted (no foreign key), so that its end can
    still be read."""

    __tablename__ = "lease_history"
    __table_args__ = {"sqlite_autoincrement": True}
    id: Mapped[int] = mapped_column(primary_key=True)
    lease_id: Mapped[str] = mapped_column(String(36), index=True)
    project_id: Mapped[str] = mapped_column(String(255))
    event: Mapped[str] = mapped_column(String(32))
    # The lease's status just after the event.
    status: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    # A JSON object of what the event changed or reports.
    detail: Mapped[str] = mapped_column(Text, default="{}")
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class LeaseNotice(Base):
    """A before-end notice sent: its row is written with the notice, once per lease and offset,
    so two schedulers never send the same notice twice."""

    __tablename__ = "lease_notices"
    lease_id: Mapped[str] = mapped_column(ForeignKey("leases.id", ondelete="CASCADE"), primary_key=True)
    minutes_before_end: Mapped[int] = mapped_column(Integer, primary_key=True)
    sent_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
