"""`blazar-lite availability …`, `host free-periods` and `lease create --start-date earliest`
against a served app without authentication (an admin)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask.testing import FlaskClient

from tests.functional.client.test_lease_commands import booked_hosts, register, server_leases, usage_error

HOUR = dt.timedelta(hours=1)
BASE = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
DATE_OUT = "%Y-%m-%dT%H:%M:%S.%f"


def text(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def out(moment: dt.datetime) -> str:
    return moment.strftime(DATE_OUT)


def book_whole_host(client: FlaskClient, name: str, start: dt.datetime, end: dt.datetime) -> None:
    body = {"name": name, "start_date": text(start), "end_date": text(end), "events": [], "reservations": [
        {"resource_type": "physical:host", "min": 1, "max": 1}]}
    response = client.post("/v1/leases", json=body)
    assert response.status_code == 201, response.get_json()


def test_availability_search_lists_the_earliest_windows_with_their_hosts(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    book_whole_host(client, "busy", BASE, BASE + 5 * HOUR)
    output = cli.ok("availability", "search", "--duration", "2h", "--after", text(BASE),
                    "--physical-reservation", "min=1,max=1")
    assert cli.rows(output) == [{"start_date": out(BASE + 5 * HOUR), "end_date": out(BASE + 7 * HOUR),
                                 "hosts": "compute-1"}]


def test_availability_search_of_instance_slots_shows_the_slots_per_host(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=8)
    answer = cli.json("availability", "search", "--duration", "1d", "--after", text(BASE), "--limit", "1",
                      "--reservation", "resource_type=virtual:instance,amount=3,vcpus=2,memory_mb=1024,disk_gb=10,"
                                       "affinity=True")
    assert answer["availability"] == [{"start_date": out(BASE), "end_date": out(BASE + 24 * HOUR), "hosts": [
        {"id": "1", "hypervisor_hostname": "compute-1", "slots": 3}]}]
    output = cli.ok("availability", "search", "--duration", "1d", "--after", text(BASE), "--limit", "1",
                    "--reservation", "resource_type=virtual:instance,amount=3,vcpus=2,memory_mb=1024,disk_gb=10")
    assert cli.rows(output)[0]["hosts"] == "compute-1 (3 slots)"


def test_availability_search_says_the_most_there_is_when_nothing_fits(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    output = cli.ok("availability", "search", "--duration", "2h", "--physical-reservation", "min=2,max=2")
    assert output.startswith("No window fits: at most 1 of the 2 hosts requested is free together for 2h")


def test_availability_search_needs_exactly_one_reservation(cli: Any, client: FlaskClient) -> None:
    assert "Give the reservation to search for" in usage_error(cli, "availability", "search", "--duration", "2h")


def test_availability_search_with_a_bad_duration_exits_1_with_the_server_message(cli: Any, client: FlaskClient) -> None:
    message = cli.fails("availability", "search", "--duration", "soon", "--physical-reservation", "min=1,max=1")
    assert message.startswith("Invalid input for field 'duration': 'soon' is not a duration")


def test_availability_timeline_shows_each_hosts_periods(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    book_whole_host(client, "busy", BASE + HOUR, BASE + 2 * HOUR)
    rows = cli.rows(cli.ok("availability", "timeline", "--start", text(BASE), "--end", text(BASE + 3 * HOUR)))
    assert [(row["host"], row["start_date"], row["state"]) for row in rows] == [
        ("compute-1", out(BASE), "free"), ("compute-1", out(BASE + HOUR), "full"),
        ("compute-1", out(BASE + 2 * HOUR), "free")]


def test_host_free_periods_lists_the_gaps_between_bookings(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    book_whole_host(client, "busy", BASE + HOUR, BASE + 2 * HOUR)
    rows = cli.rows(cli.ok("host", "free-periods", "compute-1", "--start", text(BASE), "--end",
                           text(BASE + 3 * HOUR)))
    assert rows == [{"start_date": out(BASE), "end_date": out(BASE + HOUR)},
                    {"start_date": out(BASE + 2 * HOUR), "end_date": out(BASE + 3 * HOUR)}]


def test_lease_create_at_the_earliest_start_books_the_first_window(cli: Any, client: FlaskClient) -> None:
    host = register(client, "compute-1")
    # From now until BASE + 5h the host is taken.
    body = {"name": "busy", "start_date": "now", "end_date": text(BASE + 5 * HOUR), "events": [],
            "reservations": [{"resource_type": "physical:host", "min": 1, "max": 1}]}
    assert client.post("/v1/leases", json=body).status_code == 201
    created = cli.json("lease", "create", "next", "--start-date", "earliest", "--duration", "3h",
                       "--physical-reservation", "min=1,max=1")
    assert (created["start_date"], created["end_date"]) == (out(BASE + 5 * HOUR), out(BASE + 8 * HOUR))
    assert booked_hosts(client, created["id"]) == {host}


def test_lease_create_at_the_earliest_start_needs_a_duration_and_no_end(cli: Any, client: FlaskClient) -> None:
    assert "With --start-date earliest give --duration" in usage_error(
        cli, "lease", "create", "x", "--start-date", "earliest", "--physical-reservation", "min=1,max=1")
    assert "not --end-date" in usage_error(
        cli, "lease", "create", "x", "--start-date", "earliest", "--duration", "1h", "--end-date", text(BASE),
        "--physical-reservation", "min=1,max=1")
    assert "--duration and --search-until go with --start-date earliest" in usage_error(
        cli, "lease", "create", "x", "--end-date", text(BASE), "--duration", "1h",
        "--physical-reservation", "min=1,max=1")
    assert server_leases(client) == []
