"""The Python client without a server: which requests each call makes, how names are resolved,
and which keystoneauth1 plugin the credentials choose."""

from __future__ import annotations

from typing import Any

import pytest
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1.identity import v3
from keystoneauth1.noauth import NoAuth
from keystoneauth1.token_endpoint import Token

from blazar_lite.client import ClientError, Credentials, FlavorsClient, HostsClient, V1Client, make_session
from blazar_lite.client.base import find_by_name
from blazar_lite.client.http import DEFAULT_ENDPOINT, _connection_message

FLAVOR_ID = "0b7a3c4e-58d4-4a55-a3a3-0f8e3fd8b0a6"


class RecordingApi:
    """Stands in for V1Client: records each request and answers from `answers` by (method, path)."""

    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        self.answers = answers
        self.requests: list[tuple[str, str, Any]] = []

    def request(self, method: str, path: str, body: Any = None) -> Any:
        self.requests.append((method, path, body))
        return self.answers.get((method, path))

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def put(self, path: str, body: Any) -> Any:
        return self.request("PUT", path, body)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body)

    def delete(self, path: str) -> None:
        self.request("DELETE", path)


HOSTS = {"hosts": [{"id": "1", "hypervisor_hostname": "compute-1"}, {"id": "2", "hypervisor_hostname": "compute-2"}]}


def hosts_client(answers: dict[tuple[str, str], Any] | None = None) -> tuple[HostsClient, RecordingApi]:
    api = RecordingApi({("GET", "/os-hosts"): HOSTS, **(answers or {})})
    return HostsClient(api), api  # type: ignore[arg-type]


# Finding by name.

def test_find_by_name_returns_the_one_match() -> None:
    assert find_by_name(HOSTS["hosts"], "hypervisor_hostname", "compute-2", "host") == HOSTS["hosts"][1]


def test_find_by_name_with_no_match_is_a_404() -> None:
    with pytest.raises(ClientError) as raised:
        find_by_name(HOSTS["hosts"], "hypervisor_hostname", "compute-9", "host")
    assert (raised.value.status, raised.value.message) == (404, "No host named compute-9.")


def test_find_by_name_with_several_matches_is_a_409_naming_their_ids() -> None:
    twins = [{"id": "4", "name": "m1"}, {"id": "7", "name": "m1"}]
    with pytest.raises(ClientError) as raised:
        find_by_name(twins, "name", "m1", "flavor")
    assert raised.value.status == 409
    assert raised.value.message == "2 flavors are named m1 (ids 4, 7); give an id instead."


# Hosts.

def test_a_host_of_digits_is_fetched_by_id() -> None:
    hosts, api = hosts_client({("GET", "/os-hosts/12"): {"host": {"id": "12"}}})
    assert hosts.get("12") == {"id": "12"}
    assert api.requests == [("GET", "/os-hosts/12", None)]


def test_a_host_name_is_found_among_the_listed_hosts() -> None:
    hosts, api = hosts_client()
    assert hosts.get("compute-2") == {"id": "2", "hypervisor_hostname": "compute-2"}
    assert api.requests == [("GET", "/os-hosts", None)]


def test_a_host_name_that_several_hosts_have_is_refused() -> None:
    twins = {"hosts": [{"id": "1", "hypervisor_hostname": "cn"}, {"id": "3", "hypervisor_hostname": "cn"}]}
    hosts, api = hosts_client({("GET", "/os-hosts"): twins})
    with pytest.raises(ClientError, match=r"2 hosts are named cn \(ids 1, 3\)"):
        hosts.delete("cn")
    assert [method for method, _, _ in api.requests] == ["GET"]


def test_updating_a_host_by_name_puts_to_its_id() -> None:
    hosts, api = hosts_client({("PUT", "/os-hosts/2"): {"host": {"id": "2"}}})
    hosts.update("compute-2", {"rack": "r1", "reservable": False})
    assert api.requests[-1] == ("PUT", "/os-hosts/2", {"rack": "r1", "reservable": False})


def test_unsetting_extras_puts_nulls() -> None:
    hosts, api = hosts_client({("PUT", "/os-hosts/1"): {"host": {"id": "1"}}})
    hosts.unset("1", ["rack", "gpu"])
    assert api.requests == [("PUT", "/os-hosts/1", {"rack": None, "gpu": None})]


def test_creating_a_host_sends_its_fields_and_extras_flat() -> None:
    hosts, api = hosts_client({("POST", "/os-hosts"): {"host": {"id": "3"}}})
    hosts.create("compute-3", vcpus=4, gpu="a100")
    assert api.requests == [("POST", "/os-hosts", {"name": "compute-3", "vcpus": 4, "gpu": "a100"})]


def test_allocation_and_property_queries() -> None:
    hosts, api = hosts_client({
        ("GET", "/os-hosts/allocations?lease_id=l1"): {"allocations": []},
        ("GET", "/os-hosts/2/allocation?reservation_id=r1"): {"allocation": {}},
        ("GET", "/os-hosts/properties"): {"resource_properties": []},
        ("GET", "/os-hosts/properties?detail=True&all=True"): {"resource_properties": []},
        ("PATCH", "/os-hosts/properties/a%2Fb%20c"): {"resource_property": {}}})
    assert hosts.allocations(lease_id="l1") == []
    assert hosts.allocation("compute-2", reservation_id="r1") == {}
    assert hosts.properties() == []
    assert hosts.properties(detail=True, include_private=True) == []
    assert hosts.set_property("a/b c", private=True) == {}
    assert api.requests[-1] == ("PATCH", "/os-hosts/properties/a%2Fb%20c", {"private": True})


