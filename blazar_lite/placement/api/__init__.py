"""The Placement-compatible REST API under /placement (microversions 1.0 to 1.39)."""

from __future__ import annotations

from flask_smorest import Api

from blazar_lite.placement.api import microversion, root

BLUEPRINTS = (root,)


def register(api: Api) -> None:
    microversion.install(api._app)
    for module in BLUEPRINTS:
        api.register_blueprint(module.blp, url_prefix="/placement")
