"""Shared fixtures: a fresh migrated SQLite database per test, the app and its client, and
scratch PostgreSQL databases for tests marked `postgres`."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from blazar_lite.app import create_app
from blazar_lite.db import Database
from blazar_lite.db.migrate import upgrade
from blazar_lite.settings import load_settings
from tests.receiver import Receiver

PG_URL_ENV = "BLAZAR_LITE_TEST_PG_URL"
PG_REQUIRED_ENV = "BLAZAR_LITE_TEST_PG_REQUIRED"


@pytest.fixture(scope="session")
def migrated_sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Migrate once per run; every test copies the file (much faster than migrating each time)."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    database = Database(f"sqlite:///{path}")
    upgrade(database.engine)
    with database.engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    database.dispose()
    return path


# Functional tests run on SQLite unless this names PostgreSQL (then BLAZAR_LITE_TEST_PG_URL is used).
TEST_DATABASE_ENV = "BLAZAR_LITE_TEST_DATABASE"


def functional_tests_on_postgres() -> bool:
    choice = os.environ.get(TEST_DATABASE_ENV, "sqlite").lower()
    if choice not in ("sqlite", "postgresql"):
        raise pytest.UsageError(f"{TEST_DATABASE_ENV} must be sqlite or postgresql, not {choice!r}")
    return choice == "postgresql"


@pytest.fixture(scope="session")
def migrated_pg_database(pg_server_url: str) -> Iterator[Engine]:
    """One migrated scratch database for the run; each test starts from it emptied."""
    with scratch_database(pg_server_url) as url:
        engine = create_engine(url, poolclass=NullPool)
        upgrade(engine)
        yield engine
        engine.dispose()


def _empty_database(engine: Engine) -> None:
    """Every table emptied, then the reference data put back, as a fresh migration leaves it."""
    from blazar_lite.db.models import Base
    from blazar_lite.placement.reference_data import sync_standard_names

    # DELETE, children first, then every sequence back to 1: on tables this small it takes
    # milliseconds where TRUNCATE of them all takes near half a second, once per test.
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.exec_driver_sql(f'DELETE FROM "{table.name}"')
        connection.exec_driver_sql("SELECT setval(c.oid, 1, false) FROM pg_class c WHERE c.relkind = 'S'")
    sync_standard_names(engine)


@pytest.fixture
def settings(tmp_path: Path, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    if functional_tests_on_postgres():
        engine = request.getfixturevalue("migrated_pg_database")
        _empty_database(engine)
        url = engine.url.render_as_string(hide_password=False)
        return load_settings(environ={}, data_dir=str(tmp_path), database_url=url)
    db_path = tmp_path / "blazar-lite.db"
    shutil.copy(request.getfixturevalue("migrated_sqlite_template"), db_path)
    return load_settings(environ={}, data_dir=str(tmp_path), database_url=f"sqlite:///{db_path}")


@pytest.fixture
def database(settings) -> Iterator[Database]:  # type: ignore[no-untyped-def]
    db = Database(settings.database_url)
    yield db
    db.dispose()


@pytest.fixture
def app(settings, database):  # type: ignore[no-untyped-def]
    return create_app(settings, database)


@pytest.fixture
def client(app):  # type: ignore[no-untyped-def]
    return app.test_client()


class PlacementClient:
    """Test client for /placement at a given microversion, with the helpers the Placement tests share."""

    def __init__(self, client, version: str = "1.39") -> None:  # type: ignore[no-untyped-def]
        self.client = client
        self.version = version

    def __call__(self, method: str, path: str, json=None, version: str | None = None,  # type: ignore[no-untyped-def]
                 headers: dict[str, str] | None = None, **kwargs):
        all_headers = {"X-Auth-Token": "admin"}
        v = version or self.version
        if v:
            all_headers["OpenStack-API-Version"] = f"placement {v}"
        all_headers.update(headers or {})
        return self.client.open("/placement" + path, method=method, json=json, headers=all_headers, **kwargs)

    def get(self, path: str, **kw):  # type: ignore[no-untyped-def]
        return self("GET", path, **kw)

    def post(self, path: str, json=None, **kw):  # type: ignore[no-untyped-def]
        return self("POST", path, json=json, **kw)

    def put(self, path: str, json=None, **kw):  # type: ignore[no-untyped-def]
        return self("PUT", path, json=json, **kw)

    def delete(self, path: str, **kw):  # type: ignore[no-untyped-def]
        return self("DELETE", path, **kw)

    @staticmethod
    def error(response, status: int, code: str = "placement.undefined_code") -> str:  # type: ignore[no-untyped-def]
        """Assert that `response` is a Placement error of this status and code; return its detail."""
        assert response.status_code == status, response.json
        error = response.json["errors"][0]
        assert error["status"] == status
        assert error["code"] == code
        assert error["request_id"].startswith("req-")
        return error["detail"]

    def provider(self, name: str = "cn1", inventories: dict | None = None, parent: str | None = None) -> str:
        """Create a provider (under `parent`, when given) and return its uuid.

        `inventories` maps a resource class to its inventory fields, or to just its total.
        """
        body = {"name": name} if parent is None else {"name": name, "parent_provider_uuid": parent}
        response = self.post("/resource_providers", json=body)
        assert response.status_code == 200, response.json
        uuid = response.json["uuid"]
        if inventories is not None:
            inventories = {rc: fields if isinstance(fields, dict) else {"total": fields}
                           for rc, fields in inventories.items()}
            response = self.put_inventories(uuid, 0, inventories)
            assert response.status_code == 200, response.json
        return uuid

    def put_inventories(self, uuid: str, generation: int, inventories: dict, **kw):  # type: ignore[no-untyped-def]
        """Replace every inventory of the provider."""
        return self.put(f"/resource_providers/{uuid}/inventories",
                        json={"resource_provider_generation": generation, "inventories": inventories}, **kw)

    def generation(self, uuid: str) -> int:
        """The provider's generation."""
        response = self.get(f"/resource_providers/{uuid}")
        assert response.status_code == 200, response.json
        return response.json["generation"]

    @staticmethod
    def allocation_body(allocations: dict, generation: int | None = None, consumer_type: str = "INSTANCE",
                        **extra: object) -> dict:
        """A PUT /allocations/{consumer} body (1.38+) for {provider uuid: {class: amount}}."""
        body = {"allocations": {rp: {"resources": resources} for rp, resources in allocations.items()},
                "project_id": "proj", "user_id": "user", "consumer_generation": generation,
                "consumer_type": consumer_type}
        body.update(extra)
        return body

    def allocate(self, consumer: str, allocations: dict, generation: int | None = None, **kw):  # type: ignore[no-untyped-def]
        """PUT the consumer's allocations, {provider uuid: {class: amount}}, in an `allocation_body`."""
        return self.put(f"/allocations/{consumer}", json=self.allocation_body(allocations, generation), **kw)

    def held(self, consumer: str) -> dict:
        """What the consumer holds: {provider uuid: {class: amount}}."""
        response = self.get(f"/allocations/{consumer}")
        assert response.status_code == 200, response.json
        return {rp: entry["resources"] for rp, entry in response.json["allocations"].items()}


