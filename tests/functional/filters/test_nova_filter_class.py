"""BlazarLiteFilter without a server: one question per request, the cache, failing closed, its
configuration, and Nova's base class when Nova is there. (tests/integration/test_nova_filter.py
drives it against a running service.)"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from blazar_lite.client.http import ClientError
from blazar_lite.filters import MAX_HOSTS, nova
from blazar_lite.filters.nova import BlazarLiteFilter, FilterConfig, VerdictCache


class FakeChecks:
    """Stands in for FiltersClient: passes the hosts in `passing`, records every question."""

    def __init__(self, passing: set[str], failure: ClientError | None = None) -> None:
        self.passing = passing
        self.failure = failure
        self.calls: list[dict[str, Any]] = []

    def host_passes(self, hosts, project_id, extra_specs=None, hints=None):  # type: ignore[no-untyped-def]
        self.calls.append({"hosts": list(hosts), "project_id": project_id, "extra_specs": extra_specs,
                           "hints": hints})
        if self.failure is not None:
            raise self.failure
        return [{"host": h, "passes": h in self.passing, "reason": "because"} for h in hosts]


def host(name: str) -> SimpleNamespace:
    return SimpleNamespace(host=f"{name}-service", nodename=name, hypervisor_hostname=name)


def spec(instance: str = "inst-1", project: str = "p1", hints: dict | None = None,
         extra_specs: dict | None = None) -> SimpleNamespace:
    return SimpleNamespace(instance_uuid=instance, project_id=project, scheduler_hints=hints or {},
                           flavor=SimpleNamespace(extra_specs=extra_specs or {}))


def make_filter(checks: FakeChecks, cache_seconds: float = 10.0) -> BlazarLiteFilter:
    return BlazarLiteFilter(FilterConfig(endpoint="http://127.0.0.1:9/v1", cache_seconds=cache_seconds),
                            client=checks)  # type: ignore[arg-type]


def test_filter_all_asks_once_for_every_host_of_the_request() -> None:
    checks = FakeChecks({"cn-2"})
    states = [host(f"cn-{n}") for n in range(1, 5)]
    hints = {"reservation": ["r-1"]}
    passed = make_filter(checks).filter_all(states, spec(hints=hints, extra_specs={"hw:cpu_policy": "shared"}))
    assert [s.nodename for s in passed] == ["cn-2"]
    assert checks.calls == [{"hosts": ["cn-1", "cn-2", "cn-3", "cn-4"], "project_id": "p1",
                             "extra_specs": {"hw:cpu_policy": "shared"}, "hints": {"reservation": ["r-1"]}}]


def test_host_passes_answers_from_the_requests_cached_verdicts() -> None:
    checks = FakeChecks({"cn-1"})
    blazar_filter = make_filter(checks)
    request = spec()
    blazar_filter.filter_all([host("cn-1"), host("cn-2")], request)
    assert blazar_filter.host_passes(host("cn-1"), request) is True
    assert blazar_filter.host_passes(host("cn-2"), request) is False
    assert len(checks.calls) == 1


def test_host_passes_alone_asks_per_host_and_caches_each_answer() -> None:
    checks = FakeChecks({"cn-1"})
    blazar_filter = make_filter(checks)
    request = spec()
    assert [blazar_filter.host_passes(host(n), request) for n in ("cn-1", "cn-2", "cn-1", "cn-2")] == [
        True, False, True, False]
    assert [c["hosts"] for c in checks.calls] == [["cn-1"], ["cn-2"]]


def test_another_request_or_other_hints_ask_again() -> None:
    checks = FakeChecks({"cn-1"})
    blazar_filter = make_filter(checks)
    blazar_filter.host_passes(host("cn-1"), spec())
    blazar_filter.host_passes(host("cn-1"), spec(instance="inst-2"))
    blazar_filter.host_passes(host("cn-1"), spec(hints={"reservation": ["r-1"]}))
    blazar_filter.host_passes(host("cn-1"), spec(project="p2"))
    assert len(checks.calls) == 4


def test_cached_verdicts_expire() -> None:
    now = [100.0]
    cache = VerdictCache(10.0, clock=lambda: now[0])
    cache.put("request", {"cn-1": True})
    now[0] += 9.9
    assert cache.get("request") == {"cn-1": True}
    now[0] += 0.2
    assert cache.get("request") == {}


def test_the_cache_keeps_a_bounded_number_of_requests() -> None:
    cache = VerdictCache(10.0, max_requests=2)
    for n in range(3):
        cache.put(f"request-{n}", {"cn-1": True})
    assert cache.get("request-0") == {}
    assert cache.get("request-2") == {"cn-1": True}


def test_many_hosts_are_asked_about_in_batches_the_service_accepts() -> None:
    checks = FakeChecks(set())
    make_filter(checks).filter_all([host(f"cn-{n}") for n in range(MAX_HOSTS + 5)], spec())
    assert [len(c["hosts"]) for c in checks.calls] == [MAX_HOSTS, 5]


def test_an_unreachable_service_fails_closed_and_logs_why(caplog: pytest.LogCaptureFixture) -> None:
    checks = FakeChecks({"cn-1"}, failure=ClientError(None, "Cannot connect to http://127.0.0.1:9/v1: refused."))
    blazar_filter = make_filter(checks)
    with caplog.at_level(logging.WARNING, logger=nova.LOG.name):
        assert blazar_filter.filter_all([host("cn-1"), host("cn-2")], spec()) == []
    assert "Cannot connect to http://127.0.0.1:9/v1" in caplog.text
    # The failure is not remembered: the next question is asked again.
    checks.failure = None
    assert blazar_filter.host_passes(host("cn-1"), spec()) is True


def test_a_malformed_answer_fails_closed(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(FakeChecks):
        def host_passes(self, hosts, project_id, extra_specs=None, hints=None):  # type: ignore[no-untyped-def]
            return [{"name": h} for h in hosts]

    with caplog.at_level(logging.WARNING, logger=nova.LOG.name):
        assert make_filter(Broken(set())).host_passes(host("cn-1"), spec()) is False
    assert "malformed" in caplog.text


def test_a_request_without_a_project_passes_no_host(caplog: pytest.LogCaptureFixture) -> None:
    checks = FakeChecks({"cn-1"})
    with caplog.at_level(logging.ERROR, logger=nova.LOG.name):
        assert make_filter(checks).host_passes(host("cn-1"), spec(project="")) is False
    assert checks.calls == [] and "no project id" in caplog.text


def test_hints_that_are_not_json_are_sent_as_text() -> None:
    checks = FakeChecks(set())
    group = uuid.UUID("5d2c1c0e-0000-4000-8000-000000000001")
    make_filter(checks).host_passes(host("cn-1"), spec(hints={"group": [group], "reservation": ("r-1",)}))
    assert checks.calls[0]["hints"] == {"group": [str(group)], "reservation": ["r-1"]}


def test_the_node_name_is_used_when_there_is_no_hypervisor_hostname() -> None:
    checks = FakeChecks({"node-7"})
    state = SimpleNamespace(host="compute-service", nodename="node-7")
    assert make_filter(checks).host_passes(state, spec()) is True


def test_nova_object_fields_that_cannot_load_count_as_unset() -> None:
    class NovaSpec:
        project_id = "p1"
        instance_uuid = "inst-1"
        flavor = SimpleNamespace(extra_specs={})

        @property
        def scheduler_hints(self):  # type: ignore[no-untyped-def]
            raise NotImplementedError("Cannot load 'scheduler_hints' in the base class")

    checks = FakeChecks({"cn-1"})
    assert make_filter(checks).host_passes(host("cn-1"), NovaSpec()) is True
    assert checks.calls[0]["hints"] == {}


# Configuration.

def test_the_config_is_read_from_a_nova_conf_section(tmp_path: Path) -> None:
    conf = tmp_path / "nova.conf"
    conf.write_text("[DEFAULT]\ndebug = true\n\n[filter_scheduler]\navailable_filters = a\navailable_filters = b\n\n"
                    "[blazar_lite]\nendpoint = http://blazar:1234/v1\ntoken = secret%value\ntimeout = 2.5\n"
                    "cache_seconds = 0\n")
    config = FilterConfig.load(environ={nova.CONFIG_ENV: str(conf)})
    assert (config.endpoint, config.token, config.timeout, config.cache_seconds) == (
        "http://blazar:1234/v1", "secret%value", 2.5, 0.0)
    assert config.credentials().endpoint == "http://blazar:1234/v1"


def test_an_unknown_option_is_refused_by_name(tmp_path: Path) -> None:
    conf = tmp_path / "filter.conf"
    conf.write_text("[blazar_lite]\nendpont = http://blazar:1234/v1\n")
    with pytest.raises(ValueError, match="endpont"):
        FilterConfig.load(str(conf))


def test_a_bad_number_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="timeout"):
        FilterConfig.from_mapping({"timeout": "0"})


def test_a_named_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot be read"):
        FilterConfig.load(environ={nova.CONFIG_ENV: str(tmp_path / "missing.conf")})


def test_the_filter_builds_a_keystone_login_from_the_config() -> None:
    config = FilterConfig(auth_url="http://keystone:5000/v3", username="nova", password="secret",
                          project_name="service")
    blazar_filter = BlazarLiteFilter(config)
    auth = blazar_filter.client.api.session.auth
    assert type(auth).__name__ == "Password" and auth.auth_url == "http://keystone:5000/v3"
    assert blazar_filter.client.api.endpoint_filter["interface"] == "internal"


# Inside Nova.

def test_novas_base_host_filter_is_the_base_class_when_nova_is_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    class BaseHostFilter:
        pass

    filters = types.ModuleType("nova.scheduler.filters")
    filters.BaseHostFilter = BaseHostFilter  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nova", types.ModuleType("nova"))
    monkeypatch.setitem(sys.modules, "nova.scheduler", types.ModuleType("nova.scheduler"))
    monkeypatch.setitem(sys.modules, "nova.scheduler.filters", filters)
    # A fresh copy of the module, so the one other tests use keeps its plain base.
    loaded = importlib.util.spec_from_file_location("blazar_lite_nova_copy", nova.__file__)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    monkeypatch.setitem(sys.modules, loaded.name, module)
    loaded.loader.exec_module(module)
    assert issubclass(module.BlazarLiteFilter, BaseHostFilter)
    assert not issubclass(BlazarLiteFilter, BaseHostFilter)
