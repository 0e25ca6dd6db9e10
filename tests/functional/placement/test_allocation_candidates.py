"""GET /placement/allocation_candidates: every query parameter, every 400, and the response shape
of each microversion."""

from __future__ import annotations

import uuid as uuidlib

import pytest

AGG_A = "aaaaaaaa-0000-4000-8000-000000000001"
AGG_B = "bbbbbbbb-0000-4000-8000-000000000002"
PATH = "/allocation_candidates"


def candidates(placement, query: str, version: str = "1.39") -> dict:  # type: ignore[no-untyped-def]
    response = placement.get(f"{PATH}?{query}", version=version)
    assert response.status_code == 200, response.json
    return response.json


def refused(placement, query: str, version: str = "1.39",  # type: ignore[no-untyped-def]
            code: str = "placement.undefined_code") -> str:
    return placement.error(placement.get(f"{PATH}?{query}", version=version), 400, code)


def set_traits(placement, uuid: str, *names: str) -> None:  # type: ignore[no-untyped-def]
    for name in names:
        if name.startswith("CUSTOM_"):
            placement.put(f"/traits/{name}")
    response = placement.put(f"/resource_providers/{uuid}/traits",
                             json={"traits": list(names), "resource_provider_generation": placement.generation(uuid)})
    assert response.status_code == 200, response.json


def set_aggregates(placement, uuid: str, *aggregates: str) -> None:  # type: ignore[no-untyped-def]
    response = placement.put(f"/resource_providers/{uuid}/aggregates",
                             json={"aggregates": list(aggregates),
                                   "resource_provider_generation": placement.generation(uuid)})
    assert response.status_code == 200, response.json


def requests_by_provider(body: dict) -> list[dict[str, dict[str, int]]]:
    """The allocation requests (1.12+ form) as {provider uuid: resources}."""
    return [{rp: entry["resources"] for rp, entry in ar["allocations"].items()} for ar in body["allocation_requests"]]


@pytest.fixture
def compute(placement):  # type: ignore[no-untyped-def]
    """A compute node with a child accelerator provider."""
    placement.put("/resource_classes/CUSTOM_FPGA")
    root = placement.provider("cn1", {"VCPU": {"total": 8, "allocation_ratio": 2.0},
                                      "MEMORY_MB": {"total": 4096, "reserved": 512}, "DISK_GB": 100})
    child = placement.provider("cn1-fpga", {"CUSTOM_FPGA": 2}, parent=root)
    return root, child


# Route and microversions.

def test_the_route_is_absent_before_1_10(placement, compute):
    placement.error(placement.get(f"{PATH}?resources=VCPU:1", version="1.9"), 404)


def test_1_10_lists_allocations_with_provider_objects(placement, compute):
    root, _ = compute
    body = candidates(placement, "resources=VCPU:1,MEMORY_MB:256", "1.10")
    assert body["allocation_requests"] == [
        {"allocations": [{"resource_provider": {"uuid": root}, "resources": {"VCPU": 1, "MEMORY_MB": 256}}]}]


def test_before_1_17_summaries_list_only_the_requested_classes_without_traits(placement, compute):
    root, _ = compute
    body = candidates(placement, "resources=VCPU:1", "1.16")
    assert body["provider_summaries"] == {root: {"resources": {"VCPU": {"capacity": 16, "used": 0}}}}


def test_1_12_keys_allocations_by_provider(placement, compute):
    root, _ = compute
    body = candidates(placement, "resources=VCPU:1", "1.12")
    assert body["allocation_requests"] == [{"allocations": {root: {"resources": {"VCPU": 1}}}}]


def test_1_17_adds_traits_to_summaries(placement, compute):
    root, _ = compute
    set_traits(placement, root, "HW_CPU_X86_AVX2", "CUSTOM_RACK_1")
    body = candidates(placement, "resources=VCPU:1", "1.17")
    assert body["provider_summaries"][root]["traits"] == ["CUSTOM_RACK_1", "HW_CPU_X86_AVX2"]


