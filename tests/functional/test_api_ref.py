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
