"""/v1/flavors: admins write, everyone reads what they may see; private flavors are shared with
projects through the service's grant and revoke."""

from __future__ import annotations

import uuid

import pytest
from flask.testing import FlaskClient

from blazar_lite.exceptions import Conflict
from blazar_lite.flavors import service

MEMBER = {"X-Roles": "member", "X-Project-Id": "p1", "X-User-Id": "u1"}
OTHER_MEMBER = {"X-Roles": "member", "X-Project-Id": "p2", "X-User-Id": "u2"}


def blazar_error(response, status: int) -> str:  # type: ignore[no-untyped-def]
    """Assert a Blazar error body of this status; return its message."""
    assert response.status_code == status, response.get_json()
    body = response.get_json()
    assert set(body) == {"error_code", "error_name", "error_message"}
    assert body["error_code"] == status
    return body["error_message"]


def create(client: FlaskClient, name: str = "m1.small", **fields: object) -> dict:
    body = {"name": name, "vcpus": 2, "ram": 4096, "disk": 20, **fields}
    response = client.post("/v1/flavors", json={"flavor": body})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["flavor"]


def visible_names(client: FlaskClient, headers: dict) -> list[str]:
    response = client.get("/v1/flavors", headers=headers)
    assert response.status_code == 200, response.get_json()
    return [f["name"] for f in response.get_json()["flavors"]]


def grant(database, flavor_id: str, project_id: str) -> None:  # type: ignore[no-untyped-def]
    with database.transaction() as session:
        service.grant_access(session, flavor_id, project_id)


# Creating.

def test_creating_a_flavor_answers_201_with_the_flavor(client: FlaskClient) -> None:
    flavor = create(client, extra_specs={"hw:cpu_policy": "dedicated"})
    assert str(uuid.UUID(flavor["id"])) == flavor["id"]
    assert {k: v for k, v in flavor.items() if k != "id"} == {
        "name": "m1.small", "vcpus": 2, "ram": 4096, "disk": 20, "is_public": True,
        "extra_specs": {"hw:cpu_policy": "dedicated"}, "flavor_access": []}


def test_a_flavor_is_public_with_no_disk_and_no_extra_specs_by_default(client: FlaskClient) -> None:
    response = client.post("/v1/flavors", json={"flavor": {"name": "tiny", "vcpus": 1, "ram": 1}})
    flavor = response.get_json()["flavor"]
    assert (flavor["is_public"], flavor["disk"], flavor["extra_specs"]) == (True, 0, {})


def test_a_flavor_may_be_created_with_its_own_id(client: FlaskClient) -> None:
    wanted = str(uuid.uuid4())
    assert create(client, id=wanted)["id"] == wanted


def test_a_flavor_id_that_is_taken_is_a_conflict(client: FlaskClient) -> None:
    taken = create(client)["id"]
    response = client.post("/v1/flavors", json={"flavor": {"id": taken, "name": "other", "vcpus": 1, "ram": 1}})
    assert taken in blazar_error(response, 409)


def test_a_flavor_name_that_is_taken_is_a_conflict(client: FlaskClient) -> None:
    create(client)
    response = client.post("/v1/flavors", json={"flavor": {"name": "m1.small", "vcpus": 1, "ram": 1}})
    assert "m1.small" in blazar_error(response, 409)


@pytest.mark.parametrize(("field", "value"), [
    ("name", ""), ("name", "n" * 256), ("name", " padded"), ("name", 7), ("name", None),
    ("vcpus", 0), ("vcpus", "2"), ("vcpus", 1.5), ("vcpus", True), ("vcpus", 2147483648), ("ram", 0),
    ("ram", -1), ("disk", -1), ("disk", "20"), ("is_public", "true"), ("is_public", 1), ("id", "not-a-uuid"),
    ("extra_specs", "a=b"), ("extra_specs", ["a"]), ("color", "red"),
])
def test_a_bad_field_is_a_400_naming_it(client: FlaskClient, field: str, value: object) -> None:
    body = {"name": "m1.small", "vcpus": 2, "ram": 4096, field: value}
    assert f"{field}'" in blazar_error(client.post("/v1/flavors", json={"flavor": body}), 400)


