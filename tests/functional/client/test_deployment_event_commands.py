"""`blazar-lite deployment event list` and the --webhook-secret of `deployment create|set|replace`
against a served app without authentication (an admin of project "admin"): the governor
webhook's secret as the server stores it, and its event history as tables and JSON."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from flask.testing import FlaskClient

from blazar_lite.db import Database
from tests.functional.client.test_deployment_commands import server_deployment
from tests.functional.client.test_webhook_commands import deliver
from tests.functional.deployments.test_deployments import deployment, shape
from tests.functional.instances.test_instances import slots, started_lease
from tests.functional.scheduler.test_scheduler import register
from tests.receiver import Receiver

SECRET = "governor-secret-0123"


@pytest.fixture
def offered_shop(client: FlaskClient, database: Database, receiver: Receiver) -> dict[str, Any]:
    """Project p1's shop, its webhook at the receiver, whose web shape names an active reservation
    of two slots: a capacity-offer waits to be sent."""
    register(client, "compute-1")
    register(client, "compute-2")
    lease = started_lease(client, database, [slots(2, affinity=False)])
    [reservation] = lease["reservations"]
    deployment(client, governor_webhook_url=receiver.url, governor_webhook_secret=SECRET)
    shape(client, maximum=5, template={"reservation_id": reservation["id"]})
    return reservation


# The webhook's secret

def test_deployment_create_stores_the_webhook_secret(cli: Any, client: FlaskClient) -> None:
    created = cli.json("deployment", "create", "shop", "--webhook-url", "https://gov.example/hook",
                       "--webhook-secret", SECRET)
    assert created["governor_webhook_secret"] == SECRET
    assert server_deployment(client)["governor_webhook_secret"] == SECRET


def test_deployment_set_changes_the_webhook_secret_alone(cli: Any, client: FlaskClient) -> None:
    cli.json("deployment", "create", "shop", "--description", "the shop", "--webhook-url", "http://gov/hook")
    updated = cli.json("deployment", "set", "shop", "--webhook-secret", SECRET)
    assert (updated["governor_webhook_secret"], updated["description"], updated["governor_webhook_url"]) == (
        SECRET, "the shop", "http://gov/hook")
    assert server_deployment(client)["governor_webhook_secret"] == SECRET


def test_deployment_replace_keeps_the_webhook_secret_unless_one_is_given(cli: Any, client: FlaskClient) -> None:
    cli.json("deployment", "create", "shop", "--webhook-secret", SECRET)
    assert cli.json("deployment", "replace", "shop")["governor_webhook_secret"] == SECRET
    replaced = cli.json("deployment", "replace", "shop", "--webhook-secret", "another-secret-01234")
    assert replaced["governor_webhook_secret"] == "another-secret-01234"
    assert server_deployment(client)["governor_webhook_secret"] == "another-secret-01234"


def test_a_short_webhook_secret_exits_1_with_the_server_message(cli: Any, client: FlaskClient) -> None:
    message = cli.fails("deployment", "create", "shop", "--webhook-secret", "short")
    assert message.startswith("Invalid governor_webhook_secret: give 16 to 128 printable characters")
    assert message.endswith("(HTTP 400)")
    assert client.get("/v1/deployments").get_json()["deployments"] == []


# The webhook's events

def test_deployment_event_list_shows_a_waiting_offer(cli: Any, client: FlaskClient, offered_shop: dict) -> None:
    [offer] = cli.json("deployment", "event", "list", "shop", "--project-id", "p1")
    assert offer == client.get("/v1/deployments/shop/events?project_id=p1").get_json()["events"][0]
    assert (offer["type"], offer["status"], offer["attempts"]) == ("capacity-offer", "PENDING", [])
    assert (offer["payload"]["reservation_id"], offer["payload"]["slots_left"]) == (offered_shop["id"], 2)
    assert cli.rows(cli.ok("deployment", "event", "list", "shop", "--project-id", "p1")) == [
        {"id": offer["id"], "type": "capacity-offer", "status": "PENDING", "created_at": offer["created_at"],
         "attempts": "0", "last_error": ""}]


def test_deployment_event_list_shows_the_last_error_of_a_failing_governor(
        cli: Any, database: Database, receiver: Receiver, offered_shop: dict) -> None:
    receiver.answers = [500, 503]
    assert [r.outcome for r in deliver(database)] == ["RETRY"]
    # The retry is due after the first delay (seconds), well within the hour.
    assert [r.outcome for r in deliver(database, now=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))] == ["RETRY"]
    [offer] = cli.json("deployment", "event", "list", "shop", "--project-id", "p1")
    assert [(a["attempt"], a["status_code"], a["outcome"], a["url"]) for a in offer["attempts"]] == [
        (1, 500, "RETRY", receiver.url), (2, 503, "RETRY", receiver.url)]
    last_error = offer["attempts"][-1]["error"]
    assert "503" in last_error
    [row] = cli.rows(cli.ok("deployment", "event", "list", "shop", "--project-id", "p1"))
    assert (row["status"], row["attempts"], row["last_error"]) == ("PENDING", "2", last_error)


def test_deployment_event_list_is_filtered_by_status_type_and_limit(
        cli: Any, database: Database, offered_shop: dict) -> None:
    deliver(database)
    listed = ("deployment", "event", "list", "shop", "--project-id", "p1")
    assert [e["status"] for e in cli.json(*listed, "--status", "DELIVERED")] == ["DELIVERED"]
    assert cli.json(*listed, "--status", "PENDING") == []
    assert cli.json(*listed, "--type", "evacuation") == []
    assert [e["type"] for e in cli.json(*listed, "--type", "capacity-offer", "--limit", "1")] == ["capacity-offer"]


def test_deployment_event_list_of_a_lease_event_type_exits_1_with_the_server_message(
        cli: Any, offered_shop: dict) -> None:
    assert cli.fails("deployment", "event", "list", "shop", "--project-id", "p1", "--type", "lease.created") == (
        "Invalid type 'lease.created': give one of scale-down-request, capacity-offer, evacuation. (HTTP 400)")


def test_deployment_event_list_without_the_project_id_looks_in_the_admins_project(
        cli: Any, offered_shop: dict) -> None:
    assert cli.fails("deployment", "event", "list", "shop") == (
        "Deployment shop not found in project admin. (HTTP 404)")
