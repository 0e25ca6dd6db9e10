"""The iallocator allocator: messages built from a Snapshot, answers checked against them, and
programs run by name (stand-in allocators written here, run with this interpreter)."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from blazar_lite.allocators.iallocator import (
    SOURCE_DIRECTORY,
    Allocate,
    Message,
    Move,
    MultiAllocate,
    NodeEvacuate,
    Relocate,
    build_message,
    choose_with_iallocator,
    default_search_path,
    find_program,
    message_for,
    parse_answer,
    read_message,
    run_program,
)
from blazar_lite.allocators.iallocator_message import DEFAULT_GROUP, allocate_for
from blazar_lite.allocators.snapshot import (
    DOWN,
    EVACUATION,
    MAINTENANCE,
    UP,
    InstanceOnNode,
    Node,
    PlacementRequest,
    Snapshot,
)
from blazar_lite.exceptions import AllocatorFailed, BadRequest


def instance(name: str | None, vcpus: int = 1, memory: int = 1024, disk: int = 10, *, uuid: str | None = None,
             project: str = "project-a") -> InstanceOnNode:
    return InstanceOnNode(uuid=uuid or f"uuid-{name}", name=name, project_id=project,
                          resources={"VCPU": vcpus, "MEMORY_MB": memory, "DISK_GB": disk})


def node(name: str, *, vcpus: int = 16, memory: int = 32768, disk: int = 200, status: str = UP,
         instances: tuple[InstanceOnNode, ...] = (), extra_vcpus: int = 0, **kwargs: object) -> Node:
    """A node whose use is exactly its instances' (plus `extra_vcpus` no instance explains)."""
    used = {"VCPU": sum(i.resources["VCPU"] for i in instances) + extra_vcpus,
            "MEMORY_MB": sum(i.resources["MEMORY_MB"] for i in instances),
            "DISK_GB": sum(i.resources["DISK_GB"] for i in instances)}
    return Node(name=name, provider_uuid=f"rp-{name}", status=status, instances=instances,
                capacity={"VCPU": vcpus, "MEMORY_MB": memory, "DISK_GB": disk}, used=used, **kwargs)  # type: ignore[arg-type]


def request(name: str | None = "vm-new", vcpus: int = 2, memory: int = 4096, disk: int = 20,
            **kwargs: object) -> PlacementRequest:
    return PlacementRequest(name=name, project_id="project-a",
                            resources={"VCPU": vcpus, "MEMORY_MB": memory, "DISK_GB": disk}, **kwargs)  # type: ignore[arg-type]


SNAPSHOT = Snapshot((
    node("host-1", instances=(instance("vm-1", vcpus=2, memory=2048, disk=20),)),
    node("host-2", memory=65536, traits=frozenset({"HW_CPU_X86_AVX2"}), capabilities={"rack": "r2"}),
    node("host-3", status=MAINTENANCE),
    node("host-4", status=DOWN),
))


def allocate(name: str = "vm-new", required_nodes: int = 1) -> Allocate:
    return Allocate(name=name, memory=1024, vcpus=1, disks=(10240,), disk_space_total=10240,
                    required_nodes=required_nodes)


def answer(result: object, success: bool = True, info: str = "chosen", key: str = "result") -> str:
    return json.dumps({"success": success, "info": info, key: result})


