"""Availability search: the earliest windows a reservation fits in, leases booked at the earliest
window, and what hosts hold over time (free periods of a host, a timeline of the cluster).

Every answer comes from the snapshot lease creation decides on (the reservable hosts that are up,
their capacity and the bookings of leases that are not terminated) and from the same choosers, so
a window the search returns is one a lease create with those dates and parameters is granted,
as long as nothing is booked in between. A search reads without locking; a lease create at the
earliest window locks the host rows first, as every create does, and books in the same
transaction.

The snapshot is read for a growing horizon: windows starting within the first hours are looked
for first, and the horizon doubles until enough are found or the search window is exhausted, so
a search in a busy cluster reads the bookings of the next days, not of the next month.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from blazar_lite.auth.context import RequestContext
from blazar_lite.db import utcnow
from blazar_lite.exceptions import BadRequest, NotEnoughResources, NotFound
from blazar_lite.hosts.models import Host
from blazar_lite.leases import availability, service
from blazar_lite.leases.dates import (
    describe_date,
    describe_duration,
    parse_date,
    parse_duration,
    start_of_minute,
)
from blazar_lite.leases.models import PHYSICAL_HOST, RESOURCE_TYPES, Reservation, ReservationBooking
from blazar_lite.leases.windows import (
    Demand,
    Period,
    Starts,
    earliest_starts,
    free_periods,
    free_when_idle,
    occupancy,
)

DEFAULT_SPAN = dt.timedelta(days=30)
DEFAULT_LIMIT = 5
MAX_LIMIT = 50
# The first horizon searched; each next one is twice as long.
FIRST_HORIZON = dt.timedelta(hours=6)
EARLIEST = "earliest"
# The query parameters of a search, per reservation type: the lease's own words.
SEARCH_FIELDS = {
    PHYSICAL_HOST: ("min", "max", "hypervisor_properties", "resource_properties"),
    "virtual:instance": ("amount", "vcpus", "memory_mb", "disk_gb", "affinity", "resource_properties"),
    "flavor:instance": ("flavor_id", "amount", "affinity", "resource_properties"),
}
SEARCH_WINDOW_FIELDS = ("duration", "after", "before", "limit")
SEARCH_PARAMETERS = {"resource_type", *SEARCH_WINDOW_FIELDS,
                     *(name for names in SEARCH_FIELDS.values() for name in names)}


@dataclass(frozen=True)
class HostUse:
    """A host a window would use: whole (slots 1) or for `slots` instance slots."""

    id: int
    hypervisor_hostname: str
    slots: int


@dataclass(frozen=True)
class FoundWindow:
    start: dt.datetime
    end: dt.datetime
    hosts: list[HostUse]


@dataclass(frozen=True)
class SearchAnswer:
    """The windows found, earliest first, in the search window [after, before); when there are
    none, `message` says the most that could be had."""

    after: dt.datetime
    before: dt.datetime
    duration: dt.timedelta
    windows: list[FoundWindow]
    message: str | None = None


@dataclass(frozen=True)
class SearchWindow:
    """Where to look: starts from `after`, ends by `before`, for `duration`."""

    after: dt.datetime
    before: dt.datetime
    duration: dt.timedelta

    @property
    def last_start(self) -> dt.datetime:
        return self.before - self.duration


# Reading a search's parameters.

def _search_window(after: object, before: object, duration: object, now: dt.datetime,
                   names: tuple[str, str, str] = ("after", "before", "duration")) -> SearchWindow:
    """The search window from request values (None: not given). `after` defaults to the current
    minute (a lease may start any time within it) and may not be earlier; `before` defaults to
    30 days after `after`."""
    after_name, before_name, duration_name = names
    if duration is None:
        raise BadRequest(f"Missing parameter {duration_name}: how long the lease lasts, such as 90m, 24h or 2d.")
    length = parse_duration(duration, duration_name)
    current_minute = start_of_minute(now)
    opens = current_minute if after is None or (isinstance(after, str) and after.strip().lower() == "now") \
        else parse_date(after, now)
    if opens < current_minute:
        raise BadRequest(f"Invalid input for field '{after_name}': {describe_date(opens)} is in the past; "
                         f"a lease can start from {describe_date(current_minute)} on.")
    closes = opens + DEFAULT_SPAN if before is None else parse_date(before, now)
    if closes - opens < length:
        raise BadRequest(f"The search window from {describe_date(opens)} to {describe_date(closes)} is shorter than "
                         f"the duration {describe_duration(length)}; move {before_name} later or ask for less time.")
    return SearchWindow(opens, closes, length)


def _limit(value: str | None) -> int:
    if value is None:
        return DEFAULT_LIMIT
    if not value.strip().isdigit() or not 1 <= int(value) <= MAX_LIMIT:
        raise BadRequest(f"Invalid input for field 'limit': {value!r}; give a whole number from 1 to {MAX_LIMIT}.")
    return int(value)


def _search_request(session: Session, query: Mapping[str, str], project_id: str) -> service._Request:
    """The reservation a search asks about, checked as a lease create checks it."""
    resource_type = query.get("resource_type")
    if resource_type is None:
        raise BadRequest(f"Missing parameter resource_type: one of {', '.join(RESOURCE_TYPES)}.")
    if resource_type not in SEARCH_FIELDS:
        raise BadRequest(f"Invalid input for field 'resource_type': {resource_type!r} is not one of "
                         f"{', '.join(RESOURCE_TYPES)}.")
    stray = sorted(set(query) - {"resource_type", *SEARCH_FIELDS[resource_type], *SEARCH_WINDOW_FIELDS})
    if stray:
        raise BadRequest(f"{', '.join(stray)} {'does' if len(stray) == 1 else 'do'} not apply to {resource_type}; "
                         f"its parameters are {', '.join(SEARCH_FIELDS[resource_type])}.")
    spec = {key: value for key, value in query.items() if key in SEARCH_FIELDS[resource_type]}
    row = Reservation(id=str(uuidlib.uuid4()), resource_type=resource_type)
    if resource_type == PHYSICAL_HOST:
        return service._physical(spec, None, row)
    return service._instance(session, spec, None, row, project_id)


def demand_of(request: service._Request) -> Demand:
    """What a reservation asks for at once, in the sweep's terms."""
    row = request.row
    if row.resource_type == PHYSICAL_HOST:
        return Demand(row.min or 1)
    return Demand(row.amount or 1, request.slot, row.affinity)


