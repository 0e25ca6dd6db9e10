"""`blazar-lite check`: a busy but sound database has no violation; each kind of damage a
violation would be is found, reported and makes the command exit 1."""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from flask.testing import FlaskClient
from sqlalchemy import func, select, text, update

from blazar_lite.audit import checks
from blazar_lite.cli import main
from blazar_lite.db import Database
from blazar_lite.leases.models import Lease, LeaseHistory, ReservationBooking
from blazar_lite.placement.models import Inventory, ResourceClass, ResourceProvider
from blazar_lite.scheduler.runner import run_due_events
from tests.functional.instances.test_instances import MEMBER, slots
from tests.functional.scheduler.test_scheduler import LENGTH, SECOND, START, create_lease, moment, physical, register

TIMEOUT = dt.timedelta(seconds=300)


def violations(database: Database) -> list[checks.Violation]:
    with database.read() as session:
        return checks.run(session, dt.datetime.now(dt.UTC), TIMEOUT)


def rules(database: Database) -> set[str]:
    return {violation.rule for violation in violations(database)}


@pytest.fixture
def world(client: FlaskClient, database: Database) -> dict[str, Any]:
    """Hosts, an active instance lease with an instance, a pending host lease, an ended lease."""
    for name in ("compute-1", "compute-2", "compute-3"):
        register(client, name)
    start = moment(START)
    active = create_lease(client, "active", [slots(3)], start, start + LENGTH)
    ended = create_lease(client, "ended", [slots(1)], start, start + dt.timedelta(hours=1))
    run_due_events(database, now=start + SECOND)
    run_due_events(database, now=start + dt.timedelta(hours=1))
    pending = create_lease(client, "later", [physical(1)], start + LENGTH, start + 2 * LENGTH)
    reservation = active["reservations"][0]["id"]
    assert client.post("/v1/instances", json={"name": "vm", "reservation_id": reservation},
                       headers=MEMBER).status_code == 201
    return {"active": active, "ended": ended, "pending": pending, "reservation": reservation}


def test_a_sound_database_has_no_violation(database: Database, world: dict) -> None:
    assert violations(database) == []


def test_a_usage_counter_out_of_step_is_found(database: Database, world: dict) -> None:
    with database.transaction() as session:
        session.execute(update(Inventory).where(Inventory.used > 0).values(used=Inventory.used + 1))
    assert rules(database) == {"usage_counter"}


def test_a_consumer_counter_out_of_step_is_found(database: Database, world: dict) -> None:
    with database.transaction() as session:
        session.execute(update(ResourceProvider).values(consumers=ResourceProvider.consumers + 7))
    assert rules(database) == {"consumer_counter"}


def test_a_host_booked_past_its_capacity_is_found(database: Database, world: dict) -> None:
    with database.transaction() as session:
        session.execute(update(ReservationBooking).where(ReservationBooking.exclusive.is_(False))
                        .values(vcpus=ReservationBooking.vcpus * 10))
    found = violations(database)
    assert {v.rule for v in found} == {"host_capacity"} and "vcpus" in found[0].message


def test_a_whole_host_booking_sharing_its_host_is_found(database: Database, world: dict) -> None:
    with database.transaction() as session:
        exclusive = session.scalar(select(ReservationBooking).where(ReservationBooking.exclusive.is_(True)))
        shared = session.scalar(select(ReservationBooking).where(ReservationBooking.exclusive.is_(False),
                                                                 ReservationBooking.lease_id ==
                                                                 world["active"]["id"]))
        exclusive.host_id = shared.host_id
        exclusive.start_date = shared.start_date
    found = violations(database)
    assert {v.rule for v in found} == {"host_capacity"} and "whole-host booking" in found[0].message


def test_an_ended_reservation_still_offering_slots_is_found(database: Database, world: dict) -> None:
    with database.transaction() as session:
        session.execute(update(Lease).where(Lease.id == world["active"]["id"]).values(status="TERMINATED"))
    assert "ended_reservation_inventory" in rules(database)


def test_an_active_reservation_without_its_inventory_is_found(database: Database, world: dict) -> None:
    resource_class = world["active"]["reservations"][0]["resource_class"]
    with database.transaction() as session:
        class_id = session.scalar(select(ResourceClass.id).where(ResourceClass.name == resource_class))
        session.execute(update(Inventory).where(Inventory.resource_class_id == class_id)
                        .values(total=Inventory.total + 1))
    assert rules(database) == {"active_reservation_inventory"}


def test_an_event_that_ran_twice_is_found(database: Database, world: dict) -> None:
    with database.transaction() as session:
        session.add(LeaseHistory(lease_id=world["ended"]["id"], project_id="p1", event="lease.ended",
                                 status="TERMINATED", message="again", detail="{}"))
    found = violations(database)
    assert [(v.rule, v.subject) for v in found] == [("ran_twice", world["ended"]["id"])]


def test_a_lease_stuck_starting_is_found(database: Database, world: dict) -> None:
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    with database.transaction() as session:
        session.execute(text("UPDATE leases SET status = 'STARTING', updated_at = :at WHERE id = :id"),
                        {"at": long_ago.strftime("%Y-%m-%d %H:%M:%S.%f") if session.get_bind().dialect.name ==
                         "sqlite" else long_ago, "id": world["pending"]["id"]})
    assert rules(database) == {"stuck_transition"}


def invoke(settings, *args: str):  # type: ignore[no-untyped-def]
    env = {name: None for name in os.environ if name.startswith("BLAZAR_LITE_")}
    env["BLAZAR_LITE_DATABASE_URL"] = settings.database_url
    config = Path(settings.data_dir) / "empty.conf"
    config.write_text("")
    return CliRunner().invoke(main, ["--config-file", str(config), "check", *args], env=env)


def test_the_command_exits_0_on_a_sound_database_and_1_with_a_report(settings, database: Database,  # type: ignore[no-untyped-def]
                                                                     world: dict) -> None:
    clean = invoke(settings)
    assert (clean.exit_code, clean.output.strip()) == (0, "no violations")
    with database.transaction() as session:
        session.execute(update(Inventory).where(Inventory.used > 0).values(used=Inventory.used + 1))
    damaged = invoke(settings)
    assert damaged.exit_code == 1 and "usage_counter: inventory" in damaged.output
    report = json.loads(invoke(settings, "-f", "json").output)
    assert {v["rule"] for v in report["violations"]} == {"usage_counter"}


def test_the_check_reads_one_snapshot_while_others_write(database: Database) -> None:
    """Every rule compares tables; a lease that starts between two of its reads would look half
    started. The check's transaction sees none of what commits after its first read."""
    with database.snapshot() as session:
        before = session.scalar(select(func.count()).select_from(Lease))
        with database.transaction() as writer:
            writer.add(Lease(id=str(uuid.uuid4()), name="late", project_id="p", user_id="u", start_date=moment(START),
                             end_date=moment(START + LENGTH), status="PENDING"))
        assert session.scalar(select(func.count()).select_from(Lease)) == before
    with database.read() as session:
        assert session.scalar(select(func.count()).select_from(Lease)) == before + 1
