"""/placement: Usages."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("placement_usages", __name__, description="Usages")
