"""/v1/deployments: deployments, their shapes and keys, and the governor API that launches and
deletes a shape's instances (a governor authenticates with a key's signed token).

A deployment is named within its project: members and readers of the project reach their own
project's deployments; an admin reaches another project's with ?project_id=.
"""

from __future__ import annotations

from typing import Any

from flask import g, request
from flask_smorest import Blueprint
from marshmallow import INCLUDE, Schema, fields

from blazar_lite import web
from blazar_lite.deployments import events, governor, keys, service
from blazar_lite.instances import api as instances_api
from blazar_lite.leases.dates import format_date, format_optional_date
from blazar_lite.webhooks import api as webhooks_api

blp = Blueprint("deployments", __name__, description="Deployments: shapes of instances scaled within bounds")


class DeploymentBody(Schema):
    class Meta:
        unknown = INCLUDE

    name = web.raw_field("Unique within the project: letters, digits, '-', '_' and '.'.")
    description = web.raw_field("Free text, at most 1024 characters.")
    config = web.raw_field("An object of string values: at most 100 keys of at most 255 characters, values of at "
                           "most 4096.")
    governor_webhook_url = web.raw_field("Where events for the governor are sent (http:// or https://), or null.")
    governor_webhook_secret = web.raw_field("The key of the HMAC that signs those events (16 to 128 characters); "
                                            "a random one when left out at creation.")


class ShapeBody(Schema):
    class Meta:
        unknown = INCLUDE

    name = web.raw_field("Unique within the deployment.")
    description = web.raw_field("Free text, at most 1024 characters.")
    config = web.raw_field("An object of string values: at most 100 keys of at most 255 characters, values of at "
                           "most 4096.")
    instance_template = web.raw_field("An instance-create body without name: flavor_id, or vcpus/memory_mb/"
                                      "disk_gb, and optionally reservation_id.")
    scaling_minimum = web.raw_field("Instances the shape keeps at least (>= 0).")
    scaling_maximum = web.raw_field("Instances the shape has at most (>= scaling_minimum; not both 0).")


class RenameBody(Schema):
    class Meta:
        unknown = INCLUDE

    name = web.raw_field("The new name.")


class DeploymentSchema(Schema):
    id = fields.String()
    name = fields.String()
    project_id = fields.String()
    description = fields.String()
    config = fields.Dict(keys=fields.String(), values=fields.String())
    governor_webhook_url = fields.String(allow_none=True)
    governor_webhook_secret = fields.String(metadata={"description": "The key of the HMAC in the "
                                                                     "X-Blazar-Lite-Signature header of each event."})
    created_at = fields.String()
    updated_at = fields.String(allow_none=True)


class ShapeSchema(Schema):
    id = fields.String()
    name = fields.String()
    deployment = fields.String()
    description = fields.String()
    config = fields.Dict(keys=fields.String(), values=fields.String())
    instance_template = fields.Dict()
    scaling_minimum = fields.Integer()
    scaling_maximum = fields.Integer()
    scaling_current = fields.Integer(metadata={"description": "Instances the shape has now."})
    created_at = fields.String()
    updated_at = fields.String(allow_none=True)


class DeploymentEnvelope(Schema):
    deployment = fields.Nested(DeploymentSchema)


class DeploymentsEnvelope(Schema):
    deployments = fields.List(fields.Nested(DeploymentSchema))


class ShapeEnvelope(Schema):
    shape = fields.Nested(ShapeSchema)


class ShapesEnvelope(Schema):
    shapes = fields.List(fields.Nested(ShapeSchema))


def _deployment(view: service.DeploymentView) -> dict[str, Any]:
    return {"id": view.id, "name": view.name, "project_id": view.project_id, "description": view.description,
            "config": view.config, "governor_webhook_url": view.governor_webhook_url,
            "governor_webhook_secret": view.governor_webhook_secret,
            "created_at": format_date(view.created_at), "updated_at": format_optional_date(view.updated_at)}


