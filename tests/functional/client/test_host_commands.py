"""`blazar-lite host …` against a served app without authentication: each command's effect on the
server, its table and its JSON."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from flask.testing import FlaskClient

from blazar_lite.hosts import reservations
from blazar_lite.hosts.reservations import HostReservation

SIZES = ("--vcpus", "8", "--memory-mb", "16384", "--local-gb", "200")
DATE = "%Y-%m-%dT%H:%M:%S.%f"


def server_host(client: FlaskClient, host_id: str) -> dict:
    response = client.get(f"/v1/os-hosts/{host_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["host"]


def server_hosts(client: FlaskClient) -> list[dict]:
    return client.get("/v1/os-hosts").get_json()["hosts"]


def create(cli: Any, name: str = "compute-1", *args: str) -> dict:
    return cli.json("host", "create", name, *SIZES, *args)


# create

def test_host_create_adopts_a_provider_and_prints_the_host_as_json(cli: Any, client: FlaskClient,
                                                                   placement: Any) -> None:
    provider = placement.provider("compute-1", {"VCPU": 16, "MEMORY_MB": 65536, "DISK_GB": 500})
    host = cli.json("host", "create", "compute-1", "--extra", "gpu=a100", "--extra", "rack=r1")
    assert host == server_host(client, host["id"])
    assert (host["vcpus"], host["memory_mb"], host["local_gb"]) == (16, 65536, 500)
    assert host["resource_provider_uuid"] == provider
    assert (host["gpu"], host["rack"]) == ("a100", "r1")


def test_host_create_with_sizes_prints_a_field_value_table(cli: Any, client: FlaskClient) -> None:
    shown = cli.fields(cli.ok("host", "create", "compute-1", *SIZES, "--extra", "gpu=a100"))
    [host] = server_hosts(client)
    assert shown["id"] == host["id"]
    assert shown["hypervisor_hostname"] == "compute-1"
    assert (shown["vcpus"], shown["memory_mb"], shown["local_gb"]) == ("8", "16384", "200")
    assert (shown["gpu"], shown["reservable"], shown["status"]) == ("a100", "True", "up")
    assert shown["cpu_info"] == ""


def test_host_create_of_a_registered_name_exits_1_with_the_server_message(cli: Any) -> None:
    host = create(cli)
    message = cli.fails("host", "create", "compute-1", *SIZES)
    assert message == f"Host compute-1 is already registered (id {host['id']}). (HTTP 409)"


def test_host_create_without_sizes_or_provider_exits_1_with_the_server_message(cli: Any) -> None:
    message = cli.fails("host", "create", "compute-9")
    assert "compute-9" in message and "vcpus" in message and message.endswith("(HTTP 400)")


def test_host_create_refuses_an_extra_that_has_its_own_option(cli: Any, client: FlaskClient) -> None:
    result = cli.run("host", "create", "compute-1", *SIZES, "--extra", "vcpus=4")
    assert result.exit_code == 2
    assert "vcpus has its own option, --vcpus" in result.stderr
    assert server_hosts(client) == []


def test_an_extra_that_is_not_key_value_is_a_usage_error(cli: Any) -> None:
    result = cli.run("host", "create", "compute-1", *SIZES, "--extra", "gpu")
    assert result.exit_code == 2
    assert "'gpu' is not KEY=VALUE" in result.stderr


# list and show

def test_host_list_prints_a_row_per_host(cli: Any) -> None:
    first, second = create(cli, "compute-1"), create(cli, "compute-2", "--extra", "gpu=a100")
    cli.ok("host", "update", "compute-2", "--status", "maintenance")
    listed = cli.rows(cli.ok("host", "list"))
    assert listed == [
        {"id": first["id"], "hypervisor_hostname": "compute-1", "vcpus": "8", "memory_mb": "16384",
         "local_gb": "200", "reservable": "True", "status": "up"},
        {"id": second["id"], "hypervisor_hostname": "compute-2", "vcpus": "8", "memory_mb": "16384",
         "local_gb": "200", "reservable": "True", "status": "maintenance"}]


def test_host_list_as_json_is_what_the_server_lists(cli: Any, client: FlaskClient) -> None:
    create(cli, "compute-1", "--extra", "gpu=a100")
    create(cli, "compute-2")
    assert cli.json("host", "list") == server_hosts(client)


def test_host_list_of_no_hosts_prints_the_header_only(cli: Any) -> None:
    assert cli.rows(cli.ok("host", "list")) == []
    assert cli.json("host", "list") == []


def test_host_show_finds_a_host_by_id_or_by_name(cli: Any, client: FlaskClient) -> None:
    create(cli, "compute-1")
    host = create(cli, "compute-2", "--extra", "gpu=a100")
    assert cli.json("host", "show", host["id"]) == server_host(client, host["id"])
    assert cli.json("host", "show", "compute-2") == server_host(client, host["id"])
    shown = cli.fields(cli.ok("host", "show", "compute-2"))
    assert (shown["id"], shown["gpu"], shown["reservation_provider_uuid"]) == (
        host["id"], "a100", host["reservation_provider_uuid"])


def test_host_show_of_an_unknown_id_exits_1_with_the_server_message(cli: Any) -> None:
    assert cli.fails("host", "show", "999") == "Host 999 not found. (HTTP 404)"


def test_host_show_of_an_unknown_name_exits_1(cli: Any) -> None:
    create(cli, "compute-1")
    assert cli.fails("host", "show", "compute-7") == "No host named compute-7. (HTTP 404)"


# update, unset, delete

def test_host_update_sets_extras_reservable_and_status(cli: Any, client: FlaskClient) -> None:
    host = create(cli, "compute-1", "--extra", "rack=r1")
    updated = cli.json("host", "update", "compute-1", "--extra", "rack=r2", "--extra", "gpu=a100",
                       "--not-reservable", "--status", "maintenance")
    assert updated == server_host(client, host["id"])
    assert (updated["rack"], updated["gpu"], updated["reservable"], updated["status"]) == (
        "r2", "a100", False, "maintenance")
    again = cli.fields(cli.ok("host", "update", host["id"], "--reservable", "--status", "up"))
    assert (again["reservable"], again["status"], again["rack"]) == ("True", "up", "r2")


def test_host_update_with_nothing_to_change_is_a_usage_error(cli: Any, client: FlaskClient) -> None:
    host = create(cli)
    result = cli.run("host", "update", "compute-1")
    assert result.exit_code == 2
    assert "Nothing to update" in result.stderr
    assert server_host(client, host["id"]) == host


def test_host_update_of_a_host_field_as_extra_exits_1_with_the_server_message(cli: Any) -> None:
    create(cli)
    message = cli.fails("host", "update", "compute-1", "--extra", "vcpus=4")
    assert "'vcpus'" in message and "host field" in message and message.endswith("(HTTP 400)")


def test_host_unset_removes_extras(cli: Any, client: FlaskClient) -> None:
    host = create(cli, "compute-1", "--extra", "rack=r1", "--extra", "gpu=a100", "--extra", "zone=z1")
    shown = cli.fields(cli.ok("host", "unset", "compute-1", "--extra", "rack", "--extra", "gpu"))
    assert "rack" not in shown and "gpu" not in shown and shown["zone"] == "z1"
    on_server = server_host(client, host["id"])
    assert "rack" not in on_server and "gpu" not in on_server and on_server["zone"] == "z1"


def test_host_delete_by_name_unregisters_it(cli: Any, client: FlaskClient) -> None:
    host = create(cli, "compute-1")
    kept = create(cli, "compute-2")
    assert cli.ok("host", "delete", "compute-1") == "Deleted host compute-1.\n"
    assert client.get(f"/v1/os-hosts/{host['id']}").status_code == 404
    assert server_hosts(client) == [server_host(client, kept["id"])]


def test_host_delete_of_an_unknown_id_exits_1_with_the_server_message(cli: Any) -> None:
    assert cli.fails("host", "delete", "42") == "Host 42 not found. (HTTP 404)"


# allocations

class HeldHosts:
    """A reservation source standing in for a reservation type, holding chosen hosts."""

    def __init__(self) -> None:
        self.held: dict[int, list[HostReservation]] = {}

    def __call__(self, session, host_ids: Sequence[int], *, ending_after: dt.datetime,  # type: ignore[no-untyped-def]
                 lease_id: str | None = None, reservation_id: str | None = None):
        return {h: [r for r in rs if lease_id is None or r.lease_id == lease_id]
                for h, rs in self.held.items() if h in host_ids}


@pytest.fixture
def held() -> Iterator[HeldHosts]:
    source = HeldHosts()
    reservations.register_source("test", source)
    yield source
    reservations.unregister_source("test")


def reservation(lease_id: str, days_from_now: int = 1) -> HostReservation:
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(days=days_from_now)
    return HostReservation(id=str(uuid.uuid4()), lease_id=lease_id, start_date=start,
                           end_date=start + dt.timedelta(days=1))


def test_host_allocations_prints_a_row_per_reservation_and_per_free_host(cli: Any, held: HeldHosts) -> None:
    first, second = create(cli, "compute-1"), create(cli, "compute-2")
    sooner, later = reservation("lease-a", 1), reservation("lease-b", 3)
    held.held[int(first["id"])] = [sooner, later]
    assert cli.rows(cli.ok("host", "allocations")) == [
        {"resource_id": first["id"], "reservation_id": sooner.id, "lease_id": "lease-a",
         "start_date": sooner.start_date.strftime(DATE), "end_date": sooner.end_date.strftime(DATE)},
        {"resource_id": first["id"], "reservation_id": later.id, "lease_id": "lease-b",
         "start_date": later.start_date.strftime(DATE), "end_date": later.end_date.strftime(DATE)},
        {"resource_id": second["id"], "reservation_id": "", "lease_id": "", "start_date": "", "end_date": ""}]


def test_host_allocations_as_json_are_what_the_server_answers(cli: Any, client: FlaskClient,
                                                              held: HeldHosts) -> None:
    host = create(cli, "compute-1")
    create(cli, "compute-2")
    held.held[int(host["id"])] = [reservation("lease-a"), reservation("lease-b", 3)]
    assert cli.json("host", "allocations") == client.get("/v1/os-hosts/allocations").get_json()["allocations"]
    assert cli.json("host", "allocations", "--lease-id", "lease-b") == client.get(
        "/v1/os-hosts/allocations?lease_id=lease-b").get_json()["allocations"]
    assert cli.json("host", "allocations", "compute-1") == client.get(
        f"/v1/os-hosts/{host['id']}/allocation").get_json()["allocation"]


def test_host_allocations_of_one_host_without_reservations(cli: Any) -> None:
    host = create(cli, "compute-1")
    assert cli.json("host", "allocations", host["id"]) == {"resource_id": host["id"], "reservations": []}
    assert cli.rows(cli.ok("host", "allocations", "compute-1")) == [
        {"resource_id": host["id"], "reservation_id": "", "lease_id": "", "start_date": "", "end_date": ""}]


# properties

def test_host_property_list_names_the_extras_hosts_have(cli: Any) -> None:
    create(cli, "compute-1", "--extra", "gpu=a100", "--extra", "rack=r1")
    create(cli, "compute-2", "--extra", "gpu=h100")
    assert cli.rows(cli.ok("host", "property-list")) == [{"property": "gpu"}, {"property": "rack"}]
    assert cli.json("host", "property-list", "--detail") == [
        {"property": "gpu", "private": False, "values": ["a100", "h100"]},
        {"property": "rack", "private": False, "values": ["r1"]}]
    assert cli.rows(cli.ok("host", "property-list", "--detail"))[0] == {
        "property": "gpu", "private": "False", "values": "a100, h100"}


def test_host_property_set_private_hides_it_unless_all(cli: Any, client: FlaskClient) -> None:
    create(cli, "compute-1", "--extra", "gpu=a100", "--extra", "rack=r1")
    prop = cli.json("host", "property-set", "gpu", "--private")
    assert (prop["property"], prop["private"], prop["values"]) == ("gpu", True, ["a100"])
    assert cli.json("host", "property-list") == [{"property": "rack"}]
    assert cli.json("host", "property-list", "--all", "--detail") == client.get(
        "/v1/os-hosts/properties?detail=True&all=True").get_json()["resource_properties"]
    assert {"property": "gpu", "private": True, "values": ["a100"]} in cli.json(
        "host", "property-list", "--all", "--detail")
    shown = cli.fields(cli.ok("host", "property-set", "gpu", "--public"))
    assert (shown["property"], shown["private"]) == ("gpu", "False")
    assert cli.json("host", "property-list") == [{"property": "gpu"}, {"property": "rack"}]


def test_host_property_set_needs_private_or_public(cli: Any) -> None:
    result = cli.run("host", "property-set", "gpu")
    assert result.exit_code == 2
    assert "Give --private or --public." in result.stderr


def test_host_property_set_of_an_unknown_property_exits_1_with_the_server_message(cli: Any) -> None:
    message = cli.fails("host", "property-set", "gpu", "--private")
    assert message.startswith("Host property gpu not found") and message.endswith("(HTTP 404)")


# connection

def test_the_endpoint_may_come_from_the_environment(make_cli: Any, endpoint: str) -> None:
    cli = make_cli(None)
    cli.ok("host", "create", "compute-1", *SIZES, env={"BLAZAR_LITE_ENDPOINT": endpoint})
    assert [h["hypervisor_hostname"] for h in cli.json("host", "list", env={"BLAZAR_LITE_ENDPOINT": endpoint})] == [
        "compute-1"]


def test_an_unreachable_service_exits_1_with_a_clear_message(make_cli: Any, unreachable_endpoint: str) -> None:
    message = make_cli(unreachable_endpoint).fails("host", "list")
    assert message == f"Cannot connect to {unreachable_endpoint}/os-hosts: Connection refused."


def test_an_endpoint_that_is_not_the_api_exits_1(make_cli: Any, endpoint: str) -> None:
    message = make_cli(endpoint.removesuffix("/v1") + "/nowhere").fails("host", "list")
    assert message.endswith("(HTTP 404)")