def test_1_27_summaries_list_every_class_of_the_provider(placement, compute):
    root, _ = compute
    before = candidates(placement, "resources=VCPU:1", "1.26")["provider_summaries"][root]["resources"]
    after = candidates(placement, "resources=VCPU:1", "1.27")["provider_summaries"][root]["resources"]
    assert set(before) == {"VCPU"}
    assert after == {"VCPU": {"capacity": 16, "used": 0}, "MEMORY_MB": {"capacity": 3584, "used": 0},
                     "DISK_GB": {"capacity": 100, "used": 0}}


def test_1_29_summaries_cover_the_whole_tree_with_parent_and_root(placement, compute):
    root, child = compute
    summaries = candidates(placement, "resources=VCPU:1", "1.29")["provider_summaries"]
    assert set(summaries) == {root, child}
    assert summaries[child]["parent_provider_uuid"] == root
    assert summaries[child]["root_provider_uuid"] == root
    assert summaries[root]["parent_provider_uuid"] is None


def test_1_29_spreads_the_unnumbered_group_over_the_tree(placement, compute):
    root, child = compute
    body = candidates(placement, "resources=VCPU:1,CUSTOM_FPGA:1", "1.29")
    assert requests_by_provider(body) == [{root: {"VCPU": 1}, child: {"CUSTOM_FPGA": 1}}]


def test_before_1_29_a_request_takes_from_one_provider_per_tree(placement, compute):
    body = candidates(placement, "resources=VCPU:1,CUSTOM_FPGA:1", "1.28")
    assert body == {"allocation_requests": [], "provider_summaries": {}}


def test_before_1_29_summaries_cover_only_the_providers_used(placement, compute):
    root, _ = compute
    assert set(candidates(placement, "resources=VCPU:1", "1.28")["provider_summaries"]) == {root}


def test_1_34_adds_mappings_from_group_suffix_to_providers(placement, compute):
    root, child = compute
    body = candidates(placement, "resources=VCPU:1&resources1=CUSTOM_FPGA:1", "1.34")
    assert body["allocation_requests"][0]["mappings"] == {"": [root], "1": [child]}
    assert "mappings" not in candidates(placement, "resources=VCPU:1", "1.33")["allocation_requests"][0]


def test_the_answer_is_json_and_not_cached(placement, compute):
    response = placement.get(f"{PATH}?resources=VCPU:1", version="1.15")
    assert response.mimetype == "application/json"
    assert response.headers["Cache-Control"] == "no-cache"
    assert "Last-Modified" in response.headers


def test_nothing_fits_is_an_empty_answer(placement, compute):
    assert candidates(placement, "resources=VCPU:17") == {"allocation_requests": [], "provider_summaries": {}}


def test_a_reader_without_the_admin_role_is_forbidden(placement, compute):
    response = placement.get(f"{PATH}?resources=VCPU:1", headers={"X-Roles": "member"})
    assert response.status_code == 403


# resources

def test_capacity_and_used_reflect_allocations(placement, compute):
    root, _ = compute
    response = placement.allocate(str(uuidlib.uuid4()), {root: {"VCPU": 10}})
    assert response.status_code == 204, response.json
    body = candidates(placement, "resources=VCPU:6")
    assert body["provider_summaries"][root]["resources"]["VCPU"] == {"capacity": 16, "used": 10}
    assert candidates(placement, "resources=VCPU:7")["allocation_requests"] == []


def test_min_unit_max_unit_and_step_size_are_honoured(placement):
    uuid = placement.provider("cn", {"DISK_GB": {"total": 100, "min_unit": 10, "max_unit": 50, "step_size": 5}})
    assert candidates(placement, "resources=DISK_GB:5")["allocation_requests"] == []
    assert candidates(placement, "resources=DISK_GB:55")["allocation_requests"] == []
    assert candidates(placement, "resources=DISK_GB:12")["allocation_requests"] == []
    assert requests_by_provider(candidates(placement, "resources=DISK_GB:15")) == [{uuid: {"DISK_GB": 15}}]


