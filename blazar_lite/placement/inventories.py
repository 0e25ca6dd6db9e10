"""Inventories: how much of each resource class a provider offers, and on what terms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest, Conflict, NotFound
from blazar_lite.placement.common import bump_generation, get_provider, resource_class_ids
from blazar_lite.placement.models import Allocation, Inventory, ResourceClass, ResourceProvider

MAX_INT = 2147483647
FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")
DEFAULTS: dict[str, Any] = {"reserved": 0, "min_unit": 1, "max_unit": MAX_INT, "step_size": 1,
                            "allocation_ratio": 1.0}


def _render(inv: Inventory) -> dict[str, Any]:
    return {"allocation_ratio": inv.allocation_ratio, "max_unit": inv.max_unit, "min_unit": inv.min_unit,
            "reserved": inv.reserved, "step_size": inv.step_size, "total": inv.total}


def _rows(session: Session, provider: ResourceProvider) -> dict[str, Inventory]:
    rows = session.execute(select(ResourceClass.name, Inventory)
                           .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
                           .where(Inventory.resource_provider_id == provider.id)).all()
    return dict(rows)


def _complete(rc: str, fields: Mapping[str, Any], reserved_may_equal_total: bool) -> dict[str, Any]:
    """Fill defaults and check the fields make sense together; errors name the class."""
    values = {**DEFAULTS, **{k: v for k, v in fields.items() if k in FIELDS}}
    if "total" not in values:
        raise BadRequest(f"Inventory of {rc}: 'total' is required.")
    if values["reserved"] > values["total"] or (values["reserved"] == values["total"]
                                                 and not reserved_may_equal_total):
        raise BadRequest(f"Unable to update inventory for resource provider: inventory of {rc} has "
                         f"reserved {values['reserved']} "
                         f"{'greater than' if reserved_may_equal_total else 'not less than'} "
                         f"total {values['total']}.")
    if values["min_unit"] > values["max_unit"]:
        raise BadRequest(f"Inventory of {rc}: min_unit {values['min_unit']} is greater than "
                         f"max_unit {values['max_unit']}.")
    return values


def _classes_in_use(session: Session, provider: ResourceProvider, class_ids: list[int]) -> set[int]:
    if not class_ids:
        return set()
    return set(session.scalars(select(Allocation.resource_class_id).distinct()
                               .where(Allocation.resource_provider_id == provider.id,
                                      Allocation.resource_class_id.in_(class_ids))))


def _in_use_error(provider: ResourceProvider, names: list[str]) -> Conflict:
    return Conflict(f"Inventory for {', '.join(sorted(names))} on resource provider {provider.uuid} in use: "
                    "delete the allocations first.", code="placement.inventory.inuse")


def get_inventories(session: Session, provider_uuid: str) -> tuple[int, dict[str, dict[str, Any]]]:
    """The provider's generation and its inventory of every class."""
    provider = get_provider(session, provider_uuid)
    return provider.generation, {rc: _render(inv) for rc, inv in _rows(session, provider).items()}


def get_inventory(session: Session, provider_uuid: str, rc: str) -> tuple[int, dict[str, Any]]:
    provider = get_provider(session, provider_uuid)
    inv = _rows(session, provider).get(rc)
    if inv is None:
        raise NotFound(f"No inventory of class {rc} for {provider.uuid}.")
    return provider.generation, _render(inv)


def replace_inventories(session: Session, provider_uuid: str, generation: int | None,
                        inventories: Mapping[str, Mapping[str, Any]],
                        reserved_may_equal_total: bool = True) -> tuple[int, dict[str, dict[str, Any]]]:
    """Make the provider's inventory exactly `inventories`; classes left out are removed, which
    is refused (409) while allocations use them."""
    provider = get_provider(session, provider_uuid)
    expected = provider.generation if generation is None else generation
    if generation is not None and generation != provider.generation:
        _stale(provider, generation)
    class_ids = resource_class_ids(session, list(inventories))
    wanted = {rc: _complete(rc, fields, reserved_may_equal_total) for rc, fields in inventories.items()}
    _lock_first(session, provider, expected)
    existing = _rows(session, provider)
    removed = [rc for rc in existing if rc not in wanted]
    in_use = _classes_in_use(session, provider, [existing[rc].resource_class_id for rc in removed])
    if in_use:
        raise _in_use_error(provider, [rc for rc in removed if existing[rc].resource_class_id in in_use])
    for rc in removed:
        session.delete(existing[rc])
    for rc, values in wanted.items():
        inv = existing.get(rc)
        if inv is None:
            session.add(Inventory(resource_provider_id=provider.id, resource_class_id=class_ids[rc], **values))
        else:
            for key, value in values.items():
                setattr(inv, key, value)
    session.flush()
    return get_inventories(session, provider_uuid)