@pytest.mark.parametrize("field", ["name", "vcpus", "ram"])
def test_a_missing_required_field_is_a_400_naming_it(client: FlaskClient, field: str) -> None:
    body = {"name": "m1.small", "vcpus": 2, "ram": 4096}
    del body[field]
    assert f"'flavor.{field}'" in blazar_error(client.post("/v1/flavors", json={"flavor": body}), 400)


@pytest.mark.parametrize("specs", [{"k": 1}, {"k": None}, {"k": "v" * 256}, {"k" * 256: "v"}, {"": "v"}])
def test_extra_specs_must_be_strings_of_at_most_255_characters(client: FlaskClient, specs: dict) -> None:
    body = {"name": "m1.small", "vcpus": 2, "ram": 4096, "extra_specs": specs}
    assert "extra spec" in blazar_error(client.post("/v1/flavors", json={"flavor": body}), 400).replace("_", " ")


def test_extra_specs_of_255_characters_fit(client: FlaskClient) -> None:
    assert create(client, extra_specs={"k" * 255: "v" * 255})["extra_specs"] == {"k" * 255: "v" * 255}


def test_a_flavor_body_must_be_wrapped_in_flavor(client: FlaskClient) -> None:
    response = client.post("/v1/flavors", json={"name": "m1.small", "vcpus": 2, "ram": 4096})
    assert "'flavor'" in blazar_error(response, 400)


def test_malformed_json_is_refused(client: FlaskClient) -> None:
    assert "Malformed JSON" in blazar_error(client.post("/v1/flavors", data="{", content_type="application/json"),
                                            400)


# Reading: public flavors for everyone, private ones for projects given access, all for admins.

def test_members_see_public_flavors_without_the_access_list(client: FlaskClient) -> None:
    flavor = create(client)
    response = client.get("/v1/flavors", headers=MEMBER)
    assert response.get_json() == {"flavors": [{k: v for k, v in flavor.items() if k != "flavor_access"}]}
    shown = client.get(f"/v1/flavors/{flavor['id']}", headers=MEMBER).get_json()["flavor"]
    assert "flavor_access" not in shown


def test_a_private_flavor_is_hidden_from_projects_without_access(client: FlaskClient) -> None:
    create(client, "public")
    private = create(client, "private", is_public=False)
    assert visible_names(client, MEMBER) == ["public"]
    assert "private" not in blazar_error(client.get(f"/v1/flavors/{private['id']}", headers=MEMBER), 404)


def test_a_private_flavor_is_visible_to_projects_given_access(client, database) -> None:  # type: ignore[no-untyped-def]
    private = create(client, "private", is_public=False)
    grant(database, private["id"], "p1")
    assert visible_names(client, MEMBER) == ["private"]
    assert client.get(f"/v1/flavors/{private['id']}", headers=MEMBER).status_code == 200
    assert visible_names(client, OTHER_MEMBER) == []


def test_revoking_access_hides_the_private_flavor_again(client, database) -> None:  # type: ignore[no-untyped-def]
    private = create(client, "private", is_public=False)
    grant(database, private["id"], "p1")
    with database.transaction() as session:
        service.revoke_access(session, private["id"], "p1")
    assert visible_names(client, MEMBER) == []


def test_admins_see_every_flavor_and_whom_private_ones_are_shared_with(client, database) -> None:  # type: ignore[no-untyped-def]
    create(client, "public")
    private = create(client, "private", is_public=False)
    grant(database, private["id"], "p2")
    grant(database, private["id"], "p1")
    flavors = client.get("/v1/flavors").get_json()["flavors"]
    assert [(f["name"], f["flavor_access"]) for f in flavors] == [("private", ["p1", "p2"]), ("public", [])]
    assert client.get(f"/v1/flavors/{private['id']}").get_json()["flavor"]["flavor_access"] == ["p1", "p2"]


