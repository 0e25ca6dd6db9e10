"""Leases: create (validate, find capacity over the window, book it), list, show, delete.

Creating a lease is one transaction: read a snapshot of the reservable hosts and of the bookings
that overlap the lease's window, decide with the pure functions of `availability`, write the
bookings, the per-reservation resource class and flavor, and the events. Two writers never book
the same capacity: on PostgreSQL the candidate host rows are locked (in id order, so writers
queue rather than deadlock) before the bookings are read; SQLite serializes write transactions
already (BEGIN IMMEDIATE).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid as uuidlib
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blazar_lite.auth.context import RequestContext
from blazar_lite.db import utcnow
from blazar_lite.exceptions import BadRequest, Conflict, NotEnoughResources, NotFound
from blazar_lite.flavors import service as flavors
from blazar_lite.hosts.models import ExtraCapability, Host
from blazar_lite.hosts.reservations import HostReservation, register_source
from blazar_lite.leases import availability, enforcement, history, lifecycle, notices
from blazar_lite.leases.dates import as_utc, before_end_time, describe_date, parse_before_end, validate_window
from blazar_lite.leases.models import (
    ACTIVE,
    BEFORE_END_LEASE,
    END_LEASE,
    FLAVOR_INSTANCE,
    IN_PROGRESS,
    MAX_NAME,
    PENDING,
    PHYSICAL_HOST,
    RESOURCE_TYPES,
    START_LEASE,
    TERMINATED,
    UNDONE,
    Event,
    Lease,
    Reservation,
    ReservationBooking,
)
from blazar_lite.leases.models import ERROR as LEASE_ERROR
from blazar_lite.leases.properties import combine, parse_filter
from blazar_lite.placement.backend import EmbeddedPlacement, PlacementBackend

MAX_INT = 2147483647
# Reservations in one lease: far more than any lease needs, few enough that checking a request
# for room stays quick.
MAX_RESERVATIONS = 100
DEFAULT_MINUTES_BEFORE_END = 60
RESOURCE_CLASS_PREFIX = "CUSTOM_RESERVATION_"


@dataclass(frozen=True)
class LeaseRules:
    """The operator's settings every lease decision follows: when before_end_lease fires for a
    lease that does not say, and the idle gap a host keeps between two bookings."""

    minutes_before_end: int = DEFAULT_MINUTES_BEFORE_END
    cleaning_time: dt.timedelta = availability.NO_CLEANING
    usage: enforcement.UsageRules = enforcement.NO_LIMITS


DEFAULT_RULES = LeaseRules()
BEFORE_END_ACTIONS = ("", "default", "snapshot")
# States in which a lease may be deleted; the others are a scheduler's event at work.
DELETABLE = (PENDING, ACTIVE, TERMINATED, LEASE_ERROR)
# Host fields a hypervisor_properties filter may name (`$vcpus`, ...); extra capabilities are
# added beside them and can never shadow one (the hosts domain refuses such names).
_HOST_ATTRIBUTES = ("hypervisor_hostname", "service_name", "vcpus", "memory_mb", "local_gb", "cpu_info",
                    "hypervisor_type", "hypervisor_version", "availability_zone")
_AFFINITY = {"true": True, "false": False, "none": None}


@dataclass(frozen=True)
class EventView:
    id: str
    lease_id: str
    event_type: str
    time: dt.datetime
    status: str


@dataclass(frozen=True)
class ReservationView:
    id: str
    lease_id: str
    resource_type: str
    status: str
    missing_resources: bool
    resources_changed: bool
    fields: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime | None


@dataclass(frozen=True)
class LeaseView:
    id: str
    name: str
    user_id: str
    project_id: str
    start_date: dt.datetime
    end_date: dt.datetime
    before_end_date: dt.datetime | None
    status: str
    status_reason: str | None
    degraded: bool
    created_at: dt.datetime
    updated_at: dt.datetime | None
    reservations: list[ReservationView] = field(default_factory=list)
    events: list[EventView] = field(default_factory=list)
    # Offsets before the end of the extra before-end notices ("24h", "90m"), largest first.
    before_end_notifications: list[str] = field(default_factory=list)


def resource_class_of(reservation_id: str) -> str:
    """The custom resource class that carries a reservation's slots."""
    return RESOURCE_CLASS_PREFIX + reservation_id.upper().replace("-", "_")


