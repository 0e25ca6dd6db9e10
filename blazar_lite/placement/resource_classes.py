"""Resource classes: the standard ones (VCPU, MEMORY_MB, ...) and custom CUSTOM_* classes."""

from __future__ import annotations

import re

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest, Conflict, NotFound
from blazar_lite.placement.common import insert_missing
from blazar_lite.placement.models import Allocation, Inventory, ResourceClass

CUSTOM_PREFIX = "CUSTOM_"
CUSTOM_NAME = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
MAX_NAME_LENGTH = 255


def is_custom(name: str) -> bool:
    return name.startswith(CUSTOM_PREFIX)


def check_custom_name(name: str) -> None:
    """Refuse a name that cannot be a custom class, saying what a valid one looks like."""
    if len(name) > MAX_NAME_LENGTH or not CUSTOM_NAME.match(name):
        raise BadRequest(f"Invalid resource class name {name!r}: a custom resource class name must start with "
                         f"{CUSTOM_PREFIX}, use only A-Z, 0-9 and _, and be at most {MAX_NAME_LENGTH} characters.")


def _get(session: Session, name: str) -> ResourceClass:
    rc = session.scalar(select(ResourceClass).where(ResourceClass.name == name))
    if rc is None:
        raise NotFound(f"No such resource class {name}.")
    return rc


def list_resource_classes(session: Session) -> list[str]:
    """Every class name, standard classes first (in their published order), then custom ones."""
    return list(session.scalars(select(ResourceClass.name).order_by(ResourceClass.id)))


def show_resource_class(session: Session, name: str) -> str:
    """The class's name; 404 when there is no such class."""
    return _get(session, name).name


def create_resource_class(session: Session, name: str) -> str:
    """Create a custom class; 409 placement.duplicate_name when it exists already."""
    check_custom_name(name)
    if not insert_missing(session, ResourceClass.name, [name]):
        raise Conflict(f"Conflicting resource class already exists: {name}.", code="placement.duplicate_name")
    return name


def ensure_resource_class(session: Session, name: str) -> bool:
    """Create a custom class unless it exists; True when this call created it."""
    check_custom_name(name)
    return bool(insert_missing(session, ResourceClass.name, [name]))


def rename_resource_class(session: Session, name: str, new_name: str) -> str:
    """Rename a custom class (inventories and allocations follow it, they refer to it by id)."""
    check_custom_name(new_name)
    rc = _get(session, name)
    if not is_custom(name):
        raise BadRequest(f"Cannot update standard resource class {name}: only {CUSTOM_PREFIX}* classes "
                         "may be renamed.")
    if new_name != name:
        if session.scalar(select(ResourceClass.id).where(ResourceClass.name == new_name)) is not None:
            raise Conflict(f"Resource class already exists: {new_name}.", code="placement.duplicate_name")
        rc.name = new_name
        session.flush()
    return new_name


def delete_resource_class(session: Session, name: str) -> None:
    """Delete a custom class that no inventory or allocation refers to."""
    rc = _get(session, name)
    if not is_custom(name):
        raise BadRequest(f"Cannot delete standard resource class {name}: only {CUSTOM_PREFIX}* classes "
                         "may be deleted.")
    in_use = session.scalar(select(exists().where(Inventory.resource_class_id == rc.id)
                                   | exists().where(Allocation.resource_class_id == rc.id)))
    if in_use:
        raise Conflict(f"Unable to delete resource class {name}: it is in use in inventory or allocations. "
                       "Remove the inventories of this class first.", code="placement.inventory.inuse")
    session.delete(rc)
    session.flush()
