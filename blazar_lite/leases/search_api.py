"""/v1/availability: when a reservation would fit, and what hosts hold over time.

The search speaks the lease's own words (a reservation's fields as query parameters) and answers
with the earliest windows and the hosts a lease create would use in each. No window is not an
error: the answer is 200 with an empty list and a `message` saying the most that could be had,
since the search itself was valid; only booking a window that does not fit is a 409.
"""

from __future__ import annotations

from typing import Any

from flask_smorest import Blueprint
from marshmallow import Schema, fields

from blazar_lite import web
from blazar_lite.hosts.api import _host_id
from blazar_lite.leases import search
from blazar_lite.leases.api import lease_rules
from blazar_lite.leases.dates import describe_duration, format_date

blp = Blueprint("availability", __name__, description="When capacity is free (availability search, timelines)")

class HostUseSchema(Schema):
    id = fields.String(metadata={"description": "The host's id (digits)."})
    hypervisor_hostname = fields.String()
    slots = fields.Integer(metadata={"description": "Instance slots on this host; 1 for a whole host."})


class FoundWindowSchema(Schema):
    start_date = fields.String(metadata={"description": "YYYY-MM-DDTHH:MM:SS.ffffff"})
    end_date = fields.String()
    hosts = fields.List(fields.Nested(HostUseSchema))


class AvailabilityEnvelope(Schema):
    availability = fields.List(fields.Nested(FoundWindowSchema), metadata={
        "description": "The earliest windows that fit, earliest first; empty when none does."})
    message = fields.String(allow_none=True, metadata={
        "description": "When no window fits: the most that could be had, and what to change."})
    after = fields.String()
    before = fields.String()
    duration = fields.String()


class PeriodSchema(Schema):
    start_date = fields.String()
    end_date = fields.String()


class FreePeriodsEnvelope(Schema):
    host_id = fields.String()
    hypervisor_hostname = fields.String()
    reservable = fields.Boolean()
    status = fields.String()
    start_date = fields.String()
    end_date = fields.String()
    free_periods = fields.List(fields.Nested(PeriodSchema))


class TimelinePeriodSchema(Schema):
    start_date = fields.String()
    end_date = fields.String()
    state = fields.String(metadata={"description": "free (nothing held), partial (instance slots held, room left) "
                                                   "or full (held whole, or a resource used up)."})
    used = fields.Dict(keys=fields.String(), values=fields.Float(), metadata={
        "description": "vcpus, memory_mb and disk_gb held by instance slots."})


class HostTimelineSchema(Schema):
    host_id = fields.String()
    hypervisor_hostname = fields.String()
    reservable = fields.Boolean()
    status = fields.String()
    vcpus = fields.Integer()
    memory_mb = fields.Integer()
    local_gb = fields.Integer()
    periods = fields.List(fields.Nested(TimelinePeriodSchema))


class TimelineEnvelope(Schema):
    start_date = fields.String()
    end_date = fields.String()
    timeline = fields.List(fields.Nested(HostTimelineSchema))


def _window_body(window: search.FoundWindow) -> dict[str, Any]:
    return {"start_date": format_date(window.start), "end_date": format_date(window.end),
            "hosts": [{"id": str(use.id), "hypervisor_hostname": use.hypervisor_hostname, "slots": use.slots}
                      for use in window.hosts]}


def _state(period: Any, capacity: dict[str, int]) -> str:
    if period.whole_host or any(amount >= capacity.get(name, 0) for name, amount in period.used.items()):
        return "full"
    return "partial" if period.used else "free"


@blp.route("/availability", methods=["GET"])
@blp.alt_response(200, schema=AvailabilityEnvelope, description="The earliest windows, or none and why.")
def search_availability():  # type: ignore[no-untyped-def]
    """The earliest windows (up to `limit`, default 5) in which a reservation fits for `duration`
    (90m, 24h, 2d), starting from `after` (default now) and ending by `before` (default 30 days
    later), each with the hosts a lease would use. The reservation is given as a lease gives it:
    resource_type physical:host with min, max, hypervisor_properties, resource_properties;
    virtual:instance with amount, vcpus, memory_mb, disk_gb, affinity, resource_properties;
    flavor:instance with flavor_id, amount, affinity, resource_properties."""
    context = web.caller()
    web.enforce("availability:search", {"project_id": context.project_id})
    args = web.query_args(search.SEARCH_PARAMETERS)
    with web.runtime().db.read() as session:
        answer = search.search_availability(session, context, args, rules=lease_rules())
    return {"availability": [_window_body(window) for window in answer.windows], "message": answer.message,
            "after": format_date(answer.after), "before": format_date(answer.before),
            "duration": describe_duration(answer.duration)}


@blp.route("/availability/timeline", methods=["GET"])
@blp.alt_response(200, schema=TimelineEnvelope, description="Every host, period by period.")
def cluster_timeline():  # type: ignore[no-untyped-def]
    """What every host holds between `start` (default now) and `end` (default 30 days later),
    period by period, for calendars: free, partial or full, with what instance slots use."""
    web.enforce("availability:timeline")
    args = web.query_args({"start", "end"})
    with web.runtime().db.read() as session:
        span, timeline = search.cluster_timeline(session, args.get("start"), args.get("end"), rules=lease_rules())
    return {"start_date": format_date(span.start), "end_date": format_date(span.end), "timeline": [
        {"host_id": str(host.id), "hypervisor_hostname": host.hypervisor_hostname, "reservable": host.reservable,
         "status": host.status, "vcpus": host.capacity["vcpus"], "memory_mb": host.capacity["memory_mb"],
         "local_gb": host.capacity["disk_gb"],
         "periods": [{"start_date": format_date(period.start), "end_date": format_date(period.end),
                      "state": _state(period, host.capacity), "used": dict(period.used)}
                     for period in host.periods]}
        for host in timeline]}


@blp.route("/os-hosts/<string:host_id>/free-periods", methods=["GET"])
@blp.alt_response(200, schema=FreePeriodsEnvelope, description="The host's free periods.")
def host_free_periods(host_id: str):  # type: ignore[no-untyped-def]
    """The periods between `start` (default now) and `end` (default 30 days later) in which the
    host has no booking, the cleaning time kept around each: a whole-host lease fits in any
    window inside one while the host is reservable and up."""
    web.enforce("hosts:get_free_periods")
    args = web.query_args({"start", "end"})
    with web.runtime().db.read() as session:
        found = search.host_free_periods(session, _host_id(host_id), args.get("start"), args.get("end"),
                                         rules=lease_rules())
    return {"host_id": str(found.id), "hypervisor_hostname": found.hypervisor_hostname,
            "reservable": found.reservable, "status": found.status,
            "start_date": format_date(found.span.start), "end_date": format_date(found.span.end),
            "free_periods": [{"start_date": format_date(period.start), "end_date": format_date(period.end)}
                             for period in found.periods]}
