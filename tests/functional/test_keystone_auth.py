"""Keystone mode: keystonemiddleware validates the token (mocked by its own AuthTokenFixture),
and the caller the services see is the token's user, project and roles."""

from __future__ import annotations

from collections.abc import Iterator

import fixtures
import pytest
from flask import Blueprint, jsonify
from flask.testing import FlaskClient
from keystonemiddleware.fixture import AuthTokenFixture

from blazar_lite import web
from blazar_lite.app import create_app
from blazar_lite.settings import SettingsError

KEYSTONE = "http://keystone.invalid:5000/v3"
ADMIN_TOKEN = "admin-token"
MEMBER_TOKEN = "member-token"

# Routes that exist only in these tests: what the services would see as the caller.
probe = Blueprint("test_keystone_probe", __name__)


@probe.route("/v1/test-probe/whoami", methods=["GET"])
def whoami():  # type: ignore[no-untyped-def]
    context = web.caller()
    return jsonify(user_id=context.user_id, project_id=context.project_id, roles=sorted(context.roles))


@probe.route("/v1/test-probe/admin-only", methods=["GET"])
def admin_only():  # type: ignore[no-untyped-def]
    web.enforce("admin")
    return jsonify(ok=True)


@pytest.fixture
def tokens() -> Iterator[AuthTokenFixture]:
    with fixtures.Fixture() as holder:
        auth = holder.useFixture(AuthTokenFixture())
        auth.add_token_data(token_id=ADMIN_TOKEN, user_id="u-admin", project_id="p-admin",
                            role_list=["admin", "member", "reader"])
        auth.add_token_data(token_id=MEMBER_TOKEN, user_id="u-alice", project_id="p-alice",
                            role_list=["member", "reader"])
        yield auth


@pytest.fixture
def keystone_client(settings, database, tokens) -> FlaskClient:  # type: ignore[no-untyped-def]
    # The fixture replaces token validation; the middleware still needs to know where Keystone is
    # for the WWW-Authenticate header of its 401 answers.
    keystone_settings = settings.replace(auth_strategy="keystone",
                                         keystone_authtoken={"www_authenticate_uri": KEYSTONE})
    app = create_app(keystone_settings, database)
    app.register_blueprint(probe)
    return app.test_client()


def assert_unauthorized(response) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 401
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert body["error_code"] == 401
    assert body["error_name"] == "NotAuthorized"
    assert "token" in body["error_message"]
    assert response.headers["WWW-Authenticate"] == f'Keystone uri="{KEYSTONE}"'
    assert response.headers[web.REQUEST_ID_HEADER].startswith("req-")


def test_caller_is_the_user_project_and_roles_of_the_token(keystone_client: FlaskClient) -> None:
    response = keystone_client.get("/v1/test-probe/whoami", headers={"X-Auth-Token": MEMBER_TOKEN})
    assert response.status_code == 200
    assert response.get_json() == {"user_id": "u-alice", "project_id": "p-alice", "roles": ["member", "reader"]}


def test_identity_headers_sent_by_the_client_are_ignored(keystone_client: FlaskClient) -> None:
    response = keystone_client.get("/v1/test-probe/whoami", headers={
        "X-Auth-Token": MEMBER_TOKEN, "X-Roles": "admin", "X-Project-Id": "p-admin", "X-User-Id": "u-admin"})
    assert response.get_json() == {"user_id": "u-alice", "project_id": "p-alice", "roles": ["member", "reader"]}


def test_token_roles_reach_policy(keystone_client: FlaskClient) -> None:
    allowed = keystone_client.get("/v1/test-probe/admin-only", headers={"X-Auth-Token": ADMIN_TOKEN})
    assert allowed.status_code == 200
    denied = keystone_client.get("/v1/test-probe/admin-only", headers={"X-Auth-Token": MEMBER_TOKEN})
    assert denied.status_code == 403
    assert denied.get_json()["error_name"] == "PolicyNotAuthorized"


def test_missing_token_is_a_401_in_our_format(keystone_client: FlaskClient) -> None:
    assert_unauthorized(keystone_client.get("/v1/test-probe/whoami"))


def test_invalid_token_is_a_401_in_our_format(keystone_client: FlaskClient) -> None:
    assert_unauthorized(keystone_client.get("/v1/test-probe/whoami", headers={"X-Auth-Token": "forged"}))


def test_claiming_confirmed_identity_without_a_token_is_a_401(keystone_client: FlaskClient) -> None:
    response = keystone_client.get("/v1/test-probe/whoami", headers={
        "X-Identity-Status": "Confirmed", "X-Roles": "admin", "X-User-Id": "u-admin"})
    assert_unauthorized(response)


def test_missing_token_under_placement_is_a_401_in_placement_format(keystone_client: FlaskClient) -> None:
    response = keystone_client.get("/placement/resource_providers",
                                   headers={"OpenStack-API-Version": "placement 1.39"})
    assert response.status_code == 401
    error, = response.get_json()["errors"]
    assert error["status"] == 401


def test_placement_refuses_a_token_without_admin_or_service_role(keystone_client: FlaskClient) -> None:
    response = keystone_client.get("/placement/resource_providers", headers={
        "X-Auth-Token": MEMBER_TOKEN, "OpenStack-API-Version": "placement 1.39"})
    assert response.status_code == 403
    error, = response.get_json()["errors"]
    assert error["status"] == 403


def test_placement_answers_an_admin_token(keystone_client: FlaskClient) -> None:
    response = keystone_client.get("/placement/resource_providers", headers={
        "X-Auth-Token": ADMIN_TOKEN, "OpenStack-API-Version": "placement 1.39"})
    assert response.status_code == 200
    assert "resource_providers" in response.get_json()


@pytest.mark.parametrize("path", ["/", "/versions", "/placement/", "/openapi.json", "/docs"])
def test_discovery_and_description_need_no_token(keystone_client: FlaskClient, path: str) -> None:
    assert keystone_client.get(path).status_code in (200, 300)


def test_keystone_mode_without_a_keystone_location_is_refused_at_start(settings, database) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SettingsError, match="www_authenticate_uri"):
        create_app(settings.replace(auth_strategy="keystone"), database)