def reservation_flavor_name(reservation_id: str) -> str:
    return f"reservation:{reservation_id}"


# Validation of a create body.

def _field(index: int | None, name: str) -> str:
    # Without an index the fields are a search's query parameters, named as they are.
    return name if index is None else f"reservations[{index}].{name}"


def _invalid(field_name: str, problem: str) -> BadRequest:
    return BadRequest(f"Invalid input for field '{field_name}': {problem}")


def _integer(spec: Mapping[str, Any], index: int | None, name: str, lowest: int) -> int:
    """A required integer of a reservation; digit strings are accepted, as Blazar accepts them."""
    if name not in spec or spec[name] is None:
        raise BadRequest(f"Missing parameter {_field(index, name)}")
    value = spec[name]
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(_field(index, name), f"{value!r} is not an integer.")
    if not lowest <= value <= MAX_INT:
        raise _invalid(_field(index, name), f"{value} is not between {lowest} and {MAX_INT}.")
    return value


def _affinity(spec: Mapping[str, Any], index: int | None) -> bool | None:
    """true, false or none: JSON's, or the strings "True", "False", "None" the client sends."""
    value = spec.get("affinity")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _AFFINITY:
        return _AFFINITY[value.strip().lower()]
    raise _invalid(_field(index, "affinity"), f"{value!r} is not one of True, False or None.")


def _filter_text(spec: Mapping[str, Any], index: int | None, name: str) -> str:
    """A filter as the JSON text it is stored and shown as ("" for none)."""
    value = spec.get(name)
    if value is None:
        return ""
    if isinstance(value, list):
        return json.dumps(value)
    if not isinstance(value, str):
        raise _invalid(_field(index, name), f"give the filter as a JSON string like '[\">=\", \"$vcpus\", \"2\"]', "
                                            f"not {type(value).__name__}.")
    return value


@dataclass
class _Request:
    """One reservation of a create body, checked, with what the decision needs."""

    index: int | None
    row: Reservation
    predicate: availability.HostPredicate
    slot: dict[str, int] = field(default_factory=dict)


def _physical(spec: Mapping[str, Any], index: int | None, row: Reservation) -> _Request:
    row.min = _integer(spec, index, "min", 1)
    row.max = _integer(spec, index, "max", 1)
    if row.max < row.min:
        raise _invalid(_field(index, "max"), f"max ({row.max}) must be at least min ({row.min}).")
    row.hypervisor_properties = _filter_text(spec, index, "hypervisor_properties")
    row.resource_properties = _filter_text(spec, index, "resource_properties")
    before_end = spec.get("before_end") or ""
    if before_end not in BEFORE_END_ACTIONS:
        raise _invalid(_field(index, "before_end"), f"{before_end!r} is not one of default or snapshot.")
    row.before_end = before_end
    predicate = combine([parse_filter(row.hypervisor_properties, "hypervisor_properties"),
                         parse_filter(row.resource_properties, "resource_properties")])
    return _Request(index, row, predicate)


def _instance(session: Session, spec: Mapping[str, Any], index: int | None, row: Reservation,
              project_id: str) -> _Request:
    row.amount = _integer(spec, index, "amount", 1)
    row.affinity = _affinity(spec, index)
    row.resource_properties = _filter_text(spec, index, "resource_properties")
    if row.resource_type == FLAVOR_INSTANCE:
        flavor_id = spec.get("flavor_id")
        if not isinstance(flavor_id, str) or not flavor_id:
            raise BadRequest(f"Missing parameter {_field(index, 'flavor_id')}")
        try:
            flavor = flavors.get_flavor(session, flavor_id, flavors.Reader(project_id))
        except NotFound:
            raise _invalid(_field(index, "flavor_id"), f"flavor {flavor_id} does not exist or is not available "
                                                       "to your project.") from None
        row.flavor_id = flavor.id
        row.vcpus, row.memory_mb, row.disk_gb = flavor.vcpus, flavor.ram, flavor.disk
    else:
        row.vcpus = _integer(spec, index, "vcpus", 1)
        row.memory_mb = _integer(spec, index, "memory_mb", 1)
        row.disk_gb = _integer(spec, index, "disk_gb", 0)
    predicate = parse_filter(row.resource_properties, "resource_properties")
    slot = {"vcpus": row.vcpus, "memory_mb": row.memory_mb, "disk_gb": row.disk_gb}
    return _Request(index, row, predicate, slot)


