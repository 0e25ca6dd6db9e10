"""/placement/resource_providers/{uuid}/aggregates: both body forms, generations and error paths."""

from __future__ import annotations

import uuid as uuidlib

import pytest

from blazar_lite.placement import aggregates

AGG_1 = "83a3d69d-8920-48e2-8914-cadfd8fa2f91"
AGG_2 = "99652f11-9f77-46b9-80b7-4b1989be9f8c"


def _put(placement, uuid, aggs, generation):  # type: ignore[no-untyped-def]
    return placement.put(f"/resource_providers/{uuid}/aggregates",
                         json={"aggregates": aggs, "resource_provider_generation": generation})


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_routes_are_absent_at_1_0(placement, method):
    uuid = placement.provider()
    placement.error(placement(method, f"/resource_providers/{uuid}/aggregates", json=[], version="1.0"), 404)


def test_get_before_1_19_lists_aggregates_without_a_generation(placement):
    uuid = placement.provider()
    assert placement.get(f"/resource_providers/{uuid}/aggregates", version="1.1").json == {"aggregates": []}


def test_get_from_1_19_includes_the_generation(placement):
    uuid = placement.provider()
    assert placement.get(f"/resource_providers/{uuid}/aggregates").json == {"aggregates": [],
                                                                              "resource_provider_generation": 0}


def test_get_of_a_missing_provider_is_404(placement):
    missing = uuidlib.uuid4()
    assert str(missing) in placement.error(placement.get(f"/resource_providers/{missing}/aggregates"), 404)


def test_put_before_1_19_takes_a_bare_list_and_returns_the_aggregates(placement):
    uuid = placement.provider()
    response = placement.put(f"/resource_providers/{uuid}/aggregates", json=[AGG_2, AGG_1], version="1.18")
    assert response.status_code == 200
    assert response.json == {"aggregates": sorted([AGG_1, AGG_2])}


def test_put_before_1_19_leaves_the_generation_alone(placement):
    uuid = placement.provider()
    placement.put(f"/resource_providers/{uuid}/aggregates", json=[AGG_1], version="1.1")
    assert placement.generation(uuid) == 0


def test_put_before_1_19_refuses_the_1_19_body_form(placement):
    uuid = placement.provider()
    response = placement.put(f"/resource_providers/{uuid}/aggregates",
                             json={"aggregates": [AGG_1], "resource_provider_generation": 0}, version="1.18")
    assert "'aggregates'" in placement.error(response, 400)


def test_put_before_1_19_with_an_invalid_uuid_is_400(placement):
    uuid = placement.provider()
    response = placement.put(f"/resource_providers/{uuid}/aggregates", json=["not-a-uuid"], version="1.18")
    assert "not-a-uuid" in placement.error(response, 400)


def test_put_from_1_19_returns_aggregates_and_the_next_generation(placement):
    uuid = placement.provider()
    response = _put(placement, uuid, [AGG_1], 0)
    assert response.status_code == 200
    assert response.json == {"aggregates": [AGG_1], "resource_provider_generation": 1}
    assert placement.get(f"/resource_providers/{uuid}/aggregates").json == response.json
    assert placement.generation(uuid) == 1


def test_put_replaces_the_previous_aggregates(placement):
    uuid = placement.provider()
    _put(placement, uuid, [AGG_1], 0)
    assert _put(placement, uuid, [AGG_2], 1).json["aggregates"] == [AGG_2]


def test_put_of_an_empty_list_clears_the_aggregates(placement):
    uuid = placement.provider()
    _put(placement, uuid, [AGG_1, AGG_2], 0)
    assert _put(placement, uuid, [], 1).json == {"aggregates": [], "resource_provider_generation": 2}


def test_put_shares_an_aggregate_between_providers(placement):
    first, second = placement.provider("cn1"), placement.provider("cn2")
    _put(placement, first, [AGG_1], 0)
    _put(placement, second, [AGG_1], 0)
    _put(placement, first, [], 1)
    assert placement.get(f"/resource_providers/{second}/aggregates").json["aggregates"] == [AGG_1]
    members = placement.get(f"/resource_providers?member_of={AGG_1}").json["resource_providers"]
    assert [p["uuid"] for p in members] == [second]


def test_put_accepts_uuids_without_dashes_and_returns_them_canonical(placement):
    uuid = placement.provider()
    assert _put(placement, uuid, [AGG_1.replace("-", "").upper()], 0).json["aggregates"] == [AGG_1]


def test_put_with_a_stale_generation_is_409_and_changes_nothing(placement):
    uuid = placement.provider()
    _put(placement, uuid, [AGG_1], 0)
    placement.error(_put(placement, uuid, [AGG_2], 0), 409, "placement.concurrent_update")
    assert placement.get(f"/resource_providers/{uuid}/aggregates").json == {"aggregates": [AGG_1],
                                                                              "resource_provider_generation": 1}


def test_put_with_an_aggregate_listed_twice_is_400_naming_it(placement):
    uuid = placement.provider()
    assert AGG_1 in placement.error(_put(placement, uuid, [AGG_1, AGG_1.replace("-", "")], 0), 400)


@pytest.mark.parametrize(("body", "field"), [
    ({"aggregates": ["not-a-uuid"], "resource_provider_generation": 0}, "aggregates"),
    ({"aggregates": AGG_1, "resource_provider_generation": 0}, "aggregates"),
    ({"resource_provider_generation": 0}, "aggregates"),
    ({"aggregates": [AGG_1]}, "resource_provider_generation"),
    ({"aggregates": [AGG_1], "resource_provider_generation": "1"}, "resource_provider_generation"),
    ({"aggregates": [], "resource_provider_generation": 0, "extra": 1}, "extra")])
def test_put_from_1_19_with_a_bad_body_is_400_naming_the_field(placement, body, field):
    uuid = placement.provider()
    response = placement.put(f"/resource_providers/{uuid}/aggregates", json=body)
    assert f"'{field}" in placement.error(response, 400)


def test_put_from_1_19_refuses_a_bare_list(placement):
    uuid = placement.provider()
    placement.error(placement.put(f"/resource_providers/{uuid}/aggregates", json=[AGG_1]), 400)


def test_put_of_a_missing_provider_is_404(placement):
    missing = uuidlib.uuid4()
    assert str(missing) in placement.error(_put(placement, missing, [AGG_1], 0), 404)


def test_put_without_json_content_type_is_415(placement):
    uuid = placement.provider()
    response = placement("PUT", f"/resource_providers/{uuid}/aggregates", data="[]",
                         headers={"Content-Type": "text/plain"})
    assert response.status_code == 415


def test_service_without_a_generation_sets_aggregates_and_advances_it(database, placement):
    uuid = placement.provider()
    with database.transaction() as session:
        assert aggregates.set_provider_aggregates(session, uuid, [AGG_1]) == (1, [AGG_1])
    with database.read() as session:
        assert aggregates.get_provider_aggregates(session, uuid) == (1, [AGG_1])
