"""/placement: Traits."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("placement_traits", __name__, description="Traits")
