"""Resource providers: trees of providers, their names, uuids and generations."""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, exists, insert, or_, select, update
from sqlalchemy.orm import Session, aliased

from blazar_lite.exceptions import BadRequest, Conflict, NotFound
from blazar_lite.placement.common import (
    get_provider,
    normalize_uuid,
    resource_class_ids,
    trait_ids,
)
from blazar_lite.placement.models import (
    Aggregate,
    Allocation,
    Inventory,
    ResourceProvider,
    Trait,
    provider_aggregates,
    provider_traits,
)
from blazar_lite.placement.query import AggregateFilter, TraitFilter

UNSET: Any = object()


@dataclass(frozen=True)
class ProviderView:
    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str | None
    root_provider_uuid: str


# Built once: constructing aliases costs more than the query they serve.
_PARENT = aliased(ResourceProvider, name="parent_provider")
_ROOT = aliased(ResourceProvider, name="root_provider")


def _views(session: Session, where: list[Any]) -> list[ProviderView]:
    stmt = (select(ResourceProvider.uuid, ResourceProvider.name, ResourceProvider.generation,
                   _PARENT.uuid, _ROOT.uuid)
            .outerjoin(_PARENT, _PARENT.id == ResourceProvider.parent_provider_id)
            .join(_ROOT, _ROOT.id == ResourceProvider.root_provider_id)
            .where(*where)
            .order_by(ResourceProvider.id))
    return [ProviderView(*row) for row in session.execute(stmt)]


def show_provider(session: Session, uuid: str) -> ProviderView:
    try:
        wanted = normalize_uuid(uuid)
    except BadRequest:
        raise NotFound(f"No resource provider with uuid {uuid} found.") from None
    views = _views(session, [ResourceProvider.uuid == wanted])
    if not views:
        raise NotFound(f"No resource provider with uuid {uuid} found.")
    return views[0]


def _check_name_free(session: Session, name: str, except_id: int | None = None) -> None:
    clash = session.scalar(select(ResourceProvider.id).where(ResourceProvider.name == name))
    if clash is not None and clash != except_id:
        raise Conflict(f"Conflicting resource provider name: {name} already exists.",
                       code="placement.duplicate_name")


# Creation is the hot write path (hosts register in bulk): its statements are built once, as
# Core statements on the table, which skips the ORM's per-call statement construction.
_TABLE = ResourceProvider.__table__
_NAME_OR_UUID_TAKEN = select(_TABLE.c.name).where(
    or_(_TABLE.c.name == bindparam("name"), _TABLE.c.uuid == bindparam("uuid")))
_INSERT = insert(_TABLE)
_ROOT_AT_ITSELF = update(_TABLE).where(_TABLE.c.id == bindparam("new_id")).values(
    root_provider_id=bindparam("new_id"))
_UUID_OF = select(_TABLE.c.uuid).where(_TABLE.c.id == bindparam("id"))


def create_provider(session: Session, name: str, uuid: str | None = None,
                    parent_provider_uuid: str | None = None) -> ProviderView:
    """Create a provider (a root unless a parent is named); names and uuids are unique."""
    provider_uuid = normalize_uuid(uuid) if uuid else str(uuidlib.uuid4())
    connection = session.connection()
    for clash_name in connection.execute(_NAME_OR_UUID_TAKEN, {"name": name, "uuid": provider_uuid}).scalars():
        if clash_name == name:
            raise Conflict(f"Conflicting resource provider name: {name} already exists.",
                           code="placement.duplicate_name")
        raise Conflict(f"Conflicting resource provider uuid: {provider_uuid} already exists.",
                       code="placement.duplicate_uuid")
    parent = None
    if parent_provider_uuid is not None:
        if normalize_uuid(parent_provider_uuid) == provider_uuid:
            raise BadRequest("parent provider UUID cannot be same as UUID. Please choose a different parent "
                             "provider UUID.")
        parent = _existing_parent(session, parent_provider_uuid)
    new_id = connection.execute(_INSERT, {
        "uuid": provider_uuid, "name": name, "generation": 0, "parent_provider_id": parent.id if parent else None,
        "root_provider_id": parent.root_provider_id if parent else None}).inserted_primary_key[0]
    if parent is None:
        connection.execute(_ROOT_AT_ITSELF, {"new_id": new_id})
        return ProviderView(provider_uuid, name, 0, None, provider_uuid)
    root_uuid = connection.execute(_UUID_OF, {"id": parent.root_provider_id}).scalar_one()
    return ProviderView(provider_uuid, name, 0, parent.uuid, root_uuid)


def _existing_parent(session: Session, parent_uuid: str) -> ResourceProvider:
    try:
        return get_provider(session, parent_uuid)
    except NotFound:
        raise BadRequest(f"parent provider UUID {parent_uuid} does not exist.") from None


def _subtree_ids(session: Session, provider: ResourceProvider) -> set[int]:
    rows = session.execute(select(ResourceProvider.id, ResourceProvider.parent_provider_id)
                           .where(ResourceProvider.root_provider_id == provider.root_provider_id)).all()
    children: dict[int | None, list[int]] = {}
    for pid, parent_id in rows:
        children.setdefault(parent_id, []).append(pid)
    found, stack = set(), [provider.id]
    while stack:
        current = stack.pop()
        found.add(current)
        stack.extend(children.get(current, []))
    return found


