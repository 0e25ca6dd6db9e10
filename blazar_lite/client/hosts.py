"""Hosts (/v1/os-hosts): registration, extra capabilities, state, allocations and properties.

A host is named by its id or its hypervisor hostname. As in Blazar's client, digits are an id;
anything else is looked up among the listed hosts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from blazar_lite.client.base import Manager, find_by_name, segment, with_query

_ID = re.compile(r"^[0-9]+$")


def is_host_id(host: str | int) -> bool:
    return bool(_ID.match(str(host)))


class HostsClient(Manager):
    def list(self) -> list[dict[str, Any]]:
        """Every registered host, extra capabilities as top-level keys."""
        return self.api.get("/os-hosts")["hosts"]

    def get(self, host: str | int) -> dict[str, Any]:
        """The host with this id or hypervisor hostname."""
        if is_host_id(host):
            return self.api.get(f"/os-hosts/{host}")["host"]
        return find_by_name(self.list(), "hypervisor_hostname", str(host), "host")

    def id_of(self, host: str | int) -> str:
        """The id of the host with this id or hypervisor hostname (an id is taken as it is)."""
        return str(host) if is_host_id(host) else self.get(host)["id"]

    def create(self, name: str, **fields: Any) -> dict[str, Any]:
        """Register a host. `fields` are host fields (vcpus, memory_mb, local_gb, cpu_info, …;
        resources left out are taken from an existing resource provider of the name) and extra
        capabilities (any other key, a string value)."""
        return self.api.post("/os-hosts", {"name": name, **fields})["host"]

    def update(self, host: str | int, values: Mapping[str, Any]) -> dict[str, Any]:
        """Set extra capabilities (None unsets one), `reservable` (bool) and `status` (up, down,
        maintenance); the updated host."""
        return self.api.put(f"/os-hosts/{self.id_of(host)}", dict(values))["host"]

    def unset(self, host: str | int, keys: Iterable[str]) -> dict[str, Any]:
        """Remove these extra capabilities; the updated host."""
        return self.update(host, dict.fromkeys(keys))

    def delete(self, host: str | int) -> None:
        """Unregister the host (refused while a current or future reservation holds it)."""
        self.api.delete(f"/os-hosts/{self.id_of(host)}")

    def allocations(self, *, lease_id: str | None = None,
                    reservation_id: str | None = None) -> list[dict[str, Any]]:
        """Every host (`resource_id`) with its current and future reservations."""
        path = with_query("/os-hosts/allocations", {"lease_id": lease_id, "reservation_id": reservation_id})
        return self.api.get(path)["allocations"]

    def allocation(self, host: str | int, *, lease_id: str | None = None,
                   reservation_id: str | None = None) -> dict[str, Any]:
        """One host (`resource_id`) with its current and future reservations."""
        path = with_query(f"/os-hosts/{self.id_of(host)}/allocation",
                          {"lease_id": lease_id, "reservation_id": reservation_id})
        return self.api.get(path)["allocation"]

    def free_periods(self, host: str | int, *, start: str | None = None, end: str | None = None) -> dict[str, Any]:
        """The periods from `start` (default now) to `end` (default 30 days later) in which the host
        has no booking (`free_periods`), with the host's id, name, reservable and status."""
        return self.api.get(with_query(f"/os-hosts/{self.id_of(host)}/free-periods", {"start": start, "end": end}))

    def properties(self, *, detail: bool = False, include_private: bool = False) -> list[dict[str, Any]]:
        """The extra capability names hosts have (`property`); with `detail` also `private` and
        `values`. Private ones only with `include_private` (Blazar's all=True)."""
        path = with_query("/os-hosts/properties", {"detail": "True" if detail else None,
                                                  "all": "True" if include_private else None})
        return self.api.get(path)["resource_properties"]

    def set_property(self, name: str, *, private: bool) -> dict[str, Any]:
        """Make a property private (left out of listings unless asked for) or public."""
        return self.api.patch(f"/os-hosts/properties/{segment(name)}", {"private": private})["resource_property"]