def _requests(session: Session, specs: object, project_id: str) -> list[_Request]:
    if specs is None:
        specs = []
    if not isinstance(specs, list):
        raise _invalid("reservations", "give a list of reservations.")
    if len(specs) > MAX_RESERVATIONS:
        raise _invalid("reservations",
                       f"{len(specs)} reservations, at most {MAX_RESERVATIONS} are allowed in one lease.")
    requests = []
    for index, spec in enumerate(specs):
        if not isinstance(spec, Mapping):
            raise _invalid(f"reservations[{index}]", "a reservation is an object.")
        resource_type = spec.get("resource_type")
        if resource_type is None:
            raise BadRequest(f"Missing parameter {_field(index, 'resource_type')}")
        if resource_type not in RESOURCE_TYPES:
            raise _invalid(_field(index, "resource_type"),
                           f"{resource_type!r} is not one of {', '.join(RESOURCE_TYPES)}.")
        row = Reservation(id=str(uuidlib.uuid4()), resource_type=resource_type, status="pending",
                          missing_resources=False, resources_changed=False)
        if resource_type == PHYSICAL_HOST:
            requests.append(_physical(spec, index, row))
        else:
            requests.append(_instance(session, spec, index, row, project_id))
    return requests


def _name(value: object) -> str:
    if value is None:
        raise BadRequest("Missing parameter name")
    if not isinstance(value, str) or not value.strip():
        raise _invalid("name", "give the lease a non-empty name.")
    if len(value) > MAX_NAME:
        raise _invalid("name", f"{len(value)} characters, at most {MAX_NAME} are allowed.")
    return value


# The snapshot the decisions read.

def _booking_amounts(resource_type: str, slots: int, sizes: Mapping[str, Any]) -> dict[str, int]:
    """What `slots` slots of a reservation with these per-slot sizes hold (nothing counted for a
    whole host, which is exclusive instead)."""
    if resource_type == PHYSICAL_HOST:
        return {}
    return {name: slots * (sizes[name] or 0) for name in ("vcpus", "memory_mb", "disk_gb")}


def _offered(session: Session, exclude_lease_id: str | None = None, *, lock: bool = True) -> dict[int, dict[str, int]]:
    """{host id: capacity} of the reservable hosts that are up. Locks the host rows (PostgreSQL)
    so that no other writer books them before this transaction ends (unless `lock` is False, for
    a reader that books nothing); with `exclude_lease_id`,
    the rows of the hosts that lease books too, even those no longer reservable or up, in the
    same id-ordered statement, because an update of an active lease changes their providers."""
    offered = and_(Host.reservable.is_(True), Host.status == "up")
    locked = offered
    if exclude_lease_id is not None:
        booked = select(ReservationBooking.host_id).where(ReservationBooking.lease_id == exclude_lease_id)
        locked = or_(offered, Host.id.in_(booked))
    stmt = (select(Host.id, Host.reservable, Host.status, Host.vcpus, Host.memory_mb, Host.local_gb)
            .where(locked).order_by(Host.id))
    if lock:
        stmt = stmt.with_for_update()
    # Plain tuples, not ORM objects: a cluster's worth of hosts is read on every create.
    return {host_id: {"vcpus": vcpus, "memory_mb": memory_mb, "disk_gb": local_gb}
            for host_id, reservable, status, vcpus, memory_mb, local_gb in session.execute(stmt)
            if reservable and status == "up"}