# The snapshot, horizon by horizon.

@dataclass
class _Cluster:
    """The hosts lease creation offers, read once per search; bookings are read per horizon."""

    capacity: dict[int, dict[str, int]]
    attributes: dict[int, dict[str, object]]
    cleaning_time: dt.timedelta
    hosts: dict[int, availability.Host] = field(default_factory=dict)

    def read(self, session: Session, search: SearchWindow, last_start: dt.datetime) -> None:
        """The hosts with the bookings that overlap any window starting by `last_start`."""
        reach = availability.Window(search.after, last_start + search.duration)
        bookings = service._bookings(session, reach, self.cleaning_time, None) if self.capacity else {}
        self.hosts = service._hosts(self.capacity, self.capacity, bookings, self.attributes)

    def eligible(self, request: service._Request) -> list[availability.Host]:
        if request.predicate.is_empty:
            return list(self.hosts.values())
        return [host for host in self.hosts.values() if request.predicate(host.attributes)]


def _chooser_hosts(eligible: Sequence[availability.Host], request: service._Request) -> dict[int, availability.Host]:
    """The hosts the chooser needs to make, for any window of the horizon, the choice it makes
    over all of `eligible`: every host with a booking, and the first few of those without one.

    A host without a booking in the horizon is idle in every window of it, and the choosers take
    idle hosts after busy ones, by id, each with room for what its capacity holds; so they never
    reach past the first `max` idle hosts (whole hosts), the first `amount` with room for a slot,
    or the first with room for every slot (slots on one host). Handing them only those spares
    reading the others' bookings once per window, which in a large cluster is most of a search."""
    row = request.row
    demand = demand_of(request)
    if row.resource_type == PHYSICAL_HOST:
        spare, room = row.max or 1, 1
    else:
        spare, room = (1, demand.count) if row.affinity is True else (demand.count, 1)
    chosen: dict[int, availability.Host] = {}
    for host in sorted(eligible, key=lambda host: host.id):
        if host.bookings:
            chosen[int(host.id)] = host
        elif spare and free_when_idle(host.capacity, demand.slot) >= room:
            chosen[int(host.id)] = host
            spare -= 1
    return chosen


