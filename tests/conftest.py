"""Shared fixtures: a fresh migrated SQLite database per test, the app and its client."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from blazar_lite.app import create_app
from blazar_lite.db import Database
from blazar_lite.db.migrate import upgrade
from blazar_lite.settings import load_settings

PG_URL_ENV = "BLAZAR_LITE_TEST_PG_URL"


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


@pytest.fixture
def settings(tmp_path: Path, migrated_sqlite_template: Path):  # type: ignore[no-untyped-def]
    db_path = tmp_path / "blazar-lite.db"
    shutil.copy(migrated_sqlite_template, db_path)
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
    """Test client for /placement at a given microversion."""

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


@pytest.fixture
def placement(client) -> PlacementClient:  # type: ignore[no-untyped-def]
    return PlacementClient(client)


def pg_url() -> str | None:
    return os.environ.get(PG_URL_ENV)
