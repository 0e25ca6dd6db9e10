"""/placement: Allocation candidates."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("placement_candidates", __name__, description="Allocation candidates")
