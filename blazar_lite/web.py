"""What every blueprint shares: the running service's parts, the caller, bodies, errors.

Errors are rendered in the Blazar format (`error_code`, `error_name`, `error_message`) everywhere
except under /placement, which speaks the Placement format (`errors: [{status, title, detail,
code, request_id}]`).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, current_app, g, has_request_context, jsonify, request
from marshmallow import INCLUDE, Schema, ValidationError, fields
from sqlalchemy.exc import OperationalError
from werkzeug.exceptions import HTTPException

from blazar_lite.auth.context import RequestContext
from blazar_lite.auth.policy import Policy
from blazar_lite.db import Database
from blazar_lite.exceptions import BadRequest, ServiceError
from blazar_lite.server_config.cache import ServerConfigCache
from blazar_lite.settings import Settings

LOG = logging.getLogger(__name__)
REQUEST_ID_HEADER = "X-Openstack-Request-Id"


@dataclass
class Runtime:
    """The parts of a running service, shared by every request of one application."""

    settings: Settings
    db: Database
    policy: Policy
    # The server configuration (/v1/config) as this process holds it.
    server_config: ServerConfigCache


def runtime() -> Runtime:
    return current_app.extensions["blazar_lite"]


def caller() -> RequestContext:
    return g.context


def enforce(rule: str, target: Mapping[str, object] | None = None) -> None:
    runtime().policy.enforce(rule, caller(), target)


class RequestIdFilter(logging.Filter):
    """Stamps every log record with the id of the request being served ("-" outside requests)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = g.get("request_id", "-") if has_request_context() else "-"
        return True


LOG_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s [%(request_id)s] %(message)s"


def request_id() -> str:
    rid = g.get("request_id")
    if rid is None:
        rid = g.request_id = f"req-{uuid.uuid4()}"
    return rid


def _field_messages(messages: Any, prefix: str = "") -> list[str]:
    """Flatten marshmallow's nested messages into "field: problem" sentences."""
    if isinstance(messages, Mapping):
        out: list[str] = []
        for key, value in messages.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if key == "_schema":
                name = prefix or "body"
            out += _field_messages(value, name)
        return out
    if isinstance(messages, list | tuple):
        if all(isinstance(m, str) for m in messages):
            return [f"Invalid input for field '{prefix or 'body'}': {' '.join(messages)}"]
        out = []
        for item in messages:
            out += _field_messages(item, prefix)
        return out
    return [f"Invalid input for field '{prefix or 'body'}': {messages}"]


def validation_message(messages: Any) -> str:
    return " ".join(_field_messages(messages))


def json_body(schema: Schema) -> Any:
    """Parse and validate the JSON body with `schema`, or raise an error that names the field."""
    if request.mimetype != "application/json":
        shown = request.mimetype or "no content type"
        raise _MediaTypeError(
            f"The media type {shown} is not supported, use application/json.")
    raw = request.get_data(cache=True)
    if not raw.strip():
        raise BadRequest("Malformed JSON: the request body is empty.")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"Malformed JSON: {exc}.") from None
    try:
        return schema.load(data)
    except ValidationError as exc:
        raise BadRequest(validation_message(exc.messages)) from None


def query_args(allowed: set[str]) -> dict[str, str]:
    """The query parameters, each given at most once, refusing ones the route does not know."""
    unknown = sorted(set(request.args) - allowed)
    if unknown:
        known = ", ".join(sorted(allowed)) or "none"
        raise BadRequest(f"Unknown query parameter {', '.join(unknown)}; this route accepts: {known}.")
    args: dict[str, str] = {}
    for key in request.args:
        values = request.args.getlist(key)
        if len(values) > 1:
            raise BadRequest(f"Query parameter {key} may be given only once.")
        args[key] = values[0]
    return args


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off", ""}


def flag(args: Mapping[str, str], key: str) -> bool:
    """A boolean query parameter (absent: false)."""
    value = args.get(key, "false").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise BadRequest(f"Invalid query parameter {key}={args[key]!r}: use True or False.")


def raw_field(description: str) -> fields.Raw:
    """A body field documented but not typed by the schema: the service checks its type, with a
    message that names the field (and accepts what Blazar's clients send, e.g. "True")."""
    return fields.Raw(allow_none=True, metadata={"description": description})


class BlazarErrorSchema(Schema):
    """The error body under /v1 (and the API's root)."""

    class Meta:
        # A scriptlet's error adds where the problem is (line, column).
        unknown = INCLUDE

    error_code = fields.Integer(required=True, metadata={"description": "The HTTP status."})
    error_name = fields.String(required=True, metadata={"description": "What kind of error, e.g. InvalidInput."})
    error_message = fields.String(required=True, metadata={"description": "What went wrong and what to change."})


