"""What the benchmarks share: scratch databases, a served API on a free port, an HTTP client,
the hosts they register, the busy world of availability.py and scale.py (hosts and bulk-inserted
reservations), lease bodies, the timed searches, `blazar-lite scheduler` processes starting
leases, and the figures' arithmetic. Imported by the scripts beside it."""

from __future__ import annotations

import datetime as dt
import http.client
import json
import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import create_engine, func, insert, select, text
from sqlalchemy.engine import make_url

from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.db.migrate import upgrade
from blazar_lite.hosts.service import HostSpec, create_host
from blazar_lite.leases.models import ACTIVE, UNDONE, Event, Lease, Reservation, ReservationBooking
from blazar_lite.leases.service import create_lease

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


    def finish(self, keep: bool) -> None:
        """Say what is kept (`keep`, for profiling afterwards), or remove it all."""
        if keep:
            print(f"kept: {self.dir} and databases {', '.join(self.created) or '-'}")
        else:
            self.cleanup()


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


def blazar_lite_executable() -> str:
    executable = shutil.which("blazar-lite", path=str(Path(sys.executable).parent)) or shutil.which("blazar-lite")
    if executable is None:
        raise SystemExit("blazar-lite is not installed next to this Python")
    return executable


def blazar_lite_env(url: str, data_dir: str, **settings: str) -> dict[str, str]:
    """This environment (PYTHONPATH included) with the database, data directory and `settings`
    (more BLAZAR_LITE_* variables), and no configuration file."""
    env = dict(os.environ, BLAZAR_LITE_DATA_DIR=data_dir, BLAZAR_LITE_DATABASE_URL=url,
               BLAZAR_LITE_LOGGING_LEVEL="WARNING", **settings)
    env.pop("BLAZAR_LITE_CONFIG", None)
    return env


