"""Availability (/v1/availability): when a reservation would fit, and what hosts hold over time."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from blazar_lite.client.base import Manager, with_query


def _parameter(value: Any) -> str:
    # Query parameters are text; the service reads them as a lease create body's fields.
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


class AvailabilityClient(Manager):
    def search(self, reservation: Mapping[str, Any], duration: str, *, after: str | None = None,
               before: str | None = None, limit: int | None = None) -> dict[str, Any]:
        """The earliest windows in which `reservation` (a lease's reservation: resource_type and its
        fields) fits for `duration` (90m, 24h, 2d), starting from `after` (default now) and ending
        by `before` (default 30 days later): {"availability": [{"start_date", "end_date",
        "hosts"}], "message": why none fits, or None, ...}."""
        params = {key: _parameter(value) for key, value in reservation.items()}
        params.update(duration=duration, after=after, before=before, limit=None if limit is None else str(limit))
        return self.api.get(with_query("/availability", params))

    def timeline(self, *, start: str | None = None, end: str | None = None) -> dict[str, Any]:
        """What every host holds from `start` (default now) to `end` (default 30 days later),
        period by period (admins)."""
        return self.api.get(with_query("/availability/timeline", {"start": start, "end": end}))
