"""The built-in allocators: candidate filtering with reasons, and the three choosers."""

from __future__ import annotations

import pytest

from blazar_lite.allocators import builtin
from blazar_lite.allocators.snapshot import DOWN, MAINTENANCE, Node, PlacementRequest, Snapshot

CAPACITY = {"VCPU": 16, "MEMORY_MB": 32768, "DISK_GB": 500}


def node(name: str, vcpus_used: int = 0, memory_used: int = 0, instances: int = 0, status: str = "up",
         slots: tuple[int, int] | None = None) -> Node:
    return Node(name=name, provider_uuid=f"uuid-{name}", status=status, capacity=CAPACITY,
                used={"VCPU": vcpus_used, "MEMORY_MB": memory_used, "DISK_GB": 0}, instance_count=instances,
                reservation_slots=slots)


def request(vcpus: int = 2, memory_mb: int = 2048, **kwargs: object) -> PlacementRequest:
    return PlacementRequest(name="vm", project_id="p1", resources={"VCPU": vcpus, "MEMORY_MB": memory_mb},
                            **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("candidate", "asked", "reason"), [
    (node("a", status=DOWN), request(), "the node is down"),
    (node("a", status=MAINTENANCE), request(), "the node is in maintenance"),
    (node("a"), request(avoid=frozenset({"a"})), "the instance is leaving this node"),
    (node("a", vcpus_used=15), request(), "2 vCPU asked, 1 free"),
    (node("a", memory_used=32768), request(vcpus=1), "2048 MB of memory asked, 0 free"),
    (node("a", slots=(2, 2)), request(reservation_id="r1"), "slots on this node are all in use"),
    (node("a"), request(reservation_id="r1", affinity=True, siblings_on=frozenset({"b"})), "has affinity"),
    (node("a"), request(reservation_id="r1", affinity=False, siblings_on=frozenset({"a"})), "anti-affinity"),
])
def test_a_node_that_cannot_take_the_request_says_why(candidate: Node, asked: PlacementRequest, reason: str) -> None:
    found = builtin.rejection_reason(candidate, asked)
    assert found is not None and reason in found


@pytest.mark.parametrize("asked", [
    request(), request(reservation_id="r1", affinity=True, siblings_on=frozenset({"a"})),
    request(reservation_id="r1", affinity=False, siblings_on=frozenset({"b"})),
])
def test_a_node_with_room_passes(asked: PlacementRequest) -> None:
    assert builtin.rejection_reason(node("a", vcpus_used=14, slots=(2, 1)), asked) is None


def test_fewest_instances_prefers_the_least_busy_node_then_the_most_free_memory_then_the_name() -> None:
    snapshot = Snapshot((node("a", instances=3), node("b", instances=1, memory_used=4096),
                         node("c", instances=1), node("d", instances=1)))
    assert builtin.choose(snapshot, request()).node == "c"


def test_pack_chooses_the_fullest_node_that_still_fits() -> None:
    snapshot = Snapshot((node("a", vcpus_used=2), node("b", vcpus_used=12), node("c", vcpus_used=15)))
    assert builtin.choose(snapshot, request(), builtin.PACK).node == "b"


def test_spread_chooses_the_emptiest_node() -> None:
    snapshot = Snapshot((node("a", vcpus_used=2), node("b", vcpus_used=0), node("c", vcpus_used=12)))
    assert builtin.choose(snapshot, request(), builtin.SPREAD).node == "b"


def test_when_no_node_fits_the_decision_lists_every_reason() -> None:
    snapshot = Snapshot((node("a", status=DOWN), node("b", vcpus_used=16)))
    decision = builtin.choose(snapshot, request())
    assert not decision.placed
    assert [(r.node, r.reason) for r in decision.rejections] == [("a", "the node is down"),
                                                                 ("b", "2 vCPU asked, 0 free")]
    assert decision.message == "No node can take the instance on demand: a: the node is down; b: 2 vCPU asked, 0 free."


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown built-in allocator"):
        builtin.choose(Snapshot(()), request(), "random")