def host_attributes(session: Session, selected: ColumnElement[bool],
                    keep: Container[int]) -> dict[int, dict[str, object]]:
    """What filters read of the hosts `selected` picks that are in `keep`: their fields, then
    their extra capabilities."""
    attributes: dict[int, dict[str, object]] = {}
    for row in session.execute(select(Host.id, *(getattr(Host, name) for name in _HOST_ATTRIBUTES)).where(selected)):
        if row[0] in keep:
            attributes[row[0]] = dict(zip(_HOST_ATTRIBUTES, row[1:], strict=True))
    for host_id, name, value in session.execute(
            select(ExtraCapability.host_id, ExtraCapability.name, ExtraCapability.value)
            .join(Host, Host.id == ExtraCapability.host_id).where(selected)):
        if host_id in attributes:
            attributes[host_id].setdefault(name, value)
    return attributes


def _attributes_of(session: Session, ids: Sequence[int]) -> dict[int, dict[str, object]]:
    return host_attributes(session, Host.id.in_(ids), set(ids)) if ids else {}


def _overlap(window: availability.Window, cleaning_time: dt.timedelta, exclude_lease_id: str | None) -> list[Any]:
    """Conditions for the bookings overlapping `window` (widened by `cleaning_time`) of leases
    that are not terminated."""
    opens = window.start - cleaning_time
    # Only a terminated lease that ends after the window opens could overlap it; there are few.
    terminated = select(Lease.id).where(Lease.status == TERMINATED, Lease.end_date > opens)
    conditions = [ReservationBooking.start_date < window.end + cleaning_time, ReservationBooking.end_date > opens,
                  ReservationBooking.lease_id.not_in(terminated)]
    if exclude_lease_id is not None:
        conditions.append(ReservationBooking.lease_id != exclude_lease_id)
    return conditions


def _busy(session: Session, window: availability.Window, cleaning_time: dt.timedelta) -> set[int]:
    """The hosts that have a booking overlapping `window`."""
    return set(session.scalars(select(ReservationBooking.host_id).distinct()
                               .where(*_overlap(window, cleaning_time, None))))


def _bookings(session: Session, window: availability.Window, cleaning_time: dt.timedelta,
              exclude_lease_id: str | None) -> dict[int, list[availability.Booking]]:
    """The bookings overlapping `window`, by host."""
    # A busy window has thousands of bookings: they are read from the copies the booking rows
    # carry, as plain rows on the session's connection (ORM rows cost more than the query), and
    # amounts are built once per distinct size.
    stmt = (select(ReservationBooking.host_id, ReservationBooking.start_date, ReservationBooking.end_date,
                   ReservationBooking.exclusive, ReservationBooking.vcpus, ReservationBooking.memory_mb,
                   ReservationBooking.disk_gb)
            .where(*_overlap(window, cleaning_time, exclude_lease_id)))
    found: dict[int, list[availability.Booking]] = {}
    amounts: dict[tuple[int, int, int], dict[str, int]] = {}
    whole_host: dict[str, int] = {}
    for host_id, start, end, exclusive, vcpus, memory_mb, disk_gb in session.connection().execute(stmt).all():
        if exclusive:
            held = whole_host
        else:
            size = (vcpus, memory_mb, disk_gb)
            held = amounts.get(size) or amounts.setdefault(
                size, {"vcpus": vcpus, "memory_mb": memory_mb, "disk_gb": disk_gb})
        found.setdefault(host_id, []).append(availability.Booking(start, end, held, exclusive=exclusive))
    return found


def _booking_rows(lease: Lease, row: Reservation, chosen: Mapping[int, int]) -> list[ReservationBooking]:
    """The bookings of reservation `row` of `lease` on its chosen hosts ({host id: slots}), each
    with the copy of the lease's window and of what it holds that availability checks read."""
    exclusive = row.resource_type == PHYSICAL_HOST
    sizes = {"vcpus": row.vcpus, "memory_mb": row.memory_mb, "disk_gb": row.disk_gb}
    bookings = []
    for host_id, slots in sorted(chosen.items()):
        held = _booking_amounts(row.resource_type, slots, sizes)
        bookings.append(ReservationBooking(
            reservation_id=row.id, host_id=host_id, slots=slots, lease_id=lease.id, start_date=lease.start_date,
            end_date=lease.end_date, vcpus=held.get("vcpus", 0), memory_mb=held.get("memory_mb", 0),
            disk_gb=held.get("disk_gb", 0), exclusive=exclusive))
    return bookings


