"""GET /v1/leases/<id>/usage (capacity-hours reserved against used by running instances) and
the idle-lease policy (warn, then end a lease nothing runs in)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select

from blazar_lite.db import Database
from blazar_lite.instances import usage
from blazar_lite.leases import idle
from blazar_lite.leases.models import ReservationBooking
from blazar_lite.scheduler.runner import run_due_events
from tests.functional.instances.test_instances import MEMBER, slots
from tests.functional.leases.test_lease_history import history
from tests.functional.scheduler.test_scheduler import LENGTH, SECOND, START, create_lease, moment, physical, register

ADMIN = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "admin"}


class Clock:
    """The time instances' spans of use are stamped with, set by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, now: dt.datetime) -> None:
        self.now = now
        monkeypatch.setattr(usage, "utcnow", lambda: self.now)


@pytest.fixture
def started(client: FlaskClient, database: Database, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    register(client, "compute-1")
    register(client, "compute-2")
    start = moment(START)
    lease = create_lease(client, "l1", [slots(2)], start, start + LENGTH)
    run_due_events(database, now=start + SECOND)
    return {"lease": lease, "start": start, "clock": Clock(monkeypatch, start),
            "reservation": lease["reservations"][0]["id"]}


def report(client: FlaskClient, lease_id: str) -> dict:
    response = client.get(f"/v1/leases/{lease_id}/usage", headers=MEMBER)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_usage_counts_the_slot_hours_running_instances_used(client: FlaskClient, started: dict) -> None:
    clock, start = started["clock"], started["start"]
    clock.now = start + dt.timedelta(hours=1)
    created = client.post("/v1/instances", json={"name": "a", "reservation_id": started["reservation"]},
                          headers=MEMBER)
    assert created.status_code == 201, created.get_json()
    clock.now = start + dt.timedelta(hours=2)
    assert client.put("/v1/instances/a/state", json={"action": "stop"}, headers=MEMBER).status_code == 200
    clock.now = start + dt.timedelta(hours=3)
    [line] = report(client, started["lease"]["id"])["usage"]
    assert (line["capacity"], line["reserved_hours"], line["used_hours"], line["in_use_now"]) == (2, 6.0, 1.0, 0)
    assert line["used_fraction"] == pytest.approx(1 / 6, abs=1e-4)


def test_a_forthcoming_instance_holds_a_slot_but_does_not_use_it(client: FlaskClient, started: dict) -> None:
    clock, start = started["clock"], started["start"]
    clock.now = start + dt.timedelta(minutes=30)
    paper = client.post("/v1/instances", json={"forthcoming": True, "reservation_id": started["reservation"]},
                        headers=MEMBER).get_json()["instance"]
    clock.now = start + dt.timedelta(hours=1)
    assert client.post(f"/v1/instances/{paper['id']}/create", json={"name": "real"}, headers=MEMBER).status_code == 200
    clock.now = start + dt.timedelta(hours=2)
    assert client.delete("/v1/instances/real", headers=MEMBER).status_code == 204
    [line] = report(client, started["lease"]["id"])["usage"]
    assert (line["used_hours"], line["in_use_now"]) == (1.0, 0)


def test_a_host_reservation_counts_a_host_once_however_many_instances_run_on_it(
        client: FlaskClient, database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "hosts", [physical(1)], start, start + LENGTH)
    run_due_events(database, now=start + SECOND)
    clock = Clock(monkeypatch, start)
    reservation = lease["reservations"][0]["id"]
    for name in ("a", "b"):
        body = {"name": name, "reservation_id": reservation, "vcpus": 1, "memory_mb": 512}
        assert client.post("/v1/instances", json=body, headers=MEMBER).status_code == 201
    clock.now = start + dt.timedelta(hours=2)
    [line] = report(client, lease["id"])["usage"]
    assert (line["capacity"], line["reserved_hours"], line["used_hours"], line["in_use_now"]) == (1, 2.0, 2.0, 1)


def test_another_projects_lease_usage_is_not_found(client: FlaskClient, started: dict) -> None:
    other = {"X-Project-Id": "p2", "X-User-Id": "u2", "X-Roles": "member"}
    assert client.get(f"/v1/leases/{started['lease']['id']}/usage", headers=other).status_code == 404


# The idle-lease policy.

RULES = idle.IdleRules(warn_after=dt.timedelta(minutes=30), end_after=dt.timedelta(minutes=60))


def test_an_idle_lease_is_warned_then_ended(client: FlaskClient, database: Database, started: dict) -> None:
    start, lease_id = started["start"], started["lease"]["id"]
    assert idle.apply(database, RULES, start + dt.timedelta(minutes=20)) == []
    assert idle.apply(database, RULES, start + dt.timedelta(minutes=30)) == [(lease_id, idle.WARNED)]
    assert idle.apply(database, RULES, start + dt.timedelta(minutes=45)) == []
    ended_at = start + dt.timedelta(minutes=60)
    assert idle.apply(database, RULES, ended_at) == [(lease_id, idle.ENDED)]
    run_due_events(database, now=ended_at + SECOND)
    lease = client.get(f"/v1/leases/{lease_id}", headers=MEMBER).get_json()["lease"]
    assert lease["status"] == "TERMINATED" and lease["end_date"].startswith(ended_at.strftime("%Y-%m-%dT%H:%M"))
    with database.read() as session:
        ends = set(session.scalars(select(ReservationBooking.end_date).where(ReservationBooking.lease_id == lease_id)))
    assert ends == {ended_at}
    idles = [e["detail"]["action"] for e in history(client, lease_id, MEMBER) if e["event"] == "lease.idle"]
    assert idles == ["warn", "end"]


def test_a_lease_in_use_is_never_idle_and_its_idleness_starts_when_use_stops(
        client: FlaskClient, database: Database, started: dict) -> None:
    clock, start, lease_id = started["clock"], started["start"], started["lease"]["id"]
    clock.now = start + dt.timedelta(minutes=5)
    assert client.post("/v1/instances", json={"name": "a", "reservation_id": started["reservation"]},
                       headers=MEMBER).status_code == 201
    assert idle.apply(database, RULES, start + dt.timedelta(minutes=90)) == []
    clock.now = start + dt.timedelta(minutes=100)
    assert client.delete("/v1/instances/a", headers=MEMBER).status_code == 204
    assert idle.apply(database, RULES, start + dt.timedelta(minutes=120)) == []
    assert idle.apply(database, RULES, start + dt.timedelta(minutes=130)) == [(lease_id, idle.WARNED)]
    assert report(client, lease_id)["idle_since"] is not None


def test_without_a_warning_period_a_lease_is_warned_when_its_end_is_due_and_ended_after(
        database: Database, started: dict) -> None:
    rules = idle.IdleRules(end_after=dt.timedelta(minutes=60))
    start, lease_id = started["start"], started["lease"]["id"]
    assert idle.apply(database, rules, start + dt.timedelta(minutes=60)) == [(lease_id, idle.WARNED)]
    assert idle.apply(database, rules, start + dt.timedelta(minutes=61)) == [(lease_id, idle.ENDED)]
