"""/placement/resource_providers/{uuid}/usages and /placement/usages, per microversion."""

from __future__ import annotations

import uuid as uuidlib

import pytest

from blazar_lite.placement import allocations, usages

PROJECT = "project-a"
OTHER_PROJECT = "project-b"


def _allocate(database, provider, amounts, project=PROJECT, user="user-1", consumer_type=None):  # type: ignore[no-untyped-def]
    consumer = str(uuidlib.uuid4())
    with database.transaction() as session:
        allocations.replace_consumer_allocations(session, consumer, {provider: amounts}, project, user,
                                                 consumer_generation=None, consumer_type=consumer_type)
    return consumer


@pytest.fixture
def cn1(placement):  # type: ignore[no-untyped-def]
    return placement.provider("cn1", {"VCPU": 16, "MEMORY_MB": 32768, "DISK_GB": 1000})


@pytest.fixture
def world(database, placement, cn1):  # type: ignore[no-untyped-def]
    """Consumers of project-a: two INSTANCE, one PONY, two without a type (one of another user);
    and one INSTANCE of project-b."""
    _allocate(database, cn1, {"VCPU": 2, "MEMORY_MB": 1024}, consumer_type="INSTANCE")
    _allocate(database, cn1, {"VCPU": 1, "MEMORY_MB": 512}, consumer_type="INSTANCE")
    _allocate(database, cn1, {"DISK_GB": 10}, consumer_type="PONY")
    _allocate(database, cn1, {"VCPU": 4})
    _allocate(database, cn1, {"DISK_GB": 20}, user="user-2")
    _allocate(database, cn1, {"VCPU": 8}, project=OTHER_PROJECT, consumer_type="INSTANCE")
    return cn1


def test_provider_usages_of_a_provider_without_inventory_are_empty(placement):
    uuid = placement.provider("cn1")
    response = placement.get(f"/resource_providers/{uuid}/usages", version="1.0")
    assert response.status_code == 200
    assert response.json == {"resource_provider_generation": 0, "usages": {}}


def test_provider_usages_are_zero_for_every_inventory_class_without_allocations(placement, cn1):
    assert placement.get(f"/resource_providers/{cn1}/usages").json == {
        "resource_provider_generation": 1, "usages": {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}}


def test_provider_usages_sum_the_allocations_of_every_consumer(placement, world):
    body = placement.get(f"/resource_providers/{world}/usages").json
    assert body["usages"] == {"VCPU": 15, "MEMORY_MB": 1536, "DISK_GB": 30}


def test_provider_usages_carry_the_current_generation(placement, world):
    body = placement.get(f"/resource_providers/{world}/usages").json
    assert body["resource_provider_generation"] == placement.generation(world)


def test_provider_usages_count_only_that_provider(database, placement, cn1):
    cn2 = placement.provider("cn2", {"VCPU": 8})
    _allocate(database, cn2, {"VCPU": 3})
    assert placement.get(f"/resource_providers/{cn1}/usages").json["usages"]["VCPU"] == 0
    assert placement.get(f"/resource_providers/{cn2}/usages").json["usages"] == {"VCPU": 3}


def test_provider_usages_of_a_missing_provider_is_404(placement):
    missing = uuidlib.uuid4()
    detail = placement.error(placement.get(f"/resource_providers/{missing}/usages"), 404)
    assert f"No resource provider with uuid {missing} found" in detail


def test_provider_usages_with_a_query_parameter_is_400(placement, cn1):
    assert "x" in placement.error(placement.get(f"/resource_providers/{cn1}/usages?x=1"), 400)


def test_usages_are_absent_before_1_9(placement):
    placement.error(placement.get(f"/usages?project_id={PROJECT}", version="1.8"), 404)


def test_usages_without_project_id_is_400_naming_it(placement):
    assert "project_id" in placement.error(placement.get("/usages", version="1.9"), 400)


@pytest.mark.parametrize("query", ["project_id=", f"project_id={'p' * 256}", f"project_id={PROJECT}&user_id=",
                                   f"project_id={PROJECT}&user_id={'u' * 256}"])