_NO_ATTRIBUTES: dict[str, object] = {}


def _hosts(capacity: Mapping[int, dict[str, int]], ids: Iterable[int],
           bookings: Mapping[int, list[availability.Booking]],
           attributes: Mapping[int, dict[str, object]]) -> dict[int, availability.Host]:
    return {host_id: availability.Host(host_id, capacity[host_id], bookings.get(host_id, []),
                                       attributes.get(host_id, _NO_ATTRIBUTES)) for host_id in ids}


def _snapshot(session: Session, window: availability.Window, exclude_lease_id: str | None = None,
              cleaning_time: dt.timedelta = availability.NO_CLEANING,
              with_attributes: bool = True) -> dict[int, availability.Host]:
    """The reservable hosts that are up (rows locked, see `_offered`), with their capacity,
    attributes and the bookings of other leases overlapping `window` (all but
    `exclude_lease_id`'s, which an update re-decides). With `cleaning_time`, bookings that end
    less than that before the window or start less than that after it count too. Without
    `with_attributes` (no filter will read them) the hosts' fields and extra capabilities are
    left out."""
    capacity = _offered(session, exclude_lease_id)
    ids = list(capacity)
    attributes = _attributes_of(session, ids) if with_attributes else {}
    bookings = _bookings(session, window, cleaning_time, exclude_lease_id) if ids else {}
    return _hosts(capacity, ids, bookings, attributes)


def _physical_alone(session: Session, request: _Request, window: availability.Window,
                    cleaning_time: dt.timedelta, with_attributes: bool) -> dict[int, int]:
    """The decision `_choose` makes over the whole snapshot, for a lease whose one reservation is
    physical:host, reading far less: such a reservation only ever takes hosts without an
    overlapping booking, so only which hosts have one is read, not the bookings. Same answer,
    same message."""
    capacity = _offered(session)
    ids = list(capacity)
    attributes = _attributes_of(session, ids) if with_attributes else {}
    busy = _busy(session, window, cleaning_time) if ids else set()
    free = [host_id for host_id in ids if host_id not in busy]
    return _choose(request, _hosts(capacity, free, {}, attributes), window, cleaning_time)


def _book(hosts: dict[int, availability.Host], host_id: int, booking: availability.Booking) -> None:
    """Add a booking this transaction made to the snapshot, so the lease's later reservations see it."""
    host = hosts[host_id]
    hosts[host_id] = availability.Host(host.id, host.capacity, [*host.bookings, booking], host.attributes)


def _shortage(request: _Request, shortage: availability.Shortage) -> NotEnoughResources:
    return NotEnoughResources(
        f"Not enough resources for reservation {request.index} ({request.row.resource_type}): {shortage.reason}. "
        "Ask for less, loosen the filters, or choose another window.")


def _choose(request: _Request, hosts: dict[int, availability.Host], window: availability.Window,
            cleaning_time: dt.timedelta) -> dict[int, int]:
    """{host id: slots} for one reservation (slots 1 for a whole host), or NotEnoughResources."""
    row = request.row
    if row.resource_type == PHYSICAL_HOST:
        chosen = availability.choose_hosts_for_physical(hosts.values(), row.min or 1, row.max or 1, window,
                                                        request.predicate, cleaning_time=cleaning_time)
        if isinstance(chosen, availability.Shortage):
            raise _shortage(request, chosen)
        return {int(host_id): 1 for host_id in chosen}
    placement = availability.choose_slots_for_instances(hosts.values(), row.amount or 1, request.slot,
                                                        row.affinity, window, request.predicate,
                                                        cleaning_time=cleaning_time)
    if isinstance(placement, availability.Shortage):
        raise _shortage(request, placement)
    return {int(host_id): slots for host_id, slots in placement.items()}


