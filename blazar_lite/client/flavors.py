"""Flavors (/v1/flavors): instance sizes, named by uuid or by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from blazar_lite.client.base import Manager, find_by_name, is_uuid, segment


class FlavorsClient(Manager):
    def list(self) -> list[dict[str, Any]]:
        """The flavors the caller may see."""
        return self.api.get("/flavors")["flavors"]

    def get(self, flavor: str) -> dict[str, Any]:
        """The flavor with this uuid or name."""
        if is_uuid(flavor):
            return self.api.get(f"/flavors/{segment(flavor)}")["flavor"]
        return find_by_name(self.list(), "name", flavor, "flavor")

    def id_of(self, flavor: str) -> str:
        """The uuid of the flavor with this uuid or name (a uuid is taken as it is)."""
        return flavor if is_uuid(flavor) else self.get(flavor)["id"]

    def create(self, name: str, *, vcpus: int, ram: int, disk: int = 0, is_public: bool = True,
               extra_specs: Mapping[str, str] | None = None, flavor_id: str | None = None) -> dict[str, Any]:
        """Create a flavor (ram in MB, disk in GB); the service picks the uuid unless given."""
        body: dict[str, Any] = {"name": name, "vcpus": vcpus, "ram": ram, "disk": disk, "is_public": is_public}
        if extra_specs:
            body["extra_specs"] = dict(extra_specs)
        if flavor_id is not None:
            body["id"] = flavor_id
        return self.api.post("/flavors", {"flavor": body})["flavor"]

    def update(self, flavor: str, **changes: Any) -> dict[str, Any]:
        """Change name, vcpus, ram, disk, is_public or extra_specs (merged into the flavor's; None
        unsets a key); the updated flavor."""
        return self.api.put(f"/flavors/{segment(self.id_of(flavor))}", {"flavor": changes})["flavor"]

    def delete(self, flavor: str) -> None:
        self.api.delete(f"/flavors/{segment(self.id_of(flavor))}")
