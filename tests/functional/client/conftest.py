"""The app served over real HTTP in a thread, and the `blazar-lite` client commands run against it
with click's runner, in an environment cleared of OpenStack credentials."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from click.testing import CliRunner, Result
from flask import Flask
from werkzeug.serving import make_server

from blazar_lite.cli import main
from blazar_lite.client.commands.common import ENDPOINT_ENV
from blazar_lite.client.commands.shape_instances import GOVERNOR_KEY_ENV, GOVERNOR_KEY_NAME_ENV

# Variables the commands read; a developer's openrc must not reach the tests.
CREDENTIAL_ENV = (ENDPOINT_ENV, "OS_TOKEN", "OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_PROJECT_NAME",
                  "OS_USER_DOMAIN_NAME", "OS_PROJECT_DOMAIN_NAME", "OS_REGION_NAME", "OS_INTERFACE",
                  GOVERNOR_KEY_ENV, GOVERNOR_KEY_NAME_ENV)


@contextlib.contextmanager
def serving(app: Flask) -> Iterator[str]:
    """Serve `app` on a free port of 127.0.0.1; yield its /v1 URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    # A short poll keeps shutdown (which waits for the next poll) from adding half a second per test.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                              name="blazar-lite-test-server", daemon=True)
    # The server logs in this process. Without a handler, Python (and werkzeug, which adds its own)
    # would print those records on the stderr of the moment: the command's, captured and checked.
    quiet = logging.NullHandler()
    logging.getLogger().addHandler(quiet)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
        logging.getLogger().removeHandler(quiet)


class Cli:
    """`blazar-lite ARGS…` against one endpoint (added as --os-endpoint unless None)."""

    def __init__(self, endpoint: str | None) -> None:
        self.endpoint = endpoint

    def run(self, *args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
        """The command's result; `input` is what it reads on stdin."""
        environment: dict[str, str | None] = dict.fromkeys(CREDENTIAL_ENV)
        environment.update(env or {})
        full = [*args, "--os-endpoint", self.endpoint] if self.endpoint else list(args)
        return CliRunner().invoke(main, full, env=environment, input=input)

    def ok(self, *args: str, **kwargs: Any) -> str:
        """Run a command that must succeed; its standard output."""
        result = self.run(*args, **kwargs)
        assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
        return result.stdout

    def json(self, *args: str, **kwargs: Any) -> Any:
        """Run a command that must succeed with `-f json`; its output decoded."""
        return json.loads(self.ok(*args, "-f", "json", **kwargs))

    def fails(self, *args: str, **kwargs: Any) -> str:
        """Run a command that must fail with status 1 and only an error line on stderr (no
        traceback, nothing on stdout); the message of that line."""
        result = self.run(*args, **kwargs)
        assert result.exit_code == 1, (result.stdout, result.stderr, result.exception)
        assert isinstance(result.exception, SystemExit)
        assert result.stdout == ""
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
        return result.stderr.removeprefix("Error: ").rstrip("\n")

    @staticmethod
    def fields(table: str) -> dict[str, str]:
        """A field/value table read back: {field: value text}."""
        header, _rule, *lines = table.splitlines()
        assert header.split() == ["Field", "Value"]
        found = {}
        for line in lines:
            field, _, value = line.partition(" ")
            found[field] = value.strip()
        return found

    @staticmethod
    def rows(table: str) -> list[dict[str, str]]:
        """A list table read back, columns cut where the dashed rule's runs start: one
        {column: text} per row."""
        header, rule, *lines = table.splitlines()
        starts = [i for i, char in enumerate(rule) if char == "-" and (i == 0 or rule[i - 1] == " ")]
        bounds = list(zip(starts, [*starts[1:], None], strict=True))

        def cut(line: str) -> list[str]:
            return [line[start:end].strip() for start, end in bounds]

        columns = cut(header)
        return [dict(zip(columns, cut(line), strict=True)) for line in lines]


@pytest.fixture
def serve() -> Callable[[Flask], contextlib.AbstractContextManager[str]]:
    """`serving`: serve an app built in the test."""
    return serving


@pytest.fixture
def endpoint(app: Flask) -> Iterator[str]:
    """The /v1 URL of the test's app, served."""
    with serving(app) as url:
        yield url


@pytest.fixture
def cli(endpoint: str) -> Cli:
    return Cli(endpoint)


@pytest.fixture
def make_cli() -> Callable[[str | None], Cli]:
    return Cli


@pytest.fixture
def unreachable_endpoint() -> str:
    """A /v1 URL on a port of 127.0.0.1 that nothing listens on (it was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
