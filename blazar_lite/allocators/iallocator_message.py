"""Input messages of Ganeti's IAllocator protocol (version 2): built from a Snapshot, or read from
a message Ganeti wrote.

The mapping, both ways: a node's VCPU / MEMORY_MB / DISK_GB capacity is its `total_cpus` /
`total_memory` / `total_disk` (Ganeti counts disk in MiB, so DISK_GB x 1024), and what is free
is `free_memory` / `free_disk`. Ganeti has no "used CPUs": an allocator adds up the vcpus of the
instances it is shown, so VCPU use that no listed instance explains (capacity a reservation
holds, say) is sent as `reserved_cpus`. Capacity already has the allocation ratio applied, hence
`vcpu-ratio` 1.0. A node that is down is `offline`, one in maintenance is `drained`; allocators
must put nothing on either. Capabilities are node tags `key:value`, traits are tags as they are.
Every node is in one group, "default"; a message read from Ganeti keeps its groups.

What a Snapshot cannot hold is lost on reading (disk templates, NICs, instance policies, the
instances' own tags other than project and reservation) and is written back as blazar-lite's.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from blazar_lite.allocators.builtin import rejection_reason
from blazar_lite.allocators.iallocator_request import (
    Allocate,
    Request,
    count,
    disk_sizes,
    disks_json,
    names,
    read_request,
)
from blazar_lite.allocators.iallocator_request import field as read_field
from blazar_lite.allocators.snapshot import (
    DOWN,
    MAINTENANCE,
    UP,
    InstanceOnNode,
    Node,
    PlacementRequest,
    Snapshot,
)
from blazar_lite.exceptions import BadRequest

VCPU, MEMORY_MB, DISK_GB = "VCPU", "MEMORY_MB", "DISK_GB"
MIB_PER_GB = 1024
CLUSTER_NAME = "blazar-lite"
# Stable across runs, so an allocator that remembers groups sees the same one every time.
DEFAULT_GROUP = str(uuid.uuid5(uuid.NAMESPACE_URL, "blazar-lite:iallocator:nodegroup:default"))
# blazar-lite knows no node addresses (providers have none) and allocators place by name; an
# unroutable placeholder makes plain that nothing should connect to it.
PLACEHOLDER_IP = "0.0.0.0"
# What to call a new instance that has no name yet (a forthcoming one may have none).
UNNAMED = "new-instance"
_BIG = 2**31 - 1
_LIMITS = ("cpu-count", "disk-count", "disk-size", "memory-size", "nic-count", "spindle-use")


def permissive_ipolicy() -> dict[str, Any]:
    """Ganeti's instance policy bounds sizes and counts; blazar-lite's only bound is capacity,
    which the nodes carry, so this policy admits anything (a new copy each time: callers may
    change the message they are given). Spindles are not a blazar-lite resource."""
    return {
        "minmax": [{"min": dict.fromkeys(_LIMITS, 0), "max": dict.fromkeys(_LIMITS, _BIG)}],
        "std": {"cpu-count": 1, "disk-count": 1, "disk-size": 1024, "memory-size": 1024, "nic-count": 0,
                "spindle-use": 1},
        # Every template Ganeti knows, so a request read from Ganeti is not refused for its template.
        "disk-templates": ["plain", "drbd", "file", "sharedfile", "diskless", "blockdev", "rbd", "ext", "gluster"],
        "vcpu-ratio": 1.0,
        "spindle-ratio": float(_BIG),
    }


# Instance tags carrying what the snapshot knows of an instance (Ganeti has no projects).
PROJECT_TAG, RESERVATION_TAG = "project:", "reservation:"


@dataclass(frozen=True)
class Message:
    """An input message: the nodes and instances (as a Snapshot) and one request. `secondaries`
    holds the extra nodes of Ganeti instances that have them (DRBD), by instance name."""

    snapshot: Snapshot
    request: Request
    cluster_name: str = CLUSTER_NAME
    cluster_tags: tuple[str, ...] = ()
    groups: Mapping[str, str] = field(default_factory=lambda: {DEFAULT_GROUP: "default"})
    secondaries: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def instances(self) -> dict[str, tuple[str, ...]]:
        """Each instance's name in the message and its nodes, primary first."""
        return {key: (node.name, *self.secondaries.get(key, ())) for key, node, _ in instance_entries(self.snapshot)}

    def to_json(self) -> dict[str, Any]:
        """The message as the allocator reads it."""
        groups = dict(self.groups)
        nodes = {node.name: _node_json(node, group_of(node, groups)) for node in self.snapshot.nodes}
        if DEFAULT_GROUP in (node["group"] for node in nodes.values()):
            groups.setdefault(DEFAULT_GROUP, "default")
        return {
            "version": 2, "cluster_name": self.cluster_name, "cluster_tags": list(self.cluster_tags),
            "enabled_hypervisors": ["kvm"], "ipolicy": permissive_ipolicy(),
            "nodegroups": {uuid_: {"name": name, "alloc_policy": "preferred", "networks": [], "tags": [],
                                   "ipolicy": permissive_ipolicy()} for uuid_, name in groups.items()},
            "nodes": nodes,
            "instances": {key: _instance_json(instance, (node.name, *self.secondaries.get(key, ())))
                          for key, node, instance in instance_entries(self.snapshot)},
            "request": self.request.to_json(),
        }