@pytest.fixture
def placement(client) -> PlacementClient:  # type: ignore[no-untyped-def]
    return PlacementClient(client)


def pg_url() -> str | None:
    return os.environ.get(PG_URL_ENV)


def _flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")


def pg_required() -> bool:
    """Whether a missing PostgreSQL is a failure (CI, `tox -e pg`) rather than a reason to skip."""
    return _flag("CI") or _flag(PG_REQUIRED_ENV)


LONG_RUNS = ("soak", "chaos")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave PostgreSQL tests out of a plain run that has no server to give them.

    They run when BLAZAR_LITE_TEST_PG_URL or BLAZAR_LITE_TEST_PG_REQUIRED is set, or when a marker
    expression (`-m postgres`) chooses them; then a missing server makes them fail or skip as
    `pg_server_url` decides. Left out, they are reported as deselected, never as passed.
    The soak and chaos runs are left out likewise unless the marker expression names them.
    """
    markexpr = config.getoption("markexpr") or ""
    # The soak and chaos runs take minutes: only a marker expression that names them runs them.
    long_runs = [item for item in items if any(item.get_closest_marker(name) and name not in markexpr
                                               for name in LONG_RUNS)]
    if long_runs:
        config.hook.pytest_deselected(items=long_runs)
        items[:] = [item for item in items if item not in long_runs]
    if markexpr or pg_url() or _flag(PG_REQUIRED_ENV):
        return
    postgres = [item for item in items if item.get_closest_marker("postgres")]
    if postgres:
        config.hook.pytest_deselected(items=postgres)
        items[:] = [item for item in items if not item.get_closest_marker("postgres")]


def _autocommit_engine(url: str) -> Engine:
    # CREATE/DROP DATABASE cannot run inside a transaction block.
    return create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool,
                         connect_args={"connect_timeout": 10})


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """The PostgreSQL server of BLAZAR_LITE_TEST_PG_URL, checked to answer.

    Unset: a failure under CI=true or BLAZAR_LITE_TEST_PG_REQUIRED=1, else a skip. Set but
    unreachable: always a failure, since someone meant the tests to run.
    """
    url = pg_url()
    if not url:
        reason = (f"{PG_URL_ENV} is not set; set it to a PostgreSQL URL whose user may create databases, "
                  "e.g. postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
        if pg_required():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    engine = _autocommit_engine(url)
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql("SELECT 1")
    except SQLAlchemyError as exc:
        pytest.fail(f"PostgreSQL at {PG_URL_ENV}={make_url(url).render_as_string(hide_password=True)} "
                    f"is unreachable: {exc}", pytrace=False)
    finally:
        engine.dispose()
    return url


@contextlib.contextmanager
def scratch_database(server_url: str) -> Iterator[str]:
    """The URL of a new, empty database on the PostgreSQL server of `server_url`, dropped on exit."""
    name = f"blazar_lite_test_{uuid.uuid4().hex[:16]}"
    engine = _autocommit_engine(server_url)
    with engine.connect() as connection:
        connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with engine.connect() as connection:
            # FORCE ends sessions a failed test may have left open (PostgreSQL 13 and later).
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        engine.dispose()


@pytest.fixture(scope="session")
def make_pg_scratch_database():  # type: ignore[no-untyped-def]
    """`scratch_database`, for fixtures of wider scope than one test."""
    return scratch_database


@pytest.fixture
def pg_scratch_url(pg_server_url: str) -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database, dropped after the test."""
    with scratch_database(pg_server_url) as url:
        yield url


# Races on PostgreSQL: several writers released at once by a barrier.

RACE_WORKERS = 8
OK = "ok"


def race(write: Callable[[int], None], workers: int = RACE_WORKERS) -> list[object]:
    """Run write(i) for i in range(workers), all at once; each outcome is OK or the exception raised."""
    barrier = threading.Barrier(workers)
    outcomes: list[object] = [None] * workers

    def run(index: int) -> None:
        barrier.wait()
        try:
            write(index)
            outcomes[index] = OK
        except Exception as exc:  # noqa: BLE001 - the test inspects whatever was raised
            outcomes[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a writer hung"
    return outcomes


@pytest.fixture
def pg_database(pg_scratch_url: str) -> Iterator[Database]:
    """A migrated scratch PostgreSQL database, for the services used directly."""
    database = Database(pg_scratch_url)
    upgrade(database.engine)
    yield database
    database.dispose()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A local webhook receiver (see tests/receiver.py), stopped after the test."""
    server = Receiver()
    yield server
    server.close()
