"""`blazar-lite deployment …` and `blazar-lite deployment shape …`: a project's deployments and
their shapes (instance templates scaled within bounds). Members write their project's; admins
reach another project's with --project-id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from blazar_lite.client import Client
from blazar_lite.client.commands.common import KEY_VALUE, output_option, show_list, show_one, with_client
from blazar_lite.client.commands.deployment_events import deployment_event
from blazar_lite.client.commands.deployment_keys import deployment_key
from blazar_lite.client.commands.instances import size_fields, size_options
from blazar_lite.client.commands.shape_instances import shape_instance

DEPLOYMENT_COLUMNS = ("name", "project_id", "description", "governor_webhook_url", "created_at")
SHAPE_COLUMNS = ("name", "scaling_minimum", "scaling_current", "scaling_maximum", "instance_template", "description")

deployment_argument = click.argument("deployment_name", metavar="DEPLOYMENT")
shape_argument = click.argument("shape_name", metavar="SHAPE")
project_option = click.option("--project-id", help="Admins: the project the deployment is in (default: yours).")
description_option = click.option("--description", help="Free text.")
config_option = click.option("--config", "config", type=KEY_VALUE, multiple=True, metavar="KEY=VALUE",
                             help="A config key and its value (repeat for several).")
webhook_secret_option = click.option(
    "--webhook-secret", metavar="SECRET",
    help="The key of the HMAC that signs each event for the governor: 16 to 128 characters without spaces.")
force_option = click.option("--force", is_flag=True, help="Delete the instances too (otherwise refused while "
                                                          "there are any).")


def _config(pairs: tuple[tuple[str, str], ...]) -> dict[str, str] | None:
    """The --config pairs as an object, or None when none were given (so a PATCH leaves config
    alone)."""
    return dict(pairs) if pairs else None


@click.group()
def deployment() -> None:
    """Deployments: shapes of instances, each scaled by a governor between a minimum and a
    maximum. DEPLOYMENT and SHAPE are names."""


@deployment.command("list")
@project_option
@output_option
@with_client
def list_deployments(client: Client, project_id: str | None, output_format: str) -> None:
    """List the deployments of your project, by name."""
    show_list(client.deployments.list(project_id=project_id), DEPLOYMENT_COLUMNS, output_format)


@deployment.command("show")
@deployment_argument
@project_option
@output_option
@with_client
def show_deployment(client: Client, deployment_name: str, project_id: str | None, output_format: str) -> None:
    """Show a deployment with its config."""
    show_one(client.deployments.get(deployment_name, project_id=project_id), output_format)


@deployment.command("create")
@click.argument("name")
@description_option
@config_option
@click.option("--webhook-url", help="Where events for the governor are sent (http:// or https://).")
@webhook_secret_option
@project_option
@output_option
@with_client
def create_deployment(client: Client, name: str, description: str | None, config: tuple[tuple[str, str], ...],
                      webhook_url: str | None, webhook_secret: str | None, project_id: str | None,
                      output_format: str) -> None:
    """Create the deployment NAME (unique in the project); add shapes with `deployment shape create`.
    Without --webhook-secret the service picks a random secret, shown with the deployment."""
    created = client.deployments.create(name, description=description, config=_config(config),
                                        governor_webhook_url=webhook_url, governor_webhook_secret=webhook_secret,
                                        project_id=project_id)
    show_one(created, output_format)


@deployment.command("set")
@deployment_argument
@description_option
@click.option("--config", "config", type=KEY_VALUE, multiple=True, metavar="KEY=VALUE",
              help="Set a config key, others keeping theirs; KEY= (empty) removes KEY (repeat for several).")
@click.option("--webhook-url", help="Where events for the governor are sent; \"\" removes the webhook.")
@webhook_secret_option
@project_option
@output_option
@with_client
def set_deployment(client: Client, deployment_name: str, description: str | None, config: tuple[tuple[str, str], ...],
                   webhook_url: str | None, webhook_secret: str | None, project_id: str | None,
                   output_format: str) -> None:
    """Change what is given of a deployment; the rest keeps its value."""
    if description is None and not config and webhook_url is None and webhook_secret is None:
        raise click.UsageError("Nothing to set: give --description, --config, --webhook-url or --webhook-secret.")
    updated = client.deployments.update(deployment_name, description=description, config=_config(config),
                                        governor_webhook_url=webhook_url, governor_webhook_secret=webhook_secret,
                                        project_id=project_id)
    show_one(updated, output_format)


@deployment.command("replace")
@deployment_argument
@description_option
@config_option
@click.option("--webhook-url", help="Where events for the governor are sent (http:// or https://).")
@webhook_secret_option
@project_option
@output_option
@with_client
def replace_deployment(client: Client, deployment_name: str, description: str | None,
                       config: tuple[tuple[str, str], ...], webhook_url: str | None, webhook_secret: str | None,
                       project_id: str | None, output_format: str) -> None:
    """Make a deployment's description, config and webhook URL exactly what is given: what is left
    out is emptied (the config is replaced whole, not merged). The webhook secret changes only
    when --webhook-secret is given."""
    replaced = client.deployments.replace(deployment_name, description=description, config=dict(config),
                                          governor_webhook_url=webhook_url, governor_webhook_secret=webhook_secret,
                                          project_id=project_id)
    show_one(replaced, output_format)


@deployment.command("rename")
@deployment_argument
@click.argument("new_name")
@project_option
@output_option
@with_client
def rename_deployment(client: Client, deployment_name: str, new_name: str, project_id: str | None,
                      output_format: str) -> None:
    """Rename a deployment. Governors' tokens name the deployment, so they must use the new name."""
    show_one(client.deployments.rename(deployment_name, new_name, project_id=project_id), output_format)


