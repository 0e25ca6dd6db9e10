"""The kept usage counters (inventories.used, resource_providers.consumers) always equal what the
allocations add up to: after every kind of write, after a refused one, after the migration that
introduced them, and under concurrent writers on PostgreSQL."""

from __future__ import annotations

import uuid as uuidlib

import pytest
from sqlalchemy import func, select

from blazar_lite.db import Database
from blazar_lite.db.migrate import upgrade
from blazar_lite.exceptions import ServiceError
from blazar_lite.placement import allocations, inventories, providers, reshaper, usages
from blazar_lite.placement.models import Allocation, Inventory, ResourceProvider
from tests.conftest import OK, race

PROJECT = "project-a"
USER = "user-1"


def _counted(database: Database) -> tuple[dict[tuple[int, int], int], dict[int, int]]:
    """The counters as stored: ({(provider id, class id): used}, {provider id: consumers})."""
    with database.transaction() as session:
        used = {(p, c): u for p, c, u in session.execute(
            select(Inventory.resource_provider_id, Inventory.resource_class_id, Inventory.used))}
        consumers = dict(session.execute(select(ResourceProvider.id, ResourceProvider.consumers)).all())
    return used, consumers


def _recounted(database: Database) -> tuple[dict[tuple[int, int], int], dict[int, int]]:
    """The counters as the allocations say they should be, for the same keys as _counted."""
    with database.transaction() as session:
        sums = {(p, c): int(u) for p, c, u in session.execute(
            select(Allocation.resource_provider_id, Allocation.resource_class_id, func.sum(Allocation.used))
            .group_by(Allocation.resource_provider_id, Allocation.resource_class_id))}
        counts = dict(session.execute(
            select(Allocation.resource_provider_id, func.count(func.distinct(Allocation.consumer_id)))
            .group_by(Allocation.resource_provider_id)).all())
        keys = session.execute(select(Inventory.resource_provider_id, Inventory.resource_class_id)).all()
        ids = session.scalars(select(ResourceProvider.id)).all()
    return {(p, c): sums.get((p, c), 0) for p, c in keys}, {i: int(counts.get(i, 0)) for i in ids}


def _assert_counters_match(database: Database) -> None:
    used, consumers = _counted(database)
    expected_used, expected_consumers = _recounted(database)
    assert used == expected_used
    assert consumers == expected_consumers


def _provider(database: Database, name: str, inventory: dict[str, int], parent: str | None = None) -> str:
    with database.transaction() as session:
        uuid = providers.create_provider(session, name, parent_provider_uuid=parent).uuid
        if inventory:
            inventories.replace_inventories(session, uuid, None, {rc: {"total": total}
                                                                  for rc, total in inventory.items()})
    return uuid


def _write(database: Database, consumer: str, held: dict[str, dict[str, int]]) -> None:
    with database.transaction() as session:
        allocations.replace_consumer_allocations(session, consumer, held, PROJECT, USER)


def test_counters_follow_creates_moves_resizes_and_removals(database):  # type: ignore[no-untyped-def]
    cn1 = _provider(database, "cn1", {"VCPU": 16, "MEMORY_MB": 8192})
    cn2 = _provider(database, "cn2", {"VCPU": 16, "MEMORY_MB": 8192})
    a, b, c = (str(uuidlib.uuid4()) for _ in range(3))
    _write(database, a, {cn1: {"VCPU": 2, "MEMORY_MB": 1024}})
    _write(database, b, {cn1: {"VCPU": 4}, cn2: {"MEMORY_MB": 512}})
    _assert_counters_match(database)
    with database.transaction() as session:
        assert usages.provider_usages(session, cn1) == {"VCPU": 6, "MEMORY_MB": 1024}
        assert usages.consumer_counts(session, [cn1, cn2]) == {cn1: 2, cn2: 1}

    _write(database, a, {cn2: {"VCPU": 2, "MEMORY_MB": 1024}})    # moved
    _write(database, b, {cn1: {"VCPU": 8}, cn2: {"MEMORY_MB": 512}})    # resized in place
    with database.transaction() as session:
        allocations.replace_many(session, {c: {"allocations": {cn1: {"VCPU": 1}}, "project_id": PROJECT,
                                               "user_id": USER},
                                           b: {"allocations": {}}})
    _assert_counters_match(database)
    with database.transaction() as session:
        assert usages.provider_usages(session, cn1) == {"VCPU": 1, "MEMORY_MB": 0}
        assert usages.provider_usages(session, cn2) == {"VCPU": 2, "MEMORY_MB": 1024}
        assert usages.consumer_counts(session, [cn1, cn2]) == {cn1: 1, cn2: 1}

    with database.transaction() as session:
        allocations.delete_consumer_allocations(session, a)
        allocations.delete_consumer_allocations(session, c)
    _assert_counters_match(database)
    assert set(_counted(database)[0].values()) == {0}
    assert set(_counted(database)[1].values()) == {0}


def test_a_refused_write_leaves_the_counters_as_they_were(database):  # type: ignore[no-untyped-def]
    cn1 = _provider(database, "cn1", {"VCPU": 4})
    a, b = str(uuidlib.uuid4()), str(uuidlib.uuid4())
    _write(database, a, {cn1: {"VCPU": 3}})
    before = _counted(database)
    with pytest.raises(ServiceError):
        # b fits only if a's allocation is released, and a write of both is all or nothing.
        with database.transaction() as session:
            allocations.replace_many(session, {a: {"allocations": {cn1: {"VCPU": 2}}},
                                               b: {"allocations": {cn1: {"VCPU": 3}}, "project_id": PROJECT,
                                                   "user_id": USER}})
    assert _counted(database) == before
    _assert_counters_match(database)