def _cluster(session: Session, requests: Sequence[service._Request], cleaning_time: dt.timedelta, *,
             lock: bool) -> _Cluster:
    # Hosts of one size share one capacity mapping, so what depends on the size alone is worked
    # out once per size.
    sizes: dict[tuple[int, ...], dict[str, int]] = {}
    capacity = {host_id: sizes.setdefault(tuple(amounts.values()), amounts)
                for host_id, amounts in service._offered(session, lock=lock).items()}
    filtered = any(not request.predicate.is_empty for request in requests)
    attributes = _attributes_of_offered(session, capacity) if filtered else {}
    return _Cluster(capacity, attributes, cleaning_time)


def _attributes_of_offered(session: Session, capacity: Mapping[int, object]) -> dict[int, dict[str, object]]:
    """What filters read of the offered hosts, selected by the hosts' state rather than by a
    list of ids: a list of ten thousand ids costs more to send than the rows themselves."""
    return service.host_attributes(session, and_(Host.reservable.is_(True), Host.status == "up"), capacity)


def _horizons(search: SearchWindow) -> Iterable[dt.datetime]:
    """The last starts of the growing horizons, ending with the search's own last start."""
    length = FIRST_HORIZON
    while search.after + length < search.last_start:
        yield search.after + length
        length *= 2
    yield search.last_start


def _partial(request: service._Request, demand: Demand, starts: Starts, search: SearchWindow) -> str:
    """What the most was, when no window fits."""
    row = request.row
    matching = availability._matching_phrase(request.predicate)
    if row.resource_type == PHYSICAL_HOST:
        wanted = f"{starts.best} of the {demand.count} {availability._plural(demand.count, 'host')}{matching} " \
                 f"requested {'is' if starts.best == 1 else 'are'} free together"
    else:
        slot = availability.describe_slot(request.slot)
        where = {True: " on one host", False: " on distinct hosts", None: ""}[row.affinity]
        hosts = f" on hosts{matching}" if matching and row.affinity is None else matching
        wanted = f"{starts.best} of the {demand.count} {availability._plural(demand.count, 'slot')} of {slot}" \
                 f"{where}{hosts} requested fit"
    text = (f"No window fits: at most {wanted} for {describe_duration(search.duration)} between "
            f"{describe_date(search.after)} and {describe_date(search.before)}")
    if starts.best and starts.best_at is not None:
        text += f" (from {describe_date(starts.best_at)})"
    return text + ". Ask for less, loosen the filters, or search a longer window."


def _uses(session: Session, chosen: Mapping[int, int]) -> list[HostUse]:
    names = dict(session.execute(select(Host.id, Host.hypervisor_hostname).where(Host.id.in_(list(chosen)))).all())
    return [HostUse(host_id, names[host_id], slots) for host_id, slots in sorted(chosen.items())]


def search_availability(session: Session, context: RequestContext, query: Mapping[str, str], *,
                        now: dt.datetime | None = None,
                        rules: service.LeaseRules = service.DEFAULT_RULES) -> SearchAnswer:
    """The earliest windows (up to `limit`, default 5) in which one reservation, given in the
    lease's words (`query`: resource_type and its fields, duration, after, before, limit), fits,
    each with the hosts a lease create would choose for it. BadRequest for a mistake in `query`;
    no window is an answer, with a message saying the most that could be had."""
    now = now or utcnow()
    request = _search_request(session, query, context.project_id)
    search = _search_window(query.get("after"), query.get("before"), query.get("duration"), now)
    limit = _limit(query.get("limit"))
    demand = demand_of(request)
    cluster = _cluster(session, [request], rules.cleaning_time, lock=False)
    for last_start in _horizons(search):
        cluster.read(session, search, last_start)
        starts = earliest_starts(cluster.eligible(request), demand, search.duration, search.after, last_start,
                                 cleaning_time=rules.cleaning_time, limit=limit)
        if len(starts.found) >= limit:
            break
    if not starts.found:
        return SearchAnswer(search.after, search.before, search.duration, [], _partial(request, demand, starts, search))
    windows = []
    hosts = _chooser_hosts(cluster.eligible(request), request)
    for start in starts.found:
        window = availability.Window(start, start + search.duration)
        # The chooser of lease creation names the hosts, so the answer is what a create would get.
        chosen = service._choose(request, hosts, window, rules.cleaning_time)
        windows.append(FoundWindow(window.start, window.end, _uses(session, chosen)))
    return SearchAnswer(search.after, search.before, search.duration, windows)


