"""Hosts: registration (root provider, reservation provider, freepool), extra capabilities,
operational state, allocations, and the rules for deleting a host.

The freepool is one Placement aggregate for the whole service. Its uuid is derived from a fixed
name (`FREEPOOL_AGGREGATE_UUID`), so every process, every deployment and every scheduler filter
knows it without a lookup and no row has to be seeded (or survive a test's truncation).

A host's root provider is the provider named like the host. Registration creates it with VCPU,
MEMORY_MB and DISK_GB inventory, or adopts it when it exists (`provider_adopted`): then missing
resource fields are taken from its inventory, missing classes are added to it, and disagreeing
ones are refused. Deleting a host deletes what the registration created: always the reservation
provider, the root provider only when it was not adopted (an adopted one just leaves the
freepool).
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blazar_lite.db import utcnow
from blazar_lite.exceptions import BadRequest, Conflict, NotFound
from blazar_lite.hosts import properties
from blazar_lite.hosts.models import (
    MAX_CAPABILITIES,
    MAX_CAPABILITY_NAME,
    MAX_CAPABILITY_VALUE,
    ExtraCapability,
    Host,
)
from blazar_lite.hosts.reservations import HostReservation, reservations_of_hosts
from blazar_lite.placement.backend import EmbeddedPlacement, PlacementBackend
from blazar_lite.placement.providers import ProviderView

FREEPOOL_AGGREGATE_UUID = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, "urn:blazar-lite:aggregate:freepool"))
RESERVATION_PROVIDER_PREFIX = "blazar_"
# Placement names are at most 200 characters, and the reservation provider's name is the
# host's with a prefix.
MAX_HOSTNAME = 200 - len(RESERVATION_PROVIDER_PREFIX)
MAX_INT = 2147483647
STATUSES = ("up", "down", "maintenance")
# The host's resource fields and the inventory class of its root provider that holds each.
RESOURCE_CLASSES = {"vcpus": "VCPU", "memory_mb": "MEMORY_MB", "local_gb": "DISK_GB"}
# The host's own fields (and `name`, its alias at registration): never extra capabilities.
HOST_FIELDS = frozenset({
    "id", "name", "hypervisor_hostname", "service_name", "vcpus", "memory_mb", "local_gb", "cpu_info",
    "hypervisor_type", "hypervisor_version", "availability_zone", "reservable", "status", "created_at",
    "updated_at", "resource_provider_uuid", "reservation_provider_uuid"})


@dataclass(frozen=True)
class HostSpec:
    """What a registration says about a host; resources left None are taken from an existing
    provider of the host's name."""

    name: str
    vcpus: int | None = None
    memory_mb: int | None = None
    local_gb: int | None = None
    service_name: str | None = None
    cpu_info: str | None = None
    hypervisor_type: str | None = None
    hypervisor_version: int | None = None
    availability_zone: str | None = None
    reservable: bool = True
    status: str = "up"
    extra_capabilities: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class HostView:
    id: int
    hypervisor_hostname: str
    service_name: str
    vcpus: int
    memory_mb: int
    local_gb: int
    cpu_info: str | None
    hypervisor_type: str | None
    hypervisor_version: int | None
    availability_zone: str | None
    reservable: bool
    status: str
    resource_provider_uuid: str
    reservation_provider_uuid: str
    provider_adopted: bool
    created_at: dt.datetime
    updated_at: dt.datetime | None
    extra_capabilities: dict[str, str]


def _view(host: Host, capabilities: Mapping[str, str]) -> HostView:
    return HostView(
        id=host.id, hypervisor_hostname=host.hypervisor_hostname, service_name=host.service_name,
        vcpus=host.vcpus, memory_mb=host.memory_mb, local_gb=host.local_gb, cpu_info=host.cpu_info,
        hypervisor_type=host.hypervisor_type, hypervisor_version=host.hypervisor_version,
        availability_zone=host.availability_zone, reservable=host.reservable, status=host.status,
        resource_provider_uuid=host.resource_provider_uuid,
        reservation_provider_uuid=host.reservation_provider_uuid, provider_adopted=host.provider_adopted,
        created_at=host.created_at, updated_at=host.updated_at, extra_capabilities=dict(capabilities))


