"""Benchmark instance creation inside reservations and on demand, the allocators' cost per decision,
and the SQL an instance create costs.

1. Setup, in-process through the services: a fresh database (a SQLite file in a temporary
   directory, or PostgreSQL), H registered hosts (default 1,000), N on-demand compute nodes
   (default 1,000: root providers with VCPU / MEMORY_MB / DISK_GB inventory that are not
   registered hosts) and L leases (default 100) of one virtual:instance reservation each, affinity
   none, slots of 1 vCPU / 1024 MB / 10 GB, with room for I instances in all (default 1,000: 100
   leases x 10 slots). The leases start a minute or two ahead; the scheduler's pass, run in this
   process with its clock one second after their start, makes them ACTIVE.
2. `blazar-lite serve --no-scheduler` (one worker, the default allocator fewest-instances) on that
   database, on a free port, and timed POST /v1/instances: I instances in the reservations (taking
   the slot's size, spread over the reservations in turn), then I on demand (1 vCPU, 1024 MB,
   10 GB). Median and p99 (nearest rank) in ms, and how many were answered 201 and 409.
3. The allocators' cost per decision, in-process, on the on-demand nodes as part 2 left them: the
   snapshot read (the node rows, then the Snapshot; with the instances on each node too, as an
   IAllocator gets it), the built-in choosers fewest-instances, pack and spread, and the IAllocator
   programs etc/iallocators/most-free-memory and, when installed, Ganeti's hail (a process each
   call, its start included).
4. SQL statements per instance create, counted in-process (create_app and its test client; a
   `before_cursor_execute` listener on the engine) for both kinds, on this world and on smaller
   ones with the same instances per node (--sql-sizes), filled in-process.

    python bench/instances.py                       # SQLite, 1,000 hosts, 1,000 nodes, 2 x 1,000 creates
    python bench/instances.py --postgres            # a scratch PostgreSQL database, dropped after
    python bench/instances.py --hosts 50 --nodes 50 --instances 50 --sql-sizes 10   # a quick look
    python bench/instances.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/mydb

--database-url must name an empty database; the smaller worlds of part 4 then go to scratch
databases next to it (a temporary SQLite file, or a database created on the same PostgreSQL
server and dropped at the end). On PostgreSQL the tables are ANALYZEd after the setup, as
autovacuum would after a bulk load (--no-analyze: not). Each counted create of part 4 is deleted
again (not counted), so that every one finds the same world.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from harness import (
    DEFAULT_PG_SERVER,
    Client,
    Scratch,
    Timed,
    after_bulk_load,
    blazar_date,
    free_port,
    host_spec,
    next_minute,
    sibling_server,
    start_server,
    statement_lines,
    wait_ready,
)
from sqlalchemy import event, func, select
from sqlalchemy.engine import make_url

from blazar_lite.allocators import builtin
from blazar_lite.allocators.iallocator import SOURCE_DIRECTORY, choose_with_iallocator
from blazar_lite.allocators.snapshot import Decision, PlacementRequest, Snapshot
from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.db.migrate import upgrade
from blazar_lite.hosts.service import create_host
from blazar_lite.instances import service as instance_service
from blazar_lite.instances.models import Instance
from blazar_lite.instances.snapshot import NodeRow, node_rows, read_snapshot
from blazar_lite.leases.models import ACTIVE, Lease
from blazar_lite.leases.service import create_lease
from blazar_lite.placement import inventories, providers
from blazar_lite.placement.backend import EmbeddedPlacement

VIRTUAL = "virtual:instance"
DEFAULT_HAIL = "/usr/lib/ganeti/iallocators/hail"
HAIL_OPTIONS = ("--static-kvm-node-memory=0", "--no-capacity-checks")
LEASE_PROJECT = "bench-instances"
# The size of a reservation's slot and of an on-demand instance.
SLOT = {"vcpus": 1, "memory_mb": 1024, "disk_gb": 10}
RESOURCES = {"VCPU": SLOT["vcpus"], "MEMORY_MB": SLOT["memory_mb"], "DISK_GB": SLOT["disk_gb"]}
TARGET_P99_MS = 30.0
T = TypeVar("T")

RESERVED = "reservation"
ON_DEMAND = "on-demand"
KIND_LABELS = {
    RESERVED: "in a reservation (slot 1 vCPU/1024 MB/10 GB)",
    ON_DEMAND: "on demand 1 vCPU/1024 MB/10 GB, fewest-instances",
}


def median_ms(call: Callable[[], T], count: int) -> tuple[float, T]:
    """The median wall time of `count` (at least one) calls of `call`, in ms, and what the last returned."""
    timings = []
    result = call()  # not timed: first use
    for _ in range(count):
        t0 = time.perf_counter()
        result = call()
        timings.append((time.perf_counter() - t0) * 1000)
    return statistics.median(timings), result


# Scratch databases.

# The world: hosts, on-demand nodes, started instance reservations.

def node_inventory(index: int) -> dict[str, dict[str, int]]:
    vcpus = (16, 32, 48)[index % 3]
    return {"VCPU": {"total": vcpus}, "MEMORY_MB": {"total": vcpus * 4096},
            "DISK_GB": {"total": (500, 1000)[index % 2]}}


def slots(amount: int) -> dict[str, Any]:
    return {"resource_type": VIRTUAL, "amount": amount, **SLOT, "affinity": None, "resource_properties": ""}


@dataclass
class Shape:
    """How big a world is: registered hosts, on-demand nodes, and `leases` reservations of `amount`
    slots each."""

    hosts: int
    nodes: int
    leases: int
    amount: int

    @classmethod
    def of(cls, hosts: int, nodes: int, instances: int, leases: int) -> Shape:
        """Room for `instances` in at most `leases` reservations (fewer when there are fewer instances)."""
        leases = max(1, min(leases, instances))
        return cls(hosts, nodes, leases, max(1, math.ceil(instances / leases)))

    @property
    def reservations(self) -> str:
        return f"{self.leases} instance reservations x {self.amount} slot{'s' if self.amount != 1 else ''}"


@dataclass
class Built:
    shape: Shape
    host_seconds: float = 0.0
    node_seconds: float = 0.0
    lease_seconds: float = 0.0
    start_seconds: float = 0.0
    fill_seconds: float = 0.0
    reservation_ids: list[str] = field(default_factory=list)
    start_outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def seconds(self) -> float:
        return self.host_seconds + self.node_seconds + self.lease_seconds + self.start_seconds + self.fill_seconds


def active_leases(database: Database) -> int:
    with database.read() as session:
        return session.scalar(select(func.count()).select_from(Lease).where(
            Lease.project_id == LEASE_PROJECT, Lease.status == ACTIVE)) or 0


def build(url: str, shape: Shape, batch: int, label: str, analyze: bool) -> Built:
    """Migrate the empty database at `url`; register the hosts, create the on-demand nodes and the
    leases through the services, committing every `batch` operations; start the leases with the
    scheduler's pass; on PostgreSQL, with `analyze`, ANALYZE at the end."""
    from blazar_lite.scheduler.runner import run_due_events

    database = Database(url)
    built = Built(shape)
    try:
        upgrade(database.engine)
        started = time.perf_counter()
        for first in range(0, shape.hosts, batch):
            with database.transaction() as session:
                for index in range(first, min(first + batch, shape.hosts)):
                    create_host(session, host_spec(index))
        built.host_seconds = time.perf_counter() - started
        print(f"[{label}] {shape.hosts} hosts registered in {built.host_seconds:.1f} s", flush=True)

        started = time.perf_counter()
        for first in range(0, shape.nodes, batch):
            with database.transaction() as session:
                for index in range(first, min(first + batch, shape.nodes)):
                    view = providers.create_provider(session, f"ondemand-{index:05d}")
                    inventories.replace_inventories(session, view.uuid, view.generation, node_inventory(index))
        built.node_seconds = time.perf_counter() - started
        print(f"[{label}] {shape.nodes} on-demand nodes created in {built.node_seconds:.1f} s", flush=True)

        # All the leases start at one whole minute ahead; `now` is pinned to when it was chosen, so
        # that a setup that runs past that minute is still accepted.
        clock = dt.datetime.now(dt.UTC)
        start = next_minute(clock) + dt.timedelta(minutes=1)
        end = start + dt.timedelta(days=1)
        context = RequestContext(user_id="bench", project_id=LEASE_PROJECT, roles=frozenset({"member"}))
        started = time.perf_counter()
        for first in range(0, shape.leases, batch):
            with database.transaction() as session:
                for index in range(first, min(first + batch, shape.leases)):
                    body = {"name": f"reserved-{index:04d}", "start_date": blazar_date(start),
                            "end_date": blazar_date(end), "before_end_date": None, "events": [],
                            "reservations": [slots(shape.amount)]}
                    lease = create_lease(session, context, body, now=clock)
                    built.reservation_ids.extend(reservation.id for reservation in lease.reservations)
        built.lease_seconds = time.perf_counter() - started
        print(f"[{label}] {shape.reservations} created in {built.lease_seconds:.1f} s", flush=True)

        started = time.perf_counter()
        while True:
            results = run_due_events(database, now=start + dt.timedelta(seconds=1))
            built.start_outcomes.update(result.outcome for result in results)
            if not results or active_leases(database) >= shape.leases:
                break
        built.start_seconds = time.perf_counter() - started
        active = active_leases(database)
        print(f"[{label}] {active}/{shape.leases} leases ACTIVE after the scheduler's pass "
              f"({built.start_seconds:.1f} s; event outcomes {dict(built.start_outcomes)})", flush=True)
        if active < shape.leases:
            raise SystemExit(f"only {active} of {shape.leases} leases started; see the event outcomes above")

        after_bulk_load(database, analyze, label)
        return built
    finally:
        database.dispose()


