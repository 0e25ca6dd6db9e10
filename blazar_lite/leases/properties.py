"""The filter language of hypervisor_properties and resource_properties.

A reservation narrows the hosts it may use with a filter, sent as a JSON-encoded string (or, from
the Python API, an already-decoded list):

    ""  or  "[]"                              no filter: every host matches
    [">=", "$memory_mb", "4096"]              a comparison
    ["and", <filter>, <filter>, ...]          all of them (one or more operands)
    ["or", <filter>, <filter>, ...]           any of them (one or more operands)

Comparisons are `==`, `!=`, `<`, `<=`, `>`, `>=` (and `=`, which Blazar accepts for `==`). The first
operand names a host attribute or extra capability as `$name`; the second is a literal string.
When both the host's value and the literal read as decimal numbers ("8", "-2.5", "1e3"), they
compare as numbers, exactly (so "10" > "9" and "2" == "2.0"); otherwise they compare as strings,
by code point. A host that lacks the attribute (or has it as null) fails the comparison, whatever
the operator, `!=` included: a filter only ever selects hosts that state what it asks about.

Malformed filters are refused with BadRequest naming the field and the problem: text that is not
JSON, a shape other than the above, an unknown operator, operands that are not strings, nesting
deeper than MAX_DEPTH levels (a comparison is one level), or text longer than MAX_LENGTH characters.
"""

from __future__ import annotations

import json
import operator
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from blazar_lite.exceptions import BadRequest

MAX_LENGTH = 4096
MAX_DEPTH = 16

