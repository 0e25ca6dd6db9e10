"""Never oversubscribed: random creates, updates and deletes of leases of every reservation type,
through the lease service, never leave a host over capacity at any instant, never let a host
serve a whole-host reservation beside anything else at the same time, and never leave a
reservation booked differently from what it asks for. A refused operation changes nothing."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import select

from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.exceptions import ServiceError
from blazar_lite.flavors import service as flavors
from blazar_lite.hosts import service as hosts
from blazar_lite.leases import service, update
from blazar_lite.leases.models import PHYSICAL_HOST, TERMINATED, Lease, Reservation, ReservationBooking

CONTEXT = RequestContext(user_id="u1", project_id="p1", roles=frozenset({"member"}))
# Small and uneven, so that requests collide often: (vcpus, memory_mb, local_gb).
CLUSTER = {"compute-1": (4, 8192, 40), "compute-2": (8, 16384, 80), "compute-3": (4, 4096, 40),
           "compute-4": (2, 4096, 20)}
FLAVOR_ID = "6f1c7e0a-4a5e-4c55-9d3b-2f0b8c1d2e3f"
# Every operation is decided at this instant, so dates never drift into the past mid-run.
NOW = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)

physical = st.integers(1, 2).flatmap(lambda low: st.fixed_dictionaries({
    "resource_type": st.just("physical:host"), "min": st.just(low), "max": st.integers(low, 3),
    "hypervisor_properties": st.sampled_from(["", '[">=", "$vcpus", "4"]']), "resource_properties": st.just("")}))
virtual = st.fixed_dictionaries({
    "resource_type": st.just("virtual:instance"), "amount": st.integers(1, 4), "vcpus": st.integers(1, 4),
    "memory_mb": st.sampled_from([1024, 2048, 4096]), "disk_gb": st.sampled_from([0, 10, 20]),
    "affinity": st.sampled_from(["True", "False", "None"]), "resource_properties": st.just("")})
flavored = st.fixed_dictionaries({
    "resource_type": st.just("flavor:instance"), "flavor_id": st.just(FLAVOR_ID), "amount": st.integers(1, 3),
    "affinity": st.sampled_from([True, False, None])})
reservations = st.lists(st.one_of(physical, virtual, flavored), min_size=1, max_size=2)
# Whole hours after NOW: a window [start, start + length).
starts = st.integers(1, 12)
lengths = st.integers(1, 8)


def date(hours: int) -> str:
    return (NOW + dt.timedelta(hours=hours)).strftime("%Y-%m-%d %H:%M")


def hours_of(moment: dt.datetime) -> int:
    return round((moment - NOW) / dt.timedelta(hours=1))


def check_cluster(database: Database) -> None:
    """Every host within capacity at every booking start (where use can only rise), no whole-host
    booking beside another, and every reservation booked as it asks."""
    with database.read() as session:
        capacity = {host.id: {"vcpus": host.vcpus, "memory_mb": host.memory_mb, "disk_gb": host.local_gb}
                    for host in hosts.list_hosts(session)}
        rows = session.execute(
            select(ReservationBooking.host_id, ReservationBooking.slots, Reservation, Lease.start_date, Lease.end_date)
            .join(Reservation, Reservation.id == ReservationBooking.reservation_id)
            .join(Lease, Lease.id == Reservation.lease_id).where(Lease.status != TERMINATED)).all()
    per_host: dict[int, list[tuple[dt.datetime, dt.datetime, dict[str, int], bool]]] = defaultdict(list)
    per_reservation: dict[str, tuple[Reservation, dict[int, int]]] = {}
    for host_id, slots, reservation, start, end in rows:
        exclusive = reservation.resource_type == PHYSICAL_HOST
        amounts = {} if exclusive else {"vcpus": slots * reservation.vcpus, "memory_mb": slots * reservation.memory_mb,
                                        "disk_gb": slots * reservation.disk_gb}
        per_host[host_id].append((start, end, amounts, exclusive))
        per_reservation.setdefault(reservation.id, (reservation, {}))[1][host_id] = slots
    for host_id, bookings in per_host.items():
        for instant, _, _, _ in bookings:
            current = [b for b in bookings if b[0] <= instant < b[1]]
            if any(exclusive for _, _, _, exclusive in current):
                assert len(current) == 1, f"host {host_id} is shared with a whole-host booking at {instant}: {current}"
            for name, total in capacity[host_id].items():
                used = sum(amounts.get(name, 0) for _, _, amounts, _ in current)
                assert used <= total, f"host {host_id} uses {used} of {total} {name} at {instant}"
    for reservation, booked in per_reservation.values():
        if reservation.resource_type == PHYSICAL_HOST:
            assert reservation.min <= len(booked) <= reservation.max and set(booked.values()) == {1}
            continue
        assert sum(booked.values()) == reservation.amount
        if reservation.affinity is True:
            assert len(booked) == 1
        elif reservation.affinity is False:
            assert set(booked.values()) == {1}


def check_booking_copies(database: Database) -> None:
    """Every booking carries its lease, the lease's window and what it holds (slots × its
    reservation's sizes, or the whole host), as the lease and reservation say now."""
    with database.read() as session:
        rows = session.execute(select(ReservationBooking, Reservation, Lease)
                               .join(Reservation, Reservation.id == ReservationBooking.reservation_id)
                               .join(Lease, Lease.id == Reservation.lease_id)).all()
    for booking, reservation, lease in rows:
        exclusive = reservation.resource_type == PHYSICAL_HOST
        slots = 0 if exclusive else booking.slots
        assert (booking.lease_id, booking.start_date, booking.end_date) == (lease.id, lease.start_date, lease.end_date)
        assert (booking.vcpus, booking.memory_mb, booking.disk_gb, booking.exclusive) == (
            slots * (reservation.vcpus or 0), slots * (reservation.memory_mb or 0), slots * (reservation.disk_gb or 0),
            exclusive), f"booking {booking.id} of reservation {reservation.id}"


