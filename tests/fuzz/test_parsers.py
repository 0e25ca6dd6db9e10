"""The parsers that read what users type, fuzzed: any input is a value or the domain's own
BadRequest (which the API answers with a 400), never another exception; and what they read
behaves as documented (filters against a reference evaluation, dates and durations round trip)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blazar_lite.exceptions import BadRequest
from blazar_lite.leases import dates
from blazar_lite.leases.properties import HostFilter, parse_filter
from blazar_lite.scriptlet import runtime
from blazar_lite.scriptlet.program import InvalidScriptlet
from tests.fuzz.conftest import examples

FUZZ = settings(max_examples=examples(), deadline=None, suppress_health_check=[HealthCheck.too_slow])
NOW = datetime(2030, 5, 2, 10, 0, tzinfo=UTC)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30)


# The host filter language (hypervisor_properties / resource_properties).

ATTRIBUTES = ("vcpus", "memory_mb", "gpu", "zone")
OPERATORS = ("==", "=", "!=", "<", "<=", ">", ">=")
literals = st.one_of(st.integers(-5, 20).map(str), st.sampled_from(["1.5", "2.0", "-0", "1e1", ".5", "10."]),
                     st.sampled_from(["a100", "h100", "A100", "", " 8", "eu-1", "é"]))
host_values = st.one_of(st.none(), st.integers(-5, 20), st.integers(-5, 20).map(str),
                        st.sampled_from(["1.5", "2", "a100", "h100", "", "10", "eu-1", "1e1"]))
comparisons = st.tuples(st.sampled_from(OPERATORS), st.sampled_from(ATTRIBUTES), literals).map(
    lambda c: [c[0], "$" + c[1], c[2]])
filters = st.recursive(comparisons, lambda inner: st.tuples(st.sampled_from(["and", "or"]),
                                                            st.lists(inner, min_size=1, max_size=3)).map(
    lambda c: [c[0], *c[1]]), max_leaves=8)
hosts = st.fixed_dictionaries({name: host_values for name in ATTRIBUTES})

_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", re.ASCII)


def _as_number(value: object) -> Decimal | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    if isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
        return Decimal(value.strip())
    return None


def reference(node: list[Any], host: dict[str, object]) -> bool:
    """The module docstring's rules, written out plainly."""
    head = node[0]
    if head == "and":
        return all(reference(operand, host) for operand in node[1:])
    if head == "or":
        return any(reference(operand, host) for operand in node[1:])
    value, literal = host.get(node[1][1:]), node[2]
    if value is None:
        return False
    left, right = _as_number(value), _as_number(literal)
    if left is None or right is None:
        left, right = str(value), literal
    return {"==": left == right, "=": left == right, "!=": left != right, "<": left < right,
            "<=": left <= right, ">": left > right, ">=": left >= right}[head]


@FUZZ
@given(st.one_of(st.text(max_size=200), json_values, json_values.map(json.dumps)))
def test_any_filter_is_compiled_or_refused_with_bad_request(value: object) -> None:
    try:
        compiled = parse_filter(value, "resource_properties")
    except BadRequest as exc:
        assert exc.message.startswith("Invalid input for field 'resource_properties': ")
    else:
        assert isinstance(compiled, HostFilter)


@FUZZ
@given(filters, st.lists(hosts, min_size=1, max_size=5))
def test_a_filter_selects_the_hosts_the_reference_evaluation_selects(node: list[Any],
                                                                    candidates: list[dict[str, object]]) -> None:
    compiled = parse_filter(json.dumps(node), "hypervisor_properties")
    assert [compiled(host) for host in candidates] == [reference(node, host) for host in candidates]


@FUZZ
@given(filters)
def test_a_filter_reads_the_same_as_text_and_as_a_list(node: list[Any]) -> None:
    assert parse_filter(json.dumps(node), "f").description == parse_filter(node, "f").description


@FUZZ
@given(st.integers(1, 5000))
def test_deep_nesting_is_refused_with_bad_request(depth: int) -> None:
    text = '["and", ' * depth + '["==", "$a", "1"]' + "]" * depth
    try:
        parse_filter(text, "f")
    except BadRequest as exc:
        assert "nested deeper than" in exc.message or "characters long" in exc.message
    else:
        assert depth < 16


# Dates and durations.

date_like = st.from_regex(
    r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]{1,9})?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?\Z")


@FUZZ
@given(st.one_of(st.text(max_size=60), date_like, json_values))
def test_any_date_is_read_as_utc_or_refused_with_bad_request(value: object) -> None:
    try:
        moment = dates.parse_date(value, NOW)
    except BadRequest as exc:
        assert "is an invalid date" in exc.message or "is out of range" in exc.message
    else:
        assert moment.tzinfo is UTC and dates.EARLIEST_DATE <= moment < dates.LATEST_DATE


@FUZZ
@given(st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(8999, 12, 31), timezones=st.just(UTC)))
def test_a_formatted_date_reads_back_as_itself(moment: datetime) -> None:
    assert dates.parse_date(dates.format_date(moment), NOW) == moment
    assert dates.format_date(dates.parse_date(dates.format_date(moment), NOW)) == dates.format_date(moment)


@FUZZ
@given(st.one_of(st.text(max_size=40), st.from_regex(r"\A([0-9]{1,20}[mhdMHD]){1,4}\Z"), json_values))
def test_any_duration_is_read_or_refused_with_bad_request(value: object) -> None:
    try:
        duration = dates.parse_duration(value, "duration")
    except BadRequest as exc:
        assert exc.message.startswith("Invalid input for field 'duration': ")
    else:
        assert timedelta(0) < duration <= dates.MAX_DURATION


@FUZZ
@given(st.integers(1, dates.MAX_DURATION // timedelta(minutes=1)))
def test_a_described_duration_reads_back_as_itself(minutes: int) -> None:
    duration = timedelta(minutes=minutes)
    assert dates.parse_duration(dates.describe_duration(duration)) == duration


@FUZZ
@given(st.one_of(st.text(max_size=40), date_like), st.one_of(st.text(max_size=40), date_like))
def test_any_lease_window_is_valid_or_refused_with_bad_request(start: str, end: str) -> None:
    try:
        opens, closes = dates.validate_window(start, end, NOW)
    except BadRequest:
        return
    assert dates.start_of_minute(NOW) <= opens < closes


# The placement scriptlet.

SCRIPT_PIECES = ["def instance_placement(request, candidate_members):\n", "    pass\n", "    return None\n",
                 "    set_target(candidate_members[0].server_name)\n", "x = 1\n", "def f(n):\n    return f(n)\n",
                 "y = f(1)\n", "load('x', 'y')\n", "    fail('no')\n", "def instance_placement(a):\n",
                 "z = [i for i in range(10)]\n", "    for m in candidate_members:\n        log_info(m.name)\n",
                 "\t", "(", "\x00", "'", "def instance_placement(*args, **kwargs):\n"]


@FUZZ
@given(st.one_of(st.text(max_size=200), st.lists(st.sampled_from(SCRIPT_PIECES), max_size=8).map("".join)))
def test_any_scriptlet_compiles_or_is_refused_with_its_problem(source: str) -> None:
    try:
        program = runtime.compile_program(source)
    except InvalidScriptlet as exc:
        assert exc.message.startswith("Invalid instance placement scriptlet")
    else:
        assert program.source == source
