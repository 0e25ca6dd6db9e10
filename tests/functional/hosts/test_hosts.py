"""/v1/os-hosts: registration with providers and the freepool, extra capabilities, state,
deletion rules, allocations and properties, as Blazar's client uses them."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Iterator, Sequence

import pytest
from flask.testing import FlaskClient

from blazar_lite.hosts import reservations
from blazar_lite.hosts.reservations import HostReservation
from blazar_lite.hosts.service import FREEPOOL_AGGREGATE_UUID
from blazar_lite.placement.backend import EmbeddedPlacement

MEMBER = {"X-Roles": "member", "X-Project-Id": "p1", "X-User-Id": "u1"}
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


def blazar_error(response, status: int) -> str:  # type: ignore[no-untyped-def]
    """Assert a Blazar error body of this status; return its message."""
    assert response.status_code == status, response.get_json()
    body = response.get_json()
    assert set(body) == {"error_code", "error_name", "error_message"}
    assert body["error_code"] == status
    return body["error_message"]


def register(client: FlaskClient, name: str = "compute-1", **fields: object) -> dict:
    body = {"name": name, "vcpus": 8, "memory_mb": 16384, "local_gb": 200, **fields}
    response = client.post("/v1/os-hosts", json=body)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["host"]


def host_of(client: FlaskClient, host_id: str) -> dict:
    response = client.get(f"/v1/os-hosts/{host_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["host"]


def provider_by_name(database, name: str):  # type: ignore[no-untyped-def]
    with database.read() as session:
        return EmbeddedPlacement(session).provider_by_name(name)


# Registration.

def test_registering_a_host_answers_201_with_the_host(client: FlaskClient) -> None:
    host = register(client, cpu_info='{"arch": "x86_64"}', hypervisor_type="QEMU", hypervisor_version=6002000,
                    service_name="nova-compute-1", availability_zone="az1")
    assert re.match(r"^[0-9]+$", host["id"])
    assert host["hypervisor_hostname"] == "compute-1"
    assert (host["vcpus"], host["memory_mb"], host["local_gb"]) == (8, 16384, 200)
    assert (host["cpu_info"], host["hypervisor_type"], host["hypervisor_version"]) == (
        '{"arch": "x86_64"}', "QEMU", 6002000)
    assert (host["service_name"], host["availability_zone"]) == ("nova-compute-1", "az1")
    assert host["reservable"] is True and host["status"] == "up"
    assert TIMESTAMP.match(host["created_at"]) and host["updated_at"] is None


def test_a_registered_host_has_its_extra_capabilities_as_top_level_keys(client: FlaskClient) -> None:
    host = register(client, gpu="a100", rack="r12")
    assert (host["gpu"], host["rack"]) == ("a100", "r12")
    assert host_of(client, host["id"])["gpu"] == "a100"


def test_service_name_defaults_to_the_host_name(client: FlaskClient) -> None:
    assert register(client)["service_name"] == "compute-1"


def test_cpu_info_may_be_given_as_an_object(client: FlaskClient) -> None:
    host = register(client, cpu_info={"vendor": "Intel", "arch": "x86_64"})
    assert host["cpu_info"] == '{"arch": "x86_64", "vendor": "Intel"}'


def test_a_host_may_be_registered_down_and_not_reservable(client: FlaskClient) -> None:
    host = register(client, status="maintenance", reservable=False)
    assert (host["status"], host["reservable"]) == ("maintenance", False)


def test_registration_creates_the_root_provider_with_the_host_inventory(client, placement, database) -> None:  # type: ignore[no-untyped-def]
    host = register(client)
    root = provider_by_name(database, "compute-1")
    assert root.uuid == host["resource_provider_uuid"] and root.parent_provider_uuid is None
    inventories = placement.get(f"/resource_providers/{root.uuid}/inventories").get_json()["inventories"]
    assert {rc: inv["total"] for rc, inv in inventories.items()} == {"VCPU": 8, "MEMORY_MB": 16384, "DISK_GB": 200}
    assert inventories["VCPU"]["max_unit"] == 8


def test_registration_creates_the_reservation_provider_under_the_root(client, database) -> None:  # type: ignore[no-untyped-def]
    host = register(client)
    child = provider_by_name(database, "blazar_compute-1")
    assert child.uuid == host["reservation_provider_uuid"]
    assert child.parent_provider_uuid == host["resource_provider_uuid"]


def test_registration_puts_the_root_provider_in_the_freepool(client, placement) -> None:  # type: ignore[no-untyped-def]
    host = register(client)
    response = placement.get(f"/resource_providers/{host['resource_provider_uuid']}/aggregates")
    assert response.get_json()["aggregates"] == [FREEPOOL_AGGREGATE_UUID]


def test_every_host_joins_the_same_freepool(client, placement) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1")
    register(client, "compute-2")
    members = placement.get(f"/resource_providers?member_of={FREEPOOL_AGGREGATE_UUID}").get_json()
    assert sorted(p["name"] for p in members["resource_providers"]) == ["compute-1", "compute-2"]


def test_a_host_without_local_disk_has_no_disk_inventory(client, placement) -> None:  # type: ignore[no-untyped-def]
    host = register(client, local_gb=0)
    assert host["local_gb"] == 0
    inventories = placement.get(f"/resource_providers/{host['resource_provider_uuid']}/inventories").get_json()
    assert set(inventories["inventories"]) == {"VCPU", "MEMORY_MB"}


def test_registration_without_resources_and_without_a_provider_names_what_to_give(client: FlaskClient) -> None:
    message = blazar_error(client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 4}), 400)
    assert "memory_mb and local_gb" in message and "no resource provider named compute-1" in message


def test_a_refused_registration_leaves_no_provider_behind(client, database) -> None:  # type: ignore[no-untyped-def]
    client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 8, "memory_mb": 1, "local_gb": 1,
                                      "k" * 65: "v"})
    assert provider_by_name(database, "compute-1") is None


# Adopting an existing provider.

def existing_provider(placement, name: str = "compute-1", inventories: dict | None = None) -> str:  # type: ignore[no-untyped-def]
    return placement.provider(name, inventories if inventories is not None else
                              {"VCPU": 32, "MEMORY_MB": 65536, "DISK_GB": 1000})


def test_registration_by_name_alone_adopts_the_provider_and_its_inventory(client, placement) -> None:  # type: ignore[no-untyped-def]
    uuid_ = existing_provider(placement)
    response = client.post("/v1/os-hosts", json={"name": "compute-1", "gpu": "yes"})
    assert response.status_code == 201, response.get_json()
    host = response.get_json()["host"]
    assert host["resource_provider_uuid"] == uuid_
    assert (host["vcpus"], host["memory_mb"], host["local_gb"]) == (32, 65536, 1000)
    assert host["gpu"] == "yes"


def test_adopting_keeps_the_providers_other_aggregates(client, placement) -> None:  # type: ignore[no-untyped-def]
    uuid_ = existing_provider(placement)
    other = str(uuid.uuid4())
    placement.put(f"/resource_providers/{uuid_}/aggregates",
                  json={"aggregates": [other], "resource_provider_generation": placement.generation(uuid_)})
    client.post("/v1/os-hosts", json={"name": "compute-1"})
    aggregates = placement.get(f"/resource_providers/{uuid_}/aggregates").get_json()["aggregates"]
    assert sorted(aggregates) == sorted([other, FREEPOOL_AGGREGATE_UUID])


def test_adopting_with_agreeing_resources_is_accepted(client, placement) -> None:  # type: ignore[no-untyped-def]
    existing_provider(placement)
    response = client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 32, "memory_mb": 65536})
    assert response.status_code == 201
    assert response.get_json()["host"]["local_gb"] == 1000


def test_adopting_with_disagreeing_resources_is_a_conflict_naming_them(client, placement) -> None:  # type: ignore[no-untyped-def]
    existing_provider(placement)
    message = blazar_error(client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 8}), 409)
    assert "vcpus 8 (its VCPU total is 32)" in message


def test_adopting_a_provider_lacking_a_class_asks_for_that_field(client, placement) -> None:  # type: ignore[no-untyped-def]
    existing_provider(placement, inventories={"VCPU": 4, "MEMORY_MB": 2048})
    message = blazar_error(client.post("/v1/os-hosts", json={"name": "compute-1"}), 400)
    assert "Give local_gb" in message and "no DISK_GB inventory" in message


def test_adopting_adds_the_classes_the_body_gives_and_the_provider_lacks(client, placement) -> None:  # type: ignore[no-untyped-def]
    uuid_ = existing_provider(placement, inventories={"VCPU": 4, "MEMORY_MB": 2048})
    response = client.post("/v1/os-hosts", json={"name": "compute-1", "local_gb": 50})
    assert response.status_code == 201
    inventories = placement.get(f"/resource_providers/{uuid_}/inventories").get_json()["inventories"]
    assert {rc: inv["total"] for rc, inv in inventories.items()} == {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 50}


def test_a_child_provider_cannot_become_a_host(client, placement) -> None:  # type: ignore[no-untyped-def]
    parent = placement.provider("rack-1")
    placement.provider("compute-1", parent=parent)
    message = blazar_error(client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 1, "memory_mb": 1,
                                                             "local_gb": 1}), 409)
    assert "must be a root provider" in message


def test_a_foreign_provider_with_the_reservation_providers_name_is_a_conflict(client, placement) -> None:  # type: ignore[no-untyped-def]
    placement.provider("blazar_compute-1")
    message = blazar_error(client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 1, "memory_mb": 1,
                                                             "local_gb": 1}), 409)
    assert "blazar_compute-1" in message and "rename or delete it" in message


def test_an_existing_reservation_provider_in_the_hosts_tree_is_reused(client, placement) -> None:  # type: ignore[no-untyped-def]
    root = existing_provider(placement)
    child = placement.provider("blazar_compute-1", parent=root)
    response = client.post("/v1/os-hosts", json={"name": "compute-1"})
    assert response.status_code == 201
    assert response.get_json()["host"]["reservation_provider_uuid"] == child


# Registration mistakes.

def test_registering_a_host_twice_is_a_conflict(client: FlaskClient) -> None:
    register(client)
    message = blazar_error(client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 1, "memory_mb": 1,
                                                             "local_gb": 1}), 409)
    assert "already registered" in message


def test_an_extra_capability_key_of_64_characters_is_accepted(client: FlaskClient) -> None:
    assert register(client, **{"k" * 64: "v"})["k" * 64] == "v"


def test_an_extra_capability_key_over_64_characters_is_refused(client: FlaskClient) -> None:
    response = client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 1, "memory_mb": 1, "local_gb": 1,
                                                 "k" * 65: "v"})
    assert blazar_error(response, 400).startswith("Extra capability key too long")


@pytest.mark.parametrize("value", [2, 1.5, True, None, ["a"], {"a": "b"}])
def test_an_extra_capability_value_that_is_not_a_string_is_refused(client: FlaskClient, value: object) -> None:
    response = client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 1, "memory_mb": 1, "local_gb": 1,
                                                 "gpus": value})
    assert "gpus" in blazar_error(response, 400)


@pytest.mark.parametrize("field", ["id", "hypervisor_hostname", "created_at", "updated_at", "resource_provider_uuid",
                                   "reservation_provider_uuid"])
def test_fields_the_service_sets_cannot_be_given_at_registration(client: FlaskClient, field: str) -> None:
    response = client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 1, "memory_mb": 1, "local_gb": 1,
                                                 field: "x"})
    assert f"'{field}'" in blazar_error(response, 400)


@pytest.mark.parametrize(("field", "value"), [
    ("vcpus", "8"), ("vcpus", 0), ("vcpus", 1.5), ("vcpus", True), ("vcpus", 2147483648), ("memory_mb", 0),
    ("local_gb", -1), ("hypervisor_version", "6.2"), ("hypervisor_version", -1), ("reservable", "yes"),
    ("reservable", 1), ("status", "broken"), ("service_name", "s" * 256), ("availability_zone", 3),
    ("hypervisor_type", "t" * 256), ("cpu_info", 12),
])
def test_a_badly_typed_field_is_a_400_naming_it(client: FlaskClient, field: str, value: object) -> None:
    body = {"name": "compute-1", "vcpus": 1, "memory_mb": 1, "local_gb": 1, field: value}
    assert f"'{field}'" in blazar_error(client.post("/v1/os-hosts", json=body), 400)


@pytest.mark.parametrize("body", [{}, {"vcpus": 1}, {"name": None}, {"name": 5}])
def test_a_registration_without_a_name_string_is_a_400_naming_it(client: FlaskClient, body: dict) -> None:
    assert "'name'" in blazar_error(client.post("/v1/os-hosts", json=body), 400)


@pytest.mark.parametrize("name", ["", "  ", " compute-1", "compute-1 ", "comp\nute", "c" * 194])
def test_an_unusable_host_name_is_refused(client: FlaskClient, name: str) -> None:
    response = client.post("/v1/os-hosts", json={"name": name, "vcpus": 1, "memory_mb": 1, "local_gb": 1})
    assert "host name" in blazar_error(response, 400)


def test_a_host_name_of_193_characters_fits(client: FlaskClient) -> None:
    assert register(client, "c" * 193)["hypervisor_hostname"] == "c" * 193


def test_a_body_that_is_not_an_object_is_refused(client: FlaskClient) -> None:
    blazar_error(client.post("/v1/os-hosts", json=["compute-1"]), 400)


def test_malformed_json_is_refused(client: FlaskClient) -> None:
    response = client.post("/v1/os-hosts", data="{", content_type="application/json")
    assert "Malformed JSON" in blazar_error(response, 400)


def test_a_body_that_is_not_json_is_a_415(client: FlaskClient) -> None:
    blazar_error(client.post("/v1/os-hosts", data="name=compute-1", content_type="text/plain"), 415)


# Reading.

def test_listing_hosts_shows_every_host_with_its_capabilities(client: FlaskClient) -> None:
    first = register(client, "compute-1", gpu="a100")
    second = register(client, "compute-2")
    response = client.get("/v1/os-hosts")
    assert response.status_code == 200
    hosts = response.get_json()["hosts"]
    assert [h["id"] for h in hosts] == [first["id"], second["id"]]
    assert hosts[0]["gpu"] == "a100" and "gpu" not in hosts[1]
    assert hosts[0] == first


def test_listing_no_hosts_is_an_empty_list(client: FlaskClient) -> None:
    assert client.get("/v1/os-hosts").get_json() == {"hosts": []}


def test_listing_hosts_refuses_unknown_query_parameters(client: FlaskClient) -> None:
    assert "sort" in blazar_error(client.get("/v1/os-hosts?sort=id"), 400)


def test_showing_a_host_answers_the_same_body_as_registration(client: FlaskClient) -> None:
    host = register(client, gpu="a100")
    assert host_of(client, host["id"]) == host


@pytest.mark.parametrize("host_id", ["999", "compute-1", "99999999999999999999", "-1"])
def test_showing_an_unknown_host_is_a_404_in_blazar_format(client: FlaskClient, host_id: str) -> None:
    register(client)
    assert host_id in blazar_error(client.get(f"/v1/os-hosts/{host_id}"), 404)


# Updating.

def test_updating_sets_and_overwrites_extra_capabilities(client: FlaskClient) -> None:
    host = register(client, gpu="a100")
    response = client.put(f"/v1/os-hosts/{host['id']}", json={"gpu": "h100", "rack": "r1"})
    assert response.status_code == 200
    updated = response.get_json()["host"]
    assert (updated["gpu"], updated["rack"]) == ("h100", "r1")
    assert host_of(client, host["id"]) == updated


def test_updating_with_null_unsets_an_extra_capability(client: FlaskClient) -> None:
    host = register(client, gpu="a100", rack="r1")
    updated = client.put(f"/v1/os-hosts/{host['id']}", json={"gpu": None}).get_json()["host"]
    assert "gpu" not in updated and updated["rack"] == "r1"


def test_unsetting_an_absent_extra_capability_is_harmless(client: FlaskClient) -> None:
    host = register(client)
    assert client.put(f"/v1/os-hosts/{host['id']}", json={"nothing": None}).status_code == 200


def test_updating_stamps_updated_at(client: FlaskClient) -> None:
    host = register(client)
    updated = client.put(f"/v1/os-hosts/{host['id']}", json={"gpu": "a100"}).get_json()["host"]
    assert TIMESTAMP.match(updated["updated_at"])


def test_admins_set_the_operational_status(client: FlaskClient) -> None:
    host = register(client)
    for status in ("maintenance", "down", "up"):
        response = client.put(f"/v1/os-hosts/{host['id']}", json={"status": status})
        assert response.get_json()["host"]["status"] == status
    assert host_of(client, host["id"])["status"] == "up"


def test_admins_set_reservable(client: FlaskClient) -> None:
    host = register(client)
    response = client.put(f"/v1/os-hosts/{host['id']}", json={"reservable": False})
    assert response.get_json()["host"]["reservable"] is False
    assert host_of(client, host["id"])["reservable"] is False


@pytest.mark.parametrize(("body", "field"), [
    ({"status": "broken"}, "status"), ({"status": None}, "status"), ({"reservable": "false"}, "reservable"),
    ({"reservable": None}, "reservable"), ({"vcpus": "16"}, "vcpus"), ({"hypervisor_hostname": "x"},
                                                                       "hypervisor_hostname"),
    ({"id": "2"}, "id"), ({"gpus": 2}, "gpus"),
])
def test_an_update_of_a_field_that_cannot_take_the_value_is_a_400_naming_it(client: FlaskClient, body: dict,
                                                                            field: str) -> None:
    host = register(client)
    assert field in blazar_error(client.put(f"/v1/os-hosts/{host['id']}", json=body), 400)


def test_an_update_with_a_capability_key_over_64_characters_is_refused(client: FlaskClient) -> None:
    host = register(client)
    response = client.put(f"/v1/os-hosts/{host['id']}", json={"k" * 65: "v"})
    assert blazar_error(response, 400).startswith("Extra capability key too long")


def test_an_update_with_nothing_to_change_is_refused(client: FlaskClient) -> None:
    host = register(client)
    assert "No data to update" in blazar_error(client.put(f"/v1/os-hosts/{host['id']}", json={}), 400)


def test_a_refused_update_changes_nothing(client: FlaskClient) -> None:
    host = register(client, gpu="a100")
    client.put(f"/v1/os-hosts/{host['id']}", json={"gpu": "h100", "status": "broken"})
    assert host_of(client, host["id"]) == host


def test_updating_an_unknown_host_is_a_404(client: FlaskClient) -> None:
    blazar_error(client.put("/v1/os-hosts/7", json={"gpu": "a100"}), 404)


# Deleting.

def test_deleting_a_host_answers_204_and_forgets_it(client: FlaskClient) -> None:
    host = register(client, gpu="a100")
    response = client.delete(f"/v1/os-hosts/{host['id']}")
    assert response.status_code == 204 and response.data == b""
    blazar_error(client.get(f"/v1/os-hosts/{host['id']}"), 404)
    assert client.get("/v1/os-hosts").get_json() == {"hosts": []}


def test_deleting_a_host_removes_the_providers_its_registration_created(client, database) -> None:  # type: ignore[no-untyped-def]
    host = register(client)
    client.delete(f"/v1/os-hosts/{host['id']}")
    assert provider_by_name(database, "compute-1") is None
    assert provider_by_name(database, "blazar_compute-1") is None


def test_deleting_an_adopted_host_keeps_its_provider_and_inventory_but_leaves_the_freepool(
        client, placement, database) -> None:  # type: ignore[no-untyped-def]
    uuid_ = existing_provider(placement)
    other = str(uuid.uuid4())
    placement.put(f"/resource_providers/{uuid_}/aggregates",
                  json={"aggregates": [other], "resource_provider_generation": placement.generation(uuid_)})
    host = client.post("/v1/os-hosts", json={"name": "compute-1"}).get_json()["host"]
    assert client.delete(f"/v1/os-hosts/{host['id']}").status_code == 204
    assert provider_by_name(database, "blazar_compute-1") is None
    assert provider_by_name(database, "compute-1").uuid == uuid_
    assert placement.get(f"/resource_providers/{uuid_}/aggregates").get_json()["aggregates"] == [other]
    inventories = placement.get(f"/resource_providers/{uuid_}/inventories").get_json()["inventories"]
    assert inventories["VCPU"]["total"] == 32


def test_a_deleted_host_can_be_registered_again(client: FlaskClient) -> None:
    host = register(client)
    client.delete(f"/v1/os-hosts/{host['id']}")
    again = register(client)
    assert again["id"] != host["id"]


def hold_reservation_provider(database, host: dict, consumer: str) -> None:  # type: ignore[no-untyped-def]
    """Allocate one unit of a reservation class on the host's reservation provider, as a started
    reservation's instance would."""
    with database.transaction() as session:
        placement = EmbeddedPlacement(session)
        placement.ensure_resource_class("CUSTOM_RESERVATION_TEST")
        placement.set_inventories(host["reservation_provider_uuid"], {"CUSTOM_RESERVATION_TEST": {"total": 2}})
        placement.allocate(consumer, {host["reservation_provider_uuid"]: {"CUSTOM_RESERVATION_TEST": 1},
                                      host["resource_provider_uuid"]: {"VCPU": 2}}, "p1", "u1", "INSTANCE")


