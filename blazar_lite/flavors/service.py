"""Flavors: create, read, update, delete, and access for projects to private flavors.

A flavor is visible to a reader when it is public, when the reader's project has been granted
access to it, or when the reader may see every flavor (admins). Private flavors are how a
reservation hands its capacity to one project (`reservation:<id>` flavors, created by leases).
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, exists, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blazar_lite.db import utcnow
from blazar_lite.exceptions import BadRequest, Conflict, NotFound
from blazar_lite.flavors.models import MAX_TEXT, Flavor, FlavorAccess, FlavorExtraSpec

MAX_INT = 2147483647
# Lowest allowed value of each size: a flavor may have no local disk (it boots from a volume).
MINIMUM = {"vcpus": 1, "ram": 1, "disk": 0}


@dataclass(frozen=True)
class FlavorView:
    id: str
    name: str
    vcpus: int
    ram: int
    disk: int
    is_public: bool
    extra_specs: dict[str, str]
    projects: list[str]
    created_at: dt.datetime
    updated_at: dt.datetime | None


@dataclass(frozen=True)
class Reader:
    """Who reads flavors: their project, and whether they may see every flavor."""

    project_id: str
    sees_all: bool = False


# Validation of meaning (the API checks JSON types first).

def _check_name(name: str) -> None:
    if not name or name != name.strip():
        raise BadRequest(f"Invalid input for field 'name': {name!r} must be non-empty, without leading or "
                         "trailing spaces.")
    if len(name) > MAX_TEXT:
        raise BadRequest(f"Invalid input for field 'name': {len(name)} characters, at most {MAX_TEXT} are allowed.")


def _check_size(field: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not MINIMUM[field] <= value <= MAX_INT:
        raise BadRequest(f"Invalid input for field '{field}': {value!r} is not an integer between "
                         f"{MINIMUM[field]} and {MAX_INT}.")


def check_extra_specs(specs: Mapping[str, Any], *, allow_unset: bool) -> dict[str, str | None]:
    """Extra specs, checked: keys and values strings of 1 to 255 characters (a None value, meaning
    unset, only when `allow_unset`)."""
    for key, value in specs.items():
        if not key or len(key) > MAX_TEXT:
            raise BadRequest(f"Invalid extra spec key {key[:40]!r}: it must have 1 to {MAX_TEXT} characters.")
        if value is None and allow_unset:
            continue
        if not isinstance(value, str):
            raise BadRequest(f"Invalid input for field 'extra_specs.{key}': the value must be a string, not "
                             f"{type(value).__name__}.")
        if len(value) > MAX_TEXT:
            raise BadRequest(f"Invalid input for field 'extra_specs.{key}': {len(value)} characters, at most "
                             f"{MAX_TEXT} are allowed.")
    return dict(specs)


def _flavor_uuid(flavor_id: str) -> str:
    try:
        return str(uuidlib.UUID(flavor_id))
    except (ValueError, AttributeError, TypeError):
        raise BadRequest(f"Invalid input for field 'id': {flavor_id!r} is not a UUID.") from None


# Reading.

def _visible(reader: Reader) -> Any:
    return or_(Flavor.is_public.is_(True),
               exists().where(FlavorAccess.flavor_id == Flavor.id, FlavorAccess.project_id == reader.project_id))


def _views(session: Session, flavors: list[Flavor]) -> list[FlavorView]:
    ids = [f.id for f in flavors]
    specs: dict[str, dict[str, str]] = {}
    projects: dict[str, list[str]] = {}
    if ids:
        for flavor_id, key, value in session.execute(
                select(FlavorExtraSpec.flavor_id, FlavorExtraSpec.key, FlavorExtraSpec.value)
                .where(FlavorExtraSpec.flavor_id.in_(ids)).order_by(FlavorExtraSpec.key)):
            specs.setdefault(flavor_id, {})[key] = value
        for flavor_id, project_id in session.execute(
                select(FlavorAccess.flavor_id, FlavorAccess.project_id)
                .where(FlavorAccess.flavor_id.in_(ids)).order_by(FlavorAccess.project_id)):
            projects.setdefault(flavor_id, []).append(project_id)
    return [FlavorView(f.id, f.name, f.vcpus, f.ram, f.disk, f.is_public, specs.get(f.id, {}),
                       projects.get(f.id, []), f.created_at, f.updated_at) for f in flavors]


def _canonical_or_none(flavor_id: str) -> str | None:
    """The flavor id in canonical form; None for one that is not a UUID (no flavor has it)."""
    try:
        return str(uuidlib.UUID(flavor_id))
    except (ValueError, AttributeError, TypeError):
        return None


def _flavor(session: Session, flavor_id: str, reader: Reader | None = None, *, lock: bool = False) -> Flavor:
    """The flavor, or 404 when it does not exist or `reader` may not see it (a private flavor's
    existence is not disclosed); `lock` holds its row until the transaction ends, so concurrent
    changes to one flavor queue instead of colliding."""
    canonical = _canonical_or_none(flavor_id)
    stmt = select(Flavor).where(Flavor.id == canonical)
    if lock:
        stmt = stmt.with_for_update()
    if reader is not None and not reader.sees_all:
        stmt = stmt.where(_visible(reader))
    flavor = session.scalar(stmt) if canonical else None
    if flavor is None:
        raise NotFound(f"Flavor {flavor_id} not found.")
    return flavor


def get_flavor(session: Session, flavor_id: str, reader: Reader | None = None) -> FlavorView:
    """The flavor, if `reader` (anyone, when None) may see it; else 404."""
    return _views(session, [_flavor(session, flavor_id, reader)])[0]


def list_flavors(session: Session, reader: Reader | None = None) -> list[FlavorView]:
    """The flavors `reader` (anyone, when None) may see, by name."""
    stmt = select(Flavor).order_by(Flavor.name)
    if reader is not None and not reader.sees_all:
        stmt = stmt.where(_visible(reader))
    return _views(session, list(session.scalars(stmt)))


def may_use(session: Session, flavor_id: str, project_id: str) -> bool:
    """Whether `project_id` may use the flavor: it is public or shared with the project."""
    try:
        _flavor(session, flavor_id, Reader(project_id))
    except NotFound:
        return False
    return True


# Writing.

def _check_name_free(session: Session, name: str, except_id: str | None = None) -> None:
    holder = session.scalar(select(Flavor.id).where(Flavor.name == name))
    if holder is not None and holder != except_id:
        raise Conflict(f"Flavor name {name} is already used by flavor {holder}; choose another name.")


def _set_extra_specs(session: Session, flavor_id: str, specs: Mapping[str, str | None]) -> None:
    unset = [key for key, value in specs.items() if value is None]
    wanted = {key: value for key, value in specs.items() if value is not None}
    if unset:
        session.execute(delete(FlavorExtraSpec).where(FlavorExtraSpec.flavor_id == flavor_id,
                                                      FlavorExtraSpec.key.in_(unset)))
    if wanted:
        current = {s.key: s for s in session.scalars(
            select(FlavorExtraSpec).where(FlavorExtraSpec.flavor_id == flavor_id,
                                          FlavorExtraSpec.key.in_(list(wanted))))}
        for key, value in wanted.items():
            if key in current:
                current[key].value = value
            else:
                session.add(FlavorExtraSpec(flavor_id=flavor_id, key=key, value=value))
    session.flush()


def create_flavor(session: Session, *, name: str, vcpus: int, ram: int, disk: int, is_public: bool = True,
                  extra_specs: Mapping[str, Any] | None = None, flavor_id: str | None = None,
                  projects: Iterable[str] = ()) -> FlavorView:
    """Create a flavor (with a given uuid, or a new one) and share it with `projects`.
    409 when the name or the id is taken."""
    _check_name(name)
    for field, value in (("vcpus", vcpus), ("ram", ram), ("disk", disk)):
        _check_size(field, value)
    specs = check_extra_specs(extra_specs or {}, allow_unset=False)
    new_id = _flavor_uuid(flavor_id) if flavor_id is not None else str(uuidlib.uuid4())
    if session.get(Flavor, new_id) is not None:
        raise Conflict(f"Flavor {new_id} already exists.")
    _check_name_free(session, name)
    try:
        flavor = Flavor(id=new_id, name=name, vcpus=vcpus, ram=ram, disk=disk, is_public=is_public)
        session.add(flavor)
        session.flush()
        _set_extra_specs(session, new_id, specs)
        # No other transaction sees the new flavor yet: its row needs no lock.
        for project_id in sorted(set(projects)):
            _grant(session, flavor, project_id)
    except IntegrityError:
        # Only a concurrent creation of the same name or id gets here.
        raise Conflict(f"Flavor {name} was created by another request at the same time.") from None
    return get_flavor(session, new_id)


def update_flavor(session: Session, flavor_id: str, *, name: str | None = None, vcpus: int | None = None,
                  ram: int | None = None, disk: int | None = None, is_public: bool | None = None,
                  extra_specs: Mapping[str, Any] | None = None) -> FlavorView:
    """Change the fields given; extra specs are merged, a None value unsetting one."""
    flavor = _flavor(session, flavor_id, lock=True)
    specs = check_extra_specs(extra_specs or {}, allow_unset=True)
    sizes = {"vcpus": vcpus, "ram": ram, "disk": disk}
    if name is None and is_public is None and not specs and all(v is None for v in sizes.values()):
        raise BadRequest("No data to update: give name, vcpus, ram, disk, is_public or extra_specs.")
    if name is not None:
        _check_name(name)
        _check_name_free(session, name, except_id=flavor.id)
        flavor.name = name
    for field, value in sizes.items():
        if value is not None:
            _check_size(field, value)
            setattr(flavor, field, value)
    if is_public is not None:
        flavor.is_public = is_public
    _set_extra_specs(session, flavor.id, specs)
    flavor.updated_at = utcnow()
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(f"Flavor name {name} was taken by another request at the same time.") from None
    return get_flavor(session, flavor.id)


def delete_flavor(session: Session, flavor_id: str) -> None:
    flavor = _flavor(session, flavor_id, lock=True)
    session.execute(delete(FlavorExtraSpec).where(FlavorExtraSpec.flavor_id == flavor.id))
    session.execute(delete(FlavorAccess).where(FlavorAccess.flavor_id == flavor.id))
    session.delete(flavor)
    session.flush()


def grant_access(session: Session, flavor_id: str, project_id: str) -> None:
    """Let `project_id` see and use the private flavor (granting it again is harmless).
    409 for a public flavor, which every project may use already."""
    # A lease's start grants the access its flavor was created with: finding it held is one read,
    # and the flavor's row needs no lock for a change that is not made.
    held = session.scalar(select(FlavorAccess.id).join(Flavor, Flavor.id == FlavorAccess.flavor_id)
                          .where(FlavorAccess.flavor_id == _canonical_or_none(flavor_id),
                                 FlavorAccess.project_id == project_id, Flavor.is_public.is_(False)))
    if held is not None:
        return
    _grant(session, _flavor(session, flavor_id, lock=True), project_id)


def _grant(session: Session, flavor: Flavor, project_id: str) -> None:
    """Grant access to a flavor whose row the caller holds locked (or has just created)."""
    if flavor.is_public:
        raise Conflict(f"Flavor {flavor.id} is public: every project may use it, so access cannot be granted.")
    if not project_id or len(project_id) > MAX_TEXT:
        raise BadRequest(f"Invalid project id {project_id[:40]!r}: it must have 1 to {MAX_TEXT} characters.")
    held = session.scalar(select(FlavorAccess.id).where(FlavorAccess.flavor_id == flavor.id,
                                                        FlavorAccess.project_id == project_id))
    if held is None:
        session.add(FlavorAccess(flavor_id=flavor.id, project_id=project_id))
        session.flush()


def revoke_access(session: Session, flavor_id: str, project_id: str) -> None:
    """Take access to the flavor away from `project_id` (revoking absent access is harmless)."""
    flavor = _flavor(session, flavor_id, lock=True)
    session.execute(delete(FlavorAccess).where(FlavorAccess.flavor_id == flavor.id,
                                               FlavorAccess.project_id == project_id))
