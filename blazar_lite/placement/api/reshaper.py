"""/placement: Reshaper."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("placement_reshaper", __name__, description="Reshaper")
