"""Typed settings from an ini file and BLAZAR_LITE_* environment variables.

Precedence, lowest first: built-in defaults, the ini file, the environment, explicit overrides
(command-line flags). Every option lives in one table, so the sample file, the parser and the
environment names can never drift apart.
"""

from __future__ import annotations

import configparser
import dataclasses
import os
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_PREFIX = "BLAZAR_LITE_"
DEFAULT_CONFIG_FILE = Path("/etc/blazar-lite/blazar-lite.conf")
AUTH_STRATEGIES = ("noauth", "keystone")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the option and the fix."""


def _default_data_dir(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "blazar-lite")


def _sqlite_url(data_dir: str) -> str:
    return "sqlite:///" + os.path.join(data_dir, "blazar-lite.db")


@dataclass(frozen=True)
class Option:
    section: str
    key: str
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None

    @property
    def attr(self) -> str:
        return self.key if self.section == "DEFAULT" else f"{self.section}_{self.key}"

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.attr.upper()


OPTIONS: tuple[Option, ...] = (
    Option("DEFAULT", "data_dir", str, None,
           "Directory for the SQLite database and other state. Default: $XDG_DATA_HOME/blazar-lite "
           "(~/.local/share/blazar-lite)."),
    Option("database", "url", str, None,
           "SQLAlchemy database URL. Default: a SQLite file blazar-lite.db in data_dir. "
           "Production: postgresql+psycopg://user@host/dbname."),
    Option("api", "host", str, "127.0.0.1", "Address the API listens on."),
    Option("api", "port", int, 1234, "Port the API listens on.", minimum=1, maximum=65535),
    Option("api", "workers", int, 1, "Number of API worker processes (gunicorn).", minimum=1),
    Option("api", "max_body_bytes", int, 1048576,
           "Largest request body accepted; larger bodies are refused with 413.", minimum=1),
    Option("auth", "strategy", str, "noauth",
           "noauth: trust X-User-Id / X-Project-Id / X-Roles (default: admin of noauth_project_id). "
           "keystone: validate tokens with keystonemiddleware, configured in [keystone_authtoken].",
           AUTH_STRATEGIES),
    Option("auth", "noauth_project_id", str, "admin",
           "Project of requests that carry no X-Project-Id under noauth."),
    Option("auth", "noauth_user_id", str, "admin",
           "User of requests that carry no X-User-Id under noauth."),
    Option("auth", "policy_file", str, None,
           "Optional JSON file of policy rule overrides (rule name -> check string)."),
    Option("logging", "level", str, "INFO", "Log level.", LOG_LEVELS),
    Option("logging", "file", str, None, "Log to this file instead of standard error."),
    Option("scheduler", "enabled", bool, True, "Run the lease scheduler inside `blazar-lite serve`."),
    Option("scheduler", "interval", int, 2,
           "Seconds between two scheduler passes, each of which runs every lease event that is due "
           "(Blazar's event_interval); an event that falls due sooner gets a pass at its time.", minimum=1),
    Option("scheduler", "claim_timeout", int, 300,
           "Seconds a scheduler process holds an event it claimed; an event still running after that "
           "is taken to belong to a process that died, and another scheduler runs it again. A scheduler "
           "known to have died (its PostgreSQL session is gone; on SQLite, its process) loses its "
           "claims at once, at another scheduler's next pass.", minimum=10),
    Option("scheduler", "max_attempts", int, 5,
           "Times an event is tried when it meets a transient failure (database unavailable, "
           "lease busy), waiting longer after each, before the event and its lease go to ERROR.", minimum=1),
    Option("scheduler", "minutes_before_end_lease", int, 60,
           "Minutes before a lease's end at which its before_end_lease event fires, for leases created "
           "without a before_end_date.", minimum=0),
    Option("webhooks", "interval", int, 5,
           "Seconds between two passes of the scheduler that send the webhook events that are due.", minimum=1),
    Option("webhooks", "timeout", int, 5,
           "Seconds a webhook receiver may take to answer one POST before the attempt counts as failed.",
           minimum=1, maximum=300),
    Option("webhooks", "max_attempts", int, 8,
           "Times a webhook event is sent before it is given up as FAILED.", minimum=1),
    Option("webhooks", "retry_delay", int, 10,
           "Seconds before a failed webhook event is sent again; the wait doubles after each failure, up to "
           "an hour.", minimum=1),
    Option("enforcement", "max_lease_duration", int, 0,
           "Minutes a lease may last at most; 0 for no limit.", minimum=0),
    Option("enforcement", "exempt_projects", str, "",
           "Projects (ids separated by commas) held to none of the [enforcement] limits; the external "
           "service is asked about them all the same."),
    Option("enforcement", "max_hosts_per_lease", int, 0, "Hosts a lease may hold; 0 for no limit.", minimum=0),
    Option("enforcement", "max_slots_per_lease", int, 0,
           "Instance slots a lease may hold; 0 for no limit.", minimum=0),
    Option("enforcement", "max_hosts_per_project", int, 0,
           "Hosts a project's leases may hold at any one instant; 0 for no limit.", minimum=0),
    Option("enforcement", "max_slots_per_project", int, 0,
           "Instance slots a project's leases may hold at any one instant; 0 for no limit.", minimum=0),
    Option("enforcement", "extension_window", int, 0,
           "Hours before its end within which a lease's end may be moved later; 0 for any time.", minimum=0),
    Option("enforcement", "external_service_url", str, "",
           "Base URL of a lease policy service, POSTed <url>/check-create and <url>/check-update before a lease "
           "is created or changed (2xx allows, 403 denies) and <url>/on-end when one ends; empty for none."),
    Option("enforcement", "external_service_timeout", int, 5,
           "Seconds the lease policy service may take to answer.", minimum=1, maximum=60),
    Option("enforcement", "external_service_failure", str, "deny",
           "When the lease policy service cannot be asked: deny (the request is a 503) or allow.",
           ("deny", "allow")),
    Option("enforcement", "external_service_secret", str, "",
           "Signs the requests to the lease policy service as webhooks are signed; empty for unsigned."),
    Option("leases", "idle_warning_minutes", int, 0,
           "Minutes an active lease may go with no running instance in its reservations before it is warned "
           "(a lease.idle entry in its history, sent to the project's webhooks); 0 never warns.", minimum=0),
    Option("leases", "idle_end_minutes", int, 0,
           "Minutes of idleness after which a warned lease is ended early; 0 never ends one.", minimum=0),
    Option("leases", "cleaning_time", int, 0,
           "Minutes a host stays idle after each booking ends before another may begin (to wipe or "
           "re-image it); 0 lets leases follow each other back to back.", minimum=0),
    Option("instances", "allocator", str, "fewest-instances",
           "How instances are placed: fewest-instances, pack (best fit), spread, or iallocator:<name> "
           "for an external Ganeti IAllocator program of that name."),
    Option("instances", "iallocator_search_path", str, "",
           "Directories (separated by ':') searched for IAllocator programs; empty for "
           "/usr/lib/ganeti/iallocators, <data_dir>/iallocators and the source tree's etc/iallocators."),
    Option("instances", "iallocator_timeout", int, 30,
           "Seconds an IAllocator program may run before it is killed and the placement fails.", minimum=1),
    Option("instances", "iallocator_options", str, "",
           "Options (--key=value, separated by spaces) given to the IAllocator program before the "
           "message file, e.g. --static-kvm-node-memory=0 for hail."),
    Option("instances", "scriptlet_timeout_ms", int, 200,
           "Milliseconds the placement scriptlet (server config instances.placement.scriptlet) may run "
           "for one placement before that request fails.", minimum=1, maximum=60000),
    Option("instances", "config_refresh_seconds", int, 2,
           "How often, at most, a process checks the database for server config changes (such as a new "
           "scriptlet) made through another process.", minimum=1, maximum=3600),
)

_BY_ATTR = {o.attr: o for o in OPTIONS}


@dataclass(frozen=True)
class Settings:
    data_dir: str = field(default_factory=_default_data_dir)
    database_url: str = ""
    api_host: str = "127.0.0.1"
    api_port: int = 1234
    api_workers: int = 1
    api_max_body_bytes: int = 1048576
    auth_strategy: str = "noauth"
    auth_noauth_project_id: str = "admin"
    auth_noauth_user_id: str = "admin"
    auth_policy_file: str | None = None
    logging_level: str = "INFO"
    logging_file: str | None = None
    scheduler_enabled: bool = True
    scheduler_interval: int = 2
    scheduler_claim_timeout: int = 300
    scheduler_max_attempts: int = 5
    scheduler_minutes_before_end_lease: int = 60
    webhooks_interval: int = 5
    webhooks_timeout: int = 5
    webhooks_max_attempts: int = 8
    webhooks_retry_delay: int = 10
    enforcement_max_lease_duration: int = 0
    enforcement_exempt_projects: str = ""
    enforcement_max_hosts_per_lease: int = 0
    enforcement_max_slots_per_lease: int = 0
    enforcement_max_hosts_per_project: int = 0
    enforcement_max_slots_per_project: int = 0
    enforcement_extension_window: int = 0
    enforcement_external_service_url: str = ""
    enforcement_external_service_timeout: int = 5
    enforcement_external_service_failure: str = "deny"
    enforcement_external_service_secret: str = ""
    leases_idle_warning_minutes: int = 0
    leases_idle_end_minutes: int = 0
    leases_cleaning_time: int = 0
    instances_allocator: str = "fewest-instances"
    instances_iallocator_search_path: str = ""
    instances_iallocator_timeout: int = 30
    instances_iallocator_options: str = ""
    instances_scriptlet_timeout_ms: int = 200
    instances_config_refresh_seconds: int = 2
    # Passed as-is to keystonemiddleware's auth_token when auth_strategy is keystone.
    keystone_authtoken: Mapping[str, str] = field(default_factory=dict)
    config_file: str | None = None

    def __post_init__(self) -> None:
        # None, as in OPTIONS, means "derive it": data_dir from XDG, the database URL from data_dir.
        if self.data_dir is None:
            object.__setattr__(self, "data_dir", _default_data_dir())
        if self.database_url is None:
            object.__setattr__(self, "database_url", "")
        for option in OPTIONS:
            _validate(option, getattr(self, option.attr))
        _validate_allocator(self.instances_allocator)
        # Operators write ~ in ini files and expect it to mean their home, as in a shell.
        object.__setattr__(self, "data_dir", os.path.expanduser(self.data_dir))
        if not self.database_url:
            object.__setattr__(self, "database_url", _sqlite_url(self.data_dir))

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    def replace(self, **changes: Any) -> Settings:
        """A copy with `changes`; a database URL derived from data_dir follows a new data_dir."""
        if ("data_dir" in changes and "database_url" not in changes
                and self.database_url == _sqlite_url(self.data_dir)):
            changes["database_url"] = ""
        return dataclasses.replace(self, **changes)


_BUILTIN_ALLOCATORS = ("fewest-instances", "pack", "spread")
_PROGRAM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _validate_allocator(value: str) -> None:
    program = value.removeprefix("iallocator:") if value.startswith("iallocator:") else None
    if value in _BUILTIN_ALLOCATORS or (program is not None and _PROGRAM_NAME.match(program)):
        return
    raise SettingsError(f"[instances] allocator = {value!r} is not one of {', '.join(_BUILTIN_ALLOCATORS)} "
                        "or iallocator:<program name> (a file name, no '/')")


def _validate(option: Option, value: Any) -> None:
    name = f"[{option.section}] {option.key}"
    if value is None:
        if option.default is not None:
            raise SettingsError(f"{name} must be set")
        return
    # bool is an int to Python, but `workers = true` is a mistake, not 1 worker.
    if not isinstance(value, option.type) or (option.type is int and isinstance(value, bool)):
        kind = {int: "an integer", bool: "a boolean", str: "a string"}[option.type]
        raise SettingsError(f"{name} = {value!r} is not {kind}")
    if option.choices and value not in option.choices:
        raise SettingsError(f"{name} = {value!r} is not one of {', '.join(option.choices)}")
    if option.minimum is not None and value < option.minimum:
        raise SettingsError(f"{name} = {value} is too small; the least is {option.minimum}")
    if option.maximum is not None and value > option.maximum:
        raise SettingsError(f"{name} = {value} is too large; the most is {option.maximum}")


def _convert(option: Option, raw: str, origin: str) -> Any:
    text = raw.strip()
    if option.type is bool:
        lowered = text.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise SettingsError(f"{origin} = {text!r} is not a boolean (use true or false)")
    if option.type is int:
        try:
            return int(text)
        except ValueError:
            raise SettingsError(f"{origin} = {text!r} is not an integer") from None
    if option.key == "level":
        return text.upper()
    return text or None


def load_settings(config_file: str | os.PathLike[str] | None = None,
                  environ: Mapping[str, str] | None = None,
                  **overrides: Any) -> Settings:
    """Build settings from defaults, an ini file, the environment and overrides, in that order.

    Without an explicit file, BLAZAR_LITE_CONFIG names one, else /etc/blazar-lite/blazar-lite.conf
    is read when it exists.
    """
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    path = config_file or env.get(ENV_PREFIX + "CONFIG") or None
    if path is None and DEFAULT_CONFIG_FILE.exists():
        path = DEFAULT_CONFIG_FILE
    keystone: dict[str, str] = {}
    if path is not None:
        if not Path(path).is_file():
            raise SettingsError(f"configuration file {path} does not exist")
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path)
        except configparser.Error as exc:
            raise SettingsError(f"configuration file {path} is not a valid ini file: {exc}") from None
        known = {(o.section, o.key) for o in OPTIONS}
        sections = {o.section for o in OPTIONS} | {"keystone_authtoken"}
        for section in ["DEFAULT", *parser.sections()]:
            if section not in sections:
                raise SettingsError(f"{path}: unknown section [{section}]; known: "
                                    f"{', '.join(sorted(sections - {'DEFAULT'}))}")
            if section == "keystone_authtoken":
                keystone.update({k: v for k, v in parser.items(section) if k not in parser.defaults()})
                continue
            items = parser.defaults().items() if section == "DEFAULT" else (
                (k, v) for k, v in parser.items(section) if k not in parser.defaults())
            for key, raw in items:
                if (section, key) not in known:
                    raise SettingsError(f"{path}: unknown option [{section}] {key}")
                option = next(o for o in OPTIONS if (o.section, o.key) == (section, key))
                values[option.attr] = _convert(option, raw, f"{path}: [{section}] {key}")
        values["config_file"] = str(path)
    for option in OPTIONS:
        if option.env in env:
            values[option.attr] = _convert(option, env[option.env], f"{option.env} ([{option.section}] {option.key})")
    values["keystone_authtoken"] = keystone
    for attr, value in overrides.items():
        if attr not in _BY_ATTR:
            raise SettingsError(f"unknown setting {attr}")
        if value is not None:
            values[attr] = value
    values.setdefault("data_dir", None)
    if values["data_dir"] is None:
        values["data_dir"] = _default_data_dir(env)
    return Settings(**{k: v for k, v in values.items() if v is not None or k in ("auth_policy_file", "logging_file")})


def config_sample() -> str:
    """The sample configuration file: every option, commented out at its default."""
    lines = ["# blazar-lite configuration. Every option can also be set in the environment as",
             "# BLAZAR_LITE_<SECTION>_<OPTION> (BLAZAR_LITE_<OPTION> for [DEFAULT]); the environment wins.", ""]
    section = None
    for option in OPTIONS:
        if option.section != section:
            if section is not None:
                lines.append("")
            section = option.section
            lines.append(f"[{section}]")
        lines += textwrap.wrap(f"{option.help} (environment: {option.env})", width=98,
                               initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)
        default = "" if option.default is None else str(option.default).lower() if option.type is bool \
            else str(option.default)
        lines.append(f"#{option.key} = {default}".rstrip())
    lines += ["", "[keystone_authtoken]",
              "# keystonemiddleware auth_token options, used when [auth] strategy = keystone, e.g.:",
              "#www_authenticate_uri = http://keystone.example.org:5000/v3",
              "#auth_url = http://keystone.example.org:5000/v3",
              "#auth_type = password", "#username = blazar", "#password = secret",
              "#project_name = service", "#user_domain_name = Default", "#project_domain_name = Default", ""]
    return "\n".join(lines)
