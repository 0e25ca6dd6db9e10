"""Benchmark GET /placement/allocation_candidates over N provider trees, and provider creation.

Starts `blazar-lite serve` (one worker, fresh SQLite database in a temporary data directory) on
a free port, builds N root providers over HTTP (VCPU / MEMORY_MB / DISK_GB inventory, a few
traits, two aggregates, and one child provider with a CUSTOM_ class inventory), then times

    GET /placement/allocation_candidates?resources=VCPU:1,MEMORY_MB:256,DISK_GB:10

at the chosen microversion and prints the median and minimum over the runs.

    python bench/placement_candidates.py 1000
    python bench/placement_candidates.py 5000 --runs 21

`--server thread` runs the app in a werkzeug server thread of this process instead.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

QUERY = "/placement/allocation_candidates?resources=VCPU:1,MEMORY_MB:256,DISK_GB:10"
TRAITS = ("HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "COMPUTE_VOLUME_MULTI_ATTACH")
RACKS = 8


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Client:
    """A keep-alive HTTP/1.1 connection speaking Placement at a fixed microversion."""

    def __init__(self, port: int, version: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {"X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {version}",
                        "Accept": "application/json"}

    def raw(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.connection.request(method, path, body=data, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.read()

    def call(self, method: str, path: str, body: Any = None, expect: tuple[int, ...] = (200, 201, 204)) -> Any:
        status, data = self.raw(method, path, body)
        if status not in expect:
            raise SystemExit(f"{method} {path} -> {status}: {data[:500]!r}")
        return json.loads(data) if data else None


def start_cli_server(data_dir: str, port: int) -> subprocess.Popen[bytes]:
    executable = shutil.which("blazar-lite", path=str(Path(sys.executable).parent)) or shutil.which("blazar-lite")
    if executable is None:
        raise SystemExit("blazar-lite is not installed next to this Python; use --server thread")
    env = dict(os.environ, BLAZAR_LITE_DATA_DIR=data_dir, BLAZAR_LITE_SCHEDULER_ENABLED="false",
               BLAZAR_LITE_LOGGING_LEVEL="WARNING")
    env.pop("BLAZAR_LITE_DATABASE_URL", None)
    env.pop("BLAZAR_LITE_CONFIG", None)
    return subprocess.Popen([executable, "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def start_thread_server(data_dir: str, port: int) -> None:
    import logging

    from werkzeug.serving import make_server

    from blazar_lite.app import create_app
    from blazar_lite.db import Database
    from blazar_lite.db.migrate import upgrade
    from blazar_lite.settings import load_settings

    settings = load_settings(environ={}, data_dir=data_dir)
    database = Database(settings.database_url)
    upgrade(database.engine)
    # As with the CLI server, no per-request log lines: they would be timed too.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    logging.getLogger("blazar_lite").setLevel(logging.WARNING)
    server = make_server("127.0.0.1", port, create_app(settings, database), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def wait_ready(port: int, process: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"server exited: {process.stderr.read().decode() if process.stderr else ''}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/placement/")
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("server did not answer within 60 s")


def build(client: Client, n: int) -> tuple[float, int, float]:
    """Create the providers; returns (seconds spent in provider POSTs, all requests, all seconds)."""
    client.call("PUT", "/placement/resource_classes/CUSTOM_BENCH_ACCEL")
    for rack in range(RACKS):
        client.call("PUT", f"/placement/traits/CUSTOM_RACK_{rack}")
    aggregates = [str(uuid.uuid4()) for _ in range(RACKS)]
    common = str(uuid.uuid4())
    post_seconds = 0.0
    requests = 0
    started = time.perf_counter()
    for i in range(n):
        root, child = str(uuid.uuid4()), str(uuid.uuid4())
        t0 = time.perf_counter()
        client.call("POST", "/placement/resource_providers", {"name": f"cn{i}", "uuid": root})
        t1 = time.perf_counter()
        client.call("POST", "/placement/resource_providers",
                    {"name": f"cn{i}-accel", "uuid": child, "parent_provider_uuid": root})
        post_seconds += (t1 - t0) + (time.perf_counter() - t1)
        client.call("PUT", f"/placement/resource_providers/{root}/inventories", {
            "resource_provider_generation": 0,
            "inventories": {"VCPU": {"total": 64, "allocation_ratio": 4.0},
                            "MEMORY_MB": {"total": 262144, "reserved": 2048},
                            "DISK_GB": {"total": 4096, "max_unit": 2048}}})
        client.call("PUT", f"/placement/resource_providers/{root}/traits", {
            "resource_provider_generation": 1, "traits": [*TRAITS, f"CUSTOM_RACK_{i % RACKS}"]})
        client.call("PUT", f"/placement/resource_providers/{root}/aggregates", {
            "resource_provider_generation": 2, "aggregates": [aggregates[i % RACKS], common]})
        client.call("PUT", f"/placement/resource_providers/{child}/inventories", {
            "resource_provider_generation": 0, "inventories": {"CUSTOM_BENCH_ACCEL": {"total": 4}}})
        requests += 6
    return post_seconds, requests, time.perf_counter() - started


def time_candidates(client: Client, runs: int) -> tuple[list[float], int, int]:
    timings = []
    body = b""
    for _ in range(runs):
        t0 = time.perf_counter()
        status, body = client.raw("GET", QUERY)
        timings.append((time.perf_counter() - t0) * 1000)
        if status != 200:
            raise SystemExit(f"GET {QUERY} -> {status}: {body[:500]!r}")
    result = json.loads(body)
    return timings, len(result["allocation_requests"]), len(result["provider_summaries"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, help="number of root providers (each with one child)")
    parser.add_argument("--runs", type=int, default=11, help="timed GETs (at least 11; default 11)")
    parser.add_argument("--version", default="1.39", help="placement microversion of the GETs (default 1.39)")
    parser.add_argument("--server", choices=("cli", "thread"), default="cli",
                        help="cli: `blazar-lite serve` subprocess (default); thread: werkzeug in-process")
    args = parser.parse_args()
    if args.runs < 11:
        parser.error("--runs must be at least 11")

    data_dir = tempfile.mkdtemp(prefix="blazar-lite-bench-")
    port = free_port()
    process = None
    try:
        if args.server == "cli":
            process = start_cli_server(data_dir, port)
        else:
            start_thread_server(data_dir, port)
        wait_ready(port, process)
        client = Client(port, args.version)
        post_seconds, requests, seconds = build(client, args.n)
        print(f"providers: {2 * args.n} created ({args.n} roots + {args.n} children) via {args.server} server")
        print(f"provider creation: {2 * args.n / post_seconds:.0f} POST /resource_providers per second; "
              f"all setup requests: {requests / seconds:.0f} per second ({requests} in {seconds:.1f} s)")
        client.raw("GET", QUERY)  # warm-up: first-use compilation of statements
        timings, count, summaries = time_candidates(client, args.runs)
        print(f"GET allocation_candidates (placement {args.version}, N={args.n}, {args.runs} runs): "
              f"median {statistics.median(timings):.1f} ms, min {min(timings):.1f} ms; "
              f"{count} allocation requests, {summaries} provider summaries")
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=30)
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
