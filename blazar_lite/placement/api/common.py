"""Helpers shared by the Placement handlers: transactions, query strings, schemas."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

from flask import Response, request
from marshmallow import Schema, ValidationError, fields, validate
from sqlalchemy.orm import Session

from blazar_lite import web
from blazar_lite.json_fields import Int
from blazar_lite.placement.api import microversion
from blazar_lite.placement.query import check_allowed

T = TypeVar("T")


@contextlib.contextmanager
def writing() -> Iterator[Session]:
    """Authorize a Placement write, then run it in one transaction."""
    web.enforce("placement:write")
    with web.runtime().db.transaction() as session:
        yield session


@contextlib.contextmanager
def reading() -> Iterator[Session]:
    web.enforce("placement:read")
    with web.runtime().db.read() as session:
        yield session


def query_args(allowed: set[str]) -> dict[str, list[str]]:
    """The query string as lists of values, refusing parameters the route does not know."""
    args = {key: request.args.getlist(key) for key in request.args}
    check_allowed(args, allowed)
    return args


def read_only(read: Callable[[Session], T]) -> T:
    """Answer a GET that takes no query parameters: refuse any, then `read` in a read transaction."""
    query_args(set())
    with reading() as session:
        return read(session)


def single(args: dict[str, list[str]], key: str) -> str | None:
    values = args.get(key)
    if not values:
        return None
    if len(values) > 1:
        from blazar_lite.exceptions import BadRequest

        raise BadRequest(f"Query parameter {key} may be given only once.")
    return values[0]


def _is_uuid(value: str) -> None:
    import uuid

    try:
        uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        raise ValidationError(f"{value!r} is not a UUID.") from None


class Uuid(fields.String):
    """A UUID string (with or without dashes), returned in canonical form."""

    def _deserialize(self, value, attr, data, **kwargs):  # type: ignore[no-untyped-def]
        import uuid

        text = super()._deserialize(value, attr, data, **kwargs)
        _is_uuid(text)
        return str(uuid.UUID(text))


def versioned(minor: int, newer: type[Schema], older: type[Schema]) -> Schema:
    """The schema for this request: `newer` from placement 1.`minor`, else `older`."""
    return newer() if microversion.at_least(minor) else older()



MAX_INT = 2147483647


def generation_field() -> Int:
    return Int(required=True, validate=validate.Range(min=0, max=MAX_INT),
               metadata={"description": "The generation the caller last read; 409 when stale."})


def empty(status: int, location: str | None = None) -> Response:
    """A bodiless answer; like Placement, it names no content type."""
    response = Response(status=status, headers={"Location": location} if location else {})
    del response.headers["Content-Type"]
    return response


def ensure(create: Callable[[Session], bool], location: str) -> Response:
    """Create something unless it exists: 201 when `create` made it, 204 when it was there
    already; a Location header and no body either way."""
    with writing() as session:
        created = create(session)
    return empty(201 if created else 204, location)
