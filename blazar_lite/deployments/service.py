"""Deployments and their shapes: create, read, replace, merge, rename, delete; and launching and
deleting a shape's instances within its scaling bounds.

A deployment belongs to a project and is named within it. Scaling checks are atomic: launching
or deleting a shape's instance first locks the shape's row, so concurrent scale-ups against
scaling_maximum make exactly the instances that fit, never one more.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blazar_lite.auth.context import RequestContext
from blazar_lite.deployments import events
from blazar_lite.deployments.models import MAX_NAME, Deployment, Shape
from blazar_lite.exceptions import BadRequest, Conflict, NotEnoughResources, NotFound
from blazar_lite.instances import requests as instance_requests
from blazar_lite.instances import service as instances
from blazar_lite.instances import usage as instances_usage
from blazar_lite.instances.models import Instance
from blazar_lite.placement.backend import EmbeddedPlacement, PlacementBackend
from blazar_lite.webhooks import signing

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
DEPLOYMENT_FIELDS = frozenset({"name", "description", "config", "governor_webhook_url", "governor_webhook_secret"})
SHAPE_FIELDS = frozenset({"name", "description", "config", "instance_template", "scaling_minimum",
                          "scaling_maximum"})
# What a template may say: the size, the reservation. The name comes with each launch, and
# where an instance goes is the allocator's (or the scriptlet's) to decide.
TEMPLATE_FIELDS = frozenset({"flavor_id", *instance_requests.SIZE_FIELDS, "reservation_id"})
MAX_SCALE = 100000


@dataclass(frozen=True)
class DeploymentView:
    id: str
    name: str
    project_id: str
    description: str
    config: dict[str, str]
    governor_webhook_url: str | None
    governor_webhook_secret: str
    created_at: dt.datetime
    updated_at: dt.datetime | None


@dataclass(frozen=True)
class ShapeView:
    id: str
    name: str
    deployment: str
    description: str
    config: dict[str, str]
    instance_template: dict[str, Any]
    scaling_minimum: int
    scaling_maximum: int
    scaling_current: int
    created_at: dt.datetime
    updated_at: dt.datetime | None


# Reading bodies.

def read_name(value: object, what: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value) or len(value) > MAX_NAME:
        raise BadRequest(f"Invalid {what} name {value!r}: use up to {MAX_NAME} letters, digits, '-', '_' or '.', "
                         "starting with a letter or digit.")
    return value


MAX_DESCRIPTION = 1024
MAX_CONFIG_KEYS = 100
MAX_CONFIG_KEY = 255
MAX_CONFIG_VALUE = 4096


def read_description(value: object) -> str:
    """A description as given (None: none), checked: a string of at most MAX_DESCRIPTION characters."""
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_DESCRIPTION:
        raise BadRequest(f"Invalid description: give a string of at most {MAX_DESCRIPTION} characters.")
    return value


def _config(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise BadRequest('Invalid config: give an object of strings, like {"user.tier": "web"}.')
    if len(value) > MAX_CONFIG_KEYS:
        raise BadRequest(f"Invalid config: {len(value)} keys, at most {MAX_CONFIG_KEYS} are allowed.")
    for key, item in value.items():
        if len(key) > MAX_CONFIG_KEY:
            raise BadRequest(f"Invalid config: the key {key[:40]!r}... has {len(key)} characters, at most "
                             f"{MAX_CONFIG_KEY} are allowed.")
        if len(item) > MAX_CONFIG_VALUE:
            raise BadRequest(f"Invalid config: the value of {key!r} has {len(item)} characters, at most "
                             f"{MAX_CONFIG_VALUE} are allowed.")
    return dict(value)


def _webhook(value: object) -> str | None:
    if value is None or value == "":
        return None
    return signing.read_url(value, "governor_webhook_url")


def _secret(value: object) -> str:
    return signing.read_secret(value, "governor_webhook_secret")


def _bound(body: Mapping[str, Any], field: str) -> int:
    value = body.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SCALE:
        raise BadRequest(f"Invalid {field}: give an integer from 0 to {MAX_SCALE}, not {value!r}.")
    return value


def _bounds(body: Mapping[str, Any]) -> tuple[int, int]:
    minimum, maximum = _bound(body, "scaling_minimum"), _bound(body, "scaling_maximum")
    if minimum == 0 and maximum == 0:
        raise BadRequest("scaling_minimum and scaling_maximum cannot both be 0: the shape could never have an "
                         "instance.")
    if minimum > maximum:
        raise BadRequest(f"scaling_minimum ({minimum}) is greater than scaling_maximum ({maximum}).")
    return minimum, maximum


def _template(value: object) -> dict[str, Any]:
    template = dict(instance_requests.read_object(value, TEMPLATE_FIELDS, "instance_template"))
    # The same checks as a create body, with a stand-in name (each launch brings its own).
    request = instance_requests.read_create({**template, "name": "template"})
    if not request.sizes.given and request.reservation_id is None:
        raise BadRequest("instance_template needs a size: flavor_id, or vcpus and memory_mb (or a reservation_id "
                         "whose slot size it takes).")
    return template


def _merged_config(stored: str, given: object) -> str:
    """A PATCH of a config map: `given` keys set, an empty value removing its key."""
    merged = {**_loads(stored), **_config(given)}
    kept = {key: value for key, value in merged.items() if value != ""}
    if len(kept) > MAX_CONFIG_KEYS:
        raise BadRequest(f"Invalid config: {len(kept)} keys once merged, at most {MAX_CONFIG_KEYS} are allowed.")
    return json.dumps(kept)


def _loads(text: str) -> Any:
    return json.loads(text) if text else {}


# Views.

def _deployment_view(row: Deployment) -> DeploymentView:
    return DeploymentView(row.id, row.name, row.project_id, row.description, _loads(row.config),
                          row.governor_webhook_url, row.governor_webhook_secret, row.created_at, row.updated_at)


def _scaling_current(session: Session, shape_ids: list[str]) -> dict[str, int]:
    if not shape_ids:
        return {}
    return dict(session.execute(select(Instance.shape_id, func.count()).where(Instance.shape_id.in_(shape_ids))
                                .group_by(Instance.shape_id)).all())


def _shape_views(session: Session, deployment: Deployment, rows: list[Shape]) -> list[ShapeView]:
    counts = _scaling_current(session, [row.id for row in rows])
    return [ShapeView(row.id, row.name, deployment.name, row.description, _loads(row.config),
                      _loads(row.instance_template), row.scaling_minimum, row.scaling_maximum, counts.get(row.id, 0),
                      row.created_at, row.updated_at) for row in rows]


# Deployments.

def find_deployment(session: Session, project_id: str, name: str, *, lock: bool = False) -> Deployment:
    stmt = select(Deployment).where(Deployment.project_id == project_id, Deployment.name == name)
    row = session.scalar(stmt.with_for_update() if lock else stmt)
    if row is None:
        raise NotFound(f"Deployment {name} not found in project {project_id}.")
    return row


def list_deployments(session: Session, project_id: str | None) -> list[DeploymentView]:
    stmt = select(Deployment).order_by(Deployment.project_id, Deployment.name)
    if project_id is not None:
        stmt = stmt.where(Deployment.project_id == project_id)
    return [_deployment_view(row) for row in session.scalars(stmt)]


def get_deployment(session: Session, project_id: str, name: str) -> DeploymentView:
    return _deployment_view(find_deployment(session, project_id, name))


def _flush_unique(session: Session, what: str) -> None:
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError:
        raise Conflict(f"{what} already exists; choose another name.") from None


def create_deployment(session: Session, project_id: str, body: object) -> DeploymentView:
    data = instance_requests.read_object(body, DEPLOYMENT_FIELDS, "a deployment")
    name = read_name(data.get("name"), "deployment")
    if session.scalar(select(Deployment.id).where(Deployment.project_id == project_id, Deployment.name == name)):
        raise Conflict(f"Deployment {name} already exists in project {project_id}; choose another name.")
    row = Deployment(id=str(uuidlib.uuid4()), project_id=project_id, name=name,
                     description=read_description(data.get("description")),
                     config=json.dumps(_config(data.get("config"))),
                     governor_webhook_url=_webhook(data.get("governor_webhook_url")),
                     governor_webhook_secret=_secret(data.get("governor_webhook_secret")))
    session.add(row)
    _flush_unique(session, f"Deployment {name} of project {project_id}")
    return _deployment_view(row)


def replace_deployment(session: Session, project_id: str, name: str, body: object) -> DeploymentView:
    """PUT: description, config and governor_webhook_url become what the body says (left out:
    empty); the name changes only through rename. The webhook secret changes only when given: it
    is a credential the governor holds, not a setting to reset by leaving it out."""
    data = instance_requests.read_object(body, DEPLOYMENT_FIELDS - {"name"}, "a deployment replacement")
    row = find_deployment(session, project_id, name, lock=True)
    row.description = read_description(data.get("description"))
    row.config = json.dumps(_config(data.get("config")))
    row.governor_webhook_url = _webhook(data.get("governor_webhook_url"))
    if data.get("governor_webhook_secret") is not None:
        row.governor_webhook_secret = _secret(data["governor_webhook_secret"])
    session.flush()
    return _deployment_view(row)


def update_deployment(session: Session, project_id: str, name: str, body: object) -> DeploymentView:
    """PATCH: the fields given change; config keys are merged (an empty value removes a key)."""
    data = instance_requests.read_object(body, DEPLOYMENT_FIELDS - {"name"}, "a deployment update")
    row = find_deployment(session, project_id, name, lock=True)
    if "description" in data:
        row.description = read_description(data["description"])
    if "config" in data:
        row.config = _merged_config(row.config, data["config"])
    if "governor_webhook_url" in data:
        row.governor_webhook_url = _webhook(data["governor_webhook_url"])
    if "governor_webhook_secret" in data:
        row.governor_webhook_secret = _secret(data["governor_webhook_secret"])
    session.flush()
    return _deployment_view(row)


def rename_deployment(session: Session, project_id: str, name: str, body: object) -> DeploymentView:
    data = instance_requests.read_object(body, frozenset({"name"}), "a rename")
    new_name = read_name(data.get("name"), "deployment")
    row = find_deployment(session, project_id, name, lock=True)
    if new_name != name and session.scalar(select(Deployment.id).where(Deployment.project_id == project_id,
                                                                       Deployment.name == new_name)):
        raise Conflict(f"Deployment {new_name} already exists in project {project_id}; choose another name.")
    row.name = new_name
    _flush_unique(session, f"Deployment {new_name} of project {project_id}")
    return _deployment_view(row)


def _remove_instances(session: Session, placement: PlacementBackend, shape_ids: list[str]) -> None:
    for instance in session.scalars(select(Instance).where(Instance.shape_id.in_(shape_ids))
                                    .order_by(Instance.uuid).with_for_update()):
        placement.release(instance.uuid)
        instances_usage.track(session, instance, gone=True)
        session.delete(instance)
    session.flush()


def delete_deployment(session: Session, project_id: str, name: str, *, force: bool = False,
                      placement: PlacementBackend | None = None) -> None:
    """Delete the deployment and its shapes; with instances left, only with force (which deletes
    them first)."""
    row = find_deployment(session, project_id, name, lock=True)
    shapes = list(session.scalars(select(Shape.id).where(Shape.deployment_id == row.id)))
    count = sum(_scaling_current(session, shapes).values())
    if count and not force:
        raise Conflict(f"Deployment {name} still has {count} instance(s); delete them first, or delete with "
                       "?force=true to delete them too.")
    if shapes:
        _remove_instances(session, placement or EmbeddedPlacement(session), shapes)
    events.forget(session, row)
    session.delete(row)
    session.flush()


# Shapes.

def _shape(session: Session, deployment: Deployment, name: str, *, lock: bool = False) -> Shape:
    stmt = select(Shape).where(Shape.deployment_id == deployment.id, Shape.name == name)
    row = session.scalar(stmt.with_for_update() if lock else stmt)
    if row is None:
        raise NotFound(f"Shape {name} not found in deployment {deployment.name}.")
    return row


def list_shapes(session: Session, project_id: str, deployment: str) -> list[ShapeView]:
    row = find_deployment(session, project_id, deployment)
    return _shape_views(session, row, list(session.scalars(select(Shape).where(Shape.deployment_id == row.id)
                                                           .order_by(Shape.name))))


def get_shape(session: Session, project_id: str, deployment: str, name: str) -> ShapeView:
    row = find_deployment(session, project_id, deployment)
    return _shape_views(session, row, [_shape(session, row, name)])[0]


def create_shape(session: Session, project_id: str, deployment: str, body: object) -> ShapeView:
    data = instance_requests.read_object(body, SHAPE_FIELDS, "a shape")
    name = read_name(data.get("name"), "shape")
    minimum, maximum = _bounds(data)
    template = _template(data.get("instance_template"))
    owner = find_deployment(session, project_id, deployment, lock=True)
    if session.scalar(select(Shape.id).where(Shape.deployment_id == owner.id, Shape.name == name)):
        raise Conflict(f"Shape {name} already exists in deployment {deployment}; choose another name.")
    row = Shape(id=str(uuidlib.uuid4()), deployment_id=owner.id, name=name,
                description=read_description(data.get("description")), config=json.dumps(_config(data.get("config"))),
                instance_template=json.dumps(template), scaling_minimum=minimum, scaling_maximum=maximum)
    session.add(row)
    _flush_unique(session, f"Shape {name} of deployment {deployment}")
    events.shape_template_set(session, owner, row)
    return _shape_views(session, owner, [row])[0]


def _check_fits_bounds(session: Session, deployment: Deployment, row: Shape, maximum: int) -> None:
    current = _scaling_current(session, [row.id]).get(row.id, 0)
    if current > maximum:
        raise Conflict(f"Shape {row.name} of deployment {deployment.name} has {current} instances, more than the "
                       f"new scaling_maximum of {maximum}; delete {current - maximum} first.")


def replace_shape(session: Session, project_id: str, deployment: str, name: str, body: object) -> ShapeView:
    """PUT: every field but the name becomes what the body says. A new template applies to
    instances launched from now on; those already running keep theirs."""
    data = instance_requests.read_object(body, SHAPE_FIELDS - {"name"}, "a shape replacement")
    minimum, maximum = _bounds(data)
    template = _template(data.get("instance_template"))
    owner = find_deployment(session, project_id, deployment)
    row = _shape(session, owner, name, lock=True)
    _check_fits_bounds(session, owner, row, maximum)
    row.description = read_description(data.get("description"))
    row.config = json.dumps(_config(data.get("config")))
    row.instance_template = json.dumps(template)
    row.scaling_minimum, row.scaling_maximum = minimum, maximum
    session.flush()
    events.shape_template_set(session, owner, row)
    return _shape_views(session, owner, [row])[0]


def update_shape(session: Session, project_id: str, deployment: str, name: str, body: object) -> ShapeView:
    """PATCH: the fields given change (config merged; an empty value removes a key)."""
    data = instance_requests.read_object(body, SHAPE_FIELDS - {"name"}, "a shape update")
    owner = find_deployment(session, project_id, deployment)
    row = _shape(session, owner, name, lock=True)
    if "scaling_minimum" in data or "scaling_maximum" in data:
        minimum, maximum = _bounds({"scaling_minimum": row.scaling_minimum, "scaling_maximum": row.scaling_maximum,
                                    **{k: v for k, v in data.items() if k.startswith("scaling_")}})
        _check_fits_bounds(session, owner, row, maximum)
        row.scaling_minimum, row.scaling_maximum = minimum, maximum
    if "instance_template" in data:
        row.instance_template = json.dumps(_template(data["instance_template"]))
        events.shape_template_set(session, owner, row)
    if "description" in data:
        row.description = read_description(data["description"])
    if "config" in data:
        row.config = _merged_config(row.config, data["config"])
    session.flush()
    return _shape_views(session, owner, [row])[0]


def rename_shape(session: Session, project_id: str, deployment: str, name: str, body: object) -> ShapeView:
    data = instance_requests.read_object(body, frozenset({"name"}), "a rename")
    new_name = read_name(data.get("name"), "shape")
    owner = find_deployment(session, project_id, deployment)
    row = _shape(session, owner, name, lock=True)
    if new_name != name and session.scalar(select(Shape.id).where(Shape.deployment_id == owner.id,
                                                                  Shape.name == new_name)):
        raise Conflict(f"Shape {new_name} already exists in deployment {deployment}; choose another name.")
    row.name = new_name
    _flush_unique(session, f"Shape {new_name} of deployment {deployment}")
    return _shape_views(session, owner, [row])[0]


def delete_shape(session: Session, project_id: str, deployment: str, name: str, *, force: bool = False,
                 placement: PlacementBackend | None = None) -> None:
    owner = find_deployment(session, project_id, deployment)
    row = _shape(session, owner, name, lock=True)
    count = _scaling_current(session, [row.id]).get(row.id, 0)
    if count and not force:
        raise Conflict(f"Shape {name} of deployment {deployment} still has {count} instance(s); delete them first, "
                       "or delete with ?force=true to delete them too.")
    if count:
        _remove_instances(session, placement or EmbeddedPlacement(session), [row.id])
    session.delete(row)
    session.flush()


# A shape's instances.

def shape_instances(session: Session, project_id: str, deployment: str, name: str) -> list[instances.InstanceView]:
    owner = find_deployment(session, project_id, deployment)
    row = _shape(session, owner, name)
    found = session.scalars(select(Instance).where(Instance.shape_id == row.id)
                            .order_by(Instance.created_at, Instance.uuid)).all()
    return instances._views(session, found)


def launch_instance(session: Session, context: RequestContext, deployment: str, shape: str, instance_name: str,
                    *, allocator: instances.AllocatorConfig | None = None,
                    placement: PlacementBackend | None = None) -> instances.InstanceView:
    """Create instance `instance_name` from the shape's template, placed by the allocator (or
    the scriptlet) with reason `new`; 409 at scaling_maximum. The shape's row stays locked until
    the transaction ends, so concurrent launches are counted one after the other."""
    owner = find_deployment(session, context.project_id, deployment)
    row = _shape(session, owner, shape, lock=True)
    current = _scaling_current(session, [row.id]).get(row.id, 0)
    if current >= row.scaling_maximum:
        raise Conflict(f"Shape {shape} of deployment {deployment} is at its scaling_maximum of "
                       f"{row.scaling_maximum} instances; raise it, or delete an instance first.")
    template = _loads(row.instance_template)
    reservation_id = template.get("reservation_id")
    slots = instances.reservation_slots(session, reservation_id) if reservation_id else None
    if slots is not None and slots[0] == 0:
        raise NotEnoughResources(
            f"Shape {shape} of deployment {deployment} cannot grow inside reservation {reservation_id}: 0 of its "
            f"{slots[1]} slots are left. Delete an instance of the reservation, or point the template at "
            "another reservation.", slots_left=0, slots=slots[1])
    try:
        return instances.create_instance(session, context, {**template, "name": instance_name},
                                         allocator=allocator, placement=placement, shape_id=row.id)
    except NotEnoughResources as exc:
        if slots is None:
            raise
        raise NotEnoughResources(f"{exc.message} Reservation {reservation_id} has {slots[0]} of its {slots[1]} "
                                 "slots left.", slots_left=slots[0], slots=slots[1]) from None


def _shape_instance(session: Session, project_id: str, deployment: str, shape: str, instance_name: str) -> str:
    """The uuid of the shape's instance `instance_name`; 404 when the shape has none of that name."""
    owner = find_deployment(session, project_id, deployment)
    row = _shape(session, owner, shape)
    instance = session.scalar(select(Instance.uuid).where(Instance.shape_id == row.id, Instance.name == instance_name))
    if instance is None:
        raise NotFound(f"Instance {instance_name} is not an instance of shape {shape} of deployment {deployment}.")
    return instance


def change_shape_instance_state(session: Session, context: RequestContext, deployment: str, shape: str,
                                instance_name: str, body: object) -> instances.InstanceView:
    """Start or stop one of the shape's instances."""
    instance = _shape_instance(session, context.project_id, deployment, shape, instance_name)
    return instances.change_state(session, context, instance, body)


def delete_shape_instance(session: Session, context: RequestContext, deployment: str, shape: str,
                          instance_name: str, placement: PlacementBackend | None = None) -> None:
    """Delete one of the shape's instances; 409 at scaling_minimum (the check every instance
    delete makes)."""
    instance = _shape_instance(session, context.project_id, deployment, shape, instance_name)
    instances.delete_instance(session, context, instance, placement)
