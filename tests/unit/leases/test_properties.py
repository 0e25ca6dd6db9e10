"""The reservation filter language of hypervisor_properties and resource_properties."""

from __future__ import annotations

import json
import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blazar_lite.exceptions import BadRequest
from blazar_lite.leases.properties import MAX_DEPTH, MAX_LENGTH, combine, parse_filter

FIELD = "resource_properties"
HOST = {"vcpus": 8, "memory_mb": 16384, "cpu_arch": "x86_64", "gpu": "a100", "rack": "10", "ratio": "1.5"}


def compile_(value, field=FIELD):
    return parse_filter(value, field)


def refusal(value, field=FIELD) -> str:
    with pytest.raises(BadRequest) as caught:
        parse_filter(value, field)
    return caught.value.message


# Empty filters


@pytest.mark.parametrize("value", ["", "   ", "[]", " [ ] ", None, []])
def test_empty_filters_match_every_host(value):
    host_filter = compile_(value)
    assert host_filter.is_empty
    assert host_filter({})
    assert host_filter(HOST)
    assert host_filter.properties == frozenset()
    assert host_filter.description == ""


# Comparisons


def test_the_blazar_client_form_is_a_json_string():
    host_filter = compile_('[">=", "$vcpus", "2"]')
    assert host_filter(HOST)
    assert not host_filter({"vcpus": 1})


def test_an_already_decoded_filter_is_accepted():
    assert compile_([">=", "$memory_mb", "4096"])(HOST)


@pytest.mark.parametrize("op, literal, expected", [
    ("==", "8", True), ("==", "7", False),
    ("!=", "8", False), ("!=", "7", True),
    ("<", "9", True), ("<", "8", False),
    ("<=", "8", True), ("<=", "7", False),
    (">", "7", True), (">", "8", False),
    (">=", "8", True), (">=", "9", False),
])
def test_each_operator_compares_the_host_value_with_the_literal(op, literal, expected):
    assert compile_([op, "$vcpus", literal])(HOST) is expected


def test_a_single_equals_sign_means_equality_as_in_blazar():
    assert compile_(["=", "$cpu_arch", "x86_64"])(HOST)
    assert not compile_(["=", "$cpu_arch", "aarch64"])(HOST)


def test_numbers_compare_as_numbers_not_as_text():
    # As text, "10" < "9"; as numbers it is not.
    assert compile_([">", "$rack", "9"])(HOST)
    assert not compile_(["<", "$rack", "9"])(HOST)


def test_numbers_in_different_spellings_are_equal():
    assert compile_(["==", "$vcpus", "8.0"])(HOST)
    assert compile_(["==", "$vcpus", "8e0"])(HOST)
    assert compile_(["==", "$vcpus", " 8"])(HOST)


def test_decimal_numbers_compare_exactly():
    assert compile_([">", "$ratio", "1.4999999999999999999"])(HOST)
    assert compile_(["==", "$ratio", "1.50"])(HOST)
    assert compile_(["==", "$x", "0.1"])({"x": 0.1})


def test_negative_numbers_compare_as_numbers():
    assert compile_(["<", "$t", "-2"])({"t": "-10"})


def test_text_compares_as_text():
    assert compile_(["==", "$gpu", "a100"])(HOST)
    assert compile_(["<", "$gpu", "b"])(HOST)
    assert not compile_([">", "$gpu", "b"])(HOST)


def test_a_number_and_a_word_compare_as_text():
    assert compile_(["<", "$vcpus", "many"])(HOST)  # "8" < "many"
    assert compile_(["!=", "$gpu", "100"])(HOST)


def test_nan_and_infinity_are_words_not_numbers():
    assert compile_(["==", "$x", "nan"])({"x": "nan"})
    assert compile_(["==", "$x", "inf"])({"x": "inf"})
    # As numbers -inf < -5; as text "-inf" > "-5".
    assert not compile_(["<", "$x", "-5"])({"x": "-inf"})


def test_booleans_compare_as_their_python_text():
    assert compile_(["==", "$reservable", "True"])({"reservable": True})


