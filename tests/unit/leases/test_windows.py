"""Capacity over time: the earliest-start sweep agrees with the choosers lease creation uses, free
periods of a host, and what a host holds period by period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blazar_lite.leases.availability import (
    Booking,
    Host,
    Shortage,
    Window,
    choose_hosts_for_physical,
    choose_slots_for_instances,
)
from blazar_lite.leases.windows import Demand, earliest_starts, free_over_time, free_periods, occupancy

T0 = datetime(2030, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
CAPACITY = {"vcpus": 8, "memory_mb": 16384, "disk_gb": 100}
SLOT = {"vcpus": 2, "memory_mb": 2048, "disk_gb": 20}


def h(hours: float) -> datetime:
    return T0 + hours * HOUR


def whole(start: float, end: float) -> Booking:
    return Booking(h(start), h(end), {}, exclusive=True)


def slots(start: float, end: float, count: int = 1) -> Booking:
    return Booking(h(start), h(end), {name: count * amount for name, amount in SLOT.items()})


def host(host_id: int, *bookings: Booking) -> Host:
    return Host(host_id, CAPACITY, bookings)


def fits_by_chooser(hosts: list[Host], demand: Demand, window: Window, cleaning: timedelta) -> bool:
    """What lease creation decides for this window."""
    if demand.slot is None:
        chosen = choose_hosts_for_physical(hosts, demand.count, demand.count, window, cleaning_time=cleaning)
    else:
        chosen = choose_slots_for_instances(hosts, demand.count, demand.slot, demand.affinity, window,
                                            cleaning_time=cleaning)
    return not isinstance(chosen, Shortage)


# The sweep against the choosers.

_bookings = st.lists(st.tuples(st.integers(0, 40), st.integers(1, 12), st.booleans(), st.integers(1, 4)),
                     max_size=6)


@st.composite
def worlds(draw):  # type: ignore[no-untyped-def]
    hosts = []
    for host_id in range(draw(st.integers(1, 4))):
        made = [whole(start, start + length) if exclusive else slots(start, start + length, count)
                for start, length, exclusive, count in draw(_bookings)]
        hosts.append(host(host_id, *made))
    kind = draw(st.sampled_from(["hosts", "anywhere", "one host", "distinct"]))
    count = draw(st.integers(1, 5))
    demand = Demand(count) if kind == "hosts" else Demand(
        count, SLOT, {"anywhere": None, "one host": True, "distinct": False}[kind])
    return hosts, demand, draw(st.integers(1, 10)), draw(st.sampled_from([0, 1, 2]))


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_the_sweep_finds_exactly_the_candidate_starts_the_choosers_accept(world) -> None:  # type: ignore[no-untyped-def]
    hosts, demand, hours, cleaning_hours = world
    cleaning = cleaning_hours * HOUR
    first, last = h(2), h(30)
    found = earliest_starts(hosts, demand, hours * HOUR, first, last, cleaning_time=cleaning)
    candidates = sorted({first} | {b.end + cleaning for x in hosts for b in x.bookings
                                   if first <= b.end + cleaning <= last})
    expected = [s for s in candidates if fits_by_chooser(hosts, demand, Window(s, s + hours * HOUR), cleaning)]
    assert found.found == expected


@settings(max_examples=200, deadline=None)
@given(worlds())
def test_no_start_between_candidates_fits_earlier_than_the_first_found(world) -> None:  # type: ignore[no-untyped-def]
    hosts, demand, hours, cleaning_hours = world
    cleaning = cleaning_hours * HOUR
    first, last = h(2), h(30)
    found = earliest_starts(hosts, demand, hours * HOUR, first, last, cleaning_time=cleaning, limit=1)
    earliest = found.found[0] if found.found else last + timedelta(minutes=1)
    moment = first
    while moment < earliest:
        assert not fits_by_chooser(hosts, demand, Window(moment, moment + hours * HOUR), cleaning), moment
        moment += timedelta(minutes=30)


def test_an_idle_cluster_fits_at_the_first_start() -> None:
    found = earliest_starts([host(1), host(2)], Demand(2), 24 * HOUR, h(0), h(100))
    assert found.found == [h(0)]


def test_whole_hosts_wait_for_enough_hosts_to_be_free_together() -> None:
    hosts = [host(1, whole(0, 10)), host(2, whole(0, 20)), host(3, whole(15, 30))]
    found = earliest_starts(hosts, Demand(2), 6 * HOUR, h(0), h(100), limit=2)
    # From 10, host 3 is booked within 6 hours, so only host 1 is free; from 20 hosts 1 and 2 are.
    assert found.found == [h(20), h(30)]


def test_cleaning_time_moves_the_start_after_each_end() -> None:
    hosts = [host(1, whole(0, 10))]
    found = earliest_starts(hosts, Demand(1), HOUR, h(0), h(100), cleaning_time=timedelta(minutes=30), limit=1)
    assert found.found == [h(10.5)]


def test_a_window_that_would_run_into_a_later_booking_is_not_found() -> None:
    hosts = [host(1, whole(0, 10), whole(12, 20))]
    found = earliest_starts(hosts, Demand(1), 4 * HOUR, h(0), h(100), limit=1)
    assert found.found == [h(20)]


def test_slots_anywhere_add_up_across_hosts() -> None:
    # Each host has 4 slots; 3 taken on host 1 until 10, so 5 slots fit from 0 and 8 from 10.
    hosts = [host(1, slots(0, 10, 3)), host(2)]
    assert earliest_starts(hosts, Demand(5, SLOT, None), HOUR, h(0), h(100), limit=1).found == [h(0)]
    assert earliest_starts(hosts, Demand(6, SLOT, None), HOUR, h(0), h(100), limit=1).found == [h(10)]


def test_slots_on_one_host_need_the_room_on_a_single_host() -> None:
    hosts = [host(1, slots(0, 10, 1)), host(2, slots(0, 5, 1))]
    assert earliest_starts(hosts, Demand(4, SLOT, True), HOUR, h(0), h(100), limit=1).found == [h(5)]


def test_slots_on_distinct_hosts_need_as_many_hosts_with_room() -> None:
    hosts = [host(1, slots(0, 10, 4)), host(2, whole(0, 5)), host(3)]
    assert earliest_starts(hosts, Demand(3, SLOT, False), HOUR, h(0), h(100), limit=1).found == [h(10)]


def test_when_nothing_fits_the_best_level_and_when_it_was_first_reached_are_reported() -> None:
    hosts = [host(1, whole(0, 10)), host(2, whole(0, 20)), host(3, whole(5, 50))]
    found = earliest_starts(hosts, Demand(3), 4 * HOUR, h(0), h(40))
    assert found.found == []
    assert (found.best, found.best_at) == (2, h(20))


def test_only_starts_up_to_the_last_start_are_tried() -> None:
    hosts = [host(1, whole(0, 10))]
    assert earliest_starts(hosts, Demand(1), HOUR, h(0), h(9)).found == []


def test_a_duration_must_be_positive() -> None:
    with pytest.raises(ValueError):
        earliest_starts([host(1)], Demand(1), timedelta(0), h(0), h(1))


# What a host has free at each instant.

def test_free_slots_over_time_step_with_the_bookings() -> None:
    steps = free_over_time(host(1, slots(2, 6, 1), slots(4, 8, 2)), h(0), SLOT)
    assert steps == [(h(0), 4), (h(2), 3), (h(4), 1), (h(6), 2), (h(8), 4)]


def test_a_whole_host_booking_leaves_no_slot() -> None:
    assert free_over_time(host(1, whole(1, 2)), h(0), SLOT) == [(h(0), 4), (h(1), 0), (h(2), 4)]


# Free periods.

def test_free_periods_are_the_gaps_between_bookings_inside_the_span() -> None:
    periods = free_periods([whole(2, 4), slots(6, 8)], Window(h(0), h(10)))
    assert periods == [Window(h(0), h(2)), Window(h(4), h(6)), Window(h(8), h(10))]


def test_free_periods_keep_the_cleaning_time_before_and_after_each_booking() -> None:
    periods = free_periods([whole(2, 4)], Window(h(0), h(10)), cleaning_time=HOUR)
    assert periods == [Window(h(0), h(1)), Window(h(5), h(10))]


def test_overlapping_bookings_leave_one_gap_after_the_last_of_them() -> None:
    periods = free_periods([whole(1, 5), slots(2, 3)], Window(h(0), h(10)))
    assert periods == [Window(h(0), h(1)), Window(h(5), h(10))]


def test_a_host_booked_across_the_whole_span_has_no_free_period() -> None:
    assert free_periods([whole(0, 10)], Window(h(1), h(9))) == []


# Occupancy.

def test_occupancy_covers_the_span_with_what_is_held_in_each_period() -> None:
    periods = occupancy(host(1, slots(2, 6), whole(8, 12)), Window(h(0), h(10)))
    assert [(p.start, p.end, dict(p.used), p.whole_host) for p in periods] == [
        (h(0), h(2), {}, False),
        (h(2), h(6), SLOT, False),
        (h(6), h(8), {}, False),
        (h(8), h(10), {}, True),
    ]


def test_occupancy_merges_periods_that_hold_the_same() -> None:
    periods = occupancy(host(1, slots(2, 4), slots(4, 6)), Window(h(0), h(8)))
    assert [(p.start, p.end) for p in periods] == [(h(0), h(2)), (h(2), h(6)), (h(6), h(8))]
