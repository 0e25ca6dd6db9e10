"""A Nova scheduler filter that asks blazar-lite which hosts may take an instance.

Nova calls a filter's `host_passes` once per host; blazar-lite answers for many hosts in one HTTP
call. So the filter asks once per scheduling request, for every host Nova hands to `filter_all`
(in batches of at most `MAX_HOSTS`), and keeps the verdicts for a few seconds under a key
of the request (instance uuid, project, flavor extra specs, hints); a direct `host_passes` call
answers from that cache or asks about its one host. When blazar-lite cannot be asked, or its
answer makes no sense, the hosts do not pass (fail closed) and the reason is logged: an instance
that lands on another project's reserved host is worse than one that waits.

In nova.conf:

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = blazar_lite.filters.nova.BlazarLiteFilter
    enabled_filters = ...,BlazarLiteFilter

    [blazar_lite]
    endpoint = http://blazar-lite.example:1234/v1
    # a fixed token (or none at all against a noauth service) ...
    token = secret
    # ... or a Keystone login (the endpoint then defaults to the catalog's `reservation` one)
    auth_url = http://keystone.example/identity/v3
    username = nova
    password = secret
    project_name = service

The section is read from the file named by BLAZAR_LITE_FILTER_CONFIG, else from /etc/nova/nova.conf.
"""

from __future__ import annotations

import configparser
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from blazar_lite.client.filters import FiltersClient
from blazar_lite.client.http import ClientError, Credentials, V1Client, make_session
from blazar_lite.filters import MAX_HOSTS

LOG = logging.getLogger(__name__)

CONFIG_ENV = "BLAZAR_LITE_FILTER_CONFIG"
DEFAULT_CONFIG_FILE = "/etc/nova/nova.conf"
SECTION = "blazar_lite"
# Requests whose verdicts are kept at once; a scheduler works on a handful at a time.
MAX_CACHED_REQUESTS = 256

try:  # Nova's base class when the filter runs inside Nova's scheduler.
    from nova.scheduler.filters import BaseHostFilter as _FilterBase  # type: ignore[import-not-found]
except ImportError:
    class _FilterBase:  # type: ignore[no-redef]
        """What Nova's scheduler expects of a host filter, for use outside Nova."""

        run_filter_once_per_request = False
        RUN_ON_REBUILD = False

        def run_filter_for_index(self, index: int) -> bool:
            return not (self.run_filter_once_per_request and index > 0)

        def _filter_one(self, obj: Any, spec_obj: Any) -> bool:
            return self.host_passes(obj, spec_obj)  # type: ignore[attr-defined]

        def filter_all(self, filter_obj_list: Iterable[Any], spec_obj: Any) -> Iterable[Any]:
            return [obj for obj in filter_obj_list if self._filter_one(obj, spec_obj)]


