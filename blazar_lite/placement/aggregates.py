"""Provider aggregates: named (by uuid) groups of providers, created on first use."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest, ConcurrentUpdate
from blazar_lite.placement.common import (
    bump_generation,
    get_provider,
    insert_missing,
    normalize_uuid,
    provider_links,
    replace_provider_links,
)
from blazar_lite.placement.models import Aggregate, ResourceProvider, provider_aggregates


def _provider_aggregate_uuids(session: Session, provider_id: int) -> list[str]:
    return provider_links(session, provider_id, provider_aggregates.c.aggregate_id, Aggregate.uuid)


def get_provider_aggregates(session: Session, provider_uuid: str) -> tuple[int, list[str]]:
    """The provider's generation and the uuids of its aggregates, sorted."""
    provider = get_provider(session, provider_uuid)
    return provider.generation, _provider_aggregate_uuids(session, provider.id)


def _canonical(aggregate_uuids: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    repeated: set[str] = set()
    for value in aggregate_uuids:
        canonical = normalize_uuid(value, "aggregate uuid")
        (repeated if canonical in seen else seen).add(canonical)
    if repeated:
        raise BadRequest(f"Invalid aggregates: {', '.join(sorted(repeated))} named more than once; "
                         "list each aggregate once.")
    return seen


def set_provider_aggregates(session: Session, provider_uuid: str, aggregate_uuids: Iterable[str],
                            generation: int | None = None, *, bump: bool = True) -> tuple[int, list[str]]:
    """Make the provider a member of exactly these aggregates (unknown ones are created).

    `generation` is the one the caller read (409 placement.concurrent_update when stale; None
    skips the check). `bump` False leaves the generation alone, as Placement did before
    microversion 1.19. Returns the provider's generation and aggregates afterwards.
    """
    provider = get_provider(session, provider_uuid)
    wanted_uuids = _canonical(aggregate_uuids)
    if bump:
        bump_generation(session, provider, generation)
    elif generation is not None and generation != provider.generation:
        raise ConcurrentUpdate(f"resource provider generation conflict: {provider.uuid} is at generation "
                               f"{provider.generation}, not {generation}; read the provider again and retry.")
    insert_missing(session, Aggregate.uuid, wanted_uuids)
    wanted = set(session.scalars(select(Aggregate.id).where(Aggregate.uuid.in_(wanted_uuids)))) \
        if wanted_uuids else set()
    replace_provider_links(session, provider.id, provider_aggregates.c.aggregate_id, wanted)
    return provider.generation, _provider_aggregate_uuids(session, provider.id)


def aggregate_members(session: Session, aggregate_uuids: Iterable[str]) -> dict[str, list[str]]:
    """The uuids of the providers in each aggregate, sorted; one statement whatever the number."""
    members: dict[str, list[str]] = {uuid: [] for uuid in aggregate_uuids}
    if members:
        links = provider_aggregates
        rows = session.execute(select(Aggregate.uuid, ResourceProvider.uuid)
                               .join(links, links.c.aggregate_id == Aggregate.id)
                               .join(ResourceProvider, ResourceProvider.id == links.c.resource_provider_id)
                               .where(Aggregate.uuid.in_(list(members)))
                               .order_by(ResourceProvider.uuid)).all()
        for aggregate_uuid, provider_uuid in rows:
            members[aggregate_uuid].append(provider_uuid)
    return members
