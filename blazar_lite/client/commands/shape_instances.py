"""`blazar-lite deployment shape instance …`: a shape's instances, launched from its template and
deleted within its scaling bounds, with your own credentials or as a governor.

As a governor (--governor-key and --key-name), each request carries a token signed with the
private key of one of the deployment's keys instead of a Keystone token: what a governor process
does, tried by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from blazar_lite.client import Client, Credentials, GovernorClient, load_governor_key
from blazar_lite.client.commands.common import output_option, show_list, show_one, with_client
from blazar_lite.client.commands.instances import INSTANCE_COLUMNS

GOVERNOR_KEY_ENV = "BLAZAR_LITE_GOVERNOR_KEY"
GOVERNOR_KEY_NAME_ENV = "BLAZAR_LITE_GOVERNOR_KEY_NAME"

deployment_argument = click.argument("deployment_name", metavar="DEPLOYMENT")
shape_argument = click.argument("shape_name", metavar="SHAPE")
instance_argument = click.argument("instance_name", metavar="NAME")


def _client_or_governor(credentials: Credentials, arguments: dict[str, Any]) -> Client | GovernorClient:
    """A GovernorClient signing with the key the governor options name, else the usual Client."""
    key_file, key_name = arguments.pop("governor_key"), arguments.pop("key_name")
    if key_file is None and key_name is None:
        return Client(credentials)
    if key_file is None or key_name is None:
        raise click.UsageError("--governor-key and --key-name go together: the key file signs, the name says which "
                               "of the deployment's keys it is.")
    if credentials.endpoint is None and credentials.auth_url is not None:
        # Without a Keystone login there is no catalog to find the service in.
        raise click.UsageError("A governor calls the service without Keystone: give its URL with --os-endpoint.")
    return GovernorClient(load_governor_key(key_file, key_name), arguments["deployment_name"], credentials.endpoint)


def with_governor_or_client(command: Callable[..., None]) -> Callable[..., None]:
    """with_client, plus --governor-key and --key-name to act as a governor instead."""
    run = with_client(command, make_client=_client_or_governor)
    run = click.option("--key-name", envvar=GOVERNOR_KEY_NAME_ENV, show_envvar=True, metavar="NAME",
                       help="With --governor-key: the name of the deployment key it is.")(run)
    return click.option("--governor-key", envvar=GOVERNOR_KEY_ENV, show_envvar=True, metavar="FILE",
                        help="Act as a governor: sign each request with this PEM private key (RSA or EC P-256) "
                             "instead of using the --os-* credentials; needs --key-name.")(run)


@click.group("instance")
def shape_instance() -> None:
    """A shape's instances: what a governor scales. NAME is the instance's name; launching and
    deleting keep the shape within its scaling minimum and maximum."""


@shape_instance.command("list")
@deployment_argument
@shape_argument
@output_option
@with_governor_or_client
def list_shape_instances(client: Client | GovernorClient, deployment_name: str, shape_name: str,
                         output_format: str) -> None:
    """List a shape's instances, oldest first (read-only keys may do this)."""
    show_list(client.shape_instances.list(deployment_name, shape_name), INSTANCE_COLUMNS, output_format)


@shape_instance.command("launch")
@deployment_argument
@shape_argument
@instance_argument
@output_option
@with_governor_or_client
def launch_shape_instance(client: Client | GovernorClient, deployment_name: str, shape_name: str,
                          instance_name: str, output_format: str) -> None:
    """Launch the instance NAME from the shape's template; refused at the shape's scaling
    maximum, or when the template's reservation has no slot left."""
    show_one(client.shape_instances.launch(deployment_name, shape_name, instance_name), output_format)


@shape_instance.command("delete")
@deployment_argument
@shape_argument
@instance_argument
@with_governor_or_client
def delete_shape_instance(client: Client | GovernorClient, deployment_name: str, shape_name: str,
                          instance_name: str) -> None:
    """Delete one of the shape's instances; refused at the shape's scaling minimum."""
    client.shape_instances.delete(deployment_name, shape_name, instance_name)
    click.echo(f"Deleted instance {instance_name} of shape {shape_name}.")


@shape_instance.command("start")
@deployment_argument
@shape_argument
@instance_argument
@output_option
@with_governor_or_client
def start_shape_instance(client: Client | GovernorClient, deployment_name: str, shape_name: str,
                         instance_name: str, output_format: str) -> None:
    """Start a stopped instance of the shape."""
    show_one(client.shape_instances.start(deployment_name, shape_name, instance_name), output_format)


@shape_instance.command("stop")
@deployment_argument
@shape_argument
@instance_argument
@output_option
@with_governor_or_client
def stop_shape_instance(client: Client | GovernorClient, deployment_name: str, shape_name: str,
                        instance_name: str, output_format: str) -> None:
    """Stop an instance of the shape; it keeps its room on its node (and counts toward the
    shape's scaling_current)."""
    show_one(client.shape_instances.stop(deployment_name, shape_name, instance_name), output_format)
