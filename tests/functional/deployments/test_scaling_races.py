"""Scale-ups racing on PostgreSQL: a shape never gets more instances than its scaling_maximum."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from blazar_lite.auth.context import RequestContext
from blazar_lite.db import Database
from blazar_lite.deployments import service
from blazar_lite.exceptions import Conflict
from blazar_lite.instances.models import Instance
from blazar_lite.placement import inventories, providers
from tests.conftest import OK, race

pytestmark = pytest.mark.postgres

MEMBER = RequestContext(user_id="u1", project_id="p1", roles=frozenset({"member"}))


def test_twenty_concurrent_scale_ups_against_a_maximum_of_ten_make_exactly_ten(pg_database: Database) -> None:
    with pg_database.transaction() as session:
        for name in ("node-a", "node-b"):
            view = providers.create_provider(session, name)
            inventories.replace_inventories(session, view.uuid, 0, {"VCPU": {"total": 64},
                                                                    "MEMORY_MB": {"total": 65536}})
        service.create_deployment(session, "p1", {"name": "shop"})
        service.create_shape(session, "p1", "shop", {"name": "web", "scaling_minimum": 0, "scaling_maximum": 10,
                                                      "instance_template": {"vcpus": 1, "memory_mb": 256}})

    def scale_up(index: int) -> None:
        with pg_database.transaction() as session:
            service.launch_instance(session, MEMBER, "shop", "web", f"web-{index}")

    outcomes = race(scale_up, workers=20)
    assert outcomes.count(OK) == 10
    refused = [outcome for outcome in outcomes if outcome != OK]
    assert all(isinstance(outcome, Conflict) and "scaling_maximum of 10" in outcome.message for outcome in refused)
    with pg_database.read() as session:
        assert session.scalar(select(func.count()).select_from(Instance).where(Instance.shape_id.is_not(None))) == 10
        assert service.get_shape(session, "p1", "shop", "web").scaling_current == 10