def test_an_unknown_resource_class_is_400(placement, compute):
    assert "CUSTOM_NOPE" in refused(placement, "resources=CUSTOM_NOPE:1")


@pytest.mark.parametrize("query", ["resources=VCPU", "resources=VCPU:0", "resources=VCPU:x", "resources="])
def test_a_malformed_resources_parameter_is_400(placement, query):
    assert "resources" in refused(placement, query).lower()


def test_resources_is_required_before_1_25(placement):
    assert "resources" in refused(placement, "limit=1", "1.24")


# required

def test_required_traits_filter_providers(placement):
    fast = placement.provider("fast", {"VCPU": 4})
    placement.provider("slow", {"VCPU": 4})
    set_traits(placement, fast, "HW_CPU_X86_AVX2")
    assert requests_by_provider(candidates(placement, "resources=VCPU:1&required=HW_CPU_X86_AVX2")) == \
        [{fast: {"VCPU": 1}}]


def test_forbidden_traits_exclude_providers_from_1_22(placement):
    fast = placement.provider("fast", {"VCPU": 4})
    slow = placement.provider("slow", {"VCPU": 4})
    set_traits(placement, fast, "HW_CPU_X86_AVX2")
    assert requests_by_provider(candidates(placement, "resources=VCPU:1&required=!HW_CPU_X86_AVX2", "1.22")) == \
        [{slow: {"VCPU": 1}}]


def test_forbidden_traits_are_400_before_1_22(placement, compute):
    assert "1.22" in refused(placement, "resources=VCPU:1&required=!HW_CPU_X86_AVX2", "1.21")


def test_any_of_traits_from_1_39(placement):
    a = placement.provider("a", {"VCPU": 4})
    b = placement.provider("b", {"VCPU": 4})
    placement.provider("c", {"VCPU": 4})
    set_traits(placement, a, "HW_CPU_X86_AVX2")
    set_traits(placement, b, "HW_CPU_X86_SSE42")
    body = candidates(placement, "resources=VCPU:1&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE42")
    assert requests_by_provider(body) == [{a: {"VCPU": 1}}, {b: {"VCPU": 1}}]


def test_any_of_traits_are_400_before_1_39(placement, compute):
    assert "1.39" in refused(placement, "resources=VCPU:1&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE42", "1.38")


def test_required_is_an_unknown_parameter_before_1_17(placement, compute):
    assert "required" in refused(placement, "resources=VCPU:1&required=HW_CPU_X86_AVX2", "1.16")


def test_an_unknown_trait_is_400(placement, compute):
    assert "CUSTOM_NOPE" in refused(placement, "resources=VCPU:1&required=CUSTOM_NOPE")


def test_a_trait_both_required_and_forbidden_is_400(placement, compute):
    assert "Conflicting" in refused(placement, "resources=VCPU:1&required=HW_CPU_X86_AVX2,!HW_CPU_X86_AVX2")


def test_required_traits_of_the_unnumbered_group_count_on_providers_that_supply_it(placement, compute):
    root, child = compute
    set_traits(placement, child, "CUSTOM_FAST")
    assert candidates(placement, "resources=VCPU:1&required=CUSTOM_FAST")["allocation_requests"] == []
    body = candidates(placement, "resources=VCPU:1,CUSTOM_FPGA:1&required=CUSTOM_FAST")
    assert requests_by_provider(body) == [{root: {"VCPU": 1}, child: {"CUSTOM_FPGA": 1}}]


# member_of

def test_member_of_filters_by_aggregate_from_1_21(placement):
    a = placement.provider("a", {"VCPU": 4})
    placement.provider("b", {"VCPU": 4})
    set_aggregates(placement, a, AGG_A)
    assert requests_by_provider(candidates(placement, f"resources=VCPU:1&member_of={AGG_A}", "1.21")) == \
        [{a: {"VCPU": 1}}]


