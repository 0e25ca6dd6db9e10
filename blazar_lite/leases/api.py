"""/v1/leases: Blazar's lease API (create, list, show, update, delete).

Leases are project-scoped: a project's readers read its leases, its members create and delete
them, admins see every project's. Another project's lease is answered with 404, as if it did not
exist, unless the caller may act on it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask_smorest import Blueprint
from marshmallow import INCLUDE, RAISE, Schema, fields

from blazar_lite import web
from blazar_lite.exceptions import NotFound
from blazar_lite.instances import usage
from blazar_lite.leases import enforcement, history, search, service, update
from blazar_lite.leases.dates import format_date, format_timestamp
from blazar_lite.leases.models import ACTIVE, Lease

blp = Blueprint("leases", __name__, description="Leases and their reservations (Blazar leases)")


class LeaseReservationCreate(Schema):
    """One reservation; the service checks each type's fields and names the one that is wrong."""

    class Meta:
        unknown = INCLUDE

    resource_type = web.raw_field("physical:host, virtual:instance or flavor:instance.")
    min = web.raw_field("physical:host: fewest hosts (integer).")
    max = web.raw_field("physical:host: most hosts (integer).")
    hypervisor_properties = web.raw_field('physical:host: a JSON filter string such as "[\\">=\\", \\"$vcpus\\", '
                                          '\\"2\\"]" or "".')
    resource_properties = web.raw_field("A JSON filter string over extra capabilities.")
    before_end = web.raw_field("physical:host: default, snapshot or empty.")
    vcpus = web.raw_field("virtual:instance: vCPUs per slot.")
    memory_mb = web.raw_field("virtual:instance: MB of memory per slot.")
    disk_gb = web.raw_field("virtual:instance: GB of disk per slot.")
    amount = web.raw_field("Instance reservations: number of slots.")
    affinity = web.raw_field("true (one host), false (distinct hosts) or null (anywhere); the strings True, "
                             "False and None too.")
    flavor_id = web.raw_field("flavor:instance: the flavor whose size a slot has.")


class LeaseCreate(Schema):
    class Meta:
        unknown = INCLUDE

    name = fields.String(allow_none=True, metadata={"description": "Unique within the project."})
    start_date = fields.String(allow_none=True, metadata={
        "description": '"YYYY-MM-DD HH:MM", "now" or ISO 8601; or "earliest": the first window of `duration` in '
                       "which every reservation fits, ending by `search_until`."})
    end_date = fields.String(allow_none=True, metadata={"description": "Left out with start_date earliest."})
    duration = fields.String(allow_none=True, metadata={
        "description": "With start_date earliest: how long the lease lasts, such as 90m, 24h, 2d or 1d12h."})
    search_until = fields.String(allow_none=True, metadata={
        "description": "With start_date earliest: the lease ends by then (default: 30 days from now)."})
    before_end_date = fields.String(allow_none=True, metadata={
        "description": "When before_end_lease fires (default: an hour before the end)."})
    before_end_notifications = fields.Raw(allow_none=True, metadata={
        "description": 'More notices that the end is near, as offsets before it: ["24h", "1h"] (m, h or d, or '
                       "minutes). Each is a lease.before_end entry in the history, sent to the project's webhooks."})
    reservations = fields.List(fields.Nested(LeaseReservationCreate), allow_none=True,
                               metadata={"description": "At most 100 reservations.", "maxItems": 100})
    events = fields.List(fields.Raw(), metadata={"description": "Ignored; events follow from the dates."})


class LeaseReservationUpdate(Schema):
    """The reservation to change, by id, with only the fields that change."""

    class Meta:
        unknown = INCLUDE

    id = fields.String(required=True, metadata={"description": "The reservation's id."})
    min = web.raw_field("physical:host: fewest hosts.")
    max = web.raw_field("physical:host: most hosts.")
    hypervisor_properties = web.raw_field("physical:host: a JSON filter string.")
    resource_properties = web.raw_field("A JSON filter string over extra capabilities.")
    before_end = web.raw_field("physical:host: default, snapshot or empty.")
    vcpus = web.raw_field("virtual:instance: vCPUs per slot.")
    memory_mb = web.raw_field("virtual:instance: MB of memory per slot.")
    disk_gb = web.raw_field("virtual:instance: GB of disk per slot.")
    amount = web.raw_field("Instance reservations: number of slots.")
    affinity = web.raw_field("Instance reservations: true, false or null (or the strings True, False, None).")


