"""Candidate filtering and the built-in choosers, as pure functions of a Snapshot.

Filtering says, for each node, whether it may take the request and if not why (the reasons are
what a user sees when nothing fits). A chooser then picks one of the nodes that passed:

- `fewest-instances` (the default): the node running the fewest instances, so work spreads by
  count; ties go to the node with the most free memory, then by name.
- `pack`: best fit — the node left with the least free room after placing, so big holes stay whole.
- `spread`: the node left with the most free room, so load evens out.

Ties are broken by node name, so the same snapshot always gives the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from blazar_lite.allocators.snapshot import Decision, Node, PlacementRequest, Rejection, Snapshot

FEWEST_INSTANCES = "fewest-instances"
PACK = "pack"
SPREAD = "spread"
BUILTIN = (FEWEST_INSTANCES, PACK, SPREAD)

_UNITS = {"VCPU": "vCPU", "MEMORY_MB": "MB of memory", "DISK_GB": "GB of disk"}


def _short(node: Node, request: PlacementRequest) -> str | None:
    """What the node lacks for the request now, in words, or None when it has room."""
    lacking = []
    for resource_class, amount in sorted(request.resources.items()):
        free = node.free(resource_class)
        if amount > free:
            unit = _UNITS.get(resource_class, resource_class)
            lacking.append(f"{amount} {unit} asked, {max(free, 0)} free")
    return "; ".join(lacking) or None


def rejection_reason(node: Node, request: PlacementRequest) -> str | None:
    """Why `node` may not take `request`, or None when it may."""
    if node.offline:
        return "the node is down"
    if node.drained:
        return "the node is in maintenance"
    if node.name in request.avoid:
        return "the instance is leaving this node"
    if node.reservation_slots is not None:
        total, used = node.reservation_slots
        if used >= total:
            return f"the reservation's {total} {'slot' if total == 1 else 'slots'} on this node are all in use"
    if request.reservation_id is not None and request.affinity is not None and request.siblings_on:
        if request.affinity and node.name not in request.siblings_on:
            return (f"reservation {request.reservation_id} has affinity: its instances are on "
                    f"{', '.join(sorted(request.siblings_on))}")
        if not request.affinity and node.name in request.siblings_on:
            return f"reservation {request.reservation_id} has anti-affinity: another of its instances is here"
    return _short(node, request)


def filter_candidates(snapshot: Snapshot, request: PlacementRequest) -> tuple[list[Node], list[Rejection]]:
    """The nodes that may take the request, and a rejection for each of the others."""
    passed: list[Node] = []
    rejected: list[Rejection] = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        reason = rejection_reason(node, request)
        if reason is None:
            passed.append(node)
        else:
            rejected.append(Rejection(node.name, reason))
    return passed, rejected


def _free_fraction(node: Node, request: PlacementRequest) -> float:
    """The mean share of each class's capacity left free once the request is placed."""
    classes = [rc for rc in ("VCPU", "MEMORY_MB", "DISK_GB") if node.capacity.get(rc)]
    if not classes:
        return 0.0
    left = [(node.free(rc) - request.resources.get(rc, 0)) / node.capacity[rc] for rc in classes]
    return sum(left) / len(left)


_CHOOSERS: dict[str, Callable[[Sequence[Node], PlacementRequest], Node]] = {
    FEWEST_INSTANCES: lambda nodes, request: min(
        nodes, key=lambda n: (n.instance_count, -n.free("MEMORY_MB"), n.name)),
    PACK: lambda nodes, request: min(nodes, key=lambda n: (_free_fraction(n, request), n.name)),
    SPREAD: lambda nodes, request: min(nodes, key=lambda n: (-_free_fraction(n, request), n.name)),
}


def no_room_message(request: PlacementRequest, rejections: Sequence[Rejection]) -> str:
    """One sentence for a request nothing could take, naming a few nodes and why."""
    where = f"in reservation {request.reservation_id}" if request.reservation_id else "on demand"
    if not rejections:
        return f"No node can take the instance {where}: there are no candidate nodes."
    shown = "; ".join(f"{r.node}: {r.reason}" for r in rejections[:5])
    more = f" (and {len(rejections) - 5} more)" if len(rejections) > 5 else ""
    return f"No node can take the instance {where}: {shown}{more}."


def choose(snapshot: Snapshot, request: PlacementRequest, policy: str = FEWEST_INSTANCES) -> Decision:
    """Filter the snapshot's nodes, then pick one with the built-in `policy`."""
    if policy not in _CHOOSERS:
        raise ValueError(f"unknown built-in allocator {policy!r}; use one of {', '.join(BUILTIN)}")
    passed, rejected = filter_candidates(snapshot, request)
    if not passed:
        return Decision(None, no_room_message(request, rejected), tuple(rejected))
    return Decision(_CHOOSERS[policy](passed, request).name, rejections=tuple(rejected))
