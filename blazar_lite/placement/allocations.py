"""Allocations: what each consumer holds on which providers, and the writes that change them.

A write replaces every allocation of the consumers it names, all or nothing. It holds no lock
between requests and still never books the same capacity twice: it reads the generation of every
provider it touches before it reads their usage, and at the end advances each generation from
the value it read. If another writer got in between, that advance fails; the attempt is undone to
a savepoint and the whole write runs again on fresh data. Callers therefore see a 409 only for a
real shortage or for a consumer generation they hold that is out of date.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, bindparam, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from blazar_lite.exceptions import BadRequest, ConcurrentUpdate, Conflict, NotEnoughResources, NotFound
from blazar_lite.placement.capacity import capacity, fits, unit_problem
from blazar_lite.placement.common import bump_generation, get_provider, normalize_uuid
from blazar_lite.placement.models import Allocation, Consumer, Inventory, ResourceClass, ResourceProvider

# "Do not check the consumer generation" (requests before microversion 1.28).
UNSET: Any = object()

# Placement's stand-in owner for consumers written without project and user (before 1.8).
INCOMPLETE_PROJECT_ID = "00000000-0000-0000-0000-000000000000"
INCOMPLETE_USER_ID = "00000000-0000-0000-0000-000000000000"

# Each failed attempt means another writer committed, so a handful of attempts is plenty.
WRITE_ATTEMPTS = 10


@dataclass(frozen=True)
class ProviderShare:
    """What one consumer holds on one provider, with that provider's generation."""

    generation: int
    resources: dict[str, int]


@dataclass(frozen=True)
class ConsumerAllocations:
    """A consumer's allocations by provider uuid; the owner fields are None when it holds nothing."""

    uuid: str
    allocations: dict[str, ProviderShare]
    project_id: str | None = None
    user_id: str | None = None
    generation: int | None = None
    consumer_type: str | None = None


@dataclass(frozen=True)
class ConsumerShare:
    """What one consumer holds on a provider, with that consumer's generation."""

    resources: dict[str, int]
    consumer_generation: int


@dataclass(frozen=True)
class ProviderAllocations:
    """A provider's allocations by consumer uuid."""

    uuid: str
    generation: int
    allocations: dict[str, ConsumerShare]


@dataclass
class ConsumerWrite:
    """The allocations one consumer should hold after a write ({provider uuid: {class: amount}}).

    `consumer_generation` is the generation the caller read (None: "the consumer must be new"),
    or UNSET to skip the check. `consumer_type` None leaves an existing consumer's type alone.
    An empty `allocations` removes all of the consumer's allocations.
    """

    allocations: Mapping[str, Mapping[str, int]]
    project_id: str | None = None
    user_id: str | None = None
    consumer_generation: Any = UNSET
    consumer_type: str | None = None


class _Retry(Exception):
    """Another writer changed a provider (or an unchecked consumer) while this attempt ran."""


def get_consumer_allocations(session: Session, consumer_uuid: str) -> ConsumerAllocations:
    """The consumer's allocations; an unknown consumer simply holds nothing."""
    uuid = normalize_uuid(consumer_uuid, "consumer uuid")
    rows = session.execute(
        select(ResourceProvider.uuid, ResourceProvider.generation, ResourceClass.name, Allocation.used,
               Consumer.project_id, Consumer.user_id, Consumer.generation, Consumer.consumer_type)
        .select_from(Allocation)
        .join(Consumer, Consumer.id == Allocation.consumer_id)
        .join(ResourceProvider, ResourceProvider.id == Allocation.resource_provider_id)
        .join(ResourceClass, ResourceClass.id == Allocation.resource_class_id)
        .where(Consumer.uuid == uuid)
        .order_by(ResourceProvider.id, ResourceClass.name)).all()
    if not rows:
        return ConsumerAllocations(uuid=uuid, allocations={})
    shares: dict[str, ProviderShare] = {}
    for rp_uuid, rp_generation, rc_name, used, *_ in rows:
        shares.setdefault(rp_uuid, ProviderShare(rp_generation, {})).resources[rc_name] = used
    _, _, _, _, project_id, user_id, generation, consumer_type = rows[0]
    return ConsumerAllocations(uuid=uuid, allocations=shares, project_id=project_id, user_id=user_id,
                               generation=generation, consumer_type=consumer_type)


