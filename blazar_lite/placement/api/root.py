"""GET /placement/: the version document Placement clients discover."""

from __future__ import annotations

from flask import request
from flask_smorest import Blueprint
from marshmallow import Schema, fields

from blazar_lite.placement.api import microversion
from blazar_lite.versions import LinkSchema

blp = Blueprint("placement_root", __name__, description="Placement version discovery")


class PlacementVersionSchema(Schema):
    id = fields.String()
    max_version = fields.String(metadata={"description": "The highest microversion offered."})
    min_version = fields.String(metadata={"description": "The lowest microversion offered."})
    status = fields.String()
    links = fields.List(fields.Nested(LinkSchema))


class PlacementVersionsSchema(Schema):
    versions = fields.List(fields.Nested(PlacementVersionSchema))


@blp.route("/", methods=["GET"])
@blp.alt_response(200, schema=PlacementVersionsSchema, description="The version this endpoint serves.")
def placement_root():  # type: ignore[no-untyped-def]
    """The Placement API version, with the range of microversions offered."""
    return {"versions": [{
        "id": "v1.0",
        "max_version": microversion.text(microversion.MAX_VERSION),
        "min_version": microversion.text(microversion.MIN_VERSION),
        "status": "CURRENT",
        "links": [{"rel": "self", "href": request.url_root.rstrip("/") + "/placement/"}],
    }]}