def reserved_body(name: str, reservation_id: str) -> dict[str, Any]:
    return {"name": name, "reservation_id": reservation_id}


def on_demand_body(name: str) -> dict[str, Any]:
    return {"name": name, **SLOT}


def body_for(kind: str, name: str, index: int, reservation_ids: list[str]) -> dict[str, Any]:
    """The body of the `index`th create of `kind` (reservations taken in turn)."""
    if kind == RESERVED:
        return reserved_body(name, reservation_ids[index % len(reservation_ids)])
    return on_demand_body(name)


def fill(url: str, built: Built, instances: int, batch: int, label: str) -> None:
    """Create `instances` of each kind in-process (the smaller worlds of part 4), as part 2 does over HTTP."""
    database = Database(url)
    admin = RequestContext.admin()
    try:
        started = time.perf_counter()
        for kind in (RESERVED, ON_DEMAND):
            for first in range(0, instances, batch):
                with database.transaction() as session:
                    for index in range(first, min(first + batch, instances)):
                        instance_service.create_instance(
                            session, admin, body_for(kind, f"fill-{kind}-{index:05d}", index, built.reservation_ids))
        built.fill_seconds = time.perf_counter() - started
        print(f"[{label}] {instances} instances of each kind created in-process in {built.fill_seconds:.1f} s",
              flush=True)
    finally:
        database.dispose()