def get_provider_allocations(session: Session, provider_uuid: str) -> ProviderAllocations:
    """Every allocation against the provider, by consumer (404 for an unknown provider)."""
    provider = get_provider(session, provider_uuid)
    rows = session.execute(
        select(Consumer.uuid, Consumer.generation, ResourceClass.name, Allocation.used)
        .select_from(Allocation)
        .join(Consumer, Consumer.id == Allocation.consumer_id)
        .join(ResourceClass, ResourceClass.id == Allocation.resource_class_id)
        .where(Allocation.resource_provider_id == provider.id)
        .order_by(Consumer.id, ResourceClass.name))
    shares: dict[str, ConsumerShare] = {}
    for consumer_uuid, consumer_generation, rc_name, used in rows:
        shares.setdefault(consumer_uuid, ConsumerShare({}, consumer_generation)).resources[rc_name] = used
    return ProviderAllocations(uuid=provider.uuid, generation=provider.generation, allocations=shares)


def replace_consumer_allocations(session: Session, consumer_uuid: str,
                                 allocations: Mapping[str, Mapping[str, int]],
                                 project_id: str | None = None, user_id: str | None = None,
                                 consumer_generation: Any = UNSET, consumer_type: str | None = None) -> None:
    """Make `allocations` ({provider uuid: {class: amount}}) the consumer's whole holding.

    Creates the consumer when it is new; an empty `allocations` removes what it holds. Every
    provider that gains or loses allocations has its generation advanced, and so has the consumer.
    """
    write_allocations(session, {consumer_uuid: ConsumerWrite(allocations, project_id, user_id,
                                                             consumer_generation, consumer_type)})


def replace_many(session: Session, writes: Mapping[str, ConsumerWrite | Mapping[str, Any]]) -> None:
    """Replace the allocations of several consumers at once, all or nothing.

    Each value is a ConsumerWrite or a mapping of its fields (allocations, project_id, user_id,
    consumer_generation, consumer_type).
    """
    write_allocations(session, {uuid: w if isinstance(w, ConsumerWrite) else ConsumerWrite(**w)
                                for uuid, w in writes.items()})


def delete_consumer_allocations(session: Session, consumer_uuid: str, consumer_generation: Any = UNSET) -> None:
    """Remove everything the consumer holds (404 when it holds nothing)."""
    uuid = normalize_uuid(consumer_uuid, "consumer uuid")
    held = session.scalar(select(Allocation.id).join(Consumer, Consumer.id == Allocation.consumer_id)
                          .where(Consumer.uuid == uuid).limit(1))
    if held is None:
        raise NotFound(f"No allocations for consumer '{uuid}'")
    write_allocations(session, {uuid: ConsumerWrite({}, consumer_generation=consumer_generation)})


def write_allocations(session: Session, writes: Mapping[str, ConsumerWrite],
                      before_check: Callable[[Session], None] | None = None) -> None:
    """Replace the allocations of every consumer in `writes`, checking units and capacity.

    `before_check`, if given, runs after the consumers' old allocations are gone and before
    capacity is checked (the reshaper changes inventories there); it runs again on each retry.
    """
    checked = {normalize_uuid(uuid, "consumer uuid"): _validated(uuid, write) for uuid, write in writes.items()}
    class_ids = _class_ids(session, checked)
    for _ in range(WRITE_ATTEMPTS):
        try:
            with session.begin_nested():
                _attempt(session, checked, class_ids, before_check)
            return
        except _Retry:
            continue
    raise ConcurrentUpdate(
        "Inventory and/or allocations changed while attempting to allocate: other writers changed the "
        f"same resource providers {WRITE_ATTEMPTS} times in a row; retry the request.")


