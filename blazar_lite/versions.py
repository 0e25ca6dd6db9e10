"""`/` and `/versions`: version discovery as Blazar clients expect it."""

from __future__ import annotations

from flask import jsonify, request
from flask_smorest import Blueprint
from marshmallow import Schema, fields

blp = Blueprint("versions", __name__, description="API version discovery")


class LinkSchema(Schema):
    href = fields.String()
    rel = fields.String()


class VersionSchema(Schema):
    id = fields.String()
    status = fields.String()
    links = fields.List(fields.Nested(LinkSchema))


class VersionsSchema(Schema):
    versions = fields.List(fields.Nested(VersionSchema))


def _versions():  # type: ignore[no-untyped-def]
    base = request.host_url.rstrip("/")
    body = {"versions": [{"id": "v1.0", "status": "CURRENT",
                          "links": [{"href": f"{base}/v1/", "rel": "self"}]}]}
    response = jsonify(body)
    # 300 Multiple Choices: Blazar's answer, which its client's version discovery expects.
    response.status_code = 300
    return response


@blp.route("/", methods=["GET"])
@blp.alt_response(300, schema=VersionsSchema, description="The API versions this service offers.")
def root():  # type: ignore[no-untyped-def]
    """List the API versions."""
    return _versions()


@blp.route("/versions", methods=["GET"])
@blp.alt_response(300, schema=VersionsSchema, description="The API versions this service offers.")
def versions():  # type: ignore[no-untyped-def]
    """List the API versions."""
    return _versions()


class CurrentVersionSchema(Schema):
    version = fields.Nested(VersionSchema)


@blp.route("/v1", methods=["GET"])
@blp.alt_response(200, schema=CurrentVersionSchema, description="The version this endpoint serves.")
def v1_root():  # type: ignore[no-untyped-def]
    """Describe API v1 (clients that discover versions from their endpoint read this)."""
    base = request.host_url.rstrip("/")
    return {"version": {"id": "v1.0", "status": "CURRENT", "links": [{"href": f"{base}/v1/", "rel": "self"}]}}
