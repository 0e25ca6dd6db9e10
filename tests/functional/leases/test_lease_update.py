"""PUT /v1/leases/<id>: rename, the client's date offsets, resizing reservations, the rules of
started, active and terminated leases, and refusals that leave the lease exactly as it was."""

from __future__ import annotations

import datetime as dt

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select

from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.hosts.models import Host
from blazar_lite.hosts.service import FREEPOOL_AGGREGATE_UUID
from blazar_lite.leases import lifecycle, service
from blazar_lite.leases.models import ACTIVE, DONE, IN_PROGRESS, STARTING, TERMINATED, Event, Lease, ReservationBooking
from blazar_lite.scheduler.runner import RAN, run_due_events
from tests.functional.leases.test_leases import (
    MEMBER,
    OTHER,
    READER,
    at,
    blazar_error,
    create,
    hosts_of,
    instances,
    physical,
    register,
)

# The format python-blazarclient parses dates with, and writes them back in, for its offsets.
CLIENT_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


def show(client: FlaskClient, lease_id: str, headers: dict | None = None) -> dict:
    response = client.get(f"/v1/leases/{lease_id}", headers=headers or {})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["lease"]


def put(client: FlaskClient, lease_id: str, body: dict, headers: dict | None = None):  # type: ignore[no-untyped-def]
    return client.put(f"/v1/leases/{lease_id}", json=body, headers=headers or {})


def updated(client: FlaskClient, lease_id: str, body: dict, headers: dict | None = None) -> dict:
    response = put(client, lease_id, body, headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["lease"]


def refused(client: FlaskClient, lease_id: str, body: dict, status: int, headers: dict | None = None) -> str:
    """Assert the update is refused with `status` and the lease is exactly as it was; the message."""
    before = show(client, lease_id)
    message = blazar_error(put(client, lease_id, body, headers), status)
    assert show(client, lease_id) == before
    return message


def offset(date: str, **delta: float) -> str:
    """What the client PUTs for an offset: the date it read, moved, in the format it read."""
    return (dt.datetime.strptime(date, CLIENT_FORMAT) + dt.timedelta(**delta)).strftime(CLIENT_FORMAT)


def event_times(lease: dict) -> dict[str, str]:
    return {event["event_type"]: event["time"] for event in lease["events"]}


def parse(date: str) -> dt.datetime:
    return dt.datetime.strptime(date, CLIENT_FORMAT)


def create_in_the_past(database: Database, name: str, reservations: list[dict], *, hours_ago: float,
                       start_in: float, end_in: float) -> str:
    """A lease created `hours_ago`, starting and ending `start_in` / `end_in` hours after that:
    the way to get a lease whose start or end has passed."""
    then = dt.datetime.now(dt.UTC) - dt.timedelta(hours=hours_ago)
    body = {"name": name, "start_date": (then + dt.timedelta(hours=start_in)).strftime("%Y-%m-%d %H:%M"),
            "end_date": (then + dt.timedelta(hours=end_in)).strftime("%Y-%m-%d %H:%M"),
            "before_end_date": None, "reservations": reservations, "events": []}
    with database.transaction() as session:
        return service.create_lease(session, RequestContext.admin(), body, now=then).id


def started_by_the_scheduler(database: Database, lease_id: str) -> None:
    """What a start_lease event leaves behind: the lease ACTIVE, its start event done, each
    instance reservation's slots as inventory on its hosts' reservation providers."""
    with database.transaction() as session:
        lease = session.get(Lease, lease_id)
        assert lease is not None
        lease.status = ACTIVE
        for event in session.scalars(select(Event).where(Event.lease_id == lease_id,
                                                         Event.event_type == "start_lease")):
            event.status = DONE
        view = service.get_lease(session, lease_id)
        placement = service.EmbeddedPlacement(session)
        for reservation in view.reservations:
            if reservation.resource_type == "physical:host":
                continue
            for booking in session.scalars(select(ReservationBooking)
                                           .where(ReservationBooking.reservation_id == reservation.id)):
                host = session.get(Host, booking.host_id)
                assert host is not None
                lifecycle.set_reservation_inventory(placement, host.reservation_provider_uuid,
                                                    service.resource_class_of(reservation.id), booking.slots)


def set_status(database: Database, lease_id: str, status: str) -> None:
    with database.transaction() as session:
        lease = session.get(Lease, lease_id)
        assert lease is not None
        lease.status = status


def slots_inventory(client: FlaskClient, host_id: int, reservation_id: str) -> int | None:
    provider = client.get(f"/v1/os-hosts/{host_id}").get_json()["host"]["reservation_provider_uuid"]
    response = client.get(f"/placement/resource_providers/{provider}/inventories",
                          headers={"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"})
    assert response.status_code == 200, response.get_json()
    inventory = response.get_json()["inventories"].get(service.resource_class_of(reservation_id))
    return None if inventory is None else inventory["total"]


def host_aggregates(client: FlaskClient, host_id: int) -> set[str]:
    provider = client.get(f"/v1/os-hosts/{host_id}").get_json()["host"]["resource_provider_uuid"]
    response = client.get(f"/placement/resource_providers/{provider}/aggregates",
                          headers={"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"})
    assert response.status_code == 200, response.get_json()
    return set(response.get_json()["aggregates"])


# Renaming.

def test_a_lease_is_renamed_and_nothing_else_changes(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()])
    renamed = updated(client, lease["id"], {"name": "lease-2"})
    assert renamed["name"] == "lease-2"
    assert {k: v for k, v in renamed.items() if k not in ("name", "updated_at")} == \
        {k: v for k, v in lease.items() if k not in ("name", "updated_at")}
    assert renamed["updated_at"] is not None


