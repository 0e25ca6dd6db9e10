"""The Placement-compatible REST API under /placement (microversions 1.0 to 1.39)."""

from __future__ import annotations

from flask_smorest import Api

from blazar_lite.placement.api import (
    aggregates,
    allocations,
    candidates,
    inventories,
    microversion,
    providers,
    reshaper,
    resource_classes,
    root,
    traits,
    usages,
)

BLUEPRINTS = (root, providers, inventories, usages, aggregates, traits, resource_classes, allocations,
              candidates, reshaper)


def register(api: Api) -> None:
    microversion.install(api._app)
    for module in BLUEPRINTS:
        api.register_blueprint(module.blp, url_prefix="/placement")
