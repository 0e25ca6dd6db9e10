"""/v1/instances: instances on demand or inside reservations, and forthcoming instances.

Instances are project-scoped like leases: another project's instance is answered with 404. An
instance is named in paths by its uuid or by its name.
"""

from __future__ import annotations

import os
from typing import Any

from flask import request
from flask_smorest import Blueprint
from marshmallow import INCLUDE, Schema, fields

from blazar_lite import web
from blazar_lite.instances import service
from blazar_lite.leases.dates import format_date, format_optional_date

blp = Blueprint("instances", __name__, description="Instances: placement consumers, real or forthcoming")


class InstanceCreate(Schema):
    class Meta:
        unknown = INCLUDE

    name = web.raw_field("Unique within the project; optional for a forthcoming instance. Not a UUID.")
    flavor_id = web.raw_field("The flavor whose size the instance has (a reservation's flavor places it in "
                              "that reservation).")
    vcpus = web.raw_field("Instead of a flavor: vCPUs.")
    memory_mb = web.raw_field("Instead of a flavor: MB of memory.")
    disk_gb = web.raw_field("Instead of a flavor: GB of disk (default 0).")
    reservation_id = web.raw_field("An active reservation of the project to create the instance in; the size "
                                   "defaults to the reservation's slot.")
    host = web.raw_field("Admins only: the node to put the instance on.")
    forthcoming = web.raw_field("true: hold room for an instance that exists only on paper; every field is "
                                "optional.")


class InstanceModify(Schema):
    """A new size: a flavor, or any of vcpus, memory_mb and disk_gb."""

    class Meta:
        unknown = INCLUDE

    flavor_id = web.raw_field("The new size, as a flavor.")
    vcpus = web.raw_field("The new vCPUs.")
    memory_mb = web.raw_field("The new MB of memory.")
    disk_gb = web.raw_field("The new GB of disk.")


class InstanceCommit(InstanceModify):
    """What completes a forthcoming instance: a name, a size, both or neither."""

    name = web.raw_field("A name, if the forthcoming instance has none yet (or a new one).")


class InstanceRename(Schema):
    class Meta:
        unknown = INCLUDE

    new_name = web.raw_field("The new name (Ganeti's field; `name` is accepted too).")
    name = web.raw_field("The new name.")


class InstanceState(Schema):
    class Meta:
        unknown = INCLUDE

    action = web.raw_field("start or stop. A stopped instance keeps its room on its node.")


class InstanceSchema(Schema):
    id = fields.String()
    name = fields.String(allow_none=True)
    project_id = fields.String()
    user_id = fields.String()
    status = fields.String(metadata={"description": "ACTIVE, STOPPED or FORTHCOMING."})
    forthcoming = fields.Boolean()
    flavor_id = fields.String(allow_none=True)
    vcpus = fields.Integer(allow_none=True)
    memory_mb = fields.Integer(allow_none=True)
    disk_gb = fields.Integer(allow_none=True)
    reservation_id = fields.String(allow_none=True)
    lease_id = fields.String(allow_none=True)
    host = fields.String(allow_none=True, metadata={"description": "The node; null while a forthcoming "
                                                                   "instance holds nothing."})
    created_at = fields.String()
    updated_at = fields.String(allow_none=True)


class InstanceEnvelope(Schema):
    instance = fields.Nested(InstanceSchema)


class InstancesEnvelope(Schema):
    instances = fields.List(fields.Nested(InstanceSchema))


def instance_body(view: service.InstanceView) -> dict[str, Any]:
    return {"id": view.id, "name": view.name, "project_id": view.project_id, "user_id": view.user_id,
            "status": view.status, "forthcoming": view.forthcoming, "flavor_id": view.flavor_id,
            "vcpus": view.vcpus, "memory_mb": view.memory_mb, "disk_gb": view.disk_gb,
            "reservation_id": view.reservation_id, "lease_id": view.lease_id, "host": view.host,
            "created_at": format_date(view.created_at), "updated_at": format_optional_date(view.updated_at)}


def allocator_config() -> service.AllocatorConfig:
    """The configured allocator, with the IAllocator search path resolved, and the placement
    scriptlet of the server config, if one is set."""
    settings = web.runtime().settings
    path = tuple(p for p in settings.instances_iallocator_search_path.split(os.pathsep) if p)
    if not path and settings.instances_allocator.startswith("iallocator:"):
        from blazar_lite.allocators import iallocator

        path = iallocator.default_search_path(settings.data_dir)
    return service.AllocatorConfig(settings.instances_allocator, path, float(settings.instances_iallocator_timeout),
                                   tuple(settings.instances_iallocator_options.split()),
                                   scriptlet=web.runtime().server_config.scriptlet(),
                                   scriptlet_timeout=settings.instances_scriptlet_timeout_ms / 1000)


def _body(schema: Schema, *, optional: bool = False) -> Any:
    if optional and not request.get_data(cache=True).strip():
        return {}
    return web.json_body(schema)