# Part 2: POST /v1/instances over HTTP.


def time_creates(client: Client, kind: str, count: int, prefix: str, reservation_ids: list[str]) -> Timed:
    timed = Timed(kind, [], Counter())
    for index in range(count):
        body = body_for(kind, f"{prefix}-{index:05d}", index, reservation_ids)
        t0 = time.perf_counter()
        status, data = client.post("/v1/instances", body)
        timed.timings.append((time.perf_counter() - t0) * 1000)
        timed.statuses[status] += 1
        if status not in (201, 409):
            raise SystemExit(f"POST /v1/instances ({kind}) -> {status}: {data[:500]!r}")
    return timed


def warm_up(client: Client, kind: str, reservation_ids: list[str]) -> None:
    """One create of `kind`, untimed, deleted again so that it takes no slot and no node's room."""
    status, data = client.post("/v1/instances", body_for(kind, f"warmup-{kind}", 0, reservation_ids))
    if status != 201:
        raise SystemExit(f"warm-up POST /v1/instances ({kind}) -> {status}: {data[:500]!r}")
    instance_id = json.loads(data)["instance"]["id"]
    status, data = client.delete(f"/v1/instances/{instance_id}")
    if status != 204:
        raise SystemExit(f"warm-up DELETE /v1/instances/{instance_id} -> {status}: {data[:500]!r}")


