"""Placing instances through the scriptlet of the server config: what it sees, what it decides,
and every way it can reject a request (which then changes nothing)."""

from __future__ import annotations

import json

from flask.testing import FlaskClient

from blazar_lite.db import Database
from tests.conftest import PlacementClient
from tests.functional.instances.test_instances import MEMBER, compute_node, create, slots, started_lease
from tests.functional.leases.test_leases import blazar_error
from tests.functional.scheduler.test_scheduler import register

KEY = "instances.placement.scriptlet"
ADMIN = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "admin"}


def use(client: FlaskClient, source: str) -> None:
    response = client.put("/v1/config", json={"config": {KEY: source}})
    assert response.status_code == 200, response.get_json()


def script(body: str) -> str:
    """A scriptlet whose instance_placement runs `body` (indented here)."""
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"def instance_placement(request, candidate_members):\n{lines}\n"


def refused(client: FlaskClient, body: dict, headers: dict | None = None) -> str:
    response = client.post("/v1/instances", json=body, headers=headers or MEMBER)
    return blazar_error(response, 400)


def nothing_created(client: FlaskClient, placement: PlacementClient, *nodes: str) -> None:
    assert client.get("/v1/instances", headers=MEMBER).get_json()["instances"] == []
    for node in nodes:
        usages = placement.get(f"/resource_providers/{node}/usages").get_json()["usages"]
        assert set(usages.values()) == {0}