# Flavors.

def test_a_flavor_uuid_is_fetched_by_id_and_a_name_found_in_the_list() -> None:
    api = RecordingApi({("GET", f"/flavors/{FLAVOR_ID}"): {"flavor": {"id": FLAVOR_ID}},
                        ("GET", "/flavors"): {"flavors": [{"id": FLAVOR_ID, "name": "m1.small"}]},
                        ("PUT", f"/flavors/{FLAVOR_ID}"): {"flavor": {"id": FLAVOR_ID}}})
    flavors = FlavorsClient(api)  # type: ignore[arg-type]
    assert flavors.get(FLAVOR_ID) == {"id": FLAVOR_ID}
    assert flavors.get("m1.small") == {"id": FLAVOR_ID, "name": "m1.small"}
    flavors.update("m1.small", ram=1024, extra_specs={"a": None})
    assert api.requests[-1] == ("PUT", f"/flavors/{FLAVOR_ID}", {"flavor": {"ram": 1024, "extra_specs": {"a": None}}})


def test_creating_a_flavor_wraps_it_as_nova_does() -> None:
    api = RecordingApi({("POST", "/flavors"): {"flavor": {"id": FLAVOR_ID}}})
    FlavorsClient(api).create("m1.small", vcpus=1, ram=512, extra_specs={"a": "1"})  # type: ignore[arg-type]
    assert api.requests == [("POST", "/flavors", {"flavor": {"name": "m1.small", "vcpus": 1, "ram": 512, "disk": 0,
                                                             "is_public": True, "extra_specs": {"a": "1"}}})]


# Sessions.

def test_no_credentials_mean_noauth_at_the_default_endpoint() -> None:
    session, _ = make_session(Credentials())
    assert isinstance(session.auth, NoAuth)
    assert session.auth.endpoint == DEFAULT_ENDPOINT


def test_a_token_without_keystone_is_sent_to_the_endpoint() -> None:
    session, endpoint_filter = make_session(Credentials(endpoint="http://h:1234/v1", token="t"))
    assert isinstance(session.auth, Token)
    assert endpoint_filter == {"endpoint_override": "http://h:1234/v1"}


def test_a_password_login_finds_the_endpoint_in_the_catalog() -> None:
    session, endpoint_filter = make_session(Credentials(auth_url="http://k/v3", username="u", password="p",
                                                        project_name="demo", region_name="r1",
                                                        interface="internal"))
    assert isinstance(session.auth, v3.Password)
    assert endpoint_filter == {"service_type": "reservation", "interface": "internal", "region_name": "r1"}


def test_a_token_with_keystone_is_rescoped() -> None:
    session, _ = make_session(Credentials(auth_url="http://k/v3", token="t", project_name="demo"))
    assert isinstance(session.auth, v3.Token)


def test_keystone_without_a_secret_is_refused() -> None:
    with pytest.raises(ClientError, match="needs a username and password, or a token"):
        make_session(Credentials(auth_url="http://k/v3"))


def test_a_connection_failure_names_the_url_and_the_reason() -> None:
    exc = ks_exceptions.ConnectFailure(
        "Unable to establish connection to http://h:1/v1/os-hosts: HTTPConnectionPool(host='h', port=1): Max "
        "retries exceeded (Caused by NewConnectionError(\"...: Failed to establish a new connection: [Errno 111] "
        "Connection refused\"))")
    assert _connection_message(exc) == "Cannot connect to http://h:1/v1/os-hosts: Connection refused."


def test_a_connection_failure_of_another_shape_keeps_its_text() -> None:
    exc = ks_exceptions.ConnectTimeout("Request to http://h:1/v1/os-hosts timed out")
    assert _connection_message(exc) == "Cannot connect: Request to http://h:1/v1/os-hosts timed out"


class FailingSession:
    """Stands in for a keystoneauth1 session whose request raises `error`."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def request(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error


def test_a_catalog_without_the_service_names_the_filter() -> None:
    api = V1Client(FailingSession(ks_exceptions.EndpointNotFound()),  # type: ignore[arg-type]
                   {"service_type": "reservation", "interface": "public", "region_name": "r1"})
    with pytest.raises(ClientError) as raised:
        api.get("/os-hosts")
    assert raised.value.status is None
    assert raised.value.message == ("The service catalog has no reservation endpoint for interface public, "
                                    "region_name r1; give the endpoint explicitly.")


def test_a_refused_keystone_login_carries_keystones_status() -> None:
    api = V1Client(FailingSession(ks_exceptions.Unauthorized("The request you have made requires authentication.",
                                                             http_status=401)),  # type: ignore[arg-type]
                   {"service_type": "reservation", "interface": "public"})
    with pytest.raises(ClientError) as raised:
        api.get("/os-hosts")
    assert str(raised.value) == ("Keystone refused the login: The request you have made requires authentication. "
                                 "(HTTP 401)")
