"""`blazar-lite deployment key …`: a deployment's governor keys (certificates whose private keys
sign a governor's tokens), and `generate`, which makes a key pair for a governor locally."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

import click

from blazar_lite.client import Client
from blazar_lite.client.commands.common import output_option, show_list, show_one, with_client
from blazar_lite.client.governor import KEY_TYPES, generate_private_key, private_key_pem, self_signed_certificate

KEY_COLUMNS = ("name", "role", "fingerprint", "description", "created_at")
ROLES = ("admin", "read-only")

deployment_argument = click.argument("deployment_name", metavar="DEPLOYMENT")
key_argument = click.argument("key_name", metavar="KEY")
project_option = click.option("--project-id", help="Admins: the project the deployment is in (default: yours).")


def show_key(key: dict[str, Any], output_format: str) -> None:
    """A key; the table leaves out the certificate, whose PEM lines would break its columns (the
    json has it)."""
    show_one(key if output_format == "json" else {k: v for k, v in key.items() if k != "certificate"},
             output_format)


@click.group("key")
def deployment_key() -> None:
    """A deployment's governor keys. A governor signs its tokens with a key's private key and
    names the key in them; an admin key may scale the deployment's shapes, a read-only key may
    only list their instances. KEY is a key's name."""


@deployment_key.command("list")
@deployment_argument
@project_option
@output_option
@with_client
def list_keys(client: Client, deployment_name: str, project_id: str | None, output_format: str) -> None:
    """List a deployment's keys (json: with their certificates)."""
    show_list(client.deployment_keys.list(deployment_name, project_id=project_id), KEY_COLUMNS, output_format)


@deployment_key.command("show")
@deployment_argument
@key_argument
@project_option
@output_option
@with_client
def show_key_command(client: Client, deployment_name: str, key_name: str, project_id: str | None,
                     output_format: str) -> None:
    """Show a key: its role and certificate fingerprint (json: also the certificate)."""
    show_key(client.deployment_keys.get(deployment_name, key_name, project_id=project_id), output_format)


@deployment_key.command("create")
@deployment_argument
@click.argument("name")
@click.option("--certificate", "certificate_file", type=click.File("r"), required=True, metavar="FILE",
              help="The governor's certificate in PEM (RSA, or EC on P-256); - reads it from stdin.")
@click.option("--role", type=click.Choice(ROLES), required=True,
              help="admin may launch, delete, start and stop the shapes' instances; read-only may only list them.")
@click.option("--description", help="Free text.")
@project_option
@output_option
@with_client
def create_key(client: Client, deployment_name: str, name: str, certificate_file: IO[str], role: str,
               description: str | None, project_id: str | None, output_format: str) -> None:
    """Add the key NAME to a deployment: a governor holding the certificate's private key may
    then act as this key."""
    created = client.deployment_keys.create(deployment_name, name, certificate=certificate_file.read(), role=role,
                                            description=description, project_id=project_id)
    show_key(created, output_format)


@deployment_key.command("rename")
@deployment_argument
@key_argument
@click.argument("new_name")
@project_option
@output_option
@with_client
def rename_key(client: Client, deployment_name: str, key_name: str, new_name: str, project_id: str | None,
               output_format: str) -> None:
    """Rename a key; its governor must then name it so in its tokens (--key-name)."""
    show_key(client.deployment_keys.rename(deployment_name, key_name, new_name, project_id=project_id),
             output_format)


@deployment_key.command("delete")
@deployment_argument
@key_argument
@project_option
@with_client
def delete_key(client: Client, deployment_name: str, key_name: str, project_id: str | None) -> None:
    """Revoke a key: the service refuses its tokens from the next request on."""
    client.deployment_keys.delete(deployment_name, key_name, project_id=project_id)
    click.echo(f"Revoked key {key_name} of deployment {deployment_name}.")


def _write_private_key(path: str, pem: bytes) -> None:
    # Created readable by its owner only, from the first byte; an existing file is never
    # replaced, since that could destroy the key a running governor signs with.
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise click.ClickException(f"{path} already exists; choose another --out (a private key is never "
                                   "overwritten).") from None
    except OSError as exc:
        raise click.ClickException(f"Cannot create {path}: {exc.strerror or exc}.") from None
    with os.fdopen(descriptor, "wb") as out:
        out.write(pem)


@deployment_key.command("generate")
@click.option("--out", "key_file", required=True, metavar="FILE",
              help="Where to write the private key (PEM, mode 0600); the file must not exist yet.")
@click.option("--type", "key_type", type=click.Choice(KEY_TYPES), default="ec", show_default=True,
              help="ec: P-256, tokens signed ES256; rsa: 3072 bits, tokens signed RS256.")
@click.option("--certificate-out", metavar="FILE", help="Write the certificate here instead of printing it.")
@click.option("--common-name", default="blazar-lite governor", show_default=True,
              help="The certificate's subject (for people: the service does not check it).")
@click.option("--days", type=click.IntRange(min=1), default=365, show_default=True,
              help="How long the certificate is valid.")
def generate_key(key_file: str, key_type: str, certificate_out: str | None, common_name: str, days: int) -> None:
    """Make a key pair for a governor, without contacting the service: write the private key to
    --out and print its self-signed certificate, to give to `deployment key create`:

    \b
    blazar-lite deployment key generate --out gov.key | blazar-lite deployment key create shop gov
    --role admin --certificate -"""
    private_key = generate_private_key(key_type)
    certificate = self_signed_certificate(private_key, common_name, days)
    _write_private_key(key_file, private_key_pem(private_key))
    if certificate_out is None:
        click.echo(certificate, nl=False)
        return
    try:
        Path(certificate_out).write_text(certificate)
    except OSError as exc:
        raise click.ClickException(f"Cannot write {certificate_out}: {exc.strerror or exc}.") from None
    click.echo(f"Wrote the private key to {key_file} and its certificate to {certificate_out}.")
