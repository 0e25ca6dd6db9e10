"""Benchmark the availability search over a large, busy cluster.

1. Setup: a fresh database (a SQLite file in a temporary directory, or PostgreSQL), N hosts
   (default 10,000) registered through the hosts service, and R existing reservations (default
   100,000) spread over the next 90 days, bulk-inserted as lease creation writes them (leases,
   reservations and their bookings; not the events, classes and flavors, which no availability
   read touches). Each host's bookings are laid out so that it is never overbooked: periods one
   after the other, each either one whole-host booking (two in five) or up to four overlapping
   bookings of a few small instance slots, with gaps between periods.
2. `blazar-lite serve --no-scheduler` (one worker) on that database, and timed GET
   /v1/availability from one client for: 8 whole hosts for 48 h, and 20 instance slots (2 vCPU,
   4096 MB, 40 GB, anywhere) for 24 h, the earliest 5 windows each, the search starting at a
   random minute of the first 60 days and lasting the default 30 days. Extra kinds (--extra)
   time harder searches: 20 slots on distinct hosts, 8 hosts with a filter, and three in ten
   hosts at once for 48 h, which few windows fit. Median, p95 and p99 (nearest rank) in ms.

    python bench/availability.py --postgres             # scratch PostgreSQL databases, dropped after
    python bench/availability.py                        # SQLite file
    python bench/availability.py --hosts 1000 --reservations 10000 --requests 20   # a quick look

On PostgreSQL the tables are ANALYZEd after the setup, as autovacuum would after a bulk load
(--no-analyze: not). --keep keeps the databases.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402 - the harness sits beside this script
    DEFAULT_PG_SERVER,
    SEARCHES,
    WORLD_DAYS,
    Client,
    Scratch,
    build_busy_world,
    free_port,
    next_minute,
    percentile,
    start_server,
    time_searches,
    wait_ready,
)

EXTRA_KINDS = {
    "distinct": ("virtual:instance amount=20 affinity=False, 24h",
                 {"resource_type": "virtual:instance", "amount": 20, "vcpus": 2, "memory_mb": 4096, "disk_gb": 40,
                  "affinity": "False", "duration": "24h"}),
    "filtered": ("physical:host min=max=8 with gpu=true, 48h",
                 {"resource_type": "physical:host", "min": 8, "max": 8, "duration": "48h",
                  "resource_properties": '["==", "$gpu", "true"]'}),
}


def scarce(hosts: int) -> tuple[str, dict[str, Any]]:
    """Three in ten hosts at once for 48 h: few windows fit, so the search looks far."""
    count = max(1, hosts * 3 // 10)
    return f"physical:host min=max={count}, 48h", {"resource_type": "physical:host", "min": count, "max": count,
                                                   "duration": "48h"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=10000, help="hosts in the cluster (default 10000)")
    parser.add_argument("--reservations", type=int, default=100000,
                        help="existing reservations over the next 90 days (default 100000)")
    parser.add_argument("--requests", type=int, default=100, help="timed searches of each kind (default 100)")
    parser.add_argument("--extra", action="store_true", help="time the harder kinds too")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--postgres", nargs="?", const=DEFAULT_PG_SERVER, default=None, metavar="SERVER_URL",
                        help=f"scratch databases on this PostgreSQL server (default {DEFAULT_PG_SERVER})")
    target.add_argument("--database-url", default=None, help="an empty database to build the cluster in")
    parser.add_argument("--batch", type=int, default=250, help="hosts per setup transaction (default 250)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-analyze", dest="analyze", action="store_false",
                        help="on PostgreSQL, do not ANALYZE after the setup")
    parser.add_argument("--keep", action="store_true", help="keep the scratch databases and directory")
    args = parser.parse_args()

    scratch = Scratch(args.postgres, prefix="blazar_lite_bench_availability")
    backend = "SQLite" if args.postgres is None and (args.database_url or "sqlite").startswith("sqlite") \
        else "PostgreSQL" + ("" if args.analyze else " without ANALYZE")
    try:
        url = args.database_url or scratch.url("main")
        opens = next_minute(dt.datetime.now(dt.UTC)) + dt.timedelta(hours=1)
        print(f"{backend}: {make_url(url).render_as_string(hide_password=True)}", flush=True)
        built = build_busy_world(url, args.hosts, args.reservations, opens, args.seed, args.batch, args.analyze)

        results = []
        port = free_port()
        process = start_server(url, scratch.dir, port)
        try:
            wait_ready(port, process)
            client = Client(port)
            rng = random.Random(args.seed)
            kinds = {**SEARCHES, **({**EXTRA_KINDS, "scarce": scarce(args.hosts)} if args.extra else {})}
            for kind, (label, params) in kinds.items() if args.requests > 0 else ():
                # A few first, untimed: first-use compilation of statements, imports, pool connections.
                time_searches(client, kind, params, 3, opens, rng)
                timed, found = time_searches(client, kind, params, args.requests, opens, rng)
                print(f"GET /v1/availability {label}: median {timed.median:.1f} ms, p95 "
                      f"{percentile(timed.timings, 0.95):.1f} ms, p99 {timed.p99:.1f} ms; windows per answer "
                      f"{dict(sorted(found.items()))}", flush=True)
                results.append((label, timed, found))
        finally:
            process.terminate()
            process.wait(timeout=30)

        print(f"\n=== summary: {backend}, {built.hosts} hosts, {sum(built.reservations.values())} existing "
              f"reservations over {WORLD_DAYS} days ===")
        print(f"setup: hosts {built.host_seconds:.1f} s, reservations {built.reservation_seconds:.1f} s "
              f"({dict(built.reservations)})")
        print(f"{'GET /v1/availability (earliest 5, 30-day window)':<60} {'n':>4} {'median ms':>10} {'p95 ms':>8} "
              f"{'p99 ms':>8} {'max ms':>8}  windows found")
        for label, timed, found in results:
            windows = statistics.mean(count for count, times in found.items() for _ in range(times))
            print(f"{label:<60} {len(timed.timings):>4} {timed.median:>10.1f} "
                  f"{percentile(timed.timings, 0.95):>8.1f} {timed.p99:>8.1f} {max(timed.timings):>8.1f}  "
                  f"{windows:.1f} on average")
    finally:
        scratch.finish(args.keep)


if __name__ == "__main__":
    main()
