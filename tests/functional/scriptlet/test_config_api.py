"""/v1/config: the server configuration, with the placement scriptlet checked when it is set."""

from __future__ import annotations

from flask.testing import FlaskClient

from blazar_lite.app import create_app

KEY = "instances.placement.scriptlet"
GOOD = "def instance_placement(request, candidate_members):\n    log_info(request.name)\n"
MEMBER = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "member"}


def error(response, status: int) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.get_json()
    return response.get_json()


def put(client: FlaskClient, config: dict) -> dict:
    response = client.put("/v1/config", json={"config": config})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_an_unset_configuration_is_empty(client: FlaskClient) -> None:
    assert client.get("/v1/config").get_json() == {"config": {}}


def test_a_scriptlet_that_compiles_is_stored_and_shown(client: FlaskClient) -> None:
    assert put(client, {KEY: GOOD}) == {"config": {KEY: GOOD}}
    assert client.get("/v1/config").get_json() == {"config": {KEY: GOOD}}


def _refused(client: FlaskClient, source: str) -> dict:
    body = error(client.put("/v1/config", json={"config": {KEY: source}}), 400)
    assert client.get("/v1/config").get_json() == {"config": {}}, "a refused value must not be stored"
    return body


def test_a_syntax_error_is_a_400_with_its_line_and_column(client: FlaskClient) -> None:
    body = _refused(client, "def instance_placement(request, candidate_members):\n    x = = 2\n")
    assert (body["line"], body["column"]) == (2, 9)
    assert "Invalid instance placement scriptlet at line" in body["error_message"]
    assert "Parse error" in body["error_message"]


def test_an_unknown_global_name_is_a_400_that_points_at_it(client: FlaskClient) -> None:
    body = _refused(client, "def instance_placement(request, candidate_members):\n    set_targett('a')\n")
    assert (body["line"], body["column"]) == (2, 5)
    assert "set_targett" in body["error_message"]


def test_a_script_without_instance_placement_is_refused(client: FlaskClient) -> None:
    body = _refused(client, "def place(request, members):\n    pass\n")
    assert "does not define instance_placement(request, candidate_members)" in body["error_message"]


def test_instance_placement_with_the_wrong_arity_is_refused_with_its_line(client: FlaskClient) -> None:
    body = _refused(client, "# one comment line\ndef instance_placement(request):\n    pass\n")
    assert body["line"] == 2
    assert "must take two parameters" in body["error_message"]


def test_load_is_not_allowed(client: FlaskClient) -> None:
    body = _refused(client, 'load("other.star", "x")\n' + GOOD)
    assert "load" in body["error_message"] and body["line"] == 1


def test_an_error_in_top_level_statements_is_refused(client: FlaskClient) -> None:
    body = _refused(client, GOOD + "LIMIT = 1 // 0\n")
    assert body["line"] == 3 and "division by zero" in body["error_message"]


def test_unknown_keys_and_values_that_are_not_strings_are_refused(client: FlaskClient) -> None:
    body = error(client.put("/v1/config", json={"config": {"instances.nope": "x"}}), 400)
    assert "Unknown server config key 'instances.nope'" in body["error_message"] and KEY in body["error_message"]
    body = error(client.put("/v1/config", json={"config": {KEY: 12}}), 400)
    assert "takes a string, not int" in body["error_message"]
    body = error(client.put("/v1/config", json={KEY: GOOD}), 400)
    assert '{"config": {' in body["error_message"]


def test_patch_sets_and_unsets_single_keys(client: FlaskClient) -> None:
    response = client.patch("/v1/config", json={"config": {KEY: GOOD}})
    assert response.get_json() == {"config": {KEY: GOOD}}
    assert client.patch("/v1/config", json={"config": {}}).get_json() == {"config": {KEY: GOOD}}
    assert client.patch("/v1/config", json={"config": {KEY: None}}).get_json() == {"config": {}}
    put(client, {KEY: GOOD})
    assert client.patch("/v1/config", json={"config": {KEY: ""}}).get_json() == {"config": {}}


def test_put_replaces_the_whole_configuration(client: FlaskClient) -> None:
    put(client, {KEY: GOOD})
    assert put(client, {}) == {"config": {}}


def test_only_admins_read_or_change_the_configuration(client: FlaskClient) -> None:
    assert client.get("/v1/config", headers=MEMBER).status_code == 403
    assert client.put("/v1/config", json={"config": {KEY: GOOD}}, headers=MEMBER).status_code == 403
    assert client.patch("/v1/config", json={"config": {KEY: GOOD}}, headers=MEMBER).status_code == 403
    assert client.get("/v1/config").get_json() == {"config": {}}


def test_another_application_on_the_same_database_sees_a_change_after_its_refresh_interval(
        settings, database) -> None:  # type: ignore[no-untyped-def]
    """Two applications (as two worker processes would be) over one database: the second one
    holds its cached configuration for the refresh interval, then reads the new one."""
    now = [100.0]
    first = create_app(settings, database=database)
    second = create_app(settings, database=database)
    cache = second.extensions["blazar_lite"].server_config
    cache.clock = lambda: now[0]
    assert cache.scriptlet() is None
    assert first.test_client().put("/v1/config", json={"config": {KEY: GOOD}}).status_code == 200
    assert cache.scriptlet() is None, "still within the refresh interval"
    now[0] += cache.refresh_interval
    program = cache.scriptlet()
    assert program is not None and program.source == GOOD
    assert cache.scriptlet() is program, "compiled once, then kept"


def test_each_change_moves_the_revision_even_after_its_row_was_removed(client: FlaskClient, database) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import delete

    from blazar_lite.server_config import service
    from blazar_lite.server_config.models import ConfigRevision

    with database.transaction() as session:
        before = service.revision(session)
    put(client, {KEY: GOOD})
    with database.transaction() as session:
        assert service.revision(session) == before + 1
        session.execute(delete(ConfigRevision))
    put(client, {})
    with database.transaction() as session:
        assert service.revision(session) == 1