class LeaseUpdate(Schema):
    """Only the fields that change; the client sends back absolute dates it computed from those it read."""

    class Meta:
        unknown = RAISE

    name = fields.String(metadata={"description": "A new name, unique within the project."})
    start_date = fields.String(metadata={"description": "Pending leases only: a new start."})
    end_date = fields.String(metadata={"description": "A new end, later than now and the start."})
    before_end_date = fields.String(allow_none=True, metadata={
        "description": "When before_end_lease fires; null or empty for the default."})
    before_end_notifications = fields.Raw(allow_none=True, metadata={
        "description": 'The offsets of the before-end notices, e.g. ["24h", "1h"]; [] or null for none.'})
    reservations = fields.List(fields.Nested(LeaseReservationUpdate))
    events = fields.List(fields.Raw(), metadata={"description": "Ignored; events follow from the dates."})


class LeaseEventSchema(Schema):
    id = fields.String()
    lease_id = fields.String()
    event_type = fields.String(metadata={"description": "start_lease, before_end_lease or end_lease."})
    time = fields.String(metadata={"description": "YYYY-MM-DDTHH:MM:SS.ffffff"})
    status = fields.String(metadata={"description": "UNDONE, IN_PROGRESS, DONE or ERROR."})


class LeaseReservationSchema(Schema):
    class Meta:
        unknown = INCLUDE

    id = fields.String()
    lease_id = fields.String()
    resource_id = fields.String()
    resource_type = fields.String()
    status = fields.String()
    missing_resources = fields.Boolean()
    resources_changed = fields.Boolean()
    created_at = fields.String()
    updated_at = fields.String(allow_none=True)


class LeaseSchema(Schema):
    id = fields.String()
    name = fields.String()
    user_id = fields.String()
    project_id = fields.String()
    start_date = fields.String(metadata={"description": "YYYY-MM-DDTHH:MM:SS.ffffff"})
    end_date = fields.String()
    before_end_date = fields.String(allow_none=True)
    before_end_notifications = fields.List(fields.String(), metadata={"description": "Offsets of the extra "
                                                                                      "before-end notices."})
    status = fields.String()
    status_reason = fields.String(allow_none=True)
    degraded = fields.Boolean()
    created_at = fields.String(metadata={"description": "YYYY-MM-DD HH:MM:SS"})
    updated_at = fields.String(allow_none=True)
    reservations = fields.List(fields.Nested(LeaseReservationSchema))
    events = fields.List(fields.Nested(LeaseEventSchema))


class LeaseEnvelope(Schema):
    lease = fields.Nested(LeaseSchema)


class LeasesEnvelope(Schema):
    leases = fields.List(fields.Nested(LeaseSchema))


def _timestamp(value: Any) -> str | None:
    return None if value is None else format_timestamp(value)


def _reservation_body(view: service.ReservationView) -> dict[str, Any]:
    return {"id": view.id, "lease_id": view.lease_id, "resource_id": view.id, "resource_type": view.resource_type,
            "status": view.status, "missing_resources": view.missing_resources,
            "resources_changed": view.resources_changed, **view.fields,
            "created_at": _timestamp(view.created_at), "updated_at": _timestamp(view.updated_at)}


