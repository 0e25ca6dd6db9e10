"""DELETE /v1/leases/<id> of a started lease gives back what its start took, and waits for a
running event; and the configured warning period is what create and update schedule."""

from __future__ import annotations

import dataclasses
import datetime as dt

from flask.testing import FlaskClient
from sqlalchemy import func, select

from blazar_lite.app import create_app
from blazar_lite.db import Database
from blazar_lite.hosts.service import FREEPOOL_AGGREGATE_UUID
from blazar_lite.leases import lifecycle
from blazar_lite.leases.models import Event, Lease, Reservation, ReservationBooking
from blazar_lite.scheduler import claims
from blazar_lite.scheduler.runner import RAN, run_due_events
from tests.conftest import PlacementClient
from tests.functional.leases.test_lease_update import CLIENT_FORMAT, event_times, offset, updated
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import (
    LENGTH,
    SECOND,
    START,
    aggregates,
    create_lease,
    instances,
    inventories,
    moment,
    outcomes,
    physical,
    register,
)


def window() -> tuple[dt.datetime, dt.datetime]:
    start = moment(START)
    return start, start + LENGTH


def test_deleting_an_active_lease_gives_back_its_inventory_class_flavor_and_hosts(
        client: FlaskClient, database: Database, placement: PlacementClient) -> None:
    hosts = [register(client, "compute-1"), register(client, "compute-2")]
    start, end = window()
    created = create_lease(client, "l1", [instances(1), physical(1)], start, end)
    slots, whole = created["reservations"]
    resource_class = slots["resource_class"]
    aggregate = lifecycle.reservation_aggregate_uuid(whole["id"])
    assert outcomes(run_due_events(database, now=start + SECOND)) == [("start_lease", RAN)]
    [slot_host] = [h for h in hosts if resource_class in inventories(placement, h["reservation_provider_uuid"])]
    [whole_host] = [h for h in hosts if aggregates(placement, h["resource_provider_uuid"]) == {aggregate}]

    assert [a["id"] for a in client.get("/v1/os-hosts/aggregates").get_json()["aggregates"]] == [
        FREEPOOL_AGGREGATE_UUID, aggregate]
    assert client.delete(f"/v1/leases/{created['id']}").status_code == 204
    assert [a["id"] for a in client.get("/v1/os-hosts/aggregates").get_json()["aggregates"]] == [
        FREEPOOL_AGGREGATE_UUID]

    assert resource_class not in inventories(placement, slot_host["reservation_provider_uuid"])
    assert placement.get(f"/resource_classes/{resource_class}").status_code == 404
    assert client.get(f"/v1/flavors/{slots['reservation_flavor_id']}").status_code == 404
    assert aggregates(placement, whole_host["resource_provider_uuid"]) == {FREEPOOL_AGGREGATE_UUID}
    assert aggregates(placement, slot_host["resource_provider_uuid"]) == {FREEPOOL_AGGREGATE_UUID}
    with database.transaction() as session:
        for model in (Lease, Reservation, ReservationBooking, Event):
            assert session.scalar(select(func.count()).select_from(model)) == 0


def test_deleting_a_lease_whose_event_is_running_is_a_409_and_keeps_it(
        client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    start, end = window()
    created = create_lease(client, "l1", [physical(1)], start, end)
    [claim] = claims.claim_due_events(database, "worker", start + SECOND, dt.timedelta(minutes=5), limit=1)
    assert claim.event_type == "start_lease"

    message = blazar_error(client.delete(f"/v1/leases/{created['id']}"), 409)
    assert message == (f"Lease {created['id']} is running start_lease: it cannot be deleted until that finishes. "
                       "Retry in a few seconds.")
    assert client.get(f"/v1/leases/{created['id']}").status_code == 200


def test_create_and_update_schedule_before_end_lease_by_the_configured_minutes(settings, database: Database) -> None:  # type: ignore[no-untyped-def]
    client = create_app(dataclasses.replace(settings, scheduler_minutes_before_end_lease=10), database).test_client()
    register(client, "compute-1")
    start, end = window()
    created = create_lease(client, "l1", [physical(1)], start, end)
    warning = dt.datetime.strptime(event_times(created)["before_end_lease"], CLIENT_FORMAT)
    assert warning == (end - dt.timedelta(minutes=10)).replace(tzinfo=None)

    extended = updated(client, created["id"], {"end_date": offset(created["end_date"], hours=1)},
                       headers={"X-Project-Id": "p1", "X-User-Id": "u1"})
    warning = dt.datetime.strptime(event_times(extended)["before_end_lease"], CLIENT_FORMAT)
    assert warning == (end + dt.timedelta(hours=1, minutes=-10)).replace(tzinfo=None)
