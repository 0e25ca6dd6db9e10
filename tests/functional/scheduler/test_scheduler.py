"""The scheduler pass: leases start and end on time, Placement follows, re-runs are harmless,
ends run before starts, failures land in ERROR with a reason, and abandoned claims are re-run."""

from __future__ import annotations

import datetime as dt

import pytest
from click.testing import CliRunner
from flask.testing import FlaskClient
from sqlalchemy import select

from blazar_lite.cli import main
from blazar_lite.db import Database
from blazar_lite.hosts.service import FREEPOOL_AGGREGATE_UUID
from blazar_lite.leases import lifecycle
from blazar_lite.leases.models import IN_PROGRESS, Event
from blazar_lite.placement.backend import EmbeddedPlacement
from blazar_lite.scheduler import claims
from blazar_lite.scheduler.runner import (
    EVENTS_JOB,
    FAILED,
    RAN,
    RETRY,
    LeaseScheduler,
    backoff,
    mark_claimed,
    run_claim,
    run_due_events,
)
from tests.conftest import PlacementClient

START = dt.timedelta(hours=1)
LENGTH = dt.timedelta(hours=3)
SECOND = dt.timedelta(seconds=1)


def moment(delta: dt.timedelta) -> dt.datetime:
    """A whole minute `delta` from now, in UTC (lease dates have minute precision)."""
    return (dt.datetime.now(dt.UTC) + delta).replace(second=0, microsecond=0)


