"""The example scriptlets of etc/scriptlets, each set through /v1/config and shown doing what its
comment says on a small cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask.testing import FlaskClient

from blazar_lite.db import Database
from blazar_lite.scheduler.runner import run_due_events
from tests.conftest import PlacementClient
from tests.functional.instances.test_instances import MEMBER, compute_node, create, slots, started_lease
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import LENGTH, SECOND, START, create_lease, moment

EXAMPLES = Path(__file__).resolve().parents[3] / "etc" / "scriptlets"
KEY = "instances.placement.scriptlet"


def use_example(client: FlaskClient, name: str) -> None:
    response = client.put("/v1/config", json={"config": {KEY: (EXAMPLES / name).read_text()}})
    assert response.status_code == 200, response.get_json()


def host(client: FlaskClient, name: str, vcpus: int = 4, **capabilities: str) -> dict:
    body = {"name": name, "vcpus": vcpus, "memory_mb": 16384, "local_gb": 100, **capabilities}
    response = client.post("/v1/os-hosts", json=body)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["host"]


def test_every_example_compiles() -> None:
    from blazar_lite.scriptlet import runtime

    examples = sorted(EXAMPLES.glob("*.star"))
    assert len(examples) >= 4
    for example in examples:
        runtime.compile_program(example.read_text())


def test_spread_across_failure_domains_alternates_racks(client: FlaskClient, database: Database) -> None:
    for index, rack in ((1, "rack-a"), (2, "rack-a"), (3, "rack-b"), (4, "rack-b")):
        host(client, f"compute-{index}", failure_domain=rack)
    # Two 2-vCPU slots fill a 4-vCPU host: eight slots book all four hosts.
    lease = started_lease(client, database, [slots(8)])
    [reservation] = lease["reservations"]
    use_example(client, "spread-failure-domains.star")
    placed = [create(client, {"name": f"vm{n}", "reservation_id": reservation["id"]})["host"] for n in range(4)]
    assert placed == ["compute-1", "compute-3", "compute-2", "compute-4"]


def test_keep_gpu_nodes_for_reservations(client: FlaskClient, placement: PlacementClient) -> None:
    gpu = compute_node(placement, "gpu-1", vcpus=32)
    compute_node(placement, "plain-1", vcpus=2)
    assert placement.put("/traits/CUSTOM_GPU").status_code in (201, 204)
    response = placement.put(f"/resource_providers/{gpu}/traits",
                             json={"traits": ["CUSTOM_GPU"], "resource_provider_generation": placement.generation(gpu)})
    assert response.status_code == 200, response.get_json()
    use_example(client, "keep-gpu-for-reservations.star")
    # fewest-instances alone would send the second instance to the empty GPU node.
    assert [create(client, {"name": f"web{n}", "vcpus": 1, "memory_mb": 512})["host"] for n in range(2)] == [
        "plain-1", "plain-1"]
    message = blazar_error(client.post("/v1/instances", json={"name": "web2", "vcpus": 1, "memory_mb": 512},
                                       headers=MEMBER), 400)
    assert message == ("Failed instance placement scriptlet: only GPU nodes have room for web2, and GPU nodes are "
                       "kept for reservations: create a lease to get one")


def test_prefer_hosts_where_the_project_has_idle_reserved_slots(client: FlaskClient, database: Database) -> None:
    host(client, "compute-1", vcpus=8, rack="a")
    host(client, "compute-2", vcpus=8, rack="b")
    start = moment(START)
    kept = create_lease(client, "kept", [{**slots(2), "resource_properties": '["==", "$rack", "b"]'}],
                        start, start + LENGTH)
    spread = create_lease(client, "spread", [slots(2, affinity=False)], start, start + LENGTH)
    run_due_events(database, now=start + SECOND)
    [reservation] = client.get(f"/v1/leases/{spread['id']}").get_json()["lease"]["reservations"]
    assert client.get(f"/v1/leases/{kept['id']}").get_json()["lease"]["status"] == "ACTIVE"

    use_example(client, "prefer-idle-reserved-slots.star")
    # compute-2 also holds the idle slots of the project's other lease; fewest-instances alone
    # would have taken compute-1 (no instances anywhere, equal memory, first by name).
    assert create(client, {"name": "vm0", "reservation_id": reservation["id"]})["host"] == "compute-2"


@pytest.mark.parametrize(("name", "problem"), [
    ("tmp-build", 'may not start with "tmp-"'),
    ("test-web", 'may not start with "test-"'),
    ("Web", "start with a lower-case letter"),
    ("web_1", '"web_1" has "_"'),
])
def test_reject_names_by_pattern(client: FlaskClient, placement: PlacementClient, name: str, problem: str) -> None:
    compute_node(placement, "a")
    use_example(client, "reject-names.star")
    message = blazar_error(client.post("/v1/instances", json={"name": name, "vcpus": 1, "memory_mb": 512},
                                       headers=MEMBER), 400)
    assert message.startswith("Failed instance placement scriptlet: ") and problem in message
    assert create(client, {"name": "web-1", "vcpus": 1, "memory_mb": 512})["host"] == "a"