def write_allocator(directory: Path, body: str, name: str = "stand-in") -> Path:
    """An allocator script run by this interpreter; `message` is the input it was given."""
    path = directory / name
    path.write_text(f"#!{sys.executable}\nimport json, sys, time\n"
                    "message = json.load(open(sys.argv[-1]))\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# Building messages


def test_a_message_has_the_common_parts_of_protocol_version_2() -> None:
    message = build_message(SNAPSHOT, allocate())

    assert message["version"] == 2
    assert message["cluster_name"] == "blazar-lite"
    assert message["cluster_tags"] == []
    assert message["enabled_hypervisors"] == ["kvm"]
    assert list(message["nodegroups"]) == [DEFAULT_GROUP]
    group = message["nodegroups"][DEFAULT_GROUP]
    assert (group["name"], group["alloc_policy"], group["networks"], group["tags"]) == ("default", "preferred", [], [])
    assert group["ipolicy"] == message["ipolicy"]
    assert "plain" in message["ipolicy"]["disk-templates"]


def test_nodes_are_described_in_ganeti_units() -> None:
    host_1 = build_message(SNAPSHOT, allocate())["nodes"]["host-1"]

    assert host_1["total_memory"] == 32768
    assert host_1["free_memory"] == 32768 - 2048
    assert host_1["total_disk"] == 200 * 1024
    assert host_1["free_disk"] == (200 - 20) * 1024
    assert host_1["total_cpus"] == 16
    assert (host_1["reserved_memory"], host_1["reserved_cpus"]) == (0, 0)
    assert host_1["i_pri_memory"] == host_1["i_pri_up_memory"] == 2048
    assert host_1["group"] == DEFAULT_GROUP
    assert (host_1["offline"], host_1["drained"]) == (False, False)
    assert (host_1["master_candidate"], host_1["master_capable"], host_1["vm_capable"]) == (True, True, True)
    assert host_1["ndparams"] == {"spindle_count": 1, "exclusive_storage": False, "oob_program": None}
    assert host_1["primary_ip"] == host_1["secondary_ip"] == "0.0.0.0"


def test_capabilities_and_traits_are_node_tags() -> None:
    assert build_message(SNAPSHOT, allocate())["nodes"]["host-2"]["tags"] == ["rack:r2", "HW_CPU_X86_AVX2"]


def test_down_nodes_are_offline_and_nodes_in_maintenance_are_drained() -> None:
    nodes = build_message(SNAPSHOT, allocate())["nodes"]

    assert (nodes["host-3"]["offline"], nodes["host-3"]["drained"]) == (False, True)
    assert (nodes["host-4"]["offline"], nodes["host-4"]["drained"]) == (True, False)


def test_vcpus_that_no_listed_instance_uses_are_sent_as_reserved_cpus() -> None:
    snapshot = Snapshot((node("host-1", instances=(instance("vm-1", vcpus=2),), extra_vcpus=6),))

    assert build_message(snapshot, allocate())["nodes"]["host-1"]["reserved_cpus"] == 6


def test_instances_are_listed_by_name_with_their_disks_in_mib() -> None:
    vm_1 = build_message(SNAPSHOT, allocate())["instances"]["vm-1"]

    assert vm_1["disks"] == [{"size": 20 * 1024, "mode": "rw", "spindles": 1}]
    assert vm_1["disk_space_total"] == 20 * 1024
    assert (vm_1["vcpus"], vm_1["memory"], vm_1["nodes"]) == (2, 2048, ["host-1"])
    assert (vm_1["disk_template"], vm_1["admin_state"], vm_1["admin_state_source"]) == ("plain", "up", "admin")
    assert (vm_1["os"], vm_1["hypervisor"], vm_1["spindle_use"], vm_1["nics"]) == ("blazar-lite", "kvm", 1, [])
    assert vm_1["tags"] == ["project:project-a"]


def test_an_instance_without_a_name_or_with_a_taken_one_is_listed_by_uuid() -> None:
    snapshot = Snapshot((node("host-1", instances=(instance(None, uuid="u-1"), instance("twin", uuid="u-2"))),
                         node("host-2", instances=(instance("twin", uuid="u-3"),))))

    instances = build_message(snapshot, allocate())["instances"]

    assert set(instances) == {"u-1", "twin", "u-3"}
    assert instances["u-3"]["nodes"] == ["host-2"]


def test_an_allocate_request_carries_the_instance_in_ganeti_units() -> None:
    sent = build_message(SNAPSHOT, allocate_for(request(vcpus=2, memory=4096, disk=20,
                                                        reservation_id="res-1")))["request"]

    assert sent == {
        "type": "allocate", "name": "vm-new", "required_nodes": 1, "disk_space_total": 20480,
        "disks": [{"size": 20480, "mode": "rw", "spindles": 1}], "nics": [], "vcpus": 2, "memory": 4096,
        "disk_template": "plain", "os": "blazar-lite", "tags": ["project:project-a", "reservation:res-1"],
        "hypervisor": "kvm", "spindle_use": 1,
    }


def test_an_instance_without_disk_or_name_is_allocated_without_disks() -> None:
    sent = allocate_for(request(name=None, disk=0)).to_json()

    assert (sent["name"], sent["disks"], sent["disk_space_total"]) == ("new-instance", [], 0)


def test_a_relocate_request_names_the_nodes_to_leave() -> None:
    sent = build_message(SNAPSHOT, Relocate(name="vm-1", disk_space_total=20480, relocate_from=("host-1",)))

    assert sent["request"] == {"type": "relocate", "name": "vm-1", "required_nodes": 1,
                               "disk_space_total": 20480, "relocate_from": ["host-1"]}


def test_a_multi_allocate_request_lists_allocate_requests_without_their_type() -> None:
    sent = build_message(SNAPSHOT, MultiAllocate((allocate("vm-a"), allocate("vm-b"))))["request"]

    assert sent["type"] == "multi-allocate"
    assert [item["name"] for item in sent["instances"]] == ["vm-a", "vm-b"]
    assert all("type" not in item and item["memory"] == 1024 for item in sent["instances"])


def test_a_node_evacuate_request_names_the_instances_and_the_mode() -> None:
    assert build_message(SNAPSHOT, NodeEvacuate(("vm-1",)))["request"] == {
        "type": "node-evacuate", "instances": ["vm-1"], "evac_mode": "primary-only"}
    assert build_message(SNAPSHOT, NodeEvacuate(("vm-1",), "all"))["request"]["evac_mode"] == "all"


def test_an_evacuation_is_an_allocate_with_the_avoided_node_drained() -> None:
    message = message_for(SNAPSHOT, request(name="vm-1", reason=EVACUATION, avoid=frozenset({"host-1"})))
    sent = message.to_json()

    assert sent["request"]["type"] == "allocate"
    assert sent["nodes"]["host-1"]["drained"] is True
    assert sent["nodes"]["host-2"]["drained"] is False
    # The instance is still where it runs until it has been moved.
    assert sent["instances"]["vm-1"]["nodes"] == ["host-1"]


def test_nodes_the_reservation_rules_exclude_are_sent_drained() -> None:
    snapshot = Snapshot((node("full", reservation_slots=(2, 2)), node("free", reservation_slots=(2, 1)),
                         node("elsewhere", reservation_slots=(2, 0))))
    affinity = request(reservation_id="res-1", affinity=True, siblings_on=frozenset({"free"}))

    drained = {name for name, sent in message_for(snapshot, affinity).to_json()["nodes"].items() if sent["drained"]}

    assert drained == {"full", "elsewhere"}


def test_nodes_short_of_room_are_left_to_the_allocator() -> None:
    sent = message_for(SNAPSHOT, request(memory=10**6)).to_json()["nodes"]

    assert (sent["host-1"]["drained"], sent["host-2"]["drained"]) == (False, False)


def test_a_built_message_reads_back_as_the_same_snapshot_and_request() -> None:
    sent = Message(SNAPSHOT, allocate())

    read = read_message(json.loads(json.dumps(sent.to_json())))

    assert read.request == allocate()
    assert [(n.name, n.status, n.capacity, n.used, n.traits, n.capabilities) for n in read.snapshot.nodes] == [
        (n.name, n.status, n.capacity, n.used, n.traits, n.capabilities) for n in SNAPSHOT.nodes]
    assert [[(i.name, i.project_id, i.resources) for i in n.instances] for n in read.snapshot.nodes] == [
        [(i.name, i.project_id, i.resources) for i in n.instances] for n in SNAPSHOT.nodes]


@given(capacity=st.tuples(st.integers(0, 512), st.integers(0, 2**20), st.integers(0, 10**5)),
       share=st.floats(0, 1), extra_vcpus=st.integers(0, 64))
def test_node_figures_survive_a_message_and_back(capacity: tuple[int, int, int], share: float,
                                                 extra_vcpus: int) -> None:
    vcpus, memory, disk = capacity
    on_node = instance("vm", int(vcpus * share), int(memory * share), int(disk * share))
    original = node("host", vcpus=vcpus + extra_vcpus, memory=memory, disk=disk, instances=(on_node,),
                    extra_vcpus=extra_vcpus)

    (read,) = read_message(build_message(Snapshot((original,)), allocate())).snapshot.nodes

    assert (read.capacity, read.used) == (original.capacity, original.used)


# Checking answers


def test_an_allocate_answer_gives_its_node() -> None:
    checked = parse_answer(answer(["host-2"], info="host-2 is best"), Message(SNAPSHOT, allocate()), program="x")

    assert (checked.success, checked.nodes, checked.info) == (True, ("host-2",), "host-2 is best")


def test_an_answer_under_the_older_nodes_key_is_read() -> None:
    assert parse_answer(answer(["host-1"], key="nodes"), Message(SNAPSHOT, allocate()), program="x").nodes == (
        "host-1",)


def test_a_refusal_is_an_answer_that_keeps_the_allocators_info() -> None:
    checked = parse_answer(answer([], success=False, info="FailMem: 3"), Message(SNAPSHOT, allocate()), program="x")

    assert (checked.success, checked.info, checked.nodes) == (False, "FailMem: 3", ())


@pytest.mark.parametrize(("result", "problem"), [
    (["host-1", "host-2"], "must be a list of 1"),
    ([], "must be a list of 1"),
    ("host-1", "must be a list of 1"),
    (["host-9"], "'host-9', which is not a node of the message"),
    (["host-3"], "'host-3', which is drained"),
    (["host-4"], "'host-4', which is offline"),
    ([7], "7, which is not a node"),
])
def test_an_allocate_answer_that_does_not_fit_is_a_failure_quoting_the_allocator(result: object,
                                                                                   problem: str) -> None:
    with pytest.raises(AllocatorFailed, match=problem) as caught:
        parse_answer(answer(result, info="my reasons"), Message(SNAPSHOT, allocate()), program="picky")

    assert "'picky'" in caught.value.message and "my reasons" in caught.value.message
    assert caught.value.status == 409


def test_an_answer_for_two_nodes_must_name_two_different_nodes() -> None:
    message = Message(SNAPSHOT, allocate(required_nodes=2))

    assert parse_answer(answer(["host-2", "host-1"]), message, program="x").nodes == ("host-2", "host-1")
    with pytest.raises(AllocatorFailed, match="names a node twice"):
        parse_answer(answer(["host-2", "host-2"]), message, program="x")


def test_an_answer_naming_an_avoided_node_is_a_failure() -> None:
    message = message_for(SNAPSHOT, request(name="vm-1", reason=EVACUATION, avoid=frozenset({"host-1"})))

    with pytest.raises(AllocatorFailed, match="'host-1', which is drained"):
        parse_answer(answer(["host-1"]), message, program="x")


def test_a_relocate_answer_may_not_name_the_node_to_leave() -> None:
    message = Message(SNAPSHOT, Relocate(name="vm-1", disk_space_total=20480, relocate_from=("host-1",)))

    assert parse_answer(answer(["host-2"]), message, program="x").nodes == ("host-2",)
    with pytest.raises(AllocatorFailed, match="which the instance is to leave"):
        parse_answer(answer(["host-1"]), message, program="x")


@pytest.mark.parametrize("output", ["not json", "", '["host-1"]', '{"info": "no success"}',
                                    '{"success": "yes", "result": []}'])
def test_output_that_is_no_answer_is_a_failure(output: str) -> None:
    with pytest.raises(AllocatorFailed, match="'x'"):
        parse_answer(output, Message(SNAPSHOT, allocate()), program="x")


def test_a_multi_allocate_answer_takes_failures_as_names_or_pairs() -> None:
    message = Message(SNAPSHOT, MultiAllocate((allocate("vm-a"), allocate("vm-b"), allocate("vm-c"))))

    checked = parse_answer(answer([[["vm-a", ["host-2"]]], ["vm-b", ["vm-c", "no room"]]]), message, program="x")

    assert checked.moves == (Move("vm-a", ("host-2",)),)
    assert checked.failed == (("vm-b", ""), ("vm-c", "no room"))


@pytest.mark.parametrize(("result", "problem"), [
    ([[["vm-a", ["host-2"]], ["vm-z", ["host-1"]]], ["vm-b"]], "'vm-z', which the request did not ask about"),
    ([[["vm-a", ["host-2"]]], []], "no answer for vm-b"),
    ([[["vm-a", ["host-2"]]], ["vm-a", "vm-b"]], "answered twice"),
    ([[["vm-a", ["host-3"]]], ["vm-b"]], "drained"),
    ([[["vm-a", "host-2"]], ["vm-b"]], "must be a list"),
    ([[["vm-a", ["host-2"]]]], "must be a list of 2"),
])
def test_a_multi_allocate_answer_that_does_not_fit_is_a_failure(result: object, problem: str) -> None:
    message = Message(SNAPSHOT, MultiAllocate((allocate("vm-a"), allocate("vm-b"))))

    with pytest.raises(AllocatorFailed, match=problem):
        parse_answer(answer(result), message, program="x")


def test_a_node_evacuate_answer_gives_moves_failures_and_jobs() -> None:
    snapshot = Snapshot((*SNAPSHOT.nodes, node("host-5", instances=(instance("vm-5"),))))
    message = Message(snapshot, NodeEvacuate(("vm-1", "vm-5")))
    jobs = [[{"OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": "vm-1"}]]

    checked = parse_answer(answer([[["vm-1", "default", ["host-2"]]], [["vm-5", "nowhere to go"]], jobs]),
                           message, program="x")

    assert checked.moves == (Move("vm-1", ("host-2",), "default"),)
    assert checked.failed == (("vm-5", "nowhere to go"),)
    assert checked.jobs == tuple(jobs)


@pytest.mark.parametrize(("moved", "problem"), [
    (["vm-1", "elsewhere", ["host-2"]], "'elsewhere', which is not a node group"),
    (["vm-1", "default", ["host-4"]], "offline"),
    (["vm-1", "default", []], "names no node"),
    (["vm-2", "default", ["host-2"]], "did not ask about"),
])
def test_a_node_evacuate_answer_that_does_not_fit_is_a_failure(moved: list[object], problem: str) -> None:
    with pytest.raises(AllocatorFailed, match=problem):
        parse_answer(answer([[moved], [], []]), Message(SNAPSHOT, NodeEvacuate(("vm-1",))), program="x")


def test_an_evacuated_instance_may_keep_a_node_it_is_on_even_when_drained() -> None:
    snapshot = Snapshot((node("host-1", status=MAINTENANCE, instances=(instance("vm-1"),)), node("host-2")))
    message = Message(snapshot, NodeEvacuate(("vm-1",), "secondary-only"), secondaries={"vm-1": ("host-2",)})

    checked = parse_answer(answer([[["vm-1", DEFAULT_GROUP, ["host-1", "host-2"]]], [], []]), message, program="x")

    assert checked.moves == (Move("vm-1", ("host-1", "host-2"), DEFAULT_GROUP),)


# Running programs


@pytest.mark.parametrize("name", ["../hail", "/usr/bin/true", "sub/hail", "..", "", "a..b"])
def test_a_name_that_is_no_plain_program_name_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(BadRequest, match="plain program name") as caught:
        find_program(name, [str(tmp_path)])

    assert caught.value.status == 400


def test_a_program_is_found_in_the_first_directory_that_has_it(tmp_path: Path) -> None:
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    (tmp_path / "first" / "alloc").write_text("not executable")
    wanted = write_allocator(tmp_path / "second", "", name="alloc")
    write_allocator(tmp_path, "", name="alloc")

    assert find_program("alloc", [str(tmp_path / "missing"), str(tmp_path / "first"), str(tmp_path / "second"),
                                  str(tmp_path)]) == wanted


def test_a_missing_program_is_a_failure_naming_where_it_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(AllocatorFailed, match=f"no executable iallocator 'hail' in {tmp_path}") as caught:
        find_program("hail", [str(tmp_path)])

    assert caught.value.status == 409


def test_the_default_search_path_ends_with_the_examples_of_the_source_tree(tmp_path: Path) -> None:
    path = default_search_path(str(tmp_path))

    assert path == ("/usr/lib/ganeti/iallocators", str(tmp_path / "iallocators"), str(SOURCE_DIRECTORY))
    assert find_program("most-free-memory", path) == SOURCE_DIRECTORY / "most-free-memory"


def test_the_program_reads_the_message_from_the_file_it_is_given(tmp_path: Path) -> None:
    program = write_allocator(tmp_path, "print(json.dumps({'argv': sys.argv[1:-1], 'got': message}))")
    sent = build_message(SNAPSHOT, allocate())

    output = json.loads(run_program(program, sent, options=["--static-kvm-node-memory=0"]))

    assert output == {"argv": ["--static-kvm-node-memory=0"], "got": sent}


def test_an_option_that_is_not_a_long_option_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadRequest, match="--key=value"):
        run_program(write_allocator(tmp_path, ""), {}, options=["-x"])


