"""POST /v1/scheduler/host-passes: Blazar's scheduler filter rules on leases started by the
scheduler pass, the answers for unknown hosts and reservations, bad bodies, and who may ask."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import pytest
from flask.testing import FlaskClient

from blazar_lite.db import Database
from blazar_lite.exceptions import BadRequest
from blazar_lite.filters import MAX_HOSTS, check
from blazar_lite.hosts.aggregates import own_aggregate
from blazar_lite.hosts.service import leave_freepool
from blazar_lite.leases.lifecycle import reservation_aggregate_uuid
from blazar_lite.placement.backend import EmbeddedPlacement
from blazar_lite.scheduler.runner import run_due_events

ROUTE = "/v1/scheduler/host-passes"
SECOND = dt.timedelta(seconds=1)
UNKNOWN_RESERVATION = "8f0a3c9e-1111-4222-8333-944455556666"


def moment(delta: dt.timedelta) -> dt.datetime:
    return (dt.datetime.now(dt.UTC) + delta).replace(second=0, microsecond=0)


def text(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M")


def register(client: FlaskClient, name: str) -> dict:
    response = client.post("/v1/os-hosts", json={"name": name, "vcpus": 8, "memory_mb": 16384, "local_gb": 100})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["host"]


def create_lease(client: FlaskClient, project: str, name: str, reservation: dict, start: dt.datetime,
                 end: dt.datetime) -> dict:
    body = {"name": name, "start_date": text(start), "end_date": text(end), "reservations": [reservation],
            "events": []}
    response = client.post("/v1/leases", json=body, headers={"X-Project-Id": project, "X-User-Id": "u1"})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["lease"]


def physical() -> dict:
    return {"resource_type": "physical:host", "min": 1, "max": 1, "hypervisor_properties": "",
            "resource_properties": ""}


def instances(amount: int) -> dict:
    # All slots on one host, so that the other unreserved hosts stay plain freepool hosts.
    return {"resource_type": "virtual:instance", "amount": amount, "vcpus": 2, "memory_mb": 1024, "disk_gb": 10,
            "affinity": True}


def booked_hosts(client: FlaskClient, names: dict[str, str], reservation_id: str) -> list[str]:
    """The hostnames a reservation books."""
    response = client.get(f"/v1/os-hosts/allocations?reservation_id={reservation_id}")
    assert response.status_code == 200, response.get_json()
    return sorted(names[a["resource_id"]] for a in response.get_json()["allocations"] if a["reservations"])


def ask(client: FlaskClient, hosts: list[str], project_id: str, extra_specs: dict | None = None,
        hints: dict | None = None, headers: dict | None = None) -> dict[str, tuple[bool, str]]:
    body: dict[str, Any] = {"hosts": hosts, "project_id": project_id}
    if extra_specs is not None:
        body["flavor"] = {"extra_specs": extra_specs}
    if hints is not None:
        body["scheduler_hints"] = hints
    response = client.post(ROUTE, json=body, headers=headers or {})
    assert response.status_code == 200, response.get_json()
    answer = response.get_json()["hosts"]
    assert [v["host"] for v in answer] == hosts
    return {v["host"]: (v["passes"], v["reason"]) for v in answer}


def passing(verdicts: dict[str, tuple[bool, str]]) -> set[str]:
    return {host for host, (passes, _) in verdicts.items() if passes}


def error(response, status: int) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.get_json()
    body = response.get_json()
    assert body["error_code"] == status
    return body["error_message"]


@dataclass
class World:
    """Five registered hosts and three started leases: p1's and p2's physical:host reservations
    (one host each), p1's instance reservation (two slots on one host), and a pending lease of p1."""

    start: dt.datetime
    end: dt.datetime
    ids: dict[str, str]
    p1_host: str
    p1_lease: str
    p1_reservation: str
    p2_host: str
    p2_reservation: str
    slots_host: str
    slots_reservation: str
    slots_class: str
    pending_reservation: str

    @property
    def registered(self) -> list[str]:
        return sorted(self.ids)

    @property
    def free(self) -> list[str]:
        """Registered hosts in the freepool with no started reservation on them."""
        taken = {self.p1_host, self.p2_host, self.slots_host}
        return [name for name in self.registered if name not in taken]


