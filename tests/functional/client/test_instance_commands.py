"""`blazar-lite instance …` against a served app without authentication (an admin of project "admin"),
and in Keystone mode for what only a member sees: each command's effect on the server (the
instance's body, and what it holds in Placement), its table and its JSON, and its usage errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fixtures
import pytest
from flask.testing import FlaskClient
from keystonemiddleware.fixture import AuthTokenFixture

from blazar_lite.app import create_app
from blazar_lite.client import Client, Credentials
from blazar_lite.db import Database
from blazar_lite.scheduler.runner import run_due_events
from tests.conftest import PlacementClient

MEMBER = {"X-Project-Id": "p1", "X-User-Id": "u1", "X-Roles": "member"}
SIZE = ("--vcpus", "2", "--memory-mb", "2048", "--disk-gb", "20")
MEMBER_TOKEN = "member-token"
KEYSTONE = "http://keystone.invalid:5000/v3"
# Names a path segment carries only quoted.
AWKWARD_NAMES = ("web 1?x=#y%z", "caf\u00e9 #2")


def compute_node(placement: PlacementClient, name: str, vcpus: int = 16, memory_mb: int = 32768,
                 disk_gb: int = 500) -> str:
    """An on-demand compute node (a root provider that is not a registered host); its uuid."""
    return placement.provider(name, {"VCPU": vcpus, "MEMORY_MB": memory_mb, "DISK_GB": disk_gb})


def server_instance(client: FlaskClient, instance_id: str) -> dict:
    response = client.get(f"/v1/instances/{instance_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["instance"]


def server_instances(client: FlaskClient) -> list[dict]:
    return client.get("/v1/instances").get_json()["instances"]


def server_flavor(client: FlaskClient, name: str, vcpus: int, ram: int, disk: int = 0) -> dict:
    response = client.post("/v1/flavors", json={"flavor": {"name": name, "vcpus": vcpus, "ram": ram, "disk": disk}})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["flavor"]


def create(cli: Any, name: str = "web", *args: str) -> dict:
    return cli.json("instance", "create", name, *(args or SIZE))


def usage_error(cli: Any, *args: str) -> str:
    """Run a command that must be refused as misused (exit 2); its stderr."""
    result = cli.run(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr, result.exception)
    return result.stderr


def started_reservation(cli: Any, client: FlaskClient, database: Database) -> tuple[dict, dict]:
    """A registered host, and an active lease of one instance slot (2 vCPUs, 1024 MB, 10 GB) on
    it: (the host, the reservation)."""
    response = client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 8, "memory_mb": 16384,
                                                 "local_gb": 100})
    assert response.status_code == 201, response.get_json()
    lease = cli.json("lease", "create", "vms", "--end-date", "2099-01-01 00:00", "--reservation",
                     "resource_type=virtual:instance,amount=1,vcpus=2,memory_mb=1024,disk_gb=10")
    run_due_events(database)  # the lease starts now: its start event is due
    [reservation] = client.get(f"/v1/leases/{lease['id']}").get_json()["lease"]["reservations"]
    assert reservation["status"] == "active", reservation
    return response.get_json()["host"], reservation


# create

def test_instance_create_on_demand_holds_its_size_on_a_compute_node(cli: Any, client: FlaskClient,
                                                                    placement: PlacementClient) -> None:
    node = compute_node(placement, "ondemand-1")
    created = create(cli, "web", *SIZE)
    assert created == server_instance(client, created["id"])
    assert (created["name"], created["status"], created["forthcoming"], created["host"]) == (
        "web", "ACTIVE", False, "ondemand-1")
    assert (created["vcpus"], created["memory_mb"], created["disk_gb"], created["project_id"]) == (
        2, 2048, 20, "admin")
    assert placement.held(created["id"]) == {node: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}}


def test_instance_create_prints_a_field_value_table(cli: Any, client: FlaskClient,
                                                    placement: PlacementClient) -> None:
    compute_node(placement, "ondemand-1")
    shown = cli.fields(cli.ok("instance", "create", "web", "--vcpus", "1", "--memory-mb", "512"))
    [instance] = server_instances(client)
    assert (shown["id"], shown["name"], shown["status"], shown["host"]) == (instance["id"], "web", "ACTIVE",
                                                                            "ondemand-1")
    assert (shown["vcpus"], shown["memory_mb"], shown["disk_gb"]) == ("1", "512", "")
    assert (shown["forthcoming"], shown["reservation_id"], shown["flavor_id"]) == ("False", "", "")


@pytest.mark.parametrize("by", ["name", "id"])
def test_instance_create_with_a_flavor_takes_its_size(cli: Any, client: FlaskClient, placement: PlacementClient,
                                                      by: str) -> None:
    node = compute_node(placement, "ondemand-1")
    flavor = server_flavor(client, "m1.small", vcpus=4, ram=4096, disk=40)
    created = create(cli, "web", "--flavor", flavor[by])
    on_server = server_instance(client, created["id"])
    assert (on_server["flavor_id"], on_server["vcpus"], on_server["memory_mb"], on_server["disk_gb"]) == (
        flavor["id"], 4, 4096, 40)
    assert placement.held(created["id"]) == {node: {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 40}}


def test_instance_create_in_a_reservation_takes_a_slot_and_its_size(
        cli: Any, client: FlaskClient, database: Database, placement: PlacementClient) -> None:
    host, reservation = started_reservation(cli, client, database)
    created = cli.json("instance", "create", "vm", "--reservation", reservation["id"])
    on_server = server_instance(client, created["id"])
    assert (on_server["reservation_id"], on_server["lease_id"], on_server["host"]) == (
        reservation["id"], reservation["lease_id"], "compute-1")
    assert (on_server["vcpus"], on_server["memory_mb"], on_server["disk_gb"]) == (2, 1024, 10)
    assert placement.held(created["id"]) == {
        host["resource_provider_uuid"]: {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10},
        host["reservation_provider_uuid"]: {reservation["resource_class"]: 1}}
    # The one slot is taken: the next instance is refused, and the server says why.
    message = cli.fails("instance", "create", "vm2", "--reservation", reservation["id"])
    assert reservation["id"] in message and message.endswith("(HTTP 409)")
    assert [i["name"] for i in server_instances(client)] == ["vm"]


def test_instance_create_on_a_chosen_host(cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    chosen = compute_node(placement, "b")
    created = create(cli, "web", *SIZE, "--host", "b")
    assert server_instance(client, created["id"])["host"] == "b"
    assert list(placement.held(created["id"])) == [chosen]
    message = cli.fails("instance", "create", "other", *SIZE, "--host", "nowhere")
    assert message == ("Node nowhere cannot take the instance: it is not part of on-demand capacity. (HTTP 409)")
    assert [i["name"] for i in server_instances(client)] == ["web"]


def test_instance_create_forthcoming_may_name_nothing_and_holds_what_it_names(
        cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    paper = cli.json("instance", "create", "--forthcoming")
    assert server_instance(client, paper["id"]) == paper
    assert (paper["name"], paper["status"], paper["forthcoming"], paper["host"]) == (None, "FORTHCOMING", True, None)
    assert placement.held(paper["id"]) == {}
    sized = cli.json("instance", "create", "db", "--forthcoming", "--vcpus", "3")
    assert (sized["name"], sized["status"], sized["host"]) == ("db", "FORTHCOMING", "a")
    assert placement.held(sized["id"]) == {node: {"VCPU": 3}}


def test_instance_create_without_a_name_is_a_usage_error(cli: Any, client: FlaskClient,
                                                         placement: PlacementClient) -> None:
    compute_node(placement, "a")
    stderr = usage_error(cli, "instance", "create", *SIZE)
    assert "Missing argument 'NAME': only a --forthcoming instance may be created without one." in stderr
    assert server_instances(client) == []


@pytest.mark.parametrize("command", [("create", "web"), ("commit", "web"), ("modify", "web")])
def test_a_flavor_and_sizes_together_are_a_usage_error(cli: Any, client: FlaskClient, placement: PlacementClient,
                                                       command: tuple[str, ...]) -> None:
    compute_node(placement, "a")
    before = create(cli, "web", "--forthcoming", "--vcpus", "1", "--memory-mb", "1")
    # The flavor does not exist: refusing before it is looked up is what makes this exit 2, not 1.
    stderr = usage_error(cli, "instance", *command, "--flavor", "m1.missing", "--vcpus", "2", "--disk-gb", "1")
    assert "Give either --flavor or --vcpus, --disk-gb, not both" in stderr
    assert server_instances(client) == [before]


def test_instance_create_that_no_node_can_take_exits_1_with_the_server_message(
        cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "small", vcpus=2)
    message = cli.fails("instance", "create", "big", "--vcpus", "4", "--memory-mb", "512")
    assert message.startswith("No node can take the instance on demand: small: 4 vCPU asked, 2 free")
    assert message.endswith("(HTTP 409)")
    assert server_instances(client) == []


@pytest.mark.parametrize(("args", "message"), [
    (("--vcpus", "0", "--memory-mb", "1"), "Invalid vcpus: 0 is not between 1 and 2147483647. (HTTP 400)"),
    (("--vcpus", "1"), "An instance needs its size: give flavor_id, or vcpus and memory_mb (missing memory_mb). "
                       "(HTTP 400)"),
    (("--flavor", "m1.missing"), "No flavor named m1.missing. (HTTP 404)"),
    (("--vcpus", "1", "--memory-mb", "1", "--reservation", "r1"), "Invalid reservation_id: 'r1' is not a UUID. "
                                                                  "(HTTP 400)"),
])
def test_a_refused_create_exits_1_with_the_server_message(cli: Any, client: FlaskClient, placement: PlacementClient,
                                                          args: tuple[str, ...], message: str) -> None:
    compute_node(placement, "a")
    assert cli.fails("instance", "create", "web", *args) == message
    assert server_instances(client) == []


# list and show

def test_instance_list_shows_every_project_to_an_admin_and_one_with_project_id(
        cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    own = create(cli, "web")
    response = client.post("/v1/instances", json={"name": "theirs", "vcpus": 1, "memory_mb": 512}, headers=MEMBER)
    assert response.status_code == 201, response.get_json()
    theirs = response.get_json()["instance"]
    assert cli.rows(cli.ok("instance", "list")) == [
        {"id": own["id"], "name": "web", "status": "ACTIVE", "host": "a", "vcpus": "2", "memory_mb": "2048",
         "disk_gb": "20", "reservation_id": ""},
        {"id": theirs["id"], "name": "theirs", "status": "ACTIVE", "host": "a", "vcpus": "1", "memory_mb": "512",
         "disk_gb": "", "reservation_id": ""}]
    assert [row["id"] for row in cli.rows(cli.ok("instance", "list", "--project-id", "p1"))] == [theirs["id"]]
    assert cli.json("instance", "list", "--project-id", "p1") == [server_instance(client, theirs["id"])]
    assert cli.json("instance", "list") == server_instances(client)


def test_instance_show_finds_an_instance_by_id_or_by_name(cli: Any, client: FlaskClient,
                                                          placement: PlacementClient) -> None:
    compute_node(placement, "a")
    create(cli, "first")
    second = create(cli, "second")
    assert cli.json("instance", "show", second["id"]) == server_instance(client, second["id"])
    assert cli.json("instance", "show", "second") == server_instance(client, second["id"])
    shown = cli.fields(cli.ok("instance", "show", "second"))
    assert (shown["id"], shown["name"], shown["host"]) == (second["id"], "second", "a")


def test_instance_show_of_an_unknown_name_or_id_exits_1_with_the_server_message(cli: Any) -> None:
    assert cli.fails("instance", "show", "missing") == "Instance missing not found. (HTTP 404)"
    instance_id = "00000000-0000-4000-8000-000000000000"
    assert cli.fails("instance", "show", instance_id) == f"Instance {instance_id} not found. (HTTP 404)"


@pytest.mark.parametrize("name", AWKWARD_NAMES)
def test_every_command_finds_an_instance_whose_name_needs_quoting(
        cli: Any, client: FlaskClient, placement: PlacementClient, name: str) -> None:
    node = compute_node(placement, "a", vcpus=4)
    create(cli, "decoy", "--vcpus", "1", "--memory-mb", "1")
    paper = create(cli, name, "--forthcoming", "--vcpus", "1", "--memory-mb", "1")
    assert cli.json("instance", "show", name) == server_instance(client, paper["id"])
    assert cli.json("instance", "modify", name, "--vcpus", "2")["vcpus"] == 2
    assert cli.json("instance", "commit", name)["status"] == "ACTIVE"
    assert cli.json("instance", "rename", name, f"{name}-2")["name"] == f"{name}-2"
    assert cli.json("instance", "rename", f"{name}-2", name)["name"] == name
    assert placement.held(paper["id"]) == {node: {"VCPU": 2, "MEMORY_MB": 1}}
    assert cli.ok("instance", "delete", name) == f"Deleted instance {name}.\n"
    assert [i["name"] for i in server_instances(client)] == ["decoy"]
    assert placement.held(paper["id"]) == {}


# delete

def test_instance_delete_by_name_removes_it_and_frees_what_it_held(cli: Any, client: FlaskClient,
                                                                   placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    web = create(cli, "web")
    kept = create(cli, "kept")
    assert cli.ok("instance", "delete", "web") == "Deleted instance web.\n"
    assert client.get(f"/v1/instances/{web['id']}").status_code == 404
    assert placement.held(web["id"]) == {}
    assert placement.get(f"/resource_providers/{node}/usages").get_json()["usages"]["VCPU"] == kept["vcpus"]
    assert cli.ok("instance", "delete", kept["id"]) == f"Deleted instance {kept['id']}.\n"
    assert server_instances(client) == []


def test_instance_delete_of_an_unknown_name_exits_1_with_the_server_message(cli: Any) -> None:
    assert cli.fails("instance", "delete", "missing") == "Instance missing not found. (HTTP 404)"


# commit

def test_instance_commit_completes_the_name_and_size(cli: Any, client: FlaskClient,
                                                     placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    paper = cli.json("instance", "create", "--forthcoming", "--vcpus", "2")
    committed = cli.json("instance", "commit", paper["id"], "--name", "web", "--memory-mb", "512")
    assert committed == server_instance(client, paper["id"])
    assert (committed["name"], committed["status"], committed["forthcoming"]) == ("web", "ACTIVE", False)
    assert (committed["vcpus"], committed["memory_mb"], committed["host"]) == (2, 512, "a")
    assert placement.held(paper["id"]) == {node: {"VCPU": 2, "MEMORY_MB": 512}}


def test_instance_commit_of_a_complete_one_keeps_its_node_and_allocation(
        cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    node = compute_node(placement, "b")
    paper = create(cli, "db", "--forthcoming", *SIZE, "--host", "b")
    shown = cli.fields(cli.ok("instance", "commit", "db"))
    assert (shown["id"], shown["status"], shown["host"]) == (paper["id"], "ACTIVE", "b")
    assert server_instance(client, paper["id"])["status"] == "ACTIVE"
    assert placement.held(paper["id"]) == {node: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}}


def test_instance_commit_with_a_flavor_takes_its_size(cli: Any, client: FlaskClient,
                                                      placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    flavor = server_flavor(client, "m1.small", vcpus=4, ram=4096)
    paper = cli.json("instance", "create", "db", "--forthcoming")
    committed = cli.json("instance", "commit", "db", "--flavor", "m1.small")
    assert (committed["flavor_id"], committed["vcpus"], committed["memory_mb"]) == (flavor["id"], 4, 4096)
    assert placement.held(paper["id"]) == {node: {"VCPU": 4, "MEMORY_MB": 4096}}


def test_instance_commit_of_an_incomplete_one_exits_1_and_changes_nothing(
        cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    paper = cli.json("instance", "create", "--forthcoming", "--vcpus", "1", "--memory-mb", "1")
    message = cli.fails("instance", "commit", paper["id"])
    assert message == f'Instance {paper["id"]} has no name: give one in the body ({{"name": …}}). (HTTP 400)'
    assert server_instance(client, paper["id"]) == paper


def test_instance_commit_of_a_real_one_exits_1_with_the_server_message(cli: Any, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    web = create(cli, "web")
    message = cli.fails("instance", "commit", "web")
    assert message == f"Instance {web['id']} is not forthcoming: it is real already. (HTTP 409)"


# modify

def test_instance_modify_resizes_in_place_or_exits_1_when_the_node_lacks_room(
        cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a", vcpus=4)
    web = create(cli, "web", "--vcpus", "1", "--memory-mb", "512")
    resized = cli.json("instance", "modify", "web", "--vcpus", "4", "--disk-gb", "5")
    assert resized == server_instance(client, web["id"])
    assert (resized["vcpus"], resized["memory_mb"], resized["disk_gb"]) == (4, 512, 5)
    assert placement.held(web["id"]) == {node: {"VCPU": 4, "MEMORY_MB": 512, "DISK_GB": 5}}
    message = cli.fails("instance", "modify", web["id"], "--vcpus", "5")
    assert message.startswith(f"Node a has no room for the new size of instance {web['id']}: ")
    assert message.endswith("(HTTP 409)")
    assert placement.held(web["id"]) == {node: {"VCPU": 4, "MEMORY_MB": 512, "DISK_GB": 5}}


def test_instance_modify_to_a_flavor_by_name(cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    flavor = server_flavor(client, "m1.large", vcpus=8, ram=8192, disk=80)
    web = create(cli, "web")
    shown = cli.fields(cli.ok("instance", "modify", "web", "--flavor", "m1.large"))
    assert (shown["flavor_id"], shown["vcpus"], shown["memory_mb"], shown["disk_gb"]) == (
        flavor["id"], "8", "8192", "80")
    assert placement.held(web["id"]) == {node: {"VCPU": 8, "MEMORY_MB": 8192, "DISK_GB": 80}}


def test_instance_modify_without_a_size_is_a_usage_error(cli: Any, client: FlaskClient,
                                                         placement: PlacementClient) -> None:
    compute_node(placement, "a")
    web = create(cli, "web")
    stderr = usage_error(cli, "instance", "modify", "web")
    assert "Nothing to modify: give --flavor, or any of --vcpus, --memory-mb and --disk-gb." in stderr
    assert server_instance(client, web["id"]) == web


# rename

def test_instance_rename_by_name_and_by_id(cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    web = create(cli, "web")
    assert cli.json("instance", "rename", "web", "frontend") == server_instance(client, web["id"])
    assert server_instance(client, web["id"])["name"] == "frontend"
    shown = cli.fields(cli.ok("instance", "rename", web["id"], "www"))
    assert (shown["id"], shown["name"]) == (web["id"], "www")
    assert server_instance(client, web["id"])["name"] == "www"


def test_instance_rename_to_a_taken_name_exits_1_and_changes_nothing(cli: Any, client: FlaskClient,
                                                                    placement: PlacementClient) -> None:
    compute_node(placement, "a")
    web, db = create(cli, "web"), create(cli, "db")
    message = cli.fails("instance", "rename", "web", "db")
    assert message == f"An instance named db already exists in project admin ({db['id']}); choose another name. " \
                      "(HTTP 409)"
    assert server_instance(client, web["id"])["name"] == "web"


def test_instance_rename_without_a_new_name_is_a_usage_error(cli: Any, client: FlaskClient,
                                                             placement: PlacementClient) -> None:
    compute_node(placement, "a")
    web = create(cli, "web")
    assert "Missing argument 'NEW_NAME'" in usage_error(cli, "instance", "rename", "web")
    assert server_instance(client, web["id"]) == web


# A member, through Keystone: only its project's instances, and no choice of host.

@pytest.fixture
def member_cli(settings: Any, database: Database, serve: Any, make_cli: Any) -> Iterator[Any]:
    with fixtures.Fixture() as holder:
        tokens = holder.useFixture(AuthTokenFixture())
        tokens.add_token_data(token_id=MEMBER_TOKEN, user_id="u1", project_id="p1", role_list=["member", "reader"])
        # Token validation is the fixture's; the middleware still wants Keystone's address for its 401s.
        app = create_app(settings.replace(auth_strategy="keystone",
                                          keystone_authtoken={"www_authenticate_uri": KEYSTONE}), database)
        with serve(app) as url:
            yield make_cli(url)


def test_a_member_sees_and_changes_only_its_projects_instances(
        member_cli: Any, cli: Any, client: FlaskClient, placement: PlacementClient) -> None:
    compute_node(placement, "a")
    admins = create(cli, "web")
    mine = member_cli.json("instance", "create", "web", *SIZE, "--os-token", MEMBER_TOKEN)
    assert server_instance(client, mine["id"])["project_id"] == "p1"
    assert member_cli.json("instance", "list", "--os-token", MEMBER_TOKEN) == [mine]
    assert member_cli.json("instance", "show", "web", "--os-token", MEMBER_TOKEN) == mine
    assert member_cli.fails("instance", "delete", admins["id"], "--os-token", MEMBER_TOKEN) == (
        f"Instance {admins['id']} not found. (HTTP 404)")
    message = member_cli.fails("instance", "create", "other", *SIZE, "--host", "a", "--os-token", MEMBER_TOKEN)
    assert message == "Only admins may choose the host of an instance; leave host out. (HTTP 403)"
    assert {i["id"] for i in server_instances(client)} == {admins["id"], mine["id"]}


# The Python client

def test_the_python_client_drives_an_instance_from_forthcoming_to_deleted(
        endpoint: str, client: FlaskClient, placement: PlacementClient) -> None:
    node = compute_node(placement, "a")
    api = Client(Credentials(endpoint=endpoint))
    paper = api.instances.create(forthcoming=True, vcpus=1)
    assert (paper["status"], paper["name"]) == ("FORTHCOMING", None)
    # Completion fields left at None are not sent: the instance keeps what it has.
    committed = api.instances.commit(paper["id"], name="web", memory_mb=256, flavor_id=None)
    assert (committed["name"], committed["vcpus"], committed["memory_mb"]) == ("web", 1, 256)
    assert api.instances.modify("web", vcpus=2, disk_gb=None)["vcpus"] == 2
    assert api.instances.rename("web", "www")["name"] == "www"
    assert api.instances.get("www") == server_instance(client, paper["id"]) == api.instances.list()[0]
    assert placement.held(paper["id"]) == {node: {"VCPU": 2, "MEMORY_MB": 256}}
    api.instances.delete("www")
    assert api.instances.list() == []
    assert placement.held(paper["id"]) == {}


def test_the_python_client_asks_the_host_passes_check(endpoint: str, client: FlaskClient) -> None:
    response = client.post("/v1/os-hosts", json={"name": "compute-1", "vcpus": 8, "memory_mb": 16384,
                                                 "local_gb": 100})
    assert response.status_code == 201, response.get_json()
    body = {"hosts": ["compute-1", "unknown-1"], "project_id": "p1"}
    expected = client.post("/v1/scheduler/host-passes", json=body).get_json()["hosts"]
    verdicts = Client(Credentials(endpoint=endpoint)).filters.host_passes(["compute-1", "unknown-1"], "p1")
    assert verdicts == expected
    assert [v["host"] for v in verdicts] == ["compute-1", "unknown-1"]
