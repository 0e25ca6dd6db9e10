"""/v1/scriptlet/test: try a placement scriptlet against the live inventory without storing it
or placing anything (admins; `blazar-lite scriptlet test`)."""

from __future__ import annotations

from flask_smorest import Blueprint
from marshmallow import INCLUDE, Schema, fields

from blazar_lite import web
from blazar_lite.exceptions import BadRequest
from blazar_lite.instances import api as instances_api
from blazar_lite.instances import service
from blazar_lite.scriptlet import runtime

blp = Blueprint("scriptlet", __name__, description="The instance placement scriptlet (admins)")


class TrialRequest(Schema):
    class Meta:
        unknown = INCLUDE

    scriptlet = fields.String(metadata={"description": "The scriptlet to try (Starlark source)."})
    request = fields.Dict(metadata={"description": "An instance-create body, as POST /v1/instances takes."})


class LogLine(Schema):
    level = fields.String()
    message = fields.String()


class Rejected(Schema):
    node = fields.String()
    reason = fields.String()


class TrialResult(Schema):
    candidates = fields.List(fields.String(), metadata={"description": "Nodes that passed the filters, in the "
                                                                       "order the scriptlet got them."})
    rejected = fields.List(fields.Nested(Rejected))
    target = fields.String(allow_none=True, metadata={"description": "What the scriptlet set, if anything."})
    node = fields.String(allow_none=True, metadata={"description": "Where the instance would go."})
    decided_by = fields.String(metadata={"description": "scriptlet, or the allocator that decided instead."})
    message = fields.String(metadata={"description": "Why no node could take it, when none could."})
    log = fields.List(fields.Nested(LogLine))


@blp.route("/scriptlet/test", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": TrialRequest}}})
@blp.alt_response(200, schema=TrialResult, description="The decision the scriptlet leads to; nothing was written.")
def test_scriptlet():  # type: ignore[no-untyped-def]
    """Compile a scriptlet and run it for one instance-create request against the current nodes
    and usage: which candidates it got, what it decided, what it logged. A scriptlet that does
    not compile, or rejects the request, is the 400 it would be for real."""
    web.enforce("scriptlet:test")
    data = web.json_body(TrialRequest())
    source, body = data.get("scriptlet"), data.get("request")
    if not isinstance(source, str) or not isinstance(body, dict):
        raise BadRequest('The body must be {"scriptlet": "<Starlark source>", "request": {<instance-create body>}}.')
    program = runtime.compile_program(source)
    allocator = instances_api.allocator_config()
    # A read-only transaction: the trial decides and writes nothing.
    with web.runtime().db.read() as session:
        trial = service.try_placement(session, web.caller(), body, program, allocator)
    return {"candidates": trial.candidates,
            "rejected": [{"node": node, "reason": reason} for node, reason in trial.rejections],
            "target": trial.target, "node": trial.node, "decided_by": trial.decided_by, "message": trial.message,
            "log": [{"level": level, "message": message} for level, message in trial.log]}