# Instance reservations in Placement and flavors.

def _create_reservation_flavor(session: Session, placement: PlacementBackend, row: Reservation,
                               project_id: str) -> None:
    row.resource_class = resource_class_of(row.id)
    placement.ensure_resource_class(row.resource_class)
    flavor = flavors.create_flavor(
        session, name=reservation_flavor_name(row.id), vcpus=row.vcpus or 1, ram=row.memory_mb or 1,
        disk=row.disk_gb or 0, is_public=False, extra_specs={f"resources:{row.resource_class}": "1"},
        flavor_id=row.id, projects=[project_id])
    row.reservation_flavor_id = flavor.id


def _remove_reservation_flavor(session: Session, placement: PlacementBackend, row: Reservation) -> None:
    if row.reservation_flavor_id:
        try:
            flavors.delete_flavor(session, row.reservation_flavor_id)
        except NotFound:
            pass
    if row.resource_class:
        try:
            placement.delete_resource_class(row.resource_class)
        except NotFound:
            pass
        except Conflict:
            # Delete releases started leases first, so only inventory left by a release that could not
            # finish still carries the class: the class stays with it rather than failing the delete.
            pass


# Operations.

def create_lease(session: Session, context: RequestContext, body: Mapping[str, Any], *,
                 now: dt.datetime | None = None, placement: PlacementBackend | None = None,
                 rules: LeaseRules = DEFAULT_RULES) -> LeaseView:
    """Create a PENDING lease for the caller's project with its reservations booked, or raise:
    BadRequest for a mistake in `body` (Blazar's messages), NotEnoughResources when capacity is
    short over the window, Conflict when the project has a lease of that name."""
    now = now or utcnow()
    placement = placement or EmbeddedPlacement(session)
    name = _name(body.get("name"))
    start, end = validate_window(body.get("start_date"), body.get("end_date"), now)
    before_end = parse_before_end(body.get("before_end_date"), start, end, now)
    offsets = notices.parse_offsets(body.get(notices.FIELD))
    requests = _requests(session, body.get("reservations"), context.project_id)
    taken = session.scalar(select(Lease.id).where(Lease.project_id == context.project_id, Lease.name == name))
    if taken is not None:
        raise Conflict(f"A lease named {name} already exists in your project ({taken}); choose another name.")

    lease = Lease(id=str(uuidlib.uuid4()), name=name, user_id=context.user_id, project_id=context.project_id,
                  start_date=start, end_date=end, before_end_date=before_end, status=PENDING, degraded=False,
                  before_end_notices=notices.stored(offsets))
    window = availability.Window(start, end)
    filtered = any(not request.predicate.is_empty for request in requests)
    decisions = []
    if len(requests) == 1 and requests[0].row.resource_type == PHYSICAL_HOST:
        decisions.append((requests[0], _physical_alone(session, requests[0], window, rules.cleaning_time, filtered)))
    elif requests:
        # Several reservations share one snapshot: each sees what the ones before it took.
        hosts = _snapshot(session, window, cleaning_time=rules.cleaning_time, with_attributes=filtered)
        for request in requests:
            chosen = _choose(request, hosts, window, rules.cleaning_time)
            for host_id, slots in chosen.items():
                _book(hosts, host_id, availability.Booking(
                    start, end, _booking_amounts(request.row.resource_type, slots, request.slot),
                    exclusive=request.row.resource_type == PHYSICAL_HOST, reservation_id=request.row.id))
            decisions.append((request, chosen))

    try:
        session.add(lease)
        session.flush()
        for request, chosen in decisions:
            row = request.row
            row.lease_id = lease.id
            session.add(row)
            session.flush()
            session.add_all(_booking_rows(lease, row, chosen))
            if row.resource_type != PHYSICAL_HOST:
                _create_reservation_flavor(session, placement, row, context.project_id)
        for event_type, moment in _event_times(start, end, before_end, rules.minutes_before_end):
            session.add(Event(id=str(uuidlib.uuid4()), lease_id=lease.id, event_type=event_type, time=moment,
                              status=UNDONE, attempts=0))
        session.flush()
    except IntegrityError:
        # Only a concurrent create of the same name in the same project gets here.
        raise Conflict(f"A lease named {name} was created in your project by another request at the same "
                       "time; choose another name.") from None
    enforcement.check_lease(session, rules.usage, lease, now=now)
    history.record(session, lease, history.CREATED,
                   f"Lease {name} created for {describe_date(start)} to {describe_date(end)}.",
                   {"reservations": [request.row.id for request, _ in decisions]})
    return _views(session, [lease])[0]