def _validated(consumer_uuid: str, write: ConsumerWrite) -> ConsumerWrite:
    """Amounts are positive integers and providers are UUIDs, whoever the caller is."""
    allocations: dict[str, dict[str, int]] = {}
    for rp_uuid, resources in write.allocations.items():
        provider = normalize_uuid(rp_uuid, "resource provider uuid")
        if not resources:
            raise BadRequest(f"Allocation of consumer {consumer_uuid} on resource provider {provider} "
                             "names no resources; name at least one class and amount.")
        for rc_name, amount in resources.items():
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
                raise BadRequest(f"Allocation of {rc_name} on resource provider {provider} for consumer "
                                 f"{consumer_uuid} must be an integer of at least 1, not {amount!r}.")
        if provider in allocations:
            raise BadRequest(f"Resource provider {provider} is named twice in the allocations of consumer "
                             f"{consumer_uuid}.")
        allocations[provider] = dict(resources)
    return ConsumerWrite(allocations, write.project_id, write.user_id, write.consumer_generation,
                         write.consumer_type)


def _class_ids(session: Session, writes: Mapping[str, ConsumerWrite]) -> dict[str, int]:
    wanted = {rc for write in writes.values() for resources in write.allocations.values() for rc in resources}
    found = dict(session.execute(select(ResourceClass.name, ResourceClass.id)
                                 .where(ResourceClass.name.in_(wanted))).all()) if wanted else {}
    for consumer_uuid, write in writes.items():
        for rp_uuid, resources in write.allocations.items():
            for rc_name in resources:
                if rc_name not in found:
                    raise BadRequest(f"Unable to allocate inventory for consumer {consumer_uuid}: No such resource "
                                     f"class {rc_name} (requested on resource provider {rp_uuid}).")
    return found


def _attempt(session: Session, writes: Mapping[str, ConsumerWrite], class_ids: Mapping[str, int],
             before_check: Callable[[Session], None] | None) -> None:
    """One try at the whole write; raises _Retry when a concurrent writer got in the way."""
    provider_ids = _provider_ids(session, writes)
    existing = {row.uuid: row for row in session.execute(
        select(Consumer.uuid, Consumer.id, Consumer.generation).where(Consumer.uuid.in_(list(writes))))}
    for uuid in sorted(writes):
        _check_consumer_generation(uuid, writes[uuid].consumer_generation, existing.get(uuid))
    old_consumer_ids = [row.id for row in existing.values()]
    released = session.execute(
        select(Allocation.consumer_id, Allocation.resource_provider_id, Allocation.resource_class_id,
               Allocation.used)
        .where(Allocation.consumer_id.in_(old_consumer_ids))).all() if old_consumer_ids else []
    old_provider_ids = {row.resource_provider_id for row in released}
    session.execute(delete(Allocation).where(Allocation.consumer_id.in_(old_consumer_ids)))
    if before_check is not None:
        before_check(session)
    # Generations are read before usage: whoever changes usage after this read must also have
    # advanced a generation, and then our conditional advance below fails.
    touched = session.scalars(select(ResourceProvider)
                              .where(ResourceProvider.id.in_(old_provider_ids | set(provider_ids.values())))
                              .order_by(ResourceProvider.id)
                              .execution_options(populate_existing=True)).all()
    read_generations = {provider.id: provider.generation for provider in touched}
    freed: dict[tuple[int, int], int] = {}
    for row in released:
        key = (row.resource_provider_id, row.resource_class_id)
        freed[key] = freed.get(key, 0) + row.used
    _check_capacity(session, writes, provider_ids, class_ids, freed)
    consumer_ids = {uuid: _save_consumer(session, uuid, write, existing.get(uuid))
                    for uuid, write in sorted(writes.items())}
    rows = [{"consumer_id": consumer_ids[uuid], "resource_provider_id": provider_ids[rp_uuid],
             "resource_class_id": class_ids[rc_name], "used": amount}
            for uuid, write in writes.items()
            for rp_uuid, resources in write.allocations.items()
            for rc_name, amount in resources.items()]
    consumers_gained = _consumers_per_provider(rows)
    consumers_lost = _consumers_per_provider(row._asdict() for row in released)
    for provider in touched:
        try:
            bump_generation(session, provider, read_generations[provider.id],
                            consumers=consumers_gained.get(provider.id, 0) - consumers_lost.get(provider.id, 0))
        except ConcurrentUpdate:
            raise _Retry() from None
        # The UPDATE above already stored it; keep the ORM from writing it a second time.
        set_committed_value(provider, "generation", provider.generation)
    if rows:
        session.execute(insert(Allocation), rows)
    _count_usage(session, rows, freed)


