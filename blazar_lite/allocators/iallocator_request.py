"""The requests of Ganeti's IAllocator protocol (version 2) as values, to and from their JSON form.

Sizes are Ganeti's: memory and disks in MiB. Reading checks the shape of every field it keeps and
refuses a malformed request with a `BadRequest` that names the field, so an allocator is never run
on a message that Ganeti itself would not have sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from blazar_lite.exceptions import BadRequest

ALLOCATE = "allocate"
RELOCATE = "relocate"
MULTI_ALLOCATE = "multi-allocate"
NODE_EVACUATE = "node-evacuate"
CHANGE_GROUP = "change-group"
ALLOCATE_SECONDARY = "allocate-secondary"

# What node-evacuate moves: the instances' primary nodes, their secondaries, or both.
PRIMARY_ONLY, SECONDARY_ONLY, ALL = "primary-only", "secondary-only", "all"
EVAC_MODES = (PRIMARY_ONLY, SECONDARY_ONLY, ALL)

_REQUIRED = object()
_KINDS: dict[type, str] = {str: "a string", int: "an integer", bool: "true or false", list: "a list",
                           dict: "an object"}


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def field(obj: Mapping[str, Any], key: str, kind: type, where: str, default: Any = _REQUIRED) -> Any:
    """`obj[key]` checked to be of `kind` (an int is never a bool); `default` when absent, if given."""
    if key not in obj:
        if default is _REQUIRED:
            raise BadRequest(f"{where}.{key} is missing")
        return default
    value = obj[key]
    # JSON true/false arrive as bool, which Python also counts as an int.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadRequest(f"{where}.{key} must be {_KINDS[kind]}, not {_shown(value)}")
    return value


def count(obj: Mapping[str, Any], key: str, where: str, default: Any = _REQUIRED) -> Any:
    """A non-negative integer field (sizes, counts)."""
    value = field(obj, key, int, where, default)
    if value is not None and value < 0:
        raise BadRequest(f"{where}.{key} must not be negative, not {value}")
    return value


def names(obj: Mapping[str, Any], key: str, where: str, default: Any = _REQUIRED) -> Any:
    """A list of strings (node, instance or group names), as a tuple."""
    if key not in obj and default is not _REQUIRED:
        return default
    value = field(obj, key, list, where)
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise BadRequest(f"{where}.{key}[{index}] must be a string, not {_shown(item)}")
    return tuple(value)


def disk_sizes(obj: Mapping[str, Any], where: str) -> tuple[int, ...]:
    """The sizes (MiB) of a `disks` list; modes and spindles are not kept (ours are all read-write)."""
    disks = field(obj, "disks", list, where, [])
    sizes = []
    for index, disk in enumerate(disks):
        if not isinstance(disk, dict):
            raise BadRequest(f"{where}.disks[{index}] must be an object, not {_shown(disk)}")
        sizes.append(count(disk, "size", f"{where}.disks[{index}]"))
    return tuple(sizes)


def disks_json(sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    return [{"size": size, "mode": "rw", "spindles": 1} for size in sizes]


@dataclass(frozen=True)
class Allocate:
    """Place a new instance on `required_nodes` nodes (primary first)."""

    name: str
    memory: int
    vcpus: int
    disks: tuple[int, ...]
    disk_space_total: int
    disk_template: str = "plain"
    required_nodes: int = 1
    os: str = "blazar-lite"
    hypervisor: str = "kvm"
    tags: tuple[str, ...] = ()
    spindle_use: int = 1
    # Ganeti's NIC definitions, passed through as they were read; blazar-lite sends none.
    nics: tuple[Mapping[str, Any], ...] = ()
    # Ganeti's `restrict-to-nodes`: the answer must use only these nodes.
    restrict_to_nodes: tuple[str, ...] | None = None
    type = ALLOCATE

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name, "required_nodes": self.required_nodes,
            "disk_space_total": self.disk_space_total, "disks": disks_json(self.disks),
            "nics": [dict(nic) for nic in self.nics], "vcpus": self.vcpus, "memory": self.memory,
            "disk_template": self.disk_template, "os": self.os, "tags": list(self.tags),
            "hypervisor": self.hypervisor, "spindle_use": self.spindle_use,
        }
        if self.restrict_to_nodes is not None:
            out["restrict-to-nodes"] = list(self.restrict_to_nodes)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **self.fields()}

    @classmethod
    def read(cls, obj: Mapping[str, Any], where: str) -> Allocate:
        disks = disk_sizes(obj, where)
        nics = field(obj, "nics", list, where, [])
        for index, nic in enumerate(nics):
            if not isinstance(nic, dict):
                raise BadRequest(f"{where}.nics[{index}] must be an object, not {_shown(nic)}")
        required = count(obj, "required_nodes", where)
        if required < 1:
            raise BadRequest(f"{where}.required_nodes must be at least 1, not {required}")
        return cls(
            name=field(obj, "name", str, where), memory=count(obj, "memory", where),
            vcpus=count(obj, "vcpus", where), disks=disks,
            disk_space_total=count(obj, "disk_space_total", where, sum(disks)),
            disk_template=field(obj, "disk_template", str, where),
            required_nodes=required, os=field(obj, "os", str, where, ""),
            hypervisor=field(obj, "hypervisor", str, where, ""), tags=names(obj, "tags", where, ()),
            spindle_use=count(obj, "spindle_use", where, 1), nics=tuple(nics),
            restrict_to_nodes=names(obj, "restrict-to-nodes", where, None),
        )


@dataclass(frozen=True)
class Relocate:
    """Move an existing instance off the nodes in `relocate_from`."""

    name: str
    disk_space_total: int
    relocate_from: tuple[str, ...]
    required_nodes: int = 1
    type = RELOCATE

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "required_nodes": self.required_nodes,
                "disk_space_total": self.disk_space_total, "relocate_from": list(self.relocate_from)}

    @classmethod
    def read(cls, obj: Mapping[str, Any], where: str) -> Relocate:
        required = count(obj, "required_nodes", where)
        if required < 1:
            raise BadRequest(f"{where}.required_nodes must be at least 1, not {required}")
        return cls(name=field(obj, "name", str, where), required_nodes=required,
                   disk_space_total=count(obj, "disk_space_total", where),
                   relocate_from=names(obj, "relocate_from", where))


@dataclass(frozen=True)
class MultiAllocate:
    """Place several new instances at once; the allocator may place some and fail others."""

    instances: tuple[Allocate, ...]
    type = MULTI_ALLOCATE

    def to_json(self) -> dict[str, Any]:
        # Ganeti's items are allocate requests without their own `type`.
        return {"type": self.type, "instances": [allocate.fields() for allocate in self.instances]}

    @classmethod
    def read(cls, obj: Mapping[str, Any], where: str) -> MultiAllocate:
        items = field(obj, "instances", list, where)
        instances = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise BadRequest(f"{where}.instances[{index}] must be an object, not {_shown(item)}")
            instances.append(Allocate.read(item, f"{where}.instances[{index}]"))
        return cls(tuple(instances))


@dataclass(frozen=True)
class NodeEvacuate:
    """Move the named instances off their primary nodes, their secondaries, or both (`evac_mode`)."""

    instances: tuple[str, ...]
    evac_mode: str = PRIMARY_ONLY
    type = NODE_EVACUATE

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "instances": list(self.instances), "evac_mode": self.evac_mode}

    @classmethod
    def read(cls, obj: Mapping[str, Any], where: str) -> NodeEvacuate:
        mode = field(obj, "evac_mode", str, where)
        if mode not in EVAC_MODES:
            raise BadRequest(f"{where}.evac_mode must be one of {', '.join(EVAC_MODES)}, not {_shown(mode)}")
        return cls(instances=names(obj, "instances", where), evac_mode=mode)


@dataclass(frozen=True)
class ChangeGroup:
    """Move the named instances to another node group (any of `target_groups`, or any other)."""

    instances: tuple[str, ...]
    target_groups: tuple[str, ...] = ()
    type = CHANGE_GROUP

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "instances": list(self.instances), "target_groups": list(self.target_groups)}

    @classmethod
    def read(cls, obj: Mapping[str, Any], where: str) -> ChangeGroup:
        return cls(instances=names(obj, "instances", where), target_groups=names(obj, "target_groups", where))


@dataclass(frozen=True)
class AllocateSecondary:
    """Choose a secondary node for an existing instance (Ganeti's conversion to DRBD)."""

    name: str
    type = ALLOCATE_SECONDARY

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name}

    @classmethod
    def read(cls, obj: Mapping[str, Any], where: str) -> AllocateSecondary:
        return cls(name=field(obj, "name", str, where))


Request = Allocate | Relocate | MultiAllocate | NodeEvacuate | ChangeGroup | AllocateSecondary

_BY_TYPE: dict[str, Any] = {kind.type: kind for kind in
                            (Allocate, Relocate, MultiAllocate, NodeEvacuate, ChangeGroup, AllocateSecondary)}


def read_request(obj: Any) -> Request:
    """The request of an input message; a `BadRequest` naming the field when it is malformed."""
    if not isinstance(obj, dict):
        raise BadRequest(f"request must be an object, not {_shown(obj)}")
    kind = field(obj, "type", str, "request")
    if kind not in _BY_TYPE:
        raise BadRequest(f"request.type must be one of {', '.join(_BY_TYPE)}, not {_shown(kind)}")
    return _BY_TYPE[kind].read(obj, "request")
