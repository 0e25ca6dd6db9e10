"""Standard resource classes and traits, as published by os-resource-classes and os-traits."""

from __future__ import annotations

import os_resource_classes
import os_traits
from sqlalchemy import Engine, select

from blazar_lite.placement.models import ResourceClass, Trait

STANDARD_RESOURCE_CLASSES: tuple[str, ...] = tuple(os_resource_classes.STANDARDS)
STANDARD_TRAITS: frozenset[str] = frozenset(os_traits.get_traits())


def sync_standard_names(engine: Engine) -> None:
    """Insert any standard class or trait the database lacks (new library releases add some)."""
    from sqlalchemy.orm import Session

    with Session(engine) as session, session.begin():
        for model, names in ((ResourceClass, STANDARD_RESOURCE_CLASSES), (Trait, sorted(STANDARD_TRAITS))):
            have = set(session.scalars(select(model.name)))
            session.add_all(model(name=n) for n in names if n not in have)