def http_part(url: str, data_dir: str, count: int, reservation_ids: list[str]) -> list[Timed]:
    port = free_port()
    process = start_server(url, data_dir, port, BLAZAR_LITE_INSTANCES_ALLOCATOR=builtin.FEWEST_INSTANCES)
    try:
        wait_ready(port, process)
        client = Client(port)
        # One of each first, untimed: first-use compilation of statements, imports, pool connections.
        for kind in KIND_LABELS:
            warm_up(client, kind, reservation_ids)
        results = []
        for kind in KIND_LABELS:
            timed = time_creates(client, kind, count, f"bench-{kind}", reservation_ids)
            print(f"POST /v1/instances {KIND_LABELS[kind]}: median {timed.median:.1f} ms, p99 {timed.p99:.1f} ms, "
                  f"max {max(timed.timings):.1f} ms; {timed.statuses[201]} x 201, {timed.statuses[409]} x 409",
                  flush=True)
            results.append(timed)
        return results
    finally:
        process.terminate()
        process.wait(timeout=30)


# Part 3: the allocators, per decision.

@dataclass
class Decided:
    label: str
    calls: int
    median_ms: float | None
    note: str = ""


def allocator_part(url: str, reads: int, calls: int, iallocator_calls: int, hail: str,
                   expected_nodes: int) -> list[Decided]:
    """Time the snapshot read of the on-demand nodes and each allocator's decision on it, in-process."""
    database = Database(url)
    request = PlacementRequest(name="bench-decision", project_id="admin", resources=dict(RESOURCES))
    results = []
    try:
        def rows() -> list[NodeRow]:
            with database.read() as session:
                return node_rows(session, EmbeddedPlacement(session), None)

        def snapshot(found: list[NodeRow], with_instances: bool) -> Snapshot:
            with database.read() as session:
                return read_snapshot(session, EmbeddedPlacement(session), found, with_instances=with_instances)

        # Each figure leaves out a first call: statement compilation, the pool's connection.
        ms, found = median_ms(rows, reads)
        note = "" if len(found) == expected_nodes else f"{len(found)} nodes found, {expected_nodes} expected"
        results.append(Decided(f"node rows (on-demand nodes: {len(found)})", reads, ms, note))
        ms, plain = median_ms(lambda: snapshot(found, False), reads)
        results.append(Decided("read_snapshot", reads, ms))
        ms, full = median_ms(lambda: snapshot(found, True), reads)
        results.append(Decided("read_snapshot with_instances (IAllocator)", reads, ms))

        for policy in builtin.BUILTIN:
            ms, decision = median_ms(lambda policy=policy: builtin.choose(plain, request, policy), calls)
            results.append(Decided(f"builtin {policy}", calls, ms, "" if decision.placed else "no node chosen"))

        programs = [("most-free-memory", str(SOURCE_DIRECTORY), ())]
        if os.access(hail, os.X_OK):
            programs.append((Path(hail).name, str(Path(hail).parent), HAIL_OPTIONS))
        for name, directory, options in programs:
            def decide(name: str = name, directory: str = directory, options: tuple[str, ...] = options) -> Decision:
                return choose_with_iallocator(full, request, name, search_path=(directory,), options=options)

            ms, decision = median_ms(decide, iallocator_calls)
            # The example starts with `#!/usr/bin/env python3`: which python3 that is (a pyenv shim
            # costs ~100 ms a start) is most of its figure.
            note = f"options {' '.join(options)}" if options else f"python3 on PATH: {shutil.which('python3')}"
            if not decision.placed:
                note += f"; no node chosen: {decision.message[:200]}"
            results.append(Decided(f"iallocator {name}, process included", iallocator_calls, ms, note))
        if not os.access(hail, os.X_OK):
            results.append(Decided("iallocator hail", 0, None, f"{hail} is not installed (apt-get install "
                                                                "ganeti-htools)"))
        for result in results:
            figure = f"{result.median_ms:.2f} ms" if result.median_ms is not None else "skipped"
            print(f"allocator part: {result.label}: median {figure} over {result.calls} calls"
                  + (f" ({result.note})" if result.note else ""), flush=True)
        return results
    finally:
        database.dispose()


# Part 4: SQL statements per instance create.

@dataclass
class Counted:
    nodes: int
    kind: str
    statements: list[int]
    by_verb: Counter[str]
    milliseconds: list[float]
    conflicts: int = 0


