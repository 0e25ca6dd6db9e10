"""`blazar-lite flavor …` against a served app without authentication: each command's effect on the
server, its table and its JSON."""

from __future__ import annotations

import uuid
from typing import Any

from flask.testing import FlaskClient


def server_flavor(client: FlaskClient, flavor_id: str) -> dict:
    response = client.get(f"/v1/flavors/{flavor_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["flavor"]


def create(cli: Any, name: str = "m1.small", *args: str) -> dict:
    return cli.json("flavor", "create", name, "--vcpus", "2", "--ram", "4096", "--disk", "20", *args)


def test_flavor_create_prints_the_flavor_as_json(cli: Any, client: FlaskClient) -> None:
    flavor = create(cli, "m1.small", "--property", "hw:cpu_policy=dedicated", "--property", "trait:X=required")
    assert flavor == server_flavor(client, flavor["id"])
    assert (flavor["name"], flavor["vcpus"], flavor["ram"], flavor["disk"], flavor["is_public"]) == (
        "m1.small", 2, 4096, 20, True)
    assert flavor["extra_specs"] == {"hw:cpu_policy": "dedicated", "trait:X": "required"}


def test_flavor_create_as_a_table_with_a_chosen_id_and_private(cli: Any, client: FlaskClient) -> None:
    flavor_id = str(uuid.uuid4())
    shown = cli.fields(cli.ok("flavor", "create", "tiny", "--vcpus", "1", "--ram", "512", "--private",
                              "--id", flavor_id))
    assert (shown["id"], shown["name"], shown["vcpus"], shown["ram"], shown["disk"], shown["is_public"]) == (
        flavor_id, "tiny", "1", "512", "0", "False")
    assert server_flavor(client, flavor_id)["is_public"] is False


def test_flavor_create_of_a_taken_name_exits_1_with_the_server_message(cli: Any) -> None:
    flavor = create(cli)
    message = cli.fails("flavor", "create", "m1.small", "--vcpus", "1", "--ram", "512")
    assert message == (f"Flavor name m1.small is already used by flavor {flavor['id']}; choose another name. "
                       "(HTTP 409)")


def test_flavor_list_prints_a_row_per_flavor(cli: Any, client: FlaskClient) -> None:
    small, large = create(cli, "m1.small"), create(cli, "m1.large", "--private")
    listed = cli.rows(cli.ok("flavor", "list"))
    assert sorted(listed, key=lambda row: row["name"]) == [
        {"id": large["id"], "name": "m1.large", "vcpus": "2", "ram": "4096", "disk": "20", "is_public": "False"},
        {"id": small["id"], "name": "m1.small", "vcpus": "2", "ram": "4096", "disk": "20", "is_public": "True"}]
    assert cli.json("flavor", "list") == client.get("/v1/flavors").get_json()["flavors"]


def test_flavor_show_finds_a_flavor_by_id_or_by_name(cli: Any, client: FlaskClient) -> None:
    flavor = create(cli, "m1.small", "--property", "hw:cpu_policy=dedicated")
    create(cli, "m1.large")
    assert cli.json("flavor", "show", flavor["id"]) == server_flavor(client, flavor["id"])
    assert cli.json("flavor", "show", "m1.small") == server_flavor(client, flavor["id"])
    shown = cli.fields(cli.ok("flavor", "show", "m1.small"))
    assert (shown["id"], shown["extra_specs"]) == (flavor["id"], "hw:cpu_policy=dedicated")


def test_flavor_show_of_an_unknown_name_exits_1(cli: Any) -> None:
    create(cli)
    assert cli.fails("flavor", "show", "m1.huge") == "No flavor named m1.huge. (HTTP 404)"


def test_flavor_show_of_an_unknown_id_exits_1_with_the_server_message(cli: Any) -> None:
    flavor_id = str(uuid.uuid4())
    assert cli.fails("flavor", "show", flavor_id) == f"Flavor {flavor_id} not found. (HTTP 404)"


def test_flavor_update_changes_fields_and_merges_extra_specs(cli: Any, client: FlaskClient) -> None:
    flavor = create(cli, "m1.small", "--property", "a=1", "--property", "b=2")
    updated = cli.json("flavor", "update", "m1.small", "--name", "m1.medium", "--vcpus", "4", "--ram", "8192",
                       "--private", "--property", "c=3", "--unset-property", "a")
    assert updated == server_flavor(client, flavor["id"])
    assert (updated["name"], updated["vcpus"], updated["ram"], updated["disk"], updated["is_public"]) == (
        "m1.medium", 4, 8192, 20, False)
    assert updated["extra_specs"] == {"b": "2", "c": "3"}
    shown = cli.fields(cli.ok("flavor", "update", flavor["id"], "--public", "--disk", "40"))
    assert (shown["is_public"], shown["disk"], shown["name"]) == ("True", "40", "m1.medium")


def test_flavor_update_with_nothing_to_change_is_a_usage_error(cli: Any) -> None:
    create(cli)
    result = cli.run("flavor", "update", "m1.small")
    assert result.exit_code == 2
    assert "Nothing to update" in result.stderr


def test_flavor_update_cannot_set_and_unset_one_extra_spec(cli: Any, client: FlaskClient) -> None:
    flavor = create(cli, "m1.small", "--property", "a=1")
    result = cli.run("flavor", "update", "m1.small", "--property", "a=2", "--unset-property", "a")
    assert result.exit_code == 2
    assert "both name a" in result.stderr
    assert server_flavor(client, flavor["id"])["extra_specs"] == {"a": "1"}


def test_flavor_update_with_an_invalid_size_exits_1_with_the_server_message(cli: Any) -> None:
    create(cli)
    message = cli.fails("flavor", "update", "m1.small", "--vcpus", "0")
    assert "vcpus" in message and message.endswith("(HTTP 400)")


def test_flavor_delete_by_name_deletes_it(cli: Any, client: FlaskClient) -> None:
    flavor = create(cli, "m1.small")
    assert cli.ok("flavor", "delete", "m1.small") == "Deleted flavor m1.small.\n"
    assert client.get(f"/v1/flavors/{flavor['id']}").status_code == 404
    assert cli.json("flavor", "list") == []


def test_flavor_delete_of_an_unknown_name_exits_1(cli: Any) -> None:
    assert cli.fails("flavor", "delete", "m1.small") == "No flavor named m1.small. (HTTP 404)"
