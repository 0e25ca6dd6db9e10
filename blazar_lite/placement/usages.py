"""Usages: how much of each resource class is allocated, per provider or per project/user."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Integer, case, cast, func, select
from sqlalchemy.orm import Session

from blazar_lite.placement.capacity import capacity
from blazar_lite.placement.common import get_provider
from blazar_lite.placement.models import (
    Aggregate,
    Allocation,
    Consumer,
    Inventory,
    ResourceClass,
    ResourceProvider,
    provider_aggregates,
)

# Consumer-type filters with a meaning of their own (consumer types are upper case, so these
# cannot clash with a real type): every consumer, and consumers recorded without a type.
ALL_TYPES = "all"
UNKNOWN_TYPE = "unknown"


def provider_usages(session: Session, provider_uuid: str) -> dict[str, int]:
    """Allocated amount of every class the provider has inventory of (0 when nothing is allocated)."""
    provider = get_provider(session, provider_uuid)
    rows = session.execute(
        select(ResourceClass.name, Inventory.used)
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .where(Inventory.resource_provider_id == provider.id))
    return {name: int(used) for name, used in rows}


def _consumer_filter(project_id: str, user_id: str | None, consumer_type: str | None) -> list[Any]:
    where: list[Any] = [Consumer.project_id == project_id]
    if user_id is not None:
        where.append(Consumer.user_id == user_id)
    if consumer_type == UNKNOWN_TYPE:
        where.append(Consumer.consumer_type.is_(None))
    elif consumer_type not in (None, ALL_TYPES):
        where.append(Consumer.consumer_type == consumer_type)
    return where


def project_usages(session: Session, project_id: str, user_id: str | None = None,
                   consumer_type: str | None = None) -> dict[str, int]:
    """Total allocated per class over the project's consumers (only classes with allocations),
    optionally limited to one user and to one consumer type (`all`: every type, `unknown`:
    consumers without a type)."""
    rows = session.execute(
        select(ResourceClass.name, func.sum(Allocation.used))
        .select_from(Allocation)
        .join(Consumer, Consumer.id == Allocation.consumer_id)
        .join(ResourceClass, ResourceClass.id == Allocation.resource_class_id)
        .where(*_consumer_filter(project_id, user_id, consumer_type))
        .group_by(ResourceClass.name))
    return {name: int(used) for name, used in rows}


def _group(key: list[str | None]) -> str:
    """The response key of one group: `all` when not grouped, else the type or `unknown`."""
    return ALL_TYPES if not key else key[0] or UNKNOWN_TYPE


def project_usages_by_type(session: Session, project_id: str, user_id: str | None = None,
                           consumer_type: str | None = None) -> dict[str, dict[str, int]]:
    """Like project_usages, grouped by consumer type, each group with its `consumer_count`
    (distinct consumers, not allocation rows).

    Consumers without a type are grouped as `unknown`; with consumer_type `all` everything
    forms the single group `all`.
    """
    # Groups are named in Python rather than in SQL: PostgreSQL takes a bound constant in SELECT
    # and the same constant in GROUP BY for two different expressions.
    keys = [] if consumer_type == ALL_TYPES else [Consumer.consumer_type]
    base = (select().select_from(Allocation).join(Consumer, Consumer.id == Allocation.consumer_id)
            .where(*_consumer_filter(project_id, user_id, consumer_type)))
    out: dict[str, dict[str, int]] = {}
    counts = session.execute(base.add_columns(*keys, func.count(func.distinct(Allocation.consumer_id)))
                             .group_by(*keys))
    for *key, count in counts:
        if count:
            out[_group(key)] = {"consumer_count": int(count)}
    sums = session.execute(base.add_columns(*keys, ResourceClass.name, func.sum(Allocation.used))
                           .join(ResourceClass, ResourceClass.id == Allocation.resource_class_id)
                           .group_by(*keys, ResourceClass.name))
    for *key, rc, used in sums:
        out[_group(key)][rc] = int(used)
    return out


def _rounded_down(value: Any) -> Any:
    """`value` rounded down to a whole unit, as allocations count capacity, on every database:
    a cast to integer truncates on SQLite but rounds to the nearest on PostgreSQL."""
    whole = cast(value, Integer)
    return case((whole > value, whole - 1), else_=whole)


def _roots_outside(resource_class: str, aggregate_uuids: Iterable[str]) -> Any:
    """A select of the ids of the root providers with inventory of `resource_class` that are in
    none of `aggregate_uuids`, chosen once (a CTE) however often the statement uses it."""
    excluded = (select(provider_aggregates.c.resource_provider_id)
                .join(Aggregate, Aggregate.id == provider_aggregates.c.aggregate_id)
                .where(Aggregate.uuid.in_(list(aggregate_uuids))))
    chosen = (select(ResourceProvider.id)
              .join(Inventory, Inventory.resource_provider_id == ResourceProvider.id)
              .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
              .where(ResourceClass.name == resource_class, ResourceProvider.root_provider_id == ResourceProvider.id,
                     ResourceProvider.id.not_in(excluded))
              .cte("chosen"))
    return select(chosen.c.id)


def provider_room(session: Session, provider_uuids: Iterable[str]) -> dict[str, dict[str, tuple[int, int]]]:
    """For each provider, {class: (capacity, used)} over its inventories, in one statement
    whatever the number of providers; capacity is (total - reserved) x allocation_ratio, rounded
    down. Unknown providers are left out."""
    wanted = list(set(provider_uuids))
    if not wanted:
        return {}
    rows = session.execute(
        select(ResourceProvider.uuid, ResourceClass.name, Inventory.total, Inventory.reserved,
               Inventory.allocation_ratio, Inventory.used)
        .select_from(Inventory)
        .join(ResourceProvider, ResourceProvider.id == Inventory.resource_provider_id)
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .where(ResourceProvider.uuid.in_(wanted)))
    room: dict[str, dict[str, tuple[int, int]]] = {}
    for uuid, name, total, reserved, ratio, used in rows:
        room.setdefault(uuid, {})[name] = (int(capacity(total, reserved, ratio)), int(used))
    return room


def roots_with_class_outside(session: Session, resource_class: str, aggregate_uuids: Iterable[str]
                             ) -> list[tuple[str, str, dict[str, tuple[int, int]]]]:
    """(uuid, name, {class: (capacity, used)}) of every root provider with inventory of
    `resource_class` that is in none of `aggregate_uuids`, by name. Two statements whatever the
    number of providers: the providers are chosen inside SQL, not passed in as a list."""
    chosen = _roots_outside(resource_class, aggregate_uuids)
    # Class names are looked up apart: joined in, they lead SQLite to walk every class.
    # Core rows through the connection: the session's ORM row handling costs as much as the query.
    connection = session.connection()
    class_names = dict(connection.execute(select(ResourceClass.id, ResourceClass.name)).all())
    rows = connection.execute(
        select(ResourceProvider.uuid, ResourceProvider.name, Inventory.resource_class_id, Inventory.total,
               Inventory.reserved, Inventory.allocation_ratio, Inventory.used)
        .select_from(Inventory)
        .join(ResourceProvider, ResourceProvider.id == Inventory.resource_provider_id)
        .where(Inventory.resource_provider_id.in_(chosen))
        .order_by(ResourceProvider.name))
    found: dict[str, tuple[str, dict[str, tuple[int, int]]]] = {}
    for uuid, name, class_id, total, reserved, ratio, used in rows:
        found.setdefault(uuid, (name, {}))[1][class_names[class_id]] = (int(capacity(total, reserved, ratio)),
                                                                        int(used))
    return [(uuid, name, room) for uuid, (name, room) in found.items()]


def roomiest_roots_outside(session: Session, resource_class: str, aggregate_uuids: Iterable[str],
                           needed: Mapping[str, int], limit: int) -> list[tuple[str, str, int]]:
    """(uuid, name, consumers) of at most `limit` root providers with inventory of
    `resource_class`, in none of `aggregate_uuids`, with room now for every amount of `needed`
    ({class: amount}): the fewest consumers first, then the most free MEMORY_MB, then by name.
    The ranking is done in SQL over the kept counters (inventories.used, providers.consumers),
    so a busy cluster's thousand providers cost one statement and a handful of rows."""
    connection = session.connection()
    class_ids = dict(connection.execute(select(ResourceClass.name, ResourceClass.id)
                                        .where(ResourceClass.name.in_([*needed, "MEMORY_MB"]))).all())
    if any(name not in class_ids for name in needed):
        return []
    chosen = _roots_outside(resource_class, aggregate_uuids)
    free_now = _rounded_down((Inventory.total - Inventory.reserved) * Inventory.allocation_ratio) - Inventory.used

    def free_of(name: str) -> Any:
        return func.max(case((Inventory.resource_class_id == class_ids.get(name, -1), free_now)))

    room = (select(Inventory.resource_provider_id.label("provider_id"),
                   *(free_of(name).label(f"free_{index}") for index, name in enumerate(needed)),
                   free_of("MEMORY_MB").label("free_memory"))
            .where(Inventory.resource_provider_id.in_(chosen))
            .group_by(Inventory.resource_provider_id)
            .subquery("room"))
    rows = connection.execute(
        select(ResourceProvider.uuid, ResourceProvider.name, ResourceProvider.consumers)
        .join(room, room.c.provider_id == ResourceProvider.id)
        .where(*(room.c[f"free_{index}"] >= amount for index, amount in enumerate(needed.values())))
        .order_by(ResourceProvider.consumers, func.coalesce(room.c.free_memory, 0).desc(), ResourceProvider.name)
        .limit(limit))
    return [(uuid, name, int(n)) for uuid, name, n in rows]


def consumer_counts(session: Session, provider_uuids: Iterable[str]) -> dict[str, int]:
    """How many consumers hold allocations on each of these providers (absent: none)."""
    wanted = list(set(provider_uuids))
    if not wanted:
        return {}
    rows = session.connection().execute(
        select(ResourceProvider.uuid, ResourceProvider.consumers)
        .where(ResourceProvider.uuid.in_(wanted), ResourceProvider.consumers > 0))
    return {uuid: int(count) for uuid, count in rows}
