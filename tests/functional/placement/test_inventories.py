"""/placement/resource_providers/{uuid}/inventories: every route and its error paths."""

from __future__ import annotations

import pytest


@pytest.fixture
def rp(placement):  # type: ignore[no-untyped-def]
    return placement.provider("cn1")


def test_replace_sets_defaults_and_bumps_generation(placement, rp):
    response = placement.put_inventories(rp, 0, {"VCPU": {"total": 8, "allocation_ratio": 4.0}})
    assert response.status_code == 200
    assert response.json == {"resource_provider_generation": 1, "inventories": {"VCPU": {
        "total": 8, "reserved": 0, "min_unit": 1, "max_unit": 2147483647, "step_size": 1,
        "allocation_ratio": 4.0}}}
    assert placement.generation(rp) == 1


def test_replace_with_a_stale_generation_is_409_concurrent_update(placement, rp):
    placement.put_inventories(rp, 0, {"VCPU": {"total": 8}})
    placement.error(placement.put_inventories(rp, 0, {"VCPU": {"total": 4}}), 409, "placement.concurrent_update")
    assert placement.get(f"/resource_providers/{rp}/inventories").json["inventories"]["VCPU"]["total"] == 8


def test_replace_removes_classes_left_out(placement, rp):
    placement.put_inventories(rp, 0, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}})
    body = placement.put_inventories(rp, 1, {"VCPU": {"total": 8}}).json
    assert list(body["inventories"]) == ["VCPU"]


def test_replace_with_an_unknown_class_is_400_naming_it(placement, rp):
    assert "CUSTOM_NOPE" in placement.error(placement.put_inventories(rp, 0, {"CUSTOM_NOPE": {"total": 1}}), 400)


def test_replace_with_a_lower_case_class_is_400(placement, rp):
    assert "inventories" in placement.error(placement.put_inventories(rp, 0, {"vcpu": {"total": 1}}), 400)


def test_replace_without_total_is_400_naming_it(placement, rp):
    assert "total" in placement.error(placement.put_inventories(rp, 0, {"VCPU": {"reserved": 1}}), 400)


@pytest.mark.parametrize("field,value", [("total", 0), ("total", "8"), ("total", True), ("reserved", -1),
                                         ("min_unit", 0), ("step_size", 0), ("allocation_ratio", 0),
                                         ("allocation_ratio", "x"), ("max_unit", 2147483648)])
def test_replace_with_an_invalid_field_is_400_naming_it(placement, rp, field, value):
    fields = {"total": 8, field: value}
    assert field in placement.error(placement.put_inventories(rp, 0, {"VCPU": fields}), 400)


def test_replace_with_an_unknown_field_is_400(placement, rp):
    assert "colour" in placement.error(placement.put_inventories(rp, 0, {"VCPU": {"total": 1, "colour": 2}}), 400)


def test_replace_without_generation_is_400(placement, rp):
    response = placement.put(f"/resource_providers/{rp}/inventories", json={"inventories": {}})
    assert "resource_provider_generation" in placement.error(response, 400)


def test_reserved_greater_than_total_is_400(placement, rp):
    assert "reserved" in placement.error(placement.put_inventories(rp, 0, {"VCPU": {"total": 4, "reserved": 5}}), 400)


def test_reserved_equal_to_total_is_allowed_from_1_26_only(placement, rp):
    placement.error(placement.put_inventories(rp, 0, {"VCPU": {"total": 4, "reserved": 4}}, version="1.25"), 400)
    assert placement.put_inventories(rp, 0, {"VCPU": {"total": 4, "reserved": 4}}, version="1.26").status_code == 200


def test_min_unit_above_max_unit_is_400(placement, rp):
    response = placement.put_inventories(rp, 0, {"VCPU": {"total": 4, "min_unit": 3, "max_unit": 2}})
    assert "min_unit" in placement.error(response, 400)


def test_replace_on_missing_provider_is_404(placement):
    placement.error(placement.put_inventories("5d0cbd19-9e0b-4dd4-8b35-1b2a7a55a0b6", 0, {}), 404)


