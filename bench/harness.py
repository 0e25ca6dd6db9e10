"""What the benchmarks share: scratch databases, a served API on a free port, an HTTP client,
the hosts they register, and the figures' arithmetic. Imported by the scripts beside it."""

from __future__ import annotations

import datetime as dt
import http.client
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from blazar_lite.db import Database
from blazar_lite.hosts.service import HostSpec

DEFAULT_PG_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def blazar_date(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def next_minute(moment: dt.datetime) -> dt.datetime:
    return moment.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)


def percentile(values: list[float], fraction: float) -> float:
    """The percentile `fraction` (0.95 for p95) by nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def p99(values: list[float]) -> float:
    """The 99th percentile by nearest rank (of 100 values, the second largest; of 1,000, the tenth)."""
    return percentile(values, 0.99)


class Scratch:
    """Temporary SQLite files and PostgreSQL databases, all removed by `cleanup`."""


    def __init__(self, postgres_server: str | None, prefix: str = "blazar_lite_bench") -> None:
        self.dir = tempfile.mkdtemp(prefix="blazar-lite-bench-")
        self.postgres_server = postgres_server
        self.created: list[str] = []
        self.prefix = prefix


    def url(self, label: str) -> str:
        """A fresh, empty database named after `label`."""
        if self.postgres_server is None:
            return "sqlite:///" + os.path.join(self.dir, f"{label}.db")
        name = f"{self.prefix}_{os.getpid()}_{label}"
        self._admin(f'DROP DATABASE IF EXISTS "{name}"', f'CREATE DATABASE "{name}"')
        self.created.append(name)
        return make_url(self.postgres_server).set(database=name).render_as_string(hide_password=False)


    def _admin(self, *statements: str) -> None:
        engine = create_engine(self.postgres_server, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                for statement in statements:
                    connection.execute(text(statement))
        finally:
            engine.dispose()


    def cleanup(self) -> None:
        for name in self.created:
            try:
                self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            except Exception as exc:  # noqa: BLE001 - report, keep cleaning
                print(f"could not drop scratch database {name}: {exc}", file=sys.stderr)
        shutil.rmtree(self.dir, ignore_errors=True)


def sibling_server(url: str) -> str | None:
    """The maintenance database of the PostgreSQL server `url` lives on (None for SQLite)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return None
    return parsed.set(database="postgres").render_as_string(hide_password=False)


def host_spec(index: int) -> HostSpec:
    vcpus = (32, 48, 64)[index % 3]
    return HostSpec(name=f"compute-{index:05d}", vcpus=vcpus, memory_mb=vcpus * 4096, local_gb=(960, 1920)[index % 2],
                    hypervisor_type="QEMU", extra_capabilities={
                        "rack": f"r{index % 20:02d}", "gpu": "true" if index % 10 == 0 else "false",
                        "cpu_model": ("skylake", "cascadelake", "icelake")[index % 3]})


class Client:
    """A keep-alive HTTP/1.1 connection to the /v1 API as admin (noauth)."""


    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {"X-Auth-Token": "admin", "Accept": "application/json", "Content-Type": "application/json"}


    def post(self, path: str, body: Any) -> tuple[int, bytes]:
        self.connection.request("POST", path, body=json.dumps(body).encode(), headers=self.headers)
        response = self.connection.getresponse()
        return response.status, response.read()


    def get(self, path: str) -> tuple[int, bytes]:
        self.connection.request("GET", path, headers=self.headers)
        response = self.connection.getresponse()
        return response.status, response.read()

    def delete(self, path: str) -> tuple[int, bytes]:
        self.connection.request("DELETE", path, headers=self.headers)
        response = self.connection.getresponse()
        return response.status, response.read()


def start_server(url: str, data_dir: str, port: int, **settings: str) -> subprocess.Popen[bytes]:
    """`blazar-lite serve --no-scheduler`, one worker, on `url`; `settings` are more BLAZAR_LITE_* variables."""
    executable = shutil.which("blazar-lite", path=str(Path(sys.executable).parent)) or shutil.which("blazar-lite")
    if executable is None:
        raise SystemExit("blazar-lite is not installed next to this Python")
    env = dict(os.environ, BLAZAR_LITE_DATA_DIR=data_dir, BLAZAR_LITE_DATABASE_URL=url,
               BLAZAR_LITE_SCHEDULER_ENABLED="false", BLAZAR_LITE_LOGGING_LEVEL="WARNING", **settings)
    env.pop("BLAZAR_LITE_CONFIG", None)
    return subprocess.Popen([executable, "serve", "--no-scheduler", "--host", "127.0.0.1", "--port", str(port),
                             "--workers", "1"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_ready(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited: {process.stderr.read().decode() if process.stderr else ''}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/", headers={"X-Auth-Token": "admin"})
            connection.getresponse().read()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("server did not answer within 60 s")


@dataclass
class Timed:
    """The timings (ms) and statuses of one kind of timed request."""

    kind: str
    timings: list[float]
    statuses: Counter[int]

    @property
    def median(self) -> float:
        return statistics.median(self.timings)

    @property
    def p99(self) -> float:
        return p99(self.timings)


def after_bulk_load(database: Database, analyze: bool, label: str) -> None:
    """On PostgreSQL, with `analyze`, what autovacuum does after a bulk load: without statistics
    the planner guesses, and some statements get much slower plans. Says what was done."""
    if database.dialect != "postgresql":
        return
    with database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        autovacuum = connection.execute(text("SHOW autovacuum")).scalar()
        if analyze:
            connection.execute(text("ANALYZE"))
    print(f"[{label}] PostgreSQL autovacuum is {autovacuum}; "
          f"{'ANALYZE run' if analyze else 'no ANALYZE (--no-analyze)'}", flush=True)


def statement_lines(width: int, size_name: str, rows: list[tuple[str, int, Any]]) -> list[str]:
    """The summary's table of SQL statements per create: one row per (label, cluster size,
    counted), where counted has `statements` (one count per create), `by_verb`,
    `milliseconds` and `conflicts` (creates answered 409, not counted)."""
    lines = [f"{'SQL statements per create (in-process)':<{width}} {size_name:>6} {'statements':>14} "
             f"{'median ms':>10}  by verb (per create)"]
    for label, size, counted in rows:
        if not counted.statements:
            lines.append(f"{label:<{width}} {size:>6} {'-':>14} {'-':>10}  every create was answered 409")
            continue
        statements = "/".join(str(n) for n in counted.statements)
        verbs = ", ".join(f"{verb} {n / len(counted.statements):.3g}" for verb, n in sorted(counted.by_verb.items()))
        lines.append(f"{label:<{width}} {size:>6} {statements:>14} {statistics.median(counted.milliseconds):>10.1f}  "
                     f"{verbs}" + (f" ({counted.conflicts} x 409 not counted)" if counted.conflicts else ""))
    return lines
