"""Traits: qualitative capabilities of providers (standard os-traits names and CUSTOM_* ones)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlalchemy import delete, exists, select
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest, Conflict, NotFound
from blazar_lite.placement.common import (
    bump_generation,
    get_provider,
    insert_missing,
    provider_links,
    replace_provider_links,
    trait_ids,
)
from blazar_lite.placement.models import Trait, provider_traits

CUSTOM_PREFIX = "CUSTOM_"
CUSTOM_NAME = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
MAX_NAME_LENGTH = 255


def check_custom_name(name: str) -> None:
    """Refuse a name that cannot be a custom trait, saying what a valid one looks like."""
    if len(name) > MAX_NAME_LENGTH or not CUSTOM_NAME.match(name):
        raise BadRequest(f"The trait {name!r} is invalid. A valid trait must be no longer than {MAX_NAME_LENGTH} "
                         f'characters, start with the prefix "{CUSTOM_PREFIX}" and use following characters: '
                         '"A"-"Z", "0"-"9" and "_".')


def list_traits(session: Session, *, names: Iterable[str] | None = None, prefix: str | None = None,
                associated: bool | None = None) -> list[str]:
    """Trait names, sorted, limited to `names`, to those starting with `prefix`, and to those some
    provider has (associated=True) or no provider has (associated=False)."""
    stmt = select(Trait.name).order_by(Trait.name)
    if names is not None:
        stmt = stmt.where(Trait.name.in_(set(names)))
    if prefix is not None:
        stmt = stmt.where(Trait.name.startswith(prefix, autoescape=True))
    if associated is not None:
        used = exists().where(provider_traits.c.trait_id == Trait.id)
        stmt = stmt.where(used if associated else ~used)
    return list(session.scalars(stmt))


def trait_exists(session: Session, name: str) -> bool:
    return session.scalar(select(Trait.id).where(Trait.name == name)) is not None


def show_trait(session: Session, name: str) -> None:
    """Nothing when the trait exists; 404 otherwise."""
    if not trait_exists(session, name):
        raise NotFound(f"No such trait(s): {name}.")


def ensure_trait(session: Session, name: str) -> bool:
    """Create a custom trait unless it exists; True when this call created it."""
    check_custom_name(name)
    return bool(insert_missing(session, Trait.name, [name]))


def ensure_traits(session: Session, names: Iterable[str]) -> set[str]:
    """Make every named trait exist: missing CUSTOM_* traits are created, while a missing name
    outside that namespace is a 400 (only os-traits may define standard traits). Returns the
    names this call created."""
    wanted = set(names)
    present = set(session.scalars(select(Trait.name).where(Trait.name.in_(wanted)))) if wanted else set()
    missing = wanted - present
    unknown_standard = sorted(n for n in missing if not n.startswith(CUSTOM_PREFIX))
    if unknown_standard:
        raise BadRequest(f"No such trait(s): {', '.join(unknown_standard)}. Only {CUSTOM_PREFIX}* traits can be "
                         "created; standard traits come from os-traits.")
    for name in missing:
        check_custom_name(name)
    return insert_missing(session, Trait.name, missing)


def delete_trait(session: Session, name: str) -> None:
    """Delete a custom trait that no provider has."""
    trait = session.scalar(select(Trait).where(Trait.name == name))
    if trait is None:
        raise NotFound(f"No such trait(s): {name}.")
    if not name.startswith(CUSTOM_PREFIX):
        raise BadRequest(f"Cannot delete standard trait {name}: only {CUSTOM_PREFIX}* traits may be deleted.")
    if session.scalar(select(exists().where(provider_traits.c.trait_id == trait.id))):
        raise Conflict(f"The trait {name} is in use by a resource provider. Remove it from every provider "
                       "before deleting it.")
    session.delete(trait)
    session.flush()


def _provider_trait_names(session: Session, provider_id: int) -> list[str]:
    return provider_links(session, provider_id, provider_traits.c.trait_id, Trait.name)


def get_provider_traits(session: Session, provider_uuid: str) -> tuple[int, list[str]]:
    """The provider's generation and its traits, sorted."""
    provider = get_provider(session, provider_uuid)
    return provider.generation, _provider_trait_names(session, provider.id)


def set_provider_traits(session: Session, provider_uuid: str, generation: int | None,
                        names: Iterable[str]) -> tuple[int, list[str]]:
    """Replace the provider's traits with `names` (all must exist; 400 names the unknown ones).

    `generation` is the one the caller read (409 placement.concurrent_update when stale; None
    skips the check). The provider's generation advances even when the set is unchanged, as a
    write always does. Returns the new generation and traits.
    """
    provider = get_provider(session, provider_uuid)
    ids = trait_ids(session, set(names))
    bump_generation(session, provider, generation)
    replace_provider_links(session, provider.id, provider_traits.c.trait_id, set(ids.values()))
    return provider.generation, _provider_trait_names(session, provider.id)


def delete_provider_traits(session: Session, provider_uuid: str, generation: int | None = None) -> int:
    """Remove every trait from the provider; returns its new generation."""
    provider = get_provider(session, provider_uuid)
    bump_generation(session, provider, generation)
    session.execute(delete(provider_traits).where(provider_traits.c.resource_provider_id == provider.id))
    return provider.generation
