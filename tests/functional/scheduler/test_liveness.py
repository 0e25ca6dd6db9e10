"""A scheduler that dies holding claims has them taken over at the next pass of another, not when
they expire; a live scheduler's claims are left alone; and a scheduler shows life again after
its database connection dropped. Run on SQLite (process ids on this host) and on PostgreSQL
(advisory locks)."""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from sqlalchemy import text

from blazar_lite.db import Database
from blazar_lite.leases.models import Event
from blazar_lite.scheduler import claims
from blazar_lite.scheduler.liveness import Liveness, lock_key
from blazar_lite.scheduler.runner import RAN, run_due_events
from tests.functional.scheduler.test_scheduler import (
    LENGTH,
    SECOND,
    START,
    create_lease,
    lease,
    moment,
    outcomes,
    physical,
    register,
)

TIMEOUT = dt.timedelta(minutes=5)


class OtherScheduler:
    """Another scheduler process's sign of life, which the test can end as a kill would."""

    def __init__(self, database: Database) -> None:
        self.database = Database(str(database.engine.url.render_as_string(hide_password=False)))
        if self.database.engine.dialect.name == "postgresql":
            self.process = None
            self.worker_id = claims.worker_identity()
            self.liveness: Liveness | None = Liveness(self.database, self.worker_id)
            assert self.liveness.hold()
        else:
            # On SQLite liveness is the holder's process on this host: a real one, killed later.
            self.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            self.worker_id = f"{socket.gethostname()}:{self.process.pid}:test"
            self.liveness = None

    def die(self) -> None:
        if self.liveness is not None:
            self.liveness.release()
        if self.process is not None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        self.die()
        self.database.dispose()


@pytest.fixture
def other(database: Database) -> Iterator[OtherScheduler]:
    scheduler = OtherScheduler(database)
    yield scheduler
    scheduler.close()


@pytest.fixture
def liveness(database: Database) -> Iterator[Liveness]:
    mine = Liveness(database, claims.worker_identity())
    assert mine.hold()
    yield mine
    mine.release()


def test_the_claims_of_a_scheduler_that_died_are_taken_over_at_the_next_pass(
        client: FlaskClient, database: Database, other: OtherScheduler,
        liveness: Liveness) -> None:
    register(client, "compute-1")
    start = moment(START)
    created = create_lease(client, "l1", [physical()], start, start + LENGTH)
    now = start + SECOND
    [claim] = claims.claim_due_events(database, other.worker_id, now, TIMEOUT, limit=1)

    # While it lives, its claim is its own until it expires.
    assert run_due_events(database, now=now, worker_id=liveness.worker_id, liveness=liveness) == []
    assert lease(client, created["id"])["status"] == "PENDING"

    other.die()
    # Long before the claim's five minutes are up.
    results = run_due_events(database, now=now + SECOND, worker_id=liveness.worker_id, liveness=liveness)
    assert outcomes(results) == [("start_lease", RAN)]
    assert lease(client, created["id"])["status"] == "ACTIVE"
    with database.transaction() as session:
        event = session.get(Event, claim.event_id)
        assert (event.status, event.attempts, event.claimed_by) == ("DONE", 2, liveness.worker_id)
        # The dead one, were it only slow, would find its claim gone and run nothing.
        assert claims.holds(session, claim, other.worker_id) is None


def test_a_pass_without_liveness_still_waits_for_the_claim_to_expire(
        client: FlaskClient, database: Database, other: OtherScheduler) -> None:
    register(client, "compute-1")
    start = moment(START)
    create_lease(client, "l1", [physical()], start, start + LENGTH)
    now = start + SECOND
    claims.claim_due_events(database, other.worker_id, now, TIMEOUT, limit=1)
    other.die()
    assert run_due_events(database, now=now + SECOND, worker_id="w2") == []
    assert outcomes(run_due_events(database, now=now + TIMEOUT, worker_id="w2")) == [("start_lease", RAN)]


def test_on_sqlite_only_a_missing_process_on_this_host_is_dead(tmp_path) -> None:  # type: ignore[no-untyped-def]
    database = Database(f"sqlite:///{tmp_path}/liveness.db")
    mine = Liveness(database, claims.worker_identity())
    dead_pid = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True).stdout.strip()
    here = socket.gethostname()
    assert mine.dead([f"elsewhere:{dead_pid}:a", f"{here}:{os.getpid()}:b", f"{here}:{dead_pid}:c",
                      "not-a-worker-id"]) == {f"{here}:{dead_pid}:c"}
    database.dispose()


@pytest.mark.postgres
def test_a_scheduler_shows_life_again_after_its_connection_dropped(pg_scratch_url: str) -> None:
    first, second = Database(pg_scratch_url), Database(pg_scratch_url)
    try:
        mine = Liveness(first, "host:1:mine")
        watcher = Liveness(second, "host:2:watcher")
        assert mine.hold() and watcher.hold()
        assert watcher.dead(["host:1:mine", "host:3:never-started"]) == {"host:3:never-started"}
        # The server ends its connection, as when the database restarts.
        with second.engine.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(pid) FROM pg_locks "
                                    "WHERE locktype = 'advisory' AND objid = :key"),
                               {"key": lock_key("host:1:mine") % 2 ** 32})
            connection.commit()
        # The backend exits a moment after the signal; its lock goes with it.
        deadline = time.monotonic() + 10
        while watcher.dead(["host:1:mine"]) != {"host:1:mine"}:
            assert time.monotonic() < deadline, "the terminated connection's lock was never released"
            time.sleep(0.05)
        assert mine.hold()
        assert watcher.dead(["host:1:mine"]) == set()
        mine.release()
        assert watcher.dead(["host:1:mine"]) == {"host:1:mine"}
    finally:
        first.dispose()
        second.dispose()


def test_a_scheduler_takes_back_its_own_claims_left_by_a_pass_that_failed(
        client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    start = moment(START)
    created = create_lease(client, "l1", [physical()], start, start + LENGTH)
    now = start + SECOND
    # The pass claimed the start, then the database went away before it could record anything.
    [claim] = claims.claim_due_events(database, "here:1:me", now, TIMEOUT, limit=1)
    # Another scheduler leaves it alone (its holder lives) ...
    assert run_due_events(database, now=now + SECOND, worker_id="here:2:other") == []
    # ... and the holder's next pass runs it, without waiting for the claim to expire.
    assert outcomes(run_due_events(database, now=now + SECOND, worker_id="here:1:me")) == [("start_lease", RAN)]
    assert lease(client, created["id"])["status"] == "ACTIVE"
    with database.read() as session:
        assert session.get(Event, claim.event_id).attempts == 2
