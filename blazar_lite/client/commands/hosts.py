"""`blazar-lite host …`: hosts registered for reservations (admin only by default)."""

from __future__ import annotations

from typing import Any

import click

from blazar_lite.client import Client
from blazar_lite.client.commands.common import (
    KEY_VALUE,
    output_option,
    print_json,
    refuse_keys,
    show_list,
    show_one,
    table,
    with_client,
)

HOST_COLUMNS = ("id", "hypervisor_hostname", "vcpus", "memory_mb", "local_gb", "reservable", "status")
ALLOCATION_COLUMNS = ("resource_id", "reservation_id", "lease_id", "start_date", "end_date")
STATUSES = ("up", "down", "maintenance")

host_argument = click.argument("host_ref", metavar="HOST")
extra_option = click.option("--extra", "extras", type=KEY_VALUE, multiple=True, metavar="KEY=VALUE",
                            help="An extra capability (repeat for several).")


@click.group()
def host() -> None:
    """Hosts registered for reservations. HOST is an id or a hypervisor hostname."""


@host.command("list")
@output_option
@with_client
def list_hosts(client: Client, output_format: str) -> None:
    """List the hosts (json: with their extra capabilities)."""
    show_list(client.hosts.list(), HOST_COLUMNS, output_format)


@host.command("show")
@host_argument
@output_option
@with_client
def show_host(client: Client, host_ref: str, output_format: str) -> None:
    """Show a host with its extra capabilities."""
    show_one(client.hosts.get(host_ref), output_format)


@host.command("create")
@click.argument("name")
@click.option("--vcpus", type=int, help="Default: the existing resource provider NAME's VCPU inventory.")
@click.option("--memory-mb", type=int, help="Default: its MEMORY_MB inventory.")
@click.option("--local-gb", type=int, help="Default: its DISK_GB inventory.")
@extra_option
@output_option
@with_client
def create_host(client: Client, name: str, vcpus: int | None, memory_mb: int | None, local_gb: int | None,
                extras: tuple[tuple[str, str], ...], output_format: str) -> None:
    """Register the compute node NAME for reservations: its resource provider (created, or adopted
    when one of that name exists), its reservation provider and its place in the freepool."""
    refuse_keys("--extra", dict(extras), {"name": "the NAME argument", "vcpus": "--vcpus",
                                          "memory_mb": "--memory-mb", "local_gb": "--local-gb"})
    resources = {"vcpus": vcpus, "memory_mb": memory_mb, "local_gb": local_gb}
    fields = {**dict(extras), **{key: value for key, value in resources.items() if value is not None}}
    show_one(client.hosts.create(name, **fields), output_format)


@host.command("update")
@host_argument
@extra_option
@click.option("--reservable/--not-reservable", default=None, help="Whether leases may take the host.")
@click.option("--status", type=click.Choice(STATUSES), help="The host's operational status.")
@output_option
@with_client
def update_host(client: Client, host_ref: str, extras: tuple[tuple[str, str], ...], reservable: bool | None,
                status: str | None, output_format: str) -> None:
    """Set extra capabilities, whether the host is reservable, and its status."""
    refuse_keys("--extra", dict(extras), {"reservable": "--reservable/--not-reservable", "status": "--status"})
    values: dict[str, Any] = dict(extras)
    if reservable is not None:
        values["reservable"] = reservable
    if status is not None:
        values["status"] = status
    if not values:
        raise click.UsageError("Nothing to update: give --extra, --reservable/--not-reservable or --status.")
    show_one(client.hosts.update(host_ref, values), output_format)


@host.command("unset")
@host_argument
@click.option("--extra", "keys", multiple=True, required=True, metavar="KEY",
              help="An extra capability to remove (repeat for several).")
@output_option
@with_client
def unset_host(client: Client, host_ref: str, keys: tuple[str, ...], output_format: str) -> None:
    """Remove extra capabilities from a host."""
    show_one(client.hosts.unset(host_ref, keys), output_format)


@host.command("delete")
@host_argument
@with_client
def delete_host(client: Client, host_ref: str) -> None:
    """Unregister a host (refused while a current or future reservation holds it)."""
    client.hosts.delete(host_ref)
    click.echo(f"Deleted host {host_ref}.")


@host.command("allocations")
@click.argument("host_ref", metavar="[HOST]", required=False)
@click.option("--lease-id", help="Only the reservations of this lease.")
@click.option("--reservation-id", help="Only this reservation.")
@output_option
@with_client
def host_allocations(client: Client, host_ref: str | None, lease_id: str | None, reservation_id: str | None,
                     output_format: str) -> None:
    """The current and future reservations of every host, or of HOST (table: one line each)."""
    if host_ref is None:
        allocations = client.hosts.allocations(lease_id=lease_id, reservation_id=reservation_id)
    else:
        allocations = [client.hosts.allocation(host_ref, lease_id=lease_id, reservation_id=reservation_id)]
    if output_format == "json":
        print_json(allocations if host_ref is None else allocations[0])
        return
    rows = []
    for allocation in allocations:
        # A host that nothing holds still gets its line, so every host asked about is answered.
        held = allocation["reservations"] or [{}]
        rows += [[allocation["resource_id"], r.get("id"), r.get("lease_id"), r.get("start_date"),
                  r.get("end_date")] for r in held]
    click.echo(table(ALLOCATION_COLUMNS, rows))


@host.command("free-periods")
@host_argument
@click.option("--start", metavar="DATE", help="From (default: now).")
@click.option("--end", metavar="DATE", help="Until (default: 30 days after the start).")
@output_option
@with_client
def host_free_periods(client: Client, host_ref: str, start: str | None, end: str | None, output_format: str) -> None:
    """The periods in which HOST has no booking (cleaning time kept around each): a whole-host
    lease fits in any window inside one while the host is reservable and up."""
    found = client.hosts.free_periods(host_ref, start=start, end=end)
    if output_format == "json":
        print_json(found)
        return
    click.echo(table(("start_date", "end_date"), ([p["start_date"], p["end_date"]] for p in found["free_periods"])))


@host.command("property-list")
@click.option("--detail", is_flag=True, help="Also whether each is private, and its values.")
@click.option("--all", "include_private", is_flag=True, help="Include private properties.")
@output_option
@with_client
def list_properties(client: Client, detail: bool, include_private: bool, output_format: str) -> None:
    """List the host properties (the extra capability names hosts have)."""
    columns = ("property", "private", "values") if detail else ("property",)
    show_list(client.hosts.properties(detail=detail, include_private=include_private), columns, output_format)


@host.command("property-set")
@click.argument("name")
@click.option("--private/--public", default=None, help="Private properties are left out of listings "
                                                        "unless --all is given.")
@output_option
@with_client
def set_property(client: Client, name: str, private: bool | None, output_format: str) -> None:
    """Make a host property private or public."""
    if private is None:
        raise click.UsageError("Give --private or --public.")
    show_one(client.hosts.set_property(name, private=private), output_format)
