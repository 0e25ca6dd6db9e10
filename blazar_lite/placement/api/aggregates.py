"""/placement/resource_providers/{uuid}/aggregates (1.1+; generations from 1.19)."""

from __future__ import annotations

from typing import Any

from flask_smorest import Blueprint
from marshmallow import Schema, fields, pre_load

from blazar_lite import web
from blazar_lite.placement import aggregates
from blazar_lite.placement.api import microversion
from blazar_lite.placement.api.common import Uuid, generation_field, read_only, versioned, writing

blp = Blueprint("placement_aggregates", __name__, description="Provider aggregates")


class AggregatesUpdate(Schema):
    aggregates = fields.List(Uuid(), required=True)
    resource_provider_generation = generation_field()


class AggregatesUpdateLegacy(Schema):
    """Before 1.19 the body is a bare JSON list of aggregate uuids."""

    aggregates = fields.List(Uuid(), required=True)

    @pre_load
    def _wrap(self, data: Any, **kwargs: Any) -> dict:
        # Naming the list lets errors point at 'aggregates', as they do from 1.19.
        return {"aggregates": data}


class AggregatesSchema(Schema):
    aggregates = fields.List(fields.String())
    resource_provider_generation = fields.Integer(metadata={"description": "From 1.19."})


def _render(generation: int, uuids: list[str]) -> dict:
    body: dict = {"aggregates": uuids}
    if microversion.at_least(19):
        body["resource_provider_generation"] = generation
    return body


@blp.route("/resource_providers/<string:uuid>/aggregates", methods=["GET"])
@blp.alt_response(200, schema=AggregatesSchema, description="The provider's aggregates.")
def list_provider_aggregates(uuid: str):  # type: ignore[no-untyped-def]
    """The uuids of the provider's aggregates (and its generation, from 1.19)."""
    microversion.require(1)
    return read_only(lambda session: _render(*aggregates.get_provider_aggregates(session, uuid)))


@blp.route("/resource_providers/<string:uuid>/aggregates", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": AggregatesUpdate}}})
@blp.alt_response(200, schema=AggregatesSchema, description="The provider's new aggregates.")
def set_provider_aggregates(uuid: str):  # type: ignore[no-untyped-def]
    """Replace the provider's aggregates. From 1.19 the body carries the provider generation
    (stale → 409) and the write advances it; before, the body is a bare list of uuids."""
    microversion.require(1)
    data = web.json_body(versioned(19, AggregatesUpdate, AggregatesUpdateLegacy))
    new_api = microversion.at_least(19)
    with writing() as session:
        return _render(*aggregates.set_provider_aggregates(
            session, uuid, data["aggregates"], data.get("resource_provider_generation"), bump=new_api))