def _shape(view: service.ShapeView) -> dict[str, Any]:
    return {"id": view.id, "name": view.name, "deployment": view.deployment, "description": view.description,
            "config": view.config, "instance_template": view.instance_template,
            "scaling_minimum": view.scaling_minimum, "scaling_maximum": view.scaling_maximum,
            "scaling_current": view.scaling_current, "created_at": format_date(view.created_at),
            "updated_at": format_optional_date(view.updated_at)}


def _project(rule: str, allowed: frozenset[str] = frozenset({"project_id"})) -> tuple[str, dict[str, str]]:
    """The project the request acts in (an admin may name another with ?project_id=), after
    the policy `rule` allows it; and the query arguments."""
    context = web.caller()
    args = web.query_args(set(allowed))
    project_id = args.get("project_id", context.project_id)
    web.enforce(rule, {"project_id": project_id})
    if project_id != context.project_id:
        web.enforce("deployments:get_all")
    return project_id, args


@blp.route("/deployments", methods=["GET"])
@blp.alt_response(200, schema=DeploymentsEnvelope, description="The project's deployments.")
def list_deployments():  # type: ignore[no-untyped-def]
    """List the deployments of your project (admins: ?project_id= for another's)."""
    project_id, _ = _project("deployments:get")
    with web.runtime().db.read() as session:
        return {"deployments": [_deployment(v) for v in service.list_deployments(session, project_id)]}