def add_inventory(session: Session, provider_uuid: str, rc: str, generation: int | None,
                  fields: Mapping[str, Any], reserved_may_equal_total: bool = True) -> tuple[int, dict[str, Any]]:
    """Add inventory of one class that the provider does not have yet (409 if it does)."""
    provider = get_provider(session, provider_uuid)
    if generation is not None and generation != provider.generation:
        _stale(provider, generation)
    if rc in _rows(session, provider):
        raise Conflict(f"Inventory for {rc} on resource provider {provider.uuid} already exists; update it with "
                       f"PUT .../inventories/{rc}.")
    inventories = {name: _render(inv) for name, inv in _rows(session, provider).items()}
    inventories[rc] = dict(fields)
    replace_inventories(session, provider_uuid, generation, inventories, reserved_may_equal_total)
    return get_inventory(session, provider_uuid, rc)


def set_inventory(session: Session, provider_uuid: str, rc: str, generation: int | None,
                  fields: Mapping[str, Any], reserved_may_equal_total: bool = True) -> tuple[int, dict[str, Any]]:
    """Replace the inventory of one class (404 if the provider has none of it)."""
    provider = get_provider(session, provider_uuid)
    if generation is not None and generation != provider.generation:
        _stale(provider, generation)
    current = _rows(session, provider)
    if rc not in current:
        resource_class_ids(session, [rc])
        raise NotFound(f"No inventory record with resource class for resource provider {provider.uuid}: {rc}; "
                       "add it with POST .../inventories first.")
    inventories = {name: _render(inv) for name, inv in current.items()}
    inventories[rc] = dict(fields)
    replace_inventories(session, provider_uuid, generation, inventories, reserved_may_equal_total)
    return get_inventory(session, provider_uuid, rc)


def delete_inventory(session: Session, provider_uuid: str, rc: str, generation: int | None = None) -> None:
    """Remove the inventory of one class; refused (409) while allocations use it."""
    provider = get_provider(session, provider_uuid)
    if generation is not None and generation != provider.generation:
        _stale(provider, generation)
    inv = _rows(session, provider).get(rc)
    if inv is None:
        raise NotFound(f"No inventory of class {rc} found for resource provider {provider.uuid}.")
    _lock_first(session, provider, generation)
    if _classes_in_use(session, provider, [inv.resource_class_id]):
        raise _in_use_error(provider, [rc])
    session.delete(inv)
    session.flush()


def delete_all_inventories(session: Session, provider_uuid: str, generation: int | None = None) -> None:
    """Remove every inventory of the provider; refused (409) while it has allocations."""
    provider = get_provider(session, provider_uuid)
    if generation is not None and generation != provider.generation:
        _stale(provider, generation)
    _lock_first(session, provider, generation)
    existing = _rows(session, provider)
    in_use = _classes_in_use(session, provider, [inv.resource_class_id for inv in existing.values()])
    if in_use:
        raise _in_use_error(provider, [rc for rc, inv in existing.items() if inv.resource_class_id in in_use])
    session.execute(delete(Inventory).where(Inventory.resource_provider_id == provider.id))


def _lock_first(session: Session, provider: ResourceProvider, expected: int | None) -> None:
    """Advance the provider's generation before any inventory row is written.

    Allocation writes lock the provider (its generation) and then its inventory rows, to count
    usage; an inventory write that locked a row first and the provider second could deadlock
    with them, so it takes the same order. A refusal after this point undoes the transaction.
    """
    bump_generation(session, provider, expected)


def _stale(provider: ResourceProvider, generation: int) -> None:
    from blazar_lite.exceptions import ConcurrentUpdate

    raise ConcurrentUpdate(f"resource provider generation conflict: {provider.uuid} is at generation "
                           f"{provider.generation}, not {generation}: Resource provider's generation already "
                           "changed. Please update the generation and try again.")