def test_a_host_whose_reservation_provider_holds_allocations_cannot_be_deleted(client, database) -> None:  # type: ignore[no-untyped-def]
    host = register(client)
    hold_reservation_provider(database, host, str(uuid.uuid4()))
    message = blazar_error(client.delete(f"/v1/os-hosts/{host['id']}"), 409)
    assert "reservation provider" in message and "CUSTOM_RESERVATION_TEST: 1" in message
    assert host_of(client, host["id"]) == host
    assert provider_by_name(database, "blazar_compute-1") is not None


def test_a_host_can_be_deleted_once_its_allocations_are_released(client, database) -> None:  # type: ignore[no-untyped-def]
    host = register(client)
    consumer = str(uuid.uuid4())
    hold_reservation_provider(database, host, consumer)
    with database.transaction() as session:
        EmbeddedPlacement(session).release(consumer)
    assert client.delete(f"/v1/os-hosts/{host['id']}").status_code == 204


def test_a_host_whose_created_root_provider_holds_allocations_cannot_be_deleted(client, database) -> None:  # type: ignore[no-untyped-def]
    host = register(client)
    with database.transaction() as session:
        EmbeddedPlacement(session).allocate(str(uuid.uuid4()), {host["resource_provider_uuid"]: {"VCPU": 1}},
                                            "p1", "u1")
    message = blazar_error(client.delete(f"/v1/os-hosts/{host['id']}"), 409)
    assert "resource provider" in message and "VCPU: 1" in message


