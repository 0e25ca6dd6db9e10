"""/placement/allocation_candidates: where a set of resources could be allocated (from 1.10)."""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as quote

from flask import Response, request
from flask_smorest import Blueprint
from marshmallow import Schema, fields

from blazar_lite.placement import candidates
from blazar_lite.placement.api import microversion
from blazar_lite.placement.api.common import reading
from blazar_lite.placement.candidates_match import RESOURCE_CLASS, USED, Amounts, Inventories, reported_capacity

blp = Blueprint("placement_candidates", __name__, description="Allocation candidates")

# The body is written as JSON text directly rather than built as dicts for json.dumps: a large
# answer holds tens of thousands of small objects, and building them (and the garbage collection
# they trigger) cost more than the search itself. Every string goes through the json module's
# own quoting, so the output is the same JSON that json.dumps would write.


class CandidatesSchema(Schema):
    allocation_requests = fields.List(fields.Dict(), metadata={
        "description": "Bodies usable for PUT /allocations/{consumer}: a list of allocations before 1.12, "
                       "a dict by provider uuid from 1.12, with mappings (suffix to providers) from 1.34."})
    provider_summaries = fields.Dict(metadata={
        "description": "By provider uuid: resources (capacity, used), traits from 1.17, parent and root "
                       "provider uuids from 1.29."})


class _Writer:
    """JSON text for one answer, at one microversion.

    Providers of one cloud tend to look alike, so the text of an amounts dict, a trait list or an
    inventory list is written once and reused for every provider that has the same.
    """

    def __init__(self, result: candidates.CandidatesResult, requested: set[str], minor: int) -> None:
        self.result = result
        self.snapshot = result.snapshot
        self.requested = requested
        self.minor = minor
        self.uuids = {rp_id: quote(uuid) for rp_id, uuid in self.snapshot.uuids.items()}
        self._amounts: dict[Amounts, str] = {}
        self._traits: dict[tuple[str, ...], str] = {}
        self._resources: dict[Inventories, str] = {}

    def amounts(self, amounts: Amounts) -> str:
        text = self._amounts.get(amounts)
        if text is None:
            text = self._amounts[amounts] = "{" + ",".join(f"{quote(rc)}:{n}" for rc, n in amounts) + "}"
        return text

    def allocation_request(self, ar: candidates.AllocationRequest) -> str:
        allocations, mappings = ar
        uuids, amounts = self.uuids, self.amounts
        if self.minor < 12:
            items = ",".join(f'{{"resource_provider":{{"uuid":{uuids[rp_id]}}},"resources":{amounts(res)}}}'
                             for rp_id, res in allocations)
            return f'{{"allocations":[{items}]}}'
        items = ",".join(f'{uuids[rp_id]}:{{"resources":{amounts(res)}}}' for rp_id, res in allocations)
        if self.minor < 34:
            return f'{{"allocations":{{{items}}}}}'
        groups = ",".join(f'{quote(suffix)}:[{",".join(uuids[rp_id] for rp_id in rp_ids)}]'
                          for suffix, rp_ids in mappings)
        return f'{{"allocations":{{{items}}},"mappings":{{{groups}}}}}'

    def resources(self, inventories: Inventories) -> str:
        text = self._resources.get(inventories)
        if text is None:
            # Before 1.27 a summary lists only the requested classes.
            shown = inventories if self.minor >= 27 else [r for r in inventories if r[RESOURCE_CLASS] in self.requested]
            text = self._resources[inventories] = "{" + ",".join(
                f'{quote(r[RESOURCE_CLASS])}:{{"capacity":{reported_capacity(r)},"used":{r[USED]}}}'
                for r in shown) + "}"
        return text

    def traits(self, names: tuple[str, ...]) -> str:
        text = self._traits.get(names)
        if text is None:
            text = self._traits[names] = "[" + ",".join(map(quote, names)) + "]"
        return text

    def summary(self, rp_id: int) -> str:
        snapshot, uuids, minor = self.snapshot, self.uuids, self.minor
        resources = self.resources(snapshot.inventories.get(rp_id, ()))
        if minor < 17:
            return f'{uuids[rp_id]}:{{"resources":{resources}}}'
        traits = self.traits(snapshot.traits.get(rp_id, ()))
        if minor < 29:
            return f'{uuids[rp_id]}:{{"resources":{resources},"traits":{traits}}}'
        parent = snapshot.parents[rp_id]
        return (f'{uuids[rp_id]}:{{"resources":{resources},"traits":{traits},'
                f'"parent_provider_uuid":{"null" if parent is None else uuids[parent]},'
                f'"root_provider_uuid":{uuids[snapshot.roots[rp_id]]}}}')

    def body(self) -> str:
        requests = ",".join(map(self.allocation_request, self.result.allocation_requests))
        summaries = ",".join(map(self.summary, self.result.summary_provider_ids))
        return f'{{"allocation_requests":[{requests}],"provider_summaries":{{{summaries}}}}}'


@blp.route("/allocation_candidates", methods=["GET"])
@blp.alt_response(200, schema=CandidatesSchema, description="Allocation requests and provider summaries.")
def list_allocation_candidates():  # type: ignore[no-untyped-def]
    """Allocation requests that would satisfy the requested resources, traits and aggregates,
    with a summary of each provider involved. Query: resources, required (1.17), member_of (1.21),
    granular groups resourcesN/requiredN/member_ofN (1.25; string suffixes 1.33), in_tree (1.31),
    group_policy (1.25), limit (1.16), root_required (1.35), same_subtree (1.36).

    Results come in a deterministic order (by root provider, then by provider), never shuffled.
    """
    microversion.require(10)
    minor = microversion.current()[1]
    args = {key: request.args.getlist(key) for key in request.args}
    with reading() as session:
        wanted = candidates.parse_candidates_request(args, minor)
        result = candidates.find_allocation_candidates(session, wanted)
    return Response(_Writer(result, wanted.requested_classes, minor).body(), mimetype="application/json")
