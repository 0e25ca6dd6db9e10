"""/placement: Resource classes."""

from __future__ import annotations

from flask_smorest import Blueprint

blp = Blueprint("placement_resource_classes", __name__, description="Resource classes")