def test_the_target_the_scriptlet_sets_is_where_the_instance_goes(
        client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    compute_node(placement, "b")
    use(client, script('set_target(sorted([m.server_name for m in candidate_members])[-1])'))
    hosts = [create(client, {"name": f"i{n}", "vcpus": 1, "memory_mb": 512})["host"] for n in range(3)]
    assert hosts == ["b", "b", "b"], "fewest-instances alone would have alternated"


def test_without_a_target_the_configured_allocator_decides(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    compute_node(placement, "b")
    use(client, script('log_info("no opinion about", request.name)'))
    hosts = [create(client, {"name": f"i{n}", "vcpus": 1, "memory_mb": 512})["host"] for n in range(4)]
    assert sorted(hosts) == ["a", "a", "b", "b"]


def test_the_request_carries_what_is_being_placed(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    use(client, script('fail(json.encode({"name": request.name, "project": request.project, '
                       '"reason": request.reason, "type": request.type, "resources": request.resources, '
                       '"reservation_id": request.reservation_id, "sizes": [get_instance_resources().cpu_cores, '
                       'get_instance_resources().memory_size]}))'))
    message = refused(client, {"name": "web", "vcpus": 2, "memory_mb": 512, "disk_gb": 5})
    seen = json.loads(message.removeprefix("Failed instance placement scriptlet: "))
    assert seen == {"name": "web", "project": "p1", "reason": "new", "type": "instance",
                    "resources": {"VCPU": 2, "MEMORY_MB": 512, "DISK_GB": 5}, "reservation_id": None,
                    "sizes": [2, 512 * 1024 * 1024]}
    nothing_created(client, placement)


def test_candidates_are_only_the_nodes_that_passed_the_filters(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "small", vcpus=1)
    compute_node(placement, "big", vcpus=8)
    use(client, script('fail(",".join([m.server_name + ":" + m.status for m in candidate_members]))'))
    assert refused(client, {"name": "web", "vcpus": 4, "memory_mb": 512}).endswith(": big:up")


def test_set_target_on_a_node_that_was_filtered_out_is_an_error(
        client: FlaskClient, placement: PlacementClient) -> None:
    small = compute_node(placement, "small", vcpus=1)
    big = compute_node(placement, "big", vcpus=8)
    use(client, script('set_target("small")'))
    message = refused(client, {"name": "web", "vcpus": 4, "memory_mb": 512})
    assert "set_target('small')" in message and "not a candidate member" in message
    nothing_created(client, placement, small, big)


def test_fail_a_runtime_error_and_a_return_value_each_reject_the_request(
        client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    body = {"name": "web", "vcpus": 1, "memory_mb": 512}
    use(client, script('fail("web servers go to rack 7 only")'))
    assert refused(client, body) == "Failed instance placement scriptlet: web servers go to rack 7 only"
    use(client, script('return candidate_members[5].server_name'))
    message = refused(client, body)
    assert message.startswith("Failed instance placement scriptlet: Index `5` is out of bound")
    assert "(line 2, column 12)" in message
    use(client, script('return "a"'))
    assert "returned a instead of None" in refused(client, body)
    nothing_created(client, placement, node)


def test_a_runaway_script_fails_its_request_at_the_deadline_and_the_service_goes_on(
        client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    use(client, script('n = 0\nfor i in range(1000000000):\n    n += i'))
    message = refused(client, {"name": "web", "vcpus": 1, "memory_mb": 512})
    assert "ran past its deadline of 200 ms" in message
    nothing_created(client, placement, node)
    use(client, script('set_target("a")'))
    assert create(client, {"name": "web", "vcpus": 1, "memory_mb": 512})["host"] == "a"


def test_runaway_recursion_hits_the_call_stack_limit(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    use(client, "def deeper(n):\n    return deeper(n + 1)\n\n" + script("deeper(0)"))
    assert "call stack" in refused(client, {"name": "web", "vcpus": 1, "memory_mb": 512}).lower()


def test_members_carry_groups_and_config_from_aggregates_and_extra_capabilities(
        client: FlaskClient, database: Database) -> None:
    for name, gpu in (("compute-1", "false"), ("compute-2", "true")):
        # Room for two slots each: the reservation of four books both hosts.
        response = client.post("/v1/os-hosts", json={"name": name, "vcpus": 4, "memory_mb": 16384, "local_gb": 100,
                                                     "gpu": gpu, "failure_domain": f"rack-{name[-1]}"})
        assert response.status_code == 201
    lease = started_lease(client, database, [slots(4)])
    [reservation] = lease["reservations"]
    use(client, script('''
gpu = [m for m in candidate_members if m.config.get("gpu") == "true"]
log_info("groups", [m.groups for m in candidate_members])
if request.reservation_id and gpu:
    set_target(gpu[0].server_name)
'''))
    hosts = [create(client, {"name": f"vm{n}", "reservation_id": reservation["id"]})["host"] for n in range(2)]
    assert hosts == ["compute-2", "compute-2"]
    use(client, script('fail(json.encode(sorted([[m.server_name, m.failure_domain, m.groups] '
                       'for m in candidate_members])))'))
    message = refused(client, {"name": "vm9", "reservation_id": reservation["id"]})
    # compute-2's two slots are taken: only compute-1 is a candidate. Instance reservations leave
    # their hosts in the freepool aggregate.
    assert json.loads(message.removeprefix("Failed instance placement scriptlet: ")) == [
        ["compute-1", "rack-1", ["freepool"]]]


def test_the_scriptlet_sees_reservations_and_reserved_capacity_of_a_host(
        client: FlaskClient, database: Database, placement: PlacementClient) -> None:
    register(client, "compute-1")
    compute_node(placement, "ondemand")
    lease = started_lease(client, database, [slots(3)])
    [reservation] = lease["reservations"]
    create(client, {"name": "vm0", "reservation_id": reservation["id"]})
    use(client, script('''
found = get_reservations("compute-1")
fail(json.encode({"reserved": get_reserved_capacity("compute-1"),
                  "reservations": [[r.lease_id, r.project, r.slots, r.used, r.free, r.resources] for r in found]}))
'''))
    message = refused(client, {"name": "web", "vcpus": 1, "memory_mb": 512})
    seen = json.loads(message.removeprefix("Failed instance placement scriptlet: "))
    assert seen == {"reserved": {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 20},
                    "reservations": [[lease["id"], "p1", 3, 1, 2, {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}]]}


def test_state_instances_and_projects_are_read_on_demand(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a", vcpus=16)
    use(client, script('set_target("a")'))
    create(client, {"name": "first", "vcpus": 2, "memory_mb": 1024})
    use(client, script('''
state = get_cluster_member_state("a")
fail(json.encode({"state": [state.status, state.instance_count, state.usage["VCPU"], state.free["VCPU"]],
                  "instances": [i.name for i in get_instances("a", "p1")],
                  "count": get_instances_count("a", ""), "elsewhere": get_instances_count("b", ""),
                  "project": [get_project("p1").name, get_project("p1").instances],
                  "members": [m.server_name for m in get_cluster_members()],
                  "resources": get_cluster_member_resources("a").cpu_cores}))
'''))
    seen = json.loads(refused(client, {"name": "web", "vcpus": 1, "memory_mb": 512})
                      .removeprefix("Failed instance placement scriptlet: "))
    assert seen == {"state": ["up", 1, 2, 14], "instances": ["first"], "count": 1, "elsewhere": 0,
                    "project": ["p1", 1], "members": ["a"], "resources": 16}


def test_asking_about_an_unknown_member_is_an_error(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    use(client, script('get_cluster_member_state("nope")'))
    assert "get_cluster_member_state('nope'): no such cluster member" in refused(
        client, {"name": "web", "vcpus": 1, "memory_mb": 512})


def test_forthcoming_instances_with_resources_are_placed_by_the_scriptlet(
        client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    compute_node(placement, "b")
    use(client, script('if request.type == "forthcoming":\n    set_target("b")'))
    held = create(client, {"forthcoming": True, "vcpus": 1, "memory_mb": 512})
    assert held["host"] == "b"


def test_an_admins_explicit_host_does_not_ask_the_scriptlet(client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    use(client, script('fail("asked")'))
    assert create(client, {"name": "web", "vcpus": 1, "memory_mb": 512, "host": "a"}, ADMIN)["host"] == "a"


def moving_off_compute_1(client: FlaskClient, database: Database, reason: str) -> tuple[dict, dict]:
    """Three hosts in a reservation of three slots, an instance on compute-1, and a scriptlet
    that sends instances placed for `reason` to compute-3: (compute-1, the instance)."""
    first = register(client, "compute-1")
    register(client, "compute-2")
    register(client, "compute-3")
    lease = started_lease(client, database, [slots(3, affinity=False)])
    [reservation] = lease["reservations"]
    vm = create(client, {"name": "vm", "reservation_id": reservation["id"], "host": "compute-1"}, ADMIN)
    use(client, script(f'if request.reason == "{reason}":\n    set_target("compute-3")'))
    return first, vm


def test_evacuation_asks_the_scriptlet_with_its_reason(client: FlaskClient, database: Database) -> None:
    first, vm = moving_off_compute_1(client, database, "evacuation")
    response = client.post(f"/v1/os-hosts/{first['id']}/evacuate")
    assert response.status_code == 200, response.get_json()
    [moved] = response.get_json()["relocations"]
    assert (moved["subject_id"], moved["to_node"], moved["reason"]) == (vm["id"], "compute-3", "evacuation")


def test_log_lines_reach_the_service_log_with_the_request_id(client: FlaskClient, placement: PlacementClient) -> None:
    import logging

    from blazar_lite.web import REQUEST_ID_HEADER, RequestIdFilter

    class Keep(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.records: list[logging.LogRecord] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.records.append(record)

    compute_node(placement, "a")
    use(client, script('log_warn("placing", request.name, "with care")'))
    kept = Keep()
    kept.addFilter(RequestIdFilter())
    logger = logging.getLogger("blazar_lite.scriptlet")
    logger.addHandler(kept)
    try:
        response = client.post("/v1/instances", json={"name": "web", "vcpus": 1, "memory_mb": 512}, headers=MEMBER)
    finally:
        logger.removeHandler(kept)
    assert response.status_code == 201
    [record] = kept.records
    assert (record.levelname, record.getMessage()) == ("WARNING", "instance placement scriptlet: placing web with care")
    assert record.request_id == response.headers[REQUEST_ID_HEADER]  # type: ignore[attr-defined]


def test_a_host_going_down_asks_the_scriptlet_with_reason_relocation(client: FlaskClient, database: Database) -> None:
    first, vm = moving_off_compute_1(client, database, "relocation")
    assert client.put(f"/v1/os-hosts/{first['id']}", json={"status": "down"}).status_code == 200
    moves = client.get("/v1/os-hosts/relocations").get_json()["relocations"]
    [moved] = [move for move in moves if move["subject_id"] == vm["id"]]
    assert (moved["to_node"], moved["reason"]) == ("compute-3", "relocation")
