"""Host properties: the names of extra capabilities, each public or private, with the values
hosts give them.

Private properties are left out of listings unless the caller asks for all of them (Blazar's
`all=True`). A property's row outlives the capabilities that use its name, so a property marked
private stays private when a host gains it again.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.db import utcnow
from blazar_lite.exceptions import NotFound
from blazar_lite.hosts.models import ExtraCapability, HostProperty


@dataclass(frozen=True)
class PropertyView:
    name: str
    private: bool
    values: list[str]
    created_at: dt.datetime
    updated_at: dt.datetime | None


def ensure_properties(session: Session, names: Iterable[str]) -> None:
    """A property row for each name (public by default), tolerating concurrent creators."""
    rows = [{"name": name, "private": False, "created_at": utcnow()} for name in sorted(set(names))]
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    session.execute(insert(HostProperty).values(rows).on_conflict_do_nothing(index_elements=["name"]))


def _values(session: Session, names: Iterable[str] | None = None) -> dict[str, list[str]]:
    stmt = select(ExtraCapability.name, ExtraCapability.value).distinct()
    if names is not None:
        stmt = stmt.where(ExtraCapability.name.in_(list(names)))
    values: dict[str, list[str]] = {}
    for name, value in session.execute(stmt):
        values.setdefault(name, []).append(value)
    return {name: sorted(found) for name, found in values.items()}


def list_properties(session: Session, *, include_private: bool) -> list[PropertyView]:
    """Properties that some host has, with their distinct values, by name; private ones only
    when `include_private`."""
    values = _values(session)
    stmt = select(HostProperty).where(HostProperty.name.in_(list(values))).order_by(HostProperty.name)
    if not include_private:
        stmt = stmt.where(HostProperty.private.is_(False))
    return [PropertyView(p.name, p.private, values[p.name], p.created_at, p.updated_at)
            for p in session.scalars(stmt)]


def update_property(session: Session, name: str, *, private: bool) -> PropertyView:
    """Mark a property private or public (404 for a name no host has ever had)."""
    prop = session.scalar(select(HostProperty).where(HostProperty.name == name))
    if prop is None:
        raise NotFound(f"Host property {name} not found: no host has an extra capability of that name.")
    prop.private = private
    session.flush()
    return PropertyView(prop.name, prop.private, _values(session, [name]).get(name, []), prop.created_at,
                        prop.updated_at)
