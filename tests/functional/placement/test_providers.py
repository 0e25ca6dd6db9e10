"""/placement/resource_providers: every route and its error paths."""

from __future__ import annotations

import uuid


def _create(placement, name, **body):  # type: ignore[no-untyped-def]
    response = placement.post("/resource_providers", json={"name": name, **body})
    assert response.status_code == 200, response.json
    return response.json


def test_create_returns_provider_body_from_1_20(placement):
    body = _create(placement, "cn1")
    assert body["name"] == "cn1"
    assert body["generation"] == 0
    assert body["root_provider_uuid"] == body["uuid"]
    assert body["parent_provider_uuid"] is None


def test_create_before_1_20_answers_201_with_location_and_no_body(placement):
    response = placement.post("/resource_providers", json={"name": "cn1"}, version="1.19")
    assert response.status_code == 201
    assert response.data == b""
    assert "/placement/resource_providers/" in response.headers["Location"]


def test_create_keeps_the_given_uuid_in_canonical_form(placement):
    given = uuid.uuid4()
    body = _create(placement, "cn1", uuid=given.hex.upper())
    assert body["uuid"] == str(given)


def test_create_with_a_taken_name_is_409_duplicate_name(placement):
    _create(placement, "cn1")
    detail = placement.error(placement.post("/resource_providers", json={"name": "cn1"}), 409,
                             "placement.duplicate_name")
    assert "cn1" in detail


def test_create_with_a_taken_uuid_is_409(placement):
    body = _create(placement, "cn1")
    response = placement.post("/resource_providers", json={"name": "cn2", "uuid": body["uuid"]})
    assert "uuid" in placement.error(response, 409, "placement.duplicate_uuid")


def test_create_with_a_name_over_200_characters_is_400_naming_the_field(placement):
    detail = placement.error(placement.post("/resource_providers", json={"name": "x" * 201}), 400)
    assert "'name'" in detail


def test_create_with_an_unknown_field_is_400_naming_it(placement):
    detail = placement.error(placement.post("/resource_providers", json={"name": "a", "colour": "red"}), 400)
    assert "'colour'" in detail and "Unknown field" in detail


def test_create_with_a_name_of_the_wrong_type_is_400(placement):
    assert "'name'" in placement.error(placement.post("/resource_providers", json={"name": 5}), 400)


def test_create_with_a_bad_uuid_is_400(placement):
    assert "'uuid'" in placement.error(placement.post("/resource_providers", json={"name": "a", "uuid": "nope"}), 400)


def test_create_with_malformed_json_is_400(placement):
    response = placement("POST", "/resource_providers", data="{nope", headers={"Content-Type": "application/json"})
    assert "Malformed JSON" in placement.error(response, 400)


def test_create_without_json_content_type_is_415(placement):
    response = placement("POST", "/resource_providers", data="name=a", headers={"Content-Type": "text/plain"})
    assert "application/json" in placement.error(response, 415)


def test_create_nested_provider_records_parent_and_root(placement):
    root = _create(placement, "cn1")
    child = _create(placement, "cn1-numa0", parent_provider_uuid=root["uuid"])
    grandchild = _create(placement, "cn1-numa0-pf", parent_provider_uuid=child["uuid"])
    assert child["parent_provider_uuid"] == root["uuid"]
    assert grandchild["root_provider_uuid"] == root["uuid"]


def test_create_under_a_missing_parent_is_400(placement):
    response = placement.post("/resource_providers", json={"name": "a", "parent_provider_uuid": str(uuid.uuid4())})
    detail = placement.error(response, 400)
    assert "parent provider" in detail


def test_create_with_parent_equal_to_own_uuid_is_400(placement):
    own = str(uuid.uuid4())
    response = placement.post("/resource_providers", json={"name": "a", "uuid": own, "parent_provider_uuid": own})
    assert "cannot be same" in placement.error(response, 400)


def test_parent_provider_uuid_is_unknown_before_1_14(placement):
    root = _create(placement, "cn1")
    response = placement.post("/resource_providers", json={"name": "a", "parent_provider_uuid": root["uuid"]},
                              version="1.13")
    assert "'parent_provider_uuid'" in placement.error(response, 400)