def test_a_name_another_lease_of_the_project_has_is_a_409(client: FlaskClient) -> None:
    register(client, "compute-1")
    create(client, "lease-1", [instances()])
    lease = create(client, "lease-2", [instances()])
    message = refused(client, lease["id"], {"name": "lease-1"}, 409)
    assert message.startswith("A lease named lease-1 already exists in your project")


# The client's offsets: it reads a date, moves it, and PUTs it back.

def test_prolong_for_moves_the_end_and_the_end_events(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(2))
    prolonged = updated(client, lease["id"], {"end_date": offset(lease["end_date"], days=1)})
    assert parse(prolonged["end_date"]) == parse(lease["end_date"]) + dt.timedelta(days=1)
    assert prolonged["start_date"] == lease["start_date"]
    times = event_times(prolonged)
    assert times["end_lease"] == prolonged["end_date"]
    assert parse(times["before_end_lease"]) == parse(prolonged["end_date"]) - dt.timedelta(hours=1)
    assert times["start_lease"] == lease["start_date"]


def test_reduce_by_moves_the_end_earlier(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(3))
    reduced = updated(client, lease["id"], {"end_date": offset(lease["end_date"], hours=-12)})
    assert parse(reduced["end_date"]) == parse(lease["end_date"]) - dt.timedelta(hours=12)
    assert event_times(reduced)["end_lease"] == reduced["end_date"]


def test_defer_by_moves_the_start_and_its_event(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(3))
    deferred = updated(client, lease["id"], {"start_date": offset(lease["start_date"], hours=6)})
    assert parse(deferred["start_date"]) == parse(lease["start_date"]) + dt.timedelta(hours=6)
    assert deferred["end_date"] == lease["end_date"]
    assert event_times(deferred)["start_lease"] == deferred["start_date"]


def test_advance_by_moves_the_start_earlier(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(2), end=at(3))
    advanced = updated(client, lease["id"], {"start_date": offset(lease["start_date"], days=-1)})
    assert parse(advanced["start_date"]) == parse(lease["start_date"]) - dt.timedelta(days=1)
    assert event_times(advanced)["start_lease"] == advanced["start_date"]