def test_flavors_are_listed_by_name(client: FlaskClient) -> None:
    for name in ("m1.large", "m1.small", "m1.medium"):
        create(client, name)
    assert visible_names(client, MEMBER) == ["m1.large", "m1.medium", "m1.small"]


@pytest.mark.parametrize("flavor_id", [str(uuid.uuid4()), "m1.small", "1"])
def test_showing_an_unknown_flavor_is_a_404(client: FlaskClient, flavor_id: str) -> None:
    create(client)
    assert flavor_id in blazar_error(client.get(f"/v1/flavors/{flavor_id}"), 404)


def test_flavor_reads_refuse_query_parameters(client: FlaskClient) -> None:
    flavor = create(client)
    blazar_error(client.get("/v1/flavors?is_public=false"), 400)
    blazar_error(client.get(f"/v1/flavors/{flavor['id']}?x=1"), 400)


def test_a_project_may_use_public_flavors_and_private_ones_shared_with_it(client, database) -> None:  # type: ignore[no-untyped-def]
    public = create(client, "public")
    private = create(client, "private", is_public=False)
    grant(database, private["id"], "p1")
    with database.read() as session:
        assert service.may_use(session, public["id"], "p2")
        assert service.may_use(session, private["id"], "p1")
        assert not service.may_use(session, private["id"], "p2")
        assert not service.may_use(session, str(uuid.uuid4()), "p1")


# Access grants.

def test_granting_access_twice_is_harmless(client, database) -> None:  # type: ignore[no-untyped-def]
    private = create(client, "private", is_public=False)
    grant(database, private["id"], "p1")
    grant(database, private["id"], "p1")
    assert client.get(f"/v1/flavors/{private['id']}").get_json()["flavor"]["flavor_access"] == ["p1"]


def test_revoking_absent_access_is_harmless(client, database) -> None:  # type: ignore[no-untyped-def]
    private = create(client, "private", is_public=False)
    with database.transaction() as session:
        service.revoke_access(session, private["id"], "p1")


def test_access_to_a_public_flavor_cannot_be_granted(client, database) -> None:  # type: ignore[no-untyped-def]
    public = create(client)
    with pytest.raises(Conflict, match="is public"), database.transaction() as session:
        service.grant_access(session, public["id"], "p1")


def test_a_private_flavor_can_be_created_shared_with_projects(database) -> None:  # type: ignore[no-untyped-def]
    reservation_id = str(uuid.uuid4())
    with database.transaction() as session:
        flavor = service.create_flavor(session, name=f"reservation:{reservation_id}", vcpus=2, ram=2048, disk=10,
                                       is_public=False, flavor_id=reservation_id, projects=["p1"],
                                       extra_specs={"resources:CUSTOM_RESERVATION_X": "1"})
    assert (flavor.id, flavor.projects, flavor.is_public) == (reservation_id, ["p1"], False)


# Updating.

def update(client: FlaskClient, flavor_id: str, **fields: object):  # type: ignore[no-untyped-def]
    return client.put(f"/v1/flavors/{flavor_id}", json={"flavor": fields})


def test_updating_changes_the_fields_given(client: FlaskClient) -> None:
    flavor = create(client)
    response = update(client, flavor["id"], name="m2.small", vcpus=4, ram=8192, disk=40, is_public=False)
    assert response.status_code == 200
    updated = response.get_json()["flavor"]
    assert (updated["name"], updated["vcpus"], updated["ram"], updated["disk"], updated["is_public"]) == (
        "m2.small", 4, 8192, 40, False)
    assert client.get(f"/v1/flavors/{flavor['id']}").get_json()["flavor"] == updated


