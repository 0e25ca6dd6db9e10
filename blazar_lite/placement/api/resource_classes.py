"""/placement/resource_classes[/{name}]: list, create, show, rename or ensure, delete (1.2+)."""

from __future__ import annotations

from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from blazar_lite import web
from blazar_lite.placement import resource_classes
from blazar_lite.placement.api import microversion
from blazar_lite.placement.api.common import empty, ensure, read_only, writing
from blazar_lite.versions import LinkSchema

blp = Blueprint("placement_resource_classes", __name__, description="Resource classes")

_CUSTOM_NAME = [validate.Length(max=resource_classes.MAX_NAME_LENGTH),
                validate.Regexp(resource_classes.CUSTOM_NAME,
                                error="'{input}' is not a custom resource class name: it must match "
                                      "^CUSTOM_[A-Z0-9_]+$.")]


class ResourceClassName(Schema):
    name = fields.String(required=True, validate=_CUSTOM_NAME)


class ResourceClassSchema(Schema):
    name = fields.String()
    links = fields.List(fields.Nested(LinkSchema))


class ResourceClassesSchema(Schema):
    resource_classes = fields.List(fields.Nested(ResourceClassSchema))


def _location(name: str) -> str:
    return f"/placement/resource_classes/{name}"


def _body(name: str) -> dict:
    return {"name": name, "links": [{"rel": "self", "href": _location(name)}]}



@blp.route("/resource_classes", methods=["GET"])
@blp.alt_response(200, schema=ResourceClassesSchema, description="Every resource class.")
def list_resource_classes():  # type: ignore[no-untyped-def]
    """List every resource class, standard ones first."""
    microversion.require(2)
    names = read_only(resource_classes.list_resource_classes)
    return {"resource_classes": [_body(n) for n in names]}


@blp.route("/resource_classes", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": ResourceClassName}}})
@blp.alt_response(201, description="Created, with a Location header and no body.")
def create_resource_class():  # type: ignore[no-untyped-def]
    """Create a custom resource class (409 placement.duplicate_name when it exists)."""
    microversion.require(2)
    data = web.json_body(ResourceClassName())
    with writing() as session:
        name = resource_classes.create_resource_class(session, data["name"])
    return empty(201, _location(name))


@blp.route("/resource_classes/<string:name>", methods=["GET"])
@blp.alt_response(200, schema=ResourceClassSchema, description="The resource class.")
def show_resource_class(name: str):  # type: ignore[no-untyped-def]
    """Show one resource class."""
    microversion.require(2)
    return read_only(lambda session: _body(resource_classes.show_resource_class(session, name)))


@blp.route("/resource_classes/<string:name>", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": ResourceClassName}}})
@blp.alt_response(200, schema=ResourceClassSchema, description="Renamed (1.2 to 1.6).")
@blp.alt_response(201, description="Created, with a Location header (1.7+).")
@blp.alt_response(204, description="Already exists, with a Location header (1.7+).")
def put_resource_class(name: str):  # type: ignore[no-untyped-def]
    """Before 1.7, rename a custom class to the body's name; from 1.7, create the custom class
    `name` unless it exists (no body)."""
    microversion.require(2)
    if not microversion.at_least(7):
        data = web.json_body(ResourceClassName())
        with writing() as session:
            return _body(resource_classes.rename_resource_class(session, name, data["name"]))
    return ensure(lambda session: resource_classes.ensure_resource_class(session, name), _location(name))


@blp.route("/resource_classes/<string:name>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted.")
def delete_resource_class(name: str):  # type: ignore[no-untyped-def]
    """Delete a custom class that no inventory uses."""
    microversion.require(2)
    with writing() as session:
        resource_classes.delete_resource_class(session, name)
    return empty(204)
