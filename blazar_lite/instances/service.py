"""Instances: create (placed by the allocator, or on an admin's target), list, show, delete; and
for forthcoming instances commit, modify and rename.

Placing an instance is: read a snapshot of the nodes it may land on, let the allocator decide,
write the allocation. The allocation write checks capacity itself, so when another request took
the room in between, the decision is made again on a fresh snapshot.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blazar_lite.allocators import builtin
from blazar_lite.allocators.snapshot import NEW, Decision, Node, PlacementRequest, Snapshot
from blazar_lite.auth.context import RequestContext
from blazar_lite.deployments.models import Deployment, Shape
from blazar_lite.exceptions import BadRequest, Conflict, Forbidden, NotEnoughResources, NotFound
from blazar_lite.flavors import service as flavors
from blazar_lite.instances import requests, snapshot, usage
from blazar_lite.instances.models import ACTIVE, FORTHCOMING, STOPPED, Instance
from blazar_lite.leases.dates import describe_date
from blazar_lite.leases.models import ACTIVE as LEASE_ACTIVE
from blazar_lite.leases.models import PENDING, PHYSICAL_HOST, STARTING, Lease, Reservation
from blazar_lite.placement.backend import EmbeddedPlacement, PlacementBackend
from blazar_lite.placement.models import Inventory, ResourceClass
from blazar_lite.scriptlet import runtime as scriptlets
from blazar_lite.scriptlet import world as scriptlet_world
from blazar_lite.scriptlet.program import Program

# Another request may take the room between the snapshot and the write; decide again this often.
PLACEMENT_ATTEMPTS = 3
# On demand, the default policy reads this many of the best-ranked nodes (see place_instance).
RANKED_CANDIDATES = 8
RESERVATION_SPEC_PREFIX = "resources:CUSTOM_RESERVATION_"


@dataclass(frozen=True)
class AllocatorConfig:
    """Which allocator places instances: a built-in policy or `iallocator:<program>`."""

    name: str = builtin.FEWEST_INSTANCES
    iallocator_search_path: tuple[str, ...] = ()
    iallocator_timeout: float = 30.0
    iallocator_options: tuple[str, ...] = ()
    # The placement scriptlet of the server config, asked first when set; when it sets no
    # target, the allocator above decides.
    scriptlet: Program | None = None
    scriptlet_timeout: float = scriptlets.DEFAULT_TIMEOUT


@dataclass(frozen=True)
class InstanceView:
    id: str
    name: str | None
    project_id: str
    user_id: str
    status: str
    forthcoming: bool
    flavor_id: str | None
    vcpus: int | None
    memory_mb: int | None
    disk_gb: int | None
    reservation_id: str | None
    lease_id: str | None
    host: str | None
    created_at: dt.datetime
    updated_at: dt.datetime | None


@dataclass(frozen=True)
class _Place:
    """Where an instance may go: its reservation (and that reservation's lease), if any."""

    reservation: Reservation | None = None
    lease: Lease | None = None

    @property
    def slot_class(self) -> str | None:
        if self.reservation is None or self.reservation.resource_type == PHYSICAL_HOST:
            return None
        return self.reservation.resource_class


# Sizes.

def _resources(vcpus: int | None, memory_mb: int | None, disk_gb: int | None) -> dict[str, int]:
    """Placement amounts for the sizes that are given and not zero."""
    named = {"VCPU": vcpus, "MEMORY_MB": memory_mb, "DISK_GB": disk_gb}
    return {rc: amount for rc, amount in named.items() if amount}


def _flavor_sizes(session: Session, context: RequestContext, flavor_id: str) -> flavors.FlavorView:
    reader = flavors.Reader(context.project_id, sees_all=context.is_admin)
    return flavors.get_flavor(session, flavor_id, reader)


def _reservation_in_flavor(view: flavors.FlavorView) -> str | None:
    """The class a reservation flavor consumes (`resources:CUSTOM_RESERVATION_<ID>=1`), if any."""
    for key in view.extra_specs:
        if key.startswith(RESERVATION_SPEC_PREFIX):
            return key.removeprefix("resources:")
    return None


def _resolve_sizes(session: Session, context: RequestContext, sizes: requests.Sizes,
                   base: Mapping[str, Any] | None = None) -> tuple[dict[str, int | None], str | None, str | None]:
    """(vcpus/memory_mb/disk_gb, flavor_id, reservation class of the flavor) for `sizes`, on top
    of `base` (the instance's current sizes, for commit and modify)."""
    base = base or {}
    values: dict[str, int | None] = {name: base.get(name) for name in requests.SIZE_FIELDS}
    flavor_id = None if sizes.given else base.get("flavor_id")
    slot_class = None
    if sizes.flavor_id is not None:
        flavor = _flavor_sizes(session, context, sizes.flavor_id)
        values = {"vcpus": flavor.vcpus, "memory_mb": flavor.ram, "disk_gb": flavor.disk}
        flavor_id, slot_class = flavor.id, _reservation_in_flavor(flavor)
    else:
        for name in requests.SIZE_FIELDS:
            given = getattr(sizes, name)
            if given is not None:
                values[name] = given
    return values, flavor_id, slot_class


def _check_complete(values: Mapping[str, int | None], what: str) -> None:
    missing = [name for name in ("vcpus", "memory_mb") if values.get(name) is None]
    if missing:
        raise BadRequest(f"{what} needs its size: give flavor_id, or vcpus and memory_mb (missing "
                         f"{', '.join(missing)}).")


# Reservations.

def _reservation_place(session: Session, context: RequestContext, reservation_id: str) -> _Place:
    """The reservation an instance is created in, if the caller may use it now; else the 4xx
    that says why."""
    row = session.get(Reservation, reservation_id)
    lease = session.get(Lease, row.lease_id) if row is not None else None
    if row is None or lease is None or (lease.project_id != context.project_id and not context.is_admin):
        raise NotFound(f"Reservation {reservation_id} not found in your project.")
    if lease.status in (PENDING, STARTING):
        raise Conflict(f"Reservation {reservation_id} has not started: its lease {lease.id} starts at "
                       f"{describe_date(lease.start_date)}. Create the instance once the lease is ACTIVE.")
    if lease.status != LEASE_ACTIVE:
        raise Conflict(f"Reservation {reservation_id} cannot take instances: its lease {lease.id} is "
                       f"{lease.status}.")
    return _Place(row, lease)


def _reservation_by_class(session: Session, resource_class: str) -> str | None:
    return session.scalar(select(Reservation.id).where(Reservation.resource_class == resource_class))


def reservation_slots(session: Session, reservation_id: str) -> tuple[int, int] | None:
    """(slots left, slots in all) of an active instance reservation, counted on its inventory;
    None for a host reservation, or one that holds no inventory (not started, or ended)."""
    resource_class = session.scalar(select(Reservation.resource_class).where(
        Reservation.id == reservation_id, Reservation.resource_type != PHYSICAL_HOST))
    if resource_class is None:
        return None
    found = session.execute(
        select(func.sum(Inventory.total - Inventory.reserved), func.sum(Inventory.used))
        .join(ResourceClass, ResourceClass.id == Inventory.resource_class_id)
        .where(ResourceClass.name == resource_class)).one()
    if found[0] is None:
        return None
    total, used = int(found[0]), int(found[1] or 0)
    return max(total - used, 0), total


def _check_fits_slot(place: _Place, values: Mapping[str, int | None]) -> None:
    reservation = place.reservation
    if reservation is None or reservation.resource_type == PHYSICAL_HOST:
        return
    slot = _slot_sizes(place)
    over = [f"{name} {values[name]} > {slot[name]}" for name in requests.SIZE_FIELDS
            if values.get(name) is not None and (values[name] or 0) > (slot[name] or 0)]
    if over:
        raise BadRequest(f"The instance is larger than a slot of reservation {reservation.id} ({', '.join(over)}); "
                         "ask for at most the slot's size, or leave the size out to take the slot's.")


def _slot_sizes(place: _Place) -> dict[str, int | None]:
    reservation = place.reservation
    assert reservation is not None
    return {"vcpus": reservation.vcpus, "memory_mb": reservation.memory_mb, "disk_gb": reservation.disk_gb}


# Placing.

def _decide(snap: Snapshot, request: PlacementRequest, allocator: AllocatorConfig) -> Decision:
    if allocator.name.startswith("iallocator:"):
        from blazar_lite.allocators import iallocator

        return iallocator.choose_with_iallocator(
            snap, request, allocator.name.removeprefix("iallocator:"),
            search_path=allocator.iallocator_search_path, timeout=allocator.iallocator_timeout,
            options=allocator.iallocator_options)
    return builtin.choose(snap, request, allocator.name)


def scriptlet_request(request: PlacementRequest) -> dict[str, Any]:
    """The `request` a scriptlet sees (LXD's fields where they mean something here)."""
    return {"name": request.name, "type": "forthcoming" if request.forthcoming else "instance",
            "project": request.project_id, "reason": request.reason, "flavor": request.flavor_id,
            "resources": dict(request.resources), "config": dict(request.config),
            "reservation_id": request.reservation_id, "lease_id": request.lease_id,
            "forthcoming": request.forthcoming, "deployment": request.deployment, "shape": request.shape}


def run_scriptlet(session: Session, placement: PlacementBackend, snap: Snapshot, request: PlacementRequest,
                  candidates: Sequence[Node], program: Program, timeout: float) -> scriptlets.Outcome:
    """Ask the scriptlet about `candidates`, the nodes of `snap` that passed the filters (it is
    not called when there are none)."""
    if not candidates:
        return scriptlets.Outcome()
    groups = scriptlet_world.group_names(session)
    members = {node.name: scriptlet_world.member_of(node, groups) for node in snap.nodes}
    world = scriptlet_world.DatabaseWorld(session, placement, snap, members)
    return scriptlets.decide(program, scriptlet_request(request), list(members.values()),
                             [node.name for node in candidates], world, instance_resources=request.resources,
                             timeout=timeout)


def _decide_with_scriptlet(session: Session, placement: PlacementBackend, snap: Snapshot,
                           request: PlacementRequest, allocator: AllocatorConfig) -> Decision:
    assert allocator.scriptlet is not None
    candidates, _ = builtin.filter_candidates(snap, request)
    outcome = run_scriptlet(session, placement, snap, request, candidates, allocator.scriptlet,
                            allocator.scriptlet_timeout)
    if outcome.target is not None:
        return Decision(outcome.target)
    return _decide(snap, request, allocator)


def _siblings(session: Session, reservation_id: str | None, exclude: str | None) -> frozenset[str]:
    if reservation_id is None:
        return frozenset()
    stmt = select(Instance.node).where(Instance.reservation_id == reservation_id, Instance.node.is_not(None))
    if exclude is not None:
        stmt = stmt.where(Instance.uuid != exclude)
    return frozenset(node for node in session.scalars(stmt) if node)


def _allocation(place: _Place, node_provider: str, slot_provider: str | None,
                resources: Mapping[str, int]) -> dict[str, dict[str, int]]:
    allocation: dict[str, dict[str, int]] = {}
    if resources:
        allocation[node_provider] = dict(resources)
    if place.slot_class and slot_provider:
        allocation[slot_provider] = {place.slot_class: 1}
    return allocation


def _all_rows(session: Session, placement: PlacementBackend, place: _Place,
              target: str | None) -> list[snapshot.NodeRow]:
    rows = snapshot.node_rows(session, placement, place.reservation)
    if target is None:
        return rows
    chosen = [row for row in rows if row.name == target]
    if not chosen:
        where = f"reservation {place.reservation.id}" if place.reservation else "on-demand capacity"
        raise Conflict(f"Node {target} cannot take the instance: it is not part of {where}.")
    return chosen


def _placement_request(session: Session, instance: Instance, place: _Place, resources: Mapping[str, int], *,
                       reason: str = NEW, avoid: frozenset[str] = frozenset(), deployment: str | None = None,
                       shape: str | None = None) -> PlacementRequest:
    """What an allocator is asked to place for `instance`, read afresh (its reservation's other
    instances may have moved since the last attempt)."""
    return PlacementRequest(
        name=instance.name, project_id=instance.project_id, resources=dict(resources), reason=reason,
        reservation_id=place.reservation.id if place.reservation else None,
        lease_id=place.lease.id if place.lease else None,
        affinity=place.reservation.affinity if place.reservation else None,
        siblings_on=_siblings(session, instance.reservation_id, instance.uuid),
        forthcoming=instance.forthcoming, flavor_id=instance.flavor_id, avoid=avoid,
        deployment=deployment, shape=shape)


def _launched_from(session: Session, shape_id: str | None) -> tuple[str | None, str | None]:
    """(deployment name, shape name) of the shape an instance is launched from, if any."""
    if shape_id is None:
        return None, None
    row = session.execute(select(Deployment.name, Shape.name).join(Shape, Shape.deployment_id == Deployment.id)
                          .where(Shape.id == shape_id)).first()
    return (row[0], row[1]) if row else (None, None)


def place_instance(session: Session, placement: PlacementBackend, instance: Instance, place: _Place,
                   resources: Mapping[str, int], allocator: AllocatorConfig, *, target: str | None = None,
                   reason: str = NEW, avoid: frozenset[str] = frozenset()) -> None:
    """Choose a node for `instance` and allocate `resources` (plus a slot of its reservation)
    there, setting its node; NotEnoughResources with every node's reason when none can.

    On demand with the default policy, only the few nodes that rank first by its key (fewest
    consumers, most free memory, name) among those with room are read: the first of them that
    passes the filters is the node the whole snapshot would give. Every node is read when none
    of them does, so that a refusal names every node's reason."""
    scripted = allocator.scriptlet is not None and target is None
    ranked = (place.reservation is None and target is None and bool(resources)
              and allocator.name == builtin.FEWEST_INSTANCES and not scripted)
    rows: list[snapshot.NodeRow] | None = None
    deployment, shape = _launched_from(session, instance.shape_id) if scripted else (None, None)
    for _ in range(PLACEMENT_ATTEMPTS):
        request = _placement_request(session, instance, place, resources, reason=reason, avoid=avoid,
                                     deployment=deployment, shape=shape)
        decision = None
        if ranked:
            best = snapshot.roomiest_on_demand_rows(session, placement, resources, RANKED_CANDIDATES + len(avoid))
            snap = snapshot.read_snapshot(session, placement, best)
            decision = builtin.choose(snap, request)
        if decision is None or decision.node is None:
            rows = rows if rows is not None else _all_rows(session, placement, place, target)
            snap = snapshot.read_snapshot(session, placement, rows, resource_class=place.slot_class,
                                          with_instances=allocator.name.startswith("iallocator:"),
                                          with_details=scripted)
            if target is not None:
                decision = builtin.choose(snap, request)
            elif scripted:
                decision = _decide_with_scriptlet(session, placement, snap, request, allocator)
            else:
                decision = _decide(snap, request, allocator)
        if decision.node is None:
            raise NotEnoughResources(decision.message)
        node = snap.node(decision.node)
        assert node is not None
        slot_provider = next((row.reservation_provider_uuid for row in rows or () if row.name == node.name), None)
        try:
            with session.begin_nested():
                placement.allocate(instance.uuid, _allocation(place, node.provider_uuid, slot_provider, resources),
                                   instance.project_id, instance.user_id, consumer_type="INSTANCE")
        except NotEnoughResources:
            continue  # another request took the room after the snapshot: decide again
        instance.node, instance.node_provider_uuid = node.name, node.provider_uuid
        return
    raise NotEnoughResources("The nodes kept filling up while this instance was being placed; retry the request.")


# Operations.

def _view(session: Session, instance: Instance) -> InstanceView:
    return _views(session, [instance])[0]


def _views(session: Session, instances: Sequence[Instance]) -> list[InstanceView]:
    reservation_ids = {i.reservation_id for i in instances if i.reservation_id}
    leases = dict(session.execute(select(Reservation.id, Reservation.lease_id)
                                  .where(Reservation.id.in_(reservation_ids))).all()) if reservation_ids else {}
    return [InstanceView(i.uuid, i.name, i.project_id, i.user_id, i.status, i.forthcoming, i.flavor_id, i.vcpus,
                         i.memory_mb, i.disk_gb, i.reservation_id, leases.get(i.reservation_id or ""), i.node,
                         i.created_at, i.updated_at) for i in instances]


def _new_instance(session: Session, context: RequestContext, body: object
                  ) -> tuple[Instance, _Place, dict[str, int], str | None]:
    """The instance a create body describes (not saved), where it may go, what it will hold and
    the admin's target, if any; every 4xx of a create that comes before placing it."""
    request = requests.read_create(body)
    if request.host is not None and not context.is_admin:
        raise Forbidden("Only admins may choose the host of an instance; leave host out.")
    values, flavor_id, flavor_class = _resolve_sizes(session, context, request.sizes)
    reservation_id = request.reservation_id
    if flavor_class is not None:
        from_flavor = _reservation_by_class(session, flavor_class)
        if reservation_id is not None and from_flavor != reservation_id:
            raise BadRequest(f"Flavor {flavor_id} is the flavor of reservation {from_flavor}, not of "
                             f"{reservation_id}; give one or the other.")
        reservation_id = from_flavor
        if reservation_id is None:
            raise NotFound(f"Flavor {flavor_id} consumes {flavor_class}, a reservation that no longer exists.")
    place = _reservation_place(session, context, reservation_id) if reservation_id else _Place()
    if place.reservation is not None and place.reservation.resource_type != PHYSICAL_HOST \
            and not request.sizes.given:
        values = _slot_sizes(place)  # an instance in a reservation takes the slot's size by default
    _check_fits_slot(place, values)
    if not request.forthcoming:
        _check_complete(values, "An instance")
    project_id = place.lease.project_id if place.lease is not None else context.project_id
    instance = Instance(uuid=str(uuidlib.uuid4()), name=request.name, project_id=project_id,
                        user_id=context.user_id, status=FORTHCOMING if request.forthcoming else ACTIVE,
                        forthcoming=request.forthcoming, flavor_id=flavor_id, vcpus=values["vcpus"],
                        memory_mb=values["memory_mb"], disk_gb=values["disk_gb"], reservation_id=reservation_id)
    _check_name_free(session, project_id, request.name)
    return instance, place, _resources(values["vcpus"], values["memory_mb"], values["disk_gb"]), request.host


def create_instance(session: Session, context: RequestContext, body: object, *,
                    allocator: AllocatorConfig | None = None,
                    placement: PlacementBackend | None = None, shape_id: str | None = None) -> InstanceView:
    """Create an instance for the caller's project (its reservation's project, for an admin),
    placed by the allocator or on the admin's `host`. A forthcoming instance may name nothing; the
    resources it names are allocated as if it were real. `shape_id`: the deployment shape it is
    launched from."""
    allocator = allocator or AllocatorConfig()
    placement = placement or EmbeddedPlacement(session)
    instance, place, resources, target = _new_instance(session, context, body)
    instance.shape_id = shape_id
    if resources or place.reservation is not None:
        place_instance(session, placement, instance, place, resources, allocator, target=target)
    _save(session, instance)
    usage.track(session, instance, new=True)
    return _view(session, instance)


@dataclass(frozen=True)
class PlacementTrial:
    """What placing an instance would do now, decided but not written."""

    candidates: list[str]
    rejections: list[tuple[str, str]]
    # The scriptlet's target, if it set one; `node` is where the instance would go (the target,
    # else the allocator's choice; None when nothing can take it, `message` says why).
    target: str | None
    node: str | None
    decided_by: str
    message: str
    log: list[tuple[str, str]]


def try_placement(session: Session, context: RequestContext, body: object, program: Program,
                  allocator: AllocatorConfig, placement: PlacementBackend | None = None) -> PlacementTrial:
    """Decide where the instance `body` describes would go with `program` as the scriptlet,
    against the live inventory, and write nothing (`blazar-lite scriptlet test`). A scriptlet
    that rejects the request raises its 400, as a real create would."""
    placement = placement or EmbeddedPlacement(session)
    instance, place, resources, _ = _new_instance(session, context, body)
    request = _placement_request(session, instance, place, resources)
    rows = snapshot.node_rows(session, placement, place.reservation)
    snap = snapshot.read_snapshot(session, placement, rows, resource_class=place.slot_class,
                                  with_instances=allocator.name.startswith("iallocator:"), with_details=True)
    candidates, rejections = builtin.filter_candidates(snap, request)
    outcome = run_scriptlet(session, placement, snap, request, candidates, program, allocator.scriptlet_timeout)
    if outcome.target is not None:
        node, decided_by, message = outcome.target, "scriptlet", ""
    else:
        decision = _decide(snap, request, allocator)
        node, decided_by, message = decision.node, f"allocator {allocator.name}", decision.message
    return PlacementTrial([c.name for c in candidates], [(r.node, r.reason) for r in rejections], outcome.target,
                          node, decided_by, message, outcome.log)


def _check_name_free(session: Session, project_id: str, name: str | None, except_uuid: str | None = None) -> None:
    if name is None:
        return
    holder = session.scalar(select(Instance.uuid).where(Instance.project_id == project_id, Instance.name == name))
    if holder is not None and holder != except_uuid:
        raise Conflict(f"An instance named {name} already exists in project {project_id} ({holder}); "
                       "choose another name.")


def _save(session: Session, instance: Instance) -> None:
    try:
        with session.begin_nested():
            session.add(instance)
            session.flush()
    except IntegrityError:
        # Only a concurrent create or rename to the same name in the same project gets here.
        raise Conflict(f"An instance named {instance.name} was created in project {instance.project_id} by "
                       "another request at the same time; choose another name.") from None


def _find(session: Session, context: RequestContext, ref: str, *, lock: bool = False) -> Instance:
    """The instance with this uuid or name that the caller may see; 404 otherwise."""
    stmt = select(Instance)
    if requests.is_uuid(ref):
        stmt = stmt.where(Instance.uuid == str(uuidlib.UUID(ref)))
    else:
        stmt = stmt.where(Instance.name == ref)
    if not context.is_admin:
        stmt = stmt.where(Instance.project_id == context.project_id)
    if lock:
        stmt = stmt.with_for_update()
    found = session.scalars(stmt.order_by(Instance.project_id)).all()
    if not found:
        raise NotFound(f"Instance {ref} not found.")
    if len(found) > 1:
        raise Conflict(f"{len(found)} instances are named {ref} (in projects "
                       f"{', '.join(i.project_id for i in found)}); give the instance's uuid.")
    return found[0]


def get_instance(session: Session, context: RequestContext, ref: str) -> InstanceView:
    return _view(session, _find(session, context, ref))


def list_instances(session: Session, project_id: str | None = None) -> list[InstanceView]:
    """Every instance (or one project's), oldest first."""
    stmt = select(Instance).order_by(Instance.created_at, Instance.uuid)
    if project_id is not None:
        stmt = stmt.where(Instance.project_id == project_id)
    return _views(session, session.scalars(stmt).all())


def delete_instance(session: Session, context: RequestContext, ref: str,
                    placement: PlacementBackend | None = None, *, force: bool = False) -> None:
    """Delete the instance and give back what it holds. An instance of a deployment shape that
    is at its scaling_minimum stays, unless `force` (an admin's)."""
    placement = placement or EmbeddedPlacement(session)
    instance = _find(session, context, ref, lock=True)
    if instance.shape_id is not None and not force:
        check_shape_may_shrink(session, instance.shape_id)
    placement.release(instance.uuid)
    usage.track(session, instance, gone=True)
    session.delete(instance)
    session.flush()


def check_shape_may_shrink(session: Session, shape_id: str) -> None:
    """409 when the deployment shape `shape_id` is at its scaling_minimum: none of its instances
    may go. The shape's row is locked, as a launch locks it, so no other launch or delete of the
    shape moves the count until this transaction ends."""
    found = session.execute(select(Shape, Deployment.name).join(Deployment, Deployment.id == Shape.deployment_id)
                            .where(Shape.id == shape_id).with_for_update(of=Shape)).first()
    if found is None:
        return
    shape, deployment = found
    current = session.scalar(select(func.count()).select_from(Instance).where(Instance.shape_id == shape_id)) or 0
    if current <= shape.scaling_minimum:
        raise Conflict(f"Shape {shape.name} of deployment {deployment} is at its scaling_minimum of "
                       f"{shape.scaling_minimum} instances; lower the minimum first to delete one.")


def resources_of(instance: Instance) -> dict[str, int]:
    """What the instance holds on its node, as Placement amounts."""
    return _resources(instance.vcpus, instance.memory_mb, instance.disk_gb)


def place_of(session: Session, instance: Instance) -> _Place:
    if instance.reservation_id is None:
        return _Place()
    reservation = session.get(Reservation, instance.reservation_id)
    lease = session.get(Lease, reservation.lease_id) if reservation else None
    return _Place(reservation, lease)


def _resize(session: Session, placement: PlacementBackend, instance: Instance, place: _Place,
            values: Mapping[str, int | None], allocator: AllocatorConfig) -> None:
    """Hold `values` for the instance: on its node when it has one (409 when that node lacks the
    room: a placed instance is not moved by a resize), else wherever the allocator puts it."""
    resources = _resources(values["vcpus"], values["memory_mb"], values["disk_gb"])
    if instance.node_provider_uuid is None:
        if resources or place.reservation is not None:
            place_instance(session, placement, instance, place, resources, allocator)
    else:
        slot_provider = None
        if place.slot_class:
            rows = {row.name: row for row in snapshot.node_rows(session, placement, place.reservation)}
            slot_provider = rows[instance.node].reservation_provider_uuid if instance.node in rows else None
        try:
            with session.begin_nested():
                placement.allocate(instance.uuid, _allocation(place, instance.node_provider_uuid, slot_provider,
                                                              resources),
                                   instance.project_id, instance.user_id, consumer_type="INSTANCE")
        except NotEnoughResources as exc:
            raise NotEnoughResources(f"Node {instance.node} has no room for the new size of instance "
                                     f"{instance.uuid}: {exc.message}") from None
    instance.vcpus, instance.memory_mb, instance.disk_gb = values["vcpus"], values["memory_mb"], values["disk_gb"]


def commit_instance(session: Session, context: RequestContext, ref: str, body: object, *,
                    allocator: AllocatorConfig | None = None,
                    placement: PlacementBackend | None = None) -> InstanceView:
    """Turn a forthcoming instance into a real one. What it holds already is kept as it is, so a
    fully specified one always commits; the body may complete its name and size."""
    allocator = allocator or AllocatorConfig()
    placement = placement or EmbeddedPlacement(session)
    name, sizes = requests.read_commit(body)
    instance = _find(session, context, ref, lock=True)
    if not instance.forthcoming:
        raise Conflict(f"Instance {instance.uuid} is not forthcoming: it is real already.")
    place = place_of(session, instance)
    if sizes.given:
        base = {"vcpus": instance.vcpus, "memory_mb": instance.memory_mb, "disk_gb": instance.disk_gb,
                "flavor_id": instance.flavor_id}
        values, flavor_id, _ = _resolve_sizes(session, context, sizes, base)
        _check_fits_slot(place, values)
        _check_complete(values, f"Instance {instance.uuid}")
        if values != {k: base[k] for k in requests.SIZE_FIELDS}:
            _resize(session, placement, instance, place, values, allocator)
        instance.flavor_id = flavor_id
    else:
        _check_complete({"vcpus": instance.vcpus, "memory_mb": instance.memory_mb}, f"Instance {instance.uuid}")
        if instance.node is None:
            _resize(session, placement, instance, place, {"vcpus": instance.vcpus, "memory_mb": instance.memory_mb,
                                                          "disk_gb": instance.disk_gb}, allocator)
    if name is not None:
        _check_name_free(session, instance.project_id, name, instance.uuid)
        instance.name = name
    if instance.name is None:
        raise BadRequest(f"Instance {instance.uuid} has no name: give one in the body ({{\"name\": …}}).")
    instance.forthcoming = False
    instance.status = ACTIVE
    usage.track(session, instance)
    _flush_named(session, instance)
    return _view(session, instance)


def modify_instance(session: Session, context: RequestContext, ref: str, body: object, *,
                    allocator: AllocatorConfig | None = None,
                    placement: PlacementBackend | None = None) -> InstanceView:
    """Change an instance's size; it stays on its node (409 when the node lacks the room)."""
    allocator = allocator or AllocatorConfig()
    placement = placement or EmbeddedPlacement(session)
    sizes = requests.read_modify(body)
    instance = _find(session, context, ref, lock=True)
    place = place_of(session, instance)
    base = {"vcpus": instance.vcpus, "memory_mb": instance.memory_mb, "disk_gb": instance.disk_gb,
            "flavor_id": instance.flavor_id}
    values, flavor_id, _ = _resolve_sizes(session, context, sizes, base)
    _check_fits_slot(place, values)
    if not instance.forthcoming:
        _check_complete(values, f"Instance {instance.uuid}")
    _resize(session, placement, instance, place, values, allocator)
    instance.flavor_id = flavor_id
    session.flush()
    return _view(session, instance)


def rename_instance(session: Session, context: RequestContext, ref: str, body: object) -> InstanceView:
    name = requests.read_rename(body)
    instance = _find(session, context, ref, lock=True)
    _check_name_free(session, instance.project_id, name, instance.uuid)
    instance.name = name
    _flush_named(session, instance)
    return _view(session, instance)


def change_state(session: Session, context: RequestContext, ref: str, body: object) -> InstanceView:
    """Start or stop a real instance. A stopped instance keeps what it holds on its node, so it
    can always start again; asking for the state it is already in changes nothing."""
    action = requests.read_state_action(body)
    instance = _find(session, context, ref, lock=True)
    if instance.forthcoming:
        raise Conflict(f"Instance {ref} is forthcoming: it exists only on paper, so it cannot {action}; commit it "
                       "first (POST /v1/instances/<id>/create).")
    wanted = ACTIVE if action == "start" else STOPPED
    if instance.status != wanted:
        instance.status = wanted
        usage.track(session, instance)
        session.flush()
    return _view(session, instance)


def _flush_named(session: Session, instance: Instance) -> None:
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError:
        raise Conflict(f"An instance named {instance.name} was created in project {instance.project_id} by "
                       "another request at the same time; choose another name.") from None
