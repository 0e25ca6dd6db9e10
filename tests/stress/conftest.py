"""The soak and chaos runs: a cluster on a scratch PostgreSQL database (BLAZAR_LITE_TEST_PG_URL;
these runs fail rather than skip without it). How long they run is read from the environment so
that CI can run a short version of each."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine

from tests.stress.cluster import Client, Cluster, Tally

DATE = "%Y-%m-%d %H:%M"


def seconds_from_env(name: str, default: float) -> float:
    value = os.environ.get(name, "")
    try:
        return float(value) if value else default
    except ValueError:
        pytest.fail(f"{name} must be a number of seconds, not {value!r}", pytrace=False)


def blazar_date(moment: dt.datetime) -> str:
    return moment.strftime(DATE)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


@pytest.fixture
def stress_database(pg_server_url: str, make_pg_scratch_database) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with make_pg_scratch_database(pg_server_url) as url:
        yield url


@pytest.fixture
def sql(stress_database: str):  # type: ignore[no-untyped-def]
    """`sql(statement)`: the rows of one read of the run's database."""
    engine = create_engine(stress_database)

    def read(statement: str) -> list:  # type: ignore[type-arg]
        from sqlalchemy import text
        with engine.connect() as connection:
            return list(connection.execute(text(statement)))

    yield read
    engine.dispose()


def register_hosts(cluster: Cluster, count: int, vcpus: int = 16, memory_mb: int = 65536,
                   local_gb: int = 500) -> list[dict]:
    """`count` hosts registered through the API by an admin; their bodies."""
    tally = Tally()
    admin = Client(cluster.base, "admin", tally, admin=True)
    hosts = []
    for i in range(count):
        answer = admin.call("POST", "/v1/os-hosts", {"name": f"compute-{i:03d}", "vcpus": vcpus,
                                                      "memory_mb": memory_mb, "local_gb": local_gb})
        assert answer is not None and answer.status == 201, (answer, tally.bad)
        hosts.append(answer.body["host"])
    admin.close()
    return hosts
