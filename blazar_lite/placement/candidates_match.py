"""Allocation candidates as a pure function of a snapshot and a request (no database).

The snapshot holds the providers of the trees that may satisfy the request (the service narrows
them in SQL), with their inventories and usage, traits and aggregates. `match` decides which
combinations of providers satisfy every request group and returns them in a deterministic order:
by anchor root provider, then by the order of the candidates inside each group.

Semantics follow Placement:
- the unnumbered group may take each requested class from a different provider of one tree; the
  providers it takes from must collectively have its required traits, and none of them may have a
  forbidden trait; its member_of is satisfied when the provider itself or its root is in the
  aggregates, and its forbidden aggregates must hold neither the provider nor its root;
- a granular group is satisfied by one provider that has every requested class and, itself, the
  group's traits and aggregates;
- all groups of one allocation request are anchored in the same tree; `group_policy=isolate`
  puts different granular groups on different providers; `same_subtree` requires the providers of
  the named groups to lie under one of them; `root_required` constrains the traits of the root;
- amounts that several groups take from one provider are added up and checked again against
  capacity and max_unit;
- before microversion 1.29 only requests that take from one provider per tree are kept.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from blazar_lite.placement.candidates_request import CandidatesRequest, RequestGroup
from blazar_lite.placement.capacity import capacity, fits, unit_problem

_EMPTY: frozenset[str] = frozenset()

# An inventory record: (class, total, reserved, min_unit, max_unit, step_size, allocation_ratio, used).
InventoryRecord = tuple[str, int, int, int, int, int, float, int]
RESOURCE_CLASS, TOTAL, RESERVED, MIN_UNIT, MAX_UNIT, STEP_SIZE, ALLOCATION_RATIO, USED = range(8)
# A provider's inventory records, in class order.
Inventories = tuple[InventoryRecord, ...]


def inventory(rc: str, total: int, reserved: int = 0, min_unit: int = 1, max_unit: int | None = None,
              step_size: int = 1, allocation_ratio: float = 1.0, used: int = 0) -> InventoryRecord:
    """An inventory record, with Placement's defaults (max_unit defaults to total)."""
    return (rc, total, reserved, min_unit, total if max_unit is None else max_unit, step_size, allocation_ratio,
            used)


def reported_capacity(record: InventoryRecord) -> int:
    """What Placement reports as capacity: int((total - reserved) x allocation_ratio)."""
    return int(capacity(record[TOTAL], record[RESERVED], record[ALLOCATION_RATIO]))


def can_take(record: InventoryRecord, amount: int) -> bool:
    """Whether `amount` more can be taken now (room, min_unit, max_unit and step_size)."""
    return (unit_problem(amount, record[MIN_UNIT], record[MAX_UNIT], record[STEP_SIZE]) is None
            and fits(amount, record[USED], record[TOTAL], record[RESERVED], record[ALLOCATION_RATIO]))


@dataclass
class Snapshot:
    """The providers a search may use, keyed by internal id: where each sits in its tree (root
    and parent ids), its uuid, its inventories, its trait names (sorted) and aggregate uuids.

    Per-provider values are tuples of strings and numbers rather than dicts and sets: the garbage
    collector stops tracking such tuples, and an answer over thousands of trees would otherwise
    hold tens of thousands of objects it scans again and again.
    """

    roots: dict[int, int]
    parents: dict[int, int | None] = field(default_factory=dict)
    uuids: dict[int, str] = field(default_factory=dict)
    inventories: dict[int, Inventories] = field(default_factory=dict)
    traits: dict[int, tuple[str, ...]] = field(default_factory=dict)
    aggregates: dict[int, frozenset[str]] = field(default_factory=dict)
    # Provider ids of each tree in ascending order, when the builder has them at hand.
    trees: dict[int, tuple[int, ...]] | None = None

    def record(self, rp_id: int, rc: str) -> InventoryRecord | None:
        """The provider's inventory record of class `rc`, if it has one."""
        for record in self.inventories.get(rp_id, ()):
            if record[RESOURCE_CLASS] == rc:
                return record
        return None

    @cached_property
    def by_class(self) -> dict[str, list[int]]:
        """Provider ids having inventory of each class, in ascending id order."""
        index: dict[str, list[int]] = defaultdict(list)
        for rp_id in sorted(self.inventories):
            for record in self.inventories[rp_id]:
                index[record[RESOURCE_CLASS]].append(rp_id)
        return index

    @cached_property
    def by_uuid(self) -> dict[str, int]:
        return {uuid: rp_id for rp_id, uuid in self.uuids.items()}

    @cached_property
    def by_root(self) -> dict[int, tuple[int, ...]]:
        """Provider ids of each tree, in ascending id order."""
        if self.trees is not None:
            return self.trees
        index: dict[int, list[int]] = defaultdict(list)
        for rp_id in sorted(self.roots):
            index[self.roots[rp_id]].append(rp_id)
        return {root: tuple(members) for root, members in index.items()}