def _consumers_per_provider(rows: Iterable[Mapping[str, Any]]) -> dict[int, int]:
    """How many distinct consumers the allocation rows put on each provider."""
    pairs = {(row["resource_provider_id"], row["consumer_id"]) for row in rows}
    counts: dict[int, int] = {}
    for provider_id, _ in pairs:
        counts[provider_id] = counts.get(provider_id, 0) + 1
    return counts


def _count_usage(session: Session, rows: list[dict[str, Any]], freed: Mapping[tuple[int, int], int]) -> None:
    """Move each inventory's `used` by what this write added minus what it released.

    Runs after the provider generations advanced, so the rows it locks belong to providers this
    transaction already holds: two writers cannot deadlock on them. An inventory that the
    reshaper removed in between has no row left to update, which is right.
    """
    change = {key: -amount for key, amount in freed.items()}
    for row in rows:
        key = (row["resource_provider_id"], row["resource_class_id"])
        change[key] = change.get(key, 0) + row["used"]
    params = [{"provider": provider_id, "class_": class_id, "change": amount}
              for (provider_id, class_id), amount in sorted(change.items()) if amount]
    if not params:
        return
    table = Inventory.__table__
    session.execute(update(table)
                    .where(table.c.resource_provider_id == bindparam("provider"),
                           table.c.resource_class_id == bindparam("class_"))
                    .values(used=table.c.used + bindparam("change")), params)


def _provider_ids(session: Session, writes: Mapping[str, ConsumerWrite]) -> dict[str, int]:
    wanted = {rp_uuid for write in writes.values() for rp_uuid in write.allocations}
    found = dict(session.execute(select(ResourceProvider.uuid, ResourceProvider.id)
                                 .where(ResourceProvider.uuid.in_(wanted))).all()) if wanted else {}
    missing = sorted(wanted - found.keys())
    if missing:
        raise BadRequest(f"Allocation for resource provider '{missing[0]}' that does not exist.")
    return found


def _check_consumer_generation(uuid: str, expected: Any, row: Any) -> None:
    if expected is UNSET:
        return
    actual = None if row is None else row.generation
    if expected != actual:
        shown = "null" if actual is None else actual
        raise ConcurrentUpdate(f"consumer generation conflict - expected {shown} but got "
                               f"{'null' if expected is None else expected} for consumer {uuid}; read "
                               "GET /allocations/{consumer_uuid} again and retry.")


def _consumer_changed(uuid: str, write: ConsumerWrite) -> Exception:
    if write.consumer_generation is UNSET:
        return _Retry()
    return ConcurrentUpdate(f"consumer generation conflict - consumer {uuid} was changed by another request "
                            "while this one ran; read its allocations again and retry.")


