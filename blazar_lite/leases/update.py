"""Lease update: rename, move or resize the window, change reservations — all of it or none.

An update is one transaction. It locks the lease's events, then the lease (the order in which a
scheduler claims an event and then changes its lease, so the two queue rather than deadlock),
refuses while an event is running, and — when the window or a reservation changes — re-decides
every reservation of the lease over the new window on a snapshot that leaves the lease's own
bookings out, with the hosts it holds tried first. The host rows are locked as a create locks
them. Any refusal raises before the transaction commits, so a refused update changes nothing.

An ACTIVE lease never moves: each reservation either keeps every host (and slot) it holds and
perhaps gains more, or gives some back; and its live Placement side follows: instance slots as
inventory on the reservation providers, whole hosts between the freepool and the reservation's
aggregate.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blazar_lite.db import utcnow
from blazar_lite.exceptions import BadRequest, Conflict, NotEnoughResources
from blazar_lite.flavors import service as flavors
from blazar_lite.hosts.models import Host
from blazar_lite.leases import availability, enforcement, history, lifecycle, notices
from blazar_lite.leases.dates import (
    TERMINATED_LEASE_CHANGE,
    as_utc,
    describe_date,
    parse_before_end,
    validate_window_update,
)
from blazar_lite.leases.models import (
    ACTIVE,
    BEFORE_END_LEASE,
    CREATING,
    DELETING,
    FLAVOR_INSTANCE,
    IN_PROGRESS,
    PHYSICAL_HOST,
    STARTING,
    TERMINATED,
    TERMINATING,
    UNDONE,
    UPDATING,
    Event,
    Lease,
    Reservation,
    ReservationBooking,
)
from blazar_lite.leases.properties import parse_filter
from blazar_lite.leases.service import (
    DEFAULT_RULES,
    LeaseRules,
    LeaseView,
    _affinity,
    _book,
    _booking_amounts,
    _booking_rows,
    _event_times,
    _filter_text,
    _integer,
    _invalid,
    _lease,
    _name,
    _physical,
    _Request,
    _snapshot,
    _views,
)
from blazar_lite.placement.backend import EmbeddedPlacement, PlacementBackend

# A scheduler event is changing the lease in these states; an update waits for it to finish.
TRANSITIONAL = (CREATING, STARTING, TERMINATING, UPDATING, DELETING)
# What an update may change on each reservation type (besides naming it by `id`).
CHANGEABLE = {
    PHYSICAL_HOST: ("min", "max", "hypervisor_properties", "resource_properties", "before_end"),
    "virtual:instance": ("amount", "vcpus", "memory_mb", "disk_gb", "affinity", "resource_properties"),
    FLAVOR_INSTANCE: ("amount", "affinity", "resource_properties"),
}
_COLUMNS = ("min", "max", "hypervisor_properties", "resource_properties", "before_end", "vcpus", "memory_mb",
            "disk_gb", "amount", "affinity")
_LEASE_FIELDS = ("name", "start_date", "end_date", "before_end_date", notices.FIELD, "reservations")

@dataclass
class _Decision:
    request: _Request
    # The persistent reservation; `request.row` is a detached copy carrying the new values.
    row: Reservation
    changed: bool
    held: dict[int, int]
    chosen: dict[int, int] | None = None


def _copy(row: Reservation) -> Reservation:
    """A detached reservation with the same values, for checking changes without touching the row."""
    return Reservation(id=row.id, lease_id=row.lease_id, resource_type=row.resource_type,
                       **{column: getattr(row, column) for column in _COLUMNS})


def _reservation_specs(rows: Sequence[Reservation], specs: object) -> dict[str, tuple[int, Mapping[str, Any]]]:
    """{reservation id: (its index in the body, its changes)}, each change a field its type allows."""
    if specs is None:
        return {}
    if not isinstance(specs, list):
        raise _invalid("reservations", "give a list of reservations, each with its id and the fields to change.")
    by_id = {row.id: row for row in rows}
    found: dict[str, tuple[int, Mapping[str, Any]]] = {}
    for index, spec in enumerate(specs):
        if not isinstance(spec, Mapping):
            raise _invalid(f"reservations[{index}]", "a reservation is an object.")
        reservation_id = spec.get("id")
        if reservation_id is None:
            raise BadRequest(f"Missing parameter reservations[{index}].id")
        row = by_id.get(reservation_id) if isinstance(reservation_id, str) else None
        if row is None:
            raise _invalid(f"reservations[{index}].id", f"{reservation_id!r} is not a reservation of this lease "
                                                        f"(it has {', '.join(by_id) or 'none'}).")
        if reservation_id in found:
            raise _invalid(f"reservations[{index}].id", f"reservation {reservation_id} is named twice.")
        if spec.get("resource_type", row.resource_type) != row.resource_type:
            raise _invalid(f"reservations[{index}].resource_type",
                           f"a reservation's type cannot change ({row.resource_type}); create another lease.")
        allowed = CHANGEABLE[row.resource_type]
        for name in spec:
            if name not in ("id", "resource_type", *allowed):
                raise _invalid(f"reservations[{index}].{name}",
                               f"cannot be changed on a {row.resource_type} reservation; these can: "
                               f"{', '.join(allowed)}.")
        found[reservation_id] = (index, spec)
    return found


def _request(row: Reservation, index: int, changes: Mapping[str, Any]) -> _Request:
    """The reservation as it would be after `changes`, checked like a create checks it."""
    scratch = _copy(row)
    current = {name: getattr(row, name) for name in CHANGEABLE[row.resource_type]}
    spec = {**current, **{name: value for name, value in changes.items() if name in current}}
    if row.resource_type == PHYSICAL_HOST:
        return _physical(spec, index, scratch)
    scratch.amount = _integer(spec, index, "amount", 1)
    scratch.affinity = _affinity(spec, index)
    scratch.resource_properties = _filter_text(spec, index, "resource_properties")
    if row.resource_type != FLAVOR_INSTANCE:
        scratch.vcpus = _integer(spec, index, "vcpus", 1)
        scratch.memory_mb = _integer(spec, index, "memory_mb", 1)
        scratch.disk_gb = _integer(spec, index, "disk_gb", 0)
    slot = {"vcpus": scratch.vcpus or 0, "memory_mb": scratch.memory_mb or 0, "disk_gb": scratch.disk_gb or 0}
    return _Request(index, scratch, parse_filter(scratch.resource_properties, "resource_properties"), slot)


def _held(session: Session, rows: Sequence[Reservation]) -> dict[str, dict[int, int]]:
    held: dict[str, dict[int, int]] = {row.id: {} for row in rows}
    if rows:
        for reservation_id, host_id, slots in session.execute(
                select(ReservationBooking.reservation_id, ReservationBooking.host_id, ReservationBooking.slots)
                .where(ReservationBooking.reservation_id.in_(list(held)))):
            held[reservation_id][host_id] = slots
    return held


def _hostnames(session: Session, host_ids: Sequence[int]) -> str:
    names = dict(session.execute(select(Host.id, Host.hypervisor_hostname).where(Host.id.in_(list(host_ids)))).all())
    return ", ".join(str(names.get(host_id, host_id)) for host_id in sorted(host_ids))


def _shortage(decision: _Decision, shortage: availability.Shortage) -> NotEnoughResources:
    row = decision.request.row
    return NotEnoughResources(
        f"Not enough resources for reservation {row.id} ({row.resource_type}): {shortage.reason}. "
        "The lease is unchanged; ask for less, loosen the filters, or choose other dates.")


def _choose(decision: _Decision, hosts: dict[int, availability.Host], window: availability.Window,
            cleaning_time: dt.timedelta) -> dict[int, int]:
    request, row = decision.request, decision.request.row
    if row.resource_type == PHYSICAL_HOST:
        chosen = availability.choose_hosts_for_physical(hosts.values(), row.min or 1, row.max or 1, window,
                                                        request.predicate, held=decision.held.keys(),
                                                        cleaning_time=cleaning_time)
        if isinstance(chosen, availability.Shortage):
            raise _shortage(decision, chosen)
        return {int(host_id): 1 for host_id in chosen}
    placement = availability.choose_slots_for_instances(hosts.values(), row.amount or 1, request.slot,
                                                        row.affinity, window, request.predicate,
                                                        held=decision.held, cleaning_time=cleaning_time)
    if isinstance(placement, availability.Shortage):
        raise _shortage(decision, placement)
    return {int(host_id): slots for host_id, slots in placement.items()}


def _stays_put(held: Mapping[int, int], chosen: Mapping[int, int]) -> bool:
    """Whether `chosen` only grows `held` in place or only shrinks it in place."""
    grows = all(chosen.get(host_id, 0) >= slots for host_id, slots in held.items())
    shrinks = all(slots <= held.get(host_id, 0) for host_id, slots in chosen.items())
    return grows or shrinks


def _decide(session: Session, lease: Lease, decisions: list[_Decision], window: availability.Window,
            cleaning_time: dt.timedelta) -> None:
    """Choose hosts for every reservation over `window`, or raise with what is short."""
    hosts = _snapshot(session, window, exclude_lease_id=lease.id, cleaning_time=cleaning_time)
    # Unchanged reservations first: they take back what they hold before a grown one looks around.
    for decision in sorted(decisions, key=lambda d: d.changed):
        chosen = _choose(decision, hosts, window, cleaning_time)
        if lease.status == ACTIVE and not _stays_put(decision.held, chosen):
            lost = [host_id for host_id, slots in decision.held.items() if chosen.get(host_id, 0) < slots]
            row = decision.request.row
            raise NotEnoughResources(
                f"Reservation {row.id} ({row.resource_type}) of active lease {lease.id} cannot keep what it holds on "
                f"{_hostnames(session, lost)} between {describe_date(window.start)} and {describe_date(window.end)}: "
                "an active lease never moves. The lease is unchanged; choose other dates or ask for less.")
        request = decision.request
        for host_id, slots in chosen.items():
            _book(hosts, host_id, availability.Booking(
                window.start, window.end, _booking_amounts(request.row.resource_type, slots, request.slot),
                exclusive=request.row.resource_type == PHYSICAL_HOST, reservation_id=request.row.id))
        decision.chosen = chosen


def _follow_live(session: Session, placement: PlacementBackend, lease: Lease, decision: _Decision) -> None:
    """Bring an ACTIVE reservation's Placement side to its new hosts and slots."""
    row, held, chosen = decision.row, decision.held, decision.chosen or {}
    if row.resource_type == PHYSICAL_HOST:
        added = sorted(set(chosen) - set(held))
        released = sorted(set(held) - set(chosen))
        if not added and not released:
            return
        lifecycle.move_active_hosts(session, placement, lease, row, added, released)
        return
    if not row.resource_class:
        return
    providers = dict(session.execute(select(Host.id, Host.reservation_provider_uuid)
                                     .where(Host.id.in_(list(set(held) | set(chosen))))).all())
    for host_id in sorted(set(held) | set(chosen)):
        if held.get(host_id, 0) != chosen.get(host_id, 0) and host_id in providers:
            lifecycle.set_reservation_inventory(placement, providers[host_id], row.resource_class,
                                                chosen.get(host_id, 0))


