"""Soak: gunicorn with 4 API workers and 2 scheduler processes on one PostgreSQL database, 32
client threads for a bounded time (BLAZAR_LITE_SOAK_SECONDS, 300 by default) creating, updating
and deleting leases with windows of a minute or two, so that many start and end during the run;
creating, committing and deleting instances and forthcoming instances in them; and scaling
deployments inside their reservations; against 50 hosts.

Afterwards: every answer was below 500, every 409 said why, every event that fell due ran once,
and `blazar-lite check` finds no violation.
"""

from __future__ import annotations

import datetime as dt
import random
import threading
import time
from typing import Any

import pytest

from tests.stress.cluster import Client, Cluster, Tally
from tests.stress.conftest import blazar_date, register_hosts, seconds_from_env, utcnow

pytestmark = pytest.mark.soak

HOSTS = 50
THREADS = 32
PROJECTS = 4
API_WORKERS = 4
SCHEDULERS = 2
SCHEDULER_INTERVAL = 2
SETTINGS = f"""
[scheduler]
interval = {SCHEDULER_INTERVAL}
minutes_before_end_lease = 1
[logging]
level = WARNING
"""


class Project:
    """What one project's threads share: its deployment's shape and the leases they made."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.leases: list[str] = []
        self.reservations: list[str] = []
        self.instances: list[str] = []

    def pick(self, items: list[str], rng: random.Random) -> str | None:
        with self.lock:
            return rng.choice(items) if items else None

    def add(self, items: list[str], value: str) -> None:
        with self.lock:
            items.append(value)

    def drop(self, items: list[str], value: str) -> None:
        with self.lock:
            if value in items:
                items.remove(value)


def lease_body(rng: random.Random, name: str) -> dict[str, Any]:
    """A lease that starts now or within two minutes and lasts one to three."""
    now = utcnow()
    offset = rng.choice([0, 0, 1, 1, 2])
    start = "now" if offset == 0 else blazar_date(now + dt.timedelta(minutes=offset))
    end = blazar_date(now + dt.timedelta(minutes=offset + rng.randint(1, 3)))
    if rng.random() < 0.4:
        low = rng.randint(1, 2)
        reservation = {"resource_type": "physical:host", "min": low, "max": low + rng.randint(0, 1),
                       "hypervisor_properties": "", "resource_properties": ""}
    else:
        reservation = {"resource_type": "virtual:instance", "amount": rng.randint(1, 6), "vcpus": rng.choice([1, 2, 4]),
                       "memory_mb": rng.choice([512, 2048]), "disk_gb": rng.choice([1, 10]),
                       "affinity": rng.choice([None, False, True])}
    return {"name": name, "start_date": start, "end_date": end, "reservations": [reservation], "events": []}


def delete_one(client: Client, project: Project, items: list[str], collection: str, rng: random.Random) -> None:
    """Delete one of `items` (ids under `collection`), and forget it once it is gone."""
    item_id = project.pick(items, rng)
    if item_id:
        answer = client.call("DELETE", f"{collection}/{item_id}", route=f"{collection}/<id>")
        if answer is not None and answer.status in (204, 404):
            project.drop(items, item_id)


def work(client: Client, project: Project, rng: random.Random, deadline: float, thread: int) -> None:
    count = 0
    while time.monotonic() < deadline:
        count += 1
        action = rng.random()
        if action < 0.30:
            answer = client.call("POST", "/v1/leases", lease_body(rng, f"t{thread}-{count}"))
            if answer is not None and answer.status == 201:
                lease = answer.body["lease"]
                project.add(project.leases, lease["id"])
                for reservation in lease["reservations"]:
                    if reservation["resource_type"] == "virtual:instance":
                        project.add(project.reservations, reservation["id"])
        elif action < 0.40:
            lease_id = project.pick(project.leases, rng)
            if lease_id:
                end = blazar_date(utcnow() + dt.timedelta(minutes=rng.randint(1, 3)))
                client.call("PUT", f"/v1/leases/{lease_id}", {"end_date": end}, route="/v1/leases/<id>")
        elif action < 0.48:
            delete_one(client, project, project.leases, "/v1/leases", rng)
        elif action < 0.68:
            reservation_id = project.pick(project.reservations, rng)
            if reservation_id:
                forthcoming = rng.random() < 0.3
                body: dict[str, Any] = {"reservation_id": reservation_id}
                if forthcoming:
                    body["forthcoming"] = True
                else:
                    body["name"] = f"vm-{thread}-{count}"
                answer = client.call("POST", "/v1/instances", body)
                if answer is not None and answer.status == 201:
                    project.add(project.instances, answer.body["instance"]["id"])
        elif action < 0.76:
            instance_id = project.pick(project.instances, rng)
            if instance_id:
                answer = client.call("POST", f"/v1/instances/{instance_id}/create", {"name": f"c-{thread}-{count}"},
                                     route="/v1/instances/<id>/create")
        elif action < 0.86:
            delete_one(client, project, project.instances, "/v1/instances", rng)
        elif action < 0.93:
            name = f"web-{rng.randint(0, 7)}"
            client.call("POST", f"/v1/deployments/shop/shapes/web/instances/{name}",
                        route="/v1/deployments/<d>/shapes/<s>/instances/<name>")
        else:
            name = f"web-{rng.randint(0, 7)}"
            client.call("DELETE", f"/v1/deployments/shop/shapes/web/instances/{name}",
                        route="/v1/deployments/<d>/shapes/<s>/instances/<name>")
        if rng.random() < 0.1:
            client.call("GET", "/v1/leases")


def deployment_for(cluster: Cluster, project: str, tally: Tally, minutes: int) -> None:
    """The project's deployment `shop`, whose shape `web` (0 to 8 instances) lives in a lease of 6
    slots that lasts the run."""
    client = Client(cluster.base, project, tally)
    now = utcnow()
    lease = client.call("POST", "/v1/leases", {
        "name": "shop-slots", "start_date": "now", "end_date": blazar_date(now + dt.timedelta(minutes=minutes)),
        "reservations": [{"resource_type": "virtual:instance", "amount": 6, "vcpus": 1, "memory_mb": 512,
                          "disk_gb": 1, "affinity": None}], "events": []})
    assert lease is not None and lease.status == 201, lease
    reservation_id = lease.body["lease"]["reservations"][0]["id"]
    deployment = client.call("POST", "/v1/deployments", {"name": "shop"})
    assert deployment is not None and deployment.status == 201, deployment
    # The shape needs its reservation active; the schedulers start it within an interval or two.
    deadline = time.monotonic() + 60
    while True:
        shape = client.call("POST", "/v1/deployments/shop/shapes", {
            "name": "web", "instance_template": {"reservation_id": reservation_id},
            "scaling_minimum": 0, "scaling_maximum": 8})
        if shape is not None and shape.status == 201:
            break
        assert time.monotonic() < deadline, shape
        time.sleep(1)
    client.close()


def test_soak(stress_database: str, sql, tmp_path) -> None:  # type: ignore[no-untyped-def]
    seconds = seconds_from_env("BLAZAR_LITE_SOAK_SECONDS", 300)
    cluster = Cluster(tmp_path, stress_database, SETTINGS)
    try:
        api = cluster.start_api(API_WORKERS)
        for i in range(SCHEDULERS):
            cluster.start_scheduler(i)
        register_hosts(cluster, HOSTS)
        setup = Tally()
        run_minutes = int(seconds // 60) + 3
        projects = [Project(f"project-{i}") for i in range(PROJECTS)]
        for project in projects:
            deployment_for(cluster, project.name, setup, run_minutes)
        assert not setup.bad, setup.bad

        tally = Tally()
        deadline = time.monotonic() + seconds
        clients = [Client(cluster.base, projects[i % PROJECTS].name, tally) for i in range(THREADS)]
        threads = [threading.Thread(target=work, args=(clients[i], projects[i % PROJECTS], random.Random(i),
                                                        deadline, i)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for client in clients:
            client.close()
        requests = sum(tally.counts.values())
        print(f"\nsoak: {requests} requests in {seconds:.0f} s by {THREADS} threads; by status "
              f"{dict(sorted(tally.by_status().items()))}\n{tally.table()}")

        # Every event that fell due by now runs within a few passes.
        settle_until = utcnow()
        deadline = time.monotonic() + 10 * SCHEDULER_INTERVAL + 30
        while True:
            overdue = sql(f"SELECT count(*) FROM lease_events WHERE status <> 'DONE' "
                          f"AND time <= '{settle_until.isoformat(sep=' ')}'")[0][0]
            if overdue == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        started = sql("SELECT count(*) FROM lease_events WHERE event_type = 'start_lease' AND status = 'DONE'")[0][0]
        ended = sql("SELECT count(*) FROM lease_events WHERE event_type = 'end_lease' AND status = 'DONE'")[0][0]
        print(f"soak: {started} leases started and {ended} ended by the schedulers")
        assert all(p.alive() for p in cluster.processes), cluster.logs()
        assert api.alive()

        assert tally.bad == [], "\n".join(tally.bad[:50])
        assert overdue == 0, sql("SELECT event_type, status, last_error FROM lease_events WHERE status <> 'DONE' "
                                 f"AND time <= '{settle_until.isoformat(sep=' ')}' LIMIT 20")
        # The run did what it says: leases started under load, and instances were made. Lease
        # dates have minute precision, so only a run of some minutes is sure to see ends too.
        assert started >= 10, started
        if seconds >= 120:
            assert ended >= 5, ended
        assert tally.counts[("POST /v1/instances", 201)] > 0
        status, report = cluster.check()
        print(f"soak: blazar-lite check exited {status}: {report}")
        assert status == 0, report
    finally:
        cluster.stop()