def test_allocations_on_an_adopted_root_provider_do_not_block_deletion(client, placement, database) -> None:  # type: ignore[no-untyped-def]
    uuid_ = existing_provider(placement)
    host = client.post("/v1/os-hosts", json={"name": "compute-1"}).get_json()["host"]
    with database.transaction() as session:
        EmbeddedPlacement(session).allocate(str(uuid.uuid4()), {uuid_: {"VCPU": 1}}, "p1", "u1")
    assert client.delete(f"/v1/os-hosts/{host['id']}").status_code == 204


def test_a_host_whose_reservation_provider_was_removed_elsewhere_can_still_be_deleted(client, placement) -> None:  # type: ignore[no-untyped-def]
    host = register(client)
    assert placement.delete(f"/resource_providers/{host['reservation_provider_uuid']}").status_code == 204
    assert client.delete(f"/v1/os-hosts/{host['id']}").status_code == 204


def test_deleting_an_unknown_host_is_a_404(client: FlaskClient) -> None:
    blazar_error(client.delete("/v1/os-hosts/3"), 404)


# Reservations that hold hosts, through the hook the leases domain fills.

class StubSource:
    """A reservation source standing in for a reservation type, holding chosen hosts."""

    def __init__(self, held: dict[int, list[HostReservation]]) -> None:
        self.held = held
        self.calls: list[dict] = []

    def __call__(self, session, host_ids: Sequence[int], *, ending_after: dt.datetime,  # type: ignore[no-untyped-def]
                 lease_id: str | None = None, reservation_id: str | None = None):
        self.calls.append({"host_ids": list(host_ids), "lease_id": lease_id, "reservation_id": reservation_id,
                           "ending_after": ending_after})
        return {h: [r for r in rs if r.end_date > ending_after and (lease_id is None or r.lease_id == lease_id)]
                for h, rs in self.held.items() if h in host_ids}


