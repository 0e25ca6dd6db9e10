"""What an allocator sees: plain, frozen values read in one transaction, and the decision it returns.

An allocator is a pure function `(Snapshot, PlacementRequest) -> Decision`. The instances service
builds the snapshot (hosts that may take the request, their capacity and usage now, the
instances on them) and writes the decision; nothing here touches the database.

Resource amounts are keyed by Placement class: VCPU, MEMORY_MB, DISK_GB (and any other class a
node has). `capacity` is what the node can give ((total - reserved) x allocation_ratio) and
`used` what its allocations take now, forthcoming instances included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

Amounts = Mapping[str, int]

# Operational states of a node: `up` takes work; `maintenance` is drained (keeps what it runs,
# takes nothing new); `down` is offline.
UP, DOWN, MAINTENANCE = "up", "down", "maintenance"

# Why a placement is asked for (the scriptlet and the IAllocator request see it).
NEW, EVACUATION, RELOCATION = "new", "evacuation", "relocation"


@dataclass(frozen=True)
class InstanceOnNode:
    """An instance (real or forthcoming) that holds resources on a node."""

    uuid: str
    name: str | None
    project_id: str
    resources: Amounts
    forthcoming: bool = False
    reservation_id: str | None = None


@dataclass(frozen=True)
class Node:
    """A compute node that could take the request: a host's root provider, or an on-demand
    compute node (a root provider that is not a registered host)."""

    name: str
    provider_uuid: str
    status: str = UP
    host_id: int | None = None
    capacity: Amounts = field(default_factory=dict)
    used: Amounts = field(default_factory=dict)
    # How many instances the node holds (the consumers with allocations on it, as Placement
    # counts them); `instances` lists them only when the allocator asked for them (an
    # IAllocator message or the scriptlet), since listing them costs a query.
    instance_count: int = 0
    instances: tuple[InstanceOnNode, ...] = ()
    # Aggregate uuids the node is in (the freepool, a reservation's, an operator's), its traits
    # and, for registered hosts, extra capabilities.
    aggregates: frozenset[str] = frozenset()
    traits: frozenset[str] = frozenset()
    capabilities: Mapping[str, str] = field(default_factory=dict)
    # Slots of the request's reservation on this node: (total, used); None outside a reservation.
    reservation_slots: tuple[int, int] | None = None

    @property
    def offline(self) -> bool:
        return self.status == DOWN

    @property
    def drained(self) -> bool:
        return self.status == MAINTENANCE

    def free(self, resource_class: str) -> int:
        return self.capacity.get(resource_class, 0) - self.used.get(resource_class, 0)


@dataclass(frozen=True)
class PlacementRequest:
    """One instance to place: `resources` per class (empty for a forthcoming instance that names
    none), within `reservation_id` when given. `affinity` is the reservation's: True puts all
    its instances on one node, False each on a distinct node, None anywhere. `avoid` names nodes
    the instance must leave (its current node, on evacuation or relocation)."""

    name: str | None
    project_id: str
    resources: Amounts
    reason: str = NEW
    reservation_id: str | None = None
    lease_id: str | None = None
    affinity: bool | None = None
    # Nodes the reservation's other instances are on (for affinity).
    siblings_on: frozenset[str] = frozenset()
    avoid: frozenset[str] = frozenset()
    forthcoming: bool = False
    flavor_id: str | None = None
    config: Mapping[str, str] = field(default_factory=dict)
    # The deployment and shape an instance is launched from, by name (a governor's scale-up).
    deployment: str | None = None
    shape: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """The nodes an allocator may choose from, as read for one request."""

    nodes: tuple[Node, ...]

    def node(self, name: str) -> Node | None:
        return next((node for node in self.nodes if node.name == name), None)


@dataclass(frozen=True)
class Rejection:
    """Why a node cannot take the request (shown to users and to the filter check)."""

    node: str
    reason: str


@dataclass(frozen=True)
class Decision:
    """The chosen node, or none with the reasons every candidate was turned down (or the
    allocator's own message)."""

    node: str | None
    message: str = ""
    rejections: tuple[Rejection, ...] = ()

    @property
    def placed(self) -> bool:
        return self.node is not None