def _save_consumer(session: Session, uuid: str, write: ConsumerWrite, row: Any) -> int | None:
    """Create, update or (when left with nothing) delete the consumer; returns its id."""
    if row is None:
        if not write.allocations:
            return None
        values = {"uuid": uuid, "project_id": write.project_id or INCOMPLETE_PROJECT_ID,
                  "user_id": write.user_id or INCOMPLETE_USER_ID,
                  "consumer_type": write.consumer_type, "generation": 1}
        try:
            return session.execute(insert(Consumer).values(**values).returning(Consumer.id)).scalar_one()
        except IntegrityError:
            # Another request created the same consumer since we looked.
            raise _consumer_changed(uuid, write) from None
    owner_matches = and_(Consumer.id == row.id, Consumer.generation == row.generation)
    if not write.allocations:
        result = session.execute(delete(Consumer).where(owner_matches).execution_options(synchronize_session=False))
    else:
        values: dict[str, Any] = {"generation": row.generation + 1}
        if write.project_id is not None:
            values["project_id"] = write.project_id
        if write.user_id is not None:
            values["user_id"] = write.user_id
        if write.consumer_type is not None:
            values["consumer_type"] = write.consumer_type
        result = session.execute(update(Consumer).where(owner_matches).values(**values)
                                 .execution_options(synchronize_session=False))
    if result.rowcount != 1:
        raise _consumer_changed(uuid, write)
    return row.id


def _check_capacity(session: Session, writes: Mapping[str, ConsumerWrite], provider_ids: Mapping[str, int],
                    class_ids: Mapping[str, int], freed: Mapping[tuple[int, int], int]) -> None:
    """Each amount within its inventory's units, and each provider's total within its capacity.

    `freed` is what the consumers being written held before ({(provider id, class id): amount}):
    their old allocations are gone but the inventories' `used` still counts them.
    """
    needed: dict[tuple[str, str], int] = {}
    for write in writes.values():
        for rp_uuid, resources in write.allocations.items():
            for rc_name, amount in resources.items():
                needed[rp_uuid, rc_name] = needed.get((rp_uuid, rc_name), 0) + amount
    if not needed:
        return
    pids = {provider_ids[rp_uuid] for rp_uuid, _ in needed}
    cids = {class_ids[rc_name] for _, rc_name in needed}
    rows = session.execute(
        select(Inventory.resource_provider_id, Inventory.resource_class_id, Inventory.total, Inventory.reserved,
               Inventory.min_unit, Inventory.max_unit, Inventory.step_size, Inventory.allocation_ratio,
               Inventory.used)
        .where(Inventory.resource_provider_id.in_(pids), Inventory.resource_class_id.in_(cids)))
    inventories = {(row.resource_provider_id, row.resource_class_id): row for row in rows}
    for uuid, write in writes.items():
        for rp_uuid, resources in write.allocations.items():
            for rc_name, amount in resources.items():
                inv = inventories.get((provider_ids[rp_uuid], class_ids[rc_name]))
                if inv is None:
                    raise Conflict(f"Unable to allocate inventory: Inventory for '{rc_name}' on resource provider "
                                   f"'{rp_uuid}' invalid: the provider has no {rc_name} inventory (consumer "
                                   f"{uuid}).")
                problem = unit_problem(amount, inv.min_unit, inv.max_unit, inv.step_size)
                if problem:
                    raise Conflict(f"Unable to allocate inventory: Unable to create allocation for '{rc_name}' on "
                                   f"resource provider '{rp_uuid}'. The requested amount would violate inventory "
                                   f"constraints: {problem}.")
    for (rp_uuid, rc_name), amount in needed.items():
        key = (provider_ids[rp_uuid], class_ids[rc_name])
        inv = inventories[key]
        used = inv.used - freed.get(key, 0)
        if not fits(amount, used, inv.total, inv.reserved, inv.allocation_ratio):
            room = capacity(inv.total, inv.reserved, inv.allocation_ratio)
            raise NotEnoughResources(
                f"Unable to allocate inventory: Unable to create allocation for '{rc_name}' on resource provider "
                f"'{rp_uuid}'. The requested amount would exceed the capacity: requested {amount}, used "
                f"{used}, capacity {_number(room)}.")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