@pytest.fixture
def world(client: FlaskClient, database: Database) -> World:
    hosts = [register(client, f"compute-{n}") for n in range(1, 6)]
    names = {h["id"]: h["hypervisor_hostname"] for h in hosts}
    start = moment(dt.timedelta(hours=1))
    end = start + dt.timedelta(hours=3)
    p1_lease = create_lease(client, "p1", "p1-hosts", physical(), start, end)
    p1 = p1_lease["reservations"][0]
    p2 = create_lease(client, "p2", "p2-hosts", physical(), start, end)["reservations"][0]
    slots = create_lease(client, "p1", "p1-slots", instances(2), start, end)["reservations"][0]
    later = start + dt.timedelta(hours=10)
    pending = create_lease(client, "p1", "p1-later", physical(), later, later + dt.timedelta(hours=1))
    run_due_events(database, now=start + SECOND)
    [p1_host] = booked_hosts(client, names, p1["id"])
    [p2_host] = booked_hosts(client, names, p2["id"])
    [slots_host] = booked_hosts(client, names, slots["id"])
    return World(start, end, {v: k for k, v in names.items()}, p1_host, p1_lease["id"], p1["id"], p2_host, p2["id"],
                 slots_host, slots["id"], slots["resource_class"], pending["reservations"][0]["id"])


# Requests that ask for no reservation.

def test_a_plain_request_passes_only_hosts_blazar_lite_does_not_manage(client: FlaskClient, world: World) -> None:
    verdicts = ask(client, [*world.registered, "ondemand-1", "ondemand-2"], "p3")
    assert passing(verdicts) == {"ondemand-1", "ondemand-2"}
    assert "not managed by blazar-lite" in verdicts["ondemand-1"][1]


def test_a_plain_request_fails_on_freepool_hosts_saying_they_are_for_reservations(
        client: FlaskClient, world: World) -> None:
    verdicts = ask(client, [*world.free, world.slots_host], "p1")
    for host in [*world.free, world.slots_host]:
        passes, reason = verdicts[host]
        assert not passes
        assert "freepool" in reason and "reserved for reservations only" in reason


def test_a_plain_request_fails_on_another_projects_reserved_host(client: FlaskClient, world: World) -> None:
    passes, reason = ask(client, [world.p2_host], "p1")[world.p2_host]
    assert not passes
    assert reason == f"{world.p2_host} is in reservation {world.p2_reservation} of another project."


def test_a_plain_request_of_the_owner_fails_on_its_reserved_host_and_names_the_hint(
        client: FlaskClient, world: World) -> None:
    passes, reason = ask(client, [world.p1_host], "p1")[world.p1_host]
    assert not passes
    assert f"reservation={world.p1_reservation}" in reason


def test_a_plain_request_fails_on_a_registered_host_outside_every_aggregate(client: FlaskClient,
                                                                            database: Database,
                                                                            world: World) -> None:
    host = world.free[0]
    with database.transaction() as session:
        provider = EmbeddedPlacement(session).provider_by_name(host)
        assert provider is not None
        leave_freepool(EmbeddedPlacement(session), provider.uuid)
    passes, reason = ask(client, [host], "p3")[host]
    assert not passes
    assert "neither the freepool nor a reservation aggregate" in reason


# The reservation scheduler hint.

@pytest.mark.parametrize("hint", ["string", "list"])
def test_a_reservation_hint_passes_only_the_reservations_hosts(client: FlaskClient, world: World,
                                                               hint: str) -> None:
    value: Any = world.p1_reservation if hint == "string" else [world.p1_reservation]
    verdicts = ask(client, [*world.registered, "ondemand-1"], "p1", hints={"reservation": value})
    assert passing(verdicts) == {world.p1_host}
    assert verdicts[world.p1_host][1] == f"{world.p1_host} is in reservation {world.p1_reservation} of project p1."
    assert verdicts[world.p2_host][1] == f"{world.p2_host} is not in reservation {world.p1_reservation}."
    assert "not managed by blazar-lite" in verdicts["ondemand-1"][1]


def test_a_reservation_hint_fails_when_the_aggregate_is_owned_by_another_project(
        client: FlaskClient, database: Database, world: World) -> None:
    # Membership alone is not enough: the owner recorded for the aggregate must be the project.
    with database.transaction() as session:
        own_aggregate(session, reservation_aggregate_uuid(world.p1_reservation), reservation_id=world.p1_reservation,
                      lease_id=world.p1_lease, project_id="p9")
    passes, reason = ask(client, [world.p1_host], "p1", hints={"reservation": world.p1_reservation})[world.p1_host]
    assert not passes
    assert "not owned by project p1" in reason