def test_a_missing_attribute_fails_every_comparison():
    for op in ("==", "!=", "<", "<=", ">", ">="):
        assert not compile_([op, "$gpu", "a100"])({}), op


def test_a_null_attribute_counts_as_missing():
    assert not compile_(["!=", "$gpu", "a100"])({"gpu": None})


def test_an_empty_literal_is_a_value_like_any_other():
    assert compile_(["!=", "$gpu", ""])(HOST)
    assert compile_(["==", "$gpu", ""])({"gpu": ""})


def test_the_right_operand_is_always_a_literal():
    assert compile_(["==", "$gpu", "$vcpus"])({"gpu": "$vcpus"})


# and / or


def test_and_needs_every_operand():
    assert compile_(["and", [">=", "$vcpus", "2"], ["==", "$gpu", "a100"]])(HOST)
    assert not compile_(["and", [">=", "$vcpus", "2"], ["==", "$gpu", "h100"]])(HOST)


def test_or_needs_any_operand():
    assert compile_(["or", [">=", "$vcpus", "64"], ["==", "$gpu", "a100"]])(HOST)
    assert not compile_(["or", [">=", "$vcpus", "64"], ["==", "$gpu", "h100"]])(HOST)


def test_and_or_take_any_number_of_operands():
    assert compile_(["and", [">=", "$vcpus", "2"]])(HOST)
    three = ["or", ["==", "$gpu", "x"], ["==", "$gpu", "y"], ["==", "$gpu", "a100"]]
    assert compile_(three)(HOST)


def test_and_or_nest():
    nested = ["and", ["or", ["==", "$gpu", "h100"], ["==", "$gpu", "a100"]], [">=", "$memory_mb", "8192"]]
    assert compile_(json.dumps(nested))(HOST)


def test_the_referenced_properties_are_exposed():
    nested = ["and", ["or", ["==", "$gpu", "h100"], ["==", "$rack", "1"]], [">=", "$memory_mb", "8192"]]
    assert compile_(nested).properties == frozenset({"gpu", "rack", "memory_mb"})


def test_the_description_names_the_field_and_the_filter():
    assert compile_('[">=",   "$vcpus","2"]', "hypervisor_properties").description == \
        'hypervisor_properties [">=", "$vcpus", "2"]'


def test_nesting_up_to_the_limit_is_accepted():
    deep: list = ["==", "$gpu", "a100"]
    for _ in range(MAX_DEPTH - 1):
        deep = ["and", deep]
    assert compile_(deep)(HOST)


# combine


def test_combined_filters_need_both():
    both = combine([compile_(["==", "$gpu", "a100"], "hypervisor_properties"), compile_([">", "$vcpus", "4"])])
    assert both(HOST)
    assert not both({**HOST, "vcpus": 2})
    assert both.properties == frozenset({"gpu", "vcpus"})
    assert both.description == \
        'hypervisor_properties ["==", "$gpu", "a100"] and resource_properties [">", "$vcpus", "4"]'


def test_combining_with_empty_filters_keeps_the_other():
    one = compile_([">", "$vcpus", "4"])
    assert combine([compile_(""), one]) is one
    assert combine([compile_(""), compile_("[]")]).is_empty


# Refusals: each names the field and the problem


def test_text_that_is_not_json_is_refused():
    message = refusal('[">=", "$vcpus", "2"', "hypervisor_properties")
    assert message.startswith("Invalid input for field 'hypervisor_properties': the filter is not valid JSON (")


@pytest.mark.parametrize("value", ['{"vcpus": 2}', '"vcpus >= 2"', "2", "true", {"vcpus": 2}, 2])
def test_a_filter_that_is_not_a_list_is_refused(value):
    assert refusal(value).startswith(f"Invalid input for field '{FIELD}': expected a filter list like")


def test_an_unknown_operator_is_refused_and_named():
    assert refusal(["=~", "$gpu", "a.*"]) == (
        f"Invalid input for field '{FIELD}': unknown operator \"=~\" in [\"=~\", \"$gpu\", \"a.*\"]; "
        "use one of ==, !=, <, <=, >, >=, and, or.")


