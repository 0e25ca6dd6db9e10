"""GET /v1/availability: the earliest windows a reservation fits in, with the hosts a lease would
use; each window found can be booked as it is; no window is a 200 saying the most there is."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from flask.testing import FlaskClient

from blazar_lite.app import create_app
from tests.functional.leases.test_leases import (
    MEMBER,
    READER,
    blazar_error,
    hosts_of,
    instances,
    physical,
    post_lease,
    register,
)

HOUR = dt.timedelta(hours=1)
# Every world starts a day from now, on a whole hour, so no date is in the past or the current minute.
BASE = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).replace(minute=0, second=0, microsecond=0)


def text(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def out(moment: dt.datetime) -> str:
    """A date as the API answers with it."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")


def lease_at(client: FlaskClient, name: str, reservation: dict, start: dt.datetime | None, end: dt.datetime,
             headers: dict | None = None):  # type: ignore[no-untyped-def]
    body = {"name": name, "start_date": "now" if start is None else text(start), "end_date": text(end),
            "before_end_date": None,
            "reservations": [reservation], "events": []}
    return post_lease(client, body, headers)


def book(client: FlaskClient, name: str, reservation: dict, start: dt.datetime | None, end: dt.datetime) -> dict:
    """A lease from `start` (None: now) to `end`."""
    response = lease_at(client, name, reservation, start, end)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["lease"]


def query(reservation: dict, duration: str, **more: object) -> dict:
    """A search's parameters: the reservation's own fields (filters left out when empty)."""
    fields = {key: value for key, value in reservation.items() if value != "" and key != "before_end"}
    return {**fields, "duration": duration, **more}


def search(client: FlaskClient, params: dict, headers: dict | None = None) -> dict:
    response = client.get("/v1/availability", query_string=params, headers=headers or {})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def starts(answer: dict) -> list[str]:
    return [window["start_date"] for window in answer["availability"]]


# Finding windows.

def test_an_idle_cluster_is_available_from_the_start_of_the_search_with_the_hosts_a_lease_would_use(
        client: FlaskClient) -> None:
    first, second, _third = (register(client, f"compute-{i}") for i in range(3))
    answer = search(client, query(physical(2), "24h", after=text(BASE)))
    assert answer["message"] is None and answer["duration"] == "1d"
    [window] = answer["availability"]
    assert (window["start_date"], window["end_date"]) == (out(BASE), out(BASE + 24 * HOUR))
    assert window["hosts"] == [{"id": str(first), "hypervisor_hostname": "compute-0", "slots": 1},
                               {"id": str(second), "hypervisor_hostname": "compute-1", "slots": 1}]


def test_the_search_starts_now_by_default(client: FlaskClient) -> None:
    register(client, "compute-1")
    now = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    [start] = starts(search(client, query(physical(1), "90m")))
    assert dt.datetime.fromisoformat(start).replace(tzinfo=dt.UTC) in (now, now + dt.timedelta(minutes=1))


def test_whole_hosts_are_found_after_the_leases_in_the_way(client: FlaskClient) -> None:
    register(client, "compute-1"), register(client, "compute-2")
    book(client, "early", physical(1), BASE, BASE + 10 * HOUR)
    book(client, "later", physical(1), BASE + 2 * HOUR, BASE + 20 * HOUR)
    answer = search(client, query(physical(2), "4h", after=text(BASE)))
    assert starts(answer) == [out(BASE + 20 * HOUR)]


def test_instance_slots_are_found_when_enough_room_frees_up(client: FlaskClient) -> None:
    host = register(client, "compute-1", vcpus=8)
    # Three of the four 2-vCPU slots until +10h, all four from +12h to +14h.
    book(client, "three", instances(3), BASE, BASE + 10 * HOUR)
    book(client, "four", instances(4), BASE + 12 * HOUR, BASE + 14 * HOUR)
    answer = search(client, query(instances(2, affinity="True"), "2h", after=text(BASE)))
    assert starts(answer) == [out(BASE + 10 * HOUR), out(BASE + 14 * HOUR)]
    assert answer["availability"][0]["hosts"] == [{"id": str(host), "hypervisor_hostname": "compute-1", "slots": 2}]


