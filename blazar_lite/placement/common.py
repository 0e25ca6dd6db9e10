"""Look-ups and the generation check that every Placement operation shares."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Column, delete, insert, select, update
from sqlalchemy.orm import InstrumentedAttribute, Session

from blazar_lite.exceptions import BadRequest, ConcurrentUpdate, NotFound
from blazar_lite.placement.models import ResourceClass, ResourceProvider


def normalize_uuid(value: str, what: str = "uuid") -> str:
    """Canonical lower-case dashed form; Placement accepts UUIDs with or without dashes."""
    try:
        return str(uuidlib.UUID(str(value)))
    except ValueError:
        raise BadRequest(f"Invalid {what}: {value!r} is not a UUID.") from None


def get_provider(session: Session, uuid: str) -> ResourceProvider:
    """The provider with this uuid; anything else, a malformed uuid included, is a 404 as upstream."""
    try:
        wanted = normalize_uuid(uuid)
    except BadRequest:
        wanted = None
    provider = session.scalar(select(ResourceProvider).where(ResourceProvider.uuid == wanted)) if wanted else None
    if provider is None:
        raise NotFound(f"No resource provider with uuid {uuid} found.")
    return provider


def provider_uuids_by_id(session: Session, ids: set[int]) -> dict[int, str]:
    if not ids:
        return {}
    rows = session.execute(select(ResourceProvider.id, ResourceProvider.uuid).where(ResourceProvider.id.in_(ids)))
    return dict(rows.all())


def resource_class_ids(session: Session, names: set[str] | list[str]) -> dict[str, int]:
    """Ids of the named classes; an unknown name is a 400 that says which."""
    wanted = set(names)
    found = dict(session.execute(select(ResourceClass.name, ResourceClass.id)
                                 .where(ResourceClass.name.in_(wanted))).all()) if wanted else {}
    missing = sorted(wanted - found.keys())
    if missing:
        raise BadRequest(f"Unknown resource class in request: {', '.join(missing)}. "
                         "Create custom classes with PUT /resource_classes/CUSTOM_<NAME> first.")
    return found


def bump_generation(session: Session, provider: ResourceProvider, expected: int | None = None,
                    consumers: int = 0) -> int:
    """Advance the provider's generation, refusing when it moved since `expected` was read;
    `consumers` moves its consumer count in the same statement (allocation writes).

    The conditional UPDATE is the concurrency control: two writers that read the same generation
    cannot both advance it, so the second one fails with 409 instead of overwriting.
    """
    expected = provider.generation if expected is None else expected
    values: dict[str, Any] = {"generation": expected + 1}
    if consumers:
        values["consumers"] = ResourceProvider.consumers + consumers
    result = session.execute(
        update(ResourceProvider)
        .where(ResourceProvider.id == provider.id, ResourceProvider.generation == expected)
        .values(**values)
        .execution_options(synchronize_session=False))
    if result.rowcount != 1:
        raise ConcurrentUpdate(
            f"resource provider generation conflict: {provider.uuid}: Resource provider's generation already "
            "changed. Please update the generation and try again.")
    provider.generation = expected + 1
    return provider.generation


def provider_links(session: Session, provider_id: int, link: Column[int],
                   name: InstrumentedAttribute[str]) -> list[str]:
    """The `name`s of what the provider is linked to through the `link` column of a link table
    (provider_traits.c.trait_id with Trait.name, provider_aggregates.c.aggregate_id with
    Aggregate.uuid), sorted."""
    table = link.table
    return list(session.scalars(select(name)
                                .join(table, link == name.class_.id)
                                .where(table.c.resource_provider_id == provider_id)
                                .order_by(name)))


def replace_provider_links(session: Session, provider_id: int, link: Column[int], wanted: set[int]) -> None:
    """Link the provider to exactly the `wanted` ids of the `link` column's table: drop the
    other links, add the missing ones and leave those it already has."""
    table = link.table
    session.execute(delete(table).where(table.c.resource_provider_id == provider_id, link.not_in(wanted)))
    have = set(session.scalars(select(link).where(table.c.resource_provider_id == provider_id)))
    new = wanted - have
    if new:
        session.execute(insert(table),
                        [{"resource_provider_id": provider_id, link.key: target} for target in sorted(new)])


def trait_ids(session: Session, names: set[str]) -> dict[str, int]:
    """Ids of the named traits; an unknown name is a 400 that says which."""
    from blazar_lite.placement.models import Trait

    found = dict(session.execute(select(Trait.name, Trait.id).where(Trait.name.in_(names))).all()) \
        if names else {}
    missing = sorted(set(names) - found.keys())
    if missing:
        raise BadRequest(f"No such trait(s): {', '.join(missing)}.")
    return found


def insert_missing(session: Session, column: Any, values: Iterable[str]) -> set[str]:
    """Insert a row for each value of the unique `column` that has none; return the values this
    call inserted.

    Create-or-verify must not fail when a concurrent request creates the same name first, so the
    insert skips conflicting rows (ON CONFLICT DO NOTHING) instead of raising an integrity error;
    RETURNING tells which rows were new (drivers do not all report a row count for INSERT).
    """
    rows = [{column.key: value} for value in sorted(set(values))]
    if not rows:
        return set()
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    else:
        raise NotImplementedError(f"insert_missing does not support the {dialect} dialect")
    stmt = (dialect_insert(column.table).values(rows)
            .on_conflict_do_nothing(index_elements=[column.key]).returning(column))
    return set(session.scalars(stmt))
