"""The real osc-placement client (`openstack resource provider …`) against our /placement:
provider, inventory, trait, aggregate, resource class, allocation and candidate commands."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def osc(live_server, console_script):  # type: ignore[no-untyped-def]
    def run(*args: str, version: str = "1.39", parse: bool = True):  # type: ignore[no-untyped-def]
        command = [console_script("openstack"), "--os-auth-type", "admin_token", "--os-endpoint",
                   f"{live_server}/placement", "--os-token", "admin", "--os-placement-api-version", version,
                   *args]
        if parse:
            command += ["-f", "json"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return json.loads(result.stdout) if parse and result.stdout.strip() else result.stdout
    return run


def test_resource_class_commands(osc):
    osc("resource", "class", "create", "CUSTOM_GPU_A100", parse=False)
    assert {"name": "CUSTOM_GPU_A100"} in osc("resource", "class", "list")
    assert osc("resource", "class", "show", "CUSTOM_GPU_A100")["name"] == "CUSTOM_GPU_A100"
    osc("resource", "class", "delete", "CUSTOM_GPU_A100", parse=False)
    assert {"name": "CUSTOM_GPU_A100"} not in osc("resource", "class", "list")


def test_provider_commands_including_nesting(osc):
    root = osc("resource", "provider", "create", "osc-cn1")
    child = osc("resource", "provider", "create", "osc-cn1-child", "--parent-provider", root["uuid"])
    assert child["root_provider_uuid"] == root["uuid"]
    listed = {p["name"] for p in osc("resource", "provider", "list", "--in-tree", root["uuid"])}
    assert listed == {"osc-cn1", "osc-cn1-child"}
    renamed = osc("resource", "provider", "set", child["uuid"], "--name", "osc-cn1-numa0",
                  "--parent-provider", root["uuid"])
    assert renamed["name"] == "osc-cn1-numa0"
    assert osc("resource", "provider", "show", child["uuid"])["name"] == "osc-cn1-numa0"
    osc("resource", "provider", "delete", child["uuid"], parse=False)
    osc("resource", "provider", "delete", root["uuid"], parse=False)
    assert osc("resource", "provider", "list", "--name", "osc-cn1") == []


def test_inventory_commands(osc):
    rp = osc("resource", "provider", "create", "osc-inv")["uuid"]
    inventories = osc("resource", "provider", "inventory", "set", rp, "--resource", "VCPU=8",
                      "--resource", "VCPU:allocation_ratio=4.0", "--resource", "MEMORY_MB=4096",
                      "--resource", "DISK_GB=100")
    assert {i["resource_class"]: i["total"] for i in inventories} == {"VCPU": 8, "MEMORY_MB": 4096, "DISK_GB": 100}
    osc("resource", "provider", "inventory", "class", "set", rp, "VCPU", "--total", "16")
    assert osc("resource", "provider", "inventory", "show", rp, "VCPU")["total"] == 16
    osc("resource", "provider", "inventory", "delete", rp, "--resource-class", "DISK_GB", parse=False)
    assert {i["resource_class"] for i in osc("resource", "provider", "inventory", "list", rp)} == {
        "VCPU", "MEMORY_MB"}


def test_trait_commands(osc):
    rp = osc("resource", "provider", "create", "osc-traits")["uuid"]
    osc("trait", "create", "CUSTOM_FAST_NIC", parse=False)
    assert {"name": "CUSTOM_FAST_NIC"} in osc("trait", "list", "--name", "startswith:CUSTOM_")
    osc("resource", "provider", "trait", "set", rp, "--trait", "CUSTOM_FAST_NIC", "--trait", "HW_CPU_X86_AVX2")
    assert {t["name"] for t in osc("resource", "provider", "trait", "list", rp)} == {
        "CUSTOM_FAST_NIC", "HW_CPU_X86_AVX2"}
    osc("resource", "provider", "trait", "delete", rp, parse=False)
    assert osc("resource", "provider", "trait", "list", rp) == []
    osc("trait", "delete", "CUSTOM_FAST_NIC", parse=False)


def test_aggregate_commands(osc):
    rp = osc("resource", "provider", "create", "osc-aggs")["uuid"]
    agg = str(uuid.uuid4())
    generation = osc("resource", "provider", "show", rp)["generation"]
    osc("resource", "provider", "aggregate", "set", rp, "--aggregate", agg, "--generation", str(generation))
    assert [a["uuid"] for a in osc("resource", "provider", "aggregate", "list", rp)] == [agg]
    assert [p["uuid"] for p in osc("resource", "provider", "list", "--aggregate-uuid", agg)] == [rp]


def test_allocation_usage_and_candidate_commands(osc):
    rp = osc("resource", "provider", "create", "osc-alloc")["uuid"]
    osc("resource", "provider", "inventory", "set", rp, "--resource", "VCPU=4", "--resource", "MEMORY_MB=2048")
    consumer = str(uuid.uuid4())
    osc("resource", "provider", "allocation", "set", consumer, "--allocation", f"rp={rp},VCPU=2,MEMORY_MB=512",
        "--project-id", "proj-a", "--user-id", "user-a", "--consumer-type", "INSTANCE")
    shown = osc("resource", "provider", "allocation", "show", consumer)
    assert shown[0]["resource_provider"] == rp and shown[0]["resources"] == {"VCPU": 2, "MEMORY_MB": 512}
    usages = {u["resource_class"]: u["usage"] for u in osc("resource", "provider", "usage", "show", rp)}
    assert usages == {"VCPU": 2, "MEMORY_MB": 512}
    flat = {u["resource_class"]: u["usage"] for u in osc("resource", "usage", "show", "proj-a", version="1.37")}
    assert flat == {"VCPU": 2, "MEMORY_MB": 512}
    by_type = {u["resource_class"]: u["usage"] for u in osc("resource", "usage", "show", "proj-a")}
    assert by_type == {"INSTANCE": {"consumer_count": 1, "VCPU": 2, "MEMORY_MB": 512}}
    fitting = osc("allocation", "candidate", "list", "--resource", "VCPU=2", "--resource", "MEMORY_MB=1024")
    assert rp in {c["resource provider"] for c in fitting}
    too_big = osc("allocation", "candidate", "list", "--resource", "VCPU=3")
    assert rp not in {c["resource provider"] for c in too_big}
    osc("resource", "provider", "allocation", "delete", consumer, parse=False)
    assert osc("resource", "provider", "allocation", "show", consumer) == []
