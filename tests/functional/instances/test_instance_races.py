"""Instances racing on PostgreSQL: commits of forthcoming instances against real creates, and
creates against each other; no node is ever oversubscribed."""

from __future__ import annotations

import pytest

from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.exceptions import NotEnoughResources
from blazar_lite.instances import service
from blazar_lite.placement import inventories, providers, usages
from tests.conftest import OK, race

pytestmark = pytest.mark.postgres

MEMBER = RequestContext(user_id="u1", project_id="p1", roles=frozenset({"member"}))
NODES = {"node-a": 8, "node-b": 8}


def _nodes(database: Database) -> dict[str, str]:
    found = {}
    with database.transaction() as session:
        for name, vcpus in NODES.items():
            view = providers.create_provider(session, name)
            inventories.replace_inventories(session, view.uuid, 0, {"VCPU": {"total": vcpus},
                                                                    "MEMORY_MB": {"total": 65536}})
            found[name] = view.uuid
    return found


def _used(database: Database, uuids: dict[str, str]) -> dict[str, int]:
    with database.read() as session:
        return {name: usages.provider_usages(session, uuid)["VCPU"] for name, uuid in uuids.items()}


def test_forthcoming_commits_always_succeed_while_real_creates_race_for_the_rest(pg_database: Database) -> None:
    uuids = _nodes(pg_database)
    # 12 of the 16 vCPUs are held on paper; 4 are left for real creates.
    paper = []
    with pg_database.transaction() as session:
        for n in range(6):
            view = service.create_instance(session, MEMBER, {"forthcoming": True, "name": f"paper-{n}", "vcpus": 2,
                                                             "memory_mb": 1024})
            paper.append(view.id)
    assert _used(pg_database, uuids) == {"node-a": 6, "node-b": 6}

    def write(index: int) -> None:
        with pg_database.transaction() as session:
            if index < len(paper):
                service.commit_instance(session, MEMBER, paper[index], None)
            else:
                service.create_instance(session, MEMBER, {"name": f"real-{index}", "vcpus": 2, "memory_mb": 1024})

    outcomes = race(write, workers=16)
    assert outcomes[:6] == [OK] * 6, outcomes[:6]
    real = outcomes[6:]
    assert real.count(OK) == 2, real
    assert all(isinstance(o, NotEnoughResources) for o in real if o != OK), real
    used = _used(pg_database, uuids)
    assert used == {"node-a": 8, "node-b": 8}
    with pg_database.read() as session:
        instances = service.list_instances(session, "p1")
    assert sum(not i.forthcoming for i in instances) == 8
    assert {i.id for i in instances if i.name and i.name.startswith("paper-")} == set(paper)


def test_concurrent_creates_never_oversubscribe_a_node(pg_database: Database) -> None:
    uuids = _nodes(pg_database)

    def write(index: int) -> None:
        with pg_database.transaction() as session:
            service.create_instance(session, MEMBER, {"name": f"vm-{index}", "vcpus": 3, "memory_mb": 512})

    outcomes = race(write, workers=12)
    # 8 vCPUs per node take two 3-vCPU instances each.
    assert outcomes.count(OK) == 4, outcomes
    assert all(isinstance(o, NotEnoughResources) for o in outcomes if o != OK), outcomes
    assert _used(pg_database, uuids) == {"node-a": 6, "node-b": 6}
