"""/placement/allocations and /resource_providers/{uuid}/allocations: every route and its error paths."""

from __future__ import annotations

import pytest

C1 = "11111111-1111-1111-1111-111111111111"
C2 = "22222222-2222-2222-2222-222222222222"
C3 = "33333333-3333-3333-3333-333333333333"
NO_PROVIDER = "99999999-9999-9999-9999-999999999999"
MEMBER = {"X-Roles": "member"}


@pytest.fixture
def rp(placement):  # type: ignore[no-untyped-def]
    """A provider with 8 VCPU (at most 4 at once) and 1024 MEMORY_MB in steps of 64 from 128 up."""
    return placement.provider("cn1", {"VCPU": {"total": 8, "max_unit": 4},
                                      "MEMORY_MB": {"total": 1024, "min_unit": 128, "step_size": 64}})


@pytest.fixture
def rp2(placement):  # type: ignore[no-untyped-def]
    return placement.provider("cn2", {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})


# GET /allocations/{consumer_uuid}

@pytest.mark.parametrize("version", ["1.0", "1.27", "1.39"])
def test_unknown_consumer_has_empty_allocations_and_nothing_else(placement, version):
    response = placement.get(f"/allocations/{C1}", version=version)
    assert response.status_code == 200
    assert response.json == {"allocations": {}}


def test_get_shows_provider_generation_resources_owner_generation_and_type(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 2, "MEMORY_MB": 256}})
    assert placement.get(f"/allocations/{C1}").json == {
        "allocations": {rp: {"generation": 2, "resources": {"VCPU": 2, "MEMORY_MB": 256}}},
        "project_id": "proj", "user_id": "user", "consumer_generation": 1, "consumer_type": "INSTANCE"}


@pytest.mark.parametrize("version,keys", [
    ("1.11", {"allocations"}),
    ("1.12", {"allocations", "project_id", "user_id"}),
    ("1.28", {"allocations", "project_id", "user_id", "consumer_generation"}),
    ("1.38", {"allocations", "project_id", "user_id", "consumer_generation", "consumer_type"}),
])
def test_get_shows_owner_from_1_12_generation_from_1_28_and_type_from_1_38(placement, rp, version, keys):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    assert set(placement.get(f"/allocations/{C1}", version=version).json) == keys


def test_get_shows_unknown_type_for_a_consumer_written_without_one(placement, rp):
    placement.put(f"/allocations/{C1}", version="1.37", json={
        "allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u",
        "consumer_generation": None})
    assert placement.get(f"/allocations/{C1}").json["consumer_type"] == "unknown"


def test_get_with_a_malformed_consumer_uuid_is_400(placement):
    assert "not-a-uuid" in placement.error(placement.get("/allocations/not-a-uuid"), 400)


def test_get_with_a_query_parameter_is_400_naming_it(placement):
    assert "foo" in placement.error(placement.get(f"/allocations/{C1}?foo=1"), 400)


def test_get_is_refused_to_a_non_admin(placement):
    placement.error(placement.get(f"/allocations/{C1}", headers=MEMBER), 403)


# PUT /allocations/{consumer_uuid}: writing

def test_put_for_a_new_consumer_is_204_and_bumps_the_provider_generation(placement, rp):
    before = placement.generation(rp)
    response = placement.allocate(C1, {rp: {"VCPU": 2}})
    assert response.status_code == 204
    assert response.data == b""
    assert placement.generation(rp) == before + 1
    assert placement.get(f"/allocations/{C1}").json["consumer_generation"] == 1


def test_put_again_replaces_the_allocations_and_increments_the_consumer_generation(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 2, "MEMORY_MB": 256}})
    assert placement.allocate(C1, {rp: {"VCPU": 3}}, generation=1).status_code == 204
    body = placement.get(f"/allocations/{C1}").json
    assert body["allocations"][rp]["resources"] == {"VCPU": 3}
    assert body["consumer_generation"] == 2


def test_moving_allocations_bumps_the_old_and_the_new_provider_generations(placement, rp, rp2):
    placement.allocate(C1, {rp: {"VCPU": 2}})
    before = (placement.generation(rp), placement.generation(rp2))
    assert placement.allocate(C1, {rp2: {"VCPU": 2}}, generation=1).status_code == 204
    assert (placement.generation(rp), placement.generation(rp2)) == (before[0] + 1, before[1] + 1)
    assert placement.held(C1) == {rp2: {"VCPU": 2}}


