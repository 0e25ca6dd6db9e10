"""What every resource client shares: the /v1 connection, and finding a resource by its name."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

from blazar_lite.client.http import ClientError, V1Client


class Manager:
    """The operations on one kind of resource, over a shared V1Client."""

    def __init__(self, api: V1Client) -> None:
        self.api = api


def find_by_name(items: Iterable[Mapping[str, Any]], field: str, name: str, kind: str) -> dict[str, Any]:
    """The one item whose `field` is `name`; ClientError 404 when none is, 409 when several are."""
    matches = [dict(item) for item in items if item.get(field) == name]
    if not matches:
        raise ClientError(404, f"No {kind} named {name}.")
    if len(matches) > 1:
        ids = ", ".join(str(item.get("id")) for item in matches)
        raise ClientError(409, f"{len(matches)} {kind}s are named {name} (ids {ids}); give an id instead.")
    return matches[0]


def is_uuid(value: str) -> bool:
    """Whether `value` reads as a uuid: resources named by uuid or by name tell the two apart so."""
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def segment(value: object) -> str:
    """`value` as one path segment, whatever characters it holds."""
    return quote(str(value), safe="")


def given(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that are set: for a PATCH a field left out keeps its value, so only what the
    caller gave is sent."""
    return {key: value for key, value in fields.items() if value is not None}


def with_query(path: str, params: Mapping[str, str | None]) -> str:
    """`path` with the query parameters that are set."""
    given = {key: value for key, value in params.items() if value is not None}
    return f"{path}?{urlencode(given)}" if given else path