def test_show_returns_links_that_grow_with_the_microversion(placement):
    body = _create(placement, "cn1")
    old = placement.get(f"/resource_providers/{body['uuid']}", version="1.0").json
    new = placement.get(f"/resource_providers/{body['uuid']}").json
    assert {link["rel"] for link in old["links"]} == {"self", "inventories", "usages"}
    assert {link["rel"] for link in new["links"]} == {"self", "inventories", "usages", "aggregates", "traits",
                                                       "allocations"}
    assert "root_provider_uuid" not in old


def test_show_missing_provider_is_404(placement):
    placement.error(placement.get(f"/resource_providers/{uuid.uuid4()}"), 404)


def test_list_filters_by_name_uuid_and_in_tree(placement):
    root = _create(placement, "cn1")
    child = _create(placement, "cn1-child", parent_provider_uuid=root["uuid"])
    _create(placement, "cn2")
    names = lambda r: sorted(p["name"] for p in r.json["resource_providers"])  # noqa: E731
    assert names(placement.get("/resource_providers")) == ["cn1", "cn1-child", "cn2"]
    assert names(placement.get("/resource_providers?name=cn2")) == ["cn2"]
    assert names(placement.get(f"/resource_providers?uuid={child['uuid']}")) == ["cn1-child"]
    assert names(placement.get(f"/resource_providers?in_tree={child['uuid']}")) == ["cn1", "cn1-child"]


def test_list_with_an_unknown_parameter_is_400_naming_it(placement):
    assert "colour" in placement.error(placement.get("/resource_providers?colour=red"), 400)


def test_list_in_tree_is_unknown_before_1_14(placement):
    _create(placement, "cn1")
    response = placement.get(f"/resource_providers?in_tree={uuid.uuid4()}", version="1.13")
    assert "in_tree" in placement.error(response, 400)


def test_list_filters_by_resources_capacity(placement):
    placement.provider("big", {"VCPU": 16})
    placement.provider("small", {"VCPU": 2})
    found = placement.get("/resource_providers?resources=VCPU:4").json["resource_providers"]
    assert [p["name"] for p in found] == ["big"]


def test_list_with_badly_formed_resources_is_400(placement):
    assert "resources" in placement.error(placement.get("/resource_providers?resources=VCPU"), 400)


def test_list_with_an_unknown_resource_class_is_400(placement):
    assert "CUSTOM_NOPE" in placement.error(placement.get("/resource_providers?resources=CUSTOM_NOPE:1"), 400)


def test_update_renames_and_bumps_generation(placement):
    body = _create(placement, "cn1")
    response = placement.put(f"/resource_providers/{body['uuid']}", json={"name": "cn1-renamed"})
    assert response.status_code == 200
    assert response.json["name"] == "cn1-renamed"
    assert response.json["generation"] == 1


def test_update_to_a_taken_name_is_409(placement):
    _create(placement, "cn1")
    other = _create(placement, "cn2")
    placement.error(placement.put(f"/resource_providers/{other['uuid']}", json={"name": "cn1"}), 409,
                    "placement.duplicate_name")


def test_update_missing_provider_is_404(placement):
    placement.error(placement.put(f"/resource_providers/{uuid.uuid4()}", json={"name": "x"}), 404)


def test_update_can_give_a_root_a_parent_from_1_14(placement):
    root = _create(placement, "cn1")
    orphan = _create(placement, "orphan")
    response = placement.put(f"/resource_providers/{orphan['uuid']}",
                             json={"name": "orphan", "parent_provider_uuid": root["uuid"]}, version="1.14")
    assert response.json["root_provider_uuid"] == root["uuid"]


def test_reparenting_is_refused_before_1_37(placement):
    a = _create(placement, "a")
    b = _create(placement, "b")
    child = _create(placement, "child", parent_provider_uuid=a["uuid"])
    response = placement.put(f"/resource_providers/{child['uuid']}",
                             json={"name": "child", "parent_provider_uuid": b["uuid"]}, version="1.36")
    assert "re-parenting" in placement.error(response, 400)