def test_an_operator_in_the_wrong_case_is_unknown():
    assert "unknown operator \"AND\"" in refusal(["AND", ["==", "$gpu", "a"]])


@pytest.mark.parametrize("value", [["==", "$gpu"], ["==", "$gpu", "a", "b"], [">="]])
def test_a_comparison_with_the_wrong_number_of_operands_is_refused(value):
    assert "compares one property with one value" in refusal(value)


@pytest.mark.parametrize("value", [["==", "$vcpus", 2], ["==", 2, "2"], ["==", "$gpu", None],
                                   ["==", "$gpu", ["a"]], ["==", ["$gpu"], "a"]])
def test_operands_that_are_not_strings_are_refused(value):
    assert "the operands of '==' must be strings" in refusal(value)


@pytest.mark.parametrize("name", ["vcpus", "$", ""])
def test_a_first_operand_that_is_not_a_dollar_name_is_refused(name):
    assert "the first operand of '==' names a property as \"$name\"" in refusal(["==", name, "2"])


def test_and_without_operands_is_refused():
    assert "'and' needs at least one filter to combine" in refusal(["and"])


def test_a_non_list_operand_of_or_is_refused():
    assert "expected a filter list like" in refusal(["or", ["==", "$gpu", "a"], "==", "$x"])


def test_an_empty_list_inside_a_filter_is_refused():
    assert "an empty list cannot stand inside a filter" in refusal(["and", ["==", "$gpu", "a"], []])


def test_a_list_that_does_not_start_with_an_operator_is_refused():
    assert "a filter list starts with an operator" in refusal([["==", "$gpu", "a"]])


def test_nesting_deeper_than_the_limit_is_refused():
    deep: list = ["==", "$gpu", "a100"]
    for _ in range(MAX_DEPTH):
        deep = ["and", deep]
    assert refusal(deep) == f"Invalid input for field '{FIELD}': the filter is nested deeper than 16 levels."
    assert refusal(json.dumps(deep)).endswith("nested deeper than 16 levels.")


def test_brackets_nested_past_the_json_parsers_limit_are_refused_as_too_deep():
    assert refusal("[" * 2000 + "]" * 2000).endswith("nested deeper than 16 levels.")


def test_a_list_that_contains_itself_is_refused_as_too_deep():
    loop: list = ["and"]
    loop.append(loop)
    assert refusal(loop).endswith("nested deeper than 16 levels.")


def test_text_longer_than_the_limit_is_refused():
    long = json.dumps(["==", "$gpu", "x" * MAX_LENGTH])
    assert refusal(long) == (f"Invalid input for field '{FIELD}': the filter is {len(long)} characters long, "
                             f"more than the limit of {MAX_LENGTH}.")


def test_a_decoded_filter_longer_than_the_limit_is_refused():
    assert "characters long, more than the limit of 4096" in refusal(["==", "$gpu", "x" * MAX_LENGTH])


def test_long_values_are_cut_short_in_messages():
    message = refusal(["==", "$gpu", "x" * 1000, "extra"])
    assert len(message) < 400
    assert "..." in message


# Fuzzing

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "=", "and", "or", "$vcpus", "$gpu", "$", "2", "a100"]),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=40,
)

# Well-formed filters, whose leaves are sometimes replaced by arbitrary JSON: they reach the
# evaluation path and the deeper checks that random JSON rarely gets past.
names = st.sampled_from(["$vcpus", "$gpu", "$x"])
literals = st.sampled_from(["", "2", "8", "-1.5", "1e3", "a100", "nan", "x"]) | st.text(max_size=4)


def near_filters(leaf, literal, min_operands) -> st.SearchStrategy:
    comparison = st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "="]) | leaf, names | leaf,
                           literal | leaf).map(list)
    return st.recursive(
        comparison,
        lambda children: st.tuples(st.sampled_from(["and", "or"]) | leaf,
                                   st.lists(children, min_size=min_operands, max_size=4)).map(
            lambda pair: [pair[0], *pair[1]]),
        max_leaves=20,
    )


