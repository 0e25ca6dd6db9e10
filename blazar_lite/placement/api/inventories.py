"""/placement: Inventories."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("placement_inventories", __name__, description="Inventories")
