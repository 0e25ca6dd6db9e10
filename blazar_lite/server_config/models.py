"""Tables of the server configuration."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from blazar_lite.db.base import Base, UTCDateTime, utcnow


class ConfigEntry(Base):
    """One key of the server configuration and its value (keys not set have no row)."""

    __tablename__ = "server_config"
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class ConfigRevision(Base):
    """A single row whose number moves on every change of the configuration: each process reads
    only this to learn whether what it has cached is still current."""

    __tablename__ = "server_config_revision"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(Integer, default=0)
