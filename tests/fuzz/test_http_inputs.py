"""What users type, sent through HTTP: arbitrary filters and dates in leases, arbitrary
scriptlets in the server configuration and its trial. Each answer is a success or a 4xx in the
Blazar error format, never a 5xx."""

from __future__ import annotations

import json
from typing import Any

from flask import Flask
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.fuzz.conftest import ADMIN, examples
from tests.fuzz.test_parsers import SCRIPT_PIECES, date_like, filters, json_values

FUZZ = settings(max_examples=examples(), deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Each field is more often valid than not, so that some leases are created and every later check runs.
filter_values = st.one_of(st.just(""), filters.map(json.dumps), filters.map(json.dumps), filters,
                          st.text(max_size=60), json_values)
start_values = st.one_of(st.sampled_from(["now", "2031-01-01 00:00", "2031-01-01T00:00:00.5+01:00"]),
                         st.sampled_from(["now", "2031-01-01 00:00"]), date_like, st.text(max_size=30), json_values)
end_values = st.one_of(st.sampled_from(["2031-02-01 00:00", "2031-02-01T00:00Z", "8999-12-31 23:59"]),
                       st.sampled_from(["2031-02-01 00:00"]), date_like, st.text(max_size=30), json_values)
date_values = st.one_of(start_values, end_values)


def assert_answered(response: Any, *ok: int) -> dict:
    body = response.get_json()
    assert response.status_code in ok or 400 <= response.status_code < 500, (response.status_code, body)
    if response.status_code >= 400:
        assert set(body) >= {"error_code", "error_name", "error_message"}, body
        assert body["error_code"] == response.status_code
    return body



def create_then_delete(fuzz_app: Flask, body: dict) -> None:
    """POST the lease: a 201 or a 4xx that says why. A created one is deleted again, so that later
    examples are not all refused for want of room."""
    response = fuzz_app.test_client().post("/v1/leases", json=body, headers=ADMIN)
    created = assert_answered(response, 201)
    event(f"status {response.status_code}")
    if response.status_code == 201:
        lease_id = created["lease"]["id"]
        assert fuzz_app.test_client().delete(f"/v1/leases/{lease_id}", headers=ADMIN).status_code == 204

@FUZZ
@given(hypervisor=filter_values, resource=filter_values, start=start_values, end=end_values,
       before_end=st.one_of(st.none(), st.none(), date_values), minimum=st.one_of(st.integers(1, 2), st.integers(-2, 4),
                                                                          json_values))
def test_a_host_lease_with_any_filters_and_dates_is_created_or_refused(
        fuzz_app: Flask, hypervisor: object, resource: object, start: object, end: object, before_end: object,
        minimum: object) -> None:
    body = {"name": "fuzzed", "start_date": start, "end_date": end, "before_end_date": before_end, "events": [],
            "reservations": [{"resource_type": "physical:host", "min": minimum, "max": 4,
                              "hypervisor_properties": hypervisor, "resource_properties": resource}]}
    create_then_delete(fuzz_app, body)


@FUZZ
@given(resource=filter_values, amount=st.one_of(st.integers(1, 3), st.integers(-1, 3), json_values),
       affinity=st.one_of(st.sampled_from([True, False, None, "True", "false", "None"]), json_values))
def test_an_instance_lease_with_any_filter_and_affinity_is_created_or_refused(
        fuzz_app: Flask, resource: object, amount: object, affinity: object) -> None:
    body = {"name": "fuzzed-instances", "start_date": "now", "end_date": "8000-01-01 00:00", "events": [],
            "reservations": [{"resource_type": "virtual:instance", "amount": amount, "vcpus": 1, "memory_mb": 512,
                              "disk_gb": 1, "affinity": affinity, "resource_properties": resource}]}
    create_then_delete(fuzz_app, body)


@FUZZ
@given(start=st.one_of(st.none(), date_values), end=st.one_of(st.none(), date_values),
       prolong=st.one_of(st.none(), st.text(max_size=12), st.from_regex(r"\A[0-9]{1,20}[mhd]\Z")))
def test_a_lease_update_with_any_dates_is_applied_or_refused(fuzz_app: Flask, start: object, end: object,
                                                             prolong: object) -> None:
    client = fuzz_app.test_client()
    [lease] = [lease for lease in client.get("/v1/leases", headers=ADMIN).get_json()["leases"]
               if lease["name"] == "seeded-lease"]
    body = {key: value for key, value in (("start_date", start), ("end_date", end), ("prolong_for", prolong))
            if value is not None}
    assert_answered(client.put(f"/v1/leases/{lease['id']}", json=body, headers=ADMIN), 200)


scriptlets = st.one_of(st.text(max_size=120), st.lists(st.sampled_from(SCRIPT_PIECES), max_size=8).map("".join))


@FUZZ
@given(body=st.one_of(json_values, st.fixed_dictionaries({"config": st.dictionaries(
    st.sampled_from(["instances.placement.scriptlet", "unknown.key"]), st.one_of(scriptlets, json_values),
    max_size=2)})), method=st.sampled_from(["PUT", "PATCH"]))
def test_any_server_config_is_stored_or_refused(fuzz_app: Flask, body: object, method: str) -> None:
    client = fuzz_app.test_client()
    before = client.get("/v1/config", headers=ADMIN).get_json()
    response = client.open("/v1/config", method=method, json=body, headers=ADMIN)
    assert_answered(response, 200)
    if response.status_code != 200:
        # A refused write changes nothing.
        assert client.get("/v1/config", headers=ADMIN).get_json() == before
    client.put("/v1/config", json={"config": {}}, headers=ADMIN)


@FUZZ
@given(source=scriptlets, request=st.one_of(json_values, st.just({"name": "vm", "vcpus": 1, "memory_mb": 512})))
def test_any_scriptlet_trial_answers_or_is_refused(fuzz_app: Flask, source: str, request: object) -> None:
    response = fuzz_app.test_client().post("/v1/scriptlet/test", json={"scriptlet": source, "request": request},
                                           headers=ADMIN)
    assert_answered(response, 200)
