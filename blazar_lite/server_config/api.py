"""/v1/config: the server configuration, as LXD's (`{"config": {key: value}}`), admins only.

PUT replaces the whole configuration (keys left out are unset); PATCH sets the keys it names
(null or "" unsets one). A value is checked before anything is stored: a scriptlet that does
not compile is a 400 with its line and column.
"""

from __future__ import annotations

from flask_smorest import Blueprint
from marshmallow import INCLUDE, Schema, fields

from blazar_lite import web
from blazar_lite.server_config import service

blp = Blueprint("server_config", __name__, description="Server configuration (admins)")


class ConfigBody(Schema):
    class Meta:
        unknown = INCLUDE

    config = fields.Dict(keys=fields.String(), values=fields.Raw(allow_none=True), metadata={
        "description": "Key to value (a string). Keys: " + "; ".join(
            f"{key.name}: {key.description}" for key in service.KEYS.values())})


def _answer(values: dict[str, str]) -> dict[str, object]:
    return {"config": values}


@blp.route("/config", methods=["GET"])
@blp.alt_response(200, schema=ConfigBody, description="Every key that is set, with its value.")
def get_config():  # type: ignore[no-untyped-def]
    """Show the server configuration."""
    web.enforce("config:get")
    with web.runtime().db.read() as session:
        return _answer(service.get_config(session))


def _write(change) -> dict[str, object]:  # type: ignore[no-untyped-def]
    body = web.json_body(ConfigBody())
    with web.runtime().db.transaction() as session:
        values = change(session, body)
    # This process uses the new values from its next request on; others within the refresh interval.
    web.runtime().server_config.invalidate()
    return _answer(values)


@blp.route("/config", methods=["PUT"])
@blp.doc(requestBody={"content": {"application/json": {"schema": ConfigBody}}})
@blp.alt_response(200, schema=ConfigBody, description="The configuration as stored.")
def replace_config():  # type: ignore[no-untyped-def]
    """Replace the whole server configuration: keys left out are unset."""
    web.enforce("config:update")
    return _write(service.replace_config)


@blp.route("/config", methods=["PATCH"])
@blp.doc(requestBody={"content": {"application/json": {"schema": ConfigBody}}})
@blp.alt_response(200, schema=ConfigBody, description="The configuration as stored.")
def update_config():  # type: ignore[no-untyped-def]
    """Set the keys given (null or an empty string unsets a key); others keep their values."""
    web.enforce("config:update")
    return _write(service.update_config)