def test_limit_caps_the_windows_which_start_at_the_search_start_or_when_a_booking_ends(client: FlaskClient) -> None:
    register(client, "compute-1"), register(client, "compute-2")
    for index in range(4):
        book(client, f"short-{index}", physical(1), BASE + index * HOUR, BASE + (index + 1) * HOUR)
    answer = search(client, query(physical(1), "30m", after=text(BASE), limit="3"))
    assert starts(answer) == [out(BASE), out(BASE + HOUR), out(BASE + 2 * HOUR)]


def test_filters_choose_the_hosts_searched(client: FlaskClient) -> None:
    register(client, "plain")
    gpu = register(client, "gpu-1", gpu="true")
    answer = search(client, query(physical(1, resource_properties='["==", "$gpu", "true"]'), "1h", after=text(BASE)))
    assert [host["id"] for host in answer["availability"][0]["hosts"]] == [str(gpu)]


def test_hosts_that_are_down_or_not_reservable_are_not_offered(client: FlaskClient) -> None:
    down, closed = register(client, "down"), register(client, "closed")
    assert client.put(f"/v1/os-hosts/{down}", json={"status": "down"}).status_code == 200
    assert client.put(f"/v1/os-hosts/{closed}", json={"reservable": False}).status_code == 200
    assert search(client, query(physical(1), "1h", after=text(BASE)))["availability"] == []


def test_a_flavor_is_searched_by_its_id(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8)
    flavor_id = client.post("/v1/flavors", json={"flavor": {"name": "m1.large", "vcpus": 4, "ram": 4096,
                                                            "disk": 40}}).get_json()["flavor"]["id"]
    book(client, "half", instances(2), BASE, BASE + 5 * HOUR)
    reservation = {"resource_type": "flavor:instance", "flavor_id": flavor_id, "amount": 2}
    assert starts(search(client, query(reservation, "1h", after=text(BASE)))) == [out(BASE + 5 * HOUR)]


def test_the_cleaning_time_separates_a_window_from_the_booking_before_it(settings, database) -> None:  # type: ignore[no-untyped-def]
    client = create_app(dataclasses.replace(settings, leases_cleaning_time=30), database).test_client()
    register(client, "compute-1")
    book(client, "first", physical(1), BASE, BASE + 2 * HOUR)
    answer = search(client, query(physical(1), "1h", after=text(BASE)))
    assert starts(answer) == [out(BASE + 2 * HOUR + dt.timedelta(minutes=30))]


def test_a_project_reader_may_search(client: FlaskClient) -> None:
    register(client, "compute-1")
    assert starts(search(client, query(physical(1), "1h", after=text(BASE)), READER)) == [out(BASE)]


# Booking what was found.

WORLDS = {
    # Whole hosts: two of three hosts are taken at different times.
    "physical": (physical(2), [("a", physical(1), 0, 6), ("b", physical(1), 3, 9), ("c", physical(1), 8, 30)]),
    "instances anywhere": (instances(5), [("a", instances(3), 0, 6), ("b", instances(4), 2, 8),
                                          ("c", physical(1), 1, 12)]),
    "instances on one host": (instances(3, affinity="True"), [("a", instances(2), 0, 6),
                                                              ("b", instances(2, affinity="True"), 4, 10),
                                                              ("c", instances(3), 5, 7)]),
    "instances on distinct hosts": (instances(3, affinity="False"), [("a", physical(1), 0, 5),
                                                                     ("b", instances(4, affinity="True"), 2, 9)]),
}


@pytest.mark.parametrize("wanted, existing", WORLDS.values(), ids=WORLDS.keys())
def test_every_window_found_can_be_booked_as_it_is_with_the_hosts_the_search_named(
        client: FlaskClient, wanted: dict, existing: list) -> None:
    for index in range(3):
        register(client, f"compute-{index}")
    for name, reservation, start, end in existing:
        book(client, name, reservation, BASE + start * HOUR, BASE + end * HOUR)
    answer = search(client, query(wanted, "3h", after=text(BASE)))
    assert answer["availability"], answer["message"]
    for index, window in enumerate(answer["availability"]):
        start, end = (dt.datetime.fromisoformat(window[key]) for key in ("start_date", "end_date"))
        body = {"name": f"found-{index}", "start_date": window["start_date"], "end_date": window["end_date"],
                "before_end_date": None, "reservations": [wanted], "events": []}
        response = post_lease(client, body)
        assert response.status_code == 201, (window, response.get_json())
        lease = response.get_json()["lease"]
        assert (lease["start_date"], lease["end_date"]) == (window["start_date"], window["end_date"])
        assert sorted(hosts_of(client, lease).popitem()[1]) == sorted(int(host["id"]) for host in window["hosts"])
        # Delete it again, so the next window is booked in the world the search saw.
        assert client.delete(f"/v1/leases/{lease['id']}").status_code == 204
        assert end - start == 3 * HOUR