@deployment.command("delete")
@deployment_argument
@force_option
@project_option
@with_client
def delete_deployment(client: Client, deployment_name: str, force: bool, project_id: str | None) -> None:
    """Delete a deployment with its shapes and keys (refused while its shapes have instances,
    unless --force)."""
    client.deployments.delete(deployment_name, force=force, project_id=project_id)
    click.echo(f"Deleted deployment {deployment_name}.")


@deployment.group("shape")
def shape() -> None:
    """A deployment's shapes: an instance template, and the bounds its instance count stays
    within (scaling_current is how many it has now)."""


shape.add_command(shape_instance)
deployment.add_command(deployment_key)
deployment.add_command(deployment_event)


def template_options(command: Any) -> Any:
    """--template, or the size options, --reservation: what a shape's instances are made from."""
    command = click.option("--reservation", "reservation_id", metavar="RESERVATION_ID",
                           help="A reservation whose slots the instances take (default size: its slot's).")(command)
    command = size_options("sets")(command)
    return click.option("--template", metavar="JSON|@FILE",
                        help='The whole instance template as JSON (e.g. \'{"vcpus": 1, "memory_mb": 512}\'), '
                             "or @FILE to read it from a file; instead of the size options.")(command)


def _read_template(value: str) -> dict[str, Any]:
    if value.startswith("@"):
        try:
            text = Path(value[1:]).read_text()
        except OSError as exc:
            raise click.BadParameter(f"cannot read {value[1:]}: {exc.strerror or exc}", param_hint="--template") \
                from None
    else:
        text = value
    try:
        template = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--template") from None
    if not isinstance(template, dict):
        raise click.BadParameter("the template must be a JSON object.", param_hint="--template")
    return template


def instance_template(client: Client, template: str | None, flavor: str | None, vcpus: int | None,
                      memory_mb: int | None, disk_gb: int | None, reservation_id: str | None) -> dict[str, Any] | None:
    """The template the options describe, or None when none of them is given. A usage error
    when --template is given with the options it replaces."""
    parts = {"--flavor": flavor, "--vcpus": vcpus, "--memory-mb": memory_mb, "--disk-gb": disk_gb,
             "--reservation": reservation_id}
    named = [option for option, value in parts.items() if value is not None]
    if template is not None:
        if named:
            raise click.UsageError(f"Give either --template or {', '.join(named)}, not both: the template is whole.")
        return _read_template(template)
    if not named:
        return None
    fields = size_fields(client, flavor, vcpus, memory_mb, disk_gb)
    if reservation_id is not None:
        fields["reservation_id"] = reservation_id
    return fields


@shape.command("list")
@deployment_argument
@project_option
@output_option
@with_client
def list_shapes(client: Client, deployment_name: str, project_id: str | None, output_format: str) -> None:
    """List a deployment's shapes with their scaling bounds and current instance count."""
    show_list(client.shapes.list(deployment_name, project_id=project_id), SHAPE_COLUMNS, output_format)


@shape.command("show")
@deployment_argument
@shape_argument
@project_option
@output_option
@with_client
def show_shape(client: Client, deployment_name: str, shape_name: str, project_id: str | None,
               output_format: str) -> None:
    """Show a shape: its template, bounds and scaling_current."""
    show_one(client.shapes.get(deployment_name, shape_name, project_id=project_id), output_format)


def _bounds_options(required: bool) -> Any:
    def add(command: Any) -> Any:
        command = click.option("--max", "scaling_maximum", type=int, required=required,
                               help="scaling_maximum: instances the shape has at most.")(command)
        return click.option("--min", "scaling_minimum", type=int, required=required,
                            help="scaling_minimum: instances the shape keeps at least.")(command)
    return add


