"""Allocation candidates as a pure function of a snapshot and a request: no database."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs

from blazar_lite.placement.candidates_match import (
    Candidates,
    InventoryRecord,
    Snapshot,
    can_take,
    inventory,
    match,
    reported_capacity,
)
from blazar_lite.placement.candidates_request import parse_candidates_request

AGG_A = "aaaaaaaa-0000-4000-8000-000000000001"
AGG_B = "bbbbbbbb-0000-4000-8000-000000000002"


def uuid_of(rp_id: int) -> str:
    return f"00000000-0000-4000-8000-{rp_id:012d}"


@dataclass
class World:
    """Providers by id; a provider without a parent is a root."""

    roots: dict[int, int] = field(default_factory=dict)
    parents: dict[int, int | None] = field(default_factory=dict)
    inventories: dict[int, tuple[InventoryRecord, ...]] = field(default_factory=dict)
    traits: dict[int, tuple[str, ...]] = field(default_factory=dict)
    aggregates: dict[int, frozenset[str]] = field(default_factory=dict)

    def add(self, rp_id: int, *records: InventoryRecord, parent: int | None = None, traits: tuple[str, ...] = (),
            aggregates: tuple[str, ...] = ()) -> int:
        self.roots[rp_id] = rp_id if parent is None else self.roots[parent]
        self.parents[rp_id] = parent
        if records:
            self.inventories[rp_id] = tuple(sorted(records))
        if traits:
            self.traits[rp_id] = tuple(sorted(traits))
        if aggregates:
            self.aggregates[rp_id] = frozenset(aggregates)
        return rp_id

    def snapshot(self) -> Snapshot:
        return Snapshot(roots=self.roots, parents=self.parents, uuids={i: uuid_of(i) for i in self.roots},
                        inventories=self.inventories, traits=self.traits, aggregates=self.aggregates)

    def find(self, query: str, minor: int = 39) -> Candidates:
        return match(self.snapshot(), parse_candidates_request(parse_qs(query, keep_blank_values=True), minor))


def allocations(found: Candidates) -> list[dict[int, dict[str, int]]]:
    return [{rp_id: dict(amounts) for rp_id, amounts in taken} for taken, _ in found.allocation_requests]


def mappings(found: Candidates) -> list[dict[str, tuple[int, ...]]]:
    return [dict(groups) for _, groups in found.allocation_requests]


def compute_node(world: World, rp_id: int, vcpu: int = 8, memory: int = 4096, **kw) -> int:  # type: ignore[no-untyped-def]
    return world.add(rp_id, inventory("VCPU", vcpu), inventory("MEMORY_MB", memory), **kw)


def test_a_single_provider_with_every_class_is_a_candidate():
    world = World()
    compute_node(world, 1)
    found = world.find("resources=VCPU:2,MEMORY_MB:512")
    assert allocations(found) == [{1: {"VCPU": 2, "MEMORY_MB": 512}}]
    assert mappings(found) == [{"": (1,)}]
    assert found.summary_provider_ids == [1]


def test_a_provider_missing_a_class_is_not_a_candidate():
    world = World()
    world.add(1, inventory("VCPU", 8))
    assert world.find("resources=VCPU:1,MEMORY_MB:1").allocation_requests == []


def test_the_unnumbered_group_spreads_over_one_tree():
    world = World()
    compute_node(world, 1)
    world.add(2, inventory("CUSTOM_FPGA", 2), parent=1)
    found = world.find("resources=VCPU:1,CUSTOM_FPGA:1")
    assert allocations(found) == [{1: {"VCPU": 1}, 2: {"CUSTOM_FPGA": 1}}]
    assert mappings(found) == [{"": (1, 2)}]


def test_the_unnumbered_group_never_spreads_over_two_trees():
    world = World()
    world.add(1, inventory("VCPU", 8))
    world.add(2, inventory("CUSTOM_FPGA", 2))
    assert world.find("resources=VCPU:1,CUSTOM_FPGA:1").allocation_requests == []


def test_every_combination_of_providers_in_a_tree_is_a_candidate():
    world = World()
    world.add(1, inventory("VCPU", 8))
    world.add(2, inventory("SRIOV_NET_VF", 4), parent=1)
    world.add(3, inventory("SRIOV_NET_VF", 4), parent=1)
    found = world.find("resources=VCPU:1,SRIOV_NET_VF:1")
    assert allocations(found) == [{1: {"VCPU": 1}, 2: {"SRIOV_NET_VF": 1}},
                                  {1: {"VCPU": 1}, 3: {"SRIOV_NET_VF": 1}}]


def test_summaries_cover_every_provider_of_the_trees_used_from_1_29():
    world = World()
    compute_node(world, 1)
    world.add(2, parent=1)
    world.add(3, inventory("CUSTOM_FPGA", 1), parent=2)
    compute_node(world, 4, vcpu=0)
    assert world.find("resources=VCPU:1").summary_provider_ids == [1, 2, 3]


def test_before_1_29_a_request_takes_from_one_provider_per_tree():
    world = World()
    compute_node(world, 1)
    world.add(2, inventory("CUSTOM_FPGA", 2), parent=1)
    world.add(3, inventory("VCPU", 4), inventory("CUSTOM_FPGA", 1), parent=1)
    found = world.find("resources=VCPU:1,CUSTOM_FPGA:1", 28)
    assert allocations(found) == [{3: {"VCPU": 1, "CUSTOM_FPGA": 1}}]
    assert found.summary_provider_ids == [3]


def test_a_granular_group_is_satisfied_by_a_single_provider():
    world = World()
    world.add(1, inventory("VCPU", 8))
    world.add(2, inventory("SRIOV_NET_VF", 4), parent=1)
    world.add(3, inventory("SRIOV_NET_VF", 4), inventory("CUSTOM_BW", 10), parent=1)
    found = world.find("resources=VCPU:1&resources1=SRIOV_NET_VF:1,CUSTOM_BW:5")
    assert allocations(found) == [{1: {"VCPU": 1}, 3: {"SRIOV_NET_VF": 1, "CUSTOM_BW": 5}}]
    assert mappings(found) == [{"": (1,), "1": (3,)}]


def test_group_policy_none_lets_granular_groups_share_a_provider():
    world = World()
    world.add(1)
    world.add(2, inventory("SRIOV_NET_VF", 4), parent=1)
    world.add(3, inventory("SRIOV_NET_VF", 4), parent=1)
    found = world.find("resources1=SRIOV_NET_VF:1&resources2=SRIOV_NET_VF:1&group_policy=none")
    assert allocations(found) == [{2: {"SRIOV_NET_VF": 2}}, {2: {"SRIOV_NET_VF": 1}, 3: {"SRIOV_NET_VF": 1}},
                                  {3: {"SRIOV_NET_VF": 1}, 2: {"SRIOV_NET_VF": 1}}, {3: {"SRIOV_NET_VF": 2}}]


def test_group_policy_isolate_puts_granular_groups_on_different_providers():
    world = World()
    world.add(1)
    world.add(2, inventory("SRIOV_NET_VF", 4), parent=1)
    world.add(3, inventory("SRIOV_NET_VF", 4), parent=1)
    found = world.find("resources1=SRIOV_NET_VF:1&resources2=SRIOV_NET_VF:1&group_policy=isolate")
    assert mappings(found) == [{"1": (2,), "2": (3,)}, {"1": (3,), "2": (2,)}]


def test_amounts_added_up_on_one_provider_must_still_fit():
    world = World()
    world.add(1, inventory("SRIOV_NET_VF", 1))
    assert world.find("resources1=SRIOV_NET_VF:1&resources2=SRIOV_NET_VF:1&group_policy=none") \
        .allocation_requests == []


def test_amounts_added_up_on_one_provider_must_stay_within_max_unit():
    world = World()
    world.add(1, inventory("VCPU", 16, max_unit=2))
    found = world.find("resources=VCPU:2&resources1=VCPU:1")
    assert found.allocation_requests == []


def test_same_subtree_keeps_the_groups_under_one_of_their_providers():
    world = World()
    world.add(1)
    world.add(2, inventory("VCPU", 4), parent=1)
    world.add(3, inventory("VCPU", 4), parent=1)
    world.add(4, inventory("SRIOV_NET_VF", 2), parent=2)
    world.add(5, inventory("SRIOV_NET_VF", 2), parent=3)
    found = world.find("resources1=VCPU:1&resources2=SRIOV_NET_VF:1&group_policy=none&same_subtree=1,2")
    assert mappings(found) == [{"1": (2,), "2": (4,)}, {"1": (3,), "2": (5,)}]


def test_a_resourceless_group_places_the_subtree_root():
    world = World()
    world.add(1)
    world.add(2, parent=1, traits=("CUSTOM_NUMA_FAST",))
    world.add(3, parent=1)
    world.add(4, inventory("SRIOV_NET_VF", 2), parent=2)
    world.add(5, inventory("SRIOV_NET_VF", 2), parent=3)
    found = world.find("resources1=SRIOV_NET_VF:1&required2=CUSTOM_NUMA_FAST&group_policy=none&same_subtree=1,2")
    assert mappings(found) == [{"1": (4,), "2": (2,)}]
    assert allocations(found) == [{4: {"SRIOV_NET_VF": 1}}]


def test_root_required_checks_the_traits_of_the_root():
    world = World()
    compute_node(world, 1, traits=("CUSTOM_GOLD",))
    compute_node(world, 2)
    world.add(3, inventory("VCPU", 8), parent=2, traits=("CUSTOM_GOLD",))
    assert allocations(world.find("resources=VCPU:1&root_required=CUSTOM_GOLD")) == [{1: {"VCPU": 1}}]


def test_root_required_forbidden_excludes_trees_whose_root_has_the_trait():
    world = World()
    compute_node(world, 1, traits=("COMPUTE_STATUS_DISABLED",))
    compute_node(world, 2)
    assert allocations(world.find("resources=VCPU:1&root_required=!COMPUTE_STATUS_DISABLED")) == [{2: {"VCPU": 1}}]


def test_a_provider_with_a_forbidden_trait_supplies_nothing():
    world = World()
    compute_node(world, 1, traits=("CUSTOM_SLOW",))
    world.add(2, inventory("VCPU", 8), parent=1)
    assert allocations(world.find("resources=VCPU:1&required=!CUSTOM_SLOW")) == [{2: {"VCPU": 1}}]


def test_required_traits_of_the_unnumbered_group_may_come_from_any_provider_it_takes_from():
    world = World()
    world.add(1, inventory("VCPU", 8))
    world.add(2, inventory("CUSTOM_FPGA", 1), parent=1, traits=("CUSTOM_FAST",))
    found = world.find("resources=VCPU:1,CUSTOM_FPGA:1&required=CUSTOM_FAST")
    assert allocations(found) == [{1: {"VCPU": 1}, 2: {"CUSTOM_FPGA": 1}}]


def test_required_traits_of_a_provider_that_supplies_nothing_do_not_count():
    world = World()
    world.add(1, inventory("VCPU", 8))
    world.add(2, parent=1, traits=("CUSTOM_FAST",))
    assert world.find("resources=VCPU:1&required=CUSTOM_FAST").allocation_requests == []


def test_a_granular_group_needs_its_traits_on_its_own_provider():
    world = World()
    world.add(1, inventory("VCPU", 8), traits=("CUSTOM_PHYSNET_A",))
    world.add(2, inventory("SRIOV_NET_VF", 2), parent=1)
    world.add(3, inventory("SRIOV_NET_VF", 2), parent=1, traits=("CUSTOM_PHYSNET_A",))
    found = world.find("resources1=SRIOV_NET_VF:1&required1=CUSTOM_PHYSNET_A")
    assert mappings(found) == [{"1": (3,)}]


def test_any_of_traits_accept_a_provider_with_one_of_them():
    world = World()
    compute_node(world, 1, traits=("CUSTOM_B",))
    compute_node(world, 2, traits=("CUSTOM_C",))
    found = world.find("resources=VCPU:1&required=in:CUSTOM_A,CUSTOM_B")
    assert allocations(found) == [{1: {"VCPU": 1}}]


def test_member_of_the_unnumbered_group_is_satisfied_by_the_root_aggregate():
    world = World()
    world.add(1, aggregates=(AGG_A,))
    world.add(2, inventory("VCPU", 8), parent=1)
    world.add(3)
    world.add(4, inventory("VCPU", 8), parent=3)
    assert allocations(world.find(f"resources=VCPU:1&member_of={AGG_A}")) == [{2: {"VCPU": 1}}]


def test_member_of_with_in_accepts_any_of_the_aggregates():
    world = World()
    compute_node(world, 1, aggregates=(AGG_A,))
    compute_node(world, 2, aggregates=(AGG_B,))
    compute_node(world, 3)
    assert len(world.find(f"resources=VCPU:1&member_of=in:{AGG_A},{AGG_B}").allocation_requests) == 2


def test_several_member_of_must_all_be_satisfied():
    world = World()
    compute_node(world, 1, aggregates=(AGG_A, AGG_B))
    compute_node(world, 2, aggregates=(AGG_A,))
    assert allocations(world.find(f"resources=VCPU:1&member_of={AGG_A}&member_of={AGG_B}")) == [{1: {"VCPU": 1}}]


def test_a_forbidden_aggregate_on_the_root_excludes_its_whole_tree():
    world = World()
    world.add(1, aggregates=(AGG_A,))
    world.add(2, inventory("VCPU", 8), parent=1)
    compute_node(world, 3)
    assert allocations(world.find(f"resources=VCPU:1&member_of=!{AGG_A}")) == [{3: {"VCPU": 1}}]


def test_member_of_of_a_granular_group_is_checked_on_the_provider_itself():
    world = World()
    world.add(1, aggregates=(AGG_A,))
    world.add(2, inventory("VCPU", 8), parent=1)
    world.add(3, inventory("VCPU", 8), parent=1, aggregates=(AGG_A,))
    assert mappings(world.find(f"resources1=VCPU:1&member_of1={AGG_A}")) == [{"1": (3,)}]


def test_in_tree_keeps_the_search_inside_that_tree():
    world = World()
    compute_node(world, 1)
    compute_node(world, 2)
    world.add(3, parent=2)
    assert allocations(world.find(f"resources=VCPU:1&in_tree={uuid_of(3)}")) == [{2: {"VCPU": 1}}]


def test_in_tree_naming_a_provider_outside_the_snapshot_matches_nothing():
    world = World()
    compute_node(world, 1)
    assert world.find("resources=VCPU:1&in_tree=00000000-0000-4000-8000-000000000000").allocation_requests == []


def test_an_amount_below_min_unit_does_not_fit():
    world = World()
    world.add(1, inventory("MEMORY_MB", 4096, min_unit=512))
    assert world.find("resources=MEMORY_MB:256").allocation_requests == []


def test_an_amount_above_max_unit_does_not_fit():
    world = World()
    world.add(1, inventory("VCPU", 16, max_unit=4))
    assert world.find("resources=VCPU:5").allocation_requests == []


def test_an_amount_off_the_step_size_does_not_fit():
    world = World()
    world.add(1, inventory("DISK_GB", 100, step_size=10))
    assert world.find("resources=DISK_GB:15").allocation_requests == []
    assert len(world.find("resources=DISK_GB:20").allocation_requests) == 1


def test_room_is_total_minus_reserved_times_the_allocation_ratio_minus_usage():
    world = World()
    world.add(1, inventory("VCPU", 4, reserved=1, allocation_ratio=2.0, max_unit=8, used=4))
    assert len(world.find("resources=VCPU:2").allocation_requests) == 1
    assert world.find("resources=VCPU:3").allocation_requests == []


def test_reported_capacity_truncates_to_an_integer():
    assert reported_capacity(inventory("VCPU", 3, allocation_ratio=1.5)) == 4


def test_can_take_checks_units_and_room():
    record = inventory("VCPU", 8, min_unit=2, step_size=2, used=6)
    assert can_take(record, 2)
    assert not can_take(record, 4)
    assert not can_take(record, 1)


def test_limit_keeps_the_first_requests_and_their_trees_summaries():
    world = World()
    for rp_id in (1, 2, 3):
        compute_node(world, rp_id)
    world.add(4, parent=1)
    found = world.find("resources=VCPU:1&limit=2")
    assert allocations(found) == [{1: {"VCPU": 1}}, {2: {"VCPU": 1}}]
    assert found.summary_provider_ids == [1, 2, 4]


def test_requests_come_in_root_order():
    world = World()
    compute_node(world, 5)
    compute_node(world, 2)
    compute_node(world, 9)
    assert [next(iter(a)) for a in allocations(world.find("resources=VCPU:1"))] == [2, 5, 9]


def test_nothing_matches_when_one_group_has_no_candidate():
    world = World()
    compute_node(world, 1)
    found = world.find("resources=VCPU:1&resources1=CUSTOM_MISSING:1")
    assert found == Candidates([], [])