# Plain literals only, so that the test's reference can tell numbers with float().
well_formed = near_filters(st.nothing(), st.sampled_from(["", "2", "8", "10", "-1.5", "1e3", "a100", "x"]), 1)
almost_well_formed = near_filters(json_values, literals, 0)
host_values = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6) | st.sampled_from(
    ["8", "a100", "-1.5", "1e3", "nan"])
hosts = st.dictionaries(st.sampled_from(["vcpus", "gpu", "x", ""]), host_values, max_size=4)


def _refused_or_works(value, host) -> None:
    try:
        host_filter = parse_filter(value, FIELD)
    except BadRequest as exc:
        assert exc.message.startswith(f"Invalid input for field '{FIELD}': ")
    else:
        assert host_filter(host) in (True, False)


@settings(deadline=None, max_examples=300)
@given(json_values, hosts)
def test_any_decoded_json_is_compiled_or_refused_with_bad_request(value, host):
    _refused_or_works(value, host)


@settings(deadline=None, max_examples=300)
@given(json_values, hosts)
def test_any_json_text_is_compiled_or_refused_with_bad_request(value, host):
    _refused_or_works(json.dumps(value), host)


@settings(deadline=None, max_examples=300)
@given(almost_well_formed, hosts)
def test_almost_well_formed_filters_are_compiled_or_refused_with_bad_request(value, host):
    _refused_or_works(value, host)
    _refused_or_works(json.dumps(value), host)


def reference(node, host) -> bool:
    """What a filter means, spelled out plainly for the test."""
    head = "==" if node[0] == "=" else node[0]
    if head == "and":
        return all(reference(operand, host) for operand in node[1:])
    if head == "or":
        return any(reference(operand, host) for operand in node[1:])
    value = host.get(node[1][1:])
    if value is None:
        return False
    try:
        left, right = float(str(value)), float(node[2])
    except ValueError:
        left, right = str(value), node[2]
    return OPERATORS[head](left, right)


plain_hosts = st.dictionaries(st.sampled_from(["vcpus", "gpu", "x"]),
                              st.sampled_from(["2", "8", "10", "-1.5", "a100", "x", ""]) | st.integers(-20, 20),
                              max_size=3)


@settings(deadline=None, max_examples=300)
@given(well_formed, plain_hosts)
def test_well_formed_filters_mean_what_they_say(node, host):
    if _depth(node) <= MAX_DEPTH:
        assert parse_filter(node, FIELD)(host) is reference(node, host)


def _depth(node) -> int:
    return 1 + max((_depth(operand) for operand in node[1:]), default=0) if node[0] in ("and", "or") else 1


@settings(deadline=None, max_examples=300)
@given(st.text(alphabet='[]{}",:$=<>!andor 0123456789.e-', max_size=60), hosts)
def test_any_text_is_compiled_or_refused_with_bad_request(text, host):
    _refused_or_works(text, host)


OPERATORS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
             ">=": operator.ge}
numbers = st.integers(min_value=-10**30, max_value=10**30) | st.floats(allow_nan=False, allow_infinity=False)


@settings(deadline=None, max_examples=300)
@given(st.sampled_from(sorted(OPERATORS)), numbers, numbers, st.booleans())
def test_numbers_compare_numerically(op, host_value, literal, host_value_as_text):
    value = repr(host_value) if host_value_as_text else host_value
    host_filter = parse_filter([op, "$n", repr(literal)], FIELD)
    assert host_filter({"n": value}) is OPERATORS[op](host_value, literal)


@settings(deadline=None, max_examples=300)
@given(st.sampled_from(sorted(OPERATORS)), st.text(alphabet="abcxyz", max_size=5), st.text(alphabet="abcxyz",
                                                                                            max_size=5))
def test_words_compare_as_text(op, host_value, literal):
    assert parse_filter([op, "$w", literal], FIELD)({"w": host_value}) is OPERATORS[op](host_value, literal)
