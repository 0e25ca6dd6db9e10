"""The host-passes check: which of the hosts a compute scheduler is filtering may take an instance.

This is what blazar-nova's BlazarFilter decides, in this service's inventory terms:

- A request with the `reservation` scheduler hint goes only to hosts in that physical:host
  reservation's aggregate, and only for the project that owns the aggregate.
- A request whose flavor names a reservation class (`resources:CUSTOM_RESERVATION_<ID>=1`, or the
  legacy `aggregate_instance_extra_specs:reservation=<id>`) goes only to hosts whose reservation
  provider offers that class, and only for the reservation's project.
- Any other request stays off reserved hosts (the freepool and every reservation aggregate) and
  may go anywhere else, including compute nodes this service does not know.

Registered hosts that are down or in maintenance never pass. Every answer carries a reason a
person can act on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest
from blazar_lite.filters import MAX_HOSTS
from blazar_lite.hosts.models import Host, HostAggregate
from blazar_lite.hosts.service import FREEPOOL_AGGREGATE_UUID, MAX_INT
from blazar_lite.leases.lifecycle import RESERVATION_ACTIVE, reservation_aggregate_uuid
from blazar_lite.leases.models import ACTIVE, PHYSICAL_HOST, UPDATING, Lease, Reservation, ReservationBooking
from blazar_lite.placement.backend import EmbeddedPlacement, PlacementBackend

MAX_NAME = 255
RESERVATION_HINT = "reservation"
# Blazar's instance reservation flavors carried this spec before reservation classes existed.
LEGACY_RESERVATION_SPEC = "aggregate_instance_extra_specs:reservation"
# Nova's resource extra specs, unnumbered or in a (numbered or named) request group.
_RESOURCE_SPEC = re.compile(r"^resources[A-Za-z0-9_-]*:(CUSTOM_RESERVATION_[A-Z0-9_]+)$")
_DIGITS = re.compile(r"^[0-9]+$")
# A lease being updated keeps its reservations active; every other state has none to offer.
_LEASE_SERVING = (ACTIVE, UPDATING)


@dataclass(frozen=True)
class HostVerdict:
    """Whether `host` (as the caller named it) may take the instance, and why."""

    host: str
    passes: bool
    reason: str


@dataclass(frozen=True)
class _Request:
    """The checked input of one call."""

    names: list[str]
    project_id: str
    hinted_reservation: str | None
    classes: list[str]
    legacy_reservation: str | None


# Validation.

def _check_names(hosts: object) -> list[str]:
    if not isinstance(hosts, list | tuple):
        raise BadRequest(f"Invalid input for field 'hosts': give a list of hypervisor hostnames, not "
                         f"{type(hosts).__name__}.")
    if len(hosts) > MAX_HOSTS:
        raise BadRequest(f"Invalid input for field 'hosts': {len(hosts)} hosts, at most {MAX_HOSTS} are allowed "
                         "per call; split the list.")
    for index, name in enumerate(hosts):
        if not isinstance(name, str) or not name.strip():
            raise BadRequest(f"Invalid input for field 'hosts.{index}': give a hypervisor hostname (a non-empty "
                             f"string), not {name!r}.")
        if len(name) > MAX_NAME:
            raise BadRequest(f"Invalid input for field 'hosts.{index}': {len(name)} characters, at most "
                             f"{MAX_NAME} are allowed.")
    return list(hosts)


def _check_project(project_id: object) -> str:
    if not isinstance(project_id, str) or not project_id.strip() or len(project_id) > MAX_NAME:
        raise BadRequest("Invalid input for field 'project_id': give the id of the project the instance belongs "
                         f"to (a non-empty string of at most {MAX_NAME} characters).")
    return project_id


def _check_hint(hints: object) -> str | None:
    if not isinstance(hints, Mapping):
        raise BadRequest(f"Invalid input for field 'scheduler_hints': give an object of hints, not "
                         f"{type(hints).__name__}.")
    if RESERVATION_HINT not in hints:
        return None
    value = hints[RESERVATION_HINT]
    # Nova keeps every hint as a list of strings; other callers send the bare string.
    if isinstance(value, list | tuple) and len(value) == 1:
        value = value[0]
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"Invalid input for field 'scheduler_hints.{RESERVATION_HINT}': give one reservation id, "
                         f"as a string or a list of one string, not {value!r}.")
    return value.strip()


def _check_specs(extra_specs: object) -> tuple[list[str], str | None]:
    """The reservation classes the flavor asks for, and the reservation its legacy spec names."""
    if not isinstance(extra_specs, Mapping):
        raise BadRequest(f"Invalid input for field 'flavor.extra_specs': give an object of strings, not "
                         f"{type(extra_specs).__name__}.")
    classes: list[str] = []
    legacy: str | None = None
    for key, value in extra_specs.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise BadRequest(f"Invalid input for field 'flavor.extra_specs': {key!r} must map to a string (as "
                             f"Nova's extra specs do), not {value!r}.")
        match = _RESOURCE_SPEC.match(key)
        if match:
            try:
                amount = int(value)
            except ValueError:
                raise BadRequest(f"Invalid input for field 'flavor.extra_specs.{key}': {value!r} is not an "
                                 "integer amount.") from None
            # Nova reads an amount of 0 as "this resource is not requested".
            if amount > 0 and match.group(1) not in classes:
                classes.append(match.group(1))
        elif key == LEGACY_RESERVATION_SPEC and value.strip():
            legacy = value.strip()
    return classes, legacy


def _check(hosts: object, project_id: object, extra_specs: object, hints: object) -> _Request:
    names = _check_names(hosts)
    project = _check_project(project_id)
    hinted = _check_hint(hints)
    classes, legacy = _check_specs(extra_specs)
    return _Request(names, project, hinted, classes, legacy)


# The hosts asked about.

def _resolve(session: Session, names: Sequence[str]) -> dict[str, Host]:
    """The registered host each name stands for: by hypervisor hostname, else (digits) by id."""
    wanted = set(names)
    if not wanted:
        return {}
    ids = {int(name) for name in wanted if _DIGITS.match(name) and int(name) <= MAX_INT}
    condition = Host.hypervisor_hostname.in_(wanted)
    if ids:
        condition = or_(condition, Host.id.in_(ids))
    rows = list(session.scalars(select(Host).where(condition)))
    by_name = {host.hypervisor_hostname: host for host in rows}
    by_id = {str(host.id): host for host in rows}
    # A hostname wins over an id: a compute node may well be named with digits only.
    return {name: by_name.get(name) or by_id[name] for name in wanted if name in by_name or name in by_id}


class _Pools:
    """Which of some aggregates each host's root provider is in (one Placement question for all)."""

    def __init__(self, placement: PlacementBackend, aggregate_uuids: Iterable[str]) -> None:
        self._of: dict[str, set[str]] = {}
        for aggregate, providers in placement.aggregate_members(list(aggregate_uuids)).items():
            for provider in providers:
                self._of.setdefault(provider, set()).add(aggregate)

    def of(self, host: Host) -> set[str]:
        return self._of.get(host.resource_provider_uuid, set())