def test_put_may_span_several_providers(placement, rp, rp2):
    assert placement.allocate(C1, {rp: {"VCPU": 1}, rp2: {"DISK_GB": 10}}).status_code == 204
    assert placement.held(C1) == {rp: {"VCPU": 1}, rp2: {"DISK_GB": 10}}


def test_put_changes_the_owner_and_type_of_an_existing_consumer(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    placement.put(f"/allocations/{C1}",
                  json=placement.allocation_body({rp: {"VCPU": 1}}, 1, "MIGRATION", project_id="p2", user_id="u2"))
    body = placement.get(f"/allocations/{C1}").json
    assert (body["project_id"], body["user_id"], body["consumer_type"]) == ("p2", "u2", "MIGRATION")


def test_put_before_1_38_keeps_the_consumer_type(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    placement.put(f"/allocations/{C1}", version="1.37", json={
        "allocations": {rp: {"resources": {"VCPU": 2}}}, "project_id": "proj", "user_id": "user",
        "consumer_generation": 1})
    assert placement.get(f"/allocations/{C1}").json["consumer_type"] == "INSTANCE"


def test_put_accepts_the_provider_generation_that_get_returns(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    shown = placement.get(f"/allocations/{C1}", version="1.12").json["allocations"]
    response = placement.put(f"/allocations/{C1}", version="1.12",
                             json={"allocations": shown, "project_id": "proj", "user_id": "user"})
    assert response.status_code == 204


def test_put_accepts_mappings_from_1_34(placement, rp):
    body = placement.allocation_body({rp: {"VCPU": 1}}, mappings={"": [rp]})
    response = placement.put(f"/allocations/{C1}", json=body)
    assert response.status_code == 204


def test_put_with_mappings_before_1_34_is_400(placement, rp):
    body = placement.allocation_body({rp: {"VCPU": 1}}, mappings={"": [rp]})
    del body["consumer_type"]
    assert "mappings" in placement.error(placement.put(f"/allocations/{C1}", json=body, version="1.33"), 400)


def test_put_with_a_mapping_to_a_non_uuid_is_400(placement, rp):
    body = placement.allocation_body({rp: {"VCPU": 1}}, mappings={"": ["x"]})
    assert "mappings" in placement.error(placement.put(f"/allocations/{C1}", json=body), 400)


# PUT: the list form before 1.12, owners from 1.8

def test_put_list_form_before_1_8_records_the_incomplete_consumer_owner(placement, rp):
    response = placement.put(f"/allocations/{C1}", version="1.0", json={
        "allocations": [{"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}}]})
    assert response.status_code == 204
    body = placement.get(f"/allocations/{C1}", version="1.12").json
    assert body["project_id"] == body["user_id"] == "00000000-0000-0000-0000-000000000000"


def test_put_list_form_with_an_owner_before_1_8_is_400(placement, rp):
    response = placement.put(f"/allocations/{C1}", version="1.7", json={
        "allocations": [{"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}}],
        "project_id": "p", "user_id": "u"})
    assert "project_id" in placement.error(response, 400)


def test_put_list_form_at_1_8_records_the_owner(placement, rp):
    placement.put(f"/allocations/{C1}", version="1.8", json={
        "allocations": [{"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}}],
        "project_id": "p", "user_id": "u"})
    assert placement.get(f"/allocations/{C1}").json["project_id"] == "p"


@pytest.mark.parametrize("missing", ["project_id", "user_id"])
def test_put_without_an_owner_from_1_8_is_400_naming_the_field(placement, rp, missing):
    body = {"allocations": [{"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}}],
            "project_id": "p", "user_id": "u"}
    del body[missing]
    response = placement.put(f"/allocations/{C1}", version="1.8", json=body)
    assert f"'{missing}' is a required property" in placement.error(response, 400)


def test_put_list_naming_a_provider_twice_is_400(placement, rp):
    response = placement.put(f"/allocations/{C1}", version="1.11", json={
        "allocations": [{"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}},
                        {"resource_provider": {"uuid": rp}, "resources": {"MEMORY_MB": 128}}],
        "project_id": "p", "user_id": "u"})
    assert "listed twice" in placement.error(response, 400)


def test_put_list_without_a_provider_uuid_is_400(placement, rp):
    response = placement.put(f"/allocations/{C1}", version="1.11", json={
        "allocations": [{"resource_provider": {}, "resources": {"VCPU": 1}}], "project_id": "p", "user_id": "u"})
    assert "resource_provider.uuid" in placement.error(response, 400)


def test_put_list_form_from_1_12_is_400(placement, rp):
    response = placement.put(f"/allocations/{C1}", version="1.12", json={
        "allocations": [{"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}}],
        "project_id": "p", "user_id": "u"})
    assert "allocations" in placement.error(response, 400)


def test_put_dict_form_before_1_12_is_400(placement, rp):
    response = placement.put(f"/allocations/{C1}", version="1.11", json={
        "allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u"})
    assert "allocations" in placement.error(response, 400)


# PUT: consumer generations (1.28) and types (1.38)

def test_put_without_consumer_generation_from_1_28_is_400(placement, rp):
    body = placement.allocation_body({rp: {"VCPU": 1}})
    del body["consumer_generation"]
    assert "'consumer_generation' is a required property" in placement.error(
        placement.put(f"/allocations/{C1}", json=body), 400)


def test_put_with_a_generation_for_a_new_consumer_is_409(placement, rp):
    detail = placement.error(placement.allocate(C1, {rp: {"VCPU": 1}}, generation=5), 409,
                             "placement.concurrent_update")
    assert "expected null but got 5" in detail
    assert placement.held(C1) == {}


def test_put_with_null_generation_for_an_existing_consumer_is_409(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    detail = placement.error(placement.allocate(C1, {rp: {"VCPU": 2}}), 409, "placement.concurrent_update")
    assert "expected 1 but got null" in detail


def test_put_with_a_stale_generation_is_409_and_changes_nothing(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    placement.allocate(C1, {rp: {"VCPU": 2}}, generation=1)
    before = placement.generation(rp)
    placement.error(placement.allocate(C1, {rp: {"VCPU": 3}}, generation=1), 409, "placement.concurrent_update")
    assert placement.held(C1) == {rp: {"VCPU": 2}}
    assert placement.generation(rp) == before


def test_put_before_1_28_does_not_check_the_consumer_generation(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    response = placement.put(f"/allocations/{C1}", version="1.27", json={
        "allocations": {rp: {"resources": {"VCPU": 2}}}, "project_id": "proj", "user_id": "user"})
    assert response.status_code == 204
    assert placement.get(f"/allocations/{C1}").json["consumer_generation"] == 2


def test_put_with_consumer_generation_before_1_28_is_400(placement, rp):
    response = placement.put(f"/allocations/{C1}", version="1.27", json={
        "allocations": {rp: {"resources": {"VCPU": 2}}}, "project_id": "p", "user_id": "u",
        "consumer_generation": None})
    assert "consumer_generation" in placement.error(response, 400)


def test_put_empty_allocations_from_1_28_removes_the_consumer(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    before = placement.generation(rp)
    assert placement.allocate(C1, {}, generation=1).status_code == 204
    assert placement.get(f"/allocations/{C1}").json == {"allocations": {}}
    assert placement.generation(rp) == before + 1
    # The consumer is gone, so it is new again.
    assert placement.allocate(C1, {rp: {"VCPU": 1}}).status_code == 204


def test_put_empty_allocations_for_a_new_consumer_is_204_and_creates_nothing(placement, rp):
    assert placement.allocate(C1, {}).status_code == 204
    assert placement.get(f"/allocations/{C1}").json == {"allocations": {}}


def test_put_empty_allocations_with_a_stale_generation_is_409(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    placement.error(placement.allocate(C1, {}, generation=7), 409, "placement.concurrent_update")
    assert placement.held(C1) == {rp: {"VCPU": 1}}


def test_put_empty_allocations_before_1_28_is_400(placement, rp):
    response = placement.put(f"/allocations/{C1}", version="1.27",
                             json={"allocations": {}, "project_id": "p", "user_id": "u"})
    assert "allocations" in placement.error(response, 400)


def test_put_without_consumer_type_from_1_38_is_400(placement, rp):
    body = placement.allocation_body({rp: {"VCPU": 1}})
    del body["consumer_type"]
    assert "'consumer_type' is a required property" in placement.error(placement.put(f"/allocations/{C1}", json=body),
                                                                       400)


@pytest.mark.parametrize("consumer_type", ["instance", "", "A" * 256, 5])
def test_put_with_a_malformed_consumer_type_is_400(placement, rp, consumer_type):
    body = placement.allocation_body({rp: {"VCPU": 1}}, consumer_type=consumer_type)
    assert "consumer_type" in placement.error(placement.put(f"/allocations/{C1}", json=body), 400)


def test_put_with_consumer_type_before_1_38_is_400(placement, rp):
    response = placement.put(f"/allocations/{C1}", json=placement.allocation_body({rp: {"VCPU": 1}}), version="1.37")
    assert "consumer_type" in placement.error(response, 400)


# PUT: providers, classes and amounts

def test_put_for_an_unknown_provider_is_400_naming_it(placement, rp):
    detail = placement.error(placement.allocate(C1, {rp: {"VCPU": 1}, NO_PROVIDER: {"VCPU": 1}}), 400)
    assert NO_PROVIDER in detail
    assert placement.held(C1) == {}


def test_put_with_an_unknown_class_is_400_naming_class_and_provider(placement, rp):
    detail = placement.error(placement.allocate(C1, {rp: {"CUSTOM_NOPE": 1}}), 400)
    assert "CUSTOM_NOPE" in detail and rp in detail


def test_put_with_a_class_the_provider_lacks_is_409_naming_class_and_provider(placement, rp):
    detail = placement.error(placement.allocate(C1, {rp: {"DISK_GB": 1}}), 409)
    assert "DISK_GB" in detail and rp in detail


@pytest.mark.parametrize("resources,words", [
    ({"VCPU": 5}, "above the max_unit of 4"),
    ({"MEMORY_MB": 64}, "below the min_unit of 128"),
    ({"MEMORY_MB": 130}, "not a multiple of the step_size of 64"),
])
def test_put_violating_the_inventory_units_is_409_saying_which(placement, rp, resources, words):
    detail = placement.error(placement.allocate(C1, {rp: resources}), 409)
    assert words in detail and rp in detail and next(iter(resources)) in detail


def test_put_beyond_capacity_is_409_naming_provider_class_requested_used_and_capacity(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 4}})
    placement.allocate(C2, {rp: {"VCPU": 3}})
    detail = placement.error(placement.allocate(C3, {rp: {"VCPU": 2}}), 409)
    assert rp in detail and "'VCPU'" in detail
    assert "requested 2, used 7, capacity 8" in detail


def test_capacity_is_total_less_reserved_times_allocation_ratio(placement):
    rp = placement.provider("cn", {"VCPU": {"total": 4, "reserved": 1, "allocation_ratio": 2.0}})
    assert placement.allocate(C1, {rp: {"VCPU": 4}}).status_code == 204
    assert placement.allocate(C2, {rp: {"VCPU": 2}}).status_code == 204
    assert "capacity 6" in placement.error(placement.allocate(C3, {rp: {"VCPU": 1}}), 409)


def test_a_consumer_may_rewrite_its_own_allocation_on_a_full_provider(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 4}})
    placement.allocate(C2, {rp: {"VCPU": 4}})
    assert placement.allocate(C1, {rp: {"VCPU": 4}}, generation=1).status_code == 204


def test_a_refused_put_changes_nothing(placement, rp, rp2):
    placement.allocate(C1, {rp: {"VCPU": 2}})
    before = (placement.generation(rp), placement.generation(rp2))
    placement.error(placement.allocate(C1, {rp2: {"VCPU": 1, "DISK_GB": 101}}, generation=1), 409)
    assert placement.held(C1) == {rp: {"VCPU": 2}}
    assert (placement.generation(rp), placement.generation(rp2)) == before
    assert placement.get(f"/allocations/{C1}").json["consumer_generation"] == 1


@pytest.mark.parametrize("amount", [0, -1, "1", 1.5, True, None, 2147483648])
def test_put_with_an_invalid_amount_is_400_naming_the_class(placement, rp, amount):
    assert "VCPU" in placement.error(placement.allocate(C1, {rp: {"VCPU": amount}}), 400)


def test_put_with_a_lower_case_class_is_400(placement, rp):
    assert "'vcpu' does not match" in placement.error(placement.allocate(C1, {rp: {"vcpu": 1}}), 400)


def test_put_with_no_resources_for_a_provider_is_400(placement, rp):
    assert "resources" in placement.error(placement.allocate(C1, {rp: {}}), 400)


def test_put_without_resources_for_a_provider_is_400(placement, rp):
    body = placement.allocation_body({})
    body["allocations"] = {rp: {}}
    assert "'resources' is a required property" in placement.error(placement.put(f"/allocations/{C1}", json=body), 400)


def test_put_keyed_by_a_non_uuid_is_400(placement, rp):
    body = placement.allocation_body({})
    body["allocations"] = {"nice_house_friend": {"resources": {"VCPU": 1}}}
    assert "nice_house_friend" in placement.error(placement.put(f"/allocations/{C1}", json=body), 400)


def test_put_with_an_unknown_field_is_400_naming_it(placement, rp):
    response = placement.put(f"/allocations/{C1}", json=placement.allocation_body({rp: {"VCPU": 1}}, bad_field=1))
    assert "bad_field" in placement.error(response, 400)


def test_put_with_a_malformed_consumer_uuid_is_400(placement, rp):
    assert "not-a-uuid" in placement.error(placement.allocate("not-a-uuid", {rp: {"VCPU": 1}}), 400)


def test_put_with_malformed_json_is_400(placement):
    response = placement("PUT", f"/allocations/{C1}", data="{nope", headers={"Content-Type": "application/json"})
    assert "Malformed JSON" in placement.error(response, 400)


def test_put_that_is_not_json_is_415(placement):
    placement.error(placement("PUT", f"/allocations/{C1}", data="x", headers={"Content-Type": "text/plain"}), 415)


def test_put_is_refused_to_a_non_admin(placement, rp):
    placement.error(placement.allocate(C1, {rp: {"VCPU": 1}}, headers=MEMBER), 403)
    assert placement.held(C1) == {}


# DELETE /allocations/{consumer_uuid}

def test_delete_removes_the_allocations_and_bumps_the_provider_generations(placement, rp, rp2):
    placement.allocate(C1, {rp: {"VCPU": 1}, rp2: {"VCPU": 1}})
    before = (placement.generation(rp), placement.generation(rp2))
    response = placement.delete(f"/allocations/{C1}")
    assert response.status_code == 204
    assert placement.get(f"/allocations/{C1}").json == {"allocations": {}}
    assert (placement.generation(rp), placement.generation(rp2)) == (before[0] + 1, before[1] + 1)


def test_delete_frees_the_capacity(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 4}})
    placement.allocate(C2, {rp: {"VCPU": 4}})
    placement.delete(f"/allocations/{C1}")
    assert placement.allocate(C3, {rp: {"VCPU": 4}}).status_code == 204


def test_delete_of_a_consumer_without_allocations_is_404(placement):
    assert C1 in placement.error(placement.delete(f"/allocations/{C1}"), 404)


def test_delete_with_a_malformed_consumer_uuid_is_400(placement):
    placement.error(placement.delete("/allocations/not-a-uuid"), 400)


def test_delete_is_refused_to_a_non_admin(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    placement.error(placement.delete(f"/allocations/{C1}", headers=MEMBER), 403)
    assert placement.held(C1) == {rp: {"VCPU": 1}}


# POST /allocations

def test_post_is_absent_before_1_13(placement, rp):
    response = placement.post("/allocations", json={C1: placement.allocation_body({rp: {"VCPU": 1}})}, version="1.12")
    assert response.status_code == 404


def test_post_writes_several_consumers(placement, rp, rp2):
    response = placement.post("/allocations", json={C1: placement.allocation_body({rp: {"VCPU": 1}}),
                                                    C2: placement.allocation_body({rp2: {"DISK_GB": 5}})})
    assert response.status_code == 204
    assert placement.held(C1) == {rp: {"VCPU": 1}}
    assert placement.held(C2) == {rp2: {"DISK_GB": 5}}


def test_post_can_move_allocations_from_one_consumer_to_another(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 4}})
    placement.allocate(C2, {rp: {"VCPU": 4}})
    response = placement.post("/allocations", json={C1: placement.allocation_body({}, generation=1),
                                                    C3: placement.allocation_body({rp: {"VCPU": 4}})})
    assert response.status_code == 204
    assert placement.held(C1) == {}
    assert placement.held(C3) == {rp: {"VCPU": 4}}


def test_post_counts_every_consumer_against_capacity_together(placement, rp):
    response = placement.post("/allocations", json={C1: placement.allocation_body({rp: {"VCPU": 4}}),
                                                    C2: placement.allocation_body({rp: {"VCPU": 3}}),
                                                    C3: placement.allocation_body({rp: {"VCPU": 2}})})
    assert "requested 9, used 0, capacity 8" in placement.error(response, 409)


def test_post_is_all_or_nothing(placement, rp, rp2):
    before = placement.generation(rp)
    response = placement.post("/allocations", json={C1: placement.allocation_body({rp: {"VCPU": 1}}),
                                                    C2: placement.allocation_body({rp2: {"DISK_GB": 101}})})
    placement.error(response, 409)
    assert placement.held(C1) == {}
    assert placement.generation(rp) == before


def test_post_with_a_stale_consumer_generation_is_409_and_changes_nothing(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    response = placement.post("/allocations", json={C2: placement.allocation_body({rp: {"VCPU": 1}}),
                                                    C1: placement.allocation_body({rp: {"VCPU": 2}}, 3)})
    assert "expected 1 but got 3" in placement.error(response, 409, "placement.concurrent_update")
    assert placement.held(C2) == {}


def test_post_before_1_28_needs_no_consumer_generation(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    response = placement.post("/allocations", version="1.13", json={
        C1: {"allocations": {rp: {"resources": {"VCPU": 2}}}, "project_id": "p", "user_id": "u"}})
    assert response.status_code == 204
    assert placement.held(C1) == {rp: {"VCPU": 2}}


def test_post_without_consumer_type_from_1_38_is_400(placement, rp):
    entry = placement.allocation_body({rp: {"VCPU": 1}})
    del entry["consumer_type"]
    assert "'consumer_type' is a required property" in placement.error(placement.post("/allocations",
                                                                                      json={C1: entry}), 400)


def test_post_for_an_unknown_provider_is_400(placement, rp):
    response = placement.post("/allocations", json={C1: placement.allocation_body({NO_PROVIDER: {"VCPU": 1}})})
    assert NO_PROVIDER in placement.error(response, 400)


def test_post_keyed_by_a_non_uuid_is_400_naming_it(placement, rp):
    response = placement.post("/allocations", json={"bob": placement.allocation_body({rp: {"VCPU": 1}})})
    assert "'bob' is not a UUID" in placement.error(response, 400)


@pytest.mark.parametrize("body", [{}, [], "x"])
def test_post_without_consumers_is_400(placement, body):
    placement.error(placement.post("/allocations", json=body), 400)


def test_post_is_refused_to_a_non_admin(placement, rp):
    response = placement.post("/allocations", json={C1: placement.allocation_body({rp: {"VCPU": 1}})}, headers=MEMBER)
    placement.error(response, 403)


# GET /resource_providers/{uuid}/allocations

def test_provider_allocations_list_each_consumer_with_its_generation(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1, "MEMORY_MB": 128}})
    placement.allocate(C2, {rp: {"VCPU": 2}})
    placement.allocate(C2, {rp: {"VCPU": 3}}, generation=1)
    assert placement.get(f"/resource_providers/{rp}/allocations").json == {
        "allocations": {C1: {"resources": {"VCPU": 1, "MEMORY_MB": 128}, "consumer_generation": 1},
                        C2: {"resources": {"VCPU": 3}, "consumer_generation": 2}},
        "resource_provider_generation": placement.generation(rp)}


def test_provider_allocations_before_1_28_have_no_consumer_generation(placement, rp):
    placement.allocate(C1, {rp: {"VCPU": 1}})
    assert placement.get(f"/resource_providers/{rp}/allocations", version="1.27").json["allocations"] == {
        C1: {"resources": {"VCPU": 1}}}


def test_provider_without_allocations_has_an_empty_list(placement, rp):
    assert placement.get(f"/resource_providers/{rp}/allocations").json == {
        "allocations": {}, "resource_provider_generation": 1}


def test_provider_allocations_of_an_unknown_provider_are_404(placement):
    assert NO_PROVIDER in placement.error(placement.get(f"/resource_providers/{NO_PROVIDER}/allocations"), 404)


def test_provider_allocations_with_a_query_parameter_are_400(placement, rp):
    placement.error(placement.get(f"/resource_providers/{rp}/allocations?limit=1"), 400)


def test_provider_allocations_are_refused_to_a_non_admin(placement, rp):
    placement.error(placement.get(f"/resource_providers/{rp}/allocations", headers=MEMBER), 403)
