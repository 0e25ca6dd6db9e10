"""The real hail (Ganeti's reference IAllocator, Debian package ganeti-htools) on Ganeti's own
messages and on ours: our answer checks accept what it answers, and it can read what we write.

Without hail these tests fail under CI=true (where .ci/run installs it) and are skipped elsewhere.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from blazar_lite.allocators.iallocator import (
    Allocate,
    Message,
    MultiAllocate,
    NodeEvacuate,
    choose_with_iallocator,
    parse_answer,
    read_message,
    run_program,
)
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

pytestmark = pytest.mark.integration

HAIL = Path("/usr/lib/ganeti/iallocators/hail")
REFERENCE = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "ganeti"
FILES = sorted(REFERENCE.glob("*.json"))
MALFORMED = "hail-invalid-reloc.json"
# Unless told otherwise, hail keeps 4096 MB of every KVM node for the node itself instead of
# believing the free memory it is sent.
AS_SENT = ("--static-kvm-node-memory=0",)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(reason: str) -> None:
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def hail() -> Path:
    if not (HAIL.is_file() and os.access(HAIL, os.X_OK)):
        missing(f"{HAIL} is not installed; install it with: apt-get install ganeti-htools")
    return HAIL


def instance(name: str, memory: int = 1024) -> InstanceOnNode:
    return InstanceOnNode(uuid=f"uuid-{name}", name=name, project_id="project-a",
                          resources={"VCPU": 1, "MEMORY_MB": memory, "DISK_GB": 10})


def node(name: str, memory: int, status: str = UP, instances: tuple[InstanceOnNode, ...] = ()) -> Node:
    used = {key: sum(i.resources[key] for i in instances) for key in ("VCPU", "MEMORY_MB", "DISK_GB")}
    return Node(name=name, provider_uuid=f"rp-{name}", status=status, instances=instances, used=used,
                capacity={"VCPU": 16, "MEMORY_MB": memory, "DISK_GB": 500})


def request(memory: int, **kwargs: object) -> PlacementRequest:
    return PlacementRequest(name="vm-new", project_id="project-a",
                            resources={"VCPU": 2, "MEMORY_MB": memory, "DISK_GB": 20}, **kwargs)  # type: ignore[arg-type]


def choose(hail: Path, snapshot: Snapshot, placement: PlacementRequest, options: tuple[str, ...] = AS_SENT):
    return choose_with_iallocator(snapshot, placement, hail.name, search_path=[str(hail.parent)], options=options)


def test_the_ganeti_reference_messages_are_there() -> None:
    if not FILES:
        missing(f"no Ganeti reference messages in {REFERENCE.resolve()}")
    assert MALFORMED in {path.name for path in FILES}


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_our_checks_accept_what_hail_answers_for_every_ganeti_message(hail: Path, path: Path) -> None:
    raw = json.loads(path.read_text())
    if path.name == MALFORMED:
        with pytest.raises(BadRequest):
            read_message(raw)
        with pytest.raises(AllocatorFailed, match=r"'hail' exited with status \d+: .*invalid request"):
            run_program(hail, raw)
        return

    output = run_program(hail, raw)
    said = json.loads(output)
    answer = parse_answer(output, raw, program="hail")

    assert (answer.success, answer.info) == (said["success"], said["info"])
    if "-invalid-" in path.name:
        assert not answer.success
    if answer.success and isinstance(said["result"], list) and all(isinstance(n, str) for n in said["result"]):
        assert answer.nodes == tuple(said["result"])
    elif answer.success:
        assert answer.nodes or answer.moves or answer.failed


@pytest.mark.parametrize("path", [p for p in FILES if p.name != MALFORMED],
                         ids=[p.name for p in FILES if p.name != MALFORMED])
def test_hail_reads_what_we_write_for_every_ganeti_message(hail: Path, path: Path) -> None:
    message = read_message(json.loads(path.read_text()))

    output = run_program(hail, message.to_json(), options=AS_SENT)

    assert parse_answer(output, message, program="hail").info == json.loads(output)["info"]


def test_hail_places_an_instance_of_our_snapshot_on_the_only_node_with_room(hail: Path) -> None:
    snapshot = Snapshot((node("small", 4096, instances=(instance("vm-1", 2048),)), node("large", 65536),
                         node("drained", 262144, MAINTENANCE), node("down", 262144, DOWN)))

    decision = choose(hail, snapshot, request(memory=3000))

    assert decision.node == "large"
    assert "Request successful" in decision.message


def test_hail_moves_an_evacuated_instance_off_its_node(hail: Path) -> None:
    snapshot = Snapshot((node("host-1", 65536, instances=(instance("vm-1"),)), node("host-2", 32768),
                         node("host-3", 32768)))

    decision = choose(hail, snapshot, request(memory=1024, reason=EVACUATION, avoid=frozenset({"host-1"})))

    assert decision.node in {"host-2", "host-3"}


def test_a_refusal_by_hail_is_a_decision_without_a_node_carrying_its_info(hail: Path) -> None:
    decision = choose(hail, Snapshot((node("host-1", 8192), node("host-2", 8192))), request(memory=100000))

    assert not decision.placed
    assert "FailMem" in decision.message


def test_hail_believes_the_free_memory_we_send_only_when_told(hail: Path) -> None:
    snapshot = Snapshot((node("host-1", 16384), node("host-2", 65536, MAINTENANCE)))

    assert not choose(hail, snapshot, request(memory=16000), options=()).placed
    assert choose(hail, snapshot, request(memory=16000)).node == "host-1"


def test_hail_answers_a_multi_allocate_of_our_snapshot(hail: Path) -> None:
    snapshot = Snapshot((node("host-1", 32768), node("host-2", 32768), node("host-3", 262144, MAINTENANCE)))
    message = Message(snapshot, MultiAllocate(tuple(
        Allocate(name=f"vm-{i}", memory=2048, vcpus=1, disks=(10240,), disk_space_total=10240) for i in range(3))))

    answer = parse_answer(run_program(hail, message.to_json(), options=AS_SENT), message, program="hail")

    assert answer.success
    assert sorted(move.instance for move in answer.moves) == ["vm-0", "vm-1", "vm-2"]
    assert all(move.nodes[0] in {"host-1", "host-2"} for move in answer.moves)


def test_hail_answers_a_node_evacuate_of_our_snapshot_with_reasons(hail: Path) -> None:
    snapshot = Snapshot((node("host-1", 32768, MAINTENANCE, (instance("vm-1"),)), node("host-2", 32768)))
    message = Message(snapshot, NodeEvacuate(("vm-1",)))

    answer = parse_answer(run_program(hail, message.to_json(), options=AS_SENT), message, program="hail")

    # hail moves only mirrored or shared-storage instances; ours are local ("plain").
    assert answer.success and not answer.moves
    assert [name for name, _ in answer.failed] == ["vm-1"]
    assert "plain" in answer.failed[0][1]


def test_hail_keeps_room_to_restart_a_hosts_instances_elsewhere_unless_told_not_to(hail: Path) -> None:
    snapshot = Snapshot((node("host-1", 16384), node("host-2", 32768)))
    # 42000 MB of 49152: it all fits, but not once either host is gone.
    message = Message(snapshot, MultiAllocate(tuple(
        Allocate(name=f"vm-{i}", memory=6000, vcpus=1, disks=(1024,), disk_space_total=1024) for i in range(7))))

    redundant = parse_answer(run_program(hail, message.to_json(), options=AS_SENT), message, program="hail")
    packed = parse_answer(run_program(hail, message.to_json(), options=(*AS_SENT, "--no-capacity-checks")),
                          message, program="hail")

    assert not redundant.success and "FailN1" in redundant.info
    assert packed.success and len(packed.moves) == 7