@dataclass(frozen=True)
class FilterConfig:
    """Where blazar-lite is and how to log in to it (see Credentials); `timeout` bounds each call
    and `cache_seconds` how long one request's verdicts are reused."""

    endpoint: str | None = None
    token: str | None = None
    auth_url: str | None = None
    username: str | None = None
    password: str | None = None
    project_name: str | None = None
    user_domain_name: str = "Default"
    project_domain_name: str = "Default"
    region_name: str | None = None
    # The scheduler talks to services inside the cloud.
    interface: str = "internal"
    timeout: float = 5.0
    cache_seconds: float = 10.0

    @classmethod
    def from_mapping(cls, values: Mapping[str, str], source: str = "the configuration") -> FilterConfig:
        """The config from option texts; ValueError naming the option for an unknown or bad one."""
        known = {f.name: f for f in fields(cls)}
        options: dict[str, Any] = {}
        for name, text in values.items():
            if name not in known:
                raise ValueError(f"[{SECTION}] {name} in {source} is not an option; known: {', '.join(known)}.")
            text = text.strip()
            if name in ("timeout", "cache_seconds"):
                try:
                    number = float(text)
                except ValueError:
                    raise ValueError(f"[{SECTION}] {name} in {source} must be a number of seconds, "
                                     f"not {text!r}.") from None
                if number < 0 or (name == "timeout" and number == 0):
                    raise ValueError(f"[{SECTION}] {name} in {source} must be positive, not {text}.")
                options[name] = number
            elif text:
                options[name] = text
        return cls(**options)

    @classmethod
    def load(cls, path: str | None = None, environ: Mapping[str, str] | None = None) -> FilterConfig:
        """The [blazar_lite] section of `path`, of the file named by BLAZAR_LITE_FILTER_CONFIG,
        or of /etc/nova/nova.conf; the defaults (a noauth service on this machine) when the
        default file or the section is missing. A file named explicitly must exist."""
        environ = os.environ if environ is None else environ
        named = path or environ.get(CONFIG_ENV)
        chosen = named or DEFAULT_CONFIG_FILE
        # Nova's [DEFAULT] is a section like any other here, not defaults for ours; oslo.config
        # files repeat multi-valued options, which configparser must not refuse.
        parser = configparser.ConfigParser(interpolation=None, strict=False, default_section="\0")
        if not parser.read(chosen):
            if named:
                raise ValueError(f"The blazar-lite filter configuration {chosen} cannot be read.")
            LOG.warning("%s cannot be read; asking blazar-lite at the default endpoint without auth", chosen)
            return cls()
        if not parser.has_section(SECTION):
            LOG.warning("%s has no [%s] section; asking blazar-lite at the default endpoint without auth",
                        chosen, SECTION)
            return cls()
        return cls.from_mapping(dict(parser.items(SECTION)), chosen)

    def credentials(self) -> Credentials:
        return Credentials(endpoint=self.endpoint, token=self.token, auth_url=self.auth_url, username=self.username,
                           password=self.password, project_name=self.project_name,
                           user_domain_name=self.user_domain_name, project_domain_name=self.project_domain_name,
                           region_name=self.region_name, interface=self.interface)


