"""The API reference: the committed OpenAPI document and the command that regenerates it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from flask.testing import FlaskClient

from blazar_lite.cli import main

COMMITTED = Path(__file__).resolve().parents[2] / "api-ref" / "openapi.json"


def test_committed_openapi_document_is_openapi_3_json() -> None:
    document = json.loads(COMMITTED.read_text())
    assert document["openapi"].startswith("3.")
    assert document["info"]["title"] == "blazar-lite"
    assert "/versions" in document["paths"]


def test_committed_openapi_document_matches_the_service(client: FlaskClient) -> None:
    # Regenerate with: blazar-lite openapi > api-ref/openapi.json
    assert json.loads(COMMITTED.read_text()) == client.get("/openapi.json").get_json()


def test_openapi_command_prints_the_document_the_service_serves(client: FlaskClient) -> None:
    result = CliRunner().invoke(main, ["openapi"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == client.get("/openapi.json").get_json()


def _component(document: dict, ref: str) -> dict:
    return document["components"]["schemas"][ref.rsplit("/", 1)[-1]]


def test_documented_error_response_describes_both_error_bodies(client: FlaskClient) -> None:
    document = client.get("/openapi.json").get_json()
    either = document["components"]["responses"]["DEFAULT_ERROR"]["content"]["application/json"]["schema"]
    blazar, placement = (_component(document, choice["$ref"]) for choice in either["oneOf"])
    v1_error = client.get("/v1/leases/no-such-lease").get_json()
    assert set(blazar["required"]) == set(v1_error) == {"error_code", "error_name", "error_message"}
    placement_error = client.get("/placement/resource_providers/no-such-provider",
                                 headers={"X-Auth-Token": "admin"}).get_json()
    assert placement["required"] == ["errors"] and set(placement_error) == {"errors"}
    item = document["components"]["schemas"]["PlacementError"]
    assert set(item["required"]) == set(placement_error["errors"][0])


def test_placement_root_documents_its_version_document(client: FlaskClient) -> None:
    document = client.get("/openapi.json").get_json()
    ok = document["paths"]["/placement/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    version = _component(document, _component(document, ok["$ref"])["properties"]["versions"]["items"]["$ref"])
    served = client.get("/placement/").get_json()["versions"][0]
    assert set(version["properties"]) == set(served)
