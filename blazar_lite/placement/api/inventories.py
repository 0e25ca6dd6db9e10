"""/placement/resource_providers/{uuid}/inventories[/{resource_class}]."""

from __future__ import annotations

from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from blazar_lite import web
from blazar_lite.placement import inventories
from blazar_lite.placement.api import microversion
from blazar_lite.placement.api.common import MAX_INT, Int, empty, generation_field, read_only, writing

blp = Blueprint("placement_inventories", __name__, description="Inventories of resource providers")

_CLASS_NAME = validate.Regexp(r"^[A-Z0-9_]+$", error="Resource class names are upper case letters, digits and _.")


class InventoryFields(Schema):
    total = Int(required=True, validate=validate.Range(min=1, max=MAX_INT))
    reserved = Int(validate=validate.Range(min=0, max=MAX_INT))
    min_unit = Int(validate=validate.Range(min=1, max=MAX_INT))
    max_unit = Int(validate=validate.Range(min=1, max=MAX_INT))
    step_size = Int(validate=validate.Range(min=1, max=MAX_INT))
    allocation_ratio = fields.Float(validate=validate.Range(min=0, min_inclusive=False, max=3.40282e38))


class InventoryUpdate(InventoryFields):
    resource_provider_generation = generation_field()


class InventoryCreate(InventoryUpdate):
    resource_class = fields.String(required=True, validate=[validate.Length(max=255), _CLASS_NAME])


class InventoriesReplace(Schema):
    resource_provider_generation = generation_field()
    inventories = fields.Dict(keys=fields.String(validate=[validate.Length(max=255), _CLASS_NAME]),
                              values=fields.Nested(InventoryFields), required=True)


class InventorySchema(InventoryFields):
    resource_provider_generation = fields.Integer()


class InventoriesSchema(Schema):
    resource_provider_generation = fields.Integer()
    inventories = fields.Dict(keys=fields.String(), values=fields.Nested(InventoryFields))


def _may_reserve_all() -> bool:
    return microversion.at_least(26)


def _one(generation: int, fields_: dict) -> dict:
    return {**fields_, "resource_provider_generation": generation}


def _all(generation: int, invs: dict) -> dict:
    return {"inventories": invs, "resource_provider_generation": generation}


@blp.route("/resource_providers/<string:uuid>/inventories", methods=["GET"])
@blp.alt_response(200, schema=InventoriesSchema, description="Every inventory of the provider.")
def list_inventories(uuid: str):  # type: ignore[no-untyped-def]
    """The provider's inventory of every class, with its generation."""
    return read_only(lambda session: _all(*inventories.get_inventories(session, uuid)))


@blp.route("/resource_providers/<string:uuid>/inventories", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": InventoriesReplace}}})
@blp.alt_response(200, schema=InventoriesSchema, description="The provider's new inventories.")
def replace_inventories(uuid: str):  # type: ignore[no-untyped-def]
    """Replace all inventories; classes left out are removed (409 while in use)."""
    data = web.json_body(InventoriesReplace())
    with writing() as session:
        return _all(*inventories.replace_inventories(session, uuid, data["resource_provider_generation"],
                                                     data["inventories"], _may_reserve_all()))


@blp.route("/resource_providers/<string:uuid>/inventories", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": InventoryCreate}}})
@blp.alt_response(201, schema=InventorySchema, description="The new inventory, with a Location header.")
def create_inventory(uuid: str):  # type: ignore[no-untyped-def]
    """Add inventory of a class the provider does not have yet."""
    data = web.json_body(InventoryCreate())
    rc = data.pop("resource_class")
    generation = data.pop("resource_provider_generation")
    with writing() as session:
        body = _one(*inventories.add_inventory(session, uuid, rc, generation, data, _may_reserve_all()))
    return body, 201, {"Location": f"/placement/resource_providers/{uuid}/inventories/{rc}"}


@blp.route("/resource_providers/<string:uuid>/inventories", methods=["DELETE"])
@blp.alt_response(204, description="Every inventory removed.")
def delete_inventories(uuid: str):  # type: ignore[no-untyped-def]
    """Remove every inventory of the provider (1.5); 409 while it has allocations."""
    microversion.require(5)
    with writing() as session:
        inventories.delete_all_inventories(session, uuid)
    return empty(204)


@blp.route("/resource_providers/<string:uuid>/inventories/<string:resource_class>", methods=["GET"])
@blp.alt_response(200, schema=InventorySchema, description="The inventory of one class.")
def show_inventory(uuid: str, resource_class: str):  # type: ignore[no-untyped-def]
    """The provider's inventory of one class."""
    return read_only(lambda session: _one(*inventories.get_inventory(session, uuid, resource_class)))


@blp.route("/resource_providers/<string:uuid>/inventories/<string:resource_class>", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": InventoryUpdate}}})
@blp.alt_response(200, schema=InventorySchema, description="The updated inventory.")
def update_inventory(uuid: str, resource_class: str):  # type: ignore[no-untyped-def]
    """Replace the inventory of one class."""
    data = web.json_body(InventoryUpdate())
    generation = data.pop("resource_provider_generation")
    with writing() as session:
        return _one(*inventories.set_inventory(session, uuid, resource_class, generation, data,
                                               _may_reserve_all()))


@blp.route("/resource_providers/<string:uuid>/inventories/<string:resource_class>", methods=["DELETE"])
@blp.alt_response(204, description="Removed.")
def delete_inventory(uuid: str, resource_class: str):  # type: ignore[no-untyped-def]
    """Remove the inventory of one class; 409 while allocations use it."""
    with writing() as session:
        inventories.delete_inventory(session, uuid, resource_class)
    return empty(204)