def test_advancing_the_start_into_the_past_is_a_400(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(3))
    message = refused(client, lease["id"], {"start_date": offset(lease["start_date"], days=-2)}, 400)
    assert message == "Start date must be later than current date"


def test_reducing_the_end_to_the_start_or_before_is_a_400(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(2))
    message = refused(client, lease["id"], {"end_date": lease["start_date"]}, 400)
    assert message == "End date must be later than start date."


def test_sending_back_the_dates_read_changes_nothing(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()])
    same = updated(client, lease["id"], {"start_date": lease["start_date"], "end_date": lease["end_date"]})
    assert same == lease


def test_a_date_the_service_cannot_read_is_a_400(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()])
    message = refused(client, lease["id"], {"end_date": "tomorrow"}, 400)
    assert message == "tomorrow is an invalid date. Required format: %Y-%m-%d %H:%M"


# before_end_date and the before_end_lease event.

def test_a_new_before_end_date_moves_its_event_and_null_restores_the_default(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(3))
    moved = updated(client, lease["id"], {"before_end_date": at(2)})
    assert event_times(moved)["before_end_lease"] == moved["before_end_date"] == at(2).replace(" ", "T") + ":00.000000"
    restored = updated(client, lease["id"], {"before_end_date": None})
    assert restored["before_end_date"] is None
    assert parse(event_times(restored)["before_end_lease"]) == parse(restored["end_date"]) - dt.timedelta(hours=1)


def test_a_before_end_date_outside_the_new_window_is_a_400(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(3))
    message = refused(client, lease["id"], {"before_end_date": at(4)}, 400)
    assert message == "before_end_date must be later than start_date and earlier than end_date"


def test_a_lease_shortened_below_the_warning_period_loses_its_before_end_event(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(2))
    short = updated(client, lease["id"], {"end_date": offset(lease["start_date"], minutes=30)})
    assert set(event_times(short)) == {"start_lease", "end_lease"}
    long = updated(client, lease["id"], {"end_date": offset(lease["start_date"], hours=5)})
    assert set(event_times(long)) == {"start_lease", "before_end_lease", "end_lease"}


# Started and terminated leases.

def test_a_started_lease_cannot_move_its_start_but_can_be_extended(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease_id = create_in_the_past(database, "lease-1", [physical()], hours_ago=2, start_in=1, end_in=4)
    lease = show(client, lease_id)
    message = refused(client, lease_id, {"start_date": offset(lease["start_date"], minutes=5)}, 400)
    assert message == "Cannot modify the start date of already started leases"
    extended = updated(client, lease_id, {"end_date": offset(lease["end_date"], hours=2)})
    assert extended["start_date"] == lease["start_date"]
    assert parse(extended["end_date"]) == parse(lease["end_date"]) + dt.timedelta(hours=2)


def test_the_end_of_a_started_lease_must_be_later_than_now(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease_id = create_in_the_past(database, "lease-1", [physical()], hours_ago=2, start_in=1, end_in=4)
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=10)).strftime(CLIENT_FORMAT)
    assert refused(client, lease_id, {"end_date": past}, 400) == "End date must be later than current date"


def test_a_lease_whose_end_has_passed_can_only_be_renamed(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease_id = create_in_the_past(database, "lease-1", [instances()], hours_ago=5, start_in=1, end_in=2)
    lease = show(client, lease_id)
    reservation_id = lease["reservations"][0]["id"]
    for body in ({"end_date": at(1)}, {"reservations": [{"id": reservation_id, "amount": 2}]},
                 {"before_end_date": None}):
        assert refused(client, lease_id, body, 400) == "Terminated leases can only be renamed"
    renamed = updated(client, lease_id, {"name": "old-lease"})
    assert renamed["name"] == "old-lease" and renamed["end_date"] == lease["end_date"]


def test_a_terminated_lease_can_only_be_renamed(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()])
    # No request ends a lease: the scheduler does.
    set_status(database, lease["id"], TERMINATED)
    message = refused(client, lease["id"], {"end_date": offset(lease["end_date"], hours=1)}, 400)
    assert message == "Terminated leases can only be renamed"
    assert updated(client, lease["id"], {"name": "done"})["name"] == "done"


