"""`blazar-lite config …` (the server configuration) and `blazar-lite scriptlet test` (a
placement scriptlet tried against the live inventory); admins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from blazar_lite.client import Client
from blazar_lite.client.commands.common import output_option, print_json, show_one, table, with_client


@click.group()
def config() -> None:
    """The server configuration stored in the service (admins), e.g. the placement scriptlet:
    blazar-lite config set instances.placement.scriptlet "$(cat placement.star)"."""


@config.command("show")
@output_option
@with_client
def show_config(client: Client, output_format: str) -> None:
    """Show every key that is set."""
    show_one(client.config.get(), output_format)


@config.command("get")
@click.argument("key")
@with_client
def get_key(client: Client, key: str) -> None:
    """Print one key's value as it is (nothing when it is not set)."""
    value = client.config.get().get(key)
    if value is not None:
        click.echo(value, nl=not value.endswith("\n"))


@config.command("set")
@click.argument("key")
@click.argument("value")
@with_client
def set_key(client: Client, key: str, value: str) -> None:
    """Set KEY to VALUE (other keys keep theirs). The service checks the value first: a scriptlet
    that does not compile is refused with its line and column."""
    client.config.set(key, value)
    click.echo(f"{key} is set.")


@config.command("unset")
@click.argument("key")
@with_client
def unset_key(client: Client, key: str) -> None:
    """Unset KEY."""
    client.config.unset(key)
    click.echo(f"{key} is unset.")


@click.group()
def scriptlet() -> None:
    """The instance placement scriptlet (Starlark)."""


def _read_request(path: str) -> dict[str, Any]:
    try:
        body = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"cannot read a JSON instance-create body from {path}: {exc}",
                                 param_hint="--request") from None
    if not isinstance(body, dict):
        raise click.BadParameter(f"{path} holds JSON that is not an object.", param_hint="--request")
    return body


@scriptlet.command("test")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.option("--request", "request_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="A JSON instance-create body, as POST /v1/instances takes (name, vcpus, memory_mb, ...).")
@output_option
@with_client
def test_scriptlet(client: Client, script: str, request_file: str, output_format: str) -> None:
    """Dry run: compile SCRIPT and run it for one request against the live inventory; show the
    candidates, what it decided and what it logged. Nothing is stored or placed."""
    result = client.config.test_scriptlet(Path(script).read_text(), _read_request(request_file))
    if output_format == "json":
        print_json(result)
        return
    click.echo(f"candidates: {', '.join(result['candidates']) or '(none)'}")
    for rejected in result["rejected"]:
        click.echo(f"  rejected {rejected['node']}: {rejected['reason']}")
    click.echo(f"target set by the scriptlet: {result['target'] or '(none)'}")
    click.echo(f"the instance would go to: {result['node'] or '(nowhere)'} (decided by {result['decided_by']})")
    if result["message"]:
        click.echo(f"because: {result['message']}")
    if result["log"]:
        click.echo(table(("level", "message"), [(line["level"], line["message"]) for line in result["log"]]))