@pytest.fixture
def source() -> Iterator[StubSource]:
    stub = StubSource({})
    reservations.register_source("test", stub)
    yield stub
    reservations.unregister_source("test")


def reservation(days_from_now: int, length_days: int = 1, lease_id: str = "lease-1") -> HostReservation:
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(days=days_from_now)
    return HostReservation(id=str(uuid.uuid4()), lease_id=lease_id, start_date=start,
                           end_date=start + dt.timedelta(days=length_days))


def test_a_host_with_a_future_reservation_cannot_be_deleted(client: FlaskClient, source: StubSource) -> None:
    host = register(client)
    held = reservation(3)
    source.held[int(host["id"])] = [held]
    message = blazar_error(client.delete(f"/v1/os-hosts/{host['id']}"), 409)
    assert held.id in message and "current or future reservation" in message
    assert host_of(client, host["id"]) == host


def test_a_host_whose_reservations_have_ended_can_be_deleted(client: FlaskClient, source: StubSource) -> None:
    host = register(client)
    source.held[int(host["id"])] = [reservation(-3)]
    assert client.delete(f"/v1/os-hosts/{host['id']}").status_code == 204


def test_allocations_list_the_reservations_holding_each_host(client: FlaskClient, source: StubSource) -> None:
    first, second = register(client, "compute-1"), register(client, "compute-2")
    later, sooner = reservation(5), reservation(1)
    source.held[int(first["id"])] = [later, sooner]
    allocations = client.get("/v1/os-hosts/allocations").get_json()["allocations"]
    assert [a["resource_id"] for a in allocations] == [first["id"], second["id"]]
    assert [r["id"] for r in allocations[0]["reservations"]] == [sooner.id, later.id]
    assert allocations[0]["reservations"][0] == {
        "id": sooner.id, "lease_id": "lease-1", "start_date": sooner.start_date.strftime("%Y-%m-%dT%H:%M:%S.%f"),
        "end_date": sooner.end_date.strftime("%Y-%m-%dT%H:%M:%S.%f")}
    assert allocations[1]["reservations"] == []