def update_provider(session: Session, uuid: str, name: str, parent_provider_uuid: Any = UNSET,
                    allow_reparent: bool = False) -> ProviderView:
    """Rename a provider and, when `parent_provider_uuid` is given, attach or move it.

    Before microversion 1.37 (`allow_reparent` False) a provider may gain a parent but never
    change or lose one; moving a provider moves its whole subtree to the new root.
    """
    provider = get_provider(session, uuid)
    _check_name_free(session, name, except_id=provider.id)
    provider.name = name
    if parent_provider_uuid is not UNSET:
        current_parent = provider.parent_provider_id
        new_parent = _existing_parent(session, parent_provider_uuid) if parent_provider_uuid else None
        new_parent_id = new_parent.id if new_parent else None
        if new_parent_id != current_parent:
            if new_parent is None and not allow_reparent:
                raise BadRequest("un-parenting a provider is not currently allowed.")
            if current_parent is not None and not allow_reparent:
                raise BadRequest("re-parenting a provider is not currently allowed.")
            subtree = _subtree_ids(session, provider)
            if new_parent is not None and new_parent.id in subtree:
                raise BadRequest("creating loop in the provider tree is not allowed.")
            new_root = new_parent.root_provider_id if new_parent else provider.id
            provider.parent_provider_id = new_parent_id
            session.flush()
            session.execute(update(ResourceProvider).where(ResourceProvider.id.in_(subtree))
                            .values(root_provider_id=new_root).execution_options(synchronize_session=False))
    provider.generation += 1
    session.flush()
    session.expire(provider)
    return show_provider(session, uuid)


def delete_provider(session: Session, uuid: str) -> None:
    """Delete a provider with no allocations and no children (its inventories, traits and
    aggregate links go with it)."""
    provider = get_provider(session, uuid)
    if session.scalar(select(ResourceProvider.id).where(ResourceProvider.parent_provider_id == provider.id)
                      .limit(1)) is not None:
        raise Conflict(f"Unable to delete parent resource provider {provider.uuid}: It has child resource "
                       "providers.", code="placement.resource_provider.cannot_delete_parent")
    if session.scalar(select(Allocation.id).where(Allocation.resource_provider_id == provider.id)
                      .limit(1)) is not None:
        raise Conflict(f"Unable to delete resource provider {provider.uuid}: Resource provider has "
                       "allocations.", code="placement.resource_provider.inuse")
    session.delete(provider)
    session.flush()


def list_providers(session: Session, *, name: str | None = None, uuid: str | None = None,
                   member_of: AggregateFilter | None = None, resources: dict[str, int] | None = None,
                   in_tree: str | None = None, required: TraitFilter | None = None) -> list[ProviderView]:
    """Providers matching every filter given (all providers when none is)."""
    rp = ResourceProvider
    where: list[Any] = []
    if name is not None:
        where.append(rp.name == name)
    if uuid is not None:
        where.append(rp.uuid == normalize_uuid(uuid))
    if in_tree is not None:
        tree = session.scalar(select(rp.root_provider_id).where(rp.uuid == normalize_uuid(in_tree)))
        if tree is None:
            raise BadRequest(f"No such resource provider {in_tree} (in_tree).")
        where.append(rp.root_provider_id == tree)
    if member_of:
        for group in member_of.any_of:
            where.append(exists().where(provider_aggregates.c.resource_provider_id == rp.id,
                                        provider_aggregates.c.aggregate_id == Aggregate.id,
                                        Aggregate.uuid.in_(group)))
        if member_of.forbidden:
            where.append(~exists().where(provider_aggregates.c.resource_provider_id == rp.id,
                                         provider_aggregates.c.aggregate_id == Aggregate.id,
                                         Aggregate.uuid.in_(member_of.forbidden)))
    if required:
        ids = trait_ids(session, required.names)
        for trait in required.required:
            where.append(exists().where(provider_traits.c.resource_provider_id == rp.id,
                                        provider_traits.c.trait_id == ids[trait]))
        if required.forbidden:
            where.append(~exists().where(provider_traits.c.resource_provider_id == rp.id,
                                         provider_traits.c.trait_id.in_([ids[t] for t in required.forbidden])))
        for group in required.any_of:
            where.append(exists().where(provider_traits.c.resource_provider_id == rp.id,
                                        provider_traits.c.trait_id.in_([ids[t] for t in group])))
    if resources:
        class_ids = resource_class_ids(session, resources)
        for rc_name, amount in resources.items():
            where.append(exists(
                select(Inventory.id)
                .where(Inventory.resource_provider_id == rp.id,
                       Inventory.resource_class_id == class_ids[rc_name],
                       Inventory.min_unit <= amount, Inventory.max_unit >= amount,
                       amount % Inventory.step_size == 0,
                       (Inventory.total - Inventory.reserved) * Inventory.allocation_ratio
                       >= Inventory.used + amount)))
    return _views(session, where)


def labels_of(session: Session, provider_uuids: list[str]) -> dict[str, tuple[list[str], list[str]]]:
    """(aggregate uuids, trait names) of each provider, both sorted, in two statements whatever
    the number of providers; unknown providers are left out."""
    wanted = sorted(set(provider_uuids))
    if not wanted:
        return {}
    ids = dict(session.execute(select(ResourceProvider.id, ResourceProvider.uuid)
                               .where(ResourceProvider.uuid.in_(wanted))).all())
    found: dict[str, tuple[list[str], list[str]]] = {uuid: ([], []) for uuid in ids.values()}
    for provider_id, aggregate in session.execute(
            select(provider_aggregates.c.resource_provider_id, Aggregate.uuid)
            .join(Aggregate, Aggregate.id == provider_aggregates.c.aggregate_id)
            .where(provider_aggregates.c.resource_provider_id.in_(ids)).order_by(Aggregate.uuid)):
        found[ids[provider_id]][0].append(aggregate)
    for provider_id, trait in session.execute(
            select(provider_traits.c.resource_provider_id, Trait.name)
            .join(Trait, Trait.id == provider_traits.c.trait_id)
            .where(provider_traits.c.resource_provider_id.in_(ids)).order_by(Trait.name)):
        found[ids[provider_id]][1].append(trait)
    return found
