"""Our reader on the IAllocator input messages of Ganeti's own tests (shared/reference/ganeti,
beside the repository): it reads every well-formed one and refuses the malformed one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from blazar_lite.allocators.iallocator import read_message
from blazar_lite.exceptions import BadRequest

REFERENCE = Path(__file__).resolve().parents[3] / ".." / "shared" / "reference" / "ganeti"
FILES = sorted(REFERENCE.glob("*.json"))
# Messages our reader refuses, with why: a relocation whose name is a number and whose node
# count and disk size are words (Ganeti's hail refuses it too).
MALFORMED = {"hail-invalid-reloc.json": r"request\.required_nodes must be an integer, not 'aaa'"}


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def test_the_ganeti_reference_messages_are_there() -> None:
    if not FILES:
        reason = f"no Ganeti reference messages in {REFERENCE.resolve()}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    names = {path.name for path in FILES}
    assert set(MALFORMED) | {"hail-alloc-invalid-network.json", "hail-alloc-invalid-twodisks.json"} <= names


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_our_reader_reads_every_well_formed_ganeti_message(path: Path) -> None:
    raw = load(path)
    if path.name in MALFORMED:
        with pytest.raises(BadRequest, match=MALFORMED[path.name]):
            read_message(raw)
        return

    message = read_message(raw)

    assert message.request.type == raw["request"]["type"]
    sent = message.request.to_json()
    for key, value in raw["request"].items():
        if key == "instances" and isinstance(value[0], dict):
            assert [item["name"] for item in sent[key]] == [item["name"] for item in value]
        elif key == "disks":
            assert [disk["size"] for disk in sent[key]] == [disk["size"] for disk in value]
        else:
            assert sent[key] == value, key
    assert [node.name for node in message.snapshot.nodes] == list(raw["nodes"])
    assert message.instances() == {name: tuple(instance["nodes"]) for name, instance in raw["instances"].items()}
    for node in message.snapshot.nodes:
        figures = raw["nodes"][node.name]
        assert node.capacity["MEMORY_MB"] == figures["total_memory"]
        assert node.free("MEMORY_MB") == figures["free_memory"]
        assert node.capacity["DISK_GB"] == figures["total_disk"] // 1024
        assert node.capacity["VCPU"] == figures["total_cpus"]


@pytest.mark.parametrize("path", [path for path in FILES if path.name not in MALFORMED],
                         ids=[path.name for path in FILES if path.name not in MALFORMED])
def test_what_we_write_for_a_ganeti_message_reads_back_the_same(path: Path) -> None:
    message = read_message(load(path))

    assert read_message(json.loads(json.dumps(message.to_json()))) == message


def group_allows(raw: dict[str, Any], group: dict[str, Any]) -> bool:
    """Whether the request fits a group's instance policy (disk template and sizes) and networks."""
    request, policy = raw["request"], group["ipolicy"]
    networks = {nic["network"] for nic in request["nics"] if nic.get("network")}
    sizes_fit = all(any(limits["min"]["disk-size"] <= disk["size"] <= limits["max"]["disk-size"]
                        for limits in policy["minmax"]) for disk in request["disks"])
    return (request["disk_template"] in policy["disk-templates"] and sizes_fit
            and networks <= set(group["networks"]))


@pytest.mark.parametrize("name", ["hail-alloc-invalid-network.json", "hail-alloc-invalid-twodisks.json"])
def test_the_invalid_allocations_are_well_formed_but_fit_no_group_of_their_cluster(name: str) -> None:
    # Why we read them: their fault is the cluster's policy (a disk below the minimum size, a
    # network no group that allows the template is connected to), which the allocator judges.
    if not (REFERENCE / name).exists():
        pytest.skip(f"{name} is not in {REFERENCE}")
    raw = load(REFERENCE / name)

    assert read_message(raw).request.name == "instance1"
    assert not any(group_allows(raw, group) for group in raw["nodegroups"].values())
    # The valid twin of the two-disk file fits: the check above is not one that always refuses.
    assert any(group_allows(load(REFERENCE / "hail-alloc-twodisks.json"), group)
               for group in load(REFERENCE / "hail-alloc-twodisks.json")["nodegroups"].values())
