"""The identity of the caller, as every service sees it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RequestContext:
    user_id: str
    project_id: str
    roles: frozenset[str] = field(default_factory=frozenset)
    request_id: str = ""

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    @classmethod
    def admin(cls, project_id: str = "admin", request_id: str = "") -> RequestContext:
        """The context of the service itself (scheduler, command line)."""
        return cls(user_id="blazar-lite", project_id=project_id, roles=frozenset({"admin"}),
                   request_id=request_id)
