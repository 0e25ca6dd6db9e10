"""Capacity as a function of time: the earliest windows a reservation fits in, the periods a host is
free, and what a host holds period by period.

Pure functions over the same snapshot `availability` decides on (hosts, their capacity and their
bookings), and with the same model: half-open windows, bookings and requests extended by the
cleaning time, exclusive bookings that take the whole host.

The earliest-window search is a sweep, not a trial of every minute. For one host, let free(t) be
what it has free at the instant t (for whole hosts: 1 when nothing is booked, else 0; for slots:
how many slots fit beside what is booked). A reservation of length D started at s gets
min(free(t) for t in [s, s + D + cleaning)), which is exactly the figure `availability` computes
from peak use over that window (`max_slots`, or "no overlapping booking" for whole hosts). That
minimum over a sliding window only rises when the window's start passes the end of a booking
(plus cleaning), so the earliest start that fits is the search's own start or such an end; the
sweep visits those candidates in order, keeping every host's figure and their total up to date.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from blazar_lite.leases.availability import NO_CLEANING, Amounts, Booking, Host, Window, _times_within

# When a change and a candidate start fall on the same instant: a booking that ends at s no
# longer counts for a window starting at s (half-open windows), a booking that starts at s + D +
# cleaning does not count yet. So at one instant: ends first, then the candidate, then starts.
_LEAVES, _CANDIDATE, _ENTERS = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Demand:
    """What one reservation needs at once, in the sweep's terms.

    `slot` None asks for `count` whole hosts (physical:host min). Otherwise `count` slots of
    `slot` (class → amount) with `affinity` True (one host), False (distinct hosts) or None
    (anywhere)."""

    count: int
    slot: Amounts | None = None
    affinity: bool | None = None

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"a demand asks for at least 1, got {self.count}")
        if self.slot is not None and not any(amount > 0 for amount in self.slot.values()):
            raise ValueError("a slot must ask for a positive amount of at least one class")

    def share(self, free: int) -> int:
        """What a host with `free` (hosts: 0 or 1; else slots free for the whole window) offers
        towards the demand: a host, a distinct host with a slot, or up to `count` slots."""
        if self.slot is None or self.affinity is False:
            return 1 if free >= 1 else 0
        return min(free, self.count)

    @property
    def one_host(self) -> bool:
        """Whether a single host must meet the demand (so the best host's share counts, not the sum)."""
        return self.slot is not None and self.affinity is True


@dataclass(slots=True)
class Starts:
    """The starts found, earliest first, and the best the hosts could do at any candidate start:
    `best` of the demand's count (whole hosts, slots, distinct hosts, or slots on one host), first
    reached at `best_at` (None when no candidate was looked at)."""

    found: list[datetime] = field(default_factory=list)
    best: int = 0
    best_at: datetime | None = None


def _free_now(capacity: Amounts, used: Mapping[str, float], active: int, exclusive: int,
              slot: Amounts | None) -> int:
    if slot is None:
        return 1 if active == 0 else 0
    if exclusive:
        return 0
    count: int | None = None
    for name, amount in slot.items():
        if amount <= 0:
            continue
        room = capacity.get(name, 0) - used.get(name, 0)
        # Integer division is exact for the integer sizes hosts and slots have; _times_within
        # keeps fractional amounts exact too.
        fit = max(room // amount, 0) if type(room) is int and type(amount) is int else _times_within(room, amount)
        count = fit if count is None else min(count, fit)
    return int(count or 0)


def free_when_idle(capacity: Amounts, slot: Amounts | None) -> int:
    """What a host of `capacity` has free when nothing is booked on it: 1 whole host (`slot`
    None), or how many slots fit."""
    return _free_now(capacity, {}, 0, 0, slot)


def free_over_time(host: Host, opens: datetime, slot: Amounts | None, *,
                   cleaning_time: timedelta = NO_CLEANING) -> list[tuple[datetime, int]]:
    """What `host` has free from `opens` on, as steps [(from, free)]: free holds from each step's
    time until the next step's (the last step lasts for ever). `slot` None counts the whole host
    (1 when nothing is booked, else 0); otherwise how many slots fit beside the bookings. Every
    booking is held until its end plus `cleaning_time`."""
    changes: list[tuple[datetime, int, Booking]] = []
    for booking in host.bookings:
        held_until = booking.end + cleaning_time
        if held_until > opens:
            changes.append((max(booking.start, opens), 1, booking))
            changes.append((held_until, -1, booking))
    # Ends before starts at the same instant: back-to-back bookings never add up.
    changes.sort(key=lambda change: (change[0], change[1]))
    steps: list[tuple[datetime, int]] = []
    if not changes or changes[0][0] > opens:
        steps.append((opens, _free_now(host.capacity, {}, 0, 0, slot)))
    used: dict[str, float] = {}
    active = exclusive = 0
    index = 0
    while index < len(changes):
        moment = changes[index][0]
        while index < len(changes) and changes[index][0] == moment:
            _, sign, booking = changes[index]
            active += sign
            exclusive += sign if booking.exclusive else 0
            for name, amount in booking.amounts.items():
                used[name] = used.get(name, 0) + sign * amount
            index += 1
        free = _free_now(host.capacity, used, active, exclusive, slot)
        if not steps or steps[-1][1] != free:
            steps.append((moment, free))
    return steps


def _window_minimum(steps: Sequence[tuple[datetime, int]], width: timedelta,
                    last_start: datetime) -> tuple[int, list[tuple[datetime, int, int]]]:
    """min(free over [s, s + width)) for s from the first step's time to `last_start`: its value
    at the first step's time, then its changes as (s, phase, value), phase _LEAVES when a step
    leaves the window at s, _ENTERS when one enters just after s."""
    window: deque[int] = deque()  # indices of steps in the window, their free rising from the front

    def enter(index: int) -> None:
        while window and steps[window[-1]][1] >= steps[index][1]:
            window.pop()
        window.append(index)

    opens = steps[0][0]
    entering = 0
    while entering < len(steps) and steps[entering][0] < opens + width:
        enter(entering)
        entering += 1
    initial = current = steps[window[0]][1]
    changes: list[tuple[datetime, int, int]] = []
    leaving = 0  # step `leaving` leaves the window when s reaches the next step's time
    while True:
        leaves_at = steps[leaving + 1][0] if leaving + 1 < len(steps) else None
        enters_at = steps[entering][0] - width if entering < len(steps) else None
        if leaves_at is not None and (enters_at is None or leaves_at <= enters_at):
            moment, phase = leaves_at, _LEAVES
            if window[0] == leaving:
                window.popleft()
            leaving += 1
        elif enters_at is not None:
            moment, phase = enters_at, _ENTERS
            enter(entering)
            entering += 1
        else:
            break
        if moment > last_start:
            break
        value = steps[window[0]][1]
        if value != current:
            if changes and changes[-1][:2] == (moment, phase):
                changes[-1] = (moment, phase, value)
            else:
                changes.append((moment, phase, value))
            current = value
    return initial, changes


def earliest_starts(hosts: Iterable[Host], demand: Demand, duration: timedelta, first_start: datetime,
                    last_start: datetime, *, cleaning_time: timedelta = NO_CLEANING, limit: int | None = None,
                    candidates: Iterable[datetime] | None = None) -> Starts:
    """The starts s in [first_start, last_start] at which `demand` fits on `hosts` for [s, s +
    duration), earliest first, at most `limit` of them (all with None).

    Only candidate starts are tried: `first_start` and the end (plus `cleaning_time`) of every
    booking of `hosts` in between, unless `candidates` names others (`first_start` is always one).
    A start is found when the hosts could together serve the demand as `availability` decides:
    whole hosts with no overlapping booking, or slots per host from peak use, summed (affinity
    None), one per host (False), or all on one host (True). `hosts` are those the demand may use
    (filters already applied); their bookings must include every one that overlaps a window
    starting in [first_start, last_start].
    """
    if duration <= timedelta(0):
        raise ValueError(f"a duration must be positive, got {duration}")
    width = duration + cleaning_time
    shares: list[int] = []
    changes: list[tuple[datetime, int, int, int]] = []
    ends: set[datetime] = {first_start}
    idle_shares: dict[int, int] = {}
    for index, host in enumerate(hosts):
        if not host.bookings:
            # Most hosts of a large cluster: nothing changes for them, so no steps to sweep; and
            # hosts of one size often share one capacity mapping, so its share is worked out once.
            share = idle_shares.get(id(host.capacity))
            if share is None:
                share = idle_shares[id(host.capacity)] = demand.share(free_when_idle(host.capacity, demand.slot))
            shares.append(share)
            continue
        steps = free_over_time(host, first_start, demand.slot, cleaning_time=cleaning_time)
        initial, host_changes = _window_minimum(steps, width, last_start)
        shares.append(demand.share(initial))
        share = shares[-1]
        for moment, phase, value in host_changes:
            new_share = demand.share(value)
            if new_share != share:
                changes.append((moment, phase, index, new_share))
                share = new_share
        if candidates is None:
            ends.update(booking.end + cleaning_time for booking in host.bookings)
    if candidates is not None:
        ends.update(candidates)
    changes.extend((moment, _CANDIDATE, -1, 0) for moment in ends if first_start <= moment <= last_start)
    changes.sort(key=lambda change: (change[0], change[1]))

    starts = Starts()
    # The sum of the shares, or for a one-host demand how many hosts offer each share.
    total = sum(shares)
    held = Counter(shares) if demand.one_host else Counter()
    for moment, phase, index, share in changes:
        if phase != _CANDIDATE:
            if demand.one_host:
                held[shares[index]] -= 1
                held[share] += 1
            else:
                total += share - shares[index]
            shares[index] = share
            continue
        level = max((value for value, count in held.items() if count > 0), default=0) if demand.one_host else total
        if min(level, demand.count) > starts.best or starts.best_at is None:
            starts.best, starts.best_at = min(level, demand.count), moment
        if level >= demand.count:
            starts.found.append(moment)
            if limit is not None and len(starts.found) >= limit:
                break
    return starts


def free_periods(bookings: Iterable[Booking], span: Window, *,
                 cleaning_time: timedelta = NO_CLEANING) -> list[Window]:
    """The periods inside `span` in which a host with these bookings is free for a whole-host
    booking: any window inside one fits, cleaning time included before and after it."""
    held = sorted((booking.start - cleaning_time, booking.end + cleaning_time) for booking in bookings)
    periods: list[Window] = []
    free_from = span.start
    for start, end in held:
        if start > free_from:
            until = min(start, span.end)
            if until > free_from:
                periods.append(Window(free_from, until))
        free_from = max(free_from, end)
        if free_from >= span.end:
            break
    if free_from < span.end:
        periods.append(Window(free_from, span.end))
    return periods


@dataclass(frozen=True, slots=True)
class Period:
    """What a host holds over [start, end): per class, and whether a booking takes it whole."""

    start: datetime
    end: datetime
    used: Mapping[str, float]
    whole_host: bool


def occupancy(host: Host, span: Window, *, cleaning_time: timedelta = NO_CLEANING) -> list[Period]:
    """What `host` holds, period by period, over `span`: consecutive periods covering it, a new
    one wherever what is held changes. A booking is held until its end plus `cleaning_time`."""
    changes: list[tuple[datetime, int, Booking]] = []
    for booking in host.bookings:
        start, end = max(booking.start, span.start), min(booking.end + cleaning_time, span.end)
        if start < end:
            changes.append((start, 1, booking))
            changes.append((end, -1, booking))
    changes.sort(key=lambda change: (change[0], change[1]))
    periods: list[Period] = []
    used: dict[str, float] = {}
    exclusive = 0
    moment = span.start
    index = 0
    while moment < span.end:
        while index < len(changes) and changes[index][0] == moment:
            _, sign, booking = changes[index]
            exclusive += sign if booking.exclusive else 0
            for name, amount in booking.amounts.items():
                used[name] = used.get(name, 0) + sign * amount
            index += 1
        until = changes[index][0] if index < len(changes) else span.end
        held = {name: amount for name, amount in used.items() if amount}
        if periods and periods[-1].used == held and periods[-1].whole_host == bool(exclusive):
            last = periods[-1]
            periods[-1] = Period(last.start, until, last.used, last.whole_host)
        else:
            periods.append(Period(moment, until, held, bool(exclusive)))
        moment = until
    return periods