def _write(session: Session, placement: PlacementBackend, lease: Lease, decision: _Decision) -> bool:
    """Copy the decision onto the reservation, its bookings, its flavor and live inventory; whether
    anything changed."""
    row, scratch = decision.row, decision.request.row
    changed = False
    for column in _COLUMNS:
        if getattr(row, column) != getattr(scratch, column):
            setattr(row, column, getattr(scratch, column))
            changed = True
    sizes = {"vcpus": scratch.vcpus, "ram": scratch.memory_mb, "disk": scratch.disk_gb}
    if changed and row.reservation_flavor_id and row.resource_type != FLAVOR_INSTANCE:
        current = flavors.get_flavor(session, row.reservation_flavor_id)
        if (current.vcpus, current.ram, current.disk) != tuple(sizes.values()):
            flavors.update_flavor(session, row.reservation_flavor_id, **sizes)
    if decision.chosen is not None:
        # Re-decided: the window or some sizes changed, and the bookings carry copies of both,
        # so they are written again even when they stay on the same hosts.
        session.execute(delete(ReservationBooking).where(ReservationBooking.reservation_id == row.id))
        session.add_all(_booking_rows(lease, row, decision.chosen))
        if decision.chosen != decision.held:
            if lease.status == ACTIVE:
                _follow_live(session, placement, lease, decision)
            changed = True
    if changed:
        row.updated_at = utcnow()
    return changed