def lease_body(view: service.LeaseView) -> dict[str, Any]:
    return {
        "id": view.id, "name": view.name, "user_id": view.user_id, "project_id": view.project_id,
        "start_date": format_date(view.start_date), "end_date": format_date(view.end_date),
        "before_end_date": None if view.before_end_date is None else format_date(view.before_end_date),
        "before_end_notifications": view.before_end_notifications,
        "status": view.status, "status_reason": view.status_reason, "degraded": view.degraded,
        "created_at": _timestamp(view.created_at), "updated_at": _timestamp(view.updated_at),
        "reservations": [_reservation_body(r) for r in view.reservations],
        "events": [{"id": e.id, "lease_id": e.lease_id, "event_type": e.event_type, "time": format_date(e.time),
                    "status": e.status} for e in view.events]}


def lease_rules() -> service.LeaseRules:
    """The operator's lease settings: when before_end_lease fires unless the lease says, the
    idle gap between two bookings of a host, and the usage limits."""
    settings = web.runtime().settings
    return service.LeaseRules(minutes_before_end=settings.scheduler_minutes_before_end_lease,
                              cleaning_time=dt.timedelta(minutes=settings.leases_cleaning_time),
                              usage=enforcement.usage_rules(settings))


def _authorize(session: Any, lease_id: str, rule: str) -> None:
    """Enforce `rule` on the lease; another project's lease the caller may not act on is a 404."""
    project_id = service.lease_project(session, lease_id)
    context = web.caller()
    target = {"project_id": project_id}
    if project_id != context.project_id and not web.runtime().policy.allows(rule, context, target):
        raise NotFound(f"Lease {lease_id} not found.")
    web.enforce(rule, target)


@blp.route("/leases", methods=["GET"])
@blp.alt_response(200, schema=LeasesEnvelope, description="The leases the caller may see.")
def list_leases():  # type: ignore[no-untyped-def]
    """List the caller's project's leases (admins: every project's, or one project's with project_id)."""
    context = web.caller()
    args = web.query_args({"project_id"})
    web.enforce("leases:get", {"project_id": context.project_id})
    sees_all = web.runtime().policy.allows("leases:get_all", context)
    project_id: str | None = args.get("project_id", context.project_id)
    if project_id != context.project_id:
        web.enforce("leases:get_all")
    elif sees_all and "project_id" not in args:
        project_id = None
    with web.runtime().db.read() as session:
        return {"leases": [lease_body(v) for v in service.list_leases(session, project_id)]}


