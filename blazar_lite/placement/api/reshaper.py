"""POST /placement/reshaper (1.30): replace inventories and move allocations in one step."""

from __future__ import annotations

from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from blazar_lite import web
from blazar_lite.placement import reshaper
from blazar_lite.placement.api import microversion
from blazar_lite.placement.api.allocations import (
    AllocationsV1_28,
    AllocationsV1_34,
    AllocationsV1_38,
    TidySchema,
    consumer_entry_schema,
    consumer_write,
)
from blazar_lite.placement.api.common import Uuid, empty, writing
from blazar_lite.placement.api.inventories import InventoriesReplace

blp = Blueprint("placement_reshaper", __name__, description="Reshaper")


def _reshape_schema(entry: type[Schema]) -> type[Schema]:
    class Reshape(TidySchema):
        inventories = fields.Dict(keys=Uuid(), values=fields.Nested(InventoriesReplace), required=True,
                                  error_messages={"required": "'inventories' is a required property"},
                                  validate=validate.Length(min=1, error="name at least one resource provider."))
        # May be empty: some of the inventory that moves may have no allocations yet.
        allocations = fields.Dict(keys=Uuid(), values=fields.Nested(entry), required=True,
                                  error_messages={"required": "'allocations' is a required property"})

    Reshape.__name__ = f"Reshape{entry.__name__}"
    return Reshape


_SCHEMAS = {entry: _reshape_schema(entry) for entry in (AllocationsV1_28, AllocationsV1_34, AllocationsV1_38)}


@blp.route("/reshaper", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": _SCHEMAS[AllocationsV1_38]}}})
@blp.alt_response(204, description="The inventories and allocations are replaced.")
def reshape():  # type: ignore[no-untyped-def]
    """Atomically replace the inventories of several providers and the allocations of several
    consumers (1.30); 409 when a provider or consumer generation is stale, inventory still in
    use would be removed, or the allocations do not fit the new inventories."""
    microversion.require(30)
    data = web.json_body(_SCHEMAS[consumer_entry_schema()]())
    inventories = {uuid: (entry["resource_provider_generation"], entry["inventories"])
                   for uuid, entry in data["inventories"].items()}
    with writing() as session:
        reshaper.reshape(session, inventories,
                         {uuid: consumer_write(entry) for uuid, entry in data["allocations"].items()})
    return empty(204)
