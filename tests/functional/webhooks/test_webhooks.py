"""/v1/webhooks: a project's webhooks receive its lease events, signed with their secret and
filtered to what they ask for; bad bodies are 400s; other projects' webhooks are 404s."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from flask.testing import FlaskClient

from blazar_lite.db import Database
from blazar_lite.scheduler.runner import RECEIVERS, run_due_events
from blazar_lite.webhooks.delivery import DeliveryPolicy, deliver_due
from blazar_lite.webhooks.signing import verify
from tests.functional.instances.test_instances import OTHER
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import LENGTH, SECOND, START, create_lease, instances, moment, register
from tests.receiver import Receiver

P1 = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "member"}
SECRET = "project-secret-012345"


def webhook(client: FlaskClient, url: str, headers: dict | None = None, **fields: Any) -> dict:
    response = client.post("/v1/webhooks", json={"url": url, "secret": SECRET, **fields}, headers=headers or P1)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["webhook"]


def deliver(database: Database, now: dt.datetime | None = None) -> list:
    return deliver_due(database, RECEIVERS, worker_id="test", now=now, policy=DeliveryPolicy(timeout=5))


def test_a_webhook_receives_its_projects_lease_events_signed(client: FlaskClient, database: Database,
                                                             receiver: Receiver) -> None:
    hook = webhook(client, receiver.url)
    register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "l1", [instances(1)], start, start + LENGTH)
    run_due_events(database, now=start + SECOND)
    assert [r.outcome for r in deliver(database)] == ["DELIVERED", "DELIVERED"]
    assert [r.json["type"] for r in receiver.received] == ["lease.created", "lease.started"]
    for request in receiver.received:
        assert verify(SECRET, request.headers, request.body)
    started = receiver.received[1].json
    assert (started["lease"]["id"], started["lease"]["status"], started["project_id"]) == (lease["id"], "ACTIVE", "p1")
    events = client.get(f"/v1/webhooks/{hook['id']}/events", headers=P1).get_json()["events"]
    assert [(e["type"], e["status"], len(e["attempts"])) for e in events] == [
        ("lease.started", "DELIVERED", 1), ("lease.created", "DELIVERED", 1)]


def test_a_webhook_gets_only_the_events_it_asks_for_and_only_its_projects(
        client: FlaskClient, database: Database, receiver: Receiver) -> None:
    webhook(client, receiver.url, events=["lease.before_end", "lease.ended"])
    webhook(client, "http://127.0.0.1:9/other", headers=OTHER)
    register(client, "compute-1")
    start = moment(START)
    create_lease(client, "l1", [instances(1)], start, start + LENGTH)
    end = start + LENGTH
    for now in (start + SECOND, end - dt.timedelta(minutes=30), end):
        run_due_events(database, now=now)
    deliver(database)
    assert [r.json["type"] for r in receiver.received] == ["lease.before_end", "lease.ended"]


def test_webhooks_are_listed_shown_changed_and_deleted(client: FlaskClient) -> None:
    hook = webhook(client, "http://127.0.0.1:9/a", description="ops")
    assert (hook["project_id"], hook["events"], hook["secret"]) == ("p1", [], SECRET)
    assert [w["id"] for w in client.get("/v1/webhooks", headers=P1).get_json()["webhooks"]] == [hook["id"]]
    changed = client.patch(f"/v1/webhooks/{hook['id']}", json={"events": ["lease.ended", "lease.started"]},
                           headers=P1).get_json()["webhook"]
    assert changed["events"] == ["lease.started", "lease.ended"] and changed["url"] == "http://127.0.0.1:9/a"
    assert client.get(f"/v1/webhooks/{hook['id']}", headers=P1).get_json()["webhook"]["events"] == changed["events"]
    assert client.delete(f"/v1/webhooks/{hook['id']}", headers=P1).status_code == 204
    assert client.get("/v1/webhooks", headers=P1).get_json()["webhooks"] == []


def test_a_webhook_made_without_a_secret_gets_a_random_one(client: FlaskClient) -> None:
    response = client.post("/v1/webhooks", json={"url": "http://127.0.0.1:9/a"}, headers=P1)
    assert len(response.get_json()["webhook"]["secret"]) == 64


def test_another_projects_webhook_is_not_found(client: FlaskClient) -> None:
    hook = webhook(client, "http://127.0.0.1:9/a")
    for method in ("get", "patch", "delete"):
        response = getattr(client, method)(f"/v1/webhooks/{hook['id']}", json={}, headers=OTHER)
        assert "not found" in blazar_error(response, 404)
    assert client.get("/v1/webhooks", headers=OTHER).get_json()["webhooks"] == []
    assert "not found" in blazar_error(client.get(f"/v1/webhooks/{hook['id']}/events", headers=OTHER), 404)
    # Admins see every project's.
    admin = {"X-Project-Id": "admin", "X-Roles": "admin"}
    assert [w["id"] for w in client.get("/v1/webhooks", headers=admin).get_json()["webhooks"]] == [hook["id"]]


def test_a_reader_may_list_but_not_add(client: FlaskClient) -> None:
    reader = {"X-Project-Id": "p1", "X-User-Id": "u9", "X-Roles": "reader"}
    assert client.get("/v1/webhooks", headers=reader).status_code == 200
    assert client.post("/v1/webhooks", json={"url": "http://127.0.0.1:9/a"}, headers=reader).status_code == 403


@pytest.mark.parametrize(("body", "problem"), [
    ({}, "Invalid url None"),
    ({"url": "ftp://example.org/x"}, "Invalid url 'ftp://example.org/x'"),
    ({"url": "http://127.0.0.1:9/a", "secret": "short"}, "Invalid secret"),
    ({"url": "http://127.0.0.1:9/a", "events": "lease.ended"}, "Invalid events"),
    ({"url": "http://127.0.0.1:9/a", "events": ["lease.exploded"]}, "Unknown event lease.exploded"),
    ({"url": "http://127.0.0.1:9/a", "colour": "red"}, "Unknown field colour"),
    ({"url": "http://127.0.0.1:9/a", "description": 5}, "Invalid description"),
])
def test_a_bad_webhook_is_a_400_that_creates_nothing(client: FlaskClient, body: dict, problem: str) -> None:
    assert problem in blazar_error(client.post("/v1/webhooks", json=body, headers=P1), 400)
    assert client.get("/v1/webhooks", headers=P1).get_json()["webhooks"] == []


def test_a_deleted_webhook_takes_its_waiting_events_with_it(client: FlaskClient, database: Database) -> None:
    hook = webhook(client, "http://127.0.0.1:9/a")
    register(client, "compute-1")
    start = moment(START)
    create_lease(client, "l1", [instances(1)], start, start + LENGTH)
    assert client.delete(f"/v1/webhooks/{hook['id']}", headers=P1).status_code == 204
    assert deliver(database) == []
