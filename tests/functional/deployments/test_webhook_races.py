"""Delivery passes racing on PostgreSQL, as several scheduler processes run them: every event
reaches the receiver exactly once, and every attempt is recorded once."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import func, select

from blazar_lite.db import Database
from blazar_lite.deployments import events, service
from blazar_lite.scheduler.runner import RECEIVERS
from blazar_lite.webhooks.delivery import deliver_due, enqueue
from blazar_lite.webhooks.models import DELIVERED, WebhookAttempt, WebhookDelivery
from tests.conftest import OK, race
from tests.receiver import Receiver

pytestmark = pytest.mark.postgres

EVENTS = 60


def test_four_schedulers_delivering_at_once_send_each_event_exactly_once(pg_database: Database,
                                                                         receiver: Receiver) -> None:
    with pg_database.transaction() as session:
        shop = service.create_deployment(session, "p1", {"name": "shop", "governor_webhook_url": receiver.url})
        for n in range(EVENTS):
            enqueue(session, source=events.SOURCE, source_id=shop.id, project_id="p1",
                    event_type=events.CAPACITY_OFFER, fields={"n": n})

    outcomes = race(lambda index: deliver_due(pg_database, RECEIVERS, worker_id=f"scheduler-{index}"), workers=4)
    assert outcomes == [OK] * 4
    sent = Counter(request.headers["X-Blazar-Lite-Delivery"] for request in receiver.received)
    assert len(sent) == EVENTS and set(sent.values()) == {1}
    with pg_database.read() as session:
        assert session.scalar(select(func.count()).select_from(WebhookDelivery)
                              .where(WebhookDelivery.status == DELIVERED)) == EVENTS
        assert session.scalar(select(func.count()).select_from(WebhookAttempt)) == EVENTS
