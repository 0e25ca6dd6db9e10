"""The scale figures: one busy world of 10,000 hosts and 100,000 reservations, measured over HTTP.

1. Setup (as availability.py builds it): a fresh database (PostgreSQL with --postgres, else a
   SQLite file), N hosts (default 10,000) registered through the hosts service (each a compute
   node provider with VCPU / MEMORY_MB / DISK_GB inventory, a reservation provider and a place
   in the freepool), and R existing reservations (default 100,000) over the next 90 days,
   bulk-inserted as lease creation writes them, never overbooking a host.
2. `blazar-lite serve --no-scheduler` (--workers, default 1) on that database, and from one
   client over HTTP, after a few untimed requests of each kind:
   - POST /v1/leases, --requests of each of four kinds in random windows of the first 60 days:
     5 whole hosts; 10 small slots anywhere; 4 slots of 8 vCPU on one host (affinity); and nine
     in ten of the GPU hosts for 48 h, which mostly does not fit (409). Median and p99.
   - GET /v1/availability, --requests of each of availability.py's two searches. p95.
   - GET /placement/allocation_candidates (placement 1.39) for VCPU:2, MEMORY_MB:4096,
     DISK_GB:40 without disabled compute nodes, as Nova asks (limit=1000), and without a limit
     (every host). Median over --candidate-runs.
   - The API processes' memory afterwards: VmRSS and VmHWM of gunicorn's worker(s) and arbiter.
3. Scheduler lag: --scheduler-leases (default 1,000) leases that start in the same minute (one in
   five a whole host, the others 1 to 4 slots), created through the lease service before it, and
   the seconds from that minute until all are ACTIVE with real `blazar-lite scheduler`
   processes: one, then (--schedulers, default 1,2) two, each time with new leases.

    python bench/scale.py --postgres                                 # the figures (PostgreSQL)
    python bench/scale.py --hosts 200 --reservations 2000 --requests 20   # a quick look (SQLite)

On PostgreSQL the tables are ANALYZEd after the setup, as autovacuum would after a bulk load
(--no-analyze: not). --keep keeps the databases and the scratch directory (scheduler logs).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402 - the harness sits beside this script
    DEFAULT_PG_SERVER,
    SEARCHES,
    WORLD_DAYS,
    BusyWorld,
    Client,
    SchedulerRun,
    Scratch,
    Timed,
    build_busy_world,
    free_port,
    lease_body,
    next_minute,
    percentile,
    physical,
    scheduler_processes,
    start_server,
    time_searches,
    virtual,
    wait_ready,
)

GPU = '["==", "$gpu", "true"]'
CANDIDATES_VERSION = "1.39"
CANDIDATES = "/placement/allocation_candidates?resources=VCPU:2,MEMORY_MB:4096,DISK_GB:40" \
             "&required=!COMPUTE_STATUS_DISABLED"


def gpu_hosts(hosts: int) -> int:
    """How many of the first `hosts` hosts have gpu=true (harness.host_spec: one in ten)."""
    return (hosts + 9) // 10


def lease_kinds(hosts: int) -> dict[str, tuple[Callable[[], dict[str, Any]], dt.timedelta | None]]:
    """Label: (the reservation, a fixed length or None for 3 hours to 4 days)."""
    scarce = max(1, gpu_hosts(hosts) * 9 // 10)
    return {
        "physical:host min=max=5": (lambda: physical(5), None),
        "virtual:instance amount=10 (1 vCPU, 1 GiB, 10 GB)": (lambda: virtual(10), None),
        "virtual:instance amount=4 (8 vCPU, 32 GiB) affinity": (
            lambda: virtual(4, vcpus=8, memory_mb=32768, disk_gb=100, affinity=True), None),
        f"physical:host min=max={scarce} gpu=true, 48h": (lambda: physical(scarce, GPU), dt.timedelta(hours=48)),
    }


# The timed requests.

def time_lease_creates(client: Client, kinds: dict[str, tuple[Callable[[], dict[str, Any]], dt.timedelta | None]],
                       count: int, opens: dt.datetime, rng: random.Random, prefix: str,
                       refusals: dict[str, str] | None = None) -> list[Timed]:
    """`count` POST /v1/leases of each kind, in turn, each in a random window starting in the
    first 60 days after `opens`; the first 409 message of each kind goes to `refusals`."""
    results = {kind: Timed(kind, [], Counter()) for kind in kinds}
    refusals = {} if refusals is None else refusals
    for _ in range(count):
        for position, (kind, (reservation, fixed)) in enumerate(kinds.items()):
            length = fixed or dt.timedelta(minutes=rng.randrange(3 * 60, 4 * 24 * 60))
            start = opens + dt.timedelta(minutes=rng.randrange(60 * 24 * 60))
            body = lease_body(f"{prefix}-{position}-{len(results[kind].timings)}", start, start + length,
                              reservation())
            t0 = time.perf_counter()
            status, data = client.post("/v1/leases", body)
            results[kind].timings.append((time.perf_counter() - t0) * 1000)
            results[kind].statuses[status] += 1
            if status not in (201, 409):
                raise SystemExit(f"POST /v1/leases ({kind}) -> {status}: {data[:500]!r}")
            if status == 409 and kind not in refusals:
                refusals[kind] = json.loads(data).get("error_message", "")
    return list(results.values())


def time_candidates(client: Client, query: str, runs: int) -> tuple[list[float], int]:
    """`runs` GETs of `query`; the timings, and how many allocation requests the answer held."""
    headers = dict(client.headers, **{"OpenStack-API-Version": f"placement {CANDIDATES_VERSION}"})
    timings = []
    data = b""
    for _ in range(runs):
        t0 = time.perf_counter()
        client.connection.request("GET", query, headers=headers)
        response = client.connection.getresponse()
        data = response.read()
        timings.append((time.perf_counter() - t0) * 1000)
        if response.status != 200:
            raise SystemExit(f"GET {query} -> {response.status}: {data[:500]!r}")
    return timings, len(json.loads(data)["allocation_requests"])


# The API processes' memory.

@dataclass
class Memory:
    pid: int
    role: str
    rss_kib: int
    hwm_kib: int


def children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as listed:
            found += [int(child) for child in listed.read().split()]
    return found


def memory(pid: int, role: str) -> Memory:
    """VmRSS and VmHWM (KiB) of process `pid`, from /proc."""
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0])
    return Memory(pid, role, fields["VmRSS"], fields["VmHWM"])


def api_memory(server: subprocess.Popen[bytes]) -> list[Memory]:
    """The gunicorn worker(s) under the `blazar-lite serve` process (the arbiter), and the arbiter."""
    return [memory(pid, "worker") for pid in children(server.pid)] + [memory(server.pid, "arbiter")]


# The run.

@dataclass
class Figures:
    creates: list[Timed]
    searches: list[tuple[str, Timed, Counter[int]]]
    candidates: list[tuple[str, list[float], int]]
    memory: list[Memory]


def http_part(url: str, data_dir: str, args: argparse.Namespace, opens: dt.datetime) -> Figures:
    port = free_port()
    server = start_server(url, data_dir, port, workers=args.workers)
    try:
        wait_ready(port, server)
        client = Client(port)
        rng = random.Random(args.seed)
        kinds = lease_kinds(args.hosts)
        # A few of each kind first, untimed: first-use compilation of statements, imports, pool connections.
        time_lease_creates(client, kinds, 2, opens, rng, "warmup")
        refusals: dict[str, str] = {}
        creates = time_lease_creates(client, kinds, args.requests, opens, rng, "bench", refusals)
        for timed in creates:
            print(f"POST /v1/leases {timed.kind}: median {timed.median:.1f} ms, p99 {timed.p99:.1f} ms, "
                  f"max {max(timed.timings):.1f} ms; {timed.statuses[201]} x 201, {timed.statuses[409]} x 409"
                  + (f" (first: {refusals[timed.kind]})" if timed.kind in refusals else ""), flush=True)

        searches = []
        for kind, (label, params) in SEARCHES.items():
            time_searches(client, kind, params, 3, opens, rng)
            timed, found = time_searches(client, kind, params, args.requests, opens, rng)
            print(f"GET /v1/availability {label}: median {timed.median:.1f} ms, p95 "
                  f"{percentile(timed.timings, 0.95):.1f} ms, p99 {timed.p99:.1f} ms; windows per answer "
                  f"{dict(sorted(found.items()))}", flush=True)
            searches.append((label, timed, found))

        candidates = []
        for label, query in (("limit=1000 (as Nova asks)", CANDIDATES + "&limit=1000"), ("no limit", CANDIDATES)):
            time_candidates(client, query, 2)
            timings, count = time_candidates(client, query, args.candidate_runs)
            print(f"GET allocation_candidates {label}: median {statistics.median(timings):.1f} ms, "
                  f"min {min(timings):.1f} ms, max {max(timings):.1f} ms; {count} allocation requests", flush=True)
            candidates.append((label, timings, count))

        used = api_memory(server)
        for entry in used:
            print(f"API {entry.role} {entry.pid}: VmRSS {entry.rss_kib / 1024:.0f} MiB, "
                  f"VmHWM {entry.hwm_kib / 1024:.0f} MiB", flush=True)
        return Figures(creates, searches, candidates, used)
    finally:
        server.terminate()
        server.wait(timeout=30)


def starting_reservation(index: int) -> dict[str, Any]:
    """One in five a whole host; the others 1 to 4 small slots anywhere."""
    return physical(1) if index % 5 == 0 else virtual(1 + index % 4)


def summary(backend: str, args: argparse.Namespace, world: BusyWorld, figures: Figures,
            schedulers: list[SchedulerRun]) -> str:
    every = [ms for timed in figures.creates for ms in timed.timings]
    statuses = sum((timed.statuses for timed in figures.creates), Counter())
    lines = ["", f"=== summary: {backend}, {world.hosts} hosts, {sum(world.reservations.values())} existing "
                 f"reservations over {WORLD_DAYS} days, {args.workers} API worker(s) ===",
             f"setup: hosts {world.host_seconds:.1f} s, reservations {world.reservation_seconds:.1f} s "
             f"({dict(world.reservations)})",
             f"{'figure':<62} {'n':>5} {'median':>10} {'p95':>10} {'p99':>10}  notes"]

    def row(label: str, timings: list[float], note: str) -> None:
        lines.append(f"{label:<62} {len(timings):>5} {statistics.median(timings):>7.1f} ms "
                     f"{percentile(timings, 0.95):>7.1f} ms {percentile(timings, 0.99):>7.1f} ms  {note}")

    row("lease create, POST /v1/leases (all four kinds)", every, f"{statuses[201]} x 201, {statuses[409]} x 409")
    for timed in figures.creates:
        row(f"  {timed.kind}", timed.timings, f"{timed.statuses[201]} x 201, {timed.statuses[409]} x 409")
    for label, timed, found in figures.searches:
        windows = statistics.mean(count for count, times in found.items() for _ in range(times))
        row(f"availability search, {label}", timed.timings, f"{windows:.1f} windows on average")
    for label, timings, count in figures.candidates:
        row(f"allocation candidates, {label}", timings, f"{count} allocation requests")
    for run in schedulers:
        figure = f"{run.seconds:.1f} s" if run.seconds is not None else "NOT all ACTIVE"
        lines.append(f"scheduler lag, {run.leases} starts in one minute, {run.mode}: all ACTIVE after {figure} "
                     f"({run.active} ACTIVE; created in {run.created_seconds:.1f} s)"
                     + (f"; {run.note}" if run.note else ""))
    for entry in figures.memory:
        lines.append(f"API {entry.role} memory after the run: VmRSS {entry.rss_kib / 1024:.0f} MiB, "
                     f"VmHWM {entry.hwm_kib / 1024:.0f} MiB")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=10000, help="hosts in the world (default 10000)")
    parser.add_argument("--reservations", type=int, default=100000,
                        help=f"existing reservations over the next {WORLD_DAYS} days (default 100000)")
    parser.add_argument("--requests", type=int, default=100,
                        help="timed lease creates of each of the 4 kinds, and searches of each of the 2 kinds "
                             "(default 100)")
    parser.add_argument("--candidate-runs", type=int, default=21,
                        help="timed allocation candidates GETs of each kind (default 21)")
    parser.add_argument("--scheduler-leases", type=int, default=1000,
                        help="leases starting in the same minute (default 1000)")
    parser.add_argument("--schedulers", default="1,2", metavar="N[,N...]",
                        help="scheduler processes of each lag run, each with new leases (default 1,2; empty: none)")
    parser.add_argument("--workers", type=int, default=1, help="API worker processes (default 1)")
    parser.add_argument("--postgres", nargs="?", const=DEFAULT_PG_SERVER, default=None, metavar="SERVER_URL",
                        help=f"a scratch database on this PostgreSQL server (default {DEFAULT_PG_SERVER}); "
                             "without it, a SQLite file")
    parser.add_argument("--batch", type=int, default=250, help="hosts (and scheduler leases) per setup transaction")
    parser.add_argument("--lead-hours", type=float, default=1.0,
                        help="hours from now before which no existing or timed lease starts (default 1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-analyze", dest="analyze", action="store_false",
                        help="on PostgreSQL, do not ANALYZE after the setup")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database and directory")
    args = parser.parse_args()
    processes = [int(n) for n in args.schedulers.split(",") if n.strip()]

    scratch = Scratch(args.postgres, prefix="blazar_lite_bench_scale")
    backend = "SQLite" if args.postgres is None else "PostgreSQL" + ("" if args.analyze else " without ANALYZE")
    try:
        url = scratch.url("main")
        opens = next_minute(dt.datetime.now(dt.UTC)) + dt.timedelta(hours=args.lead_hours)
        print(f"{backend}: {make_url(url).render_as_string(hide_password=True)}", flush=True)
        world = build_busy_world(url, args.hosts, args.reservations, opens, args.seed, args.batch, args.analyze)
        figures = http_part(url, scratch.dir, args, opens)

        # The leases start before `opens`, so they never meet the existing ones; each run has its own.
        schedulers = []
        for n in processes:
            run = scheduler_processes(url, scratch.dir, args.scheduler_leases, args.batch, None,
                                      starting_reservation, processes=n, project=f"bench-scheduler-{n}")
            if run.seconds is None and run.active == 0 and "rerun" in run.note:
                # The machine was slower than the dry run said: once more, with time to spare.
                print(f"scheduler ({run.mode}): {run.note}; again with new leases and twice the time", flush=True)
                run = scheduler_processes(url, scratch.dir, args.scheduler_leases, args.batch,
                                          run.created_seconds / args.scheduler_leases * 1.5, starting_reservation,
                                          processes=n, project=f"bench-scheduler-{n}-again")
            print(f"scheduler lag ({run.mode}): "
                  + (f"{run.seconds:.1f} s" if run.seconds is not None else f"NOT all ACTIVE ({run.active})")
                  + (f"; {run.note}" if run.note else ""), flush=True)
            schedulers.append(run)
        print(summary(backend, args, world, figures, schedulers))
    finally:
        scratch.finish(args.keep)


if __name__ == "__main__":
    main()