class PlacementErrorSchema(Schema):
    class Meta:
        unknown = INCLUDE

    status = fields.Integer(required=True)
    title = fields.String(required=True)
    detail = fields.String(required=True)
    code = fields.String(required=True)
    request_id = fields.String(required=True)


class PlacementErrorsSchema(Schema):
    """The error body under /placement."""

    errors = fields.List(fields.Nested(PlacementErrorSchema), required=True)


def error_body_schema(spec) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Register the two error bodies with the apispec `spec`; return the schema that is either."""
    spec.components.schema("BlazarError", schema=BlazarErrorSchema)
    spec.components.schema("PlacementErrors", schema=PlacementErrorsSchema)
    return {"oneOf": [{"$ref": "#/components/schemas/BlazarError"},
                      {"$ref": "#/components/schemas/PlacementErrors"}]}


class _MediaTypeError(ServiceError):
    status = 415
    name = "UnsupportedMediaType"


_TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 406: "Not Acceptable", 409: "Conflict",
           413: "Request Entity Too Large", 415: "Unsupported Media Type",
           500: "Internal Server Error", 503: "Service Unavailable"}


def error_response(status: int, name: str, message: str, code: str = "placement.undefined_code",
                   extra: Mapping[str, Any] | None = None) -> Response:
    if request.path.startswith("/placement"):
        error = {"status": status, "title": _TITLES.get(status, name), "detail": message,
                 "code": code, "request_id": request_id()}
        error.update(extra or {})
        response = jsonify({"errors": [error]})
    else:
        # Blazar's three fields, then whatever else locates the problem (a scriptlet's line and column).
        response = jsonify({"error_code": status, "error_name": name, "error_message": message,
                            **{key: value for key, value in (extra or {}).items() if value is not None}})
    response.status_code = status
    return response


def _http_exception(exc: HTTPException) -> Response:
    status = exc.code or 500
    data = getattr(exc, "data", None) or {}
    if status == 422 and "messages" in data:
        # flask-smorest's argument parsing: a user mistake, so 400 naming the field.
        return error_response(400, "InvalidInput", validation_message(data["messages"]))
    if status == 404:
        message = f"The resource could not be found: {request.method} {request.path}"
    elif status == 405:
        allowed = exc.valid_methods if hasattr(exc, "valid_methods") else None  # type: ignore[attr-defined]
        message = f"The method {request.method} is not allowed for {request.path}" + (
            f"; allowed: {', '.join(sorted(allowed))}" if allowed else "")
    elif status == 413:
        limit = runtime().settings.api_max_body_bytes
        message = f"The request body is larger than the limit of {limit} bytes."
    else:
        message = exc.description or _TITLES.get(status, exc.name)
    response = error_response(status, exc.name.replace(" ", ""), message)
    if status == 405 and getattr(exc, "valid_methods", None):
        response.headers["Allow"] = ", ".join(sorted(exc.valid_methods))  # type: ignore[attr-defined]
    return response


def _service_error(exc: ServiceError) -> Response:
    if exc.status >= 500:
        LOG.error("%s: %s", exc.name, exc.message)
    return error_response(exc.status, exc.name, exc.message, exc.code, exc.extra)


def _unexpected(exc: Exception) -> Response:
    LOG.exception("unexpected error while serving %s %s", request.method, request.path)
    return error_response(500, "InternalError", "An unexpected error occurred; the request changed nothing.")


_UNAVAILABLE_HINTS = ("database is locked", "could not connect", "connection refused", "server closed",
                      "terminating connection", "connection timed out", "no connection", "connection is closed")


def _database_unavailable(exc: OperationalError) -> Response:
    # SQLite reports mistakes in SQL as OperationalError too; those are bugs (500), not outages.
    text = str(exc.orig).lower()
    if not (exc.connection_invalidated or any(hint in text for hint in _UNAVAILABLE_HINTS)):
        return _unexpected(exc)
    LOG.error("database error while serving %s %s: %s", request.method, request.path, exc.orig)
    return error_response(503, "ServiceUnavailable",
                          "The database is unavailable or busy; the request changed nothing. Retry later.")


def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(ServiceError, _service_error)
    app.register_error_handler(OperationalError, _database_unavailable)
    app.register_error_handler(HTTPException, _http_exception)
    app.register_error_handler(Exception, _unexpected)
