"""Migrations: Alembic's scripts build exactly the schema the models describe, on SQLite and
PostgreSQL, and `blazar-lite db upgrade` applies them (as often as it is run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from sqlalchemy import Engine, func, inspect, select

from blazar_lite.cli import main
from blazar_lite.db import Database
from blazar_lite.db.migrate import alembic_config, current_revision, upgrade
from blazar_lite.db.models import Base
from blazar_lite.placement.models import ResourceClass, Trait


def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def schema_differences(engine: Engine) -> list[object]:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True,
                                                               "compare_server_default": True})
        return compare_metadata(context, Base.metadata)


def assert_migrations_match_models(url: str) -> None:
    database = Database(url)
    try:
        upgrade(database.engine)
        assert current_revision(database.engine) == head_revision()
        assert schema_differences(database.engine) == []
    finally:
        database.dispose()


def test_migrations_match_the_models_on_sqlite(tmp_path: Path) -> None:
    assert_migrations_match_models(f"sqlite:///{tmp_path}/schema.db")


@pytest.mark.postgres
def test_migrations_match_the_models_on_postgresql(pg_scratch_url: str) -> None:
    assert_migrations_match_models(pg_scratch_url)


def test_comparison_notices_a_table_the_migrations_lack(tmp_path: Path) -> None:
    # Guards the two tests above: an empty comparison must mean agreement, not a blind check.
    database = Database(f"sqlite:///{tmp_path}/schema.db")
    try:
        upgrade(database.engine)
        with database.engine.begin() as connection:
            connection.exec_driver_sql("DROP TABLE inventories")
        differences = schema_differences(database.engine)
    finally:
        database.dispose()
    assert any(d[0] == "add_table" and d[1].name == "inventories" for d in differences)  # type: ignore[index]


def invoke_cli(args: list[str], data_dir: Path):  # type: ignore[no-untyped-def]
    # Only the data directory comes from outside: no system config file, no BLAZAR_LITE_* leaking in.
    config = data_dir.parent / "blazar-lite.conf"
    config.write_text("")
    env = {name: None for name in os.environ if name.startswith("BLAZAR_LITE_")}
    env["BLAZAR_LITE_DATA_DIR"] = str(data_dir)
    return CliRunner().invoke(main, ["--config-file", str(config), *args], env=env)


def counts(engine: Engine) -> tuple[int, int]:
    with engine.connect() as connection:
        return (connection.scalar(select(func.count()).select_from(ResourceClass)),
                connection.scalar(select(func.count()).select_from(Trait)))


def test_db_upgrade_command_creates_the_schema_in_the_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    result = invoke_cli(["db", "upgrade"], data_dir)
    assert result.exit_code == 0, result.output
    database = Database(f"sqlite:///{data_dir}/blazar-lite.db")
    try:
        assert current_revision(database.engine) == head_revision()
        assert set(Base.metadata.tables) <= set(inspect(database.engine).get_table_names())
        resource_classes, traits = counts(database.engine)
        assert resource_classes > 0 and traits > 0
    finally:
        database.dispose()


def test_db_upgrade_command_run_twice_is_harmless(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    assert invoke_cli(["db", "upgrade"], data_dir).exit_code == 0
    database = Database(f"sqlite:///{data_dir}/blazar-lite.db")
    try:
        before = counts(database.engine)
        again = invoke_cli(["db", "upgrade"], data_dir)
        assert again.exit_code == 0, again.output
        assert current_revision(database.engine) == head_revision()
        assert counts(database.engine) == before
        assert schema_differences(database.engine) == []
    finally:
        database.dispose()


def test_db_upgrade_command_reports_a_bad_setting(tmp_path: Path) -> None:
    config = tmp_path / "bad.conf"
    config.write_text("[api]\nport = eighty\n")
    result = CliRunner().invoke(main, ["--config-file", str(config), "db", "upgrade"])
    assert result.exit_code == 1
    assert "[api] port = 'eighty' is not an integer" in result.output


def test_an_upgrade_of_a_sqlite_database_gathers_planner_statistics(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import create_engine, text

    from blazar_lite.db.migrate import upgrade

    engine = create_engine(f"sqlite:///{tmp_path / 'stats.db'}")
    upgrade(engine)
    with engine.connect() as connection:
        tables = {row[0] for row in connection.execute(text("SELECT tbl FROM sqlite_stat1"))}
    engine.dispose()
    # ANALYZE records the tables that hold rows: here the standard classes and traits.
    assert {"resource_classes", "traits"} <= tables


def booking_copies(engine: Engine) -> list[tuple[object, ...]]:
    from blazar_lite.leases.models import ReservationBooking

    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(
            select(ReservationBooking.reservation_id, ReservationBooking.host_id, ReservationBooking.lease_id,
                   ReservationBooking.start_date, ReservationBooking.end_date, ReservationBooking.vcpus,
                   ReservationBooking.memory_mb, ReservationBooking.disk_gb, ReservationBooking.exclusive)
            .order_by(ReservationBooking.reservation_id, ReservationBooking.host_id))]


def assert_the_booking_copies_are_filled_from_existing_leases(url: str) -> None:
    import datetime as dt

    from alembic import command

    from blazar_lite.auth.context import RequestContext
    from blazar_lite.hosts.service import HostSpec, create_host
    from blazar_lite.leases.service import create_lease

    database = Database(url)
    try:
        upgrade(database.engine)
        start = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
        window = {"start_date": start.strftime("%Y-%m-%d %H:%M"),
                  "end_date": (start + dt.timedelta(hours=5)).strftime("%Y-%m-%d %H:%M")}
        with database.transaction() as session:
            for name in ("compute-1", "compute-2", "compute-3", "compute-4"):
                create_host(session, HostSpec(name=name, vcpus=8, memory_mb=16384, local_gb=100))
            create_lease(session, RequestContext.admin(), {"name": "slots", **window, "reservations": [
                {"resource_type": "virtual:instance", "amount": 3, "vcpus": 2, "memory_mb": 2048, "disk_gb": 10,
                 "affinity": False}]})
            create_lease(session, RequestContext.admin(), {"name": "whole", **window, "reservations": [
                {"resource_type": "physical:host", "min": 1, "max": 1}]})
        before = booking_copies(database.engine)
        assert len(before) == 3 + 1 and {row[-1] for row in before} == {True, False}

        config = alembic_config(url)
        with database.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0009")
        upgrade(database.engine)
        assert booking_copies(database.engine) == before
    finally:
        database.dispose()


def test_the_booking_copies_are_filled_from_existing_leases_on_sqlite(tmp_path: Path) -> None:
    assert_the_booking_copies_are_filled_from_existing_leases(f"sqlite:///{tmp_path}/fill.db")


@pytest.mark.postgres
def test_the_booking_copies_are_filled_from_existing_leases_on_postgresql(pg_scratch_url: str) -> None:
    assert_the_booking_copies_are_filled_from_existing_leases(pg_scratch_url)


def assert_deployments_keep_their_shapes_and_get_a_secret(url: str) -> None:
    from alembic import command

    from blazar_lite.deployments import service as deployments

    database = Database(url)
    try:
        upgrade(database.engine)
        with database.transaction() as session:
            deployments.create_deployment(session, "p1", {"name": "shop"})
            deployments.create_shape(session, "p1", "shop", {"name": "web", "scaling_minimum": 0, "scaling_maximum": 2,
                                                             "instance_template": {"vcpus": 1, "memory_mb": 256}})
        config = alembic_config(url)
        with database.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0012")
        upgrade(database.engine)
        with database.read() as session:
            [shape] = deployments.list_shapes(session, "p1", "shop")
            secret = deployments.get_deployment(session, "p1", "shop").governor_webhook_secret
        assert shape.name == "web" and len(secret) == 64
    finally:
        database.dispose()


def test_deployments_keep_their_shapes_through_the_webhook_secret_migration_on_sqlite(tmp_path: Path) -> None:
    assert_deployments_keep_their_shapes_and_get_a_secret(f"sqlite:///{tmp_path}/shapes.db")


@pytest.mark.postgres
def test_deployments_keep_their_shapes_through_the_webhook_secret_migration_on_postgresql(
        pg_scratch_url: str) -> None:
    assert_deployments_keep_their_shapes_and_get_a_secret(pg_scratch_url)
