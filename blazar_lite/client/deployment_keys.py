"""A deployment's governor keys (/v1/deployments/<deployment>/keys): certificates whose private
keys sign a governor's tokens, each with a role (admin may scale, read-only may only list)."""

from __future__ import annotations

from typing import Any

from blazar_lite.client.base import Manager, segment, with_query


class DeploymentKeysClient(Manager):
    def _path(self, deployment: str, key: str | None = None, project_id: str | None = None) -> str:
        path = f"/deployments/{segment(deployment)}/keys"
        if key is not None:
            path = f"{path}/{segment(key)}"
        return with_query(path, {"project_id": project_id})

    def list(self, deployment: str, project_id: str | None = None) -> list[dict[str, Any]]:
        """The deployment's keys, by name, with their certificates and fingerprints."""
        return self.api.get(self._path(deployment, project_id=project_id))["keys"]

    def get(self, deployment: str, key: str, project_id: str | None = None) -> dict[str, Any]:
        return self.api.get(self._path(deployment, key, project_id))["key"]

    def create(self, deployment: str, name: str, *, certificate: str, role: str, description: str | None = None,
               project_id: str | None = None) -> dict[str, Any]:
        """Add a key: a PEM certificate (RSA, or EC on P-256) and its role, admin or read-only.
        Its name is what a governor's token names in its `kid` header."""
        body = {"name": name, "certificate": certificate, "role": role}
        if description is not None:
            body["description"] = description
        return self.api.post(self._path(deployment, project_id=project_id), body)["key"]

    def rename(self, deployment: str, key: str, new_name: str, project_id: str | None = None) -> dict[str, Any]:
        """Rename a key; tokens must then name it by its new name."""
        return self.api.post(self._path(deployment, key, project_id), {"name": new_name})["key"]

    def delete(self, deployment: str, key: str, project_id: str | None = None) -> None:
        """Revoke a key: tokens it signs are refused from the next call on."""
        self.api.delete(self._path(deployment, key, project_id))