# The rules. Each answers for one host, or for every host at once when the request itself fails.

@dataclass(frozen=True)
class _Refusal:
    """A request that no host can satisfy, with the reason."""

    reason: str


def _reservation(session: Session, reservation_id: str) -> tuple[Reservation, Lease] | None:
    row = session.execute(select(Reservation, Lease).join(Lease, Lease.id == Reservation.lease_id)
                          .where(Reservation.id == reservation_id)).first()
    return None if row is None else (row[0], row[1])


def _usable(found: tuple[Reservation, Lease] | None, label: str,
           project_id: str) -> tuple[Reservation, Lease] | _Refusal:
    """The reservation and its lease when the project's instances may use it now, else why not."""
    if found is None:
        return _Refusal(f"{label} does not exist (it may have ended and been deleted).")
    reservation, lease = found
    if lease.project_id != project_id:
        return _Refusal(f"{label} belongs to lease {lease.id} of another project, not to project {project_id}.")
    if reservation.status != RESERVATION_ACTIVE or lease.status not in _LEASE_SERVING:
        return _Refusal(f"{label} is not active (reservation {reservation.status}, lease {lease.id} "
                        f"{lease.status}); instances can use it only while its lease is ACTIVE.")
    return found


class _Rule(Protocol):
    def verdict(self, name: str, host: Host | None) -> tuple[bool, str]:
        """Whether the host named `name` (None when it is not registered) passes, and why."""


