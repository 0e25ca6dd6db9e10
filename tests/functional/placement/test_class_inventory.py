"""One class's inventory on a provider, read and changed through the backend: the provider's other
classes stay, its generation advances, and the refusals are the whole-inventory write's."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select

from blazar_lite.exceptions import BadRequest, ConcurrentUpdate, Conflict, NotFound
from blazar_lite.placement.backend import EmbeddedPlacement
from blazar_lite.placement.models import ResourceProvider

SLOTS = {"total": 3, "reserved": 0, "min_unit": 1, "max_unit": 3, "step_size": 1, "allocation_ratio": 1.0}
OTHER = {"total": 2, "reserved": 0, "min_unit": 1, "max_unit": 2, "step_size": 1, "allocation_ratio": 1.0}


@pytest.fixture
def provider(database) -> str:  # type: ignore[no-untyped-def]
    with database.transaction() as session:
        placement = EmbeddedPlacement(session)
        uuid_ = placement.ensure_provider("blazar_compute-1").uuid
        placement.ensure_resource_class("CUSTOM_RESERVATION_A")
        placement.ensure_resource_class("CUSTOM_RESERVATION_B")
        placement.set_inventories(uuid_, {"CUSTOM_RESERVATION_B": OTHER})
    return uuid_


def test_adding_changing_and_removing_one_class_leaves_the_others_and_bumps_the_generation(database, provider):
    with database.transaction() as session:
        placement = EmbeddedPlacement(session)
        generation = placement.provider(provider).generation
        current = placement.class_inventory(provider, "CUSTOM_RESERVATION_A")
        assert (current.inventory, current.used, current.generation) == (None, 0, generation)
        placement.set_class_inventory(current, SLOTS)
        assert placement.inventories(provider) == {"CUSTOM_RESERVATION_A": SLOTS, "CUSTOM_RESERVATION_B": OTHER}
        assert placement.provider(provider).generation == generation + 1

        current = placement.class_inventory(provider, "CUSTOM_RESERVATION_A")
        assert current.inventory == SLOTS
        placement.set_class_inventory(current, {**SLOTS, "total": 5, "max_unit": 5})
        assert placement.inventories(provider)["CUSTOM_RESERVATION_A"]["total"] == 5

        placement.set_class_inventory(placement.class_inventory(provider, "CUSTOM_RESERVATION_A"), None)
        assert placement.inventories(provider) == {"CUSTOM_RESERVATION_B": OTHER}
        assert placement.provider(provider).generation == generation + 3


def test_a_provider_already_read_in_the_transaction_sees_the_new_generation(database, provider):
    with database.transaction() as session:
        placement = EmbeddedPlacement(session)
        loaded = session.scalar(select(ResourceProvider).where(ResourceProvider.uuid == provider))
        placement.set_class_inventory(placement.class_inventory(provider, "CUSTOM_RESERVATION_A"), SLOTS)
        assert loaded.generation == placement.class_inventory(provider, "CUSTOM_RESERVATION_A").generation
        # A whole-inventory write after it in the same transaction starts from that generation.
        placement.set_inventories(provider, {"CUSTOM_RESERVATION_A": SLOTS})
        assert placement.inventories(provider) == {"CUSTOM_RESERVATION_A": SLOTS}


def test_a_change_after_another_write_to_the_provider_is_a_generation_conflict(database, provider):
    with database.transaction() as session:
        placement = EmbeddedPlacement(session)
        current = placement.class_inventory(provider, "CUSTOM_RESERVATION_A")
        placement.set_inventories(provider, {"CUSTOM_RESERVATION_B": {**OTHER, "total": 4, "max_unit": 4}})
        with pytest.raises(ConcurrentUpdate):
            placement.set_class_inventory(current, SLOTS)


def test_removing_a_class_that_allocations_use_is_refused(database, provider):
    with database.transaction() as session:
        placement = EmbeddedPlacement(session)
        placement.allocate(str(uuid.uuid4()), {provider: {"CUSTOM_RESERVATION_B": 1}}, "project", "user")
        current = placement.class_inventory(provider, "CUSTOM_RESERVATION_B")
        assert current.used == 1
        with pytest.raises(Conflict, match="in use"):
            placement.set_class_inventory(current, None)


def test_an_unknown_provider_is_not_found_and_an_unknown_class_cannot_be_offered(database, provider):
    with database.transaction() as session:
        placement = EmbeddedPlacement(session)
        missing = str(uuid.uuid4())
        with pytest.raises(NotFound, match=missing):
            placement.class_inventory(missing, "CUSTOM_RESERVATION_A")
        current = placement.class_inventory(provider, "CUSTOM_RESERVATION_NONE")
        assert current.resource_class_id is None and current.inventory is None
        with pytest.raises(BadRequest, match="CUSTOM_RESERVATION_NONE"):
            placement.set_class_inventory(current, SLOTS)
