"""Look-ups and the generation check that every Placement operation shares."""

from __future__ import annotations

import uuid as uuidlib

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest, ConcurrentUpdate, NotFound
from blazar_lite.placement.models import ResourceClass, ResourceProvider


def normalize_uuid(value: str, what: str = "uuid") -> str:
    """Canonical lower-case dashed form; Placement accepts UUIDs with or without dashes."""
    try:
        return str(uuidlib.UUID(str(value)))
    except ValueError:
        raise BadRequest(f"Invalid {what}: {value!r} is not a UUID.") from None


def get_provider(session: Session, uuid: str) -> ResourceProvider:
    provider = session.scalar(select(ResourceProvider).where(ResourceProvider.uuid == normalize_uuid(uuid)))
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


def bump_generation(session: Session, provider: ResourceProvider, expected: int | None = None) -> int:
    """Advance the provider's generation, refusing when it moved since `expected` was read.

    The conditional UPDATE is the concurrency control: two writers that read the same generation
    cannot both advance it, so the second one fails with 409 instead of overwriting.
    """
    expected = provider.generation if expected is None else expected
    result = session.execute(
        update(ResourceProvider)
        .where(ResourceProvider.id == provider.id, ResourceProvider.generation == expected)
        .values(generation=expected + 1)
        .execution_options(synchronize_session=False))
    if result.rowcount != 1:
        raise ConcurrentUpdate(
            f"resource provider generation conflict: {provider.uuid} is no longer at generation {expected}; "
            "read the provider again and retry.")
    provider.generation = expected + 1
    return provider.generation


def trait_ids(session: Session, names: set[str]) -> dict[str, int]:
    """Ids of the named traits; an unknown name is a 400 that says which."""
    from blazar_lite.placement.models import Trait

    found = dict(session.execute(select(Trait.name, Trait.id).where(Trait.name.in_(names))).all()) \
        if names else {}
    missing = sorted(set(names) - found.keys())
    if missing:
        raise BadRequest(f"No such trait(s): {', '.join(missing)}.")
    return found


def usage_subquery():  # type: ignore[no-untyped-def]
    """Per provider and class, the sum of allocations (a derived table to LEFT JOIN)."""
    from sqlalchemy import func

    from blazar_lite.placement.models import Allocation

    return (select(Allocation.resource_provider_id.label("resource_provider_id"),
                   Allocation.resource_class_id.label("resource_class_id"),
                   func.sum(Allocation.used).label("used"))
            .group_by(Allocation.resource_provider_id, Allocation.resource_class_id)
            .subquery("usage"))