def _and(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# Validation shared by every caller (the API checks types; these check meaning).

def _check_hostname(name: str) -> None:
    if not name or name != name.strip() or any(ord(c) < 32 for c in name):
        raise BadRequest(f"Invalid host name {name!r}: give a non-empty name without leading or trailing "
                         "spaces or control characters.")
    if len(name) > MAX_HOSTNAME:
        raise BadRequest(f"Invalid host name: {len(name)} characters, at most {MAX_HOSTNAME} are allowed (its "
                         f"reservation provider {RESERVATION_PROVIDER_PREFIX}<name> must fit Placement's 200).")


def _check_status(status: str) -> None:
    if status not in STATUSES:
        raise BadRequest(f"Invalid input for field 'status': {status!r} is not one of {', '.join(STATUSES)}.")


def _check_resource(name: str, value: int | None) -> None:
    lowest = 0 if name == "local_gb" else 1
    if value is not None and not lowest <= value <= MAX_INT:
        raise BadRequest(f"Invalid input for field '{name}': {value} is not between {lowest} and {MAX_INT}.")


def check_capabilities(capabilities: Mapping[str, Any], *, allow_unset: bool) -> dict[str, str | None]:
    """The extra capabilities, checked: at most MAX_CAPABILITIES of them, names of 1 to 64
    characters that are not host fields, string values of at most MAX_CAPABILITY_VALUE characters
    (None, meaning unset, only when `allow_unset`)."""
    if len(capabilities) > MAX_CAPABILITIES:
        raise BadRequest(f"Too many extra capabilities: {len(capabilities)}, at most {MAX_CAPABILITIES} may be set "
                         "in one request.")
    checked: dict[str, str | None] = {}
    for key, value in capabilities.items():
        if not key.strip():
            raise BadRequest("Invalid extra capability: its name is empty.")
        if len(key) > MAX_CAPABILITY_NAME:
            raise BadRequest(f"Extra capability key too long: {key!r} has {len(key)} characters, at most "
                             f"{MAX_CAPABILITY_NAME} are allowed.")
        if key in HOST_FIELDS:
            raise BadRequest(f"Invalid input for field '{key}': it is a host field, not an extra capability, "
                             "and cannot be set here.")
        if value is None and not allow_unset:
            raise BadRequest(f"Invalid extra capability '{key}': give it a string value.")
        if value is not None and not isinstance(value, str):
            raise BadRequest(f"Invalid extra capability '{key}': its value must be a string (e.g. \"{value}\"), "
                             f"not {type(value).__name__}.")
        if value is not None and len(value) > MAX_CAPABILITY_VALUE:
            raise BadRequest(f"Invalid input for field '{key}': {len(value)} characters, at most "
                             f"{MAX_CAPABILITY_VALUE} are allowed in an extra capability's value.")
        checked[key] = value
    return checked


# Reading.

def _host(session: Session, host_id: int, *, lock: bool = False) -> Host:
    """The host row (404 when there is none); `lock` holds it until the transaction ends, so
    concurrent changes to one host queue instead of colliding."""
    host = session.get(Host, host_id, with_for_update=lock)
    if host is None:
        raise NotFound(f"Host {host_id} not found.")
    return host


def _capabilities(session: Session, host_ids: Iterable[int]) -> dict[int, dict[str, str]]:
    found: dict[int, dict[str, str]] = {}
    ids = list(host_ids)
    if not ids:
        return found
    for host_id, name, value in session.execute(
            select(ExtraCapability.host_id, ExtraCapability.name, ExtraCapability.value)
            .where(ExtraCapability.host_id.in_(ids)).order_by(ExtraCapability.name)):
        found.setdefault(host_id, {})[name] = value
    return found


def get_host(session: Session, host_id: int) -> HostView:
    """The host with this id (404 when there is none)."""
    host = _host(session, host_id)
    return _view(host, _capabilities(session, [host.id]).get(host.id, {}))


def list_hosts(session: Session) -> list[HostView]:
    """Every registered host, in order of registration."""
    hosts = list(session.scalars(select(Host).order_by(Host.id)))
    capabilities = _capabilities(session, [h.id for h in hosts])
    return [_view(h, capabilities.get(h.id, {})) for h in hosts]


# Registration.

def _inventory(resources: Mapping[str, int]) -> dict[str, dict[str, int]]:
    # No single allocation can exceed the host; a resource the host lacks (0 disk) has no inventory.
    return {RESOURCE_CLASSES[name]: {"total": amount, "max_unit": amount}
            for name, amount in resources.items() if amount > 0}


def _new_root(placement: PlacementBackend, spec: HostSpec, wanted: dict[str, int | None]) -> tuple[
        ProviderView, dict[str, int]]:
    missing = [name for name, value in wanted.items() if value is None]
    if missing:
        raise BadRequest(f"Give {_and(missing)} for host {spec.name}: no resource provider named {spec.name} "
                         "exists to take them from.")
    resources = {name: value for name, value in wanted.items() if value is not None}
    provider = placement.ensure_provider(spec.name)
    placement.set_inventories(provider.uuid, _inventory(resources))
    return provider, resources


def _adopted_root(placement: PlacementBackend, spec: HostSpec, provider: ProviderView,
                  wanted: dict[str, int | None]) -> dict[str, int]:
    if provider.parent_provider_uuid is not None:
        raise Conflict(f"The resource provider named {spec.name} is a child of provider "
                       f"{provider.parent_provider_uuid}; a host's provider must be a root provider.")
    inventory = placement.inventories(provider.uuid)
    resources: dict[str, int] = {}
    added: dict[str, int] = {}
    missing: list[str] = []
    clashes: list[str] = []
    for name, rc in RESOURCE_CLASSES.items():
        have = inventory[rc]["total"] if rc in inventory else None
        given = wanted[name]
        if given is None and have is None:
            missing.append(name)
        elif given is None:
            resources[name] = have  # type: ignore[assignment]
        elif have is None:
            resources[name] = added[name] = given
        elif have != given:
            clashes.append(f"{name} {given} (its {rc} total is {have})")
        else:
            resources[name] = given
    if clashes:
        raise Conflict(f"Host {spec.name} would adopt the resource provider {provider.uuid} of the same name, whose "
                       f"inventory disagrees: {', '.join(clashes)}. Leave those fields out to take the provider's "
                       "values, or correct them.")
    if missing:
        classes = [RESOURCE_CLASSES[name] for name in missing]
        raise BadRequest(f"Give {_and(missing)} for host {spec.name}: its resource provider {provider.uuid} has "
                         f"no {_and(classes)} inventory to take them from.")
    if _inventory(added):
        placement.set_inventories(provider.uuid, {**inventory, **_inventory(added)})
    return resources


def _reservation_provider(placement: PlacementBackend, hostname: str, root_uuid: str) -> ProviderView:
    name = RESERVATION_PROVIDER_PREFIX + hostname
    existing = placement.provider_by_name(name)
    if existing is None:
        return placement.ensure_provider(name, parent_provider_uuid=root_uuid)
    if existing.parent_provider_uuid != root_uuid:
        raise Conflict(f"A resource provider named {name} ({existing.uuid}) already exists outside host "
                       f"{hostname}'s provider tree; rename or delete it before registering the host.")
    return existing


def join_freepool(placement: PlacementBackend, provider_uuid: str) -> None:
    """Put the provider in the freepool, keeping its other aggregates."""
    aggregates = placement.aggregates(provider_uuid)
    if FREEPOOL_AGGREGATE_UUID not in aggregates:
        placement.set_aggregates(provider_uuid, [*aggregates, FREEPOOL_AGGREGATE_UUID])


def leave_freepool(placement: PlacementBackend, provider_uuid: str) -> None:
    """Take the provider out of the freepool, keeping its other aggregates."""
    aggregates = placement.aggregates(provider_uuid)
    if FREEPOOL_AGGREGATE_UUID in aggregates:
        placement.set_aggregates(provider_uuid, [a for a in aggregates if a != FREEPOOL_AGGREGATE_UUID])


def create_host(session: Session, spec: HostSpec, placement: PlacementBackend | None = None) -> HostView:
    """Register a host: its root provider (created or adopted), its reservation provider
    `blazar_<name>`, its place in the freepool and its extra capabilities. 409 when the host is
    registered already."""
    placement = placement or EmbeddedPlacement(session)
    _check_hostname(spec.name)
    _check_status(spec.status)
    wanted = {name: getattr(spec, name) for name in RESOURCE_CLASSES}
    for name, value in wanted.items():
        _check_resource(name, value)
    capabilities = check_capabilities(spec.extra_capabilities, allow_unset=False)
    existing = session.scalar(select(Host.id).where(Host.hypervisor_hostname == spec.name))
    if existing is not None:
        raise Conflict(f"Host {spec.name} is already registered (id {existing}).")
    try:
        provider = placement.provider_by_name(spec.name)
        if provider is None:
            provider, resources = _new_root(placement, spec, wanted)
            adopted = False
        else:
            resources = _adopted_root(placement, spec, provider, wanted)
            adopted = True
        child = _reservation_provider(placement, spec.name, provider.uuid)
        join_freepool(placement, provider.uuid)
        host = Host(hypervisor_hostname=spec.name, service_name=spec.service_name or spec.name,
                    cpu_info=spec.cpu_info, hypervisor_type=spec.hypervisor_type,
                    hypervisor_version=spec.hypervisor_version, availability_zone=spec.availability_zone,
                    reservable=spec.reservable, status=spec.status, resource_provider_uuid=provider.uuid,
                    reservation_provider_uuid=child.uuid, provider_adopted=adopted, **resources)
        session.add(host)
        session.flush()
        _set_capabilities(session, host.id, capabilities)
    except IntegrityError:
        # Only a concurrent registration of the same name (or provider) gets here.
        raise Conflict(f"Host {spec.name} was registered by another request at the same time; list the hosts "
                       "before retrying.") from None
    return get_host(session, host.id)


# Capabilities and state.

def _set_capabilities(session: Session, host_id: int, capabilities: Mapping[str, str | None]) -> None:
    unset = [name for name, value in capabilities.items() if value is None]
    wanted = {name: value for name, value in capabilities.items() if value is not None}
    if unset:
        session.execute(delete(ExtraCapability).where(ExtraCapability.host_id == host_id,
                                                      ExtraCapability.name.in_(unset)))
    if wanted:
        current = {c.name: c for c in session.scalars(
            select(ExtraCapability).where(ExtraCapability.host_id == host_id,
                                          ExtraCapability.name.in_(list(wanted))))}
        for name, value in wanted.items():
            if name in current:
                current[name].value = value
            else:
                session.add(ExtraCapability(host_id=host_id, name=name, value=value))
        properties.ensure_properties(session, wanted)
    session.flush()


def update_host(session: Session, host_id: int, *, capabilities: Mapping[str, Any] | None = None,
                reservable: bool | None = None, status: str | None = None) -> HostView:
    """Set extra capabilities (None unsets one; unsetting an absent one is harmless), and the
    host's reservable flag and operational status."""
    host = _host(session, host_id, lock=True)
    checked = check_capabilities(capabilities or {}, allow_unset=True)
    if not checked and reservable is None and status is None:
        raise BadRequest("No data to update: give extra capabilities to set (null unsets one), reservable or "
                         "status.")
    if status is not None:
        _check_status(status)
        host.status = status
    if reservable is not None:
        host.reservable = reservable
    _set_capabilities(session, host.id, checked)
    # A capability change is a change of the host, though no column of its row moves.
    host.updated_at = utcnow()
    session.flush()
    return get_host(session, host.id)


# Deletion.

def _provider_exists(placement: PlacementBackend, uuid: str) -> bool:
    try:
        placement.provider(uuid)
    except NotFound:
        return False
    return True


def delete_host(session: Session, host_id: int, placement: PlacementBackend | None = None,
                now: dt.datetime | None = None) -> None:
    """Unregister a host, removing what its registration created. 409 while a current or future
    reservation uses it, or while its providers hold allocations."""
    placement = placement or EmbeddedPlacement(session)
    host = _host(session, host_id, lock=True)
    held = reservations_of_hosts(session, [host.id], ending_after=now or utcnow())[host.id]
    if held:
        shown = ", ".join(r.id for r in held[:5]) + (", ..." if len(held) > 5 else "")
        last = max(r.end_date for r in held)
        raise Conflict(f"Host {host.hypervisor_hostname} cannot be deleted: {len(held)} current or future "
                       f"reservation(s) use it ({shown}), the last until {last:%Y-%m-%d %H:%M}. Delete those "
                       "leases or wait until they end.")
    owned = [("reservation provider", host.reservation_provider_uuid)]
    if not host.provider_adopted:
        owned.append(("resource provider", host.resource_provider_uuid))
    owned = [(label, uuid) for label, uuid in owned if _provider_exists(placement, uuid)]
    for label, uuid in owned:
        used = {rc: amount for rc, amount in sorted(placement.usages(uuid).items()) if amount}
        if used:
            amounts = ", ".join(f"{rc}: {amount}" for rc, amount in used.items())
            raise Conflict(f"Host {host.hypervisor_hostname} cannot be deleted: its {label} {uuid} holds "
                           f"allocations ({amounts}). Remove the instances or reservations that use it first.")
    for _label, uuid in owned:
        placement.delete_provider(uuid)
    if host.provider_adopted and _provider_exists(placement, host.resource_provider_uuid):
        leave_freepool(placement, host.resource_provider_uuid)
    session.execute(delete(ExtraCapability).where(ExtraCapability.host_id == host.id))
    session.delete(host)
    session.flush()


# Allocations: which reservations hold the hosts.

def host_allocations(session: Session, host_id: int | None = None, *, lease_id: str | None = None,
                     reservation_id: str | None = None,
                     now: dt.datetime | None = None) -> list[tuple[int, list[HostReservation]]]:
    """Each host (every host, or the one given: 404 when unknown) with the current and future
    reservations that hold it, restricted to one lease or reservation when given."""
    if host_id is None:
        host_ids = list(session.scalars(select(Host.id).order_by(Host.id)))
    else:
        host_ids = [_host(session, host_id).id]
    held = reservations_of_hosts(session, host_ids, ending_after=now or utcnow(), lease_id=lease_id,
                                 reservation_id=reservation_id)
    return [(h, held[h]) for h in host_ids]