# Allocation requests are plain nested tuples too, for the same reason as the snapshot's values.
# (class, amount) pairs:
Amounts = tuple[tuple[str, int], ...]
# (provider id, amounts) pairs, one per provider:
Allocations = tuple[tuple[int, Amounts], ...]
# (group suffix, ids of the providers that satisfy the group) pairs; "" is the unnumbered group:
Mappings = tuple[tuple[str, tuple[int, ...]], ...]
# One way to satisfy the whole request: (allocations, mappings).
AllocationRequest = tuple[Allocations, Mappings]
# How one group is satisfied inside one tree: its allocations and the providers it maps to, in
# ascending id order.
_Part = tuple[Allocations, tuple[int, ...]]


@dataclass(frozen=True)
class Candidates:
    """The allocation requests and the ids of the providers to summarize, in ascending order."""

    allocation_requests: list[AllocationRequest]
    summary_provider_ids: list[int]


def _tree_root(snapshot: Snapshot, group: RequestGroup) -> int | None:
    """The root of the group's in_tree provider; -1 when that provider is not in the snapshot
    (then nothing matches)."""
    if group.in_tree is None:
        return None
    rp_id = snapshot.by_uuid.get(group.in_tree)
    return -1 if rp_id is None else snapshot.roots[rp_id]


def _single_provider_parts(snapshot: Snapshot, group: RequestGroup) -> dict[int, tuple[_Part, ...]]:
    """Per root, the providers that alone satisfy a granular group."""
    tree = _tree_root(snapshot, group)
    resources = requested = tuple(group.resources.items())
    if resources:
        pool: Iterable[int] = snapshot.by_class.get(resources[0][0], [])
    else:
        pool = sorted(snapshot.roots)
    out: dict[int, list[_Part]] = defaultdict(list)
    for rp_id in pool:
        root = snapshot.roots[rp_id]
        if tree is not None and root != tree:
            continue
        if not all((record := snapshot.record(rp_id, rc)) and can_take(record, amount) for rc, amount in resources):
            continue
        if group.traits and not group.traits.matches(frozenset(snapshot.traits.get(rp_id, ()))):
            continue
        if group.member_of and not group.member_of.matches(snapshot.aggregates.get(rp_id, _EMPTY)):
            continue
        # A resourceless group (1.36) maps to its provider but allocates nothing there.
        out[root].append((((rp_id, requested),) if requested else (), (rp_id,)))
    return {root: tuple(parts) for root, parts in out.items()}


def _in_aggregates(snapshot: Snapshot, group: RequestGroup, rp_id: int, root: int) -> bool:
    """member_of of the unnumbered group: an aggregate on the root spans its whole tree."""
    member_of = group.member_of
    own = snapshot.aggregates.get(rp_id, _EMPTY)
    root_aggs = snapshot.aggregates.get(root, _EMPTY)
    if member_of.forbidden and (member_of.forbidden & own or member_of.forbidden & root_aggs):
        return False
    if member_of.any_of:
        return (all(entry & own for entry in member_of.any_of)
                or all(entry & root_aggs for entry in member_of.any_of))
    return True


def _tree_parts(snapshot: Snapshot, group: RequestGroup) -> dict[int, tuple[_Part, ...]]:
    """Per root, the ways the providers of that tree can together satisfy the unnumbered group."""
    tree = _tree_root(snapshot, group)
    inventories, traits = snapshot.inventories, snapshot.traits
    classes = list(group.resources.items())
    requested = dict(group.resources)
    amounts = tuple(classes)
    forbidden = group.traits.forbidden
    required, any_of = group.traits.required, group.traits.any_of
    out: dict[int, tuple[_Part, ...]] = {}
    for root, members in snapshot.by_root.items():
        if tree is not None and root != tree:
            continue
        if forbidden or group.member_of:
            members = [rp_id for rp_id in members
                       if not (forbidden and not forbidden.isdisjoint(traits.get(rp_id, ())))
                       and (not group.member_of or _in_aggregates(snapshot, group, rp_id, root))]
        # For each class, the providers of this tree that can give the amount.
        fitting: dict[str, list[int]] = {rc: [] for rc in requested}
        for rp_id in members:
            for record in inventories.get(rp_id, ()):
                amount = requested.get(record[RESOURCE_CLASS])
                if amount is not None and can_take(record, amount):
                    fitting[record[RESOURCE_CLASS]].append(rp_id)
        lists = [fitting[rc] for rc in requested]
        if not all(lists):
            continue
        parts = []
        for combo in itertools.product(*lists):
            providers = tuple(sorted(set(combo)))
            if required or any_of:
                union = frozenset().union(*(traits.get(rp_id, ()) for rp_id in providers))
                if not required <= union or not all(entry & union for entry in any_of):
                    continue
            if len(providers) == 1:
                # The usual case: one provider (a compute node) supplies every class.
                parts.append((((providers[0], amounts),), providers))
                continue
            by_provider: dict[int, list[tuple[str, int]]] = {}
            for rp_id, pair in zip(combo, classes, strict=True):
                by_provider.setdefault(rp_id, []).append(pair)
            parts.append((tuple((rp_id, tuple(pairs)) for rp_id, pairs in by_provider.items()), providers))
        if parts:
            out[root] = tuple(parts)
    return out


