"""The client commands against a service in Keystone mode: the token goes to the service, which
validates it (keystonemiddleware, its validation mocked by its own AuthTokenFixture) and applies
policy; refusals reach the user as the service's message with exit status 1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fixtures
import pytest
from keystonemiddleware.fixture import AuthTokenFixture

from blazar_lite.app import create_app
from tests.functional.instances.test_instances import compute_node

KEYSTONE = "http://keystone.invalid:5000/v3"
ADMIN_TOKEN = "admin-token"
MEMBER_TOKEN = "member-token"


@pytest.fixture
def keystone_endpoint(settings, database, serve) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with fixtures.Fixture() as holder:
        tokens = holder.useFixture(AuthTokenFixture())
        tokens.add_token_data(token_id=ADMIN_TOKEN, user_id="u-admin", project_id="p-admin",
                              role_list=["admin", "member", "reader"])
        tokens.add_token_data(token_id=MEMBER_TOKEN, user_id="u-alice", project_id="p-alice",
                              role_list=["member", "reader"])
        # The fixture replaces token validation; the middleware still needs to know where Keystone
        # is for the WWW-Authenticate header of its 401 answers.
        app = create_app(settings.replace(auth_strategy="keystone",
                                          keystone_authtoken={"www_authenticate_uri": KEYSTONE}), database)
        with serve(app) as url:
            yield url


@pytest.fixture
def cli(make_cli: Any, keystone_endpoint: str) -> Any:
    return make_cli(keystone_endpoint)


def test_an_admin_token_lists_and_creates_hosts(cli: Any) -> None:
    assert cli.json("host", "list", "--os-token", ADMIN_TOKEN) == []
    host = cli.json("host", "create", "compute-1", "--vcpus", "8", "--memory-mb", "16384", "--local-gb", "200",
                    "--os-token", ADMIN_TOKEN)
    assert cli.rows(cli.ok("host", "list", "--os-token", ADMIN_TOKEN)) == [
        {"id": host["id"], "hypervisor_hostname": "compute-1", "vcpus": "8", "memory_mb": "16384",
         "local_gb": "200", "reservable": "True", "status": "up"}]


def test_the_token_may_come_from_the_environment(cli: Any) -> None:
    assert cli.json("host", "list", env={"OS_TOKEN": ADMIN_TOKEN}) == []


def test_a_member_token_gets_the_policy_refusal(cli: Any) -> None:
    message = cli.fails("host", "list", "--os-token", MEMBER_TOKEN)
    assert message == "Policy does not allow hosts:get to be performed. (HTTP 403)"


def test_a_member_token_reads_flavors_but_cannot_create_them(cli: Any) -> None:
    cli.json("flavor", "create", "m1.small", "--vcpus", "1", "--ram", "512", "--os-token", ADMIN_TOKEN)
    assert [f["name"] for f in cli.json("flavor", "list", "--os-token", MEMBER_TOKEN)] == ["m1.small"]
    message = cli.fails("flavor", "create", "m1.large", "--vcpus", "4", "--ram", "8192", "--os-token", MEMBER_TOKEN)
    assert message == "Policy does not allow flavors:post to be performed. (HTTP 403)"


def test_an_invalid_token_gets_the_401_message(cli: Any) -> None:
    message = cli.fails("host", "list", "--os-token", "forged")
    assert message == "Authentication required: send a valid Keystone token in X-Auth-Token. (HTTP 401)"


def test_no_token_gets_the_401_message(cli: Any) -> None:
    message = cli.fails("host", "list")
    assert message == "Authentication required: send a valid Keystone token in X-Auth-Token. (HTTP 401)"


def test_a_password_login_needs_both_username_and_password(make_cli: Any) -> None:
    message = make_cli(None).fails("host", "list", "--os-auth-url", KEYSTONE, "--os-username", "alice")
    assert message == f"A Keystone login at {KEYSTONE} needs both a username and a password."


def test_an_unreachable_keystone_exits_1_naming_it(make_cli: Any, unreachable_endpoint: str) -> None:
    auth_url = unreachable_endpoint.removesuffix("/v1") + "/v3"
    message = make_cli(None).fails("host", "list", "--os-auth-url", auth_url, "--os-username", "alice",
                                   "--os-password", "secret", "--os-project-name", "demo")
    assert message == f"Cannot connect to {auth_url}/auth/tokens: Connection refused."


def test_a_governor_needs_no_keystone_token(cli: Any, make_cli: Any, placement: Any, tmp_path: Any) -> None:
    compute_node(placement, "a")
    cli.json("deployment", "create", "shop", "--os-token", MEMBER_TOKEN)
    cli.json("deployment", "shape", "create", "shop", "web", "--vcpus", "1", "--memory-mb", "512", "--min", "0",
             "--max", "1", "--os-token", MEMBER_TOKEN)
    key_file = tmp_path / "gov.key"
    certificate = make_cli(None).ok("deployment", "key", "generate", "--out", str(key_file))
    result = cli.run("deployment", "key", "create", "shop", "gov", "--role", "admin", "--certificate", "-",
                     "--os-token", MEMBER_TOKEN, input=certificate)
    assert result.exit_code == 0, result.stderr
    launched = cli.json("deployment", "shape", "instance", "launch", "shop", "web", "web-1",
                        "--governor-key", str(key_file), "--key-name", "gov")
    assert (launched["project_id"], launched["user_id"]) == ("p-alice", "governor:gov")
    assert cli.fails("deployment", "shape", "instance", "list", "shop", "web") == (
        "Authentication required: send a valid Keystone token in X-Auth-Token. (HTTP 401)")