# A lease at the earliest window.

def _fits_together(requests: Sequence[service._Request], hosts: Mapping[int, availability.Host],
                   window: availability.Window, cleaning_time: dt.timedelta) -> bool:
    """Whether the lease's reservations all fit in `window`, each seeing what the ones before it
    took, as lease creation decides them."""
    taken = dict(hosts)
    for request in requests:
        try:
            chosen = service._choose(request, taken, window, cleaning_time)
        except NotEnoughResources:
            return False
        for host_id, slots in chosen.items():
            service._book(taken, host_id, availability.Booking(
                window.start, window.end, service._booking_amounts(request.row.resource_type, slots, request.slot),
                exclusive=request.row.resource_type == PHYSICAL_HOST))
    return True


def _earliest_start(session: Session, requests: Sequence[service._Request], search: SearchWindow,
                    cleaning_time: dt.timedelta) -> dt.datetime:
    """The first start at which every reservation fits, with the host rows locked; or
    NotEnoughResources saying what is short."""
    if not requests:
        return search.after
    cluster = _cluster(session, requests, cleaning_time, lock=True)
    for last_start in _horizons(search):
        cluster.read(session, search, last_start)
        # Every reservation's candidates count: one may fit only once another's hosts are free.
        ends = {booking.end + cleaning_time for host in cluster.hosts.values() for booking in host.bookings}
        found = [earliest_starts(cluster.eligible(request), demand_of(request), search.duration, search.after,
                                 last_start, cleaning_time=cleaning_time, candidates=ends) for request in requests]
        common = set(found[0].found).intersection(*(starts.found for starts in found[1:]))
        for start in sorted(common):
            if _fits_together(requests, cluster.hosts, availability.Window(start, start + search.duration),
                              cleaning_time):
                return start
    for request, starts in zip(requests, found, strict=True):
        if not starts.found:
            partial = _partial(request, demand_of(request), starts, search)
            raise NotEnoughResources(f"Not enough resources for reservation {request.index} "
                                     f"({request.row.resource_type}): {partial}")
    raise NotEnoughResources(
        f"No window fits all {len(requests)} reservations together for {describe_duration(search.duration)} between "
        f"{describe_date(search.after)} and {describe_date(search.before)}, though each fits on its own. Ask for "
        "less, split the lease, or search a longer window.")


def asks_earliest(body: Mapping[str, Any]) -> bool:
    value = body.get("start_date")
    return isinstance(value, str) and value.strip().lower() == EARLIEST


def create_lease(session: Session, context: RequestContext, body: Mapping[str, Any], *,
                 now: dt.datetime | None = None,
                 rules: service.LeaseRules = service.DEFAULT_RULES) -> service.LeaseView:
    """Create a lease as `service.create_lease` does; with start_date "earliest", at the first
    window of `duration` that fits every reservation, starting from now and ending by
    `search_until` (default: 30 days on). The window is found with the host rows locked and the
    lease booked in the same transaction, so no other create takes it in between."""
    now = now or utcnow()
    if not asks_earliest(body):
        return service.create_lease(session, context, body, now=now, rules=rules)
    for name, instead in (("end_date", "duration"), ("before_end_date", None)):
        if body.get(name) not in (None, ""):
            hint = f"give {instead} instead" if instead else "leave it out; the default applies"
            raise BadRequest(f"Invalid input for field '{name}': with start_date earliest the dates are not known "
                             f"in advance; {hint}.")
    service._name(body.get("name"))
    requests = service._requests(session, body.get("reservations"), context.project_id)
    search = _search_window(None, body.get("search_until"), body.get("duration"), now,
                            names=("start_date", "search_until", "duration"))
    start = _earliest_start(session, requests, search, rules.cleaning_time)
    fixed = {key: value for key, value in body.items() if key not in ("duration", "search_until")}
    fixed.update(start_date=start, end_date=start + search.duration)
    return service.create_lease(session, context, fixed, now=now, rules=rules)