@blp.route("/leases", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": LeaseCreate}}})
@blp.alt_response(201, schema=LeaseEnvelope, description="The new lease, PENDING.")
def create_lease():  # type: ignore[no-untyped-def]
    """Create a lease for the caller's project: its reservations are booked over the whole window
    or the request is refused with 409 saying what is short. With start_date earliest, the lease
    takes the first window of `duration` that fits, found and booked in one transaction."""
    context = web.caller()
    web.enforce("leases:post", {"project_id": context.project_id})
    data = web.json_body(LeaseCreate())
    rules = lease_rules()
    # Asked before the transaction opens, so that a slow policy service holds no lock.
    enforcement.ask(rules.usage, "check-create", enforcement.lease_payload(data, context.user_id, context.project_id))
    with web.runtime().db.transaction() as session:
        view = search.create_lease(session, context, data, rules=rules)
    return {"lease": lease_body(view)}, 201


@blp.route("/leases/<string:lease_id>", methods=["GET"])
@blp.alt_response(200, schema=LeaseEnvelope, description="The lease.")
def show_lease(lease_id: str):  # type: ignore[no-untyped-def]
    """Show a lease with its reservations and events."""
    web.query_args(set())
    with web.runtime().db.read() as session:
        _authorize(session, lease_id, "leases:get")
        return {"lease": lease_body(service.get_lease(session, lease_id))}


@blp.route("/leases/<string:lease_id>", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": LeaseUpdate}}})
@blp.alt_response(200, schema=LeaseEnvelope, description="The updated lease.")
def update_lease(lease_id: str):  # type: ignore[no-untyped-def]
    """Rename a lease, move or resize its window, or change its reservations; capacity is re-checked
    without the lease's own bookings, and a refused update (4xx) leaves the lease as it was."""
    data = web.json_body(LeaseUpdate())
    rules = lease_rules()
    if rules.usage.external_service_url:
        with web.runtime().db.read() as session:
            _authorize(session, lease_id, "leases:put")
            current = lease_body(service.get_lease(session, lease_id))
        payload = enforcement.lease_payload(data, web.caller().user_id, current["project_id"])
        enforcement.ask(rules.usage, "check-update", {**payload, "current_lease": current})
    with web.runtime().db.transaction() as session:
        _authorize(session, lease_id, "leases:put")
        view = update.update_lease(session, lease_id, data, rules=rules)
    return {"lease": lease_body(view)}


@blp.route("/leases/<string:lease_id>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted, with its bookings, resource classes and flavors.")
def delete_lease(lease_id: str):  # type: ignore[no-untyped-def]
    """Delete a lease (409 while a scheduler event is changing it)."""
    with web.runtime().db.transaction() as session:
        _authorize(session, lease_id, "leases:delete")
        service.delete_lease(session, lease_id)
    return "", 204


class HistoryEntrySchema(Schema):
    event = fields.String(metadata={"description": "lease.created, lease.updated, lease.deleted, lease.started, "
                                                   "lease.before_end, lease.ended, lease.error or lease.degraded."})
    status = fields.String(metadata={"description": "The lease's status just after the event."})
    message = fields.String()
    detail = fields.Dict()
    at = fields.String()


class HistoryEnvelope(Schema):
    history = fields.List(fields.Nested(HistoryEntrySchema))


@blp.route("/leases/<string:lease_id>/history", methods=["GET"])
@blp.alt_response(200, schema=HistoryEnvelope, description="What happened to the lease, oldest first.")
def lease_history(lease_id: str):  # type: ignore[no-untyped-def]
    """Every create, update, delete and scheduler event of a lease, oldest first; readable after
    the lease is deleted."""
    web.query_args(set())
    context = web.caller()
    web.enforce("leases:get", {"project_id": context.project_id})
    sees_all = web.runtime().policy.allows("leases:get_all", context, {})
    with web.runtime().db.read() as session:
        entries = history.lease_history(session, lease_id, None if sees_all else context.project_id)
    return {"history": [{"event": e.event, "status": e.status, "message": e.message, "detail": e.detail,
                         "at": format_date(e.at)} for e in entries]}


class ReservationUsageSchema(Schema):
    reservation_id = fields.String()
    resource_type = fields.String()
    capacity = fields.Integer(metadata={"description": "Slots (instance reservations) or hosts reserved."})
    reserved_hours = fields.Float(metadata={"description": "capacity × hours from the start until now (or the end)."})
    used_hours = fields.Float(metadata={"description": "Slot-hours (or host-hours) used by running instances."})
    used_fraction = fields.Float()
    in_use_now = fields.Integer()


class UsageEnvelope(Schema):
    usage = fields.List(fields.Nested(ReservationUsageSchema))
    idle_since = fields.String(allow_none=True, metadata={"description": "Since when nothing runs in the lease; "
                                                                         "null while something does."})


@blp.route("/leases/<string:lease_id>/usage", methods=["GET"])
@blp.alt_response(200, schema=UsageEnvelope, description="Reserved against used, per reservation.")
def lease_usage(lease_id: str):  # type: ignore[no-untyped-def]
    """How much of its reserved capacity the lease used: per reservation, capacity-hours reserved
    so far against those running instances used."""
    web.query_args(set())
    with web.runtime().db.read() as session:
        _authorize(session, lease_id, "leases:get")
        lease = session.get(Lease, lease_id)
        report = usage.lease_usage(session, lease)
        since = usage.idle_since(session, lease) if lease.status == ACTIVE else None
    return {"usage": [{"reservation_id": r.reservation_id, "resource_type": r.resource_type, "capacity": r.capacity,
                       "reserved_hours": r.reserved_hours, "used_hours": r.used_hours,
                       "used_fraction": r.used_fraction, "in_use_now": r.in_use_now} for r in report],
            "idle_since": format_date(since) if since is not None else None}
