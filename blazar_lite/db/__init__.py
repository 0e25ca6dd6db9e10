"""Database access: the declarative base, engines and transactions."""

from blazar_lite.db.base import Base, UTCDateTime, utcnow
from blazar_lite.db.engine import Database

__all__ = ["Base", "Database", "UTCDateTime", "utcnow"]
