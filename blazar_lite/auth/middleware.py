"""Establish the caller of every request: noauth headers or a Keystone-validated token."""

from __future__ import annotations

from flask import Flask, g, request

from blazar_lite import web
from blazar_lite.auth.context import RequestContext
from blazar_lite.exceptions import Unauthorized
from blazar_lite.settings import Settings, SettingsError

# Paths a client reads before it has a token (version discovery, the API description).
PUBLIC_PATHS = frozenset({"/", "/versions", "/v1", "/v1/", "/placement", "/placement/",
                          "/openapi.json", "/docs"})


def _roles(header: str | None) -> frozenset[str]:
    return frozenset(r.strip() for r in (header or "").split(",") if r.strip())


def keystone_conf(settings: Settings) -> dict[str, str]:
    """The options for keystonemiddleware's auth_token, or SettingsError if they cannot work."""
    conf = dict(settings.keystone_authtoken)
    if not conf.get("www_authenticate_uri") and not (conf.get("auth_type") and conf.get("auth_url")):
        # The middleware names Keystone in the WWW-Authenticate header of every 401; without
        # either option it fails on the first unauthenticated request instead of at start.
        raise SettingsError("[keystone_authtoken] needs www_authenticate_uri (or auth_type and auth_url) "
                            "when [auth] strategy = keystone")
    # Our app decides, so that a missing or bad token gets our error body, not the middleware's.
    conf["delay_auth_decision"] = "true"
    return conf


def _governor_call() -> bool:
    """A deployment governor's call with its own bearer token: the route checks the token
    (deployments/governor.py), not Keystone."""
    return (request.path.startswith("/v1/deployments/") and "/instances" in request.path
            and request.headers.get("Authorization", "")[:7].lower() == "bearer ")


def install(app: Flask, settings: Settings) -> None:
    """Attach the configured auth strategy to `app`."""
    if settings.auth_strategy == "keystone":
        from keystonemiddleware import auth_token

        conf = keystone_conf(settings)
        app.wsgi_app = auth_token.AuthProtocol(app.wsgi_app, conf)  # type: ignore[method-assign]

    @app.before_request
    def _identify() -> None:
        if settings.auth_strategy == "keystone":
            if request.path in PUBLIC_PATHS or _governor_call():
                g.context = RequestContext(user_id="", project_id="", roles=frozenset(),
                                           request_id=web.request_id())
                return
            if request.headers.get("X-Identity-Status") != "Confirmed":
                raise Unauthorized("Authentication required: send a valid Keystone token in X-Auth-Token.")
            g.context = RequestContext(
                user_id=request.headers.get("X-User-Id", ""),
                project_id=request.headers.get("X-Project-Id", ""),
                roles=_roles(request.headers.get("X-Roles")),
                request_id=web.request_id())
            return
        roles = _roles(request.headers.get("X-Roles"))
        g.context = RequestContext(
            user_id=request.headers.get("X-User-Id") or settings.auth_noauth_user_id,
            project_id=request.headers.get("X-Project-Id") or settings.auth_noauth_project_id,
            roles=roles or frozenset({"admin"}),
            request_id=web.request_id())
