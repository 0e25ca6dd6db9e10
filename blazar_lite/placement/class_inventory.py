"""One class's inventory on one provider, read and changed without touching the provider's others.

A reservation provider carries the inventory of every active reservation on its host. Replacing
its whole inventory to change one reservation's class reads and rewrites all of them, so the
cost of starting a lease grows with the leases already running on the host. Here the change
reads one row (with the class's usage and the provider's generation) and writes one row; the
generation check is the same as for a whole replacement, so a concurrent writer still gets 409.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest, ConcurrentUpdate, Conflict, NotFound
from blazar_lite.placement.common import normalize_uuid
from blazar_lite.placement.models import Inventory, ResourceClass, ResourceProvider

FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")


@dataclass(frozen=True)
class ClassInventory:
    """A provider's inventory of one class as read before changing it: the fields it offers
    (None: no inventory of the class), the units allocations use, and the provider generation a
    change must still find. `resource_class_id` is None when no such class exists."""

    provider_uuid: str
    resource_class: str
    inventory: dict[str, Any] | None
    used: int
    generation: int
    provider_id: int
    resource_class_id: int | None
    inventory_id: int | None


def read_class_inventory(session: Session, provider_uuid: str, resource_class: str) -> ClassInventory:
    """The provider's inventory of `resource_class`, its usage and the provider's generation, in
    one statement; 404 when there is no such provider."""
    try:
        uuid = normalize_uuid(provider_uuid)
    except BadRequest:
        uuid = None
    row = session.execute(
        select(ResourceProvider.id, ResourceProvider.generation, ResourceClass.id, Inventory.id,
               *(getattr(Inventory, name) for name in FIELDS), func.coalesce(Inventory.used, 0))
        .select_from(ResourceProvider)
        .outerjoin(ResourceClass, ResourceClass.name == resource_class)
        .outerjoin(Inventory, and_(Inventory.resource_provider_id == ResourceProvider.id,
                                   Inventory.resource_class_id == ResourceClass.id))
        .where(ResourceProvider.uuid == uuid)).first() if uuid else None
    if row is None:
        raise NotFound(f"No resource provider with uuid {provider_uuid} found.")
    provider_id, generation, class_id, inventory_id, *values, in_use = row
    inventory = None if inventory_id is None else dict(zip(FIELDS, values, strict=True))
    return ClassInventory(uuid, resource_class, inventory, int(in_use or 0), generation, provider_id, class_id,
                          inventory_id)


def write_class_inventory(session: Session, current: ClassInventory, fields: Mapping[str, Any] | None) -> None:
    """Make the provider's inventory of the class exactly `fields` (all of FIELDS), or remove it
    (None, refused with 409 while allocations use it), leaving its other classes alone; then
    advance the provider's generation from the one `current` read (ConcurrentUpdate when it
    moved since)."""
    if fields is not None and set(fields) != set(FIELDS):
        raise ValueError(f"an inventory needs exactly the fields {', '.join(FIELDS)}")
    if current.resource_class_id is None:
        raise BadRequest(f"Unknown resource class in request: {current.resource_class}. "
                         "Create custom classes with PUT /resource_classes/CUSTOM_<NAME> first.")
    values = dict(fields) if fields is not None else None
    if values is None and current.inventory_id is None:
        return
    if values is None and current.used:
        raise Conflict(f"Inventory for {current.resource_class} on resource provider {current.provider_uuid} in "
                       "use: delete the allocations first.", code="placement.inventory.inuse")
    # The generation first: allocation writes lock the provider before its inventory rows (to
    # count usage), and so must this, or the two could deadlock.
    # ORM-enabled UPDATE: a provider already loaded in this session sees its new generation.
    bumped = session.execute(update(ResourceProvider)
                             .where(ResourceProvider.id == current.provider_id,
                                    ResourceProvider.generation == current.generation)
                             .values(generation=current.generation + 1))
    if bumped.rowcount != 1:
        raise ConcurrentUpdate(
            f"resource provider generation conflict: {current.provider_uuid}: Resource provider's generation "
            "already changed. Please update the generation and try again.")
    if values is None:
        session.execute(delete(Inventory).where(Inventory.id == current.inventory_id))
    elif current.inventory_id is None:
        session.execute(insert(Inventory).values(resource_provider_id=current.provider_id,
                                                 resource_class_id=current.resource_class_id, **values))
    else:
        session.execute(update(Inventory).where(Inventory.id == current.inventory_id).values(**values))