def test_member_of_in_accepts_any_of_the_aggregates(placement):
    a = placement.provider("a", {"VCPU": 4})
    b = placement.provider("b", {"VCPU": 4})
    placement.provider("c", {"VCPU": 4})
    set_aggregates(placement, a, AGG_A)
    set_aggregates(placement, b, AGG_B)
    assert len(candidates(placement, f"resources=VCPU:1&member_of=in:{AGG_A},{AGG_B}")["allocation_requests"]) == 2


def test_member_of_on_the_root_spans_the_tree(placement, compute):
    root, child = compute
    set_aggregates(placement, root, AGG_A)
    body = candidates(placement, f"resources=CUSTOM_FPGA:1&member_of={AGG_A}")
    assert requests_by_provider(body) == [{child: {"CUSTOM_FPGA": 1}}]


def test_forbidden_member_of_excludes_from_1_32(placement):
    a = placement.provider("a", {"VCPU": 4})
    b = placement.provider("b", {"VCPU": 4})
    set_aggregates(placement, a, AGG_A)
    assert requests_by_provider(candidates(placement, f"resources=VCPU:1&member_of=!{AGG_A}", "1.32")) == \
        [{b: {"VCPU": 1}}]


def test_an_unknown_aggregate_matches_nothing(placement, compute):
    assert candidates(placement, f"resources=VCPU:1&member_of={AGG_B}")["allocation_requests"] == []


def test_member_of_is_an_unknown_parameter_before_1_21(placement, compute):
    assert "member_of" in refused(placement, f"resources=VCPU:1&member_of={AGG_A}", "1.20")


def test_several_member_of_are_400_before_1_24(placement, compute):
    assert "1.24" in refused(placement, f"resources=VCPU:1&member_of={AGG_A}&member_of={AGG_B}", "1.23")


def test_forbidden_member_of_is_400_before_1_32(placement, compute):
    assert "1.32" in refused(placement, f"resources=VCPU:1&member_of=!{AGG_A}", "1.31")


@pytest.mark.parametrize("value", ["not-a-uuid", f"{AGG_A},{AGG_B}"])
def test_a_malformed_member_of_is_400(placement, compute, value):
    assert "member_of" in refused(placement, f"resources=VCPU:1&member_of={value}")


# in_tree

def test_in_tree_restricts_the_search_to_one_tree(placement, compute):
    root, child = compute
    other = placement.provider("cn2", {"VCPU": 8})
    assert requests_by_provider(candidates(placement, f"resources=VCPU:1&in_tree={child}", "1.31")) == \
        [{root: {"VCPU": 1}}]
    assert requests_by_provider(candidates(placement, f"resources=VCPU:1&in_tree={other}")) == [{other: {"VCPU": 1}}]


def test_in_tree_naming_an_unknown_provider_matches_nothing(placement, compute):
    body = candidates(placement, f"resources=VCPU:1&in_tree={uuidlib.uuid4()}")
    assert body == {"allocation_requests": [], "provider_summaries": {}}


def test_a_malformed_in_tree_is_400(placement, compute):
    assert "in_tree" in refused(placement, "resources=VCPU:1&in_tree=nope")


def test_in_tree_is_an_unknown_parameter_before_1_31(placement, compute):
    root, _ = compute
    assert "in_tree" in refused(placement, f"resources=VCPU:1&in_tree={root}", "1.30")


# Granular groups and group_policy

@pytest.fixture
def two_nics(placement):  # type: ignore[no-untyped-def]
    root = placement.provider("cn", {"VCPU": 8})
    pf1 = placement.provider("pf1", {"SRIOV_NET_VF": 2}, parent=root)
    pf2 = placement.provider("pf2", {"SRIOV_NET_VF": 2}, parent=root)
    return root, pf1, pf2


def test_a_granular_group_is_satisfied_by_one_provider_from_1_25(placement, two_nics):
    root, pf1, pf2 = two_nics
    body = candidates(placement, "resources=VCPU:1&resources1=SRIOV_NET_VF:2", "1.29")
    assert requests_by_provider(body) == [{root: {"VCPU": 1}, pf1: {"SRIOV_NET_VF": 2}},
                                          {root: {"VCPU": 1}, pf2: {"SRIOV_NET_VF": 2}}]