def test_a_reservation_hint_accepts_a_registered_hosts_id(client: FlaskClient, world: World) -> None:
    host_id = world.ids[world.p1_host]
    verdicts = ask(client, [host_id, world.ids[world.p2_host]], "p1", hints={"reservation": world.p1_reservation})
    assert passing(verdicts) == {host_id}


def test_a_reservation_hint_of_another_project_fails_every_host(client: FlaskClient, world: World) -> None:
    verdicts = ask(client, [world.p1_host, world.p2_host], "p2", hints={"reservation": [world.p1_reservation]})
    assert passing(verdicts) == set()
    for _passes, reason in verdicts.values():
        assert "another project, not to project p2" in reason


def test_a_hint_naming_an_unknown_reservation_fails_every_host(client: FlaskClient, world: World) -> None:
    verdicts = ask(client, [world.p1_host, "ondemand-1"], "p1", hints={"reservation": UNKNOWN_RESERVATION})
    assert passing(verdicts) == set()
    assert all(f"Reservation {UNKNOWN_RESERVATION}" in r and "does not exist" in r for _, r in verdicts.values())


def test_a_hint_naming_a_pending_reservation_fails_every_host(client: FlaskClient, world: World) -> None:
    verdicts = ask(client, world.registered, "p1", hints={"reservation": world.pending_reservation})
    assert passing(verdicts) == set()
    assert all("is not active" in reason for _, reason in verdicts.values())


def test_a_hint_naming_an_instance_reservation_fails_and_points_to_its_flavor(
        client: FlaskClient, world: World) -> None:
    verdicts = ask(client, [world.slots_host], "p1", hints={"reservation": world.slots_reservation})
    passes, reason = verdicts[world.slots_host]
    assert not passes
    assert f"reservation:{world.slots_reservation}" in reason


def test_a_reserved_host_that_is_down_fails_with_that_reason(client: FlaskClient, world: World) -> None:
    response = client.put(f"/v1/os-hosts/{world.ids[world.p1_host]}", json={"status": "maintenance"})
    assert response.status_code == 200, response.get_json()
    verdicts = ask(client, [world.p1_host], "p1", hints={"reservation": world.p1_reservation})
    assert verdicts[world.p1_host] == (False, f"{world.p1_host} is in maintenance; it takes no instances until it "
                                              "is up again.")
    # Unknown hosts are not ours to judge: they pass plain requests whatever our hosts' state.
    assert passing(ask(client, ["ondemand-1"], "p1")) == {"ondemand-1"}


def test_an_ended_reservation_returns_its_host_to_the_freepool(client: FlaskClient, database: Database,
                                                               world: World) -> None:
    run_due_events(database, now=world.end + SECOND)
    verdicts = ask(client, [world.p1_host], "p1", hints={"reservation": world.p1_reservation})
    assert not verdicts[world.p1_host][0]
    passes, reason = ask(client, [world.p1_host], "p3")[world.p1_host]
    assert not passes and "freepool" in reason


# Reservation flavors.

def test_a_reservation_flavor_passes_only_hosts_offering_its_class(client: FlaskClient, world: World) -> None:
    specs = {f"resources:{world.slots_class}": "1", "resources:VCPU": "2", "hw:cpu_policy": "shared"}
    verdicts = ask(client, [*world.registered, "ondemand-1"], "p1", extra_specs=specs)
    assert passing(verdicts) == {world.slots_host}
    assert "offers 2 slot(s)" in verdicts[world.slots_host][1]
    assert "holds no slots" in verdicts[world.free[0]][1]


def test_a_reservation_flavor_of_another_project_fails_every_host(client: FlaskClient, world: World) -> None:
    verdicts = ask(client, [world.slots_host], "p2", extra_specs={f"resources:{world.slots_class}": "1"})
    passes, reason = verdicts[world.slots_host]
    assert not passes and "another project" in reason


def test_the_legacy_reservation_extra_spec_passes_the_reservations_hosts(client: FlaskClient, world: World) -> None:
    verdicts = ask(client, world.registered, "p1",
                   extra_specs={"aggregate_instance_extra_specs:reservation": world.slots_reservation})
    assert passing(verdicts) == {world.slots_host}


