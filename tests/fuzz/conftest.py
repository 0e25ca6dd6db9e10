"""The fuzz run: one application per module on a fresh SQLite database, seeded with a few hosts,
a lease, a flavor and a deployment so that generated paths with ids sometimes name real objects.

BLAZAR_LITE_FUZZ_EXAMPLES sets how many examples each fuzz test tries (default 100); CI runs a
short version with fewer.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask

from blazar_lite.app import create_app
from blazar_lite.db import Database
from blazar_lite.settings import load_settings

EXAMPLES_ENV = "BLAZAR_LITE_FUZZ_EXAMPLES"
ADMIN = {"X-Project-Id": "fuzz-project", "X-User-Id": "fuzz-user", "X-Roles": "admin"}


def examples() -> int:
    """How many examples each fuzz test tries."""
    raw = os.environ.get(EXAMPLES_ENV, "100")
    try:
        count = int(raw)
    except ValueError:
        raise pytest.UsageError(f"{EXAMPLES_ENV} must be a whole number, not {raw!r}") from None
    if count < 1:
        raise pytest.UsageError(f"{EXAMPLES_ENV} must be at least 1, not {count}")
    return count


def _at(days: float) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(days=days)).strftime("%Y-%m-%d %H:%M")


def seed(app: Flask) -> None:
    """A few hosts, a lease, a flavor, a deployment with a shape and a key, and a webhook."""
    client = app.test_client()

    def post(path: str, body: dict) -> dict:
        response = client.post(path, json=body, headers=ADMIN)
        assert response.status_code in (200, 201), (path, response.get_json())
        return response.get_json()

    for index, gpu in enumerate(("a100", "h100", "none")):
        post("/v1/os-hosts", {"name": f"compute-{index}", "vcpus": 16, "memory_mb": 65536, "local_gb": 500,
                              "gpu": gpu})
    post("/v1/leases", {"name": "seeded-lease", "start_date": _at(1), "end_date": _at(2), "events": [],
                        "reservations": [{"resource_type": "physical:host", "min": 1, "max": 1,
                                          "hypervisor_properties": '["==", "$gpu", "a100"]',
                                          "resource_properties": ""}]})
    post("/v1/flavors", {"flavor": {"name": "m1.small", "vcpus": 2, "ram": 2048, "disk": 20}})
    post("/v1/deployments", {"name": "shop"})
    post("/v1/deployments/shop/shapes", {"name": "web", "instance_template": {"vcpus": 1, "memory_mb": 512},
                                        "scaling_minimum": 0, "scaling_maximum": 4})
    post("/v1/webhooks", {"url": "http://127.0.0.1:9/hook", "secret": "s" * 32})


@pytest.fixture(scope="module")
def fuzz_app(migrated_sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flask]:
    """The application on a fresh, seeded SQLite database, shared by every example of a module."""
    data_dir = tmp_path_factory.mktemp("fuzz")
    db_path = data_dir / "blazar-lite.db"
    shutil.copy(migrated_sqlite_template, db_path)
    settings = load_settings(environ={}, data_dir=str(data_dir), database_url=f"sqlite:///{db_path}")
    database = Database(settings.database_url)
    app = create_app(settings, database)
    seed(app)
    yield app
    database.dispose()
