"""/placement/traits and /placement/resource_providers/{uuid}/traits: every route and its error paths."""

from __future__ import annotations

import uuid as uuidlib

import pytest

from blazar_lite.exceptions import BadRequest
from blazar_lite.placement import traits


def _set(placement, uuid, names, generation):  # type: ignore[no-untyped-def]
    return placement.put(f"/resource_providers/{uuid}/traits",
                         json={"traits": names, "resource_provider_generation": generation})


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/traits"), ("GET", "/traits/CUSTOM_A"), ("PUT", "/traits/CUSTOM_A"), ("DELETE", "/traits/CUSTOM_A")])
def test_trait_routes_are_absent_before_1_6(placement, method, path):
    placement.error(placement(method, path, version="1.5"), 404)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_provider_trait_routes_are_absent_before_1_6(placement, method):
    uuid = placement.provider()
    response = placement(method, f"/resource_providers/{uuid}/traits",
                         json={"traits": [], "resource_provider_generation": 0}, version="1.5")
    placement.error(response, 404)


def test_list_returns_the_standard_traits_sorted(placement):
    names = placement.get("/traits", version="1.6").json["traits"]
    assert {"HW_CPU_X86_AVX", "MISC_SHARES_VIA_AGGREGATE", "COMPUTE_STATUS_DISABLED"} <= set(names)
    assert names == sorted(names)


def test_list_with_name_in_returns_only_those_that_exist(placement):
    placement.put("/traits/CUSTOM_A")
    response = placement.get("/traits?name=in:CUSTOM_A,HW_CPU_X86_AVX,CUSTOM_MISSING")
    assert response.json == {"traits": ["CUSTOM_A", "HW_CPU_X86_AVX"]}


def test_list_with_name_startswith_filters_by_prefix(placement):
    for name in ("CUSTOM_TRAIT_1", "CUSTOM_TRAIT_2", "CUSTOM_OTHER"):
        placement.put(f"/traits/{name}")
    assert placement.get("/traits?name=startswith:CUSTOM_TRAIT").json == {"traits": ["CUSTOM_TRAIT_1",
                                                                                     "CUSTOM_TRAIT_2"]}


def test_list_with_a_prefix_treats_underscore_literally(placement):
    placement.put("/traits/CUSTOM_AXB")
    placement.put("/traits/CUSTOM_A_B")
    assert placement.get("/traits?name=startswith:CUSTOM_A_").json["traits"] == ["CUSTOM_A_B"]


@pytest.mark.parametrize("value", ["in_abc", "CUSTOM_A", "like:CUSTOM_"])
def test_list_with_a_badly_formed_name_is_400(placement, value):
    assert "Badly formatted name parameter" in placement.error(placement.get(f"/traits?name={value}"), 400)


def test_list_associated_true_returns_only_traits_some_provider_has(placement):
    placement.put("/traits/CUSTOM_USED")
    placement.put("/traits/CUSTOM_FREE")
    _set(placement, placement.provider(), ["CUSTOM_USED", "HW_CPU_X86_AVX"], 0)
    assert placement.get("/traits?associated=true").json["traits"] == ["CUSTOM_USED", "HW_CPU_X86_AVX"]


def test_list_associated_false_leaves_out_traits_some_provider_has(placement):
    placement.put("/traits/CUSTOM_USED")
    placement.put("/traits/CUSTOM_FREE")
    _set(placement, placement.provider(), ["CUSTOM_USED"], 0)
    names = placement.get("/traits?associated=false&name=startswith:CUSTOM_").json["traits"]
    assert names == ["CUSTOM_FREE"]


def test_list_with_an_invalid_associated_value_is_400(placement):
    detail = placement.error(placement.get("/traits?associated=xyz"), 400)
    assert 'only accepts "true" or "false"' in detail


def test_list_with_an_unknown_parameter_is_400_naming_it(placement):
    assert "invalid" in placement.error(placement.get("/traits?invalid=abc"), 400)


def test_list_with_name_given_twice_is_400(placement):
    assert "name" in placement.error(placement.get("/traits?name=in:A&name=in:B"), 400)


def test_show_of_an_existing_trait_is_204_without_a_body(placement):
    response = placement.get("/traits/HW_CPU_X86_AVX")
    assert response.status_code == 204
    assert response.data == b""
    assert "Content-Type" not in response.headers


def test_show_of_a_missing_trait_is_404(placement):
    assert "CUSTOM_NONE" in placement.error(placement.get("/traits/CUSTOM_NONE"), 404)


