"""Lease creates racing on PostgreSQL: two API workers never book the same capacity."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.exceptions import NotEnoughResources
from blazar_lite.hosts import service as hosts
from blazar_lite.hosts.models import Host
from blazar_lite.leases import lifecycle, search, service, update
from blazar_lite.leases.models import ReservationBooking
from tests.conftest import OK, RACE_WORKERS, race

pytestmark = pytest.mark.postgres

WORKERS = RACE_WORKERS



def test_one_free_host_is_booked_by_exactly_one_of_many_concurrent_leases(pg_database: Database) -> None:
    with pg_database.transaction() as session:
        hosts.create_host(session, hosts.HostSpec(name="compute-1", vcpus=8, memory_mb=8192, local_gb=10))
    start = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M")
    end = (dt.datetime.now(dt.UTC) + dt.timedelta(days=2)).strftime("%Y-%m-%d %H:%M")
    context = RequestContext(user_id="u1", project_id="p1", roles=frozenset({"member"}))

    def write(index: int) -> None:
        body = {"name": f"lease-{index}", "start_date": start, "end_date": end, "before_end_date": None,
                "events": [], "reservations": [{"resource_type": "physical:host", "min": 1, "max": 1,
                                                "hypervisor_properties": "", "resource_properties": ""}]}
        with pg_database.transaction() as session:
            service.create_lease(session, context, body)

    outcomes = race(write)
    assert outcomes.count(OK) == 1, outcomes
    assert all(isinstance(o, NotEnoughResources) for o in outcomes if o != OK), outcomes
    with pg_database.read() as session:
        assert len(service.list_leases(session, "p1")) == 1
        assert session.scalar(select(func.count()).select_from(ReservationBooking)) == 1


def test_shrinking_an_active_lease_locks_the_row_of_a_host_it_gives_back_that_is_down(
        pg_database: Database) -> None:
    with pg_database.transaction() as session:
        down, _up = (hosts.create_host(session, hosts.HostSpec(name=name, vcpus=2, memory_mb=8192, local_gb=10)).id
                    for name in ("compute-1", "compute-2"))
    now = dt.datetime.now(dt.UTC)
    body = {"name": "lease-1", "start_date": "now", "end_date": (now + dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M"),
            "before_end_date": None, "events": [], "reservations": [
                {"resource_type": "virtual:instance", "amount": 2, "vcpus": 2, "memory_mb": 1024, "disk_gb": 1,
                 "affinity": False}]}
    context = RequestContext(user_id="u1", project_id="p1", roles=frozenset({"member"}))
    with pg_database.transaction() as session:
        lease = service.create_lease(session, context, body)
    with pg_database.transaction() as session:
        assert lifecycle.mark_starting(session, lease.id)
    with pg_database.transaction() as session:
        assert lifecycle.start_lease(session, lease.id)
        hosts.update_host(session, down, status="down")

    reservation_id = lease.reservations[0].id
    with pg_database.transaction() as session:
        update.update_lease(session, lease.id, {"reservations": [{"id": reservation_id, "amount": 1}]})
        # The update read and rewrote the down host's reservation provider inventory: another
        # writer of that provider must wait for this transaction.
        with pg_database.engine.connect() as other, pytest.raises(OperationalError, match="could not obtain lock"):
            other.execute(select(Host.id).where(Host.id == down).with_for_update(nowait=True))
    with pg_database.read() as session:
        assert service.get_lease(session, lease.id).reservations[0].fields["amount"] == 1


def test_concurrent_leases_at_the_earliest_start_each_take_their_own_window(pg_database: Database) -> None:
    with pg_database.transaction() as session:
        hosts.create_host(session, hosts.HostSpec(name="compute-1", vcpus=8, memory_mb=8192, local_gb=10))
    context = RequestContext(user_id="u1", project_id="p1", roles=frozenset({"member"}))
    length = dt.timedelta(hours=2)

    def write(index: int) -> None:
        body = {"name": f"lease-{index}", "start_date": "earliest", "duration": "2h", "before_end_date": None,
                "events": [], "reservations": [{"resource_type": "physical:host", "min": 1, "max": 1,
                                                "hypervisor_properties": "", "resource_properties": ""}]}
        with pg_database.transaction() as session:
            search.create_lease(session, context, body)

    outcomes = race(write)
    assert outcomes.count(OK) == WORKERS, outcomes
    with pg_database.read() as session:
        leases = sorted(service.list_leases(session, "p1"), key=lambda lease: lease.start_date)
    # One host: the leases follow each other back to back from the first one's start.
    first = leases[0].start_date
    assert [(lease.start_date, lease.end_date) for lease in leases] == [
        (first + index * length, first + (index + 1) * length) for index in range(WORKERS)]
