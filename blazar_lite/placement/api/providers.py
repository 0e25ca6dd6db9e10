"""/placement/resource_providers: create, list, show, update, delete providers."""

from __future__ import annotations

from flask import Response
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from blazar_lite.placement import providers
from blazar_lite.placement.api import microversion
from blazar_lite.placement.api.common import Uuid, empty, query_args, read_only, reading, single, versioned, writing
from blazar_lite.placement.query import parse_member_of, parse_required, parse_resources
from blazar_lite.versions import LinkSchema

blp = Blueprint("placement_resource_providers", __name__, description="Resource providers")


class ProviderCreate(Schema):
    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    uuid = Uuid()


class ProviderCreateNested(ProviderCreate):
    parent_provider_uuid = Uuid(allow_none=True)


class ProviderUpdate(Schema):
    name = fields.String(required=True, validate=validate.Length(min=1, max=200))


class ProviderUpdateNested(ProviderUpdate):
    parent_provider_uuid = Uuid(allow_none=True)


class ProviderSchema(Schema):
    uuid = fields.String()
    name = fields.String()
    generation = fields.Integer()
    parent_provider_uuid = fields.String(allow_none=True, metadata={"description": "From 1.14."})
    root_provider_uuid = fields.String(metadata={"description": "From 1.14."})
    links = fields.List(fields.Nested(LinkSchema))


class ProvidersSchema(Schema):
    resource_providers = fields.List(fields.Nested(ProviderSchema))


def provider_body(view: providers.ProviderView) -> dict:
    base = f"/placement/resource_providers/{view.uuid}"
    links = [{"rel": "self", "href": base}, {"rel": "inventories", "href": f"{base}/inventories"},
             {"rel": "usages", "href": f"{base}/usages"}]
    if microversion.at_least(1):
        links.append({"rel": "aggregates", "href": f"{base}/aggregates"})
    if microversion.at_least(6):
        links.append({"rel": "traits", "href": f"{base}/traits"})
    if microversion.at_least(11):
        links.append({"rel": "allocations", "href": f"{base}/allocations"})
    body: dict = {"uuid": view.uuid, "name": view.name, "generation": view.generation}
    if microversion.at_least(14):
        body["parent_provider_uuid"] = view.parent_provider_uuid
        body["root_provider_uuid"] = view.root_provider_uuid
    body["links"] = links
    return body


@blp.route("/resource_providers", methods=["GET"])
@blp.alt_response(200, schema=ProvidersSchema, description="Providers matching every filter.")
def list_resource_providers():  # type: ignore[no-untyped-def]
    """List providers, filtered by name, uuid, member_of (1.3), resources (1.4), in_tree (1.14),
    required (1.18)."""
    allowed = {"name", "uuid"}
    for minor, key in ((3, "member_of"), (4, "resources"), (14, "in_tree"), (18, "required")):
        if microversion.at_least(minor):
            allowed.add(key)
    args = query_args(allowed)
    minor = microversion.current()[1]
    member_of = parse_member_of(args["member_of"], minor) if "member_of" in args else None
    resources = parse_resources(single(args, "resources") or "") if "resources" in args else None
    required = parse_required(args["required"], minor) if "required" in args else None
    with reading() as session:
        views = providers.list_providers(session, name=single(args, "name"), uuid=single(args, "uuid"),
                                         member_of=member_of, resources=resources,
                                         in_tree=single(args, "in_tree"), required=required)
        return {"resource_providers": [provider_body(v) for v in views]}


@blp.route("/resource_providers", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": ProviderCreateNested}}})
@blp.alt_response(200, schema=ProviderSchema, description="The new provider (from 1.20).")
@blp.alt_response(201, description="Created, with a Location header (before 1.20).")
def create_resource_provider():  # type: ignore[no-untyped-def]
    """Create a provider; with parent_provider_uuid (1.14) it is nested under that parent."""
    from blazar_lite import web

    data = web.json_body(versioned(14, ProviderCreateNested, ProviderCreate))
    with writing() as session:
        view = providers.create_provider(session, data["name"], data.get("uuid"),
                                         data.get("parent_provider_uuid"))
    location = f"/placement/resource_providers/{view.uuid}"
    if microversion.at_least(20):
        return provider_body(view), 200, {"Location": location}
    return Response(status=201, headers={"Location": location})


@blp.route("/resource_providers/<string:uuid>", methods=["GET"])
@blp.alt_response(200, schema=ProviderSchema, description="The provider.")
def show_resource_provider(uuid: str):  # type: ignore[no-untyped-def]
    """Show one provider."""
    return read_only(lambda session: provider_body(providers.show_provider(session, uuid)))


@blp.route("/resource_providers/<string:uuid>", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": ProviderUpdateNested}}})
@blp.alt_response(200, schema=ProviderSchema, description="The updated provider.")
def update_resource_provider(uuid: str):  # type: ignore[no-untyped-def]
    """Rename a provider; set its parent (1.14); move or un-parent it (1.37)."""
    from blazar_lite import web

    data = web.json_body(versioned(14, ProviderUpdateNested, ProviderUpdate))
    parent = data["parent_provider_uuid"] if "parent_provider_uuid" in data else providers.UNSET
    with writing() as session:
        view = providers.update_provider(session, uuid, data["name"], parent,
                                         allow_reparent=microversion.at_least(37))
    return provider_body(view)


@blp.route("/resource_providers/<string:uuid>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted.")
def delete_resource_provider(uuid: str):  # type: ignore[no-untyped-def]
    """Delete a provider that has no children and no allocations."""
    with writing() as session:
        providers.delete_provider(session, uuid)
    return empty(204)