def test_a_non_zero_exit_is_a_failure_quoting_the_status_and_standard_error(tmp_path: Path) -> None:
    program = write_allocator(tmp_path, "print('ignored'); sys.exit('cannot parse the cluster')", name="broken")

    with pytest.raises(AllocatorFailed, match="'broken' exited with status 1: cannot parse the cluster"):
        run_program(program, build_message(SNAPSHOT, allocate()))


def test_a_non_zero_exit_without_standard_error_quotes_standard_output(tmp_path: Path) -> None:
    program = write_allocator(tmp_path, "print('out of ideas'); sys.exit(3)", name="broken")

    with pytest.raises(AllocatorFailed, match="exited with status 3: out of ideas"):
        run_program(program, {})


def test_a_long_standard_error_is_quoted_by_its_end(tmp_path: Path) -> None:
    program = write_allocator(tmp_path, "sys.stderr.write('x' * 5000 + ' the real error'); sys.exit(2)")

    with pytest.raises(AllocatorFailed) as caught:
        run_program(program, {})

    assert caught.value.message.endswith("the real error")
    assert len(caught.value.message) < 700


def test_a_program_that_does_not_answer_in_time_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    # The child keeps the output pipe open; only killing the whole session ends the wait.
    marker = tmp_path / "child.pid"
    program = write_allocator(tmp_path, "import subprocess\n"
                              f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                              f"open({str(marker)!r}, 'w').write(str(child.pid))\n"
                              "time.sleep(60)", name="slow")
    started = time.monotonic()

    with pytest.raises(AllocatorFailed, match="'slow' did not answer within 1 s"):
        run_program(program, {}, timeout=1)

    assert time.monotonic() - started < 10
    child = int(marker.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


def test_a_program_that_cannot_be_started_is_a_failure(tmp_path: Path) -> None:
    program = tmp_path / "no-interpreter"
    program.write_text("#!/nonexistent/interpreter\n")
    program.chmod(0o755)

    with pytest.raises(AllocatorFailed, match="'no-interpreter' could not be started"):
        run_program(program, {})


# Choosing


def test_choose_returns_the_node_the_program_names(tmp_path: Path) -> None:
    # Picks the largest node it is allowed to: the answer depends on what the message says.
    write_allocator(tmp_path, "nodes = {n: d for n, d in message['nodes'].items() if not d['offline'] and "
                    "not d['drained']}\nbest = max(nodes, key=lambda n: nodes[n]['free_memory'])\n"
                    "print(json.dumps({'success': True, 'info': 'largest', 'result': [best]}))")

    decision = choose_with_iallocator(SNAPSHOT, request(), "stand-in", search_path=[str(tmp_path)])

    assert (decision.node, decision.message) == ("host-2", "largest")


def test_choose_reports_a_refusal_as_a_decision_without_a_node(tmp_path: Path) -> None:
    write_allocator(tmp_path, "print(json.dumps({'success': False, 'info': 'FailMem: 2', 'result': []}))")

    decision = choose_with_iallocator(SNAPSHOT, request(), "stand-in", search_path=[str(tmp_path)])

    assert not decision.placed
    assert decision.message == "iallocator 'stand-in' found no node: FailMem: 2"


def test_a_refusal_says_why_the_barred_nodes_were_not_offered(tmp_path: Path) -> None:
    write_allocator(tmp_path, "print(json.dumps({'success': False, 'info': 'no', 'result': []}))")
    evacuation = request(name="vm-1", reason=EVACUATION, avoid=frozenset({"host-1"}))

    decision = choose_with_iallocator(SNAPSHOT, evacuation, "stand-in", search_path=[str(tmp_path)])

    assert [(r.node, r.reason) for r in decision.rejections] == [
        ("host-1", "the instance is leaving this node"), ("host-3", "the node is in maintenance"),
        ("host-4", "the node is down")]


def test_choose_refuses_an_answer_that_puts_an_evacuated_instance_back(tmp_path: Path) -> None:
    write_allocator(tmp_path, "print(json.dumps({'success': True, 'info': 'same again', 'result': ['host-1']}))")
    evacuation = request(name="vm-1", reason=EVACUATION, avoid=frozenset({"host-1"}))

    with pytest.raises(AllocatorFailed, match="'host-1', which is drained.*same again"):
        choose_with_iallocator(SNAPSHOT, evacuation, "stand-in", search_path=[str(tmp_path)])


def test_choose_refuses_a_program_name_with_a_slash(tmp_path: Path) -> None:
    with pytest.raises(BadRequest):
        choose_with_iallocator(SNAPSHOT, request(), "../stand-in", search_path=[str(tmp_path)])


# The example allocator in etc/iallocators


def test_the_example_puts_an_instance_on_the_node_with_most_free_memory_that_takes_work() -> None:
    snapshot = Snapshot((node("small", memory=8192), node("large", memory=65536),
                         node("larger-but-drained", memory=131072, status=MAINTENANCE),
                         node("largest-but-down", memory=262144, status=DOWN)))

    decision = choose_with_iallocator(snapshot, request(), "most-free-memory", search_path=[str(SOURCE_DIRECTORY)])

    assert decision.node == "large"


def test_the_example_skips_nodes_without_room_for_the_instance() -> None:
    snapshot = Snapshot((node("roomy", memory=65536, disk=10), node("enough", memory=16384, disk=500)))

    decision = choose_with_iallocator(snapshot, request(disk=100), "most-free-memory",
                                      search_path=[str(SOURCE_DIRECTORY)])

    assert decision.node == "enough"


def test_the_example_refuses_when_no_node_has_room() -> None:
    decision = choose_with_iallocator(SNAPSHOT, request(memory=10**6), "most-free-memory",
                                      search_path=[str(SOURCE_DIRECTORY)])

    assert not decision.placed and "no node has room" in decision.message


def test_the_example_answers_a_multi_allocate_taking_room_as_it_goes() -> None:
    snapshot = Snapshot((node("a", memory=10000), node("b", memory=9000)))
    message = Message(snapshot, MultiAllocate(tuple(
        Allocate(name=f"vm-{i}", memory=4000, vcpus=1, disks=(), disk_space_total=0) for i in range(5))))
    program = find_program("most-free-memory", [str(SOURCE_DIRECTORY)])

    checked = parse_answer(run_program(program, message.to_json()), message, program="most-free-memory")

    assert [(move.instance, move.nodes) for move in checked.moves] == [
        ("vm-0", ("a",)), ("vm-1", ("b",)), ("vm-2", ("a",)), ("vm-3", ("b",))]
    assert checked.failed == (("vm-4", "no node has room"),)


def test_the_example_is_executable() -> None:
    assert os.access(SOURCE_DIRECTORY / "most-free-memory", os.X_OK)
