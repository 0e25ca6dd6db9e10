"""The governor webhook: scale-down requests at before_end_lease, capacity offers for unused
slots, evacuations; each POSTed signed to a local receiver by the scheduler's delivery pass,
retried with growing delays, and every attempt readable at /v1/deployments/<d>/events."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest
from flask.testing import FlaskClient

from blazar_lite.db import Database
from blazar_lite.scheduler.runner import RECEIVERS, LeaseScheduler, run_due_events
from blazar_lite.webhooks.delivery import DeliveryPolicy, deliver_due
from blazar_lite.webhooks.signing import verify
from tests.functional.deployments.test_deployments import launch, ok, shape
from tests.functional.instances.test_instances import MEMBER, OTHER, slots, started_lease
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import LENGTH, SECOND, START, create_lease, moment, register
from tests.receiver import Receiver

SECRET = "governor-secret-0123"
ADMIN = {"X-Project-Id": "admin", "X-User-Id": "admin", "X-Roles": "admin"}
EVENTS = "/v1/deployments/shop/events"


def webhook_deployment(client: FlaskClient, url: str) -> dict:
    body = {"name": "shop", "governor_webhook_url": url, "governor_webhook_secret": SECRET}
    return ok(client.post("/v1/deployments", json=body, headers=MEMBER), 201)["deployment"]


def deliver(database: Database, now: dt.datetime | None = None, **policy: Any) -> list:
    return deliver_due(database, RECEIVERS, worker_id="test-worker", now=now, policy=DeliveryPolicy(**policy))


def events(client: FlaskClient, query: str = "") -> list[dict]:
    return ok(client.get(f"{EVENTS}{query}", headers=MEMBER))["events"]


@pytest.fixture
def reserved_shop(client: FlaskClient, database: Database, receiver: Receiver) -> dict[str, Any]:
    """Two hosts, an active lease of two slots (one per host), and a shop whose web shape scales
    into those slots, with its webhook pointing at the receiver."""
    hosts = [register(client, "compute-1"), register(client, "compute-2")]
    lease = started_lease(client, database, [slots(2, affinity=False)])
    [reservation] = lease["reservations"]
    webhook_deployment(client, receiver.url)
    shape(client, maximum=5, template={"reservation_id": reservation["id"]})
    return {"lease": lease, "reservation": reservation, "hosts": hosts}


def test_the_deployment_shows_its_webhook_secret_and_a_random_one_when_none_is_given(client: FlaskClient) -> None:
    assert webhook_deployment(client, "http://127.0.0.1:9/hook")["governor_webhook_secret"] == SECRET
    other = ok(client.post("/v1/deployments", json={"name": "other"}, headers=MEMBER), 201)["deployment"]
    assert len(other["governor_webhook_secret"]) == 64
    rotated = ok(client.patch("/v1/deployments/other", json={"governor_webhook_secret": "a-new-secret-of-20c"},
                              headers=MEMBER))["deployment"]
    assert rotated["governor_webhook_secret"] == "a-new-secret-of-20c"
    # A PUT that leaves the secret out keeps it.
    kept = ok(client.put("/v1/deployments/other", json={"description": "d"}, headers=MEMBER))["deployment"]
    assert kept["governor_webhook_secret"] == "a-new-secret-of-20c"


@pytest.mark.parametrize("secret", ["short", "x" * 129, "has a space in it", 12345678901234567])
def test_a_bad_webhook_secret_is_a_400(client: FlaskClient, secret: object) -> None:
    response = client.post("/v1/deployments", json={"name": "shop", "governor_webhook_secret": secret},
                           headers=MEMBER)
    assert "Invalid governor_webhook_secret" in blazar_error(response, 400)
    assert ok(client.get("/v1/deployments", headers=MEMBER))["deployments"] == []


def test_a_shape_on_an_active_reservation_is_offered_its_unused_slots(
        client: FlaskClient, database: Database, receiver: Receiver, reserved_shop: dict) -> None:
    [offer] = events(client)
    assert (offer["type"], offer["status"], offer["attempts"]) == ("capacity-offer", "PENDING", [])
    data = offer["payload"]
    assert (data["shape"], data["reservation_id"], data["slots_left"], data["slots"], data["deployment"]) == (
        "web", reserved_shop["reservation"]["id"], 2, 2, "shop")

    [result] = deliver(database)
    assert result.outcome == "DELIVERED"
    [received] = receiver.received
    assert received.json == data
    assert verify(SECRET, received.headers, received.body)
    assert (received.headers["X-Blazar-Lite-Event"], received.headers["X-Blazar-Lite-Delivery"]) == (
        "capacity-offer", offer["id"])
    [delivered] = events(client)
    assert delivered["status"] == "DELIVERED" and delivered["delivered_at"] is not None
    assert [(a["attempt"], a["status_code"], a["outcome"], a["error"]) for a in delivered["attempts"]] == [
        (1, 200, "DELIVERED", "")]


def test_a_lease_reaching_before_end_asks_the_governor_to_scale_down(
        client: FlaskClient, database: Database, receiver: Receiver, reserved_shop: dict) -> None:
    ok(launch(client, "web-1"), 201)
    ok(launch(client, "web-2"), 201)
    deliver(database)
    end = moment(START) + LENGTH
    run_due_events(database, now=end - dt.timedelta(minutes=30))
    assert deliver(database)[0].outcome == "DELIVERED"
    request = receiver.received[-1]
    assert verify(SECRET, request.headers, request.body)
    data = request.json
    assert (data["type"], data["shape"], data["lease_id"], data["instances"]) == (
        "scale-down-request", "web", reserved_shop["lease"]["id"], ["web-1", "web-2"])
    assert data["reservation_ids"] == [reserved_shop["reservation"]["id"]]
    assert "deleted then" in data["message"]


def test_a_lease_start_offers_the_slots_of_a_reservation_a_shape_already_names(
        client: FlaskClient, database: Database, receiver: Receiver) -> None:
    register(client, "compute-1")
    start = moment(START)
    lease = create_lease(client, "l1", [slots(3)], start, start + LENGTH)
    webhook_deployment(client, receiver.url)
    shape(client, maximum=5, template={"reservation_id": lease["reservations"][0]["id"]})
    assert events(client) == []  # the reservation has not started: nothing to offer yet
    run_due_events(database, now=start + SECOND)
    [offer] = events(client)
    assert (offer["type"], offer["payload"]["slots_left"], offer["payload"]["lease_id"]) == (
        "capacity-offer", 3, lease["id"])


def test_an_evacuation_tells_the_governor_what_moved(
        client: FlaskClient, database: Database, receiver: Receiver, reserved_shop: dict) -> None:
    web = ok(launch(client, "web-1"), 201)["instance"]
    deliver(database)
    host = next(h for h in reserved_shop["hosts"] if h["hypervisor_hostname"] == web["host"])
    assert client.post(f"/v1/os-hosts/{host['id']}/evacuate").status_code == 200
    deliver(database)
    data = receiver.received[-1].json
    assert (data["type"], data["host"], data["reason"]) == ("evacuation", web["host"], "evacuation")
    [moved] = data["instances"]
    assert (moved["name"], moved["shape"], moved["moved"]) == ("web-1", "web", True)
    assert moved["to_host"] not in (None, web["host"])


def test_a_failing_receiver_is_retried_with_growing_delays(
        client: FlaskClient, database: Database, receiver: Receiver, reserved_shop: dict) -> None:
    receiver.answers = [500, 503]
    now = dt.datetime.now(dt.UTC)
    assert [r.outcome for r in deliver(database, now, retry_delay=dt.timedelta(seconds=10))] == ["RETRY"]
    [waiting] = events(client)
    assert waiting["status"] == "PENDING" and waiting["attempts"][0]["status_code"] == 500
    assert "receiver says no" in waiting["attempts"][0]["error"]
    # Not due before its delay has passed; then 20 s after the second failure.
    assert deliver(database, now + dt.timedelta(seconds=9), retry_delay=dt.timedelta(seconds=10)) == []
    assert [r.outcome for r in deliver(database, now + dt.timedelta(seconds=10),
                                       retry_delay=dt.timedelta(seconds=10))] == ["RETRY"]
    assert deliver(database, now + dt.timedelta(seconds=29), retry_delay=dt.timedelta(seconds=10)) == []
    assert [r.outcome for r in deliver(database, now + dt.timedelta(seconds=30),
                                       retry_delay=dt.timedelta(seconds=10))] == ["DELIVERED"]
    [done] = events(client)
    assert [(a["status_code"], a["outcome"]) for a in done["attempts"]] == [
        (500, "RETRY"), (503, "RETRY"), (200, "DELIVERED")]
    assert len(receiver.received) == 3 and len({r.body for r in receiver.received}) == 1


def test_an_event_is_given_up_after_its_last_attempt(
        client: FlaskClient, database: Database, receiver: Receiver, reserved_shop: dict) -> None:
    receiver.answers = [500, 500, 500]
    now = dt.datetime.now(dt.UTC)
    outcomes = [r.outcome for moment_ in (0, 60, 120) for r in
                deliver(database, now + dt.timedelta(seconds=moment_), max_attempts=2,
                        retry_delay=dt.timedelta(seconds=1))]
    assert outcomes == ["RETRY", "FAILED"]
    [failed] = events(client, "?status=FAILED")
    assert [a["outcome"] for a in failed["attempts"]] == ["RETRY", "FAILED"]
    assert failed["next_attempt_at"] is None


def test_an_unreachable_receiver_is_an_attempt_that_says_why(
        client: FlaskClient, database: Database, receiver: Receiver, reserved_shop: dict) -> None:
    ok(client.patch("/v1/deployments/shop", json={"governor_webhook_url": "http://127.0.0.1:9/hook"},
                    headers=MEMBER))
    [result] = deliver(database)
    assert result.outcome == "RETRY"
    [attempt] = events(client)[0]["attempts"]
    assert attempt["status_code"] is None and "refused" in attempt["error"].lower()
    assert attempt["url"] == "http://127.0.0.1:9/hook"


def test_a_slow_receiver_times_out_and_is_retried(
        client: FlaskClient, database: Database, receiver: Receiver, reserved_shop: dict) -> None:
    receiver.delay = 2.0
    [result] = deliver(database, timeout=0.5)
    assert result.outcome == "RETRY" and "timed out" in result.detail


def test_the_webhook_never_holds_up_a_lease(
        client: FlaskClient, database: Database, receiver: Receiver, reserved_shop: dict) -> None:
    # The receiver is gone: the lease still reaches before_end and its end, and the events wait.
    ok(client.patch("/v1/deployments/shop", json={"governor_webhook_url": "http://127.0.0.1:9/hook"},
                    headers=MEMBER))
    ok(launch(client, "web-1"), 201)
    end = moment(START) + LENGTH
    results = run_due_events(database, now=end - dt.timedelta(minutes=30)) + run_due_events(database, now=end)
    assert [r.outcome for r in results] == ["done", "done"]
    lease = client.get(f"/v1/leases/{reserved_shop['lease']['id']}").get_json()["lease"]
    assert lease["status"] == "TERMINATED"
    assert sorted(e["type"] for e in events(client, "?status=PENDING")) == ["capacity-offer", "scale-down-request"]


def test_a_deployment_without_a_webhook_gets_no_events(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease = started_lease(client, database, [slots(2)])
    ok(client.post("/v1/deployments", json={"name": "shop"}, headers=MEMBER), 201)
    shape(client, maximum=5, template={"reservation_id": lease["reservations"][0]["id"]})
    assert events(client) == []


def test_an_event_whose_deployment_lost_its_webhook_fails_without_a_post(
        client: FlaskClient, database: Database, receiver: Receiver, reserved_shop: dict) -> None:
    ok(client.patch("/v1/deployments/shop", json={"governor_webhook_url": None}, headers=MEMBER))
    [result] = deliver(database)
    assert result.outcome == "FAILED" and "no webhook URL" in result.detail
    assert receiver.received == []


def test_events_go_with_their_deployment(client: FlaskClient, database: Database, reserved_shop: dict) -> None:
    assert len(events(client)) == 1
    assert client.delete("/v1/deployments/shop", headers=MEMBER).status_code == 204
    webhook_deployment(client, "http://127.0.0.1:9/hook")
    assert events(client) == []
    assert deliver(database) == []


def test_another_project_cannot_read_the_events(client: FlaskClient, reserved_shop: dict) -> None:
    assert "not found in project p2" in blazar_error(client.get(EVENTS, headers=OTHER), 404)
    assert len(ok(client.get(f"{EVENTS}?project_id=p1", headers=ADMIN))["events"]) == 1


@pytest.mark.parametrize(("query", "problem"), [
    ("?status=LOST", "Invalid status 'LOST'"),
    ("?type=reboot", "Invalid type 'reboot'"),
    ("?limit=0", "Invalid limit '0'"),
    ("?limit=many", "Invalid limit 'many'"),
    ("?sort=asc", "Unknown query parameter sort"),
])
def test_bad_event_filters_are_400s(client: FlaskClient, query: str, problem: str) -> None:
    webhook_deployment(client, "http://127.0.0.1:9/hook")
    assert problem in blazar_error(client.get(f"{EVENTS}{query}", headers=MEMBER), 400)


def test_the_scheduler_delivers_with_its_configured_policy(
        settings, database: Database, client: FlaskClient, receiver: Receiver,  # type: ignore[no-untyped-def]
        reserved_shop: dict) -> None:
    scheduler = LeaseScheduler(dataclasses.replace(settings, webhooks_max_attempts=1), database)
    receiver.answers = [500]
    [result] = scheduler.deliver_webhooks()
    assert result.outcome == "FAILED"
    assert events(client)[0]["status"] == "FAILED"