@pytest.mark.parametrize("status", ["STARTING", "TERMINATING", "UPDATING", "DELETING"])
def test_a_lease_in_a_transitional_state_is_not_updated_or_deleted(client: FlaskClient, database: Database,
                                                                   status: str) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()])
    set_status(database, lease["id"], status)
    message = refused(client, lease["id"], {"name": "x"}, 409)
    assert message == f"Lease {lease['id']} is {status}: it cannot be updated until that finishes. " \
                      "Retry in a few seconds."
    assert blazar_error(client.delete(f"/v1/leases/{lease['id']}"), 409).startswith(f"Lease {lease['id']} is {status}")


def test_a_lease_whose_event_is_running_is_not_updated(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()])
    with database.transaction() as session:
        for event in session.scalars(select(Event).where(Event.lease_id == lease["id"],
                                                         Event.event_type == "start_lease")):
            event.status = IN_PROGRESS
    message = refused(client, lease["id"], {"end_date": offset(lease["end_date"], hours=1)}, 409)
    assert "running start_lease" in message


# Who may.

def test_only_the_project_members_and_admins_update_a_lease(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [instances()], headers=MEMBER)
    assert blazar_error(put(client, lease["id"], {"name": "x"}, READER), 403)
    assert blazar_error(put(client, lease["id"], {"name": "x"}, OTHER), 404) == f"Lease {lease['id']} not found."
    assert updated(client, lease["id"], {"name": "by-member"}, MEMBER)["name"] == "by-member"
    assert updated(client, lease["id"], {"name": "by-admin"})["name"] == "by-admin"


def test_an_unknown_lease_is_404(client: FlaskClient) -> None:
    assert blazar_error(put(client, "nope", {"name": "x"}), 404) == "Lease nope not found."


# Bad bodies.

@pytest.mark.parametrize(("body", "expected"), [
    ({}, "No data to update: give any of name, start_date, end_date, before_end_date, before_end_notifications, "
         "reservations."),
    ({"colour": "red"}, "Invalid input for field 'colour': Unknown field."),
    ({"name": ""}, "Invalid input for field 'name': give the lease a non-empty name."),
    ({"reservations": [{"amount": 2}]},
     "Invalid input for field 'reservations.0.id': Missing data for required field."),
    ({"reservations": [{"id": "nope"}]}, "Invalid input for field 'reservations[0].id': 'nope' is not a reservation"),
])
def test_a_bad_update_is_refused_naming_its_field(client: FlaskClient, body: dict, expected: str) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [instances()])
    assert refused(client, lease["id"], body, 400).startswith(expected)


@pytest.mark.parametrize(("change", "expected"), [
    ({"min": 2, "max": 1}, "Invalid input for field 'reservations[0].max': max (1) must be at least min (2)."),
    ({"vcpus": 2}, "Invalid input for field 'reservations[0].vcpus': cannot be changed on a physical:host "
                   "reservation; these can: min, max, hypervisor_properties, resource_properties, before_end."),
    ({"resource_type": "virtual:instance"}, "Invalid input for field 'reservations[0].resource_type': a "
                                            "reservation's type cannot change"),
    ({"hypervisor_properties": "[\"~\", \"$vcpus\", \"2\"]"}, "Invalid input for field 'hypervisor_properties'"),
])
def test_a_bad_reservation_change_is_refused_naming_its_field(client: FlaskClient, change: dict,
                                                              expected: str) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()])
    body = {"reservations": [{"id": lease["reservations"][0]["id"], **change}]}
    assert refused(client, lease["id"], body, 400).startswith(expected)


