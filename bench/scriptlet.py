"""Benchmark one placement decision through the instance placement scriptlet, against the
built-in allocator on the same nodes, in one process.

The world: N candidate members (default 100) as a request's snapshot holds them, with what
real hosts carry: capacity and usage of VCPU / MEMORY_MB / DISK_GB, a few aggregates (groups),
Placement traits, extra capabilities (rack, failure_domain, gpu, cpu_model, description), and
0 to 3 reservations each (lease, project, window, slots, used and free). The functions the
scripts call answer from memory here, so the figures are the scriptlet's own cost (calling
into Starlark, the structs it sees, the calls it makes), not the database reads a live World
adds; those are the same reads a request makes for any allocator.

Timed, each --decisions times (median and p99, in ms):
- the built-in allocator fewest-instances choosing among the same nodes (its filters included);
- scriptlets: a minimal one (set_target on the first candidate), and every etc/scriptlets
  example, through runtime.decide with the members' structs already built (they are built once
  per set of nodes and reused by every request that sees the same nodes);
- the same minimal scriptlet when the members' structs must be built again for each call (a
  set of nodes never seen before: the first request after a node changes).

    python bench/scriptlet.py
    python bench/scriptlet.py --members 500 --decisions 2000
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import p99

from blazar_lite.allocators import builtin
from blazar_lite.allocators.snapshot import Node, PlacementRequest, Snapshot
from blazar_lite.scriptlet import runtime
from blazar_lite.scriptlet.world import member_of

EXAMPLES = Path(__file__).resolve().parents[1] / "etc" / "scriptlets"
MINIMAL = "def instance_placement(request, candidate_members):\n    set_target(candidate_members[0].server_name)\n"
GROUPS = {"agg-freepool": "freepool", "agg-fast": "fast-storage", "agg-edge": "edge"}


def make_nodes(count: int, rng: random.Random) -> list[Node]:
    nodes = []
    for index in range(count):
        vcpus, memory, disk = rng.choice([(32, 131072, 1000), (64, 262144, 2000), (16, 65536, 500)])
        used = rng.random() * 0.8
        capabilities = {"rack": f"r{index % 10}", "failure_domain": f"fd{index % 4}",
                        "gpu": "true" if index % 10 == 0 else "false", "cpu_model": rng.choice(["epyc", "xeon"]),
                        "description": f"node {index} in row {index // 20}"}
        nodes.append(Node(
            name=f"node-{index:04d}", provider_uuid=f"uuid-{index}", host_id=index,
            capacity={"VCPU": vcpus, "MEMORY_MB": memory, "DISK_GB": disk},
            used={"VCPU": int(vcpus * used), "MEMORY_MB": int(memory * used), "DISK_GB": int(disk * used)},
            instance_count=rng.randint(0, 20),
            aggregates=frozenset(rng.sample(sorted(GROUPS), rng.randint(1, 2))),
            traits=frozenset(["HW_CPU_X86_AVX2", *(["CUSTOM_GPU"] if index % 10 == 0 else [])]),
            capabilities=capabilities))
    return nodes


class MemoryWorld:
    """runtime.World answered from the snapshot and generated reservations."""

    def __init__(self, snapshot: Snapshot, rng: random.Random) -> None:
        self.snapshot = snapshot
        self.members = {node.name: member_of(node, GROUPS) for node in snapshot.nodes}
        self.booked: dict[str, list[dict[str, Any]]] = {}
        for node in snapshot.nodes:
            self.booked[node.name] = [
                {"reservation_id": f"r-{node.name}-{n}", "lease_id": f"l-{node.name}-{n}", "lease_name": f"lease-{n}",
                 "project": rng.choice(["p1", "p2", "p3"]), "resource_type": "virtual:instance", "status": "ACTIVE",
                 "start": "2026-12-01T00:00:00Z", "end": "2026-12-08T00:00:00Z", "active": True, "slots": 4,
                 "resources": {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20}, "used": used, "free": 4 - used}
                for n in range(rng.randint(0, 3)) for used in [rng.randint(0, 4)]]

    def _node(self, name: str) -> Node:
        node = self.snapshot.node(name)
        assert node is not None
        return node

    def member_resources(self, name: str) -> dict[str, Any]:
        return {"capacity": dict(self._node(name).capacity)}

    def member_state(self, name: str) -> dict[str, Any]:
        node = self._node(name)
        return {"status": node.status, "instance_count": node.instance_count, "usage": dict(node.used),
                "free": {rc: node.free(rc) for rc in node.capacity}, "capacity": dict(node.capacity)}

    def instances(self, location: str | None, project: str | None) -> list[dict[str, Any]]:
        return []

    def instances_count(self, location: str | None, project: str | None) -> int:
        return self._node(location).instance_count if location else 0

    def cluster_members(self, group: str | None) -> list[dict[str, Any]]:
        return [m.as_dict() for m in self.members.values() if not group or group in m.groups]

    def project(self, name: str) -> dict[str, Any]:
        return {"name": name, "instances": 0, "leases": 0, "config": {}}

    def reservations(self, member: str, start: str | None, end: str | None) -> list[dict[str, Any]]:
        return self.booked.get(member, [])

    def reserved_capacity(self, member: str) -> dict[str, int]:
        return {}


def timed(call: Callable[[], Any], count: int) -> list[float]:
    for _ in range(min(20, count)):
        call()
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=100, help="candidate members (default 100)")
    parser.add_argument("--decisions", type=int, default=1000, help="timed decisions of each kind (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.members < 1 or args.decisions < 1:
        parser.error("--members and --decisions must be at least 1")

    rng = random.Random(args.seed)
    snapshot = Snapshot(tuple(make_nodes(args.members, rng)))
    world = MemoryWorld(snapshot, rng)
    members = list(world.members.values())
    request = PlacementRequest(name="web-1", project_id="p1", resources={"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20})
    scriptlet_request = {"name": request.name, "type": "instance", "project": request.project_id, "reason": "new",
                         "flavor": None, "resources": dict(request.resources), "config": {}, "reservation_id": None,
                         "lease_id": None, "forthcoming": False, "deployment": None, "shape": None}

    def through(source: str) -> Callable[[], runtime.Outcome]:
        program = runtime.compile_program(source)

        def decide() -> runtime.Outcome:
            # The filters run first for the scriptlet too: it gets only the nodes that pass.
            candidates, _ = builtin.filter_candidates(snapshot, request)
            return runtime.decide(program, scriptlet_request, members, [n.name for n in candidates], world,
                                  instance_resources=request.resources, timeout=5.0)
        return decide

    rows: list[tuple[str, list[float], str]] = []
    builtin_times = timed(lambda: builtin.choose(snapshot, request), args.decisions)
    rows.append(("built-in fewest-instances (filters included)", builtin_times,
                 builtin.choose(snapshot, request).node or "-"))
    scripts = [("scriptlet: minimal (set_target on the first candidate)", MINIMAL)] + [
        (f"scriptlet: {path.name}", path.read_text()) for path in sorted(EXAMPLES.glob("*.star"))]
    for label, source in scripts:
        decide = through(source)
        outcome = decide()
        rows.append((label, timed(decide, args.decisions), outcome.target or "(allocator decides)"))

    program = runtime.compile_program(MINIMAL)
    candidates = [n.name for n in builtin.filter_candidates(snapshot, request)[0]]
    counter = [0]

    def cold() -> None:
        # A set of nodes never seen before: a new description on one member each time.
        counter[0] += 1
        changed = [dataclasses.replace(members[0], description=f"changed {counter[0]}"), *members[1:]]
        runtime.decide(program, scriptlet_request, changed, candidates, world, instance_resources={}, timeout=5.0)

    rows.append(("scriptlet: minimal, members' structs built for the call", timed(cold, max(args.decisions // 10, 1)),
                 "-"))

    print(f"python {sys.version.split()[0]}, {args.members} candidate members, {args.decisions} decisions each")
    print(f"{'one placement decision':<58} {'median ms':>10} {'p99 ms':>8}  chose")
    for label, timings, chose in rows:
        print(f"{label:<58} {statistics.median(timings):>10.3f} {p99(timings):>8.3f}  {chose}")
    minimal = statistics.median(rows[1][1])
    print(f"\nminimal scriptlet / built-in allocator: {minimal / statistics.median(builtin_times):.2f}x "
          f"(target: a scriptlet decision's median <= 1 ms; measured {minimal:.3f} ms)")


if __name__ == "__main__":
    main()
