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
import json
import random
import statistics
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import insert
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402 - the harness sits beside this script
    DEFAULT_PG_SERVER,
    Client,
    Scratch,
    Timed,
    after_bulk_load,
    blazar_date,
    free_port,
    host_spec,
    next_minute,
    percentile,
    start_server,
    wait_ready,
)

from blazar_lite.db import Database  # noqa: E402
from blazar_lite.db.migrate import upgrade  # noqa: E402
from blazar_lite.hosts.service import create_host  # noqa: E402
from blazar_lite.leases.models import Lease, Reservation, ReservationBooking  # noqa: E402

DAYS = 90
SEARCH_DAYS = 60
# A slot of the existing instance reservations: small, so four overlapping bookings of at most
# four slots each never fill the smallest host (32 vCPU, 128 GiB, 960 GB).
EXISTING_SLOT = {"vcpus": 1, "memory_mb": 2048, "disk_gb": 20}

KINDS = {
    "hosts": ("physical:host min=max=8, 48h", {"resource_type": "physical:host", "min": 8, "max": 8,
                                               "duration": "48h"}),
    "slots": ("virtual:instance amount=20 (2 vCPU, 4096 MB, 40 GB), 24h",
              {"resource_type": "virtual:instance", "amount": 20, "vcpus": 2, "memory_mb": 4096, "disk_gb": 40,
               "affinity": "None", "duration": "24h"}),
}
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


# The cluster and its reservations.

@dataclass
class Built:
    hosts: int
    reservations: Counter[str]
    host_seconds: float
    reservation_seconds: float


def _rows(host_id: int, index: int, start: dt.datetime, end: dt.datetime, rng: random.Random,
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
    """About `count` reservations on one host over the DAYS after `opens`, never overbooking it."""
    made: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    closes = opens + dt.timedelta(days=DAYS)
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
            made.append(_rows(host_id, first_index + len(made), moment, end, rng, whole=True))
        else:
            for _ in range(rng.randint(1, 4)):
                if len(made) == count:
                    break
                minutes = int((end - moment).total_seconds() // 60)
                first = rng.randrange(max(1, minutes - 60))
                last = rng.randrange(first + 60, minutes + 1) if minutes > first + 60 else minutes
                made.append(_rows(host_id, first_index + len(made), moment + dt.timedelta(minutes=first),
                                  moment + dt.timedelta(minutes=max(last, first + 1)), rng, whole=False))
        moment = end
        moment += gap()
    return made


def build(url: str, hosts: int, reservations: int, opens: dt.datetime, seed: int, batch: int,
          analyze: bool) -> Built:
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
        return Built(hosts, made, host_seconds, reservation_seconds)
    finally:
        database.dispose()


# The searches.

def time_searches(client: Client, kind: str, params: dict[str, Any], count: int, opens: dt.datetime,
                  rng: random.Random) -> tuple[Timed, Counter[int]]:
    """`count` searches of one kind, each from a random minute of the first SEARCH_DAYS days;
    the timings, and how many windows each answer held."""
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
        built = build(url, args.hosts, args.reservations, opens, args.seed, args.batch, args.analyze)

        results = []
        port = free_port()
        process = start_server(url, scratch.dir, port)
        try:
            wait_ready(port, process)
            client = Client(port)
            rng = random.Random(args.seed)
            kinds = {**KINDS, **({**EXTRA_KINDS, "scarce": scarce(args.hosts)} if args.extra else {})}
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
              f"reservations over {DAYS} days ===")
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
        if args.keep:
            print(f"kept: {scratch.dir} and databases {', '.join(scratch.created) or '-'}")
        else:
            scratch.cleanup()


if __name__ == "__main__":
    main()