class _ReservationAggregateRule:
    """A physical:host reservation: the host is in its aggregate, owned by the project."""

    def __init__(self, session: Session, placement: PlacementBackend, reservation_id: str,
                 project_id: str) -> None:
        self.reservation_id = reservation_id
        self.project_id = project_id
        self.aggregate = reservation_aggregate_uuid(reservation_id)
        owner = session.get(HostAggregate, self.aggregate)
        self.owned = owner is not None and owner.project_id == project_id and owner.reservation_id == reservation_id
        self.pools = _Pools(placement, [self.aggregate])

    def verdict(self, name: str, host: Host | None) -> tuple[bool, str]:
        if host is None:
            return False, (f"{name} is not managed by blazar-lite, so it is not in reservation "
                           f"{self.reservation_id}.")
        if self.aggregate not in self.pools.of(host):
            return False, f"{name} is not in reservation {self.reservation_id}."
        if not self.owned:
            return False, (f"{name} is in reservation {self.reservation_id}, but its aggregate is not owned by "
                           f"project {self.project_id}.")
        return True, f"{name} is in reservation {self.reservation_id} of project {self.project_id}."


class _ReservationClassRule:
    """An instance reservation: the host's reservation provider offers the reservation's class."""

    def __init__(self, session: Session, placement: PlacementBackend, reservation: Reservation,
                 hosts: Iterable[Host]) -> None:
        self.reservation_id = reservation.id
        self.resource_class = reservation.resource_class or ""
        ids = {host.id for host in hosts}
        booked = set(session.scalars(select(ReservationBooking.host_id)
                                     .where(ReservationBooking.reservation_id == reservation.id,
                                            ReservationBooking.host_id.in_(ids)))) if ids else set()
        # Start puts the inventory only on booked hosts, so only those need asking Placement about.
        self.slots: dict[int, int] = {}
        for host in hosts:
            if host.id in booked and host.id not in self.slots:
                inventory = placement.inventories(host.reservation_provider_uuid).get(self.resource_class)
                self.slots[host.id] = int(inventory["total"]) if inventory else 0

    def verdict(self, name: str, host: Host | None) -> tuple[bool, str]:
        if host is None:
            return False, (f"{name} is not managed by blazar-lite, so it holds no slots of reservation "
                           f"{self.reservation_id}.")
        slots = self.slots.get(host.id, 0)
        if slots <= 0:
            return False, f"{name} holds no slots of reservation {self.reservation_id} ({self.resource_class})."
        return True, f"{name} offers {slots} slot(s) of reservation {self.reservation_id} ({self.resource_class})."


class _UnreservedRule:
    """No reservation asked for: stay off the freepool and every reservation aggregate."""

    def __init__(self, session: Session, placement: PlacementBackend, project_id: str) -> None:
        self.project_id = project_id
        self.owners = {row.uuid: row for row in session.scalars(select(HostAggregate))}
        self.pools = _Pools(placement, [FREEPOOL_AGGREGATE_UUID, *self.owners])

    def verdict(self, name: str, host: Host | None) -> tuple[bool, str]:
        if host is None:
            return True, f"{name} is not managed by blazar-lite: it is on-demand capacity."
        aggregates = self.pools.of(host)
        reserved = sorted((self.owners[a] for a in aggregates if a in self.owners),
                          key=lambda row: row.reservation_id)
        for owner in reserved:
            if owner.project_id == self.project_id:
                return False, (f"{name} is in reservation {owner.reservation_id} of project {self.project_id}; "
                               f"ask for it with the scheduler hint {RESERVATION_HINT}={owner.reservation_id}.")
        if reserved:
            return False, f"{name} is in reservation {reserved[0].reservation_id} of another project."
        if FREEPOOL_AGGREGATE_UUID in aggregates:
            return False, f"{name} is in the freepool: it is reserved for reservations only."
        # Registered hosts are reservable capacity even when an interrupted start or end left
        # them in no aggregate; unreserved work must not land there.
        return False, (f"{name} is registered for reservations but is in neither the freepool nor a reservation "
                       "aggregate; it takes no unreserved instances.")