def instance_entries(snapshot: Snapshot) -> Iterator[tuple[str, Node, InstanceOnNode]]:
    """Every instance with the name it has in a message: its own, else (no name, or a name an
    earlier instance took) its uuid, since Ganeti keys instances by a unique name."""
    taken: set[str] = set()
    for node in snapshot.nodes:
        for instance in node.instances:
            key = instance.name if instance.name and instance.name not in taken else instance.uuid
            taken.add(key)
            yield key, node, instance


def build_message(snapshot: Snapshot, request: Request) -> dict[str, Any]:
    """The JSON input message for `request` on `snapshot`."""
    return Message(snapshot, request).to_json()


def allocate_for(request: PlacementRequest) -> Allocate:
    """The allocate request for one instance of blazar-lite."""
    disk = request.resources.get(DISK_GB, 0) * MIB_PER_GB
    return Allocate(name=request.name or UNNAMED, memory=request.resources.get(MEMORY_MB, 0),
                    vcpus=request.resources.get(VCPU, 0), disks=(disk,) if disk else (), disk_space_total=disk,
                    tags=_tags(request.project_id, request.reservation_id))


def barred_nodes(snapshot: Snapshot, request: PlacementRequest) -> dict[str, str]:
    """The nodes that may not take the request whatever their room, with why: down, in
    maintenance, avoided, out of reservation slots, or against the reservation's affinity. Room
    itself is left to the allocator, which is sent the free figures."""
    rules_only = replace(request, resources={})
    reasons = {node.name: rejection_reason(node, rules_only) for node in snapshot.nodes}
    return {name: reason for name, reason in reasons.items() if reason is not None}


def message_for(snapshot: Snapshot, request: PlacementRequest) -> Message:
    """The message for placing one instance: an allocate in which every barred node (see
    `barred_nodes`) that is up is sent drained, the protocol's "put nothing new here", since
    an allocator knows nothing of reservations.

    Moving an instance is an allocate too, not a relocate: Ganeti relocates only mirrored or
    shared-storage instances (hail answers "Can't relocate non-mirrored instances" for ours), and
    hail checks a shared-storage relocation against memory alone, an allocation against CPU,
    memory and disk. The instance stays on its old node in the message, as it does until moved."""
    barred = barred_nodes(snapshot, request)
    nodes = tuple(replace(node, status=MAINTENANCE) if node.name in barred and node.status == UP else node
                  for node in snapshot.nodes)
    return Message(Snapshot(nodes), allocate_for(request))


def _tags(project_id: str, reservation_id: str | None) -> list[str]:
    tags = [PROJECT_TAG + project_id] if project_id else []
    return tags + ([RESERVATION_TAG + reservation_id] if reservation_id else [])


def group_of(node: Node, groups: Mapping[str, str]) -> str:
    """The uuid of the node's group: the first of its aggregates that is a group, else "default"."""
    return min(node.aggregates & groups.keys(), default=DEFAULT_GROUP)


def _node_json(node: Node, group: str) -> dict[str, Any]:
    instance_memory = sum(instance.resources.get(MEMORY_MB, 0) for instance in node.instances)
    instance_vcpus = sum(instance.resources.get(VCPU, 0) for instance in node.instances)
    tags = sorted(f"{key}:{value}" for key, value in node.capabilities.items()) + sorted(node.traits)
    return {
        "total_memory": node.capacity.get(MEMORY_MB, 0), "free_memory": max(0, node.free(MEMORY_MB)),
        "reserved_memory": 0, "i_pri_memory": instance_memory, "i_pri_up_memory": instance_memory,
        "total_disk": node.capacity.get(DISK_GB, 0) * MIB_PER_GB,
        "free_disk": max(0, node.free(DISK_GB)) * MIB_PER_GB,
        "total_cpus": node.capacity.get(VCPU, 0),
        "reserved_cpus": max(0, node.used.get(VCPU, 0) - instance_vcpus),
        # Spindles count only with exclusive storage, which is off: these are placeholders.
        "total_spindles": 1, "free_spindles": 1,
        "primary_ip": PLACEHOLDER_IP, "secondary_ip": PLACEHOLDER_IP, "tags": tags, "group": group,
        "offline": node.offline, "drained": node.drained,
        "master_candidate": True, "master_capable": True, "vm_capable": True,
        "ndparams": {"spindle_count": 1, "exclusive_storage": False, "oob_program": None},
    }


def _instance_json(instance: InstanceOnNode, nodes: tuple[str, ...]) -> dict[str, Any]:
    disk = instance.resources.get(DISK_GB, 0) * MIB_PER_GB
    return {
        "disks": disks_json((disk,) if disk else ()), "disk_space_total": disk, "nics": [],
        "vcpus": instance.resources.get(VCPU, 0), "memory": instance.resources.get(MEMORY_MB, 0),
        "disk_template": "plain", "nodes": list(nodes),
        "tags": _tags(instance.project_id, instance.reservation_id),
        "admin_state": "up", "admin_state_source": "admin", "os": "blazar-lite", "hypervisor": "kvm",
        "spindle_use": 1,
    }


