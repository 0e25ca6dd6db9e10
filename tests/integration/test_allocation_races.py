"""Allocation writes racing on PostgreSQL (READ COMMITTED): capacity is never booked twice.

Each writer runs in its own thread with its own session and transaction; a barrier releases them
together so that their reads and writes interleave.
"""

from __future__ import annotations

import uuid

import pytest

from blazar_lite.app import create_app
from blazar_lite.db import Database
from blazar_lite.exceptions import ConcurrentUpdate, Conflict, NotEnoughResources
from blazar_lite.placement import allocations, inventories, providers
from blazar_lite.settings import load_settings
from tests.conftest import OK, RACE_WORKERS, race

pytestmark = pytest.mark.postgres

WORKERS = RACE_WORKERS



def _provider(database: Database, name: str, vcpus: int) -> str:
    with database.transaction() as session:
        view = providers.create_provider(session, name)
        inventories.replace_inventories(session, view.uuid, 0, {"VCPU": {"total": vcpus}})
    return view.uuid


def _used(database: Database, rp: str) -> int:
    with database.read() as session:
        held = allocations.get_provider_allocations(session, rp).allocations
    return sum(share.resources.get("VCPU", 0) for share in held.values())


@pytest.mark.parametrize("amount", [1, 2])
def test_concurrent_new_consumers_get_exactly_the_capacity_and_the_rest_409(pg_database, amount):
    capacity = 3
    rp = _provider(pg_database, f"race-{amount}", capacity)

    def allocate(_: int) -> None:
        with pg_database.transaction() as session:
            allocations.replace_consumer_allocations(session, str(uuid.uuid4()), {rp: {"VCPU": amount}},
                                                     "proj", "user", None, "INSTANCE")

    outcomes = race(allocate)
    losers = [o for o in outcomes if o != OK]
    assert outcomes.count(OK) == capacity // amount, outcomes
    assert all(isinstance(o, Conflict) for o in losers), losers
    # Retries absorb the provider generation races: every loser was refused for a real shortage.
    assert all(isinstance(o, NotEnoughResources) for o in losers), losers
    assert _used(pg_database, rp) == (capacity // amount) * amount <= capacity


def test_concurrent_http_puts_answer_204_for_the_capacity_and_409_for_the_rest(pg_database, pg_scratch_url,
                                                                               tmp_path):
    rp = _provider(pg_database, "race-http", 3)
    app = create_app(load_settings(environ={}, data_dir=str(tmp_path), database_url=pg_scratch_url), pg_database)
    statuses: list[int] = [0] * WORKERS

    def put(index: int) -> None:
        response = app.test_client().put(
            f"/placement/allocations/{uuid.uuid4()}",
            headers={"OpenStack-API-Version": "placement 1.39", "X-Auth-Token": "admin"},
            json={"allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u",
                  "consumer_generation": None, "consumer_type": "INSTANCE"})
        statuses[index] = response.status_code

    assert race(put) == [OK] * WORKERS
    assert sorted(statuses) == [204] * 3 + [409] * (WORKERS - 3)
    assert _used(pg_database, rp) == 3


def test_concurrent_posts_of_several_consumers_never_overbook_two_providers(pg_database):
    rp1 = _provider(pg_database, "race-a", 4)
    rp2 = _provider(pg_database, "race-b", 4)

    def allocate(_: int) -> None:
        with pg_database.transaction() as session:
            allocations.replace_many(session, {
                str(uuid.uuid4()): {"allocations": {rp1: {"VCPU": 1}}, "project_id": "p", "user_id": "u",
                                    "consumer_generation": None},
                str(uuid.uuid4()): {"allocations": {rp2: {"VCPU": 2}}, "project_id": "p", "user_id": "u",
                                    "consumer_generation": None}})

    outcomes = race(allocate)
    # rp2 fits two pairs (2 x 2 VCPU); rp1 would fit four.
    assert outcomes.count(OK) == 2, outcomes
    assert all(isinstance(o, NotEnoughResources) for o in outcomes if o != OK), outcomes
    assert (_used(pg_database, rp1), _used(pg_database, rp2)) == (2, 4)


def test_concurrent_creations_of_one_consumer_let_exactly_one_win(pg_database):
    rp = _provider(pg_database, "race-one", 100)
    consumer = str(uuid.uuid4())

    def allocate(index: int) -> None:
        with pg_database.transaction() as session:
            allocations.replace_consumer_allocations(session, consumer, {rp: {"VCPU": index + 1}},
                                                     "proj", "user", None, "INSTANCE")

    outcomes = race(allocate)
    assert outcomes.count(OK) == 1, outcomes
    assert all(isinstance(o, ConcurrentUpdate) for o in outcomes if o != OK), outcomes
    winner = outcomes.index(OK) + 1
    with pg_database.read() as session:
        view = allocations.get_consumer_allocations(session, consumer)
    assert view.allocations[rp].resources == {"VCPU": winner}
    assert view.generation == 1


def test_concurrent_unchecked_rewrites_of_one_consumer_all_apply_in_turn(pg_database):
    rp = _provider(pg_database, "race-unchecked", 100)
    consumer = str(uuid.uuid4())

    def allocate(index: int) -> None:
        with pg_database.transaction() as session:
            allocations.replace_consumer_allocations(session, consumer, {rp: {"VCPU": index + 1}}, "proj", "user")

    outcomes = race(allocate)
    assert outcomes == [OK] * WORKERS
    with pg_database.read() as session:
        view = allocations.get_consumer_allocations(session, consumer)
    # Each write replaced the one before: one allocation remains and the generation counts them all.
    assert len(view.allocations[rp].resources) == 1
    assert view.generation == WORKERS
    assert _used(pg_database, rp) == view.allocations[rp].resources["VCPU"]