class VerdictCache:
    """Per scheduling request, whether each host passed, for `seconds` after it was asked."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic,
                 max_requests: int = MAX_CACHED_REQUESTS) -> None:
        self.seconds = seconds
        self.clock = clock
        self.max_requests = max_requests
        self._entries: OrderedDict[str, tuple[float, dict[str, bool]]] = OrderedDict()
        # Nova's scheduler may filter several requests at once in threads.
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, bool]:
        """The verdicts still fresh for this request (a copy)."""
        with self._lock:
            self._expire()
            entry = self._entries.get(key)
            return dict(entry[1]) if entry else {}

    def put(self, key: str, verdicts: Mapping[str, bool]) -> None:
        if self.seconds <= 0:
            return
        with self._lock:
            self._expire()
            expires, known = self._entries.pop(key, (self.clock() + self.seconds, {}))
            known.update(verdicts)
            self._entries[key] = (expires, known)
            while len(self._entries) > self.max_requests:
                self._entries.popitem(last=False)

    def _expire(self) -> None:
        now = self.clock()
        for key in [key for key, (expires, _) in self._entries.items() if expires <= now]:
            del self._entries[key]


def _field(obj: Any, name: str) -> Any:
    # Nova objects raise (rather than answer None) for fields that were never set.
    try:
        return getattr(obj, name, None)
    except Exception:  # any failure to load a field means it is not there
        return None


def hostname_of(host_state: Any) -> str | None:
    """The name blazar-lite knows a compute node by: its hypervisor hostname (Nova's nodename)."""
    for name in ("hypervisor_hostname", "nodename", "host"):
        value = _field(host_state, name)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass(frozen=True)
class _Request:
    key: str
    label: str
    project_id: str
    extra_specs: dict[str, str]
    hints: dict[str, Any]


def _describe(spec_obj: Any) -> _Request | None:
    project_id = _field(spec_obj, "project_id")
    if not isinstance(project_id, str) or not project_id:
        return None
    extra_specs = _field(_field(spec_obj, "flavor"), "extra_specs") or {}
    specs = {str(key): str(value) for key, value in dict(extra_specs).items()}
    raw_hints = _field(spec_obj, "scheduler_hints") or {}
    # Sent as JSON and part of the cache key: anything that is not JSON goes as its text.
    hints = json.loads(json.dumps({str(key): list(value) if isinstance(value, list | tuple) else value
                                   for key, value in dict(raw_hints).items()}, default=str))
    instance = _field(spec_obj, "instance_uuid") or _field(_field(spec_obj, "_context"), "request_id")
    # Without an instance or request id the verdicts are still right for the same project, flavor
    # and hints; the object's id only keeps one request's cache from serving another for long.
    request = str(instance or id(spec_obj))
    key = json.dumps([request, project_id, specs, hints], sort_keys=True)
    return _Request(key, f"instance {instance or '(no uuid)'} of project {project_id}", project_id, specs, hints)


class BlazarLiteFilter(_FilterBase):
    """Passes the hosts blazar-lite's host-passes check passes: a reservation's hosts for the
    requests that ask for it, unreserved hosts for the others."""

    def __init__(self, config: FilterConfig | None = None, client: FiltersClient | None = None) -> None:
        super().__init__()
        self.config = config or FilterConfig.load()
        if client is None:
            session, endpoint_filter = make_session(self.config.credentials(), self.config.timeout)
            client = FiltersClient(V1Client(session, endpoint_filter))
        self.client = client
        self.cache = VerdictCache(self.config.cache_seconds)

    def filter_all(self, filter_obj_list: Iterable[Any], spec_obj: Any) -> list[Any]:
        """The hosts that pass, asking blazar-lite about all of them at once."""
        host_states = list(filter_obj_list)
        verdicts = self._verdicts([hostname_of(h) for h in host_states], spec_obj)
        return [h for h in host_states if verdicts.get(hostname_of(h) or "", False)]

    def host_passes(self, host_state: Any, spec_obj: Any) -> bool:
        """Whether this one host passes (from the request's cached verdicts when there are some)."""
        name = hostname_of(host_state)
        return self._verdicts([name], spec_obj).get(name or "", False)

    def _verdicts(self, names: list[str | None], spec_obj: Any) -> dict[str, bool]:
        request = _describe(spec_obj)
        if request is None:
            LOG.error("The request spec has no project id; no host passes the blazar-lite filter")
            return {}
        if None in names:
            LOG.error("A host state has no hypervisor hostname, node name or host; it does not pass the "
                      "blazar-lite filter")
        known = self.cache.get(request.key)
        missing = list(dict.fromkeys(name for name in names if name and name not in known))
        for start in range(0, len(missing), MAX_HOSTS):
            known.update(self._ask(missing[start:start + MAX_HOSTS], request))
        return known

    def _ask(self, names: list[str], request: _Request) -> dict[str, bool]:
        try:
            answer = self.client.host_passes(names, request.project_id, request.extra_specs, request.hints)
            verdicts = {item["host"]: item["passes"] is True for item in answer}
            reasons = {item["host"]: item.get("reason", "") for item in answer}
        except ClientError as exc:
            LOG.warning("blazar-lite could not be asked about %d host(s) for %s, so none passes: %s",
                        len(names), request.label, exc)
            return {}
        except (KeyError, TypeError, AttributeError) as exc:
            LOG.warning("blazar-lite's answer about %d host(s) for %s is malformed (%r), so none passes",
                        len(names), request.label, exc)
            return {}
        for name in names:
            if name not in verdicts:
                LOG.warning("blazar-lite did not answer for host %s (%s), so it does not pass", name, request.label)
            elif not verdicts[name]:
                LOG.debug("%s does not pass for %s: %s", name, request.label, reasons[name])
        # Failures are not cached: the next request asks again rather than inherit an outage.
        self.cache.put(request.key, verdicts)
        return verdicts
