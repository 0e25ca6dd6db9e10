"""/placement/resource_providers/{uuid}/usages and /placement/usages (1.9+, by consumer type from 1.38)."""

from __future__ import annotations

import re

from flask_smorest import Blueprint
from marshmallow import Schema, fields
from sqlalchemy.orm import Session

from blazar_lite.exceptions import BadRequest
from blazar_lite.placement import usages
from blazar_lite.placement.api import microversion
from blazar_lite.placement.api.common import query_args, read_only, reading, single
from blazar_lite.placement.common import get_provider

blp = Blueprint("placement_usages", __name__, description="Usages")

_MAX_ID_LENGTH = 255
_CONSUMER_TYPE = re.compile(r"^([A-Z0-9_]+|all|unknown)$")


class ProviderUsagesSchema(Schema):
    resource_provider_generation = fields.Integer()
    usages = fields.Dict(keys=fields.String(), values=fields.Integer())


class UsagesSchema(Schema):
    usages = fields.Dict(keys=fields.String(), values=fields.Raw(),
                         metadata={"description": "{class: amount}; from 1.38 {consumer type: {consumer_count, "
                                                  "class: amount}}."})


def _provider_usages(session: Session, uuid: str) -> dict:
    used = usages.provider_usages(session, uuid)
    return {"resource_provider_generation": get_provider(session, uuid).generation, "usages": used}


@blp.route("/resource_providers/<string:uuid>/usages", methods=["GET"])
@blp.alt_response(200, schema=ProviderUsagesSchema, description="Allocated amount per class.")
def provider_usages(uuid: str):  # type: ignore[no-untyped-def]
    """How much of each class of the provider's inventory is allocated."""
    return read_only(lambda session: _provider_usages(session, uuid))


def _id_param(args: dict[str, list[str]], key: str) -> str | None:
    value = single(args, key)
    if value is not None and not 1 <= len(value) <= _MAX_ID_LENGTH:
        raise BadRequest(f"Invalid query string parameter {key}: it must be 1 to {_MAX_ID_LENGTH} characters long.")
    return value


@blp.route("/usages", methods=["GET"])
@blp.alt_response(200, schema=UsagesSchema, description="Allocated totals of the project (and user).")
def project_usages():  # type: ignore[no-untyped-def]
    """Totals allocated to a project's consumers (optionally one user's); from 1.38 grouped by
    consumer type, `consumer_type` limiting them to one type, `all` or `unknown`."""
    microversion.require(9)
    by_type = microversion.at_least(38)
    args = query_args({"project_id", "user_id", "consumer_type"} if by_type else {"project_id", "user_id"})
    project_id = _id_param(args, "project_id")
    if project_id is None:
        raise BadRequest("Invalid query string parameters: 'project_id' is a required property.")
    user_id = _id_param(args, "user_id")
    consumer_type = single(args, "consumer_type")
    if consumer_type is not None and (len(consumer_type) > _MAX_ID_LENGTH or not _CONSUMER_TYPE.match(consumer_type)):
        raise BadRequest(f"Invalid query string parameter consumer_type {consumer_type!r}: expected a consumer "
                         "type (A-Z, 0-9 and _), 'all' or 'unknown'.")
    with reading() as session:
        if by_type:
            return {"usages": usages.project_usages_by_type(session, project_id, user_id, consumer_type)}
        return {"usages": usages.project_usages(session, project_id, user_id)}
