"""`blazar-lite serve` answers discovery the way Blazar and Placement clients expect."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
import uuid

import pytest

pytestmark = pytest.mark.integration


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_served_version_discovery_answers_300(live_server: str) -> None:
    status, body = _get(live_server + "/versions")
    assert status == 300
    assert body["versions"][0]["id"] == "v1.0"


def test_served_placement_root_offers_microversions_up_to_1_39(live_server: str) -> None:
    status, body = _get(live_server + "/placement/")
    assert status == 200
    assert body["versions"][0]["max_version"] == "1.39"


def test_osc_placement_without_auth_reports_a_missing_provider_as_not_found(live_server, console_script) -> None:
    missing = subprocess.run(
        [console_script("openstack"), "--os-auth-type", "none", "--os-endpoint", f"{live_server}/placement",
         "--os-placement-api-version", "1.39", "resource", "provider", "show", str(uuid.uuid4())],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert missing.returncode != 0
    assert "HTTP 404" in missing.stderr
