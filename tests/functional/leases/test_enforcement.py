"""Usage enforcement: the [enforcement] limits (duration, hosts and slots per lease and per
project at any instant, the extension window, exempt projects) and the external policy service
(check-create, check-update, on-end; its failure modes). A refusal is a 403 naming the rule and
creates or changes nothing."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from blazar_lite.app import create_app
from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.exceptions import Forbidden
from blazar_lite.hosts import service as hosts
from blazar_lite.leases import enforcement
from blazar_lite.leases import service as leases
from blazar_lite.scheduler.runner import RECEIVERS, run_due_events
from blazar_lite.webhooks.delivery import deliver_due
from blazar_lite.webhooks.signing import verify
from tests.conftest import OK, race
from tests.functional.scheduler.test_scheduler import (
    LENGTH,
    SECOND,
    START,
    instances,
    moment,
    physical,
    register,
    text,
)
from tests.receiver import Receiver

P1 = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "member"}


def enforced(settings, database: Database, **options: Any) -> FlaskClient:  # type: ignore[no-untyped-def]
    changed = dataclasses.replace(settings, **{f"enforcement_{key}": value for key, value in options.items()})
    return create_app(changed, database).test_client()


def post_lease(client: FlaskClient, reservations: list[dict], start: dt.datetime, end: dt.datetime,
               name: str = "l1", headers: dict | None = None) -> Any:
    body = {"name": name, "start_date": text(start), "end_date": text(end), "reservations": reservations,
            "events": []}
    return client.post("/v1/leases", json=body, headers=headers or P1)


def refused(response: Any, rule: str, status: int = 403) -> str:
    assert response.status_code == status, response.get_json()
    body = response.get_json()
    assert body.get("rule") == rule, body
    return body["error_message"]


def leases_of(client: FlaskClient, headers: dict | None = None) -> list[str]:
    return [lease["name"] for lease in client.get("/v1/leases", headers=headers or P1).get_json()["leases"]]


def test_a_lease_longer_than_the_maximum_is_refused_and_an_exempt_project_may(settings, database) -> None:  # type: ignore[no-untyped-def]
    client = enforced(settings, database, max_lease_duration=24 * 60, exempt_projects="vip, other")
    register(client, "compute-1")
    start = moment(START)
    message = refused(post_lease(client, [instances(1)], start, start + dt.timedelta(days=2)), "max_lease_duration")
    assert "lasts 2 d, longer than the 1 d a lease may last" in message
    assert leases_of(client) == []
    assert post_lease(client, [instances(1)], start, start + dt.timedelta(days=1)).status_code == 201
    vip = {"X-Project-Id": "vip", "X-User-Id": "u2"}
    assert post_lease(client, [instances(1)], start, start + dt.timedelta(days=2), headers=vip).status_code == 201


def test_hosts_and_slots_per_lease_are_limited(settings, database) -> None:  # type: ignore[no-untyped-def]
    client = enforced(settings, database, max_hosts_per_lease=1, max_slots_per_lease=3)
    for name in ("compute-1", "compute-2"):
        register(client, name)
    start = moment(START)
    assert "holds 2 hosts, more than the 1" in refused(
        post_lease(client, [physical(2)], start, start + LENGTH), "max_hosts_per_lease")
    assert "holds 4 instance slots, more than the 3" in refused(
        post_lease(client, [instances(4)], start, start + LENGTH), "max_slots_per_lease")
    assert leases_of(client) == []
    assert post_lease(client, [instances(3)], start, start + LENGTH).status_code == 201


def test_a_project_is_limited_at_any_instant_not_in_total(settings, database) -> None:  # type: ignore[no-untyped-def]
    client = enforced(settings, database, max_hosts_per_project=2)
    for name in ("compute-1", "compute-2", "compute-3"):
        register(client, name)
    start = moment(START)
    assert post_lease(client, [physical(2)], start, start + LENGTH, name="first").status_code == 201
    # Overlapping the first: three hosts at once.
    message = refused(post_lease(client, [physical(1)], start + dt.timedelta(hours=1),
                                 start + LENGTH + dt.timedelta(hours=1), name="second"), "max_hosts_per_project")
    assert "Project p1 would hold 3 hosts at" in message
    # After the first: never more than two at once.
    assert post_lease(client, [physical(2)], start + LENGTH, start + 2 * LENGTH, name="third").status_code == 201
    # Another project has its own count.
    other = {"X-Project-Id": "p2", "X-User-Id": "u2"}
    assert post_lease(client, [physical(1)], start, start + LENGTH, name="theirs", headers=other).status_code == 201
    assert leases_of(client) == ["first", "third"]


def test_an_update_that_breaks_a_limit_changes_nothing(settings, database) -> None:  # type: ignore[no-untyped-def]
    client = enforced(settings, database, max_slots_per_project=4)
    register(client, "compute-1")
    register(client, "compute-2")
    start = moment(START)
    lease = post_lease(client, [instances(2)], start, start + LENGTH).get_json()["lease"]
    reservation = lease["reservations"][0]["id"]
    update = {"reservations": [{"id": reservation, "amount": 5}]}
    assert "would hold 5 instance slots" in refused(client.put(f"/v1/leases/{lease['id']}", json=update, headers=P1),
                                                    "max_slots_per_project")
    after = client.get(f"/v1/leases/{lease['id']}", headers=P1).get_json()["lease"]
    assert after["reservations"][0]["amount"] == 2


def test_a_lease_may_be_extended_only_near_its_end(settings, database) -> None:  # type: ignore[no-untyped-def]
    client = enforced(settings, database, extension_window=2)
    register(client, "compute-1")
    start = moment(START)
    end = start + LENGTH
    lease = post_lease(client, [instances(1)], start, end).get_json()["lease"]
    later = {"end_date": text(end + dt.timedelta(hours=1))}
    message = refused(client.put(f"/v1/leases/{lease['id']}", json=later, headers=P1), "extension_window")
    assert "only in the last 2 h before its end" in message
    # Shortening is always allowed.
    sooner = {"end_date": text(end - dt.timedelta(minutes=30))}
    assert client.put(f"/v1/leases/{lease['id']}", json=sooner, headers=P1).status_code == 200


def test_an_extension_inside_the_window_is_allowed(database: Database) -> None:
    with database.transaction() as session:
        hosts.create_host(session, hosts.HostSpec("compute-1", 8, 16384, 100))
    start = moment(START)
    end = start + LENGTH
    context = RequestContext(user_id="u1", project_id="p1", roles=frozenset({"member"}))
    rules = leases.LeaseRules(usage=enforcement.UsageRules(extension_window=dt.timedelta(hours=2)))
    from blazar_lite.leases import update

    with database.transaction() as session:
        lease = leases.create_lease(session, context, {"name": "l1", "start_date": text(start),
                                                       "end_date": text(end), "reservations": [instances(1)]},
                                    rules=rules)
    with database.transaction() as session:
        extended = update.update_lease(session, lease.id, {"end_date": text(end + dt.timedelta(hours=1))},
                                       now=end - dt.timedelta(hours=1), rules=rules)
    assert extended.end_date == end + dt.timedelta(hours=1)


# The external service.

def test_the_policy_service_allows_and_denies_creates(settings, database, receiver: Receiver) -> None:  # type: ignore[no-untyped-def]
    client = enforced(settings, database, external_service_url=receiver.url, external_service_secret="s" * 16)
    register(client, "compute-1")
    start = moment(START)
    receiver.answers = [204, (403, json.dumps({"message": "project p1 is over its budget"}).encode())]
    assert post_lease(client, [instances(1)], start, start + LENGTH, name="allowed").status_code == 201
    message = refused(post_lease(client, [instances(1)], start, start + LENGTH, name="denied"), "external_service")
    assert "The lease policy service refused: project p1 is over its budget" in message
    assert leases_of(client) == ["allowed"]
    asked = receiver.received[0]
    assert asked.path == "/hook/check-create" and verify("s" * 16, asked.headers, asked.body)
    assert (asked.json["context"], asked.json["lease"]["name"]) == ({"user_id": "u1", "project_id": "p1"}, "allowed")


def test_an_update_asks_with_the_current_lease(settings, database, receiver: Receiver) -> None:  # type: ignore[no-untyped-def]
    client = enforced(settings, database, external_service_url=receiver.url)
    register(client, "compute-1")
    start = moment(START)
    lease = post_lease(client, [instances(1)], start, start + LENGTH).get_json()["lease"]
    receiver.answers = [(403, b'{"message": "no renames on Fridays"}')]
    message = refused(client.put(f"/v1/leases/{lease['id']}", json={"name": "renamed"}, headers=P1),
                      "external_service")
    assert "no renames on Fridays" in message
    asked = receiver.received[-1]
    assert asked.path == "/hook/check-update"
    assert (asked.json["lease"], asked.json["current_lease"]["name"]) == ({"name": "renamed"}, "l1")
    assert leases_of(client) == ["l1"]


@pytest.mark.parametrize(("failure", "status"), [("deny", 503), ("allow", 201)])
def test_an_unreachable_policy_service_follows_the_failure_mode(settings, database, failure: str,  # type: ignore[no-untyped-def]
                                                                status: int) -> None:
    client = enforced(settings, database, external_service_url="http://127.0.0.1:9", external_service_timeout=1,
                      external_service_failure=failure)
    register(client, "compute-1")
    start = moment(START)
    response = post_lease(client, [instances(1)], start, start + LENGTH)
    assert response.status_code == status, response.get_json()
    if status == 503:
        assert "did not answer" in response.get_json()["error_message"]
        assert leases_of(client) == []


def test_the_policy_service_hears_of_each_end(settings, database, receiver: Receiver) -> None:  # type: ignore[no-untyped-def]
    changed = dataclasses.replace(settings, enforcement_external_service_url=receiver.url)
    client = create_app(changed, database).test_client()
    register(client, "compute-1")
    start = moment(START)
    lease = post_lease(client, [instances(1)], start, start + LENGTH).get_json()["lease"]
    usage = enforcement.usage_rules(changed)
    run_due_events(database, now=start + SECOND, usage=usage)
    run_due_events(database, now=start + LENGTH, usage=usage)
    receivers = {**RECEIVERS, enforcement.SOURCE: enforcement.on_end_receiver(usage)}
    [result] = deliver_due(database, receivers, worker_id="test")
    assert result.outcome == "DELIVERED"
    told = receiver.received[-1]
    assert told.path == "/hook/on-end"
    assert (told.json["lease"]["id"], told.json["lease"]["status"]) == (lease["id"], "TERMINATED")


# Racing on PostgreSQL.

@pytest.mark.postgres
def test_two_creates_racing_past_a_project_limit_let_only_one_through(pg_database: Database) -> None:
    with pg_database.transaction() as session:
        for n in range(4):
            hosts.create_host(session, hosts.HostSpec(f"compute-{n}", 8, 16384, 100))
    rules = leases.LeaseRules(usage=enforcement.UsageRules(max_hosts_per_project=3))
    start = moment(START)
    context = RequestContext(user_id="u1", project_id="p1", roles=frozenset({"member"}))

    def create(index: int) -> None:
        with pg_database.transaction() as session:
            leases.create_lease(session, context, {"name": f"l{index}", "start_date": text(start),
                                                   "end_date": text(start + LENGTH),
                                                   "reservations": [physical(2)]}, rules=rules)

    outcomes = race(create, workers=2)
    assert outcomes.count(OK) == 1
    [denied] = [outcome for outcome in outcomes if outcome != OK]
    assert isinstance(denied, Forbidden) and denied.extra["rule"] == "max_hosts_per_project"
