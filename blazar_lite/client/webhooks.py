"""Webhooks (/v1/webhooks): where a project's lease events are POSTed, signed with the webhook's
secret; and the events sent to each, with every attempt. A webhook is named by its id only."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from blazar_lite.client.base import Manager, given, segment, with_query


def event_query(status: str | None, event_type: str | None, limit: int | None) -> dict[str, str | None]:
    """The filters of an event history (a webhook's or a deployment's), as query parameters."""
    return {"status": status, "type": event_type, "limit": None if limit is None else str(limit)}


def _events(events: Iterable[str] | None) -> list[str] | None:
    return None if events is None else list(events)


class WebhooksClient(Manager):
    def _path(self, webhook: str) -> str:
        return f"/webhooks/{segment(webhook)}"

    def list(self) -> list[dict[str, Any]]:
        """The caller's project's webhooks (admins: every project's)."""
        return self.api.get("/webhooks")["webhooks"]

    def get(self, webhook: str) -> dict[str, Any]:
        return self.api.get(self._path(webhook))["webhook"]

    def create(self, url: str, *, secret: str | None = None, events: Iterable[str] | None = None,
               description: str | None = None) -> dict[str, Any]:
        """Add a webhook for the caller's project: `events` are the lease events it wants (None or
        empty: all of them); without a secret the service picks a random one, shown in the answer."""
        body = given({"url": url, "secret": secret, "events": _events(events), "description": description})
        return self.api.post("/webhooks", body)["webhook"]

    def update(self, webhook: str, *, url: str | None = None, secret: str | None = None,
               events: Iterable[str] | None = None, description: str | None = None) -> dict[str, Any]:
        """Change the fields given (events=[]: all events from now on); the changed webhook."""
        body = given({"url": url, "secret": secret, "events": _events(events), "description": description})
        return self.api.patch(self._path(webhook), body)["webhook"]

    def delete(self, webhook: str) -> None:
        """Delete the webhook, with its events still waiting to be sent."""
        self.api.delete(self._path(webhook))

    def events(self, webhook: str, *, status: str | None = None, event_type: str | None = None,
               limit: int | None = None) -> list[dict[str, Any]]:
        """The events sent (or to be sent) to the webhook, newest first, each with every attempt;
        only those of `status` and `event_type`, at most `limit` (the service's default: 100)."""
        path = with_query(f"{self._path(webhook)}/events", event_query(status, event_type, limit))
        return self.api.get(path)["events"]
