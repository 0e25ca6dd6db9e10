"""The application factory: one Flask app per call, configured only by the settings given."""

from __future__ import annotations

import logging
import time
from typing import Any

from flask import Flask, g, request
from flask_smorest import Api
from werkzeug.exceptions import RequestEntityTooLarge

from blazar_lite import __version__, docs, versions, web
from blazar_lite.auth import middleware
from blazar_lite.auth.policy import Policy
from blazar_lite.db import Database
from blazar_lite.deployments import api as deployments_api
from blazar_lite.filters import api as filters_api
from blazar_lite.flavors import api as flavors_api
from blazar_lite.hosts import api as hosts_api
from blazar_lite.instances import api as instances_api
from blazar_lite.leases import api as leases_api
from blazar_lite.leases import search_api as availability_api
from blazar_lite.placement.api import register as register_placement
from blazar_lite.scriptlet import api as scriptlet_api
from blazar_lite.server_config import api as server_config_api
from blazar_lite.server_config.cache import ServerConfigCache
from blazar_lite.settings import Settings
from blazar_lite.webhooks import api as webhooks_api

LOG = logging.getLogger("blazar_lite.api")


class _Response(Flask.response_class):
    # Clients follow Location against their endpoint (osc-placement GETs it after a create), so it
    # must be absolute, as WebOb-based services make it.
    autocorrect_location_header = True


class _JsonSuffix:
    """Blazar answers its routes with a `.json` suffix too (/v1/leases.json): drop the suffix
    before routing, for every route under /v1."""

    def __init__(self, wsgi_app) -> None:  # type: ignore[no-untyped-def]
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):  # type: ignore[no-untyped-def]
        path = environ.get("PATH_INFO", "")
        if path.startswith("/v1/") and path.endswith(".json"):
            environ["PATH_INFO"] = path[:-len(".json")]
        return self.wsgi_app(environ, start_response)


class _Api(Api):
    """flask-smorest's Api with our error bodies instead of its own, whose OpenAPI description is
    written when first asked for: describing every route is half the cost of building the
    application, which every API worker pays at start and which few of them ever serve."""

    def __init__(self, app: Flask, **kwargs: Any) -> None:
        self._undescribed: list[tuple[Any, str, Any]] = []
        super().__init__(app, **kwargs)

    def register_blueprint(self, blp, *, parameters=None, **options):  # type: ignore[no-untyped-def]
        name = options.get("name", blp.name)
        self._app.extensions["flask-smorest"]["blp_name_to_api"][name] = self
        self._app.register_blueprint(blp, **options)
        self._undescribed.append((blp, name, parameters))

    def described_spec(self) -> Any:
        """The API's APISpec with every registered blueprint's routes in it."""
        while self._undescribed:
            blp, name, parameters = self._undescribed.pop(0)
            blp.register_views_in_doc(self, self._app, self.spec, name=name, parameters=parameters)
            self.spec.tag({"name": name, "description": blp.description})
        return self.spec

    def _openapi_json(self):  # type: ignore[no-untyped-def]
        self.described_spec()
        return super()._openapi_json()

    def _register_error_handlers(self) -> None:  # noqa: D401 - overriding a hook
        web.register_error_handlers(self._app)

    def _register_responses(self) -> None:  # noqa: D401 - overriding a hook
        # Every error response documents the bodies we send (Blazar's or Placement's format).
        self.ERROR_SCHEMA = web.error_body_schema(self.spec)
        super()._register_responses()


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
    db = database or Database(settings.database_url)
    app.extensions["blazar_lite"] = web.Runtime(
        settings=settings, db=db, policy=Policy.from_file(settings.auth_policy_file),
        server_config=ServerConfigCache(db, float(settings.instances_config_refresh_seconds)))

    api = _Api(app, spec_kwargs={"info": {"description": "Reservations and leases for compute capacity, "
                                          "with a Placement-compatible inventory under /placement."}})
    api.spec.components.security_scheme("token", {"type": "apiKey", "in": "header", "name": "X-Auth-Token"})
    api.register_blueprint(versions.blp)
    register_placement(api)
    api.register_blueprint(hosts_api.blp, url_prefix="/v1")
    api.register_blueprint(flavors_api.blp, url_prefix="/v1")
    api.register_blueprint(leases_api.blp, url_prefix="/v1")
    api.register_blueprint(availability_api.blp, url_prefix="/v1")
    api.register_blueprint(instances_api.blp, url_prefix="/v1")
    api.register_blueprint(filters_api.blp, url_prefix="/v1")
    api.register_blueprint(server_config_api.blp, url_prefix="/v1")
    api.register_blueprint(scriptlet_api.blp, url_prefix="/v1")
    api.register_blueprint(deployments_api.blp, url_prefix="/v1")
    api.register_blueprint(webhooks_api.blp, url_prefix="/v1")
    app.register_blueprint(docs.blp)

    @app.before_request
    def _start() -> None:
        g.started = time.perf_counter()
        web.request_id()
        # Refuse an oversized body before any work, whether or not the route would read it
        # (Flask alone only refuses when the body is read).
        if request.content_length is not None and request.content_length > settings.api_max_body_bytes:
            raise RequestEntityTooLarge()

    app.wsgi_app = _JsonSuffix(app.wsgi_app)  # type: ignore[method-assign]
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