def count_statements(url: str, data_dir: str, nodes: int, reservation_ids: list[str], repeats: int) -> list[Counted]:
    """POST instance creates through the app in this process, counting the statements each one runs;
    each is deleted again (not counted) so that the next finds the same world."""
    from blazar_lite.app import create_app
    from blazar_lite.settings import Settings

    settings = Settings(data_dir=data_dir, database_url=url, scheduler_enabled=False, logging_level="WARNING",
                        instances_allocator=builtin.FEWEST_INSTANCES)
    database = Database(url)
    app = create_app(settings, database)
    client = app.test_client()
    headers = {"X-Auth-Token": "admin"}
    seen: list[str] = []

    def before_cursor_execute(_conn, _cursor, statement, _parameters, _context, _executemany) -> None:  # type: ignore[no-untyped-def]
        seen.append(statement)

    def delete(instance_id: str) -> None:
        response = client.delete(f"/v1/instances/{instance_id}", headers=headers)
        if response.status_code != 204:
            raise SystemExit(f"in-process DELETE /v1/instances/{instance_id} -> {response.status_code}: "
                             f"{response.get_data()[:500]!r}")

    # The reservations are full after part 2: give one slot of the first back.
    reservation_id = reservation_ids[0]
    with database.read() as session:
        taken = session.scalar(select(Instance.uuid).where(Instance.reservation_id == reservation_id).limit(1))
    if taken is not None:
        delete(taken)

    event.listen(database.engine, "before_cursor_execute", before_cursor_execute)
    results = []
    try:
        for kind in KIND_LABELS:
            counted = Counted(nodes, kind, [], Counter(), [])
            # The first create of a kind is not counted: it pays for first-use work. Only creates
            # answered 201 are counted; a 409 is reported.
            for index in range(3 * repeats + 1):
                if len(counted.statements) == repeats:
                    break
                body = body_for(kind, f"count-{kind}-{index}", 0, [reservation_id])
                seen.clear()
                t0 = time.perf_counter()
                response = client.post("/v1/instances", json=body, headers=headers)
                elapsed = (time.perf_counter() - t0) * 1000
                statements = list(seen)
                if response.status_code not in (201, 409):
                    raise SystemExit(f"in-process POST /v1/instances ({kind}) -> {response.status_code}: "
                                     f"{response.get_data()[:500]!r}")
                if response.status_code == 201:
                    delete(response.get_json()["instance"]["id"])
                if index == 0 or response.status_code != 201:
                    counted.conflicts += index > 0
                    continue
                counted.statements.append(len(statements))
                counted.by_verb.update(statement.split(None, 1)[0].upper() for statement in statements)
                counted.milliseconds.append(elapsed)
            results.append(counted)
    finally:
        event.remove(database.engine, "before_cursor_execute", before_cursor_execute)
        database.dispose()
    return results


# The run.