def _move_events(session: Session, lease: Lease, events: Sequence[Event], minutes_before_end: int) -> bool:
    """Make the events that have not run yet follow the lease's dates; whether any moved."""
    wanted = dict(_event_times(lease.start_date, lease.end_date, lease.before_end_date, minutes_before_end))
    moved = False
    by_type = {event.event_type: event for event in events}
    for event_type, moment in wanted.items():
        event = by_type.get(event_type)
        if event is None:
            # A lease grown past the warning period now gets its warning.
            session.add(Event(id=str(uuidlib.uuid4()), lease_id=lease.id, event_type=event_type, time=moment,
                              status=UNDONE, attempts=0))
            moved = True
        elif event.status == UNDONE and as_utc(event.time) != moment:
            event.time = moment
            moved = True
    stale = by_type.get(BEFORE_END_LEASE)
    if stale is not None and BEFORE_END_LEASE not in wanted and stale.status == UNDONE:
        session.delete(stale)
        moved = True
    return moved


def _before_end(body: Mapping[str, Any], lease: Lease, start: dt.datetime, end: dt.datetime,
                now: dt.datetime) -> dt.datetime | None:
    """The before_end_date after the update: the one given (null or "" for the default), else the
    stored one while it stays inside the window, else the default again."""
    if "before_end_date" in body:
        return parse_before_end(body["before_end_date"], start, end, now)
    stored = lease.before_end_date
    if stored is not None and not as_utc(start) < as_utc(stored) < as_utc(end):
        return None
    return stored


