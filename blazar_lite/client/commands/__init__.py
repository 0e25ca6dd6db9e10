"""The client commands of `blazar-lite`: one click group per kind of resource, each command a
call through the Python client."""

from __future__ import annotations

import click

from blazar_lite.client.commands.availability import availability
from blazar_lite.client.commands.deployments import deployment
from blazar_lite.client.commands.flavors import flavor
from blazar_lite.client.commands.hosts import host
from blazar_lite.client.commands.instances import instance
from blazar_lite.client.commands.leases import lease
from blazar_lite.client.commands.server_config import config, scriptlet
from blazar_lite.client.commands.webhooks import webhook

GROUPS = (host, flavor, lease, instance, availability, config, scriptlet, deployment, webhook)


def add_client_commands(cli: click.Group) -> None:
    """Attach every resource group to the `blazar-lite` command."""
    for group in GROUPS:
        cli.add_command(group)
