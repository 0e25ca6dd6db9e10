"""The server configuration (/v1/config) and trying a placement scriptlet (/v1/scriptlet/test);
both for admins."""

from __future__ import annotations

from typing import Any

from blazar_lite.client.base import Manager


class ServerConfigClient(Manager):
    def get(self) -> dict[str, str]:
        """Every key that is set, with its value."""
        return self.api.get("/config")["config"]

    def set(self, key: str, value: str) -> dict[str, str]:
        """Set one key (others keep their values); the configuration as stored."""
        return self.api.patch("/config", {"config": {key: value}})["config"]

    def unset(self, key: str) -> dict[str, str]:
        """Unset one key; the configuration as stored."""
        return self.api.patch("/config", {"config": {key: None}})["config"]

    def replace(self, config: dict[str, str]) -> dict[str, str]:
        """Make `config` the whole configuration (keys left out are unset)."""
        return self.api.put("/config", {"config": config})["config"]

    def test_scriptlet(self, scriptlet: str, request: dict[str, Any]) -> dict[str, Any]:
        """Run `scriptlet` for the instance-create body `request` against the live inventory,
        placing nothing: candidates, target, node, decided_by, message and log."""
        return self.api.post("/scriptlet/test", {"scriptlet": scriptlet, "request": request})