def update_lease(session: Session, lease_id: str, body: Mapping[str, Any], *, now: dt.datetime | None = None,
                 placement: PlacementBackend | None = None,
                 rules: LeaseRules = DEFAULT_RULES) -> LeaseView:
    """Apply a Blazar lease update (any of name, start_date, end_date, before_end_date and
    reservations [{"id", <fields to change>}]) and return the lease, or raise leaving it as it was:
    BadRequest for a mistake or a change its state forbids (a started lease keeps its start, a
    terminated one can only be renamed), NotEnoughResources when the new window or sizes do not
    fit (or an active lease would have to move), Conflict while an event is changing the lease or
    when the new name is taken."""
    now = now or utcnow()
    placement = placement or EmbeddedPlacement(session)
    if not any(name in body for name in _LEASE_FIELDS):
        raise BadRequest(f"No data to update: give any of {', '.join(_LEASE_FIELDS)}.")
    events = list(session.scalars(select(Event).where(Event.lease_id == lease_id).order_by(Event.id)
                                  .with_for_update()))
    lease = _lease(session, lease_id, lock=True)
    previous_end = lease.end_date
    running = [event.event_type for event in events if event.status == IN_PROGRESS]
    if lease.status in TRANSITIONAL or running:
        doing = lease.status if lease.status in TRANSITIONAL else f"running {', '.join(running)}"
        raise Conflict(f"Lease {lease.id} is {doing}: it cannot be updated until that finishes. "
                       "Retry in a few seconds.")
    rows = list(session.scalars(select(Reservation).where(Reservation.lease_id == lease.id)
                                .order_by(Reservation.created_at, Reservation.id)))
    specs = _reservation_specs(rows, body.get("reservations"))

    start, end = validate_window_update(lease.start_date, lease.end_date, body.get("start_date"),
                                        body.get("end_date"), now)
    window_moved = (start, end) != (as_utc(lease.start_date), as_utc(lease.end_date))
    terminated = lease.status == TERMINATED or as_utc(lease.end_date) <= as_utc(now)
    if terminated and (window_moved or specs or "before_end_date" in body):
        raise BadRequest(TERMINATED_LEASE_CHANGE)
    before_end = _before_end(body, lease, start, end, now) if not terminated else lease.before_end_date
    name = _name(body["name"]) if body.get("name") is not None else lease.name

    changed = False
    if name != lease.name:
        taken = session.scalar(select(Lease.id).where(Lease.project_id == lease.project_id, Lease.name == name,
                                                      Lease.id != lease.id))
        if taken is not None:
            raise Conflict(f"A lease named {name} already exists in your project ({taken}); choose another name.")
        lease.name = name
        changed = True

    held = _held(session, rows)
    decisions = []
    for position, row in enumerate(rows):
        index, changes = specs.get(row.id, (position, {}))
        decisions.append(_Decision(_request(row, index, changes), row, row.id in specs, held[row.id]))
    if window_moved or any(decision.changed for decision in decisions):
        _decide(session, lease, decisions, availability.Window(start, end), rules.cleaning_time)

    if window_moved or before_end != lease.before_end_date:
        lease.start_date, lease.end_date, lease.before_end_date = start, end, before_end
        changed = True
    if notices.FIELD in body:
        offsets = notices.stored(notices.parse_offsets(body[notices.FIELD]))
        if offsets != lease.before_end_notices:
            lease.before_end_notices = offsets
            changed = True
    if window_moved:
        notices.end_moved(session, lease, as_utc(now))
    for decision in decisions:
        changed = _write(session, placement, lease, decision) or changed
    if not terminated:
        changed = _move_events(session, lease, events, rules.minutes_before_end) or changed
    if changed:
        lease.updated_at = utcnow()
        enforcement.check_lease(session, rules.usage, lease, previous_end=previous_end, now=now)
        history.record(session, lease, history.UPDATED, f"Lease {lease.name} updated.",
                       {"fields": sorted(field for field in _LEASE_FIELDS if field in body)})
    try:
        session.flush()
    except IntegrityError:
        # Only a concurrent rename to the same name in the same project gets here.
        raise Conflict(f"A lease named {name} was created in your project by another request at the same "
                       "time; choose another name.") from None
    return _views(session, [lease])[0]

