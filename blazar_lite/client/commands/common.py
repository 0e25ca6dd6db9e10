"""What every client command shares: connection options, `-f table|json` output, and turning a
failed request into its message on stderr and exit status 1."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import click

from blazar_lite.client import Client, ClientError, Credentials
from blazar_lite.client.http import DEFAULT_ENDPOINT

ENDPOINT_ENV = "BLAZAR_LITE_ENDPOINT"

# Each option fills the Credentials field of its name without the os_ prefix; the environment
# variables are the OpenStack client's, so an openrc file works as it is.
_CONNECTION_OPTIONS = (
    click.option("--os-endpoint", envvar=ENDPOINT_ENV, show_envvar=True, metavar="URL",
                 help=f"The service's /v1 URL, used instead of the Keystone catalog (without --os-auth-url "
                      f"the default is {DEFAULT_ENDPOINT})."),
    click.option("--os-token", envvar="OS_TOKEN", show_envvar=True, metavar="TOKEN",
                 help="A Keystone token: sent as it is to the endpoint, or rescoped at --os-auth-url."),
    click.option("--os-auth-url", envvar="OS_AUTH_URL", show_envvar=True, metavar="URL",
                 help="Keystone v3, to log in and find the endpoint in the catalog."),
    click.option("--os-username", envvar="OS_USERNAME", show_envvar=True),
    click.option("--os-password", envvar="OS_PASSWORD", show_envvar=True),
    click.option("--os-project-name", envvar="OS_PROJECT_NAME", show_envvar=True),
    click.option("--os-user-domain-name", envvar="OS_USER_DOMAIN_NAME", show_envvar=True, default="Default",
                 show_default=True),
    click.option("--os-project-domain-name", envvar="OS_PROJECT_DOMAIN_NAME", show_envvar=True,
                 default="Default", show_default=True),
    click.option("--os-region-name", envvar="OS_REGION_NAME", show_envvar=True),
    click.option("--os-interface", envvar="OS_INTERFACE", show_envvar=True, default="public", show_default=True,
                 type=click.Choice(["public", "internal", "admin"])),
)
_PREFIX = "os_"


def with_client(command: Callable[..., None], *,
                make_client: Callable[[Credentials, dict[str, Any]], Any] | None = None) -> Callable[..., None]:
    """Give `command` the connection options and, as its first argument, a Client built from
    them; a ClientError it raises is reported as its message on stderr with exit status 1.

    `make_client`, when given, builds the client instead, from the credentials and the command's
    other arguments (it removes those that are its own options)."""

    @functools.wraps(command)
    def run(**kwargs: Any) -> None:
        credentials = Credentials(**{name.removeprefix(_PREFIX): kwargs.pop(name)
                                     for name in list(kwargs) if name.startswith(_PREFIX)})
        try:
            client = make_client(credentials, kwargs) if make_client else Client(credentials)
            command(client, **kwargs)
        except ClientError as exc:
            raise click.ClickException(str(exc)) from None

    for option in reversed(_CONNECTION_OPTIONS):
        run = option(run)
    return run


output_option = click.option("-f", "--format", "output_format", type=click.Choice(["table", "json"]),
                             default="table", show_default=True, help="table for people, json for scripts.")


class KeyValue(click.ParamType):
    """KEY=VALUE, as a (key, value) pair; the value may be empty or hold '='."""

    name = "key=value"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        key, sep, rest = str(value).partition("=")
        if not sep or not key:
            self.fail(f"{value!r} is not KEY=VALUE.", param, ctx)
        return key, rest


KEY_VALUE = KeyValue()


def refuse_keys(option: str, given: Iterable[str], own: Mapping[str, str]) -> None:
    """A usage error when a KEY=VALUE option names a key that has its own option."""
    for key in given:
        if key in own:
            raise click.UsageError(f"{option} {key}=…: {key} has its own option, {own[key]}.")


def cell(value: Any) -> str:
    """A value as table text: nothing for None, lists and mappings spelled out on one line."""
    if value is None:
        return ""
    if isinstance(value, Mapping):
        return ", ".join(f"{key}={cell(item)}" for key, item in sorted(value.items()))
    if isinstance(value, list | tuple):
        return ", ".join(cell(item) for item in value)
    return str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Left-aligned columns under a header and a dashed rule."""
    cells = [[cell(value) for value in row] for row in rows]
    widths = [max([len(header), *(len(row[i]) for row in cells)]) for i, header in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(value.ljust(width) for value, width in zip(values, widths, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * width for width in widths]), *(line(row) for row in cells)])


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


def show_one(item: Mapping[str, Any], output_format: str) -> None:
    """One object: a field/value table, or the object as JSON."""
    if output_format == "json":
        print_json(item)
    else:
        click.echo(table(("Field", "Value"), sorted(item.items())))


def show_list(items: Sequence[Mapping[str, Any]], columns: Sequence[str], output_format: str) -> None:
    """Several objects: a table of these columns, or the objects as JSON (every field)."""
    if output_format == "json":
        print_json(list(items))
    else:
        click.echo(table(columns, ([item.get(column) for column in columns] for item in items)))


EVENT_COLUMNS = ("id", "type", "status", "created_at", "attempts", "last_error")


def show_events(events: Sequence[Mapping[str, Any]], output_format: str) -> None:
    """An event history (a webhook's or a deployment's): a table with each event's number of
    attempts and the last one's error, or the events as JSON with every attempt and the payload."""
    if output_format == "json":
        print_json(list(events))
        return
    rows = []
    for event in events:
        attempts = event.get("attempts") or []
        rows.append([event.get("id"), event.get("type"), event.get("status"), event.get("created_at"),
                     len(attempts), attempts[-1].get("error") if attempts else None])
    click.echo(table(EVENT_COLUMNS, rows))


def event_filter_options(types: Sequence[str]) -> Callable[[Any], Any]:
    """--status, --type and --limit of an event history whose event types are `types`. The
    service checks the values and says which it takes."""

    def add(command: Any) -> Any:
        command = click.option("--limit", type=int, help="At most this many events, newest first (the "
                                                         "service's default: 100).")(command)
        command = click.option("--type", "event_type", metavar="TYPE",
                               help=f"Only events of this type: {', '.join(types)}.")(command)
        return click.option("--status", help="Only events in this state: PENDING, SENDING, DELIVERED or "
                                             "FAILED.")(command)

    return add
