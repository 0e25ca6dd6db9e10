"""The server configuration as each process holds it: read and compiled once, kept until the
revision row says another change was made (by this process or any other).

A process looks at the revision at most once per `refresh_interval` seconds, so a change made
through one API worker reaches every other worker and scheduler within that time, without a
restart; the process that made the change sees it at once (`invalidate`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from blazar_lite.db import Database
from blazar_lite.scriptlet import runtime
from blazar_lite.scriptlet.program import CONFIG_KEY as SCRIPTLET_KEY
from blazar_lite.scriptlet.program import InvalidScriptlet, Program
from blazar_lite.server_config import service

LOG = logging.getLogger(__name__)
DEFAULT_REFRESH_INTERVAL = 2.0


class ServerConfigCache:
    def __init__(self, database: Database, refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.database = database
        self.refresh_interval = refresh_interval
        self.clock = clock
        self._lock = threading.Lock()
        self._checked_at: float | None = None
        self._revision: int | None = None
        self._values: dict[str, str] = {}
        self._program: Program | None = None

    def invalidate(self) -> None:
        with self._lock:
            self._checked_at = None

    def _refresh(self) -> None:
        now = self.clock()
        with self._lock:
            if self._checked_at is not None and now - self._checked_at < self.refresh_interval:
                return
            with self.database.read() as session:
                current = service.revision(session)
                if current == self._revision:
                    self._checked_at = now
                    return
                values = service.get_config(session)
            self._program = self._compiled(values.get(SCRIPTLET_KEY))
            self._values, self._revision, self._checked_at = values, current, now

    def _compiled(self, source: str | None) -> Program | None:
        if not source:
            return None
        if self._program is not None and self._program.source == source:
            return self._program
        try:
            return runtime.compile_program(source)
        except InvalidScriptlet as exc:
            # Stored values were checked when set; one that no longer compiles (a newer version
            # of the service refusing it) must not stop placements: the allocator decides.
            LOG.error("the stored instance placement scriptlet does not compile, placing without it: %s",
                      exc.message)
            return None

    def values(self) -> dict[str, str]:
        self._refresh()
        return dict(self._values)

    def scriptlet(self) -> Program | None:
        """The compiled placement scriptlet, or None when none is set."""
        self._refresh()
        return self._program