def start_server(url: str, data_dir: str, port: int, workers: int = 1, **settings: str) -> subprocess.Popen[bytes]:
    """`blazar-lite serve --no-scheduler`, one worker (or `workers`), on `url`; `settings` are more
    BLAZAR_LITE_* variables."""
    env = blazar_lite_env(url, data_dir, BLAZAR_LITE_SCHEDULER_ENABLED="false", **settings)
    return subprocess.Popen([blazar_lite_executable(), "serve", "--no-scheduler", "--host", "127.0.0.1", "--port",
                             str(port), "--workers", str(workers)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


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


# The busy world (availability.py, scale.py): hosts registered through the hosts service, and
# existing reservations bulk-inserted as lease creation writes them.

WORLD_DAYS = 90
# A slot of the existing instance reservations: small, so four overlapping bookings of at most
# four slots each never fill the smallest host (32 vCPU, 128 GiB, 960 GB).
EXISTING_SLOT = {"vcpus": 1, "memory_mb": 2048, "disk_gb": 20}


@dataclass
class BusyWorld:
    hosts: int
    reservations: Counter[str]
    host_seconds: float
    reservation_seconds: float


def _existing_rows(host_id: int, index: int, start: dt.datetime, end: dt.datetime, rng: random.Random,
                   whole: bool) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The lease, reservation and booking rows of one reservation on one host."""
    lease_id, reservation_id = str(uuid.uuid4()), str(uuid.uuid4())
    lease = {"id": lease_id, "name": f"existing-{index}", "user_id": "bench", "project_id": f"project-{index % 50:02d}",
             "start_date": start, "end_date": end, "before_end_date": None, "status": "PENDING", "degraded": False}
    if whole:
        reservation = {"id": reservation_id, "lease_id": lease_id, "resource_type": "physical:host",
                       "status": "pending", "missing_resources": False, "resources_changed": False, "min": 1,
                       "max": 1, "hypervisor_properties": "", "resource_properties": "", "before_end": ""}
        booking = {"reservation_id": reservation_id, "host_id": host_id, "slots": 1, "lease_id": lease_id,
                   "start_date": start, "end_date": end, "vcpus": 0, "memory_mb": 0, "disk_gb": 0, "exclusive": True}
        return lease, reservation, booking
    slots = rng.randint(1, 4)
    reservation = {"id": reservation_id, "lease_id": lease_id, "resource_type": "virtual:instance",
                   "status": "pending", "missing_resources": False, "resources_changed": False, "amount": slots,
                   "affinity": None, "resource_properties": "", **EXISTING_SLOT}
    booking = {"reservation_id": reservation_id, "host_id": host_id, "slots": slots, "lease_id": lease_id,
               "start_date": start, "end_date": end, "exclusive": False,
               **{name: slots * amount for name, amount in EXISTING_SLOT.items()}}
    return lease, reservation, booking


def host_reservations(host_id: int, count: int, opens: dt.datetime, rng: random.Random,
                      first_index: int) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """About `count` reservations on one host over the WORLD_DAYS after `opens`, never overbooking it."""
    made: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    closes = opens + dt.timedelta(days=WORLD_DAYS)
    moment = opens

    def gap() -> dt.timedelta:
        # Periods of 3 hours to 4 days hold 1.9 reservations on average: the gaps share out the
        # time left among the periods still to come, so `count` fit in the days.
        periods = max(1.0, (count - len(made)) / 1.9)
        room = max(0.0, (closes - moment).total_seconds() / 60 / periods - 2 * 24 * 60)
        # Up to the room, not twice its mean: a long gap near the end would leave reservations out.
        return dt.timedelta(minutes=rng.randrange(int(room) + 1))

    moment += gap()
    while len(made) < count and moment < closes:
        length = dt.timedelta(minutes=rng.randrange(3 * 60, 4 * 24 * 60))
        end = min(moment + length, closes)
        if rng.random() < 0.4:
            made.append(_existing_rows(host_id, first_index + len(made), moment, end, rng, whole=True))
        else:
            for _ in range(rng.randint(1, 4)):
                if len(made) == count:
                    break
                minutes = int((end - moment).total_seconds() // 60)
                first = rng.randrange(max(1, minutes - 60))
                last = rng.randrange(first + 60, minutes + 1) if minutes > first + 60 else minutes
                made.append(_existing_rows(host_id, first_index + len(made), moment + dt.timedelta(minutes=first),
                                           moment + dt.timedelta(minutes=max(last, first + 1)), rng, whole=False))
        moment = end
        moment += gap()
    return made


def build_busy_world(url: str, hosts: int, reservations: int, opens: dt.datetime, seed: int, batch: int,
                     analyze: bool) -> BusyWorld:
    """Migrate the empty database at `url`, register `hosts` hosts (`batch` a transaction: each a
    root provider with inventory, a reservation provider, a place in the freepool), then insert
    `reservations` existing reservations over the WORLD_DAYS after `opens` (leases, reservations,
    bookings; not the events, classes and flavors); on PostgreSQL, with `analyze`, ANALYZE."""
    database = Database(url)
    try:
        upgrade(database.engine)
        started = time.perf_counter()
        ids = []
        for first in range(0, hosts, batch):
            with database.transaction() as session:
                ids += [create_host(session, host_spec(index)).id for index in range(first, min(first + batch, hosts))]
            if first and first % (10 * batch) == 0:
                print(f"  {first}/{hosts} hosts, {time.perf_counter() - started:.0f} s", flush=True)
        host_seconds = time.perf_counter() - started
        print(f"{hosts} hosts registered in {host_seconds:.1f} s", flush=True)

        started = time.perf_counter()
        rng = random.Random(seed)
        made: Counter[str] = Counter()
        pending: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
        per_host = reservations // max(hosts, 1)
        extra = reservations - per_host * hosts
        for position, host_id in enumerate(ids):
            pending += host_reservations(host_id, per_host + (position < extra), opens, rng, sum(made.values()) +
                                         len(pending))
            if len(pending) >= 5000 or position == len(ids) - 1:
                with database.transaction() as session:
                    session.execute(insert(Lease), [lease for lease, _, _ in pending])
                    session.execute(insert(Reservation), [reservation for _, reservation, _ in pending])
                    session.execute(insert(ReservationBooking), [booking for _, _, booking in pending])
                made.update(reservation["resource_type"] for _, reservation, _ in pending)
                pending = []
        reservation_seconds = time.perf_counter() - started
        print(f"{sum(made.values())} reservations inserted in {reservation_seconds:.1f} s ({dict(made)})", flush=True)
        after_bulk_load(database, analyze, f"{hosts} hosts")
        return BusyWorld(hosts, made, host_seconds, reservation_seconds)
    finally:
        database.dispose()


# The availability searches (availability.py, scale.py).

SEARCH_DAYS = 60
SEARCHES = {
    "hosts": ("physical:host min=max=8, 48h", {"resource_type": "physical:host", "min": 8, "max": 8,
                                               "duration": "48h"}),
    "slots": ("virtual:instance amount=20 (2 vCPU, 4096 MB, 40 GB), 24h",
              {"resource_type": "virtual:instance", "amount": 20, "vcpus": 2, "memory_mb": 4096, "disk_gb": 40,
               "affinity": "None", "duration": "24h"}),
}


def time_searches(client: Client, kind: str, params: dict[str, Any], count: int, opens: dt.datetime,
                  rng: random.Random) -> tuple[Timed, Counter[int]]:
    """`count` GET /v1/availability of one kind, each from a random minute of the first
    SEARCH_DAYS days after `opens`; the timings, and how many windows each answer held."""
    timed = Timed(kind, [], Counter())
    found: Counter[int] = Counter()
    for _ in range(count):
        after = opens + dt.timedelta(minutes=rng.randrange(SEARCH_DAYS * 24 * 60))
        path = "/v1/availability?" + urlencode({**params, "after": blazar_date(after)})
        t0 = time.perf_counter()
        status, data = client.get(path)
        timed.timings.append((time.perf_counter() - t0) * 1000)
        timed.statuses[status] += 1
        if status != 200:
            raise SystemExit(f"GET {path} -> {status}: {data[:500]!r}")
        found[len(json.loads(data)["availability"])] += 1
    return timed, found


# Lease bodies (leases.py, scale.py).

VIRTUAL = "virtual:instance"
PHYSICAL = "physical:host"


def lease_body(name: str, start: dt.datetime, end: dt.datetime, reservation: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "start_date": blazar_date(start), "end_date": blazar_date(end), "before_end_date": None,
            "events": [], "reservations": [reservation]}


def virtual(amount: int, vcpus: int = 1, memory_mb: int = 1024, disk_gb: int = 10,
            affinity: bool | None = None, resource_properties: str = "") -> dict[str, Any]:
    return {"resource_type": VIRTUAL, "amount": amount, "vcpus": vcpus, "memory_mb": memory_mb,
            "disk_gb": disk_gb, "affinity": affinity, "resource_properties": resource_properties}


def physical(hosts: int, resource_properties: str = "") -> dict[str, Any]:
    return {"resource_type": PHYSICAL, "min": hosts, "max": hosts, "hypervisor_properties": "",
            "resource_properties": resource_properties, "before_end": ""}


# Leases that start together, and the scheduler processes that start them (leases.py, scale.py).

SCHEDULER_PROJECT = "bench-scheduler"


@dataclass
class SchedulerRun:
    mode: str
    leases: int
    created_seconds: float
    seconds: float | None
    active: int
    note: str = ""


def scheduler_leases(database: Database, count: int, start: dt.datetime, batch: int,
                     reservation: Callable[[int], dict[str, Any]], project: str = SCHEDULER_PROJECT) -> float:
    """`count` leases of `reservation(index)` for `project` that all start at `start` and last a
    day, created through the lease service `batch` a transaction; the seconds it took."""
    end = start + dt.timedelta(days=1)
    context = RequestContext(user_id="bench", project_id=project, roles=frozenset({"member"}))
    started = time.perf_counter()
    for first in range(0, count, batch):
        with database.transaction() as session:
            for index in range(first, min(first + batch, count)):
                create_lease(session, context, lease_body(f"starts-together-{index}", start, end, reservation(index)))
    return time.perf_counter() - started


class _DryRun(Exception):
    """Rolls back the creates that only measured their cost."""


def seconds_per_create(database: Database, reservation: Callable[[int], dict[str, Any]], start: dt.datetime,
                       samples: int = 20, project: str = SCHEDULER_PROJECT) -> float:
    """What one of `scheduler_leases`'s creates costs now: `samples` of them, rolled back."""
    context = RequestContext(user_id="bench", project_id=project, roles=frozenset({"member"}))
    t0 = time.perf_counter()
    try:
        with database.transaction() as session:
            for index in range(samples):
                create_lease(session, context, lease_body(f"dry-run-{index}", start, start + dt.timedelta(days=1),
                                                          reservation(index)))
            raise _DryRun
    except _DryRun:
        pass
    return (time.perf_counter() - t0) / samples


def active_count(database: Database, project: str = SCHEDULER_PROJECT) -> int:
    with database.read() as session:
        return session.scalar(select(func.count()).select_from(Lease).where(
            Lease.project_id == project, Lease.status == ACTIVE)) or 0


def other_due_events(database: Database, moment: dt.datetime, project: str = SCHEDULER_PROJECT) -> int:
    with database.read() as session:
        return session.scalar(select(func.count()).select_from(Event).join(Lease, Lease.id == Event.lease_id).where(
            Event.status == UNDONE, Event.time <= moment, Lease.project_id != project)) or 0


def scheduler_processes(url: str, data_dir: str, count: int, batch: int, per_create: float | None,
                        reservation: Callable[[int], dict[str, Any]], processes: int = 1,
                        project: str = SCHEDULER_PROJECT, timeout: float = 300) -> SchedulerRun:
    """Create `count` leases that start at the next minute boundary that leaves time to create
    them (`per_create` seconds each, twice over, and 30 s; None: measure it with a dry run and
    allow half as much again, and 60 s), run `processes` `blazar-lite scheduler`
    processes against the database, and time from that minute until all are ACTIVE (at most
    `timeout` seconds). Each process logs to scheduler-<project>-<n>.log in `data_dir`."""
    database = Database(url)
    started: list[subprocess.Popen[bytes]] = []
    mode = "process" if processes == 1 else f"{processes} processes"
    try:
        if per_create is None:
            measured = seconds_per_create(database, reservation, next_minute(dt.datetime.now(dt.UTC)) +
                                          dt.timedelta(minutes=30), project=project)
            lead = dt.timedelta(seconds=60 + 1.5 * count * measured)
        else:
            lead = dt.timedelta(seconds=30 + 2 * count * per_create)
        start = next_minute(dt.datetime.now(dt.UTC) + lead)
        created = scheduler_leases(database, count, start, batch, reservation, project)
        if dt.datetime.now(dt.UTC) >= start:
            return SchedulerRun(mode, count, created, None, active_count(database, project),
                                "the leases were not all created before their start; rerun")
        note = ""
        if other := other_due_events(database, start, project):
            note = f"{other} other events were due too"
        env = blazar_lite_env(url, data_dir)
        # Their logs (a pass that outlasts the interval is logged every interval) go to files.
        logs = [os.path.join(data_dir, f"scheduler-{project}-{n}.log") for n in range(processes)]
        for path in logs:
            with open(path, "wb") as log:
                started.append(subprocess.Popen([blazar_lite_executable(), "scheduler"], env=env,
                                                stdout=subprocess.DEVNULL, stderr=log))
        print(f"scheduler ({mode}): {count} leases start at {start:%H:%M:%S} UTC; waiting for them", flush=True)
        while dt.datetime.now(dt.UTC) < start:
            time.sleep(0.05)
        t0 = time.perf_counter()
        active = 0
        while time.perf_counter() - t0 < timeout:
            if any(process.poll() is not None for process in started):
                return SchedulerRun(mode, count, created, None, active,
                                    f"a scheduler exited; see {', '.join(logs)}")
            active = active_count(database, project)
            if active >= count:
                break
            time.sleep(0.1)
        seconds = time.perf_counter() - t0
        return SchedulerRun(mode, count, created, seconds if active >= count else None, active, note)
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait(timeout=60)
        database.dispose()
