"""/placement: Allocations."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("placement_allocations", __name__, description="Allocations")
