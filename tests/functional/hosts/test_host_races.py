"""Host writes racing on PostgreSQL: concurrent requests end in answers (success or 409), never
in integrity errors."""

from __future__ import annotations

import pytest

from blazar_lite.db import Database
from blazar_lite.exceptions import Conflict
from blazar_lite.hosts import properties, service
from tests.conftest import OK, RACE_WORKERS, race

pytestmark = pytest.mark.postgres

WORKERS = RACE_WORKERS



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
