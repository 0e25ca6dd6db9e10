"""GET /placement/: the version document Placement clients discover."""

from __future__ import annotations

from flask import request
from flask_smorest import Blueprint

from blazar_lite.placement.api import microversion

blp = Blueprint("placement_root", __name__, description="Placement version discovery")


@blp.route("/", methods=["GET"])
def placement_root():  # type: ignore[no-untyped-def]
    """The Placement API version, with the range of microversions offered."""
    return {"versions": [{
        "id": "v1.0",
        "max_version": microversion.text(microversion.MAX_VERSION),
        "min_version": microversion.text(microversion.MIN_VERSION),
        "status": "CURRENT",
        "links": [{"rel": "self", "href": request.url_root.rstrip("/") + "/placement/"}],
    }]}