# Resizing reservations.

def test_physical_max_grows_onto_free_hosts_keeping_the_held_one(client: FlaskClient) -> None:
    for name in ("compute-1", "compute-2", "compute-3"):
        register(client, name)
    lease = create(client, "lease-1", [physical(1, 1)])
    [reservation] = lease["reservations"]
    [held] = hosts_of(client, lease)[reservation["id"]]
    grown = updated(client, lease["id"], {"reservations": [{"id": reservation["id"], "max": 3}]})
    assert (grown["reservations"][0]["min"], grown["reservations"][0]["max"]) == (1, 3)
    hosts = hosts_of(client, lease)[reservation["id"]]
    assert held in hosts and len(hosts) == 3


def test_physical_min_beyond_the_free_hosts_is_a_409_and_changes_nothing(client: FlaskClient) -> None:
    register(client, "compute-1")
    register(client, "compute-2")
    create(client, "other", [physical(1)])
    lease = create(client, "lease-1", [physical(1)])
    [reservation] = lease["reservations"]
    message = refused(client, lease["id"], {"reservations": [{"id": reservation["id"], "min": 2, "max": 2}]}, 409)
    assert message.startswith(f"Not enough resources for reservation {reservation['id']} (physical:host): "
                              "2 hosts requested, 1 free between ")


def test_physical_max_shrinks_to_a_subset_of_its_hosts(client: FlaskClient) -> None:
    for name in ("compute-1", "compute-2", "compute-3"):
        register(client, name)
    lease = create(client, "lease-1", [physical(1, 3)])
    [reservation] = lease["reservations"]
    before = set(hosts_of(client, lease)[reservation["id"]])
    updated(client, lease["id"], {"reservations": [{"id": reservation["id"], "min": 1, "max": 2}]})
    after = set(hosts_of(client, lease)[reservation["id"]])
    assert len(after) == 2 and after < before


def test_instance_amount_grows_with_room_and_shrinks(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8)
    lease = create(client, "lease-1", [instances(amount=1, vcpus=2)])
    reservation_id = lease["reservations"][0]["id"]
    grown = updated(client, lease["id"], {"reservations": [{"id": reservation_id, "amount": "4"}]})
    assert grown["reservations"][0]["amount"] == 4
    shrunk = updated(client, lease["id"], {"reservations": [{"id": reservation_id, "amount": 2}]})
    assert shrunk["reservations"][0]["amount"] == 2
    # The room given back is bookable again.
    create(client, "lease-2", [instances(amount=2, vcpus=2)])


def test_instance_amount_beyond_the_room_is_a_409_and_changes_nothing(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8)
    create(client, "other", [instances(amount=2, vcpus=2)])
    lease = create(client, "lease-1", [instances(amount=1, vcpus=2)])
    reservation_id = lease["reservations"][0]["id"]
    message = refused(client, lease["id"], {"reservations": [{"id": reservation_id, "amount": 3}]}, 409)
    assert message.startswith(f"Not enough resources for reservation {reservation_id} (virtual:instance): "
                              "3 slots of 2 vCPU, 2048 MB, 20 GB requested, 2 free between ")


def test_a_lease_s_own_bookings_do_not_count_against_it(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=4)
    lease = create(client, "lease-1", [instances(amount=2, vcpus=2)])
    reservation_id = lease["reservations"][0]["id"]
    # 2 × 3 vCPUs would not fit beside the 2 × 2 the lease holds, but they replace them.
    resized = updated(client, lease["id"], {"reservations": [{"id": reservation_id, "vcpus": 2, "amount": 2}],
                                            "end_date": offset(lease["end_date"], hours=1)})
    assert resized["reservations"][0]["amount"] == 2
    grown = updated(client, lease["id"], {"reservations": [{"id": reservation_id, "vcpus": 4, "amount": 1}]})
    assert grown["reservations"][0]["vcpus"] == 4