# Free periods and the timeline.

@dataclass(frozen=True)
class HostTimeline:
    """A host and what it holds over a span: consecutive periods, each with what is used."""

    id: int
    hypervisor_hostname: str
    reservable: bool
    status: str
    capacity: dict[str, int]
    periods: list[Period]


@dataclass(frozen=True)
class HostFreePeriods:
    """A host and its free periods within `span`."""

    id: int
    hypervisor_hostname: str
    reservable: bool
    status: str
    span: availability.Window
    periods: list[availability.Window]


def _span(start: object, end: object, now: dt.datetime) -> availability.Window:
    opens = parse_date("now" if start is None else start, now)
    closes = opens + DEFAULT_SPAN if end is None else parse_date(end, now)
    if closes <= opens:
        raise BadRequest(f"Invalid input for field 'end': {describe_date(closes)} is not after the start "
                         f"{describe_date(opens)}.")
    return availability.Window(opens, closes)


def host_free_periods(session: Session, host_id: int, start: object = None, end: object = None, *,
                      now: dt.datetime | None = None,
                      rules: service.LeaseRules = service.DEFAULT_RULES) -> HostFreePeriods:
    """The periods between `start` (default now) and `end` (default 30 days later) in which the
    host has no booking, cleaning time kept before and after each one: a whole-host lease fits
    in any window inside one, while the host is reservable and up. 404 for an unknown host."""
    span = _span(start, end, now or utcnow())
    host = session.get(Host, host_id)
    if host is None:
        raise NotFound(f"Host {host_id} not found.")
    bookings = _host_bookings(session, [host_id], span, rules.cleaning_time).get(host_id, [])
    return HostFreePeriods(host.id, host.hypervisor_hostname, host.reservable, host.status, span,
                           free_periods(bookings, span, cleaning_time=rules.cleaning_time))


def _host_bookings(session: Session, host_ids: Sequence[int] | None, span: availability.Window,
                   cleaning_time: dt.timedelta) -> dict[int, list[availability.Booking]]:
    stmt = (select(ReservationBooking.host_id, ReservationBooking.start_date, ReservationBooking.end_date,
                   ReservationBooking.exclusive, ReservationBooking.vcpus, ReservationBooking.memory_mb,
                   ReservationBooking.disk_gb)
            .where(*service._overlap(span, cleaning_time, None)))
    if host_ids is not None:
        stmt = stmt.where(ReservationBooking.host_id.in_(list(host_ids)))
    found: dict[int, list[availability.Booking]] = {}
    for host_id, start, end, exclusive, vcpus, memory_mb, disk_gb in session.execute(stmt):
        amounts = {} if exclusive else {"vcpus": vcpus, "memory_mb": memory_mb, "disk_gb": disk_gb}
        found.setdefault(host_id, []).append(availability.Booking(start, end, amounts, exclusive=exclusive))
    return found


def cluster_timeline(session: Session, start: object = None, end: object = None, *,
                     now: dt.datetime | None = None,
                     rules: service.LeaseRules = service.DEFAULT_RULES) -> tuple[availability.Window,
                                                                                 list[HostTimeline]]:
    """Every host, by id, with what it holds between `start` (default now) and `end` (default 30
    days later), period by period; a booking is held until its end plus the cleaning time."""
    span = _span(start, end, now or utcnow())
    bookings = _host_bookings(session, None, span, rules.cleaning_time)
    timeline = []
    for host_id, name, reservable, status, vcpus, memory_mb, local_gb in session.execute(
            select(Host.id, Host.hypervisor_hostname, Host.reservable, Host.status, Host.vcpus, Host.memory_mb,
                   Host.local_gb).order_by(Host.id)):
        capacity = {"vcpus": vcpus, "memory_mb": memory_mb, "disk_gb": local_gb}
        host = availability.Host(host_id, capacity, bookings.get(host_id, []))
        timeline.append(HostTimeline(host_id, name, reservable, status, capacity,
                                     occupancy(host, span, cleaning_time=rules.cleaning_time)))
    return span, timeline
