"""A blazar-lite deployment as an operator runs it, for the soak and chaos runs: API workers
under gunicorn (`serve --no-scheduler`), scheduler processes of their own (`scheduler`), all
on one PostgreSQL database, optionally reached through a TCP relay that can cut the database
off; and the JSON client the runs drive it with, which counts every answer it gets."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.engine import make_url

STARTUP_SECONDS = 60
IDLE_SECONDS = 1.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def console_script(name: str) -> str:
    """A console script beside the running interpreter (the test environment's own)."""
    return str(Path(sys.executable).parent / name)


class DatabaseRelay:
    """A TCP relay in front of PostgreSQL: `cut()` drops every open connection and refuses new
    ones, as a database that went away does; `restore()` lets them through again."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(256)
        self.port = self._listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._stopped = False
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, database_url: str) -> str:
        return make_url(database_url).set(host="127.0.0.1", port=self.port).render_as_string(hide_password=False)

    def cut(self) -> None:
        self._open.clear()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def restore(self) -> None:
        self._open.set()

    def close(self) -> None:
        self._stopped = True
        self.cut()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._open.is_set():
                # Refused as a stopped server refuses: the connection closes at once.
                client.close()
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, server))
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        peers = {client: server, server: client}
        try:
            while True:
                readable, _, _ = select.select(list(peers), [], [], 1.0)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            for sock in peers:
                with contextlib.suppress(OSError):
                    sock.close()


@dataclass
class Process:
    """One process of the cluster and its log file."""

    name: str
    command: list[str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class Cluster:
    """API workers and schedulers on one database, each process with the same settings file."""

    def __init__(self, workdir: Path, database_url: str, settings: str = "",
                 relay: DatabaseRelay | None = None) -> None:
        self.workdir = workdir
        self.database_url = database_url
        self.relay = relay
        served_url = relay.url(database_url) if relay else database_url
        self.config = workdir / "blazar-lite.conf"
        self.config.write_text(f"[database]\nurl = {served_url}\n\n{settings}")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("BLAZAR_LITE_")}
        self.env["BLAZAR_LITE_DATA_DIR"] = str(workdir / "data")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.processes: list[Process] = []

    def blazar_lite(self, *args: str) -> list[str]:
        return [console_script("blazar-lite"), "--config-file", str(self.config), *args]

    def start(self, process: Process) -> Process:
        handle = process.log.open("ab")
        process.popen = subprocess.Popen(process.command, env=self.env, stdin=subprocess.DEVNULL, stdout=handle,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        handle.close()
        if process not in self.processes:
            self.processes.append(process)
        return process

    def start_api(self, workers: int) -> Process:
        api = Process("api", self.blazar_lite("serve", "--no-scheduler", "--port", str(self.port),
                                              "--workers", str(workers)), self.workdir / "api.log")
        self.start(api)
        self.wait_ready(api)
        return api

    def start_scheduler(self, index: int) -> Process:
        return self.start(Process(f"scheduler-{index}", self.blazar_lite("scheduler"),
                                  self.workdir / f"scheduler-{index}.log"))

    def wait_ready(self, api: Process) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if not api.alive():
                raise RuntimeError(f"the API exited:\n{api.log_text()}")
            with contextlib.suppress(OSError, http.client.HTTPException):
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/versions")
                if connection.getresponse().status == 300:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"the API did not answer within {STARTUP_SECONDS}s:\n{api.log_text()}")

    def api_workers(self, api: Process) -> list[int]:
        """The pids of gunicorn's worker processes under the API's master."""
        assert api.popen is not None
        children = Path(f"/proc/{api.popen.pid}/task/{api.popen.pid}/children")
        return [int(pid) for pid in children.read_text().split()] if children.exists() else []

    def kill(self, process: Process, sig: int = signal.SIGKILL) -> None:
        assert process.popen is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.popen.pid, sig)
        process.popen.wait(timeout=30)

    def stop(self) -> None:
        for process in self.processes:
            if process.alive():
                assert process.popen is not None
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.popen.pid, signal.SIGTERM)
        for process in self.processes:
            if process.popen is None:
                continue
            try:
                process.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.popen.pid, signal.SIGKILL)
                process.popen.wait()

    def check(self, claim_timeout: int | None = None) -> tuple[int, dict[str, Any]]:
        """`blazar-lite check -f json` against the database itself (not through the relay)."""
        env = dict(self.env, BLAZAR_LITE_DATABASE_URL=self.database_url)
        args = ["check", "-f", "json"]
        if claim_timeout is not None:
            args += ["--claim-timeout", str(claim_timeout)]
        result = subprocess.run(self.blazar_lite(*args), env=env, capture_output=True, text=True, timeout=300,
                                stdin=subprocess.DEVNULL)
        try:
            report = json.loads(result.stdout)
        except ValueError:
            report = {"output": result.stdout, "errors": result.stderr}
        return result.returncode, report

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.log_text()[-4000:]}" for p in self.processes)


@dataclass
class Answer:
    status: int
    body: Any


@dataclass
class Tally:
    """Every answer the clients got: counts by route and status, and the answers that break the
    rules (a 5xx, a 409 without a reason, a connection that failed)."""

    counts: Counter[tuple[str, int]] = field(default_factory=Counter)
    bad: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, route: str, answer: Answer) -> None:
        with self.lock:
            self.counts[(route, answer.status)] += 1
            if answer.status >= 500:
                self.bad.append(f"{route}: {answer.status} {answer.body}")
            elif answer.status == 409 and not reason(answer.body):
                self.bad.append(f"{route}: 409 without a reason: {answer.body}")

    def failed(self, route: str, problem: str) -> None:
        with self.lock:
            self.counts[(route, 0)] += 1
            self.bad.append(f"{route}: {problem}")

    def by_status(self) -> Counter[int]:
        totals: Counter[int] = Counter()
        for (_, status), count in self.counts.items():
            totals[status] += count
        return totals

    def table(self) -> str:
        routes = sorted({route for route, _ in self.counts})
        lines = []
        for route in routes:
            statuses = ", ".join(f"{status}: {count}" for (r, status), count in sorted(self.counts.items())
                                 if r == route)
            lines.append(f"  {route:<48} {statuses}")
        return "\n".join(lines)


def reason(body: Any) -> str:
    """The message of an error body (Blazar's error_message, or Placement's errors[].detail)."""
    if not isinstance(body, dict):
        return ""
    if isinstance(body.get("error_message"), str):
        return body["error_message"].strip()
    errors = body.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        return str(errors[0].get("detail") or "").strip()
    return ""


class Client:
    """A keep-alive JSON client for one thread, as one project's member (or an admin)."""

    def __init__(self, base: str, project: str, tally: Tally, admin: bool = False, timeout: float = 60) -> None:
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = {"Content-Type": "application/json", "X-Project-Id": project, "X-User-Id": f"user-{project}",
                        "X-Roles": "admin" if admin else "member"}
        self.tally = tally
        self.timeout = timeout
        self._connection: http.client.HTTPConnection | None = None
        self._last_used = 0.0

    def call(self, method: str, path: str, body: Any = None, route: str | None = None) -> Answer | None:
        """The answer, counted under `route`; None (counted as a failure) when there was none."""
        route = f"{method} {route or path}"
        data = None if body is None else json.dumps(body)
        if time.monotonic() - self._last_used > IDLE_SECONDS:
            # gunicorn closes a keep-alive connection idle for 2 s; a request sent on one it is
            # closing would go unanswered for no fault of the service.
            self.close()
        try:
            if self._connection is None:
                self._connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self._connection.request(method, path, body=data, headers=self.headers)
            response = self._connection.getresponse()
            raw = response.read()
            self._last_used = time.monotonic()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            self.tally.failed(route, f"no answer: {type(exc).__name__}: {exc}")
            return None
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        answer = Answer(response.status, parsed)
        self.tally.add(route, answer)
        return answer

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
