"""`blazar-lite config …` and `blazar-lite scriptlet test` against a served app (as admin)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from tests.conftest import PlacementClient
from tests.functional.instances.test_instances import compute_node

KEY = "instances.placement.scriptlet"
PICK_B = 'def instance_placement(request, candidate_members):\n    log_info("picking b for", request.name)\n' \
         '    set_target("b")\n'


def test_config_set_show_get_and_unset(cli: Any, client: FlaskClient) -> None:
    assert cli.ok("config", "set", KEY, PICK_B) == f"{KEY} is set.\n"
    assert client.get("/v1/config").get_json() == {"config": {KEY: PICK_B}}
    assert cli.json("config", "show") == {KEY: PICK_B}
    assert cli.ok("config", "get", KEY) == PICK_B
    assert cli.ok("config", "unset", KEY) == f"{KEY} is unset.\n"
    assert client.get("/v1/config").get_json() == {"config": {}}
    assert cli.ok("config", "get", KEY) == ""


def test_config_set_of_a_broken_scriptlet_reports_where_it_is_broken(cli: Any, client: FlaskClient) -> None:
    message = cli.fails("config", "set", KEY, "def instance_placement(request, candidate_members):\n    x = = 1\n")
    assert "Invalid instance placement scriptlet at line 2, column 9" in message
    assert client.get("/v1/config").get_json() == {"config": {}}


def test_scriptlet_test_is_a_dry_run_against_the_live_inventory(
        cli: Any, client: FlaskClient, placement: PlacementClient, tmp_path: Path) -> None:
    compute_node(placement, "a")
    compute_node(placement, "b", vcpus=1)
    script = tmp_path / "pick-b.star"
    script.write_text(PICK_B)
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"name": "web", "vcpus": 1, "memory_mb": 512}))
    result = cli.json("scriptlet", "test", str(script), "--request", str(request))
    assert result == {"candidates": ["a", "b"], "rejected": [], "target": "b", "node": "b", "decided_by": "scriptlet",
                      "message": "", "log": [{"level": "info", "message": "picking b for web"}]}
    # Nothing was stored or placed.
    assert client.get("/v1/config").get_json() == {"config": {}}
    assert client.get("/v1/instances").get_json()["instances"] == []

    text = cli.ok("scriptlet", "test", str(script), "--request", str(request))
    assert "candidates: a, b\n" in text and "would go to: b (decided by scriptlet)" in text
    assert "picking b for web" in text

    # b has no room for 2 vCPUs: filtered out, so the scriptlet's choice is refused as for real.
    request.write_text(json.dumps({"name": "web", "vcpus": 2, "memory_mb": 512}))
    message = cli.fails("scriptlet", "test", str(script), "--request", str(request), "-f", "json")
    assert "set_target('b'): not a candidate member" in message


def test_scriptlet_test_without_a_target_shows_the_allocators_choice(
        cli: Any, placement: PlacementClient, tmp_path: Path) -> None:
    compute_node(placement, "a")
    script = tmp_path / "quiet.star"
    script.write_text("def instance_placement(request, candidate_members):\n    pass\n")
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"name": "web", "vcpus": 1, "memory_mb": 512}))
    result = cli.json("scriptlet", "test", str(script), "--request", str(request))
    assert (result["target"], result["node"], result["decided_by"]) == (None, "a", "allocator fewest-instances")


def test_scriptlet_test_refuses_a_request_file_that_is_not_json(cli: Any, tmp_path: Path) -> None:
    script = tmp_path / "s.star"
    script.write_text(PICK_B)
    request = tmp_path / "request.json"
    request.write_text("name: web")
    result = cli.run("scriptlet", "test", str(script), "--request", str(request))
    assert result.exit_code == 2 and "cannot read a JSON instance-create body" in result.stderr
