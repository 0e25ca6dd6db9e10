"""Capacity over time: whether a request fits on a host for a window, and which hosts to choose.

Everything here is a pure function of plain values: the caller reads a snapshot (hosts, their
capacity, their bookings) and writes the decision back in its own transaction.

The model:
- A host has a capacity per resource class (any names, e.g. VCPU / MEMORY_MB / DISK_GB, or
  vcpus / memory_mb / disk_gb; a class the host does not list has capacity 0) and bookings.
- A booking holds amounts per class over a half-open window [start, end): [a, b) and [b, c) do not
  overlap, so back-to-back leases share a host. A booking is `exclusive` when it takes the whole
  host (physical:host): a host never serves an exclusive booking and any other booking whose
  windows overlap.
- A request fits when, for every class it asks for, the *peak* concurrent use over the request's
  window plus the request stays within capacity. The peak comes from a sweep over the endpoints of
  the bookings that overlap the window; it is not the sum of everything touching the window.
- `cleaning_time` extends the end of every booking and of the request by the same gap, so a host
  is idle for at least that long between two uses.

Ties are broken by host id, so the same snapshot always gives the same choice. Host ids are
compared with `<`: within one call they must all be ints or all be strings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from blazar_lite.leases.dates import describe_date

HostId = int | str
Amounts = Mapping[str, float]
# A host predicate takes the host's attributes; a HostFilter is one, and its `description`
# (when it has one) is quoted in shortage messages.
HostPredicate = Callable[[Mapping[str, object]], bool]

NO_CLEANING = timedelta(0)


@dataclass(frozen=True, slots=True)
class Window:
    """The half-open time window [start, end)."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if not self.start < self.end:
            raise ValueError(f"a window must end after it starts: [{self.start}, {self.end})")


@dataclass(frozen=True, slots=True)
class Booking:
    """Capacity held on one host over [start, end): amounts per class, or the whole host."""

    start: datetime
    end: datetime
    amounts: Amounts = field(default_factory=dict)
    exclusive: bool = False
    # Which reservation holds it; not used in decisions, handy for the caller's bookkeeping.
    reservation_id: str | None = None

    def __post_init__(self) -> None:
        if not self.start < self.end:
            raise ValueError(f"a booking must end after it starts: [{self.start}, {self.end})")


@dataclass(frozen=True, slots=True)
class Host:
    """A host as the decisions see it: capacity per class, bookings, and the attributes filters read."""

    id: HostId
    capacity: Amounts
    bookings: Sequence[Booking] = ()
    attributes: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Shortage:
    """Why a request cannot be satisfied: `reason` says what was asked and what is free."""

    reason: str
    requested: int
    available: int

    def __str__(self) -> str:
        return self.reason


def overlapping(bookings: Iterable[Booking], window: Window, *,
                cleaning_time: timedelta = NO_CLEANING) -> list[Booking]:
    """The bookings whose window overlaps `window`, both ends extended by `cleaning_time`."""
    window_end = window.end + cleaning_time
    return [booking for booking in bookings
            if booking.start < window_end and window.start < booking.end + cleaning_time]


def peak_usage(bookings: Iterable[Booking], window: Window, *,
               cleaning_time: timedelta = NO_CLEANING) -> dict[str, float]:
    """The highest concurrent use of each class at any instant of `window` (its end extended by
    `cleaning_time`, as is every booking's). Classes no overlapping booking uses are left out."""
    return _peak(overlapping(bookings, window, cleaning_time=cleaning_time), window, cleaning_time)


def _peak(current: Sequence[Booking], window: Window, cleaning_time: timedelta) -> dict[str, float]:
    # Every booking here overlaps the window, so each one starts inside it or is already running
    # when it opens: clip starts to the window's start and sweep. Ends sort before starts at the
    # same instant because windows are half-open.
    events: list[tuple[datetime, int, Amounts]] = []
    for booking in current:
        events.append((max(booking.start, window.start), 1, booking.amounts))
        events.append((booking.end + cleaning_time, 0, booking.amounts))
    events.sort(key=lambda event: (event[0], event[1]))
    in_use: dict[str, float] = {}
    peak: dict[str, float] = {}
    for _, starts, amounts in events:
        if starts:
            for name, amount in amounts.items():
                level = in_use.get(name, 0) + amount
                in_use[name] = level
                if name not in peak or level > peak[name]:
                    peak[name] = level
        else:
            for name, amount in amounts.items():
                in_use[name] -= amount
    return peak


