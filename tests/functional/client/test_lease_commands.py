"""`blazar-lite lease …` against a served app without authentication (an admin of project "admin"):
each command's effect on the server, its table and its JSON, and the usage errors of its
structured options."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from blazar_lite.client import Client, Credentials

DATE_OUT = "%Y-%m-%dT%H:%M:%S.%f"
GPU_FILTER = '["==", "$gpu", "a100"]'
BIG_HOST_FILTER = '[">=", "$vcpus", "8"]'
OTHER_PROJECT = {"X-Roles": "member", "X-Project-Id": "p1", "X-User-Id": "u1"}


def at(days: float, hours: float = 0) -> str:
    """A date `days` + `hours` from now, as a person writes it."""
    moment = dt.datetime.now(dt.UTC) + dt.timedelta(days=days, hours=hours)
    return moment.strftime("%Y-%m-%d %H:%M")


def parsed(date: str) -> dt.datetime:
    return dt.datetime.strptime(date, DATE_OUT)


def register(client: FlaskClient, name: str, vcpus: int = 8, **capabilities: str) -> str:
    body = {"name": name, "vcpus": vcpus, "memory_mb": 16384, "local_gb": 100, **capabilities}
    response = client.post("/v1/os-hosts", json=body)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["host"]["id"]


def server_lease(client: FlaskClient, lease_id: str) -> dict:
    response = client.get(f"/v1/leases/{lease_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["lease"]


def server_leases(client: FlaskClient) -> list[dict]:
    return client.get("/v1/leases").get_json()["leases"]


def booked_hosts(client: FlaskClient, lease_id: str) -> set[str]:
    """The ids of the hosts that hold a reservation of the lease."""
    allocations = client.get(f"/v1/os-hosts/allocations?lease_id={lease_id}").get_json()["allocations"]
    return {str(a["resource_id"]) for a in allocations if a["reservations"]}


def create_physical(cli: Any, name: str = "lease-1", spec: str = "min=1,max=1", *args: str) -> dict:
    return cli.json("lease", "create", name, "--start-date", at(1), "--end-date", at(2),
                    "--physical-reservation", spec, *args)


def lease_fields(table: str) -> dict[str, list[str]]:
    """A lease's field/value table read back: {field: its value lines}; a line with a blank first
    column continues the field above."""
    header, _rule, *lines = table.splitlines()
    value_at = header.index("Value")
    found: dict[str, list[str]] = {}
    field = ""
    for line in lines:
        field = line[:value_at].strip() or field
        found.setdefault(field, []).append(line[value_at:].strip())
    return found


def usage_error(cli: Any, *args: str) -> str:
    """Run a command that must be refused as misused (exit 2); its stderr."""
    result = cli.run(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr, result.exception)
    return result.stderr


# create

def test_lease_create_with_a_physical_reservation_books_the_hosts_its_filters_select(
        cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1", vcpus=16)
    gpu_host = register(client, "compute-2", vcpus=16, gpu="a100", rack="row-1,bay-2]")
    register(client, "compute-3", vcpus=4, gpu="a100", rack="row-1,bay-2]")
    register(client, "compute-4", vcpus=16, gpu="a100", rack="row-2")
    # Nested lists, and a comma and a ']' inside a JSON string: the value still runs to its own ']'.
    in_rack = '["and", ["==", "$gpu", "a100"], ["==", "$rack", "row-1,bay-2]"]]'
    spec = f"min=1,max=2,hypervisor_properties={BIG_HOST_FILTER},resource_properties={in_rack},before_end=default"
    created = create_physical(cli, "gpu-lease", spec)
    on_server = server_lease(client, created["id"])
    assert created == on_server
    assert (on_server["name"], on_server["status"]) == ("gpu-lease", "PENDING")
    [reservation] = on_server["reservations"]
    assert reservation["resource_type"] == "physical:host"
    assert (reservation["min"], reservation["max"], reservation["before_end"]) == (1, 2, "default")
    assert json.loads(reservation["hypervisor_properties"]) == json.loads(BIG_HOST_FILTER)
    assert json.loads(reservation["resource_properties"]) == json.loads(in_rack)
    assert booked_hosts(client, created["id"]) == {gpu_host}


def test_lease_create_prints_its_reservations_and_events_spelled_out(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1", gpu="a100")
    shown = lease_fields(cli.ok("lease", "create", "lease-1", "--start-date", at(1), "--end-date", at(2),
                                "--physical-reservation", f"min=1,max=1,resource_properties={GPU_FILTER}"))
    [lease] = server_leases(client)
    [reservation] = lease["reservations"]
    assert (shown["id"], shown["name"], shown["status"]) == ([lease["id"]], ["lease-1"], ["PENDING"])
    assert (shown["start_date"], shown["end_date"]) == ([lease["start_date"]], [lease["end_date"]])
    heading, fields = shown["reservations"]
    assert heading == f"{reservation['id']} physical:host (pending)"
    assert fields.startswith(f"min=1, max=1, resource_properties={GPU_FILTER}")
    # Empty filters and fields the heading or the lease already say are left out.
    assert not any(name in fields for name in ("hypervisor_properties", "before_end", "lease_id", "status"))
    assert shown["events"] == [f"{e['event_type']} at {e['time']} ({e['status']})" for e in lease["events"]]
    assert [line.split()[0] for line in shown["events"]] == ["start_lease", "before_end_lease", "end_lease"]


def test_lease_create_with_instance_reservations_converts_numbers_and_affinity(
        cli: Any, client: FlaskClient) -> None:
    first, second = register(client, "compute-1"), register(client, "compute-2")
    created = cli.json("lease", "create", "instances", "--start-date", at(1), "--end-date", at(2), "--reservation",
                       "resource_type=virtual:instance,amount=2,vcpus=1,memory_mb=1024,disk_gb=10,affinity=False")
    [reservation] = server_lease(client, created["id"])["reservations"]
    assert reservation["resource_type"] == "virtual:instance"
    assert (reservation["amount"], reservation["vcpus"], reservation["memory_mb"], reservation["disk_gb"]) == (
        2, 1, 1024, 10)
    assert reservation["affinity"] is False
    # Affinity False: the two slots are on distinct hosts.
    assert booked_hosts(client, created["id"]) == {first, second}


def test_lease_create_with_a_flavor_reservation_names_the_flavor_by_name(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    response = client.post("/v1/flavors", json={"flavor": {"name": "m1.small", "vcpus": 2, "ram": 2048, "disk": 20}})
    assert response.status_code == 201, response.get_json()
    flavor_id = response.get_json()["flavor"]["id"]
    created = cli.json("lease", "create", "flavored", "--start-date", at(1), "--end-date", at(2), "--reservation",
                       "resource_type=flavor:instance,flavor_id=m1.small,amount=3,affinity=None")
    [reservation] = server_lease(client, created["id"])["reservations"]
    assert (reservation["resource_type"], reservation["flavor_id"], reservation["amount"]) == (
        "flavor:instance", flavor_id, 3)
    assert reservation["affinity"] is None
    assert (reservation["vcpus"], reservation["memory_mb"], reservation["disk_gb"]) == (2, 2048, 20)
    heading, fields = lease_fields(cli.ok("lease", "show", "flavored"))["reservations"]
    assert heading == f"{reservation['id']} flavor:instance (pending)"
    assert {"amount=3", "affinity=None", f"flavor_id={flavor_id}"} <= set(fields.split(", "))


def test_lease_create_takes_a_reservation_as_one_json_object(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    gpu_host = register(client, "compute-2", gpu="a100")
    spec = {"resource_type": "virtual:instance", "amount": 1, "vcpus": 2, "memory_mb": 2048, "disk_gb": 0,
            "affinity": True, "resource_properties": json.loads(GPU_FILTER)}
    created = cli.json("lease", "create", "json-spec", "--start-date", at(1), "--end-date", at(2),
                       "--reservation", json.dumps(spec))
    [reservation] = server_lease(client, created["id"])["reservations"]
    assert (reservation["amount"], reservation["vcpus"], reservation["disk_gb"], reservation["affinity"]) == (
        1, 2, 0, True)
    assert json.loads(reservation["resource_properties"]) == spec["resource_properties"]
    assert booked_hosts(client, created["id"]) == {gpu_host}


def test_lease_create_starts_now_unless_told(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    before = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    created = cli.json("lease", "create", "now-lease", "--end-date", at(1), "--physical-reservation", "min=1,max=1")
    after = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    assert before <= parsed(server_lease(client, created["id"])["start_date"]) <= after


def test_lease_create_with_a_before_end_date_moves_the_before_end_event(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    warning = at(1, hours=20)
    created = create_physical(cli, "lease-1", "min=1,max=1", "--before-end-date", warning)
    on_server = server_lease(client, created["id"])
    expected = dt.datetime.strptime(warning, "%Y-%m-%d %H:%M")
    assert parsed(on_server["before_end_date"]) == expected
    [event] = [e for e in on_server["events"] if e["event_type"] == "before_end_lease"]
    assert parsed(event["time"]) == expected


def test_lease_create_accepts_blazar_events_but_the_dates_set_them(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    created = create_physical(cli, "lease-1", "min=1,max=1", "--event",
                              "event_type=start_lease,event_date=2030-01-01 00:00")
    on_server = server_lease(client, created["id"])
    times = {event["event_type"]: event["time"] for event in on_server["events"]}
    assert (times["start_lease"], times["end_lease"]) == (on_server["start_date"], on_server["end_date"])


def test_lease_create_short_of_hosts_exits_1_with_the_server_message(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    message = cli.fails("lease", "create", "too-big", "--start-date", at(1), "--end-date", at(2),
                        "--physical-reservation", "min=2,max=2")
    assert message.startswith("Not enough resources for reservation 0 (physical:host)")
    assert message.endswith("(HTTP 409)")
    assert server_leases(client) == []


def test_lease_create_with_an_invalid_date_exits_1_with_the_server_message(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    message = cli.fails("lease", "create", "lease-1", "--end-date", "tomorrow", "--physical-reservation",
                        "min=1,max=1")
    assert message == "tomorrow is an invalid date. Required format: %Y-%m-%d %H:%M (HTTP 400)"


@pytest.mark.parametrize(("option", "spec", "problem"), [
    ("--physical-reservation", 'min=1,max=1,hypervisor_properties=["==", "$gpu", "true"',
     "the value of hypervisor_properties opens a '[' that is never closed"),
    ("--physical-reservation", 'min=1,max=1,resource_properties=["==", "$gpu", "a"]x',
     "goes on after its closing ']'"),
    ("--physical-reservation", "min=one,max=2", "min=one is not an integer"),
    ("--physical-reservation", "min=1,,max=2", "empty item"),
    ("--physical-reservation", "min=1,max", "'max' is not KEY=VALUE"),
    ("--physical-reservation", "min=1,min=2", "min is given twice"),
    ("--physical-reservation", "min=1,max=1,resource_properties=gpu", "resource_properties=gpu is not JSON"),
    ("--physical-reservation", "min=1,max=1,amount=2", "a physical:host reservation has no amount"),
    ("--physical-reservation", "resource_type=virtual:instance,amount=1",
     "this option makes physical:host reservations"),
    ("--physical-reservation", '{"min": 1,', "this is not a JSON object"),
    ("--reservation", "amount=2,vcpus=1,memory_mb=512,disk_gb=0", "give its resource_type"),
    ("--reservation", "resource_type=baremetal,amount=1", "resource_type=baremetal is not one of"),
    ("--reservation", "resource_type=virtual:instance,amount=1,vcpus=1,memory_mb=512,disk_gb=0,affinity=maybe",
     "affinity=maybe is not one of True, False or None"),
    ("--reservation", "resource_type=virtual:instance,amout=1", "has no amout"),
    ("--reservation", '{"resource_type": "virtual:instance", "amount": 1.5}', "amount=1.5 is not an integer"),
    ("--event", "event_type=start_lease,when=now", "an event has no when"),
])
def test_a_malformed_reservation_is_a_usage_error(cli: Any, client: FlaskClient, option: str, spec: str,
                                                  problem: str) -> None:
    register(client, "compute-1")
    stderr = usage_error(cli, "lease", "create", "lease-1", "--end-date", at(1), option, spec)
    assert f"Invalid value for '{option}'" in stderr
    assert problem in stderr
    assert server_leases(client) == []


def test_lease_create_without_an_end_date_is_a_usage_error(cli: Any, client: FlaskClient) -> None:
    assert "Give --end-date (or --start-date earliest with --duration)." in usage_error(
        cli, "lease", "create", "lease-1")
    assert server_leases(client) == []


# list and show

def test_lease_list_shows_every_project_to_an_admin_and_one_with_project_id(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    register(client, "compute-2")
    own = create_physical(cli, "own")
    response = client.post("/v1/leases", headers=OTHER_PROJECT, json={
        "name": "theirs", "start_date": at(3), "end_date": at(4), "before_end_date": None, "events": [],
        "reservations": [{"resource_type": "physical:host", "min": 1, "max": 1}]})
    assert response.status_code == 201, response.get_json()
    theirs = response.get_json()["lease"]
    listed = cli.rows(cli.ok("lease", "list"))
    assert sorted(listed, key=lambda row: row["name"]) == [
        {"id": lease["id"], "name": lease["name"], "start_date": lease["start_date"], "end_date": lease["end_date"],
         "status": "PENDING"} for lease in (own, theirs)]
    assert [row["id"] for row in cli.rows(cli.ok("lease", "list", "--project-id", "p1"))] == [theirs["id"]]
    assert cli.json("lease", "list", "--project-id", "p1") == [server_lease(client, theirs["id"])]
    assert cli.json("lease", "list") == server_leases(client)


def test_lease_show_finds_a_lease_by_id_or_by_name(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    register(client, "compute-2")
    create_physical(cli, "first")
    second = create_physical(cli, "second")
    assert cli.json("lease", "show", second["id"]) == server_lease(client, second["id"])
    assert cli.json("lease", "show", "second") == server_lease(client, second["id"])
    shown = lease_fields(cli.ok("lease", "show", "second"))
    assert (shown["id"], shown["name"]) == ([second["id"]], ["second"])


def test_lease_show_of_an_unknown_name_exits_1(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    create_physical(cli, "first")
    assert cli.fails("lease", "show", "missing") == "No lease named missing. (HTTP 404)"


def test_lease_show_of_an_unknown_id_exits_1_with_the_server_message(cli: Any) -> None:
    lease_id = "00000000-0000-4000-8000-000000000000"
    assert cli.fails("lease", "show", lease_id) == f"Lease {lease_id} not found. (HTTP 404)"


# update

@pytest.mark.parametrize(("option", "duration", "date", "delta"), [
    ("--prolong-for", "1d", "end_date", dt.timedelta(days=1)),
    ("--reduce-by", "12h", "end_date", -dt.timedelta(hours=12)),
    ("--defer-by", "1h30m", "start_date", dt.timedelta(hours=1, minutes=30)),
    ("--advance-by", "45s", "start_date", -dt.timedelta(seconds=45)),
])
def test_lease_update_moves_one_date_by_exactly_the_duration(cli: Any, client: FlaskClient, option: str,
                                                             duration: str, date: str, delta: dt.timedelta) -> None:
    register(client, "compute-1")
    created = create_physical(cli)
    before = server_lease(client, created["id"])
    updated = cli.json("lease", "update", "lease-1", option, duration)
    after = server_lease(client, created["id"])
    assert updated == after
    assert parsed(after[date]) - parsed(before[date]) == delta
    other = "start_date" if date == "end_date" else "end_date"
    assert after[other] == before[other]


def test_lease_update_renames_and_sets_dates(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    created = create_physical(cli)
    end, warning = at(3), at(2, hours=12)
    shown = lease_fields(cli.ok("lease", "update", created["id"], "--name", "renamed", "--end-date", end,
                                "--before-end-date", warning))
    on_server = server_lease(client, created["id"])
    assert on_server["name"] == "renamed"
    assert parsed(on_server["end_date"]) == dt.datetime.strptime(end, "%Y-%m-%d %H:%M")
    assert parsed(on_server["before_end_date"]) == dt.datetime.strptime(warning, "%Y-%m-%d %H:%M")
    assert (shown["name"], shown["end_date"]) == (["renamed"], [on_server["end_date"]])


def test_lease_update_changes_a_reservation(cli: Any, client: FlaskClient) -> None:
    first, second = register(client, "compute-1"), register(client, "compute-2")
    created = cli.json("lease", "create", "instances", "--start-date", at(1), "--end-date", at(2), "--reservation",
                       "resource_type=virtual:instance,amount=1,vcpus=8,memory_mb=1024,disk_gb=10,affinity=None")
    [reservation] = created["reservations"]
    assert len(booked_hosts(client, created["id"])) == 1
    cli.ok("lease", "update", "instances", "--reservation", f"id={reservation['id']},amount=2")
    [changed] = server_lease(client, created["id"])["reservations"]
    assert changed["amount"] == 2
    # A host has 8 vCPUs: the second 8-vCPU slot had to go to the other host.
    assert booked_hosts(client, created["id"]) == {first, second}


def test_lease_update_of_a_field_the_reservation_lacks_exits_1_with_the_server_message(
        cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    created = cli.json("lease", "create", "instances", "--start-date", at(1), "--end-date", at(2), "--reservation",
                       "resource_type=virtual:instance,amount=1,vcpus=1,memory_mb=1024,disk_gb=10")
    [reservation] = created["reservations"]
    message = cli.fails("lease", "update", "instances", "--reservation", f"id={reservation['id']},min=2")
    assert "cannot be changed on a virtual:instance reservation" in message and message.endswith("(HTTP 400)")
    assert server_lease(client, created["id"]) == created


def test_lease_update_that_ends_before_the_start_exits_1_and_changes_nothing(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    created = create_physical(cli)
    assert cli.fails("lease", "update", "lease-1", "--reduce-by", "2d") == (
        "End date must be later than start date. (HTTP 400)")
    assert server_lease(client, created["id"]) == created


@pytest.mark.parametrize(("args", "problem"), [
    (("--end-date", "2030-01-01 00:00", "--prolong-for", "1d"), "--end-date and --prolong-for both change"),
    (("--prolong-for", "1d", "--reduce-by", "1h"), "--prolong-for and --reduce-by both change"),
    (("--start-date", "now", "--advance-by", "1h"), "--start-date and --advance-by both change"),
    (("--prolong-for", "1x",), "'1x' is not a duration"),
    (("--defer-by", "0m",), "not a duration longer than zero"),
    (("--reservation", "amount=2",), "give the id of the reservation"),
    (("--reservation", "id=abc",), "give a field to change besides the id"),
    (("--reservation", "id=abc,flavor_id=x",), "a reservation change has no flavor_id"),
    ((), "Nothing to update"),
])
def test_a_malformed_update_is_a_usage_error(cli: Any, client: FlaskClient, args: tuple[str, ...],
                                             problem: str) -> None:
    register(client, "compute-1")
    created = create_physical(cli)
    assert problem in usage_error(cli, "lease", "update", "lease-1", *args)
    assert server_lease(client, created["id"]) == created


# delete

def test_lease_delete_by_name_removes_it_and_frees_its_hosts(cli: Any, client: FlaskClient) -> None:
    register(client, "compute-1")
    register(client, "compute-2")
    created = create_physical(cli)
    kept = create_physical(cli, "kept")
    assert len(booked_hosts(client, created["id"])) == 1
    assert cli.ok("lease", "delete", "lease-1") == "Deleted lease lease-1.\n"
    assert client.get(f"/v1/leases/{created['id']}").status_code == 404
    assert booked_hosts(client, created["id"]) == set()
    assert server_leases(client) == [server_lease(client, kept["id"])]


def test_lease_delete_of_an_unknown_name_exits_1(cli: Any) -> None:
    assert cli.fails("lease", "delete", "missing") == "No lease named missing. (HTTP 404)"


# The Python client

def test_the_python_client_refuses_two_moves_of_one_date(endpoint: str, client: FlaskClient) -> None:
    register(client, "compute-1")
    leases = Client(Credentials(endpoint=endpoint)).leases
    created = leases.create("lease-1", at(1), at(2), [{"resource_type": "physical:host", "min": 1, "max": 1}])
    with pytest.raises(ValueError, match="prolong_for and end_date both change the end_date"):
        leases.update("lease-1", end_date=at(3), prolong_for="1d")
    assert server_lease(client, created["id"]) == created
    moved = leases.update(created["id"], prolong_for=dt.timedelta(hours=2), defer_by="1h")
    assert parsed(moved["end_date"]) - parsed(created["end_date"]) == dt.timedelta(hours=2)
    assert parsed(moved["start_date"]) - parsed(created["start_date"]) == dt.timedelta(hours=1)
