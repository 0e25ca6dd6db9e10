"""/v1/leases: create (every reservation type, validation, shortages, exclusivity, peak use),
list, show and delete with project scoping, and what hosts learn from leases."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from flask.testing import FlaskClient

from blazar_lite.flavors.models import Flavor, FlavorAccess, FlavorExtraSpec
from blazar_lite.leases.service import resource_class_of
from blazar_lite.placement.models import ResourceClass

MEMBER = {"X-Roles": "member", "X-Project-Id": "p1", "X-User-Id": "u1"}
READER = {"X-Roles": "reader", "X-Project-Id": "p1", "X-User-Id": "u3"}
OTHER = {"X-Roles": "member", "X-Project-Id": "p2", "X-User-Id": "u2"}
DATE_OUT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


def at(days: float, hours: float = 0) -> str:
    """A date `days` + `hours` from now, as the Blazar client writes it."""
    moment = dt.datetime.now(dt.UTC) + dt.timedelta(days=days, hours=hours)
    return moment.strftime("%Y-%m-%d %H:%M")


def blazar_error(response, status: int) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.get_json()
    body = response.get_json()
    assert set(body) == {"error_code", "error_name", "error_message"}
    assert body["error_code"] == status
    return body["error_message"]


def register(client: FlaskClient, name: str, vcpus: int = 8, memory_mb: int = 16384, local_gb: int = 100,
             **capabilities: str) -> int:
    body = {"name": name, "vcpus": vcpus, "memory_mb": memory_mb, "local_gb": local_gb, **capabilities}
    response = client.post("/v1/os-hosts", json=body)
    assert response.status_code == 201, response.get_json()
    return int(response.get_json()["host"]["id"])


def physical(min_hosts: int = 1, max_hosts: int | None = None, hypervisor_properties: str = "",
             resource_properties: str = "") -> dict:
    return {"resource_type": "physical:host", "min": min_hosts, "max": max_hosts or min_hosts,
            "hypervisor_properties": hypervisor_properties, "resource_properties": resource_properties,
            "before_end": ""}


def instances(amount: int = 1, vcpus: int = 2, memory_mb: int = 2048, disk_gb: int = 20,
              affinity: object = "None", resource_properties: str = "") -> dict:
    return {"resource_type": "virtual:instance", "amount": amount, "vcpus": vcpus, "memory_mb": memory_mb,
            "disk_gb": disk_gb, "affinity": affinity, "resource_properties": resource_properties}


def lease_body(name: str, reservations: list[dict], start: str | None = None, end: str | None = None,
               before_end_date: str | None = None) -> dict:
    return {"name": name, "start_date": start or at(1), "end_date": end or at(2), "before_end_date": before_end_date,
            "reservations": reservations, "events": []}


def post_lease(client: FlaskClient, body: dict, headers: dict | None = None):  # type: ignore[no-untyped-def]
    return client.post("/v1/leases", json=body, headers=headers or {})


def create(client: FlaskClient, name: str, reservations: list[dict], headers: dict | None = None,
           **dates: str) -> dict:
    response = post_lease(client, lease_body(name, reservations, **dates), headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["lease"]


def allocations(client: FlaskClient) -> dict[int, list[dict]]:
    """{host id: its reservations} from /v1/os-hosts/allocations."""
    response = client.get("/v1/os-hosts/allocations")
    assert response.status_code == 200, response.get_json()
    return {int(a["resource_id"]): a["reservations"] for a in response.get_json()["allocations"]}


def hosts_of(client: FlaskClient, lease: dict) -> dict[str, list[int]]:
    """{reservation id: the ids of the hosts it holds}."""
    held: dict[str, list[int]] = {r["id"]: [] for r in lease["reservations"]}
    for host_id, reservations in allocations(client).items():
        for reservation in reservations:
            if reservation["id"] in held:
                held[reservation["id"]].append(host_id)
    return held


# Creating: shapes.

def test_a_physical_host_lease_is_created_pending_with_its_events(client: FlaskClient) -> None:
    register(client, "compute-1")
    start, end = at(1), at(3)
    lease = create(client, "lease-1", [physical()], start=start, end=end)
    assert lease["status"] == "PENDING" and lease["degraded"] is False
    assert lease["start_date"] == start.replace(" ", "T") + ":00.000000"
    assert DATE_OUT.match(lease["end_date"]) and TIMESTAMP.match(lease["created_at"])
    assert (lease["user_id"], lease["project_id"]) == ("admin", "admin")
    [reservation] = lease["reservations"]
    assert reservation["resource_type"] == "physical:host" and reservation["lease_id"] == lease["id"]
    assert (reservation["min"], reservation["max"], reservation["hypervisor_properties"],
            reservation["resource_properties"], reservation["before_end"]) == (1, 1, "", "", "")
    assert (reservation["missing_resources"], reservation["resources_changed"]) == (False, False)
    events = {e["event_type"]: e for e in lease["events"]}
    assert set(events) == {"start_lease", "before_end_lease", "end_lease"}
    assert events["start_lease"]["time"] == lease["start_date"]
    assert events["end_lease"]["time"] == lease["end_date"]
    end_at = dt.datetime.fromisoformat(lease["end_date"])
    assert dt.datetime.fromisoformat(events["before_end_lease"]["time"]) == end_at - dt.timedelta(minutes=60)
    assert all(e["status"] == "UNDONE" and e["lease_id"] == lease["id"] and DATE_OUT.match(e["time"])
               for e in lease["events"])


def test_the_before_end_date_given_is_when_before_end_lease_fires(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(3), before_end_date=at(2))
    [before_end] = [e for e in lease["events"] if e["event_type"] == "before_end_lease"]
    assert before_end["time"] == lease["before_end_date"] == at(2).replace(" ", "T") + ":00.000000"


def test_a_lease_shorter_than_an_hour_has_no_before_end_event(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start=at(1), end=at(1, hours=0.5))
    assert [e["event_type"] for e in lease["events"]] == ["start_lease", "end_lease"]


def test_a_virtual_instance_lease_gets_a_resource_class_and_a_private_flavor(client: FlaskClient,
                                                                              database) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1")
    lease = create(client, "lease-1", [instances(amount=2, vcpus=2, memory_mb=1024, disk_gb=10)], headers=MEMBER)
    [reservation] = lease["reservations"]
    assert (reservation["vcpus"], reservation["memory_mb"], reservation["disk_gb"], reservation["amount"],
            reservation["affinity"]) == (2, 1024, 10, 2, None)
    resource_class = "CUSTOM_RESERVATION_" + reservation["id"].upper().replace("-", "_")
    assert reservation["resource_class"] == resource_class == resource_class_of(reservation["id"])
    assert reservation["flavor_id"] == reservation["reservation_flavor_id"] == reservation["id"]
    with database.read() as session:
        assert session.query(ResourceClass).filter_by(name=resource_class).count() == 1
        flavor = session.get(Flavor, reservation["id"])
        assert (flavor.name, flavor.is_public, flavor.vcpus, flavor.ram, flavor.disk) == (
            f"reservation:{reservation['id']}", False, 2, 1024, 10)
        specs = {s.key: s.value for s in session.query(FlavorExtraSpec).filter_by(flavor_id=flavor.id)}
        assert specs == {f"resources:{resource_class}": "1"}
        assert [a.project_id for a in session.query(FlavorAccess).filter_by(flavor_id=flavor.id)] == ["p1"]


def test_the_reservation_flavor_is_visible_to_the_lease_project_only(client: FlaskClient) -> None:
    register(client, "compute-1")
    [reservation] = create(client, "lease-1", [instances()], headers=MEMBER)["reservations"]
    assert client.get(f"/v1/flavors/{reservation['flavor_id']}", headers=MEMBER).status_code == 200
    assert client.get(f"/v1/flavors/{reservation['flavor_id']}", headers=OTHER).status_code == 404


def test_a_flavor_instance_lease_takes_its_slot_size_from_the_flavor(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8)
    response = client.post("/v1/flavors", json={"flavor": {"name": "m1.large", "vcpus": 4, "ram": 4096, "disk": 40}})
    assert response.status_code == 201, response.get_json()
    flavor_id = response.get_json()["flavor"]["id"]
    lease = create(client, "lease-1", [{"resource_type": "flavor:instance", "flavor_id": flavor_id, "amount": 2,
                                        "affinity": "None"}])
    [reservation] = lease["reservations"]
    assert (reservation["flavor_id"], reservation["vcpus"], reservation["memory_mb"], reservation["disk_gb"]) == (
        flavor_id, 4, 4096, 40)
    assert reservation["reservation_flavor_id"] == reservation["id"]
    message = blazar_error(post_lease(client, lease_body("lease-2", [
        {"resource_type": "flavor:instance", "flavor_id": flavor_id, "amount": 1}])), 409)
    assert "1 slot of 4 vCPU, 4096 MB, 40 GB requested, 0 free" in message


def test_a_private_flavor_of_another_project_cannot_be_reserved(client: FlaskClient) -> None:
    register(client, "compute-1")
    response = client.post("/v1/flavors", json={"flavor": {"name": "secret", "vcpus": 1, "ram": 512,
                                                           "is_public": False}})
    flavor_id = response.get_json()["flavor"]["id"]
    message = blazar_error(post_lease(client, lease_body("lease-1", [
        {"resource_type": "flavor:instance", "flavor_id": flavor_id, "amount": 1}]), MEMBER), 400)
    assert message == (f"Invalid input for field 'reservations[0].flavor_id': flavor {flavor_id} does not exist or "
                       "is not available to your project.")


def test_one_lease_may_mix_every_reservation_type(client: FlaskClient) -> None:
    first, second = register(client, "compute-1"), register(client, "compute-2")
    flavor_id = client.post("/v1/flavors", json={"flavor": {"name": "small", "vcpus": 1, "ram": 512}}
                            ).get_json()["flavor"]["id"]
    lease = create(client, "mixed", [physical(), instances(amount=2),
                                     {"resource_type": "flavor:instance", "flavor_id": flavor_id, "amount": 1}])
    assert [r["resource_type"] for r in lease["reservations"]] == ["physical:host", "virtual:instance",
                                                                   "flavor:instance"]
    held = hosts_of(client, lease)
    whole, slots, flavor_slots = (held[r["id"]] for r in lease["reservations"])
    # The instance slots cannot share the whole host, so both sit on the other.
    assert whole == [first] and slots == [second] and flavor_slots == [second]


def test_affinity_may_be_sent_as_json_booleans_and_null(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [instances(affinity=True), instances(affinity=False), instances(affinity=None)])
    assert [r["affinity"] for r in lease["reservations"]] == [True, False, None]


def test_filters_may_be_sent_already_decoded(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8)
    lease = create(client, "lease-1", [{**physical(), "hypervisor_properties": [">=", "$vcpus", "4"]}])
    assert lease["reservations"][0]["hypervisor_properties"] == '[">=", "$vcpus", "4"]'


def test_lease_routes_answer_with_a_json_suffix(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()])
    assert client.get(f"/v1/leases/{lease['id']}.json").status_code == 200
    assert client.get("/v1/leases.json").get_json()["leases"][0]["id"] == lease["id"]


# Creating: placement decisions.

def test_physical_host_filters_choose_matching_hosts(client: FlaskClient) -> None:
    register(client, "small", vcpus=2)
    big = register(client, "big", vcpus=16, gpu="a100")
    lease = create(client, "lease-1", [physical(hypervisor_properties='[">=", "$vcpus", "4"]',
                                                resource_properties='["==", "$gpu", "a100"]')])
    assert list(hosts_of(client, lease).values()) == [[big]]


def test_physical_host_takes_up_to_max_hosts(client: FlaskClient) -> None:
    for index in range(3):
        register(client, f"compute-{index}")
    lease = create(client, "lease-1", [physical(min_hosts=1, max_hosts=2)])
    assert len(next(iter(hosts_of(client, lease).values()))) == 2


def test_affinity_true_puts_every_slot_on_one_host(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=4)
    big = register(client, "compute-2", vcpus=8)
    lease = create(client, "lease-1", [instances(amount=3, vcpus=2, affinity="True")])
    assert list(hosts_of(client, lease).values()) == [[big]]


def test_affinity_false_puts_each_slot_on_a_different_host(client: FlaskClient) -> None:
    hosts = [register(client, f"compute-{i}") for i in range(3)]
    lease = create(client, "lease-1", [instances(amount=3, affinity="False")])
    assert sorted(next(iter(hosts_of(client, lease).values()))) == hosts


def test_affinity_none_fills_hosts_already_in_use_first(client: FlaskClient) -> None:
    first, _second = register(client, "compute-1"), register(client, "compute-2")
    create(client, "lease-1", [instances(amount=1)])
    lease = create(client, "lease-2", [instances(amount=2)])
    assert list(hosts_of(client, lease).values()) == [[first]]


def test_hosts_that_are_down_or_not_reservable_are_not_booked(client: FlaskClient) -> None:
    down = register(client, "down")
    closed = register(client, "closed")
    assert client.put(f"/v1/os-hosts/{down}", json={"status": "down"}).status_code == 200
    assert client.put(f"/v1/os-hosts/{closed}", json={"reservable": False}).status_code == 200
    message = blazar_error(post_lease(client, lease_body("lease-1", [physical()])), 409)
    assert "1 host requested, 0 free" in message


# Creating: shortages.

def test_too_few_matching_hosts_is_a_409_saying_what_is_free(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8)
    start, end = at(1), at(2)
    response = post_lease(client, lease_body("lease-1", [physical(3, hypervisor_properties='[">=", "$vcpus", "4"]')],
                                             start=start, end=end))
    message = blazar_error(response, 409)
    assert response.get_json()["error_name"] == "NotEnoughResourcesAvailable"
    assert (f'3 hosts matching hypervisor_properties [">=", "$vcpus", "4"] requested, 1 free between {start} and '
            f"{end}") in message


def test_too_many_slots_on_one_host_is_a_409(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=4)
    message = blazar_error(post_lease(client, lease_body("lease-1", [instances(amount=3, vcpus=2,
                                                                               affinity="True")])), 409)
    assert "3 slots of 2 vCPU, 2048 MB, 20 GB on one host requested, at most 2 free on any host" in message


def test_too_few_distinct_hosts_is_a_409(client: FlaskClient) -> None:
    register(client, "compute-1")
    message = blazar_error(post_lease(client, lease_body("lease-1", [instances(amount=2, affinity="False")])), 409)
    assert "on distinct hosts requested, 1 host with a free slot" in message


def test_a_refused_lease_leaves_nothing_behind(client: FlaskClient, database) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1", vcpus=2)
    response = post_lease(client, lease_body("lease-1", [instances(amount=1, vcpus=1), instances(amount=5)]))
    blazar_error(response, 409)
    assert client.get("/v1/leases").get_json()["leases"] == []
    with database.read() as session:
        assert session.query(Flavor).count() == 0
        assert session.query(ResourceClass).filter(ResourceClass.name.like("CUSTOM_RESERVATION_%")).count() == 0


def test_reservations_of_one_lease_share_capacity(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=4)
    message = blazar_error(post_lease(client, lease_body("lease-1", [instances(amount=2, vcpus=2),
                                                                     instances(amount=1, vcpus=2)])), 409)
    assert "Not enough resources for reservation 1 (virtual:instance)" in message


# Exclusivity and availability over time.

def test_a_host_reserved_whole_takes_no_overlapping_instance_slots(client: FlaskClient) -> None:
    register(client, "compute-1")
    create(client, "whole", [physical()], start=at(1), end=at(3))
    blazar_error(post_lease(client, lease_body("slots", [instances()], start=at(2), end=at(4))), 409)


def test_a_host_with_instance_slots_cannot_be_reserved_whole_meanwhile(client: FlaskClient) -> None:
    register(client, "compute-1")
    create(client, "slots", [instances()], start=at(1), end=at(3))
    blazar_error(post_lease(client, lease_body("whole", [physical()], start=at(2), end=at(4))), 409)


def test_back_to_back_leases_share_a_host(client: FlaskClient) -> None:
    register(client, "compute-1")
    create(client, "first", [physical()], start=at(1), end=at(2))
    create(client, "second", [instances()], start=at(2), end=at(3))


def test_peak_use_decides_not_the_sum_of_overlapping_leases(client: FlaskClient) -> None:
    # Three 4-vCPU leases, none overlapping another, all inside the window of a fourth request:
    # their sum (12) would leave no room on an 8-vCPU host, but at most 4 are ever in use.
    register(client, "compute-1", vcpus=8)
    for index in range(3):
        create(client, f"short-{index}", [instances(vcpus=4)], start=at(1 + index), end=at(1.5 + index))
    create(client, "long", [instances(vcpus=4)], start=at(1), end=at(4))
    blazar_error(post_lease(client, lease_body("one-too-many", [instances(vcpus=1)], start=at(1),
                                               end=at(1.2))), 409)


def test_a_deleted_lease_frees_its_hosts(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "first", [physical()])
    assert client.delete(f"/v1/leases/{lease['id']}").status_code == 204
    create(client, "second", [physical()])


# Validation (Blazar's messages).

@pytest.mark.parametrize(("change", "expected"), [
    ({"end_date": None}, "Missing parameter end_date"),
    ({"start_date": None}, "Missing parameter start_date"),
    ({"end_date": "tomorrow"}, "tomorrow is an invalid date. Required format: %Y-%m-%d %H:%M"),
    ({"start_date": "2030-13-01 10:00"}, "2030-13-01 10:00 is an invalid date. Required format: %Y-%m-%d %H:%M"),
    ({"start_date": "2001-01-01 10:00"}, "Start date must be later than current date"),
    ({"start_date": at(2), "end_date": at(1)}, "End date must be later than start date."),
    ({"start_date": at(1), "end_date": at(1)}, "End date must be later than start date."),
    ({"before_end_date": at(5)}, "before_end_date must be later than start_date and earlier than end_date"),
    ({"name": None}, "Missing parameter name"),
    ({"name": "x" * 81}, "Invalid input for field 'name': 81 characters, at most 80 are allowed."),
    ({"name": 5}, "Invalid input for field 'name': Not a valid string."),
])
def test_a_lease_with_bad_dates_or_name_is_refused(client: FlaskClient, change: dict, expected: str) -> None:
    register(client, "compute-1")
    body = {**lease_body("lease-1", [physical()]), **change}
    assert blazar_error(post_lease(client, body), 400) == expected


@pytest.mark.parametrize(("reservation", "expected"), [
    ({"min": 1, "max": 1}, "Missing parameter reservations[0].resource_type"),
    ({"resource_type": "network:ip"}, "Invalid input for field 'reservations[0].resource_type': 'network:ip' is "
                                      "not one of physical:host, virtual:instance, flavor:instance."),
    ({**physical(), "min": None}, "Missing parameter reservations[0].min"),
    ({**physical(), "max": "two"}, "Invalid input for field 'reservations[0].max': 'two' is not an integer."),
    ({**physical(), "min": 0}, "Invalid input for field 'reservations[0].min': 0 is not between 1 and 2147483647."),
    ({**physical(), "min": 2, "max": 1}, "Invalid input for field 'reservations[0].max': max (1) must be at least "
                                         "min (2)."),
    ({**physical(), "before_end": "reboot"}, "Invalid input for field 'reservations[0].before_end': 'reboot' is "
                                             "not one of default or snapshot."),
    ({**physical(), "hypervisor_properties": "[>=]"}, "Invalid input for field 'hypervisor_properties': the filter "
                                                      "is not valid JSON"),
    ({**instances(), "amount": None}, "Missing parameter reservations[0].amount"),
    ({**instances(), "vcpus": True}, "Invalid input for field 'reservations[0].vcpus': True is not an integer."),
    ({**instances(), "affinity": "maybe"}, "Invalid input for field 'reservations[0].affinity': 'maybe' is not one "
                                           "of True, False or None."),
    ({"resource_type": "flavor:instance", "amount": 1}, "Missing parameter reservations[0].flavor_id"),
])
def test_a_bad_reservation_is_refused_naming_its_field(client: FlaskClient, reservation: dict,
                                                       expected: str) -> None:
    register(client, "compute-1")
    message = blazar_error(post_lease(client, lease_body("lease-1", [reservation])), 400)
    assert message.startswith(expected)


def test_integers_may_be_sent_as_digit_strings(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [{**physical(), "min": "1", "max": "1"}])
    assert (lease["reservations"][0]["min"], lease["reservations"][0]["max"]) == (1, 1)


def test_a_second_lease_of_the_same_name_in_a_project_is_a_409(client: FlaskClient) -> None:
    register(client, "compute-1")
    create(client, "lease-1", [instances()], headers=MEMBER)
    message = blazar_error(post_lease(client, lease_body("lease-1", [instances()]), MEMBER), 409)
    assert message.startswith("A lease named lease-1 already exists in your project")
    create(client, "lease-1", [instances()], headers=OTHER)


def test_a_start_of_now_is_accepted(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [physical()], start="now", end=at(1))
    assert lease["status"] == "PENDING"


# Listing, showing, deleting, and who may.

def test_members_list_their_projects_leases_and_admins_all(client: FlaskClient) -> None:
    register(client, "compute-1")
    mine = create(client, "mine", [instances()], headers=MEMBER)
    theirs = create(client, "theirs", [instances()], headers=OTHER)
    assert [lease["id"] for lease in client.get("/v1/leases", headers=MEMBER).get_json()["leases"]] == [mine["id"]]
    assert [lease["id"] for lease in client.get("/v1/leases", headers=READER).get_json()["leases"]] == [mine["id"]]
    assert [lease["id"] for lease in client.get("/v1/leases").get_json()["leases"]] == [mine["id"], theirs["id"]]
    only = client.get("/v1/leases?project_id=p2").get_json()["leases"]
    assert [lease["id"] for lease in only] == [theirs["id"]]
    assert client.get("/v1/leases?project_id=p2", headers=MEMBER).status_code == 403


def test_a_lease_shows_with_its_reservations_and_events(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [instances()], headers=MEMBER)
    shown = client.get(f"/v1/leases/{lease['id']}", headers=READER)
    assert shown.status_code == 200
    assert shown.get_json()["lease"] == lease


def test_another_projects_lease_is_not_found_for_members_but_shown_to_admins(client: FlaskClient) -> None:
    register(client, "compute-1")
    lease = create(client, "lease-1", [instances()], headers=OTHER)
    assert blazar_error(client.get(f"/v1/leases/{lease['id']}", headers=MEMBER), 404) == (
        f"Lease {lease['id']} not found.")
    blazar_error(client.delete(f"/v1/leases/{lease['id']}", headers=MEMBER), 404)
    assert client.get(f"/v1/leases/{lease['id']}").status_code == 200


def test_readers_may_not_create_or_delete_leases(client: FlaskClient) -> None:
    register(client, "compute-1")
    blazar_error(post_lease(client, lease_body("lease-1", [instances()]), READER), 403)
    lease = create(client, "lease-1", [instances()], headers=MEMBER)
    blazar_error(client.delete(f"/v1/leases/{lease['id']}", headers=READER), 403)


def test_an_unknown_lease_is_404(client: FlaskClient) -> None:
    blazar_error(client.get("/v1/leases/no-such-lease"), 404)
    blazar_error(client.delete("/v1/leases/no-such-lease"), 404)


def test_deleting_an_instance_lease_removes_its_class_and_flavor(client: FlaskClient, database) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1")
    lease = create(client, "lease-1", [instances()], headers=MEMBER)
    [reservation] = lease["reservations"]
    assert client.delete(f"/v1/leases/{lease['id']}", headers=MEMBER).status_code == 204
    assert client.get(f"/v1/leases/{lease['id']}").status_code == 404
    with database.read() as session:
        assert session.get(Flavor, reservation["id"]) is None
        assert session.query(ResourceClass).filter_by(name=reservation["resource_class"]).count() == 0
    assert allocations(client) == {int(k): [] for k in allocations(client)}


# What hosts learn from leases.

def test_allocations_list_the_reservations_holding_each_host(client: FlaskClient) -> None:
    first, second = register(client, "compute-1"), register(client, "compute-2")
    lease = create(client, "lease-1", [physical()])
    [reservation] = lease["reservations"]
    assert allocations(client) == {first: [{"id": reservation["id"], "lease_id": lease["id"],
                                            "start_date": lease["start_date"], "end_date": lease["end_date"]}],
                                   second: []}
    by_lease = client.get(f"/v1/os-hosts/{first}/allocation?lease_id={lease['id']}").get_json()["allocation"]
    assert [r["id"] for r in by_lease["reservations"]] == [reservation["id"]]


def test_a_host_a_lease_uses_cannot_be_deleted(client: FlaskClient) -> None:
    host = register(client, "compute-1")
    lease = create(client, "lease-1", [physical()])
    message = blazar_error(client.delete(f"/v1/os-hosts/{host}"), 409)
    assert lease["reservations"][0]["id"] in message
    assert client.delete(f"/v1/leases/{lease['id']}").status_code == 204
    assert client.delete(f"/v1/os-hosts/{host}").status_code == 204


def test_create_body_is_json(client: FlaskClient) -> None:
    response = client.post("/v1/leases", data=json.dumps({"name": "x"}), content_type="text/plain")
    assert response.status_code == 415
