"""`blazar-lite`: run the service, manage its database, print its sample configuration, and talk to a
running service (the client commands)."""

from __future__ import annotations

import json
import logging
import sys

import click

from blazar_lite.client.commands import add_client_commands
from blazar_lite.settings import Settings, SettingsError, config_sample, load_settings


def configure_logging(settings: Settings) -> None:
    from blazar_lite.web import LOG_FORMAT, RequestIdFilter

    handler: logging.Handler = (logging.FileHandler(settings.logging_file) if settings.logging_file
                                else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.logging_level)


@click.group()
@click.option("--config-file", type=click.Path(dir_okay=False), default=None,
              help="ini file of settings (default: $BLAZAR_LITE_CONFIG or /etc/blazar-lite/blazar-lite.conf).")
@click.pass_context
def main(ctx: click.Context, config_file: str | None) -> None:
    """blazar-lite: reservations and leases for compute capacity."""
    ctx.obj = {"config_file": config_file}


def _settings(ctx: click.Context, **overrides: object) -> Settings:
    try:
        return load_settings(ctx.obj["config_file"], **overrides)
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None


@main.command("config-sample")
def config_sample_command() -> None:
    """Print a sample configuration file with every option at its default."""
    click.echo(config_sample(), nl=False)


@main.command("openapi")
def openapi_command() -> None:
    """Print the OpenAPI document of the API (the one served at /openapi.json) as JSON."""
    from blazar_lite.app import create_app
    from blazar_lite.docs import openapi_spec

    # The document depends only on the routes, so default settings and a throwaway in-memory
    # database will do: no configuration file, data directory or database server is needed.
    app = create_app(Settings(database_url="sqlite://"))
    click.echo(json.dumps(openapi_spec(app), indent=2))


@main.group()
def db() -> None:
    """Manage the database schema."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
@click.pass_context
def db_upgrade(ctx: click.Context, revision: str) -> None:
    """Apply migrations up to REVISION."""
    from blazar_lite.db import Database
    from blazar_lite.db.migrate import upgrade

    settings = _settings(ctx)
    database = Database(settings.database_url)
    upgrade(database.engine, revision)
    click.echo(f"database at revision {revision}: {database.engine.url.render_as_string(hide_password=True)}")


@main.command()
@click.option("--host", default=None, help="Address to listen on (overrides [api] host).")
@click.option("--port", type=int, default=None, help="Port to listen on (overrides [api] port).")
@click.option("--workers", type=int, default=None, help="API worker processes (overrides [api] workers).")
@click.option("--no-scheduler", is_flag=True, default=False,
              help="Serve the API only, without the lease scheduler (for API-only replicas).")
@click.pass_context
def serve(ctx: click.Context, host: str | None, port: int | None, workers: int | None, no_scheduler: bool) -> None:
    """Apply migrations, then serve the API with gunicorn, and run the lease scheduler beside it
    unless --no-scheduler or [scheduler] enabled = false."""
    from blazar_lite.db import Database
    from blazar_lite.db.migrate import upgrade
    from blazar_lite.server import run

    settings = _settings(ctx, api_host=host, api_port=port, api_workers=workers)
    if settings.auth_strategy == "keystone":
        from blazar_lite.auth.middleware import keystone_conf

        # Fail here, once and clearly, rather than in every API worker as it boots.
        try:
            keystone_conf(settings)
        except SettingsError as exc:
            raise click.ClickException(str(exc)) from None
    configure_logging(settings)
    database = Database(settings.database_url)
    upgrade(database.engine)
    database.dispose()
    logging.getLogger(__name__).info("serving on http://%s:%d (database %s)", settings.api_host,
                                     settings.api_port, database.engine.url.render_as_string(hide_password=True))
    scheduler = None
    if settings.scheduler_enabled and not no_scheduler:
        from blazar_lite.scheduler.process import start_scheduler_process

        scheduler = start_scheduler_process(ctx.obj["config_file"])
    try:
        run(settings)
    finally:
        if scheduler is not None:
            from blazar_lite.scheduler.process import stop_scheduler_process

            stop_scheduler_process(scheduler)


@main.command("scheduler")
@click.pass_context
def scheduler_command(ctx: click.Context) -> None:
    """Run the lease scheduler alone, in the foreground, until SIGTERM or SIGINT: every
    [scheduler] interval seconds it claims the lease events that are due and runs them."""
    from blazar_lite.scheduler.runner import run_forever

    settings = _settings(ctx)
    configure_logging(settings)
    run_forever(settings)


@main.command("check")
@click.option("--claim-timeout", type=int, default=None,
              help="Seconds a lease may stay STARTING or TERMINATING (default: [scheduler] claim_timeout).")
@click.option("-f", "--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.pass_context
def check_command(ctx: click.Context, claim_timeout: int | None, output_format: str) -> None:
    """Check the database the settings name: no host over capacity at any instant, placement
    usages equal to the allocations, active reservations with their inventory and ended ones
    without, no event run twice, no lease stuck in a transitional state. Exits 1 with a report
    of every violation, 0 when there is none."""
    import dataclasses
    import datetime as dt

    from blazar_lite.audit import checks
    from blazar_lite.db import Database

    settings = _settings(ctx)
    database = Database(settings.database_url)
    timeout = dt.timedelta(seconds=claim_timeout if claim_timeout is not None else settings.scheduler_claim_timeout)
    try:
        # One snapshot for every rule: on a live database, tables read at different instants
        # would disagree about a lease that started in between.
        with database.snapshot() as session:
            found = checks.run(session, dt.datetime.now(dt.UTC), timeout)
    finally:
        database.dispose()
    if output_format == "json":
        click.echo(json.dumps({"violations": [dataclasses.asdict(v) for v in found]}, indent=2))
    elif found:
        for violation in found:
            click.echo(f"{violation.rule}: {violation.message}")
        click.echo(f"{len(found)} violation(s)")
    else:
        click.echo("no violations")
    if found:
        ctx.exit(1)


add_client_commands(main)
