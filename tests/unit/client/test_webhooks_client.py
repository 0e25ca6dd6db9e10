"""The webhook, lease history and event history calls without a server: the requests each makes."""

from __future__ import annotations

from blazar_lite.client import DeploymentsClient, LeasesClient, WebhooksClient
from tests.unit.client.test_client import RecordingApi

LEASE_ID = "5f2b7c4e-0000-4000-8000-000000000001"
HOOK = "9d1e2f3a-0000-4000-8000-000000000002"


def test_a_webhook_create_sends_the_events_as_a_list_and_leaves_out_what_is_not_given() -> None:
    api = RecordingApi({("POST", "/webhooks"): {"webhook": {"id": HOOK}}})
    created = WebhooksClient(api).create("http://ops/hook", events=("lease.ended",))  # type: ignore[arg-type]
    assert created == {"id": HOOK}
    assert api.requests == [("POST", "/webhooks", {"url": "http://ops/hook", "events": ["lease.ended"]})]


def test_a_webhook_update_sends_only_what_is_given_and_an_empty_event_list_as_is() -> None:
    api = RecordingApi({("PATCH", f"/webhooks/{HOOK}"): {"webhook": {}}})
    hooks = WebhooksClient(api)  # type: ignore[arg-type]
    hooks.update(HOOK, description="")
    hooks.update(HOOK, events=[])
    assert api.requests == [("PATCH", f"/webhooks/{HOOK}", {"description": ""}),
                            ("PATCH", f"/webhooks/{HOOK}", {"events": []})]


def test_event_histories_send_only_the_filters_given() -> None:
    api = RecordingApi({("GET", f"/webhooks/{HOOK}/events?status=FAILED&limit=5"): {"events": []},
                        ("GET", f"/webhooks/{HOOK}/events"): {"events": []},
                        ("GET", "/deployments/my%20shop/events?project_id=p1&type=evacuation"): {"events": []}})
    WebhooksClient(api).events(HOOK, status="FAILED", limit=5)  # type: ignore[arg-type]
    WebhooksClient(api).events(HOOK)  # type: ignore[arg-type]
    DeploymentsClient(api).events("my shop", event_type="evacuation", project_id="p1")  # type: ignore[arg-type]
    assert [path for _method, path, _body in api.requests] == [
        f"/webhooks/{HOOK}/events?status=FAILED&limit=5", f"/webhooks/{HOOK}/events",
        "/deployments/my%20shop/events?project_id=p1&type=evacuation"]


def test_a_lease_history_is_read_by_the_uuid_of_the_named_lease() -> None:
    api = RecordingApi({("GET", "/leases"): {"leases": [{"id": LEASE_ID, "name": "gpu-week"}]},
                        ("GET", f"/leases/{LEASE_ID}/history"): {"history": [{"event": "lease.created"}]}})
    assert LeasesClient(api).history("gpu-week") == [{"event": "lease.created"}]  # type: ignore[arg-type]
    assert api.requests[-1] == ("GET", f"/leases/{LEASE_ID}/history", None)


def test_a_deployment_secret_is_sent_with_create_set_and_replace() -> None:
    api = RecordingApi({("POST", "/deployments"): {"deployment": {}},
                        ("PATCH", "/deployments/shop"): {"deployment": {}},
                        ("PUT", "/deployments/shop"): {"deployment": {}}})
    deployments = DeploymentsClient(api)  # type: ignore[arg-type]
    deployments.create("shop", governor_webhook_secret="s" * 16)
    deployments.update("shop", governor_webhook_secret="t" * 16)
    deployments.replace("shop", governor_webhook_secret="u" * 16)
    assert [body for _method, _path, body in api.requests] == [
        {"name": "shop", "governor_webhook_secret": "s" * 16}, {"governor_webhook_secret": "t" * 16},
        {"governor_webhook_secret": "u" * 16}]