def text(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M")


def register(client: FlaskClient, name: str, vcpus: int = 8) -> dict:
    body = {"name": name, "vcpus": vcpus, "memory_mb": 16384, "local_gb": 100}
    response = client.post("/v1/os-hosts", json=body)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["host"]


def create_lease(client: FlaskClient, name: str, reservations: list[dict], start: dt.datetime,
                 end: dt.datetime) -> dict:
    body = {"name": name, "start_date": text(start), "end_date": text(end), "reservations": reservations,
            "events": []}
    response = client.post("/v1/leases", json=body, headers={"X-Project-Id": "p1", "X-User-Id": "u1"})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["lease"]


def physical(count: int = 1) -> dict:
    return {"resource_type": "physical:host", "min": count, "max": count, "hypervisor_properties": "",
            "resource_properties": ""}


def instances(amount: int, affinity: object = "None") -> dict:
    return {"resource_type": "virtual:instance", "amount": amount, "vcpus": 2, "memory_mb": 1024, "disk_gb": 10,
            "affinity": affinity}


def lease(client: FlaskClient, lease_id: str) -> dict:
    response = client.get(f"/v1/leases/{lease_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["lease"]


def inventories(placement: PlacementClient, provider: str) -> dict[str, dict]:
    response = placement.get(f"/resource_providers/{provider}/inventories")
    assert response.status_code == 200, response.json
    return response.json["inventories"]


def aggregates(placement: PlacementClient, provider: str) -> set[str]:
    response = placement.get(f"/resource_providers/{provider}/aggregates")
    assert response.status_code == 200, response.json
    return set(response.json["aggregates"])


def outcomes(results) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(r.event_type, r.outcome) for r in results]


@pytest.fixture
def window() -> tuple[dt.datetime, dt.datetime]:
    start = moment(START)
    return start, start + LENGTH


def test_nothing_runs_before_a_lease_is_due(client: FlaskClient, database: Database, window) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1")
    created = create_lease(client, "l1", [physical()], *window)
    assert run_due_events(database, now=window[0] - SECOND) == []
    assert lease(client, created["id"])["status"] == "PENDING"


def test_an_instance_lease_starts_with_inventory_on_each_host_and_ends_with_it_gone(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    hosts = [register(client, "compute-1"), register(client, "compute-2")]
    created = create_lease(client, "l1", [instances(2, affinity=False)], *window)
    [reservation] = created["reservations"]
    resource_class = reservation["resource_class"]

    assert outcomes(run_due_events(database, now=window[0] + SECOND)) == [("start_lease", RAN)]
    started = lease(client, created["id"])
    assert started["status"] == "ACTIVE" and started["status_reason"] is None
    assert started["reservations"][0]["status"] == "active"
    for host in hosts:
        held = inventories(placement, host["reservation_provider_uuid"])
        assert held[resource_class]["total"] == 1 and held[resource_class]["max_unit"] == 1
    flavor = client.get(f"/v1/flavors/{reservation['reservation_flavor_id']}",
                        headers={"X-Project-Id": "p1", "X-Roles": "member"})
    assert flavor.status_code == 200

    results = run_due_events(database, now=window[1] + SECOND)
    assert outcomes(results) == [("before_end_lease", RAN), ("end_lease", RAN)]
    ended = lease(client, created["id"])
    assert ended["status"] == "TERMINATED"
    assert ended["reservations"][0]["status"] == "deleted"
    assert all(e["status"] == "DONE" for e in ended["events"])
    for host in hosts:
        assert resource_class not in inventories(placement, host["reservation_provider_uuid"])
    assert placement.get(f"/resource_classes/{resource_class}").status_code == 404
    assert client.get(f"/v1/flavors/{reservation['reservation_flavor_id']}").status_code == 404


def test_slots_on_one_host_become_one_inventory_of_that_many(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    host = register(client, "compute-1")
    created = create_lease(client, "l1", [instances(3, affinity=True)], *window)
    run_due_events(database, now=window[0] + SECOND)
    resource_class = created["reservations"][0]["resource_class"]
    assert inventories(placement, host["reservation_provider_uuid"])[resource_class]["total"] == 3


def test_two_reservations_on_one_provider_keep_each_others_inventory(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    host = register(client, "compute-1")
    first = create_lease(client, "l1", [instances(1)], *window)
    second = create_lease(client, "l2", [instances(2)], window[0], window[1] + dt.timedelta(hours=1))
    run_due_events(database, now=window[0] + SECOND)
    classes = {first["reservations"][0]["resource_class"]: 1, second["reservations"][0]["resource_class"]: 2}
    held = inventories(placement, host["reservation_provider_uuid"])
    assert {rc: held[rc]["total"] for rc in classes} == classes
    run_due_events(database, now=window[1] + SECOND)
    held = inventories(placement, host["reservation_provider_uuid"])
    assert first["reservations"][0]["resource_class"] not in held
    assert held[second["reservations"][0]["resource_class"]]["total"] == 2


def test_a_physical_lease_moves_its_hosts_out_of_the_freepool_and_back(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    hosts = [register(client, "compute-1"), register(client, "compute-2"), register(client, "compute-3")]
    created = create_lease(client, "l1", [physical(2)], *window)
    [reservation] = created["reservations"]
    aggregate = lifecycle.reservation_aggregate_uuid(reservation["id"])

    run_due_events(database, now=window[0] + SECOND)
    assert lease(client, created["id"])["status"] == "ACTIVE"
    memberships = [aggregates(placement, host["resource_provider_uuid"]) for host in hosts]
    assert [m for m in memberships if aggregate in m] == [{aggregate}, {aggregate}]
    assert [m for m in memberships if aggregate not in m] == [{FREEPOOL_AGGREGATE_UUID}]
    assert reservation["aggregate_id"] == aggregate
    # The aggregate is the lease's project's, and names exactly the hosts that joined it.
    held = sorted(host["id"] for host, m in zip(hosts, memberships, strict=True) if aggregate in m)
    listed = {a["id"]: a for a in client.get("/v1/os-hosts/aggregates").get_json()["aggregates"]}
    assert listed[aggregate]["project_id"] == created["project_id"]
    assert listed[aggregate]["reservation_id"] == reservation["id"]
    assert listed[aggregate]["lease_id"] == created["id"]
    assert sorted(listed[aggregate]["hosts"]) == held
    assert listed[FREEPOOL_AGGREGATE_UUID]["project_id"] is None
    assert len(listed[FREEPOOL_AGGREGATE_UUID]["hosts"]) == 1
    own = client.get(f"/v1/os-hosts/aggregates?project_id={created['project_id']}").get_json()["aggregates"]
    assert [a["id"] for a in own] == [aggregate]
    assert client.get("/v1/os-hosts/aggregates?project_id=someone-else").get_json()["aggregates"] == []

    run_due_events(database, now=window[1] + SECOND)
    assert lease(client, created["id"])["status"] == "TERMINATED"
    assert all(aggregates(placement, host["resource_provider_uuid"]) == {FREEPOOL_AGGREGATE_UUID} for host in hosts)
    listed = client.get("/v1/os-hosts/aggregates").get_json()["aggregates"]
    assert [(a["id"], len(a["hosts"])) for a in listed] == [(FREEPOOL_AGGREGATE_UUID, 3)]


def test_starting_and_ending_again_changes_nothing(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    host = register(client, "compute-1")
    other = register(client, "compute-2")
    created = create_lease(client, "l1", [instances(2, affinity=True)], *window)
    physical_lease = create_lease(client, "l2", [physical(1)], *window)
    resource_class = created["reservations"][0]["resource_class"]
    run_due_events(database, now=window[0] + SECOND)
    provider = next(h for h in (host, other)
                    if resource_class in inventories(placement, h["reservation_provider_uuid"]))
    before = (inventories(placement, provider["reservation_provider_uuid"]),
              [aggregates(placement, h["resource_provider_uuid"]) for h in (host, other)])

    for lease_id in (created["id"], physical_lease["id"]):
        with database.transaction() as session:
            assert lifecycle.mark_starting(session, lease_id) is False
            lifecycle.start_lease(session, lease_id)
    assert (inventories(placement, provider["reservation_provider_uuid"]),
            [aggregates(placement, h["resource_provider_uuid"]) for h in (host, other)]) == before

    run_due_events(database, now=window[1] + SECOND)
    after_end = (inventories(placement, provider["reservation_provider_uuid"]),
                 [aggregates(placement, h["resource_provider_uuid"]) for h in (host, other)])
    for lease_id in (created["id"], physical_lease["id"]):
        with database.transaction() as session:
            assert lifecycle.mark_terminating(session, lease_id) is False
            lifecycle.end_lease(session, lease_id)
            # A start that comes after the end (a late re-run) leaves the ended lease alone.
            assert lifecycle.start_lease(session, lease_id) is False
    assert (inventories(placement, provider["reservation_provider_uuid"]),
            [aggregates(placement, h["resource_provider_uuid"]) for h in (host, other)]) == after_end
    assert lease(client, created["id"])["status"] == lease(client, physical_lease["id"])["status"] == "TERMINATED"


def test_back_to_back_leases_on_one_host_hand_over_end_before_start(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    host = register(client, "compute-1")
    start, handover = window
    first = create_lease(client, "first", [physical()], start, handover)
    second = create_lease(client, "second", [physical()], handover, handover + LENGTH)
    run_due_events(database, now=start + SECOND)

    results = run_due_events(database, now=handover + SECOND)
    assert [(r.lease_id, r.event_type) for r in results] == [
        (first["id"], "before_end_lease"), (first["id"], "end_lease"), (second["id"], "start_lease")]
    assert {r.outcome for r in results} == {RAN}
    assert lease(client, first["id"])["status"] == "TERMINATED"
    assert lease(client, second["id"])["status"] == "ACTIVE"
    assert aggregates(placement, host["resource_provider_uuid"]) == {
        lifecycle.reservation_aggregate_uuid(second["reservations"][0]["id"])}


def test_a_lease_whose_whole_window_passed_still_starts_before_it_ends(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    host = register(client, "compute-1")
    created = create_lease(client, "l1", [physical()], *window)
    results = run_due_events(database, now=window[1] + dt.timedelta(minutes=5))
    assert outcomes(results) == [("start_lease", RAN), ("before_end_lease", RAN), ("end_lease", RAN)]
    assert lease(client, created["id"])["status"] == "TERMINATED"
    assert aggregates(placement, host["resource_provider_uuid"]) == {FREEPOOL_AGGREGATE_UUID}


def test_a_failing_start_puts_the_event_and_the_lease_in_error_with_the_reason(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    host = register(client, "compute-1")
    created = create_lease(client, "l1", [instances(1)], *window)
    assert placement.delete(f"/resource_providers/{host['reservation_provider_uuid']}").status_code == 204

    [result] = run_due_events(database, now=window[0] + SECOND)
    assert (result.event_type, result.outcome) == ("start_lease", FAILED)
    failed = lease(client, created["id"])
    assert failed["status"] == "ERROR"
    assert failed["status_reason"].startswith("start_lease failed: ")
    assert host["reservation_provider_uuid"] in failed["status_reason"]
    assert {e["event_type"]: e["status"] for e in failed["events"]}["start_lease"] == "ERROR"
    with database.read() as session:
        event = session.scalar(select(Event).where(Event.lease_id == created["id"],
                                                   Event.event_type == "start_lease"))
        assert event.last_error and event.attempts == 1
    # The next pass does not run it again.
    assert run_due_events(database, now=window[0] + 2 * SECOND) == []


def test_a_start_that_fails_on_its_second_host_leaves_no_inventory_on_the_first(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    first, second = register(client, "compute-1"), register(client, "compute-2")
    created = create_lease(client, "l1", [instances(2, affinity=False)], *window)
    resource_class = created["reservations"][0]["resource_class"]
    # Hosts are started in id order: the second one's provider is the one that is gone.
    last = max((first, second), key=lambda host: int(host["id"]))
    kept = first if last is second else second
    generation = placement.get(f"/resource_providers/{kept['reservation_provider_uuid']}").json["generation"]
    assert placement.delete(f"/resource_providers/{last['reservation_provider_uuid']}").status_code == 204

    [result] = run_due_events(database, now=window[0] + SECOND)
    assert (result.event_type, result.outcome) == ("start_lease", FAILED)
    assert lease(client, created["id"])["status"] == "ERROR"
    assert resource_class not in inventories(placement, kept["reservation_provider_uuid"])
    assert placement.get(f"/resource_providers/{kept['reservation_provider_uuid']}").json["generation"] == generation


def test_a_lease_whose_class_was_deleted_by_hand_gets_it_back_when_it_starts(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    host = register(client, "compute-1")
    created = create_lease(client, "l1", [instances(2, affinity=True)], *window)
    resource_class = created["reservations"][0]["resource_class"]
    assert placement.delete(f"/resource_classes/{resource_class}").status_code == 204

    assert outcomes(run_due_events(database, now=window[0] + SECOND)) == [("start_lease", RAN)]
    assert lease(client, created["id"])["status"] == "ACTIVE"
    assert inventories(placement, host["reservation_provider_uuid"])[resource_class]["total"] == 2


def test_a_busy_lease_makes_its_event_wait_and_retry(
        client: FlaskClient, database: Database, window) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1")
    created = create_lease(client, "l1", [physical()], *window)
    with database.transaction() as session:
        session.get(lifecycle.Lease, created["id"]).status = "UPDATING"
    now = window[0] + SECOND
    assert outcomes(run_due_events(database, now=now)) == [("start_lease", RETRY)]
    assert run_due_events(database, now=now + backoff(1) - SECOND) == []
    with database.transaction() as session:
        session.get(lifecycle.Lease, created["id"]).status = "PENDING"
    assert outcomes(run_due_events(database, now=now + backoff(1))) == [("start_lease", RAN)]
    assert lease(client, created["id"])["status"] == "ACTIVE"


def test_an_event_busy_past_its_attempts_goes_to_error(
        client: FlaskClient, database: Database, window) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1")
    created = create_lease(client, "l1", [physical()], *window)
    with database.transaction() as session:
        session.get(lifecycle.Lease, created["id"]).status = "UPDATING"
    now = window[0] + SECOND
    results = []
    for _ in range(3):
        results += run_due_events(database, now=now, max_attempts=2)
        now += dt.timedelta(minutes=10)
    assert outcomes(results) == [("start_lease", RETRY), ("start_lease", FAILED)]
    assert "UPDATING" in lease(client, created["id"])["status_reason"]


def test_an_event_whose_claim_expired_is_claimed_again_and_run_once(
        client: FlaskClient, database: Database, window) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1")
    created = create_lease(client, "l1", [physical()], *window)
    now = window[0] + SECOND
    timeout = dt.timedelta(minutes=5)
    # A scheduler claims the start, marks the lease STARTING, and dies.
    [claim] = claims.claim_due_events(database, "dead-host:1:x", now, timeout, limit=1)
    with database.transaction() as session:
        lifecycle.mark_starting(session, created["id"])
    assert run_due_events(database, now=now + timeout - SECOND) == []
    assert lease(client, created["id"])["status"] == "STARTING"

    results = run_due_events(database, now=now + timeout, worker_id="alive:2:y")
    assert outcomes(results) == [("start_lease", RAN)]
    assert lease(client, created["id"])["status"] == "ACTIVE"
    with database.read() as session:
        event = session.get(Event, claim.event_id)
        assert (event.status, event.attempts, event.claimed_by) == ("DONE", 2, "alive:2:y")
    assert run_due_events(database, now=now + 2 * timeout) == []


def test_a_worker_whose_claim_was_taken_over_does_not_finish_the_event(
        client: FlaskClient, database: Database, window) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1")
    create_lease(client, "l1", [physical()], *window)
    now = window[0] + SECOND
    timeout = dt.timedelta(minutes=5)
    [slow] = claims.claim_due_events(database, "slow", now, timeout, limit=1)
    [fast] = claims.claim_due_events(database, "fast", now + timeout, timeout, limit=1)
    assert slow.event_id == fast.event_id
    with database.transaction() as session:
        assert claims.holds(session, slow, "slow") is None
        assert claims.holds(session, fast, "fast").status == IN_PROGRESS


def test_scheduler_command_and_serve_without_scheduler_exist() -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["scheduler", "--help"])
    assert result.exit_code == 0 and "SIGTERM" in result.output
    result = runner.invoke(main, ["serve", "--help"])
    assert result.exit_code == 0 and "--no-scheduler" in result.output


def test_hosts_added_to_and_released_from_an_active_physical_reservation_move_between_pools(
        client: FlaskClient, database: Database, placement: PlacementClient, window) -> None:  # type: ignore[no-untyped-def]
    hosts = {h["id"]: h for h in (register(client, "compute-1"), register(client, "compute-2"))}
    created = create_lease(client, "l1", [physical()], *window)
    run_due_events(database, now=window[0] + SECOND)
    aggregate = lifecycle.reservation_aggregate_uuid(created["reservations"][0]["id"])
    [held] = [i for i, h in hosts.items() if aggregates(placement, h["resource_provider_uuid"]) == {aggregate}]
    [free] = [i for i in hosts if i != held]
    with database.transaction() as session:
        leased = session.get(lifecycle.Lease, created["id"])
        reservation = session.get(lifecycle.Reservation, created["reservations"][0]["id"])
        lifecycle.move_active_hosts(session, EmbeddedPlacement(session), leased, reservation, [int(free)],
                                    [int(held)])
    assert aggregates(placement, hosts[free]["resource_provider_uuid"]) == {aggregate}
    assert aggregates(placement, hosts[held]["resource_provider_uuid"]) == {FREEPOOL_AGGREGATE_UUID}


def test_the_next_due_time_is_the_earliest_event_between_now_and_the_next_pass(
        client: FlaskClient, database: Database, window) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1")
    create_lease(client, "l1", [physical()], *window)
    start = window[0]
    assert claims.next_due_time(database, start - SECOND, start + SECOND) == start
    assert claims.next_due_time(database, start - 3 * SECOND, start - SECOND) is None
    assert claims.next_due_time(database, start, start + 2 * SECOND) is None


def test_a_pass_is_brought_forward_to_an_event_due_before_the_next_interval(
        client: FlaskClient, database: Database, settings, window) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1")
    create_lease(client, "l1", [physical()], *window)
    start = window[0]
    scheduler = LeaseScheduler(settings, database)
    interval = dt.timedelta(seconds=settings.scheduler_interval)

    # The event comes after the next pass: that pass stays where the interval put it.
    later = start - interval - SECOND
    scheduler._scheduler.modify_job(EVENTS_JOB, next_run_time=later + interval)
    assert scheduler.wake_for_next_event(later) is None
    assert scheduler._scheduler.get_job(EVENTS_JOB).next_run_time == later + interval

    now = start - SECOND
    scheduler._scheduler.modify_job(EVENTS_JOB, next_run_time=now + interval)
    assert scheduler.wake_for_next_event(now) == start
    assert scheduler._scheduler.get_job(EVENTS_JOB).next_run_time == start


def test_leases_starting_together_are_marked_together_and_a_busy_one_among_them_waits(
        client: FlaskClient, database: Database, window) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1", vcpus=16)
    created = [create_lease(client, f"l{i}", [instances(1)], *window) for i in range(3)]
    busy = created[1]["id"]
    with database.transaction() as session:
        session.get(lifecycle.Lease, busy).status = "UPDATING"
    now = window[0] + SECOND
    timeout = dt.timedelta(minutes=5)
    taken = claims.claim_due_events(database, "w", now, timeout)
    assert len(taken) == 3

    marked = mark_claimed(database, taken, "w")
    assert {claim.lease_id for claim in taken if claim.event_id in marked} == {created[0]["id"], created[2]["id"]}
    assert set(marked.values()) == {True}
    assert [lease(client, c["id"])["status"] for c in created] == ["STARTING", "UPDATING", "STARTING"]

    results = [run_claim(database, claim, "w", now=now, marked=marked.get(claim.event_id)) for claim in taken]
    assert {r.lease_id: r.outcome for r in results} == {created[0]["id"]: RAN, busy: RETRY, created[2]["id"]: RAN}
    assert [lease(client, c["id"])["status"] for c in created] == ["ACTIVE", "UPDATING", "ACTIVE"]


def test_marking_together_leaves_out_events_whose_claim_was_taken_over(
        client: FlaskClient, database: Database, window) -> None:  # type: ignore[no-untyped-def]
    register(client, "compute-1", vcpus=16)
    created = [create_lease(client, f"l{i}", [instances(1)], *window) for i in range(2)]
    now = window[0] + SECOND
    timeout = dt.timedelta(minutes=5)
    slow = claims.claim_due_events(database, "slow", now, timeout)
    [taken_over] = claims.claim_due_events(database, "fast", now + timeout, timeout, limit=1)

    marked = mark_claimed(database, slow, "slow")
    assert taken_over.event_id not in marked and len(marked) == 1
    assert lease(client, taken_over.lease_id)["status"] == "PENDING"
    assert {lease(client, c["id"])["status"] for c in created} == {"PENDING", "STARTING"}
