"""The application factory: one Flask app per call, configured only by the settings given."""

from __future__ import annotations

import logging
import time

from flask import Flask, g, request
from flask_smorest import Api
from werkzeug.exceptions import RequestEntityTooLarge

from blazar_lite import __version__, docs, versions, web
from blazar_lite.auth import middleware
from blazar_lite.auth.policy import Policy
from blazar_lite.db import Database
from blazar_lite.placement.api import register as register_placement
from blazar_lite.settings import Settings

LOG = logging.getLogger("blazar_lite.api")


class _Response(Flask.response_class):
    # Clients follow Location against their endpoint (osc-placement GETs it after a create), so it
    # must be absolute, as WebOb-based services make it.
    autocorrect_location_header = True


class _Api(Api):
    """flask-smorest's Api with our error bodies instead of its own."""

    def _register_error_handlers(self) -> None:  # noqa: D401 - overriding a hook
        web.register_error_handlers(self._app)


def create_app(settings: Settings, database: Database | None = None) -> Flask:
    """Build the WSGI application for `settings` (a database may be passed in to share it)."""
    app = Flask("blazar_lite")
    app.response_class = _Response
    app.config.update(
        API_TITLE="blazar-lite",
        API_VERSION=__version__,
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        MAX_CONTENT_LENGTH=settings.api_max_body_bytes,
        JSON_SORT_KEYS=False,
    )
    # /placement and /placement/ are the same resource to clients; no redirects.
    app.url_map.strict_slashes = False
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.json.compact = True  # type: ignore[attr-defined]
    app.extensions["blazar_lite"] = web.Runtime(
        settings=settings, db=database or Database(settings.database_url),
        policy=Policy.from_file(settings.auth_policy_file))

    api = _Api(app, spec_kwargs={"info": {"description": "Reservations and leases for compute capacity, "
                                          "with a Placement-compatible inventory under /placement."}})
    api.spec.components.security_scheme("token", {"type": "apiKey", "in": "header", "name": "X-Auth-Token"})
    api.register_blueprint(versions.blp)
    register_placement(api)
    app.register_blueprint(docs.blp)

    @app.before_request
    def _start() -> None:
        g.started = time.perf_counter()
        web.request_id()
        # Refuse an oversized body before any work, whether or not the route would read it
        # (Flask alone only refuses when the body is read).
        if request.content_length is not None and request.content_length > settings.api_max_body_bytes:
            raise RequestEntityTooLarge()

    middleware.install(app, settings)

    @app.after_request
    def _finish(response):  # type: ignore[no-untyped-def]
        rid = web.request_id()
        response.headers[web.REQUEST_ID_HEADER] = rid
        if response.status_code == 204:
            # No content has no type: clients that parse by Content-Type must not try.
            response.headers.pop("Content-Type", None)
        elapsed = (time.perf_counter() - g.get("started", time.perf_counter())) * 1000
        LOG.info("%s %s %d %.1fms", request.method, request.full_path.rstrip("?"),
                 response.status_code, elapsed)
        return response

    return app