def _check_amounts(amounts: Amounts) -> None:
    for name, amount in amounts.items():
        if amount < 0:
            raise ValueError(f"a negative amount of {name}: {amount}")


def _room(host: Host, current: Sequence[Booking], window: Window, cleaning_time: timedelta,
          amounts: Amounts, exclusive: bool) -> bool:
    if current and (exclusive or any(booking.exclusive for booking in current)):
        return False
    peak = _peak(current, window, cleaning_time)
    return all(amount <= 0 or peak.get(name, 0) + amount <= host.capacity.get(name, 0)
               for name, amount in amounts.items())


def fits(host: Host, amounts: Amounts, window: Window, *, exclusive: bool = False,
         cleaning_time: timedelta = NO_CLEANING) -> bool:
    """Whether `amounts` (class → amount) can be booked on `host` for `window`.

    True when no booking overlapping the window is exclusive, the request is not exclusive or no
    booking overlaps at all, and peak use + amount ≤ capacity for every class the request asks for.
    """
    _check_amounts(amounts)
    current = overlapping(host.bookings, window, cleaning_time=cleaning_time)
    return _room(host, current, window, cleaning_time, amounts, exclusive)


def max_slots(host: Host, slot: Amounts, window: Window, *, cleaning_time: timedelta = NO_CLEANING) -> int:
    """How many slots of size `slot` (class → amount) fit on `host` at once over all of `window`:
    the largest n for which `fits(host, n × slot, window)` holds (0 under an exclusive booking)."""
    _check_slot(slot)
    current = overlapping(host.bookings, window, cleaning_time=cleaning_time)
    return _max_slots(host, current, slot, window, cleaning_time)


def _check_slot(slot: Amounts) -> None:
    _check_amounts(slot)
    if not any(amount > 0 for amount in slot.values()):
        raise ValueError("a slot must ask for a positive amount of at least one class")


def _max_slots(host: Host, current: Sequence[Booking], slot: Amounts, window: Window,
               cleaning_time: timedelta) -> int:
    if any(booking.exclusive for booking in current):
        return 0
    peak = _peak(current, window, cleaning_time)
    count: int | None = None
    for name, amount in slot.items():
        if amount <= 0:
            continue
        room = host.capacity.get(name, 0) - peak.get(name, 0)
        count = _times_within(room, amount) if count is None else min(count, _times_within(room, amount))
    return count or 0


def _times_within(room: float, amount: float) -> int:
    """The largest n ≥ 0 with n × amount ≤ room, exact even where float division rounds."""
    if room < amount:
        return 0
    n = math.floor(room / amount)
    while n > 0 and n * amount > room:
        n -= 1
    while (n + 1) * amount <= room:
        n += 1
    return n


def _matches(predicate: HostPredicate | None, host: Host) -> bool:
    return predicate is None or predicate(host.attributes)


def _matching_phrase(predicate: HostPredicate | None) -> str:
    description = getattr(predicate, "description", "") if predicate is not None else ""
    return f" matching {description}" if description else ""


def _between(window: Window) -> str:
    return f"between {describe_date(window.start)} and {describe_date(window.end)}"