def _rules(session: Session, placement: PlacementBackend, request: _Request,
           hosts: Sequence[Host]) -> list[_Rule] | _Refusal:
    """The rules every host must pass, or the refusal that answers for every host."""
    rules: list[_Rule] = []
    if request.hinted_reservation is not None:
        reservation_id = request.hinted_reservation
        label = f"Reservation {reservation_id} (scheduler hint {RESERVATION_HINT})"
        usable = _usable(_reservation(session, reservation_id), label, request.project_id)
        if isinstance(usable, _Refusal):
            return usable
        if usable[0].resource_type != PHYSICAL_HOST:
            return _Refusal(f"{label} is a {usable[0].resource_type} reservation; ask for its flavor "
                            f"(reservation:{reservation_id}) instead of the scheduler hint.")
        rules.append(_ReservationAggregateRule(session, placement, reservation_id, request.project_id))
    asked: list[tuple[str, str | None]] = []
    for resource_class in request.classes:
        found_id = session.scalar(select(Reservation.id).where(Reservation.resource_class == resource_class))
        asked.append((f"The reservation of resource class {resource_class} (flavor extra spec)"
                      if found_id is None else f"Reservation {found_id} (resource class {resource_class})", found_id))
    if request.legacy_reservation is not None:
        asked.append((f"Reservation {request.legacy_reservation} (flavor extra spec {LEGACY_RESERVATION_SPEC})",
                      request.legacy_reservation))
    for label, reservation_id in asked:
        found = None if reservation_id is None else _reservation(session, reservation_id)
        usable = _usable(found, label, request.project_id)
        if isinstance(usable, _Refusal):
            return usable
        reservation = usable[0]
        if reservation.resource_type == PHYSICAL_HOST:
            return _Refusal(f"{label} is a physical:host reservation; ask for it with the scheduler hint "
                            f"{RESERVATION_HINT}={reservation.id} and an ordinary flavor.")
        rules.append(_ReservationClassRule(session, placement, reservation, hosts))
    if not rules:
        rules.append(_UnreservedRule(session, placement, request.project_id))
    return rules


def host_passes(session: Session, hosts: list[str], project_id: str, extra_specs: Mapping[str, str],
                hints: Mapping[str, Any], placement: PlacementBackend | None = None) -> list[HostVerdict]:
    """One verdict per name in `hosts` (hypervisor hostnames, or registered hosts' ids), in order,
    on whether an instance of `project_id` with this flavor's `extra_specs` and these scheduler
    `hints` may be placed there. BadRequest when the input is malformed; never an error for
    unknown hosts or reservations (those are answers)."""
    request = _check(hosts, project_id, extra_specs, hints)
    placement = placement or EmbeddedPlacement(session)
    known = _resolve(session, request.names)
    rules = _rules(session, placement, request, list(known.values()))
    verdicts: list[HostVerdict] = []
    for name in request.names:
        host = known.get(name)
        if isinstance(rules, _Refusal):
            verdicts.append(HostVerdict(name, False, rules.reason))
            continue
        outcomes = [rule.verdict(name, host) for rule in rules]
        failed = [reason for passes, reason in outcomes if not passes]
        if failed:
            verdicts.append(HostVerdict(name, False, failed[0]))
        elif host is not None and host.status != "up":
            state = "in maintenance" if host.status == "maintenance" else host.status
            verdicts.append(HostVerdict(name, False, f"{name} is {state}; it takes no instances until it is up "
                                                     "again."))
        else:
            verdicts.append(HostVerdict(name, True, " ".join(reason for _passes, reason in outcomes)))
    return verdicts