def test_new_slot_sizes_resize_the_reservation_flavor(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8, memory_mb=16384)
    lease = create(client, "lease-1", [instances(amount=1, vcpus=2, memory_mb=1024, disk_gb=10)], headers=MEMBER)
    reservation = lease["reservations"][0]
    updated(client, lease["id"], {"reservations": [{"id": reservation["id"], "vcpus": 4, "memory_mb": 4096}]},
            MEMBER)
    flavor = client.get(f"/v1/flavors/{reservation['flavor_id']}", headers=MEMBER).get_json()["flavor"]
    assert (flavor["vcpus"], flavor["ram"], flavor["disk"]) == (4, 4096, 10)


def test_affinity_may_change_and_is_honoured(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=4)
    register(client, "compute-2", vcpus=4)
    lease = create(client, "lease-1", [instances(amount=2, vcpus=2, affinity="True")])
    reservation_id = lease["reservations"][0]["id"]
    assert len(hosts_of(client, lease)[reservation_id]) == 1
    spread = updated(client, lease["id"], {"reservations": [{"id": reservation_id, "affinity": "False"}]})
    assert spread["reservations"][0]["affinity"] is False
    assert len(hosts_of(client, lease)[reservation_id]) == 2


def test_a_window_moved_onto_another_lease_s_host_is_a_409(client: FlaskClient) -> None:
    register(client, "compute-1")
    first = create(client, "lease-1", [physical()], start=at(1), end=at(2))
    second = create(client, "lease-2", [physical()], start=at(3), end=at(4))
    message = refused(client, first["id"], {"end_date": offset(second["start_date"], hours=1)}, 409)
    assert "1 host requested, 0 free between" in message


# Keeping held hosts.

def test_extending_a_lease_keeps_the_host_it_holds(client: FlaskClient) -> None:
    register(client, "compute-1")
    register(client, "compute-2")
    blocker = create(client, "blocker", [physical()], start=at(1), end=at(2))
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(2))
    [held] = hosts_of(client, lease)[lease["reservations"][0]["id"]]
    assert client.delete(f"/v1/leases/{blocker['id']}").status_code == 204
    # compute-1 is free now and comes first by id; the lease stays where it is anyway.
    updated(client, lease["id"], {"end_date": offset(lease["end_date"], hours=3)})
    assert hosts_of(client, lease)[lease["reservations"][0]["id"]] == [held]


def test_a_pending_lease_whose_host_is_taken_later_moves_to_a_free_one(client: FlaskClient) -> None:
    register(client, "compute-1")
    register(client, "compute-2")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(2))
    [held] = hosts_of(client, lease)[lease["reservations"][0]["id"]]
    create(client, "later", [physical()], start=at(3), end=at(4))
    updated(client, lease["id"], {"end_date": offset(lease["end_date"], days=2)})
    [now_held] = hosts_of(client, lease)[lease["reservations"][0]["id"]]
    assert now_held != held