def test_a_flavor_naming_an_unknown_class_fails_every_host(client: FlaskClient, world: World) -> None:
    verdicts = ask(client, [world.slots_host, "ondemand-1"], "p1",
                   extra_specs={"resources:CUSTOM_RESERVATION_NOT_THERE": "1"})
    assert passing(verdicts) == set()
    assert all("resource class CUSTOM_RESERVATION_NOT_THERE" in reason and "does not exist" in reason
               for _, reason in verdicts.values())


def test_a_reservation_class_asked_for_zero_times_is_a_plain_request(client: FlaskClient, world: World) -> None:
    verdicts = ask(client, [world.slots_host, "ondemand-1"], "p1", extra_specs={f"resources:{world.slots_class}": "0"})
    assert passing(verdicts) == {"ondemand-1"}


# Bad bodies and the caller.

@pytest.mark.parametrize(("body", "field"), [
    ({"hosts": "compute-1", "project_id": "p1"}, "hosts"),
    ({"hosts": ["compute-1", 7], "project_id": "p1"}, "hosts.1"),
    ({"hosts": [f"cn-{n}" for n in range(MAX_HOSTS + 1)], "project_id": "p1"}, "hosts"),
    ({"hosts": ["compute-1"]}, "project_id"),
    ({"hosts": ["compute-1"], "project_id": ""}, "project_id"),
    ({"hosts": ["compute-1"], "project_id": "p1", "scheduler_hints": {"reservation": 5}}, "reservation"),
    ({"hosts": ["compute-1"], "project_id": "p1", "scheduler_hints": {"reservation": ["a", "b"]}}, "reservation"),
    ({"hosts": ["compute-1"], "project_id": "p1", "scheduler_hints": ["reservation"]}, "scheduler_hints"),
    ({"hosts": ["compute-1"], "project_id": "p1", "flavor": {"extra_specs": {"resources:VCPU": 2}}},
     "extra_specs"),
    ({"hosts": ["compute-1"], "project_id": "p1", "hint": {}}, "hint"),
])
def test_a_malformed_body_is_a_400_naming_the_field(client: FlaskClient, body: dict, field: str) -> None:
    assert field in error(client.post(ROUTE, json=body), 400)


def test_a_body_that_is_not_json_is_refused(client: FlaskClient) -> None:
    assert error(client.post(ROUTE, data="hosts=compute-1", content_type="application/json"), 400).startswith(
        "Malformed JSON")
    error(client.post(ROUTE, data="hosts=compute-1", content_type="text/plain"), 415)


def test_a_project_member_may_not_ask(client: FlaskClient) -> None:
    headers = {"X-Roles": "member", "X-Project-Id": "p1", "X-User-Id": "u1"}
    response = client.post(ROUTE, json={"hosts": ["compute-1"], "project_id": "p1"}, headers=headers)
    assert "filters:host_passes" in error(response, 403)


def test_the_service_role_may_ask(client: FlaskClient) -> None:
    headers = {"X-Roles": "service", "X-Project-Id": "service", "X-User-Id": "nova"}
    assert ask(client, ["ondemand-1"], "p1", headers=headers)["ondemand-1"][0] is True


def test_the_route_is_in_the_openapi_document(client: FlaskClient) -> None:
    assert "post" in client.get("/openapi.json").get_json()["paths"][ROUTE]


# The service called directly, as the API's schema does not stand in front of it.

@pytest.mark.parametrize(("hosts", "hints", "specs", "words"), [
    ("compute-1", {}, {}, "list of hypervisor hostnames"),
    ([None], {}, {}, "hosts.0"),
    (["x"] * (MAX_HOSTS + 1), {}, {}, f"at most {MAX_HOSTS}"),
    (["compute-1"], {"reservation": {"id": "r"}}, {}, "one reservation id"),
    (["compute-1"], "reservation=r", {}, "object of hints"),
    (["compute-1"], {}, {"resources:CUSTOM_RESERVATION_X": "one"}, "not an integer"),
])
def test_the_service_refuses_bad_input_saying_what_to_fix(database: Database, hosts: Any, hints: Any, specs: Any,
                                                           words: str) -> None:
    with database.read() as session, pytest.raises(BadRequest) as raised:
        check.host_passes(session, hosts, "p1", specs, hints)
    assert words in raised.value.message


def test_the_service_answers_an_empty_host_list_with_no_verdicts(database: Database) -> None:
    with database.read() as session:
        assert check.host_passes(session, [], "p1", {}, {}) == []
