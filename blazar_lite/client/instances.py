"""Instances (/v1/instances): a project's instances, on demand or inside a reservation, real or
forthcoming (on paper, holding room for a later commit).

Unlike leases and flavors, the service itself finds an instance by its uuid or its name, so a
reference goes into the path as it is given (quoted) and no listing is needed to resolve it.
(The service refuses names a path cannot carry: with a '/', or '.' and '..'.)
"""

from __future__ import annotations

from typing import Any

from blazar_lite.client.base import Manager, segment, with_query


def _given(fields: dict[str, Any]) -> dict[str, Any]:
    # The service reads a missing field and a null one alike, but leaving unset ones out keeps the
    # body to what the caller asked for.
    return {key: value for key, value in fields.items() if value is not None}


class InstancesClient(Manager):
    def _path(self, instance: str, action: str | None = None) -> str:
        path = f"/instances/{segment(instance)}"
        return f"{path}/{action}" if action else path

    def list(self, project_id: str | None = None) -> list[dict[str, Any]]:
        """The caller's project's instances, oldest first; for an admin every project's, or only
        `project_id`'s."""
        return self.api.get(with_query("/instances", {"project_id": project_id}))["instances"]

    def get(self, instance: str) -> dict[str, Any]:
        """The instance with this uuid or name."""
        return self.api.get(self._path(instance))["instance"]

    def create(self, name: str | None = None, *, flavor_id: str | None = None, vcpus: int | None = None,
               memory_mb: int | None = None, disk_gb: int | None = None, reservation_id: str | None = None,
               host: str | None = None, forthcoming: bool = False) -> dict[str, Any]:
        """Create an instance; the service places it and answers with its node (`host`).

        Its size is a flavor (uuid) or vcpus and memory_mb (disk_gb defaults to 0); in an active
        reservation it defaults to the reservation's slot, and a reservation's own flavor places
        it in that reservation. `host` (admins only) chooses the node. A forthcoming instance may
        leave out everything, name included; what it does name is held as if it were real."""
        body = _given({"name": name, "flavor_id": flavor_id, "vcpus": vcpus, "memory_mb": memory_mb,
                       "disk_gb": disk_gb, "reservation_id": reservation_id, "host": host})
        if forthcoming:
            body["forthcoming"] = True
        return self.api.post("/instances", body)["instance"]

    def delete(self, instance: str) -> None:
        """Delete the instance, real or forthcoming; what it holds is free again."""
        self.api.delete(self._path(instance))

    def commit(self, instance: str, **completion: Any) -> dict[str, Any]:
        """Make a forthcoming instance real where it holds its room; the committed instance.
        `completion` gives what it still lacks or changes it: name, and flavor_id or any of vcpus,
        memory_mb and disk_gb."""
        return self.api.post(self._path(instance, "create"), _given(completion))["instance"]

    def modify(self, instance: str, **sizes: Any) -> dict[str, Any]:
        """Resize an instance on its node (refused when the node lacks the room): flavor_id, or any
        of vcpus, memory_mb and disk_gb. The resized instance."""
        return self.api.put(self._path(instance, "modify"), _given(sizes))["instance"]

    def rename(self, instance: str, new_name: str) -> dict[str, Any]:
        """Give the instance a new name, unique within its project; the renamed instance."""
        return self.api.put(self._path(instance, "rename"), {"new_name": new_name})["instance"]