def test_an_active_lease_whose_host_is_taken_later_is_not_moved(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    register(client, "compute-2")
    lease_id = create_in_the_past(database, "lease-1", [physical()], hours_ago=1, start_in=0.5, end_in=3)
    started_by_the_scheduler(database, lease_id)
    lease = show(client, lease_id)
    [held] = hosts_of(client, lease)[lease["reservations"][0]["id"]]
    create(client, "later", [physical()], start=at(0, hours=4), end=at(0, hours=6))
    message = refused(client, lease_id, {"end_date": offset(lease["end_date"], hours=4)}, 409)
    assert f"of active lease {lease_id} cannot keep what it holds on compute-{held}" in message
    assert "an active lease never moves" in message


def test_an_active_lease_is_extended_in_place(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1", vcpus=4)
    register(client, "compute-2", vcpus=4)
    lease_id = create_in_the_past(database, "lease-1", [instances(amount=2, vcpus=2)], hours_ago=1,
                                  start_in=0.5, end_in=3)
    started_by_the_scheduler(database, lease_id)
    lease = show(client, lease_id)
    reservation_id = lease["reservations"][0]["id"]
    before = hosts_of(client, lease)[reservation_id]
    extended = updated(client, lease_id, {"end_date": offset(lease["end_date"], hours=5)})
    assert extended["status"] == "ACTIVE"
    assert hosts_of(client, lease)[reservation_id] == before


def test_the_live_inventory_of_an_active_lease_follows_its_slots(client: FlaskClient, database: Database) -> None:
    first = register(client, "compute-1", vcpus=4)
    second = register(client, "compute-2", vcpus=4)
    lease_id = create_in_the_past(database, "lease-1", [instances(amount=2, vcpus=2)], hours_ago=1,
                                  start_in=0.5, end_in=3)
    started_by_the_scheduler(database, lease_id)
    reservation_id = show(client, lease_id)["reservations"][0]["id"]
    assert (slots_inventory(client, first, reservation_id), slots_inventory(client, second, reservation_id)) == \
        (2, None)
    updated(client, lease_id, {"reservations": [{"id": reservation_id, "amount": 3}]})
    assert (slots_inventory(client, first, reservation_id), slots_inventory(client, second, reservation_id)) == \
        (2, 1)
    updated(client, lease_id, {"reservations": [{"id": reservation_id, "amount": 1}]})
    assert (slots_inventory(client, first, reservation_id), slots_inventory(client, second, reservation_id)) == \
        (1, None)


def test_hosts_that_join_or_leave_an_active_physical_reservation_move_between_the_freepool_and_its_aggregate(
        client: FlaskClient, database: Database) -> None:
    first = register(client, "compute-1")
    second = register(client, "compute-2")
    lease_id = create_in_the_past(database, "lease-1", [physical(1)], hours_ago=1, start_in=0.5, end_in=3)
    assert [(r.event_type, r.outcome) for r in run_due_events(database)] == [("start_lease", RAN)]
    reservation_id = show(client, lease_id)["reservations"][0]["id"]
    aggregate = lifecycle.reservation_aggregate_uuid(reservation_id)
    [held] = hosts_of(client, show(client, lease_id))[reservation_id]
    [free] = {first, second} - {held}
    assert (host_aggregates(client, held), host_aggregates(client, free)) == ({aggregate}, {FREEPOOL_AGGREGATE_UUID})

    updated(client, lease_id, {"reservations": [{"id": reservation_id, "max": 2}]})
    assert (host_aggregates(client, held), host_aggregates(client, free)) == ({aggregate}, {aggregate})

    updated(client, lease_id, {"reservations": [{"id": reservation_id, "max": 1}]})
    [kept] = hosts_of(client, show(client, lease_id))[reservation_id]
    [released] = {first, second} - {kept}
    assert (host_aggregates(client, kept), host_aggregates(client, released)) == \
        ({aggregate}, {FREEPOOL_AGGREGATE_UUID})


def test_a_refused_update_of_one_reservation_leaves_the_others_alone(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=4)
    lease = create(client, "lease-1", [instances(amount=1, vcpus=2), instances(amount=1, vcpus=2)])
    first, second = (r["id"] for r in lease["reservations"])
    refused(client, lease["id"], {"name": "renamed", "reservations": [{"id": first, "amount": 1},
                                                                      {"id": second, "amount": 2}]}, 409)
    assert show(client, lease["id"])["name"] == "lease-1"


def test_the_status_of_a_lease_is_kept_by_an_update(client: FlaskClient, database: Database) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()])
    set_status(database, lease["id"], STARTING)
    refused(client, lease["id"], {"name": "x"}, 409)
    set_status(database, lease["id"], "ERROR")
    assert updated(client, lease["id"], {"name": "x"})["status"] == "ERROR"