def _is_under(snapshot: Snapshot, rp_id: int, ancestor: int) -> bool:
    current: int | None = rp_id
    while current is not None:
        if current == ancestor:
            return True
        current = snapshot.parents[current]
    return False


def _same_subtree(snapshot: Snapshot, members: set[int]) -> bool:
    """Whether one of `members` has all the others in its subtree."""
    return any(all(_is_under(snapshot, other, top) for other in members) for top in members)


def _consolidate(parts: tuple[_Part, ...]) -> Allocations:
    """Amounts of all parts added up by provider and class."""
    if len(parts) == 1:
        return parts[0][0]
    totals: dict[int, dict[str, int]] = {}
    for allocations, _ in parts:
        for rp_id, amounts in allocations:
            total = totals.setdefault(rp_id, {})
            for rc, amount in amounts:
                total[rc] = total.get(rc, 0) + amount
    return tuple((rp_id, tuple(total.items())) for rp_id, total in totals.items())


def _within_capacity(snapshot: Snapshot, allocations: Allocations) -> bool:
    for rp_id, amounts in allocations:
        for rc, amount in amounts:
            record = snapshot.record(rp_id, rc)
            # Placement re-checks only room and max_unit once amounts are added up.
            if record is None or amount > record[MAX_UNIT] or not fits(
                    amount, record[USED], record[TOTAL], record[RESERVED], record[ALLOCATION_RATIO]):
                return False
    return True


def match(snapshot: Snapshot, request: CandidatesRequest) -> Candidates:
    """The allocation requests that satisfy `request` within `snapshot`, and the providers to
    summarize for them."""
    suffixes = list(request.groups)
    options: list[dict[int, tuple[_Part, ...]]] = []
    for suffix in suffixes:
        group = request.groups[suffix]
        parts = _single_provider_parts(snapshot, group) if group.same_provider else _tree_parts(snapshot, group)
        if not parts:
            return Candidates([], [])
        options.append(parts)

    anchors = set(options[0]).intersection(*options[1:])
    if request.root_required:
        anchors = {root for root in anchors
                   if request.root_required.matches(frozenset(snapshot.traits.get(root, ())))}

    granular = [i for i, suffix in enumerate(suffixes) if suffix]
    isolate = request.group_policy == "isolate" and len(granular) > 1
    subtrees = [[i for i, suffix in enumerate(suffixes) if suffix in names] for names in request.same_subtrees]
    # Amounts only add up when several groups ask for the same class.
    seen: set[str] = set()
    shared_class = False
    for group in request.groups.values():
        shared_class = shared_class or bool(seen & group.resources.keys())
        seen |= group.resources.keys()

    requests: list[AllocationRequest] = []
    limit = request.limit
    single = len(suffixes) == 1
    for root in sorted(anchors):
        for combo in itertools.product(*(parts[root] for parts in options)):
            if isolate and len({combo[i][1][0] for i in granular}) < len(granular):
                continue
            if subtrees and not all(
                    _same_subtree(snapshot, {rp for i in indexes for rp in combo[i][1]})
                    for indexes in subtrees):
                continue
            allocations = _consolidate(combo)
            if not request.nested_aware and len(allocations) > 1:
                continue
            if shared_class and not _within_capacity(snapshot, allocations):
                continue
            if single:
                mappings: Mappings = ((suffixes[0], combo[0][1]),)
            else:
                mappings = tuple((suffix, part[1]) for suffix, part in zip(suffixes, combo, strict=True))
            requests.append((allocations, mappings))
            if len(requests) == limit:
                break
        if len(requests) == limit:
            break

    if request.nested_aware:
        roots = {snapshot.roots[rp_id] for allocations, _ in requests for rp_id, _ in allocations}
        summary = sorted(rp_id for root in roots for rp_id in snapshot.by_root[root])
    else:
        summary = sorted({rp_id for allocations, _ in requests for rp_id, _ in allocations})
    return Candidates(requests, summary)