def summary(backend: str, built: Built, timed: list[Timed], decided: list[Decided], counted: list[Counted]) -> str:
    shape = built.shape
    lines = ["", f"=== summary: {backend}, {shape.hosts} hosts, {shape.nodes} on-demand nodes, "
                 f"{shape.reservations} ===",
             f"setup: {built.seconds:.1f} s (hosts {built.host_seconds:.1f} s, nodes {built.node_seconds:.1f} s, "
             f"leases {built.lease_seconds:.1f} s, lease starts {built.start_seconds:.1f} s)"]
    lines.append(f"{'POST /v1/instances (target p99 <= 30 ms)':<50} {'n':>5} {'201':>5} {'409':>5} "
                 f"{'median ms':>10} {'p99 ms':>8}")
    for result in timed:
        over = "  over target" if result.p99 > TARGET_P99_MS else ""
        lines.append(f"{KIND_LABELS[result.kind]:<50} {len(result.timings):>5} {result.statuses[201]:>5} "
                     f"{result.statuses[409]:>5} {result.median:>10.1f} {result.p99:>8.1f}{over}")
    if decided:
        lines.append(f"{'allocator decision, on-demand nodes (in-process)':<50} {'calls':>5} {'median ms':>10}")
        for result in decided:
            figure = f"{result.median_ms:>10.2f}" if result.median_ms is not None else f"{'-':>10}"
            lines.append(f"{result.label:<50} {result.calls:>5} {figure}" + (f"  {result.note}" if result.note else ""))
    if counted:
        lines += statement_lines(50, "nodes", [(KIND_LABELS[result.kind], result.nodes, result) for result in counted])
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=1000, help="registered hosts (default 1000)")
    parser.add_argument("--nodes", type=int, default=1000, help="on-demand compute nodes (default 1000)")
    parser.add_argument("--instances", type=int, default=1000,
                        help="timed creates of each kind; the reservations hold this many (default 1000)")
    parser.add_argument("--leases", type=int, default=100,
                        help="instance reservations the in-reservation creates are spread over (default 100)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--postgres", nargs="?", const=DEFAULT_PG_SERVER, default=None, metavar="SERVER_URL",
                        help=f"use scratch PostgreSQL databases on this server (default {DEFAULT_PG_SERVER}), "
                             "created and dropped by the run")
    target.add_argument("--database-url", default=None, help="an empty database to build the world in")
    parser.add_argument("--decisions", type=int, default=200,
                        help="calls of each built-in allocator on the snapshot (default 200)")
    parser.add_argument("--iallocator-calls", type=int, default=20,
                        help="calls of each IAllocator program (default 20)")
    parser.add_argument("--snapshot-reads", type=int, default=20,
                        help="timed reads of the on-demand nodes' snapshot (default 20)")
    parser.add_argument("--hail", default=DEFAULT_HAIL,
                        help=f"Ganeti's hail; left out when not executable (default {DEFAULT_HAIL})")
    parser.add_argument("--sql-sizes", default="100", metavar="N[,N...]",
                        help="other world sizes (on-demand nodes; hosts, reservations and instances scaled alike) "
                             "for the statement count (default 100; empty for none)")
    parser.add_argument("--sql-repeats", type=int, default=3, help="counted creates of each kind per size (default 3)")
    parser.add_argument("--batch", type=int, default=200, help="operations per setup transaction (default 200)")
    parser.add_argument("--no-analyze", dest="analyze", action="store_false",
                        help="PostgreSQL: do not ANALYZE after the setup (as on a server without autovacuum)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the scratch directory and databases (to profile them afterwards)")
    args = parser.parse_args()
    if min(args.hosts, args.nodes, args.instances, args.leases, args.decisions, args.iallocator_calls,
           args.snapshot_reads, args.sql_repeats) < 1:
        parser.error("every count must be at least 1")
    sizes = sorted({int(size) for size in args.sql_sizes.split(",") if size.strip()} - {args.nodes})

    server = args.postgres or (sibling_server(args.database_url) if args.database_url else None)
    scratch = Scratch(server, prefix="blazar_lite_bench_instances")
    backend = "SQLite"
    if server:
        backend = "PostgreSQL" + ("" if args.analyze else " without ANALYZE")
    try:
        url = args.database_url or scratch.url("main")
        print(f"{backend}: {make_url(url).render_as_string(hide_password=True)}", flush=True)
        shape = Shape.of(args.hosts, args.nodes, args.instances, args.leases)
        label = f"{args.nodes} nodes"
        built = build(url, shape, args.batch, label, args.analyze)

        timed = http_part(url, scratch.dir, args.instances, built.reservation_ids)
        decided = allocator_part(url, args.snapshot_reads, args.decisions, args.iallocator_calls, args.hail,
                                 args.nodes)

        counted = count_statements(url, scratch.dir, args.nodes, built.reservation_ids, args.sql_repeats)
        for size in sizes:
            scale = size / args.nodes
            small_instances = max(1, round(args.instances * scale))
            small_shape = Shape.of(max(1, round(args.hosts * scale)), size, small_instances,
                                   max(1, round(args.leases * scale)))
            small_url = scratch.url(f"n{size}")
            small_label = f"{size} nodes"
            small = build(small_url, small_shape, args.batch, small_label, args.analyze)
            fill(small_url, small, small_instances, args.batch, small_label)
            counted += count_statements(small_url, scratch.dir, size, small.reservation_ids, args.sql_repeats)
        counted.sort(key=lambda c: (c.kind != RESERVED, c.nodes))
        for result in counted:
            print(f"SQL statements per create, {KIND_LABELS[result.kind]}, {result.nodes} nodes: "
                  f"{result.statements} (creates answered 201; {result.conflicts} answered 409, not counted)",
                  flush=True)
        print(summary(backend, built, timed, decided, counted))
    finally:
        scratch.finish(args.keep)


if __name__ == "__main__":
    main()
