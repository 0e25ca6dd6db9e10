"""Allocation candidates: which providers could satisfy a request for resources, and how.

The work is split in three: `candidates_request` parses the query string into a request;
this module narrows the provider trees in SQL and loads a snapshot of just those trees (the
per-class capacity test, trait and aggregate filters and the per-tree grouping are done by the
database); `candidates_match.match` then decides, without the database, which combinations of
providers satisfy every request group.

Sharing providers (MISC_SHARES_VIA_AGGREGATE) are not considered: every allocation request is
taken from the providers of one tree.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any

from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Connection,
    Integer,
    Select,
    and_,
    any_,
    exists,
    false,
    func,
    intersect,
    literal,
    or_,
    select,
)
from sqlalchemy.orm import Session

from blazar_lite.placement.candidates_match import AllocationRequest, Inventories, Snapshot, match
from blazar_lite.placement.candidates_request import CandidatesRequest, RequestGroup, parse_candidates_request
from blazar_lite.placement.common import resource_class_ids, trait_ids
from blazar_lite.placement.models import (
    Aggregate,
    ResourceClass,
    ResourceProvider,
    Trait,
    provider_aggregates,
    provider_traits,
)
from blazar_lite.placement.models import Inventory as InventoryRow

__all__ = ["AllocationRequest", "CandidatesRequest", "CandidatesResult", "find_allocation_candidates",
           "parse_candidates_request"]


@dataclass(frozen=True)
class CandidatesResult:
    """Allocation requests and the providers to summarize (internal ids), with the snapshot that
    holds their uuids, inventories, usage and traits."""

    allocation_requests: list[AllocationRequest]
    summary_provider_ids: list[int]
    snapshot: Snapshot


_NOTHING = CandidatesResult([], [], Snapshot(roots={}))
_BATCH = 100


class _NoMatch(Exception):
    """A filter names something that does not exist (a provider, every aggregate of a member_of
    entry), so nothing can match: the answer is empty, not an error."""


@dataclass(frozen=True)
class _Ids:
    """Names and uuids of the request translated to internal ids."""

    classes: dict[str, int]
    traits: dict[str, int]
    aggregates: dict[str, int]
    trees: dict[str, int]


def _resolve(session: Session, request: CandidatesRequest) -> _Ids:
    groups = request.groups.values()
    classes = resource_class_ids(session, {rc for g in groups for rc in g.resources})
    names = set(request.root_required.names).union(*(g.traits.names for g in groups))
    traits = trait_ids(session, names)
    uuids: set[str] = set().union(*(g.member_of.forbidden.union(*g.member_of.any_of) for g in groups))
    aggregates = dict(session.execute(select(Aggregate.uuid, Aggregate.id)
                                      .where(Aggregate.uuid.in_(uuids))).all()) if uuids else {}
    wanted = {g.in_tree for g in groups if g.in_tree}
    trees = dict(session.execute(select(ResourceProvider.uuid, ResourceProvider.root_provider_id)
                                 .where(ResourceProvider.uuid.in_(wanted))).all()) if wanted else {}
    if wanted - trees.keys():
        raise _NoMatch
    return _Ids(classes, traits, aggregates, trees)


def _has_trait(provider_id: Any, ids: list[int]) -> ColumnElement[bool]:
    return exists().where(provider_traits.c.resource_provider_id == provider_id, provider_traits.c.trait_id.in_(ids))


def _in_aggregate(provider_id: Any, ids: list[int]) -> ColumnElement[bool]:
    if not ids:
        return false()
    return exists().where(provider_aggregates.c.resource_provider_id == provider_id,
                          provider_aggregates.c.aggregate_id.in_(ids))


def _aggregate_entries(group: RequestGroup, ids: _Ids) -> list[list[int]]:
    entries = [[ids.aggregates[u] for u in sorted(entry) if u in ids.aggregates] for entry in group.member_of.any_of]
    if any(not entry for entry in entries):
        # An entry naming only unknown aggregates can be satisfied by no provider.
        raise _NoMatch
    return entries


def _fitting(column: Any, class_id: int, amount: int, where: list[ColumnElement[bool]]) -> Select[Any]:
    """`column` of the providers whose inventory of `class_id` can take `amount` now
    (capacity.fits and capacity.unit_problem, in SQL), among those passing `where`."""
    inv = InventoryRow
    rp = column.table
    return (select(column).select_from(inv).join(rp, rp.c.id == inv.resource_provider_id)
            .where(inv.resource_class_id == class_id, inv.min_unit <= amount, inv.max_unit >= amount,
                   amount % inv.step_size == 0,
                   inv.used + amount <= (inv.total - inv.reserved) * inv.allocation_ratio,
                   *where))


def _group_roots(group: RequestGroup, ids: _Ids) -> list[ColumnElement[bool]]:
    """Conditions on a root provider's id that hold when its tree can satisfy `group` on its own
    (necessary conditions: `match` decides)."""
    root = ResourceProvider.id
    rp = ResourceProvider.__table__.alias("rp")
    where: list[ColumnElement[bool]] = []
    if group.in_tree:
        where.append(rp.c.root_provider_id == ids.trees[group.in_tree])
    traits = group.traits
    forbidden_traits = [ids.traits[t] for t in sorted(traits.forbidden)]
    required = [[ids.traits[t]] for t in sorted(traits.required)] + \
               [[ids.traits[t] for t in sorted(entry)] for entry in traits.any_of]
    aggregates = _aggregate_entries(group, ids)
    forbidden_aggregates = [ids.aggregates[u] for u in sorted(group.member_of.forbidden) if u in ids.aggregates]
    classes = [(ids.classes[rc], amount) for rc, amount in group.resources.items()]

    if group.same_provider:
        # Everything is checked on the provider itself.
        where += [_has_trait(rp.c.id, entry) for entry in required]
        if forbidden_traits:
            where.append(~_has_trait(rp.c.id, forbidden_traits))
        where += [_in_aggregate(rp.c.id, entry) for entry in aggregates]
        if forbidden_aggregates:
            where.append(~_in_aggregate(rp.c.id, forbidden_aggregates))
        if not classes:
            return [root.in_(select(rp.c.root_provider_id).where(*where))]
        providers = intersect(*(_fitting(rp.c.id, class_id, amount, where) for class_id, amount in classes)) \
            if len(classes) > 1 else _fitting(rp.c.id, *classes[0], where)
        owner = ResourceProvider.__table__.alias("owner")
        return [root.in_(select(owner.c.root_provider_id).where(owner.c.id.in_(providers)))]

    # The unnumbered group: each class may come from another provider of the tree.
    if forbidden_traits:
        where.append(~_has_trait(rp.c.id, forbidden_traits))
    if aggregates:
        # An aggregate on the root spans the whole tree.
        where.append(or_(and_(*(_in_aggregate(rp.c.id, e) for e in aggregates)),
                         and_(*(_in_aggregate(rp.c.root_provider_id, e) for e in aggregates))))
    if forbidden_aggregates:
        where.append(~_in_aggregate(rp.c.id, forbidden_aggregates))
        where.append(~_in_aggregate(rp.c.root_provider_id, forbidden_aggregates))
    # Trees having every class: the intersection of the trees having each.
    trees = intersect(*(_fitting(rp.c.root_provider_id, class_id, amount, where) for class_id, amount in classes)) \
        if len(classes) > 1 else _fitting(rp.c.root_provider_id, *classes[0], where)
    conditions = [root.in_(trees)]
    # Required traits are collective: some provider of the tree must have each (match checks
    # that it is one of the providers that supply the resources).
    member = ResourceProvider.__table__.alias("member")
    conditions += [exists().where(member.c.root_provider_id == root,
                                  provider_traits.c.resource_provider_id == member.c.id,
                                  provider_traits.c.trait_id.in_(entry)) for entry in required]
    return conditions


def _candidate_roots(session: Session, request: CandidatesRequest, ids: _Ids) -> list[int]:
    root = ResourceProvider
    where = [condition for group in request.groups.values() for condition in _group_roots(group, ids)]
    required = request.root_required
    for name in sorted(required.required):
        where.append(_has_trait(root.id, [ids.traits[name]]))
    if required.forbidden:
        where.append(~_has_trait(root.id, [ids.traits[n] for n in sorted(required.forbidden)]))
    return list(session.connection().scalars(select(root.id).where(*where).order_by(root.id)).all())


def _among(connection: Connection, column: Any, ids: list[int]) -> ColumnElement[bool]:
    """`column IN ids` with the ids bound as one parameter (an array on PostgreSQL, a JSON array
    read by json_each on SQLite): thousands of separate parameters cost more than the query."""
    if connection.dialect.name == "postgresql":
        return column == any_(literal(ids, ARRAY(Integer)))
    values = func.json_each(json.dumps(ids)).table_valued("value")
    return column.in_(select(values.c.value))


def _rows(connection: Connection, stmt: Select[Any]) -> Iterator[Any]:
    # Batches keep memory (and garbage-collector work) flat on large answers; fetching row by
    # row would cost a driver call per row.
    for batch in connection.execute(stmt).partitions(_BATCH):
        yield from batch


def _load_snapshot(session: Session, tree_roots: list[int], with_aggregates: bool) -> Snapshot:
    """Providers with their traits, inventories with usage (and aggregates when asked) of the
    trees rooted at `tree_roots`."""
    connection = session.connection()
    rp = ResourceProvider
    in_trees = _among(connection, rp.root_provider_id, tree_roots)
    trait_names = (select(func.aggregate_strings(Trait.name, ","))
                   .join(provider_traits, provider_traits.c.trait_id == Trait.id)
                   .where(provider_traits.c.resource_provider_id == rp.id).scalar_subquery())
    roots: dict[int, int] = {}
    parents: dict[int, int | None] = {}
    uuids: dict[int, str] = {}
    traits: dict[int, tuple[str, ...]] = {}
    trees: dict[int, tuple[int, ...]] = {}
    providers = _rows(connection, select(rp.id, rp.uuid, rp.parent_provider_id, rp.root_provider_id, trait_names)
                      .where(in_trees).order_by(rp.root_provider_id, rp.id))
    for root_id, rows in groupby(providers, key=itemgetter(3)):
        members = []
        for rp_id, uuid, parent_id, _, names in rows:
            members.append(rp_id)
            roots[rp_id] = root_id
            parents[rp_id] = parent_id
            uuids[rp_id] = uuid
            if names:
                traits[rp_id] = tuple(sorted(names.split(",")))
        trees[root_id] = tuple(members)

    inv = InventoryRow
    rows = _rows(connection, select(
            inv.resource_provider_id, ResourceClass.name, inv.total, inv.reserved, inv.min_unit,
            inv.max_unit, inv.step_size, inv.allocation_ratio, inv.used)
            .join(ResourceClass, ResourceClass.id == inv.resource_class_id)
            .join(rp, rp.id == inv.resource_provider_id)
            .where(in_trees)
            .order_by(inv.resource_provider_id, inv.resource_class_id))
    # Rows come grouped by provider; the columns after the first are an inventory record.
    inventories: dict[int, Inventories] = {
        rp_id: tuple(row[1:] for row in group) for rp_id, group in groupby(rows, key=itemgetter(0))}

    aggregates: dict[int, set[str]] = defaultdict(set)
    if with_aggregates:
        for rp_id, uuid in _rows(connection, select(provider_aggregates.c.resource_provider_id, Aggregate.uuid)
                                 .join(Aggregate, Aggregate.id == provider_aggregates.c.aggregate_id)
                                 .join(rp, rp.id == provider_aggregates.c.resource_provider_id)
                                 .where(in_trees)):
            aggregates[rp_id].add(uuid)

    return Snapshot(roots=roots, parents=parents, uuids=uuids, inventories=inventories, traits=traits,
                    aggregates={k: frozenset(v) for k, v in aggregates.items()}, trees=trees)


def find_allocation_candidates(session: Session, request: CandidatesRequest) -> CandidatesResult:
    """The allocation requests that satisfy `request` now, and the providers to summarize.

    Unknown resource classes and traits are a 400; an unknown in_tree provider or member_of
    aggregate simply matches nothing.
    """
    try:
        ids = _resolve(session, request)
        roots = _candidate_roots(session, request, ids)
    except _NoMatch:
        return _NOTHING
    if not roots:
        return _NOTHING
    with_aggregates = any(group.member_of for group in request.groups.values())
    snapshot = _load_snapshot(session, roots, with_aggregates)
    found = match(snapshot, request)
    return CandidatesResult(found.allocation_requests, found.summary_provider_ids, snapshot)