def read_message(obj: Any) -> Message:
    """A Ganeti input message as a Message; a `BadRequest` naming the field when it is malformed
    (a node or instance of the wrong shape, an instance on an unknown node, a bad request)."""
    if not isinstance(obj, dict):
        raise BadRequest(f"an IAllocator message must be a JSON object, not {type(obj).__name__}")
    version = read_field(obj, "version", int, "message", 2)
    if version != 2:
        raise BadRequest(f"message.version must be 2 (the IAllocator protocol this reads), not {version}")
    request = read_request(read_field(obj, "request", dict, "message"))
    groups = {}
    for uuid_, group in read_field(obj, "nodegroups", dict, "message", {}).items():
        if not isinstance(group, dict):
            raise BadRequest(f"message.nodegroups.{uuid_} must be an object")
        groups[uuid_] = read_field(group, "name", str, f"message.nodegroups.{uuid_}")
    raw_nodes = read_field(obj, "nodes", dict, "message")
    raw_instances = read_field(obj, "instances", dict, "message")
    on_node: dict[str, list[InstanceOnNode]] = {name: [] for name in raw_nodes}
    secondaries = {}
    for name, raw in raw_instances.items():
        where = f"message.instances.{name}"
        if not isinstance(raw, dict):
            raise BadRequest(f"{where} must be an object")
        nodes = names(raw, "nodes", where)
        unknown = [node for node in nodes if node not in raw_nodes]
        if not nodes or unknown:
            raise BadRequest(f"{where}.nodes must name nodes of the message, not {list(nodes)}")
        on_node[nodes[0]].append(_read_instance(name, raw, where))
        if nodes[1:]:
            secondaries[name] = nodes[1:]
    snapshot = Snapshot(tuple(_read_node(name, raw, on_node[name], groups) for name, raw in raw_nodes.items()))
    return Message(snapshot, request, cluster_name=read_field(obj, "cluster_name", str, "message", CLUSTER_NAME),
                   cluster_tags=names(obj, "cluster_tags", "message", ()), groups=groups, secondaries=secondaries)


def _read_instance(name: str, raw: Mapping[str, Any], where: str) -> InstanceOnNode:
    disk_mib = count(raw, "disk_space_total", where, sum(disk_sizes(raw, where)))
    tags = names(raw, "tags", where, ())
    project = next((tag.removeprefix(PROJECT_TAG) for tag in tags if tag.startswith(PROJECT_TAG)), "")
    reservation = next((tag.removeprefix(RESERVATION_TAG) for tag in tags if tag.startswith(RESERVATION_TAG)), None)
    return InstanceOnNode(
        uuid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"ganeti:instance:{name}")), name=name, project_id=project,
        resources={VCPU: count(raw, "vcpus", where), MEMORY_MB: count(raw, "memory", where),
                   DISK_GB: math.ceil(disk_mib / MIB_PER_GB)},
        reservation_id=reservation)


def _read_node(name: str, raw: Any, instances: list[InstanceOnNode], groups: Mapping[str, str]) -> Node:
    where = f"message.nodes.{name}"
    if not isinstance(raw, dict):
        raise BadRequest(f"{where} must be an object")
    group = read_field(raw, "group", str, where)
    if group not in groups:
        raise BadRequest(f"{where}.group names no node group of the message: {group!r}")
    # Ganeti leaves out the run-time figures of offline and drained nodes: they count as zero.
    total_memory, total_disk = count(raw, "total_memory", where, 0), count(raw, "total_disk", where, 0)
    disk_gb = total_disk // MIB_PER_GB
    if read_field(raw, "offline", bool, where, False):
        status = DOWN
    elif read_field(raw, "drained", bool, where, False) or not read_field(raw, "vm_capable", bool, where, True):
        status = MAINTENANCE
    else:
        status = UP
    capabilities, traits = {}, set()
    for tag in names(raw, "tags", where, ()):
        key, colon, value = tag.partition(":")
        if colon:
            capabilities[key] = value
        else:
            traits.add(tag)
    return Node(
        name=name, provider_uuid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"ganeti:node:{name}")), status=status,
        capacity={VCPU: count(raw, "total_cpus", where, 0), MEMORY_MB: total_memory, DISK_GB: disk_gb},
        used={VCPU: count(raw, "reserved_cpus", where, 0) + sum(i.resources[VCPU] for i in instances),
              MEMORY_MB: max(0, total_memory - count(raw, "free_memory", where, 0)),
              DISK_GB: max(0, disk_gb - count(raw, "free_disk", where, 0) // MIB_PER_GB)},
        instance_count=len(instances), instances=tuple(instances), aggregates=frozenset({group}),
        traits=frozenset(traits), capabilities=capabilities)