def test_reparenting_from_1_37_moves_the_whole_subtree(placement):
    a = _create(placement, "a")
    b = _create(placement, "b")
    child = _create(placement, "child", parent_provider_uuid=a["uuid"])
    leaf = _create(placement, "leaf", parent_provider_uuid=child["uuid"])
    response = placement.put(f"/resource_providers/{child['uuid']}",
                             json={"name": "child", "parent_provider_uuid": b["uuid"]})
    assert response.status_code == 200
    assert response.json["root_provider_uuid"] == b["uuid"]
    assert placement.get(f"/resource_providers/{leaf['uuid']}").json["root_provider_uuid"] == b["uuid"]


def test_unparenting_from_1_37_makes_a_new_root(placement):
    a = _create(placement, "a")
    child = _create(placement, "child", parent_provider_uuid=a["uuid"])
    response = placement.put(f"/resource_providers/{child['uuid']}",
                             json={"name": "child", "parent_provider_uuid": None})
    assert response.json["root_provider_uuid"] == child["uuid"]
    assert response.json["parent_provider_uuid"] is None


def test_unparenting_before_1_37_is_400(placement):
    a = _create(placement, "a")
    child = _create(placement, "child", parent_provider_uuid=a["uuid"])
    response = placement.put(f"/resource_providers/{child['uuid']}",
                             json={"name": "child", "parent_provider_uuid": None}, version="1.36")
    assert "un-parenting" in placement.error(response, 400)


def test_reparenting_under_own_descendant_is_400(placement):
    a = _create(placement, "a")
    child = _create(placement, "child", parent_provider_uuid=a["uuid"])
    response = placement.put(f"/resource_providers/{a['uuid']}",
                             json={"name": "a", "parent_provider_uuid": child["uuid"]})
    assert "loop" in placement.error(response, 400)


def test_delete_removes_provider_and_its_inventory(placement):
    rp = placement.provider("cn1", {"VCPU": 4})
    assert placement.delete(f"/resource_providers/{rp}").status_code == 204
    placement.error(placement.get(f"/resource_providers/{rp}"), 404)
    assert placement.post("/resource_providers", json={"name": "cn1"}).status_code == 200


def test_delete_parent_with_children_is_409(placement):
    root = _create(placement, "cn1")
    _create(placement, "child", parent_provider_uuid=root["uuid"])
    placement.error(placement.delete(f"/resource_providers/{root['uuid']}"), 409,
                    "placement.resource_provider.cannot_delete_parent")


def test_delete_missing_provider_is_404(placement):
    placement.error(placement.delete(f"/resource_providers/{uuid.uuid4()}"), 404)


def test_method_not_allowed_is_405_in_placement_format(placement):
    response = placement("PATCH", "/resource_providers")
    assert response.status_code == 405
    assert response.json["errors"][0]["status"] == 405
    assert "POST" in response.headers["Allow"]


def test_a_path_uuid_that_is_not_a_uuid_is_404(placement):
    placement.error(placement.get("/resource_providers/not-a-uuid"), 404)


def test_gets_carry_cache_headers_from_1_15(placement):
    _create(placement, "cn1")
    old = placement.get("/resource_providers", version="1.14")
    new = placement.get("/resource_providers", version="1.15")
    assert "Cache-Control" not in old.headers and "Last-Modified" not in old.headers
    assert new.headers["Cache-Control"] == "no-cache"
    assert new.headers["Last-Modified"].endswith("GMT")


def test_responses_echo_the_microversion_and_vary_on_it(placement):
    response = placement.get("/resource_providers", version="1.22")
    assert response.headers["OpenStack-API-Version"] == "placement 1.22"
    assert "openstack-api-version" in response.headers["Vary"]


def test_latest_means_the_maximum_microversion(placement):
    assert placement.get("/", version="latest").headers["OpenStack-API-Version"] == "placement 1.39"


def test_no_version_header_means_1_0(placement):
    response = placement.client.get("/placement/resource_providers")
    assert response.headers["OpenStack-API-Version"] == "placement 1.0"


def test_an_unsupported_microversion_is_406_with_the_range(placement):
    response = placement.get("/resource_providers", version="1.40")
    assert response.status_code == 406
    error = response.json["errors"][0]
    assert (error["min_version"], error["max_version"]) == ("1.0", "1.39")


def test_a_malformed_microversion_is_400(placement):
    assert placement.get("/resource_providers", version="one.two").status_code == 400
