"""EmbeddedPlacement: the interface other domains use, driven as a host registration would."""

from __future__ import annotations

import uuid

import pytest

from blazar_lite.exceptions import Conflict
from blazar_lite.placement.backend import EmbeddedPlacement


def test_a_host_registration_flow_through_the_backend(database):
    with database.transaction() as session:
        placement = EmbeddedPlacement(session)
        root = placement.ensure_provider("compute-1")
        child = placement.ensure_provider("blazar_compute-1", parent_provider_uuid=root.uuid)
        placement.set_inventories(root.uuid, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096},
                                              "DISK_GB": {"total": 100}})
        placement.ensure_resource_class("CUSTOM_RESERVATION_ABC")
        placement.set_inventories(child.uuid, {"CUSTOM_RESERVATION_ABC": {"total": 2}})
        freepool = str(uuid.uuid4())
        placement.set_aggregates(root.uuid, [freepool])
        placement.set_traits(root.uuid, ["CUSTOM_GPU"])
    with database.transaction() as session:
        placement = EmbeddedPlacement(session)
        assert placement.ensure_provider("compute-1").uuid == root.uuid
        assert placement.provider(child.uuid).root_provider_uuid == root.uuid
        assert placement.aggregates(root.uuid) == [freepool]
        consumer = str(uuid.uuid4())
        placement.allocate(consumer, {root.uuid: {"VCPU": 2}, child.uuid: {"CUSTOM_RESERVATION_ABC": 1}},
                           "project", "user", "INSTANCE")
        assert placement.usages(child.uuid) == {"CUSTOM_RESERVATION_ABC": 1}
        found = placement.allocation_candidates({"resources": ["VCPU:1,CUSTOM_RESERVATION_ABC:1"]})
        assert len(found.allocation_requests) == 1
        placement.release(consumer)
        placement.release(consumer)
        assert placement.usages(root.uuid)["VCPU"] == 0
        placement.set_inventories(child.uuid, {})
        placement.delete_resource_class("CUSTOM_RESERVATION_ABC")
        placement.delete_provider(child.uuid)
        placement.delete_provider(root.uuid)
        assert placement.provider_by_name("compute-1") is None


def test_allocating_beyond_capacity_through_the_backend_is_a_conflict(database):
    with database.transaction() as session:
        placement = EmbeddedPlacement(session)
        root = placement.ensure_provider("compute-1")
        placement.set_inventories(root.uuid, {"VCPU": {"total": 2}})
        with pytest.raises(Conflict):
            placement.allocate(str(uuid.uuid4()), {root.uuid: {"VCPU": 3}}, "p", "u")
