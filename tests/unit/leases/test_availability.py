"""Availability over time: peak use, fitting, exclusivity, slots, and choosing hosts."""

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
    describe_slot,
    fits,
    max_slots,
    overlapping,
    peak_usage,
)
from blazar_lite.leases.properties import parse_filter

T0 = datetime(2030, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
CAPACITY = {"VCPU": 8, "MEMORY_MB": 16384, "DISK_GB": 100}
SLOT = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


def h(hours: float) -> datetime:
    return T0 + hours * HOUR


def window(start: float, end: float) -> Window:
    return Window(h(start), h(end))


def booking(start: float, end: float, exclusive: bool = False, **amounts: float) -> Booking:
    return Booking(h(start), h(end), amounts, exclusive=exclusive)


def host(host_id, *bookings: Booking, capacity=None, **attributes) -> Host:
    return Host(host_id, CAPACITY if capacity is None else capacity, bookings, attributes)


# Windows and bookings


def test_a_window_must_end_after_it_starts():
    with pytest.raises(ValueError):
        window(2, 2)


def test_a_booking_must_end_after_it_starts():
    with pytest.raises(ValueError):
        booking(3, 2)


def test_touching_windows_do_not_overlap():
    assert overlapping([booking(0, 2, VCPU=1)], window(2, 4)) == []
    assert overlapping([booking(4, 6, VCPU=1)], window(2, 4)) == []


def test_windows_sharing_an_instant_overlap():
    inside = booking(1, 3, VCPU=1)
    assert overlapping([inside], window(2, 4)) == [inside]


def test_cleaning_time_makes_touching_windows_overlap():
    before, after = booking(0, 2, VCPU=1), booking(4, 6, VCPU=1)
    assert overlapping([before, after], window(2, 4), cleaning_time=HOUR) == [before, after]


def test_cleaning_time_shorter_than_the_gap_keeps_windows_apart():
    assert overlapping([booking(0, 2, VCPU=1)], window(3, 4), cleaning_time=HOUR / 2) == []


# peak_usage


def test_peak_of_no_bookings_is_empty():
    assert peak_usage([], window(0, 10)) == {}


def test_peak_is_the_highest_concurrent_use_not_the_sum():
    # Three bookings touch the window but never run together.
    bookings = [booking(0, 2, VCPU=4), booking(3, 5, VCPU=6), booking(6, 8, VCPU=4)]
    assert peak_usage(bookings, window(0, 8)) == {"VCPU": 6}


def test_peak_adds_bookings_that_run_together():
    bookings = [booking(0, 4, VCPU=2), booking(2, 6, VCPU=3), booking(3, 5, VCPU=1)]
    assert peak_usage(bookings, window(0, 6)) == {"VCPU": 6}


def test_a_booking_ending_when_another_starts_is_not_counted_with_it():
    assert peak_usage([booking(0, 2, VCPU=5), booking(2, 4, VCPU=5)], window(0, 4)) == {"VCPU": 5}


def test_peak_only_looks_inside_the_window():
    bookings = [booking(0, 2, VCPU=2), booking(1, 3, VCPU=2), booking(2.5, 5, VCPU=3)]
    assert peak_usage(bookings, window(3, 5)) == {"VCPU": 3}
    assert peak_usage(bookings, window(1, 2)) == {"VCPU": 4}


def test_peak_counts_a_booking_running_since_before_the_window():
    assert peak_usage([booking(-10, 10, VCPU=3), booking(1, 2, VCPU=1)], window(0, 5)) == {"VCPU": 4}


def test_peak_is_per_class_even_when_the_peaks_differ_in_time():
    bookings = [booking(0, 2, VCPU=6, MEMORY_MB=1024), booking(2, 4, VCPU=1, MEMORY_MB=8192)]
    assert peak_usage(bookings, window(0, 4)) == {"VCPU": 6, "MEMORY_MB": 8192}


def test_cleaning_time_extends_bookings_into_the_window():
    bookings = [booking(0, 2, VCPU=4), booking(2, 4, VCPU=4)]
    assert peak_usage(bookings, window(2, 4), cleaning_time=HOUR) == {"VCPU": 8}


def test_cleaning_time_extends_the_window_into_later_bookings():
    assert peak_usage([booking(4, 6, VCPU=4)], window(2, 4), cleaning_time=HOUR) == {"VCPU": 4}


# fits


def test_a_request_within_capacity_fits_on_an_idle_host():
    assert fits(host(1), {"VCPU": 8, "MEMORY_MB": 16384, "DISK_GB": 100}, window(0, 1))


def test_a_request_over_capacity_does_not_fit_on_an_idle_host():
    assert not fits(host(1), {"VCPU": 9}, window(0, 1))


def test_a_request_fits_beside_bookings_whose_peak_leaves_room():
    busy = host(1, booking(0, 2, VCPU=6), booking(3, 5, VCPU=6))
    assert fits(busy, {"VCPU": 2}, window(0, 5))
    assert not fits(busy, {"VCPU": 3}, window(0, 5))


def test_back_to_back_requests_share_a_host():
    assert fits(host(1, booking(0, 2, VCPU=8)), {"VCPU": 8}, window(2, 4))


def test_cleaning_time_keeps_back_to_back_requests_apart():
    assert not fits(host(1, booking(0, 2, VCPU=8)), {"VCPU": 8}, window(2, 4), cleaning_time=HOUR)
    assert fits(host(1, booking(0, 2, VCPU=8)), {"VCPU": 8}, window(3, 4), cleaning_time=HOUR)


def test_a_class_the_host_lacks_has_no_capacity():
    assert not fits(host(1), {"CUSTOM_GPU": 1}, window(0, 1))


def test_a_zero_amount_of_a_class_the_host_lacks_fits():
    assert fits(host(1), {"VCPU": 1, "CUSTOM_GPU": 0}, window(0, 1))


def test_fractional_capacity_is_not_rounded_up():
    assert fits(host(1, capacity={"VCPU": 4.5}), {"VCPU": 4}, window(0, 1))
    assert not fits(host(1, capacity={"VCPU": 4.5}), {"VCPU": 5}, window(0, 1))


def test_a_negative_amount_is_a_programming_error():
    with pytest.raises(ValueError):
        fits(host(1), {"VCPU": -1}, window(0, 1))


# Exclusivity


def test_nothing_fits_beside_a_whole_host_booking():
    assert not fits(host(1, booking(0, 2, exclusive=True)), {"VCPU": 1}, window(1, 3))


def test_a_whole_host_request_does_not_fit_beside_any_booking():
    assert not fits(host(1, booking(0, 2, VCPU=1)), {}, window(1, 3), exclusive=True)


def test_a_whole_host_request_fits_on_a_host_idle_during_its_window():
    assert fits(host(1, booking(0, 2, VCPU=8), booking(5, 6, exclusive=True)), {}, window(2, 5), exclusive=True)


def test_a_request_fits_after_a_whole_host_booking_ends():
    assert fits(host(1, booking(0, 2, exclusive=True)), {"VCPU": 8}, window(2, 3))


def test_cleaning_time_applies_to_whole_host_bookings_too():
    assert not fits(host(1, booking(0, 2, exclusive=True)), {"VCPU": 1}, window(2, 3), cleaning_time=HOUR)


# max_slots


def test_max_slots_on_an_idle_host_is_set_by_the_scarcest_class():
    assert max_slots(host(1), SLOT, window(0, 1)) == 4  # 8 / 2 vCPU
    assert max_slots(host(1), {"VCPU": 1, "MEMORY_MB": 4096}, window(0, 1)) == 4  # 16384 / 4096 MB


def test_max_slots_counts_the_peak_over_the_window():
    busy = host(1, booking(0, 2, VCPU=4), booking(1, 3, VCPU=2), booking(4, 6, VCPU=2))
    assert max_slots(busy, {"VCPU": 2}, window(0, 6)) == 1
    assert max_slots(busy, {"VCPU": 2}, window(3, 6)) == 3


def test_max_slots_under_a_whole_host_booking_is_zero():
    assert max_slots(host(1, booking(0, 2, exclusive=True)), SLOT, window(1, 3)) == 0


def test_max_slots_on_an_overbooked_host_is_zero():
    assert max_slots(host(1, booking(0, 2, VCPU=10)), SLOT, window(0, 1)) == 0


def test_max_slots_ignores_classes_the_slot_does_not_ask_for():
    assert max_slots(host(1, booking(0, 2, DISK_GB=500)), {"VCPU": 2, "DISK_GB": 0}, window(0, 1)) == 4


def test_max_slots_of_an_empty_slot_is_a_programming_error():
    with pytest.raises(ValueError):
        max_slots(host(1), {"VCPU": 0}, window(0, 1))


def test_max_slots_is_exact_with_fractional_sizes():
    assert max_slots(host(1, capacity={"X": 0.3}), {"X": 0.1}, window(0, 1)) == 2  # 3 x 0.1 > 0.3 in floats
    assert fits(host(1, capacity={"X": 0.3}), {"X": 2 * 0.1}, window(0, 1))


# choose_hosts_for_physical


def test_physical_takes_up_to_max_free_hosts_by_id():
    hosts = [host(3), host(1), host(2)]
    assert choose_hosts_for_physical(hosts, 1, 2, window(0, 1)) == [1, 2]


def test_physical_takes_what_is_free_between_min_and_max():
    hosts = [host(1), host(2, booking(0, 1, VCPU=1)), host(3)]
    assert choose_hosts_for_physical(hosts, 1, 3, window(0, 1)) == [1, 3]


def test_physical_skips_hosts_with_any_overlapping_booking():
    hosts = [host(1, booking(0.5, 0.6, VCPU=1)), host(2, booking(1, 2, exclusive=True)), host(3)]
    assert choose_hosts_for_physical(hosts, 1, 3, window(0, 1)) == [2, 3]


def test_physical_honours_cleaning_time():
    hosts = [host(1, booking(-1, 0, exclusive=True)), host(2)]
    assert choose_hosts_for_physical(hosts, 1, 2, window(0, 1), cleaning_time=HOUR) == [2]


def test_physical_only_takes_matching_hosts():
    predicate = parse_filter('[">=", "$memory_mb", "32768"]', "resource_properties")
    hosts = [host(1, memory_mb=16384), host(2, memory_mb=65536), host(3)]
    assert choose_hosts_for_physical(hosts, 1, 3, window(0, 1), predicate) == [2]


def test_physical_takes_held_hosts_first():
    hosts = [host(1), host(2), host(3)]
    assert choose_hosts_for_physical(hosts, 2, 2, window(0, 1), held={3}) == [3, 1]


def test_physical_shortage_says_what_was_asked_and_what_is_free():
    predicate = parse_filter('[">=", "$vcpus", "2"]', "resource_properties")
    hosts = [host(1, vcpus="8"), host(2, booking(0, 1, exclusive=True), vcpus="8"), host(3, vcpus="1")]
    result = choose_hosts_for_physical(hosts, 3, 3, window(0, 24), predicate)
    assert result == Shortage('3 hosts matching resource_properties [">=", "$vcpus", "2"] requested, '
                              "1 free between 2030-01-01 00:00 and 2030-01-02 00:00", 3, 1)


def test_physical_shortage_without_a_filter():
    assert str(choose_hosts_for_physical([], 1, 1, window(0, 1))) == \
        "1 host requested, 0 free between 2030-01-01 00:00 and 2030-01-01 01:00"


def test_physical_refuses_a_min_above_max():
    with pytest.raises(ValueError):
        choose_hosts_for_physical([host(1)], 2, 1, window(0, 1))


# choose_slots_for_instances


def test_describe_slot_in_words():
    assert describe_slot(SLOT) == "2 vCPU, 2048 MB, 20 GB"
    assert describe_slot({"disk_gb": 0, "memory_mb": 512, "vcpus": 1, "CUSTOM_X": 1.5}) == \
        "1 vCPU, 512 MB, 1.5 CUSTOM_X"


def test_affinity_true_puts_every_slot_on_one_host():
    hosts = [host(1, booking(0, 1, VCPU=4)), host(2)]
    assert choose_slots_for_instances(hosts, 4, SLOT, True, window(0, 1)) == {2: 4}


def test_affinity_true_prefers_a_busy_host_that_can_hold_them_all():
    hosts = [host(1), host(2, booking(0, 1, VCPU=2))]
    assert choose_slots_for_instances(hosts, 3, SLOT, True, window(0, 1)) == {2: 3}


def test_affinity_true_shortage_names_the_best_host():
    hosts = [host(1, booking(0, 1, VCPU=4)), host(2, booking(0, 1, VCPU=2))]
    assert str(choose_slots_for_instances(hosts, 4, SLOT, True, window(0, 1))) == (
        "4 slots of 2 vCPU, 2048 MB, 20 GB on one host requested, at most 3 free on any host "
        "between 2030-01-01 00:00 and 2030-01-01 01:00")


def test_affinity_false_puts_each_slot_on_a_different_host():
    hosts = [host(1), host(2), host(3)]
    assert choose_slots_for_instances(hosts, 3, SLOT, False, window(0, 1)) == {1: 1, 2: 1, 3: 1}


def test_affinity_false_prefers_busy_hosts():
    hosts = [host(1), host(2), host(3, booking(0, 1, VCPU=2)), host(4, booking(0, 1, VCPU=2))]
    assert choose_slots_for_instances(hosts, 3, SLOT, False, window(0, 1)) == {3: 1, 4: 1, 1: 1}


def test_affinity_false_skips_full_hosts():
    hosts = [host(1, booking(0, 1, VCPU=8)), host(2)]
    assert choose_slots_for_instances(hosts, 1, SLOT, False, window(0, 1)) == {2: 1}


def test_affinity_false_shortage_counts_hosts_with_room():
    hosts = [host(1), host(2, booking(0, 1, VCPU=8)), host(3, booking(0, 1, exclusive=True))]
    assert str(choose_slots_for_instances(hosts, 2, SLOT, False, window(0, 1))) == (
        "2 slots of 2 vCPU, 2048 MB, 20 GB on distinct hosts requested, 1 host with a free slot "
        "between 2030-01-01 00:00 and 2030-01-01 01:00")


def test_no_affinity_fills_busy_hosts_before_idle_ones():
    hosts = [host(1), host(2, booking(0, 1, VCPU=4)), host(3)]
    assert choose_slots_for_instances(hosts, 5, SLOT, None, window(0, 1)) == {2: 2, 1: 3}


def test_no_affinity_fills_each_host_before_the_next():
    hosts = [host(1), host(2), host(3)]
    assert choose_slots_for_instances(hosts, 6, SLOT, None, window(0, 1)) == {1: 4, 2: 2}


def test_no_affinity_counts_busy_only_when_the_booking_overlaps_the_window():
    hosts = [host(1), host(2, booking(5, 6, VCPU=4))]
    assert choose_slots_for_instances(hosts, 1, SLOT, None, window(0, 1)) == {1: 1}


def test_no_affinity_shortage_counts_every_free_slot():
    hosts = [host(1, booking(0, 1, VCPU=4)), host(2, booking(0.5, 2, VCPU=4)), host(3, booking(0, 1, VCPU=8))]
    assert str(choose_slots_for_instances(hosts, 10, SLOT, None, window(0, 1))) == (
        "10 slots of 2 vCPU, 2048 MB, 20 GB requested, 4 free between 2030-01-01 00:00 and 2030-01-01 01:00")


def test_a_filter_narrows_the_hosts_and_shows_in_the_shortage():
    predicate = parse_filter('["==", "$gpu", "a100"]', "resource_properties")
    hosts = [host(1, gpu="a100"), host(2, gpu="h100")]
    assert choose_slots_for_instances(hosts, 4, SLOT, None, window(0, 1), predicate) == {1: 4}
    assert str(choose_slots_for_instances(hosts, 5, SLOT, None, window(0, 1), predicate)) == (
        '5 slots of 2 vCPU, 2048 MB, 20 GB on hosts matching resource_properties ["==", "$gpu", "a100"] '
        "requested, 4 free between 2030-01-01 00:00 and 2030-01-01 01:00")


def test_one_slot_is_singular_in_messages():
    assert str(choose_slots_for_instances([], 1, SLOT, None, window(0, 1))).startswith(
        "1 slot of 2 vCPU, 2048 MB, 20 GB requested, 0 free")


def test_held_hosts_get_their_slots_back_first():
    # The reservation held 3 slots on host 3 and 1 on host 2; idle host 1 could take them all.
    hosts = [host(1), host(2), host(3)]
    assert choose_slots_for_instances(hosts, 4, SLOT, None, window(0, 1), held={3: 3, 2: 1}) == {2: 1, 3: 3}


def test_growing_a_reservation_fills_held_hosts_first():
    hosts = [host(1, booking(0, 1, VCPU=2)), host(2)]
    assert choose_slots_for_instances(hosts, 6, SLOT, None, window(0, 1), held={2: 2}) == {2: 4, 1: 2}


def test_a_held_host_that_filled_up_gives_back_what_it_can():
    hosts = [host(1), host(2, booking(0, 1, VCPU=6))]
    assert choose_slots_for_instances(hosts, 3, SLOT, None, window(0, 1), held={2: 3}) == {2: 1, 1: 2}


def test_affinity_true_keeps_a_held_host_that_still_fits():
    hosts = [host(1, booking(0, 1, VCPU=2)), host(2)]
    assert choose_slots_for_instances(hosts, 2, SLOT, True, window(0, 1), held={2: 2}) == {2: 2}


def test_choices_do_not_depend_on_the_order_hosts_come_in():
    hosts = [host(i, *([booking(0, 1, VCPU=2)] if i % 3 == 0 else [])) for i in range(1, 10)]
    for affinity in (True, False, None):
        assert choose_slots_for_instances(hosts, 3, SLOT, affinity, window(0, 1)) == \
            choose_slots_for_instances(list(reversed(hosts)), 3, SLOT, affinity, window(0, 1))


def test_string_host_ids_are_ordered_too():
    hosts = [host("b"), host("a")]
    assert choose_slots_for_instances(hosts, 1, SLOT, None, window(0, 1)) == {"a": 1}


def test_an_amount_below_one_is_a_programming_error():
    with pytest.raises(ValueError):
        choose_slots_for_instances([host(1)], 0, SLOT, None, window(0, 1))


# Properties checked against brute force

CLASSES = ("VCPU", "MEMORY_MB")
amounts_strategy = st.fixed_dictionaries({name: st.integers(0, 6) for name in CLASSES})
spans = st.tuples(st.integers(0, 40), st.integers(1, 12)).map(lambda span: (span[0], span[0] + span[1]))


def usage_at(bookings, instant, cleaning_time):
    """Brute force: what runs at `instant`, each booking's end extended by the cleaning time."""
    return [b for b in bookings if b.start <= instant < b.end + cleaning_time]


def instants(bookings, cleaning_time):
    """Every instant use can change at: use is constant between two of these."""
    return sorted({b.start for b in bookings} | {b.end + cleaning_time for b in bookings})


@settings(deadline=None, max_examples=200)
@given(st.lists(st.tuples(spans, amounts_strategy), max_size=12), spans, st.sampled_from([0, 1, 3]))
def test_peak_usage_is_the_brute_force_maximum(raw, span, cleaning_hours):
    cleaning_time = cleaning_hours * HOUR
    bookings = [booking(s, e, **amounts) for (s, e), amounts in raw]
    request = window(*span)
    expected = {}
    points = [request.start] + [t for t in instants(bookings, cleaning_time)
                                if request.start <= t < request.end + cleaning_time]
    for instant in points:
        running = usage_at(bookings, instant, cleaning_time)
        for name in CLASSES:
            if running:
                expected[name] = max(expected.get(name, 0), sum(b.amounts[name] for b in running))
    got = peak_usage(bookings, request, cleaning_time=cleaning_time)
    assert {name: got.get(name, 0) for name in CLASSES} == {name: expected.get(name, 0) for name in CLASSES}


requests = st.tuples(spans, amounts_strategy, st.booleans())


@settings(deadline=None, max_examples=300)
@given(st.lists(requests, max_size=25), st.sampled_from([0, 1, 2]),
       st.fixed_dictionaries({name: st.integers(0, 10) for name in CLASSES}))
def test_requests_accepted_one_after_another_never_oversubscribe_a_host(stream, cleaning_hours, capacity):
    cleaning_time = cleaning_hours * HOUR
    bookings: list[Booking] = []
    for (start, end), amounts, exclusive in stream:
        candidate = Host(1, capacity, tuple(bookings))
        if fits(candidate, amounts, window(start, end), exclusive=exclusive, cleaning_time=cleaning_time):
            bookings.append(booking(start, end, exclusive, **amounts))
    for instant in instants(bookings, cleaning_time):
        running = usage_at(bookings, instant, cleaning_time)
        for name in CLASSES:
            assert sum(b.amounts[name] for b in running) <= capacity[name], (instant, name)
        if any(b.exclusive for b in running):
            assert len(running) == 1, instant


@settings(deadline=None, max_examples=200)
@given(st.lists(st.tuples(spans, amounts_strategy), max_size=10), spans,
       st.fixed_dictionaries({name: st.integers(0, 3) for name in CLASSES}).filter(lambda s: any(s.values())),
       st.sampled_from([0, 1]))
def test_max_slots_is_the_largest_count_that_fits(raw, span, slot, cleaning_hours):
    cleaning_time = cleaning_hours * HOUR
    target = Host(1, {"VCPU": 16, "MEMORY_MB": 16}, tuple(booking(s, e, **amounts) for (s, e), amounts in raw))
    request = window(*span)
    n = max_slots(target, slot, request, cleaning_time=cleaning_time)
    times = lambda k: {name: k * amount for name, amount in slot.items()}  # noqa: E731
    assert n == 0 or fits(target, times(n), request, cleaning_time=cleaning_time)
    assert not fits(target, times(n + 1), request, cleaning_time=cleaning_time)


hosts_strategy = st.lists(
    st.lists(st.tuples(spans, amounts_strategy, st.booleans()), max_size=4), min_size=0, max_size=6,
).map(lambda raw: [Host(i, {"VCPU": 8, "MEMORY_MB": 8},
                        tuple(booking(s, e, exclusive, **amounts) for (s, e), amounts, exclusive in bookings))
                   for i, bookings in enumerate(raw)])
small_slots = st.fixed_dictionaries({name: st.integers(0, 4) for name in CLASSES}).filter(lambda s: any(s.values()))


@settings(deadline=None, max_examples=300)
@given(hosts_strategy, st.integers(1, 12), small_slots, st.sampled_from([True, False, None]), spans)
def test_instance_choices_fit_and_shortages_are_real(hosts, amount, slot, affinity, span):
    request = window(*span)
    free = {target.id: max_slots(target, slot, request) for target in hosts}
    result = choose_slots_for_instances(hosts, amount, slot, affinity, request)
    if isinstance(result, Shortage):
        if affinity is True:
            assert max(free.values(), default=0) < amount
        elif affinity is False:
            assert sum(1 for count in free.values() if count > 0) < amount
        else:
            assert sum(free.values()) < amount
        return
    assert sum(result.values()) == amount
    for host_id, count in result.items():
        assert 0 < count <= free[host_id]
    if affinity is True:
        assert len(result) == 1
    if affinity is False:
        assert set(result.values()) == {1}


@settings(deadline=None, max_examples=200)
@given(hosts_strategy, st.integers(1, 4), st.integers(0, 3), spans)
def test_physical_choices_are_idle_hosts_and_shortages_are_real(hosts, min_hosts, extra, span):
    request = window(*span)
    idle = [target.id for target in hosts if not overlapping(target.bookings, request)]
    result = choose_hosts_for_physical(hosts, min_hosts, min_hosts + extra, request)
    if isinstance(result, Shortage):
        assert len(idle) < min_hosts
        assert result.available == len(idle)
    else:
        assert result == sorted(idle)[:min_hosts + extra]