def test_usages_with_an_empty_or_overlong_id_is_400(placement, query):
    detail = placement.error(placement.get(f"/usages?{query}", version="1.9"), 400)
    assert "1 to 255 characters" in detail


def test_usages_with_an_unknown_parameter_is_400_naming_it(placement):
    assert "dummy" in placement.error(placement.get(f"/usages?project_id={PROJECT}&dummy=1", version="1.9"), 400)


def test_usages_with_consumer_type_before_1_38_is_400(placement):
    response = placement.get(f"/usages?project_id={PROJECT}&consumer_type=INSTANCE", version="1.37")
    assert "consumer_type" in placement.error(response, 400)


def test_usages_of_a_project_without_allocations_are_empty(placement):
    assert placement.get("/usages?project_id=nobody", version="1.9").json == {"usages": {}}


def test_usages_before_1_38_sum_the_project_per_class(placement, world):
    response = placement.get(f"/usages?project_id={PROJECT}", version="1.37")
    assert response.json == {"usages": {"VCPU": 7, "MEMORY_MB": 1536, "DISK_GB": 30}}


def test_usages_before_1_38_can_be_limited_to_a_user(placement, world):
    response = placement.get(f"/usages?project_id={PROJECT}&user_id=user-2", version="1.9")
    assert response.json == {"usages": {"DISK_GB": 20}}


def test_usages_from_1_38_group_by_consumer_type_with_consumer_counts(placement, world):
    assert placement.get(f"/usages?project_id={PROJECT}").json == {"usages": {
        "INSTANCE": {"consumer_count": 2, "VCPU": 3, "MEMORY_MB": 1536},
        "PONY": {"consumer_count": 1, "DISK_GB": 10},
        "unknown": {"consumer_count": 2, "VCPU": 4, "DISK_GB": 20}}}


def test_usages_from_1_38_limited_to_one_type_show_only_that_type(placement, world):
    assert placement.get(f"/usages?project_id={PROJECT}&consumer_type=PONY").json == {
        "usages": {"PONY": {"consumer_count": 1, "DISK_GB": 10}}}


def test_usages_of_consumer_type_all_form_one_group(placement, world):
    assert placement.get(f"/usages?project_id={PROJECT}&consumer_type=all").json == {
        "usages": {"all": {"consumer_count": 5, "VCPU": 7, "MEMORY_MB": 1536, "DISK_GB": 30}}}


def test_usages_of_consumer_type_unknown_are_the_untyped_consumers(placement, world):
    assert placement.get(f"/usages?project_id={PROJECT}&consumer_type=unknown").json == {
        "usages": {"unknown": {"consumer_count": 2, "VCPU": 4, "DISK_GB": 20}}}


@pytest.mark.parametrize("consumer_type", ["COW", "ALL", "UNKNOWN"])
def test_usages_of_a_type_nobody_has_are_empty(placement, world, consumer_type):
    assert placement.get(f"/usages?project_id={PROJECT}&consumer_type={consumer_type}").json == {"usages": {}}


def test_usages_of_consumer_type_all_for_a_project_without_allocations_are_empty(placement):
    assert placement.get("/usages?project_id=nobody&consumer_type=all").json == {"usages": {}}


def test_usages_from_1_38_can_be_limited_to_a_user(placement, world):
    assert placement.get(f"/usages?project_id={PROJECT}&user_id=user-2").json == {
        "usages": {"unknown": {"consumer_count": 1, "DISK_GB": 20}}}


@pytest.mark.parametrize("consumer_type", ["pony", "All", "IN-STANCE", ""])
def test_usages_with_a_malformed_consumer_type_is_400(placement, consumer_type):
    response = placement.get(f"/usages?project_id={PROJECT}&consumer_type={consumer_type}")
    assert "consumer_type" in placement.error(response, 400)


def test_project_usages_service_filters_by_consumer_type(database, world):
    with database.read() as session:
        assert usages.project_usages(session, PROJECT, consumer_type="INSTANCE") == {"VCPU": 3, "MEMORY_MB": 1536}
        assert usages.project_usages(session, PROJECT, consumer_type="unknown") == {"VCPU": 4, "DISK_GB": 20}