@blp.route("/instances", methods=["GET"])
@blp.alt_response(200, schema=InstancesEnvelope, description="The instances the caller may see.")
def list_instances():  # type: ignore[no-untyped-def]
    """List the caller's project's instances (admins: every project's, or one's with project_id)."""
    context = web.caller()
    args = web.query_args({"project_id"})
    web.enforce("instances:get", {"project_id": context.project_id})
    project_id: str | None = args.get("project_id", context.project_id)
    if project_id != context.project_id:
        web.enforce("instances:get_all")
    elif "project_id" not in args and web.runtime().policy.allows("instances:get_all", context):
        project_id = None
    with web.runtime().db.read() as session:
        return {"instances": [instance_body(v) for v in service.list_instances(session, project_id)]}


@blp.route("/instances", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": InstanceCreate}}})
@blp.alt_response(201, schema=InstanceEnvelope, description="The new instance, with the node it landed on.")
def create_instance():  # type: ignore[no-untyped-def]
    """Create an instance: on demand (on nodes outside the freepool), or in an active reservation of
    the project; placed by the configured allocator. 409 says why no node could take it."""
    context = web.caller()
    web.enforce("instances:post", {"project_id": context.project_id})
    data = web.json_body(InstanceCreate())
    allocator = allocator_config()
    with web.runtime().db.transaction() as session:
        view = service.create_instance(session, context, data, allocator=allocator)
    return {"instance": instance_body(view)}, 201


@blp.route("/instances/<string:ref>", methods=["GET"])
@blp.alt_response(200, schema=InstanceEnvelope, description="The instance.")
def show_instance(ref: str):  # type: ignore[no-untyped-def]
    """Show an instance (by uuid or name)."""
    context = web.caller()
    web.query_args(set())
    web.enforce("instances:get", {"project_id": context.project_id})
    with web.runtime().db.read() as session:
        return {"instance": instance_body(service.get_instance(session, context, ref))}


@blp.route("/instances/<string:ref>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted; what it held is free again.")
def delete_instance(ref: str):  # type: ignore[no-untyped-def]
    """Delete an instance (by uuid or name), real or forthcoming. An instance of a deployment
    shape at its scaling_minimum is refused (409) unless an admin adds ?force=true."""
    context = web.caller()
    web.enforce("instances:delete", {"project_id": context.project_id})
    force = web.flag(web.query_args({"force"}), "force")
    if force:
        web.enforce("instances:force_delete")
    with web.runtime().db.transaction() as session:
        service.delete_instance(session, context, ref, force=force)
    return "", 204


@blp.route("/instances/<string:ref>/create", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": InstanceCommit}}, "required": False})
@blp.alt_response(200, schema=InstanceEnvelope, description="The instance, now real.")
def commit_instance(ref: str):  # type: ignore[no-untyped-def]
    """Commit a forthcoming instance: it becomes real where it holds its room. The body (optional)
    completes its name or size."""
    context = web.caller()
    web.enforce("instances:put", {"project_id": context.project_id})
    data = _body(InstanceCommit(), optional=True)
    allocator = allocator_config()
    with web.runtime().db.transaction() as session:
        view = service.commit_instance(session, context, ref, data, allocator=allocator)
    return {"instance": instance_body(view)}


@blp.route("/instances/<string:ref>/modify", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": InstanceModify}}})
@blp.alt_response(200, schema=InstanceEnvelope, description="The resized instance.")
def modify_instance(ref: str):  # type: ignore[no-untyped-def]
    """Change an instance's size on its node (409 when the node lacks the room)."""
    context = web.caller()
    web.enforce("instances:put", {"project_id": context.project_id})
    data = web.json_body(InstanceModify())
    allocator = allocator_config()
    with web.runtime().db.transaction() as session:
        view = service.modify_instance(session, context, ref, data, allocator=allocator)
    return {"instance": instance_body(view)}


@blp.route("/instances/<string:ref>/rename", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": InstanceRename}}})
@blp.alt_response(200, schema=InstanceEnvelope, description="The renamed instance.")
def rename_instance(ref: str):  # type: ignore[no-untyped-def]
    """Rename an instance."""
    context = web.caller()
    web.enforce("instances:put", {"project_id": context.project_id})
    data = web.json_body(InstanceRename())
    with web.runtime().db.transaction() as session:
        view = service.rename_instance(session, context, ref, data)
    return {"instance": instance_body(view)}


@blp.route("/instances/<string:ref>/state", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": InstanceState}}})
@blp.alt_response(200, schema=InstanceEnvelope, description="The instance in its new state.")
def change_instance_state(ref: str):  # type: ignore[no-untyped-def]
    """Start or stop a real instance: {"action": "start"} or {"action": "stop"}."""
    context = web.caller()
    web.enforce("instances:put", {"project_id": context.project_id})
    data = web.json_body(InstanceState())
    with web.runtime().db.transaction() as session:
        view = service.change_state(session, context, ref, data)
    return {"instance": instance_body(view)}