@pytest.mark.parametrize("wanted", [physical(2), instances(3, affinity="True"), instances(5),
                                    instances(3, affinity="False")],
                         ids=["physical", "one host", "anywhere", "distinct"])
def test_idle_hosts_too_small_for_a_slot_are_passed_over_as_a_lease_create_passes_them(
        client: FlaskClient, wanted: dict) -> None:
    # Idle hosts of every size, the smallest first, and one busy host: the search names the
    # hosts without reading every idle one, and must still name those a create takes.
    for index, vcpus in enumerate((1, 1, 4, 8, 8, 8)):
        register(client, f"compute-{index}", vcpus=vcpus)
    book(client, "busy", instances(1), BASE, BASE + 2 * HOUR)
    [window] = search(client, query(wanted, "1h", after=text(BASE), limit="1"))["availability"]
    lease = book(client, "found", wanted, BASE, BASE + HOUR)
    assert sorted(hosts_of(client, lease).popitem()[1]) == sorted(int(host["id"]) for host in window["hosts"])


def test_a_window_found_is_the_earliest_a_lease_create_accepts(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8)
    book(client, "busy", instances(3), BASE, BASE + 10 * HOUR)
    [first] = starts(search(client, query(instances(2), "2h", after=text(BASE), limit="1")))
    start = dt.datetime.fromisoformat(first).replace(tzinfo=dt.UTC)
    assert start == BASE + 10 * HOUR
    early = lease_at(client, "early", instances(2), start - dt.timedelta(minutes=1), start + 2 * HOUR)
    assert "Not enough resources" in blazar_error(early, 409)


# Nothing fits.

def test_when_nothing_fits_the_answer_is_empty_and_says_the_most_there_is(client: FlaskClient) -> None:
    for index in range(3):
        register(client, f"compute-{index}")
    book(client, "long", physical(1), BASE, BASE + 200 * HOUR)
    answer = search(client, query(physical(3), "2h", after=text(BASE), before=text(BASE + 100 * HOUR)))
    assert answer["availability"] == []
    assert answer["message"] == (
        f"No window fits: at most 2 of the 3 hosts requested are free together for 2h between {text(BASE)} and "
        f"{text(BASE + 100 * HOUR)} (from {text(BASE)}). Ask for less, loosen the filters, or search a longer window.")


def test_when_slots_on_one_host_do_not_fit_the_best_host_is_said(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8)
    answer = search(client, query(instances(5, affinity="True"), "2h", after=text(BASE)))
    assert answer["availability"] == []
    assert "at most 4 of the 5 slots of 2 vCPU, 2048 MB, 20 GB on one host requested fit for 2h" in answer["message"]


# Mistakes.

