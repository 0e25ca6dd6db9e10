"""Host writes racing on PostgreSQL: concurrent requests end in answers (success or 409), never
in integrity errors."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from blazar_lite.db import Database
from blazar_lite.db.migrate import upgrade
from blazar_lite.exceptions import Conflict
from blazar_lite.hosts import properties, service

pytestmark = pytest.mark.postgres

WORKERS = 8
OK = "ok"


@pytest.fixture
def pg_database(pg_scratch_url: str) -> Iterator[Database]:
    database = Database(pg_scratch_url)
    upgrade(database.engine)
    yield database
    database.dispose()


def race(write: Callable[[int], None]) -> list[object]:
    """Run write(i) for each worker at once; each outcome is OK or the exception raised."""
    barrier = threading.Barrier(WORKERS)
    outcomes: list[object] = [None] * WORKERS

    def run(index: int) -> None:
        barrier.wait()
        try:
            write(index)
            outcomes[index] = OK
        except Exception as exc:  # noqa: BLE001 - the test inspects whatever was raised
            outcomes[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return outcomes


def spec(name: str, **capabilities: str) -> service.HostSpec:
    return service.HostSpec(name=name, vcpus=4, memory_mb=4096, local_gb=10, extra_capabilities=capabilities)


def test_registering_one_host_name_at_once_registers_it_once(pg_database: Database) -> None:
    def write(_index: int) -> None:
        with pg_database.transaction() as session:
            service.create_host(session, spec("compute-1"))

    outcomes = race(write)
    assert outcomes.count(OK) == 1
    assert all(isinstance(o, Conflict) for o in outcomes if o != OK), outcomes
    with pg_database.read() as session:
        assert [h.hypervisor_hostname for h in service.list_hosts(session)] == ["compute-1"]


def test_hosts_registered_at_once_with_a_new_property_all_succeed(pg_database: Database) -> None:
    def write(index: int) -> None:
        with pg_database.transaction() as session:
            service.create_host(session, spec(f"compute-{index}", gpu=f"model-{index % 2}"))

    assert race(write) == [OK] * WORKERS
    with pg_database.read() as session:
        [gpu] = properties.list_properties(session, include_private=True)
        assert (gpu.name, gpu.values) == ("gpu", ["model-0", "model-1"])


def test_updates_of_one_host_at_once_all_apply(pg_database: Database) -> None:
    with pg_database.transaction() as session:
        host_id = service.create_host(session, spec("compute-1")).id

    def write(index: int) -> None:
        with pg_database.transaction() as session:
            service.update_host(session, host_id, capabilities={"gpu": f"model-{index}", f"slot-{index}": "x"})

    assert race(write) == [OK] * WORKERS
    with pg_database.read() as session:
        capabilities = service.get_host(session, host_id).extra_capabilities
    assert capabilities["gpu"].startswith("model-")
    assert {f"slot-{i}" for i in range(WORKERS)} <= set(capabilities)
