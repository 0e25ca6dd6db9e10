"""`blazar-lite lease …`: a project's leases and their reservations (members write, admins see all)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import click

from blazar_lite.client import Client
from blazar_lite.client.base import is_uuid
from blazar_lite.client.commands.common import cell, output_option, print_json, show_list, table, with_client
from blazar_lite.client.commands.lease_options import (
    DURATION,
    EVENT,
    PHYSICAL_RESERVATION,
    RESERVATION,
    RESERVATION_CHANGE,
)

LEASE_COLUMNS = ("id", "name", "start_date", "end_date", "status")
HISTORY_COLUMNS = ("event", "status", "at", "message")
# The lease's own fields, in the order a person reads them; reservations and events follow.
LEASE_FIELDS = ("id", "name", "status", "status_reason", "degraded", "start_date", "end_date", "before_end_date",
                "project_id", "user_id", "created_at", "updated_at")
# Reservation fields its line already says (id, type, status) or that repeat the lease's.
_RESERVATION_HEADING = ("id", "lease_id", "resource_id", "resource_type", "status", "created_at", "updated_at")
_RESERVATION_FLAGS = ("missing_resources", "resources_changed")
DATE_HELP = '"YYYY-MM-DD HH:MM" (UTC), "now", or ISO 8601 with an offset.'

lease_argument = click.argument("lease_ref", metavar="LEASE")


def _value(value: Any) -> str:
    # Unlike a table cell, None is shown: affinity None (anywhere) is a choice, not a blank.
    return "None" if value is None else cell(value)


def reservation_lines(reservation: Mapping[str, Any]) -> list[str]:
    """A reservation in two lines: its id, type and status; then, indented, its fields that are set."""
    fields = {key: value for key, value in reservation.items()
              if key not in _RESERVATION_HEADING and key not in _RESERVATION_FLAGS and value != ""}
    # An instance reservation boots with its own flavor; say its id once when it is the flavor_id too.
    if fields.get("reservation_flavor_id") == fields.get("flavor_id"):
        fields.pop("reservation_flavor_id", None)
    shown = [f"{key}={_value(value)}" for key, value in fields.items()]
    shown += [key.replace("_", " ") for key in _RESERVATION_FLAGS if reservation.get(key)]
    heading = f"{reservation.get('id')} {reservation.get('resource_type')} ({reservation.get('status')})"
    return [heading, "  " + ", ".join(shown)] if shown else [heading]


def event_line(event: Mapping[str, Any]) -> str:
    return f"{event.get('event_type')} at {event.get('time')} ({event.get('status')})"


def lease_table(lease: Mapping[str, Any]) -> str:
    """A field/value table of the lease; each reservation and event on lines of its own."""
    others = sorted(key for key in lease if key not in (*LEASE_FIELDS, "reservations", "events"))
    rows: list[tuple[str, Any]] = [(key, lease.get(key)) for key in (*LEASE_FIELDS, *others)]
    reservations = [line for r in lease.get("reservations") or [] for line in reservation_lines(r)]
    for field, lines in (("reservations", reservations),
                         ("events", [event_line(e) for e in lease.get("events") or []])):
        # The field is named once; its further lines leave the first column blank.
        rows += [(field if index == 0 else "", line) for index, line in enumerate(lines or [""])]
    return table(("Field", "Value"), rows)


def print_lease(lease: Mapping[str, Any], output_format: str) -> None:
    if output_format == "json":
        print_json(lease)
    else:
        click.echo(lease_table(lease))


def _with_flavor_ids(client: Client, reservations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reservations, with a flavor_id that is a flavor's name replaced by its uuid (the service
    takes only uuids)."""
    return [{**r, "flavor_id": client.flavors.id_of(r["flavor_id"])}
            if r.get("flavor_id") and not is_uuid(r["flavor_id"]) else r for r in reservations]


def _one_of(**given: Any) -> None:
    """A usage error when more than one of these options (by parameter name) is given."""
    named = [f"--{name.replace('_', '-')}" for name, value in given.items() if value is not None]
    if len(named) > 1:
        raise click.UsageError(f"{' and '.join(named)} both change the same date; give one of them.")


@click.group()
def lease() -> None:
    """Leases: reservations of hosts or instance slots for a window. LEASE is a uuid or a name."""


@lease.command("list")
@click.option("--project-id", help="Admins: only this project's leases (default: every project's).")
@output_option
@with_client
def list_leases(client: Client, project_id: str | None, output_format: str) -> None:
    """List the leases of your project (admins: of every project); json: with reservations and events."""
    show_list(client.leases.list(project_id=project_id), LEASE_COLUMNS, output_format)


@lease.command("show")
@lease_argument
@output_option
@with_client
def show_lease(client: Client, lease_ref: str, output_format: str) -> None:
    """Show a lease with its reservations and events."""
    print_lease(client.leases.get(lease_ref), output_format)


@lease.command("history")
@lease_argument
@output_option
@with_client
def lease_history(client: Client, lease_ref: str, output_format: str) -> None:
    """What happened to a lease, oldest first: each event, the status it left the lease in, and a
    message; json: with each event's details. A deleted lease's history is reached by its uuid."""
    show_list(client.leases.history(lease_ref), HISTORY_COLUMNS, output_format)


@lease.command("create")
@click.argument("name")
@click.option("--start-date", default="now", show_default=True, metavar="DATE",
              help=f"{DATE_HELP} Or earliest: the first window of --duration in which every reservation fits.")
@click.option("--end-date", metavar="DATE", help=f"{DATE_HELP} Not with --start-date earliest.")
@click.option("--duration", metavar="DURATION", help="With --start-date earliest: how long the lease lasts "
                                                     "(90m, 24h, 2d, 1d12h).")