def _plural(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


def _check_count(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")


def choose_hosts_for_physical(hosts: Iterable[Host], min_hosts: int, max_hosts: int, window: Window,
                              predicate: HostPredicate | None = None, *,
                              cleaning_time: timedelta = NO_CLEANING,
                              held: Collection[HostId] = ()) -> list[HostId] | Shortage:
    """Up to `max_hosts` whole hosts for a physical:host reservation over `window`, or a Shortage
    when fewer than `min_hosts` are free.

    A host qualifies when it matches `predicate` (on its attributes) and no booking of any kind
    overlaps the window. Hosts in `held` (those the reservation holds already, when an update
    re-checks it with its own bookings left out) come first, then the rest, each by host id.
    """
    _check_count("min_hosts", min_hosts)
    if max_hosts < min_hosts:
        raise ValueError(f"max_hosts ({max_hosts}) must be at least min_hosts ({min_hosts})")
    chosen: list[HostId] = []
    for host in sorted(hosts, key=lambda host: (host.id not in held, host.id)):
        if not _matches(predicate, host) or overlapping(host.bookings, window, cleaning_time=cleaning_time):
            continue
        chosen.append(host.id)
        if len(chosen) == max_hosts:
            break
    if len(chosen) < min_hosts:
        return Shortage(f"{min_hosts} {_plural(min_hosts, 'host')}{_matching_phrase(predicate)} requested, "
                        f"{len(chosen)} free {_between(window)}", min_hosts, len(chosen))
    return chosen


_UNITS = (("VCPU", "vCPU"), ("vcpus", "vCPU"), ("MEMORY_MB", "MB"), ("memory_mb", "MB"),
          ("DISK_GB", "GB"), ("disk_gb", "GB"))


def describe_slot(slot: Amounts) -> str:
    """A slot in words: "2 vCPU, 2048 MB, 20 GB" (other classes by name, zero amounts left out)."""
    units = dict(_UNITS)
    known = [name for name, _ in _UNITS if name in slot]
    others = sorted(name for name in slot if name not in units)
    parts = [f"{_number(slot[name])} {units.get(name, name)}" for name in known + others if slot[name]]
    return ", ".join(parts)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclass(slots=True)
class _Candidate:
    host: Host
    current: list[Booking]
    free: int = -1


def choose_slots_for_instances(hosts: Iterable[Host], amount: int, slot: Amounts, affinity: bool | None,
                               window: Window, predicate: HostPredicate | None = None, *,
                               cleaning_time: timedelta = NO_CLEANING,
                               held: Mapping[HostId, int] | None = None) -> dict[HostId, int] | Shortage:
    """Where to put `amount` slots of size `slot` for an instance reservation over `window`:
    {host id: slots}, or a Shortage saying what was asked and what is free.

    Only hosts matching `predicate` count. `affinity` True puts every slot on one host, False puts
    each slot on a different host, None puts them anywhere. Hosts are tried in this order: those in
    `held` (the reservation's current {host: slots}, when an update re-checks it with its own
    bookings left out), then hosts with a booking overlapping the window, then idle hosts, each
    group by host id — so reservations pack onto busy hosts and keep idle hosts whole for
    physical:host reservations. With affinity None, each held host first gets back up to the
    slots it holds, so an update moves as few slots as it can.
    """
    _check_count("amount", amount)
    _check_slot(slot)
    held = held or {}
    candidates = [_Candidate(host, overlapping(host.bookings, window, cleaning_time=cleaning_time))
                  for host in hosts if _matches(predicate, host)]
    candidates.sort(key=lambda c: (c.host.id not in held, not c.current, c.host.id))

    def free(candidate: _Candidate) -> int:
        if candidate.free < 0:
            candidate.free = _max_slots(candidate.host, candidate.current, slot, window, cleaning_time)
        return candidate.free

    asked = f"{amount} {_plural(amount, 'slot')} of {describe_slot(slot)}"
    matching = _matching_phrase(predicate)
    if affinity is True:
        for candidate in candidates:
            if free(candidate) >= amount:
                return {candidate.host.id: amount}
        best = max((free(candidate) for candidate in candidates), default=0)
        return Shortage(f"{asked} on one host{matching} requested, at most {best} free on any host "
                        f"{_between(window)}", amount, best)
    if affinity is False:
        chosen = [candidate.host.id for candidate in _with_room(candidates, free)]
        if len(chosen) >= amount:
            return dict.fromkeys(chosen[:amount], 1)
        return Shortage(f"{asked} on distinct hosts{matching} requested, {len(chosen)} "
                        f"{_plural(len(chosen), 'host')} with a free slot {_between(window)}", amount, len(chosen))
    placement = _fill(candidates, free, amount, held)
    placed = sum(placement.values())
    if placed < amount:
        return Shortage(f"{asked}{' on hosts' + matching if matching else ''} requested, {placed} free "
                        f"{_between(window)}", amount, placed)
    return placement


def _with_room(candidates: Iterable[_Candidate], free: Callable[[_Candidate], int]) -> Iterator[_Candidate]:
    return (candidate for candidate in candidates if free(candidate) > 0)


def _fill(candidates: Sequence[_Candidate], free: Callable[[_Candidate], int], amount: int,
          held: Mapping[HostId, int]) -> dict[HostId, int]:
    placement: dict[HostId, int] = {}
    remaining = amount
    # Give held hosts back what they hold first; then fill in order, held hosts included.
    for candidate in candidates:
        if remaining == 0 or candidate.host.id not in held:
            break
        take = min(held[candidate.host.id], free(candidate), remaining)
        if take > 0:
            placement[candidate.host.id] = take
            remaining -= take
    for candidate in candidates:
        if remaining == 0:
            break
        take = min(free(candidate) - placement.get(candidate.host.id, 0), remaining)
        if take > 0:
            placement[candidate.host.id] = placement.get(candidate.host.id, 0) + take
            remaining -= take
    return placement
