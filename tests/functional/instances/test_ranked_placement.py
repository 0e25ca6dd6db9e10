"""On demand with the default policy, placement reads only the best-ranked nodes; it must land
every instance where a decision over every node would have put it."""

from __future__ import annotations

import random

import pytest

from blazar_lite.allocators import builtin
from blazar_lite.allocators.snapshot import PlacementRequest
from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.exceptions import NotEnoughResources
from blazar_lite.instances import service, snapshot
from blazar_lite.placement import inventories, providers
from blazar_lite.placement.backend import EmbeddedPlacement

MEMBER = RequestContext(user_id="u1", project_id="p1", roles=frozenset({"member"}))


def expected_node(database: Database, resources: dict[str, int]) -> str | None:
    """The node the decision over the whole snapshot gives."""
    with database.read() as session:
        placement = EmbeddedPlacement(session)
        snap = snapshot.read_snapshot(session, placement, snapshot.node_rows(session, placement, None))
    return builtin.choose(snap, PlacementRequest(name=None, project_id="p1", resources=resources)).node


@pytest.mark.parametrize("seed", range(6))
def test_ranked_placement_lands_where_the_whole_snapshot_would(database: Database, seed: int) -> None:
    rng = random.Random(seed)
    with database.transaction() as session:
        for index in range(12):
            view = providers.create_provider(session, f"node-{index:02d}")
            inventories.replace_inventories(session, view.uuid, 0, {
                "VCPU": {"total": rng.choice((2, 4, 8)), "allocation_ratio": rng.choice((1.0, 1.5))},
                "MEMORY_MB": {"total": rng.choice((2048, 4096, 8192)), "reserved": rng.choice((0, 512))},
                "DISK_GB": {"total": 100}})
    for index in range(40):
        resources = {"vcpus": rng.randint(1, 3), "memory_mb": rng.choice((256, 512, 1024, 3000))}
        wanted = {"VCPU": resources["vcpus"], "MEMORY_MB": resources["memory_mb"]}
        expected = expected_node(database, wanted)
        try:
            with database.transaction() as session:
                view = service.create_instance(session, MEMBER, {"name": f"vm-{index}", **resources})
        except NotEnoughResources as exc:
            assert expected is None, f"refused ({exc.message}) where {expected} had room"
            continue
        assert view.host == expected


def test_a_refusal_on_demand_still_names_every_node(database: Database) -> None:
    with database.transaction() as session:
        for index in range(12):
            view = providers.create_provider(session, f"node-{index:02d}")
            inventories.replace_inventories(session, view.uuid, 0, {"VCPU": {"total": 1}, "MEMORY_MB": {"total": 64}})
    with pytest.raises(NotEnoughResources) as refused, database.transaction() as session:
        service.create_instance(session, MEMBER, {"name": "big", "vcpus": 2, "memory_mb": 32})
    assert "node-00: 2 vCPU asked, 1 free" in refused.value.message
    assert "(and 7 more)" in refused.value.message


def test_ranking_counts_free_memory_in_whole_units_as_allocations_do(database: Database) -> None:
    # Each b offers 2.6 MB of memory: 2 whole units, as much as a, so the name decides (a). A
    # ranking that rounded 2.6 up would rank every b before a and leave a out of those it reads.
    with database.transaction() as session:
        for name, ratio in [("a", 1.0), *((f"b{index}", 1.3) for index in range(service.RANKED_CANDIDATES + 1))]:
            view = providers.create_provider(session, name)
            inventories.replace_inventories(session, view.uuid, 0, {
                "VCPU": {"total": 4}, "MEMORY_MB": {"total": 2, "allocation_ratio": ratio}})
    assert expected_node(database, {"VCPU": 1, "MEMORY_MB": 1}) == "a"
    with database.transaction() as session:
        assert service.create_instance(session, MEMBER, {"name": "vm", "vcpus": 1, "memory_mb": 1}).host == "a"
