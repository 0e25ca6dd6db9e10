"""/placement/allocations and /placement/resource_providers/{uuid}/allocations.

The request body changed shape over the microversions: a list of {resource_provider, resources}
before 1.12, a dict keyed by provider uuid from 1.12; project_id and user_id from 1.8;
consumer_generation from 1.28 (which also lets PUT clear a consumer with empty allocations);
mappings from 1.34; consumer_type from 1.38.
"""

from __future__ import annotations

from typing import Any

from flask_smorest import Blueprint
from marshmallow import Schema, ValidationError, fields, validate

from blazar_lite import web
from blazar_lite.exceptions import BadRequest
from blazar_lite.placement import allocations
from blazar_lite.placement.api import microversion
from blazar_lite.placement.api.common import MAX_INT, Int, Uuid, empty, read_only, writing

blp = Blueprint("placement_allocations", __name__, description="Allocations")

_NAME_PATTERN = r"^[A-Z0-9_]+$"
# Consumers without a type are shown as Placement shows them.
DEFAULT_CONSUMER_TYPE = "unknown"


def tidy_messages(messages: Any) -> Any:
    """Fold marshmallow's {"key": ..., "value": ...} level of dict fields into the entry itself,
    so that an error reads `allocations.<uuid>.resources.VCPU` rather than `...value.resources...`."""
    if not isinstance(messages, dict):
        return messages
    out: dict[Any, Any] = {}
    for name, value in messages.items():
        if isinstance(value, dict) and value and set(value) <= {"key", "value"}:
            out[name] = value["key"] if "key" in value else tidy_messages(value["value"])
        else:
            out[name] = tidy_messages(value)
    return out


class TidySchema(Schema):
    def load(self, data, **kwargs):  # type: ignore[no-untyped-def,override]
        try:
            return super().load(data, **kwargs)
        except ValidationError as exc:
            raise ValidationError(tidy_messages(exc.messages)) from None


def _required(name: str) -> dict[str, str]:
    return {"required": f"'{name}' is a required property"}


def _name_field(**kwargs: Any) -> fields.String:
    pattern = validate.Regexp(_NAME_PATTERN, error=f"'{{input}}' does not match '{_NAME_PATTERN}'")
    return fields.String(validate=[validate.Length(min=1, max=255), pattern], **kwargs)


def _resources() -> fields.Dict:
    return fields.Dict(keys=_name_field(), values=Int(validate=validate.Range(min=1, max=MAX_INT)),
                       required=True, error_messages=_required("resources"),
                       validate=validate.Length(min=1, error="name at least one resource class and amount."))


def _owner(name: str) -> fields.String:
    return fields.String(required=True, validate=validate.Length(min=1, max=255), error_messages=_required(name))


class ProviderRef(TidySchema):
    uuid = Uuid(required=True, error_messages=_required("uuid"))


class ListedAllocation(TidySchema):
    resource_provider = fields.Nested(ProviderRef, required=True, error_messages=_required("resource_provider"))
    resources = _resources()


class AllocationsV1_0(TidySchema):
    allocations = fields.List(fields.Nested(ListedAllocation), required=True, error_messages=_required("allocations"),
                              validate=validate.Length(min=1, error="name at least one resource provider."))


class AllocationsV1_8(AllocationsV1_0):
    project_id = _owner("project_id")
    user_id = _owner("user_id")


class ProviderAllocation(TidySchema):
    # GET returns the provider generation with each entry; a client may send it back, unused.
    generation = Int()
    resources = _resources()


def _by_provider(min_providers: int) -> fields.Dict:
    return fields.Dict(keys=Uuid(), values=fields.Nested(ProviderAllocation), required=True,
                       error_messages=_required("allocations"),
                       validate=validate.Length(min=min_providers, error="name at least one resource provider."))


class AllocationsV1_12(TidySchema):
    allocations = _by_provider(1)
    project_id = _owner("project_id")
    user_id = _owner("user_id")


class DeletableAllocations(AllocationsV1_12):
    """One consumer's entry in POST /allocations: empty allocations remove what it holds."""

    allocations = _by_provider(0)


class AllocationsV1_28(DeletableAllocations):
    consumer_generation = Int(required=True, allow_none=True, error_messages=_required("consumer_generation"),
                              metadata={"description": "null for a new consumer, else the generation last read."})


class AllocationsV1_34(AllocationsV1_28):
    # Which request group each provider satisfied, as allocation candidates return it; kept only
    # for symmetry with the candidates so clients can send a candidate back unchanged.
    mappings = fields.Dict(keys=fields.String(), values=fields.List(Uuid(), validate=validate.Length(min=1)))


class AllocationsV1_38(AllocationsV1_34):
    consumer_type = _name_field(required=True, error_messages=_required("consumer_type"))


class ConsumerMap(Schema):
    """POST /allocations: {consumer uuid: that consumer's entry}."""

    def __init__(self, entry: type[Schema], min_consumers: int = 1) -> None:
        super().__init__()
        self._field = fields.Dict(keys=Uuid(), values=fields.Nested(entry),
                                  validate=validate.Length(min=min_consumers, error="name at least one consumer."))

    def load(self, data, **kwargs):  # type: ignore[no-untyped-def,override]
        try:
            return self._field.deserialize(data)
        except ValidationError as exc:
            raise ValidationError(tidy_messages(exc.messages)) from None


def put_schema() -> Schema:
    """The PUT /allocations/{consumer_uuid} body at this request's microversion."""
    for minor, schema in ((38, AllocationsV1_38), (34, AllocationsV1_34), (28, AllocationsV1_28),
                          (12, AllocationsV1_12), (8, AllocationsV1_8)):
        if microversion.at_least(minor):
            return schema()
    return AllocationsV1_0()


