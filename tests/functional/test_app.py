"""The application shell: version discovery, request ids, error bodies, API description, noauth."""

from __future__ import annotations

import json
import logging

import pytest
from flask import Blueprint, Flask, jsonify
from flask.testing import FlaskClient

from blazar_lite import web
from blazar_lite.app import create_app
from blazar_lite.settings import Settings

# Routes that exist only in these tests, to reach the shell's behaviour under /v1 before any
# product route lives there.
probe = Blueprint("test_probe", __name__)


@probe.route("/v1/test-probe/whoami", methods=["GET"])
def whoami():  # type: ignore[no-untyped-def]
    context = web.caller()
    return jsonify(user_id=context.user_id, project_id=context.project_id, roles=sorted(context.roles),
                   request_id=context.request_id)


@probe.route("/v1/test-probe/admin-only", methods=["GET"])
def admin_only():  # type: ignore[no-untyped-def]
    web.enforce("admin")
    return jsonify(ok=True)


@probe.route("/v1/test-probe/echo", methods=["PUT"])
def echo():  # type: ignore[no-untyped-def]
    from flask import request

    return jsonify(size=len(request.get_data()))


@probe.route("/v1/test-probe/crash", methods=["GET"])
def crash():  # type: ignore[no-untyped-def]
    raise RuntimeError("a bug")


def probed_app(settings: Settings, database) -> Flask:  # type: ignore[no-untyped-def]
    app = create_app(settings, database)
    app.register_blueprint(probe)
    return app


@pytest.fixture
def probe_client(settings, database) -> FlaskClient:  # type: ignore[no-untyped-def]
    return probed_app(settings, database).test_client()


def assert_blazar_error(response, status: int, name: str | None = None) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error_code", "error_name", "error_message"}
    assert body["error_code"] == status
    assert body["error_message"]
    if name is not None:
        assert body["error_name"] == name
    return body


# Version discovery.

