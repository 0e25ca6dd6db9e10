"""Deployments (/v1/deployments), their shapes, and a shape's instances (the governor API).

A deployment is named within its project, a shape within its deployment; both go into the path
as given (quoted). Admins reach another project's deployments and shapes with `project_id`. A
shape's instances are reached with the caller's own auth or, through a GovernorClient, with a
governor key's signed token; those routes take no `project_id` (a token names its deployment).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from blazar_lite.client.base import Manager, given, segment, with_query
from blazar_lite.client.webhooks import event_query


def _force(force: bool) -> str | None:
    return "true" if force else None


class DeploymentsClient(Manager):
    def _path(self, deployment: str, project_id: str | None = None, **query: str | None) -> str:
        return with_query(f"/deployments/{segment(deployment)}", {"project_id": project_id, **query})

    def list(self, project_id: str | None = None) -> list[dict[str, Any]]:
        """The deployments of the caller's project (admins: of `project_id`), by name."""
        return self.api.get(with_query("/deployments", {"project_id": project_id}))["deployments"]

    def get(self, deployment: str, project_id: str | None = None) -> dict[str, Any]:
        return self.api.get(self._path(deployment, project_id))["deployment"]

    def create(self, name: str, *, description: str | None = None, config: Mapping[str, str] | None = None,
               governor_webhook_url: str | None = None, governor_webhook_secret: str | None = None,
               project_id: str | None = None) -> dict[str, Any]:
        """Create a deployment; config is an object of strings, the webhook an http(s) URL, its
        secret 16 to 128 characters (random when left out)."""
        body = given({"name": name, "description": description, "config": config,
                       "governor_webhook_url": governor_webhook_url,
                       "governor_webhook_secret": governor_webhook_secret})
        return self.api.post(with_query("/deployments", {"project_id": project_id}), body)["deployment"]

    def update(self, deployment: str, *, description: str | None = None, config: Mapping[str, str] | None = None,
               governor_webhook_url: str | None = None, governor_webhook_secret: str | None = None,
               project_id: str | None = None) -> dict[str, Any]:
        """Change the fields given: config keys are merged into the deployment's (an empty value
        removes a key), an empty webhook URL removes the webhook. The updated deployment."""
        body = given({"description": description, "config": config, "governor_webhook_url": governor_webhook_url,
                       "governor_webhook_secret": governor_webhook_secret})
        return self.api.patch(self._path(deployment, project_id), body)["deployment"]

    def replace(self, deployment: str, *, description: str | None = None, config: Mapping[str, str] | None = None,
                governor_webhook_url: str | None = None, governor_webhook_secret: str | None = None,
                project_id: str | None = None) -> dict[str, Any]:
        """Make description, config and webhook what is given; what is left out is emptied, except
        the webhook's secret, which changes only when one is given."""
        body = given({"description": description, "config": config, "governor_webhook_url": governor_webhook_url,
                       "governor_webhook_secret": governor_webhook_secret})
        return self.api.put(self._path(deployment, project_id), body)["deployment"]

    def rename(self, deployment: str, new_name: str, project_id: str | None = None) -> dict[str, Any]:
        return self.api.post(self._path(deployment, project_id), {"name": new_name})["deployment"]

    def delete(self, deployment: str, *, force: bool = False, project_id: str | None = None) -> None:
        """Delete the deployment and its shapes; one whose shapes have instances only with
        `force`, which deletes the instances first."""
        self.api.delete(self._path(deployment, project_id, force=_force(force)))

    def events(self, deployment: str, *, status: str | None = None, event_type: str | None = None,
               limit: int | None = None, project_id: str | None = None) -> list[dict[str, Any]]:
        """The events sent (or to be sent) to the deployment's governor webhook, newest first,
        each with every attempt; only those of `status` and `event_type`, at most `limit` (the
        service's default: 100)."""
        path = f"/deployments/{segment(deployment)}/events"
        return self.api.get(with_query(path, {"project_id": project_id,
                                              **event_query(status, event_type, limit)}))["events"]


