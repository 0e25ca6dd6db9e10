"""What GET /allocation_candidates asks for: the query string parsed into a request object.

The query string carries an unnumbered request group (`resources`, `required`, `member_of`,
`in_tree`), granular groups with a suffix (`resources1`, from 1.33 also `resources_NIC`, ...) and
request-wide parameters (`group_policy`, `limit`, `root_required`, `same_subtree`). Which keys
exist depends on the microversion; every malformed value is a 400 naming the parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from blazar_lite.exceptions import BadRequest
from blazar_lite.placement.common import normalize_uuid
from blazar_lite.placement.query import (
    AggregateFilter,
    TraitFilter,
    check_allowed,
    parse_member_of,
    parse_required,
    parse_resources,
)

# Granular suffixes: numbers before 1.33, then up to 64 of [a-zA-Z0-9_-].
_NUMBERED = re.compile(r"^(resources|required|member_of|in_tree)([1-9][0-9]*)?$")
_NAMED = re.compile(r"^(resources|required|member_of|in_tree)([a-zA-Z0-9_-]{1,64})?$")
_LIMIT = re.compile(r"^[1-9][0-9]*$")
GROUP_POLICIES = ("none", "isolate")


@dataclass(frozen=True)
class RequestGroup:
    """One request group. The unnumbered group (suffix "") may spread its resources over the
    providers of one tree; a granular group must be satisfied by a single provider."""

    suffix: str = ""
    resources: dict[str, int] = field(default_factory=dict)
    traits: TraitFilter = field(default_factory=TraitFilter)
    member_of: AggregateFilter = field(default_factory=AggregateFilter)
    in_tree: str | None = None

    @property
    def same_provider(self) -> bool:
        return self.suffix != ""


@dataclass(frozen=True)
class CandidatesRequest:
    """Everything a search for allocation candidates needs, independent of HTTP.

    `nested_aware` (microversion 1.29) lets one allocation request use several providers of a
    tree; before it, only requests that take from one provider per tree are returned.
    """

    groups: dict[str, RequestGroup]
    group_policy: str | None = None
    limit: int | None = None
    root_required: TraitFilter = field(default_factory=TraitFilter)
    same_subtrees: list[frozenset[str]] = field(default_factory=list)
    nested_aware: bool = True

    @property
    def requested_classes(self) -> set[str]:
        return {rc for group in self.groups.values() for rc in group.resources}


def allowed_keys(args: dict[str, list[str]], minor: int) -> set[str]:
    """The query keys this microversion knows, among those given (group keys match a pattern)."""
    allowed = {"resources"}
    if minor >= 16:
        allowed.add("limit")
    if minor >= 17:
        allowed.add("required")
    if minor >= 21:
        allowed.add("member_of")
    if minor >= 25:
        allowed.add("group_policy")
        pattern = _NAMED if minor >= 33 else _NUMBERED
        for key in args:
            match = pattern.match(key)
            if match and (match.group(1) != "in_tree" or minor >= 31):
                allowed.add(key)
    if minor >= 31:
        allowed.add("in_tree")
    if minor >= 35:
        allowed.add("root_required")
    if minor >= 36:
        allowed.add("same_subtree")
    return allowed


def _once(args: dict[str, list[str]], key: str, code: str | None = None) -> str | None:
    values = args.get(key)
    if not values:
        return None
    if len(values) > 1:
        raise BadRequest(f"Query parameter {key} may be given only once.", code=code)
    return values[0]


def _parse_traits(values: list[str], minor: int, param: str) -> TraitFilter:
    # Before 1.39 a repeated required parameter is not an error: the last one wins.
    traits = parse_required(values if minor >= 39 else values[-1:], minor, param)
    for group in traits.any_of:
        if group <= traits.forbidden:
            raise BadRequest(f"Conflicting required and forbidden traits found in the following traits keys: "
                             f"{param}: ({', '.join(sorted(group))})")
    return traits


def _parse_group(args: dict[str, list[str]], suffix: str, minor: int) -> RequestGroup:
    resources: dict[str, int] = {}
    text = _once(args, f"resources{suffix}")
    if text is not None:
        try:
            resources = parse_resources(text, f"resources{suffix}")
        except BadRequest as exc:
            # Name the parameter: with granular groups, the class alone does not say which.
            if f"resources{suffix} " in exc.message:
                raise
            raise BadRequest(f"Invalid resources{suffix} parameter: {exc.message}") from None
    traits = TraitFilter()
    if f"required{suffix}" in args:
        traits = _parse_traits(args[f"required{suffix}"], minor, f"required{suffix}")
    member_of = AggregateFilter()
    if f"member_of{suffix}" in args:
        member_of = parse_member_of(args[f"member_of{suffix}"], minor, f"member_of{suffix}")
    in_tree = _once(args, f"in_tree{suffix}")
    if in_tree is not None:
        in_tree = normalize_uuid(in_tree.strip(), f"in_tree{suffix} (expected a resource provider uuid)")
    return RequestGroup(suffix=suffix, resources=resources, traits=traits, member_of=member_of, in_tree=in_tree)


def _parse_root_required(value: str) -> TraitFilter:
    if value.strip().startswith("in:"):
        raise BadRequest(f"Invalid root_required parameter {value!r}: the in: form is not supported here; "
                         "give a comma-separated list such as HW_CPU_X86_VMX,!CUSTOM_MAGIC.")
    traits = parse_required([value], 39, "root_required")
    return TraitFilter(required=traits.required, forbidden=traits.forbidden)


def _parse_same_subtree(values: list[str]) -> list[frozenset[str]]:
    out = []
    for value in values:
        suffixes = frozenset(part.strip() for part in value.split(","))
        if "" in suffixes:
            raise BadRequest(f"Invalid same_subtree parameter {value!r}: the unsuffixed group (empty string) "
                             "cannot be named in same_subtree.", code="placement.query.bad_value")
        out.append(suffixes)
    return out


def _check_groups(groups: dict[str, RequestGroup], same_subtrees: list[frozenset[str]], minor: int) -> None:
    resourceless = [suffix for suffix, group in groups.items() if not group.resources]
    if minor >= 36:
        if len(resourceless) == len(groups):
            raise BadRequest("There must be at least one resources or resources[$S] parameter.",
                             code="placement.query.missing_value")
        in_subtrees = set().union(*same_subtrees)
        stray = sorted(s for s in resourceless if s not in in_subtrees)
        if stray:
            raise BadRequest("Resourceless suffixed group request should be specified in `same_subtree` query "
                             f"param: bad group(s) - {', '.join(repr(s) for s in stray)}.",
                             code="placement.query.bad_value")
        unknown = sorted(in_subtrees - groups.keys())
        if unknown:
            raise BadRequest(f"Real suffixes should be specified in `same_subtree`: {', '.join(unknown)} not found "
                             f"in {', '.join(sorted(groups))}.", code="placement.query.bad_value")
        return
    if not groups:
        raise BadRequest("At least one request group (`resources` or `resources{$S}`) is required.",
                         code="placement.query.missing_value")
    orphans = [f"required{s}" for s in resourceless if groups[s].traits]
    if orphans:
        raise BadRequest("All traits parameters must be associated with resources. Found the following orphaned "
                         f"traits keys: {', '.join(orphans)}")
    orphans = [f"member_of{s}" for s in resourceless if groups[s].member_of]
    if orphans:
        raise BadRequest("All member_of parameters must be associated with resources. Found the following "
                         f"orphaned member_of keys: {', '.join(orphans)}")
    if resourceless:
        raise BadRequest(f"All request groups must specify resources: give resources{resourceless[0]}.")


def parse_candidates_request(args: dict[str, list[str]], minor: int) -> CandidatesRequest:
    """Build the request from the query string (each key with all its values) at 1.`minor`."""
    check_allowed(args, allowed_keys(args, minor))
    if minor < 25 and "resources" not in args:
        raise BadRequest("Invalid query string parameters: 'resources' is a required parameter, e.g. "
                         "?resources=VCPU:1,MEMORY_MB:512.")
    pattern = _NAMED if minor >= 33 else _NUMBERED
    suffixes: list[str] = []
    for key in args:
        match = pattern.match(key)
        if match:
            suffix = match.group(2) or ""
            if suffix not in suffixes:
                suffixes.append(suffix)
    # The unnumbered group first, then the granular ones in the order the client named them.
    suffixes.sort(key=lambda s: s != "")
    groups = {suffix: _parse_group(args, suffix, minor) for suffix in suffixes}

    limit = None
    text = _once(args, "limit")
    if text is not None:
        if not _LIMIT.match(text):
            raise BadRequest(f"Invalid query string parameters: limit must be a positive integer. Got: {text}.")
        limit = int(text)
    group_policy = _once(args, "group_policy")
    if group_policy is not None and group_policy not in GROUP_POLICIES:
        raise BadRequest(f"Invalid query string parameters: group_policy must be one of "
                         f"{', '.join(GROUP_POLICIES)}. Got: {group_policy}.")
    root_required = TraitFilter()
    text = _once(args, "root_required", code="placement.query.duplicate_key")
    if text is not None:
        root_required = _parse_root_required(text)
    same_subtrees = _parse_same_subtree(args.get("same_subtree", []))

    _check_groups(groups, same_subtrees, minor)
    if group_policy is None and sum(1 for suffix in groups if suffix) > 1:
        raise BadRequest('The "group_policy" parameter is required when specifying more than one '
                         '"resources{N}" parameter: add group_policy=none or group_policy=isolate.')
    return CandidatesRequest(groups=groups, group_policy=group_policy, limit=limit, root_required=root_required,
                             same_subtrees=same_subtrees, nested_aware=minor >= 29)