def test_group_policy_isolate_separates_granular_groups(placement, two_nics):
    _, pf1, pf2 = two_nics
    body = candidates(placement, "resources1=SRIOV_NET_VF:1&resources2=SRIOV_NET_VF:1&group_policy=isolate")
    assert [ar["mappings"] for ar in body["allocation_requests"]] == [{"1": [pf1], "2": [pf2]},
                                                                      {"1": [pf2], "2": [pf1]}]


def test_group_policy_none_lets_granular_groups_share_a_provider(placement, two_nics):
    _, pf1, _ = two_nics
    body = candidates(placement, "resources1=SRIOV_NET_VF:1&resources2=SRIOV_NET_VF:1&group_policy=none")
    assert len(body["allocation_requests"]) == 4
    assert {pf1: {"resources": {"SRIOV_NET_VF": 2}}} in [ar["allocations"] for ar in body["allocation_requests"]]


def test_several_granular_groups_without_group_policy_are_400(placement, two_nics):
    assert "group_policy" in refused(placement, "resources1=SRIOV_NET_VF:1&resources2=SRIOV_NET_VF:1")


def test_an_unknown_group_policy_is_400(placement, two_nics):
    assert "group_policy" in refused(placement, "resources1=SRIOV_NET_VF:1&group_policy=spread")


def test_granular_groups_are_unknown_parameters_before_1_25(placement, two_nics):
    assert "resources1" in refused(placement, "resources=VCPU:1&resources1=SRIOV_NET_VF:1", "1.24")


def test_string_suffixes_name_groups_from_1_33(placement, two_nics):
    body = candidates(placement, "resources_NIC=SRIOV_NET_VF:1&resources=VCPU:1")
    assert [set(ar["mappings"]) for ar in body["allocation_requests"]] == [{"", "_NIC"}] * 2


def test_string_suffixes_are_unknown_parameters_before_1_33(placement, two_nics):
    assert "resources_NIC" in refused(placement, "resources=VCPU:1&resources_NIC=SRIOV_NET_VF:1", "1.32")


def test_a_granular_group_needs_its_own_resources_before_1_36(placement, two_nics):
    assert "required1" in refused(placement, "resources=VCPU:1&required1=HW_NIC_SRIOV", "1.35")


# limit

def test_limit_truncates_the_requests_and_their_summaries_from_1_16(placement):
    first = placement.provider("a", {"VCPU": 4})
    placement.provider("b", {"VCPU": 4})
    body = candidates(placement, "resources=VCPU:1&limit=1", "1.16")
    assert requests_by_provider(body) == [{first: {"VCPU": 1}}]
    assert set(body["provider_summaries"]) == {first}


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_limit_that_is_not_a_positive_integer_is_400(placement, compute, value):
    assert "limit" in refused(placement, f"resources=VCPU:1&limit={value}")


def test_limit_is_an_unknown_parameter_before_1_16(placement, compute):
    assert "limit" in refused(placement, "resources=VCPU:1&limit=1", "1.15")


# root_required

def test_root_required_checks_the_root_from_1_35(placement, compute):
    root, child = compute
    set_traits(placement, root, "CUSTOM_GOLD")
    other = placement.provider("cn2", {"CUSTOM_FPGA": 1})
    assert requests_by_provider(candidates(placement, "resources=CUSTOM_FPGA:1&root_required=CUSTOM_GOLD", "1.35")) \
        == [{child: {"CUSTOM_FPGA": 1}}]
    assert requests_by_provider(candidates(placement, "resources=CUSTOM_FPGA:1&root_required=!CUSTOM_GOLD")) \
        == [{other: {"CUSTOM_FPGA": 1}}]