class ShapesClient(Manager):
    def _path(self, deployment: str, shape: str | None = None, project_id: str | None = None,
              **query: str | None) -> str:
        path = f"/deployments/{segment(deployment)}/shapes"
        if shape is not None:
            path = f"{path}/{segment(shape)}"
        return with_query(path, {"project_id": project_id, **query})

    def list(self, deployment: str, project_id: str | None = None) -> list[dict[str, Any]]:
        """The deployment's shapes, by name, each with its scaling_current."""
        return self.api.get(self._path(deployment, project_id=project_id))["shapes"]

    def get(self, deployment: str, shape: str, project_id: str | None = None) -> dict[str, Any]:
        return self.api.get(self._path(deployment, shape, project_id))["shape"]

    def create(self, deployment: str, name: str, *, instance_template: Mapping[str, Any], scaling_minimum: int,
               scaling_maximum: int, description: str | None = None, config: Mapping[str, str] | None = None,
               project_id: str | None = None) -> dict[str, Any]:
        """Add a shape: its instance template (flavor_id, or vcpus/memory_mb/disk_gb, and
        optionally reservation_id) and the bounds its instance count stays within."""
        body = given({"name": name, "instance_template": dict(instance_template),
                       "scaling_minimum": scaling_minimum, "scaling_maximum": scaling_maximum,
                       "description": description, "config": config})
        return self.api.post(self._path(deployment, project_id=project_id), body)["shape"]

    def update(self, deployment: str, shape: str, *, project_id: str | None = None, **fields: Any) -> dict[str, Any]:
        """Change the fields given (instance_template, scaling_minimum, scaling_maximum,
        description, config: merged, an empty value removing a key). The updated shape."""
        return self.api.patch(self._path(deployment, shape, project_id), given(fields))["shape"]

    def replace(self, deployment: str, shape: str, *, instance_template: Mapping[str, Any], scaling_minimum: int,
                scaling_maximum: int, description: str | None = None, config: Mapping[str, str] | None = None,
                project_id: str | None = None) -> dict[str, Any]:
        """Make every field but the name what is given (description and config left out are
        emptied). A new template applies to instances launched from now on."""
        body = given({"instance_template": dict(instance_template), "scaling_minimum": scaling_minimum,
                       "scaling_maximum": scaling_maximum, "description": description, "config": config})
        return self.api.put(self._path(deployment, shape, project_id), body)["shape"]

    def rename(self, deployment: str, shape: str, new_name: str, project_id: str | None = None) -> dict[str, Any]:
        return self.api.post(self._path(deployment, shape, project_id), {"name": new_name})["shape"]

    def delete(self, deployment: str, shape: str, *, force: bool = False, project_id: str | None = None) -> None:
        """Delete the shape; one with instances only with `force`, which deletes them first."""
        self.api.delete(self._path(deployment, shape, project_id, force=_force(force)))


class ShapeInstancesClient(Manager):
    """What a governor does to a shape: launch its instances from the template, delete them,
    start and stop them, within the shape's scaling bounds."""

    def _path(self, deployment: str, shape: str, instance: str | None = None) -> str:
        path = f"/deployments/{segment(deployment)}/shapes/{segment(shape)}/instances"
        return f"{path}/{segment(instance)}" if instance is not None else path

    def list(self, deployment: str, shape: str) -> list[dict[str, Any]]:
        """The shape's instances, oldest first."""
        return self.api.get(self._path(deployment, shape))["instances"]

    def launch(self, deployment: str, shape: str, name: str) -> dict[str, Any]:
        """Create instance `name` from the shape's template; the placed instance. Refused (409)
        at scaling_maximum, or when the template's reservation has no slot left."""
        return self.api.post(self._path(deployment, shape, name), None)["instance"]

    def delete(self, deployment: str, shape: str, name: str) -> None:
        """Delete one of the shape's instances; refused (409) at scaling_minimum."""
        self.api.delete(self._path(deployment, shape, name))

    def start(self, deployment: str, shape: str, name: str) -> dict[str, Any]:
        return self.api.put(f"{self._path(deployment, shape, name)}/state", {"action": "start"})["instance"]

    def stop(self, deployment: str, shape: str, name: str) -> dict[str, Any]:
        """Stop one of the shape's instances; it keeps its room on its node."""
        return self.api.put(f"{self._path(deployment, shape, name)}/state", {"action": "stop"})["instance"]
