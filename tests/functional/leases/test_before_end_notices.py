"""before_end_notifications: several notices that a lease is ending (e.g. 24 h and 1 h before),
each recorded once in the lease's history and sent to the project's webhooks, by whichever
scheduler gets there first; moving the end makes the notices still ahead due again."""

from __future__ import annotations

import datetime as dt

import pytest
from flask.testing import FlaskClient

from blazar_lite.db import Database
from blazar_lite.leases import notices
from blazar_lite.scheduler.runner import run_due_events
from tests.conftest import OK, race
from tests.functional.leases.test_lease_history import P1, history
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import SECOND, START, instances, moment, register, text

LENGTH = dt.timedelta(days=2)


def lease_with_notices(client: FlaskClient, offsets: object, length: dt.timedelta = LENGTH) -> dict:
    start = moment(START)
    body = {"name": "l1", "start_date": text(start), "end_date": text(start + length),
            "reservations": [instances(1)], "before_end_notifications": offsets}
    response = client.post("/v1/leases", json=body, headers=P1)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["lease"]


def notices_in(client: FlaskClient, lease_id: str) -> list[object]:
    return [e["detail"].get("notice") for e in history(client, lease_id) if e["event"] == "lease.before_end"]


def test_each_notice_is_sent_once_when_its_time_comes(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease = lease_with_notices(client, ["1h", "24h", 90])
    assert lease["before_end_notifications"] == ["1d", "90m", "1h"]
    start = moment(START)
    end = start + LENGTH
    run_due_events(database, now=start + SECOND)
    assert notices.send_due(database, end - dt.timedelta(hours=25)) == 0
    assert notices.send_due(database, end - dt.timedelta(hours=24)) == 1
    assert notices.send_due(database, end - dt.timedelta(hours=23)) == 0
    # A scheduler that was away sends every notice that fell due meanwhile, once.
    assert notices.send_due(database, end - dt.timedelta(minutes=30)) == 2
    assert notices.send_due(database, end - dt.timedelta(minutes=20)) == 0
    assert notices_in(client, lease["id"]) == ["1d", "90m", "1h"]


def test_a_pending_lease_gets_no_notice(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease = lease_with_notices(client, ["2d"])
    assert notices.send_due(database, moment(START) - dt.timedelta(minutes=1)) == 0
    assert notices_in(client, lease["id"]) == []


def test_moving_the_end_later_makes_the_notices_ahead_due_again(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease = lease_with_notices(client, ["24h"])
    start = moment(START)
    end = start + LENGTH
    run_due_events(database, now=start + SECOND)
    assert notices.send_due(database, end - dt.timedelta(hours=23)) == 1
    later = end + dt.timedelta(days=1)
    response = client.put(f"/v1/leases/{lease['id']}", json={"end_date": text(later)}, headers=P1)
    assert response.status_code == 200, response.get_json()
    assert notices.send_due(database, end - dt.timedelta(hours=22)) == 0
    assert notices.send_due(database, later - dt.timedelta(hours=24)) == 1
    assert notices_in(client, lease["id"]) == ["1d", "1d"]


def test_the_notices_can_be_changed_by_an_update(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = lease_with_notices(client, ["24h"])
    response = client.put(f"/v1/leases/{lease['id']}", json={"before_end_notifications": ["2h", "30m"]}, headers=P1)
    assert response.get_json()["lease"]["before_end_notifications"] == ["2h", "30m"]
    cleared = client.put(f"/v1/leases/{lease['id']}", json={"before_end_notifications": []}, headers=P1)
    assert cleared.get_json()["lease"]["before_end_notifications"] == []


@pytest.mark.parametrize(("offsets", "problem"), [
    ("24h", "give a list"),
    (["soon"], "Invalid before_end_notifications item 'soon'"),
    (["0m"], "from 1 minute to 366 days"),
    ([True], "Invalid before_end_notifications item True"),
    (["1h"] * 11, "at most 10"),
])
def test_bad_notices_are_400s(client: FlaskClient, offsets: object, problem: str) -> None:
    register(client, "compute-1")
    start = moment(START)
    body = {"name": "l1", "start_date": text(start), "end_date": text(start + LENGTH),
            "reservations": [instances(1)], "before_end_notifications": offsets}
    assert problem in blazar_error(client.post("/v1/leases", json=body, headers=P1), 400)
    assert client.get("/v1/leases", headers=P1).get_json()["leases"] == []


@pytest.mark.postgres
def test_two_schedulers_send_each_notice_once(pg_database: Database) -> None:
    from blazar_lite.auth.context import RequestContext
    from blazar_lite.hosts import service as hosts
    from blazar_lite.leases import service as leases

    with pg_database.transaction() as session:
        hosts.create_host(session, hosts.HostSpec("compute-1", 8, 16384, 100))
    start = moment(START)
    context = RequestContext(user_id="u1", project_id="p1", roles=frozenset({"member"}))
    with pg_database.transaction() as session:
        for n in range(3):
            leases.create_lease(session, context, {"name": f"l{n}", "start_date": text(start),
                                                   "end_date": text(start + LENGTH), "reservations": [instances(1)],
                                                   "before_end_notifications": ["24h", "1h"]})
    run_due_events(pg_database, now=start + SECOND)
    counts: list[int] = [0, 0, 0, 0]

    def send(index: int) -> None:
        counts[index] = notices.send_due(pg_database, start + LENGTH - dt.timedelta(minutes=30))

    assert race(send, workers=4) == [OK] * 4
    assert sum(counts) == 6
