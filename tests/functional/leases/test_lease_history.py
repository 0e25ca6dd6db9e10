"""GET /v1/leases/<id>/history: every create, update, delete and scheduler event of a lease, in
order, readable after the lease is deleted and only by its project."""

from __future__ import annotations

import datetime as dt

from flask.testing import FlaskClient

from blazar_lite.db import Database
from blazar_lite.scheduler.runner import run_due_events
from tests.conftest import PlacementClient
from tests.functional.instances.test_instances import OTHER
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import LENGTH, SECOND, START, create_lease, instances, moment, register

P1 = {"X-Project-Id": "p1", "X-User-Id": "u1"}


def history(client: FlaskClient, lease_id: str, headers: dict | None = None) -> list[dict]:
    response = client.get(f"/v1/leases/{lease_id}/history", headers=headers or P1)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["history"]


def test_a_lease_life_is_recorded_in_order(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "l1", [instances(1)], start, start + LENGTH)
    assert client.put(f"/v1/leases/{lease['id']}", json={"name": "renamed"}, headers=P1).status_code == 200
    run_due_events(database, now=start + SECOND)
    end = start + LENGTH
    run_due_events(database, now=end - dt.timedelta(minutes=30))
    run_due_events(database, now=end)
    entries = history(client, lease["id"])
    assert [(e["event"], e["status"]) for e in entries] == [
        ("lease.created", "PENDING"), ("lease.updated", "PENDING"), ("lease.started", "ACTIVE"),
        ("lease.before_end", "ACTIVE"), ("lease.ended", "TERMINATED")]
    assert entries[1]["detail"] == {"fields": ["name"]}
    assert entries[0]["detail"]["reservations"] == [lease["reservations"][0]["id"]]


def test_the_history_outlives_the_lease(client: FlaskClient) -> None:
    register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "l1", [instances(1)], start, start + LENGTH)
    assert client.delete(f"/v1/leases/{lease['id']}", headers=P1).status_code == 204
    assert [e["event"] for e in history(client, lease["id"])] == ["lease.created", "lease.deleted"]


def test_an_update_that_changes_nothing_is_not_recorded(client: FlaskClient) -> None:
    register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "l1", [instances(1)], start, start + LENGTH)
    assert client.put(f"/v1/leases/{lease['id']}", json={"name": "l1"}, headers=P1).status_code == 200
    assert [e["event"] for e in history(client, lease["id"])] == ["lease.created"]


def test_a_failed_event_is_recorded_as_an_error(client: FlaskClient, database: Database,
                                                placement: PlacementClient) -> None:
    host = register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "l1", [instances(1)], start, start + LENGTH)
    # Without its reservation provider the host cannot take the reservation's inventory.
    assert placement.delete(f"/resource_providers/{host['reservation_provider_uuid']}").status_code == 204
    run_due_events(database, now=start + SECOND)
    last = history(client, lease["id"])[-1]
    assert (last["event"], last["status"], last["detail"]) == ("lease.error", "ERROR", {"event": "start_lease"})
    assert last["message"].startswith("start_lease failed: ")


def test_another_projects_lease_history_is_not_found(client: FlaskClient) -> None:
    register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "l1", [instances(1)], start, start + LENGTH)
    assert "not found" in blazar_error(client.get(f"/v1/leases/{lease['id']}/history", headers=OTHER), 404)
    assert "not found" in blazar_error(client.get("/v1/leases/no-such-lease/history", headers=P1), 404)
    # Admins read any project's.
    assert len(history(client, lease["id"], {"X-Project-Id": "admin", "X-Roles": "admin"})) == 1


def test_a_lease_that_loses_a_host_records_its_degradation(client: FlaskClient, database: Database) -> None:
    host = register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "l1", [instances(1)], start, start + LENGTH)
    run_due_events(database, now=start + SECOND)
    assert client.put(f"/v1/os-hosts/{host['id']}", json={"status": "down"}).status_code == 200
    last = history(client, lease["id"])[-1]
    assert last["event"] == "lease.degraded" and "went down" in last["message"]
