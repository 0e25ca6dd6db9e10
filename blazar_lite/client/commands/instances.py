"""`blazar-lite instance …`: a project's instances, on demand or in a reservation, real or
forthcoming (members write their project's, admins see all)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from blazar_lite.client import Client
from blazar_lite.client.commands.common import output_option, show_list, show_one, with_client

INSTANCE_COLUMNS = ("id", "name", "status", "host", "vcpus", "memory_mb", "disk_gb", "reservation_id")

instance_argument = click.argument("instance_ref", metavar="INSTANCE")


Decorator = Callable[[Callable[..., None]], Callable[..., None]]


def size_options(verb: str) -> Decorator:
    """--flavor, --vcpus, --memory-mb and --disk-gb, their help saying what the size does (`verb`)."""
    options = (
        click.option("--flavor", metavar="FLAVOR", help=f"A flavor (uuid or name) that {verb} every size."),
        click.option("--vcpus", type=int, help=f"Instead of --flavor: {verb} the vCPUs."),
        click.option("--memory-mb", type=int, help=f"Instead of --flavor: {verb} the MB of memory."),
        click.option("--disk-gb", type=int, help=f"Instead of --flavor: {verb} the GB of disk."),
    )

    def add(command: Callable[..., None]) -> Callable[..., None]:
        for option in reversed(options):
            command = option(command)
        return command

    return add


def size_fields(client: Client, flavor: str | None, vcpus: int | None, memory_mb: int | None,
                disk_gb: int | None) -> dict[str, Any]:
    """The size options given, as request fields: a flavor's name resolved to its uuid (the service
    takes only uuids). A usage error when a flavor and sizes are both given, before any request."""
    given = {"vcpus": vcpus, "memory_mb": memory_mb, "disk_gb": disk_gb}
    named = [f"--{key.replace('_', '-')}" for key, value in given.items() if value is not None]
    if flavor is not None and named:
        raise click.UsageError(f"Give either --flavor or {', '.join(named)}, not both: the flavor sets every size.")
    fields = {key: value for key, value in given.items() if value is not None}
    if flavor is not None:
        fields["flavor_id"] = client.flavors.id_of(flavor)
    return fields


@click.group()
def instance() -> None:
    """Instances: on demand, in an active reservation, or forthcoming (room held for an instance
    that exists only on paper until committed). INSTANCE is a uuid or a name."""


@instance.command("list")
@click.option("--project-id", help="Admins: only this project's instances (default: every project's).")
@output_option
@with_client
def list_instances(client: Client, project_id: str | None, output_format: str) -> None:
    """List the instances of your project (admins: of every project), oldest first."""
    show_list(client.instances.list(project_id=project_id), INSTANCE_COLUMNS, output_format)


@instance.command("show")
@instance_argument
@output_option
@with_client
def show_instance(client: Client, instance_ref: str, output_format: str) -> None:
    """Show an instance: its size, node (host), reservation and status."""
    show_one(client.instances.get(instance_ref), output_format)


@instance.command("create")
@click.argument("name", required=False)
@size_options("sets")
@click.option("--reservation", "reservation_id", metavar="RESERVATION_ID",
              help="An active reservation of your project to create the instance in (default size: its slot's).")
@click.option("--host", metavar="NODE",
              help="Admins: the node to put the instance on (default: the allocator chooses).")
@click.option("--forthcoming", is_flag=True,
              help="Only hold room for the instance until `instance commit`; NAME and the size become optional.")
@output_option
@with_client
def create_instance(client: Client, name: str | None, flavor: str | None, vcpus: int | None, memory_mb: int | None,
                    disk_gb: int | None, reservation_id: str | None, host: str | None, forthcoming: bool,
                    output_format: str) -> None:
    """Create the instance NAME, on demand (give --flavor, or --vcpus and --memory-mb) or in a
    reservation. The service places it, or says why no node can take it."""
    if name is None and not forthcoming:
        raise click.UsageError("Missing argument 'NAME': only a --forthcoming instance may be created without one.")
    fields = size_fields(client, flavor, vcpus, memory_mb, disk_gb)
    created = client.instances.create(name, reservation_id=reservation_id, host=host, forthcoming=forthcoming,
                                      **fields)
    show_one(created, output_format)


@instance.command("delete")
@instance_argument
@with_client
def delete_instance(client: Client, instance_ref: str) -> None:
    """Delete an instance, real or forthcoming; what it holds is free again."""
    client.instances.delete(instance_ref)
    click.echo(f"Deleted instance {instance_ref}.")


@instance.command("commit")
@instance_argument
@click.option("--name", help="A name, when the forthcoming instance has none yet (or a new one).")
@size_options("completes or changes")
@output_option
@with_client
def commit_instance(client: Client, instance_ref: str, name: str | None, flavor: str | None, vcpus: int | None,
                    memory_mb: int | None, disk_gb: int | None, output_format: str) -> None:
    """Make a forthcoming instance real where it holds its room. The options complete what it
    lacks; a fully specified one needs none."""
    completion = size_fields(client, flavor, vcpus, memory_mb, disk_gb)
    show_one(client.instances.commit(instance_ref, name=name, **completion), output_format)


@instance.command("modify")
@instance_argument
@size_options("sets")
@output_option
@with_client
def modify_instance(client: Client, instance_ref: str, flavor: str | None, vcpus: int | None, memory_mb: int | None,
                    disk_gb: int | None, output_format: str) -> None:
    """Resize an instance on its node (refused when that node lacks the room: it is not moved)."""
    new_sizes = size_fields(client, flavor, vcpus, memory_mb, disk_gb)
    if not new_sizes:
        raise click.UsageError("Nothing to modify: give --flavor, or any of --vcpus, --memory-mb and --disk-gb.")
    show_one(client.instances.modify(instance_ref, **new_sizes), output_format)


@instance.command("rename")
@instance_argument
@click.argument("new_name")
@output_option
@with_client
def rename_instance(client: Client, instance_ref: str, new_name: str, output_format: str) -> None:
    """Rename an instance (names are unique within a project)."""
    show_one(client.instances.rename(instance_ref, new_name), output_format)
