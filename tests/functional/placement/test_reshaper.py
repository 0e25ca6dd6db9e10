"""POST /placement/reshaper: inventories and allocations replaced together, and every error path."""

from __future__ import annotations

import pytest

C1 = "11111111-1111-1111-1111-111111111111"
C2 = "22222222-2222-2222-2222-222222222222"
NO_PROVIDER = "99999999-9999-9999-9999-999999999999"


@pytest.fixture
def tree(placement):  # type: ignore[no-untyped-def]
    """A compute node with 8 VCPU and 1024 MEMORY_MB, C1 holding 2 VCPU on it, and an empty child."""
    parent = placement.provider("cn", {"VCPU": 8, "MEMORY_MB": 1024})
    child = placement.provider("cn_numa0", parent=parent)
    assert placement.allocate(C1, {parent: {"VCPU": 2, "MEMORY_MB": 256}}).status_code == 204
    return parent, child


def _inventories(placement, rp):  # type: ignore[no-untyped-def]
    return {rc: inv["total"] for rc, inv in placement.get(f"/resource_providers/{rp}/inventories")
            .json["inventories"].items()}


def _move_vcpu_body(placement, parent, child, vcpu_on_child=2):  # type: ignore[no-untyped-def]
    """Move the VCPU inventory and C1's VCPU from the parent to the child."""
    return {
        "inventories": {
            parent: {"resource_provider_generation": placement.generation(parent),
                     "inventories": {"MEMORY_MB": {"total": 1024}}},
            child: {"resource_provider_generation": placement.generation(child),
                    "inventories": {"VCPU": {"total": 8}}}},
        "allocations": {C1: placement.allocation_body({parent: {"MEMORY_MB": 256}, child: {"VCPU": vcpu_on_child}},
                                                      generation=1)}}


def test_reshape_moves_inventory_and_allocations_to_a_child(placement, tree):
    parent, child = tree
    generations = (placement.generation(parent), placement.generation(child))
    response = placement.post("/reshaper", json=_move_vcpu_body(placement, parent, child))
    assert response.status_code == 204
    assert _inventories(placement, parent) == {"MEMORY_MB": 1024}
    assert _inventories(placement, child) == {"VCPU": 8}
    assert placement.held(C1) == {parent: {"MEMORY_MB": 256}, child: {"VCPU": 2}}
    assert placement.get(f"/allocations/{C1}").json["consumer_generation"] == 2
    assert placement.generation(parent) > generations[0]
    assert placement.generation(child) > generations[1]


def test_reshape_is_absent_before_1_30(placement, tree):
    parent, child = tree
    body = _move_vcpu_body(placement, parent, child)
    assert placement.post("/reshaper", json=body, version="1.29").status_code == 404


def test_reshape_with_only_inventories_changes_them(placement, tree):
    parent, _ = tree
    response = placement.post("/reshaper", json={"inventories": {parent: {
        "resource_provider_generation": placement.generation(parent),
        "inventories": {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 1024}}}}, "allocations": {}})
    assert response.status_code == 204
    assert _inventories(placement, parent) == {"VCPU": 16, "MEMORY_MB": 1024}


def test_reshape_with_a_stale_provider_generation_is_409_and_changes_nothing(placement, tree):
    parent, child = tree
    body = _move_vcpu_body(placement, parent, child)
    body["inventories"][child]["resource_provider_generation"] += 5
    detail = placement.error(placement.post("/reshaper", json=body), 409, "placement.concurrent_update")
    assert child in detail
    assert _inventories(placement, parent) == {"VCPU": 8, "MEMORY_MB": 1024}
    assert placement.held(C1) == {parent: {"VCPU": 2, "MEMORY_MB": 256}}


def test_reshape_with_a_stale_consumer_generation_is_409_and_changes_nothing(placement, tree):
    parent, child = tree
    body = _move_vcpu_body(placement, parent, child)
    body["allocations"][C1]["consumer_generation"] = 7
    placement.error(placement.post("/reshaper", json=body), 409, "placement.concurrent_update")
    assert _inventories(placement, child) == {}


def test_reshape_removing_inventory_another_consumer_uses_is_409_in_use(placement, tree):
    parent, child = tree
    placement.allocate(C2, {parent: {"VCPU": 1}})
    placement.error(placement.post("/reshaper", json=_move_vcpu_body(placement, parent, child)), 409,
                    "placement.inventory.inuse")
    assert placement.held(C1) == {parent: {"VCPU": 2, "MEMORY_MB": 256}}
    assert _inventories(placement, child) == {}


def test_reshape_allocations_beyond_the_new_inventory_are_409(placement, tree):
    parent, child = tree
    response = placement.post("/reshaper", json=_move_vcpu_body(placement, parent, child, vcpu_on_child=9))
    detail = placement.error(response, 409)
    assert "capacity 8" in detail and child in detail
    assert _inventories(placement, parent) == {"VCPU": 8, "MEMORY_MB": 1024}


def test_reshape_for_an_unknown_provider_is_400(placement, tree):
    response = placement.post("/reshaper", json={"inventories": {NO_PROVIDER: {
        "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 1}}}}, "allocations": {}})
    assert NO_PROVIDER in placement.error(response, 400)


def test_reshape_with_an_unknown_class_is_400_naming_it(placement, tree):
    parent, _ = tree
    response = placement.post("/reshaper", json={"inventories": {parent: {
        "resource_provider_generation": placement.generation(parent),
        "inventories": {"CUSTOM_NOPE": {"total": 1}}}}, "allocations": {}})
    assert "CUSTOM_NOPE" in placement.error(response, 400)


@pytest.mark.parametrize("body,field", [
    ({"allocations": {}}, "inventories"),
    ({"inventories": {}, "allocations": {}}, "inventories"),
    ({"inventories": {"x": {}}, "allocations": {}}, "inventories.x"),
])
def test_reshape_with_malformed_inventories_is_400_naming_the_field(placement, body, field):
    assert field in placement.error(placement.post("/reshaper", json=body), 400)


def test_reshape_without_allocations_is_400(placement, tree):
    parent, _ = tree
    response = placement.post("/reshaper", json={"inventories": {parent: {
        "resource_provider_generation": 0, "inventories": {}}}})
    assert "'allocations' is a required property" in placement.error(response, 400)


def test_reshape_without_consumer_type_from_1_38_is_400(placement, tree):
    parent, child = tree
    body = _move_vcpu_body(placement, parent, child)
    del body["allocations"][C1]["consumer_type"]
    assert "consumer_type" in placement.error(placement.post("/reshaper", json=body), 400)


def test_reshape_with_consumer_type_before_1_38_is_400(placement, tree):
    parent, child = tree
    body = _move_vcpu_body(placement, parent, child)
    assert "consumer_type" in placement.error(placement.post("/reshaper", json=body, version="1.36"), 400)


def test_reshape_before_1_38_keeps_consumer_types(placement, tree):
    parent, child = tree
    body = _move_vcpu_body(placement, parent, child)
    del body["allocations"][C1]["consumer_type"]
    assert placement.post("/reshaper", json=body, version="1.30").status_code == 204
    assert placement.get(f"/allocations/{C1}").json["consumer_type"] == "INSTANCE"


def test_reshape_is_refused_to_a_non_admin(placement, tree):
    parent, child = tree
    response = placement.post("/reshaper", json=_move_vcpu_body(placement, parent, child),
                              headers={"X-Roles": "member"})
    placement.error(response, 403)
