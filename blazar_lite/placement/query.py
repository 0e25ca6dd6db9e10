"""Parsing of Placement's query-string mini languages (resources, required, member_of).

These are shared by provider listing and allocation candidates; each parser says in its error
which parameter is wrong and what form it should take.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from blazar_lite.exceptions import BadRequest
from blazar_lite.placement.common import normalize_uuid

_NAME = re.compile(r"^[A-Z0-9_]+$")


def parse_resources(value: str, param: str = "resources") -> dict[str, int]:
    """`VCPU:1,MEMORY_MB:512` → {"VCPU": 1, "MEMORY_MB": 512}; amounts must be positive."""
    out: dict[str, int] = {}
    for item in value.split(","):
        name, sep, amount = item.strip().partition(":")
        if not sep or not name or not _NAME.match(name):
            raise BadRequest(f"Badly formed {param} parameter. Expected {param} query string parameter in form: "
                             f"?{param}=VCPU:2,MEMORY_MB:1024. Got: {value}.")
        try:
            number = int(amount)
        except ValueError:
            raise BadRequest(f"Requested resource {name} expected positive integer amount. Got: {amount}.") from None
        if number < 1:
            raise BadRequest(f"Requested resource {name} requires amount >= 1. Got: {number}.")
        if name in out:
            raise BadRequest(f"Badly formed {param} parameter: {name} is named twice in {value}.")
        out[name] = number
    return out


@dataclass
class TraitFilter:
    """Required traits, forbidden traits and any-of groups (each group needs one of its traits)."""

    required: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)
    any_of: list[set[str]] = field(default_factory=list)

    @property
    def names(self) -> set[str]:
        return self.required | self.forbidden | set().union(*self.any_of) if self.any_of else \
            self.required | self.forbidden

    def __bool__(self) -> bool:
        return bool(self.required or self.forbidden or self.any_of)

    def matches(self, traits: set[str] | frozenset[str]) -> bool:
        return (self.required <= traits and not (self.forbidden & traits)
                and all(group & traits for group in self.any_of))


def parse_required(values: list[str], minor: int, param: str = "required") -> TraitFilter:
    """Parse one or more `required` values: `T1,!T2` (forbidden from 1.22), `in:T1,T2` (any-of, 1.39)."""
    result = TraitFilter()
    for value in values:
        text = value.strip()
        if text.startswith("in:"):
            if minor < 39:
                raise BadRequest(f"Invalid {param} parameter {value!r}: the in: prefix needs microversion 1.39.")
            group = {t.strip() for t in text[3:].split(",")}
            if "" in group or any(t.startswith("!") for t in group):
                raise BadRequest(f"Invalid {param} parameter {value!r}: expected in:TRAIT1,TRAIT2.")
            result.any_of.append(group)
            continue
        for item in text.split(","):
            item = item.strip()
            if not item:
                raise BadRequest(f"Invalid {param} parameter {value!r}: empty trait name.")
            if item.startswith("!"):
                if minor < 22:
                    raise BadRequest(f"Invalid {param} parameter {value!r}: forbidden traits (!) need "
                                     "microversion 1.22.")
                result.forbidden.add(item[1:])
            else:
                result.required.add(item)
    conflict = result.required & result.forbidden
    if conflict:
        raise BadRequest(f"Conflicting required and forbidden traits found in the following traits keys: "
                         f"{param}: ({', '.join(sorted(conflict))})")
    return result


@dataclass
class AggregateFilter:
    """member_of: each entry of `any_of` must be satisfied (AND across entries, OR within one);
    no provider may be in a `forbidden` aggregate."""

    any_of: list[set[str]] = field(default_factory=list)
    forbidden: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.any_of or self.forbidden)

    def matches(self, aggregates: set[str] | frozenset[str]) -> bool:
        return all(group & aggregates for group in self.any_of) and not (self.forbidden & aggregates)


def parse_member_of(values: list[str], minor: int, param: str = "member_of") -> AggregateFilter:
    if len(values) > 1 and minor < 24:
        raise BadRequest(f"Multiple {param} parameters need microversion 1.24.")
    result = AggregateFilter()
    for value in values:
        text = value.strip()
        forbidden = text.startswith("!")
        if forbidden:
            if minor < 32:
                raise BadRequest(f"Invalid {param} parameter {value!r}: forbidden aggregates (!) need "
                                 "microversion 1.32.")
            text = text[1:]
        if text.startswith("in:"):
            text = text[3:]
        elif "," in text:
            raise BadRequest(f"Badly formed {param} parameter {value!r}: several aggregates need the in: "
                             "prefix, e.g. member_of=in:UUID1,UUID2.")
        uuids = {normalize_uuid(u.strip(), f"aggregate uuid in {param}") for u in text.split(",")}
        if forbidden:
            result.forbidden |= uuids
        else:
            result.any_of.append(uuids)
    return result


def check_allowed(args: dict[str, list[str]], allowed: set[str]) -> None:
    """Placement validates query strings strictly: an unknown parameter is a 400 that names it."""
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise BadRequest(f"Invalid query string parameters: {', '.join(unknown)} not allowed here "
                         f"(allowed: {', '.join(sorted(allowed)) or 'none'}).")