def test_updating_merges_extra_specs_and_null_unsets_one(client: FlaskClient) -> None:
    flavor = create(client, extra_specs={"a": "1", "b": "2"})
    updated = update(client, flavor["id"], extra_specs={"a": None, "b": "3", "c": "4"}).get_json()["flavor"]
    assert updated["extra_specs"] == {"b": "3", "c": "4"}


def test_a_flavor_may_keep_its_own_name(client: FlaskClient) -> None:
    flavor = create(client)
    assert update(client, flavor["id"], name="m1.small", vcpus=3).status_code == 200


def test_renaming_to_a_taken_name_is_a_conflict(client: FlaskClient) -> None:
    create(client, "m1.small")
    other = create(client, "m1.large")
    assert "m1.small" in blazar_error(update(client, other["id"], name="m1.small"), 409)


@pytest.mark.parametrize(("field", "value"), [
    ("vcpus", 0), ("ram", "1"), ("disk", -1), ("name", ""), ("name", "x "), ("is_public", None), ("vcpus", None),
    ("id", str(uuid.uuid4())),
])
def test_an_update_with_a_bad_field_is_a_400_naming_it(client: FlaskClient, field: str, value: object) -> None:
    flavor = create(client)
    assert f"{field}'" in blazar_error(update(client, flavor["id"], **{field: value}), 400)


def test_an_update_with_a_non_string_extra_spec_is_refused(client: FlaskClient) -> None:
    flavor = create(client)
    assert "extra_specs.a" in blazar_error(update(client, flavor["id"], extra_specs={"a": 1}), 400)


def test_an_update_with_nothing_to_change_is_refused(client: FlaskClient) -> None:
    flavor = create(client)
    assert "No data to update" in blazar_error(update(client, flavor["id"]), 400)


def test_a_refused_update_changes_nothing(client: FlaskClient) -> None:
    flavor = create(client)
    update(client, flavor["id"], name="m9", vcpus=0)
    assert client.get(f"/v1/flavors/{flavor['id']}").get_json()["flavor"] == flavor


def test_updating_an_unknown_flavor_is_a_404(client: FlaskClient) -> None:
    blazar_error(update(client, str(uuid.uuid4()), vcpus=2), 404)


# Deleting.

def test_deleting_a_flavor_answers_204_and_forgets_it(client, database) -> None:  # type: ignore[no-untyped-def]
    flavor = create(client, is_public=False, extra_specs={"a": "b"})
    grant(database, flavor["id"], "p1")
    response = client.delete(f"/v1/flavors/{flavor['id']}")
    assert response.status_code == 204 and response.data == b""
    blazar_error(client.get(f"/v1/flavors/{flavor['id']}"), 404)
    assert create(client)["name"] == "m1.small"


@pytest.mark.parametrize("flavor_id", [str(uuid.uuid4()), "nope"])
def test_deleting_an_unknown_flavor_is_a_404(client: FlaskClient, flavor_id: str) -> None:
    blazar_error(client.delete(f"/v1/flavors/{flavor_id}"), 404)


# Authorization.

@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/v1/flavors", {"flavor": {"name": "x", "vcpus": 1, "ram": 1}}),
    ("PUT", "/v1/flavors/{id}", {"flavor": {"vcpus": 8}}),
    ("DELETE", "/v1/flavors/{id}", None),
])
def test_members_may_not_write_flavors(client: FlaskClient, method: str, path: str, body: dict | None) -> None:
    flavor = create(client)
    response = client.open(path.format(id=flavor["id"]), method=method, json=body, headers=MEMBER)
    assert "flavors:" in blazar_error(response, 403)
    assert client.get(f"/v1/flavors/{flavor['id']}").get_json()["flavor"] == flavor


def test_flavor_routes_answer_with_a_json_suffix(client: FlaskClient) -> None:
    flavor = create(client)
    assert client.get("/v1/flavors.json").get_json()["flavors"][0]["id"] == flavor["id"]
    assert client.get(f"/v1/flavors/{flavor['id']}.json").get_json()["flavor"] == flavor
