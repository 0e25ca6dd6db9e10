"""/placement: Provider aggregates."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("placement_aggregates", __name__, description="Provider aggregates")
