"""Which reservations hold which hosts: a question the hosts domain asks and the leases domain answers.

Hosts must not be deleted while a current or future reservation uses them, and the allocations
API lists those reservations per host; but reservations live in the leases domain, which builds
on hosts. So hosts define the question here and each reservation type registers a source that
answers it. With no source registered the answer is "none", which is the truth while no
reservation type exists.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.orm import Session


@dataclass(frozen=True)
class HostReservation:
    """A reservation that holds a host over [start_date, end_date)."""

    id: str
    lease_id: str
    start_date: dt.datetime
    end_date: dt.datetime


class ReservationSource(Protocol):
    def __call__(self, session: Session, host_ids: Sequence[int], *, ending_after: dt.datetime,
                 lease_id: str | None = None,
                 reservation_id: str | None = None) -> Mapping[int, Sequence[HostReservation]]:
        """The reservations of this source that hold any of `host_ids` and end after
        `ending_after`, restricted to one lease or reservation when given, by host id."""


# Sources are stateless functions of the session they are given, so one table per process
# serves every application built in it.
_SOURCES: dict[str, ReservationSource] = {}


def register_source(name: str, source: ReservationSource) -> None:
    """Make `source` answer for reservation type `name` (registering a name again replaces it)."""
    _SOURCES[name] = source


def unregister_source(name: str) -> None:
    _SOURCES.pop(name, None)


def reservations_of_hosts(session: Session, host_ids: Sequence[int], *, ending_after: dt.datetime,
                          lease_id: str | None = None,
                          reservation_id: str | None = None) -> dict[int, list[HostReservation]]:
    """Every host of `host_ids` with the current and future reservations that hold it (ending
    after `ending_after`), earliest first; hosts no reservation holds map to []."""
    found: dict[int, list[HostReservation]] = {host_id: [] for host_id in host_ids}
    for source in list(_SOURCES.values()):
        held = source(session, host_ids, ending_after=ending_after, lease_id=lease_id,
                      reservation_id=reservation_id)
        for host_id, reservations in held.items():
            if host_id in found:
                found[host_id].extend(reservations)
    for reservations in found.values():
        reservations.sort(key=lambda r: (r.start_date, r.end_date, r.id))
    return found
