"""Tables of the Placement-style inventory."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Column, Float, ForeignKey, Index, Integer, String, Table, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from blazar_lite.db.base import Base, UTCDateTime, utcnow


class Timestamps:
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)


class ResourceClass(Timestamps, Base):
    __tablename__ = "resource_classes"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)


class Trait(Timestamps, Base):
    __tablename__ = "traits"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)


provider_traits = Table(
    "resource_provider_traits", Base.metadata,
    Column("resource_provider_id", ForeignKey("resource_providers.id", ondelete="CASCADE"), primary_key=True),
    Column("trait_id", ForeignKey("traits.id"), primary_key=True, index=True),
)

provider_aggregates = Table(
    "resource_provider_aggregates", Base.metadata,
    Column("resource_provider_id", ForeignKey("resource_providers.id", ondelete="CASCADE"), primary_key=True),
    Column("aggregate_id", ForeignKey("placement_aggregates.id"), primary_key=True, index=True),
)


class Aggregate(Base):
    __tablename__ = "placement_aggregates"
    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True)


class ResourceProvider(Timestamps, Base):
    __tablename__ = "resource_providers"
    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    generation: Mapped[int] = mapped_column(Integer, default=0)
    # Nullable only for the instant between INSERT and pointing a root at itself.
    root_provider_id: Mapped[int | None] = mapped_column(ForeignKey("resource_providers.id"), index=True)
    parent_provider_id: Mapped[int | None] = mapped_column(ForeignKey("resource_providers.id"), index=True)
    # How many consumers hold allocations here, kept by every allocation write (allocations.py)
    # so that ranking a thousand providers by load reads one column instead of counting rows.
    consumers: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class Inventory(Timestamps, Base):
    __tablename__ = "inventories"
    __table_args__ = (UniqueConstraint("resource_provider_id", "resource_class_id"),
                      Index("ix_inventories_resource_class_id", "resource_class_id"))
    id: Mapped[int] = mapped_column(primary_key=True)
    resource_provider_id: Mapped[int] = mapped_column(
        ForeignKey("resource_providers.id", ondelete="CASCADE"))
    resource_class_id: Mapped[int] = mapped_column(ForeignKey("resource_classes.id"))
    total: Mapped[int] = mapped_column(Integer)
    reserved: Mapped[int] = mapped_column(Integer, default=0)
    min_unit: Mapped[int] = mapped_column(Integer, default=1)
    max_unit: Mapped[int] = mapped_column(Integer)
    step_size: Mapped[int] = mapped_column(Integer, default=1)
    allocation_ratio: Mapped[float] = mapped_column(Float, default=1.0)
    # The sum of the allocations against this inventory, kept by every allocation write
    # (allocations.py): usage is read on every placement, summing the allocations each time
    # costs a scan that grows with the cluster.
    used: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class Consumer(Timestamps, Base):
    __tablename__ = "consumers"
    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    user_id: Mapped[str] = mapped_column(String(255))
    consumer_type: Mapped[str | None] = mapped_column(String(255))
    generation: Mapped[int] = mapped_column(Integer, default=0)


class Allocation(Timestamps, Base):
    __tablename__ = "allocations"
    __table_args__ = (Index("ix_allocations_provider_class", "resource_provider_id", "resource_class_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    resource_provider_id: Mapped[int] = mapped_column(ForeignKey("resource_providers.id"))
    consumer_id: Mapped[int] = mapped_column(ForeignKey("consumers.id", ondelete="CASCADE"), index=True)
    resource_class_id: Mapped[int] = mapped_column(ForeignKey("resource_classes.id"))
    used: Mapped[int] = mapped_column(Integer)