BAD_SEARCHES = [
    ({"duration": "1h"}, "Missing parameter resource_type: one of physical:host, virtual:instance, flavor:instance."),
    ({"resource_type": "gpu", "duration": "1h"}, "Invalid input for field 'resource_type': 'gpu' is not one of"),
    ({"resource_type": "physical:host", "min": "1", "max": "1"}, "Missing parameter duration: how long the lease "
                                                                 "lasts, such as 90m, 24h or 2d."),
    ({"resource_type": "physical:host", "min": "1", "max": "1", "duration": "2 weeks"},
     "Invalid input for field 'duration': '2 weeks' is not a duration; write a number and a unit (m, h or d)"),
    ({"resource_type": "physical:host", "min": "1", "max": "1", "duration": "0h"},
     "Invalid input for field 'duration': '0h' is not longer than zero."),
    ({"resource_type": "physical:host", "max": "1", "duration": "1h"}, "Missing parameter min"),
    ({"resource_type": "physical:host", "min": "2", "max": "1", "duration": "1h"},
     "Invalid input for field 'max': max (1) must be at least min (2)."),
    ({"resource_type": "physical:host", "min": "1", "max": "1", "amount": "2", "duration": "1h"},
     "amount does not apply to physical:host; its parameters are min, max, hypervisor_properties, "
     "resource_properties."),
    ({"resource_type": "physical:host", "min": "1", "max": "1", "hypervisor_properties": "[>=", "duration": "1h"},
     "hypervisor_properties"),
    ({"resource_type": "virtual:instance", "amount": "1", "vcpus": "one", "memory_mb": "1", "disk_gb": "1",
      "duration": "1h"}, "Invalid input for field 'vcpus': 'one' is not an integer."),
    ({"resource_type": "virtual:instance", "amount": "1", "vcpus": "1", "memory_mb": "1", "disk_gb": "1",
      "affinity": "maybe", "duration": "1h"}, "Invalid input for field 'affinity': 'maybe' is not one of"),
    ({"resource_type": "flavor:instance", "flavor_id": "nope", "amount": "1", "duration": "1h"},
     "Invalid input for field 'flavor_id': flavor nope does not exist or is not available to your project."),
    ({"resource_type": "physical:host", "min": "1", "max": "1", "duration": "1h", "after": "2001-01-01 00:00"},
     "Invalid input for field 'after': 2001-01-01 00:00 is in the past; a lease can start from"),
    ({"resource_type": "physical:host", "min": "1", "max": "1", "duration": "1h", "after": "tomorrow"},
     "tomorrow is an invalid date. Required format: %Y-%m-%d %H:%M"),
    ({"resource_type": "physical:host", "min": "1", "max": "1", "duration": "2d", "after": text(BASE),
      "before": text(BASE + HOUR)}, "is shorter than the duration 2d; move before later or ask for less time."),
    ({"resource_type": "physical:host", "min": "1", "max": "1", "duration": "1h", "limit": "0"},
     "Invalid input for field 'limit': '0'; give a whole number from 1 to 50."),
    ({"resource_type": "physical:host", "min": "1", "max": "1", "duration": "1h", "colour": "red"},
     "Unknown query parameter colour"),
]


@pytest.mark.parametrize("params, expected", BAD_SEARCHES)
def test_a_bad_search_is_a_400_saying_what_to_fix(client: FlaskClient, params: dict, expected: str) -> None:
    register(client, "compute-1")
    response = client.get("/v1/availability", query_string=params)
    assert expected in blazar_error(response, 400)


def test_a_user_without_a_role_in_the_project_may_not_search(client: FlaskClient) -> None:
    response = client.get("/v1/availability", query_string=query(physical(1), "1h"),
                          headers={**MEMBER, "X-Roles": "guest"})
    blazar_error(response, 403)


# Lease creation at the earliest window.

def earliest(name: str, reservations: list[dict], duration: str = "3h", **more: object) -> dict:
    return {"name": name, "start_date": "earliest", "duration": duration, "before_end_date": None,
            "reservations": reservations, "events": [], **more}


def test_a_lease_at_the_earliest_start_takes_the_first_window_that_fits(client: FlaskClient) -> None:
    register(client, "compute-1")
    now = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    book(client, "busy", physical(1), BASE, BASE + 10 * HOUR)
    # Before the busy lease there is only room for less than the 2 days asked.
    response = post_lease(client, earliest("next", [physical(1)], "2d"))
    assert response.status_code == 201, response.get_json()
    lease = response.get_json()["lease"]
    assert (lease["start_date"], lease["end_date"]) == (out(BASE + 10 * HOUR), out(BASE + 58 * HOUR))
    assert lease["status"] == "PENDING"
    # An hour fits before it.
    soon = post_lease(client, earliest("soon", [physical(1)], "1h")).get_json()["lease"]
    assert dt.datetime.fromisoformat(soon["start_date"]).replace(tzinfo=dt.UTC) in (now, now + dt.timedelta(minutes=1))


def test_a_lease_at_the_earliest_start_is_where_the_search_said(client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8), register(client, "compute-2", vcpus=8)
    book(client, "a", instances(4), None, BASE + 5 * HOUR)
    book(client, "b", instances(3), None, BASE + 8 * HOUR)
    wanted = instances(3, affinity="True")
    [window] = search(client, query(wanted, "4h", limit="1"))["availability"]
    lease = post_lease(client, earliest("lease", [wanted], "4h")).get_json()["lease"]
    assert (lease["start_date"], lease["end_date"]) == (window["start_date"], window["end_date"])
    assert hosts_of(client, lease).popitem()[1] == [int(window["hosts"][0]["id"])]


