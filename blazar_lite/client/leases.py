"""Leases (/v1/leases): a project's reservations of capacity for a window, named by uuid or by name.

The service only takes absolute dates. Moving a date by a duration (prolong_for, reduce_by,
defer_by, advance_by) is the client's arithmetic, as in Blazar's client: read the lease, shift the
date it answered with, send the result back — to the microsecond, so the date moves by exactly
the duration.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from typing import Any

from blazar_lite.client.base import Manager, find_by_name, is_uuid, segment, with_query

DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION_PART = re.compile(r"(\d+)([smhd])")
# Each relative change: the date it moves, and which way.
SHIFTS = {"prolong_for": ("end_date", 1), "reduce_by": ("end_date", -1),
          "defer_by": ("start_date", 1), "advance_by": ("start_date", -1)}


def parse_duration(value: str | dt.timedelta) -> dt.timedelta:
    """A positive duration: a timedelta, or text such as 30m, 12h, 1d or 1d12h (units s, m, h, d).
    ValueError saying what is wrong otherwise."""
    if isinstance(value, dt.timedelta):
        duration = value
    else:
        text = str(value).strip().lower()
        if not text or _DURATION_PART.sub("", text):
            raise ValueError(f"{value!r} is not a duration; write a number and a unit (s, m, h or d), such as "
                             "30m, 12h, 1d or 1d12h.")
        duration = dt.timedelta(seconds=sum(int(number) * DURATION_UNITS[unit]
                                            for number, unit in _DURATION_PART.findall(text)))
    if duration <= dt.timedelta(0):
        raise ValueError(f"{value!r} is not a duration longer than zero.")
    return duration


def _date_text(value: str | dt.datetime) -> str:
    # Text passes as it is ("now", "YYYY-MM-DD HH:MM", ISO 8601): the service reads and checks it.
    return value.isoformat(timespec="microseconds") if isinstance(value, dt.datetime) else value


def _shifted(date: str, by: dt.timedelta) -> str:
    """A date the service answered with (YYYY-MM-DDTHH:MM:SS.ffffff, UTC), moved by `by`."""
    return (dt.datetime.fromisoformat(date) + by).isoformat(timespec="microseconds")


class LeasesClient(Manager):
    def list(self, project_id: str | None = None) -> list[dict[str, Any]]:
        """The caller's project's leases; for an admin every project's, or only `project_id`'s."""
        return self.api.get(with_query("/leases", {"project_id": project_id}))["leases"]

    def get(self, lease: str) -> dict[str, Any]:
        """The lease with this uuid or name, with its reservations and events."""
        if is_uuid(lease):
            return self.api.get(f"/leases/{segment(lease)}")["lease"]
        return find_by_name(self.list(), "name", lease, "lease")

    def id_of(self, lease: str) -> str:
        """The uuid of the lease with this uuid or name (a uuid is taken as it is)."""
        return lease if is_uuid(lease) else self.get(lease)["id"]

    def create(self, name: str, start: str | dt.datetime, end: str | dt.datetime,
               reservations: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]] | None = None,
               before_end_date: str | dt.datetime | None = None) -> dict[str, Any]:
        """Create a lease from `start` ("now", "YYYY-MM-DD HH:MM" UTC, ISO 8601 or a datetime) to
        `end`, holding these reservations (Blazar's fields: resource_type physical:host with min,
        max, hypervisor_properties, resource_properties; virtual:instance with amount, vcpus,
        memory_mb, disk_gb, affinity; flavor:instance with flavor_id, amount, affinity). The
        service books them over the whole window or refuses with what is short."""
        body = {"name": name, "start_date": _date_text(start), "end_date": _date_text(end),
                "before_end_date": None if before_end_date is None else _date_text(before_end_date),
                "reservations": [dict(reservation) for reservation in reservations],
                "events": [dict(event) for event in events or ()]}
        return self.api.post("/leases", body)["lease"]

    def create_earliest(self, name: str, duration: str, reservations: Iterable[Mapping[str, Any]], *,
                        search_until: str | dt.datetime | None = None) -> dict[str, Any]:
        """Create a lease of `duration` (90m, 24h, 2d) at the first window in which every reservation
        fits, ending by `search_until` (default: 30 days from now); the service refuses with what
        is short when there is none."""
        body = {"name": name, "start_date": "earliest", "duration": duration,
                "search_until": None if search_until is None else _date_text(search_until),
                "reservations": [dict(reservation) for reservation in reservations], "events": []}
        return self.api.post("/leases", body)["lease"]

    def update(self, lease: str, **changes: Any) -> dict[str, Any]:
        """Change a lease; the updated lease. `changes` are any of name, start_date, end_date,
        before_end_date (None or "" for the service's default), reservations ([{"id": …, <fields
        to change>}]) and the relative moves prolong_for / reduce_by (the end) and defer_by /
        advance_by (the start only), each a timedelta or a duration parse_duration reads.

        Raises ValueError when two changes move the same date."""
        moves = {name: changes.pop(name) for name in SHIFTS if name in changes}
        moves = {name: parse_duration(value) for name, value in moves.items() if value is not None}
        moved: dict[str, str] = {}
        for name in moves:
            date = SHIFTS[name][0]
            if date in changes or date in moved:
                raise ValueError(f"{name} and {moved.get(date, date)} both change the {date}; give one of them.")
            moved[date] = name
        for date in ("start_date", "end_date"):
            if changes.get(date) is not None:
                changes[date] = _date_text(changes[date])
        if changes.get("before_end_date") is not None:
            changes["before_end_date"] = _date_text(changes["before_end_date"])
        if moves:
            current = self.get(lease)
            lease_id = current["id"]
            for name, duration in moves.items():
                date, sign = SHIFTS[name]
                changes[date] = _shifted(current[date], sign * duration)
        else:
            lease_id = self.id_of(lease)
        return self.api.put(f"/leases/{segment(lease_id)}", changes)["lease"]

    def history(self, lease: str) -> list[dict[str, Any]]:
        """What happened to the lease, oldest first: each event, the status it left the lease in,
        a message and details. A deleted lease's history is reached by its uuid only (its name is
        looked up among the leases that exist)."""
        return self.api.get(f"/leases/{segment(self.id_of(lease))}/history")["history"]

    def delete(self, lease: str) -> None:
        """Delete the lease; what it holds goes back (refused while an event is changing it)."""
        self.api.delete(f"/leases/{segment(self.id_of(lease))}")
