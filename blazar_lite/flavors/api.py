"""/v1/flavors: instance sizes. Admins write; everyone reads the public flavors and the private
ones shared with their project; admins read every flavor and see whom private ones are shared with.

Requests and answers wrap the flavor as Nova does: `{"flavor": {...}}`.
"""

from __future__ import annotations

from typing import Any

from flask import request
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from blazar_lite import web
from blazar_lite.exceptions import BadRequest
from blazar_lite.flavors import service
from blazar_lite.flavors.models import MAX_TEXT
from blazar_lite.json_fields import Bool, Int

blp = Blueprint("flavors", __name__, description="Flavors (instance sizes)")


def _size(lowest: int, required: bool) -> Int:
    return Int(required=required, validate=validate.Range(min=lowest, max=service.MAX_INT))


class FlavorCreateFields(Schema):
    id = fields.UUID(metadata={"description": "A new uuid when left out."})
    name = fields.String(required=True, validate=validate.Length(min=1, max=MAX_TEXT))
    vcpus = _size(1, True)
    ram = _size(1, True)
    disk = _size(0, False)
    is_public = Bool()
    extra_specs = fields.Dict(keys=fields.String(), values=fields.Raw())


class FlavorUpdateFields(Schema):
    name = fields.String(validate=validate.Length(min=1, max=MAX_TEXT))
    vcpus = _size(1, False)
    ram = _size(1, False)
    disk = _size(0, False)
    is_public = Bool()
    extra_specs = fields.Dict(keys=fields.String(), values=fields.Raw(allow_none=True),
                              metadata={"description": "Merged into the flavor's; null unsets a key."})


class FlavorCreate(Schema):
    flavor = fields.Nested(FlavorCreateFields, required=True)


class FlavorUpdate(Schema):
    flavor = fields.Nested(FlavorUpdateFields, required=True)


class FlavorSchema(Schema):
    id = fields.String()
    name = fields.String()
    vcpus = fields.Integer()
    ram = fields.Integer(metadata={"description": "MB"})
    disk = fields.Integer(metadata={"description": "GB"})
    is_public = fields.Boolean()
    extra_specs = fields.Dict(keys=fields.String(), values=fields.String())
    flavor_access = fields.List(fields.String(), metadata={"description": "Projects a private flavor is "
                                                                          "shared with; shown to admins."})


class FlavorEnvelope(Schema):
    flavor = fields.Nested(FlavorSchema)


class FlavorsEnvelope(Schema):
    flavors = fields.List(fields.Nested(FlavorSchema))


def _reader() -> service.Reader:
    context = web.caller()
    return service.Reader(project_id=context.project_id,
                          sees_all=web.runtime().policy.allows("flavors:get_all", context))


def flavor_body(view: service.FlavorView, reader: service.Reader) -> dict[str, Any]:
    body: dict[str, Any] = {"id": view.id, "name": view.name, "vcpus": view.vcpus, "ram": view.ram,
                            "disk": view.disk, "is_public": view.is_public, "extra_specs": view.extra_specs}
    if reader.sees_all:
        # Which projects share a private flavor is an operator's business.
        body["flavor_access"] = view.projects
    return body


def _no_query() -> None:
    if request.args:
        raise BadRequest(f"Unknown query parameter {', '.join(sorted(request.args))}; this route accepts none.")


@blp.route("/flavors", methods=["GET"])
@blp.alt_response(200, schema=FlavorsEnvelope, description="The flavors the caller may see.")
def list_flavors():  # type: ignore[no-untyped-def]
    """List the public flavors and those shared with the caller's project (admins: every flavor)."""
    web.enforce("flavors:get")
    _no_query()
    reader = _reader()
    with web.runtime().db.read() as session:
        return {"flavors": [flavor_body(v, reader) for v in service.list_flavors(session, reader)]}


@blp.route("/flavors", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": FlavorCreate}}})
@blp.alt_response(201, schema=FlavorEnvelope, description="The new flavor.")
def create_flavor():  # type: ignore[no-untyped-def]
    """Create a flavor (409 when its name is taken)."""
    web.enforce("flavors:post")
    data = web.json_body(FlavorCreate())["flavor"]
    flavor_id = data.pop("id", None)
    with web.runtime().db.transaction() as session:
        view = service.create_flavor(session, flavor_id=None if flavor_id is None else str(flavor_id),
                                     disk=data.pop("disk", 0), **data)
    return {"flavor": flavor_body(view, _reader())}, 201


@blp.route("/flavors/<string:flavor_id>", methods=["GET"])
@blp.alt_response(200, schema=FlavorEnvelope, description="The flavor.")
def show_flavor(flavor_id: str):  # type: ignore[no-untyped-def]
    """Show a flavor the caller may see (404 otherwise)."""
    web.enforce("flavors:get")
    _no_query()
    reader = _reader()
    with web.runtime().db.read() as session:
        return {"flavor": flavor_body(service.get_flavor(session, flavor_id, reader), reader)}


@blp.route("/flavors/<string:flavor_id>", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": FlavorUpdate}}})
@blp.alt_response(200, schema=FlavorEnvelope, description="The updated flavor.")
def update_flavor(flavor_id: str):  # type: ignore[no-untyped-def]
    """Change a flavor's name, sizes, visibility or extra specs (merged; null unsets a key)."""
    web.enforce("flavors:put")
    data = web.json_body(FlavorUpdate())["flavor"]
    with web.runtime().db.transaction() as session:
        view = service.update_flavor(session, flavor_id, **data)
    return {"flavor": flavor_body(view, _reader())}


@blp.route("/flavors/<string:flavor_id>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted.")
def delete_flavor(flavor_id: str):  # type: ignore[no-untyped-def]
    """Delete a flavor."""
    web.enforce("flavors:delete")
    with web.runtime().db.transaction() as session:
        service.delete_flavor(session, flavor_id)
    return "", 204