def _event_times(start: dt.datetime, end: dt.datetime, before_end: dt.datetime | None,
                 minutes_before_end: int) -> list[tuple[str, dt.datetime]]:
    times = [(START_LEASE, start)]
    moment = before_end_time(start, end, before_end, minutes_before_end)
    # A lease shorter than the warning gets none, rather than one at its very start.
    if moment is not None and moment > start:
        times.append((BEFORE_END_LEASE, moment))
    times.append((END_LEASE, end))
    return times


def _lease(session: Session, lease_id: str, *, lock: bool = False) -> Lease:
    stmt = select(Lease).where(Lease.id == lease_id)
    if lock:
        stmt = stmt.with_for_update()
    lease = session.scalar(stmt)
    if lease is None:
        raise NotFound(f"Lease {lease_id} not found.")
    return lease


def lease_project(session: Session, lease_id: str) -> str:
    """The project a lease belongs to (404 when there is no such lease), for authorization."""
    return _lease(session, lease_id).project_id


def get_lease(session: Session, lease_id: str) -> LeaseView:
    """The lease with its reservations and events (404 when there is none)."""
    return _views(session, [_lease(session, lease_id)])[0]


def list_leases(session: Session, project_id: str | None = None) -> list[LeaseView]:
    """The leases of one project, or of every project when `project_id` is None, oldest first."""
    stmt = select(Lease).order_by(Lease.created_at, Lease.id)
    if project_id is not None:
        stmt = stmt.where(Lease.project_id == project_id)
    return _views(session, list(session.scalars(stmt)))


def delete_lease(session: Session, lease_id: str, placement: PlacementBackend | None = None, *,
                 now: dt.datetime | None = None) -> None:
    """Delete a lease, its reservations' bookings, classes and flavors, and its events; an ACTIVE
    lease (or one an event left in ERROR) first gives back what its start took, as its end would:
    inventory, classes and flavors go, hosts return to the freepool. 409 while a scheduler event is
    changing the lease (STARTING, TERMINATING, or an event claimed and running)."""
    now = now or utcnow()
    placement = placement or EmbeddedPlacement(session)
    # Events, then the lease, then its hosts: the order updates and the scheduler lock them in,
    # so concurrent requests and events queue rather than deadlock.
    events = list(session.scalars(select(Event).where(Event.lease_id == lease_id).order_by(Event.id)
                                  .with_for_update()))
    lease = _lease(session, lease_id, lock=True)
    running = [event.event_type for event in events if event.status == IN_PROGRESS
               and event.claimed_until is not None and as_utc(event.claimed_until) > as_utc(now)]
    if lease.status not in DELETABLE or running:
        doing = f"running {', '.join(running)}" if running else lease.status
        raise Conflict(f"Lease {lease.id} is {doing}: it cannot be deleted until that finishes. "
                       "Retry in a few seconds.")
    rows = list(session.scalars(select(Reservation).where(Reservation.lease_id == lease.id)
                                .order_by(Reservation.id)))
    if lease.status in (ACTIVE, LEASE_ERROR):
        # An ERROR lease may hold part of what a start or end left behind; releasing is safe on
        # reservations that never started.
        lifecycle.lock_hosts(session, lease.id)
        lifecycle.release_reservations(session, rows, placement)
    ids = [row.id for row in rows]
    if ids:
        session.execute(delete(ReservationBooking).where(ReservationBooking.reservation_id.in_(ids)))
    for row in rows:
        _remove_reservation_flavor(session, placement, row)
    session.execute(delete(Event).where(Event.lease_id == lease.id))
    session.execute(delete(Reservation).where(Reservation.lease_id == lease.id))
    history.record(session, lease, history.DELETED, f"Lease {lease.name} deleted while {lease.status}.")
    session.delete(lease)
    session.flush()