def consumer_entry_schema() -> type[Schema]:
    """One consumer's entry of POST /allocations (and of the reshaper) at this microversion."""
    for minor, schema in ((38, AllocationsV1_38), (34, AllocationsV1_34), (28, AllocationsV1_28)):
        if microversion.at_least(minor):
            return schema
    return DeletableAllocations


def consumer_write(entry: dict[str, Any]) -> allocations.ConsumerWrite:
    """The service's view of one consumer's validated entry (dict form, 1.12 and later)."""
    return allocations.ConsumerWrite(
        allocations={rp_uuid: item["resources"] for rp_uuid, item in entry["allocations"].items()},
        project_id=entry.get("project_id"), user_id=entry.get("user_id"),
        consumer_generation=entry.get("consumer_generation", allocations.UNSET),
        consumer_type=entry.get("consumer_type"))


def _listed_to_dict(listed: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    by_provider: dict[str, dict[str, Any]] = {}
    for item in listed:
        rp_uuid = item["resource_provider"]["uuid"]
        if rp_uuid in by_provider:
            raise BadRequest(f"Invalid input for field 'allocations': resource provider {rp_uuid} is listed "
                             "twice; give each provider once with all its resources.")
        by_provider[rp_uuid] = {"resources": item["resources"]}
    return by_provider


def consumer_body(view: allocations.ConsumerAllocations) -> dict[str, Any]:
    body: dict[str, Any] = {"allocations": {
        rp_uuid: {"generation": share.generation, "resources": share.resources}
        for rp_uuid, share in view.allocations.items()}}
    if view.allocations and microversion.at_least(12):
        body["project_id"] = view.project_id
        body["user_id"] = view.user_id
        if microversion.at_least(28):
            body["consumer_generation"] = view.generation
        if microversion.at_least(38):
            body["consumer_type"] = view.consumer_type or DEFAULT_CONSUMER_TYPE
    return body


def provider_body(view: allocations.ProviderAllocations) -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for consumer_uuid, share in view.allocations.items():
        entry: dict[str, Any] = {"resources": share.resources}
        if microversion.at_least(28):
            entry["consumer_generation"] = share.consumer_generation
        entries[consumer_uuid] = entry
    return {"allocations": entries, "resource_provider_generation": view.generation}


class ConsumerAllocationsSchema(Schema):
    allocations = fields.Dict(keys=fields.String(), values=fields.Dict(),
                              metadata={"description": "{provider uuid: {generation, resources}}"})
    project_id = fields.String(metadata={"description": "From 1.12, when the consumer holds anything."})
    user_id = fields.String(metadata={"description": "From 1.12, when the consumer holds anything."})
    consumer_generation = fields.Integer(metadata={"description": "From 1.28."})
    consumer_type = fields.String(metadata={"description": "From 1.38."})


class ProviderAllocationsSchema(Schema):
    allocations = fields.Dict(keys=fields.String(), values=fields.Dict(),
                              metadata={"description": "{consumer uuid: {resources, consumer_generation (1.28)}}"})
    resource_provider_generation = fields.Integer()


@blp.route("/allocations/<string:consumer_uuid>", methods=["GET"])
@blp.alt_response(200, schema=ConsumerAllocationsSchema, description="The consumer's allocations (maybe none).")
def show_consumer_allocations(consumer_uuid: str):  # type: ignore[no-untyped-def]
    """What the consumer holds on each provider; an unknown consumer holds nothing."""
    return read_only(lambda session: consumer_body(allocations.get_consumer_allocations(session, consumer_uuid)))


@blp.route("/allocations/<string:consumer_uuid>", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": AllocationsV1_38}}})
@blp.alt_response(204, description="The consumer now holds exactly these allocations.")
def replace_consumer_allocations(consumer_uuid: str):  # type: ignore[no-untyped-def]
    """Replace all of the consumer's allocations (409 when they do not fit or the consumer
    generation is stale)."""
    data = web.json_body(put_schema())
    if not microversion.at_least(12):
        data["allocations"] = _listed_to_dict(data["allocations"])
    with writing() as session:
        allocations.write_allocations(session, {consumer_uuid: consumer_write(data)})
    return empty(204)


@blp.route("/allocations/<string:consumer_uuid>", methods=["DELETE"])
@blp.alt_response(204, description="The consumer's allocations are gone.")
def delete_consumer_allocations(consumer_uuid: str):  # type: ignore[no-untyped-def]
    """Remove everything the consumer holds (404 when it holds nothing)."""
    with writing() as session:
        allocations.delete_consumer_allocations(session, consumer_uuid)
    return empty(204)


@blp.route("/allocations", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": {
    "type": "object", "description": "{consumer uuid: the PUT /allocations/{consumer_uuid} body}"}}}})
@blp.alt_response(204, description="Every consumer now holds exactly its allocations.")
def replace_many_allocations():  # type: ignore[no-untyped-def]
    """Replace the allocations of several consumers at once, all or nothing (1.13)."""
    microversion.require(13)
    data = web.json_body(ConsumerMap(consumer_entry_schema()))
    with writing() as session:
        allocations.write_allocations(session, {uuid: consumer_write(entry) for uuid, entry in data.items()})
    return empty(204)


@blp.route("/resource_providers/<string:uuid>/allocations", methods=["GET"])
@blp.alt_response(200, schema=ProviderAllocationsSchema, description="The provider's allocations by consumer.")
def show_provider_allocations(uuid: str):  # type: ignore[no-untyped-def]
    """Every allocation against the provider, by consumer."""
    return read_only(lambda session: provider_body(allocations.get_provider_allocations(session, uuid)))
