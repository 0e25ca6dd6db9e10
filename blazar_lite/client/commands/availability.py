"""`blazar-lite availability …`: when a reservation would fit, and what hosts hold over time."""

from __future__ import annotations

from typing import Any

import click

from blazar_lite.client import Client
from blazar_lite.client.base import is_uuid
from blazar_lite.client.commands.common import output_option, print_json, table, with_client
from blazar_lite.client.commands.lease_options import PHYSICAL_RESERVATION, RESERVATION

WINDOW_COLUMNS = ("start_date", "end_date", "hosts")
TIMELINE_COLUMNS = ("host", "start_date", "end_date", "state", "used")


@click.group()
def availability() -> None:
    """When capacity is free: the earliest windows a reservation fits in, and what hosts hold."""


def _hosts_cell(hosts: list[dict[str, Any]]) -> str:
    return ", ".join(host["hypervisor_hostname"] + (f" ({host['slots']} slots)" if host["slots"] > 1 else "")
                     for host in hosts)


@availability.command("search")
@click.option("--duration", required=True, metavar="DURATION", help="How long the lease lasts: 90m, 24h, 2d, 1d12h.")
@click.option("--after", metavar="DATE", help="The lease starts from then (default: now).")
@click.option("--before", metavar="DATE", help="The lease ends by then (default: 30 days after --after).")
@click.option("--limit", type=click.IntRange(1), help="How many windows at most (the service's default: 5).")
@click.option("--physical-reservation", "physical", type=PHYSICAL_RESERVATION, metavar="min=N,max=N,…",
              help="Whole hosts, as `lease create` takes them.")
@click.option("--reservation", type=RESERVATION, metavar="resource_type=TYPE,…",
              help="Instance slots (or whole hosts), as `lease create` takes them; a flavor by uuid or name.")
@output_option
@with_client
def search(client: Client, duration: str, after: str | None, before: str | None, limit: int | None,
           physical: dict[str, Any] | None, reservation: dict[str, Any] | None, output_format: str) -> None:
    """The earliest windows in which one reservation fits, each with the hosts a lease would use.
    A lease created with a window's dates and the same reservation gets it, unless another takes
    it first. When none fits, the service says the most there is."""
    if (physical is None) == (reservation is None):
        raise click.UsageError("Give the reservation to search for: --physical-reservation or --reservation.")
    wanted = physical or reservation or {}
    if wanted.get("flavor_id") and not is_uuid(wanted["flavor_id"]):
        wanted = {**wanted, "flavor_id": client.flavors.id_of(wanted["flavor_id"])}
    answer = client.availability.search(wanted, duration, after=after, before=before, limit=limit)
    if output_format == "json":
        print_json(answer)
    elif answer["availability"]:
        click.echo(table(WINDOW_COLUMNS, ([w["start_date"], w["end_date"], _hosts_cell(w["hosts"])]
                                          for w in answer["availability"])))
    else:
        click.echo(answer["message"])


@availability.command("timeline")
@click.option("--start", metavar="DATE", help="From (default: now).")
@click.option("--end", metavar="DATE", help="Until (default: 30 days after the start).")
@output_option
@with_client
def timeline(client: Client, start: str | None, end: str | None, output_format: str) -> None:
    """What every host holds, period by period: free, partial (instance slots, room left) or full
    (held whole, or a resource used up)."""
    answer = client.availability.timeline(start=start, end=end)
    if output_format == "json":
        print_json(answer)
        return
    click.echo(table(TIMELINE_COLUMNS, ([host["hypervisor_hostname"], period["start_date"], period["end_date"],
                                         period["state"], period["used"]]
                                        for host in answer["timeline"] for period in host["periods"])))
