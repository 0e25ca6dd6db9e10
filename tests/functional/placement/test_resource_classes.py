"""/placement/resource_classes: every route, per microversion, and its error paths."""

from __future__ import annotations

import pytest

from blazar_lite.placement import resource_classes


def _create(placement, name):  # type: ignore[no-untyped-def]
    response = placement.post("/resource_classes", json={"name": name})
    assert response.status_code == 201, response.json


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/resource_classes"), ("POST", "/resource_classes"), ("GET", "/resource_classes/CUSTOM_A"),
    ("PUT", "/resource_classes/CUSTOM_A"), ("DELETE", "/resource_classes/CUSTOM_A")])
def test_every_route_is_absent_before_1_2(placement, method, path):
    response = placement(method, path, json={"name": "CUSTOM_B"}, version="1.1")
    placement.error(response, 404)


def test_create_before_1_2_is_404_even_with_a_wrong_content_type(placement):
    response = placement("POST", "/resource_classes", data="x", headers={"Content-Type": "text/plain"},
                         version="1.1")
    assert response.status_code == 404


def test_list_starts_with_the_standard_classes_each_with_a_self_link(placement):
    classes = placement.get("/resource_classes", version="1.2").json["resource_classes"]
    assert classes[0] == {"name": "VCPU", "links": [{"rel": "self", "href": "/placement/resource_classes/VCPU"}]}
    assert {"MEMORY_MB", "DISK_GB"} <= {c["name"] for c in classes}


def test_list_puts_a_created_custom_class_last(placement):
    _create(placement, "CUSTOM_GPU")
    classes = placement.get("/resource_classes").json["resource_classes"]
    assert classes[-1]["name"] == "CUSTOM_GPU"
    assert classes[-1]["links"] == [{"rel": "self", "href": "/placement/resource_classes/CUSTOM_GPU"}]


def test_list_with_a_query_parameter_is_400_naming_it(placement):
    assert "colour" in placement.error(placement.get("/resource_classes?colour=red"), 400)


def test_create_answers_201_with_location_and_no_body(placement):
    response = placement.post("/resource_classes", json={"name": "CUSTOM_GPU"})
    assert response.status_code == 201
    assert response.data == b""
    assert "Content-Type" not in response.headers
    assert response.headers["Location"].endswith("/placement/resource_classes/CUSTOM_GPU")


def test_create_of_an_existing_class_is_409_duplicate_name(placement):
    _create(placement, "CUSTOM_GPU")
    response = placement.post("/resource_classes", json={"name": "CUSTOM_GPU"})
    assert "CUSTOM_GPU" in placement.error(response, 409, "placement.duplicate_name")


@pytest.mark.parametrize("name", ["VCPU", "IRON_NFV", "CUSTOM_lower", "CUSTOM_Illegal&@!Name?", "CUSTOM_",
                                  "CUSTOM_" + "X" * 249])
def test_create_with_an_invalid_name_is_400_naming_the_field(placement, name):
    assert "'name'" in placement.error(placement.post("/resource_classes", json={"name": name}), 400)


def test_create_with_a_name_of_255_characters_is_accepted(placement):
    assert placement.post("/resource_classes", json={"name": "CUSTOM_" + "X" * 248}).status_code == 201


def test_create_without_a_name_is_400_naming_the_field(placement):
    assert "'name'" in placement.error(placement.post("/resource_classes", json={}), 400)


def test_create_with_an_unknown_field_is_400_naming_it(placement):
    detail = placement.error(placement.post("/resource_classes", json={"name": "CUSTOM_A", "extra": 1}), 400)
    assert "'extra'" in detail


def test_create_with_malformed_json_is_400(placement):
    response = placement("POST", "/resource_classes", data="{nope", headers={"Content-Type": "application/json"})
    assert "Malformed JSON" in placement.error(response, 400)


def test_create_without_json_content_type_is_415(placement):
    response = placement("POST", "/resource_classes", data="x", headers={"Content-Type": "text/plain"})
    assert response.status_code == 415


def test_show_returns_name_and_self_link(placement):
    _create(placement, "CUSTOM_GPU")
    response = placement.get("/resource_classes/CUSTOM_GPU", version="1.2")
    assert response.status_code == 200
    assert response.json == {"name": "CUSTOM_GPU",
                             "links": [{"rel": "self", "href": "/placement/resource_classes/CUSTOM_GPU"}]}


def test_show_of_a_standard_class_returns_it(placement):
    assert placement.get("/resource_classes/VCPU").json["name"] == "VCPU"


def test_show_of_a_missing_class_is_404_naming_it(placement):
    assert "CUSTOM_NONE" in placement.error(placement.get("/resource_classes/CUSTOM_NONE"), 404)


def test_rename_before_1_7_returns_the_renamed_class(placement):
    _create(placement, "CUSTOM_OLD")
    response = placement.put("/resource_classes/CUSTOM_OLD", json={"name": "CUSTOM_NEW"}, version="1.6")
    assert response.status_code == 200
    assert response.json == {"name": "CUSTOM_NEW",
                             "links": [{"rel": "self", "href": "/placement/resource_classes/CUSTOM_NEW"}]}
    assert placement.get("/resource_classes/CUSTOM_OLD").status_code == 404


