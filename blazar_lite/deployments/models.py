"""Tables of deployments and their shapes."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from blazar_lite.db.base import Base, UTCDateTime, utcnow

MAX_NAME = 63


class Deployment(Base):
    """A named group of shapes in a project; its name is unique in the project."""

    __tablename__ = "deployments"
    __table_args__ = (UniqueConstraint("project_id", "name"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[str] = mapped_column(String(255), index=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME))
    description: Mapped[str] = mapped_column(Text, default="")
    # JSON objects of string values, as LXD's config maps.
    config: Mapped[str] = mapped_column(Text, default="{}")
    governor_webhook_url: Mapped[str | None] = mapped_column(Text)
    # The key of the HMAC that signs every event POSTed to the governor's webhook. The service
    # always sets it; the schema allows null only so that the column could be added to existing
    # rows in place.
    governor_webhook_secret: Mapped[str] = mapped_column(String(128), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)


class Shape(Base):
    """An instance template with scaling bounds; its instances point back at it."""

    __tablename__ = "deployment_shapes"
    __table_args__ = (UniqueConstraint("deployment_id", "name"),)
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    deployment_id: Mapped[str] = mapped_column(ForeignKey("deployments.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME))
    description: Mapped[str] = mapped_column(Text, default="")
    config: Mapped[str] = mapped_column(Text, default="{}")
    # An instance-create body (JSON) without a name: each new instance is made from it.
    instance_template: Mapped[str] = mapped_column(Text)
    scaling_minimum: Mapped[int] = mapped_column(Integer)
    scaling_maximum: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)


class DeploymentKey(Base):
    """A governor's key: a public certificate (PEM) identified by its SHA-256 fingerprint, with
    the role it may act in on its deployment."""

    __tablename__ = "deployment_keys"
    __table_args__ = (UniqueConstraint("deployment_id", "name", name="uq_deployment_keys_name"),
                      UniqueConstraint("deployment_id", "fingerprint", name="uq_deployment_keys_fingerprint"))
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    deployment_id: Mapped[str] = mapped_column(ForeignKey("deployments.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME))
    description: Mapped[str] = mapped_column(Text, default="")
    role: Mapped[str] = mapped_column(String(16))
    fingerprint: Mapped[str] = mapped_column(String(64))
    certificate: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, onupdate=utcnow)