def _required_template(client: Client, template: str | None, flavor: str | None, vcpus: int | None,
                       memory_mb: int | None, disk_gb: int | None, reservation_id: str | None) -> dict[str, Any]:
    given = instance_template(client, template, flavor, vcpus, memory_mb, disk_gb, reservation_id)
    if given is None:
        raise click.UsageError("Give the instance template: --template, or --flavor or --vcpus and --memory-mb "
                               "(or --reservation).")
    return given


@shape.command("create")
@deployment_argument
@click.argument("name")
@template_options
@_bounds_options(required=True)
@description_option
@config_option
@project_option
@output_option
@with_client
def create_shape(client: Client, deployment_name: str, name: str, template: str | None, flavor: str | None,
                 vcpus: int | None, memory_mb: int | None, disk_gb: int | None, reservation_id: str | None,
                 scaling_minimum: int, scaling_maximum: int, description: str | None,
                 config: tuple[tuple[str, str], ...], project_id: str | None, output_format: str) -> None:
    """Add the shape NAME to a deployment: what its instances are made from, and between how
    many of them a governor scales it."""
    fields = _required_template(client, template, flavor, vcpus, memory_mb, disk_gb, reservation_id)
    created = client.shapes.create(deployment_name, name, instance_template=fields, scaling_minimum=scaling_minimum,
                                   scaling_maximum=scaling_maximum, description=description,
                                   config=_config(config), project_id=project_id)
    show_one(created, output_format)


@shape.command("set")
@deployment_argument
@shape_argument
@template_options
@_bounds_options(required=False)
@description_option
@click.option("--config", "config", type=KEY_VALUE, multiple=True, metavar="KEY=VALUE",
              help="Set a config key, others keeping theirs; KEY= (empty) removes KEY (repeat for several).")
@project_option
@output_option
@with_client
def set_shape(client: Client, deployment_name: str, shape_name: str, template: str | None, flavor: str | None,
              vcpus: int | None, memory_mb: int | None, disk_gb: int | None, reservation_id: str | None,
              scaling_minimum: int | None, scaling_maximum: int | None, description: str | None,
              config: tuple[tuple[str, str], ...], project_id: str | None, output_format: str) -> None:
    """Change what is given of a shape; the rest keeps its value. A new template (given whole)
    applies to instances launched from now on; a maximum below scaling_current is refused."""
    fields = {"instance_template": instance_template(client, template, flavor, vcpus, memory_mb, disk_gb,
                                                     reservation_id),
              "scaling_minimum": scaling_minimum, "scaling_maximum": scaling_maximum, "description": description,
              "config": _config(config)}
    if all(value is None for value in fields.values()):
        raise click.UsageError("Nothing to set: give a template, --min, --max, --description or --config.")
    show_one(client.shapes.update(deployment_name, shape_name, project_id=project_id, **fields), output_format)


@shape.command("replace")
@deployment_argument
@shape_argument
@template_options
@_bounds_options(required=True)
@description_option
@config_option
@project_option
@output_option
@with_client
def replace_shape(client: Client, deployment_name: str, shape_name: str, template: str | None, flavor: str | None,
                  vcpus: int | None, memory_mb: int | None, disk_gb: int | None, reservation_id: str | None,
                  scaling_minimum: int, scaling_maximum: int, description: str | None,
                  config: tuple[tuple[str, str], ...], project_id: str | None, output_format: str) -> None:
    """Make every field of a shape but its name what is given: description and config left out
    are emptied."""
    fields = _required_template(client, template, flavor, vcpus, memory_mb, disk_gb, reservation_id)
    replaced = client.shapes.replace(deployment_name, shape_name, instance_template=fields,
                                     scaling_minimum=scaling_minimum, scaling_maximum=scaling_maximum,
                                     description=description, config=dict(config), project_id=project_id)
    show_one(replaced, output_format)


@shape.command("rename")
@deployment_argument
@shape_argument
@click.argument("new_name")
@project_option
@output_option
@with_client
def rename_shape(client: Client, deployment_name: str, shape_name: str, new_name: str, project_id: str | None,
                 output_format: str) -> None:
    """Rename a shape (names are unique within the deployment)."""
    show_one(client.shapes.rename(deployment_name, shape_name, new_name, project_id=project_id), output_format)


@shape.command("delete")
@deployment_argument
@shape_argument
@force_option
@project_option
@with_client
def delete_shape(client: Client, deployment_name: str, shape_name: str, force: bool, project_id: str | None) -> None:
    """Delete a shape (refused while it has instances, unless --force)."""
    client.shapes.delete(deployment_name, shape_name, force=force, project_id=project_id)
    click.echo(f"Deleted shape {shape_name} of deployment {deployment_name}.")