def test_rename_keeps_the_inventories_of_the_class(placement):
    _create(placement, "CUSTOM_OLD")
    uuid = placement.provider("cn1", {"CUSTOM_OLD": 7})
    placement.put("/resource_classes/CUSTOM_OLD", json={"name": "CUSTOM_NEW"}, version="1.6")
    inventories = placement.get(f"/resource_providers/{uuid}/inventories").json["inventories"]
    assert inventories["CUSTOM_NEW"]["total"] == 7 and "CUSTOM_OLD" not in inventories


def test_rename_of_a_standard_class_is_400(placement):
    response = placement.put("/resource_classes/VCPU", json={"name": "CUSTOM_VCPU"}, version="1.6")
    assert "Cannot update standard resource class VCPU" in placement.error(response, 400)


def test_rename_to_a_standard_name_is_400_naming_the_field(placement):
    _create(placement, "CUSTOM_OLD")
    response = placement.put("/resource_classes/CUSTOM_OLD", json={"name": "VCPU"}, version="1.6")
    assert "'name'" in placement.error(response, 400)


def test_rename_of_a_missing_class_is_404(placement):
    response = placement.put("/resource_classes/CUSTOM_NONE", json={"name": "CUSTOM_NEW"}, version="1.6")
    assert "CUSTOM_NONE" in placement.error(response, 404)


def test_rename_onto_an_existing_class_is_409_and_changes_nothing(placement):
    _create(placement, "CUSTOM_A")
    _create(placement, "CUSTOM_B")
    response = placement.put("/resource_classes/CUSTOM_A", json={"name": "CUSTOM_B"}, version="1.6")
    assert "CUSTOM_B" in placement.error(response, 409, "placement.duplicate_name")
    assert placement.get("/resource_classes/CUSTOM_A").status_code == 200


def test_rename_with_an_unknown_field_is_400_naming_it(placement):
    _create(placement, "CUSTOM_A")
    response = placement.put("/resource_classes/CUSTOM_A", json={"name": "CUSTOM_B", "additional": 1},
                             version="1.6")
    assert "'additional'" in placement.error(response, 400)


def test_put_from_1_7_creates_a_missing_class_with_201_and_location(placement):
    response = placement.put("/resource_classes/CUSTOM_GPU", version="1.7")
    assert response.status_code == 201
    assert response.data == b""
    assert response.headers["Location"].endswith("/placement/resource_classes/CUSTOM_GPU")
    assert placement.get("/resource_classes/CUSTOM_GPU").status_code == 200


def test_put_from_1_7_of_an_existing_class_is_204_with_location(placement):
    _create(placement, "CUSTOM_GPU")
    response = placement.put("/resource_classes/CUSTOM_GPU")
    assert response.status_code == 204
    assert response.headers["Location"].endswith("/placement/resource_classes/CUSTOM_GPU")


@pytest.mark.parametrize("name", ["VCPU", "GPU", "CUSTOM_lower", "CUSTOM_" + "X" * 249])
def test_put_from_1_7_of_a_name_that_is_not_custom_is_400(placement, name):
    assert "CUSTOM_" in placement.error(placement.put(f"/resource_classes/{name}"), 400)


def test_put_from_1_7_ignores_the_body(placement):
    response = placement.put("/resource_classes/CUSTOM_GPU", json={"name": "CUSTOM_OTHER"})
    assert response.status_code == 201
    assert placement.get("/resource_classes/CUSTOM_OTHER").status_code == 404


def test_delete_removes_a_custom_class(placement):
    _create(placement, "CUSTOM_GPU")
    response = placement.delete("/resource_classes/CUSTOM_GPU")
    assert response.status_code == 204
    assert "Content-Type" not in response.headers
    assert placement.get("/resource_classes/CUSTOM_GPU").status_code == 404


def test_delete_of_a_standard_class_is_400(placement):
    response = placement.delete("/resource_classes/VCPU")
    assert "Cannot delete standard resource class VCPU" in placement.error(response, 400)


def test_delete_of_a_missing_class_is_404(placement):
    assert "CUSTOM_NONE" in placement.error(placement.delete("/resource_classes/CUSTOM_NONE"), 404)


def test_delete_of_a_class_in_inventory_is_409_and_keeps_it(placement):
    _create(placement, "CUSTOM_GPU")
    placement.provider("cn1", {"CUSTOM_GPU": 4})
    detail = placement.error(placement.delete("/resource_classes/CUSTOM_GPU"), 409, "placement.inventory.inuse")
    assert "CUSTOM_GPU" in detail
    assert placement.get("/resource_classes/CUSTOM_GPU").status_code == 200


def test_delete_of_a_class_whose_inventory_was_removed_succeeds(placement):
    _create(placement, "CUSTOM_GPU")
    uuid = placement.provider("cn1", {"CUSTOM_GPU": 4})
    assert placement.delete(f"/resource_providers/{uuid}/inventories").status_code == 204
    assert placement.delete("/resource_classes/CUSTOM_GPU").status_code == 204


def test_ensure_resource_class_says_whether_it_created_the_class(database):
    with database.transaction() as session:
        assert resource_classes.ensure_resource_class(session, "CUSTOM_RESERVATION_1") is True
        assert resource_classes.ensure_resource_class(session, "CUSTOM_RESERVATION_1") is False
    with database.read() as session:
        assert resource_classes.list_resource_classes(session)[-1] == "CUSTOM_RESERVATION_1"
