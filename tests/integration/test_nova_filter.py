"""BlazarLiteFilter, as Nova's scheduler would run it, against a running `blazar-lite serve`: the
right hosts pass for a reservation hint, a reservation flavor and a plain request, and one
scheduling request costs one HTTP call however many hosts Nova filters."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from blazar_lite.filters.nova import BlazarLiteFilter, FilterConfig

pytestmark = pytest.mark.integration

START_SECONDS = 30
HOSTNAMES = ["compute-a", "compute-b", "compute-c", "compute-d"]
ON_DEMAND = ["ondemand-1", "ondemand-2"]


def call(base: str, method: str, path: str, body: Any = None, project: str | None = None) -> Any:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if project:
        headers.update({"X-Project-Id": project, "X-User-Id": "u1", "X-Roles": "member"})
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        raw = response.read()
        return json.loads(raw) if raw else None


@dataclass(frozen=True)
class World:
    host_reservation: str
    reserved_host: str
    slots_class: str
    slots_host: str


@pytest.fixture(scope="module")
def world(live_server: str) -> World:
    """Four registered hosts; p1's started physical:host lease (one host) and instance lease (one slot)."""
    names = {}
    for name in HOSTNAMES:
        host = call(live_server, "POST", "/v1/os-hosts", {"name": name, "vcpus": 8, "memory_mb": 16384,
                                                           "local_gb": 100})["host"]
        names[host["id"]] = name
    leases = []
    for name, reservation in [
            ("hosts", {"resource_type": "physical:host", "min": 1, "max": 1, "hypervisor_properties": "",
                       "resource_properties": ""}),
            ("slots", {"resource_type": "virtual:instance", "amount": 1, "vcpus": 2, "memory_mb": 1024,
                       "disk_gb": 10, "affinity": "None", "resource_properties": ""})]:
        body = {"name": name, "start_date": "now", "end_date": "2999-01-01 00:00", "reservations": [reservation],
                "events": [], "before_end_date": None}
        leases.append(call(live_server, "POST", "/v1/leases", body, project="p1")["lease"])
    # The server's own scheduler starts the leases within a pass or two.
    deadline = time.monotonic() + START_SECONDS
    while True:
        statuses = [call(live_server, "GET", f"/v1/leases/{lease['id']}")["lease"]["status"] for lease in leases]
        if statuses == ["ACTIVE", "ACTIVE"]:
            break
        assert time.monotonic() < deadline, f"the leases did not start: {statuses}"
        time.sleep(0.5)

    def booked(reservation_id: str) -> str:
        allocations = call(live_server, "GET", f"/v1/os-hosts/allocations?reservation_id={reservation_id}")
        [host_id] = [a["resource_id"] for a in allocations["allocations"] if a["reservations"]]
        return names[host_id]

    hosts, slots = (lease["reservations"][0] for lease in leases)
    return World(hosts["id"], booked(hosts["id"]), slots["resource_class"], booked(slots["id"]))


def host_state(name: str) -> SimpleNamespace:
    # What the filter reads of Nova's HostState.
    return SimpleNamespace(host=name, nodename=name, hypervisor_hostname=name)


def request_spec(instance: str, project: str = "p1", hints: dict | None = None,
                 extra_specs: dict | None = None) -> SimpleNamespace:
    # What the filter reads of Nova's RequestSpec: hints are lists of strings, as Nova keeps them.
    return SimpleNamespace(instance_uuid=instance, project_id=project, scheduler_hints=hints or {},
                           flavor=SimpleNamespace(extra_specs=extra_specs or {}))


@pytest.fixture
def counted_filter(live_server: str, monkeypatch: pytest.MonkeyPatch) -> tuple[BlazarLiteFilter, list[str]]:
    """A filter on the live server, and the list of HTTP requests its session made."""
    blazar_filter = BlazarLiteFilter(FilterConfig(endpoint=f"{live_server}/v1"))
    session = blazar_filter.client.api.session
    requests: list[str] = []
    real: Callable[..., Any] = session.request

    def counting(url: str, method: str, **kwargs: Any) -> Any:
        requests.append(f"{method} {url}")
        return real(url, method, **kwargs)

    monkeypatch.setattr(session, "request", counting)
    return blazar_filter, requests


def every_host() -> list[SimpleNamespace]:
    return [host_state(name) for name in [*HOSTNAMES, *ON_DEMAND]]


def passed(blazar_filter: BlazarLiteFilter, spec: SimpleNamespace) -> set[str]:
    return {state.hypervisor_hostname for state in blazar_filter.filter_all(every_host(), spec)}


def test_a_reservation_hint_passes_only_the_reserved_host_with_one_call(world: World, counted_filter) -> None:  # type: ignore[no-untyped-def]
    blazar_filter, requests = counted_filter
    spec = request_spec("inst-hint", hints={"reservation": [world.host_reservation]})
    assert passed(blazar_filter, spec) == {world.reserved_host}
    assert requests == ["POST /scheduler/host-passes"]
    # Nova may still ask host by host; the request's verdicts answer without another call.
    assert [blazar_filter.host_passes(s, spec) for s in every_host()] == [
        s.hypervisor_hostname == world.reserved_host for s in every_host()]
    assert len(requests) == 1


def test_a_reservation_flavor_passes_only_the_host_with_its_slots(world: World, counted_filter) -> None:  # type: ignore[no-untyped-def]
    blazar_filter, requests = counted_filter
    spec = request_spec("inst-flavor", extra_specs={f"resources:{world.slots_class}": "1", "resources:VCPU": "2"})
    assert passed(blazar_filter, spec) == {world.slots_host}
    assert len(requests) == 1


def test_a_plain_request_passes_only_hosts_blazar_lite_does_not_manage(world: World, counted_filter) -> None:  # type: ignore[no-untyped-def]
    blazar_filter, requests = counted_filter
    assert passed(blazar_filter, request_spec("inst-plain")) == set(ON_DEMAND)
    # Another project may not use p1's reservation, with the hint or without.
    other = request_spec("inst-other", project="p2", hints={"reservation": [world.host_reservation]})
    assert passed(blazar_filter, other) == set()
    assert len(requests) == 2


def test_an_unreachable_service_passes_no_host(world: World) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port once the socket is closed.
    blazar_filter = BlazarLiteFilter(FilterConfig(endpoint=f"http://127.0.0.1:{port}/v1", timeout=2))
    assert blazar_filter.filter_all(every_host(), request_spec("inst-down")) == []