@blp.route("/deployments", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": DeploymentBody}}})
@blp.alt_response(201, schema=DeploymentEnvelope, description="The new deployment.")
def create_deployment():  # type: ignore[no-untyped-def]
    """Create a deployment in your project."""
    project_id, _ = _project("deployments:post")
    body = web.json_body(DeploymentBody())
    with web.runtime().db.transaction() as session:
        return {"deployment": _deployment(service.create_deployment(session, project_id, body))}, 201


@blp.route("/deployments/<string:name>", methods=["GET"])
@blp.alt_response(200, schema=DeploymentEnvelope, description="The deployment.")
def get_deployment(name: str):  # type: ignore[no-untyped-def]
    """Show a deployment."""
    project_id, _ = _project("deployments:get")
    with web.runtime().db.read() as session:
        return {"deployment": _deployment(service.get_deployment(session, project_id, name))}


@blp.route("/deployments/<string:name>", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": DeploymentBody}}})
@blp.alt_response(200, schema=DeploymentEnvelope, description="The deployment as replaced.")
def replace_deployment(name: str):  # type: ignore[no-untyped-def]
    """Replace description, config and governor_webhook_url (left out: emptied)."""
    project_id, _ = _project("deployments:put")
    body = web.json_body(DeploymentBody())
    with web.runtime().db.transaction() as session:
        return {"deployment": _deployment(service.replace_deployment(session, project_id, name, body))}


@blp.route("/deployments/<string:name>", methods=["PATCH"])
@blp.doc(requestBody={"content": {"application/json": {"schema": DeploymentBody}}})
@blp.alt_response(200, schema=DeploymentEnvelope, description="The deployment as updated.")
def update_deployment(name: str):  # type: ignore[no-untyped-def]
    """Change the fields given; config keys are merged ("" removes one)."""
    project_id, _ = _project("deployments:put")
    body = web.json_body(DeploymentBody())
    with web.runtime().db.transaction() as session:
        return {"deployment": _deployment(service.update_deployment(session, project_id, name, body))}


@blp.route("/deployments/<string:name>", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": RenameBody}}})
@blp.alt_response(200, schema=DeploymentEnvelope, description="The deployment under its new name.")
def rename_deployment(name: str):  # type: ignore[no-untyped-def]
    """Rename a deployment: {"name": "<new name>"}."""
    project_id, _ = _project("deployments:put")
    body = web.json_body(RenameBody())
    with web.runtime().db.transaction() as session:
        return {"deployment": _deployment(service.rename_deployment(session, project_id, name, body))}


@blp.route("/deployments/<string:name>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted, with its shapes (and, with force, their instances).")
def delete_deployment(name: str):  # type: ignore[no-untyped-def]
    """Delete a deployment and its shapes; one whose shapes have instances needs ?force=true,
    which deletes the instances first."""
    project_id, args = _project("deployments:delete", frozenset({"project_id", "force"}))
    with web.runtime().db.transaction() as session:
        service.delete_deployment(session, project_id, name, force=web.flag(args, "force"))
    return "", 204


@blp.route("/deployments/<string:deployment>/shapes", methods=["GET"])
@blp.alt_response(200, schema=ShapesEnvelope, description="The deployment's shapes.")
def list_shapes(deployment: str):  # type: ignore[no-untyped-def]
    """List a deployment's shapes with their scaling_current."""
    project_id, _ = _project("deployments:get")
    with web.runtime().db.read() as session:
        return {"shapes": [_shape(v) for v in service.list_shapes(session, project_id, deployment)]}


@blp.route("/deployments/<string:deployment>/shapes", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": ShapeBody}}})
@blp.alt_response(201, schema=ShapeEnvelope, description="The new shape.")
def create_shape(deployment: str):  # type: ignore[no-untyped-def]
    """Add a shape: an instance template and its scaling bounds."""
    project_id, _ = _project("deployments:post")
    body = web.json_body(ShapeBody())
    with web.runtime().db.transaction() as session:
        return {"shape": _shape(service.create_shape(session, project_id, deployment, body))}, 201


@blp.route("/deployments/<string:deployment>/shapes/<string:name>", methods=["GET"])
@blp.alt_response(200, schema=ShapeEnvelope, description="The shape.")
def get_shape(deployment: str, name: str):  # type: ignore[no-untyped-def]
    """Show a shape."""
    project_id, _ = _project("deployments:get")
    with web.runtime().db.read() as session:
        return {"shape": _shape(service.get_shape(session, project_id, deployment, name))}


@blp.route("/deployments/<string:deployment>/shapes/<string:name>", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": ShapeBody}}})
@blp.alt_response(200, schema=ShapeEnvelope, description="The shape as replaced.")
def replace_shape(deployment: str, name: str):  # type: ignore[no-untyped-def]
    """Replace every field but the name; a new template applies to new instances only."""
    project_id, _ = _project("deployments:put")
    body = web.json_body(ShapeBody())
    with web.runtime().db.transaction() as session:
        return {"shape": _shape(service.replace_shape(session, project_id, deployment, name, body))}


@blp.route("/deployments/<string:deployment>/shapes/<string:name>", methods=["PATCH"])
@blp.doc(requestBody={"content": {"application/json": {"schema": ShapeBody}}})
@blp.alt_response(200, schema=ShapeEnvelope, description="The shape as updated.")
def update_shape(deployment: str, name: str):  # type: ignore[no-untyped-def]
    """Change the fields given; config keys are merged ("" removes one)."""
    project_id, _ = _project("deployments:put")
    body = web.json_body(ShapeBody())
    with web.runtime().db.transaction() as session:
        return {"shape": _shape(service.update_shape(session, project_id, deployment, name, body))}


@blp.route("/deployments/<string:deployment>/shapes/<string:name>", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": RenameBody}}})
@blp.alt_response(200, schema=ShapeEnvelope, description="The shape under its new name.")
def rename_shape(deployment: str, name: str):  # type: ignore[no-untyped-def]
    """Rename a shape: {"name": "<new name>"}."""
    project_id, _ = _project("deployments:put")
    body = web.json_body(RenameBody())
    with web.runtime().db.transaction() as session:
        return {"shape": _shape(service.rename_shape(session, project_id, deployment, name, body))}


@blp.route("/deployments/<string:deployment>/shapes/<string:name>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted (and, with force, its instances).")
def delete_shape(deployment: str, name: str):  # type: ignore[no-untyped-def]
    """Delete a shape; one with instances needs ?force=true, which deletes them first."""
    project_id, args = _project("deployments:delete", frozenset({"project_id", "force"}))
    with web.runtime().db.transaction() as session:
        service.delete_shape(session, project_id, deployment, name, force=web.flag(args, "force"))
    return "", 204


def _governed(deployment: str, rule: str, *, writes: bool) -> None:
    """Authorise a call of the governor API: a governor's bearer token (see governor.py), which
    then is the caller; else the caller's own role in the project, as for the management API."""
    token = governor.bearer_token(request.headers.get("Authorization"))
    if token is None:
        _project(rule, frozenset())
        return
    web.query_args(set())
    with web.runtime().db.read() as session:
        g.context = governor.authenticate(session, token, deployment, writes=writes, request_id=web.request_id())


@blp.route("/deployments/<string:deployment>/shapes/<string:shape>/instances", methods=["GET"])
@blp.alt_response(200, schema=instances_api.InstancesEnvelope, description="The shape's instances.")
def list_shape_instances(deployment: str, shape: str):  # type: ignore[no-untyped-def]
    """List a shape's instances, oldest first."""
    _governed(deployment, "deployments:get", writes=False)
    with web.runtime().db.read() as session:
        views = service.shape_instances(session, web.caller().project_id, deployment, shape)
    return {"instances": [instances_api.instance_body(v) for v in views]}


@blp.route("/deployments/<string:deployment>/shapes/<string:shape>/instances/<string:name>", methods=["POST"])
@blp.alt_response(201, schema=instances_api.InstanceEnvelope, description="The new instance, placed.")
def launch_shape_instance(deployment: str, shape: str, name: str):  # type: ignore[no-untyped-def]
    """Create instance `name` from the shape's template, placed by the allocator or the
    scriptlet; 409 when the shape is at its scaling_maximum."""
    _governed(deployment, "deployments:post", writes=True)
    allocator = instances_api.allocator_config()
    with web.runtime().db.transaction() as session:
        view = service.launch_instance(session, web.caller(), deployment, shape, name, allocator=allocator)
    return {"instance": instances_api.instance_body(view)}, 201


@blp.route("/deployments/<string:deployment>/shapes/<string:shape>/instances/<string:name>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted; what it held is free again.")
def delete_shape_instance(deployment: str, shape: str, name: str):  # type: ignore[no-untyped-def]
    """Delete one of the shape's instances; 409 when the shape is at its scaling_minimum."""
    _governed(deployment, "deployments:delete", writes=True)
    with web.runtime().db.transaction() as session:
        service.delete_shape_instance(session, web.caller(), deployment, shape, name)
    return "", 204


@blp.route("/deployments/<string:deployment>/shapes/<string:shape>/instances/<string:name>/state",
           methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": instances_api.InstanceState}}})
@blp.alt_response(200, schema=instances_api.InstanceEnvelope, description="The instance in its new state.")
def change_shape_instance_state(deployment: str, shape: str, name: str):  # type: ignore[no-untyped-def]
    """Start or stop one of the shape's instances: {"action": "start"} or {"action": "stop"}."""
    _governed(deployment, "deployments:put", writes=True)
    body = web.json_body(instances_api.InstanceState())
    with web.runtime().db.transaction() as session:
        view = service.change_shape_instance_state(session, web.caller(), deployment, shape, name, body)
    return {"instance": instances_api.instance_body(view)}


class EventsEnvelope(Schema):
    events = fields.List(fields.Nested(webhooks_api.DeliverySchema))


@blp.route("/deployments/<string:deployment>/events", methods=["GET"])
@blp.alt_response(200, schema=EventsEnvelope, description="The deployment's events, newest first.")
def list_events(deployment: str):  # type: ignore[no-untyped-def]
    """The events sent (or to be sent) to the deployment's governor webhook, with every attempt
    to deliver each; filter with status, type and limit (default 100)."""
    project_id, args = _project("deployments:get", frozenset({"project_id", "status", "type", "limit"}))
    with web.runtime().db.read() as session:
        row = service.find_deployment(session, project_id, deployment)
        return {"events": [webhooks_api.delivery_body(v) for v in events.list_events(session, row, args)]}


class KeyBody(Schema):
    class Meta:
        unknown = INCLUDE

    name = web.raw_field("Unique within the deployment; a governor's token names it in its `kid` header.")
    description = web.raw_field("Free text, at most 1024 characters.")
    role = web.raw_field("admin (may scale) or read-only (may only read).")
    certificate = web.raw_field("The governor's public certificate in PEM (RSA, or EC on P-256).")


class KeySchema(Schema):
    id = fields.String()
    name = fields.String()
    deployment = fields.String()
    description = fields.String()
    role = fields.String()
    fingerprint = fields.String(metadata={"description": "SHA-256 of the certificate (DER), in hex."})
    certificate = fields.String()
    created_at = fields.String()


class KeyEnvelope(Schema):
    key = fields.Nested(KeySchema)


class KeysEnvelope(Schema):
    keys = fields.List(fields.Nested(KeySchema))


def _key(view: keys.KeyView) -> dict[str, Any]:
    return {"id": view.id, "name": view.name, "deployment": view.deployment, "description": view.description,
            "role": view.role, "fingerprint": view.fingerprint, "certificate": view.certificate,
            "created_at": format_date(view.created_at)}


@blp.route("/deployments/<string:deployment>/keys", methods=["GET"])
@blp.alt_response(200, schema=KeysEnvelope, description="The deployment's keys.")
def list_keys(deployment: str):  # type: ignore[no-untyped-def]
    """List a deployment's governor keys."""
    project_id, _ = _project("deployments:get")
    with web.runtime().db.read() as session:
        return {"keys": [_key(v) for v in keys.list_keys(session, project_id, deployment)]}


@blp.route("/deployments/<string:deployment>/keys", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": KeyBody}}})
@blp.alt_response(201, schema=KeyEnvelope, description="The new key.")
def create_key(deployment: str):  # type: ignore[no-untyped-def]
    """Add a governor key: a certificate and the role its holder acts in."""
    project_id, _ = _project("deployments:post")
    body = web.json_body(KeyBody())
    with web.runtime().db.transaction() as session:
        return {"key": _key(keys.create_key(session, project_id, deployment, body))}, 201


@blp.route("/deployments/<string:deployment>/keys/<string:name>", methods=["GET"])
@blp.alt_response(200, schema=KeyEnvelope, description="The key.")
def get_key(deployment: str, name: str):  # type: ignore[no-untyped-def]
    """Show a governor key."""
    project_id, _ = _project("deployments:get")
    with web.runtime().db.read() as session:
        return {"key": _key(keys.get_key(session, project_id, deployment, name))}


@blp.route("/deployments/<string:deployment>/keys/<string:name>", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": RenameBody}}})
@blp.alt_response(200, schema=KeyEnvelope, description="The key under its new name.")
def rename_key(deployment: str, name: str):  # type: ignore[no-untyped-def]
    """Rename a governor key: {"name": "<new name>"}."""
    project_id, _ = _project("deployments:put")
    body = web.json_body(RenameBody())
    with web.runtime().db.transaction() as session:
        return {"key": _key(keys.rename_key(session, project_id, deployment, name, body))}


@blp.route("/deployments/<string:deployment>/keys/<string:name>", methods=["DELETE"])
@blp.alt_response(204, description="Revoked.")
def delete_key(deployment: str, name: str):  # type: ignore[no-untyped-def]
    """Revoke a governor key."""
    project_id, _ = _project("deployments:delete")
    with web.runtime().db.transaction() as session:
        keys.delete_key(session, project_id, deployment, name)
    return "", 204