def test_the_reservations_of_an_earliest_lease_fit_together(client: FlaskClient) -> None:
    first, second = register(client, "compute-1"), register(client, "compute-2")
    book(client, "one", physical(1), None, BASE + 4 * HOUR)
    book(client, "other", physical(1), None, BASE + 6 * HOUR)
    # Each host alone is free from +4h, but a whole host and slots on another only from +6h.
    response = post_lease(client, earliest("both", [physical(1), instances(1)], "2h"))
    assert response.status_code == 201, response.get_json()
    lease = response.get_json()["lease"]
    assert lease["start_date"] == out(BASE + 6 * HOUR)
    assert sorted(hosts for held in hosts_of(client, lease).values() for hosts in held) == [first, second]


def test_an_earliest_lease_that_fits_nowhere_before_search_until_is_a_409_saying_the_most_there_is(
        client: FlaskClient) -> None:
    register(client, "compute-1"), register(client, "compute-2")
    book(client, "long", physical(1), None, BASE + 100 * HOUR)
    response = post_lease(client, earliest("never", [physical(2)], "2h", search_until=text(BASE + 50 * HOUR)))
    message = blazar_error(response, 409)
    assert response.get_json()["error_name"] == "NotEnoughResourcesAvailable"
    assert message.startswith("Not enough resources for reservation 0 (physical:host): No window fits: at most 1 of "
                              "the 2 hosts requested is free together for 2h between ")
    assert [lease["name"] for lease in client.get("/v1/leases").get_json()["leases"]] == ["long"]


@pytest.mark.parametrize("change, expected", [
    ({"duration": None}, "Missing parameter duration: how long the lease lasts, such as 90m, 24h or 2d."),
    ({"duration": "soon"}, "Invalid input for field 'duration': 'soon' is not a duration"),
    ({"end_date": "2030-01-01 00:00"}, "Invalid input for field 'end_date': with start_date earliest the dates are "
                                       "not known in advance; give duration instead."),
    ({"before_end_date": "2030-01-01 00:00"}, "Invalid input for field 'before_end_date': with start_date earliest"),
    ({"search_until": "someday"}, "someday is an invalid date. Required format: %Y-%m-%d %H:%M"),
    ({"duration": "3d", "search_until": text(BASE)}, "is shorter than the duration 3d; move search_until later"),
    ({"name": None}, "Missing parameter name"),
])
def test_a_bad_earliest_lease_is_a_400_saying_what_to_fix(client: FlaskClient, change: dict, expected: str) -> None:
    register(client, "compute-1")
    body = {**earliest("lease", [physical(1)]), **change}
    assert expected in blazar_error(post_lease(client, body), 400)


# Free periods of a host.

def test_a_hosts_free_periods_are_the_gaps_between_its_bookings(client: FlaskClient) -> None:
    host = register(client, "compute-1", vcpus=8)
    book(client, "whole", physical(1), BASE + 2 * HOUR, BASE + 4 * HOUR)
    book(client, "slots", instances(1), BASE + 6 * HOUR, BASE + 8 * HOUR)
    response = client.get(f"/v1/os-hosts/{host}/free-periods",
                          query_string={"start": text(BASE), "end": text(BASE + 10 * HOUR)})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["host_id"], body["hypervisor_hostname"], body["reservable"], body["status"]) == (
        str(host), "compute-1", True, "up")
    assert [(p["start_date"], p["end_date"]) for p in body["free_periods"]] == [
        (out(BASE), out(BASE + 2 * HOUR)), (out(BASE + 4 * HOUR), out(BASE + 6 * HOUR)),
        (out(BASE + 8 * HOUR), out(BASE + 10 * HOUR))]


def test_free_periods_keep_the_cleaning_time_around_each_booking(settings, database) -> None:  # type: ignore[no-untyped-def]
    client = create_app(dataclasses.replace(settings, leases_cleaning_time=30), database).test_client()
    host = register(client, "compute-1")
    book(client, "whole", physical(1), BASE + 2 * HOUR, BASE + 4 * HOUR)
    body = client.get(f"/v1/os-hosts/{host}/free-periods",
                      query_string={"start": text(BASE), "end": text(BASE + 10 * HOUR)}).get_json()
    half = dt.timedelta(minutes=30)
    assert [(p["start_date"], p["end_date"]) for p in body["free_periods"]] == [
        (out(BASE), out(BASE + 2 * HOUR - half)), (out(BASE + 4 * HOUR + half), out(BASE + 10 * HOUR))]