COMPARISONS: Mapping[str, Callable[[object, object], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
ALIASES = {"=": "=="}
COMBINATIONS = ("and", "or")
_OPERATOR_LIST = "==, !=, <, <=, >, >=, and, or"
_EXAMPLE = '[">=", "$vcpus", "2"]'

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_SHOWN_LENGTH = 120


def _number_of(value: object) -> Decimal | None:
    """`value` as an exact decimal number, or None when it does not read as one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        # repr gives the shortest text that reads back as this float: 0.1 stays 0.1, not its binary value.
        return Decimal(repr(value)) if value == value and abs(value) != float("inf") else None
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER.fullmatch(text):
            try:
                return Decimal(text)
            except (InvalidOperation, ValueError):
                return None
    return None


@dataclass(frozen=True, slots=True)
class Comparison:
    """`$name <operator> literal`."""

    operator: str
    name: str
    literal: str
    number: Decimal | None

    @property
    def properties(self) -> frozenset[str]:
        return frozenset((self.name,))

    def matches(self, attributes: Mapping[str, object]) -> bool:
        value = attributes.get(self.name)
        if value is None:
            return False
        compare = COMPARISONS[self.operator]
        if self.number is not None:
            number = _number_of(value)
            if number is not None:
                return compare(number, self.number)
        return compare(str(value), self.literal)


@dataclass(frozen=True, slots=True)
class AllOf:
    operands: tuple[Condition, ...]

    @property
    def properties(self) -> frozenset[str]:
        return frozenset().union(*(operand.properties for operand in self.operands))

    def matches(self, attributes: Mapping[str, object]) -> bool:
        return all(operand.matches(attributes) for operand in self.operands)


@dataclass(frozen=True, slots=True)
class AnyOf:
    operands: tuple[Condition, ...]

    @property
    def properties(self) -> frozenset[str]:
        return frozenset().union(*(operand.properties for operand in self.operands))

    def matches(self, attributes: Mapping[str, object]) -> bool:
        return any(operand.matches(attributes) for operand in self.operands)


Condition = Comparison | AllOf | AnyOf


class HostFilter:
    """A compiled filter: call it on a host's attributes (name → value) to learn whether it matches.

    `properties` holds the attribute names the filter refers to (without the `$`); `description` is
    the field and its filter in canonical JSON, for messages ("" when the filter is empty).
    """

    __slots__ = ("condition", "properties", "description")

    def __init__(self, condition: Condition | None, description: str) -> None:
        self.condition = condition
        self.properties: frozenset[str] = condition.properties if condition is not None else frozenset()
        self.description = description

    @property
    def is_empty(self) -> bool:
        """True when the filter lets every host through."""
        return self.condition is None

    def __call__(self, attributes: Mapping[str, object]) -> bool:
        return self.condition is None or self.condition.matches(attributes)

    def __repr__(self) -> str:
        return f"HostFilter({self.description!r})"


MATCH_ALL = HostFilter(None, "")


class _Malformed(Exception):
    """What is wrong with a filter; parse_filter adds the field's name."""


def parse_filter(value: object, field: str) -> HostFilter:
    """Compile the filter `value` of the request field `field` (hypervisor_properties or
    resource_properties), or raise BadRequest naming the field and the problem.

    `value` is the JSON text of the filter, or the filter already decoded; None, "" (or blanks),
    [] and "[]" are the empty filter.
    """
    try:
        return _parse(value, field)
    except _Malformed as exc:
        raise BadRequest(f"Invalid input for field '{field}': {exc}") from None


def _parse(value: object, field: str) -> HostFilter:
    if isinstance(value, str):
        if len(value) > MAX_LENGTH:
            raise _Malformed(f"the filter is {len(value)} characters long, more than the limit of {MAX_LENGTH}.")
        if not value.strip():
            return MATCH_ALL
        try:
            decoded = json.loads(value)
        except RecursionError:
            raise _Malformed(f"the filter is nested deeper than {MAX_DEPTH} levels.") from None
        except ValueError as exc:
            raise _Malformed(f"the filter is not valid JSON ({exc}); write it like {_EXAMPLE}.") from None
    else:
        decoded = value
    if decoded is None or (isinstance(decoded, list) and not decoded):
        return MATCH_ALL
    condition = _compile(decoded, 1)
    # Only lists and strings are left once the filter compiled, so this always encodes.
    text = json.dumps(decoded, ensure_ascii=False)
    if len(text) > MAX_LENGTH:
        raise _Malformed(f"the filter is {len(text)} characters long, more than the limit of {MAX_LENGTH}.")
    return HostFilter(condition, f"{field} {text}")


def _compile(node: object, depth: int) -> Condition:
    if depth > MAX_DEPTH:
        raise _Malformed(f"the filter is nested deeper than {MAX_DEPTH} levels.")
    if not isinstance(node, list):
        raise _Malformed(f"expected a filter list like {_EXAMPLE}, got {_show(node)}.")
    if not node:
        raise _Malformed("an empty list cannot stand inside a filter; leave it out.")
    head = node[0]
    if not isinstance(head, str):
        raise _Malformed(f"a filter list starts with an operator ({_OPERATOR_LIST}), got {_show(node)}.")
    name = ALIASES.get(head, head)
    if name in COMBINATIONS:
        if len(node) < 2:
            raise _Malformed(f"'{name}' needs at least one filter to combine, got {_show(node)}.")
        operands = tuple(_compile(operand, depth + 1) for operand in node[1:])
        return AllOf(operands) if name == "and" else AnyOf(operands)
    if name not in COMPARISONS:
        raise _Malformed(f"unknown operator {_show(head)} in {_show(node)}; use one of {_OPERATOR_LIST}.")
    if len(node) != 3:
        raise _Malformed(f"'{head}' compares one property with one value, like "
                         f"[\"{head}\", \"$vcpus\", \"2\"], got {_show(node)}.")
    prop, literal = node[1], node[2]
    if not isinstance(prop, str) or not isinstance(literal, str):
        raise _Malformed(f"the operands of '{head}' must be strings, got {_show(node)}.")
    if len(prop) < 2 or not prop.startswith("$"):
        raise _Malformed(f"the first operand of '{head}' names a property as \"$name\", got {_show(prop)}.")
    return Comparison(name, prop[1:], literal, _number_of(literal))


def _show(value: object) -> str:
    """`value` for a message: JSON when it encodes, cut to a readable length."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = reprlib.repr(value)
    return text if len(text) <= _SHOWN_LENGTH else text[:_SHOWN_LENGTH - 3] + "..."


def combine(filters: Iterable[HostFilter]) -> HostFilter:
    """One filter that matches when every one of `filters` matches (e.g. a reservation's
    hypervisor_properties and resource_properties), described as "<a> and <b>"."""
    present = [host_filter for host_filter in filters if not host_filter.is_empty]
    if not present:
        return MATCH_ALL
    if len(present) == 1:
        return present[0]
    conditions = tuple(host_filter.condition for host_filter in present if host_filter.condition is not None)
    return HostFilter(AllOf(conditions), " and ".join(host_filter.description for host_filter in present))