def test_root_required_is_an_unknown_parameter_before_1_35(placement, compute):
    assert "root_required" in refused(placement, "resources=VCPU:1&root_required=HW_CPU_X86_AVX2", "1.34")


@pytest.mark.parametrize("value", ["in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE42", "HW_CPU_X86_AVX2,!HW_CPU_X86_AVX2",
                                   "CUSTOM_NOPE"])
def test_a_bad_root_required_is_400(placement, compute, value):
    assert refused(placement, f"resources=VCPU:1&root_required={value}")


def test_root_required_given_twice_is_400(placement, compute):
    detail = placement.error(placement.get(
        f"{PATH}?resources=VCPU:1&root_required=HW_CPU_X86_AVX2&root_required=HW_CPU_X86_SSE42"), 400,
        "placement.query.duplicate_key")
    assert "root_required" in detail


# same_subtree

@pytest.fixture
def numa(placement):  # type: ignore[no-untyped-def]
    """A host with two NUMA nodes, each with VCPU and a NIC below it; only numa0 is marked."""
    root = placement.provider("host")
    numa0 = placement.provider("numa0", {"VCPU": 4}, parent=root)
    numa1 = placement.provider("numa1", {"VCPU": 4}, parent=root)
    nic0 = placement.provider("nic0", {"SRIOV_NET_VF": 2}, parent=numa0)
    nic1 = placement.provider("nic1", {"SRIOV_NET_VF": 2}, parent=numa1)
    set_traits(placement, numa0, "CUSTOM_NUMA_MARKED")
    return numa0, numa1, nic0, nic1


def test_same_subtree_keeps_groups_under_one_provider_from_1_36(placement, numa):
    numa0, numa1, nic0, nic1 = numa
    body = candidates(placement, "resources_CPU=VCPU:1&resources_NIC=SRIOV_NET_VF:1&group_policy=none"
                                 "&same_subtree=_CPU,_NIC", "1.36")
    assert [ar["mappings"] for ar in body["allocation_requests"]] == [{"_CPU": [numa0], "_NIC": [nic0]},
                                                                      {"_CPU": [numa1], "_NIC": [nic1]}]


def test_a_resourceless_group_in_same_subtree_maps_without_allocating(placement, numa):
    numa0, _, nic0, _ = numa
    body = candidates(placement, "resources_NIC=SRIOV_NET_VF:1&required_NUMA=CUSTOM_NUMA_MARKED&group_policy=none"
                                 "&same_subtree=_NIC,_NUMA")
    assert body["allocation_requests"] == [{"allocations": {nic0: {"resources": {"SRIOV_NET_VF": 1}}},
                                            "mappings": {"_NIC": [nic0], "_NUMA": [numa0]}}]


def test_same_subtree_is_an_unknown_parameter_before_1_36(placement, numa):
    assert "same_subtree" in refused(
        placement, "resources_A=VCPU:1&resources_B=SRIOV_NET_VF:1&group_policy=none&same_subtree=_A,_B", "1.35")


@pytest.mark.parametrize(("query", "words", "code"), [
    ("resources=VCPU:1&resources1=SRIOV_NET_VF:1&same_subtree=,1", "same_subtree", "placement.query.bad_value"),
    ("resources1=VCPU:1&same_subtree=1,2", "Real suffixes", "placement.query.bad_value"),
    ("resources1=VCPU:1&required2=CUSTOM_NUMA_MARKED&group_policy=none", "Resourceless",
     "placement.query.bad_value"),
    ("required1=CUSTOM_NUMA_MARKED&same_subtree=1", "at least one resources", "placement.query.missing_value"),
])
def test_a_bad_same_subtree_is_400(placement, numa, query, words, code):
    assert words in refused(placement, query, code=code)


# The query string itself

def test_an_unknown_parameter_is_400(placement, compute):
    assert "bogus" in refused(placement, "resources=VCPU:1&bogus=1")


def test_a_parameter_given_twice_is_400(placement, compute):
    assert "resources" in refused(placement, "resources=VCPU:1&resources=VCPU:2")
