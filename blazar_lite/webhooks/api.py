"""/v1/webhooks: a project's webhooks for its lease events, and what was sent to each.

Webhooks are project-scoped: members manage their project's, readers read them, and another
project's webhook is a 404. Admins see every project's.
"""

from __future__ import annotations

from typing import Any

from flask_smorest import Blueprint
from marshmallow import INCLUDE, Schema, fields

from blazar_lite import web
from blazar_lite.leases.dates import format_date, format_optional_date
from blazar_lite.webhooks import delivery, subscriptions

blp = Blueprint("webhooks", __name__, description="Webhooks: lease events POSTed, signed, to a project's receivers")


class WebhookBody(Schema):
    class Meta:
        unknown = INCLUDE

    url = web.raw_field("Where events are POSTed (http:// or https://).")
    secret = web.raw_field("The key of the HMAC that signs each event (16 to 128 characters); random when left "
                           "out at creation.")
    events = web.raw_field("The events wanted, e.g. [\"lease.before_end\", \"lease.ended\"]; all when left out or "
                           "empty.")
    description = web.raw_field("Free text.")


class WebhookSchema(Schema):
    id = fields.String()
    project_id = fields.String()
    url = fields.String()
    secret = fields.String()
    events = fields.List(fields.String())
    description = fields.String()
    created_at = fields.String()
    updated_at = fields.String(allow_none=True)


class WebhookEnvelope(Schema):
    webhook = fields.Nested(WebhookSchema)


class WebhooksEnvelope(Schema):
    webhooks = fields.List(fields.Nested(WebhookSchema))


class AttemptSchema(Schema):
    attempt = fields.Integer()
    url = fields.String(allow_none=True)
    started_at = fields.String()
    duration_ms = fields.Integer()
    status_code = fields.Integer(allow_none=True, metadata={"description": "The receiver's answer; null when none "
                                                                             "came."})
    error = fields.String(metadata={"description": "Empty when delivered; else why the attempt failed."})
    outcome = fields.String(metadata={"description": "DELIVERED, RETRY or FAILED."})


class DeliverySchema(Schema):
    id = fields.String()
    type = fields.String()
    status = fields.String(metadata={"description": "PENDING, SENDING, DELIVERED or FAILED."})
    created_at = fields.String()
    next_attempt_at = fields.String(allow_none=True, metadata={"description": "When it is sent next, while it "
                                                                              "waits."})
    delivered_at = fields.String(allow_none=True)
    payload = fields.Dict(metadata={"description": "The JSON body POSTed."})
    attempts = fields.List(fields.Nested(AttemptSchema))


class DeliveriesEnvelope(Schema):
    events = fields.List(fields.Nested(DeliverySchema))


def delivery_body(view: delivery.DeliveryView) -> dict[str, Any]:
    """An event and its attempts, as the event histories of webhooks and deployments show it."""
    return {"id": view.id, "type": view.event_type, "status": view.status, "created_at": format_date(view.created_at),
            "next_attempt_at": format_optional_date(view.next_attempt_at),
            "delivered_at": format_optional_date(view.delivered_at), "payload": view.payload,
            "attempts": [{"attempt": a.attempt, "url": a.url, "started_at": format_date(a.started_at),
                          "duration_ms": a.duration_ms, "status_code": a.status_code, "error": a.error,
                          "outcome": a.outcome} for a in view.attempts]}


def _webhook(view: subscriptions.SubscriptionView) -> dict[str, Any]:
    return {"id": view.id, "project_id": view.project_id, "url": view.url, "secret": view.secret,
            "events": view.events, "description": view.description, "created_at": format_date(view.created_at),
            "updated_at": format_optional_date(view.updated_at)}


def _scope(rule: str) -> str | None:
    """The project whose webhooks the caller reaches after `rule` allows it (None: every
    project's, for admins)."""
    context = web.caller()
    web.enforce(rule, {"project_id": context.project_id})
    return None if web.runtime().policy.allows("webhooks:get_all", context, {}) else context.project_id


@blp.route("/webhooks", methods=["GET"])
@blp.alt_response(200, schema=WebhooksEnvelope, description="The project's webhooks.")
def list_webhooks():  # type: ignore[no-untyped-def]
    """List your project's webhooks (admins: every project's)."""
    web.query_args(set())
    scope = _scope("webhooks:get")
    with web.runtime().db.read() as session:
        return {"webhooks": [_webhook(v) for v in subscriptions.list_subscriptions(session, scope)]}


@blp.route("/webhooks", methods=["POST"])
@blp.doc(requestBody={"content": {"application/json": {"schema": WebhookBody}}})
@blp.alt_response(201, schema=WebhookEnvelope, description="The new webhook.")
def create_webhook():  # type: ignore[no-untyped-def]
    """Add a webhook for your project's lease events."""
    context = web.caller()
    web.enforce("webhooks:post", {"project_id": context.project_id})
    body = web.json_body(WebhookBody())
    with web.runtime().db.transaction() as session:
        return {"webhook": _webhook(subscriptions.create_subscription(session, context.project_id, body))}, 201


@blp.route("/webhooks/<string:webhook_id>", methods=["GET"])
@blp.alt_response(200, schema=WebhookEnvelope, description="The webhook.")
def get_webhook(webhook_id: str):  # type: ignore[no-untyped-def]
    """Show a webhook."""
    web.query_args(set())
    scope = _scope("webhooks:get")
    with web.runtime().db.read() as session:
        return {"webhook": _webhook(subscriptions.get_subscription(session, scope, webhook_id))}


@blp.route("/webhooks/<string:webhook_id>", methods=["PATCH"])
@blp.doc(requestBody={"content": {"application/json": {"schema": WebhookBody}}})
@blp.alt_response(200, schema=WebhookEnvelope, description="The changed webhook.")
def update_webhook(webhook_id: str):  # type: ignore[no-untyped-def]
    """Change a webhook's URL, secret, events or description."""
    scope = _scope("webhooks:put")
    body = web.json_body(WebhookBody())
    with web.runtime().db.transaction() as session:
        return {"webhook": _webhook(subscriptions.update_subscription(session, scope, webhook_id, body))}


@blp.route("/webhooks/<string:webhook_id>", methods=["DELETE"])
@blp.alt_response(204, description="Deleted, with the events waiting for it.")
def delete_webhook(webhook_id: str):  # type: ignore[no-untyped-def]
    """Delete a webhook."""
    scope = _scope("webhooks:delete")
    with web.runtime().db.transaction() as session:
        subscriptions.delete_subscription(session, scope, webhook_id)
    return "", 204


@blp.route("/webhooks/<string:webhook_id>/events", methods=["GET"])
@blp.alt_response(200, schema=DeliveriesEnvelope, description="The webhook's events, newest first.")
def list_webhook_events(webhook_id: str):  # type: ignore[no-untyped-def]
    """The events sent (or to be sent) to the webhook, with every attempt; filter with status,
    type and limit (default 100)."""
    args = web.query_args({"status", "type", "limit"})
    scope = _scope("webhooks:get")
    with web.runtime().db.read() as session:
        return {"events": [delivery_body(v) for v in subscriptions.deliveries(session, scope, webhook_id, args)]}
