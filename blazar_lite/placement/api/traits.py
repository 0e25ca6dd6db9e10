"""/placement/traits[/{name}] and /placement/resource_providers/{uuid}/traits (1.6+)."""

from __future__ import annotations

from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from blazar_lite import web
from blazar_lite.exceptions import BadRequest
from blazar_lite.placement import traits
from blazar_lite.placement.api import microversion
from blazar_lite.placement.api.common import (
    empty,
    ensure,
    generation_field,
    query_args,
    read_only,
    reading,
    single,
    writing,
)

blp = Blueprint("placement_traits", __name__, description="Traits")


class ProviderTraitsUpdate(Schema):
    traits = fields.List(fields.String(validate=validate.Length(min=1, max=traits.MAX_NAME_LENGTH)),
                         required=True)
    resource_provider_generation = generation_field()


class TraitsSchema(Schema):
    traits = fields.List(fields.String())


class ProviderTraitsSchema(TraitsSchema):
    resource_provider_generation = fields.Integer()


def _location(name: str) -> str:
    return f"/placement/traits/{name}"



def _name_filter(value: str) -> tuple[list[str] | None, str | None]:
    """`in:A,B` → names; `startswith:CUSTOM_` → prefix."""
    kind, sep, rest = value.partition(":")
    if sep and kind == "in":
        return [n.strip() for n in rest.split(",") if n.strip()], None
    if sep and kind == "startswith":
        return None, rest
    raise BadRequest("Badly formatted name parameter. Expected name query string parameter in form: "
                     f'?name=[in|startswith]:[name1,name2|prefix]. Got: "{value}"')


def _associated(value: str) -> bool:
    if value not in ("true", "false"):
        raise BadRequest(f'The query parameter "associated" only accepts "true" or "false"; got "{value}".')
    return value == "true"


@blp.route("/traits", methods=["GET"])
@blp.alt_response(200, schema=TraitsSchema, description="Trait names matching the filters.")
def list_traits():  # type: ignore[no-untyped-def]
    """List traits; `name=in:A,B` or `name=startswith:PREFIX`, `associated=true|false`."""
    microversion.require(6)
    args = query_args({"name", "associated"})
    name = single(args, "name")
    names, prefix = _name_filter(name) if name is not None else (None, None)
    associated = single(args, "associated")
    with reading() as session:
        return {"traits": traits.list_traits(session, names=names, prefix=prefix,
                                             associated=_associated(associated) if associated is not None
                                             else None)}


@blp.route("/traits/<string:name>", methods=["GET"])
@blp.alt_response(204, description="The trait exists.")
def show_trait(name: str):  # type: ignore[no-untyped-def]
    """204 when the trait exists, 404 when not."""
    microversion.require(6)
    read_only(lambda session: traits.show_trait(session, name))
    return empty(204)


@blp.route("/traits/<string:name>", methods=["PUT"])
@blp.alt_response(201, description="Created, with a Location header.")
@blp.alt_response(204, description="Already exists, with a Location header.")
def put_trait(name: str):  # type: ignore[no-untyped-def]
    """Create the custom trait `name` unless it exists."""
    microversion.require(6)
    return ensure(lambda session: traits.ensure_trait(session, name), _location(name))


@blp.route("/traits/<string:name>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted.")
def delete_trait(name: str):  # type: ignore[no-untyped-def]
    """Delete a custom trait that no provider has."""
    microversion.require(6)
    with writing() as session:
        traits.delete_trait(session, name)
    return empty(204)


def _provider_traits(generation: int, names: list[str]) -> dict:
    return {"traits": names, "resource_provider_generation": generation}


@blp.route("/resource_providers/<string:uuid>/traits", methods=["GET"])
@blp.alt_response(200, schema=ProviderTraitsSchema, description="The provider's traits and generation.")
def list_provider_traits(uuid: str):  # type: ignore[no-untyped-def]
    """The provider's traits, with its generation."""
    microversion.require(6)
    return read_only(lambda session: _provider_traits(*traits.get_provider_traits(session, uuid)))


@blp.route("/resource_providers/<string:uuid>/traits", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": ProviderTraitsUpdate}}})
@blp.alt_response(200, schema=ProviderTraitsSchema, description="The provider's new traits and generation.")
def set_provider_traits(uuid: str):  # type: ignore[no-untyped-def]
    """Replace the provider's traits (every trait must exist; stale generation → 409)."""
    microversion.require(6)
    data = web.json_body(ProviderTraitsUpdate())
    with writing() as session:
        return _provider_traits(*traits.set_provider_traits(session, uuid, data["resource_provider_generation"],
                                                            data["traits"]))


@blp.route("/resource_providers/<string:uuid>/traits", methods=["DELETE"])
@blp.alt_response(204, description="Every trait removed.")
def delete_provider_traits(uuid: str):  # type: ignore[no-untyped-def]
    """Remove every trait from the provider."""
    microversion.require(6)
    with writing() as session:
        traits.delete_provider_traits(session, uuid)
    return empty(204)
