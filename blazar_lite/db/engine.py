"""Engines and transactions.

Every user action runs in one transaction (`Database.transaction()`): it commits when the block
ends and rolls back on any exception, so a failed request changes nothing. On SQLite, write
transactions start with BEGIN IMMEDIATE: the file lock is taken up front, so two writers queue
instead of failing halfway when one upgrades a read lock.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

_WRITE_OPTION = "blazar_lite_write"


SQLITE_CACHE_KIB = 64 * 1024
SQLITE_MMAP_BYTES = 256 * 1024 * 1024


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        if engine.url.database not in (None, "", ":memory:"):
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            # SQLite's default page cache (2 MiB) is smaller than the leases and bookings an
            # availability check reads on a busy cluster; with it, that query rereads pages from
            # the OS every time (12 ms instead of 7 at 10,000 reservations). Pages are taken
            # only as they are used, up to these limits.
            cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
            cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:  # type: ignore[no-untyped-def]
        write = connection.get_execution_options().get(_WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(parsed.database)), exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        _configure_sqlite(engine)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


class Database:
    """An engine and the two kinds of transaction the services use."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._reader = sessionmaker(self.engine, expire_on_commit=False)
        self._writer = sessionmaker(self.engine.execution_options(**{_WRITE_OPTION: True}),
                                    expire_on_commit=False)
        # A SQLite read transaction already sees one snapshot throughout (WAL); PostgreSQL's
        # default, READ COMMITTED, gives each statement a newer one.
        self._snapshot = self._reader if self.engine.dialect.name == "sqlite" else sessionmaker(
            self.engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True),
            expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Session]:
        """A read-write transaction: committed at the end of the block, rolled back on error."""
        with self._writer() as session, session.begin():
            yield session

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        """A read-only transaction (never takes SQLite's write lock)."""
        with self._reader() as session:
            yield session

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Session]:
        """A read-only transaction whose every statement sees the database as of one instant: for
        reads that compare several tables while others write to them."""
        with self._snapshot() as session:
            yield session

    def dispose(self) -> None:
        self.engine.dispose()
