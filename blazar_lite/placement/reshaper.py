"""The reshaper: move inventory between providers together with the allocations that use it.

Typical use is a compute node that splits its VCPU inventory out to child providers: the
inventories of several providers and the allocations of the consumers on them change in one
transaction, so no reader ever sees allocations without the inventory they consume.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest, ConcurrentUpdate
from blazar_lite.placement import inventories as inventory_service
from blazar_lite.placement.allocations import ConsumerWrite, write_allocations
from blazar_lite.placement.common import normalize_uuid
from blazar_lite.placement.models import ResourceProvider


def reshape(session: Session, inventories: Mapping[str, tuple[int, Mapping[str, Mapping[str, Any]]]],
            allocations: Mapping[str, ConsumerWrite | Mapping[str, Any]]) -> None:
    """Give each provider in `inventories` ({uuid: (generation, {class: fields})}) exactly those
    inventories, and each consumer in `allocations` exactly its allocations, all or nothing.

    The named consumers' old allocations are gone before the inventories change, so inventory
    they used may be removed; inventory still used by anyone else may not (409 inventory in use).
    The new allocations are checked against the new inventories.
    """
    wanted = {normalize_uuid(uuid, "resource provider uuid"): (generation, fields)
              for uuid, (generation, fields) in inventories.items()}
    if not wanted:
        raise BadRequest("Invalid input for field 'inventories': name at least one resource provider.")
    actual = dict(session.execute(select(ResourceProvider.uuid, ResourceProvider.generation)
                                  .where(ResourceProvider.uuid.in_(wanted))).all())
    for uuid, (generation, _) in sorted(wanted.items()):
        if uuid not in actual:
            raise BadRequest(f"Resource provider {uuid} in inventories not found.")
        if generation != actual[uuid]:
            raise ConcurrentUpdate(f"resource provider generation conflict for provider {uuid}: actual: "
                                   f"{actual[uuid]}, given: {generation}")

    def replace_inventories(session: Session) -> None:
        # A retried attempt starts from a savepoint: reload the providers the ORM may hold stale.
        session.execute(select(ResourceProvider).where(ResourceProvider.uuid.in_(wanted))
                        .execution_options(populate_existing=True)).all()
        for uuid, (generation, fields) in sorted(wanted.items()):
            inventory_service.replace_inventories(session, uuid, generation, fields)

    writes = {uuid: w if isinstance(w, ConsumerWrite) else ConsumerWrite(**w) for uuid, w in allocations.items()}
    write_allocations(session, writes, before_check=replace_inventories)