# Views.

def _reservation_fields(row: Reservation) -> dict[str, Any]:
    if row.resource_type == PHYSICAL_HOST:
        # The aggregate its hosts join while the lease is active (owned by the lease's project).
        return {"min": row.min, "max": row.max, "hypervisor_properties": row.hypervisor_properties or "",
                "resource_properties": row.resource_properties or "", "before_end": row.before_end or "",
                "aggregate_id": lifecycle.reservation_aggregate_uuid(row.id)}
    return {"vcpus": row.vcpus, "memory_mb": row.memory_mb, "disk_gb": row.disk_gb, "amount": row.amount,
            "affinity": row.affinity, "resource_properties": row.resource_properties or "",
            # The flavor to boot with: the reservation's own; flavor:instance also names the one it copied.
            "flavor_id": row.flavor_id if row.resource_type == FLAVOR_INSTANCE else row.reservation_flavor_id,
            "reservation_flavor_id": row.reservation_flavor_id, "resource_class": row.resource_class}


def _views(session: Session, leases: Sequence[Lease]) -> list[LeaseView]:
    ids = [lease.id for lease in leases]
    reservations: dict[str, list[ReservationView]] = {}
    events: dict[str, list[EventView]] = {}
    if ids:
        for row in session.scalars(select(Reservation).where(Reservation.lease_id.in_(ids))
                                   .order_by(Reservation.created_at, Reservation.id)):
            reservations.setdefault(row.lease_id, []).append(ReservationView(
                row.id, row.lease_id, row.resource_type, row.status, row.missing_resources, row.resources_changed,
                _reservation_fields(row), row.created_at, row.updated_at))
        for event in session.scalars(select(Event).where(Event.lease_id.in_(ids)).order_by(Event.time, Event.id)):
            events.setdefault(event.lease_id, []).append(EventView(
                event.id, event.lease_id, event.event_type, event.time, event.status))
    return [LeaseView(lease.id, lease.name, lease.user_id, lease.project_id, lease.start_date, lease.end_date,
                      lease.before_end_date, lease.status, lease.status_reason, lease.degraded, lease.created_at,
                      lease.updated_at, reservations.get(lease.id, []), events.get(lease.id, []),
                      [notices.describe_offset(m) for m in notices.offsets_of(lease)])
            for lease in leases]


# What the hosts domain asks: which reservations hold a host.

def host_reservations(session: Session, host_ids: Sequence[int], *, ending_after: dt.datetime,
                      lease_id: str | None = None,
                      reservation_id: str | None = None) -> Mapping[int, Sequence[HostReservation]]:
    """The reservations of leases that hold any of `host_ids` and end after `ending_after`
    (terminated leases hold nothing), by host id."""
    found: dict[int, list[HostReservation]] = {}
    if not host_ids:
        return found
    stmt = (select(ReservationBooking.host_id, Reservation.id, Lease.id, Lease.start_date, Lease.end_date)
            .join(Reservation, Reservation.id == ReservationBooking.reservation_id)
            .join(Lease, Lease.id == Reservation.lease_id)
            .where(ReservationBooking.host_id.in_(list(host_ids)), Lease.end_date > ending_after,
                   Lease.status != TERMINATED))
    if lease_id is not None:
        stmt = stmt.where(Lease.id == lease_id)
    if reservation_id is not None:
        stmt = stmt.where(Reservation.id == reservation_id)
    for host_id, res_id, lease, start, end in session.execute(stmt):
        found.setdefault(host_id, []).append(HostReservation(res_id, lease, start, end))
    return found


register_source("leases", host_reservations)
