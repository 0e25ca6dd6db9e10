"""Crash safety, with real processes on PostgreSQL:

- a scheduler killed (SIGKILL) while it starts 200 leases: restarted, every lease is ACTIVE
  within two scheduler intervals, each started once, none left half started;
- an API worker killed mid-request: gunicorn replaces it, every lease a client was told of is
  there, and no lease exists half written;
- the database going away (its connections cut and refused) while leases fall due and clients
  call: the API answers 503 saying why, nothing acknowledged is lost, and the schedulers catch
  up when it returns.

Each ends with `blazar-lite check` finding no violation.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.stress.cluster import Client, Cluster, DatabaseRelay, Tally, reason
from tests.stress.conftest import blazar_date, register_hosts, utcnow

pytestmark = pytest.mark.chaos

INTERVAL = 3
# The claim timeout stays at its default (5 minutes): recovery must not wait for it.
SETTINGS = f"""
[scheduler]
interval = {INTERVAL}
[logging]
level = WARNING
"""
# Leases whose starts cannot overlap anything: one slot each on hosts with room for all.
SLOT = {"resource_type": "virtual:instance", "amount": 1, "vcpus": 1, "memory_mb": 256, "disk_gb": 1,
        "affinity": None}


def instance_lease(name: str, start: str = "now", minutes: int = 30) -> dict:
    end = blazar_date(utcnow() + dt.timedelta(minutes=minutes))
    return {"name": name, "start_date": start, "end_date": end, "reservations": [dict(SLOT)], "events": []}


def create_leases(cluster: Cluster, count: int, prefix: str) -> list[str]:
    tally = Tally()
    client = Client(cluster.base, "chaos", tally)
    ids = []
    for i in range(count):
        answer = client.call("POST", "/v1/leases", instance_lease(f"{prefix}-{i}"))
        assert answer is not None and answer.status == 201, (answer, tally.bad)
        ids.append(answer.body["lease"]["id"])
    client.close()
    return ids


def statuses(sql, ids: list[str]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    rows = sql("SELECT status, count(*) FROM leases WHERE id IN (" + ",".join(f"'{i}'" for i in ids) + ") "
               "GROUP BY status")
    return {status: count for status, count in rows}


def wait_all_active(sql, ids: list[str], seconds: float) -> float | None:  # type: ignore[no-untyped-def]
    """Seconds until every lease of `ids` is ACTIVE, or None if that took longer than `seconds`."""
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        if statuses(sql, ids).get("ACTIVE", 0) == len(ids):
            return time.monotonic() - began
        time.sleep(0.1)
    return None


def half_written_leases(sql) -> list:  # type: ignore[no-untyped-def]
    """Leases missing a part that creating one writes: a reservation, a booking, a start or end event."""
    return sql("""
        SELECT l.name FROM leases l
        WHERE NOT EXISTS (SELECT 1 FROM reservations r WHERE r.lease_id = l.id)
           OR EXISTS (SELECT 1 FROM reservations r WHERE r.lease_id = l.id
                      AND NOT EXISTS (SELECT 1 FROM reservation_bookings b WHERE b.reservation_id = r.id))
           OR NOT EXISTS (SELECT 1 FROM lease_events e WHERE e.lease_id = l.id AND e.event_type = 'start_lease')
           OR NOT EXISTS (SELECT 1 FROM lease_events e WHERE e.lease_id = l.id AND e.event_type = 'end_lease')""")


def assert_started_once(sql, ids: list[str]) -> None:  # type: ignore[no-untyped-def]
    quoted = ",".join(f"'{i}'" for i in ids)
    starts = sql(f"SELECT lease_id, count(*) FROM lease_history WHERE event = 'lease.started' "
                 f"AND lease_id IN ({quoted}) GROUP BY lease_id")
    assert len(starts) == len(ids) and {count for _, count in starts} == {1}, starts
    events = sql(f"SELECT status, count(*) FROM lease_events WHERE event_type = 'start_lease' "
                 f"AND lease_id IN ({quoted}) GROUP BY status")
    assert events == [("DONE", len(ids))], events


def assert_check_clean(cluster: Cluster) -> None:
    status, report = cluster.check()
    print(f"chaos: blazar-lite check exited {status}: {report}")
    assert status == 0, report


def test_a_scheduler_killed_while_starting_200_leases(stress_database: str, sql, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = Cluster(tmp_path, stress_database, SETTINGS)
    try:
        cluster.start_api(2)
        register_hosts(cluster, 20)
        # Created before any scheduler runs, so that all 200 are due together.
        ids = create_leases(cluster, 200, "due")
        victim = cluster.start_scheduler(0)
        cluster.start_scheduler(1)
        assert victim.popen is not None
        pid = victim.popen.pid
        # Killed while it holds claims of starts it has not finished.
        deadline = time.monotonic() + 60
        while True:
            held = sql(f"SELECT count(*) FROM lease_events WHERE status = 'IN_PROGRESS' "
                       f"AND claimed_by LIKE '%:{pid}:%'")[0][0]
            if held:
                break
            assert time.monotonic() < deadline, f"the scheduler never claimed a start:\n{cluster.logs()}"
            time.sleep(0.01)
        cluster.kill(victim, signal.SIGKILL)
        orphaned = sql(f"SELECT count(*) FROM lease_events WHERE status = 'IN_PROGRESS' "
                       f"AND claimed_by LIKE '%:{pid}:%'")[0][0]
        active_at_kill = statuses(sql, ids).get("ACTIVE", 0)
        print(f"\nchaos: scheduler {pid} killed holding {orphaned} claims, {active_at_kill} of 200 leases ACTIVE")
        assert orphaned > 0 and active_at_kill < 200

        cluster.start(victim)
        took = wait_all_active(sql, ids, 2 * INTERVAL)
        print(f"chaos: all 200 ACTIVE {took if took is None else round(took, 2)} s after the restart "
              f"(interval {INTERVAL} s); {statuses(sql, ids)}")
        assert took is not None, statuses(sql, ids)
        assert_started_once(sql, ids)
        assert sql("SELECT count(*) FROM leases WHERE status IN ('STARTING', 'TERMINATING')")[0][0] == 0
        assert_check_clean(cluster)
    finally:
        cluster.stop()


def test_an_api_worker_killed_mid_request(stress_database: str, sql, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster = Cluster(tmp_path, stress_database, SETTINGS)
    try:
        api = cluster.start_api(2)
        cluster.start_scheduler(0)
        register_hosts(cluster, 20)
        tally = Tally()
        told: list[str] = []
        stop = threading.Event()

        def create(thread: int) -> None:
            client = Client(cluster.base, f"project-{thread % 4}", tally)
            count = 0
            while not stop.is_set():
                count += 1
                answer = client.call("POST", "/v1/leases", instance_lease(f"w{thread}-{count}"))
                if answer is not None and answer.status == 201:
                    told.append(answer.body["lease"]["id"])
            client.close()

        threads = [threading.Thread(target=create, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        killed = []
        try:
            # Until a kill lands while requests are in flight (their clients get no answer).
            for _ in range(5):
                time.sleep(1.5)
                before = len(tally.bad)
                worker = cluster.api_workers(api)[0]
                os.kill(worker, signal.SIGKILL)
                killed.append(worker)
                time.sleep(1.5)
                if len(tally.bad) > before:
                    break
        finally:
            time.sleep(1)
            stop.set()
            for thread in threads:
                thread.join()
        cut_off = [problem for problem in tally.bad if "no answer" in problem]
        print(f"\nchaos: killed API workers {killed}; {len(told)} leases created, {len(cut_off)} requests cut off; "
              f"by status {dict(tally.by_status())}")
        assert cut_off, "no kill landed while a request was in flight"
        # Only the killed worker's requests went unanswered: no 5xx, no 409 without a reason.
        assert len(cut_off) == len(tally.bad), tally.bad
        assert api.alive() and len(cluster.api_workers(api)) == 2
        # Every lease a client was told of is there, and none is half written.
        quoted = ",".join(f"'{i}'" for i in told)
        assert sql(f"SELECT count(*) FROM leases WHERE id IN ({quoted})")[0][0] == len(told)
        assert half_written_leases(sql) == []
        # The service still answers.
        after = Tally()
        answer = Client(cluster.base, "chaos", after).call("POST", "/v1/leases", instance_lease("after"))
        assert answer is not None and answer.status == 201, answer
        assert_check_clean(cluster)
    finally:
        cluster.stop()


def test_the_database_going_away_and_coming_back(stress_database: str, sql, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    relay = DatabaseRelay("127.0.0.1", 5432)
    cluster = Cluster(tmp_path, stress_database, SETTINGS, relay=relay)
    try:
        cluster.start_api(2)
        register_hosts(cluster, 20)
        due = create_leases(cluster, 150, "due")
        cluster.start_scheduler(0)
        cluster.start_scheduler(1)
        # Cut off while the schedulers are starting them.
        deadline = time.monotonic() + 60
        while statuses(sql, due).get("ACTIVE", 0) == 0:
            assert time.monotonic() < deadline, cluster.logs()
            time.sleep(0.02)
        relay.cut()
        active_at_cut = statuses(sql, due).get("ACTIVE", 0)

        tally = Tally()
        client = Client(cluster.base, "chaos", tally)
        during = [client.call("POST", "/v1/leases", instance_lease(f"during-{i}")) for i in range(5)]
        during += [client.call("GET", "/v1/leases") for _ in range(5)]
        time.sleep(5)
        during += [client.call("GET", f"/v1/leases/{due[0]}", route="/v1/leases/<id>")]
        print(f"\nchaos: database cut with {active_at_cut} of 150 leases ACTIVE; answers while away: "
              f"{sorted({(a.status if a else None) for a in during}, key=str)}")
        assert all(a is not None and a.status == 503 for a in during), [(a.status, a.body) if a else None
                                                                         for a in during]
        assert "database is unavailable" in reason(during[0].body), during[0].body

        relay.restore()
        restored = time.monotonic()
        took = wait_all_active(sql, due, 60)
        print(f"chaos: all 150 ACTIVE {took if took is None else round(took, 2)} s after the database returned")
        assert took is not None, (statuses(sql, due), cluster.logs())
        # Leases made while it was away: none (each was a 503); the API serves again at once.
        assert sql("SELECT count(*) FROM leases WHERE name LIKE 'during-%'")[0][0] == 0
        answer = None
        while time.monotonic() - restored < 30:
            answer = client.call("POST", "/v1/leases", instance_lease("after"))
            if answer is not None and answer.status == 201:
                break
            time.sleep(0.5)
        assert answer is not None and answer.status == 201, answer
        assert_started_once(sql, due)
        assert half_written_leases(sql) == []
        assert all(p.alive() for p in cluster.processes), cluster.logs()
        assert_check_clean(cluster)
    finally:
        cluster.stop()
        relay.close()
