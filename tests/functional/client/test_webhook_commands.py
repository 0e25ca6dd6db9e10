"""`blazar-lite webhook …` and `blazar-lite lease history` against a served app without
authentication (an admin of project "admin"): each command's effect on the server, its table and
its JSON, the service's refusals as their messages, and the usage errors."""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask.testing import FlaskClient

from blazar_lite.db import Database
from blazar_lite.scheduler.runner import RECEIVERS
from blazar_lite.webhooks.delivery import DeliveryPolicy, deliver_due
from tests.functional.client.test_instance_commands import usage_error
from tests.functional.client.test_lease_commands import create_physical, register
from tests.receiver import Receiver

SECRET = "ops-secret-0123456789"
URL = "http://127.0.0.1:9/hook"


def server_webhook(client: FlaskClient, webhook_id: str) -> dict:
    response = client.get(f"/v1/webhooks/{webhook_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["webhook"]


def server_webhooks(client: FlaskClient) -> list[dict]:
    return client.get("/v1/webhooks").get_json()["webhooks"]


def make_webhook(cli: Any, *args: str, url: str = URL) -> dict:
    return cli.json("webhook", "create", "--url", url, "--secret", SECRET, *args)


def deliver(database: Database, now: dt.datetime | None = None) -> list:
    """Send the events due at `now` (default: now) to their receivers."""
    return deliver_due(database, RECEIVERS, worker_id="test", now=now, policy=DeliveryPolicy(timeout=5))


# Webhooks

def test_webhook_create_stores_url_secret_events_and_description(cli: Any, client: FlaskClient) -> None:
    created = make_webhook(cli, "--event", "lease.ended", "--event", "lease.before_end", "--description", "ops")
    assert created == server_webhook(client, created["id"])
    # The service keeps the events in the order of a lease's life.
    assert (created["url"], created["secret"], created["events"], created["description"], created["project_id"]) == (
        URL, SECRET, ["lease.before_end", "lease.ended"], "ops", "admin")


def test_webhook_create_without_events_or_secret_gets_all_events_and_a_random_secret(cli: Any) -> None:
    created = cli.json("webhook", "create", "--url", URL)
    assert created["events"] == []
    assert len(created["secret"]) == 64


def test_webhook_create_of_an_unknown_event_exits_1_with_the_server_message(cli: Any, client: FlaskClient) -> None:
    message = cli.fails("webhook", "create", "--url", URL, "--event", "lease.exploded")
    assert message.startswith("Unknown event lease.exploded: the events are lease.created, ")
    assert message.endswith(" (HTTP 400)")
    assert server_webhooks(client) == []


def test_webhook_create_without_a_url_is_a_usage_error(cli: Any) -> None:
    assert "Missing option '--url'" in usage_error(cli, "webhook", "create")


def test_webhook_list_and_show_print_tables_that_say_all_for_every_event(cli: Any) -> None:
    every = make_webhook(cli, "--description", "everything")
    some = make_webhook(cli, "--event", "lease.started", "--event", "lease.ended", url="https://ops.example/h")
    assert cli.rows(cli.ok("webhook", "list")) == [
        {"id": every["id"], "project_id": "admin", "url": URL, "events": "all", "description": "everything"},
        {"id": some["id"], "project_id": "admin", "url": "https://ops.example/h",
         "events": "lease.started, lease.ended", "description": ""}]
    shown = cli.fields(cli.ok("webhook", "show", every["id"]))
    assert (shown["id"], shown["events"], shown["secret"], shown["url"]) == (every["id"], "all", SECRET, URL)
    assert cli.json("webhook", "list") == [every, some]
    assert cli.json("webhook", "show", every["id"]) == every


def test_webhook_show_of_an_unknown_id_exits_1(cli: Any) -> None:
    assert cli.fails("webhook", "show", "no-such-hook") == "Webhook no-such-hook not found. (HTTP 404)"


def test_webhook_set_changes_only_what_is_given(cli: Any, client: FlaskClient) -> None:
    created = make_webhook(cli, "--event", "lease.ended", "--description", "ops")
    changed = cli.json("webhook", "set", created["id"], "--url", "https://ops.example/new",
                       "--secret", "another-secret-01234")
    assert (changed["url"], changed["secret"], changed["events"], changed["description"]) == (
        "https://ops.example/new", "another-secret-01234", ["lease.ended"], "ops")
    changed = cli.json("webhook", "set", created["id"], "--event", "lease.error", "--event", "lease.started",
                       "--description", "")
    assert (changed["events"], changed["description"]) == (["lease.started", "lease.error"], "")
    assert server_webhook(client, created["id"]) == changed


def test_webhook_set_all_events_empties_the_event_list(cli: Any, client: FlaskClient) -> None:
    created = make_webhook(cli, "--event", "lease.ended")
    assert cli.json("webhook", "set", created["id"], "--all-events")["events"] == []
    assert server_webhook(client, created["id"])["events"] == []


def test_webhook_set_without_a_change_or_with_contradicting_events_is_a_usage_error(cli: Any,
                                                                                    client: FlaskClient) -> None:
    created = make_webhook(cli, "--event", "lease.ended")
    assert "Nothing to set" in usage_error(cli, "webhook", "set", created["id"])
    assert "contradict" in usage_error(cli, "webhook", "set", created["id"], "--event", "lease.started",
                                       "--all-events")
    assert server_webhook(client, created["id"])["events"] == ["lease.ended"]


def test_webhook_set_of_a_short_secret_exits_1_with_the_server_message(cli: Any, client: FlaskClient) -> None:
    created = make_webhook(cli)
    assert cli.fails("webhook", "set", created["id"], "--secret", "short") == (
        "Invalid secret: give 16 to 128 printable characters without spaces, or leave it out for a random one. "
        "(HTTP 400)")
    assert server_webhook(client, created["id"])["secret"] == SECRET


def test_webhook_delete_removes_it(cli: Any, client: FlaskClient) -> None:
    created = make_webhook(cli)
    assert cli.ok("webhook", "delete", created["id"]) == f"Deleted webhook {created['id']}.\n"
    assert server_webhooks(client) == []
    assert cli.fails("webhook", "delete", created["id"]) == f"Webhook {created['id']} not found. (HTTP 404)"


# A webhook's events

def test_webhook_events_show_attempts_and_the_last_error_of_a_failing_receiver(
        cli: Any, client: FlaskClient, database: Database, receiver: Receiver) -> None:
    hook = make_webhook(cli, url=receiver.url)
    register(client, "compute-1")
    lease = create_physical(cli)
    receiver.answers = [500]
    [result] = deliver(database)
    assert result.outcome == "RETRY"
    [event] = cli.json("webhook", "events", hook["id"])
    assert (event["type"], event["status"], event["payload"]["lease"]["id"]) == ("lease.created", "PENDING",
                                                                                 lease["id"])
    [attempt] = event["attempts"]
    assert (attempt["attempt"], attempt["status_code"], attempt["outcome"]) == (1, 500, "RETRY")
    assert "500" in attempt["error"]
    assert cli.rows(cli.ok("webhook", "events", hook["id"])) == [
        {"id": event["id"], "type": "lease.created", "status": "PENDING", "created_at": event["created_at"],
         "attempts": "1", "last_error": attempt["error"]}]


def test_webhook_events_are_filtered_by_status_type_and_limit(
        cli: Any, client: FlaskClient, database: Database, receiver: Receiver) -> None:
    hook = make_webhook(cli, url=receiver.url)
    register(client, "compute-1")
    create_physical(cli)
    deliver(database)
    cli.ok("lease", "update", "lease-1", "--prolong-for", "1h")
    newest_first = ["lease.updated", "lease.created"]
    assert [e["type"] for e in cli.json("webhook", "events", hook["id"])] == newest_first
    assert [e["type"] for e in cli.json("webhook", "events", hook["id"], "--status", "PENDING")] == ["lease.updated"]
    assert [e["type"] for e in cli.json("webhook", "events", hook["id"], "--type", "lease.created")] == [
        "lease.created"]
    assert [e["type"] for e in cli.json("webhook", "events", hook["id"], "--limit", "1")] == ["lease.updated"]


def test_webhook_events_of_an_unknown_type_exit_1_with_the_server_message(cli: Any) -> None:
    hook = make_webhook(cli)
    message = cli.fails("webhook", "events", hook["id"], "--type", "capacity-offer")
    assert message.startswith("Invalid type 'capacity-offer': give one of lease.created, ")
    assert cli.fails("webhook", "events", hook["id"], "--limit", "0") == (
        "Invalid limit '0': give a whole number from 1 to 1000. (HTTP 400)")


# Lease history

def test_lease_history_by_name_lists_events_oldest_first(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create_physical(cli)
    cli.ok("lease", "update", "lease-1", "--prolong-for", "1h")
    history = cli.json("lease", "history", "lease-1")
    assert [(h["event"], h["status"]) for h in history] == [("lease.created", "PENDING"),
                                                            ("lease.updated", "PENDING")]
    assert history == client.get(f"/v1/leases/{lease['id']}/history").get_json()["history"]
    assert cli.rows(cli.ok("lease", "history", "lease-1")) == [
        {"event": h["event"], "status": h["status"], "at": h["at"], "message": h["message"]} for h in history]


def test_lease_history_of_a_deleted_lease_is_read_by_its_uuid(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create_physical(cli)
    cli.ok("lease", "delete", "lease-1")
    assert [h["event"] for h in cli.json("lease", "history", lease["id"])] == ["lease.created", "lease.deleted"]
    assert cli.fails("lease", "history", "lease-1") == "No lease named lease-1. (HTTP 404)"


def test_lease_history_of_an_unknown_uuid_exits_1_with_the_server_message(cli: Any) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    assert cli.fails("lease", "history", missing) == f"Lease {missing} not found. (HTTP 404)"