def test_put_creates_a_custom_trait_with_201_and_location(placement):
    response = placement.put("/traits/CUSTOM_TRAIT_1")
    assert response.status_code == 201
    assert response.data == b""
    assert "Content-Type" not in response.headers
    assert response.headers["Location"].endswith("/placement/traits/CUSTOM_TRAIT_1")
    assert placement.get("/traits/CUSTOM_TRAIT_1").status_code == 204


def test_put_of_an_existing_trait_is_204_with_location(placement):
    placement.put("/traits/CUSTOM_TRAIT_1")
    response = placement.put("/traits/CUSTOM_TRAIT_1")
    assert response.status_code == 204
    assert response.headers["Location"].endswith("/placement/traits/CUSTOM_TRAIT_1")


@pytest.mark.parametrize("name", ["TRAIT_X", "HW_CPU_X86_AVX", "CUSTOM_ABC:1", "CUSTOM_lower", "CUSTOM_",
                                  "CUSTOM_" + "A" * 249])
def test_put_of_a_name_that_is_not_a_valid_custom_trait_is_400(placement, name):
    response = placement.put(f"/traits/{name}")
    assert "A valid trait must be no longer than 255 characters" in placement.error(response, 400)


def test_delete_removes_an_unused_custom_trait(placement):
    placement.put("/traits/CUSTOM_TRAIT_1")
    response = placement.delete("/traits/CUSTOM_TRAIT_1")
    assert response.status_code == 204
    assert "Content-Type" not in response.headers
    assert placement.get("/traits/CUSTOM_TRAIT_1").status_code == 404


def test_delete_of_a_missing_trait_is_404(placement):
    assert "CUSTOM_NONE" in placement.error(placement.delete("/traits/CUSTOM_NONE"), 404)


def test_delete_of_a_standard_trait_is_400(placement):
    assert "Cannot delete standard trait" in placement.error(placement.delete("/traits/HW_CPU_X86_SSE"), 400)


def test_delete_of_a_trait_a_provider_has_is_409_and_keeps_it(placement):
    placement.put("/traits/CUSTOM_TRAIT_1")
    _set(placement, placement.provider(), ["CUSTOM_TRAIT_1"], 0)
    detail = placement.error(placement.delete("/traits/CUSTOM_TRAIT_1"), 409)
    assert "The trait CUSTOM_TRAIT_1 is in use by a resource provider" in detail
    assert placement.get("/traits/CUSTOM_TRAIT_1").status_code == 204


def test_provider_traits_start_empty_at_generation_0(placement):
    uuid = placement.provider()
    assert placement.get(f"/resource_providers/{uuid}/traits").json == {"traits": [],
                                                                          "resource_provider_generation": 0}


def test_provider_traits_of_a_missing_provider_is_404(placement):
    missing = uuidlib.uuid4()
    assert str(missing) in placement.error(placement.get(f"/resource_providers/{missing}/traits"), 404)


def test_set_provider_traits_returns_them_with_the_next_generation(placement):
    placement.put("/traits/CUSTOM_TRAIT_1")
    uuid = placement.provider()
    response = _set(placement, uuid, ["CUSTOM_TRAIT_1", "HW_CPU_X86_AVX"], 0)
    assert response.status_code == 200
    assert response.json == {"traits": ["CUSTOM_TRAIT_1", "HW_CPU_X86_AVX"], "resource_provider_generation": 1}
    assert placement.get(f"/resource_providers/{uuid}/traits").json == response.json
    assert placement.generation(uuid) == 1


def test_set_provider_traits_replaces_the_previous_set(placement):
    uuid = placement.provider()
    _set(placement, uuid, ["HW_CPU_X86_AVX", "HW_CPU_X86_SSE"], 0)
    assert _set(placement, uuid, ["HW_CPU_X86_SSE", "HW_CPU_X86_SSE2"], 1).json["traits"] == [
        "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2"]


def test_set_provider_traits_touches_no_other_provider(placement):
    first, second = placement.provider("cn1"), placement.provider("cn2")
    _set(placement, first, ["HW_CPU_X86_AVX"], 0)
    _set(placement, second, ["HW_CPU_X86_SSE"], 0)
    _set(placement, first, [], 1)
    assert placement.get(f"/resource_providers/{second}/traits").json["traits"] == ["HW_CPU_X86_SSE"]


