"""`blazar-lite webhook …`: a project's webhooks, where its lease events are POSTed signed with the
webhook's secret, and the events sent to each (members write their project's; admins see all)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from blazar_lite.client import Client
from blazar_lite.client.commands.common import (
    event_filter_options,
    output_option,
    print_json,
    show_events,
    show_one,
    table,
    with_client,
)

WEBHOOK_COLUMNS = ("id", "project_id", "url", "events", "description")
# For the help text only: the service checks the names and answers with the list it takes.
LEASE_EVENTS = ("lease.created", "lease.updated", "lease.deleted", "lease.started", "lease.before_end",
                "lease.ended", "lease.error", "lease.degraded", "lease.idle")

webhook_argument = click.argument("webhook_id", metavar="WEBHOOK")
url_help = "Where the events are POSTed (http:// or https://)."
secret_help = "The key of the HMAC that signs each event: 16 to 128 characters without spaces."
event_help = f"A lease event to send (repeat for several): {', '.join(LEASE_EVENTS)}."


def _readable(webhook: Mapping[str, Any]) -> dict[str, Any]:
    # An empty event list means every event, which a blank table cell would not say.
    return {**webhook, "events": webhook.get("events") or "all"}


def _show(webhook: Mapping[str, Any], output_format: str) -> None:
    show_one(webhook if output_format == "json" else _readable(webhook), output_format)


def _events(names: tuple[str, ...]) -> list[str] | None:
    return list(names) if names else None


@click.group()
def webhook() -> None:
    """Webhooks: your project's lease events (created, started, before_end, ended, …) POSTed,
    signed, to a URL of yours. WEBHOOK is a webhook's id."""


@webhook.command("list")
@output_option
@with_client
def list_webhooks(client: Client, output_format: str) -> None:
    """List your project's webhooks (admins: every project's)."""
    hooks = client.webhooks.list()
    if output_format == "json":
        print_json(hooks)
    else:
        click.echo(table(WEBHOOK_COLUMNS, ([_readable(h).get(c) for c in WEBHOOK_COLUMNS] for h in hooks)))


@webhook.command("show")
@webhook_argument
@output_option
@with_client
def show_webhook(client: Client, webhook_id: str, output_format: str) -> None:
    """Show a webhook, with its secret."""
    _show(client.webhooks.get(webhook_id), output_format)


@webhook.command("create")
@click.option("--url", required=True, help=url_help)
@click.option("--secret", help=f"{secret_help} Default: a random one, shown with the webhook.")
@click.option("--event", "event_names", multiple=True, metavar="EVENT",
              help=f"{event_help} Default: all of them.")
@click.option("--description", help="Free text.")
@output_option
@with_client
def create_webhook(client: Client, url: str, secret: str | None, event_names: tuple[str, ...],
                   description: str | None, output_format: str) -> None:
    """Add a webhook for your project's lease events."""
    created = client.webhooks.create(url, secret=secret, events=_events(event_names), description=description)
    _show(created, output_format)


@webhook.command("set")
@webhook_argument
@click.option("--url", help=url_help)
@click.option("--secret", help=secret_help)
@click.option("--event", "event_names", multiple=True, metavar="EVENT",
              help=f"{event_help} Replaces the webhook's list.")
@click.option("--all-events", is_flag=True, help="Send every lease event from now on.")
@click.option("--description", help="Free text; \"\" empties it.")
@output_option
@with_client
def set_webhook(client: Client, webhook_id: str, url: str | None, secret: str | None, event_names: tuple[str, ...],
                all_events: bool, description: str | None, output_format: str) -> None:
    """Change what is given of a webhook; the rest keeps its value."""
    if event_names and all_events:
        raise click.UsageError("--event and --all-events contradict each other; give one of them.")
    # The service reads an empty event list as "every event".
    events = [] if all_events else _events(event_names)
    if url is None and secret is None and events is None and description is None:
        raise click.UsageError("Nothing to set: give --url, --secret, --event, --all-events or --description.")
    _show(client.webhooks.update(webhook_id, url=url, secret=secret, events=events, description=description),
          output_format)


@webhook.command("delete")
@webhook_argument
@with_client
def delete_webhook(client: Client, webhook_id: str) -> None:
    """Delete a webhook; its events still waiting to be sent are dropped."""
    client.webhooks.delete(webhook_id)
    click.echo(f"Deleted webhook {webhook_id}.")


@webhook.command("events")
@webhook_argument
@event_filter_options(LEASE_EVENTS)
@output_option
@with_client
def webhook_events(client: Client, webhook_id: str, status: str | None, event_type: str | None, limit: int | None,
                   output_format: str) -> None:
    """The events sent (or to be sent) to a webhook, newest first: how many attempts each took
    and the last one's error; json: every attempt, and the body sent."""
    show_events(client.webhooks.events(webhook_id, status=status, event_type=event_type, limit=limit),
                output_format)
