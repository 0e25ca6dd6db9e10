"""The host-passes check (/v1/scheduler/host-passes) that compute schedulers' filters call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from blazar_lite.client.base import Manager


class FiltersClient(Manager):
    def host_passes(self, hosts: Iterable[str], project_id: str, extra_specs: Mapping[str, str] | None = None,
                    hints: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """One verdict per host, in order: `{"host", "passes", "reason"}` for an instance of
        `project_id` whose flavor has `extra_specs` and that carries the scheduler `hints`."""
        body: dict[str, Any] = {"hosts": list(hosts), "project_id": project_id}
        if extra_specs is not None:
            body["flavor"] = {"extra_specs": dict(extra_specs)}
        if hints is not None:
            body["scheduler_hints"] = dict(hints)
        return self.api.post("/scheduler/host-passes", body)["hosts"]