def test_allocation_filters_reach_the_reservation_sources(client: FlaskClient, source: StubSource) -> None:
    host = register(client)
    source.held[int(host["id"])] = [reservation(1, lease_id="a"), reservation(2, lease_id="b")]
    allocation = client.get(f"/v1/os-hosts/{host['id']}/allocation?lease_id=b&reservation_id=r").get_json()
    assert [r["lease_id"] for r in allocation["allocation"]["reservations"]] == ["b"]
    assert (source.calls[-1]["lease_id"], source.calls[-1]["reservation_id"]) == ("b", "r")


# Allocations without reservations (no reservation type exists yet: the true answer is none).

def test_allocations_list_every_host_with_no_reservations(client: FlaskClient) -> None:
    first, second = register(client, "compute-1"), register(client, "compute-2")
    response = client.get("/v1/os-hosts/allocations")
    assert response.status_code == 200
    assert response.get_json() == {"allocations": [{"resource_id": first["id"], "reservations": []},
                                                   {"resource_id": second["id"], "reservations": []}]}


def test_allocations_accept_lease_and_reservation_filters(client: FlaskClient) -> None:
    host = register(client)
    response = client.get(f"/v1/os-hosts/allocations?lease_id={uuid.uuid4()}&reservation_id={uuid.uuid4()}")
    assert response.get_json() == {"allocations": [{"resource_id": host["id"], "reservations": []}]}


