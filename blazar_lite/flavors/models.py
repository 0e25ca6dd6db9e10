"""Tables of flavors, their extra specs and the projects that may use private ones."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from blazar_lite.db.base import Base, UTCDateTime, utcnow

MAX_TEXT = 255


class Flavor(Base):
    __tablename__ = "flavors"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(MAX_TEXT), unique=True)
    vcpus: Mapped[int] = mapped_column(Integer)
    ram: Mapped[int] = mapped_column(Integer)
    disk: Mapped[int] = mapped_column(Integer)
    is_public: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)


class FlavorExtraSpec(Base):
    __tablename__ = "flavor_extra_specs"
    __table_args__ = (UniqueConstraint("flavor_id", "key"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    flavor_id: Mapped[str] = mapped_column(ForeignKey("flavors.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(MAX_TEXT))
    value: Mapped[str] = mapped_column(String(MAX_TEXT))


class FlavorAccess(Base):
    """A project that may see and use a private flavor."""

    __tablename__ = "flavor_access"
    __table_args__ = (UniqueConstraint("flavor_id", "project_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    flavor_id: Mapped[str] = mapped_column(ForeignKey("flavors.id", ondelete="CASCADE"))
    project_id: Mapped[str] = mapped_column(String(MAX_TEXT), index=True)
