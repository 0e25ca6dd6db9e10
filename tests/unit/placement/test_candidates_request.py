"""The GET /allocation_candidates query string: which keys each microversion knows, and every
way a value can be refused (400 naming the parameter)."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from blazar_lite.exceptions import BadRequest
from blazar_lite.placement.candidates_request import parse_candidates_request

AGG = "2d2d6b1e-5e3b-4a55-9b8e-64a9f43f8b1a"
RP = "7f4a2c1e-0b8d-4c8e-9f6a-1d2e3f4a5b6c"


def parse(query: str, minor: int = 39):  # type: ignore[no-untyped-def]
    return parse_candidates_request(parse_qs(query, keep_blank_values=True), minor)


def refused(query: str, minor: int = 39) -> str:
    with pytest.raises(BadRequest) as caught:
        parse(query, minor)
    return caught.value.message


def test_the_unnumbered_group_collects_resources_traits_aggregates_and_tree():
    request = parse(f"resources=VCPU:2,MEMORY_MB:512&required=HW_CPU_X86_AVX,!CUSTOM_SLOW&member_of={AGG}"
                    f"&in_tree={RP}")
    group = request.groups[""]
    assert group.resources == {"VCPU": 2, "MEMORY_MB": 512}
    assert group.traits.required == {"HW_CPU_X86_AVX"} and group.traits.forbidden == {"CUSTOM_SLOW"}
    assert group.member_of.any_of == [{AGG}]
    assert group.in_tree == RP
    assert not group.same_provider


def test_granular_groups_are_keyed_by_suffix_after_the_unnumbered_group():
    request = parse("resources2=VF:1&resources=VCPU:1&resources1=VF:1&group_policy=isolate")
    assert list(request.groups) == ["", "2", "1"]
    assert request.groups["1"].same_provider
    assert request.group_policy == "isolate"


def test_string_suffixes_are_groups_from_1_33():
    request = parse("resources_NIC=VF:1&required_NIC=CUSTOM_PHYSNET_A", 33)
    assert request.groups["_NIC"].resources == {"VF": 1}
    assert request.groups["_NIC"].traits.required == {"CUSTOM_PHYSNET_A"}


def test_string_suffixes_are_unknown_parameters_before_1_33():
    assert "resources_NIC" in refused("resources=VCPU:1&resources_NIC=VF:1", 32)


def test_granular_groups_are_unknown_parameters_before_1_25():
    assert "resources1" in refused("resources=VCPU:1&resources1=VF:1", 24)


def test_a_suffix_longer_than_64_characters_is_an_unknown_parameter():
    assert "resources" + "x" * 65 in refused("resources=VCPU:1&resources" + "x" * 65 + "=VF:1")


def test_resources_is_required_before_1_25():
    assert "'resources' is a required parameter" in refused("limit=1", 24)


def test_no_group_at_all_is_refused():
    assert "At least one request group" in refused("limit=1", 25)


def test_more_than_one_granular_group_needs_a_group_policy():
    assert "group_policy" in refused("resources1=VCPU:1&resources2=VF:1")


def test_one_granular_group_needs_no_group_policy():
    assert parse("resources1=VCPU:1").group_policy is None


def test_an_unknown_group_policy_is_refused():
    assert "group_policy must be one of none, isolate" in refused("resources=VCPU:1&group_policy=pack")


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", ""])
def test_limit_must_be_a_positive_integer(value):
    assert "limit must be a positive integer" in refused(f"resources=VCPU:1&limit={value}")


def test_limit_is_an_unknown_parameter_before_1_16():
    assert "limit" in refused("resources=VCPU:1&limit=1", 15)


def test_limit_is_parsed():
    assert parse("resources=VCPU:1&limit=5").limit == 5


@pytest.mark.parametrize(("query", "words"), [
    ("resources=VCPU", "Badly formed resources parameter"),
    ("resources=VCPU:x", "expected positive integer amount"),
    ("resources=VCPU:0", "requires amount >= 1"),
    ("resources=", "Badly formed resources parameter"),
    ("resources=VCPU:1&resources1=VF", "Badly formed resources1 parameter"),
])
def test_a_malformed_resources_value_is_refused(query, words):
    assert words in refused(query)


def test_a_bad_amount_in_a_granular_group_names_its_parameter():
    assert "resources1" in refused("resources=VCPU:1&resources1=VF:0")


def test_a_parameter_given_twice_is_refused():
    assert "resources may be given only once" in refused("resources=VCPU:1&resources=VCPU:2")


def test_required_is_an_unknown_parameter_before_1_17():
    assert "required" in refused("resources=VCPU:1&required=HW_CPU_X86_AVX", 16)


def test_forbidden_traits_need_1_22():
    assert "1.22" in refused("resources=VCPU:1&required=!CUSTOM_A", 21)


def test_any_of_traits_need_1_39():
    assert "1.39" in refused("resources=VCPU:1&required=in:CUSTOM_A,CUSTOM_B", 38)


def test_any_of_traits_are_one_group_each():
    request = parse("resources=VCPU:1&required=in:CUSTOM_A,CUSTOM_B&required=CUSTOM_C")
    assert request.groups[""].traits.any_of == [{"CUSTOM_A", "CUSTOM_B"}]
    assert request.groups[""].traits.required == {"CUSTOM_C"}


def test_before_1_39_the_last_required_parameter_wins():
    request = parse("resources=VCPU:1&required=CUSTOM_A&required=CUSTOM_B", 38)
    assert request.groups[""].traits.required == {"CUSTOM_B"}


def test_a_trait_both_required_and_forbidden_is_refused():
    assert "Conflicting required and forbidden traits" in refused("resources=VCPU:1&required=CUSTOM_A,!CUSTOM_A")


def test_an_any_of_group_whose_every_trait_is_forbidden_is_refused():
    message = refused("resources=VCPU:1&required=in:CUSTOM_A,CUSTOM_B&required=!CUSTOM_A,!CUSTOM_B")
    assert "Conflicting required and forbidden traits" in message and "required" in message


def test_an_empty_trait_name_is_refused():
    assert "empty trait name" in refused("resources=VCPU:1&required=CUSTOM_A,")


def test_member_of_is_an_unknown_parameter_before_1_21():
    assert "member_of" in refused(f"resources=VCPU:1&member_of={AGG}", 20)


def test_several_member_of_need_1_24():
    assert "1.24" in refused(f"resources=VCPU:1&member_of={AGG}&member_of={AGG}", 23)


def test_forbidden_member_of_needs_1_32():
    assert "1.32" in refused(f"resources=VCPU:1&member_of=!{AGG}", 31)


def test_member_of_must_name_uuids():
    assert "member_of" in refused("resources=VCPU:1&member_of=not-a-uuid")


def test_several_aggregates_in_one_member_of_need_the_in_prefix():
    assert "in:" in refused(f"resources=VCPU:1&member_of={AGG},{RP}")


def test_forbidden_member_of_with_in_forbids_each_aggregate():
    request = parse(f"resources=VCPU:1&member_of=!in:{AGG},{RP}")
    assert request.groups[""].member_of.forbidden == {AGG, RP}


def test_in_tree_is_an_unknown_parameter_before_1_31():
    assert "in_tree" in refused(f"resources=VCPU:1&in_tree={RP}", 30)


def test_in_tree_must_be_a_uuid():
    assert "in_tree" in refused("resources=VCPU:1&in_tree=nope")


def test_numbered_in_tree_needs_1_31():
    assert "in_tree1" in refused(f"resources1=VCPU:1&in_tree1={RP}", 30)


def test_root_required_is_an_unknown_parameter_before_1_35():
    assert "root_required" in refused("resources=VCPU:1&root_required=CUSTOM_A", 34)


def test_root_required_takes_required_and_forbidden_traits():
    request = parse("resources=VCPU:1&root_required=CUSTOM_A,!CUSTOM_B")
    assert request.root_required.required == {"CUSTOM_A"}
    assert request.root_required.forbidden == {"CUSTOM_B"}


def test_root_required_refuses_the_in_form():
    assert "root_required" in refused("resources=VCPU:1&root_required=in:CUSTOM_A,CUSTOM_B")


def test_root_required_refuses_a_conflict():
    assert "Conflicting" in refused("resources=VCPU:1&root_required=CUSTOM_A,!CUSTOM_A")


def test_root_required_may_be_given_once():
    assert "root_required may be given only once" in refused(
        "resources=VCPU:1&root_required=CUSTOM_A&root_required=CUSTOM_B")


def test_same_subtree_is_an_unknown_parameter_before_1_36():
    assert "same_subtree" in refused("resources1=VCPU:1&resources2=VF:1&group_policy=none&same_subtree=1,2", 35)


def test_same_subtree_lists_suffix_sets():
    request = parse("resources1=VCPU:1&resources2=VF:1&group_policy=none&same_subtree=1,2")
    assert request.same_subtrees == [frozenset({"1", "2"})]


def test_same_subtree_may_not_name_the_unnumbered_group():
    assert "same_subtree" in refused("resources=VCPU:1&resources1=VF:1&same_subtree=,1")


def test_same_subtree_must_name_groups_of_the_request():
    assert "Real suffixes" in refused("resources1=VCPU:1&same_subtree=1,9")


def test_a_resourceless_group_is_allowed_in_same_subtree_from_1_36():
    request = parse("resources1=VCPU:1&required2=CUSTOM_NUMA&group_policy=none&same_subtree=1,2")
    assert request.groups["2"].resources == {}


def test_a_resourceless_group_outside_same_subtree_is_refused():
    assert "Resourceless" in refused("resources1=VCPU:1&required2=CUSTOM_NUMA&group_policy=none")


def test_at_least_one_group_must_ask_for_resources_from_1_36():
    assert "at least one resources" in refused("required1=CUSTOM_A&same_subtree=1")


@pytest.mark.parametrize(("query", "words"), [
    ("resources=VCPU:1&required1=CUSTOM_A", "orphaned traits keys: required1"),
    (f"resources=VCPU:1&member_of1={AGG}", "orphaned member_of keys: member_of1"),
    (f"resources=VCPU:1&in_tree1={RP}", "must specify resources"),
])
def test_groups_without_resources_are_refused_before_1_36(query, words):
    assert words in refused(query, 35)


def test_microversion_1_29_makes_the_request_nested_aware():
    assert not parse("resources=VCPU:1", 28).nested_aware
    assert parse("resources=VCPU:1", 29).nested_aware


def test_requested_classes_span_every_group():
    assert parse("resources=VCPU:1&resources1=VF:1").requested_classes == {"VCPU", "VF"}


def test_an_unknown_parameter_is_refused_by_name():
    assert "bogus" in refused("resources=VCPU:1&bogus=1")