def test_set_provider_traits_to_the_same_set_still_advances_the_generation(placement):
    uuid = placement.provider()
    _set(placement, uuid, ["HW_CPU_X86_AVX"], 0)
    assert _set(placement, uuid, ["HW_CPU_X86_AVX"], 1).json["resource_provider_generation"] == 2


def test_set_provider_traits_tolerates_a_name_listed_twice(placement):
    uuid = placement.provider()
    assert _set(placement, uuid, ["HW_CPU_X86_AVX", "HW_CPU_X86_AVX"], 0).json["traits"] == ["HW_CPU_X86_AVX"]


def test_set_provider_traits_with_a_stale_generation_is_409_and_changes_nothing(placement):
    uuid = placement.provider()
    _set(placement, uuid, ["HW_CPU_X86_AVX"], 0)
    placement.error(_set(placement, uuid, ["HW_CPU_X86_SSE"], 0), 409, "placement.concurrent_update")
    assert placement.get(f"/resource_providers/{uuid}/traits").json == {"traits": ["HW_CPU_X86_AVX"],
                                                                         "resource_provider_generation": 1}


def test_set_provider_traits_with_unknown_traits_is_400_naming_them_and_changes_nothing(placement):
    uuid = placement.provider()
    response = _set(placement, uuid, ["NON_EXISTED_TRAIT1", "NON_EXISTED_TRAIT2", "HW_CPU_X86_AVX"], 0)
    detail = placement.error(response, 400)
    assert "No such trait" in detail and "NON_EXISTED_TRAIT1" in detail and "NON_EXISTED_TRAIT2" in detail
    assert placement.get(f"/resource_providers/{uuid}/traits").json == {"traits": [],
                                                                         "resource_provider_generation": 0}


def test_set_provider_traits_without_a_generation_is_400_naming_it(placement):
    uuid = placement.provider()
    response = placement.put(f"/resource_providers/{uuid}/traits", json={"traits": ["HW_CPU_X86_AVX"]})
    assert "'resource_provider_generation'" in placement.error(response, 400)


@pytest.mark.parametrize(("body", "field"), [
    ({"traits": ["HW_CPU_X86_AVX"], "resource_provider_generation": "invalid"}, "resource_provider_generation"),
    ({"traits": "invalid_type", "resource_provider_generation": 0}, "traits"),
    ({"traits": [5], "resource_provider_generation": 0}, "traits"),
    ({"resource_provider_generation": 0}, "traits"),
    ({"traits": [], "resource_provider_generation": 0, "additional": 1}, "additional")])
def test_set_provider_traits_with_a_bad_body_is_400_naming_the_field(placement, body, field):
    uuid = placement.provider()
    response = placement.put(f"/resource_providers/{uuid}/traits", json=body)
    assert f"'{field}" in placement.error(response, 400)


def test_set_traits_of_a_missing_provider_is_404(placement):
    missing = uuidlib.uuid4()
    assert str(missing) in placement.error(_set(placement, missing, ["HW_CPU_X86_AVX"], 0), 404)


def test_delete_provider_traits_removes_them_and_advances_the_generation(placement):
    uuid = placement.provider()
    _set(placement, uuid, ["HW_CPU_X86_AVX"], 0)
    response = placement.delete(f"/resource_providers/{uuid}/traits")
    assert response.status_code == 204
    assert "Content-Type" not in response.headers
    assert placement.get(f"/resource_providers/{uuid}/traits").json == {"traits": [],
                                                                         "resource_provider_generation": 2}


def test_delete_traits_of_a_missing_provider_is_404(placement):
    missing = uuidlib.uuid4()
    assert str(missing) in placement.error(placement.delete(f"/resource_providers/{missing}/traits"), 404)


def test_ensure_traits_creates_missing_custom_traits_only(database):
    with database.transaction() as session:
        assert traits.ensure_traits(session, ["CUSTOM_NEW", "HW_CPU_X86_AVX"]) == {"CUSTOM_NEW"}
        assert traits.ensure_traits(session, ["CUSTOM_NEW"]) == set()
    with database.read() as session:
        assert traits.list_traits(session, prefix="CUSTOM_") == ["CUSTOM_NEW"]


def test_ensure_traits_refuses_unknown_standard_names(database):
    with database.transaction() as session, pytest.raises(BadRequest, match="HW_NOT_A_TRAIT"):
        traits.ensure_traits(session, ["HW_NOT_A_TRAIT", "CUSTOM_OK"])