def test_free_periods_of_an_unknown_host_are_a_404_and_of_a_bad_span_a_400(client: FlaskClient) -> None:
    host = register(client, "compute-1")
    blazar_error(client.get("/v1/os-hosts/999/free-periods"), 404)
    message = blazar_error(client.get(f"/v1/os-hosts/{host}/free-periods",
                                      query_string={"start": text(BASE), "end": text(BASE - HOUR)}), 400)
    assert message == (f"Invalid input for field 'end': {text(BASE - HOUR)} is not after the start {text(BASE)}.")


def test_members_may_not_read_a_hosts_free_periods(client: FlaskClient) -> None:
    host = register(client, "compute-1")
    blazar_error(client.get(f"/v1/os-hosts/{host}/free-periods", headers=MEMBER), 403)


# The cluster's timeline.

def test_the_timeline_shows_every_host_period_by_period(client: FlaskClient) -> None:
    first = register(client, "compute-1", vcpus=8)
    second = register(client, "compute-2", vcpus=8)
    closed = register(client, "compute-3")
    assert client.put(f"/v1/os-hosts/{closed}", json={"reservable": False}).status_code == 200
    book(client, "whole", physical(1), BASE + 2 * HOUR, BASE + 4 * HOUR)
    book(client, "slots", instances(2, affinity="True"), BASE + 1 * HOUR, BASE + 3 * HOUR)
    response = client.get("/v1/availability/timeline", query_string={"start": text(BASE),
                                                                      "end": text(BASE + 6 * HOUR)})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["start_date"], body["end_date"]) == (out(BASE), out(BASE + 6 * HOUR))
    timeline = {int(host["host_id"]): host for host in body["timeline"]}
    assert list(timeline) == [first, second, closed]
    assert timeline[closed]["reservable"] is False
    assert (timeline[first]["vcpus"], timeline[first]["memory_mb"], timeline[first]["local_gb"]) == (8, 16384, 100)

    def periods(host_id: int) -> list[tuple]:
        return [((dt.datetime.fromisoformat(p["start_date"]).replace(tzinfo=dt.UTC) - BASE) / HOUR,
                 (dt.datetime.fromisoformat(p["end_date"]).replace(tzinfo=dt.UTC) - BASE) / HOUR,
                 p["state"], p["used"]) for p in timeline[host_id]["periods"]]

    # The whole host goes to the first host, the slots to the other.
    assert periods(first) == [(0, 2, "free", {}), (2, 4, "full", {}), (4, 6, "free", {})]
    assert periods(second) == [(0, 1, "free", {}), (1, 3, "partial", {"vcpus": 4, "memory_mb": 4096, "disk_gb": 40}),
                               (3, 6, "free", {})]
    assert periods(closed) == [(0, 6, "free", {})]


def test_members_may_not_read_the_timeline(client: FlaskClient) -> None:
    blazar_error(client.get("/v1/availability/timeline", headers=MEMBER), 403)


# Dates and durations at the edges of what a datetime holds: refused, never a crash.

@pytest.mark.parametrize("path, params", [
    ("/v1/availability", {"resource_type": "physical:host", "min": 1, "max": 1, "duration": "1h",
                          "after": "9999-12-31 00:00"}),
    ("/v1/availability/timeline", {"start": "9999-12-31 00:00"}),
])
def test_a_search_starting_near_the_last_representable_date_is_refused_with_the_range(
        client: FlaskClient, path: str, params: dict) -> None:
    register(client, "compute-1")
    response = client.get(path, query_string=params)
    assert response.status_code == 400, response.get_json()
    assert "9999-12-31 00:00 is out of range: dates must be from" in response.get_json()["error_message"]


def test_a_search_for_an_overlong_duration_is_refused_with_the_limit(client: FlaskClient) -> None:
    register(client, "compute-1")
    response = client.get("/v1/availability", query_string={"resource_type": "physical:host", "min": 1, "max": 1,
                                                            "duration": "99999999999999d"})
    assert response.status_code == 400, response.get_json()
    assert "is longer than the limit of 36525d" in response.get_json()["error_message"]
