"""Calling the scriptlet for one placement.

One call gets `request` (a struct) and `candidate_members` (structs of the nodes that passed the
filters). The member structs are the expensive part to build, and they change only when a node's
description does, so they are built once per set of nodes (a frozen module, reused by every
request that sees the same nodes) and a call passes only the candidates' names.

The functions the script calls reach the placement being decided through a context variable:
the compiled program is shared by every thread, the call is not. Everything the script may ask
about (a node's usage, its reservations, a project's instances) comes from a World, read on
demand in the request's transaction.

A call ends in one of three ways: a target (set_target with a candidate's name), no target (the
configured allocator decides), or ScriptletFailed (a 400 "Failed instance placement scriptlet:
..."): fail(), a runtime error, a return value other than None, a bad set_target, the deadline,
the call-stack limit, or the interpreter itself giving up (its panics and out-of-memory errors
are BaseExceptions, caught here so that one script cannot take the service down).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import starlark

from blazar_lite.exceptions import BadRequest
from blazar_lite.scriptlet import program as programs

LOG = logging.getLogger("blazar_lite.scriptlet")

DEFAULT_TIMEOUT = 0.2
# Sets of nodes whose member structs are kept (a process sees few: the on-demand nodes, and
# each active reservation's hosts).
MEMBER_SETS_KEPT = 32


class ScriptletFailed(BadRequest):
    """The scriptlet rejected the request, or could not decide it."""

    def __init__(self, message: str) -> None:
        super().__init__(f"Failed instance placement scriptlet: {message}")


@dataclass(frozen=True)
class Member:
    """A node as the script sees it (LXD's cluster member fields)."""

    server_name: str
    status: str
    architecture: str = "x86_64"
    groups: tuple[str, ...] = ()
    traits: tuple[str, ...] = ()
    config: tuple[tuple[str, str], ...] = ()
    failure_domain: str = "default"
    description: str = ""
    roles: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"server_name": self.server_name, "name": self.server_name, "url": "", "status": self.status,
                "architecture": self.architecture, "groups": list(self.groups), "traits": list(self.traits),
                "config": dict(self.config), "failure_domain": self.failure_domain,
                "description": self.description, "roles": list(self.roles)}


class World(Protocol):
    """What the script may ask about, read in the request's transaction."""

    def member_resources(self, name: str) -> dict[str, Any]: ...
    def member_state(self, name: str) -> dict[str, Any]: ...
    def instances(self, location: str | None, project: str | None) -> list[dict[str, Any]]: ...
    def instances_count(self, location: str | None, project: str | None) -> int: ...
    def cluster_members(self, group: str | None) -> list[dict[str, Any]]: ...
    def project(self, name: str) -> dict[str, Any]: ...
    def reservations(self, member: str, start: str | None, end: str | None) -> list[dict[str, Any]]: ...
    def reserved_capacity(self, member: str) -> dict[str, int]: ...


@dataclass
class Outcome:
    """What one call decided, and what it logged (`blazar-lite scriptlet test` shows both)."""

    target: str | None = None
    log: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Call:
    world: World
    candidates: frozenset[str]
    instance_resources: dict[str, int]
    outcome: Outcome
    # The first error a host function raised: reported as such, not as Starlark's rewording.
    error: str | None = None


_current: contextvars.ContextVar[_Call] = contextvars.ContextVar("blazar_lite_scriptlet_call")


class _HostError(Exception):
    pass


def _active() -> _Call:
    try:
        return _current.get()
    except LookupError:
        raise _HostError("scriptlet functions can only be called while a placement is decided") from None


def _fail(call: _Call, message: str) -> _HostError:
    call.error = call.error or message
    return _HostError(message)


def _log(level: int, label: str) -> Callable[..., None]:
    def log(*parts: object) -> None:
        call = _active()
        message = " ".join(str(part) for part in parts)
        call.outcome.log.append((label, message))
        LOG.log(level, "instance placement scriptlet: %s", message)
    return log


def _set_target(name: object) -> None:
    call = _active()
    if not isinstance(name, str) or name not in call.candidates:
        known = "not a candidate member (it is unknown, or was filtered out)"
        raise _fail(call, f"set_target({name!r}): {known}; choose one of the candidate_members.")
    call.outcome.target = name


def _asking(method: str) -> Callable[..., Any]:
    def ask(*args: Any) -> Any:
        call = _active()
        try:
            return getattr(call.world, method)(*args)
        except BadRequest as exc:
            raise _fail(call, exc.message) from None
    return ask


_INSTANCE_RESOURCES = "_host_instance_resources"
_BINDINGS: dict[str, Callable[..., Any]] = {
    "log_info": _log(logging.INFO, "info"),
    "log_warn": _log(logging.WARNING, "warn"),
    "log_error": _log(logging.ERROR, "error"),
    "set_target": _set_target,
    "_host_member_resources": _asking("member_resources"),
    "_host_member_state": _asking("member_state"),
    "_host_instances": _asking("instances"),
    "_host_instances_count": _asking("instances_count"),
    "_host_cluster_members": _asking("cluster_members"),
    "_host_project": _asking("project"),
    "_host_reservations": _asking("reservations"),
    "_host_reserved_capacity": _asking("reserved_capacity"),
    _INSTANCE_RESOURCES: lambda: _instance_resources(_active().instance_resources),
}


