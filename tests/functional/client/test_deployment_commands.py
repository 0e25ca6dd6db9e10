"""`blazar-lite deployment …` and `blazar-lite deployment shape …` against a served app without
authentication (an admin of project "admin"): each command's effect on the server, its output,
the service's refusals as their messages, and the usage errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from tests.conftest import PlacementClient
from tests.functional.client.test_instance_commands import server_flavor, usage_error
from tests.functional.instances.test_instances import MEMBER, compute_node

SIZE = ("--vcpus", "1", "--memory-mb", "512")
TEMPLATE = {"vcpus": 1, "memory_mb": 512}


def server_deployment(client: FlaskClient, name: str = "shop", query: str = "") -> dict:
    response = client.get(f"/v1/deployments/{name}{query}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["deployment"]


def server_shape(client: FlaskClient, name: str = "web", deployment: str = "shop") -> dict:
    response = client.get(f"/v1/deployments/{deployment}/shapes/{name}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["shape"]


def make_shape(cli: Any, *args: str, name: str = "web") -> dict:
    return cli.json("deployment", "shape", "create", "shop", name, *(args or (*SIZE, "--min", "0", "--max", "2")))


# Deployments

def test_deployment_create_stores_description_config_and_webhook(cli: Any, client: FlaskClient) -> None:
    created = cli.json("deployment", "create", "shop", "--description", "the shop", "--config", "user.tier=gold",
                       "--config", "user.url=http://x/?a=b", "--webhook-url", "https://gov.example/hook")
    assert created == server_deployment(client)
    assert (created["project_id"], created["description"], created["config"], created["governor_webhook_url"]) == (
        "admin", "the shop", {"user.tier": "gold", "user.url": "http://x/?a=b"}, "https://gov.example/hook")


def test_deployment_list_and_show_print_tables(cli: Any) -> None:
    created = cli.json("deployment", "create", "shop", "--description", "the shop")
    assert cli.rows(cli.ok("deployment", "list")) == [
        {"name": "shop", "project_id": "admin", "description": "the shop", "governor_webhook_url": "",
         "created_at": created["created_at"]}]
    shown = cli.fields(cli.ok("deployment", "show", "shop"))
    assert (shown["name"], shown["id"], shown["config"]) == ("shop", created["id"], "")
    assert cli.json("deployment", "list") == [created]


def test_deployment_set_merges_config_and_keeps_what_is_not_given(cli: Any, client: FlaskClient) -> None:
    cli.json("deployment", "create", "shop", "--description", "the shop", "--config", "a=1", "--config", "b=2",
             "--webhook-url", "http://gov/hook")
    updated = cli.json("deployment", "set", "shop", "--config", "a=", "--config", "c=3")
    assert (updated["config"], updated["description"], updated["governor_webhook_url"]) == (
        {"b": "2", "c": "3"}, "the shop", "http://gov/hook")
    assert cli.json("deployment", "set", "shop", "--webhook-url", "")["governor_webhook_url"] is None
    assert server_deployment(client)["config"] == {"b": "2", "c": "3"}


def test_deployment_set_without_a_change_is_a_usage_error(cli: Any) -> None:
    cli.json("deployment", "create", "shop")
    assert "Nothing to set" in usage_error(cli, "deployment", "set", "shop")


def test_deployment_replace_empties_what_is_left_out(cli: Any, client: FlaskClient) -> None:
    cli.json("deployment", "create", "shop", "--description", "the shop", "--config", "a=1",
             "--webhook-url", "http://gov/hook")
    replaced = cli.json("deployment", "replace", "shop", "--config", "b=2")
    assert (replaced["description"], replaced["config"], replaced["governor_webhook_url"]) == ("", {"b": "2"}, None)
    assert server_deployment(client) == replaced


def test_deployment_rename_keeps_its_id(cli: Any, client: FlaskClient) -> None:
    created = cli.json("deployment", "create", "shop")
    assert cli.json("deployment", "rename", "shop", "store")["id"] == created["id"]
    assert server_deployment(client, "store")["id"] == created["id"]
    assert cli.fails("deployment", "show", "shop") == "Deployment shop not found in project admin. (HTTP 404)"


def test_deployment_create_of_a_taken_name_exits_1_with_the_server_message(cli: Any) -> None:
    cli.json("deployment", "create", "shop")
    assert cli.fails("deployment", "create", "shop") == (
        "Deployment shop already exists in project admin; choose another name. (HTTP 409)")


def test_deployment_delete_with_instances_needs_force(cli: Any, client: FlaskClient,
                                                      placement: PlacementClient) -> None:
    compute_node(placement, "a")
    cli.json("deployment", "create", "shop")
    make_shape(cli)
    cli.json("deployment", "shape", "instance", "launch", "shop", "web", "web-1")
    assert cli.fails("deployment", "delete", "shop") == (
        "Deployment shop still has 1 instance(s); delete them first, or delete with ?force=true to delete them too. "
        "(HTTP 409)")
    assert cli.ok("deployment", "delete", "shop", "--force") == "Deleted deployment shop.\n"
    assert client.get("/v1/deployments").get_json()["deployments"] == []
    assert client.get("/v1/instances").get_json()["instances"] == []


def test_an_admin_reaches_another_projects_deployment_with_project_id(cli: Any, client: FlaskClient) -> None:
    assert client.post("/v1/deployments", json={"name": "shop"}, headers=MEMBER).status_code == 201
    assert cli.json("deployment", "list") == []
    assert [d["name"] for d in cli.json("deployment", "list", "--project-id", "p1")] == ["shop"]
    cli.json("deployment", "set", "shop", "--description", "theirs", "--project-id", "p1")
    cli.json("deployment", "shape", "create", "shop", "web", *SIZE, "--min", "0", "--max", "1", "--project-id", "p1")
    assert server_deployment(client, query="?project_id=p1")["description"] == "theirs"
    assert [s["name"] for s in cli.json("deployment", "shape", "list", "shop", "--project-id", "p1")] == ["web"]
    assert cli.ok("deployment", "delete", "shop", "--project-id", "p1") == "Deleted deployment shop.\n"
    assert client.get("/v1/deployments", headers=MEMBER).get_json()["deployments"] == []


# Shapes

def test_shape_create_from_size_options(cli: Any, client: FlaskClient) -> None:
    cli.json("deployment", "create", "shop")
    created = make_shape(cli, "--vcpus", "2", "--memory-mb", "1024", "--disk-gb", "10", "--min", "1", "--max", "3",
                         "--description", "front", "--config", "user.port=80")
    assert created == server_shape(client)
    assert (created["instance_template"], created["scaling_minimum"], created["scaling_maximum"],
            created["scaling_current"], created["description"], created["config"]) == (
        {"vcpus": 2, "memory_mb": 1024, "disk_gb": 10}, 1, 3, 0, "front", {"user.port": "80"})


def test_shape_create_with_a_flavor_name_sends_its_uuid(cli: Any, client: FlaskClient) -> None:
    flavor = server_flavor(client, "m1.small", 1, 512)
    cli.json("deployment", "create", "shop")
    assert make_shape(cli, "--flavor", "m1.small", "--min", "0", "--max", "1")["instance_template"] == {
        "flavor_id": flavor["id"]}


def test_shape_create_from_a_template_as_json_or_from_a_file(cli: Any, tmp_path: Path) -> None:
    cli.json("deployment", "create", "shop")
    given = {"vcpus": 1, "memory_mb": 256, "disk_gb": 1}
    assert make_shape(cli, "--template", json.dumps(given), "--min", "0", "--max", "1")["instance_template"] == given
    template = tmp_path / "template.json"
    template.write_text(json.dumps({"vcpus": 4, "memory_mb": 4096}))
    assert make_shape(cli, "--template", f"@{template}", "--min", "0", "--max", "1", name="db")[
        "instance_template"] == {"vcpus": 4, "memory_mb": 4096}


def test_shape_create_template_usage_errors(cli: Any, tmp_path: Path) -> None:
    cli.json("deployment", "create", "shop")
    bounds = ("--min", "0", "--max", "1")
    assert "Give either --template or --vcpus, not both" in usage_error(
        cli, "deployment", "shape", "create", "shop", "web", "--template", "{}", "--vcpus", "1", *bounds)
    assert "Give the instance template" in usage_error(cli, "deployment", "shape", "create", "shop", "web", *bounds)
    assert "not JSON" in usage_error(cli, "deployment", "shape", "create", "shop", "web", "--template", "{", *bounds)
    assert "must be a JSON object" in usage_error(cli, "deployment", "shape", "create", "shop", "web",
                                                  "--template", "[]", *bounds)
    assert "cannot read" in usage_error(cli, "deployment", "shape", "create", "shop", "web",
                                        "--template", f"@{tmp_path / 'missing.json'}", *bounds)
    assert "Missing option '--max'" in usage_error(cli, "deployment", "shape", "create", "shop", "web", *SIZE,
                                                   "--min", "0")


def test_shape_create_with_bad_bounds_exits_1_with_the_server_message(cli: Any, client: FlaskClient) -> None:
    cli.json("deployment", "create", "shop")
    assert cli.fails("deployment", "shape", "create", "shop", "web", *SIZE, "--min", "3", "--max", "2") == (
        "scaling_minimum (3) is greater than scaling_maximum (2). (HTTP 400)")
    assert client.get("/v1/deployments/shop/shapes").get_json()["shapes"] == []


def test_shape_list_and_show_print_bounds_and_scaling_current(cli: Any) -> None:
    cli.json("deployment", "create", "shop")
    make_shape(cli)
    assert cli.rows(cli.ok("deployment", "shape", "list", "shop")) == [
        {"name": "web", "scaling_minimum": "0", "scaling_current": "0", "scaling_maximum": "2",
         "instance_template": "memory_mb=512, vcpus=1", "description": ""}]
    shown = cli.fields(cli.ok("deployment", "shape", "show", "shop", "web"))
    assert (shown["deployment"], shown["scaling_maximum"]) == ("shop", "2")


def test_shape_set_changes_what_is_given(cli: Any, client: FlaskClient) -> None:
    cli.json("deployment", "create", "shop")
    make_shape(cli, *SIZE, "--min", "0", "--max", "2", "--description", "front", "--config", "a=1")
    updated = cli.json("deployment", "shape", "set", "shop", "web", "--max", "5", "--vcpus", "2", "--memory-mb", "1024",
                       "--config", "a=", "--config", "b=2")
    assert (updated["scaling_minimum"], updated["scaling_maximum"], updated["instance_template"],
            updated["description"], updated["config"]) == (0, 5, {"vcpus": 2, "memory_mb": 1024}, "front", {"b": "2"})
    assert server_shape(client) == updated
    assert "Nothing to set" in usage_error(cli, "deployment", "shape", "set", "shop", "web")


def test_shape_set_of_a_maximum_below_its_instances_exits_1_with_the_server_message(
        cli: Any, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    cli.json("deployment", "create", "shop")
    make_shape(cli)
    for name in ("web-1", "web-2"):
        cli.json("deployment", "shape", "instance", "launch", "shop", "web", name)
    assert cli.fails("deployment", "shape", "set", "shop", "web", "--max", "1") == (
        "Shape web of deployment shop has 2 instances, more than the new scaling_maximum of 1; delete 1 first. "
        "(HTTP 409)")


def test_shape_replace_empties_what_is_left_out(cli: Any, client: FlaskClient) -> None:
    cli.json("deployment", "create", "shop")
    make_shape(cli, *SIZE, "--min", "0", "--max", "2", "--description", "front", "--config", "a=1")
    replaced = cli.json("deployment", "shape", "replace", "shop", "web", "--template", '{"vcpus": 2, "memory_mb": 64}',
                        "--min", "1", "--max", "1")
    assert (replaced["instance_template"], replaced["scaling_minimum"], replaced["scaling_maximum"],
            replaced["description"], replaced["config"]) == ({"vcpus": 2, "memory_mb": 64}, 1, 1, "", {})
    assert server_shape(client) == replaced


def test_shape_rename_and_delete(cli: Any, client: FlaskClient) -> None:
    cli.json("deployment", "create", "shop")
    created = make_shape(cli)
    assert cli.json("deployment", "shape", "rename", "shop", "web", "front")["id"] == created["id"]
    assert server_shape(client, "front")["id"] == created["id"]
    assert cli.ok("deployment", "shape", "delete", "shop", "front") == "Deleted shape front of deployment shop.\n"
    assert client.get("/v1/deployments/shop/shapes").get_json()["shapes"] == []
    assert cli.fails("deployment", "shape", "show", "shop", "front") == (
        "Shape front not found in deployment shop. (HTTP 404)")


def test_shape_delete_with_instances_needs_force(cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    cli.json("deployment", "create", "shop")
    make_shape(cli)
    cli.json("deployment", "shape", "instance", "launch", "shop", "web", "web-1")
    assert cli.fails("deployment", "shape", "delete", "shop", "web") == (
        "Shape web of deployment shop still has 1 instance(s); delete them first, or delete with ?force=true to "
        "delete them too. (HTTP 409)")
    assert cli.ok("deployment", "shape", "delete", "shop", "web", "--force") == (
        "Deleted shape web of deployment shop.\n")
    assert client.get("/v1/instances").get_json()["instances"] == []
