"""Benchmark lease creation over a busy cluster, the SQL it costs, and the scheduler's lease starts.

1. Setup, in-process through the services: a fresh database (a SQLite file in a temporary
   directory, or PostgreSQL), N hosts (default 1,000) and R existing reservations (default 10,000)
   spread over the next 30 days: virtual:instance reservations of a few small slots and
   physical:host reservations of one whole host, each a few hours to four days long. Leases that
   meet a shortage are counted and skipped.
2. `blazar-lite serve --no-scheduler` (one worker) on that database, on a free port, and timed
   POST /v1/leases: virtual:instance amount=10 affinity none (1 vCPU, 1024 MB, 10 GB), and
   physical:host min=max=5, each in a random window inside the 30 days. Median and p99 (nearest
   rank) in ms, and how many were answered 201 and 409.
3. SQL statements per lease create, counted in-process (create_app and its test client; a
   `before_cursor_execute` listener on the engine) for both kinds, on this cluster and on smaller
   ones with the same number of reservations per host (--sql-sizes).
4. The scheduler: 1,000 leases of one virtual:instance slot that all start in the same minute,
   and the seconds from that minute until all are ACTIVE. `process` (default) runs
   `blazar-lite scheduler` against the database in real time, its wake-up included; `pass` runs
   the scheduler's pass in this process with its clock set to that minute.

    python bench/leases.py                          # SQLite, 1,000 hosts, 10,000 reservations
    python bench/leases.py --postgres               # a scratch PostgreSQL database, dropped after
    python bench/leases.py --hosts 100 --reservations 1000 --requests 20 --scheduler pass
    python bench/leases.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/mydb

--database-url must name an empty database; the smaller clusters of part 3 then go to scratch
databases next to it (a temporary SQLite file, or a database created on the same PostgreSQL
server and dropped at the end). Existing and benchmarked leases start at least --lead-hours
from now, so that none of their events is due while the scheduler part runs. On PostgreSQL the
tables are ANALYZEd after the setup, as autovacuum would after a bulk load (--no-analyze: not).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from harness import (
    DEFAULT_PG_SERVER,
    PHYSICAL,
    VIRTUAL,
    Client,
    SchedulerRun,
    Scratch,
    Timed,
    active_count,
    after_bulk_load,
    free_port,
    host_spec,
    lease_body,
    next_minute,
    other_due_events,
    physical,
    scheduler_leases,
    scheduler_processes,
    sibling_server,
    start_server,
    statement_lines,
    virtual,
    wait_ready,
)
from sqlalchemy import event
from sqlalchemy.engine import make_url

from blazar_lite.app import create_app
from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.db.migrate import upgrade
from blazar_lite.exceptions import NotEnoughResources
from blazar_lite.hosts.service import create_host
from blazar_lite.leases.service import create_lease
from blazar_lite.scheduler.runner import run_due_events
from blazar_lite.settings import Settings

DAYS = 30


# Scratch databases.

# The cluster and its existing reservations.

@dataclass
class World:
    """When the benchmark's windows begin (`opens`): every lease it makes starts later."""

    opens: dt.datetime
    rng: random.Random

    def window(self) -> tuple[dt.datetime, dt.datetime]:
        """A random window of 3 hours to 4 days inside the 30 days after `opens`, on whole minutes."""
        length = dt.timedelta(minutes=self.rng.randrange(3 * 60, 4 * 24 * 60))
        room = dt.timedelta(days=DAYS) - length
        start = self.opens + dt.timedelta(minutes=self.rng.randrange(int(room.total_seconds() // 60)))
        return start, start + length


def existing_reservation(rng: random.Random) -> dict[str, Any]:
    """Two in five reserve a whole host; the rest 1 to 4 slots of a small flavor, mostly anywhere."""
    if rng.random() < 0.4:
        return physical(1)
    return virtual(rng.randint(1, 4), vcpus=rng.choice((1, 2, 4)), memory_mb=1024 * rng.choice((1, 2, 4, 8)),
                   disk_gb=rng.choice((10, 20, 40)), affinity=rng.choice((None, None, None, True, False)))


@dataclass
class Built:
    hosts: int
    reservations: int
    host_seconds: float
    lease_seconds: float
    created: Counter[str] = field(default_factory=Counter)
    shortages: Counter[str] = field(default_factory=Counter)

    @property
    def seconds(self) -> float:
        return self.host_seconds + self.lease_seconds


def build(url: str, hosts: int, reservations: int, world: World, batch: int, label: str, analyze: bool) -> Built:
    """Migrate the empty database at `url`, then register the hosts and create the leases through the
    services, committing every `batch` operations; on PostgreSQL, with `analyze`, ANALYZE at the end."""
    database = Database(url)
    try:
        upgrade(database.engine)
        started = time.perf_counter()
        for first in range(0, hosts, batch):
            with database.transaction() as session:
                for index in range(first, min(first + batch, hosts)):
                    create_host(session, host_spec(index))
        host_seconds = time.perf_counter() - started
        print(f"[{label}] {hosts} hosts registered in {host_seconds:.1f} s", flush=True)

        built = Built(hosts, reservations, host_seconds, 0.0)
        started = time.perf_counter()
        reported = started
        for first in range(0, reservations, batch):
            with database.transaction() as session:
                for index in range(first, min(first + batch, reservations)):
                    start, end = world.window()
                    reservation = existing_reservation(world.rng)
                    context = RequestContext(user_id="bench", project_id=f"project-{index % 50:02d}",
                                             roles=frozenset({"member"}))
                    try:
                        create_lease(session, context, lease_body(f"existing-{index}", start, end, reservation))
                        built.created[reservation["resource_type"]] += 1
                    except NotEnoughResources:
                        # The decision is taken before anything is written: the session is clean.
                        built.shortages[reservation["resource_type"]] += 1
            if time.perf_counter() - reported > 30:
                reported = time.perf_counter()
                done = min(first + batch, reservations)
                print(f"[{label}] {done}/{reservations} reservations, {reported - started:.0f} s", flush=True)
        built.lease_seconds = time.perf_counter() - started
        print(f"[{label}] {reservations} reservations in {built.lease_seconds:.1f} s "
              f"({built.lease_seconds / max(reservations, 1) * 1000:.1f} ms each); created "
              f"{dict(built.created)}, shortages {dict(built.shortages)}", flush=True)
        after_bulk_load(database, analyze, label)
        return built
    finally:
        database.dispose()


# Part 2: POST /v1/leases over HTTP.


KINDS = {
    VIRTUAL: ("virtual:instance amount=10 affinity none", lambda: virtual(10)),
    PHYSICAL: ("physical:host min=max=5", lambda: physical(5)),
}


def time_posts(client: Client, world: World, kind: str, count: int, prefix: str) -> Timed:
    make = KINDS[kind][1]
    timed = Timed(kind, [], Counter())
    for index in range(count):
        start, end = world.window()
        body = lease_body(f"{prefix}-{index}", start, end, make())
        t0 = time.perf_counter()
        status, data = client.post("/v1/leases", body)
        timed.timings.append((time.perf_counter() - t0) * 1000)
        timed.statuses[status] += 1
        if status not in (201, 409):
            raise SystemExit(f"POST /v1/leases ({kind}) -> {status}: {data[:500]!r}")
    return timed


def http_part(url: str, data_dir: str, world: World, requests: int) -> list[Timed]:
    port = free_port()
    process = start_server(url, data_dir, port)
    try:
        wait_ready(port, process)
        client = Client(port)
        # One of each first, untimed: first-use compilation of statements, imports, pool connections.
        for kind in KINDS:
            time_posts(client, world, kind, 1, f"warmup-{kind.split(':')[0]}")
        results = []
        for kind in KINDS:
            timed = time_posts(client, world, kind, requests, f"bench-{kind.split(':')[0]}")
            print(f"POST /v1/leases {KINDS[kind][0]}: median {timed.median:.1f} ms, p99 {timed.p99:.1f} ms, "
                  f"max {max(timed.timings):.1f} ms; {timed.statuses[201]} x 201, {timed.statuses[409]} x 409",
                  flush=True)
            results.append(timed)
        return results
    finally:
        process.terminate()
        process.wait(timeout=30)


# Part 3: SQL statements per lease create.

@dataclass
class Counted:
    hosts: int
    kind: str
    statements: list[int]
    by_verb: Counter[str]
    milliseconds: list[float]
    conflicts: int = 0


def count_statements(url: str, data_dir: str, hosts: int, world: World, repeats: int) -> list[Counted]:
    """POST lease creates through the app in this process, counting the statements each one runs."""
    settings = Settings(data_dir=data_dir, database_url=url, scheduler_enabled=False, logging_level="WARNING")
    database = Database(url)
    app = create_app(settings, database)
    client = app.test_client()
    seen: list[str] = []

    def before_cursor_execute(_conn, _cursor, statement, _parameters, _context, _executemany) -> None:  # type: ignore[no-untyped-def]
        seen.append(statement)

    event.listen(database.engine, "before_cursor_execute", before_cursor_execute)
    results = []
    try:
        for kind in KINDS:
            make = KINDS[kind][1]
            counted = Counted(hosts, kind, [], Counter(), [])
            # The first create of a kind is not counted: it pays for first-use work. Only creates
            # answered 201 are counted; a 409 (it stops early) is reported, and another window tried.
            for index in range(3 * repeats + 1):
                if len(counted.statements) == repeats:
                    break
                start, end = world.window()
                seen.clear()
                t0 = time.perf_counter()
                response = client.post("/v1/leases", json=lease_body(f"count-{kind}-{index}", start, end, make()),
                                       headers={"X-Auth-Token": "admin"})
                elapsed = (time.perf_counter() - t0) * 1000
                if response.status_code not in (201, 409):
                    raise SystemExit(f"in-process POST /v1/leases ({kind}) -> {response.status_code}: "
                                     f"{response.get_data()[:500]!r}")
                if index == 0 or response.status_code != 201:
                    counted.conflicts += index > 0
                    continue
                counted.statements.append(len(seen))
                counted.by_verb.update(statement.split(None, 1)[0].upper() for statement in seen)
                counted.milliseconds.append(elapsed)
            results.append(counted)
    finally:
        event.remove(database.engine, "before_cursor_execute", before_cursor_execute)
        database.dispose()
    return results


# Part 4: the scheduler.

def one_slot(_index: int) -> dict[str, Any]:
    return virtual(1)


def scheduler_pass(url: str, count: int, batch: int) -> SchedulerRun:
    """Create the leases, then run scheduler passes in this process with the clock at their start."""
    database = Database(url)
    try:
        start = next_minute(dt.datetime.now(dt.UTC)) + dt.timedelta(minutes=5)
        created = scheduler_leases(database, count, start, batch, one_slot)
        note = ""
        if other := other_due_events(database, start):
            note = f"{other} other events were due too"
        t0 = time.perf_counter()
        outcomes: Counter[str] = Counter()
        while time.perf_counter() - t0 < 300:
            results = run_due_events(database, now=start)
            outcomes.update(result.outcome for result in results)
            if not results or active_count(database) >= count:
                break
        seconds = time.perf_counter() - t0
        active = active_count(database)
        note = ", ".join(filter(None, [note, f"event outcomes {dict(outcomes)}"]))
        return SchedulerRun("pass", count, created, seconds if active >= count else None, active, note)
    finally:
        database.dispose()


# The run.

def summary(backend: str, built: Built, timed: list[Timed], counted: list[Counted],
            scheduler: SchedulerRun | None, scheduler_skipped: str) -> str:
    lines = ["", f"=== summary: {backend}, {built.hosts} hosts, {built.reservations} existing reservations ===",
             f"setup: {built.seconds:.1f} s (hosts {built.host_seconds:.1f} s, "
             f"reservations {built.lease_seconds:.1f} s); created {sum(built.created.values())}, shortages "
             f"{', '.join(f'{k} {v}' for k, v in sorted(built.shortages.items())) or 'none'}"]
    lines.append(f"{'POST /v1/leases':<45} {'n':>4} {'201':>4} {'409':>4} {'median ms':>10} {'p99 ms':>8}")
    for result in timed:
        lines.append(f"{KINDS[result.kind][0]:<45} {len(result.timings):>4} {result.statuses[201]:>4} "
                     f"{result.statuses[409]:>4} {result.median:>10.1f} {result.p99:>8.1f}")
    if counted:
        lines += statement_lines(45, "hosts", [(KINDS[result.kind][0], result.hosts, result) for result in counted])
    if scheduler is not None:
        figure = f"{scheduler.seconds:.1f} s" if scheduler.seconds is not None else "NOT all ACTIVE"
        lines.append(f"scheduler ({scheduler.mode}): {scheduler.leases} leases starting in one minute -> all ACTIVE "
                     f"after {figure} ({scheduler.active} ACTIVE; created in {scheduler.created_seconds:.1f} s)"
                     + (f"; {scheduler.note}" if scheduler.note else ""))
    else:
        lines.append(f"scheduler: skipped ({scheduler_skipped})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=1000, help="hosts in the cluster (default 1000)")
    parser.add_argument("--reservations", type=int, default=10000,
                        help="existing reservations over the 30 days (default 10000)")
    parser.add_argument("--requests", type=int, default=100, help="timed POSTs of each kind (default 100)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--postgres", nargs="?", const=DEFAULT_PG_SERVER, default=None, metavar="SERVER_URL",
                        help=f"use scratch PostgreSQL databases on this server (default {DEFAULT_PG_SERVER}), "
                             "created and dropped by the run")
    target.add_argument("--database-url", default=None, help="an empty database to build the cluster in")
    parser.add_argument("--sql-sizes", default="100", metavar="N[,N...]",
                        help="other cluster sizes for the statement count, same reservations per host "
                             "(default 100; empty for none)")
    parser.add_argument("--sql-repeats", type=int, default=3, help="counted creates of each kind per size")
    parser.add_argument("--scheduler", choices=("process", "pass", "skip"), default="process",
                        help="process: `blazar-lite scheduler` in real time (default); pass: in-process passes")
    parser.add_argument("--scheduler-leases", type=int, default=1000, help="leases starting together (default 1000)")
    parser.add_argument("--batch", type=int, default=200, help="operations per setup transaction (default 200)")
    parser.add_argument("--lead-hours", type=float, default=3.0,
                        help="hours from now before which no existing or benchmarked lease starts (default 3)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-analyze", dest="analyze", action="store_false",
                        help="PostgreSQL: do not ANALYZE after the setup (as on a server without autovacuum)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the scratch directory and databases (to profile them afterwards)")
    args = parser.parse_args()
    sizes = sorted({int(size) for size in args.sql_sizes.split(",") if size.strip()} - {args.hosts})

    server = args.postgres or (sibling_server(args.database_url) if args.database_url else None)
    scratch = Scratch(server)
    backend = "SQLite"
    if server:
        backend = "PostgreSQL" + ("" if args.analyze else " without ANALYZE")
    try:
        url = args.database_url or scratch.url("main")
        opens = next_minute(dt.datetime.now(dt.UTC)) + dt.timedelta(hours=args.lead_hours)
        world = World(opens, random.Random(args.seed))
        print(f"{backend}: {make_url(url).render_as_string(hide_password=True)}", flush=True)
        built = build(url, args.hosts, args.reservations, world, args.batch, f"{args.hosts} hosts", args.analyze)

        timed = http_part(url, scratch.dir, world, args.requests) if args.requests > 0 else []

        counted = count_statements(url, scratch.dir, args.hosts, world, args.sql_repeats)
        for size in sizes:
            small_world = World(opens, random.Random(args.seed + size))
            small_url = scratch.url(f"h{size}")
            build(small_url, size, args.reservations * size // args.hosts, small_world, args.batch, f"{size} hosts",
                  args.analyze)
            counted += count_statements(small_url, scratch.dir, size, small_world, args.sql_repeats)
        counted.sort(key=lambda c: (c.kind != VIRTUAL, c.hosts))
        for result in counted:
            print(f"SQL statements per create, {KINDS[result.kind][0]}, {result.hosts} hosts: "
                  f"{result.statements} (creates answered 201; {result.conflicts} answered 409, not counted)",
                  flush=True)

        scheduler = None
        skipped = ""
        if args.scheduler == "skip":
            skipped = "--scheduler skip"
        elif importlib.util.find_spec("blazar_lite.scheduler.runner") is None:
            skipped = "blazar_lite.scheduler.runner does not exist"
        elif args.scheduler == "pass":
            scheduler = scheduler_pass(url, args.scheduler_leases, args.batch)
        else:
            # The creates of the setup say how long the scheduler's leases take to create.
            per_create = built.lease_seconds / args.reservations if args.reservations else 0.1
            scheduler = scheduler_processes(url, scratch.dir, args.scheduler_leases, args.batch, per_create, one_slot)
        print(summary(backend, built, timed, counted, scheduler, skipped))
    finally:
        scratch.finish(args.keep)


if __name__ == "__main__":
    main()
