"""Tables of registered hosts, their extra capabilities and the visibility of each property."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from blazar_lite.db.base import Base, UTCDateTime, utcnow

# Blazar's limit on extra capability names (longer ones are refused with this very message).
MAX_CAPABILITY_NAME = 64
MAX_CAPABILITY_VALUE = 255
# Extra capabilities set in one request.
MAX_CAPABILITIES = 100


class Host(Base):
    """A compute node registered for reservations.

    Its resources are copied from the registration so that reservation filters (`$vcpus`,
    `$memory_mb`, ...) read one table; its Placement side is a root provider (created by the
    registration, or adopted when one of the host's name existed: `provider_adopted`) and a
    child reservation provider `blazar_<hostname>`.
    """

    __tablename__ = "hosts"
    # Ids are never reused (SQLite would reuse the highest after a delete): a past reservation's
    # host id must not come to name another host.
    __table_args__ = {"sqlite_autoincrement": True}
    id: Mapped[int] = mapped_column(primary_key=True)
    hypervisor_hostname: Mapped[str] = mapped_column(String(255), unique=True)
    service_name: Mapped[str] = mapped_column(String(255))
    vcpus: Mapped[int] = mapped_column(Integer)
    memory_mb: Mapped[int] = mapped_column(Integer)
    local_gb: Mapped[int] = mapped_column(Integer)
    cpu_info: Mapped[str | None] = mapped_column(Text)
    hypervisor_type: Mapped[str | None] = mapped_column(String(255))
    hypervisor_version: Mapped[int | None] = mapped_column(Integer)
    availability_zone: Mapped[str | None] = mapped_column(String(255))
    reservable: Mapped[bool] = mapped_column(Boolean, default=True)
    status: Mapped[str] = mapped_column(String(16), default="up")
    resource_provider_uuid: Mapped[str] = mapped_column(String(36), unique=True)
    reservation_provider_uuid: Mapped[str] = mapped_column(String(36), unique=True)
    provider_adopted: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)


class ExtraCapability(Base):
    """A free-form key/value of a host, matched by reservation filters."""

    __tablename__ = "host_extra_capabilities"
    __table_args__ = (UniqueConstraint("host_id", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    host_id: Mapped[int] = mapped_column(ForeignKey("hosts.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(MAX_CAPABILITY_NAME), index=True)
    value: Mapped[str] = mapped_column(Text)


class HostProperty(Base):
    """A property name (the name of extra capabilities) and whether it is private.

    The row outlives the capabilities that use the name, so a property marked private stays
    private when a host gains it again.
    """

    __tablename__ = "host_properties"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(MAX_CAPABILITY_NAME), unique=True)
    private: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)


class HostAggregate(Base):
    """The owner of a reservation's Placement aggregate: while a physical:host reservation is
    active its hosts are in this aggregate, and the lease's project owns it (what Nova keeps as
    the `blazar:owner` metadata of a host aggregate). Schedulers read it to keep other projects'
    work off those hosts. Which hosts are members is Placement's to say, not this table's."""

    __tablename__ = "host_aggregates"
    uuid: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    reservation_id: Mapped[str] = mapped_column(String(36), unique=True)
    lease_id: Mapped[str] = mapped_column(String(36), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
