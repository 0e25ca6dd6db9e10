"""/v1/scheduler/host-passes: the check a compute scheduler's filter calls once per request.

It is a service's interface (Nova's scheduler, an operator's tooling), so by default only admins
and the service role may call it (`filters:host_passes`).
"""

from __future__ import annotations

from flask_smorest import Blueprint
from marshmallow import EXCLUDE, RAISE, Schema, fields, validate

from blazar_lite import web
from blazar_lite.filters import MAX_HOSTS, check

blp = Blueprint("filters", __name__, description="The host-passes check for compute schedulers (Blazar's filter)")


class FlavorSpecs(Schema):
    class Meta:
        # Callers may send the whole flavor; only its extra specs matter here.
        unknown = EXCLUDE

    extra_specs = fields.Dict(keys=fields.String(), values=fields.String(), load_default=dict, metadata={
        "description": "The flavor's extra specs; resources:CUSTOM_RESERVATION_<ID>=1 asks for an instance "
                       "reservation."})


class HostPassesRequest(Schema):
    class Meta:
        unknown = RAISE

    hosts = fields.List(fields.String(), required=True, validate=validate.Length(
        max=MAX_HOSTS, error="At most {max} hosts per call; split the list."), metadata={
        "description": "Hypervisor hostnames (or registered host ids) the scheduler is filtering."})
    project_id = fields.String(required=True, metadata={"description": "The project of the instance."})
    flavor = fields.Nested(FlavorSpecs, allow_none=True)
    scheduler_hints = fields.Dict(keys=fields.String(), values=fields.Raw(), allow_none=True, metadata={
        "description": 'Nova\'s hints; "reservation" (a reservation id, or a list of one) asks for a '
                       "physical:host reservation's hosts."})


class VerdictSchema(Schema):
    host = fields.String(metadata={"description": "The host as it was named in the request."})
    passes = fields.Boolean()
    reason = fields.String()


class VerdictsEnvelope(Schema):
    hosts = fields.List(fields.Nested(VerdictSchema))


@blp.route("/scheduler/host-passes", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": HostPassesRequest}}})
@blp.alt_response(200, schema=VerdictsEnvelope, description="One verdict per host, in the order asked.")
def host_passes():  # type: ignore[no-untyped-def]
    """Which of these hosts may take an instance of the project with this flavor and these hints:
    a reservation's hosts only for its project's requests that ask for it, other hosts only when
    they are not reserved."""
    web.enforce("filters:host_passes")
    data = web.json_body(HostPassesRequest())
    with web.runtime().db.read() as session:
        verdicts = check.host_passes(session, data["hosts"], data["project_id"],
                                     (data.get("flavor") or {}).get("extra_specs", {}),
                                     data.get("scheduler_hints") or {})
    return {"hosts": [{"host": v.host, "passes": v.passes, "reason": v.reason} for v in verdicts]}
