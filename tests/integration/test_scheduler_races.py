"""Two schedulers racing on one PostgreSQL database run every due event exactly once.

Each scheduler is a thread with a Database (engine and pool) of its own, as a separate process
would have; a barrier releases them together. Every start is counted as it runs.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from sqlalchemy import event as sa_event
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.db.migrate import upgrade
from blazar_lite.hosts import service as hosts
from blazar_lite.leases import lifecycle
from blazar_lite.leases import service as leases
from blazar_lite.leases.models import DONE, Event, Lease
from blazar_lite.placement.backend import EmbeddedPlacement
from blazar_lite.scheduler.runner import RAN, EventResult, run_due_events

pytestmark = pytest.mark.postgres

LEASES = 500
HOSTS = 10
SCHEDULERS = 2


@pytest.fixture
def pg_url(pg_scratch_url: str) -> Iterator[str]:
    database = Database(pg_scratch_url)
    upgrade(database.engine)
    database.dispose()
    yield pg_scratch_url


def _world(url: str, start: dt.datetime, now: dt.datetime) -> list[str]:
    """HOSTS hosts and LEASES one-slot instance leases that all start at `start`; their ids."""
    database = Database(url)
    try:
        with database.transaction() as session:
            host_ids = [hosts.create_host(session, hosts.HostSpec(name=f"compute-{i}", vcpus=1000, memory_mb=10 ** 6,
                                                                  local_gb=10 ** 5)).id for i in range(HOSTS)]
        assert len(host_ids) == HOSTS
        context = RequestContext("u1", "p1", frozenset({"member"}))
        body = {"start_date": start.strftime("%Y-%m-%d %H:%M"),
                "end_date": (start + dt.timedelta(hours=2)).strftime("%Y-%m-%d %H:%M"),
                "reservations": [{"resource_type": "virtual:instance", "amount": 1, "vcpus": 1, "memory_mb": 512,
                                  "disk_gb": 1, "affinity": None}]}
        ids = []
        with database.transaction() as session:
            for i in range(LEASES):
                ids.append(leases.create_lease(session, context, {**body, "name": f"lease-{i}"}, now=now).id)
        return ids
    finally:
        database.dispose()


def test_two_schedulers_run_each_of_500_due_starts_exactly_once(pg_url: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    now = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    start = now + dt.timedelta(hours=1)
    lease_ids = _world(pg_url, start, now)

    runs: Counter[str] = Counter()
    lock = threading.Lock()
    real_start = lifecycle.start_lease

    def counted_start(session, lease_id, placement=None):  # type: ignore[no-untyped-def]
        result = real_start(session, lease_id, placement)
        # Counted only when its transaction commits: a rolled-back try (generation conflict) ran nothing.
        session.info.setdefault("started", []).append(lease_id)
        return result

    monkeypatch.setattr(lifecycle, "start_lease", counted_start)

    def count_committed(session: Session) -> None:
        with lock:
            runs.update(session.info.pop("started", []))

    sa_event.listen(Session, "after_commit", count_committed)
    barrier = threading.Barrier(SCHEDULERS)
    results: list[list[EventResult]] = [[] for _ in range(SCHEDULERS)]
    errors: list[BaseException] = []

    def scheduler(index: int) -> None:
        database = Database(pg_url)
        try:
            barrier.wait()
            results[index] = run_due_events(database, now=start + dt.timedelta(seconds=1),
                                            worker_id=f"scheduler-{index}", batch_size=10)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            database.dispose()

    threads = [threading.Thread(target=scheduler, args=(i,)) for i in range(SCHEDULERS)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join(timeout=600)
    finally:
        sa_event.remove(Session, "after_commit", count_committed)
    assert not errors, errors

    everything = [r for worker in results for r in worker]
    assert len(everything) == LEASES
    assert {r.outcome for r in everything} == {RAN}
    assert all(results), "each scheduler ran some of the events"
    assert runs == Counter(lease_ids)

    database = Database(pg_url)
    try:
        with database.read() as session:
            starts = list(session.scalars(select(Event).where(Event.event_type == "start_lease")))
            assert len(starts) == LEASES
            assert all(e.status == DONE and e.attempts == 1 for e in starts)
            assert session.scalar(select(func.count()).select_from(Lease).where(Lease.status == "ACTIVE")) == LEASES
            placement = EmbeddedPlacement(session)
            reservation_classes: Counter[str] = Counter()
            for host in hosts.list_hosts(session):
                for rc, fields in placement.inventories(host.reservation_provider_uuid).items():
                    reservation_classes[rc] += fields["total"]
            assert len(reservation_classes) == LEASES
            assert set(reservation_classes.values()) == {1}
    finally:
        database.dispose()
