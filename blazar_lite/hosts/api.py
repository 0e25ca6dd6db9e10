"""/v1/os-hosts: Blazar's host API (create, list, show, update, delete, allocations, properties).

Every route is admin-only by default (`hosts:*` rules). Ids are integers rendered as strings of
digits, which is how Blazar's client tells an id from a host name.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from flask_smorest import Blueprint
from marshmallow import INCLUDE, Schema, fields, validate

from blazar_lite import web
from blazar_lite.exceptions import NotFound
from blazar_lite.hosts import aggregates, properties, service
from blazar_lite.hosts.reservations import HostReservation
from blazar_lite.instances import relocation
from blazar_lite.instances.api import allocator_config
from blazar_lite.json_fields import Bool, Int
from blazar_lite.leases.api import lease_rules
from blazar_lite.leases.dates import format_date

blp = Blueprint("hosts", __name__, description="Hosts registered for reservations (Blazar os-hosts)")

TIMESTAMP = "%Y-%m-%d %H:%M:%S"
_ID = re.compile(r"^[0-9]+$")


class CpuInfo(fields.String):
    """Nova's cpu_info, as the JSON text Blazar stores or as the object Nova's API shows."""

    def _deserialize(self, value, attr, data, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(value, dict):
            return json.dumps(value, sort_keys=True)
        return super()._deserialize(value, attr, data, **kwargs)


def _text() -> fields.String:
    return fields.String(allow_none=True, validate=validate.Length(max=255))


class HostCreate(Schema):
    """A host registration; every key not listed here is an extra capability (a string): at most 100
    of them, names of at most 64 characters, values of at most 255."""

    class Meta:
        unknown = INCLUDE

    name = fields.String(required=True, metadata={"description": "The compute node's hypervisor hostname."})
    vcpus = Int(validate=validate.Range(min=1, max=service.MAX_INT),
                metadata={"description": "Taken from the existing provider of this name when left out."})
    memory_mb = Int(validate=validate.Range(min=1, max=service.MAX_INT))
    local_gb = Int(validate=validate.Range(min=0, max=service.MAX_INT))
    service_name = _text()
    cpu_info = CpuInfo(allow_none=True)
    hypervisor_type = _text()
    hypervisor_version = Int(allow_none=True, validate=validate.Range(min=0, max=service.MAX_INT))
    availability_zone = _text()
    reservable = Bool()
    status = fields.String(validate=validate.OneOf(service.STATUSES))


class HostUpdate(Schema):
    """Extra capabilities to set (a string) or unset (null), and the host's state: at most 100
    extra capabilities, names of at most 64 characters, values of at most 255."""

    class Meta:
        unknown = INCLUDE

    reservable = Bool()
    status = fields.String(validate=validate.OneOf(service.STATUSES))


class HostSchema(Schema):
    class Meta:
        unknown = INCLUDE

    id = fields.String(metadata={"description": "Digits."})
    hypervisor_hostname = fields.String()
    service_name = fields.String()
    vcpus = fields.Integer()
    memory_mb = fields.Integer()
    local_gb = fields.Integer()
    cpu_info = fields.String(allow_none=True)
    hypervisor_type = fields.String(allow_none=True)
    hypervisor_version = fields.Integer(allow_none=True)
    availability_zone = fields.String(allow_none=True)
    reservable = fields.Boolean()
    status = fields.String(metadata={"description": "up, down or maintenance."})
    resource_provider_uuid = fields.String()
    reservation_provider_uuid = fields.String()
    created_at = fields.String(metadata={"description": "YYYY-MM-DD HH:MM:SS"})
    updated_at = fields.String(allow_none=True)


class HostEnvelope(Schema):
    host = fields.Nested(HostSchema)


class HostsEnvelope(Schema):
    hosts = fields.List(fields.Nested(HostSchema))


class ReservationSchema(Schema):
    id = fields.String()
    lease_id = fields.String()
    start_date = fields.String()
    end_date = fields.String()


class AllocationSchema(Schema):
    resource_id = fields.String()
    reservations = fields.List(fields.Nested(ReservationSchema))


class AllocationEnvelope(Schema):
    allocation = fields.Nested(AllocationSchema)


class AllocationsEnvelope(Schema):
    allocations = fields.List(fields.Nested(AllocationSchema))


class PropertySchema(Schema):
    property = fields.String()
    private = fields.Boolean(metadata={"description": "With detail=True."})
    values = fields.List(fields.String(), metadata={"description": "With detail=True."})


class PropertiesEnvelope(Schema):
    resource_properties = fields.List(fields.Nested(PropertySchema))


class PropertyUpdate(Schema):
    private = Bool(required=True)


class PropertyEnvelope(Schema):
    resource_property = fields.Nested(PropertySchema)


class RelocationSchema(Schema):
    id = fields.Integer()
    host = fields.String(metadata={"description": "The host work moved off."})
    reason = fields.String(metadata={"description": "evacuation or relocation (the host went down)."})
    subject_type = fields.String(metadata={"description": "instance or reservation."})
    subject_id = fields.String()
    lease_id = fields.String(allow_none=True)
    from_node = fields.String()
    to_node = fields.String(allow_none=True, metadata={"description": "Where it went; null when it could not move."})
    moved = fields.Boolean()
    message = fields.String()
    created_at = fields.String()


class RelocationsEnvelope(Schema):
    relocations = fields.List(fields.Nested(RelocationSchema))


class AggregateSchema(Schema):
    id = fields.String(metadata={"description": "The Placement aggregate uuid."})
    name = fields.String(metadata={"description": "freepool, or reservation:<reservation id>."})
    project_id = fields.String(allow_none=True, metadata={"description": "The owner; null for the freepool."})
    reservation_id = fields.String(allow_none=True)
    lease_id = fields.String(allow_none=True)
    hosts = fields.List(fields.String(), metadata={"description": "Ids of the hosts in the aggregate."})
    created_at = fields.String(allow_none=True)


class AggregatesEnvelope(Schema):
    aggregates = fields.List(fields.Nested(AggregateSchema))


def _timestamp(value: dt.datetime | None) -> str | None:
    return None if value is None else value.strftime(TIMESTAMP)


def host_body(view: service.HostView) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(view.id), "hypervisor_hostname": view.hypervisor_hostname, "service_name": view.service_name,
        "vcpus": view.vcpus, "memory_mb": view.memory_mb, "local_gb": view.local_gb, "cpu_info": view.cpu_info,
        "hypervisor_type": view.hypervisor_type, "hypervisor_version": view.hypervisor_version,
        "availability_zone": view.availability_zone, "reservable": view.reservable, "status": view.status,
        "resource_provider_uuid": view.resource_provider_uuid,
        "reservation_provider_uuid": view.reservation_provider_uuid,
        "created_at": _timestamp(view.created_at), "updated_at": _timestamp(view.updated_at)}
    # Blazar flattens extra capabilities into the host; they can never shadow a field.
    body.update(view.extra_capabilities)
    return body


def _allocation_body(host_id: int, reservations: list[HostReservation]) -> dict[str, Any]:
    return {"resource_id": str(host_id),
            "reservations": [{"id": r.id, "lease_id": r.lease_id, "start_date": format_date(r.start_date),
                              "end_date": format_date(r.end_date)} for r in reservations]}


def _property_body(view: properties.PropertyView, detail: bool) -> dict[str, Any]:
    if not detail:
        return {"property": view.name}
    return {"property": view.name, "private": view.private, "values": view.values}


def _host_id(text: str) -> int:
    """The host id in a path: digits that fit the column, else there is no such host."""
    if not _ID.match(text) or int(text) > service.MAX_INT:
        raise NotFound(f"Host {text} not found.")
    return int(text)


@blp.route("/os-hosts", methods=["GET"])
@blp.alt_response(200, schema=HostsEnvelope, description="Every registered host.")
def list_hosts():  # type: ignore[no-untyped-def]
    """List the hosts, with their extra capabilities as top-level keys."""
    web.enforce("hosts:get")
    web.query_args(set())
    with web.runtime().db.read() as session:
        return {"hosts": [host_body(v) for v in service.list_hosts(session)]}


@blp.route("/os-hosts", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": HostCreate}}})
@blp.alt_response(201, schema=HostEnvelope, description="The registered host.")
def create_host():  # type: ignore[no-untyped-def]
    """Register a host: its resource provider (created, or adopted by name), its reservation
    provider blazar_<name> and its place in the freepool. Other keys are extra capabilities."""
    web.enforce("hosts:post")
    schema = HostCreate()
    data = web.json_body(schema)
    capabilities = {key: data.pop(key) for key in list(data) if key not in schema.fields}
    spec = service.HostSpec(extra_capabilities=capabilities, **data)
    with web.runtime().db.transaction() as session:
        view = service.create_host(session, spec)
    return {"host": host_body(view)}, 201


@blp.route("/os-hosts/<string:host_id>", methods=["GET"])
@blp.alt_response(200, schema=HostEnvelope, description="The host.")
def show_host(host_id: str):  # type: ignore[no-untyped-def]
    """Show one host."""
    web.enforce("hosts:get")
    web.query_args(set())
    with web.runtime().db.read() as session:
        return {"host": host_body(service.get_host(session, _host_id(host_id)))}


@blp.route("/os-hosts/<string:host_id>", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": HostUpdate}}})
@blp.alt_response(200, schema=HostEnvelope, description="The updated host.")
def update_host(host_id: str):  # type: ignore[no-untyped-def]
    """Set extra capabilities (null unsets one), reservable and status (up, down, maintenance)."""
    web.enforce("hosts:put")
    schema = HostUpdate()
    data = web.json_body(schema)
    capabilities = {key: data.pop(key) for key in list(data) if key not in schema.fields}
    with web.runtime().db.transaction() as session:
        was = service.get_host(session, _host_id(host_id)).status
        view = service.update_host(session, _host_id(host_id), capabilities=capabilities,
                                   reservable=data.get("reservable"), status=data.get("status"))
        if view.status == "down" and was != "down":
            # In the same transaction: the host is never seen down with work still booked on it.
            relocation.host_went_down(session, view.id, allocator=allocator_config(), rules=lease_rules())
    return {"host": host_body(view)}


@blp.route("/os-hosts/<string:host_id>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted, with the providers its registration created.")
def delete_host(host_id: str):  # type: ignore[no-untyped-def]
    """Unregister a host (409 while reservations or allocations use it)."""
    web.enforce("hosts:delete")
    with web.runtime().db.transaction() as session:
        service.delete_host(session, _host_id(host_id))
    return "", 204


@blp.route("/os-hosts/allocations", methods=["GET"])
@blp.alt_response(200, schema=AllocationsEnvelope, description="Every host with its reservations.")
def list_allocations():  # type: ignore[no-untyped-def]
    """The current and future reservations of every host (filter with lease_id, reservation_id)."""
    web.enforce("hosts:get_allocations")
    args = web.query_args({"lease_id", "reservation_id"})
    with web.runtime().db.read() as session:
        found = service.host_allocations(session, lease_id=args.get("lease_id"),
                                         reservation_id=args.get("reservation_id"))
        return {"allocations": [_allocation_body(h, r) for h, r in found]}


@blp.route("/os-hosts/<string:host_id>/allocation", methods=["GET"])
@blp.alt_response(200, schema=AllocationEnvelope, description="The host with its reservations.")
def show_allocation(host_id: str):  # type: ignore[no-untyped-def]
    """The current and future reservations of one host (filter with lease_id, reservation_id)."""
    web.enforce("hosts:get_allocations")
    args = web.query_args({"lease_id", "reservation_id"})
    with web.runtime().db.read() as session:
        [(found_id, reservations)] = service.host_allocations(
            session, _host_id(host_id), lease_id=args.get("lease_id"), reservation_id=args.get("reservation_id"))
        return {"allocation": _allocation_body(found_id, reservations)}


def _relocation_body(view: relocation.RelocationView) -> dict[str, Any]:
    return {"id": view.id, "host": view.host, "reason": view.reason, "subject_type": view.subject_type,
            "subject_id": view.subject_id, "lease_id": view.lease_id, "from_node": view.from_node,
            "to_node": view.to_node, "moved": view.moved, "message": view.message,
            "created_at": _timestamp(view.created_at)}


@blp.route("/os-hosts/<string:host_id>/evacuate", methods=["POST"])
@blp.alt_response(200, schema=RelocationsEnvelope, description="What moved where, and what could not.")
def evacuate_host(host_id: str):  # type: ignore[no-untyped-def]
    """Move every instance off the host, forthcoming ones first (reason `evacuation`); an instance
    that finds no room stays, and its lease is flagged degraded."""
    web.enforce("hosts:evacuate")
    with web.runtime().db.transaction() as session:
        moves = relocation.evacuate_host(session, _host_id(host_id), allocator=allocator_config())
    return {"relocations": [_relocation_body(v) for v in moves]}


@blp.route("/os-hosts/relocations", methods=["GET"])
@blp.alt_response(200, schema=RelocationsEnvelope, description="Recent relocations, newest first.")
def list_relocations():  # type: ignore[no-untyped-def]
    """What moved where when hosts were evacuated or went down (filter with host, lease_id)."""
    web.enforce("hosts:get_relocations")
    args = web.query_args({"host", "lease_id"})
    with web.runtime().db.read() as session:
        found = relocation.list_relocations(session, host=args.get("host"), lease_id=args.get("lease_id"))
    return {"relocations": [_relocation_body(v) for v in found]}


@blp.route("/os-hosts/aggregates", methods=["GET"])
@blp.alt_response(200, schema=AggregatesEnvelope, description="The freepool and the owned reservation aggregates.")
def list_aggregates():  # type: ignore[no-untyped-def]
    """The freepool and the aggregate of every active physical:host reservation with the project
    that owns it and the hosts in it (`project_id=` for one project's)."""
    web.enforce("hosts:get_aggregates")
    args = web.query_args({"project_id"})
    with web.runtime().db.read() as session:
        found = aggregates.list_aggregates(session, project_id=args.get("project_id"))
    return {"aggregates": [{"id": view.uuid, "name": view.name, "project_id": view.project_id,
                            "reservation_id": view.reservation_id, "lease_id": view.lease_id,
                            "hosts": [str(host_id) for host_id in view.hosts],
                            "created_at": _timestamp(view.created_at)} for view in found]}


@blp.route("/os-hosts/properties", methods=["GET"])
@blp.alt_response(200, schema=PropertiesEnvelope, description="The host properties.")
def list_properties():  # type: ignore[no-untyped-def]
    """List the properties (extra capability names) hosts have: names only, or with detail=True
    their private flag and values; private ones only with all=True."""
    web.enforce("hosts:get_resource_properties")
    args = web.query_args({"detail", "all"})
    detail, include_private = web.flag(args, "detail"), web.flag(args, "all")
    with web.runtime().db.read() as session:
        found = properties.list_properties(session, include_private=include_private)
        return {"resource_properties": [_property_body(p, detail) for p in found]}


@blp.route("/os-hosts/properties/<string:name>", methods=["PATCH"])
@blp.doc(requestBody={"content": {"application/json": {"schema": PropertyUpdate}}})
@blp.alt_response(200, schema=PropertyEnvelope, description="The property.")
def update_property(name: str):  # type: ignore[no-untyped-def]
    """Make a property private (hidden from listings without all=True) or public."""
    web.enforce("hosts:update_resource_properties")
    data = web.json_body(PropertyUpdate())
    with web.runtime().db.transaction() as session:
        view = properties.update_property(session, name, private=data["private"])
    body = _property_body(view, detail=True)
    # Blazar answers with its property record; keep its field names beside ours.
    body.update({"property_name": view.name, "resource_type": "physical:host",
                 "created_at": _timestamp(view.created_at), "updated_at": _timestamp(view.updated_at)})
    return {"resource_property": body}
