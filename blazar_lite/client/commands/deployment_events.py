"""`blazar-lite deployment event …`: what a deployment's governor webhook is sent, and every
attempt to deliver it."""

from __future__ import annotations

import click

from blazar_lite.client import Client
from blazar_lite.client.commands.common import event_filter_options, output_option, show_events, with_client

# For the help text only: the service checks the type and answers with the list it takes.
GOVERNOR_EVENTS = ("scale-down-request", "capacity-offer", "evacuation")


@click.group("event")
def deployment_event() -> None:
    """The events a deployment's governor webhook is sent: scale-down requests, capacity offers
    and evacuations, with every attempt to deliver each."""


@deployment_event.command("list")
@click.argument("deployment_name", metavar="DEPLOYMENT")
@event_filter_options(GOVERNOR_EVENTS)
@click.option("--project-id", help="Admins: the project the deployment is in (default: yours).")
@output_option
@with_client
def list_deployment_events(client: Client, deployment_name: str, status: str | None, event_type: str | None,
                           limit: int | None, project_id: str | None, output_format: str) -> None:
    """The events sent (or to be sent) to a deployment's governor webhook, newest first: how many
    attempts each took and the last one's error; json: every attempt, and the body sent."""
    events = client.deployments.events(deployment_name, status=status, event_type=event_type, limit=limit,
                                       project_id=project_id)
    show_events(events, output_format)
