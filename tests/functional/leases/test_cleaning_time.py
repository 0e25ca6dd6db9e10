"""`[leases] cleaning_time`: a host stays idle that many minutes between two bookings, on create
and on update; without it leases follow each other back to back."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from flask.testing import FlaskClient

from blazar_lite.app import create_app
from blazar_lite.settings import Settings
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import LENGTH, START, create_lease, instances, moment, physical, register

HOUR = dt.timedelta(hours=1)
MEMBER = {"X-Project-Id": "p1", "X-User-Id": "u1"}


def client_with(settings: Settings, database, minutes: int) -> FlaskClient:  # type: ignore[no-untyped-def]
    return create_app(dataclasses.replace(settings, leases_cleaning_time=minutes), database).test_client()


def post(client: FlaskClient, name: str, reservation: dict, start: dt.datetime, end: dt.datetime):  # type: ignore[no-untyped-def]
    body = {"name": name, "start_date": start.strftime("%Y-%m-%d %H:%M"), "end_date": end.strftime("%Y-%m-%d %H:%M"),
            "reservations": [reservation], "events": []}
    return client.post("/v1/leases", json=body, headers=MEMBER)


@pytest.mark.parametrize("reservation", [physical(1), instances(4, affinity=True)], ids=["host", "instances"])
def test_a_booking_that_starts_within_the_cleaning_time_of_another_is_refused(
        settings, database, reservation: dict) -> None:  # type: ignore[no-untyped-def]
    # Four 2-vCPU slots fill an 8-vCPU host, so both kinds need the host to themselves.
    client = client_with(settings, database, 30)
    register(client, "compute-1")
    start = moment(START + 3 * HOUR)  # room for a lease before it
    create_lease(client, "first", [reservation], start, start + LENGTH)

    too_soon = post(client, "second", reservation, start + LENGTH + dt.timedelta(minutes=29),
                    start + LENGTH + 2 * HOUR)
    assert "Not enough resources" in blazar_error(too_soon, 409)
    # Before the first one too: its start needs the gap after the earlier booking's end.
    too_late = post(client, "earlier", reservation, start - 2 * HOUR, start - dt.timedelta(minutes=29))
    assert "Not enough resources" in blazar_error(too_late, 409)

    assert post(client, "after", reservation, start + LENGTH + dt.timedelta(minutes=30),
                start + LENGTH + 2 * HOUR).status_code == 201
    assert post(client, "before", reservation, start - 2 * HOUR, start - dt.timedelta(minutes=30)).status_code == 201


def test_without_cleaning_time_leases_follow_each_other_back_to_back(settings, database) -> None:  # type: ignore[no-untyped-def]
    client = client_with(settings, database, 0)
    register(client, "compute-1")
    start = moment(START)
    create_lease(client, "first", [physical(1)], start, start + LENGTH)
    assert post(client, "second", physical(1), start + LENGTH, start + LENGTH + HOUR).status_code == 201


def test_extending_a_lease_into_the_cleaning_time_of_the_next_is_refused_and_changes_nothing(
        settings, database) -> None:  # type: ignore[no-untyped-def]
    client = client_with(settings, database, 30)
    register(client, "compute-1")
    start = moment(START)
    first = create_lease(client, "first", [physical(1)], start, start + LENGTH)
    create_lease(client, "second", [physical(1)], start + LENGTH + HOUR, start + LENGTH + 2 * HOUR)
    before = client.get(f"/v1/leases/{first['id']}").get_json()["lease"]

    new_end = (start + LENGTH + dt.timedelta(minutes=31)).strftime("%Y-%m-%d %H:%M")
    response = client.put(f"/v1/leases/{first['id']}", json={"end_date": new_end}, headers=MEMBER)
    assert "Not enough resources" in blazar_error(response, 409)
    assert client.get(f"/v1/leases/{first['id']}").get_json()["lease"] == before

    fits = (start + LENGTH + dt.timedelta(minutes=30)).strftime("%Y-%m-%d %H:%M")
    response = client.put(f"/v1/leases/{first['id']}", json={"end_date": fits}, headers=MEMBER)
    assert response.status_code == 200, response.get_json()