def test_post_adds_one_class_with_location(placement, rp):
    response = placement.post(f"/resource_providers/{rp}/inventories",
                              json={"resource_class": "DISK_GB", "total": 100, "resource_provider_generation": 0})
    assert response.status_code == 201
    assert response.headers["Location"].endswith(f"/resource_providers/{rp}/inventories/DISK_GB")
    assert response.json["total"] == 100
    assert response.json["resource_provider_generation"] == 1


def test_post_of_an_existing_class_is_409(placement, rp):
    placement.put_inventories(rp, 0, {"DISK_GB": {"total": 10}})
    response = placement.post(f"/resource_providers/{rp}/inventories",
                              json={"resource_class": "DISK_GB", "total": 100, "resource_provider_generation": 1})
    assert "already exists" in placement.error(response, 409)


def test_post_without_resource_class_is_400(placement, rp):
    response = placement.post(f"/resource_providers/{rp}/inventories",
                              json={"total": 100, "resource_provider_generation": 0})
    assert "resource_class" in placement.error(response, 400)


def test_show_one_class(placement, rp):
    placement.put_inventories(rp, 0, {"VCPU": {"total": 8}})
    body = placement.get(f"/resource_providers/{rp}/inventories/VCPU").json
    assert body["total"] == 8 and body["resource_provider_generation"] == 1


def test_show_a_class_the_provider_lacks_is_404(placement, rp):
    placement.error(placement.get(f"/resource_providers/{rp}/inventories/VCPU"), 404)


def test_update_one_class(placement, rp):
    placement.put_inventories(rp, 0, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 512}})
    response = placement.put(f"/resource_providers/{rp}/inventories/VCPU",
                             json={"total": 16, "resource_provider_generation": 1})
    assert response.status_code == 200 and response.json["total"] == 16
    assert placement.get(f"/resource_providers/{rp}/inventories/MEMORY_MB").json["total"] == 512


def test_update_one_class_the_provider_lacks_is_404(placement, rp):
    response = placement.put(f"/resource_providers/{rp}/inventories/VCPU",
                             json={"total": 16, "resource_provider_generation": 0})
    placement.error(response, 404)


def test_update_one_class_with_a_stale_generation_is_409(placement, rp):
    placement.put_inventories(rp, 0, {"VCPU": {"total": 8}})
    response = placement.put(f"/resource_providers/{rp}/inventories/VCPU",
                             json={"total": 16, "resource_provider_generation": 0})
    placement.error(response, 409, "placement.concurrent_update")


def test_delete_one_class(placement, rp):
    placement.put_inventories(rp, 0, {"VCPU": {"total": 8}})
    assert placement.delete(f"/resource_providers/{rp}/inventories/VCPU").status_code == 204
    assert placement.get(f"/resource_providers/{rp}/inventories").json == {
        "inventories": {}, "resource_provider_generation": 2}


def test_delete_a_class_the_provider_lacks_is_404(placement, rp):
    placement.error(placement.delete(f"/resource_providers/{rp}/inventories/VCPU"), 404)


def test_delete_all_is_absent_before_1_5(placement, rp):
    placement.put_inventories(rp, 0, {"VCPU": {"total": 8}})
    assert placement.delete(f"/resource_providers/{rp}/inventories", version="1.4").status_code == 404
    assert placement.delete(f"/resource_providers/{rp}/inventories", version="1.5").status_code == 204
    assert placement.get(f"/resource_providers/{rp}/inventories").json["inventories"] == {}


def test_inventory_in_use_cannot_be_removed(placement, rp):
    placement.put_inventories(rp, 0, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 512}})
    assert placement.allocate("7bc4f0b0-3a53-4b0a-bb6b-9c0d7a0c1a01", {rp: {"VCPU": 2}}).status_code == 204
    generation = placement.generation(rp)
    placement.error(placement.delete(f"/resource_providers/{rp}/inventories/VCPU"), 409, "placement.inventory.inuse")
    placement.error(placement.delete(f"/resource_providers/{rp}/inventories"), 409, "placement.inventory.inuse")
    placement.error(placement.put_inventories(rp, generation, {"MEMORY_MB": {"total": 512}}), 409,
                    "placement.inventory.inuse")
    assert placement.delete(f"/resource_providers/{rp}/inventories/MEMORY_MB").status_code == 204