def _instance_resources(resources: Mapping[str, int]) -> dict[str, int]:
    """LXD's fields and units: cores, and bytes of memory and root disk."""
    return {"cpu_cores": int(resources.get("VCPU", 0)),
            "memory_size": int(resources.get("MEMORY_MB", 0)) * 1024 * 1024,
            "root_disk_size": int(resources.get("DISK_GB", 0)) * 1024 * 1024 * 1024}


def compile_program(source: str) -> programs.Program:
    """Check and freeze a scriptlet (InvalidScriptlet, a 400 with line and column, if it is bad)."""
    return programs.compile_program(source, _BINDINGS.__getitem__)


# Member structs and entry modules, kept per process.

_ENTRY = """
load("scriptlet", "instance_placement")
load("members", "MEMBERS")

def place(request, names):
    return instance_placement(struct(**request), [MEMBERS[name] for name in names])
"""

_lock = threading.Lock()
_member_sets: OrderedDict[tuple[Member, ...], starlark.FrozenModule] = OrderedDict()
_entries: OrderedDict[tuple[str, tuple[Member, ...]], starlark.FrozenModule] = OrderedDict()


def _remember(cache: OrderedDict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    with _lock:
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
            return found
    made = make()
    with _lock:
        cache[key] = made
        while len(cache) > MEMBER_SETS_KEPT:
            cache.popitem(last=False)
    return made


def _members_module(members: tuple[Member, ...]) -> starlark.FrozenModule:
    def make() -> starlark.FrozenModule:
        module = starlark.Module()
        module["RAW"] = [member.as_dict() for member in members]
        starlark.eval(module, starlark.parse("members", "MEMBERS = {m['server_name']: struct(**m) for m in RAW}\n",
                                             programs.dialect()), programs.globals_())
        return module.freeze()
    return _remember(_member_sets, members, make)


def _entry_module(program: programs.Program, members: tuple[Member, ...]) -> starlark.FrozenModule:
    def make() -> starlark.FrozenModule:
        frozen = {"scriptlet": program.module, "members": _members_module(members)}
        loader = starlark.FileLoader(frozen.__getitem__)
        module = starlark.Module()
        starlark.eval(module, starlark.parse("entry", _ENTRY, starlark.Dialect.standard()), programs.globals_(),
                      loader)
        return module.freeze()
    return _remember(_entries, (program.digest, members), make)


def decide(program: programs.Program, request: Mapping[str, Any], members: Sequence[Member],
           candidates: Iterable[str], world: World, *, instance_resources: Mapping[str, int],
           timeout: float = DEFAULT_TIMEOUT) -> Outcome:
    """Run `instance_placement` for one request. `members` are every node the request could
    see (their structs are reused across requests), `candidates` the names of those that passed
    the filters, in the order the script receives them."""
    names = list(candidates)
    outcome = Outcome()
    call = _Call(world, frozenset(names), dict(instance_resources), outcome)
    entry = _entry_module(program, tuple(members))
    deadline = time.monotonic() + timeout
    token = _current.set(call)
    try:
        returned = entry.call_with(programs.eval_options(deadline), "place", dict(request), names).value
    except starlark.StarlarkError as exc:
        outcome.target = None
        raise ScriptletFailed(_why(exc, call, deadline, timeout)) from None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - the interpreter's panics and out-of-memory errors
        outcome.target = None
        LOG.error("instance placement scriptlet crashed the interpreter: %r", exc)
        raise ScriptletFailed(f"the Starlark interpreter stopped the script ({type(exc).__name__}: "
                              f"{str(exc)[:200]}).") from None
    finally:
        _current.reset(token)
    if returned is not None:
        outcome.target = None
        raise ScriptletFailed(f"{programs.ENTRY} returned {str(returned)[:200]!s} instead of None; "
                              "return nothing, or call fail(message) to reject the request.")
    return outcome


def _why(error: starlark.StarlarkError, call: _Call, deadline: float, timeout: float) -> str:
    if call.error is not None:
        return call.error
    problem, line, column = programs.starlark_problem(error)
    if "cancelled" in problem.lower() and time.monotonic() >= deadline:
        return f"the script ran past its deadline of {timeout * 1000:g} ms (line {line})."
    if problem.startswith("fail:"):
        return problem.removeprefix("fail:").strip()
    where = f" (line {line}, column {column})" if line is not None and _in_script(str(error)) else ""
    return f"{problem}{where}"


def _in_script(text: str) -> bool:
    return f"--> {programs.FILENAME}:" in text