@pytest.mark.parametrize("query", ["host_id=1", "lease_id=a&lease_id=b"])
def test_allocations_refuse_unknown_or_repeated_parameters(client: FlaskClient, query: str) -> None:
    blazar_error(client.get(f"/v1/os-hosts/allocations?{query}"), 400)


def test_one_hosts_allocation_is_shown(client: FlaskClient) -> None:
    host = register(client)
    response = client.get(f"/v1/os-hosts/{host['id']}/allocation")
    assert response.get_json() == {"allocation": {"resource_id": host["id"], "reservations": []}}


@pytest.mark.parametrize("host_id", ["42", "compute-1"])
def test_the_allocation_of_an_unknown_host_is_a_404(client: FlaskClient, host_id: str) -> None:
    blazar_error(client.get(f"/v1/os-hosts/{host_id}/allocation"), 404)


# Properties.

def properties(client: FlaskClient, query: str = "") -> list[dict]:
    response = client.get(f"/v1/os-hosts/properties{query}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["resource_properties"]


def test_properties_are_the_extra_capability_names(client: FlaskClient) -> None:
    register(client, "compute-1", gpu="a100", rack="r1")
    register(client, "compute-2", gpu="h100")
    assert properties(client) == [{"property": "gpu"}, {"property": "rack"}]


def test_property_details_give_the_distinct_values_and_the_private_flag(client: FlaskClient) -> None:
    register(client, "compute-1", gpu="h100")
    register(client, "compute-2", gpu="a100")
    register(client, "compute-3", gpu="a100")
    assert properties(client, "?detail=True") == [{"property": "gpu", "private": False, "values": ["a100", "h100"]}]


def test_no_hosts_means_no_properties(client: FlaskClient) -> None:
    assert properties(client, "?detail=True&all=True") == []


def test_a_private_property_is_listed_only_with_all(client: FlaskClient) -> None:
    register(client, gpu="a100", rack="r1")
    response = client.patch("/v1/os-hosts/properties/rack", json={"private": True})
    assert response.status_code == 200
    assert properties(client, "?detail=True") == [{"property": "gpu", "private": False, "values": ["a100"]}]
    assert properties(client) == [{"property": "gpu"}]
    assert properties(client, "?detail=True&all=True") == [
        {"property": "gpu", "private": False, "values": ["a100"]},
        {"property": "rack", "private": True, "values": ["r1"]}]


def test_updating_a_property_answers_with_the_property(client: FlaskClient) -> None:
    register(client, gpu="a100")
    body = client.patch("/v1/os-hosts/properties/gpu", json={"private": True}).get_json()["resource_property"]
    assert (body["property"], body["private"], body["values"]) == ("gpu", True, ["a100"])
    assert (body["property_name"], body["resource_type"]) == ("gpu", "physical:host")
    assert TIMESTAMP.match(body["created_at"])


def test_a_property_can_be_made_public_again(client: FlaskClient) -> None:
    register(client, gpu="a100")
    client.patch("/v1/os-hosts/properties/gpu", json={"private": True})
    client.patch("/v1/os-hosts/properties/gpu", json={"private": False})
    assert properties(client) == [{"property": "gpu"}]


def test_a_property_stays_private_when_a_host_gains_it_again(client: FlaskClient) -> None:
    host = register(client, gpu="a100")
    client.patch("/v1/os-hosts/properties/gpu", json={"private": True})
    client.put(f"/v1/os-hosts/{host['id']}", json={"gpu": None})
    assert properties(client, "?all=True") == []
    client.put(f"/v1/os-hosts/{host['id']}", json={"gpu": "h100"})
    assert properties(client, "?detail=True&all=True") == [{"property": "gpu", "private": True, "values": ["h100"]}]


@pytest.mark.parametrize("query", ["?detail=true", "?detail=1", "?detail=yes"])
def test_detail_accepts_the_usual_spellings_of_true(client: FlaskClient, query: str) -> None:
    register(client, gpu="a100")
    assert properties(client, query) == [{"property": "gpu", "private": False, "values": ["a100"]}]


@pytest.mark.parametrize("query", ["?detail=maybe", "?all=2", "?sort=name", "?detail=True&detail=False"])
def test_properties_refuse_bad_query_parameters(client: FlaskClient, query: str) -> None:
    blazar_error(client.get(f"/v1/os-hosts/properties{query}"), 400)


def test_updating_an_unknown_property_is_a_404(client: FlaskClient) -> None:
    register(client, gpu="a100")
    assert "rack" in blazar_error(client.patch("/v1/os-hosts/properties/rack", json={"private": True}), 404)


@pytest.mark.parametrize("body", [{}, {"private": "true"}, {"private": None}, {"private": True, "other": 1}])
def test_a_property_update_needs_exactly_a_private_boolean(client: FlaskClient, body: dict) -> None:
    register(client, gpu="a100")
    blazar_error(client.patch("/v1/os-hosts/properties/gpu", json=body), 400)


# Aggregates: the freepool, and reservation aggregates with their owners (see the scheduler tests).

def test_registered_hosts_are_listed_in_the_freepool_aggregate(client: FlaskClient) -> None:
    first, second = register(client, "compute-1"), register(client, "compute-2")
    [freepool] = client.get("/v1/os-hosts/aggregates").get_json()["aggregates"]
    assert (freepool["id"], freepool["name"], freepool["project_id"]) == (FREEPOOL_AGGREGATE_UUID, "freepool", None)
    assert sorted(freepool["hosts"]) == sorted([first["id"], second["id"]])


@pytest.mark.parametrize("query", ["?owner=p1", "?project_id=p1&project_id=p2"])
def test_aggregates_refuse_bad_query_parameters(client: FlaskClient, query: str) -> None:
    blazar_error(client.get(f"/v1/os-hosts/aggregates{query}"), 400)


# Authorization: everything under os-hosts is for admins.

ADMIN_ONLY = [
    ("GET", "/v1/os-hosts", None), ("POST", "/v1/os-hosts", {"name": "compute-2", "vcpus": 1, "memory_mb": 1,
                                                              "local_gb": 1}),
    ("GET", "/v1/os-hosts/{id}", None), ("PUT", "/v1/os-hosts/{id}", {"gpu": "x"}),
    ("DELETE", "/v1/os-hosts/{id}", None), ("GET", "/v1/os-hosts/allocations", None),
    ("GET", "/v1/os-hosts/{id}/allocation", None), ("GET", "/v1/os-hosts/properties", None),
    ("PATCH", "/v1/os-hosts/properties/gpu", {"private": True}), ("GET", "/v1/os-hosts/aggregates", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ONLY)
def test_members_are_refused_every_host_route(client: FlaskClient, method: str, path: str, body: dict | None) -> None:
    host = register(client, gpu="a100")
    response = client.open(path.format(id=host["id"]), method=method, json=body, headers=MEMBER)
    assert "hosts:" in blazar_error(response, 403)
    assert host_of(client, host["id"]) == host


def test_a_member_with_a_bad_body_is_still_refused_first(client: FlaskClient) -> None:
    blazar_error(client.post("/v1/os-hosts", data="{", content_type="application/json", headers=MEMBER), 403)


# The .json suffix and the v1 root.

def test_host_routes_answer_with_a_json_suffix(client: FlaskClient) -> None:
    response = client.post("/v1/os-hosts.json", json={"name": "compute-1", "vcpus": 1, "memory_mb": 1,
                                                      "local_gb": 1})
    assert response.status_code == 201
    host_id = response.get_json()["host"]["id"]
    assert client.get("/v1/os-hosts.json").get_json()["hosts"][0]["id"] == host_id
    assert client.get(f"/v1/os-hosts/{host_id}.json").get_json()["host"]["id"] == host_id
    assert client.get("/v1/os-hosts/allocations.json").status_code == 200
    assert client.get(f"/v1/os-hosts/{host_id}/allocation.json").status_code == 200
    assert client.get("/v1/os-hosts/properties.json").status_code == 200
    assert client.delete(f"/v1/os-hosts/{host_id}.json").status_code == 204


def test_the_json_suffix_does_not_reach_paths_outside_v1(client: FlaskClient) -> None:
    assert client.get("/versions.json").status_code == 404


@pytest.mark.parametrize("path", ["/v1", "/v1/"])
def test_the_v1_root_describes_the_version(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.get_json() == {"version": {"id": "v1.0", "status": "CURRENT",
                                               "links": [{"href": "http://localhost/v1/", "rel": "self"}]}}