def test_a_consumer_grown_in_place_is_checked_against_what_the_others_hold(database):  # type: ignore[no-untyped-def]
    cn1 = _provider(database, "cn1", {"VCPU": 4})
    a = str(uuidlib.uuid4())
    _write(database, a, {cn1: {"VCPU": 3}})
    _write(database, a, {cn1: {"VCPU": 4}})    # its own 3 are released first, so 4 fits
    with pytest.raises(ServiceError, match="requested 5, used 0, capacity 4"):
        _write(database, a, {cn1: {"VCPU": 5}})
    _assert_counters_match(database)


def test_the_reshaper_moves_usage_with_the_inventory(database):  # type: ignore[no-untyped-def]
    parent = _provider(database, "cn", {"VCPU": 8, "MEMORY_MB": 1024})
    child = _provider(database, "cn_numa0", {}, parent=parent)
    a = str(uuidlib.uuid4())
    _write(database, a, {parent: {"VCPU": 2, "MEMORY_MB": 256}})
    with database.transaction() as session:
        generations = dict(session.execute(select(ResourceProvider.uuid, ResourceProvider.generation)).all())
        reshaper.reshape(session,
                         {parent: (generations[parent], {"MEMORY_MB": {"total": 1024}}),
                          child: (generations[child], {"VCPU": {"total": 8}})},
                         {a: {"allocations": {parent: {"MEMORY_MB": 256}, child: {"VCPU": 2}},
                              "project_id": PROJECT, "user_id": USER}})
    _assert_counters_match(database)
    with database.transaction() as session:
        assert usages.provider_usages(session, child) == {"VCPU": 2}
        assert usages.consumer_counts(session, [parent, child]) == {parent: 1, child: 1}


def test_the_migration_counts_the_allocations_already_written(tmp_path):  # type: ignore[no-untyped-def]
    database = Database(f"sqlite:///{tmp_path / 'old.db'}")
    upgrade(database.engine, "0007")
    with database.engine.begin() as connection:
        run = connection.exec_driver_sql
        # The standard classes come with the schema.
        vcpu, memory = (connection.exec_driver_sql(f"SELECT id FROM resource_classes WHERE name = '{name}'")
                        .scalar_one() for name in ("VCPU", "MEMORY_MB"))
        for rp in (1, 2):
            run(f"INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id, created_at) "
                f"VALUES ({rp}, '{uuidlib.uuid4()}', 'cn{rp}', 1, {rp}, CURRENT_TIMESTAMP)")
            for rc in (vcpu, memory):
                run(f"INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, "
                    f"min_unit, max_unit, step_size, allocation_ratio, created_at) "
                    f"VALUES ({rp}, {rc}, 100, 0, 1, 100, 1, 1.0, CURRENT_TIMESTAMP)")
        for consumer in (1, 2, 3):
            run(f"INSERT INTO consumers (id, uuid, project_id, user_id, generation, created_at) "
                f"VALUES ({consumer}, '{uuidlib.uuid4()}', 'p', 'u', 1, CURRENT_TIMESTAMP)")
        # Consumers 1 and 2 on cn1 (1 with two classes), consumer 3 on cn1 and cn2.
        for consumer, rp, rc, amount in ((1, 1, vcpu, 2), (1, 1, memory, 512), (2, 1, vcpu, 3), (3, 1, memory, 64),
                                         (3, 2, vcpu, 7)):
            run(f"INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used, created_at) "
                f"VALUES ({consumer}, {rp}, {rc}, {amount}, CURRENT_TIMESTAMP)")
    upgrade(database.engine)
    used, consumers = _counted(database)
    assert used == {(1, vcpu): 5, (1, memory): 576, (2, vcpu): 7, (2, memory): 0}
    assert consumers == {1: 3, 2: 1}
    database.dispose()


@pytest.mark.postgres
def test_concurrent_allocation_and_inventory_writes_keep_the_counters_exact(pg_database):  # type: ignore[no-untyped-def]
    """Allocation writers and inventory writers on the same providers at once: each request ends
    in success or a 4xx (no deadlock, no lost update) and the counters equal the allocations."""
    cn1 = _provider(pg_database, "cn1", {"VCPU": 12, "MEMORY_MB": 8192})
    cn2 = _provider(pg_database, "cn2", {"VCPU": 12, "MEMORY_MB": 8192})
    consumers = [str(uuidlib.uuid4()) for _ in range(6)]

    def write(index: int) -> None:
        for step in range(5):
            with pg_database.transaction() as session:
                if index >= len(consumers):
                    # Inventory edits: lock order must not fight the allocation writers.
                    target = (cn1, cn2)[step % 2]
                    try:
                        inventories.set_inventory(session, target, "MEMORY_MB", None, {"total": 8192 + step})
                    except ServiceError as exc:
                        assert exc.status < 500
                    continue
                on = (cn1, cn2)[(index + step) % 2]
                try:
                    allocations.replace_consumer_allocations(
                        session, consumers[index], {on: {"VCPU": 1 + step % 3, "MEMORY_MB": 256}}, PROJECT, USER)
                except ServiceError as exc:
                    assert exc.status < 500

    outcomes = race(write, workers=len(consumers) + 2)
    assert outcomes == [OK] * (len(consumers) + 2)
    _assert_counters_match(pg_database)
    with pg_database.transaction() as session:
        # Writers at different steps may meet a real shortage (a 409 above), never an overbooking.
        room = usages.provider_room(session, [cn1, cn2])
    for provider in (cn1, cn2):
        assert all(used <= capacity for capacity, used in room[provider].values())
