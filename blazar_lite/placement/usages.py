"""Usages: how much of each resource class is allocated, per provider or per project/user."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from blazar_lite.placement.common import get_provider, usage_subquery
from blazar_lite.placement.models import Allocation, Consumer, Inventory, ResourceClass

# Consumer-type filters with a meaning of their own (consumer types are upper case, so these
# cannot clash with a real type): every consumer, and consumers recorded without a type.
ALL_TYPES = "all"
UNKNOWN_TYPE = "unknown"


def provider_usages(session: Session, provider_uuid: str) -> dict[str, int]:
    """Allocated amount of every class the provider has inventory of (0 when nothing is allocated)."""
    provider = get_provider(session, provider_uuid)
    usage = usage_subquery()
    rows = session.execute(
        select(ResourceClass.name, func.coalesce(usage.c.used, 0))
        .select_from(Inventory)
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .outerjoin(usage, and_(usage.c.resource_provider_id == Inventory.resource_provider_id,
                               usage.c.resource_class_id == Inventory.resource_class_id))
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
