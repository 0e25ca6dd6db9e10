"""The instances table: what each instance asked for and where it landed."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from blazar_lite.db.base import Base, UTCDateTime, utcnow

MAX_NAME = 255

# Real instances are ACTIVE (running) or STOPPED; forthcoming ones exist only on paper.
ACTIVE = "ACTIVE"
STOPPED = "STOPPED"
FORTHCOMING = "FORTHCOMING"


class Instance(Base):
    """An instance is a Placement consumer of the same uuid: its allocations hold VCPU,
    MEMORY_MB and DISK_GB on its node's root provider and, inside an instance reservation, one
    unit of the reservation's class on the host's reservation provider.

    A forthcoming instance may leave every field but its uuid empty; the resources it names are
    allocated all the same, so committing it never runs out of room. `node` is the compute
    node's name (a host's hypervisor hostname), null while a forthcoming instance has none.
    """

    __tablename__ = "instances"
    # Names are unique within a project (several forthcoming instances may have none).
    __table_args__ = (UniqueConstraint("project_id", "name"),)
    uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str | None] = mapped_column(String(MAX_NAME))
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    user_id: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))
    forthcoming: Mapped[bool] = mapped_column(Boolean, default=False)
    flavor_id: Mapped[str | None] = mapped_column(String(36))
    vcpus: Mapped[int | None] = mapped_column(Integer)
    memory_mb: Mapped[int | None] = mapped_column(Integer)
    disk_gb: Mapped[int | None] = mapped_column(Integer)
    reservation_id: Mapped[str | None] = mapped_column(ForeignKey("reservations.id"), index=True)
    node: Mapped[str | None] = mapped_column(String(255), index=True)
    node_provider_uuid: Mapped[str | None] = mapped_column(String(36), index=True)
    # The deployment shape the instance was launched from, if any (it counts toward the shape's
    # scaling bounds).
    shape_id: Mapped[str | None] = mapped_column(ForeignKey("deployment_shapes.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)


class Relocation(Base):
    """What moved where (or could not) when a host was evacuated or went down: an instance to
    another node, or a reservation's bookings to other hosts. Kept for admins to read."""

    __tablename__ = "relocations"
    __table_args__ = {"sqlite_autoincrement": True}
    id: Mapped[int] = mapped_column(primary_key=True)
    host: Mapped[str] = mapped_column(String(255), index=True)
    reason: Mapped[str] = mapped_column(String(16))
    subject_type: Mapped[str] = mapped_column(String(16))
    subject_id: Mapped[str] = mapped_column(String(36))
    lease_id: Mapped[str | None] = mapped_column(String(36), index=True)
    from_node: Mapped[str] = mapped_column(String(255))
    to_node: Mapped[str | None] = mapped_column(String(255))
    moved: Mapped[bool] = mapped_column(Boolean)
    message: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class SlotUse(Base):
    """A span of time in which a real, running instance used a slot of a reservation (or, in a
    host reservation, one of its hosts): opened when it starts using it, closed when it stops,
    moves or goes. Leases' usage reports and the idle-lease policy read it."""

    __tablename__ = "slot_uses"
    __table_args__ = {"sqlite_autoincrement": True}
    id: Mapped[int] = mapped_column(primary_key=True)
    reservation_id: Mapped[str] = mapped_column(String(36), index=True)
    lease_id: Mapped[str] = mapped_column(String(36), index=True)
    instance_uuid: Mapped[str] = mapped_column(String(36), index=True)
    node: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    ended_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
