"""`blazar-lite flavor …`: instance sizes (admins write; everyone reads the public ones)."""

from __future__ import annotations

from typing import Any

import click

from blazar_lite.client import Client
from blazar_lite.client.commands.common import KEY_VALUE, output_option, show_list, show_one, with_client

FLAVOR_COLUMNS = ("id", "name", "vcpus", "ram", "disk", "is_public")

flavor_argument = click.argument("flavor_ref", metavar="FLAVOR")
property_option = click.option("--property", "properties", type=KEY_VALUE, multiple=True, metavar="KEY=VALUE",
                               help="An extra spec (repeat for several).")


@click.group()
def flavor() -> None:
    """Flavors (instance sizes). FLAVOR is a uuid or a name."""


@flavor.command("list")
@output_option
@with_client
def list_flavors(client: Client, output_format: str) -> None:
    """List the flavors you may see (json: with their extra specs)."""
    show_list(client.flavors.list(), FLAVOR_COLUMNS, output_format)


@flavor.command("show")
@flavor_argument
@output_option
@with_client
def show_flavor(client: Client, flavor_ref: str, output_format: str) -> None:
    """Show a flavor with its extra specs."""
    show_one(client.flavors.get(flavor_ref), output_format)


@flavor.command("create")
@click.argument("name")
@click.option("--vcpus", type=int, required=True)
@click.option("--ram", type=int, required=True, help="Memory in MB.")
@click.option("--disk", type=int, default=0, show_default=True, help="Root disk in GB.")
@click.option("--public/--private", "is_public", default=True, show_default=True,
              help="Private flavors are seen only by admins and the projects they are shared with.")
@property_option
@click.option("--id", "flavor_id", metavar="UUID", help="The flavor's uuid (default: a new one).")
@output_option
@with_client
def create_flavor(client: Client, name: str, vcpus: int, ram: int, disk: int, is_public: bool,
                  properties: tuple[tuple[str, str], ...], flavor_id: str | None, output_format: str) -> None:
    """Create a flavor."""
    created = client.flavors.create(name, vcpus=vcpus, ram=ram, disk=disk, is_public=is_public,
                                    extra_specs=dict(properties), flavor_id=flavor_id)
    show_one(created, output_format)


@flavor.command("update")
@flavor_argument
@click.option("--name", help="A new name.")
@click.option("--vcpus", type=int)
@click.option("--ram", type=int, help="Memory in MB.")
@click.option("--disk", type=int, help="Root disk in GB.")
@click.option("--public/--private", "is_public", default=None)
@property_option
@click.option("--unset-property", "unset", multiple=True, metavar="KEY",
              help="An extra spec to remove (repeat for several).")
@output_option
@with_client
def update_flavor(client: Client, flavor_ref: str, name: str | None, vcpus: int | None, ram: int | None,
                  disk: int | None, is_public: bool | None, properties: tuple[tuple[str, str], ...],
                  unset: tuple[str, ...], output_format: str) -> None:
    """Change a flavor; extra specs are merged into its own."""
    specs: dict[str, str | None] = dict(properties)
    both = sorted(set(specs) & set(unset))
    if both:
        raise click.UsageError(f"--property and --unset-property both name {', '.join(both)}.")
    specs.update(dict.fromkeys(unset))
    fields = {"name": name, "vcpus": vcpus, "ram": ram, "disk": disk, "is_public": is_public}
    changes: dict[str, Any] = {key: value for key, value in fields.items() if value is not None}
    if specs:
        changes["extra_specs"] = specs
    if not changes:
        raise click.UsageError("Nothing to update: give --name, --vcpus, --ram, --disk, --public/--private, "
                               "--property or --unset-property.")
    show_one(client.flavors.update(flavor_ref, **changes), output_format)


@flavor.command("delete")
@flavor_argument
@with_client
def delete_flavor(client: Client, flavor_ref: str) -> None:
    """Delete a flavor."""
    client.flavors.delete(flavor_ref)
    click.echo(f"Deleted flavor {flavor_ref}.")