@pytest.mark.parametrize("path", ["/", "/versions"])
def test_version_discovery_answers_300_with_the_versions(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 300
    body = response.get_json()
    assert body == {"versions": [{"id": "v1.0", "status": "CURRENT",
                                  "links": [{"href": "http://localhost/v1/", "rel": "self"}]}]}


# Request ids.

@pytest.mark.parametrize("method, path", [
    ("GET", "/versions"),
    ("GET", "/placement/"),
    ("GET", "/v1/no-such-thing"),
    ("POST", "/versions"),
    ("GET", "/v1/test-probe/crash"),
    ("GET", "/openapi.json"),
])
def test_every_response_carries_a_request_id(probe_client: FlaskClient, method: str, path: str) -> None:
    response = probe_client.open(path, method=method)
    assert response.headers[web.REQUEST_ID_HEADER].startswith("req-")


def test_a_refused_microversion_still_carries_a_request_id(client: FlaskClient) -> None:
    response = client.get("/placement/", headers={"OpenStack-API-Version": "placement 9.9"})
    assert response.status_code == 406
    assert response.headers[web.REQUEST_ID_HEADER].startswith("req-")


def test_request_ids_differ_between_requests(client: FlaskClient) -> None:
    first = client.get("/versions").headers[web.REQUEST_ID_HEADER]
    second = client.get("/versions").headers[web.REQUEST_ID_HEADER]
    assert first != second


def test_request_id_is_on_every_log_line_of_the_request(client: FlaskClient) -> None:
    lines: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Capture()
    handler.setFormatter(logging.Formatter(web.LOG_FORMAT))
    handler.addFilter(web.RequestIdFilter())
    logger = logging.getLogger("blazar_lite")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        response = client.get("/v1/no-such-thing?x=1")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
    rid = response.headers[web.REQUEST_ID_HEADER]
    assert lines and all(f"[{rid}]" in line for line in lines), lines
    assert any("GET /v1/no-such-thing?x=1 404" in line for line in lines), lines


# Error bodies.

def test_unknown_path_under_v1_is_a_404_in_blazar_format(client: FlaskClient) -> None:
    body = assert_blazar_error(client.get("/v1/no-such-thing"), 404, "NotFound")
    assert "/v1/no-such-thing" in body["error_message"]


def test_wrong_method_is_a_405_in_blazar_format_with_allow(probe_client: FlaskClient) -> None:
    response = probe_client.delete("/v1/test-probe/whoami")
    body = assert_blazar_error(response, 405, "MethodNotAllowed")
    allowed = {m.strip() for m in response.headers["Allow"].split(",")}
    assert "GET" in allowed and "DELETE" not in allowed
    assert "GET" in body["error_message"]


def test_wrong_method_on_version_discovery_is_a_405_with_allow(client: FlaskClient) -> None:
    response = client.post("/versions")
    assert_blazar_error(response, 405)
    assert "GET" in response.headers["Allow"]


def test_unknown_path_under_placement_is_a_404_in_placement_format(client: FlaskClient) -> None:
    response = client.get("/placement/no-such-thing")
    assert response.status_code == 404
    error, = response.get_json()["errors"]
    assert error["status"] == 404
    assert error["request_id"] == response.headers[web.REQUEST_ID_HEADER]


def test_a_bug_is_a_500_in_blazar_format_without_details(probe_client: FlaskClient,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        body = assert_blazar_error(probe_client.get("/v1/test-probe/crash"), 500, "InternalError")
    assert "a bug" not in body["error_message"]
    logged = [r.exc_info[1] for r in caplog.records if r.exc_info]
    assert any(isinstance(exc, RuntimeError) and str(exc) == "a bug" for exc in logged)


# Body size limit.

@pytest.fixture
def small_body_client(settings, database) -> FlaskClient:  # type: ignore[no-untyped-def]
    return probed_app(settings.replace(api_max_body_bytes=64), database).test_client()


def test_body_over_the_limit_is_a_413_json_answer(small_body_client: FlaskClient) -> None:
    response = small_body_client.put("/v1/test-probe/echo", data=b"x" * 65, content_type="application/json")
    body = assert_blazar_error(response, 413)
    assert "64 bytes" in body["error_message"]
    assert response.headers[web.REQUEST_ID_HEADER].startswith("req-")


def test_body_over_the_limit_is_refused_even_where_no_route_reads_it(small_body_client: FlaskClient) -> None:
    response = small_body_client.post("/v1/no-such-thing", data=b"x" * 65, content_type="application/json")
    assert_blazar_error(response, 413)


def test_body_over_the_limit_under_placement_is_a_413_in_placement_format(
        small_body_client: FlaskClient) -> None:
    response = small_body_client.post("/placement/resource_providers", data=b"x" * 65,
                                      content_type="application/json",
                                      headers={"OpenStack-API-Version": "placement 1.39"})
    assert response.status_code == 413
    assert response.mimetype == "application/json"
    error, = response.get_json()["errors"]
    assert error["status"] == 413


def test_body_at_the_limit_is_accepted(small_body_client: FlaskClient) -> None:
    response = small_body_client.put("/v1/test-probe/echo", data=b"x" * 64, content_type="application/json")
    assert response.status_code == 200
    assert response.get_json() == {"size": 64}


# API description.

def test_openapi_document_is_openapi_3_json_with_paths(client: FlaskClient) -> None:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    document = json.loads(response.get_data(as_text=True))
    assert document["openapi"].startswith("3.")
    assert "/versions" in document["paths"]
    assert "/placement/" in document["paths"]


def test_docs_page_is_html_listing_the_routes(client: FlaskClient) -> None:
    response = client.get("/docs")
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    assert page.startswith("<!doctype html>")
    assert "GET /versions" in page


# noauth identity.

def test_noauth_caller_without_headers_is_admin_of_the_default_project(probe_client: FlaskClient) -> None:
    body = probe_client.get("/v1/test-probe/whoami").get_json()
    assert body["user_id"] == "admin"
    assert body["project_id"] == "admin"
    assert body["roles"] == ["admin"]


def test_noauth_caller_comes_from_the_identity_headers(probe_client: FlaskClient) -> None:
    response = probe_client.get("/v1/test-probe/whoami", headers={
        "X-User-Id": "alice", "X-Project-Id": "p1", "X-Roles": "member, reader"})
    body = response.get_json()
    assert body["user_id"] == "alice"
    assert body["project_id"] == "p1"
    assert body["roles"] == ["member", "reader"]
    assert body["request_id"] == response.headers[web.REQUEST_ID_HEADER]


def test_noauth_default_project_and_user_come_from_settings(settings, database) -> None:  # type: ignore[no-untyped-def]
    app = probed_app(settings.replace(auth_noauth_project_id="ops", auth_noauth_user_id="operator"), database)
    body = app.test_client().get("/v1/test-probe/whoami").get_json()
    assert (body["user_id"], body["project_id"]) == ("operator", "ops")


def test_noauth_roles_reach_policy(probe_client: FlaskClient) -> None:
    assert probe_client.get("/v1/test-probe/admin-only").status_code == 200
    denied = probe_client.get("/v1/test-probe/admin-only", headers={"X-Roles": "member"})
    assert_blazar_error(denied, 403, "PolicyNotAuthorized")


def test_app_can_be_built_twice_in_one_run(settings, database) -> None:  # type: ignore[no-untyped-def]
    first, second = create_app(settings, database), create_app(settings, database)
    assert first.test_client().get("/versions").status_code == 300
    assert second.test_client().get("/versions").status_code == 300
