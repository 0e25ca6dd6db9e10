"""Whether the scheduler that holds a claim is still running.

A claim expires after `[scheduler] claim_timeout` (5 minutes by default), which must outlast the
slowest event. A scheduler killed mid-pass would otherwise leave the leases it claimed waiting
that long. Instead each scheduler shows that it lives, and a claim whose holder is known dead is
taken over at the next pass of any scheduler:

- PostgreSQL: each scheduler holds a session advisory lock keyed on its worker id, on a
  connection of its own. The server drops the lock the moment that process's connection closes,
  which a killed process's does. Another scheduler that can take the lock knows the holder died.
- SQLite: the database is a local file, so every scheduler runs on this machine; a holder whose
  process id is gone from this host is dead.

Liveness only decides how soon a claim is taken over. Safety never rests on it: every step of an
event checks, under a row lock, that its worker still holds the claim (claims.holds), so a
scheduler wrongly taken for dead loses its claim and runs nothing twice.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import zlib
from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.engine import Connection

from blazar_lite.db import Database

LOG = logging.getLogger(__name__)

# The first half of the two-part advisory lock key: which locks are scheduler liveness locks
# (one-part keys, as the per-project usage lock uses, are a separate space).
LOCK_SPACE = 0x424C5A52


def lock_key(worker_id: str) -> int:
    """The second half of the key: the worker id's CRC-32, as PostgreSQL's signed int4."""
    value = zlib.crc32(worker_id.encode())
    return value - 2 ** 32 if value >= 2 ** 31 else value


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Liveness:
    """This scheduler's sign of life, and the check of other schedulers' signs."""

    def __init__(self, database: Database, worker_id: str) -> None:
        self.database = database
        self.worker_id = worker_id
        self.postgresql = database.engine.dialect.name == "postgresql"
        self._connection: Connection | None = None
        self._lock = threading.Lock()

    def hold(self) -> bool:
        """Make sure this scheduler's sign of life is up (again, after the database came back).
        True when it is."""
        if not self.postgresql:
            return True
        with self._lock:
            if self._connection is not None:
                try:
                    self._connection.execute(text("SELECT 1"))
                    self._connection.commit()
                    return True
                except Exception:  # noqa: BLE001 - a dropped connection: take the lock again below
                    self._drop()
            try:
                self._connection = self.database.engine.connect()
                held = self._try_lock(self._connection, lock_key(self.worker_id))
            except Exception as exc:  # noqa: BLE001 - the database is away; the next pass tries again
                LOG.debug("could not show this scheduler's liveness: %s", exc)
                self._drop()
                return False
            if not held:
                LOG.warning("scheduler %s: another process holds its liveness lock", self.worker_id)
            return held

    def dead(self, worker_ids: Iterable[str]) -> set[str]:
        """Those of `worker_ids` (other schedulers holding claims) known to have died."""
        others = {worker for worker in worker_ids if worker and worker != self.worker_id}
        if not others:
            return set()
        if not self.postgresql:
            return {worker for worker in others if self._dead_here(worker)}
        with self._lock:
            if self._connection is None:
                return set()
            found = set()
            try:
                for worker in sorted(others):
                    key = lock_key(worker)
                    if self._try_lock(self._connection, key):
                        # Free: nobody holds it, so its scheduler is gone. Let go at once.
                        self._connection.execute(text("SELECT pg_advisory_unlock(:space, :key)"),
                                                 {"space": LOCK_SPACE, "key": key})
                        self._connection.commit()
                        found.add(worker)
            except Exception as exc:  # noqa: BLE001 - unknown means alive: the claims then expire as usual
                LOG.debug("could not check other schedulers' liveness: %s", exc)
                self._drop()
                return set()
            return found

    def release(self) -> None:
        """Stop showing life (the process is stopping)."""
        with self._lock:
            if self._connection is not None:
                # Let go before closing: the server notices a closed connection only a moment later.
                with contextlib.suppress(Exception):
                    self._connection.execute(text("SELECT pg_advisory_unlock(:space, :key)"),
                                             {"space": LOCK_SPACE, "key": lock_key(self.worker_id)})
                    self._connection.commit()
            self._drop()

    @staticmethod
    def _try_lock(connection: Connection, key: int) -> bool:
        held = connection.execute(text("SELECT pg_try_advisory_lock(:space, :key)"),
                                  {"space": LOCK_SPACE, "key": key}).scalar()
        connection.commit()
        return bool(held)

    @staticmethod
    def _dead_here(worker_id: str) -> bool:
        host, _, rest = worker_id.partition(":")
        pid = rest.partition(":")[0]
        return host == socket.gethostname() and pid.isdigit() and not _pid_running(int(pid))

    def _drop(self) -> None:
        if self._connection is not None:
            # Invalidated, not returned to the pool: a pooled connection would keep the lock.
            with contextlib.suppress(Exception):
                self._connection.invalidate()
            with contextlib.suppress(Exception):
                self._connection.close()
            self._connection = None
