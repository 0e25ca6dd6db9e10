"""Reading instance request bodies: names, sizes (a flavor or vcpus/memory_mb/disk_gb), the
reservation, a target node. Every mistake is a BadRequest that names the field to fix."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from blazar_lite.exceptions import BadRequest
from blazar_lite.instances.models import MAX_NAME

MAX_INT = 2147483647
SIZE_FIELDS = ("vcpus", "memory_mb", "disk_gb")
# The least each size may be: an instance runs on at least one vCPU and some memory.
LOWEST = {"vcpus": 1, "memory_mb": 1, "disk_gb": 0}
CREATE_FIELDS = frozenset({"name", "flavor_id", *SIZE_FIELDS, "reservation_id", "host", "forthcoming"})
COMMIT_FIELDS = frozenset({"name", "flavor_id", *SIZE_FIELDS})
MODIFY_FIELDS = frozenset({"flavor_id", *SIZE_FIELDS})
# What a state change may ask for, in LXD's words.
STATE_ACTIONS = ("start", "stop")


@dataclass(frozen=True)
class Sizes:
    """What a request says about size: a flavor, or any of vcpus / memory_mb / disk_gb."""

    flavor_id: str | None = None
    vcpus: int | None = None
    memory_mb: int | None = None
    disk_gb: int | None = None

    @property
    def given(self) -> bool:
        return self.flavor_id is not None or any(getattr(self, f) is not None for f in SIZE_FIELDS)


@dataclass(frozen=True)
class CreateRequest:
    name: str | None
    sizes: Sizes
    reservation_id: str | None
    host: str | None
    forthcoming: bool


def is_uuid(value: str) -> bool:
    try:
        uuidlib.UUID(value)
    except ValueError:
        return False
    return True


def read_object(body: object, allowed: frozenset[str], what: str) -> Mapping[str, Any]:
    """`body`, checked to be a JSON object of `allowed` fields only (a 400 names any other)."""
    if not isinstance(body, Mapping):
        raise BadRequest(f"The body of {what} must be a JSON object.")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise BadRequest(f"Unknown field {', '.join(unknown)} in {what}; the fields are: {', '.join(sorted(allowed))}.")
    return body


def read_name(value: object, field: str = "name") -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"Invalid {field}: give a non-empty string.")
    if len(value) > MAX_NAME:
        raise BadRequest(f"Invalid {field}: at most {MAX_NAME} characters, not {len(value)}.")
    if value != value.strip():
        raise BadRequest(f"Invalid {field}: {value!r} starts or ends with spaces.")
    if "/" in value or value in (".", ".."):
        # The name is a path segment of /v1/instances/<name>: it must be reachable there.
        raise BadRequest(f"Invalid {field}: {value!r} cannot name an instance in a URL; leave out '/' and "
                         "do not use '.' or '..'.")
    if is_uuid(value):
        # Instances are found by uuid or by name: a name that is a uuid would make that ambiguous.
        raise BadRequest(f"Invalid {field}: {value} is a UUID; an instance name must not look like one.")
    return value


def _size(body: Mapping[str, Any], field: str) -> int | None:
    value = body.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"Invalid {field}: give an integer, not {value!r}.")
    if not LOWEST[field] <= value <= MAX_INT:
        raise BadRequest(f"Invalid {field}: {value} is not between {LOWEST[field]} and {MAX_INT}.")
    return value


def _reference(body: Mapping[str, Any], field: str) -> str | None:
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not is_uuid(value):
        raise BadRequest(f"Invalid {field}: {value!r} is not a UUID.")
    return str(uuidlib.UUID(value))


def read_sizes(body: Mapping[str, Any]) -> Sizes:
    sizes = Sizes(_reference(body, "flavor_id"), *(_size(body, field) for field in SIZE_FIELDS))
    given = [field for field in SIZE_FIELDS if getattr(sizes, field) is not None]
    if sizes.flavor_id is not None and given:
        raise BadRequest(f"Give either flavor_id or {', '.join(given)}, not both: the flavor sets every size.")
    return sizes


def read_create(body: object) -> CreateRequest:
    body = read_object(body, CREATE_FIELDS, "an instance create")
    forthcoming = body.get("forthcoming", False)
    if not isinstance(forthcoming, bool):
        raise BadRequest(f"Invalid forthcoming: give true or false, not {forthcoming!r}.")
    name = body.get("name")
    if name is None and not forthcoming:
        raise BadRequest("Missing name: every instance but a forthcoming one needs a name.")
    host = body.get("host")
    if host is not None and (not isinstance(host, str) or not host):
        raise BadRequest(f"Invalid host: give a node name, not {host!r}.")
    return CreateRequest(None if name is None else read_name(name), read_sizes(body),
                         _reference(body, "reservation_id"), host, forthcoming)


def read_commit(body: object) -> tuple[str | None, Sizes]:
    body = read_object({} if body is None else body, COMMIT_FIELDS, "an instance commit")
    name = body.get("name")
    return (None if name is None else read_name(name)), read_sizes(body)


def read_modify(body: object) -> Sizes:
    sizes = read_sizes(read_object(body, MODIFY_FIELDS, "an instance modify"))
    if not sizes.given:
        raise BadRequest("Nothing to modify: give flavor_id, or any of vcpus, memory_mb and disk_gb.")
    return sizes


def read_rename(body: object) -> str:
    body = read_object(body, frozenset({"name", "new_name"}), "an instance rename")
    # Ganeti calls the field new_name; name is accepted too.
    if ("name" in body) == ("new_name" in body):
        raise BadRequest("Give the new name as new_name (or name), once.")
    return read_name(body.get("new_name", body.get("name")), "new_name" if "new_name" in body else "name")


def read_state_action(body: object) -> str:
    """The `action` of a state change: start or stop."""
    body = read_object(body, frozenset({"action"}), "a state change")
    action = body.get("action")
    if action not in STATE_ACTIONS:
        raise BadRequest(f"Invalid action {action!r}: give {' or '.join(STATE_ACTIONS)}.")
    return action