@click.option("--search-until", metavar="DATE", help="With --start-date earliest: the lease ends by then "
                                                     "(default: 30 days from now).")
@click.option("--before-end-date", metavar="DATE",
              help="When the before_end_lease event fires (default: the service's, before the end).")
@click.option("--physical-reservation", "physical", type=PHYSICAL_RESERVATION, multiple=True,
              metavar="min=N,max=N,…",
              help="Whole hosts (repeat for several): min, max, hypervisor_properties and resource_properties "
                   "(JSON filters such as '[\">=\", \"$vcpus\", \"8\"]'), before_end (default, snapshot); "
                   "or one JSON object of these.")
@click.option("--reservation", "reservations", type=RESERVATION, multiple=True, metavar="resource_type=TYPE,…",
              help="Any type (repeat for several): virtual:instance with amount, vcpus, memory_mb, disk_gb, "
                   "affinity (True: one host, False: distinct hosts, None: anywhere) and resource_properties; "
                   "flavor:instance with flavor_id (a uuid or name), amount, affinity, resource_properties; "
                   "or physical:host; or one JSON object.")
@click.option("--event", "events", type=EVENT, multiple=True, metavar="event_type=TYPE,event_date=DATE",
              help="Accepted as Blazar's client sends it; the service sets the events from the dates.")
@output_option
@with_client
def create_lease(client: Client, name: str, start_date: str, end_date: str | None, duration: str | None,
                 search_until: str | None, before_end_date: str | None, physical: tuple[dict[str, Any], ...],
                 reservations: tuple[dict[str, Any], ...], events: tuple[dict[str, Any], ...],
                 output_format: str) -> None:
    """Create the lease NAME. Its reservations are booked for the whole window, or nothing is
    created and the service says what is short. With --start-date earliest the service finds the
    first window of --duration that fits and books it at once."""
    earliest = start_date.strip().lower() == "earliest"
    if earliest and (end_date is not None or before_end_date is not None):
        raise click.UsageError("With --start-date earliest give --duration (and --search-until), not --end-date or "
                               "--before-end-date.")
    if earliest and duration is None:
        raise click.UsageError("With --start-date earliest give --duration, such as 24h.")
    if not earliest and (duration is not None or search_until is not None):
        raise click.UsageError("--duration and --search-until go with --start-date earliest.")
    if not earliest and end_date is None:
        raise click.UsageError("Give --end-date (or --start-date earliest with --duration).")
    wanted = _with_flavor_ids(client, [*physical, *reservations])
    if earliest:
        created = client.leases.create_earliest(name, duration or "", wanted, search_until=search_until)
    else:
        created = client.leases.create(name, start_date, end_date or "", wanted, events=events,
                                       before_end_date=before_end_date)
    print_lease(created, output_format)


@lease.command("update")
@lease_argument
@click.option("--name", help="A new name.")
@click.option("--start-date", metavar="DATE", help=f"A new start (leases that have not started). {DATE_HELP}")
@click.option("--end-date", metavar="DATE", help="A new end.")
@click.option("--prolong-for", type=DURATION, metavar="DURATION", help="Move the end later: 30m, 12h, 1d, 1d12h.")
@click.option("--reduce-by", type=DURATION, metavar="DURATION", help="Move the end earlier.")
@click.option("--defer-by", type=DURATION, metavar="DURATION", help="Move the start later (the end stays).")
@click.option("--advance-by", type=DURATION, metavar="DURATION", help="Move the start earlier (the end stays).")
@click.option("--before-end-date", metavar="DATE",
              help="When the before_end_lease event fires; '' for the service's default.")
@click.option("--reservation", "reservations", type=RESERVATION_CHANGE, multiple=True, metavar="id=UUID,…",
              help="Change a reservation (repeat for several): its id and the fields to change (min, max, "
                   "amount, vcpus, memory_mb, disk_gb, affinity, the filters, before_end); or one JSON object.")
@output_option
@with_client
def update_lease(client: Client, lease_ref: str, name: str | None, start_date: str | None, end_date: str | None,
                 prolong_for: dt.timedelta | None, reduce_by: dt.timedelta | None, defer_by: dt.timedelta | None,
                 advance_by: dt.timedelta | None, before_end_date: str | None,
                 reservations: tuple[dict[str, Any], ...], output_format: str) -> None:
    """Rename a lease, move or resize its window, or change its reservations. The service re-checks
    capacity over the new window; a refused update leaves the lease as it was."""
    _one_of(end_date=end_date, prolong_for=prolong_for, reduce_by=reduce_by)
    _one_of(start_date=start_date, defer_by=defer_by, advance_by=advance_by)
    given = {"name": name, "start_date": start_date, "end_date": end_date, "prolong_for": prolong_for,
             "reduce_by": reduce_by, "defer_by": defer_by, "advance_by": advance_by,
             "before_end_date": before_end_date}
    changes: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
    if reservations:
        changes["reservations"] = list(reservations)
    if not changes:
        raise click.UsageError("Nothing to update: give --name, --start-date, --end-date, --prolong-for, "
                               "--reduce-by, --defer-by, --advance-by, --before-end-date or --reservation.")
    print_lease(client.leases.update(lease_ref, **changes), output_format)


@lease.command("delete")
@lease_argument
@with_client
def delete_lease(client: Client, lease_ref: str) -> None:
    """Delete a lease and give back what it holds (refused while an event is changing it)."""
    client.leases.delete(lease_ref)
    click.echo(f"Deleted lease {lease_ref}.")