def build_cluster(database: Database) -> None:
    with database.transaction() as session:
        for name, (vcpus, memory_mb, local_gb) in CLUSTER.items():
            hosts.create_host(session, hosts.HostSpec(name=name, vcpus=vcpus, memory_mb=memory_mb, local_gb=local_gb))
        flavors.create_flavor(session, name="small", vcpus=2, ram=2048, disk=10, flavor_id=FLAVOR_ID)


def machine_for(database: Database) -> type[RuleBasedStateMachine]:
    class LeaseTraffic(RuleBasedStateMachine):
        leases = Bundle("leases")

        def __init__(self) -> None:
            super().__init__()
            self.count = 0
            # Each run starts from an empty calendar on the same cluster.
            with database.transaction() as session:
                for view in service.list_leases(session):
                    service.delete_lease(session, view.id)

        def show(self, lease_id: str) -> service.LeaseView:
            with database.read() as session:
                return service.get_lease(session, lease_id)

        @rule(target=leases, wanted=reservations, start=starts, length=lengths)
        def create(self, wanted: list[dict[str, Any]], start: int, length: int):  # type: ignore[no-untyped-def]
            self.count += 1
            body = {"name": f"lease-{self.count}", "start_date": date(start), "end_date": date(start + length),
                    "before_end_date": None, "reservations": wanted, "events": []}
            try:
                with database.transaction() as session:
                    return service.create_lease(session, CONTEXT, body, now=NOW).id
            except ServiceError as error:
                assert error.status == 409, error.message
                return multiple()

        @rule(lease_id=leases, data=st.data())
        def change(self, lease_id: str, data: st.DataObject) -> None:
            before = self.show(lease_id)
            start, end = hours_of(before.start_date), hours_of(before.end_date)
            body: dict[str, Any] = {}
            if data.draw(st.booleans(), label="move start"):
                body["start_date"] = date(data.draw(st.integers(1, 12), label="start"))
            if data.draw(st.booleans(), label="move end"):
                body["end_date"] = date(max(start, 1) + data.draw(st.integers(-2, 8), label="end"))
            changes = []
            for reservation in before.reservations:
                if not data.draw(st.booleans(), label="resize"):
                    continue
                if reservation.resource_type == PHYSICAL_HOST:
                    low = data.draw(st.integers(1, 3), label="min")
                    high = data.draw(st.integers(low, 3), label="max")
                    changes.append({"id": reservation.id, "min": low, "max": high})
                else:
                    amount = data.draw(st.integers(1, 4), label="amount")
                    change: dict[str, Any] = {"id": reservation.id, "amount": amount}
                    if reservation.resource_type == "virtual:instance" and data.draw(st.booleans(), label="vcpus?"):
                        change["vcpus"] = data.draw(st.integers(1, 4), label="vcpus")
                    changes.append(change)
            if changes:
                body["reservations"] = changes
            if not body:
                body["end_date"] = date(end + 1)
            try:
                with database.transaction() as session:
                    update.update_lease(session, lease_id, body, now=NOW)
            except ServiceError as error:
                assert error.status in (400, 409), error.message
                assert self.show(lease_id) == before, "a refused update changed the lease"

        @rule(lease_id=consumes(leases))
        def delete(self, lease_id: str) -> None:
            with database.transaction() as session:
                service.delete_lease(session, lease_id)

        @invariant()
        def never_oversubscribed(self) -> None:
            check_cluster(database)

        @invariant()
        def bookings_carry_what_availability_reads(self) -> None:
            check_booking_copies(database)

    return LeaseTraffic


def test_random_lease_traffic_never_oversubscribes_a_host(database: Database) -> None:
    build_cluster(database)
    run_state_machine_as_test(machine_for(database), settings=settings(
        max_examples=40, stateful_step_count=20, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow]))
